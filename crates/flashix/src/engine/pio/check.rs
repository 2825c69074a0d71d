//! `check_integrity`: the invariants listed in the module doc, on the whole tree, the
//! LSMap and the OPQ.

use super::leaf;
use super::opq::Op;
use super::{Fenced, PioBTree};
use crate::error::{Error, Result};
use crate::io::PageId;
use crate::page::DATA_FILE;
use std::collections::{HashMap, HashSet};

#[derive(Default)]
struct Walk {
    seen: HashSet<PageId>,
    leaves: u64,
    records: u64,
    /// First page of each leaf -> its last segment.
    lasts: HashMap<PageId, u16>,
}

fn bad(pid: PageId, detail: String) -> Error {
    Error::corruption(
        DATA_FILE,
        Some(pid),
        format!("PIO B-tree invariant violated: {detail}"),
    )
}

impl PioBTree {
    pub(super) fn check(&mut self) -> Result<()> {
        let mut w = Walk::default();
        let root = Fenced {
            pid: self.root,
            lo: 0,
            hi: None,
        };
        self.check_node(root, self.height - 1, true, &mut w)?;
        // After leaves were freed unread, `leaf_records` is an upper bound (see rdelete).
        let records_ok = if self.leaf_records_bound {
            w.records <= self.leaf_records
        } else {
            w.records == self.leaf_records
        };
        if w.leaves != self.leaves || !records_ok {
            return Err(bad(
                self.root,
                format!(
                    "tree has {} leaves and {} leaf records, the header says {} and {}{}",
                    w.leaves,
                    w.records,
                    self.leaves,
                    self.leaf_records,
                    if self.leaf_records_bound {
                        " (at most)"
                    } else {
                        ""
                    }
                ),
            ));
        }
        for (pid, last) in self.lsmap.iter() {
            match w.lasts.get(&pid) {
                None => {
                    return Err(bad(
                        pid,
                        "LSMap names a page that is no reachable leaf".into(),
                    ))
                }
                Some(&l) if l != last => {
                    return Err(bad(
                        pid,
                        format!("LSMap says last segment {last}, the leaf's is {l}"),
                    ))
                }
                Some(_) => {}
            }
        }
        let uncovered = w.lasts.keys().find(|&&p| !self.lsmap.covers(p));
        if let (Some(&pid), true) = (uncovered, self.lsmap_covers_all) {
            return Err(bad(
                pid,
                "a reachable leaf has no LSMap slot (shared searches could not learn it)".into(),
            ));
        }
        let opq = self.opq.get_mut();
        let sorted = opq.sorted_region();
        if sorted.windows(2).any(|p| p[0].key >= p[1].key) {
            return Err(Error::corruption(
                "OPQ",
                None,
                "PIO B-tree invariant violated: the OPQ's sorted region is out of order",
            ));
        }
        opq.tombs().check().map_err(|e| {
            Error::corruption("OPQ", None, format!("PIO B-tree invariant violated: {e}"))
        })?;
        // Range tombstones take OPQ slots: a full OPQ is flushed before another is added.
        // Full only while the flush of a shared append that filled it waits for the
        // exclusive lock (`filled_at`; Thread safety).
        let waiting = *self.filled_at.get_mut() != super::NOT_FILLED;
        if opq.used() > opq.capacity() || (opq.used() == opq.capacity() && !waiting) {
            return Err(Error::corruption(
                "OPQ",
                None,
                format!(
                    "PIO B-tree invariant violated: {} OPQ entries and {} range tombstones \
                     reach its capacity {} (a full OPQ is flushed at once)",
                    opq.len(),
                    opq.tombs().len(),
                    opq.capacity()
                ),
            ));
        }
        Ok(())
    }

    fn mark(&mut self, pid: PageId, w: &mut Walk) -> Result<()> {
        if !w.seen.insert(pid) {
            return Err(bad(pid, "page reachable twice".into()));
        }
        let alloc = self.pager.allocator();
        if pid >= alloc.high_water() || alloc.is_free(pid) {
            return Err(bad(pid, "reachable page is not allocated".into()));
        }
        Ok(())
    }

    fn check_node(&mut self, at: Fenced, level: u32, is_root: bool, w: &mut Walk) -> Result<()> {
        if level == 0 {
            return self.check_leaf(at, is_root, w);
        }
        self.mark(at.pid, w)?;
        let n = self.internal(at.pid, level)?;
        let es = &n.entries;
        if !is_root && es.len() < self.cap / 2 {
            return Err(bad(
                at.pid,
                format!(
                    "{} separators, below the minimum {}",
                    es.len(),
                    self.cap / 2
                ),
            ));
        }
        if es.is_empty() || es.len() > self.cap {
            return Err(bad(
                at.pid,
                format!("{} separators (capacity {})", es.len(), self.cap),
            ));
        }
        for p in es.windows(2) {
            if p[0].0 >= p[1].0 {
                return Err(bad(
                    at.pid,
                    format!("separators out of order: {} then {}", p[0].0, p[1].0),
                ));
            }
        }
        for &(k, _) in es {
            if k < at.lo || at.hi.is_some_and(|h| k >= h) {
                return Err(bad(
                    at.pid,
                    format!(
                        "separator {k} outside the fence range {}..{:?}",
                        at.lo, at.hi
                    ),
                ));
            }
        }
        for s in 0..n.slots() {
            self.check_node(n.child(at, s), level - 1, false, w)?;
        }
        Ok(())
    }

    fn check_leaf(&mut self, at: Fenced, is_root: bool, w: &mut Walk) -> Result<()> {
        let cap = self.seg_cap;
        let mut counts = Vec::with_capacity(usize::from(self.segs));
        for i in 0..self.segs {
            let pid = at.pid + u64::from(i);
            self.mark(pid, w)?;
            let h = self
                .pager
                .read(pid, |b| leaf::header(self.layout, pid, b))??;
            if h.index != i || h.total != self.segs || h.count > cap || (i > 0 && h.base != 0) {
                return Err(bad(
                    pid,
                    format!(
                        "segment header (index {}, of {}, {} records, base {}) for segment {i} of {}",
                        h.index, h.total, h.count, h.base, self.segs
                    ),
                ));
            }
            counts.push(h.count);
        }
        let last = counts.iter().rposition(|&c| c > 0).unwrap_or(0);
        if counts[..last].iter().any(|&c| c != cap) {
            return Err(bad(
                at.pid,
                format!("a segment before the last ({last}) is not full: {counts:?}"),
            ));
        }
        let img = leaf::load(
            self.layout,
            &mut self.pager,
            at.pid,
            self.segs,
            Some(last as u16),
        )?;
        let base = &img.records[..img.base];
        if base.windows(2).any(|p| p[0].key >= p[1].key) || base.iter().any(|r| r.op != Op::Put) {
            return Err(bad(
                at.pid,
                "the leaf's base records are not sorted puts".into(),
            ));
        }
        if !is_root && img.base < self.leaf_min() {
            return Err(bad(
                at.pid,
                format!(
                    "leaf base of {} records, below the minimum {}",
                    img.base,
                    self.leaf_min()
                ),
            ));
        }
        for r in &img.records {
            if r.key < at.lo || at.hi.is_some_and(|h| r.key >= h) {
                return Err(bad(
                    at.pid,
                    format!(
                        "record key {} outside the fence range {}..{:?}",
                        r.key, at.lo, at.hi
                    ),
                ));
            }
        }
        w.leaves += 1;
        w.records += img.records.len() as u64;
        w.lasts.insert(at.pid, last as u16);
        Ok(())
    }
}
