//! The LSM-tree (`EngineKind::Lsm`; O'Neil et al. 1996) as the FD-tree paper implements its
//! competitor (App. D): "a forest consisting of multiple B+-tree components" of stepped
//! sizes, the size ratio between two components equal to the FD-tree's k, the smallest
//! tree the size of the locality area (the FD-tree's head tree), and multi-page I/O in the
//! merges between components.
//!
//! # Structure
//! - **C0**: a small B+-tree of typed entries through the buffer pool, updated in place:
//!   the FD-tree's head tree ([`crate::kit::sorted::head::Head`]) holding only
//!   index entries (normal entries and tombstones; a split may add an internal fence, which
//!   C0 ignores). At most `LsmOptions::c0_bytes` (default 512 KiB); its capacity |C0| is
//!   `c0_pages · f / 2` entries, as for the FD-tree's head tree (f: entries per page).
//! - **C1..Cn** ([`component`]): B+-trees built bottom-up, each in ONE contiguous extent
//!   (leaves first, then the internal levels), written once in sequential requests of
//!   `io_unit_bytes` and never changed in place. Capacities |Ci| = k^i·|C0|. A level may
//!   be empty (its component merged into the next one). A `k` left to the cost model is
//!   re-chosen for the tree's size whenever one component holds the whole tree and has
//!   outgrown its level (a bulk load; a cascade that overflows the last component), and
//!   that component moves to the level that holds it without being rewritten
//!   ([`crate::kit::sorted::tune`]).
//! - **Entries**: the FD-tree's typed entries (key, value, type outside the key, so every
//!   u64 is a user key; [`crate::kit::sorted::entry`]: packed, 250 to a 4 KiB page, from
//!   format 7, 24-byte before, as the engine state's `packed` says); a tombstone is the
//!   FD-tree's filter type.
//! - **Range tombstones** ([`crate::kit::sorted::tombs`], which fixes their semantics):
//!   every level (C0, C1, ...) holds a set of disjoint closed key intervals, in memory and
//!   in the manifest, also a level whose component is empty. A level's range tombstones
//!   hide keys of the OLDER levels only; its own entries are always newer than them.
//!
//! # On-disk format
//! C0 nodes: the FD-tree head-tree format. Component pages: see [`component`]. The
//! manifest's engine state holds C0 (root, height, first leaf, counts) and for every level
//! its component (extent, leaves, height, root, entries, tombstones) or nothing, plus
//! `c0_tombs` and `tombs` (level i + 1 at index i, as long as `components`): the range
//! tombstones as lists of `[lo, hi]` pairs. Both default to empty, so manifests written
//! before range tombstones open unchanged. No manifest holds a merge in progress (a
//! checkpoint completes it first: Durability).
//!
//! # Rolling merge (O'Neil et al. 1996 §2.2; [`merge`])
//! With `LsmOptions::deamortize` (the default) a full C0 is frozen and merged while a new
//! C0 takes the mutations, as the FD-tree's deamortized merge (§3.4 of its paper) and the
//! LSM paper's rolling merge, whose cursor advances while inserts go on. The frozen C0's
//! entries are taken into memory and its pages freed, so the pool holds one C0. Each mutation
//! advances the merge by its work left (input entries of the cascade, estimated as it
//! would go without cancellations) over the room left in the new C0 less a sixteenth
//! ([`crate::kit::sorted::pace`]), so it completes before the new C0 fills, its I/O spread
//! over the whole fill; if C0 fills first, the merge is finished at once
//! (`forced_merge_completions`). Components still go out in whole multi-page writes of
//! `io_unit_bytes`, and a merge's next read is in flight while the inserts between its
//! steps run. Searches look in C0, the frozen C0's entries (a binary search), then the
//! components, which the merge does not change until it completes: it then publishes its
//! new components and range tombstones, frees the components it merged, drops the frozen
//! entries, and a full C0 is frozen in turn. A checkpoint (the log's size, `close`)
//! completes a merge in progress first. Without `deamortize`, the merge runs to completion
//! in the mutation that filled C0.
//!
//! On a device whose requests overlap with work (a file through io_uring:
//! [`crate::io::Device::overlaps`]) the rolling merge runs to its end on the merge thread
//! instead ([`crate::kit::sorted::job`]): the same job, its reads and writes on a device
//! handle of its own ([`crate::io::Device::job_device`]), its other requests (extents)
//! served once per mutation by the engine's thread, which alone touches the pager and
//! waits while the
//! merge is behind C0's fill; a mutation that finds C0 full, and a checkpoint, wait for
//! its end. It reads only components it replaces and writes
//! only extents allocated for it, so the index it leaves does not depend on its pace.
//!
//! # Invariants (checked by `check_integrity`)
//! 1. Every component is a B+-tree: leaves contiguous at the start of its extent, keys
//!    strictly increasing across them, no empty leaf; internal levels after them, each
//!    separator the first key of its child's subtree, all leaves on one depth, every page
//!    of the extent reached exactly once, the root the extent's last page.
//! 2. Entries plus range tombstones of Ci ≤ k^i·|C0| for every level i ≥ 1, and C0's
//!    entries plus range tombstones below |C0| between operations (it is merged when they
//!    reach |C0|).
//! 3. The last (oldest) non-empty component holds no tombstone and no range tombstone,
//!    nor does any level past it; with no component at all only C0 holds range
//!    tombstones, and only while a frozen C0 exists. Every level's range tombstones are
//!    sorted, disjoint and coalesced (`Tombs::check`).
//! 4. C0 is a valid head tree (order, one depth, counts); the frozen C0's entries, which
//!    exist exactly while a rolling merge runs, are sorted by key, without fences.
//! 5. Counts in the manifest state equal the structure; no two structures share a page
//!    (the merge's output extents included), and no reachable page is free in the extent
//!    allocator.
//!
//! # Operations
//! Search ([`search`]): C0, the frozen C0, then C1, C2, ... (newest first); at each level the level's
//! entry of the key decides first (a tombstone meaning absent), then its range tombstones
//! (covered: absent), else the next level. A component is searched by a descent from its
//! root: one single-page read per level, through the buffer pool (see [`component`]). Range
//! scans merge the sources newest first in bounded batches (at most `io_unit` leaves per
//! component) in one streaming pass, dropping a key whose winning entry is older than a
//! level whose range tombstones cover it (one forward cursor per level); a component whose
//! batch range one newer range tombstone spans is not read.
//! Insert: an upsert into C0. Delete: a blind tombstone into C0 (no read), or a plain
//! removal from C0 while no component and no frozen C0 exist; with `LsmOptions::search_before_delete`
//! (the FD-tree paper's baseline) a search first, and nothing for an absent key.
//! `delete_range(lo, hi)`: C0's own entries in the range are removed and, if a component
//! or a frozen C0 exists, `[lo, hi]` joins C0's range tombstones: the C0 leaves the range spans (C0 is
//! small and lives in the pool) and one interval, whatever the range's size. When C0's entries plus range tombstones reach |C0|
//! it is merged into C1 ([`merge`]; a step per mutation, see Rolling merge), and while a
//! level's entries plus range tombstones exceed its capacity it is merged into the next
//! (rolling merges of whole components;
//! a level holding only range tombstones is merged as an empty input with them). A merge
//! drops the older input's entries that the newer input's range tombstones cover, and
//! the output level keeps the union of both inputs' range tombstones; a merged level's
//! range tombstones move down with its entries. Tombstones and range tombstones are
//! dropped by a merge whose output is the last component (also one that holds no entry).
//! `bulk_insert` into an empty index builds one component directly (at the first level
//! whose capacity holds it) and clears every range tombstone; otherwise it is a sequence of
//! inserts logged as one record.
//!
//! # Durability
//! The shared [`crate::durable::Pager`]: every operation is logged (logical redo) before it
//! is applied; `flush` syncs the log. C0 pages change in place under before-images.
//! Components are shadow-paged: a merge writes new extents, frees the old ones (reused
//! only after the next checkpoint) and the new set is published by the checkpoint taken
//! after an operation that completed a merge, so a crash finds the old set or the new
//! one; until then the log holds every operation since the old set, and replay redoes the
//! merges. As the FD-tree's runs ([`Pager::extents_publish_due`]): that checkpoint is due
//! once the pages freed since the last one reach the components' (256 at least), so the
//! file keeps within about twice the index and replay redoes about that much merging; on a
//! device of fixed size (a simulated SSD, raw NAND), after every merge. (A checkpoint after
//! every merge also flushed the new C0, half full by then, and logged before-images of
//! its pages as they next changed.) With rolling merges the publishing checkpoint waits for
//! the next freeze of C0 and is taken just before it, the freeze right after it
//! (`after_checkpoint`; a batch that fills C0 to twice its capacity meanwhile, or replay,
//! has it frozen at once; on a device of fixed size the checkpoint still follows the merge at once):
//! C0's pages are flushed just before they are freed, and the new C0's pages,
//! all allocated after that checkpoint, change with no before-images (a checkpoint at the
//! merge's completion had C0's pages logged again, which added markedly to the log an
//! insert writes). A checkpoint completes a rolling merge in progress
//! first ([`Logged::before_checkpoint`]), so no manifest names a frozen C0, whose entries
//! live in memory and in the log alone: replay rebuilds them, and the merge, from the
//! operations since the last checkpoint. The
//! range tombstones of every level are saved in the same manifest state, so a checkpoint
//! publishes a merge's components and tombstone sets together; C0's range tombstones
//! change under logged operations, as C0's pages do, and every checkpoint saves them.
//! Recovery = `Pager::open` (the checkpoint's state, range
//! tombstones included) + replay of the WAL (logged `DeleteRange`s add them again).
//!
//! # Counters (`Stats::engine_counters`)
//! `components` (non-empty ones), `k`, `k_changes` (re-choices of `k` that changed it,
//! since open), `entries` (stored: C0, the frozen C0 and components, tombstones
//! included), `c0_entries`, `frozen_c0_entries`, `c0_height`, `c0_pages`, `c0_capacity`,
//! `merges` (merges of one level into the next, completed), `thread_merges` (rolling
//! merges completed on the merge thread), `merge_thread_us`, `merge_thread_cpu_us` and
//! `merge_thread_io_wait_us` (those merges' time on the thread, its CPU time, and their
//! waits for their requests), `merge_in_progress`,
//! `forced_merge_completions` (rolling merges finished at once because C0 filled),
//! `merge_pages_read`, `merge_pages_written`, `range_deletes` (calls applied),
//! `range_tombstones` (intervals of all levels), `c0_range_tombstones`, `shared_writes`
//! (point writes made under the shared lock, since open: Thread safety), and per level i
//! `component_<i>_entries`, `_tombstones`, `_range_tombstones`, `_pages`, `_height`,
//! `_capacity`.
//!
//! # Memory
//! The buffer pool, which holds C0 (`c0_bytes` is at most a quarter of the budget, as
//! the FD-tree's head tree); every
//! level's range tombstones (16 bytes an interval, at most the level's capacity by
//! Invariant 2); and during a merge: the frozen C0's entries (at most |C0|, 24 bytes each),
//! the merge's copy of the levels' range tombstones, the first keys of the written nodes
//! (16 bytes per page), two `io_unit` buffers per input and output (one in flight while
//! the other is decoded or filled: [`crate::kit::sorted::seq`]) and a batch of at most 512
//! merged entries (12 KiB) written a leaf's run at a time. All but the I/O buffers are
//! reported in `Stats::memory_bytes` and charged to the budget. During a range scan: at
//! most `io_unit` leaves per component.
//!
//! # Thread safety
//! Served to many threads by `kit::parallel::Parallel`. Point searches (`get`, `get_many`)
//! and range-scan batches (`scan`, `range_many`) hold the engine's lock shared and run in
//! parallel: C0 and its components are read through the Pager's shared path (the buffer
//! pool's latch protocol for pages read through the pool, the device's reader handles for
//! pages read past it, a scan's run of leaves in one request), and nothing a read does
//! changes the structure.
//!
//! Point writes (`insert`, `delete`) made while other operations are in progress run under
//! the shared lock too (`Shareable::PARALLEL_POINT_WRITES`), beside the reads and beside
//! each other: a write descends C0 and changes its leaf in place under the leaf's latch
//! (the buffer pool's frame latch, held exclusive), logging its logical record under that
//! same latch (`Head::upsert_shared`, `Pager::write_shared`) and handing a full WAL buffer
//! to the file after it lets go. Two writes of one key meet at one leaf, so the WAL holds
//! them in the order they took effect, and a reader of the leaf sees it before or after a
//! write, whole: a read that begins after a write returned sees it. Such a write changes no
//! page id, level, extent or range tombstone (a leaf with no room, a full C0, and range
//! deletes take the exclusive lock), so a descent made under the shared lock stays valid
//! until its latch, what a delete's search found below C0 holds until its write, and a
//! range scan, which resumes from a key (`RangeCursor::next`; it keeps no position in
//! the structure), returns every key of C0 at the instant it read its leaf. The frozen C0
//! and the components change only under the exclusive lock. The latch is the page's rather
//! than one over all of C0: C0 is a B+-tree in the buffer pool (its pages are the pool's
//! budget, its durability the Pager's before-images and checkpoints), so the page latch
//! the pool already holds for its readers orders the writes of a key, and writes of two
//! leaves run at once. What a shared write cannot change under that latch, the engine's
//! `&mut` state (C0's counts, the mutations a rolling merge is paced by), goes to atomics
//! ([`crate::kit::sorted::shared`]) that every `&mut` path folds in first; no shared write
//! runs beside a `&mut` path. No device I/O happens under the leaf's latch but what the
//! pool's shared path does for any reader (a miss is read outside the lock, as a search's,
//! before anything is logged). What needs the exclusive lock is asked for
//! (`SharedWrite::Maintain`) and runs right after the write: freezing a full C0 (or
//! completing the merge a full C0 waits for), a step of a rolling merge in progress
//! every [`crate::kit::sorted::shared::MAINTAIN_EVERY`] shared writes (by their share of
//! the pace; on the merge thread, serving its requests), and a checkpoint when the WAL
//! reached its size. A C0 may thus exceed |C0| by one entry per writer that was beside
//! the one that filled it, until that maintenance (the check of Invariant 2 allows it
//! meanwhile). Memory is as before: the pool holds C0. The other writes (range deletes,
//! batches, bulk inserts) hold the lock exclusive, one at a time; such a point write first
//! walks C0 under the shared lock, so that under the exclusive lock it finds its pages in
//! the pool. The pages a search reads past the pool
//! belong to published structures only: a merge writes new extents, which no search reads
//! until the merge is complete and taken in under the exclusive lock, and the extents it
//! frees are reused only after the next checkpoint. A flush syncs the WAL outside the lock
//! (group commit). The merge thread runs beside every operation, as with one thread: its
//! own device handle and its own buffers; its results are taken in by the next write.
//! With other operations in progress, a search that misses a page (through the pool or
//! past it) reads it with the lock released and searches again
//! (`Shareable::RESTARTS`, `crate::durable::outside`): a search changes nothing, and no
//! request started before the miss still writes a page it can reach (in-memory-level
//! pages reach the device as write-backs from the pool; a merge writes only extents no
//! search reaches yet), so the page read outside is used only if the device's write watch
//! saw no write of it meanwhile. Range scans' runs of pages are read under the lock.
//! A read made while no other operation is in progress takes the serial path under the
//! exclusive lock instead (`SerialEngine::get`, `scan`, `scan_many`): the same search
//! over `&mut Pager`, through the Pager's exclusive path (the pool's exclusive mode, the
//! device's own requests for pages past the pool), which spares each page the shared
//! path's latching, pinning and miss planning.
//! This read protocol and its constants are the sorted kit's, shared with the FD-tree
//! ([`crate::kit::sorted::reads`]: `Shareable` for every `SortedReads` engine, and the
//! serial reads through `sorted_serial_reads!`); this engine gives it its point search, its
//! range batch and the pages of C0 a write will change ([`search`]).

