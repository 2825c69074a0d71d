//! Rolling merge of a newer input (C0's entries, or component C(i-1)) into component C(i):
//! both inputs read sequentially in `io_unit`-page requests, the output built bottom-up
//! into a fresh extent (App. D: "multi-page I/O optimization applied to the merge between
//! tree components"). For a key in both inputs the newer entry wins; an older entry that a
//! range tombstone of the newer input covers is dropped ([`crate::kit::sorted::tombs`]: a
//! level's range tombstones hide the keys of older levels); tombstones are dropped when the
//! output is the last component (nothing older remains for them to hide).

use super::component::{Component, ComponentWriter, LeafReader, TOMBSTONE};
use crate::durable::Pager;
use crate::error::Result;
use crate::kit::sorted::entry::{Entry, Layout};
use crate::kit::sorted::tombs::{Cover, Tombs};

/// A sorted input stream.
pub enum Input {
    /// C0's entries, already in memory (at most |C0|), and the next one's index.
    Memory(Vec<Entry>, usize),
    Component(Box<LeafReader>),
}

impl Input {
    pub fn memory(es: Vec<Entry>) -> Input {
        Input::Memory(es, 0)
    }

    pub fn component(c: Component) -> Input {
        Input::Component(Box::new(LeafReader::new(c)))
    }

    fn peek(&mut self, pager: &mut Pager, lay: Layout, io_unit: u64) -> Result<Option<Entry>> {
        match self {
            Input::Memory(es, pos) => Ok(es.get(*pos).copied()),
            Input::Component(r) => r.peek(pager, lay, io_unit),
        }
    }

    fn advance(&mut self) {
        match self {
            Input::Memory(_, pos) => *pos += 1,
            Input::Component(r) => r.advance(),
        }
    }

    /// The entries at hand (in memory, or decoded from the component's last request) not
    /// yet taken, from the one `peek` returns; empty when the next request is needed.
    fn buffered(&self) -> &[Entry] {
        match self {
            Input::Memory(es, pos) => es.get(*pos..).unwrap_or(&[]),
            Input::Component(r) => r.buffered(),
        }
    }

    /// Take `n` entries of [`Input::buffered`].
    fn consume(&mut self, n: usize) {
        match self {
            Input::Memory(_, pos) => *pos += n,
            Input::Component(r) => r.consume(n),
        }
    }

    /// The input's entries (asked before the merge reads any: the output's size bound).
    fn entries(&self) -> u64 {
        match self {
            Input::Memory(es, pos) => es.len().saturating_sub(*pos) as u64,
            Input::Component(r) => r.entries(),
        }
    }

    fn pages_read(&self) -> u64 {
        match self {
            Input::Memory(..) => 0,
            Input::Component(r) => r.pages_read(),
        }
    }
}

/// Entries [`merge_buffered`] merges before it writes them, a leaf's run at a time.
const MERGED_BATCH: usize = 512;

/// Merge the entries both inputs have at hand (in memory or decoded), in one pass over the
/// two slices with the rules of [`merge`], and write the kept ones a leaf's run at a time:
/// the common step of a merge, without a peek and a match per entry. `merged` is the
/// scratch the run is built in. Stops when either input's entries at hand run out (the
/// next request is [`merge`]'s to start). Returns the entries taken.
fn merge_buffered(
    pager: &mut Pager,
    newer: &mut Input,
    older: &mut Input,
    hidden: &mut Cover<'_>,
    drop_tombstones: bool,
    w: &mut ComponentWriter,
    merged: &mut Vec<Entry>,
) -> Result<usize> {
    let (ns, os) = (newer.buffered(), older.buffered());
    let (mut i, mut j) = (0usize, 0usize);
    merged.clear();
    while let (Some(x), Some(y)) = (ns.get(i), os.get(j)) {
        if y.key < x.key {
            j += 1;
            if !(hidden.covers(y.key) || drop_tombstones && y.kind == TOMBSTONE) {
                merged.push(*y);
            }
        } else {
            // The newer entry wins a key both inputs hold.
            i += 1;
            j += usize::from(y.key == x.key);
            if !(drop_tombstones && x.kind == TOMBSTONE) {
                merged.push(*x);
            }
        }
        if merged.len() >= MERGED_BATCH {
            w.push_run(pager, merged)?;
            merged.clear();
        }
    }
    w.push_run(pager, merged)?;
    merged.clear();
    newer.consume(i);
    older.consume(j);
    Ok(i + j)
}

