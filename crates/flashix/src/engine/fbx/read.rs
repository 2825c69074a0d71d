//! Queries (§4.3): point search, and range queries by Algorithm 1 (the leaves of every
//! range, the union of their log pages read once). Every leaf read is followed by the
//! clean policy's decision (§4.4). A point search has two forms: the serial one (`&mut`),
//! which cleans at once, and the shared one (`&self`, beside other readers), which notes
//! the clean for the next write ([`Fbx::note_read`], [`Fbx::run_deferred_cleans`]).

use super::leaves::{fit, CLEAN_DUE};
use super::tree::leaf_of;
use super::{Fbx, DEFERRED_CLEANS};
use crate::cost::logclean::{CleanPolicy, CleanState};
use crate::error::{Error, Result};
use crate::io::PageId;
use crate::kit::api::RangeCursor;
use crate::kit::ntt::unit::{self, Unit};
use crate::kit::ntt::Node;
use crate::page::DATA_FILE;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::Ordering;

/// A leaf found by a range walk, with its fences.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LeafSpan {
    pub id: u64,
    pub lo: u64,
    pub hi: Option<u64>,
}

/// Leaves a scan call reads at most in one batch.
const SCAN_LEAVES: u64 = 64;
/// Leaves a range query reads at most at once (bounds its memory).
const QUERY_LEAVES: usize = 1024;

impl Fbx {
    /// A point search: descend, rebuild the leaf, then the clean policy (§4.4). The cleans
    /// shared reads asked for are written first, as they would have been serially.
    pub(crate) fn search(&mut self, key: u64) -> Result<Option<u64>> {
        self.run_deferred_cleans()?;
        let leaf = self.descend(key)?.leaf;
        let node = self.rebuild(leaf)?;
        self.counters.query_rebuilds.add(1);
        let found = node.search(key).ok().map(|i| node.entries[i].1);
        self.after_read(leaf, &node)?;
        Ok(found)
    }

    /// [`Fbx::search`] beside other readers: the clean policy's clean waits for the next
    /// write ([`Fbx::note_read`]).
    pub(crate) fn search_shared(&self, key: u64) -> Result<Option<u64>> {
        let leaf = self.descend(key)?.leaf;
        let node = self.rebuild_shared(leaf)?;
        self.counters.query_rebuilds.add(1);
        let found = node.search(key).ok().map(|i| node.entries[i].1);
        self.note_read(leaf)?;
        Ok(found)
    }

    /// The clean policy after a read of `leaf` (§4.4): a clean writes it as one compact
    /// page that becomes its list. A leaf already compact with nothing buffered is left as
    /// it is (its state follows the policy all the same).
    pub(crate) fn after_read(&mut self, leaf: u64, node: &Node) -> Result<()> {
        let len = self.ntt.list(leaf).len() as u64;
        let policy = self.o.clean;
        let Some(m) = self.nodes.get_mut(leaf) else {
            return Err(no_meta(leaf));
        };
        let mut acc = m.clean.state();
        let clean = policy.after_read(&mut acc, len);
        m.clean.set(acc);
        if !clean {
            return Ok(());
        }
        let nothing_to_do = m.compact && !self.logbuf.holds(leaf);
        if nothing_to_do {
            return Ok(());
        }
        self.compact_leaf(leaf, node)?;
        // The policy's own state after a clean (LTN adds the new length after it).
        if let Some(m) = self.nodes.get_mut(leaf) {
            m.clean.set(acc);
        }
        self.counters.cleans.add(1);
        self.counters.clean_pages += 1;
        self.clean_space()?;
        // A read is no logged operation: charge the tables the clean changed here
        // (`Logged::charge_memory` runs after updates only).
        self.charge_tables()
    }

