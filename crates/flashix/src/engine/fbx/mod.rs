//! The FBX-tree (`EngineKind::Fbx`): Luo, "FBX-Tree: A Write Intensive Structure for Flash
//! Disk" (docs/papers.md, FBX-tree), as a key-value engine. `crate::mobject` over it is
//! the paper's FBX-tree; over `EngineKind::BTree` it is the B^x-tree it is compared with.
//!
//! # Scheme (§4.1)
//! A B+-tree whose nodes are named by logical ids. The **node translation table** (NTT)
//! maps an inner node to the one page holding its latest copy (state BLOCK; IN_MEM while
//! that page is in the buffer pool) and a leaf to its **log list**: the pages holding its
//! log entries, oldest first (state LOG). Every write to the data file is an append at the
//! head ([`space`]):
//! - an **insert or delete** descends from the root to the leaf's *parent* (which names the
//!   leaf), and appends a log entry (`Insert(key, value)` or the tombstone `Delete(key)`,
//!   the index units of [`crate::kit::ntt::unit`], grouped by leaf) to the **log buffer**
//!   ([`logbuf`], §4.2). **It never reads the leaf.** A full log-buffer page is appended to
//!   the file and its page id added to the log list of every leaf with an entry in it;
//! - an **inner node** that changes is written whole at the head and its NTT address
//!   repointed; its old page is dead (Fig. 3, pages 2 and 3);
//! - a **leaf read** (a search, a range query) rebuilds the leaf: one batched read of the
//!   pages of its log list (those not in the buffer pool), then its buffered entries,
//!   applied in order, newest last (§4.3). After each read the **clean policy**
//!   ([`crate::cost::logclean`],
//!   §4.4: naive threshold, Longer-Than-Next, Accumulate-and-Clean) may decide to **clean**
//!   the leaf: it is written as one compact page (a `Reset` unit then its entries), which
//!   replaces its list (length 1) and goes to the buffer pool (after a search that ran
//!   beside other readers, by the next write: Thread safety);
//! - **range queries** are Algorithm 1 (§4.3): the leaves of every requested key range are
//!   collected from the inner nodes, the union of their log lists is read, each page once,
//!   and the entries are handed to their leaves (`Engine::scan_many`, which
//!   `crate::mobject` calls with all the curve intervals of a query at once).
//!
//! # What the paper leaves open (notes §1.x), decided here
//! - **Splits** (U3). A leaf's entries at its last rebuild (`exact`) plus the log entries
//!   appended since (`pending`) bound its size without reading it. When that bound passes
//!   `leaf_order`, the insert that passed it rebuilds the leaf (a *reorganisation*, the one
//!   case where an update reads a leaf): more than `leaf_order` entries are split into two
//!   compact pages (the right half under a new id) and the separator is added to the parent
//!   (written whole; a full inner node splits the same way, up to a new root); otherwise
//!   the leaf is compacted. So a leaf's log list never holds more than `leaf_order + 1`
//!   pages, whatever the reads.
//! - **Deletes** (U2) are tombstone log entries, counted in `pending`. Leaves are never
//!   merged or removed; an emptied leaf keeps its compact page (the key space of a
//!   moving-object index is reused as its partitions roll over).
//! - **Log order** (U4): a leaf's buffered entries sit in one log-buffer page ([`logbuf`]),
//!   so list order is time order and no per-entry timestamp is needed.
//! - **IN_MEM leaves** (U6): writes to a leaf still go through the log buffer; a clean puts
//!   the compact page in the buffer pool. A clean of a leaf that is already one compact
//!   page with nothing buffered writes nothing.
//! - **Inner nodes** (U7) are written when they change, not on eviction.
//! - The §3.1 **Sequential B-Tree** is the mode `leaf_logging: false`: every change of a
//!   leaf rewrites it whole at the head.
//!
//! # On-device format
//! Log pages, compact leaf pages and inner pages are pages of index units
//! ([`crate::kit::ntt::unit`], shared with BFTL): groups of units per node id. A compact
//! page or an inner page holds one group starting with `Reset { level, link }` (an inner
//! node's `link` is its leftmost child; its `Insert(separator, child)` units follow in key
//! order). NTT snapshot pages: [`snapshot`]. The manifest's engine state holds the root,
//! height, next id, the segments, the head, the snapshot's pages and the clean policy the
//! leaves' clean states were kept under (reopened with another policy, every leaf's state
//! starts afresh).
//!
//! # Invariants (checked by `check_integrity`)
//! 1. B+-tree order: separators strictly increase within an inner node and lie within its
//!    fences; every leaf's keys lie within its fences; levels decrease by one to the leaves;
//!    a leaf holds at most `leaf_order` entries and `exact + pending` bounds them; an inner
//!    node holds at most `inner_order` separators; every node is reachable once.
//! 2. NTT: lists and leaf metadata belong to reachable leaves; each listed page holds
//!    units of the leaf, and its count equals the lists naming it; a compact leaf's list is
//!    one page beginning with `Reset`; buffered entries belong to reachable leaves.
//! 3. Space: the live pages of each segment are exactly the pages the NTT, the inner nodes
//!    and the last snapshot name; the head is a segment; every other segment holds a live
//!    page (one with none is freed).
//!
//! # Durability (docs/design.md, contract point 3)
//! Logical redo WAL with group commit on `flush` through the shared [`Pager`]; the log
//! buffer is not durable, the WAL is. A checkpoint appends every non-empty log-buffer page,
//! then the NTT snapshot, syncs the device and switches the manifest, which names the
//! snapshot. Pages are written once and never changed in place; a page released after the
//! checkpoint that names it stays (its segment is freed only when all its pages are dead,
//! and a freed segment is reused only after the next manifest). Recovery is the snapshot,
//! then the WAL replayed, then a checkpoint. Pages written after the last checkpoint are
//! orphans: the head restarts at the checkpoint's and writes over them (the one exception
//! to "written once"). Torn or flipped pages fail the page checksum
//! (`Error::Corruption` naming `data` and the page).
//!
//! # Space (not in the paper: U8)
//! The file is a set of segments ([`space`]), each written from start to end. A segment
//! whose pages are all dead is freed and trimmed after the next checkpoint, which is taken
//! early (`checkpoint_due`) once the freed segments awaiting it hold half as many pages as
//! are live (and at least four segments). When the file
//! holds more than `space_amp_limit` times its live pages (plus four segments), the cleaner
//! takes the segment with the fewest live pages and moves them to the head: each leaf with
//! a page there is compacted, each inner node there rewritten; the segment dies. A
//! checkpoint's manifest still lists the segment of the snapshot it replaces (those pages
//! die right after it), so open frees every segment other than the head that holds no
//! live page (`Space::free_dead_segments`); invariant 3 checks that none is left.
//!
//! # Memory
//! The buffer pool gets the budget less the log buffer (`log_buffer_pages` pages, reserved)
//! less the tables, which are charged to the budget after every update and every read
//! that cleans (`Pager::charge`, `Logged::charge_memory`), so the pool shrinks as the tree
//! grows. The tables are kept compact because at a small budget they, not the pool, are
//! what grows with the index:
//! - **12 bytes a node** ([`leaves`]): one array indexed by node id (ids are dense: they
//!   come from `next_id` and are never reused, so an array costs less than a map of the
//!   same nodes), a leaf's slot holding the bound on its entries (`exact`, `pending`: a
//!   leaf holds fewer than 2^16 entries, since a page of at most 1 MiB bounds the leaf
//!   order) and its clean state (a 32-bit atomic, its top bit the deferred-clean flag), an
//!   inner node's slot the page of its latest copy.
//! - **8 bytes a node plus 4 a list entry, and 1 a page** ([`crate::kit::ntt`]'s compact
//!   table, shared with BFTL): a leaf whose list is one page (compact: the state after a
//!   bulk load, a clean or a reorganisation) keeps it in its slot; a longer list lives in a
//!   chunk of one arena of `u32` page ids (a file of more than 2^32 pages is refused);
//!   each page's count of lists naming it takes a byte.
//! - **4 bytes a node** for the log buffer's home of each leaf ([`logbuf`]).
//!
//! So a leaf costs about 25 bytes besides its list entries beyond the first page (the
//! paper counts 14 bytes a node, §5, without the lists; `Stats` reports both figures,
//! `ntt_bytes` and `ntt_paper_bytes`). Arrays grow by an eighth, not doubling, and what is
//! charged is the capacity they hold. Besides them: the segment table and the set of
//! deferred cleans (a leaf id each, at most `DEFERRED_CLEANS`).
//!
//! The log lists are what can outgrow a small budget: every log-buffer page flushed adds
//! a page to the lists of all the leaves it holds entries of, and a leaf's list is reset
//! only when it is rebuilt as one page (a clean after reads, a reorganisation when its
//! bound passes the leaf order, the segment cleaner). When the tables alone outgrow the
//! budget, the pool keeps its minimum of 4 frames and memory exceeds the budget (counted,
//! never hidden: `Stats::memory_bytes`). At open, where the snapshot gives the tables'
//! size, a budget that cannot hold them besides the log buffer and the pool's minimum is
//! refused with `Error::InvalidArgument` naming the least budget that does.
//!
//! # Thread safety
//! Served to many threads by `kit::parallel::Parallel`. **Point searches** (`get`,
//! `get_many`) hold the engine's lock shared and run beside each other: the descent reads
//! inner nodes and the rebuild reads the leaf's log pages through the Pager's shared path
//! (`Pager::read_shared`: the buffer pool's latch protocol, the device's reader handles),
//! and the leaf's buffered entries are read from the log buffer in memory. Nothing they
//! read changes under the shared lock: every write (which is what appends to the log
//! buffer, the NTT and the file) holds the lock exclusive. The counters a read bumps are
//! relaxed atomics, so `stats` stays exact. An insert or delete descends under the shared
//! lock first (`prepare_write`), so that its inner nodes are in the pool when it runs.
//!
//! A search's **clean** (§4.4) is a write, so a shared search does not make it: it applies
//! the policy to the leaf's state in place (a compare-and-swap on the per-leaf state, so
//! concurrent reads of one leaf each count, in some order), and when the policy asks for a
//! clean it flags the leaf and notes it in a small mutex-guarded set (at most
//! `DEFERRED_CLEANS` leaves, each once; the lock is held only to note it). Right after the
//! read, if the engine's lock is free (always, at one thread), the read writes the noted
//! cleans as a write under the exclusive lock (`Shareable::run_deferred`); otherwise the
//! next operation under the exclusive lock that changes the index or makes it durable (an
//! update, a bulk load, a flush, a checkpoint, a serial read) first writes them. A clean
//! rebuilds the leaf (its pages were just read, so usually from the pool) and
//! writes it as one compact page with the state the policy left. How this departs from the
//! serial order, only when threads meet: a clean is made when the next write comes instead
//! of right after the read that decided it, and reads of the leaf in between read its list as it was, not the one
//! compact page. Why it keeps §4.4's policy: the decisions are the same (each read feeds
//! `CleanPolicy::after_read` with the list length the serial order would have shown it:
//! one page once a clean is decided), and so are the lists every write, range query or
//! checkpoint sees, since no list changes between two writes but by a clean. One
//! exception, bounded: while `DEFERRED_CLEANS` leaves wait (reads of that many distinct
//! leaves deciding a clean with no write in between), a read that would decide another is
//! not counted at all, and a later read of that leaf decides again. The counter `cleans`
//! counts decisions that write a page (as serially); `clean_pages` the pages written.
//!
//! **Range queries** (`scan`, `range_many`) hold the lock exclusive and run one at a time,
//! with the clean policy applied at once: Algorithm 1 reads the union of a query's log
//! pages in batches of the device, which the pool's shared path (one page per request) has
//! no form of. The serial `SerialEngine::get` (through `&mut`) makes the noted cleans
//! first, then cleans at once as the paper does. `estimate_count` (exclusive) reads the
//! leaves' metadata as it is: a clean still waiting would only tighten its bound. A flush takes its WAL ticket under the
//! lock and syncs outside it, so concurrent flushes share one sync (group commit); a range
//! scan's batches interleave with other threads' operations (`crate::Db`'s guarantees).

