//! The FD-tree (`EngineKind::FdTree`; Li, He, Yang, Luo, Yi, "Tree Indexing on Solid State
//! Drives", VLDB 2010): a small head tree on top of sorted runs of stepped sizes (the
//! logarithmic method), with fences between adjacent levels (fractional cascading).
//!
//! # Structure (§3.2)
//! - **L0, the head tree** ([`crate::kit::sorted::head`]): a B+-tree of pages
//!   through the buffer pool, at most `FdTreeOptions::head_tree_bytes` (default 512 KiB,
//!   App. D). Its capacity |L0| is `head_pages · f / 2` entries (index entries and fences),
//!   so that a tree of half-full leaves stays within the budget; f is the entries per page.
//! - **L1..L(l-1), the sorted runs** ([`run`]): each one contiguous extent, written once
//!   sequentially in requests of `io_unit_bytes` (default 512 KiB = 128 pages of 4 KiB),
//!   read through the pool by point searches and past it by merges and range scans.
//!   Capacities |Li| = k^i·|L0| (`FdTreeOptions::k`). A `k` left to the cost model is
//!   re-chosen for the tree's size whenever the whole tree is one run that reached its
//!   level's capacity (a bulk load; a cascade that overflows the lowest level), and that
//!   run moves to the level that holds it without being rewritten
//!   ([`crate::kit::sorted::tune`]).
//! - **Entries** ([`crate::kit::sorted::entry`]): key, value (index entries) or
//!   page id (fences), and a type — normal, filter, internal fence, external fence — kept
//!   outside the key, so every u64 is a user key. Within a level entries are sorted by key,
//!   fences before index entries of the same key; a level holds at most one index entry per
//!   key.
//!
//! # On-disk format
//! Run pages and head-tree nodes: see [`crate::kit::sorted::entry`] (packed: 16-byte
//! entries after an array of 2-bit types, f = 29 for 512-byte pages, 250 for 4 KiB; FD-trees
//! created before format 7: 24-byte entries, f = 20 and 169; the engine state's `packed`
//! says which). The manifest's engine state holds
//! the head tree (root, height, first leaf, counts), the frozen head tree of a deamortized
//! merge in progress with the extents that merge had written so far, every level's run
//! (first page, pages, entries), and the range tombstones of the head tree, the frozen
//! head tree and every level (`head_tombs`, `frozen_tombs`, `level_tombs`: lists of
//! `[lo, hi]` pairs, [`crate::kit::sorted::tombs`]; absent = none), the `k` in effect
//! (`k`; absent = the options' `k`) and, when `k` is the cost model's, the buffer pool the
//! model is asked about when it re-chooses it (`retune_pool_bytes`; absent = `k` fixed).
//!
//! # Invariants (checked by `check_integrity`)
//! 1. (§3.2, Invariant 1) The first entry of every page of every level is a fence; in the
//!    head tree, the first entry of every leaf but the first.
//! 2. (§3.2, Invariant 2) For consecutive fences f, g of a level (the head tree included),
//!    the page f points to holds every entry of the next level with key in [f.key, g.key):
//!    that page begins at or below f.key and the page after it at or above g.key. A fence
//!    with page [`crate::kit::sorted::entry::NONE`] covers keys below every key of
//!    the next level.
//! 3. (§3.2) Level i holds exactly one external fence per page of level i+1 (the head tree
//!    for L1), whose key is that page's first key.
//! 4. Entries are sorted within each level; index keys are unique per level.
//! 5. (§3.2) |Li| ≤ k^i·|L0| for every level; (§3.3) the last level holds no filters.
//! 6. Head tree: node order and separators, leaves on one depth, the leaf chain in order,
//!    at most f entries per node (leaves are not rebalanced on delete: the head tree is
//!    rebuilt at every merge).
//! 7. Range tombstones: each level's sorted, disjoint and coalesced; none in the last
//!    level, none in the head tree when no older level exists; the head tree's count
//!    towards |L0| (one entry each).
//! 8. Counts in the manifest state equal the structure; no two structures share a page
//!    and no reachable page is free in the extent allocator.
//!
//! # Operations (§3.3, App. B)
//! Search: [`search`]. Insert: into the head tree; at capacity it is merged into L1
//! ([`merge`], Algorithm 3), cascading. Delete (Algorithm 4): a search first; an absent key
//! needs nothing; a key whose newest entry is in the head tree and has no older live entry
//! below is removed there; otherwise a filter entry goes into the head tree. Upsert: a newer
//! normal entry shadows older ones; merges keep the newer. `delete_range`: a range
//! tombstone in the head tree (the filter entries generalised to a key range; semantics in
//! [`crate::kit::sorted::tombs`]): the head tree's entries in the range are removed and the
//! range joins its tombstones, which searches honour level by level, merges carry down
//! (dropping the older level's entries they cover) and the merge into the last level
//! retires; no level is read, whatever the range's size. `bulk_insert` into an empty tree builds the levels directly
//! (the bottom level from the input, the levels above from its fences, then the head
//! tree); into a non-empty tree it is a sequence of inserts (logged as one record).
//!
//! # Deamortized merge (§3.4)
//! With `FdTreeOptions::deamortize` (the default) a full head tree is frozen and merged
//! while a second head tree takes new entries; each mutation advances the merge by the
//! work left (input entries, estimated as the cascade would go without cancellations)
//! divided by half the room left in the new head tree, about `N_merge / (|L0|/2)` at
//! first, so it completes before the new head tree is full; front-loaded, so that the
//! frozen head tree leaves the buffer pool early ([`crate::kit::sorted::pace`]). Run
//! pages still go out in whole multi-page writes of `io_unit_bytes`. Searches look in the
//! new head tree, then the frozen one, then the levels (which the merge does not change
//! until it completes). When the merge completes, the new head
//! tree is rebuilt with its entries and the fences of the new L1 (bulk-loaded, at most
//! |L0| entries; the paper inserts them one by one) and the frozen one is freed. Also done
//! in the completing step: the fence-only levels above the merged level (1/f of its size).
//! If the new head tree fills before the merge completes, the merge is finished at once.
//! While a merge runs the index thus holds two head trees, each within `head_tree_bytes`.
//!
//! **The merge thread.** On a device whose requests run while the caller works (a file
//! through io_uring: [`crate::io::Device::overlaps`]) the same merge job runs to its end
//! on a second thread instead of a bounded number of entries per operation
//! ([`crate::durable::background`]): the insertions into the new head tree and the merge
//! use the two cores, where one core did both (the merge is a large share of an
//! insertion's CPU, and insertions on one core were CPU-bound with the device half idle). The merge
//! starts and finishes its reads and writes on a device handle of its own where the device
//! gives one (a file does: [`crate::io::Device::job_device`]); the engine thread alone
//! touches the pager: once per mutation it serves the merge's other requests (extents, and
//! on other devices its reads and writes), waiting only while the merge is behind the new
//! head tree's fill (at least that share of its estimated work done, so that no operation
//! waits for much more than its share: §3.4's bound), and an operation that finds the new
//! head tree full waits for its end (§3.4's forced completion, counted the same).
//! The merge reads only runs it replaces (which nothing frees before it completes) and
//! writes only extents allocated for it, so what it does and what the index holds are
//! the same whichever thread runs it and at whatever pace; the deterministic tests on
//! memory devices run it on the engine thread, the tests on files and the process kills
//! on the merge thread.
//!
//! # Durability
//! The shared [`crate::durable::Pager`] mechanism: every operation is logged (logical redo)
//! before it is applied; `flush` syncs the log. Head-tree pages are changed in place and
//! protected by before-images. Runs are never changed in place: a merge writes new extents
//! and frees the old ones (reused only after the next checkpoint), and the new level set is
//! published by the next checkpoint, so a crash finds either the old levels or the new
//! ones; until then the log holds every operation since the old ones, and replay redoes the
//! merges. That checkpoint is taken after the operation that completed a merge once the
//! pages freed since the last one (old runs and head trees, not yet reusable) reach the
//! pages of the levels (256 at least: [`Pager::extents_publish_due`]), so the pages the file keeps for a
//! crash stay within about the index's size (twice it at the merge that makes the
//! checkpoint due) and replay redoes at most about that much merging; on a device of fixed size
//! (a simulated SSD, raw NAND), after every merge, so that the space a merge frees is
//! reusable at once and a nearly full device still has room to replay; and, as for every
//! engine, when the log reaches its checkpoint size. (A checkpoint after every merge cost the
//! insert workloads a noticeable share of their CPU: a pool flush of the head tree, a log
//! switch and two syncs per merge, where merges come every |L0| inserts.)
//! Deamortized, that checkpoint waits for the next freeze of the head tree and is taken
//! just before it, the freeze right after it (`after_checkpoint`; a batch that fills the
//! head tree to twice its capacity meanwhile, or replay, has it frozen at once; on a device of fixed
//! size the checkpoint still follows the merge at once): the head tree's pages
//! are flushed just before they stop changing, and the new head tree's pages, all
//! allocated after that checkpoint, change with no before-images (a checkpoint at the
//! merge's completion had the rebuilt head tree's pages logged again as they next
//! changed). (Taken right after the freeze instead, with the next merge already running
//! on its thread, the checkpoint's syncs waited for the merge's writes in flight, which
//! lengthened the stall at the freeze and slowed inserts.)
//! Recovery = `Pager::open` + replay.
//! A merge in progress at a checkpoint is restarted on open (its partial extents freed).
//!
//! # Counters (`Stats::engine_counters`)
//! `levels` (l of the paper: the head tree and the runs), `k`, `k_changes` (re-choices of
//! `k` that changed it, since open), `entries` and `index_entries`
//! (stored, all levels), `filter_entries_in_runs`, `head_entries`, `head_height`,
//! `head_pages`, `head_capacity` (|L0|), `merges` (completed merges, cascades included),
//! `thread_merges` (of those, completed on the merge thread), `merge_thread_us`,
//! `merge_thread_cpu_us` and `merge_thread_io_wait_us` (those merges' time on the thread,
//! its CPU time, and their waits for their requests), `merge_in_progress`,
//! `merge_pages_read`, `merge_pages_written`,
//! `forced_merge_completions` (deamortized merges finished early, or waited for on the
//! merge thread, because the new head tree filled), `filters_inserted`, `range_deletes` (calls), `range_tombstones` (intervals,
//! all levels), `head_range_tombstones`, `shared_writes` (point writes made under the
//! shared lock, since open: Thread safety), and per level `level_<i>_entries`, `_pages`,
//! `_filters`, `_range_tombstones`, `_capacity`.
//!
//! # Memory
//! The buffer pool, plus during a merge the frozen head tree's index entries (at most |L0|,
//! 24 bytes each), the page fences of the rewritten levels (16 bytes per page) and two
//! `io_unit` buffers per input run and output run (one in flight while the other is
//! decoded or filled: [`crate::kit::sorted::seq`]) and a batch of at most 512 merged
//! entries (12 KiB) written a page run at a time, plus a
//! range-scan batch (at most `io_unit` pages per level), plus the range tombstones (16
//! bytes an interval). All but the I/O buffers (the merge's and the scan batch's) are
//! reported in `Stats::memory_bytes` and charged to the budget, as in the LSM-tree.
//!
//! # Thread safety
//! Served to many threads by `kit::parallel::Parallel`. Point searches (`get`, `get_many`)
//! and range-scan batches (`scan`, `range_many`) hold the engine's lock shared and run in
//! parallel: the head tree and its levels are read through the Pager's shared path (the
//! buffer pool's latch protocol for pages read through the pool, the device's reader
//! handles for pages read past it, a scan's pages of a level in one request), and nothing
//! a read does changes the structure.
//!
//! Point writes (`insert`, `delete`) made while other operations are in progress run under
//! the shared lock too (`Shareable::PARALLEL_POINT_WRITES`), beside the reads and beside
//! each other: a write descends the head tree and changes its leaf in place under the
//! leaf's latch (the buffer pool's frame latch, held exclusive), logging its logical record
//! under that same latch (`Head::upsert_shared`, `Pager::write_shared`) and handing a full
//! WAL buffer to the file after it lets go. Two writes of one key meet at one leaf, so the
//! WAL holds them in the order they took effect, and a reader of the leaf sees it before or
//! after a write, whole: a read that begins after a write returned sees it. A delete
//! (Algorithm 4) searches first, under the shared lock: an absent key needs nothing (the
//! search is the delete's instant); a filter entry or the key's removal then goes into the
//! leaf under its latch. What the search found below the head tree holds until then, since
//! the frozen head tree and the levels change only under the exclusive lock; a write of the
//! key by another thread in between is ordered before the delete, which leaves the key
//! absent either way. Such a write changes no page id, fence, level or range tombstone (a
//! leaf with no room, a full head tree, and range deletes take the exclusive lock), so a
//! descent made under the shared lock stays valid until its latch, and a range scan, which
//! resumes from a key (`RangeCursor::next`; it keeps no position in the structure),
//! returns every key of the head tree at the instant it read its leaf. The latch is the
//! page's rather than one over the whole head tree: the head tree is a B+-tree in the
//! buffer pool (its pages are the pool's budget, its durability the Pager's before-images
//! and checkpoints), so the page latch the pool already holds for its readers orders the
//! writes of a key, and writes of two leaves run at once. What a shared write cannot change
//! under that latch, the engine's `&mut` state (the head tree's counts, the mutations a
//! deamortized merge is paced by, the filters counted), goes to atomics
//! ([`crate::kit::sorted::shared`]) that every `&mut` path folds in first; no shared write
//! runs beside a `&mut` path. No device I/O happens under the leaf's latch but what the
//! pool's shared path does for any reader (a miss is read outside the lock, as a search's,
//! before anything is logged). What needs the exclusive lock is asked for
//! (`SharedWrite::Maintain`) and runs right after the write: freezing a full head tree (or
//! completing the merge a full head tree waits for), a step of a deamortized merge in
//! progress every [`crate::kit::sorted::shared::MAINTAIN_EVERY`] shared writes (by their
//! share of the pace; on the merge thread, serving its requests), and a checkpoint when the
//! WAL reached its size. A head tree may thus exceed |L0| by one entry per writer that was
//! beside the one that filled it, until that maintenance (the check of its capacity
//! allows it meanwhile). Memory is as before: the pool holds the head tree. The other writes
//! (range deletes, batches, bulk inserts) hold the lock exclusive, one at a time; such a
//! point write first walks the head tree under the shared lock, so that under the
//! exclusive lock it finds its pages in the pool. The pages a search reads past the pool
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
//! This read protocol and its constants are the sorted kit's, shared with the LSM-tree
//! ([`crate::kit::sorted::reads`]: `Shareable` for every `SortedReads` engine, and the
//! serial reads through `sorted_serial_reads!`); this engine gives it its point search, its
//! range batch and the pages of the head tree a write will change ([`search`]).

