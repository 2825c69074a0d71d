//! BFTL's B+-tree operations on logical nodes: descent, insert with splits, delete with
//! removal of empty nodes, range scans by fences, and the bulk load of an empty tree. Every
//! change is an index unit pushed to the reservation buffer (module doc of `bftl`).

use super::{Bftl, Node, NONE};
use crate::error::{Error, Result};
use crate::kit::api::RangeCursor;
use crate::kit::bnode::group_sizes;
use crate::kit::ntt::unit::Unit;

/// Entries a range scan call gathers before it returns (more if a leaf holds more).
const SCAN_BATCH: usize = 256;

/// One level of a descent.
pub(super) struct Step {
    pub id: u64,
    pub node: Node,
    /// The child slot taken (internal nodes).
    pub slot: usize,
}

impl Bftl {
    /// The nodes from the root to the leaf for `k`, each read (gathered from its pages).
    pub(super) fn descend(&self, k: u64) -> Result<Vec<Step>> {
        self.descend_as(k, true)
    }

    /// [`Bftl::descend`], counting its node reads only if `count` ([`Bftl::load_as`]).
    pub(super) fn descend_as(&self, k: u64, count: bool) -> Result<Vec<Step>> {
        let mut path = Vec::with_capacity(self.height as usize);
        let mut id = self.root;
        for depth in 0..self.height {
            let want = self.height - 1 - depth;
            let node = self.load_as(id, count)?;
            if node.level != want {
                return Err(Error::corruption(
                    crate::page::DATA_FILE,
                    self.ntt.list(id).first(),
                    format!("node {id} at level {}, expected level {want}", node.level),
                ));
            }
            let slot = if want > 0 { node.child_slot(k) } else { 0 };
            let next = if want > 0 { node.child_at(slot) } else { NONE };
            path.push(Step { id, node, slot });
            id = next;
        }
        Ok(path)
    }

    /// The values of ascending `keys`, reading each node at most once: the path of the
    /// previous key is kept with each node's upper fence, and the next key climbs only to
    /// the deepest node whose fences hold it (batched lookups, `get_many`).
    pub(super) fn get_sorted(&self, keys: &[u64]) -> Result<Vec<Option<u64>>> {
        let mut out = Vec::with_capacity(keys.len());
        let mut path: Vec<(u64, Node, Option<u64>)> = Vec::new();
        for &k in keys {
            while path
                .last()
                .is_some_and(|(_, _, hi)| hi.is_some_and(|h| k >= h))
            {
                path.pop();
            }
            if path.is_empty() {
                let root = self.load(self.root)?;
                if root.level != self.height - 1 {
                    return Err(Error::corruption(
                        crate::page::DATA_FILE,
                        self.ntt.list(self.root).first(),
                        format!("root at level {}, height {}", root.level, self.height),
                    ));
                }
                path.push((self.root, root, None));
            }
            while let Some((_, top, hi)) = path.last() {
                if top.level == 0 {
                    out.push(top.search(k).ok().map(|i| top.entries[i].1));
                    break;
                }
                let slot = top.child_slot(k);
                let id = top.child_at(slot);
                let child_hi = top.entries.get(slot).map(|e| e.0).or(*hi);
                let want = top.level - 1;
                let node = self.load(id)?;
                if node.level != want {
                    return Err(Error::corruption(
                        crate::page::DATA_FILE,
                        self.ntt.list(id).first(),
                        format!("node {id} at level {}, expected level {want}", node.level),
                    ));
                }
                path.push((id, node, child_hi));
            }
        }
        Ok(out)
    }

    pub(super) fn insert_unlogged(&mut self, k: u64, v: u64) -> Result<()> {
        let mut path = self.descend(k)?;
        let d = path.len() - 1;
        let leaf = &mut path[d];
        if leaf.node.search(k).is_ok() {
            self.res.push(leaf.id, &mut leaf.node, Unit::Insert(k, v));
        } else {
            self.entries += 1;
            self.insert_at(&mut path, d, k, v)?;
        }
        self.after_change()
    }