mod check;
mod leaves;
mod logbuf;
mod options;
mod read;
mod snapshot;
mod space;
#[cfg(test)]
mod tests;
mod tree;

pub use crate::cost::logclean::CleanPolicy;
pub use options::FbxOptions;

use self::leaves::NodeTable;
pub(crate) use self::leaves::{LeafClean, LeafMeta};
use self::logbuf::LogBuffer;
use self::space::Space;
use crate::durable::Manifest;
use crate::durable::{FlushTicket, Logged, LogicalOp};
use crate::durable::{Pager, Store};
use crate::error::{Error, Result};
use crate::io::{IoReq, PageId, Storage};
use crate::kind::EngineKind;
use crate::kit::api::{RangeCursor, SerialEngine, Shareable};
use crate::kit::ntt::{unit, Node, Ntt};
use crate::settings::Settings;
use crate::stats::{counters, Stats};
use crate::util::sync::Mutex;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};

/// Frames the pool needs at least: a descent holds one page at a time.
const MIN_FRAMES: usize = 4;

/// The paper's inner order (§5).
pub const PAPER_INNER_ORDER: u32 = 500;
/// The paper's leaf order (§5).
pub const PAPER_LEAF_ORDER: u32 = 100;
/// The paper's log buffer: 1 MB of 4 KiB pages (§4.2).
pub const PAPER_LOG_BUFFER_PAGES: u32 = 256;

