//! Fence-key propagation into the internal nodes (PIO B-tree paper §3.1.3, Algorithm 2
//! lines 21–32): a split leaf or node sends a fence key record `(separator, new node)` up
//! ('i'), a merge removes one ('d'), a redistribution changes one ('u'). Internal nodes are
//! one page in the B+-tree's node format and split, merge and redistribute through the
//! B+-tree's shared [`crate::kit::bnode::spine`] (Comer 1979); a split root makes
//! the tree taller, a root left with one child is removed.

use super::PioBTree;
use crate::error::Result;
use crate::io::PageId;
pub(super) use crate::kit::bnode::spine::Path;
use crate::kit::bnode::spine::{Join, Spine, SpineEvents};

impl PioBTree {
    /// Descend to the leaf whose fence range holds `key` through the pool.
    pub(super) fn descend_path(&mut self, key: u64) -> Result<(Path, PageId)> {
        let mut path = Vec::with_capacity(self.height as usize);
        let mut pid = self.root;
        for depth in 0..self.height - 1 {
            let level = self.height - 1 - depth;
            let n = self.internal(pid, level)?;
            let s = match n.entries.binary_search_by_key(&key, |e| e.0) {
                Ok(j) => j + 1,
                Err(j) => j,
            };
            path.push((pid, s));
            pid = if s == 0 { n.link } else { n.entries[s - 1].1 };
        }
        Ok((path, pid))
    }

    /// The internal levels, for the B+-tree's shared split and underflow code.
    fn spine(&mut self) -> Spine<'_> {
        Spine {
            pager: &mut self.pager,
            root: &mut self.root,
            height: &mut self.height,
            cap: self.cap,
            format: crate::kit::bnode::node::Format::Plain,
        }
    }

    fn count(&mut self, ev: SpineEvents) {
        let c = &mut self.counters;
        c.internal_splits += ev.internal_splits;
        c.root_splits += ev.root_splits;
        c.redistributions += ev.redistributions;
        c.merges += ev.merges;
    }

    /// Insert fence key `sep` with right child `right` (a new leaf) after the child slot
    /// recorded on `path` ('i' fence record), splitting full nodes up to the root.
    pub(super) fn insert_fence(&mut self, path: Path, sep: u64, right: PageId) -> Result<()> {
        let ev = self.spine().insert_separator(path, sep, right, 1)?;
        self.count(ev);
        Ok(())
    }

    /// After the level-1 node at the end of `path` lost a separator ('d' fence record):
    /// restore occupancy by redistribution or merge, up to the root; a root left without
    /// separators is removed.
    pub(super) fn rebalance_internal(&mut self, path: Path) -> Result<()> {
        let ev = self.spine().repair_underflow(path, 1)?;
        self.count(ev);
        Ok(())
    }

    /// Merge the internal child at `slot` of `parent` (of `parent_level`) with a sibling
    /// or redistribute with it ([`Spine::join_child`]). Returns whether it merged.
    pub(super) fn join_internal(
        &mut self,
        parent: PageId,
        parent_level: u32,
        slot: usize,
    ) -> Result<bool> {
        let mut ev = SpineEvents::default();
        let join = self
            .spine()
            .join_child(parent, parent_level, slot, &mut ev)?;
        self.count(ev);
        Ok(matches!(join, Join::Merged { .. }))
    }

    /// Remove an internal root without separators (one level shorter). Returns whether it
    /// did.
    pub(super) fn collapse_root(&mut self) -> Result<bool> {
        self.spine().collapse_root()
    }
}
