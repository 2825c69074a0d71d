//! BFTL (`EngineKind::Bftl`): the B-tree layer of Wu, Kuo and Chang ("An efficient B-tree
//! layer for flash-memory storage systems", RTCSA 2003, ACM TECS 2007), as the d-IPL paper
//! describes and measures it (§2.1.1, §6.3, Table 6). It runs on any [`crate::io::Device`],
//! normally a simulated SSD ([`crate::sim::SimSsd`]) with any FTL.
//!
//! # Scheme
//! A B+-tree whose nodes are never written as pages. Every change of a node becomes an
//! **index unit** (an insert, delete or split record naming the node; [`unit`]) appended to
//! the **reservation buffer** in memory. When the buffer holds `reservation_units` units it
//! is **committed** (BFTL's commit policy, [`unit::pack`]): the units, grouped by node, are
//! packed into as few fresh pages as each node allows and written. The **node translation
//! table** ([`ntt::Ntt`]) maps each node to the pages holding its units, oldest first; a
//! node read gathers its units from those pages (and the buffer) and applies them in order.
//! When a node's list exceeds `c` pages after a commit the node is **compacted**: read,
//! and written alone into fresh pages (`pages_for(units)` of them) that replace its list.
//! A page is released when no list names it any more; as in BFTL, a page holding some live
//! and some dead units stays (no garbage collection of half-dead pages: the d-IPL paper's
//! §6.3 "low space utilization").
//!
//! Splits: the full node gets a `Truncate` unit (keys >= separator leave it), the new right
//! node is written at once into pages of its own like a compacted node (its `Reset` and
//! entries), and the parent gets an `Insert` of the separator; a root split creates a new
//! root in the buffer. Deletes are `Delete` units; underflow is allowed (as the d-IPL
//! B+-tree does) and nodes are never merged, but a leaf left empty is removed from its
//! parent (`Delete` of its separator, or `SetLink` + `Delete` for a leftmost child), an
//! internal node left childless likewise, and a root with one child gives way to it.
//! Leaves are not chained: a range scan descends again from the root at each leaf's
//! upper fence.
//!
//! # On-device format
//! Pages of index units: [`unit`] (page envelope, groups of 17-byte units per node). The
//! manifest's engine state holds `root`, `height`, `next_id`, `entries` and the NTT (every
//! node's page list) as of the checkpoint.
//!
//! # Invariants (checked by `check_integrity`)
//! 1. B+-tree order: keys strictly increase within a node and lie within the fences of its
//!    parent; levels decrease by one to 0 at every leaf; every node holds at most
//!    `(node_bytes - 32) / 16` entries; a non-root leaf holds at least one entry; an
//!    internal root holds at least one separator; every node is reachable exactly once;
//!    `entries` equals the entries of the leaves.
//! 2. NTT: lists belong to reachable nodes only, are non-empty and at most `c` long; each
//!    listed page is allocated, holds units of the node, and its count equals the lists
//!    that name it; a node's units begin with a `Reset`. Every reachable node has a list or
//!    units in the reservation buffer, and the buffer holds units of reachable nodes only.
//!
//! # Durability (docs/design.md, contract point 3)
//! Logical redo WAL with group commit on `flush` through the shared
//! [`crate::durable::Pager`]; the reservation buffer is not durable, the WAL is. A
//! checkpoint commits the reservation buffer, syncs the device and saves the NTT in the
//! manifest (chosen over rebuilding it by a scan: pages carry no sequence numbers, and the
//! NTT is small: at most `c` page ids per node). Pages are written once and never updated
//! in place; a page released after the checkpoint that still names it goes back to the
//! extent allocator's pending list (reused only after the next manifest), while a page both
//! allocated and released since the last checkpoint, which no durable state names, is
//! reused at once. So a crash never damages a page the checkpoint's NTT names, and recovery
//! is: the checkpoint's NTT, then the WAL replayed, then a checkpoint. Torn or flipped
//! pages fail the page envelope's checksum (`Error::Corruption` naming `data` and the page).
//!
//! # Memory
//! The buffer pool (a cache of unit pages; BFTL itself caches no nodes), the NTT (a page id
//! per list entry, at most `c` per node, plus a count per live page), the reservation buffer
//! (`reservation_units` units) and the page-id sets of pages allocated since the checkpoint.
//!
//! # Thread safety
//! Served to many threads by `kit::parallel::Parallel`. Point searches (`get`, `get_many`)
//! and range-scan batches hold the engine's lock shared and run beside each other: each
//! rebuilds the nodes on its path from their units, reading the pages its NTT lists name
//! through the Pager's shared path (`Pager::read_shared`: the buffer pool's latch
//! protocol, the device's reader handles) and the reservation buffer's units from memory.
//! They are safe because a read changes nothing of the tree: the NTT, the reservation
//! buffer, the root and the page sets are only read, and the only state a read moves, the
//! `node_reads` and `node_page_reads` counters, are relaxed atomics (exact: every read
//! adds its own). Unit pages are written straight to the device and never dirty in the
//! pool, so a shared miss never writes a page back. The serial `get`, `get_many` and
//! `scan` are the same code on `&mut`, so one thread reads exactly the pages it read
//! before. Writes (and the commits and compactions they trigger) hold the lock exclusive,
//! one at a time, and see no reader: no read meets a node half split or an NTT list half
//! replaced. A point write first descends to its leaf under the shared lock when readers
//! hold it ([`Shareable::prepare_write`], not counted as node reads), so the unit pages of
//! its path are in the pool when it runs. A scan batch descends again from the next key
//! each time, so it never resumes from a node a write in between changed. A flush takes
//! its WAL ticket under the lock and syncs outside it, so concurrent flushes share one
//! sync (group commit).