/// Separators an inner node holds by default on `page_size` pages: 500, or what a page
/// of index units holds (one group: a `Reset` and the separators) when less.
pub fn default_inner_order(page_size: usize) -> u32 {
    (unit::units_per_page(page_size).saturating_sub(1) as u32).min(PAPER_INNER_ORDER)
}

/// The orders in effect: (leaf, inner).
fn orders(s: &Settings, o: &FbxOptions) -> (usize, usize) {
    let fits = unit::units_per_page(s.page_size).saturating_sub(1) as u32;
    (
        o.leaf_order.unwrap_or(PAPER_LEAF_ORDER.min(fits)) as usize,
        o.inner_order
            .unwrap_or_else(|| default_inner_order(s.page_size)) as usize,
    )
}

/// Pages of the log buffer in effect.
fn log_buffer_pages(s: &Settings, o: &FbxOptions) -> u32 {
    o.log_buffer_pages.unwrap_or_else(|| {
        let quarter = s.buffer_pool_bytes / s.page_size as u64 / 4;
        (PAPER_LOG_BUFFER_PAGES as u64).min(quarter).max(1) as u32
    })
}

/// Bytes of the budget the log buffer takes.
fn log_buffer_bytes(s: &Settings, o: &FbxOptions) -> u64 {
    if o.leaf_logging {
        log_buffer_pages(s, o) as u64 * s.page_size as u64
    } else {
        0
    }
}

