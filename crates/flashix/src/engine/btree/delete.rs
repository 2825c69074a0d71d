//! Deletion with redistribution and merging (Comer 1979; FD-tree paper App. D: "if a node
//! is less than half full, we combine it with its sibling node"). A node that falls below
//! half its kind's order (`leaf_order / 2` entries for a leaf, `inner_order / 2`
//! separators for an internal node; each order defaults to a page's capacity) first
//! borrows from a sibling that has more than the minimum (redistribution); otherwise the
//! two are merged and the parent loses a separator, which may cascade up to the root; a
//! root with a single child is removed. Leaves are repaired here; internal nodes by the
//! shared [`crate::kit::bnode::spine`] (given the inner order as its `cap`).

use super::BTree;
use crate::durable::LogicalOp;
use crate::error::Result;
use crate::io::PageId;
use crate::kit::api::SharedWrite;
use crate::kit::bnode::leaves::{self, Repair};
use crate::kit::bnode::{node, spine};
use std::sync::atomic::Ordering;

impl BTree {
    /// A delete beside other readers and shared writes, as [`BTree::insert_shared`] is the
    /// insert: a key that is absent needs nothing (the search is the delete's instant); a
    /// key whose leaf keeps its minimum without it (or is the root) is removed under the
    /// leaf's latch, logged there; otherwise (an underflow to repair, or the key gone
    /// since the search) the delete changes nothing and asks for the exclusive lock.
    pub(super) fn delete_shared(&self, k: u64) -> Result<SharedWrite> {
        let leaf = self.walk_down(k, None)?;
        let found = self.pager.read_shared(leaf, |b| {
            let above = node::side(b).is_some_and(|s| s.above(k));
            (above, node::search(b, k).is_ok())
        })?;
        match found {
            (true, _) => return Ok(SharedWrite::Exclusive),
            (false, false) => return Ok(SharedWrite::Done),
            (false, true) => {}
        }
        let min = if self.height == 1 { 0 } else { self.leaf_min() };
        let decide = |b: &[u8]| {
            if node::side(b).is_some_and(|s| s.above(k)) || node::count(b) <= min {
                return None;
            }
            node::search(b, k).ok()
        };
        let change = |b: &mut [u8], i: usize| node::remove_at(b, i);
        let op = LogicalOp::Delete(k);
        if self
            .pager
            .write_shared(leaf, &op, decide, change)?
            .is_none()
        {
            return Ok(SharedWrite::Exclusive);
        }
        self.entries.fetch_sub(1, Ordering::Relaxed);
        Ok(self.after_shared_write())
    }

    /// Remove `k`; true if it was present.
    pub(super) fn delete_unlogged(&mut self, k: u64) -> Result<bool> {
        let (path, leaf) = self.descend(k)?;
        let Ok(i) = self.pager.read(leaf, |b| node::search(b, k))? else {
            return Ok(false);
        };
        let n = self.pager.write(leaf, |b| {
            node::remove_at(b, i);
            node::count(b)
        })?;
        *self.entries.get_mut() -= 1;
        if n < self.leaf_min() && !path.is_empty() {
            self.rebalance(path, leaf)?;
        }
        Ok(true)
    }

    /// Restore occupancy of the underfull `leaf`, whose ancestors are `path`: borrow from
    /// a sibling with more than the minimum, else merge with it; a merge takes a separator
    /// from the parent, whose underflow the shared spine repairs up to the root.
    fn rebalance(&mut self, mut path: Vec<(PageId, usize)>, leaf: PageId) -> Result<()> {
        let Some((parent, slot)) = path.pop() else {
            return Ok(());
        };
        let (link, entries) = self
            .pager
            .read(parent, |b| (node::link(b), node::entries(b)))?;
        let (left, right, sep_idx) = spine::sibling_pair(link, &entries, leaf, slot);
        let sibling = if left == leaf { right } else { left };
        let sib_count = self.pager.read(sibling, node::count)?;
        let mut all = self.pager.read(left, node::entries)?;
        let (r, r_es) = self.pager.read(right, |b| {
            let r = leaves::RightLeaf {
                link: node::link(b),
                side: node::side(b),
            };
            (r, node::entries(b))
        })?;
        all.extend(r_es);
        // Even the two out and move the separator, or merge right into left (which takes
        // over right's place in the leaf chain) and drop the separator between them.
        let pair = (left, right);
        let redistribute = sib_count > self.leaf_min();
        match leaves::repair(
            &mut self.pager,
            parent,
            sep_idx,
            pair,
            &all,
            r,
            redistribute,
        )? {
            Repair::Redistributed => {
                self.counters.redistributions += 1;
                return Ok(());
            }
            Repair::Merged => {
                self.leaves -= 1;
                self.counters.merges += 1;
            }
        }
        path.push((parent, slot));
        let ev = self.spine().repair_underflow(path, 1)?;
        self.count(ev);
        Ok(())
    }
}
