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
use std::cell::Cell;
use std::sync::atomic::Ordering;

impl BTree {
    /// A delete beside other readers and shared writes, as [`BTree::insert_shared`] is the
    /// insert: under the latch of the key's leaf (found by moving right), a key that is
    /// absent needs nothing (that look is the delete's instant); a key whose leaf keeps
    /// its minimum without it (or is the root) is removed there, logged there; otherwise
    /// (an underflow to repair) the delete changes nothing and asks for the exclusive
    /// lock. Whether the leaf is the root is read under its latch: only the holder of the
    /// root's latch changes the root beside other threads.
    pub(super) fn delete_shared(&self, k: u64) -> Result<SharedWrite> {
        let leaf = self.walk_down(k, None)?;
        let min = self.leaf_min();
        let absent = Cell::new(false);
        let decide = |pid: PageId, b: &[u8]| match node::search(b, k) {
            Err(_) => {
                absent.set(true);
                None
            }
            Ok(i) if node::count(b) > min || self.top.load().0 == pid => Some(i),
            Ok(_) => None,
        };
        let change = |_: PageId, b: &mut [u8], i: usize| node::remove_at(b, i);
        let op = LogicalOp::Delete(k);
        if self
            .at_node_shared(leaf, k, 0, Some(&op), decide, change)?
            .is_none()
        {
            return Ok(match absent.get() {
                true => SharedWrite::Done,
                false => SharedWrite::Exclusive,
            });
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
                *self.counters.redistributions.get_mut() += 1;
                return Ok(());
            }
            Repair::Merged => {
                *self.leaves.get_mut() -= 1;
                *self.counters.merges.get_mut() += 1;
            }
        }
        path.push((parent, slot));
        self.with_spine(|sp| sp.repair_underflow(path, 1))
    }
}