/// Check the FBX-tree's sub-options for the page size and budget.
pub fn validate(s: &Settings, o: &FbxOptions) -> Result<()> {
    let per = unit::units_per_page(s.page_size);
    let bad = |m: String| Err(Error::InvalidOptions(m));
    if let Some(l) = o.leaf_order {
        if l < 2 || l as usize + 1 > per {
            return bad(format!(
                "fbx leaf_order = {l} must be at least 2 and at most {} (a compact leaf is \
                 one {}-byte page of 17-byte units)",
                per - 1,
                s.page_size
            ));
        }
    }
    if let Some(i) = o.inner_order {
        if i < 2 || i as usize + 1 > per {
            return bad(format!(
                "fbx inner_order = {i} must be at least 2 and at most {} on {}-byte pages \
                 (the paper's 500 needs 16 KiB pages with 17-byte units)",
                per - 1,
                s.page_size
            ));
        }
    }
    if let Some(p) = o.log_buffer_pages {
        if p == 0 || p > 1 << 16 {
            return bad(format!("fbx log_buffer_pages = {p} must be in 1..=65536"));
        }
    }
    if o.cluster_bits > 16 {
        return bad(format!(
            "fbx cluster_bits = {} must be at most 16",
            o.cluster_bits
        ));
    }
    if o.cluster_skip_bits.saturating_add(o.cluster_bits) > 64 {
        return bad(format!(
            "fbx cluster_skip_bits + cluster_bits = {} exceeds the 64 bits of a key",
            u64::from(o.cluster_skip_bits) + u64::from(o.cluster_bits)
        ));
    }
    if o.segment_pages < 2 {
        return bad(format!(
            "fbx segment_pages = {} must be at least 2",
            o.segment_pages
        ));
    }
    if !o.space_amp_limit.is_finite() || o.space_amp_limit < 1.2 {
        return bad(format!(
            "fbx space_amp_limit = {} must be a number of at least 1.2",
            o.space_amp_limit
        ));
    }
    o.clean.validate().map_err(Error::InvalidOptions)?;
    let reserved = log_buffer_bytes(s, o);
    let min = reserved + (MIN_FRAMES * s.page_size) as u64;
    if s.buffer_pool_bytes < min {
        return bad(format!(
            "fbx needs a budget of at least {min} bytes: a log buffer of {} pages of {} \
             bytes ({reserved} bytes) and {MIN_FRAMES} pool frames; the budget is {}",
            log_buffer_pages(s, o),
            s.page_size,
            s.buffer_pool_bytes
        ));
    }
    Ok(())
}

/// A counter that shared reads bump (relaxed: only its total is read, by `stats`).
#[derive(Debug, Default)]
pub(crate) struct Count(AtomicU64);

impl Count {
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

impl Clone for Count {
    fn clone(&self) -> Count {
        Count(AtomicU64::new(self.get()))
    }
}

/// Leaves whose cleans wait for the next write at most ([`Fbx::deferred`]).
pub(crate) const DEFERRED_CLEANS: usize = 64;

#[derive(Debug, Default, Clone)]
pub(crate) struct Counters {
    log_entries: u64,
    log_pages_flushed: u64,
    leaf_rebuilds: Count,
    leaf_rebuild_pages: Count,
    query_rebuilds: Count,
    reorganizations: u64,
    /// Cleans the policy decided that write a page (a shared read's is written by the
    /// next write, [`Fbx::deferred`]).
    cleans: Count,
    /// Compact pages those cleans wrote.
    clean_pages: u64,
    inner_appends: u64,
    leaf_splits: u64,
    inner_splits: u64,
    range_leaves: Count,
    range_list_pages: Count,
    range_pages_read: Count,
    segments_cleaned: u64,
    segment_pages_moved: u64,
    snapshot_pages: u64,
}

/// The engine state saved in the manifest.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct State {
    root: u64,
    height: u32,
    next_id: u64,
    segment_pages: u64,
    segments: Vec<PageId>,
    head: Option<(PageId, u64)>,
    snapshot: Vec<PageId>,
    snapshot_bytes: u64,
    /// The clean policy whose state the snapshot's leaves hold (absent in manifests written
    /// before it was saved: unknown).
    #[serde(default)]
    clean: Option<CleanPolicy>,
}