    /// [`Fbx::after_read`] for a shared read of `leaf`: the policy's state is updated in
    /// place (compare-and-swap on [`super::LeafClean`]), and a clean it asks for is noted
    /// in [`Fbx::deferred`] for the next write to make. While one waits, later reads see
    /// the list the clean leaves, one page (as they would have serially), and ask for no
    /// second one. When [`DEFERRED_CLEANS`] leaves wait already, a read that would add
    /// another is not counted at all: its state stays, so a later read decides again.
    pub(crate) fn note_read(&self, leaf: u64) -> Result<()> {
        let len = self.ntt.list(leaf).len() as u64;
        let policy = self.o.clean;
        if len == 0 || policy == CleanPolicy::Never {
            // The policy changes nothing (`CleanPolicy::after_read`).
            return Ok(());
        }
        let Some(m) = self.nodes.get(leaf) else {
            return Err(no_meta(leaf));
        };
        let idle = m.compact && !self.logbuf.holds(leaf);
        let cell = &m.clean.0;
        let mut cur = cell.load(Ordering::Relaxed);
        loop {
            let due = cur & CLEAN_DUE != 0;
            let mut acc = CleanState {
                acc: u64::from(cur & !CLEAN_DUE),
            };
            let clean = policy.after_read(&mut acc, if due { 1 } else { len });
            let write = clean && !due && !idle;
            let new = fit(acc.acc) | if due || write { CLEAN_DUE } else { 0 };
            if !write {
                match cell.compare_exchange_weak(cur, new, Ordering::Relaxed, Ordering::Relaxed) {
                    Ok(_) => return Ok(()),
                    Err(now) => cur = now,
                }
                continue;
            }
            // The flag and the note go together, under the set's lock.
            let mut q = self.deferred.lock().unwrap_or_else(|e| e.into_inner());
            if q.len() >= DEFERRED_CLEANS {
                return Ok(());
            }
            match cell.compare_exchange(cur, new, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => {
                    q.push(leaf);
                    self.counters.cleans.add(1);
                    return Ok(());
                }
                Err(now) => cur = now,
            }
        }
    }

    /// Write the cleans shared reads asked for ([`Fbx::note_read`]), under `&mut` (a write,
    /// a flush, a checkpoint, a serial read): each such leaf is rebuilt now (its pages
    /// were just read, so they are usually still in the pool) and written as one compact
    /// page, with the policy's post-clean state. A leaf whose flag a write cleared since
    /// (a split or reorganisation compacted it) or that is gone is skipped.
    pub(crate) fn run_deferred_cleans(&mut self) -> Result<()> {
        let q = self.deferred.get_mut().unwrap_or_else(|e| e.into_inner());
        if q.is_empty() {
            return Ok(());
        }
        let mut leaves = std::mem::take(q);
        for &leaf in &leaves {
            let acc = match self.nodes.get(leaf) {
                Some(m) if m.clean.due() => m.clean.state(),
                _ => continue,
            };
            let node = self.rebuild(leaf)?;
            self.compact_leaf(leaf, &node)?;
            if let Some(m) = self.nodes.get_mut(leaf) {
                m.clean.set(acc);
            }
            self.counters.clean_pages += 1;
        }
        // The set keeps its allocation (its bytes are charged once).
        leaves.clear();
        *self.deferred.get_mut().unwrap_or_else(|e| e.into_inner()) = leaves;
        self.clean_space()?;
        self.charge_tables()
    }

    /// The leaves holding keys of `[lo, hi]`, in key order, appended to `out` (a leaf
    /// already last in `out` is not added again); at most `limit` in all.
    pub(crate) fn leaves_in(
        &self,
        lo: u64,
        hi: u64,
        limit: usize,
        out: &mut Vec<LeafSpan>,
    ) -> Result<()> {
        let root = LeafSpan {
            id: self.root,
            lo: 0,
            hi: None,
        };
        self.walk(root, self.height - 1, lo, hi, limit, out)
    }