mod options;
pub use options::FdTreeOptions;
mod check;
mod merge;
pub(crate) mod run;
mod search;

use crate::durable::Pager;
use crate::durable::{logged_engine_methods, pager_store_methods, Logged};
use crate::durable::{LogicalOp, Manifest};
use crate::error::{Error, Result};
use crate::io::Extent;
use crate::io::Storage;
use crate::kind::EngineKind;
use crate::kit::api::{SerialEngine, SharedWrite};
use crate::kit::sorted::entry::{self, Entry, Kind, Layout};
use crate::kit::sorted::head::Head;
use crate::kit::sorted::job::{MergeThread, Running};
use crate::kit::sorted::pace;
use crate::kit::sorted::reads::{sorted_serial_reads, SortedReads};
use crate::kit::sorted::shared::SharedWrites;
use crate::kit::sorted::tombs::Tombs;
use crate::kit::sorted::tune::Retune;
use crate::settings::Settings;
use crate::stats::counters;
use crate::stats::{LevelShape, Stats};
use merge::{MergeJob, Outcome, Params};
use run::{Run, RunWriter};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};

/// Frames the engine needs at least: head-tree splits touch a few pages at once.
const MIN_FRAMES: usize = 8;

/// Durable roots, saved in the manifest.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct State {
    head: Head,
    /// The head tree being merged by a deamortized merge.
    frozen: Option<Head>,
    /// Extents the merge in progress had written (freed on open; the merge restarts).
    merge_extents: Vec<Extent>,
    levels: Vec<Run>,
    /// Range tombstones of the head tree, the frozen head tree and each level
    /// (`level_tombs[i]` for L(i+1)); absent in manifests written before they existed.
    #[serde(default)]
    head_tombs: Tombs,
    #[serde(default)]
    frozen_tombs: Tombs,
    #[serde(default)]
    level_tombs: Vec<Tombs>,
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
    filters_inserted: u64,
    range_deletes: u64,
    k_changes: u64,
}