    /// Put a new entry into the node at depth `d` of `path`, splitting up the path as
    /// needed.
    fn insert_at(&mut self, path: &mut [Step], mut d: usize, mut k: u64, mut v: u64) -> Result<()> {
        loop {
            let step = &mut path[d];
            if step.node.entries.len() < self.cap {
                self.res.push(step.id, &mut step.node, Unit::Insert(k, v));
                return Ok(());
            }
            // Split: the entries with the new one, halved.
            let mut all = step.node.entries.clone();
            let pos = step.node.search(k).unwrap_or_else(|i| i);
            all.insert(pos, (k, v));
            let mid = all.len() / 2;
            let level = step.node.level;
            let sep = all[mid].0;
            let right = if level == 0 {
                Node {
                    level,
                    link: NONE,
                    entries: all[mid..].to_vec(),
                }
            } else {
                // The middle separator moves up; its child is the new node's leftmost.
                Node {
                    level,
                    link: all[mid].1,
                    entries: all[mid + 1..].to_vec(),
                }
            };
            self.res.push(step.id, &mut step.node, Unit::Truncate(sep));
            if k < sep {
                self.res.push(step.id, &mut step.node, Unit::Insert(k, v));
            }
            let left = step.id;
            let rid = self.new_id();
            self.counters.split_pages += self.write_node(rid, &right)?;
            self.counters.node_splits += 1;
            if d == 0 {
                let root = self.new_id();
                let mut n = Node::default();
                self.res.push(
                    root,
                    &mut n,
                    Unit::Reset {
                        level: level + 1,
                        link: left,
                    },
                );
                self.res.push(root, &mut n, Unit::Insert(sep, rid));
                self.root = root;
                self.height += 1;
                return Ok(());
            }
            (k, v) = (sep, rid);
            d -= 1;
        }
    }

    /// Delete `k`; true if it was present.
    pub(super) fn delete_unlogged(&mut self, k: u64) -> Result<bool> {
        let mut path = self.descend(k)?;
        let d = path.len() - 1;
        if path[d].node.search(k).is_err() {
            return Ok(false);
        }
        let leaf = &mut path[d];
        self.res.push(leaf.id, &mut leaf.node, Unit::Delete(k));
        self.entries -= 1;
        if d > 0 && path[d].node.entries.is_empty() {
            self.remove_empty(&mut path, d);
            self.shrink_root(&path)?;
        }
        self.after_change()?;
        Ok(true)
    }

    /// The node at depth `d >= 1` of `path` holds nothing: remove it from its parent, and
    /// the parent from its own if that leaves it childless.
    fn remove_empty(&mut self, path: &mut [Step], mut d: usize) {
        loop {
            self.release_node(path[d].id);
            let p = &mut path[d - 1];
            let s = p.slot;
            if s >= 1 {
                let sep = p.node.entries[s - 1].0;
                self.res.push(p.id, &mut p.node, Unit::Delete(sep));
                return;
            }
            if let Some(&(k0, c0)) = p.node.entries.first() {
                // The leftmost child goes: the next child takes its place (and its keys'
                // range widens down to the parent's lower fence).
                self.res.push(p.id, &mut p.node, Unit::SetLink(c0));
                self.res.push(p.id, &mut p.node, Unit::Delete(k0));
                return;
            }
            if d - 1 == 0 {
                // The root's only child went: the tree is empty again.
                self.res.push(
                    p.id,
                    &mut p.node,
                    Unit::Reset {
                        level: 0,
                        link: NONE,
                    },
                );
                self.height = 1;
                return;
            }
            d -= 1;
        }
    }

    /// An internal root without separators gives way to its only child, repeatedly.
    fn shrink_root(&mut self, path: &[Step]) -> Result<()> {
        while self.height > 1 {
            let root = match path.iter().find(|s| s.id == self.root) {
                Some(s) => s.node.clone(),
                None => self.load(self.root)?,
            };
            if root.level == 0 || !root.entries.is_empty() {
                break;
            }
            let old = self.root;
            self.root = root.link;
            self.height -= 1;
            self.release_node(old);
        }
        Ok(())
    }

