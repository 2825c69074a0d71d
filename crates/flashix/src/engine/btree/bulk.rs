//! Bulk insertion. Into an empty tree it is a bottom-up bulk load at the fill factor
//! `BTreeOptions::bulk_fill` (0.7, FD-tree paper App. D) of the leaf order for leaves and of
//! the inner order for internal nodes; into a non-empty tree, a sorted
//! sequence of single inserts (each leaf is visited once per run of keys it holds).

use super::BTree;
use crate::error::Result;
use crate::kit::bnode::bulk::{self, Fill};

impl BTree {
    pub(super) fn bulk_unlogged(&mut self, sorted: &[(u64, u64)]) -> Result<()> {
        if sorted.is_empty() {
            return Ok(());
        }
        if self.entries() > 0 {
            for &(k, v) in sorted {
                self.insert_unlogged(k, v)?;
            }
            return Ok(());
        }
        self.bulk_load(sorted)
    }

    /// How full a bulk load makes leaves and internal nodes: the fill factor of each kind's
    /// order, never below the occupancy minimum.
    pub(super) fn fills(&self) -> (Fill, Fill) {
        let fill = self.bulk_fill;
        let at = |cap: usize, min: usize| Fill {
            per: ((cap as f64 * fill) as usize).clamp(min.max(1), cap),
            min,
            cap,
        };
        (
            at(self.leaf_cap, self.leaf_min()),
            at(self.inner_cap, self.inner_min()),
        )
    }

    /// Build the tree bottom-up from sorted, distinct entries (the tree is empty).
    fn bulk_load(&mut self, sorted: &[(u64, u64)]) -> Result<()> {
        let (leaf, inner) = self.fills();
        // The empty tree is a single empty root leaf.
        let (old_root, _) = self.top.load();
        self.pager.free_page(old_root);
        let mut entries = sorted.iter().copied();
        let next = |_: &mut _| Ok(entries.next());
        let built = bulk::build_blink(&mut self.pager, sorted.len(), next, leaf, inner)?;
        self.set_tree(built.root, built.height, built.leaves)?;
        *self.entries.get_mut() = sorted.len() as u64;
        Ok(())
    }
}
