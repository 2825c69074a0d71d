//! The B+-tree under the buffers: descents, leaf updates with splits and merges (Comer
//! 1979, as the B+-tree baseline does), and the internal levels ("spine") with the buffer
//! hooks the shared `kit::bnode::spine` has no room for: a buffered node that splits
//! splits its buffer by the separator, siblings that redistribute repartition theirs, a
//! merge concatenates them, a split root hands its buffer to the new root, and a removed
//! root hands its buffer to the child that replaces it.

use super::buffer;
use super::LaTree;
use crate::error::{Error, Result};
use crate::io::PageId;
use crate::kit::bnode::bulk::{self, Fill};
use crate::kit::bnode::leaves::{self, Repair};
use crate::kit::bnode::node;
use crate::kit::bnode::spine::{read_internal, sibling_pair, Join, Path, Spine, SpineEvents};
use crate::page::{self, DATA_FILE};

/// Where a descent ended: the internal nodes passed (root first) with the child slot
/// taken, the node reached, and the key span `[lo, hi)` of that node (`None`: unbounded).
pub(super) struct Descent {
    pub path: Path,
    pub node: PageId,
    pub hi: Option<u64>,
}

pub(super) fn level_error(pid: PageId, found: u32, want: u32) -> Error {
    Error::corruption(
        DATA_FILE,
        Some(pid),
        format!("node at level {found}, expected level {want}"),
    )
}

impl LaTree {
    /// Descend toward `k` from the root to the node at level `stop`.
    pub(super) fn descend(&self, k: u64, stop: u32) -> Result<Descent> {
        let mut path = Vec::with_capacity(self.height as usize);
        let mut pid = self.root;
        let mut hi = None;
        let mut lvl = self.height - 1;
        while lvl > stop {
            let (kind, found, slot, child, right) = self.pager.read_shared(pid, |b| {
                let s = node::child_slot(b, k);
                let right = (s < node::count(b)).then(|| node::key(b, s));
                (
                    page::kind(b),
                    node::level(b),
                    s,
                    node::child_at(b, s),
                    right,
                )
            })?;
            if kind != node::KIND_INTERNAL || found != lvl {
                return Err(level_error(pid, found, lvl));
            }
            if right.is_some() {
                hi = right;
            }
            path.push((pid, slot));
            pid = child;
            lvl -= 1;
        }
        Ok(Descent {
            path,
            node: pid,
            hi,
        })
    }

    /// Read leaf `pid`: its link and entries.
    fn read_leaf(&mut self, pid: PageId) -> Result<(u64, Vec<(u64, u64)>)> {
        self.pager.read(pid, |b| {
            if !node::is_leaf(b) || node::level(b) != 0 {
                return Err(level_error(pid, node::level(b), 0));
            }
            Ok((node::link(b), node::entries(b)))
        })?
    }

    /// Apply an upsert to the leaves (no buffers involved), splitting a full leaf.
    pub(super) fn leaf_insert(&mut self, k: u64, v: u64) -> Result<()> {
        let d = self.descend(k, 0)?;
        let leaf = d.node;
        let (link, mut es) = self.read_leaf(leaf)?;
        match es.binary_search_by_key(&k, |e| e.0) {
            Ok(i) => {
                return self.pager.write(leaf, |b| node::set_val(b, i, v));
            }
            Err(i) if es.len() < self.cap => {
                self.entries += 1;
                return self.pager.write(leaf, |b| node::insert_at(b, i, k, v));
            }
            Err(i) => es.insert(i, (k, v)),
        }
        // Split: the upper half moves to a new right sibling, whose first key goes up.
        let (sep, right) = leaves::split(&mut self.pager, leaf, link, None, &es)?;
        self.entries += 1;
        self.leaves += 1;
        self.counters.leaf_splits += 1;
        self.insert_separator(d.path, sep, right, 1, leaf)
    }

    /// Apply a delete to the leaves, repairing an underfull leaf by redistribution or merge.
    pub(super) fn leaf_delete(&mut self, k: u64) -> Result<()> {
        let d = self.descend(k, 0)?;
        let leaf = d.node;
        let (_, es) = self.read_leaf(leaf)?;
        let Ok(i) = es.binary_search_by_key(&k, |e| e.0) else {
            return Ok(());
        };
        self.pager.write(leaf, |b| node::remove_at(b, i))?;
        self.entries -= 1;
        if es.len() - 1 < self.cap / 2 && !d.path.is_empty() {
            self.rebalance_leaf(d.path, leaf)?;
        }
        Ok(())
    }

