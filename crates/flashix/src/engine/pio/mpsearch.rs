//! Multi-path search (PIO B-tree paper §3.1.1, Algorithm 1) and the parallel range search
//! built on it (§3.1.2).
//!
//! MPSearch takes a sorted set of search keys S and descends level by level: the nodes of
//! one level that the keys need are read with one psync read (at most `pio_max` of them);
//! for each node the child pointers whose ranges hold a key of S are extracted
//! (`CheckSearchNeeded`, Eq. 1); and the children are processed depth-first in groups of at
//! most `pio_max` (Algorithm 1, lines 14–16). At the leaf level a caller-supplied visitor
//! gets each group of leaves (reading them with one psync read of its own). The pages are
//! held by the buffer pool; what MPSearch keeps per level is the list of child ids and
//! fences of the current group (at most `pio_max` × fan-out), not pages.

use super::leaf;
use super::opq::Op;
use super::{Fenced, PioBTree};
use crate::error::Result;
use crate::io::PageId;
use crate::kit::api::RangeCursor;
use std::sync::atomic::Ordering;

/// A node MPSearch reached and the search keys it serves, `keys[from..to]`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Target {
    pub at: Fenced,
    pub from: usize,
    pub to: usize,
}

/// Visitor of leaf groups.
pub(super) type Visit<'a> = dyn FnMut(&mut PioBTree, &[Target]) -> Result<()> + 'a;

pub(super) use crate::kit::bnode::spine::Internal;

impl Internal {
    /// Child slot `s` with its fence range inside the parent's `at`.
    pub(super) fn child(&self, at: Fenced, s: usize) -> Fenced {
        let pid = if s == 0 {
            self.link
        } else {
            self.entries[s - 1].1
        };
        let lo = if s == 0 { at.lo } else { self.entries[s - 1].0 };
        let hi = self.entries.get(s).map(|e| e.0).or(at.hi);
        Fenced { pid, lo, hi }
    }

    pub(super) fn slots(&self) -> usize {
        self.entries.len() + 1
    }
}

impl PioBTree {
    /// Read an internal node of `level` (from the pool), checking its kind and level.
    pub(super) fn internal(&mut self, pid: PageId, level: u32) -> Result<Internal> {
        crate::kit::bnode::spine::read_internal(&mut self.pager, pid, level)
    }

    /// Leaves are read (and written) once per batch or MPSearch, so after use they go to
    /// the LRU end of the pool (not the leaf of a point search: [`PioBTree::search_one`]):
    /// the pool then keeps the internal levels from the root down, the buffering that the
    /// cost model assumes (Appendix Eq. 12–14). Without this, every group of leaves a
    /// batch update passed through the pool pushed level-1 nodes out (the engine then
    /// read well above the one page per insert the model counts).
    pub(super) fn demote_leaves(&mut self, leaves: impl IntoIterator<Item = PageId>) {
        let segs = u64::from(self.segs);
        let runs: Vec<(PageId, u64)> = leaves.into_iter().map(|p| (p, segs)).collect();
        self.pager.demote(&runs);
    }

    /// MPSearch of the sorted, distinct `keys`: `visit` gets the leaves that hold them, in
    /// key order, in groups of at most `pio_max`.
    pub(super) fn mpsearch(&mut self, keys: &[u64], visit: &mut Visit<'_>) -> Result<()> {
        if keys.is_empty() {
            return Ok(());
        }
        *self.counters.mpsearches.get_mut() += 1;
        let root = Target {
            at: Fenced {
                pid: self.root,
                lo: 0,
                hi: None,
            },
            from: 0,
            to: keys.len(),
        };
        if self.height == 1 {
            visit(self, &[root])?;
            self.demote_leaves([self.root]);
            return Ok(());
        }
        self.descend(self.height - 1, &[root], keys, visit)
    }