mod options;
pub use options::LsmOptions;
mod check;
pub mod component;
mod merge;
mod search;

use crate::durable::Pager;
use crate::durable::{logged_engine_methods, pager_store_methods, Logged};
use crate::durable::{LogicalOp, Manifest};
use crate::error::{Error, Result};
use crate::io::Storage;
use crate::kind::EngineKind;
use crate::kit::api::{SerialEngine, SharedWrite};
use crate::kit::sorted::entry::{self, Entry, Kind, Layout};
use crate::kit::sorted::head::Head;
use crate::kit::sorted::job::{MergeThread, Running};
use crate::kit::sorted::pace;
use crate::kit::sorted::reads::{sorted_serial_reads, SortedLevels, SortedReads};
use crate::kit::sorted::shared::SharedWrites;
use crate::kit::sorted::tombs::Tombs;
use crate::kit::sorted::tune::Retune;
use crate::settings::Settings;
use crate::stats::counters;
use crate::stats::{LevelShape, Stats};
use component::{Component, ComponentWriter, TOMBSTONE};
use merge::{MergeJob, Outcome};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Frames the engine needs at least: C0 splits touch a few pages at once.
const MIN_FRAMES: usize = 8;

/// Durable roots, saved in the manifest.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct State {
    c0: Head,
    /// Level i + 1 at index i; `None`: empty level.
    components: Vec<Option<Component>>,
    /// C0's range tombstones. Absent in manifests written before range tombstones.
    #[serde(default)]
    c0_tombs: Tombs,
    /// Level i + 1's range tombstones at index i, parallel to `components` (empty in
    /// manifests written before range tombstones).
    #[serde(default)]
    tombs: Vec<Tombs>,
    /// The size ratio in effect (absent in manifests written before `k` could be
    /// re-chosen: the options' `k`).
    #[serde(default)]
    k: Option<u64>,
    /// When `k` is the cost model's: the buffer pool the model is asked about when it
    /// re-chooses `k` ([`crate::kit::sorted::tune`]); absent: `k` is fixed.
    #[serde(default)]
    retune_pool_bytes: Option<u64>,
    /// The pages are packed ([`Layout::packed`]; format 7 on). Absent (false: wide pages)
    /// in the manifests of older builds.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    packed: bool,
}

