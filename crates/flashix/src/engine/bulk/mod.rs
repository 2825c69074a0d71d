//! The bulk index (`EngineKind::BulkIndex`; Lehtonen, "Bulk Indexing on Flash Devices",
//! 2014, §5): the one structure in flashix built for batched ingest and range deletion.
//!
//! # Structure (§5.1)
//! - **Main file**: non-overlapping sorted **ranges** of tuples, each stored as contiguous
//!   checksummed pages ([`range`]), written once into fresh space (appended) and never
//!   changed in place. Every range holds **M..2M−1** tuples; the one exception is an index
//!   of fewer than M tuples, which is a single smaller range.
//! - **Range index** ([`index`]): `k1 → (k2, first page, pages, count)` in memory, with
//!   floor/ceiling search; charged to the memory budget (64 bytes per range) and saved
//!   at each checkpoint as pages of its own extent, which the manifest names.
//! - **Differential layer** (§5.6 "differential indexing", §3.3 "deferred bulks"): single
//!   upserts and deletes wait in an in-memory ordered map of at most `delta_bytes` (40
//!   bytes per entry), newer than the ranges, and are merged into them by one Alg. 5 sweep
//!   when the layer is full and at every checkpoint. With `delta_bytes = Some(0)` (the faithful
//!   mode) every single insert is a bulk of one and every delete a range delete of one key.
//!
//! # Operations
//! - Search (§5.2, Alg. 4, [`search`]): the differential layer, then one read of the range
//!   whose [k1, k2] holds the key. Scans read whole ranges, several per request.
//! - Bulk insertion (§5.3, Alg. 5) and the differential merge ([`sweep`]): sort (done by
//!   `Db`), route each key to the range of its update interval (Definition 5.1), read each
//!   affected range once, merge, and write M-sized ranges while 2M or more remain, then the
//!   rest. Bulk update (Alg. 6) is the case where no key is new: no range splits, and the
//!   ranges are written out of place (the thesis's append variant), never in place.
//! - Range deletion (§5.4, Alg. 7): ranges inside [L, H] leave the range index with no
//!   main-file I/O; the two boundary ranges are read, trimmed and merged, with a neighbour
//!   when fewer than M remain. Main-file work is at most three range reads and three range
//!   writes whatever the number of keys deleted (Theorem 5.4, with the neighbour read the
//!   theorem omits: notes §1.11, erratum 4).
//! - §5.6 optimisations, each a switch of [`BulkOptions`]: batched range writes
//!   (`io_unit`-sized writes, no range split across two), batched range reads (read-ahead
//!   of a sweep's affected ranges, contiguous ones in one request, the rest in one psync
//!   batch), and batching ranges (consecutive affected ranges cut together).
//!
//! # Invariants (checked by `check_integrity`)
//! 1. Every range holds M..2M−1 tuples, or the index is one range of fewer than M.
//! 2. Ranges are ordered and disjoint: k2 of a range < k1 of the next.
//! 3. A range's stored first and last keys are its k1 and k2, its pages hold exactly
//!    `count` tuples in strictly increasing key order, and every page header agrees with
//!    the range index (position, pages, count).
//! 4. No page belongs to two ranges or to a range and the saved range index, and no live
//!    page is free in the extent allocator.
//! 5. The differential layer holds at most its capacity.
//!
//! # Durability
//! The shared [`crate::durable::Pager`] and log cycle: every operation (insert, delete,
//! bulk insert, range delete) is logged as a logical redo record before it is applied, and
//! `flush` syncs the log. New ranges go only into fresh extents; freed ranges return to
//! the extent allocator only after the checkpoint that stops naming them (shadow paging),
//! and are then trimmed (`trim_freed`). A checkpoint merges the differential layer, writes
//! the range index into a fresh extent, syncs the device and switches the manifest, so a
//! crash finds the old checkpoint's range index and ranges intact and replays the log over
//! them. With `append_only` nothing is ever freed (the thesis's experiments, §6.1).
//!
//! # Memory
//! The buffer pool (range pages of point searches), the range index (64 bytes per range),
//! the differential layer (at most `delta_bytes`); during a sweep, one read-ahead of at most
//! `io_unit` pages, one write batch of at most `io_unit` pages (or one range), and the carry
//! (below 2M tuples plus the keys routed to one range).
//!
//! # Counters (`Stats::engine_counters`)
//! `m`, `ranges`, `ranges_of_size_m`, `entries`, `range_index_bytes`, `delta_entries`,
//! `delta_capacity`, `delta_merges`, `bulk_sweeps`, `ranges_affected` (total),
//! `last_ranges_affected`, `ranges_read`, `range_read_requests`, `ranges_written`,
//! `range_write_requests`, `range_pages_written`, `neighbour_merges`, `ranges_dropped`
//! (inner ranges of range deletes), `point_reads`, `scan_ranges_read`, `live_pages`,
//! `allocated_pages`, `free_pages`, `garbage_pages` (append-only space no longer live).
//!
//! # Thread safety
//! Served to many threads by `kit::parallel::Parallel`. Reads (`get`, `get_many`, range
//! scans) hold the engine's lock shared and run beside each other; everything else (the
//! writes, `check_integrity`) holds it exclusive, one at a time. A read changes nothing but
//! its counters (`point_reads`, `scan_ranges_read`: relaxed atomics, so `stats` stays
//! exact) and the buffer pool: it reads the differential layer and the range index in
//! memory, a search's range pages through the Pager's shared path (`Pager::read_shared`:
//! the pool's latch protocol, the device's reader handles), and the ranges of a batched
//! lookup or a scan past the pool (`Pager::read_run_shared`). That is safe because range
//! pages are never changed in place nor dirty in the pool: new ranges go into fresh
//! extents written by the writer alone, and a freed extent is reused (and its pages
//! dropped from the pool) only after a checkpoint, under the exclusive lock; a read under
//! the shared lock sees the range index and the differential layer of one moment between
//! two writes.
//!
//! The shared reads have no psync batch: a search's binary search over a range loads the
//! pages it visits one at a time (the serial `SerialEngine::get` through `&mut` loads the
//! whole range in one request first), and the runs of contiguous ranges that a batched
//! lookup or a scan batch reads, which the serial path submits as one psync batch, are read
//! one after the other. The pages read are the same, or fewer. A flush takes its WAL ticket
//! under the lock and syncs outside it, so concurrent flushes share one sync (group
//! commit); a range scan's batches interleave with other threads' operations
//! (`crate::Db`'s guarantees).

