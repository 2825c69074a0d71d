//! Opening a B+-tree of plain nodes (written before format version 10, which made its
//! nodes B-link nodes): the tree is rebuilt once as B-link nodes, at open.
//!
//! A plain node has no right link and no high key, and a full one holds one entry more
//! than a B-link node holds, so its page cannot be rewritten in place. Open rebuilds the
//! tree instead, after the checkpoint image is restored and before the WAL is replayed: a
//! bulk load ([`crate::kit::bnode::bulk::build_blink`], at `BTreeOptions::bulk_fill`) fed
//! by the old leaf chain, one leaf at a time, into fresh pages; the old pages are freed.
//! The WAL's operations then replay on the new tree, and recovery ends with a checkpoint,
//! whose manifest names the new root.
//!
//! Crash safety: the rebuild changes no page of the checkpoint image (it reads the old
//! pages and writes only pages allocated since the checkpoint), and freed pages are not
//! reused before the next checkpoint. A crash before that checkpoint leaves the old
//! manifest, image and WAL, and the next open rebuilds again.
//!
//! Cost: one read of every old page and one write of every new page, once; memory of 16
//! bytes per leaf for the levels above the leaves while it runs (`build_blink`).

use super::BTree;
use crate::error::{Error, Result};
use crate::io::PageId;
use crate::kit::bnode::{bulk, node};
use crate::page::DATA_FILE;

/// The first manifest format whose B+-trees are of B-link nodes: open rebuilds the trees
/// of older manifests.
pub(super) const BLINK_FORMAT: u32 = 10;

impl BTree {
    /// Rebuild the tree of plain nodes as B-link nodes (module doc).
    pub(super) fn upgrade(&mut self) -> Result<()> {
        let (old_root, old_height) = self.top.load();
        let mut internal = Vec::new();
        let mut leaf = old_root;
        for _ in 1..old_height {
            internal.push(leaf);
            leaf = self.pager.read(leaf, node::link)?;
        }
        let mut chain = Chain {
            next_leaf: leaf,
            held: Vec::new().into_iter(),
            visited: 0,
            limit: self.pager.allocator().high_water(),
        };
        let (leaf_fill, inner_fill) = self.fills();
        let n = self.entries() as usize;
        let built =
            bulk::build_blink(&mut self.pager, n, |p| chain.next(p), leaf_fill, inner_fill)?;
        self.free_internal(old_root, old_height - 1)?;
        self.set_tree(built.root, built.height, built.leaves)?;
        self.upgraded = true;
        Ok(())
    }

    /// Free the internal nodes of the old tree below and at `pid` (at `level`); its leaves
    /// were freed as the rebuild read them.
    fn free_internal(&mut self, pid: PageId, level: u32) -> Result<()> {
        if level == 0 {
            return Ok(());
        }
        let children = self.pager.read(pid, |b| {
            let mut c = vec![node::link(b)];
            c.extend((0..node::count(b)).map(|i| node::val(b, i)));
            c
        })?;
        for c in children {
            self.free_internal(c, level - 1)?;
        }
        self.pager.free_page(pid);
        Ok(())
    }
}

/// The old tree's entries in key order: its leaf chain, one leaf held at a time.
struct Chain {
    next_leaf: PageId,
    held: std::vec::IntoIter<(u64, u64)>,
    /// Leaves read so far, bounded by the pages the file holds (a chain that loops is
    /// corruption).
    visited: u64,
    limit: u64,
}

impl Chain {
    fn next(&mut self, pager: &mut crate::durable::Pager) -> Result<Option<(u64, u64)>> {
        loop {
            if let Some(e) = self.held.next() {
                return Ok(Some(e));
            }
            if self.next_leaf == node::NONE {
                return Ok(None);
            }
            self.visited += 1;
            let pid = self.next_leaf;
            if self.visited > self.limit {
                return Err(Error::corruption(DATA_FILE, Some(pid), "leaf chain loops"));
            }
            let (leaf, link, es) =
                pager.read(pid, |b| (node::is_leaf(b), node::link(b), node::entries(b)))?;
            if !leaf {
                return Err(Error::corruption(
                    DATA_FILE,
                    Some(pid),
                    "leaf chain reaches an internal node",
                ));
            }
            pager.free_page(pid);
            self.next_leaf = link;
            self.held = es.into_iter();
        }
    }
}