#[derive(Debug, Default, Clone)]
struct Counters {
    merges: u64,
    merge_pages_read: u64,
    merge_pages_written: u64,
    forced_merge_completions: u64,
    range_deletes: u64,
    k_changes: u64,
}

/// Sizes derived from the options.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Params {
    /// The pages' layout, and f, the entries a page holds.
    lay: Layout,
    io_unit: u64,
    k: u64,
    /// |C0| in entries.
    cap0: u64,
}

impl Params {
    /// |Ci| = k^i·|C0| (i ≥ 1).
    fn capacity(&self, i: usize) -> u64 {
        let mut c = self.cap0;
        for _ in 0..i {
            c = c.saturating_mul(self.k);
        }
        c
    }
}

/// Check LSM-tree options against the page size (dispatched by `engine::validate`).
pub fn validate(opts: &Settings, o: &LsmOptions) -> Result<()> {
    let ps = opts.page_size as u64;
    if let Some(k) = o.k.filter(|&k| k < 2) {
        return Err(Error::InvalidOptions(format!(
            "lsm k {k} must be at least 2"
        )));
    }
    if o.c0_bytes < 2 * ps {
        return Err(Error::InvalidOptions(format!(
            "lsm c0_bytes {} is below two pages of {ps} bytes",
            o.c0_bytes
        )));
    }
    if o.io_unit_bytes < ps || o.io_unit_bytes % ps != 0 || o.io_unit_bytes > 64 << 20 {
        return Err(Error::InvalidOptions(format!(
            "lsm io_unit_bytes {} must be a whole number of {ps}-byte pages, at most 64 MiB",
            o.io_unit_bytes
        )));
    }
    Ok(())
}