mod check;
mod index;
mod options;
mod range;
mod search;
mod sweep;
#[cfg(test)]
mod tests;

pub use options::BulkOptions;

use crate::durable::{logged_engine_methods, pager_store_methods, Logged, Manifest, Pager};
use crate::error::{Error, Result};
use crate::io::{Extent, Storage};
use crate::kind::EngineKind;
use crate::kit::api::{RangeCursor, SerialEngine, Shareable};
use crate::settings::Settings;
use crate::stats::{counters, Stats};
use index::RangeIndex;
use range::RangeEntry;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use sweep::{Op, SweepReport};

/// Frames the engine needs at least (point searches read one range through the pool; a
/// larger range is read past it).
const MIN_FRAMES: usize = 4;

/// Memory charged per differential entry (key, value or tombstone, map overhead).
pub const DELTA_ENTRY_MEMORY: u64 = 40;

/// Durable roots, saved in the manifest.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct State {
    /// The range index's extent (`None`: no ranges).
    index: Option<Extent>,
    /// Ranges in it.
    ranges: u64,
    /// Pages no longer live that an append-only index never frees.
    #[serde(default)]
    garbage_pages: u64,
}

/// Sizes and switches derived from the options.
#[derive(Debug, Clone, Copy)]
struct Params {
    m: usize,
    io_unit: u64,
    batch_writes: bool,
    batch_reads: bool,
    batch_ranges: bool,
    append_only: bool,
    trim_freed: bool,
    /// Entries the differential layer holds (0: faithful mode).
    delta_cap: usize,
}