/// Check FD-tree options against the page size (dispatched by `engine::validate`).
pub fn validate(opts: &Settings, o: &FdTreeOptions) -> Result<()> {
    let ps = opts.page_size as u64;
    let f = entry::capacity(opts.page_size) as u64;
    if let Some(k) = o.k {
        if k < 2 || u64::from(k) + 1 >= f {
            return Err(Error::InvalidOptions(format!(
                "fdtree k {k} must be at least 2 and below f - 1 = {} for {ps}-byte pages (FD-tree §3.2)",
                f - 1,
            )));
        }
    }
    if o.head_tree_bytes < 2 * ps {
        return Err(Error::InvalidOptions(format!(
            "fdtree head_tree_bytes {} is below two pages of {ps} bytes",
            o.head_tree_bytes
        )));
    }
    if o.io_unit_bytes < ps || o.io_unit_bytes % ps != 0 || o.io_unit_bytes > 64 << 20 {
        return Err(Error::InvalidOptions(format!(
            "fdtree io_unit_bytes {} must be a whole number of {ps}-byte pages, at most 64 MiB",
            o.io_unit_bytes
        )));
    }
    Ok(())
}

impl FdTreeOptions {
    /// `f`: entries in a (packed) FD-tree page of `page_size` bytes (16-byte entries and
    /// 2-bit types after a 32-byte header: 250 for 4 KiB pages), 0 below 512 bytes; the
    /// number the FD-tree cost model
    /// takes ([`crate::cost::fdtree::FdTreeWorkload::entries_per_page`],
    /// [`crate::Options::fdtree_model_workload`]). The LSM-tree's pages hold as many.
    pub fn entries_per_page(page_size: usize) -> u64 {
        if page_size < 512 {
            return 0;
        }
        entry::capacity(page_size) as u64
    }
}

