//! The PIO B-tree (`EngineKind::PioBTree`; Roh, Park, Kim, Shin, Lee, VLDB 2011): a
//! B+-tree that drives the SSD's internal parallelism from one thread.
//!
//! - **psync I/O** (§2.3, [`crate::io::psync`]): groups of page reads (or of writes, never
//!   mixed: principle 3) submitted at once through [`crate::io::Device::submit`], at most
//!   `pio_max` requests per group; the pages land in the buffer pool
//!   ([`Pager::prefetch`]).
//! - **MPSearch** (§3.1.1, Algorithm 1; [`mpsearch`]) serves `get_many` (and `get`, with one
//!   key): level by level, one psync read per level for the nodes the sorted keys need,
//!   depth-first in groups of `pio_max` nodes.
//! - **Parallel range search** (§3.1.2): `scan` reads the internal nodes over the range level
//!   by level and up to `pio_max` leaves in one psync read.
//! - **OPQ and batch update** (§3.1.3, Algorithm 2; [`opq`], [`bupdate`]): updates append to
//!   the in-memory operation queue; searches look there first; a full OPQ gives `bcnt`
//!   entries to `bupdate`, which descends like MPSearch, appends to the leaves, shrinks,
//!   splits, merges or redistributes them, propagates fence keys upward ([`internal`]) and
//!   writes the changed pages in psync groups.
//! - **Range deletes** (flashix's extension, like RocksDB's `DeleteRange`; the paper's OPQ
//!   holds point operations only): `delete_range` adds one *range tombstone* to the OPQ
//!   ([`opq`]), reading and writing no page; searches honour it; a flush of the OPQ
//!   applies every tombstone to the tree before the point batches ([`rdelete`]), freeing
//!   the leaves inside the range without reading them.
//! - **Leaf segments** (§3.2.2–3.3, Algorithm 3; [`leaf`]): a leaf is `L` contiguous pages;
//!   updates append to its last segment; the LSMap caches each leaf's last segment id; a
//!   full leaf is shrunk (its records replayed, cancelled pairs dropped), then split or
//!   rebalanced. Internal nodes are one page.
//!
//! # On-disk format
//! Internal nodes: the B+-tree's node format ([`crate::kit::bnode::node`], kind 2):
//! separators and child page ids, `link` the leftmost child; a child of a level-1 node is
//! the first page of a leaf. Leaves: [`leaf`] (kind 3, `L` segment pages). The manifest's
//! engine state holds `root` (a page id; the first page of a leaf when `height` is 1),
//! `height` (levels, leaves included), `leaves`, `leaf_records` and, only when set,
//! `leaf_records_bound` (`leaf_records` is an upper bound since a range delete freed
//! leaves unread: [`rdelete`]). The OPQ, range tombstones included, is never on disk: a
//! checkpoint empties it into the tree.
//!
//! # Invariants (checked by `check_integrity`)
//! 1. Internal nodes: keys strictly increasing; every key below child slot `s` lies in
//!    `[separator(s), separator(s+1))` of its parent; non-root nodes hold at least
//!    `capacity/2` separators, an internal root at least one; levels decrease by one per
//!    step and all leaves are at depth `height - 1`.
//! 2. Leaves: `L` segments with the right index and `L` in each header; every segment
//!    before the last is full and every one after it empty; the first `base` records are
//!    sorted puts; every record's key lies in the leaf's fence range; a non-root leaf's
//!    `base` is at least `C/4` (C = `L` × records per segment), since every rewrite of a
//!    non-root leaf leaves at least that many live entries.
//! 3. The LSMap names only reachable leaves, each with its true last segment, and has a
//!    slot for every reachable leaf ([`lsmap`], Thread safety).
//! 4. The OPQ's sorted region is strictly increasing; its range tombstones are sorted,
//!    disjoint and coalesced; point entries and tombstones together stay below its
//!    capacity (a full OPQ is flushed at once), reaching it only while the flush a
//!    shared append asked for waits for the exclusive lock (Thread safety). (That every
//!    point entry a tombstone covers is newer than it is not checkable: the OPQ keeps no
//!    order between them.)
//! 5. `leaves` equals the tree and `leaf_records` equals its records (is at least that
//!    many when `leaf_records_bound` is set); no page is reachable twice and no reachable
//!    page is free in the extent allocator.
//!
//! # Durability and recovery (§3.4)
//! The shared [`Pager`]: every operation is appended to the WAL as a logical redo record
//! *before* it enters the OPQ ([`crate::durable::Logged::logged`]; an append beside other
//! operations logs under the OPQ's lock, so the WAL's order is the OPQ's: Thread safety),
//! and `flush` syncs the WAL (group commit), so an OPQ entry is durable when `flush`
//! returns — the paper's first WAL condition. Pages change in place under full-page
//! before-images (the paper's "flush undo log"): the first change of a page after a
//! checkpoint logs its checkpoint contents, and the WAL rule makes that durable before
//! the page is written (the second condition).
//! A checkpoint first empties the OPQ into the tree (§3.4: "PIO B-tree also flushes all the
//! OPQ entries ... when the DBMS system needs to checkpoint"), so a checkpoint image never
//! depends on queued entries. After a crash, recovery writes the before-images back —
//! undoing every OPQ flush since the checkpoint, complete or torn, which makes each flush
//! atomic — and replays every logical record since the checkpoint into the OPQ, re-running
//! the batch updates. Each operation is thus applied to the tree exactly once: the image
//! it is replayed onto holds none of the operations since the checkpoint. This replaces
//! the paper's flush event log pair and key-range filtering of the redo phase, with the
//! same outcome (no flushed entry redone twice, no torn flush visible).
//!
//! A range delete is one logical WAL record (`DeleteRange`), replayed into the OPQ as a
//! tombstone. Applying a tombstone to the tree changes pages only through the Pager (so
//! under before-images, like a batch update) and frees pages that are reused only after
//! the next checkpoint, so a crash in the middle of it is undone with the rest of the
//! flush and the tombstone is replayed.
//!
//! # Memory
//! [`Options::buffer_pool_bytes`] is the engine's memory budget `M`, shared as in the paper
//! (§4.1.3: "after allocating the main memory to OPQ and LSMap, the rest of main memory
//! space was allocated to the buffer pool"): the OPQ (`opq_bytes`, entries of
//! [`crate::PIO_OPQ_ENTRY_BYTES`]; for an appended region that can exceed 512 entries, its
//! hash index of 4-byte slots beside it, [`PioOptions::opq_index_bytes`], 32 KiB at the
//! default `speriod`); a range tombstone takes one entry slot and holds 16 bytes beside the entry array,
//! reported in `Stats::memory_bytes`); the LSMap ([`lsmap`]: a few bits per page of the
//! index, sized at open for the index's pages and an eighth more); the buffer pool gets the
//! rest. The OPQ's entry array is allocated as it fills and freed when a checkpoint's
//! flush empties it ([`opq`]), and the budget it does not hold goes to the pool: the pool
//! is resized after every operation to the budget less what the OPQ, its index and the
//! LSMap hold (`Pager::charge`), so a search-only phase after a checkpoint has the whole
//! budget but the LSMap and the index, and a full OPQ leaves the pool the paper's share.
//! During MPSearch and `bupdate` the engine also holds the page ids of at most
//! `pio_max` × fan-out child nodes per level (the pages themselves are in the pool: psync
//! groups are bounded by half the pool and by `pio_max`). A shared search holds one psync
//! group's pages besides (Thread safety): in the buffers of the psync read, while it
//! loads them into the pool or, for the leaves it reads past a full pool, while it reads
//! them; a point search, the segments of its leaf it reads ahead of the pool.
//!
//! # Thread safety
//! Served to many threads by `kit::parallel::Parallel`, with the paper's locking of its
//! concurrent version (§4.2): "for every speriod, the entire OPQ is exclusively locked
//! for the OPQ entries to be sorted", and the index is "exclusively locked for every OPQ
//! flush operation". What runs beside what:
//! - Under Parallel's shared lock, on `&self` ([`shared`]): point searches (`get`),
//!   MPSearch (`get_many`), range searches (scan batches), and the inserts and deletes
//!   that arrive while other operations are in progress (`Shareable::insert_shared`,
//!   `delete_shared`), which append to the OPQ. Any number of each run at once.
//! - The OPQ has a readers-writer lock of its own ([`opq::SharedOpq`]). An append holds
//!   it exclusive for its in-memory step: it buffers the operation's WAL record
//!   (`Pager::log_op_shared`), appends the entry and, when a sort period has passed,
//!   sorts the appended region into the sorted region, so the whole OPQ is exclusively
//!   locked for the sort; the WAL's full buffer is handed to the file after the lock is
//!   released (`Pager::hand_off_shared`). A search holds it shared only while it looks
//!   its keys up (a point search's key, MPSearch's keys, a scan batch's range and
//!   tombstones), never across a page read.
//! - Under Parallel's exclusive lock, alone: every flush of the OPQ (batch update) and
//!   everything else that changes the tree or the OPQ but an append (range deletes, bulk
//!   loads, batches, checkpoints, recovery), the checks, the writes made while no other
//!   operation is in progress (the serial path, as before the engine was shared), and
//!   the appends the OPQ refuses: a shared append is refused, having done nothing, when
//!   the OPQ is full or when the entry would grow the OPQ's array (the pool gives up
//!   those bytes first, under the exclusive lock: the memory budget holds as in the
//!   serial path). The append that fills the OPQ asks for its flush
//!   (`SharedWrite::Maintain`), which Parallel runs under the exclusive lock right
//!   after; a write that takes that lock first makes the flush first
//!   ([`PioBTree::settle`]). So an operation under the exclusive lock never finds the
//!   OPQ full, and an append never finds it full either: it is full only while that
//!   flush waits for the lock. The append that brings a checkpoint due asks for it the
//!   same way.
//! - A flush takes its WAL ticket under the exclusive lock and syncs outside it, so
//!   concurrent flushes share one sync (group commit); a range scan's batches interleave
//!   with other threads' operations (`crate::Db`'s guarantees).
//!
//! Why this is safe:
//! - Under Parallel's shared lock nothing changes the tree or the manifest state, and
//!   the OPQ changes only by appends (with their sorts) under the OPQ's lock; its range
//!   tombstones and the rest of its state change only under the exclusive lock. A
//!   search's answer is then the one the serial search gives at the instant it looked
//!   its key up in the OPQ: a key the OPQ lacks then is answered by the tree, which no
//!   append changes. So every point search and every key of a `get_many` sees each
//!   append that returned before it began (its lookup waits for any append in progress)
//!   and is linearizable with the appends; a scan batch returns the tree merged with the
//!   OPQ's entries of its range as they were at one instant.
//! - The WAL holds the appends in the OPQ's order: a shared append logs under the OPQ's
//!   lock, right before its entry goes in, and the writes under the exclusive lock run
//!   alone. With the flush of a full OPQ made before any other operation, the OPQ goes
//!   through exactly the states a serial run of the same operations in that order gives
//!   it, the same batches at the same appends: those recovery's serial replay of the WAL
//!   takes it through (Durability). A full device met by the flush a shared append asked
//!   for is recorded in the WAL naming that append's record, as the serial path names
//!   the operation whose append filled the OPQ.
//! - Pages are read through the Pager's shared path: the buffer pool's shared mode (pins,
//!   one device read per page however many readers want it) and the device's reader
//!   handles, plus a psync read of a group of runs through one of those handles (its
//!   ring takes the whole group at once: several threads' groups are in flight beside
//!   each other; a device without reader handles takes one group at a time). Each
//!   thread has at most one request in flight, or one psync group (at most `pio_max`
//!   requests) for a level of MPSearch or a range search.
//! - The LSMap, the one cache a search fills, is a packed array of atomic words: a
//!   search records a leaf's last segment with a compare-and-swap of its word, and only
//!   the true value (the leaf does not change while it is read). The map has a slot for
//!   every reachable leaf (invariant 3), so that shared searches never need to grow it.
//! - The counters searches and shared appends bump (`mpsearches`, `psync_reads`,
//!   `opq_hits`, `leaves_skipped_by_tombstones`, `shared_writes`) are relaxed atomics:
//!   exact. The OPQ's own (`opq_sorts`) change under its lock.
//! - Between operations the pool holds no dirty page: every operation that changes pages
//!   ends with a write-through (batch updates, range deletes) or a checkpoint (a bulk
//!   load), and `charge_memory`, run after every operation, writes back any page left
//!   dirty. So under the shared lock a page's bytes on the device are its current ones,
//!   and a search may read leaves past the pool.
//!
//! How the shared searches depart from the serial path. Their answers are the serial
//! path's; at one thread they read no more pages from the device, in no more requests
//! (exactly as many while the pool has free frames for what they read), and count the
//! same MPSearches and OPQ hits (`shared` tests this against the serial path):
//! - The serial path learns which pages of a psync group are missing from the pool's
//!   map; a shared search asks the pool for each page and, on a miss, reads nothing and
//!   leaves the frame the miss claimed free for the load that follows
//!   ([`Pager::read_if_resident_shared`]). The pages missing are then read in one psync
//!   read, as in the serial path. The pool counts a miss for that lookup and another for
//!   the page's load when the page is then loaded into it.
//! - The serial MPSearch and range search load the leaves a group lacks into the pool
//!   and then move them to its LRU end ([`PioBTree::demote_leaves`]), so that they do not
//!   push out the internal levels. Moving a page in the LRU order needs the pool to
//!   itself, so the shared ones instead load those leaves while the pool has free frames
//!   for them (where the serial path's would stay too) and read them past the pool when
//!   it is full (where the serial path's would be the next pages evicted): either way
//!   the pool keeps its other pages. A leaf the pool already holds is read there and
//!   becomes its most recent page, as for a point search.
//! - A point search keeps its leaf in the pool, as in the serial path, and reads its
//!   segments from the first one the pool misses to the end of the run the search needs
//!   in one request ([`Pager::read_run_pooled_shared`]), where the serial path reads the
//!   whole run when a page of it is missing.
//! - `psync_reads` counts, as in the serial path, each group (a level, a group of
//!   leaves, a point search's node or leaf) for which a search read pages.
//!
//! An insert or delete reads nothing (it appends to the OPQ), so the writer has no page
//! to warm beside the readers (`Shareable::prepare_write` does nothing). The shuttle model
//! check in [`shared`] runs the OPQ's lock protocol (appends, sorts, lookups, a flush
//! under the exclusive lock) in many interleavings.
//!
//! Past the paper, not done: appends into a second OPQ while the first is flushed, so
//! that writers do not stop for a flush. A flush changes the tree, which the searches
//! under the shared lock read without latches, so it needs the exclusive lock whatever
//! queue the writers append to, and a second queue would take OPQ bytes from the budget.