/// `opts` with `k` decided: the given one, else the FD-tree's for the same index, whose
/// head tree is C0's size (FD-tree paper App. D: "the same as the k value in FD-tree");
/// and C0 at most a quarter of the memory budget (whole pages, at least two), as the
/// FD-tree's head tree: a rolling merge holds the frozen C0's entries beside the pool,
/// about half C0's bytes, and both are charged to the budget (`Stats::memory_bytes`).
pub(crate) fn resolve(s: &Settings, mut o: LsmOptions) -> Result<LsmOptions> {
    let ps = s.page_size as u64;
    let quarter = s.buffer_pool_bytes / 4 / ps * ps;
    o.c0_bytes = o.c0_bytes.min(quarter.max(2 * ps));
    if o.k.is_none() {
        o.k = Some(s.fdtree_model_k(o.c0_bytes, entry::capacity(s.page_size) as u64)?);
    }
    Ok(o)
}

/// The engine's parameters from resolved options (a manifest always holds a `k`), for
/// pages of the layout `packed` says.
fn params(opts: &Settings, o: &LsmOptions, packed: bool) -> Result<Params> {
    let lay = Layout::of(packed, opts.page_size);
    let cap = lay.cap();
    let k =
        o.k.ok_or_else(|| Error::corruption("MANIFEST", None, "LSM options without k"))?;
    Ok(Params {
        lay,
        io_unit: o.io_unit_bytes / opts.page_size as u64,
        k: u64::from(k),
        cap0: o.c0_bytes / opts.page_size as u64 * cap as u64 / 2,
    })
}

/// The LSM-tree engine.
pub struct Lsm {
    pager: Pager,
    p: Params,
    c0: Head,
    /// C0's range tombstones: they hide keys of C1, C2, ... only (tombs.rs).
    c0_tombs: Tombs,
    /// Run the rolling merge a step per mutation (`LsmOptions::deamortize`).
    deamortize: bool,
    /// The entries of the C0 a rolling merge in progress (`job`) is merging (its pages
    /// were freed when it was frozen), newer than every component and older than C0, and
    /// its range tombstones (hiding the components' keys).
    frozen: Option<Arc<[Entry]>>,
    frozen_tombs: Tombs,
    job: Option<Running<MergeJob>>,
    /// Where merges run ([`crate::kit::sorted::job`]).
    merges: MergeThread,
    components: Vec<Option<Component>>,
    /// Level i + 1's range tombstones at index i, also where the component is `None`; as
    /// long as `components`.
    tombs: Vec<Tombs>,
    checkpoint_due: bool,
    /// Completed merges wait for the checkpoint that publishes them, taken when C0 is
    /// next frozen (deamortized mode).
    publish_due: bool,
    search_before_delete: bool,
    /// Re-choose `k` as the tree grows (`k` left to the cost model;
    /// [`crate::kit::sorted::tune`]).
    retune: Option<Retune>,
    counters: Counters,
    /// What point writes made under the shared lock did to C0 that the fields above do not
    /// hold yet (its counts, the mutations a merge in progress is paced by): module doc,
    /// Thread safety.
    shared: SharedWrites,
}