    fn rebalance_leaf(&mut self, mut path: Path, leaf: PageId) -> Result<()> {
        let Some((parent, slot)) = path.pop() else {
            return Ok(());
        };
        let p = read_internal(&mut self.pager, parent, 1)?;
        let (left, right, sep_idx) = sibling_pair(p.link, &p.entries, leaf, slot);
        let sibling = if left == leaf { right } else { left };
        let (_, sib) = self.read_leaf(sibling)?;
        let (_, mut all) = self.read_leaf(left)?;
        let (r_link, r_es) = self.read_leaf(right)?;
        all.extend(r_es);
        let pair = (left, right);
        let redistribute = sib.len() > self.cap / 2;
        match leaves::repair(
            &mut self.pager,
            parent,
            sep_idx,
            pair,
            &all,
            leaves::RightLeaf {
                link: r_link,
                side: None,
            },
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
        self.repair_underflow(path, 1)
    }

    /// Insert separator `sep` with right child `right` (new right neighbour of `left`, a
    /// node of `level - 1`) into the parents on `path`, splitting full ones; a split root
    /// makes the tree one level taller and hands its buffer to the new root.
    fn insert_separator(
        &mut self,
        mut path: Path,
        mut sep: u64,
        mut right: PageId,
        mut level: u32,
        mut left: PageId,
    ) -> Result<()> {
        loop {
            let Some((pid, slot)) = path.pop() else {
                let new_root = self.pager.alloc_page()?;
                self.pager
                    .write(new_root, |b| node::init(b, level, left, &[(sep, right)]))?;
                // The old root's messages are the newest of the tree: they stay on top.
                if let Some(mut b) = self.buffers.remove(&left) {
                    b.level = level;
                    self.buffers.insert(new_root, b);
                }
                self.root = new_root;
                self.height += 1;
                self.counters.root_splits += 1;
                return Ok(());
            };
            let n = read_internal(&mut self.pager, pid, level)?;
            if n.entries.len() < self.cap {
                return self
                    .pager
                    .write(pid, |b| node::insert_at(b, slot, sep, right));
            }
            let mut es = n.entries;
            es.insert(slot, (sep, right));
            // The middle separator moves up; its child becomes the new node's leftmost.
            let m = es.len() / 2;
            let (up_key, up_child) = es[m];
            let new = self.pager.alloc_page()?;
            self.pager
                .write(new, |b| node::init(b, level, up_child, &es[m + 1..]))?;
            self.pager
                .write(pid, |b| node::init(b, level, n.link, &es[..m]))?;
            self.counters.internal_splits += 1;
            if !path.is_empty() {
                self.split_buffer(pid, new, up_key, level)?;
            }
            sep = up_key;
            right = new;
            left = pid;
            level += 1;
        }
    }

    /// `left` split at `sep` into `left` and `right`: split its buffer the same way.
    fn split_buffer(&mut self, left: PageId, right: PageId, sep: u64, level: u32) -> Result<()> {
        let Some(b) = self.buffers.remove(&left) else {
            return Ok(());
        };
        let (l, r) = buffer::split(&mut self.pager, b, sep, level)?;
        self.put_buffer(left, l);
        self.put_buffer(right, r);
        Ok(())
    }

    /// Siblings `left` and `right` now meet at `sep`: repartition their buffers.
    fn repartition(&mut self, left: PageId, right: PageId, sep: u64, level: u32) -> Result<()> {
        let l = self.buffers.remove(&left);
        let r = self.buffers.remove(&right);
        if l.is_none() && r.is_none() {
            return Ok(());
        }
        // Disjoint key spans: either order keeps every key's messages in order.
        let all = buffer::concat(&mut self.pager, l, r, level)?;
        if let Some(all) = all {
            let (l, r) = buffer::split(&mut self.pager, all, sep, level)?;
            self.put_buffer(left, l);
            self.put_buffer(right, r);
        }
        Ok(())
    }

    /// Set or clear the buffer of `pid`.
    pub(super) fn put_buffer(&mut self, pid: PageId, b: Option<buffer::Buffer>) {
        match b {
            Some(b) => {
                if b.pages > self.max_buffer_pages {
                    self.maybe_overfull = true;
                }
                self.buffers.insert(pid, b);
            }
            None => {
                self.buffers.remove(&pid);
            }
        }
    }

    /// The internal node at the end of `path` (at `level` ≥ 1) lost a separator: restore
    /// occupancy by redistribution or merge up to the root; a root without separators is
    /// removed and its child, which becomes the root, takes its buffer.
    fn repair_underflow(&mut self, mut path: Path, mut level: u32) -> Result<()> {
        let min = self.cap / 2;
        let Some((mut pid, _)) = path.pop() else {
            return Ok(());
        };
        loop {
            let n = read_internal(&mut self.pager, pid, level)?;
            if path.is_empty() {
                if n.entries.is_empty() {
                    self.pager.free_page(pid);
                    self.root = n.link;
                    self.height -= 1;
                    // The removed root's messages are newer than its child's.
                    let newer = self.buffers.remove(&pid);
                    let older = self.buffers.remove(&n.link);
                    let b = buffer::concat(&mut self.pager, older, newer, level - 1)?;
                    self.put_buffer(n.link, b);
                }
                return Ok(());
            }
            if n.entries.len() >= min {
                return Ok(());
            }
            let Some((parent, slot)) = path.pop() else {
                return Ok(());
            };
            let mut ev = SpineEvents::default();
            let mut spine = Spine {
                pager: &mut self.pager,
                root: &mut self.root,
                height: &mut self.height,
                cap: self.cap,
                format: node::Format::Plain,
            };
            match spine.join_child(parent, level + 1, slot, &mut ev)? {
                Join::Redistributed { left, right, up } => {
                    self.repartition(left, right, up, level)?;
                    self.counters.redistributions += 1;
                    return Ok(());
                }
                Join::Merged { left, right } => {
                    let l = self.buffers.remove(&left);
                    let r = self.buffers.remove(&right);
                    let b = buffer::concat(&mut self.pager, l, r, level)?;
                    self.put_buffer(left, b);
                }
            }
            self.counters.merges += 1;
            pid = parent;
            level += 1;
        }
    }

    /// Build the tree bottom-up from sorted, distinct entries into the empty tree (no
    /// buffered message either), leaves filled to 0.7 as the B+-tree's bulk load.
    pub(super) fn bulk_load(&mut self, sorted: &[(u64, u64)]) -> Result<()> {
        let min = self.cap / 2;
        let per = ((self.cap as f64 * 0.7) as usize).clamp(min.max(1), self.cap);
        let old_root = self.root;
        self.pager.free_page(old_root);
        let fill = Fill {
            per,
            min,
            cap: self.cap,
        };
        let built = bulk::build(&mut self.pager, sorted, fill, fill)?;
        (self.root, self.height, self.leaves) = (built.root, built.height, built.leaves);
        self.entries = sorted.len() as u64;
        Ok(())
    }
}