mod options;
pub use options::{PioOptions, PIO_OPQ_ENTRY_BYTES};
mod bupdate;
mod check;
mod internal;
pub mod leaf;
mod lsmap;
mod mpsearch;
pub mod opq;
mod rdelete;
mod shared;

use crate::durable::Manifest;
use crate::durable::{Logged, LogicalOp};
use crate::durable::{Pager, Store};
use crate::error::{Error, Result};
use crate::io::PageId;
use crate::io::Storage;
use crate::kind::EngineKind;
use crate::kit::api::{RangeCursor, SerialEngine, Shareable, SharedWrite};
use crate::kit::bnode::node;
use crate::settings::Settings;
use crate::stats::counters;
use crate::stats::Stats;
use lsmap::LsMap;
use opq::{Op, Opq, OpqEntry, SharedOpq};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};

/// Fill of bulk-loaded leaves and internal nodes: the B+-tree's (FD-tree paper, App. D).
const BULK_FILL: f64 = 0.7;

/// [`PioBTree`]'s `filled_at` when no shared append left the OPQ full.
const NOT_FILLED: u64 = u64::MAX;

/// Durable roots, saved in the manifest.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct State {
    root: PageId,
    height: u32,
    leaves: u64,
    leaf_records: u64,
    /// `leaf_records` is an upper bound, not the exact count: a range delete freed leaves
    /// without reading them ([`rdelete`]). Absent (false) in the manifests of older builds.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    leaf_records_bound: bool,
    /// The leaves' segments are packed ([`leaf::Layout::Packed`]; format 6 on). Absent
    /// (false: wide segments) in the manifests of older builds.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    packed: bool,
}

