//! Fence-key propagation into the internal nodes (PIO B-tree paper §3.1.3, Algorithm 2
//! lines 21–32): a split leaf or node sends a fence key record `(separator, new node)` up
//! ('i'), a merge removes one ('d'), a redistribution changes one ('u'). Internal nodes are
//! one page in the B+-tree's node format and split, merge and redistribute as the B+-tree's
//! do (Comer 1979); a split root makes the tree taller, a root left with one child is
//! removed.

use super::PioBTree;
use crate::engine::btree::node;
use crate::error::Result;
use crate::io::PageId;

/// Internal pages passed on a descent and the child slot taken in each, root first.
pub(super) type Path = Vec<(PageId, usize)>;

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

    /// Insert fence key `sep` with right child `right` (a node of `level - 1`) after the
    /// child slot recorded on `path`, splitting full nodes up to the root.
    pub(super) fn insert_fence(
        &mut self,
        mut path: Path,
        mut sep: u64,
        mut right: PageId,
    ) -> Result<()> {
        let cap = self.cap;
        let mut level = 1;
        loop {
            let Some((pid, slot)) = path.pop() else {
                let new_root = self.pager.alloc_page()?;
                let old_root = self.root;
                self.pager.write(new_root, |b| {
                    node::init(b, level, old_root, &[(sep, right)])
                })?;
                self.root = new_root;
                self.height += 1;
                self.counters.root_splits += 1;
                return Ok(());
            };
            let n = self.internal(pid, level)?;
            if n.entries.len() < cap {
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
            sep = up_key;
            right = new;
            level += 1;
        }
    }

    /// After the level-1 node at the end of `path` lost a separator: restore occupancy by
    /// redistribution or merge, up to the root; a root left without separators is removed.
    pub(super) fn rebalance_internal(&mut self, mut path: Path) -> Result<()> {
        let min = self.cap / 2;
        let Some((mut pid, _)) = path.pop() else {
            return Ok(());
        };
        let mut level = 1;
        loop {
            let n = self.internal(pid, level)?;
            if path.is_empty() {
                if n.entries.is_empty() {
                    self.pager.free_page(pid);
                    self.root = n.link;
                    self.height -= 1;
                }
                return Ok(());
            }
            if n.entries.len() >= min {
                return Ok(());
            }
            let Some((parent, slot)) = path.pop() else {
                return Ok(());
            };
            let p = self.internal(parent, level + 1)?;
            if p.entries.is_empty() {
                return Err(crate::error::Error::corruption(
                    crate::page::DATA_FILE,
                    Some(parent),
                    "internal node without separators above an underflowing node",
                ));
            }
            let (left, right, sep_idx) = if slot < p.entries.len() {
                (pid, p.entries[slot].1, slot)
            } else {
                let l = if slot >= 2 {
                    p.entries[slot - 2].1
                } else {
                    p.link
                };
                (l, pid, slot - 1)
            };
            let sibling = if left == pid { right } else { left };
            let ln = self.internal(left, level)?;
            let rn = self.internal(right, level)?;
            let sib_count = if sibling == left {
                ln.entries.len()
            } else {
                rn.entries.len()
            };
            // The parent's separator comes down between the two, carrying right's leftmost.
            let mut all = ln.entries;
            all.push((p.entries[sep_idx].0, rn.link));
            all.extend(rn.entries);
            if sib_count > min {
                let m = all.len() / 2;
                let (up, up_child) = all[m];
                self.pager
                    .write(left, |b| node::init(b, level, ln.link, &all[..m]))?;
                self.pager
                    .write(right, |b| node::init(b, level, up_child, &all[m + 1..]))?;
                self.pager
                    .write(parent, |b| node::set_key(b, sep_idx, up))?;
                self.counters.redistributions += 1;
                return Ok(());
            }
            self.pager
                .write(left, |b| node::init(b, level, ln.link, &all))?;
            self.pager.free_page(right);
            self.pager.write(parent, |b| node::remove_at(b, sep_idx))?;
            self.counters.merges += 1;
            pid = parent;
            level += 1;
        }
    }
}