    /// Algorithm 1 for one group of nodes at `level` (≥ 1).
    fn descend(
        &mut self,
        level: u32,
        nodes: &[Target],
        keys: &[u64],
        visit: &mut Visit<'_>,
    ) -> Result<()> {
        let runs: Vec<(PageId, u64)> = nodes.iter().map(|t| (t.at.pid, 1)).collect();
        self.psync_read(&runs)?;
        let mut children: Vec<Target> = Vec::new();
        for t in nodes {
            let n = self.internal(t.at.pid, level)?;
            targets(&n, t, keys, &mut children);
        }
        if level == 1 {
            let g = self.group(u64::from(self.segs));
            for chunk in children.chunks(g) {
                visit(self, chunk)?;
                self.demote_leaves(chunk.iter().map(|t| t.at.pid));
            }
        } else {
            let g = self.group(1);
            for chunk in children.chunks(g) {
                self.descend(level - 1, chunk, keys, visit)?;
            }
        }
        Ok(())
    }

    /// A point search of one key (`get`): MPSearch with a single search key (§3.1.1), so
    /// each level is one page and the psync reads are single requests. The OPQ answers
    /// first, as in [`PioBTree::search_many`]; the descent then binary-searches each
    /// internal node and the leaf's segments inside their page bytes, decoding no node
    /// (decoding each node cost more CPU than the search's device read saves).
    pub(super) fn search_one(&mut self, key: u64) -> Result<Option<u64>> {
        if let Some(e) = self.opq.get_mut().lookup(key) {
            *self.counters.opq_hits.get_mut() += 1;
            return Ok((e.op == Op::Put).then_some(e.value));
        }
        *self.counters.mpsearches.get_mut() += 1;
        let mut pid = self.root;
        for level in (1..self.height).rev() {
            self.psync_read(&[(pid, 1)])?;
            pid = crate::kit::bnode::spine::child_for(&mut self.pager, pid, level, key)?;
        }
        let run = self.search_run(pid);
        self.psync_read(&[run])?;
        let known = self.lsmap.get(pid);
        let (found, last) = leaf::find(self.layout, &mut self.pager, pid, self.segs, known, key)?;
        self.lsmap.insert(pid, last);
        // The leaf stays where the pool's LRU put it, unlike the leaves of a batch: one
        // leaf entering at the recent end evicts the least recent page, a leaf too while
        // every search touches the internal levels. Demoted, the leaves of point searches
        // left the pool no better than a set frozen at its first fill: more page reads a
        // search than the B+-tree's with about as many one-page leaves, and fewer kept.
        Ok(found.and_then(|r| (r.op == Op::Put).then_some(r.value)))
    }

    /// Point searches of many keys (`get_many`; `get` is one key): the OPQ first (§3.3;
    /// its newest point entry of the key, else a range tombstone covering it, answers
    /// without reading the tree), then MPSearch for the rest, each leaf group read with
    /// one psync read.
    pub(super) fn search_many(&mut self, keys: &[u64]) -> Result<Vec<Option<u64>>> {
        let mut out = vec![None; keys.len()];
        let mut pending: Vec<(u64, usize)> = Vec::new();
        for (i, &k) in keys.iter().enumerate() {
            match self.opq.get_mut().lookup(k) {
                Some(e) => {
                    *self.counters.opq_hits.get_mut() += 1;
                    out[i] = (e.op == Op::Put).then_some(e.value);
                }
                None => pending.push((k, i)),
            }
        }
        pending.sort_unstable();
        let mut ks: Vec<u64> = pending.iter().map(|p| p.0).collect();
        ks.dedup();
        let mut found: Vec<Option<u64>> = vec![None; ks.len()];
        let wanted = &ks;
        self.mpsearch(&ks, &mut |t: &mut PioBTree, leaves: &[Target]| {
            let runs: Vec<(PageId, u64)> = leaves.iter().map(|l| t.search_run(l.at.pid)).collect();
            t.psync_read(&runs)?;
            for l in leaves {
                let img = t.load_leaf(l.at.pid)?;
                match_leaf(&img, l, wanted, &mut found);
            }
            Ok(())
        })?;
        for (k, i) in pending {
            if let Ok(j) = ks.binary_search(&k) {
                out[i] = found[j];
            }
        }
        Ok(out)
    }