impl Lsm {
    /// Memory besides the pool, charged to the budget (`Logged::charge_memory`): every
    /// level's range tombstones and the rolling merge's memory (the frozen C0's entries).
    fn structure_bytes(&self) -> u64 {
        let frozen = self.frozen.as_ref().map_or(0, |es| es.len());
        self.all_tombs().map(Tombs::memory_bytes).sum::<u64>()
            + self.job.as_ref().map_or(0, Running::memory_bytes)
            + (frozen * std::mem::size_of::<Entry>()) as u64
    }

    /// A new empty LSM-tree: an empty C0, no components.
    /// `o` is resolved ([`resolve`]: `k` decided) and `s.record` holds it; `model_k`: its
    /// `k` is the cost model's, re-chosen as the tree grows ([`crate::kit::sorted::tune`]).
    pub fn create(storage: Storage, s: Settings, o: LsmOptions, model_k: bool) -> Result<Lsm> {
        validate(&s, &o)?;
        let p = params(&s, &o, true)?;
        let retune = model_k
            .then(|| Retune::from_settings(&s, p.lay.cap(), o.c0_bytes, s.buffer_pool_bytes));
        let config = s.pager_config(MIN_FRAMES, 0);
        let mut pager = Pager::create(storage.device, storage.vfs, config, s.record)?;
        let merges = MergeThread::new(o.deamortize, &mut pager);
        let c0 = Head::create(&mut pager, p.lay)?;
        let mut t = Lsm {
            pager,
            p,
            c0,
            c0_tombs: Tombs::new(),
            deamortize: o.deamortize,
            frozen: None,
            frozen_tombs: Tombs::new(),
            job: None,
            merges,
            components: Vec::new(),
            tombs: Vec::new(),
            checkpoint_due: false,
            publish_due: false,
            search_before_delete: o.search_before_delete,
            retune,
            counters: Counters::default(),
            shared: SharedWrites::default(),
        };
        t.checkpoint()?;
        Ok(t)
    }

    /// Reopen: restore the checkpoint image and replay the WAL (a checkpoint holds no merge
    /// in progress: [`Logged::before_checkpoint`] completes it).
    pub fn open(storage: Storage, manifest: Manifest, s: Settings, o: LsmOptions) -> Result<Lsm> {
        let state: State = manifest.engine_state("LSM")?;
        let mut tombs = state.tombs;
        if tombs.is_empty() {
            tombs.resize(state.components.len(), Tombs::new());
        }
        if tombs.len() != state.components.len() {
            return Err(Error::corruption(
                "MANIFEST",
                None,
                format!(
                    "LSM state: {} range tombstone sets for {} levels",
                    tombs.len(),
                    state.components.len()
                ),
            ));
        }
        let mut p = params(&s, &o, state.packed)?;
        if let Some(k) = state.k {
            // The options' rule (`validate`): a k below 2 would give levels that never grow.
            if k < 2 {
                return Err(Error::corruption(
                    "MANIFEST",
                    None,
                    format!("LSM state: k = {k} below 2"),
                ));
            }
            p.k = k;
        }
        let retune = (state.retune_pool_bytes)
            .map(|b| Retune::from_settings(&s, p.lay.cap(), o.c0_bytes, b));
        let config = s.pager_config(MIN_FRAMES, 0);
        let (mut pager, ops) = Pager::open(storage.device, storage.vfs, &manifest, config)?;
        let merges = MergeThread::new(o.deamortize, &mut pager);
        let mut t = Lsm {
            pager,
            p,
            c0: state.c0,
            c0_tombs: state.c0_tombs,
            deamortize: o.deamortize,
            frozen: None,
            frozen_tombs: Tombs::new(),
            job: None,
            merges,
            components: state.components,
            tombs,
            checkpoint_due: false,
            publish_due: false,
            search_before_delete: o.search_before_delete,
            retune,
            counters: Counters::default(),
            shared: SharedWrites::default(),
        };
        if t.c0_full() {
            // The checkpoint taken just before a freeze saved a full C0: it is frozen now,
            // as it was after that checkpoint (Invariant 2 holds between operations).
            t.freeze_and_merge()?;
        }
        t.recover(&ops)?;
        Ok(t)
    }

    /// Something older than C0 may hold keys: a component, or a frozen C0.
    fn holds_older(&self) -> bool {
        self.frozen.is_some() || self.components.iter().any(Option::is_some)
    }

    /// True if no component at a level above `i` (0-based index) is non-empty.
    fn is_last(&self, i: usize) -> bool {
        self.components[i + 1..].iter().all(Option::is_none)
    }

    /// C0 is full: its entries (fences included, as before range tombstones) and its
    /// range tombstones reach |C0|, and it holds something to merge.
    fn c0_full(&self) -> bool {
        let c0 = self.shared.counted(&self.c0);
        let held = c0.index_entries > 0 || !self.c0_tombs.is_empty();
        held && c0.entries + self.c0_tombs.len() as u64 >= self.p.cap0
    }

    /// C0 holds twice its capacity: a batch or bulk insert went on filling it while its
    /// freeze waited for the end of the operation's checkpoint; it is frozen at once.
    fn c0_overfull(&self) -> bool {
        self.c0_fill() >= 2 * self.p.cap0
    }

