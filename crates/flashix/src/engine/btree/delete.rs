//! Deletion with redistribution and merging (Comer 1979; FD-tree paper App. D: "if a node
//! is less than half full, we combine it with its sibling node"). A node that falls below
//! half its kind's order (`leaf_order / 2` entries for a leaf, `inner_order / 2`
//! separators for an internal node; each order defaults to a page's capacity) first
//! borrows from a sibling that has more than the minimum (redistribution); otherwise the
//! two are merged and the parent loses a separator, which may cascade up to the root; a
//! root with a single child is removed. Leaves are repaired here; internal nodes by the
//! shared [`crate::kit::bnode::spine`] (given the inner order as its `cap`).

use super::BTree;
use crate::error::Result;
use crate::io::PageId;
use crate::kit::bnode::leaves::{self, Repair};
use crate::kit::bnode::{node, spine};

impl BTree {
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