    /// Parallel range search (§3.1.2): from `cur.next`, the internal nodes over the range
    /// level by level and then up to one psync group of leaves, merged with the OPQ's
    /// entries of the range they cover. Sets `cur.next` to the first key after them.
    pub(super) fn prange(
        &mut self,
        cur: &mut RangeCursor,
        out: &mut Vec<(u64, u64)>,
    ) -> Result<()> {
        let Some((next, hi)) = cur.remaining() else {
            return Ok(());
        };
        let ramp = self.scan_ramp(cur);
        let mut nodes = vec![Fenced {
            pid: self.root,
            lo: 0,
            hi: None,
        }];
        for level in (1..self.height).rev() {
            let runs: Vec<(PageId, u64)> = nodes.iter().map(|n| (n.pid, 1)).collect();
            self.psync_read(&runs)?;
            let g = self.scan_group(level, ramp);
            let mut children = Vec::new();
            for at in &nodes {
                let n = self.internal(at.pid, level)?;
                if scan_children(&n, *at, next, hi, g, &mut children) {
                    break;
                }
            }
            nodes = children;
        }
        let (covered, end) = self.scan_leaves(&mut nodes, next, hi);
        let runs: Vec<(PageId, u64)> = nodes.iter().map(|n| self.search_run(n.pid)).collect();
        self.psync_read(&runs)?;
        let mut imgs = Vec::with_capacity(nodes.len());
        for n in &nodes {
            imgs.push(self.load_leaf(n.pid)?);
        }
        self.demote_leaves(nodes.iter().map(|n| n.pid));
        self.scan_merge(imgs, next, end, out);
        cur.next = scan_next(covered, next, hi);
        Ok(())
    }

    /// Leaves a range search reads per call: for an open-ended range (`lo..`, its end
    /// decided by the caller, who may stop after a few entries), the leaves the entries
    /// still wanted span when the caller gave a limit hint (counting full leaves), else
    /// one leaf first and twice as many per call, up to a psync group; a bounded one reads
    /// whole groups (RangeCursor::ramp).
    pub(super) fn scan_ramp(&self, cur: &mut RangeCursor) -> usize {
        let per_leaf = (self.seg_cap * usize::from(self.segs)) as u64;
        usize::try_from(cur.ramp(1, u64::MAX, per_leaf)).unwrap_or(usize::MAX)
    }

    /// Children of `level`'s nodes a range search keeps: a psync group of nodes, of
    /// leaves (at most `ramp`) below level 1.
    pub(super) fn scan_group(&self, level: u32, ramp: usize) -> usize {
        if level == 1 {
            self.group(u64::from(self.segs)).min(ramp)
        } else {
            self.group(1)
        }
    }

    /// The key range the leaves `nodes` of a range search from `next` to `hi` cover:
    /// the first key past them if below `hi` (`covered`), and the last key the call
    /// returns (`end`). Drops the leaves whose part of the range one OPQ range tombstone
    /// spans: they hold nothing the scan returns (the tombstone is newer than every
    /// record in the tree), so they are not read.
    pub(super) fn scan_leaves(
        &self,
        nodes: &mut Vec<Fenced>,
        next: u64,
        hi: u64,
    ) -> (Option<u64>, u64) {
        let covered = nodes.last().and_then(|n| n.hi);
        let end = match covered {
            Some(h) if h <= hi => h.saturating_sub(1),
            _ => hi,
        };
        // The tombstones change only under the engine's exclusive lock.
        let before = nodes.len();
        {
            let q = self.opq.read();
            let tombs = q.tombs();
            nodes.retain(|n| {
                let lo = n.lo.max(next);
                let top = n.hi.map_or(u64::MAX, |h| h.saturating_sub(1)).min(end);
                tombs.is_empty() || lo > top || !tombs.spans(lo, top)
            });
        }
        let skipped = (before - nodes.len()) as u64;
        if skipped > 0 {
            self.counters
                .leaves_skipped_by_tombstones
                .fetch_add(skipped, Ordering::Relaxed);
        }
        (covered, end)
    }

