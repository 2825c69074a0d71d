//! Descent through the inner nodes, updates as log entries (§4.1), reorganisation and
//! splits of leaves, copy-on-write inner nodes, the log buffer's flush, the bulk load and
//! the segment cleaner.

use super::{Fbx, LeafMeta};
use crate::error::{Error, Result};
use crate::io::PageId;
use crate::kit::ntt::unit::{self, Unit};
use crate::kit::ntt::{Node, NONE};
use crate::page::DATA_FILE;

/// The way from the root to a leaf: the inner nodes passed (id and contents), and the
/// leaf with its fences.
#[derive(Debug, Clone)]
pub(crate) struct Path {
    pub inner: Vec<(u64, Node)>,
    pub leaf: u64,
    /// Smallest key the leaf may hold.
    pub lo: u64,
    /// Keys at or above this belong to later leaves (`None`: none do).
    pub hi: Option<u64>,
}

/// Fill factor of a bulk load (the B+-tree baseline's).
const BULK_FILL: f64 = 0.7;

impl Fbx {
    /// Inner node `id`, read through the buffer pool (state BLOCK or IN_MEM), from any of
    /// many reading threads (the pool's shared path).
    pub(crate) fn inner_node(&self, id: u64) -> Result<Node> {
        let pid = self.nodes.inner(id).ok_or_else(|| {
            Error::corruption(DATA_FILE, None, format!("inner node {id} has no address"))
        })?;
        let mut units = Vec::new();
        let n = self
            .pager
            .read_shared(pid, |b| unit::collect(b, pid, id, &mut units))??;
        if n == 0 || !matches!(units.first(), Some(Unit::Reset { .. })) {
            return Err(Error::corruption(
                DATA_FILE,
                Some(pid),
                format!("page does not hold inner node {id} whole"),
            ));
        }
        let mut node = Node::default();
        for u in units {
            node.apply(u);
        }
        if node.level == 0 {
            return Err(Error::corruption(
                DATA_FILE,
                Some(pid),
                format!("inner node {id} is at level 0"),
            ));
        }
        Ok(node)
    }

    /// Descend from the root to the parent of `key`'s leaf (§4.1: "searches the tree from
    /// the root to the parent of the leaf").
    pub(crate) fn descend(&self, key: u64) -> Result<Path> {
        let mut path = Path {
            inner: Vec::with_capacity(self.height as usize),
            leaf: self.root,
            lo: 0,
            hi: None,
        };
        let mut id = self.root;
        for level in (1..self.height).rev() {
            let node = self.inner_node(id)?;
            if node.level != level {
                return Err(Error::corruption(
                    DATA_FILE,
                    self.nodes.inner(id),
                    format!(
                        "inner node {id} is at level {}, expected {level}",
                        node.level
                    ),
                ));
            }
            let s = node.child_slot(key);
            if s > 0 {
                path.lo = node.entries[s - 1].0;
            }
            if let Some(e) = node.entries.get(s) {
                path.hi = Some(e.0);
            }
            let child = node.child_at(s);
            path.inner.push((id, node));
            id = child;
        }
        if id >= self.next_id {
            // An id beyond those numbered would size the per-id tables (module doc,
            // Memory) by a damaged child pointer.
            return Err(Error::corruption(
                DATA_FILE,
                path.inner.last().and_then(|(p, _)| self.nodes.inner(*p)),
                format!(
                    "a child pointer names node {id}, beyond the next id {}",
                    self.next_id
                ),
            ));
        }
        path.leaf = id;
        Ok(path)
    }

    /// An insert or delete: a log entry for `key`'s leaf, which is not read (§4.1); or, in
    /// the Sequential B-Tree mode (§3.1), the leaf rewritten whole.
    pub(crate) fn update(&mut self, key: u64, u: Unit) -> Result<()> {
        // The cleans shared reads asked for come first, as they would have serially.
        self.run_deferred_cleans()?;
        let path = self.descend(key)?;
        let leaf = path.leaf;
        self.counters.log_entries += 1;
        if !self.o.leaf_logging {
            let mut node = self.rebuild(leaf)?;
            node.apply(u);
            self.write_leaf(&path, node)?;
            self.clean_space()?;
            return self.charge_tables();
        }
        self.buffer(leaf, key, u)?;
        let m = self.nodes.get_or_default(leaf);
        m.pending = m.pending.saturating_add(1);
        m.compact = false;
        if m.exact as usize + m.pending as usize > self.leaf_order {
            self.counters.reorganizations += 1;
            let node = self.rebuild(leaf)?;
            self.write_leaf(&path, node)?;
        }
        self.clean_space()?;
        self.charge_tables()
    }