/// A counter that shared reads bump (relaxed: only its total is read, by `stats`).
#[derive(Debug, Default)]
struct Count(AtomicU64);

impl Count {
    fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

impl Clone for Count {
    fn clone(&self) -> Count {
        Count(AtomicU64::new(self.get()))
    }
}

#[derive(Debug, Default, Clone)]
struct Counters {
    delta_merges: u64,
    bulk_sweeps: u64,
    ranges_affected: u64,
    last_ranges_affected: u64,
    ranges_read: u64,
    range_read_requests: u64,
    ranges_written: u64,
    range_write_requests: u64,
    range_pages_written: u64,
    neighbour_merges: u64,
    ranges_dropped: u64,
    point_reads: Count,
    scan_ranges_read: Count,
}

impl Counters {
    fn add(&mut self, r: &SweepReport) {
        self.ranges_read += r.ranges_read;
        self.range_read_requests += r.read_requests;
        self.ranges_written += r.ranges_written;
        self.range_write_requests += r.write_requests;
        self.range_pages_written += r.pages_written;
        self.neighbour_merges += r.neighbour_merges;
        self.ranges_dropped += r.ranges_dropped;
    }
}

/// Check bulk index options against the page size and budget (dispatched by
/// `engine::validate`).
pub fn validate(s: &Settings, o: &BulkOptions) -> Result<()> {
    let ps = s.page_size as u64;
    if o.m == Some(0) {
        return Err(Error::InvalidOptions("bulk m must be at least 1".into()));
    }
    if o.m.is_some_and(|m| m > 1 << 24) {
        return Err(Error::InvalidOptions(format!(
            "bulk m {} is above 2^24 tuples",
            o.m.unwrap_or(0)
        )));
    }
    if o.io_unit_bytes < ps || o.io_unit_bytes % ps != 0 || o.io_unit_bytes > 64 << 20 {
        return Err(Error::InvalidOptions(format!(
            "bulk io_unit_bytes {} must be a whole number of {ps}-byte pages, at most 64 MiB",
            o.io_unit_bytes
        )));
    }
    let pool_min = MIN_FRAMES as u64 * ps;
    let delta = o.delta_bytes.unwrap_or(0);
    if delta.saturating_add(pool_min) > s.buffer_pool_bytes {
        return Err(Error::InvalidOptions(format!(
            "bulk delta_bytes {delta} leaves less than {MIN_FRAMES} pages of the {}-byte \
             memory budget for the buffer pool",
            s.buffer_pool_bytes
        )));
    }
    Ok(())
}

/// The differential layer's default: a quarter of the budget, at most 256 KiB.
const DEFAULT_DELTA_BYTES: u64 = 256 << 10;

/// `o` with `delta_bytes` and `m` decided: `delta_bytes` the given one, else a quarter of
/// the budget, at most 256 KiB; `m` the given one, else the cost model's choice
/// ([`crate::cost::bulk::choose_m`], thesis §5.5) for the tuning, with half of the budget
/// left after the differential layer for the range index (the largest M it considers
/// when no M keeps the expected range index within that).
pub(crate) fn resolve(s: &Settings, mut o: BulkOptions) -> Result<BulkOptions> {
    if o.delta_bytes.is_none() {
        o.delta_bytes = Some((s.buffer_pool_bytes / 4).min(DEFAULT_DELTA_BYTES));
    }
    if o.m.is_none() {
        let left = s
            .buffer_pool_bytes
            .saturating_sub(o.delta_bytes.unwrap_or(0));
        let input = crate::cost::bulk::BulkModelInput {
            page_size: s.page_size,
            tuple_bytes: 16,
            tuples_per_page: range::per_page(s.page_size) as u64,
            range_entry_bytes: index::ENTRY_MEMORY,
            range_index_budget_bytes: left / 2,
        };
        // A budget too small for the expected entries' range index at any M: the largest
        // M the model considers (the smallest index); the memory used is reported.
        let largest = input.tuples_per_page * crate::cost::bulk::MAX_PAGES;
        o.m = Some(match crate::cost::bulk::choose_m(&s.tuning, &input) {
            Ok(c) => c.m,
            Err(_) => u32::try_from(largest).unwrap_or(u32::MAX),
        });
    }
    Ok(o)
}

fn params(s: &Settings, o: &BulkOptions) -> Result<Params> {
    let m =
        o.m.ok_or_else(|| Error::corruption("MANIFEST", None, "bulk index options without m"))?;
    Ok(Params {
        m: m as usize,
        io_unit: o.io_unit_bytes / s.page_size as u64,
        batch_writes: o.batch_writes,
        batch_reads: o.batch_reads,
        batch_ranges: o.batch_ranges,
        append_only: o.append_only,
        trim_freed: o.trim_freed,
        delta_cap: (o.delta_bytes.unwrap_or(0) / DELTA_ENTRY_MEMORY) as usize,
    })
}

/// Bytes of the budget kept for the range index (the tuning's expected entries over M,
/// 64 bytes a range) and the differential layer; the pool gets the rest, at least its
/// minimum.
fn reserved(s: &Settings, o: &BulkOptions, p: &Params) -> u64 {
    let ranges = s.tuning.expected_entries / p.m.max(1) as u64;
    let want = o
        .delta_bytes
        .unwrap_or(0)
        .saturating_add(ranges.saturating_mul(index::ENTRY_MEMORY));
    want.min(
        s.buffer_pool_bytes
            .saturating_sub(MIN_FRAMES as u64 * s.page_size as u64),
    )
}

/// The bulk index engine.
pub struct BulkIndex {
    pager: Pager,
    p: Params,
    index: RangeIndex,
    /// Where the last checkpoint saved the range index.
    index_extent: Option<Extent>,
    /// The range index changed since the last checkpoint.
    index_dirty: bool,
    /// The differential layer: key → value, or `None` for a delete.
    delta: BTreeMap<u64, Option<u64>>,
    /// Extents freed since the last checkpoint (trimmed after it).
    freed: Vec<Extent>,
    /// Extents to trim before the next allocation.
    to_trim: Vec<Extent>,
    garbage_pages: u64,
    counters: Counters,
}

/// The state of a bulk index's ranges at one moment, to rewind to with `BulkIndex::restore`
/// (`crate::experiment::SerialBulkIndex::restore`; the thesis's "each on the same initial
/// state", §6.3).
#[derive(Debug, Clone)]
pub struct BulkSnapshot {
    index: RangeIndex,
}

impl BulkIndex {
    /// Memory besides the pool, charged to the budget (`Logged::charge_memory`): the range
    /// index and the delta.
    fn structure_bytes(&self) -> u64 {
        self.index.memory_bytes() + self.delta.len() as u64 * DELTA_ENTRY_MEMORY
    }