/// The engine's counters. Those that reads bump are atomics, so that searches on `&self`
/// keep them exact (relaxed adds); writes bump them through `get_mut`.
#[derive(Debug, Default)]
struct Counters {
    bupdates: u64,
    bupdate_entries: u64,
    leaf_appends: u64,
    shrinks: u64,
    leaf_splits: u64,
    internal_splits: u64,
    root_splits: u64,
    merges: u64,
    redistributions: u64,
    mpsearches: AtomicU64,
    psync_reads: AtomicU64,
    opq_hits: AtomicU64,
    range_deletes: u64,
    range_tombstones_applied: u64,
    leaves_freed_unread: u64,
    leaves_skipped_by_tombstones: AtomicU64,
    /// Inserts and deletes appended to the OPQ under the engine's shared lock, beside
    /// other operations ([`shared`]).
    shared_writes: AtomicU64,
}

impl PioOptions {
    /// Bytes of the OPQ's appended-region hash index for an OPQ of `opq_bytes` sorted
    /// every `speriod` appends (0 when its appended region stays within 512 entries): the
    /// engine takes them from the buffer pool's share of the budget, beside the OPQ.
    pub fn opq_index_bytes(opq_bytes: u64, speriod: u32) -> u64 {
        let entries = usize::try_from(opq_bytes / PIO_OPQ_ENTRY_BYTES).unwrap_or(usize::MAX);
        opq::index_bytes(entries, speriod as usize)
    }