mod options;
pub use options::BftlOptions;
mod check;
mod tree;

use crate::durable::Manifest;
use crate::durable::Pager;
use crate::durable::{logged_engine_methods, pager_store_methods, Logged};
use crate::error::{Error, Result};
use crate::io::Storage;
use crate::io::{Extent, IoReq, PageId};
use crate::kind::EngineKind;
use crate::kit::api::{RangeCursor, SerialEngine, Shareable};
use crate::kit::ntt::unit::{self, Unit};
use crate::kit::ntt::Ntt;
pub(crate) use crate::kit::ntt::{Node, NONE};
use crate::settings::Settings;
use crate::stats::{counters, Stats};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};

/// Frames the pool needs at least: a node read holds one page at a time.
const MIN_FRAMES: usize = 4;

/// Entries of a node of `node_bytes` (the slotted-page fanout of 16-byte entries after a
/// 32-byte header, as the B+-tree baseline: 510 for 8 KiB, the d-IPL paper's leaf fanout).
pub fn capacity(node_bytes: u64) -> usize {
    (node_bytes.saturating_sub(32) / 16) as usize
}

/// Fill factor of bulk loading: the B+-tree's default (FD-tree paper, App. D: 0.7).
const BULK_FILL: f64 = 0.7;

/// The sizes in effect: node capacity, reservation buffer units, compaction threshold.
fn sizes(opts: &Settings, b: &BftlOptions) -> (usize, usize, usize) {
    let cap = capacity(b.node_bytes);
    let full = unit::pages_for(cap + 1, opts.page_size);
    let res = b.reservation_units.map_or(cap, |r| r as usize);
    let c = b.c.map_or(full + 3, |c| c as usize);
    (cap, res, c)
}

/// Check BFTL's sub-options for the page size.
pub fn validate(opts: &Settings, b: &BftlOptions) -> Result<()> {
    if !(96..=1 << 20).contains(&b.node_bytes) {
        return Err(Error::InvalidOptions(format!(
            "bftl node_bytes {} must be within 96..=1 MiB (4 entries at least)",
            b.node_bytes
        )));
    }
    let (cap, res, c) = sizes(opts, b);
    if res == 0 {
        return Err(Error::InvalidOptions(
            "bftl reservation_units must be at least 1".into(),
        ));
    }
    let full = unit::pages_for(cap + 1, opts.page_size);
    if c <= full {
        return Err(Error::InvalidOptions(format!(
            "bftl c = {c} must exceed the {full} pages of a full compacted node of {cap} \
             entries on {}-byte pages",
            opts.page_size
        )));
    }
    Ok(())
}

