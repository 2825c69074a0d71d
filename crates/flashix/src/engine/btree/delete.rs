//! Deletion with redistribution and merging (Comer 1979; FD-tree paper App. D: "if a node
//! is less than half full, we combine it with its sibling node"). A node that falls below
//! `capacity/2` entries first borrows from a sibling that has more than the minimum
//! (redistribution); otherwise the two are merged and the parent loses a separator, which
//! may cascade up to the root; a root with a single child is removed.

use super::{node, BTree};
use crate::error::Result;
use crate::io::PageId;

/// Links of two siblings (left, right) and their entries in key order.
type SiblingEntries = (u64, u64, Vec<(u64, u64)>);

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
        self.entries -= 1;
        if n < self.min() && !path.is_empty() {
            self.rebalance(path, leaf)?;
        }
        Ok(true)
    }

    /// Restore occupancy of the underfull `node`, whose ancestors are `path`.
    fn rebalance(&mut self, mut path: Vec<(PageId, usize)>, mut node: PageId) -> Result<()> {
        let min = self.min();
        let mut level = 0u32;
        while let Some((parent, slot)) = path.pop() {
            let (pcount, left, right, sep_idx) = self.pager.read(parent, |b| {
                let n = node::count(b);
                if slot < n {
                    (n, node, node::child_at(b, slot + 1), slot)
                } else {
                    (n, node::child_at(b, slot - 1), node, slot - 1)
                }
            })?;
            debug_assert!(pcount > 0);
            let sibling = if left == node { right } else { left };
            let sib_count = self.pager.read(sibling, node::count)?;
            if sib_count > min {
                self.redistribute(level, parent, sep_idx, left, right)?;
                self.counters.redistributions += 1;
                return Ok(());
            }
            self.merge(level, parent, sep_idx, left, right)?;
            self.counters.merges += 1;
            let pcount = self.pager.read(parent, node::count)?;
            if path.is_empty() {
                if pcount == 0 {
                    // The root has one child left: that child is the new root.
                    self.pager.free_page(parent);
                    self.root = left;
                    self.height -= 1;
                }
                return Ok(());
            }
            if pcount >= min {
                return Ok(());
            }
            node = parent;
            level += 1;
        }
        Ok(())
    }

    /// The entries of two adjacent siblings in key order, with the links of both. For
    /// internal nodes the parent's separator comes down between them, carrying `right`'s
    /// leftmost child, so that the result can be cut anywhere.
    fn sibling_entries(
        &mut self,
        level: u32,
        parent: PageId,
        sep_idx: usize,
        left: PageId,
        right: PageId,
    ) -> Result<SiblingEntries> {
        let (l_link, mut all) = self
            .pager
            .read(left, |b| (node::link(b), node::entries(b)))?;
        let (r_link, r_es) = self
            .pager
            .read(right, |b| (node::link(b), node::entries(b)))?;
        if level > 0 {
            let sep = self.pager.read(parent, |b| node::key(b, sep_idx))?;
            all.push((sep, r_link));
        }
        all.extend(r_es);
        Ok((l_link, r_link, all))
    }

    /// Even out `left` and `right` (adjacent children of `parent` around separator entry
    /// `sep_idx`) and update the separator.
    fn redistribute(
        &mut self,
        level: u32,
        parent: PageId,
        sep_idx: usize,
        left: PageId,
        right: PageId,
    ) -> Result<()> {
        let (l_link, r_link, all) = self.sibling_entries(level, parent, sep_idx, left, right)?;
        let m = all.len() / 2;
        let new_sep = all[m].0;
        self.pager
            .write(left, |b| node::init(b, level, l_link, &all[..m]))?;
        if level == 0 {
            self.pager
                .write(right, |b| node::init(b, 0, r_link, &all[m..]))?;
        } else {
            // Entry m goes up as the new separator; its child becomes right's leftmost.
            self.pager
                .write(right, |b| node::init(b, level, all[m].1, &all[m + 1..]))?;
        }
        self.pager
            .write(parent, |b| node::set_key(b, sep_idx, new_sep))
    }

    /// Merge `right` into `left` and drop separator entry `sep_idx` from `parent`.
    fn merge(
        &mut self,
        level: u32,
        parent: PageId,
        sep_idx: usize,
        left: PageId,
        right: PageId,
    ) -> Result<()> {
        let (l_link, r_link, all) = self.sibling_entries(level, parent, sep_idx, left, right)?;
        // A merged leaf takes over right's place in the leaf chain.
        let link = if level == 0 { r_link } else { l_link };
        self.pager
            .write(left, |b| node::init(b, level, link, &all))?;
        if level == 0 {
            self.leaves -= 1;
        }
        self.pager.free_page(right);
        self.pager.write(parent, |b| node::remove_at(b, sep_idx))
    }
}
