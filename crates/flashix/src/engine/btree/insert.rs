//! Insertion and node splits (Comer 1979, §"Insertion"; FD-tree paper App. D: "if a node is
//! full, an insertion causes a split on the node"). A leaf is full at the leaf order, an
//! internal node at the inner order (`BTreeOptions::{leaf_order, inner_order}`, else what a
//! page holds).

use super::BTree;
use crate::durable::{LogicalOp, Store};
use crate::error::Result;
use crate::io::PageId;
use crate::kit::api::SharedWrite;
use crate::kit::bnode::{leaves, node};
use std::sync::atomic::Ordering;

/// What a shared insert does to its leaf.
enum Change {
    /// Replace the value at this slot.
    Replace(usize),
    /// Insert the entry at this slot (the leaf has room).
    Add(usize),
}

impl BTree {
    /// An insert beside other readers and shared inserts (module doc, Thread safety): when
    /// the key's leaf has room (or holds the key), the insert is logged and made under the
    /// leaf's latch ([`crate::durable::Pager::write_shared`]); otherwise (a split) it
    /// changes nothing and asks for the exclusive lock. A leaf the descent reaches is the
    /// key's (splits run under the exclusive lock, so no split can come between the
    /// descent and the latch), and a B-link leaf whose high key is at or below the key is
    /// left to the exclusive path all the same.
    pub(super) fn insert_shared(&self, k: u64, v: u64) -> Result<SharedWrite> {
        let leaf = self.walk_down(k, None)?;
        let cap = self.leaf_cap;
        let op = LogicalOp::Insert(k, v);
        let decide = |b: &[u8]| {
            if node::side(b).is_some_and(|s| s.above(k)) {
                return None;
            }
            match node::search(b, k) {
                Ok(i) => Some(Change::Replace(i)),
                Err(i) if node::count(b) < cap => Some(Change::Add(i)),
                Err(_) => None,
            }
        };
        let change = |b: &mut [u8], c: Change| match c {
            Change::Replace(i) => {
                node::set_val(b, i, v);
                false
            }
            Change::Add(i) => {
                node::insert_at(b, i, k, v);
                true
            }
        };
        let Some(added) = self.pager.write_shared(leaf, &op, decide, change)? else {
            return Ok(SharedWrite::Exclusive);
        };
        if added {
            self.entries.fetch_add(1, Ordering::Relaxed);
        }
        Ok(self.after_shared_write())
    }

    /// After a shared write that changed the tree: counted, and the checkpoint asked for
    /// when it came due.
    pub(super) fn after_shared_write(&self) -> SharedWrite {
        self.shared_writes.fetch_add(1, Ordering::Relaxed);
        match self.pager.wal_bytes_shared() >= self.pager.checkpoint_wal_bytes() {
            true => SharedWrite::Maintain,
            false => SharedWrite::Done,
        }
    }

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
                *self.entries.get_mut() += 1;
            }
            return Ok(());
        }
        debug_assert!(!found);
        // Split the full leaf: the lower half stays, the upper half moves to a new right
        // sibling, and the sibling's first key goes up as the separator.
        let (mut es, link, side) = self
            .pager
            .read(leaf, |b| (node::entries(b), node::link(b), node::side(b)))?;
        let pos = es.partition_point(|e| e.0 < k);
        es.insert(pos, (k, v));
        let (sep, right) = leaves::split(&mut self.pager, leaf, link, side, &es)?;
        *self.entries.get_mut() += 1;
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