/// `opts` with `k` decided: the given one, else the cost model's (§4, App. C.3); and the
/// head tree at most a quarter of the memory budget (whole pages, at least two): a
/// deamortized merge holds the frozen head tree's entries beside the pool, about half the
/// head tree's bytes, and both are charged to the budget (`Stats::memory_bytes`).
pub(crate) fn resolve(s: &Settings, mut o: FdTreeOptions) -> Result<FdTreeOptions> {
    let ps = s.page_size as u64;
    let quarter = s.buffer_pool_bytes / 4 / ps * ps;
    o.head_tree_bytes = o.head_tree_bytes.min(quarter.max(2 * ps));
    if o.k.is_none() {
        o.k = Some(s.fdtree_model_k(o.head_tree_bytes, entry::capacity(s.page_size) as u64)?);
    }
    Ok(o)
}

/// The engine's parameters from resolved options (a manifest always holds a `k`), for
/// pages of the layout `packed` says.
fn params(opts: &Settings, o: &FdTreeOptions, packed: bool) -> Result<Params> {
    let lay = Layout::of(packed, opts.page_size);
    let cap = lay.cap();
    let head_pages = o.head_tree_bytes / opts.page_size as u64;
    let k =
        o.k.ok_or_else(|| Error::corruption("MANIFEST", None, "FD-tree options without k"))?;
    Ok(Params {
        lay,
        io_unit: o.io_unit_bytes / opts.page_size as u64,
        k: u64::from(k),
        cap0: head_pages * cap as u64 / 2,
    })
}

/// The FD-tree engine.
pub struct FdTree {
    pager: Pager,
    p: Params,
    deamortize: bool,
    /// The head tree taking new entries.
    head: Head,
    /// The head tree being merged (deamortized merge in progress).
    frozen: Option<Head>,
    job: Option<Running<MergeJob>>,
    /// Where merges run ([`crate::kit::sorted::job`]).
    merges: MergeThread,
    levels: Vec<Run>,
    /// Range tombstones of the active head tree, the frozen one, and each level (parallel
    /// to `levels`): see [`crate::kit::sorted::tombs`].
    head_tombs: Tombs,
    frozen_tombs: Tombs,
    level_tombs: Vec<Tombs>,
    checkpoint_due: bool,
    /// Merge extents freed at open: the restarted merge must be published by a checkpoint.
    restarted_merge: bool,
    /// Completed merges wait for the checkpoint that publishes them, taken when the head
    /// tree is next frozen (deamortized mode).
    publish_due: bool,
    /// Re-choose `k` as the tree grows (`k` left to the cost model; [`crate::kit::sorted::tune`]).
    retune: Option<Retune>,
    counters: Counters,
    /// What point writes made under the shared lock did to the head tree that the fields
    /// above do not hold yet (its counts, the mutations a merge in progress is paced by):
    /// module doc, Thread safety.
    shared: SharedWrites,
    /// Filter entries those writes put into the head tree (`filters_inserted` counts
    /// them with the serial ones').
    shared_filters: AtomicU64,
}

impl FdTree {
    /// A new empty FD-tree (an empty head tree, no levels).
    /// `o` is resolved ([`resolve`]: `k` decided) and `s.record` holds it; `model_k`: its
    /// `k` is the cost model's, re-chosen as the tree grows ([`crate::kit::sorted::tune`]).
    pub fn create(
        storage: Storage,
        s: Settings,
        o: FdTreeOptions,
        model_k: bool,
    ) -> Result<FdTree> {
        validate(&s, &o)?;
        let p = params(&s, &o, true)?;
        let retune = model_k.then(|| {
            Retune::from_settings(&s, p.lay.cap(), o.head_tree_bytes, s.buffer_pool_bytes)
        });
        let deamortize = o.deamortize;
        let config = s.pager_config(MIN_FRAMES, 0);
        let mut pager = Pager::create(storage.device, storage.vfs, config, s.record)?;
        let merges = MergeThread::new(deamortize, &mut pager);
        let head = Head::create(&mut pager, p.lay)?;
        let mut t = FdTree {
            pager,
            p,
            deamortize,
            head,
            frozen: None,
            job: None,
            merges,
            levels: Vec::new(),
            head_tombs: Tombs::new(),
            frozen_tombs: Tombs::new(),
            level_tombs: Vec::new(),
            checkpoint_due: false,
            restarted_merge: false,
            publish_due: false,
            retune,
            counters: Counters::default(),
            shared: SharedWrites::default(),
            shared_filters: AtomicU64::new(0),
        };
        t.checkpoint()?;
        Ok(t)
    }