    /// A new, empty bulk index. `o` is resolved (`m` decided) and `s.record` holds it.
    pub fn create(storage: Storage, s: Settings, o: BulkOptions) -> Result<BulkIndex> {
        validate(&s, &o)?;
        let p = params(&s, &o)?;
        let config = s.pager_config(MIN_FRAMES, reserved(&s, &o, &p));
        let pager = Pager::create(storage.device, storage.vfs, config, s.record)?;
        let mut b = BulkIndex::new(pager, p, RangeIndex::default(), None, 0);
        b.index_dirty = true;
        b.checkpoint()?;
        Ok(b)
    }

    /// Reopen: load the range index of the last checkpoint and replay the log.
    pub fn open(
        storage: Storage,
        manifest: Manifest,
        s: Settings,
        o: BulkOptions,
    ) -> Result<BulkIndex> {
        let state: State = manifest.engine_state("bulk")?;
        let p = params(&s, &o)?;
        let config = s.pager_config(MIN_FRAMES, reserved(&s, &o, &p));
        let (mut pager, ops) = Pager::open(storage.device, storage.vfs, &manifest, config)?;
        let index = RangeIndex::load(&mut pager, state.index, state.ranges)?;
        let mut b = BulkIndex::new(pager, p, index, state.index, state.garbage_pages);
        b.recover(&ops)?;
        Ok(b)
    }