    /// `s`: records of one (packed) leaf segment of `page_size` bytes (252 for 4 KiB
    /// pages), 0 below 512 bytes; a number the PIO cost model takes
    /// ([`crate::cost::pio::PioWorkload::segment_records`]).
    pub fn leaf_segment_records(page_size: usize) -> u64 {
        if page_size < 512 {
            return 0;
        }
        leaf::segment_capacity(page_size) as u64
    }

    /// `F`: entries of one internal node of `page_size` bytes (254 for 4 KiB pages), 0
    /// below 512 bytes ([`crate::cost::pio::PioWorkload::node_entries`]).
    pub fn internal_node_entries(page_size: usize) -> u64 {
        if page_size < 512 {
            return 0;
        }
        node::capacity(page_size) as u64
    }

    /// These options with `leaf_segments` and `opq_bytes` decided: the given ones,
    /// else the cost model's choice (§3.6: "PIO B-tree is able to automatically tune itself
    /// by using (10) when it is initially built"; [`crate::cost::pio::choose_within`]) for
    /// the settings' tuning: its PIO device profile (or one derived from its device
    /// costs), `N` = its expected entries, `Ri` = 1 − its search share, `M` = the memory
    /// budget (`buffer_pool_bytes`, which the OPQ shares with the pool), and this engine's
    /// page capacities. `Db::create` saves the result in the manifest
    /// (`Options::resolved` is the public face).
    pub(crate) fn resolved(&self, opts: &Settings) -> Result<PioOptions> {
        use crate::cost::pio::{choose_within, PioDeviceCosts, PioWorkload};
        let mut o = self.clone();
        if o.leaf_segments.is_some() && o.opq_bytes.is_some() {
            return Ok(o);
        }
        let t = opts.tuning.clone();
        let dev = match t.pio_device {
            Some(d) => d,
            None => PioDeviceCosts::derived(&t.device)?,
        };
        let page = opts.page_size;
        if dev.page_size() != page {
            return Err(Error::InvalidOptions(format!(
                "the tuning's PIO device profile is for {}-byte pages, the index has {page}-byte pages",
                dev.page_size()
            )));
        }
        let w = PioWorkload {
            insert_ratio: 1.0 - t.search_fraction,
            entries: t.expected_entries.max(1),
            memory_bytes: opts.buffer_pool_bytes,
            bcnt: u64::from(o.bcnt.max(1)),
            pio_max: u64::from(o.pio_max.max(1)),
            segment_records: PioOptions::leaf_segment_records(page),
            node_entries: PioOptions::internal_node_entries(page),
            opq_entry_bytes: PIO_OPQ_ENTRY_BYTES,
        };
        let fixed_opq = o.opq_bytes.map(|b| (b / page as u64).max(1));
        let c = choose_within(&dev, &w, o.leaf_segments.map(|l| l as usize), fixed_opq).map_err(
            |e| Error::InvalidOptions(format!("choosing the PIO B-tree's leaf and OPQ size: {e}")),
        )?;
        o.leaf_segments.get_or_insert(c.leaf_segments as u32);
        o.opq_bytes.get_or_insert(c.opq_pages * page as u64);
        Ok(o)
    }
}

/// Check PIO B-tree options (dispatched by `engine::validate`); `None` sizes are the cost
/// model's to choose at creation.
pub fn validate(opts: &Settings, o: &PioOptions) -> Result<()> {
    if let Some(l) = o.leaf_segments {
        if !(1..=64).contains(&l) {
            return Err(Error::InvalidOptions(format!(
                "pio leaf_segments {l} must be within 1..=64"
            )));
        }
    }
    if let Some(q) = o.opq_bytes {
        if !(2 * PIO_OPQ_ENTRY_BYTES..=1 << 36).contains(&q) {
            return Err(Error::InvalidOptions(format!(
                "pio opq_bytes {q} must hold at least two {PIO_OPQ_ENTRY_BYTES}-byte entries and be at most 64 GiB"
            )));
        }
        if q >= opts.buffer_pool_bytes {
            return Err(Error::InvalidOptions(format!(
                "pio opq_bytes {q} must be less than the memory budget (buffer_pool_bytes {}), which the OPQ shares with the buffer pool",
                opts.buffer_pool_bytes
            )));
        }
    }
    if !(1..=4096).contains(&o.pio_max) {
        return Err(Error::InvalidOptions(format!(
            "pio pio_max {} must be within 1..=4096",
            o.pio_max
        )));
    }
    if o.speriod == 0 {
        return Err(Error::InvalidOptions(
            "pio speriod must be at least 1".into(),
        ));
    }
    if o.bcnt == 0 {
        return Err(Error::InvalidOptions("pio bcnt must be at least 1".into()));
    }
    Ok(())
}

/// The bytes of the OPQ's appended-region index: [`PioOptions::opq_index_bytes`] when the
/// pool keeps the frames the engine needs beside it, else 0 (no index).
fn opq_index(s: &Settings, o: &PioOptions, segs: u16) -> u64 {
    let q = o.opq_bytes.unwrap_or(0);
    let index = PioOptions::opq_index_bytes(q, o.speriod);
    let need = min_frames(segs) as u64 * s.page_size as u64;
    let pool = s.buffer_pool_bytes.saturating_sub(q).saturating_sub(index);
    if pool >= need {
        index
    } else {
        0
    }
}

/// The budget the OPQ takes from the pool: its entries (`opq_bytes`) and its
/// appended-region index.
fn opq_share(s: &Settings, o: &PioOptions, segs: u16) -> u64 {
    o.opq_bytes.unwrap_or(0) + opq_index(s, o, segs)
}

/// Leaf segments and OPQ entries of resolved options (a manifest always holds both).
fn sizes(o: &PioOptions) -> Result<(u16, usize)> {
    match (o.leaf_segments, o.opq_bytes) {
        (Some(l), Some(q)) => Ok((l as u16, (q / PIO_OPQ_ENTRY_BYTES) as usize)),
        _ => Err(Error::corruption(
            "MANIFEST",
            None,
            "PIO B-tree options without leaf_segments or opq_bytes",
        )),
    }
}