    /// Reopen: restore the checkpoint image, restart a merge in progress, replay the WAL.
    pub fn open(
        storage: Storage,
        manifest: Manifest,
        s: Settings,
        o: FdTreeOptions,
    ) -> Result<FdTree> {
        let state: State = manifest.engine_state("FD-tree")?;
        let mut p = params(&s, &o, state.packed)?;
        if let Some(k) = state.k {
            // §3.2: 2 <= k < f - 1 (a k below 2 would give levels that never grow).
            if k < 2 || k.saturating_add(1) >= p.lay.cap() as u64 {
                return Err(Error::corruption(
                    "MANIFEST",
                    None,
                    format!(
                        "FD-tree state: k = {k} outside 2 <= k < f - 1 = {}",
                        p.lay.cap() - 1
                    ),
                ));
            }
            p.k = k;
        }
        let retune = (state.retune_pool_bytes)
            .map(|b| Retune::from_settings(&s, p.lay.cap(), o.head_tree_bytes, b));
        let deamortize = o.deamortize;
        let config = s.pager_config(MIN_FRAMES, 0);
        let (mut pager, ops) = Pager::open(storage.device, storage.vfs, &manifest, config)?;
        let merges = MergeThread::new(deamortize, &mut pager);
        for e in &state.merge_extents {
            pager.free_extent(*e);
        }
        let mut level_tombs = state.level_tombs;
        level_tombs.resize(state.levels.len(), Tombs::new());
        let mut t = FdTree {
            pager,
            p,
            deamortize,
            head: state.head,
            frozen: None,
            job: None,
            merges,
            levels: state.levels,
            head_tombs: state.head_tombs,
            frozen_tombs: state.frozen_tombs,
            level_tombs,
            checkpoint_due: false,
            restarted_merge: !state.merge_extents.is_empty(),
            publish_due: false,
            retune,
            counters: Counters::default(),
            shared: SharedWrites::default(),
            shared_filters: AtomicU64::new(0),
        };
        if let Some(fr) = state.frozen {
            t.start_job(fr)?;
        }
        if t.job.is_none() && t.head_full() {
            // The checkpoint taken just before a freeze saved a full head tree: it is
            // frozen now, as it was after that checkpoint.
            t.freeze_and_merge()?;
        }
        t.recover(&ops)?;
        Ok(t)
    }

    /// The active head tree's fill towards |L0|: its entries and its range tombstones.
    fn head_fill(&self) -> u64 {
        self.shared.fill(&self.head, &self.head_tombs)
    }

    /// Move the counts of the writes made under the shared lock into the head tree's (on
    /// `&mut`, no shared write beside it: module doc, Thread safety).
    fn fold(&mut self) {
        self.shared.fold(&mut self.head);
    }

    /// The active head tree reached its capacity and holds something to merge: it is
    /// frozen (now, or right after the checkpoint that publishes the merges completed).
    fn head_full(&self) -> bool {
        self.head_fill() >= self.p.cap0 && self.head_has_work()
    }

    /// The active head tree holds twice its capacity: a batch or bulk insert went on
    /// filling it while its freeze waited for the operation's checkpoint; it is frozen at
    /// once.
    fn head_overfull(&self) -> bool {
        self.head_fill() >= 2 * self.p.cap0
    }

    /// Whether the active head tree holds anything a merge must carry down (its fences
    /// alone point into the levels and are rebuilt by every merge).
    fn head_has_work(&self) -> bool {
        self.shared.counted(&self.head).index_entries > 0 || !self.head_tombs.is_empty()
    }

    /// Freeze the active head tree (and its range tombstones), start a new one, and start
    /// merging the frozen one; run it to completion at once unless deamortized.
    fn freeze_and_merge(&mut self) -> Result<()> {
        self.fold();
        let old = std::mem::replace(&mut self.head, Head::create(&mut self.pager, self.p.lay)?);
        self.frozen_tombs = std::mem::take(&mut self.head_tombs);
        self.start_job(old)?;
        if !self.deamortize {
            self.advance_job(u64::MAX)?;
        }
        Ok(())
    }

    /// Advance a deamortized merge, or start a merge when L0 reached its capacity.
    fn after_mutation(&mut self) -> Result<()> {
        self.after_mutations(1)
    }

    /// [`FdTree::after_mutation`] for `n` mutations at once (the shared writes since the
    /// last maintenance): a stepped merge advances by `n` steps of the pace.
    fn after_mutations(&mut self, n: u64) -> Result<()> {
        if self.job.as_ref().is_some_and(Running::on_thread) {
            // The merge thread's requests are served once per operation, which waits
            // while the merge is behind the new head tree's fill, and for its end when
            // the new head tree is full (`Running::advance`).
            let wait = self.head_fill() >= self.p.cap0;
            self.counters.forced_merge_completions += u64::from(wait);
            self.advance_job(if wait { u64::MAX } else { 0 })?;
        } else if self.job.is_some() {
            let units = if self.head_fill() >= self.p.cap0 {
                // The new head tree is full before the merge completed: finish it now.
                self.counters.forced_merge_completions += 1;
                u64::MAX
            } else {
                // The work left, spread over half the insertions the new head tree has
                // room for (§3.4: the merge is divided over the insertions into L'0),
                // front-loaded so that the frozen head tree leaves the pool early
                // ([`pace::front_loaded`]).
                let work = self.job.as_ref().map_or(0, Running::work);
                pace::front_loaded(work, self.head_fill(), self.p.cap0).saturating_mul(n)
            };
            self.advance_job(units)?;
        }
        if self.job.is_none() && self.head_full() {
            // While replaying no checkpoint runs: freeze at once, as the run that
            // logged these operations did right after its checkpoint.
            if self.publish_due && !self.head_overfull() && !self.pager.replaying() {
                // Publish the completed merges first, the head tree frozen right after
                // the checkpoint (`after_checkpoint`): its pages are flushed once, just
                // before they stop changing, and the new head tree's pages, all allocated
                // after that checkpoint, change with no before-images (module doc,
                // Durability).
                self.checkpoint_due = true;
            } else {
                self.freeze_and_merge()?;
            }
        }
        Ok(())
    }