/// Take the older input's next entry, which sorts before `bound` (before everything for
/// `None`), and, from a component, every decoded entry after it that also does: written to
/// `w` unless a newer range tombstone covers it or it is a tombstone the merge drops. The
/// common step of a merge (the older component is about k times the newer input) without
/// a peek and a match per entry.
fn copy_older(
    pager: &mut Pager,
    older: &mut Input,
    bound: Option<u64>,
    hidden: &mut Cover<'_>,
    drop_tombstones: bool,
    w: &mut ComponentWriter,
) -> Result<()> {
    let mut keep = |e: &Entry| !(hidden.covers(e.key) || drop_tombstones && e.kind == TOMBSTONE);
    match older {
        Input::Memory(es, pos) => {
            if let Some(e) = es.get(*pos).copied() {
                *pos += 1;
                if keep(&e) {
                    w.push(pager, e)?;
                }
            }
        }
        Input::Component(r) => {
            let buf = r.buffered();
            let mut n = 0;
            // Kept entries are written a run at a time: those from `run` to `n`.
            let mut run = 0;
            while let Some(e) = buf.get(n) {
                if bound.is_some_and(|b| e.key >= b) {
                    break;
                }
                if !keep(e) {
                    w.push_run(pager, &buf[run..n])?;
                    run = n + 1;
                }
                n += 1;
            }
            w.push_run(pager, &buf[run..n])?;
            // `peek` returned the first buffered entry, which sorts before `bound`.
            debug_assert!(n > 0, "the older input's peeked entry was not taken");
            r.consume(n);
        }
    }
    Ok(())
}

/// What a merge produced.
pub struct Merged {
    pub component: Option<Component>,
    pub pages_read: u64,
    pub pages_written: u64,
}

/// Merge `newer` into `older` (either may be empty) as one new component, leaving out the
/// entries of `older` that `newer_tombs` (the newer input's range tombstones) cover. The
/// output level's range tombstones are the caller's to set.
pub fn merge(
    pager: &mut Pager,
    lay: Layout,
    io_unit: u64,
    newer: Input,
    newer_tombs: &Tombs,
    older: Input,
    drop_tombstones: bool,
) -> Result<Merged> {
    merge_in::<true>(
        pager,
        lay,
        io_unit,
        newer,
        newer_tombs,
        older,
        drop_tombstones,
    )
}