/// The reservation buffer: units per node, in arrival order for each node.
#[derive(Debug, Default)]
pub(crate) struct Reservation {
    units: BTreeMap<u64, Vec<Unit>>,
    len: usize,
    /// Units ever pushed.
    pushed: u64,
}

impl Reservation {
    /// Record `u` for node `id` and apply it to the caller's copy of the node.
    pub fn push(&mut self, id: u64, node: &mut Node, u: Unit) {
        node.apply(u);
        self.units.entry(id).or_default().push(u);
        self.len += 1;
        self.pushed += 1;
    }

    pub fn get(&self, id: u64) -> &[Unit] {
        self.units.get(&id).map_or(&[], |v| v.as_slice())
    }

    /// Drop a node's units (the node was written whole, or removed).
    pub fn remove(&mut self, id: u64) {
        if let Some(v) = self.units.remove(&id) {
            self.len -= v.len();
        }
    }

    pub fn take(&mut self) -> Vec<(u64, Vec<Unit>)> {
        self.len = 0;
        std::mem::take(&mut self.units).into_iter().collect()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn nodes(&self) -> impl Iterator<Item = (u64, usize)> + '_ {
        self.units.iter().map(|(&n, v)| (n, v.len()))
    }
}

#[derive(Debug, Default, Clone)]
pub(crate) struct Counters {
    commits: u64,
    commit_pages: u64,
    compactions: u64,
    compaction_pages: u64,
    node_splits: u64,
    split_pages: u64,
    nodes_removed: u64,
    pages_released: u64,
}

/// The counters a node read moves: atomic, since reads on the shared path run beside each
/// other (module doc, Thread safety).
#[derive(Debug, Default)]
pub(crate) struct ReadCounters {
    node_reads: AtomicU64,
    node_page_reads: AtomicU64,
}

impl ReadCounters {
    fn get(&self) -> (u64, u64) {
        (
            self.node_reads.load(Ordering::Relaxed),
            self.node_page_reads.load(Ordering::Relaxed),
        )
    }

    fn set(&self, (nodes, pages): (u64, u64)) {
        self.node_reads.store(nodes, Ordering::Relaxed);
        self.node_page_reads.store(pages, Ordering::Relaxed);
    }
}

/// The engine state saved in the manifest.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct State {
    root: u64,
    height: u32,
    next_id: u64,
    entries: u64,
    /// (node, its pages oldest first).
    ntt: Vec<(u64, Vec<PageId>)>,
}

/// The BFTL engine. See the module documentation.
pub struct Bftl {
    pager: Pager,
    ntt: Ntt,
    res: Reservation,
    root: u64,
    height: u32,
    next_id: u64,
    entries: u64,
    cap: usize,
    reservation: usize,
    c: usize,
    /// Pages allocated since the last checkpoint: no durable state names them.
    fresh: HashSet<PageId>,
    /// Fresh pages released again, reused first (lowest first).
    recycled: BTreeSet<PageId>,
    counters: Counters,
    reads: ReadCounters,
}

impl Bftl {
    /// Memory besides the pool, charged to the budget (`Logged::charge_memory`): the node
    /// translation table, the reservation buffer and the page-recycling sets.
    fn structure_bytes(&self) -> u64 {
        self.ntt.memory_bytes()
            + 24 * self.res.len() as u64
            + 16 * (self.fresh.capacity() + self.recycled.len()) as u64
    }

    /// A new index: an empty root leaf, committed by the first checkpoint.
    pub fn create(storage: Storage, s: Settings, o: BftlOptions) -> Result<Bftl> {
        validate(&s, &o)?;
        let (cap, reservation, c) = sizes(&s, &o);
        let config = s.pager_config(MIN_FRAMES, 0);
        let pager = Pager::create(storage.device, storage.vfs, config, s.record)?;
        let mut t = Bftl::with(pager, Ntt::default(), cap, reservation, c);
        t.root = 1;
        t.next_id = 2;
        t.res.push(
            1,
            &mut Node::default(),
            Unit::Reset {
                level: 0,
                link: NONE,
            },
        );
        t.checkpoint()?;
        Ok(t)
    }