    fn walk(
        &self,
        at: LeafSpan,
        level: u32,
        lo: u64,
        hi: u64,
        limit: usize,
        out: &mut Vec<LeafSpan>,
    ) -> Result<()> {
        if level == 0 {
            if out.last().map(|l| l.id) != Some(at.id) && out.len() < limit {
                out.push(at);
            }
            return Ok(());
        }
        let node = self.inner_node(at.id)?;
        let first = node.child_slot(lo);
        let last = node.child_slot(hi);
        for s in first..=last {
            if out.len() >= limit {
                break;
            }
            let child = LeafSpan {
                id: node.child_at(s),
                lo: if s == 0 { at.lo } else { node.entries[s - 1].0 },
                hi: node.entries.get(s).map(|e| e.0).or(at.hi),
            };
            self.walk(child, level - 1, lo, hi, limit, out)?;
        }
        Ok(())
    }

    /// §4.3's entry-count estimate (for kNN): the leaves over `ranges` found by walking the
    /// inner nodes (no leaf is read), each counted from the NTT as its entries at the last
    /// rebuild plus the log entries since (an upper bound: a log entry may overwrite or
    /// delete), a partly covered leaf by the share of its key span in the range.
    pub(crate) fn estimate(&self, ranges: &[(u64, u64)]) -> Result<u64> {
        let mut spans = Vec::new();
        let mut total = 0f64;
        for &(lo, hi) in ranges {
            spans.clear();
            self.leaves_in(lo, hi, usize::MAX, &mut spans)?;
            for s in &spans {
                let n = self.nodes.get(s.id).map_or(0, |m| m.bound());
                // The leaf holds keys in [s.lo, last]; the range covers [a, b] of them.
                let last = s.hi.map_or(u64::MAX, |h| h.saturating_sub(1));
                let (a, b) = (lo.max(s.lo), hi.min(last));
                if a > b || n == 0 {
                    continue;
                }
                let share = ((b - a) as f64 + 1.0) / ((last - s.lo) as f64 + 1.0);
                total += n as f64 * share.min(1.0);
            }
        }
        Ok(total.round() as u64)
    }

    /// Rebuild `spans`' leaves. Batched (Algorithm 1): the union of their log lists is read,
    /// each page once, and its entries handed to the leaves naming it. Else leaf by leaf.
    /// Then the clean policy for each. The union is read in groups of leaves whose pages
    /// fit half the buffer pool (memory stays bounded), so with a pool smaller than twice
    /// the union a page shared by two groups is read once per group.
    pub(crate) fn read_leaves(&mut self, spans: &[LeafSpan]) -> Result<Vec<Node>> {
        self.run_deferred_cleans()?;
        let mut nodes = Vec::with_capacity(spans.len());
        if !self.o.batched_scans {
            for s in spans {
                nodes.push(self.rebuild(s.id)?);
            }
        } else {
            for (group, pages) in self.groups(spans) {
                // One batched read of the group's pages not in the pool.
                self.prefetch(&pages)?;
                nodes.extend(self.read_group(&spans[group], &pages)?);
            }
        }
        for (s, n) in spans.iter().zip(&nodes) {
            self.counters.query_rebuilds.add(1);
            self.after_read(s.id, n)?;
        }
        self.counters.range_leaves.add(spans.len() as u64);
        Ok(nodes)
    }

    /// `spans` cut into groups of leaves whose pages fit half the pool: each group's span
    /// indices and the union of its lists, ascending.
    fn groups(&self, spans: &[LeafSpan]) -> Vec<(std::ops::Range<usize>, Vec<PageId>)> {
        let cap = (self.pager.pool_frames() as usize / 2).max(1);
        let mut groups = Vec::new();
        let mut i = 0;
        while i < spans.len() {
            let mut pages: BTreeSet<PageId> = BTreeSet::new();
            let mut j = i;
            while j < spans.len() {
                let list = self.ntt.list(spans[j].id);
                let new = list.iter().filter(|p| !pages.contains(p)).count();
                if j > i && pages.len() + new > cap {
                    break;
                }
                pages.extend(list.iter());
                j += 1;
            }
            groups.push((i..j, pages.into_iter().collect()));
            i = j;
        }
        groups
    }