/// Pages the LSMap is sized for when an index is opened: the extent allocator's high-water
/// mark and an eighth more for growth. Its bytes come out of the buffer pool's share of the
/// memory budget (§4.1.3: "after allocating the main memory to OPQ and LSMap, the rest of
/// main memory space was allocated to the buffer pool").
fn lsmap_pages(manifest: &Manifest) -> Result<u64> {
    let alloc = crate::io::ExtentAllocator::from_state(&manifest.alloc)?;
    let hw = alloc.high_water();
    Ok(hw.saturating_add(hw / 8))
}

/// Frames the engine needs: two leaves at once (a rebalance) and a few internal pages.
fn min_frames(segs: u16) -> usize {
    (2 * usize::from(segs) + 2).max(8)
}

/// Where a node sits: its page and its fence range `[lo, hi)` (`hi` `None`: unbounded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fenced {
    pid: PageId,
    lo: u64,
    hi: Option<u64>,
}

/// The PIO B-tree engine.
pub struct PioBTree {
    pager: Pager,
    root: PageId,
    height: u32,
    leaves: u64,
    leaf_records: u64,
    /// `leaf_records` is only an upper bound (see [`State`]).
    leaf_records_bound: bool,
    /// L: segments per leaf.
    segs: u16,
    /// How the leaves' segments lay out their records (kept from the index's creation).
    layout: leaf::Layout,
    /// Records per segment.
    seg_cap: usize,
    /// Separators per internal node.
    cap: usize,
    pio_max: usize,
    bcnt: usize,
    /// The OPQ, behind its own lock (Thread safety).
    opq: SharedOpq,
    /// Where the WAL record of the shared append that filled the OPQ starts, while that
    /// full OPQ waits for its flush ([`NOT_FILLED`] otherwise; Thread safety).
    filled_at: AtomicU64,
    /// LSMap (§3.2.2): last segment id of leaves, by first page.
    lsmap: LsMap,
    /// The LSMap had a slot for every page of the index at open (it has unless slots for
    /// all of them would not fit in the memory budget: `open`).
    lsmap_covers_all: bool,
    counters: Counters,
}

impl PioBTree {
    /// Memory besides the pool, charged to the budget (`Logged::charge_memory`): the OPQ
    /// (with its index and range tombstones) and the LSMap.
    fn structure_bytes(&self) -> u64 {
        self.opq.read().memory_bytes() + self.lsmap.memory_bytes()
    }

    fn new(pager: Pager, options: &Settings, o: &PioOptions, s: State) -> Result<PioBTree> {
        let (segs, opq_cap) = sizes(o)?;
        let layout = if s.packed {
            leaf::Layout::Packed
        } else {
            leaf::Layout::Wide
        };
        Ok(PioBTree {
            pager,
            root: s.root,
            height: s.height,
            leaves: s.leaves,
            leaf_records: s.leaf_records,
            leaf_records_bound: s.leaf_records_bound,
            segs,
            layout,
            seg_cap: layout.capacity(options.page_size),
            cap: node::capacity(options.page_size),
            pio_max: o.pio_max as usize,
            bcnt: o.bcnt as usize,
            opq: SharedOpq::new(if opq_index(options, o, segs) > 0 {
                Opq::new(opq_cap, o.speriod as usize)
            } else {
                Opq::new(opq_cap, o.speriod as usize).without_index()
            }),
            filled_at: AtomicU64::new(NOT_FILLED),
            lsmap: LsMap::new(segs),
            lsmap_covers_all: true,
            counters: Counters::default(),
        })
    }

    /// A new tree: one empty root leaf.
    /// `o` is resolved ([`PioOptions::resolved`]) and `s.record` holds it. The OPQ takes
    /// `opq_bytes` of the memory budget; the pool gets the rest (§4.1.3).
    pub fn create(storage: Storage, s: Settings, o: PioOptions) -> Result<PioBTree> {
        validate(&s, &o)?;
        let (segs, _) = sizes(&o)?;
        let opq_bytes = opq_share(&s, &o, segs);
        let config = s.pager_config(min_frames(segs), opq_bytes);
        let mut pager = Pager::create(storage.device, storage.vfs, config, s.record.clone())?;
        pager.set_page_check(node::check_page);
        let root = pager.alloc_run(u64::from(segs))?.start;
        leaf::rewrite(leaf::Layout::Packed, &mut pager, root, segs, &[])?;
        let state = State {
            root,
            height: 1,
            leaves: 1,
            leaf_records: 0,
            leaf_records_bound: false,
            packed: true,
        };
        let mut t = PioBTree::new(pager, &s, &o, state)?;
        t.lsmap.insert(root, 0);
        t.checkpoint()?;
        Ok(t)
    }