    /// Append to `out` the live entries in `[next, end]` of the leaves `imgs` (in key
    /// order) merged with the OPQ's, which are newer.
    pub(super) fn scan_merge(
        &self,
        imgs: Vec<leaf::LeafImage>,
        next: u64,
        end: u64,
        out: &mut Vec<(u64, u64)>,
    ) {
        // The leaves are in key order with disjoint fence ranges, so their live entries
        // concatenated are sorted; the OPQ's entries of the range (newer) are merged in
        // with one pass. (A map of every entry cost enough CPU per entry to make long
        // scans CPU-bound.)
        let mut tree: Vec<(u64, u64)> = Vec::new();
        for img in imgs {
            let live = leaf::live(img.records);
            tree.extend(live.into_iter().filter(|(k, _)| (next..=end).contains(k)));
        }
        // The OPQ's range tombstones hide the leaves' entries they cover (older). Its
        // entries of the range are taken under one hold of its lock: the batch returns
        // the tree (which only the engine's exclusive lock changes) with the OPQ as it
        // was at that instant.
        let queued = {
            let q = self.opq.read();
            if !q.tombs().is_empty() {
                let mut hidden = q.tombs().cursor();
                tree.retain(|(k, _)| !hidden.covers(*k));
            }
            q.range(next, end)
        };
        let mut q = queued.into_iter().peekable();
        out.reserve(tree.len());
        for (k, v) in tree {
            while let Some((qk, e)) = q.next_if(|(qk, _)| *qk < k) {
                if e.op == Op::Put {
                    out.push((qk, e.value));
                }
            }
            // A queued entry of the same key is newer than the leaf's: it decides.
            match q.next_if(|(qk, _)| *qk == k) {
                Some((_, e)) => {
                    if e.op == Op::Put {
                        out.push((k, e.value));
                    }
                }
                None => out.push((k, v)),
            }
        }
        for (qk, e) in q {
            if e.op == Op::Put {
                out.push((qk, e.value));
            }
        }
    }
}

/// CheckSearchNeeded (Eq. 1) for node `n` reached by `t`: the children that hold its
/// keys, consecutive keys of the same child forming one target, appended in key order.
pub(super) fn targets(n: &Internal, t: &Target, keys: &[u64], children: &mut Vec<Target>) {
    let mut i = t.from;
    while i < t.to {
        let s = match n.entries.binary_search_by_key(&keys[i], |e| e.0) {
            Ok(j) => j + 1,
            Err(j) => j,
        };
        let at = n.child(t.at, s);
        let mut j = i + 1;
        while j < t.to && at.hi.map_or(true, |h| keys[j] < h) {
            j += 1;
        }
        children.push(Target { at, from: i, to: j });
        i = j;
    }
}

/// Record in `found` the newest record in leaf `img` of each search key `l` serves
/// (`wanted[l.from..l.to]`).
pub(super) fn match_leaf(
    img: &leaf::LeafImage,
    l: &Target,
    wanted: &[u64],
    found: &mut [Option<u64>],
) {
    let mine = &wanted[l.from..l.to];
    // Replay the records in append order: the newest of a key decides.
    for r in &img.records {
        if let Ok(j) = mine.binary_search(&r.key) {
            found[l.from + j] = (r.op == Op::Put).then_some(r.value);
        }
    }
}

/// The children of node `n` (at `at`) whose ranges meet `[next, hi]`, appended to
/// `children` until it holds `g`; true when it does.
pub(super) fn scan_children(
    n: &Internal,
    at: Fenced,
    next: u64,
    hi: u64,
    g: usize,
    children: &mut Vec<Fenced>,
) -> bool {
    for s in 0..n.slots() {
        let c = n.child(at, s);
        if c.lo <= hi && c.hi.map_or(true, |h| h > next) {
            children.push(c);
            if children.len() >= g {
                return true;
            }
        }
    }
    false
}

/// Where a range search from `next` to `hi` resumes after leaves covering keys below
/// `covered`: there, if that is inside the range; else it is done.
pub(super) fn scan_next(covered: Option<u64>, next: u64, hi: u64) -> Option<u64> {
    match covered {
        Some(h) if h <= hi && h > next => Some(h),
        _ => None,
    }
}