    /// Level i + 1's fill against |C(i+1)|: its entries and its range tombstones (so that
    /// range tombstones, too, move down and retire at the last level).
    fn fill(&self, i: usize) -> u64 {
        self.components[i].map_or(0, |c| c.entries) + self.tombs[i].len() as u64
    }

    /// C0's fill towards |C0|: its entries (the shared writes' counted) and its range
    /// tombstones.
    fn c0_fill(&self) -> u64 {
        self.shared.fill(&self.c0, &self.c0_tombs)
    }

    /// Move the counts of the writes made under the shared lock into C0's (on `&mut`, no
    /// shared write beside it: module doc, Thread safety).
    fn fold(&mut self) {
        self.shared.fold(&mut self.c0);
    }

    /// Advance a rolling merge in progress; start one when C0 is full.
    fn after_mutation(&mut self) -> Result<()> {
        self.after_mutations(1)
    }

    /// [`Lsm::after_mutation`] for `n` mutations at once (the shared writes since the last
    /// maintenance): a stepped merge advances by `n` steps of the pace.
    fn after_mutations(&mut self, n: u64) -> Result<()> {
        if self.job.as_ref().is_some_and(Running::on_thread) {
            // The merge thread's requests are served once per operation, which waits
            // while the merge is behind C0's fill, and for its end when C0 is full
            // (`Running::advance`).
            let wait = self.c0_fill() >= self.p.cap0;
            self.counters.forced_merge_completions += u64::from(wait);
            self.advance_job(if wait { u64::MAX } else { 0 })?;
        } else if self.job.is_some() {
            let fill = self.c0_fill();
            let units = if fill >= self.p.cap0 {
                // C0 is full before the merge completed: finish it now.
                self.counters.forced_merge_completions += 1;
                u64::MAX
            } else {
                // The work left, spread over the mutations C0 has room for, so that the
                // merge completes as C0 fills (the FD-tree's, §3.4 there).
                let work = self.job.as_ref().map_or(0, Running::work);
                pace::spread(work, fill, self.p.cap0, pace::margin(self.p.cap0)).saturating_mul(n)
            };
            self.advance_job(units)?;
        }
        if self.job.is_none() && self.c0_full() {
            // While replaying no checkpoint runs: freeze at once, as the run that
            // logged these operations did right after its checkpoint.
            if self.publish_due && !self.c0_overfull() && !self.pager.replaying() {
                // Publish the completed merges first, C0 frozen right after the
                // checkpoint (`after_checkpoint`): its pages are flushed once, just before
                // they are freed, and the new C0's pages, all allocated after that
                // checkpoint, change with no before-images (module doc, Durability).
                self.checkpoint_due = true;
            } else {
                self.freeze_and_merge()?;
            }
        }
        Ok(())
    }

    /// Freeze C0 (and its range tombstones): its entries go to memory and its pages are
    /// freed (nothing else reads them: searches look in the entries, and a checkpoint
    /// completes the merge first, so no manifest names a frozen C0), a new C0 takes the
    /// mutations, and a merge of the frozen entries starts; it runs to completion at once
    /// unless deamortized.
    fn freeze_and_merge(&mut self) -> Result<()> {
        let lay = self.p.lay;
        self.fold();
        let old = std::mem::replace(&mut self.c0, Head::create(&mut self.pager, lay)?);
        let entries: Vec<Entry> = old
            .all_entries(&mut self.pager, lay)?
            .into_iter()
            .filter(|e| !e.is_fence())
            .collect();
        old.free(&mut self.pager, lay)?;
        let entries: Arc<[Entry]> = entries.into();
        self.frozen_tombs = std::mem::take(&mut self.c0_tombs);
        let job = MergeJob::start(
            &mut self.pager,
            &self.p,
            Arc::clone(&entries),
            self.frozen_tombs.clone(),
            self.components.clone(),
            self.tombs.clone(),
        )?;
        self.job = Some(self.merges.start(&mut self.pager, job, self.p)?);
        self.frozen = Some(entries);
        if !self.deamortize {
            self.advance_job(u64::MAX)?;
        }
        Ok(())
    }

    /// Advance the merge in progress by `units` entries, or serve the merge thread's
    /// requests at its pace ([`Running::advance`]), or to its end when `units` is `u64::MAX`.
    fn advance_job(&mut self, units: u64) -> Result<()> {
        let fill = (self.c0_fill(), self.p.cap0);
        let Some(job) = self.job.as_mut() else {
            return Ok(());
        };
        if let Some(out) = job.advance(&mut self.pager, &self.p, units, fill)? {
            self.merges.completed(job);
            self.job = None;
            self.complete(out)?;
        }
        Ok(())
    }