/// The FBX-tree engine. See the module documentation.
pub struct Fbx {
    pager: Pager,
    o: FbxOptions,
    leaf_order: usize,
    inner_order: usize,
    log_buffer_pages: u32,
    /// Leaf -> its log list.
    ntt: Ntt,
    /// Node -> a leaf's metadata (every leaf of the tree has one) or an inner node's page.
    nodes: NodeTable,
    root: u64,
    /// Levels: 1 when the root is a leaf.
    height: u32,
    next_id: u64,
    logbuf: LogBuffer,
    space: Space,
    /// Pages of the last checkpoint's NTT snapshot.
    snapshot: Vec<PageId>,
    snapshot_bytes: u64,
    /// Snapshot pages the checkpoint being taken replaces: dead once it is durable.
    retired: Vec<PageId>,
    /// Leaves whose clean a shared read's policy decision asked for (their
    /// [`LeafClean::due`] is set), at most [`DEFERRED_CLEANS`], each once: the next write
    /// (or flush, or checkpoint) writes them ([`Fbx::run_deferred_cleans`]). Locked by
    /// readers only for the in-memory step of noting one.
    deferred: Mutex<Vec<u64>>,
    counters: Counters,
}

impl Fbx {
    /// A new index: an empty root leaf, committed by the first checkpoint.
    pub fn create(storage: Storage, s: Settings, o: FbxOptions) -> Result<Fbx> {
        validate(&s, &o)?;
        let config = s.pager_config(MIN_FRAMES, log_buffer_bytes(&s, &o));
        let pager = Pager::create(storage.device, storage.vfs, config, s.record.clone())?;
        let mut t = Fbx::with(pager, &s, o, Space::new(0));
        t.space = Space::new(t.o.segment_pages as u64);
        t.root = 1;
        t.next_id = 2;
        t.nodes.insert(1, LeafMeta::default());
        t.checkpoint()?;
        Ok(t)
    }

    /// Reopen: the checkpoint's NTT snapshot, then the WAL replayed and a checkpoint taken.
    pub fn open(storage: Storage, manifest: Manifest, s: Settings, o: FbxOptions) -> Result<Fbx> {
        let state: State = manifest.engine_state("FBX")?;
        if !crate::kit::api::plausible_height(state.height)
            || state.next_id <= state.root
            || state.segment_pages < 2
        {
            return Err(Error::corruption(
                "MANIFEST",
                None,
                format!(
                    "FBX state: height {}, root {}, next id {}, segment of {} pages",
                    state.height, state.root, state.next_id, state.segment_pages
                ),
            ));
        }
        let config = s.pager_config(MIN_FRAMES, log_buffer_bytes(&s, &o));
        let (pager, ops) = Pager::open(storage.device, storage.vfs, &manifest, config)?;
        // The segment size is the file's: the options' value applies to a new index.
        let space = Space::restore(state.segment_pages, &state.segments, state.head)?;
        let mut t = Fbx::with(pager, &s, o, space);
        t.root = state.root;
        t.height = state.height;
        t.next_id = state.next_id;
        t.load_snapshot(&state.snapshot, state.snapshot_bytes)?;
        if state.clean != Some(t.o.clean) {
            // A leaf's clean state means something else under each policy (reads since
            // the last clean for the naive method, accumulated pages for AC and LTN): an
            // index reopened with another policy starts every leaf afresh.
            for m in t.nodes.values_mut() {
                m.clean.reset();
            }
        }
        t.check_budget(s.buffer_pool_bytes)?;
        t.charge_tables()?;
        t.recover(&ops)?;
        Ok(t)
    }

    fn with(pager: Pager, s: &Settings, o: FbxOptions, space: Space) -> Fbx {
        let (leaf_order, inner_order) = orders(s, &o);
        let logbuf = LogBuffer::new(
            s.page_size,
            log_buffer_pages(s, &o),
            o.cluster_bits,
            o.cluster_skip_bits,
        );
        Fbx {
            pager,
            log_buffer_pages: log_buffer_pages(s, &o),
            o,
            leaf_order,
            inner_order,
            ntt: Ntt::default(),
            nodes: NodeTable::default(),
            root: 0,
            height: 1,
            next_id: 1,
            logbuf,
            space,
            snapshot: Vec::new(),
            snapshot_bytes: 0,
            retired: Vec::new(),
            deferred: Mutex::new(Vec::with_capacity(DEFERRED_CLEANS)),
            counters: Counters::default(),
        }
    }

    fn new_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Write `pages` (unsealed) at the head in one batch; returns their ids. Each page
    /// is live; `pool` puts them in the buffer pool too.
    fn append_pages(&mut self, mut pages: Vec<Vec<u8>>, pool: bool) -> Result<Vec<PageId>> {
        let pids: Vec<PageId> = pages
            .iter()
            .map(|_| self.space.next_page(&mut self.pager))
            .collect::<Result<_>>()?;
        for (b, &pid) in pages.iter_mut().zip(&pids) {
            crate::page::seal(pid, b);
        }
        {
            let mut reqs: Vec<IoReq<'_>> = pages
                .iter()
                .zip(&pids)
                .map(|(b, &page)| IoReq::Write { page, buf: b })
                .collect();
            self.pager.device().submit(&mut reqs)?;
        }
        for (b, &pid) in pages.iter().zip(&pids) {
            if pool {
                self.pager.put_clean(pid, b)?;
            } else {
                self.pager.discard(pid);
            }
        }
        Ok(pids)
    }