    fn new(
        pager: Pager,
        p: Params,
        index: RangeIndex,
        index_extent: Option<Extent>,
        garbage_pages: u64,
    ) -> BulkIndex {
        BulkIndex {
            pager,
            p,
            index,
            index_extent,
            index_dirty: false,
            delta: BTreeMap::new(),
            freed: Vec::new(),
            to_trim: Vec::new(),
            garbage_pages,
            counters: Counters::default(),
        }
    }

    /// The ranges as they are now (the delta must be empty: [`BulkIndex::restore`] rewinds
    /// ranges only).
    pub fn snapshot(&mut self) -> Result<BulkSnapshot> {
        self.merge_delta()?;
        Ok(BulkSnapshot {
            index: self.index.clone(),
        })
    }

    /// Rewind the ranges to `snap` and make that state durable with a checkpoint. Only an
    /// `append_only` index can rewind: its old range pages are never overwritten.
    pub fn restore(&mut self, snap: &BulkSnapshot) -> Result<()> {
        if !self.p.append_only {
            return Err(Error::InvalidArgument(
                "only an append_only bulk index can be rewound to a snapshot".into(),
            ));
        }
        self.merge_delta()?;
        self.index = snap.index.clone();
        self.index_dirty = true;
        self.checkpoint()
    }

    fn state(&self) -> State {
        State {
            index: self.index_extent,
            ranges: self.index.len() as u64,
            garbage_pages: self.garbage_pages,
        }
    }

    /// Give a range's pages back: to the allocator (reused after the next checkpoint), or
    /// to the garbage of an append-only main file.
    fn free_range(&mut self, e: RangeEntry) {
        self.index_dirty = true;
        if self.p.append_only {
            self.garbage_pages += u64::from(e.pages);
            return;
        }
        self.pager.free_extent(e.extent());
        self.freed.push(e.extent());
    }

    /// Trim space that became reusable at the last checkpoint, before anything reuses it.
    fn trim_freed(&mut self) -> Result<()> {
        for e in std::mem::take(&mut self.to_trim) {
            self.pager.device().trim(e.start, e.len)?;
        }
        Ok(())
    }

    fn note(&mut self, r: &SweepReport) {
        self.counters.add(r);
        self.counters.ranges_affected += r.ranges_read;
        self.counters.last_ranges_affected = r.ranges_read;
        self.index_dirty = true;
    }

    /// One Alg. 5 sweep of `ops` (sorted, distinct).
    fn sweep(&mut self, ops: &[(u64, Op)]) -> Result<()> {
        self.trim_freed()?;
        let r = self.sweep_ops(ops)?;
        self.counters.bulk_sweeps += 1;
        self.note(&r);
        Ok(())
    }

    /// Merge the differential layer into the ranges (one sweep).
    fn merge_delta(&mut self) -> Result<()> {
        if self.delta.is_empty() {
            return Ok(());
        }
        let ops: Vec<(u64, Op)> = std::mem::take(&mut self.delta)
            .into_iter()
            .map(|(k, v)| (k, v.map_or(Op::Del, Op::Put)))
            .collect();
        self.counters.delta_merges += 1;
        self.sweep(&ops)
    }