    /// Algorithm 1 for one group: read the pages of `all` once each (the serial caller
    /// loaded those not in the pool in one batch first) and rebuild each leaf of `spans`
    /// from them.
    fn read_group(&self, spans: &[LeafSpan], all: &[PageId]) -> Result<Vec<Node>> {
        // page -> leaves of the group naming it
        let mut naming: HashMap<PageId, Vec<u64>> = HashMap::new();
        for s in spans {
            for p in self.ntt.list(s.id) {
                naming.entry(p).or_default().push(s.id);
            }
            self.counters
                .range_list_pages
                .add(self.ntt.list(s.id).len() as u64);
        }
        // (leaf, page) -> its units on that page
        let mut found: HashMap<(u64, PageId), Vec<Unit>> = HashMap::new();
        for &pid in all {
            let leaves = naming.remove(&pid).unwrap_or_default();
            let got = self
                .pager
                .read_shared(pid, |b| unit::collect_nodes(b, pid, &leaves))??;
            if let Some(leaf) = leaves.iter().find(|&&l| !got.iter().any(|g| g.0 == l)) {
                return Err(Error::corruption(
                    DATA_FILE,
                    Some(pid),
                    format!("page holds no log entry of leaf {leaf}, which the NTT lists"),
                ));
            }
            for (leaf, units) in got {
                found.insert((leaf, pid), units);
            }
        }
        self.counters.range_pages_read.add(all.len() as u64);
        let mut nodes = Vec::with_capacity(spans.len());
        for s in spans {
            let list = self.ntt.list(s.id);
            let mut units = Vec::new();
            for p in list {
                units.extend(found.get(&(s.id, p)).into_iter().flatten().copied());
            }
            units.extend_from_slice(self.logbuf.units(s.id));
            self.counters.leaf_rebuilds.add(1);
            self.counters.leaf_rebuild_pages.add(list.len() as u64);
            nodes.push(leaf_of(s.id, units, list.first())?);
        }
        Ok(nodes)
    }

    /// `Engine::scan`: the entries of the next batch of leaves from `cur.next` (a few for
    /// an open-ended scan, growing; [`SCAN_LEAVES`] for a bounded one).
    pub(crate) fn scan_leaves(
        &mut self,
        cur: &mut RangeCursor,
        out: &mut Vec<(u64, u64)>,
    ) -> Result<()> {
        let before = out.len();
        while out.len() == before {
            let Some((lo, hi)) = cur.remaining() else {
                return Ok(());
            };
            let n = cur.ramp(2, SCAN_LEAVES, 0) as usize;
            let mut spans = Vec::new();
            self.leaves_in(lo, hi, n, &mut spans)?;
            let nodes = self.read_leaves(&spans)?;
            for node in &nodes {
                out.extend(node.entries.iter().filter(|e| e.0 >= lo && e.0 <= hi));
            }
            cur.next = match spans.last().and_then(|s| s.hi) {
                Some(h) if h <= hi => Some(h),
                _ => None,
            };
        }
        Ok(())
    }

    /// `Engine::scan_many`: Algorithm 1 over every range at once (§4.3): the leaves of all
    /// ranges (a leaf shared by neighbouring ranges once), their pages read once.
    pub(crate) fn range_query(
        &mut self,
        ranges: &[(u64, u64)],
        out: &mut Vec<(u64, u64)>,
    ) -> Result<()> {
        let mut spans: Vec<LeafSpan> = Vec::new();
        for &(lo, hi) in ranges {
            self.leaves_in(lo, hi, usize::MAX, &mut spans)?;
        }
        let mut r = 0;
        for chunk in spans.chunks(QUERY_LEAVES) {
            let nodes = self.read_leaves(chunk)?;
            for node in &nodes {
                for &(k, v) in &node.entries {
                    while r < ranges.len() && ranges[r].1 < k {
                        r += 1;
                    }
                    if r == ranges.len() {
                        break;
                    }
                    if k >= ranges[r].0 {
                        out.push((k, v));
                    }
                }
            }
        }
        Ok(())
    }
}

fn no_meta(leaf: u64) -> Error {
    Error::corruption(DATA_FILE, None, format!("leaf {leaf} has no NTT entry"))
}