    /// The unsealed page holding node `id` whole: `Reset`, then its entries.
    fn node_page(&self, id: u64, node: &Node) -> Vec<u8> {
        let mut p = unit::PageBuilder::new(self.pager.page_size());
        p.add(id, &node.units());
        p.into_unsealed()
    }

    /// Load the NTT snapshot a checkpoint wrote, and count the live pages.
    fn load_snapshot(&mut self, pages: &[PageId], bytes: u64) -> Result<()> {
        let mut stream = Vec::new();
        for &pid in pages {
            self.pager
                .read(pid, |b| snapshot::read_page(b, pid, &mut stream))??;
        }
        if stream.len() as u64 != bytes {
            return Err(Error::corruption(
                "MANIFEST",
                None,
                format!(
                    "FBX NTT snapshot holds {} bytes, the manifest says {bytes}",
                    stream.len()
                ),
            ));
        }
        let snap = snapshot::decode(&stream)?;
        let mut lists = Vec::with_capacity(snap.leaves.len());
        for (id, meta, list) in snap.leaves {
            self.nodes.load(id, meta, self.next_id)?;
            lists.push((id, list));
        }
        let high = self.pager.allocator().high_water();
        self.ntt = Ntt::from_lists(lists, self.next_id, high, crate::page::DATA_FILE)?;
        for (id, page) in snap.inner {
            self.nodes.load_inner(id, page, self.next_id)?;
        }
        self.snapshot = pages.to_vec();
        self.snapshot_bytes = bytes;
        let named: Vec<PageId> = self
            .ntt
            .iter()
            .flat_map(|(_, l)| l.iter())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .chain(self.nodes.inner_iter().map(|(_, p)| p))
            .chain(pages.iter().copied())
            .collect();
        for pid in named {
            self.space.mark_live(pid)?;
        }
        self.space.free_dead_segments(&mut self.pager);
        Ok(())
    }

    /// Write the NTT snapshot at the head (checkpoint).
    fn write_snapshot(&mut self) -> Result<()> {
        // By id, as the table holds them.
        let leaves: Vec<(u64, LeafMeta, Vec<PageId>)> = self
            .nodes
            .iter()
            .map(|(id, m)| (id, m.clone(), self.ntt.list(id).to_vec()))
            .collect();
        let inner: Vec<(u64, PageId)> = self.nodes.inner_iter().collect();
        let stream = snapshot::encode(&snapshot::Snapshot { leaves, inner });
        let ps = self.pager.page_size();
        let pages: Vec<Vec<u8>> = stream
            .chunks(snapshot::per_page(ps))
            .map(|c| snapshot::page_of(c, ps))
            .collect();
        let pids = self.append_pages(pages, false)?;
        self.counters.snapshot_pages += pids.len() as u64;
        self.retired
            .extend(std::mem::replace(&mut self.snapshot, pids));
        self.snapshot_bytes = stream.len() as u64;
        Ok(())
    }

    fn state(&self) -> serde_json::Value {
        serde_json::json!(State {
            root: self.root,
            height: self.height,
            next_id: self.next_id,
            segment_pages: self.space.seg_pages(),
            segments: self.space.segments(),
            head: self.space.head(),
            snapshot: self.snapshot.clone(),
            snapshot_bytes: self.snapshot_bytes,
            clean: Some(self.o.clean),
        })
    }

    /// Bytes of the NTT: lists, leaf metadata, inner addresses.
    fn ntt_bytes(&self) -> u64 {
        self.ntt.memory_bytes() + self.nodes.memory_bytes()
    }

    /// Bytes charged to the budget besides the pool: the log buffer (its pages and its
    /// map of homes) and the tables.
    fn structure_bytes(&self) -> u64 {
        self.logbuf.memory_bytes()
            + self.ntt_bytes()
            + self.space.memory_bytes()
            + 8 * (self.snapshot.capacity() + self.retired.capacity() + DEFERRED_CLEANS) as u64
    }

    /// At open: the budget must hold the tables the snapshot gave (and the log buffer)
    /// besides the pool's minimum, else memory would exceed it from the start (module
    /// doc, Memory): `Error::InvalidArgument` naming the least budget that does.
    fn check_budget(&self, budget: u64) -> Result<()> {
        let frames = (MIN_FRAMES * self.pager.page_size()) as u64;
        if self.structure_bytes() + frames <= budget {
            return Ok(());
        }
        Err(Error::InvalidArgument(format!(
            "fbx needs a memory budget of at least {} bytes to open this index, the \
             budget is {budget}: its node translation table takes {} bytes ({} leaves, {} \
             log-list entries, {} inner nodes), the log buffer {} bytes, the other tables \
             {} bytes and the pool's {MIN_FRAMES} frames {frames} bytes",
            self.least_budget(),
            self.ntt_bytes(),
            self.nodes.len(),
            self.ntt.entries(),
            self.nodes.inner_len(),
            self.logbuf.memory_bytes(),
            self.structure_bytes() - self.ntt_bytes() - self.logbuf.memory_bytes(),
        )))
    }

