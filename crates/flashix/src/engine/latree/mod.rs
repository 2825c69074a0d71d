//! The Lazy-Adaptive Tree (`EngineKind::LaTree`; Agrawal, Ganesan, Sitaraman, Diao, Singh,
//! VLDB 2009), as Lehtonen 2014 (§4.4, §6.1) describes and compares it with the bulk index:
//! a B+-tree with **cascaded buffers** attached to every K-th level, the root's included,
//! and **adaptive buffering** (ADAPT, "reasoning in hindsight", thesis Table 4.1) deciding
//! when a buffer is emptied.
//!
//! # Operations
//! - `insert`/`delete` append a message (key, value, upsert or delete, sequence number) to
//!   the root's buffer ([`empty`]). Nothing is read.
//! - **Emptying** a buffer sorts it (newest message of a key wins), partitions it by the
//!   subtrees of the next buffered level and appends each part to their buffers, or, from
//!   the lowest buffered level, applies it to the leaves in key order, splitting and
//!   merging as the B+-tree does. Buffers pushed over `max_buffer_pages` are emptied in
//!   turn (the cascade). A buffer is emptied **fully** (thesis: "the buffer is fully
//!   emptied").
//! - `get` scans the buffers on the root-to-leaf path newest first, then the leaf; every
//!   buffer it scans records an ADAPT register `(scanCost, emptyCost)`, and a buffer is
//!   emptied after a lookup when for some earlier register `i`,
//!   `(lookups since i) × scanCost_i > emptyCost_i` ([`adapt`]). (A lookup served beside
//!   others may do that emptying a little later: Thread safety.)
//! - Range scans merge the messages of the buffers on the path to a level-1 node (the
//!   buffers whose subtrees meet its span) with the entries of its leaves ([`read`]).
//! - `bulk_insert` into an empty tree is the B+-tree's bulk load (leaves at 0.7); otherwise
//!   one insert per pair in ascending key order (thesis §6.1: the LA-tree "lacks a separate
//!   bulk insertion algorithm"). `delete_range` deletes the keys a scan finds
//!   (`kit::api::delete_range_by_scan`; the thesis's LA-tree has no delete at all, §6.3).
//!
//! # On-disk format
//! - Nodes: [`crate::kit::bnode::node`] pages (slotted 16-byte entries), one page per node.
//! - Buffers: chains of buffer pages ([`buffer`]: 24-byte messages, linked newest to
//!   oldest), one chain per non-empty buffer.
//! - The manifest's engine state: `root`, `height`, `entries` (in the leaves), `leaves`,
//!   `seq` (the last sequence number given), and `buffers`, the table of non-empty buffers
//!   `[node page, {level, head, tail, pages, entries}]` (one row per buffered node with
//!   messages, so it is sized by the number of buffered nodes).
//!
//! # Which nodes carry buffers
//! Levels are counted from the leaves (level 0). Nodes at levels `1, 1 + K, 1 + 2K, ...`
//! carry buffers, and so does the root whatever its level. Counting from the bottom keeps
//! the buffered levels fixed while the tree grows and shrinks at the top; level 1 (the
//! leaves' parents) is always buffered, so leaves are only written by the emptying of a
//! level-1 buffer (or of a leaf root's). When the root splits, its buffer moves to the new
//! root (its messages are the newest in the tree); when a root without separators is
//! removed, its buffer is appended to its child's, which becomes the root.
//!
//! # Invariants (checked by `check_integrity`)
//! 1. The B+-tree's: keys strictly increasing in a node and within the parent's separators;
//!    non-root nodes at least half full; leaves at level 0, levels decreasing by one per
//!    step; the leaf chain in key order; `entries` and `leaves` match the tree.
//! 2. Only the root and nodes at buffered levels have buffers, with their node's level;
//!    every message of a node's buffer lies in that node's key span.
//! 3. For every key, messages are newer toward the root, and within a chain newer toward
//!    the tail (kept by construction: appends carry newer messages, emptyings go oldest
//!    chunk first, splits keep chain order, and merged chains hold disjoint keys or an
//!    older chain first). `check_integrity` checks it: the buffers holding a key lie on
//!    one root-to-leaf path, so ordered by level and chain position a key's sequence
//!    numbers increase; and none is above `seq`.
//! 4. No page (node or buffer) is reachable twice; no reachable page is free in the extent
//!    allocator; chains have the length and message count the table says, no empty page.
//! 5. Between operations every buffer holds at most `max_buffer_pages` pages.
//!
//! # Durability
//! The shared [`crate::durable::Pager`] mechanism, as the B+-tree: a logical redo WAL with
//! group commit on `flush`; nodes and buffer pages are changed through the pager, which
//! logs a before-image at the first change of a checkpoint-image page (so torn in-place
//! writes are undone on recovery) and frees pages only for reuse after the next
//! checkpoint; a checkpoint writes dirty pages and switches the manifest holding the
//! buffer table. Emptyings triggered by lookups change no contents, so replay, which
//! performs no lookups, recovers the same contents with a different buffer layout.
//!
//! # Memory (all reported in `Stats::memory_bytes`)
//! - The buffer pool: the budget less the sort area; at least [`MIN_FRAMES`] frames.
//! - The sort area: a quarter of the budget, at least one page (thesis §6.1 splits the
//!   LA-tree's RAM 3/4 : 1/4): an emptying reads and sorts its buffer a sort area at a time.
//!   The smallest budget accepted is therefore `MIN_FRAMES + 1` pages (5 pages: 80 KiB with
//!   16 KiB pages, so the bench's 128 KiB case runs with 6 frames and a 2-page sort area).
//! - The buffer table and its ADAPT state: about [`TABLE_ROW_BYTES`] per non-empty buffer
//!   (the set of buffers due for an emptying by the next write holds at most one id per
//!   buffer that fired since the last write).
//! - Transient: a range step holds the messages of one level-1 node's span (bounded by the
//!   buffers on one path) and up to 8 leaves' entries; `delete_range` holds a
//!   batch of keys (`kit::api::DELETE_RANGE_BATCH`).
//!
//! # Counters
//! `entries` (in the leaves), `leaves`, `height`, `leaf_splits`, `internal_splits`,
//! `root_splits`, `merges`, `redistributions`, `buffers` (non-empty), `buffer_entries`,
//! `buffer_pages`, `emptyings_adapt`, `emptyings_overflow`, `buffer_pages_scanned` (by
//! lookups and scans).
//!
//! # What the original paper leaves unknown to us, and our decisions
//! The thesis summarises the LA-tree in one page; the VLDB paper's body was not available
//! (notes §2.2, "[LA-PDF: verify]"). Decided here:
//! - **Buffer residency:** on the device, as chains of pages through the pager (the paper
//!   targets flash-resident buffers, which is what gives ADAPT's scan cost its meaning).
//! - **Which levels:** counted from the leaves, `1 + jK`, plus the root (see above).
//! - **Insert-only trigger:** a buffer that grows past `max_buffer_pages` is emptied
//!   (ADAPT never fires without lookups); with `adapt` off this is the only trigger.
//! - **Full emptying**, of the whole buffer, as the thesis's "fully emptied".
//! - **ADAPT costs** in page I/Os: scanCost = buffer pages the lookup scanned (up to its
//!   hit, "the cost to scan up to that point in the buffer"); emptyCost = the buffer's
//!   pages plus a read and a write per subtree reached, `min(messages, children)`. The
//!   registers are compressed to the earliest lookup at which one fires ([`adapt`]);
//!   registers are in memory only and restart at open.
//! - **Range scans** merge the buffers on the path with the leaves (no emptying first, no
//!   ADAPT register: only point lookups count as lookups).
//! - **Deletes** are tombstone messages; a tombstone is dropped when applied to a leaf.
//! - **Node size:** one node is one page; `node_bytes` must be 0 (the page size) or equal
//!   the page size, so the thesis's 16 KiB nodes are `page_size(16384)`. Multi-page nodes
//!   are not built.
//! - Storage reclamation is the pager's: freed buffer pages return to the allocator after
//!   the next checkpoint (no log-structured cleaning as on raw NAND).
//!
//! # Thread safety
//! Served to many threads by `kit::parallel::Parallel`. Lookups (`get`, `get_many`) and
//! range-scan steps hold the engine's lock shared and run beside each other: each reads
//! the nodes, buffer pages and leaves of its path through the Pager's shared path
//! (`Pager::read_shared`: the buffer pool's latch protocol, the device's reader handles;
//! a miss whose victim frame is dirty writes it back with the pool's mutex released) and the buffer table from memory. What a read changes is made
//! safe so:
//! - the `buffer_pages_scanned` counter is a relaxed atomic (exact: every read adds its
//!   own);
//! - a lookup's ADAPT register is recorded in its buffer's atomic state ([`adapt`]): every
//!   lookup gets its own number and the earliest firing point only moves down, so every
//!   register counts as in some serial order of the lookups, and a buffer once due stays
//!   due until it is emptied;
//! - the emptying a fired register asks for is a write, which must not run beside readers:
//!   a lookup on the shared path notes the buffer in a small mutex-guarded set (held only
//!   to insert, never across I/O). Right after the lookup, if the engine's lock is free
//!   (always, at one thread), the lookup empties the noted buffers that are still due as a
//!   write under the exclusive lock (`Shareable::run_deferred`), highest level first, then
//!   settles the cascade; when other threads hold the lock, the next write (`insert`,
//!   `delete` and the writes built of them) does so before appending its own message.
//!   This departs from the serial order only in time, and only when threads meet: the
//!   buffers are emptied a little later than right after the lookup, so lookups in
//!   between still scan them. It keeps ADAPT's policy:
//!   the same registers decide which buffers go, and since an emptying by ADAPT changes
//!   no contents (Durability) every answer is the serial path's. A noted buffer that was
//!   emptied, split or merged meanwhile has fresh registers and is left alone; one that
//!   moved to a new root is no longer found under the noted node, and is noted again by
//!   its next lookup, since its registers still fire.
//!
//! The serial `get` and `scan` (on `&mut`) are the same searches and empty the fired
//! buffers at once, as the paper does. Writes hold the lock exclusive, one at a time, and
//! see no reader: no read meets a buffer half emptied or a node half split. A point write
//! first reads the root buffer's newest page under the shared lock when readers hold it,
//! so its append finds that page in the pool. A scan step descends again from its next key
//! every time, so it never resumes from a node a write in between changed. A flush takes
//! its WAL ticket under the lock and syncs outside it, so concurrent flushes share one
//! sync (group commit).