    /// Reopen: the checkpoint's NTT, then the WAL replayed and a checkpoint taken.
    pub fn open(storage: Storage, manifest: Manifest, s: Settings, o: BftlOptions) -> Result<Bftl> {
        let state: State = manifest.engine_state("BFTL")?;
        if !crate::kit::api::plausible_height(state.height) || state.next_id <= state.root {
            return Err(Error::corruption(
                "MANIFEST",
                None,
                format!(
                    "BFTL state: height {}, root {}, next id {}",
                    state.height, state.root, state.next_id
                ),
            ));
        }
        let (cap, reservation, c) = sizes(&s, &o);
        let config = s.pager_config(MIN_FRAMES, 0);
        let (pager, ops) = Pager::open(storage.device, storage.vfs, &manifest, config)?;
        let high = pager.allocator().high_water();
        let mut t = Bftl::with(
            pager,
            Ntt::from_lists(state.ntt, state.next_id, high, "MANIFEST")?,
            cap,
            reservation,
            c,
        );
        t.root = state.root;
        t.height = state.height;
        t.next_id = state.next_id;
        t.entries = state.entries;
        t.recover(&ops)?;
        Ok(t)
    }

    fn with(pager: Pager, ntt: Ntt, cap: usize, reservation: usize, c: usize) -> Bftl {
        Bftl {
            pager,
            ntt,
            res: Reservation::default(),
            root: 0,
            height: 1,
            next_id: 1,
            entries: 0,
            cap,
            reservation,
            c,
            fresh: HashSet::new(),
            recycled: BTreeSet::new(),
            counters: Counters::default(),
            reads: ReadCounters::default(),
        }
    }

    fn state(&self) -> serde_json::Value {
        serde_json::json!(State {
            root: self.root,
            height: self.height,
            next_id: self.next_id,
            entries: self.entries,
            ntt: self.ntt.sorted(),
        })
    }

    fn new_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// A page to write: a recycled fresh page, else a new one from the allocator.
    fn alloc_page(&mut self) -> Result<PageId> {
        if let Some(p) = self.recycled.pop_first() {
            return Ok(p);
        }
        let p = self.pager.alloc_extent(1)?.start;
        self.fresh.insert(p);
        Ok(p)
    }

    /// A page no list names any more (module doc, Durability).
    fn release_page(&mut self, p: PageId) {
        self.counters.pages_released += 1;
        if self.fresh.contains(&p) {
            self.pager.discard(p);
            self.recycled.insert(p);
        } else {
            self.pager.free_extent(Extent { start: p, len: 1 });
        }
    }

    /// Write sealed pages in one batch; returns their ids.
    fn write_pages(&mut self, pages: Vec<unit::PageBuilder>) -> Result<Vec<PageId>> {
        let pids: Vec<PageId> = pages
            .iter()
            .map(|_| self.alloc_page())
            .collect::<Result<_>>()?;
        let bufs: Vec<Vec<u8>> = pages
            .into_iter()
            .zip(&pids)
            .map(|(p, &pid)| p.finish(pid))
            .collect();
        let mut reqs: Vec<IoReq<'_>> = bufs
            .iter()
            .zip(&pids)
            .map(|(b, &page)| IoReq::Write { page, buf: b })
            .collect();
        self.pager.device().submit(&mut reqs)?;
        Ok(pids)
    }

    /// Write node `id` alone into fresh pages that become its whole list (compaction, a
    /// node born by a split or a bulk load); returns the pages written.
    fn write_node(&mut self, id: u64, node: &Node) -> Result<u64> {
        let ps = self.pager.page_size();
        let per = unit::units_per_page(ps);
        let units = node.units();
        let pages: Vec<unit::PageBuilder> = units
            .chunks(per)
            .map(|ch| {
                let mut p = unit::PageBuilder::new(ps);
                p.add(id, ch);
                p
            })
            .collect();
        let pids = self.write_pages(pages)?;
        let n = pids.len() as u64;
        for p in self.ntt.replace(id, pids)? {
            self.release_page(p);
        }
        self.res.remove(id);
        Ok(n)
    }