    /// Freeze `frozen` and start merging its index entries and range tombstones
    /// (`self.frozen_tombs`) into the levels.
    fn start_job(&mut self, frozen: Head) -> Result<()> {
        let entries: Vec<Entry> = frozen
            .all_entries(&mut self.pager, self.p.lay)?
            .into_iter()
            .filter(|e| !e.is_fence())
            .collect();
        let job = MergeJob::start(
            &mut self.pager,
            &self.p,
            entries,
            self.frozen_tombs.clone(),
            self.levels.clone(),
            self.level_tombs.clone(),
            self.retune.clone(),
        )?;
        self.frozen = Some(frozen);
        self.job = Some(self.merges.start(&mut self.pager, job, self.p)?);
        Ok(())
    }

    /// Advance the merge in progress by `units` entries (§3.4), or serve the merge
    /// thread's requests at its pace ([`Running::advance`]), or to its end when `units` is
    /// `u64::MAX`.
    fn advance_job(&mut self, units: u64) -> Result<()> {
        let fill = (self.head_fill(), self.p.cap0);
        let Some(job) = self.job.as_mut() else {
            return Ok(());
        };
        if let Some(out) = job.advance(&mut self.pager, &self.p, units, fill)? {
            self.merges.completed(job);
            self.job = None;
            self.counters.merge_pages_read += out.pages_read;
            self.counters.merge_pages_written += out.pages_written;
            self.complete(out)?;
        }
        Ok(())
    }

    /// Publish a completed merge in memory: new levels, new head tree; free the old.
    fn complete(&mut self, out: Outcome) -> Result<()> {
        self.fold();
        let lay = self.p.lay;
        for r in &out.replaced {
            self.pager.free_extent(r.extent());
        }
        self.levels = out.levels;
        self.level_tombs = out.tombs;
        if out.k != self.p.k {
            self.p.k = out.k;
            self.counters.k_changes += 1;
        }
        self.frozen_tombs = Tombs::new();
        if self.levels.is_empty() {
            // Nothing older than the head tree is left for its tombstones to hide.
            self.head_tombs = Tombs::new();
        }
        // New entries of the head tree (only index entries: its fences, if any, came from
        // splits before L1's fences were known and point nowhere).
        let newer: Vec<Entry> = self
            .head
            .all_entries(&mut self.pager, lay)?
            .into_iter()
            .filter(|e| !e.is_fence())
            .collect();
        let mut all = Vec::with_capacity(newer.len() + out.head_fences.len());
        let mut fences = out
            .head_fences
            .iter()
            .map(|&(k, p)| Entry::new(k, p, Kind::External))
            .peekable();
        for e in newer {
            while let Some(f) = fences.next_if(|f| f.pos() <= e.pos()) {
                all.push(f);
            }
            all.push(e);
        }
        all.extend(fences);
        let new_head = Head::bulk_load(&mut self.pager, lay, &all)?;
        self.head.free(&mut self.pager, lay)?;
        if let Some(fr) = self.frozen.take() {
            fr.free(&mut self.pager, lay)?;
        }
        self.head = new_head;
        self.counters.merges += 1;
        // Published by the next checkpoint (module doc, Durability).
        let levels: u64 = self.levels.iter().map(|r| r.pages).sum();
        if self.pager.extents_publish_due(levels) {
            if self.deamortize && !self.pager.fixed_capacity() {
                // At the next freeze of the head tree (`after_mutation`).
                self.publish_due = true;
            } else {
                // Now: amortized, the head tree holds the new L1's fences alone; on a
                // device of fixed size the freed space is to be reusable at once
                // (`Pager::extents_publish_due`).
                self.checkpoint_due = true;
            }
        }
        Ok(())
    }

    fn memory_bytes(&self) -> u64 {
        self.pager.memory_bytes() + self.structure_bytes()
    }

    /// Memory besides the pool, charged to the budget (`Logged::charge_memory`): the
    /// running merge's entries, fences and merged batch (`Resumable::memory_bytes`; not
    /// its I/O buffers) and every range-tombstone set.
    fn structure_bytes(&self) -> u64 {
        self.job.as_ref().map_or(0, Running::memory_bytes)
            + self.tombs().map(Tombs::memory_bytes).sum::<u64>()
    }

    /// Every range-tombstone set: the head tree's, the frozen one's, each level's.
    fn tombs(&self) -> impl Iterator<Item = &Tombs> {
        [&self.head_tombs, &self.frozen_tombs]
            .into_iter()
            .chain(&self.level_tombs)
    }
}

/// How a delete is made (Algorithm 4), as [`FdTree::delete_search`] found.
enum DeleteBy {
    /// The key is absent: the search is the delete's instant.
    Nothing,
    /// An older level holds the key with this value: a filter entry into the head tree
    /// hides it.
    Filter(u64),
    /// Only the head tree holds the key: its entry is removed.
    Removal,
}

