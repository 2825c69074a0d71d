//! Rolling merges (O'Neil et al. 1996 §2.2: the merge of C(i-1) into C(i) proceeds a step
//! at a time while inserts go on): a [`MergeJob`] merges a frozen C0 into C1 and cascades
//! while a level outgrows its capacity, one [`LevelMerge`] per level, each a newer input
//! (C0's entries, or component C(i-1)) merged into component C(i). Both inputs are read
//! sequentially in `io_unit`-page requests, the output built bottom-up into a fresh extent
//! (FD-tree paper App. D: "multi-page I/O optimization applied to the merge between tree
//! components"). For a key in both inputs the newer entry wins; an older entry that a range
//! tombstone of the newer input covers is dropped ([`crate::kit::sorted::tombs`]: a level's
//! range tombstones hide the keys of older levels); tombstones are dropped when the output
//! is the last component (nothing older remains for them to hide).
//!
//! A job changes nothing the index searches until it completes: its outputs are fresh
//! extents, the components it replaces are freed by the caller when it publishes the
//! [`Outcome`], and an intermediate component of a cascade (merged on into the next level
//! at once) is freed as soon as it is consumed. Run to completion in one call, a job does
//! exactly the merges the amortized rolling merge does.

use super::component::{Component, ComponentWriter, LeafReader, TOMBSTONE};
use super::Params;
use crate::durable::background::JobIo;
use crate::error::Result;
use crate::io::Extent;
use crate::kit::sorted::entry::{Entry, Layout};
use crate::kit::sorted::job::Resumable;
use crate::kit::sorted::tombs::{Cover, Tombs};
use std::sync::Arc;

/// A sorted input stream.
pub enum Input {
    /// A frozen C0's entries, already in memory (at most |C0|; shared with the searches
    /// that look in the frozen C0 while the merge runs), and the next one's index.
    Memory(Arc<[Entry]>, usize),
    Component(Box<LeafReader>),
}

impl Input {
    pub fn memory(es: impl Into<Arc<[Entry]>>) -> Input {
        Input::Memory(es.into(), 0)
    }

    pub fn component(c: Component) -> Input {
        Input::Component(Box::new(LeafReader::new(c)))
    }