    /// Forget a removed node: its list and buffered units.
    fn release_node(&mut self, id: u64) {
        for p in self.ntt.remove(id) {
            self.release_page(p);
        }
        self.res.remove(id);
        self.counters.nodes_removed += 1;
    }

    /// BFTL's commit: pack the reservation buffer into pages ([`unit::pack`]), write them,
    /// append them to the NTT lists, then compact every node whose list exceeds `c`.
    fn commit(&mut self) -> Result<()> {
        if self.res.len() == 0 {
            return Ok(());
        }
        let packing = unit::pack(self.res.take(), self.pager.page_size());
        let pids = self.write_pages(packing.pages)?;
        for (node, at) in &packing.chunks {
            for &i in at {
                self.ntt.append(*node, pids[i])?;
            }
        }
        self.counters.commits += 1;
        self.counters.commit_pages += pids.len() as u64;
        for (node, _) in packing.chunks {
            if self.ntt.list(node).len() > self.c {
                let n = self.load(node)?;
                self.counters.compaction_pages += self.write_node(node, &n)?;
                self.counters.compactions += 1;
            }
        }
        Ok(())
    }

    /// Commit when the reservation buffer is full.
    fn after_change(&mut self) -> Result<()> {
        if self.res.len() >= self.reservation {
            self.commit()?;
        }
        Ok(())
    }

    /// A node: its units from the pages of its NTT list, then from the buffer.
    pub(crate) fn load(&self, id: u64) -> Result<Node> {
        self.load_as(id, true)
    }

    /// [`Bftl::load`], moving the read counters only if `count` (a write's warm-up,
    /// [`Shareable::prepare_write`], is not a node read of any operation).
    pub(crate) fn load_as(&self, id: u64, count: bool) -> Result<Node> {
        let list = self.ntt.list(id);
        let mut units = Vec::new();
        for pid in list {
            let n = self
                .pager
                .read_shared(pid, |b| unit::collect(b, pid, id, &mut units))??;
            if n == 0 {
                return Err(Error::corruption(
                    crate::page::DATA_FILE,
                    Some(pid),
                    format!("page holds no index unit of node {id}, which the NTT lists"),
                ));
            }
        }
        units.extend_from_slice(self.res.get(id));
        if count {
            self.reads.node_reads.fetch_add(1, Ordering::Relaxed);
            self.reads
                .node_page_reads
                .fetch_add(list.len() as u64, Ordering::Relaxed);
        }
        match units.first() {
            Some(Unit::Reset { .. }) => {}
            _ => {
                return Err(Error::corruption(
                    crate::page::DATA_FILE,
                    list.first(),
                    format!("node {id} has no Reset unit first ({} units)", units.len()),
                ))
            }
        }
        let mut node = Node::default();
        for u in units {
            node.apply(u);
        }
        Ok(node)
    }

    fn memory_bytes(&self) -> u64 {
        self.pager.memory_bytes() + self.structure_bytes()
    }
}

impl Logged for Bftl {
    pager_store_methods!();

    fn engine_state(&self) -> serde_json::Value {
        self.state()
    }

    /// Commit the reservation buffer and give recycled pages back to the allocator.
    fn before_checkpoint(&mut self) -> Result<()> {
        self.commit()?;
        for p in std::mem::take(&mut self.recycled) {
            self.pager.free_extent(Extent { start: p, len: 1 });
        }
        Ok(())
    }

    fn after_checkpoint(&mut self) -> Result<()> {
        self.fresh.clear();
        Ok(())
    }

    fn insert_unlogged(&mut self, key: u64, value: u64) -> Result<()> {
        Bftl::insert_unlogged(self, key, value)
    }