/// Point writes under the shared lock (module doc, Thread safety); an insert is the
/// sorted kit's (`SortedReads::shared_head`).
impl FdTree {
    /// Algorithm 4 beside other operations, as the serial delete: the search first (an
    /// absent key needs nothing: the search is the delete's instant); then a filter entry
    /// into the head tree when an older level holds a live entry, else the key's removal
    /// from the head tree. What the search found below the head tree holds until the
    /// write: only the exclusive path freezes the head tree or publishes a merge. A write
    /// of the key by another thread between the search and this one's latch is ordered
    /// before it, and the delete leaves the key absent all the same.
    fn delete_shared(&self, key: u64) -> Result<SharedWrite> {
        let op = LogicalOp::Delete(key);
        match self.delete_search(key)? {
            DeleteBy::Nothing => Ok(SharedWrite::Done),
            DeleteBy::Filter(val) => {
                let filter = Entry::new(key, val, Kind::Filter);
                let w = self.shared_head().upsert(filter, &op)?;
                if w != SharedWrite::Exclusive {
                    self.shared_filters.fetch_add(1, Ordering::Relaxed);
                }
                Ok(w)
            }
            DeleteBy::Removal => self.shared_head().remove(key, &op),
        }
    }

    /// Algorithm 4's search, for a delete on either path (both read as a search does,
    /// through the shared path): how the delete of `key` is made. The key's entry in the
    /// head tree decides whether it is present, else the newest entry of an older level;
    /// a range tombstone of the head tree deletes the key in every older level, so none
    /// of them is read then.
    fn delete_search(&self, key: u64) -> Result<DeleteBy> {
        let f = self.head.find(&self.pager, self.p.lay, key)?;
        let below = if self.head_tombs.covers(key) {
            None
        } else {
            let (levels, pager) = self.levels();
            levels.find_below_head(pager, key, f.fence)?
        };
        let present = match f.entry {
            Some(e) => e.kind == Kind::Normal,
            None => below.is_some_and(|e| e.kind == Kind::Normal),
        };
        Ok(match below {
            _ if !present => DeleteBy::Nothing,
            Some(b) if b.kind == Kind::Normal => DeleteBy::Filter(b.val),
            _ => DeleteBy::Removal,
        })
    }

    /// Under the exclusive lock after shared writes asked for it: their counts into the
    /// head tree, the merge in progress advanced by their mutations (or the head tree
    /// frozen when full), then the memory charge and a checkpoint when due, as after a
    /// serial write.
    fn maintain(&mut self) -> Result<()> {
        self.fold();
        let n = self.shared.maintained();
        if n > 0 || self.head_full() {
            self.after_mutations(n.max(1))?;
        }
        self.after_op()
    }
}

impl Logged for FdTree {
    pager_store_methods!();

    fn engine_state(&self) -> serde_json::Value {
        serde_json::json!(State {
            head: self.shared.counted(&self.head),
            frozen: self.frozen.clone(),
            merge_extents: self.job.as_ref().map(Running::owned).unwrap_or_default(),
            levels: self.levels.clone(),
            head_tombs: self.head_tombs.clone(),
            frozen_tombs: self.frozen_tombs.clone(),
            level_tombs: self.level_tombs.clone(),
            k: Some(self.p.k),
            retune_pool_bytes: self.retune.as_ref().map(Retune::pool_bytes),
            packed: self.p.lay.is_packed(),
        })
    }

    /// The checkpoint published every completed merge; a full head tree (waiting for it,
    /// or filled by the merge completed first) is frozen now.
    fn before_checkpoint(&mut self) -> Result<()> {
        self.fold();
        Ok(())
    }

    fn after_checkpoint(&mut self) -> Result<()> {
        self.checkpoint_due = false;
        self.publish_due = false;
        self.restarted_merge = false;
        if self.job.is_none() && self.head_full() && !self.pager.replaying() {
            self.freeze_and_merge()?;
        }
        Ok(())
    }

    /// Algorithm 2: insert into L0, then merge when it reaches its capacity.
    fn insert_unlogged(&mut self, key: u64, value: u64) -> Result<()> {
        self.fold();
        self.head.upsert(
            &mut self.pager,
            self.p.lay,
            Entry::new(key, value, Kind::Normal),
        )?;
        self.after_mutation()
    }

    /// Algorithm 4 (see the module doc).
    fn delete_unlogged(&mut self, key: u64) -> Result<()> {
        self.fold();
        match self.delete_search(key)? {
            DeleteBy::Nothing => return Ok(()),
            DeleteBy::Filter(val) => {
                self.head.upsert(
                    &mut self.pager,
                    self.p.lay,
                    Entry::new(key, val, Kind::Filter),
                )?;
                self.counters.filters_inserted += 1;
            }
            DeleteBy::Removal => {
                self.head.remove(&mut self.pager, self.p.lay, key)?;
            }
        }
        self.after_mutation()
    }

    /// A range tombstone ([`crate::kit::sorted::tombs`]; the filter entries of §3.3
    /// generalised to a key range): the head tree's own entries in the range are removed
    /// (a level's tombstones hide only older levels), and `[lo, hi]` joins the head tree's
    /// tombstones unless nothing older than the head tree exists. It counts as one entry of
    /// the head tree towards |L0|; the merges carry it down and retire it at the last level.
    /// Its cost does not depend on the range's size: the head tree's pages in the range
    /// (at most the head tree), no read of any level.
    fn delete_range_unlogged(&mut self, lo: u64, hi: u64) -> Result<()> {
        self.counters.range_deletes += 1;
        self.fold();
        self.head
            .remove_range(&mut self.pager, self.p.lay, lo, hi)?;
        if !self.levels.is_empty() || self.frozen.is_some() {
            self.head_tombs.add(lo, hi);
        }
        self.after_mutation()
    }

    fn holds_nothing(&self) -> bool {
        self.levels.is_empty() && self.shared.entries(&self.head) == 0 && self.job.is_none()
    }

