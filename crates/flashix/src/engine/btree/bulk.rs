//! Bulk insertion. Into an empty tree it is a bottom-up bulk load at the fill factor
//! `BTreeOptions::bulk_fill` (0.7, FD-tree paper App. D) of the leaf order for leaves and of
//! the inner order for internal nodes; into a non-empty tree, a sorted
//! sequence of single inserts (each leaf is visited once per run of keys it holds).

use super::BTree;
use crate::error::Result;
use crate::io::PageId;
use crate::kit::bnode::{group_sizes, node};

impl BTree {
    pub(super) fn bulk_unlogged(&mut self, sorted: &[(u64, u64)]) -> Result<()> {
        if sorted.is_empty() {
            return Ok(());
        }
        if self.entries > 0 {
            for &(k, v) in sorted {
                self.insert_unlogged(k, v)?;
            }
            return Ok(());
        }
        self.bulk_load(sorted)
    }

    /// Build the tree bottom-up from sorted, distinct entries (the tree is empty).
    fn bulk_load(&mut self, sorted: &[(u64, u64)]) -> Result<()> {
        let fill = self.bulk_fill;
        // Entries per node at the fill factor, never below the occupancy minimum.
        let per = |cap: usize, min: usize| ((cap as f64 * fill) as usize).clamp(min.max(1), cap);
        let (leaf_min, inner_min) = (self.leaf_min(), self.inner_min());
        let leaf_per = per(self.leaf_cap, leaf_min);
        let inner_per = per(self.inner_cap, inner_min);
        // The empty tree is a single empty root leaf.
        let old_root = self.root;
        self.pager.free_page(old_root);

        // Leaves, allocated in key order and chained.
        let sizes = group_sizes(sorted.len(), leaf_per, leaf_min, self.leaf_cap);
        let pages: Vec<PageId> = (0..sizes.len())
            .map(|_| self.pager.alloc_page())
            .collect::<Result<_>>()?;
        let mut level_nodes: Vec<(u64, PageId)> = Vec::with_capacity(pages.len());
        let mut off = 0;
        for (i, (&size, &pid)) in sizes.iter().zip(&pages).enumerate() {
            let chunk = &sorted[off..off + size];
            let link = pages.get(i + 1).copied().unwrap_or(node::NONE);
            self.pager.write(pid, |b| node::init(b, 0, link, chunk))?;
            level_nodes.push((chunk[0].0, pid));
            off += size;
        }
        self.leaves = pages.len() as u64;

        // Internal levels: groups of `inner_per + 1` children (inner_per separators).
        let mut level = 0;
        while level_nodes.len() > 1 {
            level += 1;
            let sizes: Vec<usize> = group_sizes(
                level_nodes.len(),
                inner_per + 1,
                inner_min + 1,
                self.inner_cap + 1,
            );
            let mut upper = Vec::with_capacity(sizes.len());
            let mut off = 0;
            for size in sizes {
                let group = &level_nodes[off..off + size];
                let pid = self.pager.alloc_page()?;
                let seps: Vec<(u64, u64)> = group[1..].to_vec();
                self.pager
                    .write(pid, |b| node::init(b, level, group[0].1, &seps))?;
                upper.push((group[0].0, pid));
                off += size;
            }
            level_nodes = upper;
        }
        self.root = level_nodes[0].1;
        self.height = level + 1;
        self.entries = sorted.len() as u64;
        Ok(())
    }
}