    fn delete_unlogged(&mut self, key: u64) -> Result<()> {
        Bftl::delete_unlogged(self, key).map(|_| ())
    }

    fn delete_range_unlogged(&mut self, lo: u64, hi: u64) -> Result<()> {
        Bftl::delete_range_unlogged(self, lo, hi)
    }

    fn holds_nothing(&self) -> bool {
        self.entries == 0
    }

    fn load_empty(&mut self, sorted: &[(u64, u64)]) -> Result<()> {
        self.bulk_load(sorted)
    }
}

/// Searches and scans run beside each other (module doc, Thread safety).
impl Shareable for Bftl {
    const PARALLEL_GETS: bool = true;
    const PARALLEL_SCANS: bool = true;

    fn get_shared(&self, key: u64) -> Result<Option<u64>> {
        let path = self.descend(key)?;
        Ok(path
            .last()
            .and_then(|s| s.node.search(key).ok().map(|i| s.node.entries[i].1)))
    }

    fn get_many_shared(&self, keys: &[u64]) -> Result<Vec<Option<u64>>> {
        self.get_many_sorted(keys)
    }

    /// An insert or delete reads the nodes on the key's path (and changes its leaf, and on
    /// a split or removal its parents): loading them brings their unit pages into the pool.
    fn prepare_write(&self, key: u64) {
        let _ = self.descend_as(key, false);
    }

    fn scan_shared(&self, cur: &mut RangeCursor, out: &mut Vec<(u64, u64)>) -> Result<()> {
        self.scan_leaves(cur, out)
    }
}

impl Bftl {
    /// `get_many`: the keys sorted, looked up in one pass ([`Bftl::get_sorted`]), the
    /// answers put back in the callers' order.
    fn get_many_sorted(&self, keys: &[u64]) -> Result<Vec<Option<u64>>> {
        let mut order: Vec<usize> = (0..keys.len()).collect();
        order.sort_by_key(|&i| keys[i]);
        let sorted: Vec<u64> = order.iter().map(|&i| keys[i]).collect();
        let found = self.get_sorted(&sorted)?;
        let mut out = vec![None; keys.len()];
        for (&i, v) in order.iter().zip(found) {
            out[i] = v;
        }
        Ok(out)
    }
}

impl SerialEngine for Bftl {
    logged_engine_methods!();

    fn get(&mut self, key: u64) -> Result<Option<u64>> {
        self.get_shared(key)
    }

    fn get_many(&mut self, keys: &[u64]) -> Result<Vec<Option<u64>>> {
        self.get_many_sorted(keys)
    }

    fn scan(&mut self, cur: &mut RangeCursor, out: &mut Vec<(u64, u64)>) -> Result<()> {
        self.scan_leaves(cur, out)
    }

    fn stats(&self) -> Stats {
        let c = &self.counters;
        let (node_reads, node_page_reads) = self.reads.get();
        let engine_counters = counters(&[
            ("entries", self.entries),
            ("height", self.height as u64),
            ("nodes", self.ntt.nodes() as u64),
            ("node_reads", node_reads),
            ("node_page_reads", node_page_reads),
            ("units", self.res.pushed),
            ("reservation_units", self.res.len() as u64),
            ("commits", c.commits),
            ("commit_pages", c.commit_pages),
            ("compactions", c.compactions),
            ("compaction_pages", c.compaction_pages),
            ("node_splits", c.node_splits),
            ("split_pages", c.split_pages),
            ("nodes_removed", c.nodes_removed),
            ("pages_released", c.pages_released),
            ("live_pages", self.ntt.pages() as u64),
            ("ntt_entries", self.ntt.entries() as u64),
            ("pages_high_water", self.pager.allocator().high_water()),
            ("c", self.c as u64),
        ]);
        self.pager
            .stats(EngineKind::Bftl, engine_counters, self.memory_bytes())
    }

    fn check_integrity(&mut self) -> Result<()> {
        let saved = (self.counters.clone(), self.reads.get());
        let r = self.check();
        self.counters = saved.0;
        self.reads.set(saved.1);
        r
    }
}

#[cfg(test)]
mod tests;