mod adapt;
mod buffer;
mod check;
mod empty;
mod options;
mod read;
mod tree;
pub use options::LaTreeOptions;

use crate::durable::Manifest;
use crate::durable::Pager;
use crate::durable::{logged_engine_methods, pager_store_methods, Logged};
use crate::error::{Error, Result};
use crate::io::PageId;
use crate::io::Storage;
use crate::kind::EngineKind;
use crate::kit::api::{delete_range_by_scan, RangeCursor, SerialEngine, Shareable};
use crate::kit::bnode::node;
use crate::settings::Settings;
use crate::stats::counters;
use crate::stats::Stats;
use crate::util::sync::Mutex;
use buffer::Buffer;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};

/// Frames the buffer pool needs at least: one page is pinned at a time; splits and merges
/// touch a handful in turn.
pub const MIN_FRAMES: usize = 4;

/// Memory charged per row of the buffer table (page id, row, ADAPT state, map overhead).
pub const TABLE_ROW_BYTES: u64 = 96;

/// Bytes a message takes in the sort area.
const SORT_MSG_BYTES: u64 = 24;

/// Durable roots, saved in the manifest.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct State {
    root: PageId,
    height: u32,
    entries: u64,
    leaves: u64,
    seq: u64,
    buffers: Vec<(PageId, Buffer)>,
}