    /// The least budget that holds the tables as they are, the log buffer and the pool's
    /// minimum. The log buffer's default size follows the budget (a quarter of it, at
    /// most [`PAPER_LOG_BUFFER_PAGES`] pages), so it is solved for: the least `b` with
    /// `rest + log_buffer(b) <= b`.
    fn least_budget(&self) -> u64 {
        let ps = self.pager.page_size() as u64;
        let pages_now = self.log_buffer_pages as u64 * ps;
        let rest = self.structure_bytes() - pages_now + MIN_FRAMES as u64 * ps;
        if self.o.log_buffer_pages.is_some() {
            return rest + pages_now;
        }
        // A quarter of `b` (whole pages, at least one) when that is below the cap.
        let step = 4 * ps;
        let quarter = ((rest + ps) * 4).div_ceil(3).div_ceil(step) * step;
        if quarter / step < PAPER_LOG_BUFFER_PAGES as u64 {
            quarter
        } else {
            rest + PAPER_LOG_BUFFER_PAGES as u64 * ps
        }
    }

    /// Give the pool what the log buffer and the tables leave of the budget (Memory).
    pub(crate) fn charge_tables(&mut self) -> Result<()> {
        let bytes = self.structure_bytes();
        self.pager.charge(bytes)
    }

    fn memory_bytes(&self) -> u64 {
        self.pager.memory_bytes() + self.structure_bytes()
    }
}

impl Logged for Fbx {
    fn store(&mut self) -> &mut dyn Store {
        &mut self.pager
    }

    fn charge_memory(&mut self) -> Result<()> {
        self.charge_tables()
    }

    fn engine_state(&self) -> serde_json::Value {
        self.state()
    }

    /// Due when the segments freed since the last checkpoint (reusable only after the next)
    /// hold four segments and half as many pages as are live: without it a workload whose
    /// WAL grows slowly (small logical records) would grow the file by every dead segment
    /// until the WAL alone triggered a checkpoint.
    fn checkpoint_due(&self) -> bool {
        let freed = self.space.freed_pages();
        freed >= 4 * self.space.seg_pages() && 2 * freed >= self.space.live_pages()
    }

    /// Write the deferred cleans, append the log buffer's pages, then the NTT snapshot.
    fn before_checkpoint(&mut self) -> Result<()> {
        self.run_deferred_cleans()?;
        self.flush_log_buffer()?;
        self.write_snapshot()
    }

    /// Trim the segments freed before this checkpoint; the replaced snapshot's pages die.
    fn after_checkpoint(&mut self) -> Result<()> {
        for e in self.space.take_freed() {
            self.pager.device().trim(e.start, e.len)?;
        }
        for p in std::mem::take(&mut self.retired) {
            self.space.dead(&mut self.pager, p);
        }
        Ok(())
    }

    fn insert_unlogged(&mut self, key: u64, value: u64) -> Result<()> {
        self.update(key, unit::Unit::Insert(key, value))
    }

    fn delete_unlogged(&mut self, key: u64) -> Result<()> {
        self.update(key, unit::Unit::Delete(key))
    }

    fn delete_range_unlogged(&mut self, lo: u64, hi: u64) -> Result<()> {
        crate::kit::api::delete_range_by_scan(
            self,
            lo,
            hi,
            |t, cur, out| t.scan_leaves(cur, out),
            |t, k| t.update(k, unit::Unit::Delete(k)),
        )
    }

    fn holds_nothing(&self) -> bool {
        self.height == 1 && self.ntt.list(self.root).is_empty() && !self.logbuf.holds(self.root)
    }

    fn load_empty(&mut self, sorted: &[(u64, u64)]) -> Result<()> {
        self.run_deferred_cleans()?;
        self.bulk_load(sorted)
    }
}

/// Point searches run beside each other; range queries one at a time (module doc, Thread
/// safety).
impl Shareable for Fbx {
    const PARALLEL_GETS: bool = true;
    /// Algorithm 1 reads the union of a query's log pages in one batch of the device, which
    /// the pool's shared path has no form of: shared, a query of many leaves would read
    /// them one request at a time.
    const PARALLEL_SCANS: bool = false;

    fn get_shared(&self, key: u64) -> Result<Option<u64>> {
        self.search_shared(key)
    }

    /// An insert or delete descends to the leaf's parent and reads no leaf (§4.1).
    fn prepare_write(&self, key: u64) {
        let _ = self.descend(key);
    }

    fn has_deferred(&self) -> bool {
        !self
            .deferred
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
    }

    fn run_deferred(&mut self) -> Result<()> {
        self.run_deferred_cleans()
    }
}