    /// Publish a completed rolling merge in memory: the new components and range
    /// tombstones; free the replaced components; drop the frozen C0's entries.
    fn complete(&mut self, out: Outcome) -> Result<()> {
        for c in &out.replaced {
            self.pager.free_extent(c.extent());
        }
        self.components = out.components;
        self.tombs = out.tombs;
        self.counters.merges += out.merges;
        self.counters.merge_pages_read += out.pages_read;
        self.counters.merge_pages_written += out.pages_written;
        self.frozen_tombs = Tombs::new();
        self.frozen = None;
        let i = out.level;
        if self.fill(i) > self.p.capacity(i + 1) && self.is_last(i) {
            // The last component outgrew its level, and every level above it is empty: it
            // holds the whole tree (and, as the last, no tombstones). A merge with nothing
            // would copy it unchanged, so it moves to the level that holds it, under k or
            // the k re-chosen for its size.
            self.place_whole_tree(i);
        }
        // Levels past the last component hold no range tombstones (Invariant 3): nothing
        // is lost with them.
        while self.components.last().is_some_and(Option::is_none) {
            self.components.pop();
            let t = self.tombs.pop();
            debug_assert!(t.unwrap_or_default().is_empty());
        }
        if self.components.is_empty() {
            // Nothing older than C0 is left for its range tombstones to hide.
            self.c0_tombs = Tombs::new();
        }
        // Published by a checkpoint once the pages freed since the last one reach the
        // components' (module doc, Durability).
        let live: u64 = self.components.iter().flatten().map(|c| c.pages).sum();
        if self.pager.extents_publish_due(live) {
            if self.deamortize && !self.pager.fixed_capacity() {
                // At the next freeze of C0 (`after_mutation`).
                self.publish_due = true;
            } else {
                // Now: amortized, C0 is the new, empty one; on a device of fixed size the
                // freed space is to be reusable at once (`Pager::extents_publish_due`).
                self.checkpoint_due = true;
            }
        }
        Ok(())
    }

    /// Re-choose `k` for a tree of `entries` entries, all in one component, when `k` is the
    /// model's ([`crate::kit::sorted::tune`]).
    fn retune_for(&mut self, entries: u64) {
        if let Some(r) = &self.retune {
            let k = r.k_for(entries, self.p.k);
            if k != self.p.k {
                self.p.k = k;
                self.counters.k_changes += 1;
            }
        }
    }

    /// The first level (1-based) whose capacity holds `entries`.
    fn level_for(&self, entries: u64) -> usize {
        let mut level = 1;
        while entries > self.p.capacity(level) {
            level += 1;
        }
        level
    }

    /// Move the component of level `i + 1`, which holds the whole tree, to the level that
    /// holds it after `k` is re-chosen for its size; no entry is rewritten.
    fn place_whole_tree(&mut self, i: usize) {
        let fill = self.fill(i);
        self.retune_for(fill);
        let to = self.level_for(fill) - 1;
        let c = self.components[i].take();
        if self.components.len() <= to {
            self.components.resize(to + 1, None);
            self.tombs.resize(to + 1, Tombs::new());
        }
        self.components[to] = c;
    }

    /// Every level's range tombstones, newest first: C0's, the frozen C0's (empty without
    /// a merge in progress), then each component level's; a range scan's level numbers.
    fn all_tombs(&self) -> impl Iterator<Item = &Tombs> {
        [&self.c0_tombs, &self.frozen_tombs]
            .into_iter()
            .chain(&self.tombs)
    }
}

/// Point writes under the shared lock (module doc, Thread safety); an insert is the
/// sorted kit's (`SortedReads::shared_head`).
impl Lsm {
    /// A delete beside other operations, as the serial one: with
    /// `search_before_delete`, an absent key needs nothing (the search is the delete's
    /// instant); a blind tombstone into C0, or, while nothing older than C0 exists, the
    /// key's removal from C0 (which leaves C0's shape as it was).
    fn delete_shared(&self, key: u64) -> Result<SharedWrite> {
        if self.search_before_delete {
            let (levels, pager) = self.levels();
            if levels.lookup(pager, key)?.is_none() {
                return Ok(SharedWrite::Done);
            }
        }
        let op = LogicalOp::Delete(key);
        if self.holds_older() {
            return self
                .shared_head()
                .upsert(Entry::new(key, 0, TOMBSTONE), &op);
        }
        // Nothing older than C0 exists while the shared lock is held: only the exclusive
        // path freezes C0 or publishes a merge.
        self.shared_head().remove(key, &op)
    }

    /// Under the exclusive lock after shared writes asked for it: their counts into C0,
    /// the merge in progress advanced by their mutations (or C0 frozen when full), then
    /// the memory charge and a checkpoint when due, as after a serial write.
    fn maintain(&mut self) -> Result<()> {
        self.fold();
        let n = self.shared.maintained();
        if n > 0 || self.c0_full() {
            self.after_mutations(n.max(1))?;
        }
        self.after_op()
    }
}

impl Logged for Lsm {
    pager_store_methods!();

    fn engine_state(&self) -> serde_json::Value {
        serde_json::json!(State {
            c0: self.shared.counted(&self.c0),
            components: self.components.clone(),
            c0_tombs: self.c0_tombs.clone(),
            tombs: self.tombs.clone(),
            k: Some(self.p.k),
            retune_pool_bytes: self.retune.as_ref().map(Retune::pool_bytes),
            packed: self.p.lay.is_packed(),
        })
    }

    /// A merge in progress is completed: a checkpoint publishes whole merges only, and the
    /// frozen C0 lives in memory alone. (A full C0 is frozen after the checkpoint.)
    fn before_checkpoint(&mut self) -> Result<()> {
        self.fold();
        while self.job.is_some() {
            self.advance_job(u64::MAX)?;
        }
        Ok(())
    }

    /// The checkpoint published every completed merge; a full C0 (waiting for it, or
    /// filled by the merge completed first) is frozen now.
    fn after_checkpoint(&mut self) -> Result<()> {
        self.checkpoint_due = false;
        self.publish_due = false;
        if self.job.is_none() && self.c0_full() && !self.pager.replaying() {
            self.freeze_and_merge()?;
        }
        Ok(())
    }

    fn insert_unlogged(&mut self, key: u64, value: u64) -> Result<()> {
        self.fold();
        self.c0.upsert(
            &mut self.pager,
            self.p.lay,
            Entry::new(key, value, Kind::Normal),
        )?;
        self.after_mutation()
    }

