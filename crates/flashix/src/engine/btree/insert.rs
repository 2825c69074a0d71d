//! Insertion and node splits (Comer 1979, §"Insertion"; FD-tree paper App. D: "if a node is
//! full, an insertion causes a split on the node"). A leaf is full at the leaf order, an
//! internal node at the inner order (`BTreeOptions::{leaf_order, inner_order}`, else what a
//! page holds).

use super::BTree;
use crate::error::Result;
use crate::io::PageId;
use crate::kit::bnode::{leaves, node};

impl BTree {
    pub(super) fn insert_unlogged(&mut self, k: u64, v: u64) -> Result<()> {
        let (path, leaf) = self.descend(k)?;
        let cap = self.leaf_cap;
        let (found, full) = self.pager.read(leaf, |b| match node::search(b, k) {
            Ok(_) => (true, false),
            Err(_) => (false, node::count(b) >= cap),
        })?;
        if !full {
            self.pager.write(leaf, |b| match node::search(b, k) {
                Ok(i) => node::set_val(b, i, v),
                Err(i) => node::insert_at(b, i, k, v),
            })?;
            if !found {
                self.entries += 1;
            }
            return Ok(());
        }
        debug_assert!(!found);
        // Split the full leaf: the lower half stays, the upper half moves to a new right
        // sibling, and the sibling's first key goes up as the separator.
        let (mut es, link) = self
            .pager
            .read(leaf, |b| (node::entries(b), node::link(b)))?;
        let pos = es.partition_point(|e| e.0 < k);
        es.insert(pos, (k, v));
        let (sep, right) = leaves::split(&mut self.pager, leaf, link, &es)?;
        self.entries += 1;
        self.leaves += 1;
        self.counters.leaf_splits += 1;
        self.insert_into_parent(path, sep, right, 1)
    }

    /// Insert separator `sep` with right child `right` into the parents on `path`,
    /// splitting them as needed; a split root makes the tree one level taller.
    fn insert_into_parent(
        &mut self,
        path: Vec<(PageId, usize)>,
        sep: u64,
        right: PageId,
        level: u32,
    ) -> Result<()> {
        let ev = self.spine().insert_separator(path, sep, right, level)?;
        self.count(ev);
        Ok(())
    }
}