    pub(super) fn delete_range_unlogged(&mut self, lo: u64, hi: u64) -> Result<()> {
        crate::kit::api::delete_range_by_scan(
            self,
            lo,
            hi,
            |e, cur, out| e.scan_leaves(cur, out),
            |e, k| e.delete_unlogged(k).map(|_| ()),
        )
    }

    /// Append the entries in range from `cur.next` on, leaf after leaf, until at least
    /// [`SCAN_BATCH`] were appended or the range is done. One descent finds the first leaf;
    /// the next leaves come from the nodes on the path (an in-order walk), so each node
    /// is read once per call.
    pub(super) fn scan_leaves(
        &self,
        cur: &mut RangeCursor,
        out: &mut Vec<(u64, u64)>,
    ) -> Result<()> {
        let Some((lo, hi)) = cur.remaining() else {
            return Ok(());
        };
        let before = out.len();
        let mut path = self.descend(lo)?;
        loop {
            let Some(leaf) = path.last() else {
                cur.next = None;
                return Ok(());
            };
            let start = leaf.node.search(lo).unwrap_or_else(|i| i);
            for &(k, v) in &leaf.node.entries[start..] {
                if k > hi {
                    cur.next = None;
                    return Ok(());
                }
                out.push((k, v));
            }
            path.pop();
            // Up to the deepest node with a child right of the one taken.
            while let Some(top) = path.last_mut() {
                if top.slot < top.node.entries.len() {
                    top.slot += 1;
                    break;
                }
                path.pop();
            }
            let Some(top) = path.last() else {
                cur.next = None;
                return Ok(());
            };
            // That child's keys start at its separator, the scanned leaf's upper fence.
            let fence = top.node.entries[top.slot - 1].0;
            if fence > hi {
                cur.next = None;
                return Ok(());
            }
            cur.next = Some(fence);
            if out.len() - before >= SCAN_BATCH {
                return Ok(());
            }
            // Down the leftmost path of that child.
            let mut id = top.node.child_at(top.slot);
            let mut level = top.node.level;
            while level > 0 {
                level -= 1;
                let node = self.load(id)?;
                if node.level != level {
                    return Err(Error::corruption(
                        crate::page::DATA_FILE,
                        self.ntt.list(id).first(),
                        format!("node {id} at level {}, expected level {level}", node.level),
                    ));
                }
                let next = if level > 0 { node.link } else { NONE };
                path.push(Step { id, node, slot: 0 });
                id = next;
            }
        }
    }

    /// Build the tree bottom-up from sorted, distinct pairs into the empty tree: nodes
    /// filled to [`super::BULK_FILL`] and each written alone, like a compacted node.
    pub(super) fn bulk_load(&mut self, sorted: &[(u64, u64)]) -> Result<()> {
        if sorted.is_empty() {
            return Ok(());
        }
        let fill = super::BULK_FILL;
        let per = ((self.cap as f64 * fill) as usize).clamp(1, self.cap);
        let old = self.root;
        self.release_node(old);
        let mut level_nodes: Vec<(u64, u64)> = Vec::new();
        let mut off = 0;
        for size in group_sizes(sorted.len(), per, 1, self.cap) {
            let node = Node {
                level: 0,
                link: NONE,
                entries: sorted[off..off + size].to_vec(),
            };
            let id = self.new_id();
            self.write_node(id, &node)?;
            level_nodes.push((sorted[off].0, id));
            off += size;
        }
        let mut level = 0;
        while level_nodes.len() > 1 {
            level += 1;
            let mut up = Vec::new();
            let mut off = 0;
            for size in group_sizes(level_nodes.len(), per + 1, 2, self.cap + 1) {
                let kids = &level_nodes[off..off + size];
                let node = Node {
                    level,
                    link: kids[0].1,
                    entries: kids[1..].to_vec(),
                };
                let id = self.new_id();
                self.write_node(id, &node)?;
                up.push((kids[0].0, id));
                off += size;
            }
            level_nodes = up;
        }
        self.root = level_nodes[0].1;
        self.height = level + 1;
        self.entries = sorted.len() as u64;
        Ok(())
    }
}