    /// Reopen: restore the checkpoint image and replay the WAL into the OPQ (§3.4).
    pub fn open(
        storage: Storage,
        manifest: Manifest,
        s: Settings,
        o: PioOptions,
    ) -> Result<PioBTree> {
        let state: State = manifest.engine_state("PIO B-tree")?;
        if !crate::kit::api::plausible_height(state.height) {
            return Err(Error::corruption(
                "MANIFEST",
                None,
                format!("PIO B-tree height {}", state.height),
            ));
        }
        let (segs, _) = sizes(&o)?;
        let pages = lsmap_pages(&manifest)?;
        // The LSMap never takes the frames the engine needs: an index that opened once
        // opens again (past that point its bytes are reported in `Stats::memory_bytes`).
        let opq_bytes = opq_share(&s, &o, segs);
        let spare = (s.buffer_pool_bytes.saturating_sub(opq_bytes))
            .saturating_sub(min_frames(segs) as u64 * s.page_size as u64);
        let reserve = LsMap::bytes_for(segs, pages).min(spare);
        let config = s.pager_config(min_frames(segs), opq_bytes + reserve);
        let (mut pager, ops) = Pager::open(storage.device, storage.vfs, &manifest, config)?;
        pager.set_page_check(node::check_page);
        let mut t = PioBTree::new(pager, &s, &o, state)?;
        // The page count comes from the manifest: reserve only what the budget set aside.
        if LsMap::bytes_for(segs, pages) <= reserve {
            t.lsmap.reserve_pages(pages);
        }
        // A slot for every page the index has, so that shared searches can learn any
        // leaf (lsmap's Thread safety): the bytes the serial path's map reaches once it
        // knows the leaf of the highest page (within the reservation when it was made).
        // The page count comes from the manifest: slots for at most the pages whose slots
        // fit in the memory budget (a damaged manifest must not size the allocation;
        // leaves past them stay unknown to shared searches, which then read them from
        // their first segment).
        let high_water = t.pager.allocator().high_water();
        let fit = s.buffer_pool_bytes.saturating_mul(8) / u64::from(LsMap::bits_for(segs)).max(1);
        t.lsmap.cover(high_water.min(fit));
        t.lsmap_covers_all = high_water <= fit;
        t.recover(&ops)?;
        // The pool takes the budget the OPQ does not hold (an empty OPQ after a clean
        // close holds nothing).
        t.charge_memory()?;
        Ok(t)
    }

    fn state(&self) -> serde_json::Value {
        serde_json::json!(State {
            root: self.root,
            height: self.height,
            leaves: self.leaves,
            leaf_records: self.leaf_records,
            leaf_records_bound: self.leaf_records_bound,
            packed: self.layout == leaf::Layout::Packed,
        })
    }

    /// C: records a leaf holds.
    fn leaf_capacity(&self) -> usize {
        usize::from(self.segs) * self.seg_cap
    }

    /// Fewest live entries a rewrite leaves in a non-root leaf.
    fn leaf_min(&self) -> usize {
        self.leaf_capacity() / 4
    }

    /// Most live entries a rewrite leaves in one leaf before it splits: a quarter of the
    /// leaf stays free for appends, so a shrink is not followed at once by another.
    fn leaf_max(&self) -> usize {
        self.leaf_capacity() * 3 / 4
    }

    /// Nodes of `pages` pages each that one psync group may load: at most `pio_max`, and
    /// at most half the pool, so the group is still resident when it is used.
    fn group(&self, pages: u64) -> usize {
        let half = self.pager.pool_frames() as usize / 2;
        (half / pages.max(1) as usize).clamp(1, self.pio_max)
    }

    /// One psync read of whole nodes or leaf runs into the pool.
    fn psync_read(&mut self, runs: &[(PageId, u64)]) -> Result<()> {
        if self.pager.prefetch(runs, self.pio_max)? > 0 {
            *self.counters.psync_reads.get_mut() += 1;
        }
        Ok(())
    }

    /// The run of a leaf a search reads: segments up to the last one if the LSMap knows
    /// it, else the whole leaf (§3.2.2).
    fn search_run(&self, pid: PageId) -> (PageId, u64) {
        match self.lsmap.get(pid) {
            Some(last) => (pid, u64::from(last) + 1),
            None => (pid, u64::from(self.segs)),
        }
    }

    /// Read a leaf (already prefetched) and cache its last segment.
    fn load_leaf(&mut self, pid: PageId) -> Result<leaf::LeafImage> {
        let known = self.lsmap.get(pid);
        let img = leaf::load(self.layout, &mut self.pager, pid, self.segs, known)?;
        self.lsmap.insert(pid, img.last);
        Ok(img)
    }

    /// Append an update to the OPQ; a full OPQ is flushed (§3.1.3).
    fn enqueue(&mut self, e: OpqEntry) -> Result<()> {
        self.opq.get_mut().push(e);
        self.flush_if_full()
    }

    /// A full OPQ applies its range tombstones to the tree, then, while it is still full,
    /// gives batches of `bcnt` point entries to `bupdate` (§3.1.3): one, after a single
    /// append. The tombstones go first: the point entries of their ranges are newer (see
    /// [`opq`]).
    fn flush_if_full(&mut self) -> Result<()> {
        if self.opq.get_mut().is_full() {
            self.apply_tombs()?;
        }
        while self.opq.get_mut().is_full() {
            let batch = self.opq.get_mut().take_batch(self.bcnt);
            self.bupdate(batch)?;
        }
        Ok(())
    }

    /// Flush the OPQ a shared append filled ([`shared`]), first thing under the engine's
    /// exclusive lock: every operation then meets the OPQ as the serial path leaves it
    /// between operations (never full), so the OPQ goes through the states recovery's
    /// serial replay of the WAL takes it through, the same batches at the same appends.
    /// On a full device the WAL names the filling operation's record as the one to drop
    /// at recovery, as the serial path names the operation whose append filled the OPQ
    /// ([`Logged::note_no_space`]): replayed, its flush would fail the same way.
    fn settle(&mut self) -> Result<()> {
        let start = std::mem::replace(self.filled_at.get_mut(), NOT_FILLED);
        if !self.opq.get_mut().is_full() {
            return Ok(());
        }
        let r = self.flush_if_full().and_then(|()| self.charge_memory());
        r.map_err(|e| {
            let named = (start != NOT_FILLED).then_some(start);
            self.note_no_space(e, named)
        })
    }

    /// Apply every OPQ entry to the tree (before a checkpoint): the range tombstones
    /// first, then the point batches.
    fn flush_opq(&mut self) -> Result<()> {
        self.apply_tombs()?;
        while !self.opq.get_mut().is_empty() {
            let batch = self.opq.get_mut().take_batch(self.bcnt);
            self.bupdate(batch)?;
        }
        self.opq.get_mut().release();
        Ok(())
    }

    /// Take the OPQ's range tombstones and delete their ranges in the tree.
    fn apply_tombs(&mut self) -> Result<()> {
        let tombs = self.opq.get_mut().take_tombs();
        for (lo, hi) in tombs.iter() {
            self.delete_range_in_tree(lo, hi)?;
        }
        Ok(())
    }