#[derive(Debug, Default, Clone)]
struct Counters {
    leaf_splits: u64,
    internal_splits: u64,
    root_splits: u64,
    merges: u64,
    redistributions: u64,
    emptyings_adapt: u64,
    emptyings_overflow: u64,
}

/// The LA-tree engine.
pub struct LaTree {
    pager: Pager,
    root: PageId,
    height: u32,
    /// Entries in the leaves (buffered messages not counted).
    entries: u64,
    leaves: u64,
    /// Entries of a node.
    cap: usize,
    k: u32,
    max_buffer_pages: u64,
    adapt: bool,
    /// Messages of a buffer page.
    per_page: usize,
    /// Messages an emptying sorts at once.
    sort_entries: usize,
    sort_bytes: u64,
    /// The last sequence number given.
    seq: u64,
    /// The non-empty buffers, by node.
    buffers: BTreeMap<PageId, Buffer>,
    /// Some buffer may be over `max_buffer_pages`.
    maybe_overfull: bool,
    counters: Counters,
    /// Buffer pages scanned by lookups and range scans (atomic: they run beside each
    /// other).
    scanned: AtomicU64,
    /// Buffers whose ADAPT registers fired in lookups on the shared path, emptied by the
    /// next write (module doc, Thread safety); a set, so that lookups of a read-only phase,
    /// which find a due buffer due again, note it once.
    deferred: Mutex<BTreeSet<PageId>>,
}