    /// Put a log entry of `leaf` in the log buffer, appending the page it goes to first
    /// when that page is full (§4.2).
    fn buffer(&mut self, leaf: u64, key: u64, u: Unit) -> Result<()> {
        loop {
            let b = self.logbuf.bucket_for(leaf, key);
            if self.logbuf.fits(b, leaf) {
                self.logbuf.push(b, leaf, u);
                return Ok(());
            }
            self.flush_bucket(b)?;
        }
    }

    /// Append log-buffer page `b` to the file and extend the log list of every leaf with
    /// an entry on it (§4.1, Fig. 3's page 7).
    pub(crate) fn flush_bucket(&mut self, b: usize) -> Result<()> {
        let groups = self.logbuf.take(b);
        if groups.is_empty() {
            return Ok(());
        }
        let mut p = unit::PageBuilder::new(self.pager.page_size());
        for (leaf, units) in &groups {
            p.add(*leaf, units);
        }
        let pid = self.append_pages(vec![p.into_unsealed()], false)?[0];
        for (leaf, _) in groups {
            self.ntt.append(leaf, pid)?;
            if let Some(m) = self.nodes.get_mut(leaf) {
                m.compact = false;
            }
        }
        self.counters.log_pages_flushed += 1;
        Ok(())
    }

    /// Append every non-empty log-buffer page (checkpoint).
    pub(crate) fn flush_log_buffer(&mut self) -> Result<()> {
        for b in self.logbuf.non_empty() {
            self.flush_bucket(b)?;
        }
        Ok(())
    }

    /// Leaf `leaf` rebuilt (§4.3): its log list's pages (one batched read of those not in
    /// the pool), then its buffered entries, applied in order.
    pub(crate) fn rebuild(&mut self, leaf: u64) -> Result<Node> {
        if self.ntt.list(leaf).len() >= 2 {
            let list = self.ntt.list(leaf).to_vec();
            self.prefetch(&list)?;
        }
        self.rebuild_shared(leaf)
    }

    /// [`Fbx::rebuild`] from any of many reading threads: the pages of the list one after
    /// the other through the pool's shared path (which has no batched read).
    pub(crate) fn rebuild_shared(&self, leaf: u64) -> Result<Node> {
        let list = self.ntt.list(leaf);
        let mut units = Vec::new();
        for pid in list {
            let n = self
                .pager
                .read_shared(pid, |b| unit::collect(b, pid, leaf, &mut units))??;
            if n == 0 {
                return Err(Error::corruption(
                    DATA_FILE,
                    Some(pid),
                    format!("page holds no log entry of leaf {leaf}, which the NTT lists"),
                ));
            }
        }
        units.extend_from_slice(self.logbuf.units(leaf));
        self.counters.leaf_rebuilds.add(1);
        self.counters.leaf_rebuild_pages.add(list.len() as u64);
        leaf_of(leaf, units, list.first())
    }

    /// Load the pages of `pages` that are not in the pool in batches the pool can hold.
    pub(crate) fn prefetch(&mut self, pages: &[PageId]) -> Result<u64> {
        if pages.len() < 2 {
            return Ok(0);
        }
        let chunk = (self.pager.pool_frames() as usize / 2).max(1);
        let mut read = 0;
        for c in pages.chunks(chunk) {
            let runs: Vec<(PageId, u64)> = c.iter().map(|&p| (p, 1)).collect();
            read += self.pager.prefetch(&runs, 64)?;
        }
        Ok(read)
    }