    /// Build the levels of an empty tree directly from sorted input: the bottom level from
    /// the entries, the levels above from its fences, then the head tree.
    fn load_empty(&mut self, sorted: &[(u64, u64)]) -> Result<()> {
        self.fold();
        let n = sorted.len() as u64;
        // The bottom level holds the entries plus one internal fence per page.
        let stored = n + n.div_ceil(self.p.lay.cap() as u64 - 1) + 1;
        if let Some(r) = &self.retune {
            let k = r.k_for(stored, self.p.k);
            if k != self.p.k {
                self.p.k = k;
                self.counters.k_changes += 1;
            }
        }
        let depth = self.p.depth_for(stored);
        let mut w = RunWriter::new(&mut self.pager, self.p.lay, self.p.io_unit, n)?;
        for &(k, v) in sorted {
            w.push(&mut self.pager, Entry::new(k, v, Kind::Normal))?;
        }
        let (bottom, mut fences) = w.finish(&mut self.pager)?;
        let mut levels: Vec<Option<Run>> = vec![None; depth];
        levels[depth - 1] = bottom;
        for lvl in (1..depth).rev() {
            let (r, f) =
                run::write_fence_run(&mut self.pager, self.p.lay, self.p.io_unit, &fences)?;
            levels[lvl - 1] = r;
            fences = f;
        }
        self.levels = levels.into_iter().flatten().collect();
        let all: Vec<Entry> = fences
            .iter()
            .map(|&(k, p)| Entry::new(k, p, Kind::External))
            .collect();
        let new_head = Head::bulk_load(&mut self.pager, self.p.lay, &all)?;
        self.head.free(&mut self.pager, self.p.lay)?;
        self.head = new_head;
        // The tree was empty: any tombstone left covers nothing, and must not hide the
        // loaded entries, which now sit below the head tree.
        self.head_tombs = Tombs::new();
        self.level_tombs = vec![Tombs::new(); self.levels.len()];
        Ok(())
    }

    /// Completed merges publish their new runs (and free the old) with a checkpoint once
    /// the pages they freed reach the levels' (module doc, Durability).
    fn checkpoint_due(&self) -> bool {
        self.checkpoint_due
    }

    /// A merge restarted at open frees the extents the interrupted one had written.
    fn checkpoint_after_recovery(&self) -> bool {
        self.restarted_merge
    }
}

impl SerialEngine for FdTree {
    logged_engine_methods!();
    sorted_serial_reads!();

    fn stats(&self) -> Stats {
        let c = &self.counters;
        let head = self.shared.counted(&self.head);
        let filters_inserted = c.filters_inserted + self.shared_filters.load(Ordering::Relaxed);
        let mut engine_counters = counters(&[
            ("levels", self.levels.len() as u64 + 1),
            ("k", self.p.k),
            ("k_changes", c.k_changes),
            (
                "entries",
                head.entries
                    + self.frozen.as_ref().map_or(0, |h| h.entries)
                    + self.levels.iter().map(|r| r.entries).sum::<u64>(),
            ),
            (
                "index_entries",
                head.index_entries
                    + self.frozen.as_ref().map_or(0, |h| h.index_entries)
                    + self.levels.iter().map(|r| r.index_entries).sum::<u64>(),
            ),
            (
                "filter_entries_in_runs",
                self.levels.iter().map(|r| r.filters).sum::<u64>(),
            ),
            ("head_entries", head.entries),
            ("head_height", u64::from(self.head.height)),
            ("head_pages", self.head.pages),
            ("head_capacity", self.p.cap0),
            ("merges", c.merges),
            ("merge_in_progress", u64::from(self.job.is_some())),
            ("merge_pages_read", c.merge_pages_read),
            ("merge_pages_written", c.merge_pages_written),
            ("forced_merge_completions", c.forced_merge_completions),
            ("filters_inserted", filters_inserted),
            ("range_deletes", c.range_deletes),
            (
                "range_tombstones",
                self.tombs().map(|t| t.len() as u64).sum::<u64>(),
            ),
            ("head_range_tombstones", self.head_tombs.len() as u64),
            ("shared_writes", self.shared.total()),
        ]);
        engine_counters.extend(counters(&self.merges.counters()));
        for (i, r) in self.levels.iter().enumerate() {
            engine_counters.insert(format!("level_{}_entries", i + 1), r.entries);
            engine_counters.insert(format!("level_{}_pages", i + 1), r.pages);
            engine_counters.insert(format!("level_{}_filters", i + 1), r.filters);
            engine_counters.insert(
                format!("level_{}_range_tombstones", i + 1),
                self.level_tombs.get(i).map_or(0, |t| t.len() as u64),
            );
            engine_counters.insert(
                format!("level_{}_capacity", i + 1),
                self.p.level_capacity(i + 1),
            );
        }
        let mut s = self
            .pager
            .stats(EngineKind::FdTree, engine_counters, self.memory_bytes());
        s.shape.write_buffer_entries = Some(self.p.cap0);
        s.shape.levels = (self.levels.iter().enumerate())
            .map(|(i, r)| LevelShape {
                level: i as u64 + 1,
                entries: r.entries,
                capacity: self.p.level_capacity(i + 1),
            })
            .collect();
        s
    }

    fn check_integrity(&mut self) -> Result<()> {
        self.check()
    }
}

#[cfg(test)]
mod tests {
    use super::FdTreeOptions;

    #[test]
    fn entries_per_page_after_envelope() {
        // 4096 - 32 = 4064 = 64 bytes of types (250 · 2 bits, whole words) + 250 · 16;
        // 2048 - 32 = 2016 = 32 + 124 · 16.
        assert_eq!(FdTreeOptions::entries_per_page(4096), 250);
        assert_eq!(FdTreeOptions::entries_per_page(2048), 124);
        assert_eq!(FdTreeOptions::entries_per_page(10), 0);
    }
}