    /// A blind tombstone; with no component and no frozen C0, nothing older can hold the
    /// key.
    fn delete_unlogged(&mut self, key: u64) -> Result<()> {
        self.fold();
        if !self.holds_older() {
            self.c0.remove(&mut self.pager, self.p.lay, key)?;
            return Ok(());
        }
        self.c0
            .upsert(&mut self.pager, self.p.lay, Entry::new(key, 0, TOMBSTONE))?;
        self.after_mutation()
    }

    /// A range tombstone in C0 (tombs.rs): C0's own entries in the range go, and
    /// `[lo, hi]` joins C0's range tombstones to hide the keys of the components, a few
    /// C0 pages whatever the range's size. With no component, nothing older can hold a
    /// key of the range (and no level holds range tombstones, Invariant 3): the removal
    /// suffices, as for a point delete.
    fn delete_range_unlogged(&mut self, lo: u64, hi: u64) -> Result<()> {
        self.counters.range_deletes += 1;
        self.fold();
        self.c0.remove_range(&mut self.pager, self.p.lay, lo, hi)?;
        if self.holds_older() {
            self.c0_tombs.add(lo, hi);
        }
        self.after_mutation()
    }

    /// No entry in C0, no merge in progress and no component. Range tombstones then hide
    /// nothing (none exist without a component, Invariant 3; `load_empty` clears them all
    /// the same).
    fn holds_nothing(&self) -> bool {
        self.shared.entries(&self.c0) == 0
            && self.job.is_none()
            && self.components.iter().all(Option::is_none)
    }

    /// Build one component of an empty index directly from sorted input.
    fn load_empty(&mut self, sorted: &[(u64, u64)]) -> Result<()> {
        self.fold();
        let n = sorted.len() as u64;
        self.retune_for(n);
        let level = self.level_for(n);
        let mut w = ComponentWriter::new(&mut self.pager, self.p.lay, self.p.io_unit, n)?;
        for &(k, v) in sorted {
            w.push(&mut self.pager, Entry::new(k, v, Kind::Normal))?;
        }
        let c = w.finish(&mut self.pager)?;
        let mut components = vec![None; level];
        components[level - 1] = c;
        self.components = components;
        // Nothing older than the loaded data is left to hide: range tombstones would only
        // hide it.
        self.c0_tombs = Tombs::new();
        self.tombs = vec![Tombs::new(); level];
        Ok(())
    }

    /// With `search_before_delete`, only a present key is deleted (FD-tree paper §4: "a
    /// deletion is implemented by a search followed by an insertion").
    fn delete_needed(&mut self, key: u64) -> Result<bool> {
        if !self.search_before_delete {
            return Ok(true);
        }
        let (levels, pager) = self.levels();
        Ok(levels.lookup(pager, key)?.is_some())
    }

    /// A merge publishes its new components (and frees the old) with a checkpoint.
    fn checkpoint_due(&self) -> bool {
        self.checkpoint_due
    }
}

impl SerialEngine for Lsm {
    logged_engine_methods!();
    sorted_serial_reads!();

    fn stats(&self) -> Stats {
        let c = &self.counters;
        let c0 = self.shared.counted(&self.c0);
        let live: Vec<&Component> = self.components.iter().flatten().collect();
        let mut engine_counters = counters(&[
            ("components", live.len() as u64),
            ("k", self.p.k),
            ("k_changes", self.counters.k_changes),
            (
                "entries",
                c0.index_entries
                    + self.frozen.as_ref().map_or(0, |es| es.len() as u64)
                    + live.iter().map(|c| c.entries).sum::<u64>(),
            ),
            ("c0_entries", c0.index_entries),
            (
                "frozen_c0_entries",
                self.frozen.as_ref().map_or(0, |es| es.len() as u64),
            ),
            ("c0_height", u64::from(self.c0.height)),
            ("c0_pages", self.c0.pages),
            ("c0_capacity", self.p.cap0),
            ("merges", c.merges),
            ("merge_in_progress", u64::from(self.job.is_some())),
            ("forced_merge_completions", c.forced_merge_completions),
            ("merge_pages_read", c.merge_pages_read),
            ("merge_pages_written", c.merge_pages_written),
            ("range_deletes", c.range_deletes),
            ("c0_range_tombstones", self.c0_tombs.len() as u64),
            ("shared_writes", self.shared.total()),
            (
                "range_tombstones",
                self.all_tombs().map(|t| t.len() as u64).sum(),
            ),
        ]);
        engine_counters.extend(counters(&self.merges.counters()));
        let mut levels = Vec::new();
        for (i, comp) in self.components.iter().enumerate() {
            let l = i + 1;
            let comp = comp.unwrap_or(Component {
                start: 0,
                pages: 0,
                leaves: 0,
                height: 0,
                root: 0,
                entries: 0,
                tombstones: 0,
            });
            engine_counters.insert(format!("component_{l}_entries"), comp.entries);
            engine_counters.insert(format!("component_{l}_tombstones"), comp.tombstones);
            engine_counters.insert(
                format!("component_{l}_range_tombstones"),
                self.tombs[i].len() as u64,
            );
            engine_counters.insert(format!("component_{l}_pages"), comp.pages);
            engine_counters.insert(format!("component_{l}_height"), u64::from(comp.height));
            engine_counters.insert(format!("component_{l}_capacity"), self.p.capacity(l));
            levels.push(LevelShape {
                level: l as u64,
                entries: comp.entries,
                capacity: self.p.capacity(l),
            });
        }
        let memory = self.pager.memory_bytes() + self.structure_bytes();
        let mut s = self.pager.stats(EngineKind::Lsm, engine_counters, memory);
        s.shape.levels = levels;
        s.shape.write_buffer_entries = Some(self.p.cap0);
        s
    }

    fn check_integrity(&mut self) -> Result<()> {
        self.check()
    }
}