    /// Write leaf `path.leaf` whole: split into two compact pages when it holds more than
    /// the leaf order (the separator goes to the parent), else one compact page.
    pub(crate) fn write_leaf(&mut self, path: &Path, mut node: Node) -> Result<()> {
        let leaf = path.leaf;
        if node.entries.len() <= self.leaf_order {
            return self.compact_leaf(leaf, &node);
        }
        let right_entries = node.entries.split_off(node.entries.len() / 2);
        let sep = right_entries[0].0;
        let right_id = self.new_id();
        let right = Node {
            level: 0,
            link: NONE,
            entries: right_entries,
        };
        let pages = vec![
            self.node_page(leaf, &node),
            self.node_page(right_id, &right),
        ];
        let pids = self.append_pages(pages, true)?;
        self.nodes.insert(right_id, LeafMeta::default());
        self.set_compact(leaf, pids[0], node.entries.len())?;
        self.set_compact(right_id, pids[1], right.entries.len())?;
        self.counters.leaf_splits += 1;
        self.insert_separator(&path.inner, path.leaf, sep, right_id)
    }

    /// Write `leaf` as one compact page that becomes its whole list (a clean, §4.4, or a
    /// reorganisation).
    pub(crate) fn compact_leaf(&mut self, leaf: u64, node: &Node) -> Result<()> {
        let page = self.node_page(leaf, node);
        let pid = self.append_pages(vec![page], true)?[0];
        self.set_compact(leaf, pid, node.entries.len())?;
        Ok(())
    }

    /// `leaf`'s list is now the compact page `pid` of `entries` entries: its buffered
    /// entries are folded in, its old pages released, its policy state reset.
    fn set_compact(&mut self, leaf: u64, pid: PageId, entries: usize) -> Result<()> {
        self.logbuf.remove(leaf);
        for p in self.ntt.replace(leaf, vec![pid])? {
            self.space.dead(&mut self.pager, p);
        }
        let m = self.nodes.get_or_default(leaf);
        m.exact = u16::try_from(entries).unwrap_or(u16::MAX);
        m.pending = 0;
        m.compact = true;
        m.clean.reset();
        Ok(())
    }

    /// Write inner node `id` whole at the head and repoint the NTT; its old page dies.
    fn write_inner(&mut self, id: u64, node: &Node) -> Result<()> {
        let page = self.node_page(id, node);
        let pid = self.append_pages(vec![page], true)?[0];
        if let Some(old) = self.nodes.set_inner(id, pid)? {
            self.space.dead(&mut self.pager, old);
        }
        self.counters.inner_appends += 1;
        Ok(())
    }

    /// Add `(sep, right)` to the parent of `left` (the last of `inner`), splitting full
    /// inner nodes upwards; a split root gives a new root.
    fn insert_separator(
        &mut self,
        inner: &[(u64, Node)],
        mut left: u64,
        mut sep: u64,
        mut right: u64,
    ) -> Result<()> {
        let mut level = inner.len();
        loop {
            if level == 0 {
                let root = self.new_id();
                let node = Node {
                    level: self.height,
                    link: left,
                    entries: vec![(sep, right)],
                };
                self.write_inner(root, &node)?;
                self.root = root;
                self.height += 1;
                return Ok(());
            }
            level -= 1;
            let (id, ref node) = inner[level];
            let mut node = node.clone();
            let at = node.entries.partition_point(|e| e.0 < sep);
            node.entries.insert(at, (sep, right));
            if node.entries.len() <= self.inner_order {
                return self.write_inner(id, &node);
            }
            let mid = node.entries.len() / 2;
            let mut upper = node.entries.split_off(mid);
            let (up_sep, up_link) = upper.remove(0);
            let new_id = self.new_id();
            let new = Node {
                level: node.level,
                link: up_link,
                entries: upper,
            };
            self.write_inner(id, &node)?;
            self.write_inner(new_id, &new)?;
            self.counters.inner_splits += 1;
            left = id;
            sep = up_sep;
            right = new_id;
        }
    }