impl SerialEngine for Fbx {
    // `logged_engine_methods!`, with a flush that first writes the deferred cleans.
    fn insert(&mut self, key: u64, value: u64) -> Result<()> {
        self.logged(LogicalOp::Insert(key, value))
    }

    fn delete(&mut self, key: u64) -> Result<()> {
        if !self.delete_needed(key)? {
            return Ok(());
        }
        self.logged(LogicalOp::Delete(key))
    }

    fn bulk_insert(&mut self, sorted: &[(u64, u64)]) -> Result<()> {
        self.bulk_logged(sorted)
    }

    fn delete_range(&mut self, lo: u64, hi: u64) -> Result<()> {
        self.logged(LogicalOp::DeleteRange(lo, hi))
    }

    fn apply_batch(&mut self, ops: &[LogicalOp]) -> Result<()> {
        self.logged(LogicalOp::Batch(ops.to_vec()))
    }

    /// The deferred cleans are written here too, so that a run of reads and flushes with
    /// no other write still gets them (they need no WAL record: a clean changes no entry).
    fn flush_ticket(&mut self) -> Result<Option<FlushTicket>> {
        self.run_deferred_cleans()?;
        self.log().prepare_flush()
    }

    fn close(&mut self) -> Result<()> {
        self.checkpoint()
    }

    fn get(&mut self, key: u64) -> Result<Option<u64>> {
        self.search(key)
    }

    fn scan(&mut self, cur: &mut RangeCursor, out: &mut Vec<(u64, u64)>) -> Result<()> {
        self.scan_leaves(cur, out)
    }

    fn scan_many(&mut self, ranges: &[(u64, u64)], out: &mut Vec<(u64, u64)>) -> Result<()> {
        self.range_query(ranges, out)
    }

    fn estimate_count(&mut self, ranges: &[(u64, u64)]) -> Result<Option<u64>> {
        self.estimate(ranges).map(Some)
    }

    fn stats(&self) -> Stats {
        let c = &self.counters;
        let (sum, max) = self.ntt.iter().fold((0u64, 0u64), |(s, m), (_, l)| {
            (s + l.len() as u64, m.max(l.len() as u64))
        });
        let nodes = (self.nodes.len() + self.nodes.inner_len()) as u64;
        let live = self.space.live_pages().max(1);
        let engine_counters = counters(&[
            ("height", self.height as u64),
            ("leaves", self.nodes.len() as u64),
            ("inner_nodes", self.nodes.inner_len() as u64),
            ("log_entries", c.log_entries),
            ("buffered_entries", self.logbuf.len() as u64),
            ("log_pages_flushed", c.log_pages_flushed),
            ("leaf_rebuilds", c.leaf_rebuilds.get()),
            ("leaf_rebuild_pages", c.leaf_rebuild_pages.get()),
            ("query_rebuilds", c.query_rebuilds.get()),
            ("reorganizations", c.reorganizations),
            ("cleans", c.cleans.get()),
            ("clean_pages", c.clean_pages),
            ("inner_appends", c.inner_appends),
            ("leaf_splits", c.leaf_splits),
            ("inner_splits", c.inner_splits),
            ("log_list_len_sum", sum),
            ("log_list_len_max", max),
            ("range_leaves", c.range_leaves.get()),
            ("range_list_pages", c.range_list_pages.get()),
            ("range_pages_read", c.range_pages_read.get()),
            (
                "range_pages_saved",
                c.range_list_pages
                    .get()
                    .saturating_sub(c.range_pages_read.get()),
            ),
            ("live_pages", self.space.live_pages()),
            ("freed_pages_pending", self.space.freed_pages()),
            ("file_pages", self.space.file_pages()),
            ("space_amp_milli", self.space.file_pages() * 1000 / live),
            ("segments", self.space.segment_count() as u64),
            ("segments_opened", self.space.opened),
            ("segments_released", self.space.released),
            ("segments_cleaned", c.segments_cleaned),
            ("segment_pages_moved", c.segment_pages_moved),
            ("snapshot_pages", c.snapshot_pages),
            ("ntt_bytes", self.ntt_bytes()),
            ("ntt_paper_bytes", 14 * nodes),
            ("leaf_order", self.leaf_order as u64),
            ("inner_order", self.inner_order as u64),
            ("log_buffer_pages", self.log_buffer_pages as u64),
        ]);
        let mut st = self
            .pager
            .stats(EngineKind::Fbx, engine_counters, self.memory_bytes());
        st.shape.leaves = Some(self.nodes.len() as u64);
        st.shape.write_buffer_entries = Some(
            self.log_buffer_pages as u64 * unit::units_per_page(self.pager.page_size()) as u64,
        );
        st.shape.leaf_splits = Some(c.leaf_splits);
        st
    }

    fn check_integrity(&mut self) -> Result<()> {
        let saved = self.counters.clone();
        let r = self.check();
        self.counters = saved;
        r
    }
}
