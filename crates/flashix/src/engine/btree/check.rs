//! `check_integrity`: the invariants listed in the module doc, checked on the whole tree.

use super::BTree;
use crate::error::{Error, Result};
use crate::io::PageId;
use crate::kit::bnode::node;
use crate::page::DATA_FILE;
use std::collections::HashSet;

struct Walk {
    seen: HashSet<PageId>,
    /// (leaf, its link) in key order.
    leaves: Vec<(PageId, u64)>,
    entries: u64,
}

fn bad(pid: PageId, detail: String) -> Error {
    Error::corruption(
        DATA_FILE,
        Some(pid),
        format!("B+-tree invariant violated: {detail}"),
    )
}

impl BTree {
    pub(super) fn check(&mut self) -> Result<()> {
        let mut w = Walk {
            seen: HashSet::new(),
            leaves: Vec::new(),
            entries: 0,
        };
        self.check_node(self.root, self.height - 1, None, None, true, &mut w)?;
        for pair in w.leaves.windows(2) {
            if pair[0].1 != pair[1].0 {
                return Err(bad(
                    pair[0].0,
                    format!("leaf links to {} instead of {}", pair[0].1, pair[1].0),
                ));
            }
        }
        if let Some(&(last, link)) = w.leaves.last() {
            if link != node::NONE {
                return Err(bad(last, format!("last leaf links to {link}")));
            }
        }
        if w.entries != self.entries {
            return Err(bad(
                self.root,
                format!(
                    "tree holds {} entries, header says {}",
                    w.entries, self.entries
                ),
            ));
        }
        if w.leaves.len() as u64 != self.leaves {
            return Err(bad(
                self.root,
                format!(
                    "tree has {} leaves, header says {}",
                    w.leaves.len(),
                    self.leaves
                ),
            ));
        }
        Ok(())
    }

    /// Check the subtree at `pid`, whose keys must lie in `[lo, hi)`.
    fn check_node(
        &mut self,
        pid: PageId,
        level: u32,
        lo: Option<u64>,
        hi: Option<u64>,
        is_root: bool,
        w: &mut Walk,
    ) -> Result<()> {
        if !w.seen.insert(pid) {
            return Err(bad(pid, "page reachable twice".into()));
        }
        let alloc = self.pager.allocator();
        if pid >= alloc.high_water() || alloc.is_free(pid) {
            return Err(bad(pid, "reachable page is not allocated".into()));
        }
        let (leaf, lvl, link, es) = self.pager.read(pid, |b| {
            (
                node::is_leaf(b),
                node::level(b),
                node::link(b),
                node::entries(b),
            )
        })?;
        if lvl != level || leaf != (level == 0) {
            return Err(bad(
                pid,
                format!("node level {lvl} (leaf: {leaf}), expected {level}"),
            ));
        }
        if !is_root && es.len() < self.min() {
            return Err(bad(
                pid,
                format!("{} entries, below the minimum {}", es.len(), self.min()),
            ));
        }
        if is_root && level > 0 && es.is_empty() {
            return Err(bad(pid, "internal root without separators".into()));
        }
        if es.len() > self.cap {
            return Err(bad(
                pid,
                format!("{} entries above capacity {}", es.len(), self.cap),
            ));
        }
        for pair in es.windows(2) {
            if pair[0].0 >= pair[1].0 {
                return Err(bad(
                    pid,
                    format!("keys out of order: {} then {}", pair[0].0, pair[1].0),
                ));
            }
        }
        for &(k, _) in &es {
            if lo.is_some_and(|l| k < l) || hi.is_some_and(|h| k >= h) {
                return Err(bad(
                    pid,
                    format!("key {k} outside the parent's range {lo:?}..{hi:?}"),
                ));
            }
        }
        if level == 0 {
            w.entries += es.len() as u64;
            w.leaves.push((pid, link));
            return Ok(());
        }
        // Child slot 0 covers [lo, key0); slot j covers [key(j-1), key(j)).
        let mut child_lo = lo;
        let mut child = link;
        for &(sep, next_child) in &es {
            self.check_node(child, level - 1, child_lo, Some(sep), false, w)?;
            child_lo = Some(sep);
            child = next_child;
        }
        self.check_node(child, level - 1, child_lo, hi, false, w)
    }
}