    /// Build the tree from sorted, distinct pairs into the empty index: compact leaves
    /// filled to 70%, then the inner levels, every page appended in order.
    pub(crate) fn bulk_load(&mut self, sorted: &[(u64, u64)]) -> Result<()> {
        let per_leaf = ((self.leaf_order as f64 * BULK_FILL) as usize).max(1);
        let fan = ((self.inner_order as f64 * BULK_FILL) as usize).max(2) + 1;
        // The empty root leaf goes.
        self.logbuf.remove(self.root);
        for p in self.ntt.remove(self.root) {
            self.space.dead(&mut self.pager, p);
        }
        self.nodes.remove(self.root);
        // (first key, node id) of the level being built.
        let mut level: Vec<(u64, u64)> = Vec::new();
        for chunk in sorted.chunks(per_leaf) {
            let id = self.new_id();
            let node = Node {
                level: 0,
                link: NONE,
                entries: chunk.to_vec(),
            };
            self.nodes.insert(id, LeafMeta::default());
            self.compact_leaf(id, &node)?;
            level.push((chunk[0].0, id));
        }
        let mut height = 1;
        while level.len() > 1 {
            let mut up = Vec::new();
            for group in level.chunks(fan) {
                let id = self.new_id();
                let node = Node {
                    level: height,
                    link: group[0].1,
                    entries: group[1..].to_vec(),
                };
                self.write_inner(id, &node)?;
                up.push((group[0].0, id));
            }
            level = up;
            height += 1;
        }
        self.root = level[0].1;
        self.height = height;
        self.charge_tables()
    }

    /// The segment cleaner (module doc, Space): while the file holds more than
    /// `space_amp_limit` times its live pages plus four segments, move the live pages of
    /// the emptiest segment to the head. At most a few segments per call.
    pub(crate) fn clean_space(&mut self) -> Result<()> {
        if !std::mem::take(&mut self.space.check_due) {
            return Ok(());
        }
        for _ in 0..4 {
            let file = self.space.file_pages() as f64;
            let live = self.space.live_pages() as f64;
            let slack = 4.0 * self.space.seg_pages() as f64;
            if file <= self.o.space_amp_limit * live + slack {
                break;
            }
            let pinned: Vec<PageId> = self.snapshot.iter().chain(&self.retired).copied().collect();
            let Some((seg, _)) = self.space.emptiest(&pinned) else {
                break;
            };
            self.clean_segment(seg)?;
        }
        self.space.check_due = false;
        Ok(())
    }

    /// Move every live page of the segment at `seg` to the head: compact the leaves whose
    /// lists name one, rewrite the inner nodes stored there. Snapshot pages stay: they die
    /// at the next checkpoint (the caller does not pick their segments).
    fn clean_segment(&mut self, seg: PageId) -> Result<()> {
        let end = seg + self.space.seg_pages();
        let inside = |p: &PageId| (seg..end).contains(p);
        let mut leaves: Vec<u64> = self
            .ntt
            .iter()
            .filter(|(_, l)| l.iter().any(|p| inside(&p)))
            .map(|(id, _)| id)
            .collect();
        leaves.sort_unstable();
        let inner: Vec<u64> = self
            .nodes
            .inner_iter()
            .filter(|(_, p)| inside(p))
            .map(|(id, _)| id)
            .collect();
        for &leaf in &leaves {
            let node = self.rebuild(leaf)?;
            self.compact_leaf(leaf, &node)?;
        }
        for &id in &inner {
            let node = self.inner_node(id)?;
            self.write_inner(id, &node)?;
        }
        self.counters.segments_cleaned += 1;
        self.counters.segment_pages_moved += (leaves.len() + inner.len()) as u64;
        Ok(())
    }
}

/// A leaf rebuilt from its units; `first` names its first page for errors.
pub(crate) fn leaf_of(leaf: u64, units: Vec<Unit>, first: Option<PageId>) -> Result<Node> {
    let mut node = Node {
        link: NONE,
        ..Node::default()
    };
    for u in units {
        match u {
            Unit::Insert(..) | Unit::Delete(_) => node.apply(u),
            Unit::Reset { level: 0, .. } => node.apply(u),
            other => {
                return Err(Error::corruption(
                    DATA_FILE,
                    first,
                    format!("leaf {leaf} has the unit {other:?}, which no leaf log holds"),
                ))
            }
        }
    }
    Ok(node)
}