/// [`merge`], with the [`merge_buffered`] steps (`BATCHED`) or an entry at a time (the
/// tests' reference).
fn merge_in<const BATCHED: bool>(
    pager: &mut Pager,
    lay: Layout,
    io_unit: u64,
    mut newer: Input,
    newer_tombs: &Tombs,
    mut older: Input,
    drop_tombstones: bool,
) -> Result<Merged> {
    let max_entries = newer.entries() + older.entries();
    let mut w = ComponentWriter::new(pager, lay, io_unit, max_entries)?;
    // Older keys arrive in increasing order: one forward cursor, no second pass.
    let mut hidden = newer_tombs.cursor();
    let mut merged = Vec::new();
    loop {
        let taken = if BATCHED {
            merge_buffered(
                pager,
                &mut newer,
                &mut older,
                &mut hidden,
                drop_tombstones,
                &mut w,
                &mut merged,
            )?
        } else {
            0
        };
        if taken > 0 {
            continue;
        }
        let a = newer.peek(pager, lay, io_unit)?;
        let b = older.peek(pager, lay, io_unit)?;
        let e = match (a, b) {
            (None, None) => break,
            (Some(x), None) => {
                newer.advance();
                x
            }
            (None, Some(_)) => {
                copy_older(
                    pager,
                    &mut older,
                    None,
                    &mut hidden,
                    drop_tombstones,
                    &mut w,
                )?;
                continue;
            }
            (Some(x), Some(y)) => {
                if x.key <= y.key {
                    newer.advance();
                    if x.key == y.key {
                        older.advance();
                    }
                    x
                } else {
                    copy_older(
                        pager,
                        &mut older,
                        Some(x.key),
                        &mut hidden,
                        drop_tombstones,
                        &mut w,
                    )?;
                    continue;
                }
            }
        };
        if drop_tombstones && e.kind == TOMBSTONE {
            continue;
        }
        w.push(pager, e)?;
    }
    let pages_written = w.pages();
    let component = w.finish(pager)?;
    Ok(Merged {
        pages_written: component.map_or(pages_written, |c| c.pages),
        component,
        pages_read: newer.pages_read() + older.pages_read(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::AlignedBuf;
    use crate::kit::sorted::entry::Kind;
    use proptest::prelude::*;

    const PAGE: usize = 512;

    fn pager() -> Pager {
        Pager::in_memory(PAGE, 8)
    }

    /// Sorted entries of distinct keys; `true` marks a tombstone.
    fn entries(items: &std::collections::BTreeMap<u64, (bool, u64)>) -> Vec<Entry> {
        items
            .iter()
            .map(|(&k, &(dead, v))| {
                let kind = if dead { TOMBSTONE } else { Kind::Normal };
                Entry::new(k, v, kind)
            })
            .collect()
    }

    /// The merged component and the bytes of its pages.
    fn merge_both<const BATCHED: bool>(
        lay: Layout,
        newer: &[Entry],
        newer_on_disk: bool,
        older: &[Entry],
        tombs: &Tombs,
        drop_tombstones: bool,
    ) -> (Option<Component>, Vec<u8>) {
        let mut pager = pager();
        let input = |pager: &mut Pager, es: &[Entry], on_disk: bool| {
            if !on_disk {
                return Input::memory(es.to_vec());
            }
            let mut w = ComponentWriter::new(pager, lay, 2, es.len() as u64).unwrap();
            w.push_run(pager, es).unwrap();
            w.finish(pager)
                .unwrap()
                .map_or_else(|| Input::memory(Vec::new()), Input::component)
        };
        let newer = input(&mut pager, newer, newer_on_disk);
        let older = input(&mut pager, older, true);
        let m =
            merge_in::<BATCHED>(&mut pager, lay, 2, newer, tombs, older, drop_tombstones).unwrap();
        let bytes = m.component.map_or_else(Vec::new, |c| {
            let mut buf = AlignedBuf::zeroed(PAGE * c.pages as usize);
            pager.device().read(c.start, &mut buf).unwrap();
            buf.to_vec()
        });
        (m.component, bytes)
    }

    proptest! {
        /// The batched merge writes exactly the component the entry-at-a-time merge
        /// writes: the same pages, tombstones and range tombstones honoured.
        #[test]
        fn the_batched_merge_writes_what_the_entry_at_a_time_merge_writes(
            newer in proptest::collection::btree_map(0u64..3000, (any::<bool>(), any::<u64>()), 0..300),
            older in proptest::collection::btree_map(0u64..3000, (any::<bool>(), any::<u64>()), 0..700),
            tomb in proptest::option::of((0u64..3000, 0u64..300)),
            newer_on_disk in any::<bool>(),
            drop_tombstones in any::<bool>(),
            packed in any::<bool>(),
        ) {
            let lay = Layout::of(packed, PAGE);
            let mut tombs = Tombs::new();
            if let Some((lo, len)) = tomb {
                tombs.add(lo, lo + len);
            }
            let (newer, older) = (entries(&newer), entries(&older));
            let want = merge_both::<false>(lay, &newer, newer_on_disk, &older, &tombs, drop_tombstones);
            let got = merge_both::<true>(lay, &newer, newer_on_disk, &older, &tombs, drop_tombstones);
            prop_assert_eq!(got, want);
        }
    }
}