/// Check LA-tree options against the page size (dispatched by `engine::validate`).
pub fn validate(s: &Settings, o: &LaTreeOptions) -> Result<()> {
    let ps = s.page_size as u64;
    if o.node_bytes != 0 && o.node_bytes != ps {
        return Err(Error::InvalidOptions(format!(
            "latree node_bytes {} must be 0 (one page) or the page size {ps}: \
             multi-page nodes are not built; set page_size to the node size",
            o.node_bytes
        )));
    }
    if o.k == 0 {
        return Err(Error::InvalidOptions("latree k must be at least 1".into()));
    }
    if o.max_buffer_pages == 0 {
        return Err(Error::InvalidOptions(
            "latree max_buffer_pages must be at least 1".into(),
        ));
    }
    let (pool, _) = split_budget(s);
    if pool < MIN_FRAMES as u64 * ps {
        return Err(Error::InvalidOptions(format!(
            "latree needs a memory budget of at least {} bytes ({} pages: {MIN_FRAMES} \
             buffer-pool frames and a one-page sort area), got {}",
            (MIN_FRAMES as u64 + 1) * ps,
            MIN_FRAMES + 1,
            s.buffer_pool_bytes
        )));
    }
    Ok(())
}

/// The budget's split: (buffer pool bytes, sort area bytes). The sort area is a quarter of
/// the budget in whole pages, at least one page.
fn split_budget(s: &Settings) -> (u64, u64) {
    let ps = s.page_size as u64;
    let sort = (s.buffer_pool_bytes / 4 / ps).max(1) * ps;
    (s.buffer_pool_bytes.saturating_sub(sort), sort)
}

impl LaTree {
    /// Memory besides the pool, charged to the budget (`Logged::charge_memory`): the sort
    /// area and the buffer table.
    fn structure_bytes(&self) -> u64 {
        self.sort_bytes + TABLE_ROW_BYTES * self.buffers.len() as u64
    }

    fn new(pager: Pager, s: &Settings, o: &LaTreeOptions, st: State) -> LaTree {
        let (_, sort_bytes) = split_budget(s);
        let per_page = buffer::per_page(s.page_size);
        LaTree {
            pager,
            root: st.root,
            height: st.height,
            entries: st.entries,
            leaves: st.leaves,
            cap: node::capacity(s.page_size),
            k: o.k,
            max_buffer_pages: o.max_buffer_pages,
            adapt: o.adapt,
            per_page,
            sort_entries: ((sort_bytes / SORT_MSG_BYTES) as usize).max(per_page),
            sort_bytes,
            seq: st.seq,
            maybe_overfull: st.buffers.iter().any(|(_, b)| b.pages > o.max_buffer_pages),
            buffers: st.buffers.into_iter().collect(),
            counters: Counters::default(),
            scanned: AtomicU64::new(0),
            deferred: Mutex::new(BTreeSet::new()),
        }
    }

    fn pager_config(s: &Settings) -> crate::durable::PagerConfig {
        let (_, sort) = split_budget(s);
        s.pager_config(MIN_FRAMES, sort)
    }

    /// A new empty tree (one empty root leaf, no buffered message).
    pub fn create(storage: Storage, s: Settings, o: LaTreeOptions) -> Result<LaTree> {
        validate(&s, &o)?;
        let mut pager = Pager::create(
            storage.device,
            storage.vfs,
            Self::pager_config(&s),
            s.record.clone(),
        )?;
        pager.set_page_check(node::check_page);
        let root = pager.alloc_page()?;
        pager.write(root, |b| node::init(b, 0, node::NONE, &[]))?;
        let st = State {
            root,
            height: 1,
            entries: 0,
            leaves: 1,
            seq: 0,
            buffers: Vec::new(),
        };
        let mut t = LaTree::new(pager, &s, &o, st);
        t.checkpoint()?;
        Ok(t)
    }

    /// Reopen: restore the checkpoint image and replay the WAL.
    pub fn open(
        storage: Storage,
        manifest: Manifest,
        s: Settings,
        o: LaTreeOptions,
    ) -> Result<LaTree> {
        let st: State = manifest.engine_state("LA-tree")?;
        if !crate::kit::api::plausible_height(st.height) {
            return Err(Error::corruption(
                "MANIFEST",
                None,
                format!("LA-tree height {}", st.height),
            ));
        }
        if st
            .buffers
            .iter()
            .any(|(_, b)| b.pages == 0 || b.level >= st.height)
        {
            return Err(Error::corruption(
                "MANIFEST",
                None,
                "LA-tree buffer table row out of shape",
            ));
        }
        let (mut pager, ops) = Pager::open(
            storage.device,
            storage.vfs,
            &manifest,
            Self::pager_config(&s),
        )?;
        pager.set_page_check(node::check_page);
        let mut t = LaTree::new(pager, &s, &o, st);
        t.recover(&ops)?;
        Ok(t)
    }