    fn peek(&mut self, io: &mut dyn JobIo, lay: Layout, io_unit: u64) -> Result<Option<Entry>> {
        match self {
            Input::Memory(es, pos) => Ok(es.get(*pos).copied()),
            Input::Component(r) => r.peek(io, lay, io_unit),
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

/// Merge the entries both inputs have at hand (in memory or decoded), at most `max` of
/// them, in one pass over the two slices with the rules of [`LevelMerge::step`], and write
/// the kept ones a leaf's run at a time: the common step of a merge, without a peek and a
/// match per entry. `merged` is the scratch the run is built in. Stops when either input's
/// entries at hand run out (the next request is the step's to start). Returns the entries
/// taken.
#[allow(clippy::too_many_arguments)]
fn merge_buffered(
    io: &mut dyn JobIo,
    newer: &mut Input,
    older: &mut Input,
    hidden: &mut Cover<'_>,
    drop_tombstones: bool,
    w: &mut ComponentWriter,
    merged: &mut Vec<Entry>,
    max: u64,
) -> Result<u64> {
    let (ns, os) = (newer.buffered(), older.buffered());
    let max = usize::try_from(max).unwrap_or(usize::MAX);
    let (mut i, mut j) = (0usize, 0usize);
    merged.clear();
    while i + j < max {
        let (Some(x), Some(y)) = (ns.get(i), os.get(j)) else {
            break;
        };
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
            w.push_run(io, merged)?;
            merged.clear();
        }
    }
    w.push_run(io, merged)?;
    merged.clear();
    newer.consume(i);
    older.consume(j);
    Ok((i + j) as u64)
}

/// Take the older input's next entry, which sorts before `bound` (before everything for
/// `None`), and, from a component, every decoded entry after it that also does, at most
/// `max` in all (at least one): written to `w` unless a newer range tombstone covers it or
/// it is a tombstone the merge drops. The common step of a merge (the older component is
/// about k times the newer input) without a peek and a match per entry. Returns the
/// entries taken.
fn copy_older(
    io: &mut dyn JobIo,
    older: &mut Input,
    bound: Option<u64>,
    hidden: &mut Cover<'_>,
    drop_tombstones: bool,
    w: &mut ComponentWriter,
    max: u64,
) -> Result<u64> {
    let mut keep = |e: &Entry| !(hidden.covers(e.key) || drop_tombstones && e.kind == TOMBSTONE);
    match older {
        Input::Memory(es, pos) => {
            let Some(e) = es.get(*pos).copied() else {
                return Ok(0);
            };
            *pos += 1;
            if keep(&e) {
                w.push(io, e)?;
            }
            Ok(1)
        }
        Input::Component(r) => {
            let buf = r.buffered();
            let max = usize::try_from(max).unwrap_or(usize::MAX).max(1);
            let mut n = 0;
            // Kept entries are written a run at a time: those from `run` to `n`.
            let mut run = 0;
            while let Some(e) = buf.get(n) {
                if n >= max || bound.is_some_and(|b| e.key >= b) {
                    break;
                }
                if !keep(e) {
                    w.push_run(io, &buf[run..n])?;
                    run = n + 1;
                }
                n += 1;
            }
            w.push_run(io, &buf[run..n])?;
            // `peek` returned the first buffered entry, which sorts before `bound`.
            debug_assert!(n > 0, "the older input's peeked entry was not taken");
            r.consume(n);
            Ok(n as u64)
        }
    }
}

/// What one level's merge produced.
pub struct Merged {
    pub component: Option<Component>,
    pub pages_read: u64,
    pub pages_written: u64,
}

/// One merge of a newer input into level C(i), resumable: [`LevelMerge::step`] processes a
/// bounded number of input entries at a time.
pub struct LevelMerge {
    newer: Input,
    older: Input,
    /// Where the cursor over the newer input's range tombstones stands between steps
    /// (older keys arrive in increasing order: one forward cursor, no second pass).
    hidden: usize,
    drop_tombstones: bool,
    writer: ComponentWriter,
    /// The entries [`merge_buffered`] merged, not yet written (at most [`MERGED_BATCH`]).
    merged: Vec<Entry>,
    /// Whether steps take the [`merge_buffered`] path; only tests, which compare it with
    /// the entry-at-a-time one, turn it off.
    batched: bool,
}

impl LevelMerge {
    /// Start merging `newer` into `older` (either may be empty) as one new component;
    /// `drop_tombstones`: the output is the last component.
    pub fn new(
        io: &mut dyn JobIo,
        lay: Layout,
        io_unit: u64,
        newer: Input,
        older: Input,
        drop_tombstones: bool,
    ) -> Result<LevelMerge> {
        let max_entries = newer.entries() + older.entries();
        Ok(LevelMerge {
            writer: ComponentWriter::new(io, lay, io_unit, max_entries)?,
            newer,
            older,
            hidden: 0,
            drop_tombstones,
            merged: Vec::new(),
            batched: true,
        })
    }

    /// The extent the output is written into (no manifest refers to it until the job
    /// that owns this merge completes).
    pub fn extent(&self) -> Extent {
        self.writer.extent()
    }

    /// Bytes held beside the I/O buffers and the frozen C0's entries (the index's to
    /// count): the output's node keys and the batch.
    pub fn memory_bytes(&self) -> u64 {
        let batch = self.merged.capacity() * std::mem::size_of::<Entry>();
        batch as u64 + self.writer.memory_bytes()
    }

    /// Process up to `units` input entries (at least one), leaving out the older input's
    /// entries that `newer_tombs` (the newer input's range tombstones) cover. Returns the
    /// entries taken, and whether both inputs are exhausted (the merge is ready to
    /// [`LevelMerge::finish`]).
    pub fn step(
        &mut self,
        io: &mut dyn JobIo,
        lay: Layout,
        io_unit: u64,
        newer_tombs: &Tombs,
        units: u64,
    ) -> Result<(u64, bool)> {
        let mut hidden = newer_tombs.cursor_at(self.hidden);
        let r = self.step_with(io, lay, io_unit, &mut hidden, units);
        self.hidden = hidden.position();
        r
    }

    fn step_with(
        &mut self,
        io: &mut dyn JobIo,
        lay: Layout,
        io_unit: u64,
        hidden: &mut Cover<'_>,
        units: u64,
    ) -> Result<(u64, bool)> {
        let LevelMerge {
            newer,
            older,
            drop_tombstones,
            writer: w,
            merged,
            batched,
            ..
        } = self;
        let drop_tombstones = *drop_tombstones;
        let mut done = 0u64;
        while done < units {
            if *batched {
                let taken = merge_buffered(
                    io,
                    newer,
                    older,
                    hidden,
                    drop_tombstones,
                    w,
                    merged,
                    units - done,
                )?;
                if taken > 0 {
                    done += taken;
                    continue;
                }
            }
            let a = newer.peek(io, lay, io_unit)?;
            let b = older.peek(io, lay, io_unit)?;
            let e = match (a, b) {
                (None, None) => return Ok((done, true)),
                (Some(x), None) => {
                    newer.advance();
                    done += 1;
                    x
                }
                (None, Some(_)) => {
                    done += copy_older(io, older, None, hidden, drop_tombstones, w, units - done)?;
                    continue;
                }
                (Some(x), Some(y)) => {
                    if x.key <= y.key {
                        newer.advance();
                        done += 1;
                        if x.key == y.key {
                            older.advance();
                            done += 1;
                        }
                        x
                    } else {
                        done += copy_older(
                            io,
                            older,
                            Some(x.key),
                            hidden,
                            drop_tombstones,
                            w,
                            units - done,
                        )?;
                        continue;
                    }
                }
            };
            if drop_tombstones && e.kind == TOMBSTONE {
                continue;
            }
            w.push(io, e)?;
        }
        Ok((done, false))
    }

    /// Write the output's last leaf and internal levels: the new component (`None`: no
    /// entry was kept).
    pub fn finish(self, io: &mut dyn JobIo) -> Result<Merged> {
        let pages_written = self.writer.pages();
        let pages_read = self.newer.pages_read() + self.older.pages_read();
        let component = self.writer.finish(io)?;
        Ok(Merged {
            pages_written: component.map_or(pages_written, |c| c.pages),
            component,
            pages_read,
        })
    }
}

/// Input entries a merge of `incoming` entries into level index `from` (component
/// `from + 1`) will process, following the cascade as it would go without cancellations
/// (an upper bound): the work a deamortized job spreads over the inserts.
fn estimate(
    p: &Params,
    mut incoming: u64,
    components: &[Option<Component>],
    tombs: &[Tombs],
    from: usize,
) -> u64 {
    let mut work = 0u64;
    for i in from..components.len().max(from + 1) {
        let out = incoming
            + components
                .get(i)
                .copied()
                .flatten()
                .map_or(0, |c| c.entries);
        work = work.saturating_add(out);
        let fill = out + tombs.get(i).map_or(0, |t| t.len() as u64);
        if fill <= p.capacity(i + 1) || is_last(components, i) {
            break;
        }
        incoming = out;
    }
    work
}

/// No component at a level index above `i`.
fn is_last(components: &[Option<Component>], i: usize) -> bool {
    components
        .get(i + 1..)
        .map_or(true, |r| r.iter().all(Option::is_none))
}

/// A rolling merge in progress: a frozen C0's entries (and range tombstones) merged into
/// C1, then each level that outgrows its capacity into the next, as the amortized merge
/// does them, a bounded number of input entries per [`MergeJob::step`].
pub struct MergeJob {
    /// The levels as the job sees them (level i + 1 at index i): those it started from,
    /// with its outputs put in as they complete. Published at completion.
    components: Vec<Option<Component>>,
    tombs: Vec<Tombs>,
    /// The index of the level being written.
    level: usize,
    merge: Option<LevelMerge>,
    /// The range tombstones of the merge's newer input.
    newer_tombs: Tombs,
    /// The newer input when this job wrote it (a cascade's intermediate component, never
    /// published): freed once merged.
    temp: Option<Component>,
    /// The components the job started from that it merged (freed at publication).
    replaced: Vec<Component>,
    /// Estimated input entries still to process (the deamortized step size).
    pub work: u64,
    merges: u64,
    pages_read: u64,
    pages_written: u64,
}

/// A completed [`MergeJob`].
pub struct Outcome {
    /// The new levels and their range tombstones (parallel).
    pub components: Vec<Option<Component>>,
    pub tombs: Vec<Tombs>,
    /// The index of the level written last: where the cascade stopped (within its
    /// capacity, or the last level, which may have outgrown it).
    pub level: usize,
    /// The components the merges consumed, to free once the new levels are published.
    pub replaced: Vec<Component>,
    /// Merges of one level into the next that the job did, and their pages.
    pub merges: u64,
    pub pages_read: u64,
    pub pages_written: u64,
}

impl Resumable for MergeJob {
    type Params = Params;
    type Outcome = Outcome;

    /// Process up to `units` input entries; `Some` when the whole job is complete.
    fn step(&mut self, io: &mut dyn JobIo, p: &Params, units: u64) -> Result<Option<Outcome>> {
        let mut done = 0u64;
        while done < units {
            let Some(m) = self.merge.as_mut() else {
                return Ok(None);
            };
            let (n, finished) = m.step(io, p.lay, p.io_unit, &self.newer_tombs, units - done)?;
            done += n;
            self.work = self.work.saturating_sub(n);
            if finished {
                if let Some(out) = self.finish_level(io, p)? {
                    return Ok(Some(out));
                }
                // Starting the next level counts as a unit, so that every turn progresses.
                done += 1;
            }
        }
        Ok(None)
    }

    /// Bytes held besides the I/O buffers and the frozen C0's entries: the merge's (node
    /// keys, batch) and the job's copy of the range tombstones.
    fn memory_bytes(&self) -> u64 {
        self.merge.as_ref().map_or(0, LevelMerge::memory_bytes)
            + self.tombs.iter().map(Tombs::memory_bytes).sum::<u64>()
            + self.newer_tombs.memory_bytes()
    }

    /// Extents this job writes that no manifest refers to (`check_integrity` claims
    /// their pages; a crash leaves them free, as no checkpoint runs while a job does).
    fn owned(&self) -> Vec<Extent> {
        let merge = self.merge.as_ref().map(LevelMerge::extent);
        merge
            .into_iter()
            .chain(self.temp.map(|t| t.extent()))
            .collect()
    }

    fn work(&self) -> u64 {
        self.work
    }
}

impl MergeJob {
    /// Start merging a frozen C0's entries `c0` (index entries, sorted) and its range
    /// tombstones into `components`, whose range tombstones are `tombs` (parallel).
    pub fn start(
        io: &mut dyn JobIo,
        p: &Params,
        c0: Arc<[Entry]>,
        c0_tombs: Tombs,
        mut components: Vec<Option<Component>>,
        mut tombs: Vec<Tombs>,
    ) -> Result<MergeJob> {
        if components.is_empty() {
            components.push(None);
            tombs.push(Tombs::new());
        }
        let work = estimate(p, c0.len() as u64, &components, &tombs, 0);
        let mut job = MergeJob {
            components,
            tombs,
            level: 0,
            merge: None,
            newer_tombs: c0_tombs,
            temp: None,
            replaced: Vec::new(),
            work,
            merges: 0,
            pages_read: 0,
            pages_written: 0,
        };
        job.begin_level(io, p, Input::memory(c0))?;
        Ok(job)
    }

    /// Start merging `newer` into the level `self.level`.
    fn begin_level(&mut self, io: &mut dyn JobIo, p: &Params, newer: Input) -> Result<()> {
        let i = self.level;
        let older = self.components.get(i).copied().flatten();
        self.replaced.extend(older);
        let drop = is_last(&self.components, i);
        let older = older.map_or_else(|| Input::memory(Vec::new()), Input::component);
        self.merge = Some(LevelMerge::new(io, p.lay, p.io_unit, newer, older, drop)?);
        Ok(())
    }

    /// The level's merge is complete: cascade into the next level, or complete the job.
    fn finish_level(&mut self, io: &mut dyn JobIo, p: &Params) -> Result<Option<Outcome>> {
        let Some(m) = self.merge.take() else {
            return Ok(None);
        };
        let out = m.finish(io)?;
        self.merges += 1;
        self.pages_read += out.pages_read;
        self.pages_written += out.pages_written;
        if let Some(t) = self.temp.take() {
            // The intermediate component is consumed; it was never published.
            io.free_extent(t.extent());
        }
        let i = self.level;
        let drop = is_last(&self.components, i);
        self.components[i] = out.component;
        // The output level keeps the union of both inputs' range tombstones, or none when
        // it is the last (tombs.rs), also when the output holds no entry.
        let older_tombs = std::mem::take(&mut self.tombs[i]);
        let newer_tombs = std::mem::take(&mut self.newer_tombs);
        if !drop {
            // The union is a set of keys: add the smaller set's intervals to the larger.
            let (mut all, other) = if newer_tombs.len() >= older_tombs.len() {
                (newer_tombs, older_tombs)
            } else {
                (older_tombs, newer_tombs)
            };
            all.union(&other);
            self.tombs[i] = all;
        }
        let entries = out.component.map_or(0, |c| c.entries);
        let fill = entries + self.tombs[i].len() as u64;
        if fill > p.capacity(i + 1) && !is_last(&self.components, i) {
            // The level's entries and range tombstones move down together (a level
            // holding only range tombstones is merged as an empty input with them).
            let c = self.components[i].take();
            self.temp = c;
            self.newer_tombs = std::mem::take(&mut self.tombs[i]);
            self.level = i + 1;
            let rest = estimate(p, entries, &self.components, &self.tombs, i + 1);
            self.work = self.work.max(rest);
            let newer = c.map_or_else(|| Input::memory(Vec::new()), Input::component);
            self.begin_level(io, p, newer)?;
            return Ok(None);
        }
        Ok(Some(Outcome {
            components: std::mem::take(&mut self.components),
            tombs: std::mem::take(&mut self.tombs),
            level: i,
            replaced: std::mem::take(&mut self.replaced),
            merges: self.merges,
            pages_read: self.pages_read,
            pages_written: self.pages_written,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::AlignedBuf;
    use crate::kit::sorted::entry::Kind;
    use proptest::prelude::*;

    use crate::durable::Pager;
    use crate::kit::sorted::testing::{pager, PAGE};

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

    /// The merged component and the bytes of its pages: merged entry at a time in one
    /// call, or batched in steps of `step` input entries (resumed between steps).
    fn merge_both(
        lay: Layout,
        newer: &[Entry],
        newer_on_disk: bool,
        older: &[Entry],
        tombs: &Tombs,
        drop_tombstones: bool,
        step: Option<u64>,
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
        let mut m = LevelMerge::new(&mut pager, lay, 2, newer, older, drop_tombstones).unwrap();
        m.batched = step.is_some();
        let units = step.unwrap_or(u64::MAX);
        loop {
            let (n, done) = m.step(&mut pager, lay, 2, tombs, units).unwrap();
            if done {
                break;
            }
            assert!(
                n >= units,
                "a step stopped short of its units before the end"
            );
        }
        let m = m.finish(&mut pager).unwrap();
        let bytes = m.component.map_or_else(Vec::new, |c| {
            let mut buf = AlignedBuf::zeroed(PAGE * c.pages as usize);
            pager.device().read(c.start, &mut buf).unwrap();
            buf.to_vec()
        });
        (m.component, bytes)
    }

    /// What the merge must write: the newer entry of a key both inputs hold, the older
    /// entries no range tombstone covers, tombstones dropped when asked.
    fn model(newer: &[Entry], older: &[Entry], tombs: &Tombs, drop_tombstones: bool) -> Vec<Entry> {
        let mut all = std::collections::BTreeMap::new();
        for e in older.iter().filter(|e| !tombs.covers(e.key)) {
            all.insert(e.key, *e);
        }
        for e in newer {
            all.insert(e.key, *e);
        }
        all.into_values()
            .filter(|e| !(drop_tombstones && e.kind == TOMBSTONE))
            .collect()
    }

    /// The entries of a component's leaves, read back.
    fn leaf_entries(lay: Layout, c: Option<Component>, bytes: &[u8]) -> Vec<Entry> {
        let Some(c) = c else {
            return Vec::new();
        };
        bytes
            .chunks(PAGE)
            .take(c.leaves as usize)
            .flat_map(|b| lay.decode(b).unwrap())
            .collect()
    }

    /// The batched merge, run in steps of `step` input entries, writes exactly the pages
    /// the entry-at-a-time merge writes in one call, and they hold the model's entries.
    #[allow(clippy::too_many_arguments)]
    fn check_merge(
        newer: &std::collections::BTreeMap<u64, (bool, u64)>,
        older: &std::collections::BTreeMap<u64, (bool, u64)>,
        tomb: Option<(u64, u64)>,
        newer_on_disk: bool,
        drop_tombstones: bool,
        packed: bool,
        step: u64,
    ) -> std::result::Result<(), TestCaseError> {
        let lay = Layout::of(packed, PAGE);
        let mut tombs = Tombs::new();
        if let Some((lo, len)) = tomb {
            tombs.add(lo, lo + len);
        }
        let (newer, older) = (entries(newer), entries(older));
        let want = merge_both(
            lay,
            &newer,
            newer_on_disk,
            &older,
            &tombs,
            drop_tombstones,
            None,
        );
        let got = merge_both(
            lay,
            &newer,
            newer_on_disk,
            &older,
            &tombs,
            drop_tombstones,
            Some(step),
        );
        prop_assert_eq!(
            leaf_entries(lay, want.0, &want.1),
            model(&newer, &older, &tombs, drop_tombstones)
        );
        prop_assert_eq!(got, want);
        Ok(())
    }

    proptest! {
        /// The batched merge, run in steps of any size, writes exactly the component the
        /// entry-at-a-time merge writes in one call, which holds the model's entries:
        /// tombstones and range tombstones honoured.
        #[test]
        fn the_batched_merge_writes_what_the_entry_at_a_time_merge_writes(
            newer in proptest::collection::btree_map(0u64..3000, (any::<bool>(), any::<u64>()), 0..300),
            older in proptest::collection::btree_map(0u64..3000, (any::<bool>(), any::<u64>()), 0..700),
            tomb in proptest::option::of((0u64..3000, 0u64..300)),
            newer_on_disk in any::<bool>(),
            drop_tombstones in any::<bool>(),
            packed in any::<bool>(),
            step in prop_oneof![1u64..4, 4u64..600, Just(u64::MAX)],
        ) {
            check_merge(&newer, &older, tomb, newer_on_disk, drop_tombstones, packed, step)?;
        }

        /// The same with few tombstones, so that the older input's runs of normal entries,
        /// copied page to page, span pages and steps.
        #[test]
        fn runs_of_normal_entries_are_copied_whole_across_pages_and_steps(
            newer in proptest::collection::btree_map(0u64..20_000, (proptest::bool::weighted(0.02), any::<u64>()), 0..200),
            older in proptest::collection::btree_map(0u64..20_000, (proptest::bool::weighted(0.02), any::<u64>()), 0..2000),
            tomb in proptest::option::of((0u64..20_000, 0u64..2000)),
            newer_on_disk in any::<bool>(),
            drop_tombstones in any::<bool>(),
            packed in any::<bool>(),
            step in prop_oneof![1u64..4, 4u64..600, Just(u64::MAX)],
        ) {
            check_merge(&newer, &older, tomb, newer_on_disk, drop_tombstones, packed, step)?;
        }
    }
}