    /// Record a single change: into the differential layer (merged when full), or in the
    /// faithful mode as a bulk of one.
    fn single(&mut self, key: u64, op: Op) -> Result<()> {
        if self.p.delta_cap == 0 {
            return match op {
                Op::Put(_) => self.sweep(&[(key, op)]),
                Op::Del => self.delete_range_unlogged(key, key),
            };
        }
        self.delta.insert(
            key,
            match op {
                Op::Put(v) => Some(v),
                Op::Del => None,
            },
        );
        if self.delta.len() >= self.p.delta_cap {
            self.merge_delta()?;
        }
        Ok(())
    }

    fn bulk_unlogged(&mut self, sorted: &[(u64, u64)]) -> Result<()> {
        if self.p.delta_cap > 0 && self.delta.len() + sorted.len() < self.p.delta_cap {
            for &(k, v) in sorted {
                self.delta.insert(k, Some(v));
            }
            return Ok(());
        }
        // One sweep of the differential layer and the bulk (the bulk is newer).
        let mut ops: Vec<(u64, Op)> = Vec::with_capacity(self.delta.len() + sorted.len());
        let delta = std::mem::take(&mut self.delta);
        if !delta.is_empty() {
            self.counters.delta_merges += 1;
        }
        let mut d = delta.into_iter().peekable();
        for &(k, v) in sorted {
            while let Some((dk, dv)) = d.next_if(|&(dk, _)| dk <= k) {
                if dk < k {
                    ops.push((dk, dv.map_or(Op::Del, Op::Put)));
                }
            }
            ops.push((k, Op::Put(v)));
        }
        ops.extend(d.map(|(k, v)| (k, v.map_or(Op::Del, Op::Put))));
        self.sweep(&ops)
    }

    fn delete_range_unlogged(&mut self, lo: u64, hi: u64) -> Result<()> {
        // The differential layer is newer than the ranges: its entries in [lo, hi] go too.
        let inside: Vec<u64> = self.delta.range(lo..=hi).map(|(&k, _)| k).collect();
        for k in inside {
            self.delta.remove(&k);
        }
        self.trim_freed()?;
        let r = self.sweep_delete_range(lo, hi)?;
        self.note(&r);
        Ok(())
    }

    fn entries(&self) -> u64 {
        self.index.tuples()
    }

    fn live_pages(&self) -> u64 {
        self.index
            .iter()
            .map(|(_, e)| u64::from(e.pages))
            .sum::<u64>()
            + self.index_extent.map_or(0, |e| e.len)
    }

    fn memory_bytes(&self) -> u64 {
        self.pager.memory_bytes() + self.structure_bytes()
    }
}

impl Logged for BulkIndex {
    pager_store_methods!();

    fn engine_state(&self) -> serde_json::Value {
        serde_json::json!(self.state())
    }

    /// Merge the differential layer (the next WAL generation will not hold it) and save
    /// the range index into a fresh extent.
    fn before_checkpoint(&mut self) -> Result<()> {
        self.merge_delta()?;
        if self.index_dirty {
            let old = self.index_extent.take();
            self.index_extent = self.index.save(&mut self.pager)?;
            if let Some(e) = old {
                if self.p.append_only {
                    self.garbage_pages += e.len;
                } else {
                    self.pager.free_extent(e);
                    self.freed.push(e);
                }
            }
        }
        Ok(())
    }

    /// The space freed before the checkpoint is reusable now: trim it (§5.5's deferred
    /// erases, so that a simulated SSD sees them).
    fn after_checkpoint(&mut self) -> Result<()> {
        self.index_dirty = false;
        let freed = std::mem::take(&mut self.freed);
        if self.p.trim_freed {
            self.to_trim.extend(freed);
        }
        self.trim_freed()
    }

    fn insert_unlogged(&mut self, key: u64, value: u64) -> Result<()> {
        self.single(key, Op::Put(value))
    }