    fn state(&self) -> serde_json::Value {
        serde_json::json!(State {
            root: self.root,
            height: self.height,
            entries: self.entries,
            leaves: self.leaves,
            seq: self.seq,
            buffers: self.buffers.iter().map(|(&p, b)| (p, b.clone())).collect(),
        })
    }

    fn delete_range_unlogged(&mut self, lo: u64, hi: u64) -> Result<()> {
        delete_range_by_scan(
            self,
            lo,
            hi,
            |t, cur, out| t.scan_step(cur, out),
            |t, k| t.put(k, 0, true),
        )
    }

    fn memory_bytes(&self) -> u64 {
        self.pager.memory_bytes() + self.structure_bytes()
    }
}

impl Logged for LaTree {
    pager_store_methods!();

    fn engine_state(&self) -> serde_json::Value {
        self.state()
    }

    fn insert_unlogged(&mut self, key: u64, value: u64) -> Result<()> {
        self.put(key, value, false)
    }

    fn delete_unlogged(&mut self, key: u64) -> Result<()> {
        self.put(key, 0, true)
    }

    fn delete_range_unlogged(&mut self, lo: u64, hi: u64) -> Result<()> {
        LaTree::delete_range_unlogged(self, lo, hi)
    }

    fn holds_nothing(&self) -> bool {
        self.entries == 0 && self.buffers.is_empty()
    }

    fn load_empty(&mut self, sorted: &[(u64, u64)]) -> Result<()> {
        self.bulk_load(sorted)
    }
}

/// Lookups and range scans run beside each other (module doc, Thread safety).
impl Shareable for LaTree {
    const PARALLEL_GETS: bool = true;
    const PARALLEL_SCANS: bool = true;

    fn get_shared(&self, key: u64) -> Result<Option<u64>> {
        self.lookup_shared(key)
    }

    /// A point write appends its message to the root's buffer, reading its newest page
    /// first.
    fn prepare_write(&self, key: u64) {
        let _ = key;
        if let Some(b) = self.buffers.get(&self.root) {
            let _ = self.pager.read_shared(b.tail, |_| ());
        }
    }

    fn scan_shared(&self, cur: &mut RangeCursor, out: &mut Vec<(u64, u64)>) -> Result<()> {
        self.scan_step(cur, out)
    }

    fn has_deferred(&self) -> bool {
        !self
            .deferred
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
    }

    fn run_deferred(&mut self) -> Result<()> {
        self.empty_deferred()
    }
}

impl SerialEngine for LaTree {
    logged_engine_methods!();

    fn get(&mut self, key: u64) -> Result<Option<u64>> {
        self.lookup(key)
    }

    fn scan(&mut self, cur: &mut RangeCursor, out: &mut Vec<(u64, u64)>) -> Result<()> {
        self.scan_step(cur, out)
    }

    fn stats(&self) -> Stats {
        let c = &self.counters;
        let buffer_entries = self.buffers.values().map(|b| b.entries).sum();
        let buffer_pages = self.buffers.values().map(|b| b.pages).sum();
        let engine_counters = counters(&[
            ("entries", self.entries),
            ("leaves", self.leaves),
            ("height", self.height as u64),
            ("leaf_splits", c.leaf_splits),
            ("internal_splits", c.internal_splits),
            ("root_splits", c.root_splits),
            ("merges", c.merges),
            ("redistributions", c.redistributions),
            ("buffers", self.buffers.len() as u64),
            ("buffer_entries", buffer_entries),
            ("buffer_pages", buffer_pages),
            ("emptyings_adapt", c.emptyings_adapt),
            ("emptyings_overflow", c.emptyings_overflow),
            ("buffer_pages_scanned", self.scanned.load(Ordering::Relaxed)),
        ]);
        let mut s = self
            .pager
            .stats(EngineKind::LaTree, engine_counters, self.memory_bytes());
        s.shape.leaves = Some(self.leaves);
        s.shape.leaf_splits = Some(c.leaf_splits);
        s
    }

    fn check_integrity(&mut self) -> Result<()> {
        self.check()
    }
}

#[cfg(test)]
mod tests;
