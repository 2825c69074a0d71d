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
    /// C0's entries, already in memory (at most |C0|).
    Memory(std::vec::IntoIter<Entry>, Option<Entry>),
    Component(Box<LeafReader>),
}

impl Input {
    pub fn memory(es: Vec<Entry>) -> Input {
        let mut it = es.into_iter();
        let first = it.next();
        Input::Memory(it, first)
    }

    pub fn component(c: Component) -> Input {
        Input::Component(Box::new(LeafReader::new(c)))
    }

    fn peek(&mut self, pager: &mut Pager, lay: Layout, io_unit: u64) -> Result<Option<Entry>> {
        match self {
            Input::Memory(_, cur) => Ok(*cur),
            Input::Component(r) => r.peek(pager, lay, io_unit),
        }
    }

    fn advance(&mut self) {
        match self {
            Input::Memory(it, cur) => *cur = it.next(),
            Input::Component(r) => r.advance(),
        }
    }

    /// The input's entries (asked before the merge reads any: the output's size bound).
    fn entries(&self) -> u64 {
        match self {
            Input::Memory(it, cur) => it.len() as u64 + u64::from(cur.is_some()),
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
        Input::Memory(it, cur) => {
            if let Some(e) = cur.take() {
                *cur = it.next();
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
    mut newer: Input,
    newer_tombs: &Tombs,
    mut older: Input,
    drop_tombstones: bool,
) -> Result<Merged> {
    let max_entries = newer.entries() + older.entries();
    let mut w = ComponentWriter::new(pager, lay, io_unit, max_entries)?;
    // Older keys arrive in increasing order: one forward cursor, no second pass.
    let mut hidden = newer_tombs.cursor();
    loop {
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
