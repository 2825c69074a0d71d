//! Insertion and node splits (Comer 1979, §"Insertion"; FD-tree paper App. D: "if a node is
//! full, an insertion causes a split on the node"). A leaf is full at the leaf order, an
//! internal node at the inner order (`BTreeOptions::{leaf_order, inner_order}`, else what a
//! page holds).

use super::latched::{LeafDone, LeafPlan};
use super::BTree;
use crate::durable::{outside, LogicalOp, NewPage, Store};
use crate::error::Result;
use crate::io::PageId;
use crate::kit::api::SharedWrite;
use crate::kit::bnode::{leaves, node};
use std::cell::{Cell, RefCell};
use std::sync::atomic::Ordering;

impl BTree {
    /// An insert beside other readers and shared writes (module doc, Thread safety): the
    /// key's leaf, found by moving right from where the descent ended, is changed under
    /// its latch, the insert logged there ([`crate::durable::Pager::write_shared`]); a
    /// full leaf splits under it ([`BTree::split_leaf_shared`]) and the separator goes up
    /// after it is released ([`BTree::insert_separator_shared`]). With a pool too small
    /// for splits beside other threads, an insert that would split changes nothing and
    /// asks for the exclusive lock.
    pub(super) fn insert_shared(&self, k: u64, v: u64) -> Result<SharedWrite> {
        let leaf = self.walk_down(k, None)?;
        let cap = self.leaf_cap;
        let op = LogicalOp::Insert(k, v);
        // Pages for a split, reserved with no latch held (making one may write dirty pages
        // back): a split found under the leaf's latch with fewer lets go of the latch,
        // reserves them and looks again. It needs at most two, so this ends after two
        // looks more at the most; what it does not use is given back when dropped.
        let pages: RefCell<Vec<NewPage<'_>>> = RefCell::default();
        let want = Cell::new(0);
        let done = loop {
            let decide = |pid: PageId, b: &[u8]| match node::search(b, k) {
                Ok(i) => Some(LeafPlan::Replace(i)),
                Err(i) if node::count(b) < cap => Some(LeafPlan::Add(i)),
                Err(i) if self.splits_shared() => {
                    let need = self.split_pages(pid);
                    if pages.borrow().len() < need {
                        want.set(need);
                        return None;
                    }
                    Some(LeafPlan::Split(i))
                }
                Err(_) => None,
            };
            let change = |pid: PageId, b: &mut [u8], plan: LeafPlan| match plan {
                LeafPlan::Replace(i) => {
                    node::set_val(b, i, v);
                    Ok(LeafDone::Replaced)
                }
                LeafPlan::Add(i) => {
                    node::insert_at(b, i, k, v);
                    Ok(LeafDone::Added)
                }
                LeafPlan::Split(i) => {
                    self.split_leaf_shared(pid, b, i, (k, v), &mut pages.borrow_mut())
                }
            };
            want.set(0);
            if let Some(done) = self.at_node_shared(leaf, k, 0, Some(&op), decide, change)? {
                break done;
            }
            if want.get() == 0 {
                return Ok(SharedWrite::Exclusive);
            }
            while pages.borrow().len() < want.get() {
                let page = self.pager.reserve_page_shared()?;
                pages.borrow_mut().push(page);
            }
        };
        // Given back with no latch held.
        drop(pages);
        match done? {
            LeafDone::Replaced => {}
            LeafDone::Added => {
                self.entries.fetch_add(1, Ordering::Relaxed);
            }
            LeafDone::Split { sep, right, grew } => {
                self.entries.fetch_add(1, Ordering::Relaxed);
                if !grew {
                    // The leaf changed: what follows loads its misses, never runs twice.
                    outside::loading(|| self.insert_separator_shared(sep, right, 1))?;
                }
            }
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
        *self.leaves.get_mut() += 1;
        *self.counters.leaf_splits.get_mut() += 1;
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
        self.with_spine(|sp| sp.insert_separator(path, sep, right, level))
    }
}