    /// A range delete is one range tombstone in the OPQ, whatever the range's size: no
    /// page is read or written until the OPQ is flushed ([`rdelete`]).
    fn delete_range_unlogged(&mut self, lo: u64, hi: u64) -> Result<()> {
        if lo > hi {
            return Ok(());
        }
        self.counters.range_deletes += 1;
        self.opq.get_mut().delete_range(lo, hi);
        self.flush_if_full()
    }

    /// Bottom-up bulk load of the empty tree (the paper's bulk loader, §4.1, whose fill it
    /// does not give): leaves and internal nodes at 0.7 of their capacity, the B+-tree's
    /// fill (FD-tree paper App. D), so that both index the same keys in about as many
    /// pages (leaves loaded half full gave the PIO B-tree many more leaves than the
    /// B+-tree, and aging made it larger still).
    fn bulk_load(&mut self, sorted: &[(u64, u64)]) -> Result<()> {
        let c = self.leaf_capacity();
        let old = self.root;
        self.free_leaf(old);
        let fill = ((c as f64 * BULK_FILL) as usize).clamp(self.leaf_min(), self.leaf_max());
        let sizes = crate::kit::bnode::group_sizes(
            sorted.len(),
            fill.max(1),
            self.leaf_min().max(1),
            self.leaf_max().max(1),
        );
        let mut level_nodes: Vec<(u64, PageId)> = Vec::with_capacity(sizes.len());
        let mut off = 0;
        for size in sizes {
            let chunk = &sorted[off..off + size];
            let pid = self.pager.alloc_run(u64::from(self.segs))?.start;
            let last = leaf::rewrite(self.layout, &mut self.pager, pid, self.segs, chunk)?;
            self.lsmap.insert(pid, last);
            level_nodes.push((chunk[0].0, pid));
            off += size;
        }
        self.leaves = level_nodes.len() as u64;
        self.leaf_records = sorted.len() as u64;
        self.leaf_records_bound = false;
        let min = self.cap / 2;
        let per = ((self.cap as f64 * BULK_FILL) as usize).clamp(min.max(1), self.cap);
        let mut level = 0;
        while level_nodes.len() > 1 {
            level += 1;
            let sizes =
                crate::kit::bnode::group_sizes(level_nodes.len(), per + 1, min + 1, self.cap + 1);
            let mut upper = Vec::with_capacity(sizes.len());
            let mut off = 0;
            for size in sizes {
                let group = &level_nodes[off..off + size];
                let pid = self.pager.alloc_page()?;
                self.pager
                    .write(pid, |b| node::init(b, level, group[0].1, &group[1..]))?;
                upper.push((group[0].0, pid));
                off += size;
            }
            level_nodes = upper;
        }
        match level_nodes.first() {
            Some(&(_, root)) => {
                self.root = root;
                self.height = level + 1;
            }
            None => {
                let root = self.pager.alloc_run(u64::from(self.segs))?.start;
                leaf::rewrite(self.layout, &mut self.pager, root, self.segs, &[])?;
                self.lsmap.insert(root, 0);
                self.root = root;
                self.height = 1;
                self.leaves = 1;
            }
        }
        Ok(())
    }

    /// Free a leaf's segments (reused after the next checkpoint) and forget it.
    fn free_leaf(&mut self, pid: PageId) {
        self.lsmap.remove(pid);
        self.pager.free_extent(crate::io::Extent {
            start: pid,
            len: u64::from(self.segs),
        });
    }

    fn is_empty(&self) -> bool {
        self.opq.read().is_empty() && self.leaf_records == 0 && self.height == 1
    }
}

impl Logged for PioBTree {
    fn store(&mut self) -> &mut dyn Store {
        &mut self.pager
    }

    /// Also writes back any page still dirty (none: every operation that changes pages
    /// ends with a write-through or a checkpoint), so that between operations the pool
    /// holds no dirty page, which the shared reads rely on (module doc, Thread safety).
    fn charge_memory(&mut self) -> Result<()> {
        self.pager.write_through(self.pio_max)?;
        let bytes = self.structure_bytes();
        self.pager.charge(bytes)
    }

    fn engine_state(&self) -> serde_json::Value {
        self.state()
    }

    /// Empty the OPQ into the tree before the tree is published (§3.4).
    fn before_checkpoint(&mut self) -> Result<()> {
        self.flush_opq()
    }

    fn insert_unlogged(&mut self, key: u64, value: u64) -> Result<()> {
        self.enqueue(OpqEntry {
            key,
            value,
            op: Op::Put,
        })
    }

    /// A delete goes to the OPQ (§3.1.3).
    fn delete_unlogged(&mut self, key: u64) -> Result<()> {
        self.enqueue(OpqEntry {
            key,
            value: 0,
            op: Op::Delete,
        })
    }

    fn delete_range_unlogged(&mut self, lo: u64, hi: u64) -> Result<()> {
        PioBTree::delete_range_unlogged(self, lo, hi)
    }

    fn holds_nothing(&self) -> bool {
        self.is_empty()
    }

    fn load_empty(&mut self, sorted: &[(u64, u64)]) -> Result<()> {
        self.bulk_load(sorted)
    }
}

/// Searches, MPSearch, range searches and OPQ appends run beside each other (module doc,
/// Thread safety; [`shared`]).
impl Shareable for PioBTree {
    const PARALLEL_GETS: bool = true;
    const PARALLEL_SCANS: bool = true;
    const SERIAL_READS_ALONE: bool = true;
    const PARALLEL_POINT_WRITES: bool = true;

    fn insert_shared(&self, key: u64, value: u64) -> Result<SharedWrite> {
        let e = OpqEntry {
            key,
            value,
            op: Op::Put,
        };
        self.write_shared(LogicalOp::Insert(key, value), e)
    }

    fn delete_shared(&self, key: u64) -> Result<SharedWrite> {
        let e = OpqEntry {
            key,
            value: 0,
            op: Op::Delete,
        };
        self.write_shared(LogicalOp::Delete(key), e)
    }