    fn delete_unlogged(&mut self, key: u64) -> Result<()> {
        self.single(key, Op::Del)
    }

    fn delete_range_unlogged(&mut self, lo: u64, hi: u64) -> Result<()> {
        BulkIndex::delete_range_unlogged(self, lo, hi)
    }

    fn bulk_unlogged(&mut self, sorted: &[(u64, u64)]) -> Result<()> {
        BulkIndex::bulk_unlogged(self, sorted)
    }

    fn holds_nothing(&self) -> bool {
        self.index.is_empty() && self.delta.is_empty()
    }

    /// §6.1: the initial keys in one bulk insertion, "all ranges except one being of
    /// size M".
    fn load_empty(&mut self, sorted: &[(u64, u64)]) -> Result<()> {
        let ops: Vec<(u64, Op)> = sorted.iter().map(|&(k, v)| (k, Op::Put(v))).collect();
        self.sweep(&ops)
    }
}

/// Searches and scans run beside each other (module doc, Thread safety).
impl Shareable for BulkIndex {
    const PARALLEL_GETS: bool = true;
    const PARALLEL_SCANS: bool = true;

    fn get_shared(&self, key: u64) -> Result<Option<u64>> {
        self.lookup_shared(key)
    }

    fn get_many_shared(&self, keys: &[u64]) -> Result<Vec<Option<u64>>> {
        self.lookup_many_shared(keys)
    }

    fn scan_shared(&self, cur: &mut RangeCursor, out: &mut Vec<(u64, u64)>) -> Result<()> {
        self.scan_batch_shared(cur, out)
    }
}

impl SerialEngine for BulkIndex {
    logged_engine_methods!();

    fn get(&mut self, key: u64) -> Result<Option<u64>> {
        self.lookup(key)
    }

    fn get_many(&mut self, keys: &[u64]) -> Result<Vec<Option<u64>>> {
        self.lookup_many(keys)
    }

    fn scan(&mut self, cur: &mut RangeCursor, out: &mut Vec<(u64, u64)>) -> Result<()> {
        self.scan_batch(cur, out)
    }

    fn stats(&self) -> Stats {
        let c = &self.counters;
        let m = self.p.m as u64;
        let alloc = self.pager.allocator();
        let engine_counters = counters(&[
            ("m", m),
            ("ranges", self.index.len() as u64),
            (
                "ranges_of_size_m",
                self.index
                    .iter()
                    .filter(|(_, e)| u64::from(e.count) == m)
                    .count() as u64,
            ),
            ("entries", self.entries()),
            ("range_index_bytes", self.index.memory_bytes()),
            ("delta_entries", self.delta.len() as u64),
            ("delta_capacity", self.p.delta_cap as u64),
            ("delta_merges", c.delta_merges),
            ("bulk_sweeps", c.bulk_sweeps),
            ("ranges_affected", c.ranges_affected),
            ("last_ranges_affected", c.last_ranges_affected),
            ("ranges_read", c.ranges_read),
            ("range_read_requests", c.range_read_requests),
            ("ranges_written", c.ranges_written),
            ("range_write_requests", c.range_write_requests),
            ("range_pages_written", c.range_pages_written),
            ("neighbour_merges", c.neighbour_merges),
            ("ranges_dropped", c.ranges_dropped),
            ("point_reads", c.point_reads.get()),
            ("scan_ranges_read", c.scan_ranges_read.get()),
            ("live_pages", self.live_pages()),
            ("allocated_pages", alloc.high_water()),
            ("free_pages", alloc.free_pages()),
            ("garbage_pages", self.garbage_pages),
        ]);
        drop(alloc);
        let mut s = self
            .pager
            .stats(EngineKind::BulkIndex, engine_counters, self.memory_bytes());
        s.shape.write_buffer_entries = Some(self.p.delta_cap as u64);
        s
    }

    fn check_integrity(&mut self) -> Result<()> {
        self.check()
    }
}