    /// After a shared append, under the exclusive lock: the flush of the OPQ it filled
    /// (unless a write that came first made it), then the checkpoint that came due (which
    /// empties the OPQ first), as the serial write's `after_op` takes it.
    fn maintain(&mut self) -> Result<()> {
        self.settle()?;
        Logged::after_op(self).map_err(|e| self.note_no_space(e, None))
    }

    fn get_shared(&self, key: u64) -> Result<Option<u64>> {
        self.search_one_shared(key)
    }

    fn get_many_shared(&self, keys: &[u64]) -> Result<Vec<Option<u64>>> {
        self.search_many_shared(keys)
    }

    fn scan_shared(&self, cur: &mut RangeCursor, out: &mut Vec<(u64, u64)>) -> Result<()> {
        self.prange_shared(cur, out)
    }
}

/// The logged methods every engine has ([`crate::durable::logged_engine_methods`]), each
/// after the flush of an OPQ a shared append left full ([`PioBTree::settle`]).
impl SerialEngine for PioBTree {
    fn insert(&mut self, key: u64, value: u64) -> Result<()> {
        self.settle()?;
        Logged::logged(self, LogicalOp::Insert(key, value))
    }

    fn delete(&mut self, key: u64) -> Result<()> {
        self.settle()?;
        Logged::logged(self, LogicalOp::Delete(key))
    }

    fn bulk_insert(&mut self, sorted: &[(u64, u64)]) -> Result<()> {
        self.settle()?;
        Logged::bulk_logged(self, sorted)
    }

    fn delete_range(&mut self, lo: u64, hi: u64) -> Result<()> {
        self.settle()?;
        Logged::logged(self, LogicalOp::DeleteRange(lo, hi))
    }

    fn apply_batch(&mut self, ops: &[LogicalOp]) -> Result<()> {
        self.settle()?;
        Logged::logged(self, LogicalOp::Batch(ops.to_vec()))
    }

    fn flush_ticket(&mut self) -> Result<Option<crate::durable::FlushTicket>> {
        Logged::log(self).prepare_flush()
    }

    fn close(&mut self) -> Result<()> {
        self.settle()?;
        Logged::checkpoint(self)
    }

    fn get(&mut self, key: u64) -> Result<Option<u64>> {
        self.search_one(key)
    }

    fn get_many(&mut self, keys: &[u64]) -> Result<Vec<Option<u64>>> {
        self.search_many(keys)
    }

    fn scan(&mut self, cur: &mut RangeCursor, out: &mut Vec<(u64, u64)>) -> Result<()> {
        self.prange(cur, out)
    }

    fn stats(&self) -> Stats {
        let c = &self.counters;
        // Read under one hold of the OPQ's lock, released before anything else takes it.
        let (opq_entries, tombs, opq_capacity, opq_sorts, opq_bytes) = {
            let q = self.opq.read();
            let tombs = q.tombs().len() as u64;
            (
                q.len() as u64,
                tombs,
                q.capacity() as u64,
                q.sorts,
                q.memory_bytes(),
            )
        };
        let engine_counters = counters(&[
            ("height", u64::from(self.height)),
            ("leaves", self.leaves),
            ("leaf_records", self.leaf_records),
            ("leaf_segments", u64::from(self.segs)),
            ("opq_entries", opq_entries),
            ("range_deletes", c.range_deletes),
            ("range_tombstones", tombs),
            ("range_tombstones_applied", c.range_tombstones_applied),
            ("leaves_freed_unread", c.leaves_freed_unread),
            (
                "leaves_skipped_by_tombstones",
                c.leaves_skipped_by_tombstones.load(Ordering::Relaxed),
            ),
            ("leaf_records_bound", u64::from(self.leaf_records_bound)),
            ("opq_capacity", opq_capacity),
            ("opq_sorts", opq_sorts),
            ("opq_hits", c.opq_hits.load(Ordering::Relaxed)),
            ("lsmap_entries", self.lsmap.len()),
            ("bupdates", c.bupdates),
            ("bupdate_entries", c.bupdate_entries),
            ("leaf_appends", c.leaf_appends),
            ("shrinks", c.shrinks),
            ("leaf_splits", c.leaf_splits),
            ("internal_splits", c.internal_splits),
            ("root_splits", c.root_splits),
            ("merges", c.merges),
            ("redistributions", c.redistributions),
            ("mpsearches", c.mpsearches.load(Ordering::Relaxed)),
            ("psync_reads", c.psync_reads.load(Ordering::Relaxed)),
            ("shared_writes", c.shared_writes.load(Ordering::Relaxed)),
        ]);
        let mut s = self.pager.stats(
            EngineKind::PioBTree,
            engine_counters,
            self.pager.memory_bytes() + opq_bytes + self.lsmap.memory_bytes(),
        );
        s.shape.leaves = Some(self.leaves);
        s.shape.write_buffer_entries = Some(opq_capacity);
        s.shape.leaf_splits = Some(c.leaf_splits);
        s
    }

    fn check_integrity(&mut self) -> Result<()> {
        self.check()
    }
}

#[cfg(test)]
mod capacity_tests {
    use super::PioOptions;

    /// The numbers the cost model's unit tests take for the PIO B-tree's pages.
    #[test]
    fn page_capacities() {
        // Packed leaf segment: 16-byte records and a bit each, 512 -> 29, 4096 -> 252;
        // internal node: (512 - 32) / 16 = 30, (4096 - 32) / 16 = 254.
        assert_eq!(PioOptions::leaf_segment_records(512), 29);
        assert_eq!(PioOptions::leaf_segment_records(4096), 252);
        assert_eq!(PioOptions::internal_node_entries(512), 30);
        assert_eq!(PioOptions::internal_node_entries(4096), 254);
        assert_eq!(PioOptions::leaf_segment_records(10), 0);
        assert_eq!(PioOptions::internal_node_entries(10), 0);
        assert_eq!(super::PIO_OPQ_ENTRY_BYTES, 24);
    }
}
