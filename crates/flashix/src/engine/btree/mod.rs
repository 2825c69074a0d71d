//! The B+-tree baseline (`EngineKind::BTree`), as the papers compare against it: the FD-tree
//! paper's B+-tree (§5.1, App. D, following Comer 1979) — nodes are pages read and written
//! through an LRU buffer pool and updated **in place**; a full node splits; a node below
//! half full borrows from a sibling (redistribution) or is merged with it; bulk loading
//! fills nodes to 0.7 (`BTreeOptions::bulk_fill`); range scans walk the leaf chain.
//!
//! Its nodes are **B-link** nodes (Lehman and Yao, "Efficient locking for concurrent
//! operations on B-trees", 1981): each also names its right sibling at its level and its
//! high key, a split writes the new right node before the old node links to it and before
//! the parent's separator, and every descent moves right from a node whose high key is at
//! or below its key (`at_key`). That is what lets a reader or a writer reach a node after
//! it split and still find its key, so that splits run under one latch per node beside
//! other threads (Thread safety). Alone (one thread, or a write under the exclusive lock)
//! a descent never needs to move right and does the same reads as a plain B+-tree's.
//!
//! # Node orders
//! A node holds at most its kind's *order* of entries: the leaf order for a leaf (key,
//! value pairs), the inner order for an internal node (separators; it has one child more).
//! Both default to what a page holds, `(page_size-48)/16` (253 for 4 KiB pages), and can be
//! set lower with `BTreeOptions::{leaf_order, inner_order}` — e.g. the FBX-tree paper's
//! baseline (§5: leaf order 100, inner order 500; `BTreeOptions::orders(100, 500)`, which
//! needs 8 KiB pages for the inner order). An order is within `BTreeOptions::MIN_ORDER` (4)
//! and the page's capacity, else creating or opening the index fails with
//! `Error::InvalidOptions`. The orders are part of the options record in the manifest (only
//! when set: a tree without them has the record of earlier builds), so a reopened tree
//! keeps them. Splits, underflow (below `order/2`), bulk loading (`bulk_fill` of the
//! order) and `check_integrity` all use the order of the node's kind.
//!
//! # On-disk format
//! Nodes: B-link nodes of [`crate::kit::bnode::node`] (kinds 5 and 6: a slotted page of
//! 16-byte entries after a header with the right link and the high key, capacity
//! `(page_size-48)/16`, 253 for 4 KiB pages; a node may use fewer slots, see Node orders).
//! The manifest's engine state holds `root`, `height` (levels; 1 when the root is a leaf),
//! `entries` and `leaves`. A tree written before format 10 (plain nodes, kinds 1 and 2) is
//! rebuilt as B-link nodes when it is opened ([`upgrade`]).
//!
//! # Invariants (checked by `check_integrity`)
//! 1. Keys are strictly increasing within a node, and every key of the subtree in child slot
//!    `s` lies in `[separator(s), separator(s+1))` of its parent.
//! 2. Every node holds at most its kind's order of entries; every node other than the root
//!    holds at least `order/2`; an internal root holds at least one separator.
//! 3. All leaves are at level 0, at depth `height - 1`; node levels decrease by one per step.
//! 4. The leaf chain visits every leaf once, in key order, ending with `NONE`.
//! 5. No page is reachable twice, and no reachable page is free in the extent allocator.
//! 6. `entries` and `leaves` equal the counts in the tree.
//! 7. Every node is a B-link node; its high key is the upper bound its parent gives it,
//!    and it has a right link exactly when that bound exists; the right links of a level
//!    visit its nodes in key order, the last linking to `NONE`; a leaf's link is its right
//!    link.
//!
//! # Durability
//! The shared [`crate::durable::Pager`] mechanism: logical redo WAL with group commit on
//! `flush`, full-page before-images on the first change of a page after a checkpoint (so
//! torn in-place writes are undone on recovery), checkpoints that switch the manifest.
//! A bulk insert too large for the log is applied unlogged and followed by a checkpoint.
//!
//! # Memory
//! The buffer pool (`buffer_pool_bytes`); nothing per entry or per page beside its frames.
//!
//! # Thread safety
//! Served to many threads by `kit::parallel::Parallel`. Reads (`get`, `get_many`, range
//! scans) hold the tree's lock shared and run in parallel, each loading its pages through
//! the Pager's shared path (`Pager::read_shared`: the buffer pool's latch protocol, the
//! device's reader handles), so eight readers keep eight reads in flight. A reader looks
//! at a page under its frame's latch held shared; otherwise it only pins, loads and
//! unpins frames. A read that misses a page, with other operations in progress, reads it
//! with the lock released and descends again (`Shareable::RESTARTS`,
//! `crate::durable::outside`): a descent changes nothing, so running it twice answers as
//! running it once, and the second finds the page in hand unless a write of it came in
//! between.
//!
//! **Point writes beside each other.** An insert or delete made while other operations
//! are in progress also holds the lock shared (`Shareable::PARALLEL_POINT_WRITES`,
//! [`BTree::insert_shared`], [`BTree::delete_shared`]) and follows Lehman and Yao's
//! protocol with the buffer pool's frame latches as the node locks ([`latched`]): it
//! descends as a reader does, latches the leaf it reached exclusive and moves right
//! (latch released, next latched) while the key is at or above the leaf's high key; it
//! then changes the leaf under the latch, logging the operation (and the page's
//! before-image, on its first change since the checkpoint) under the WAL's lock while it
//! holds the latch (`Pager::write_shared`; the WAL's write of a full buffer waits until
//! the latch is released). A full leaf splits under its latch: the new right leaf is
//! written first (a fresh page, reserved before the latch was taken, as making its frame
//! may write dirty pages back: `Pager::reserve_page_shared`), then the old leaf keeps the
//! lower half, links to it and takes the separator as its high key; the latch is released
//! and the separator goes into the parent, found by descending again to level 1 and moving
//! right under the parent's latch, and so on up while parents split; a split of the root
//! makes the new root under the old root's latch and publishes root and height in one word
//! ([`latched::Top`]). A delete of an absent key changes nothing; a delete that leaves a
//! non-root leaf at its minimum or above is made under the leaf's latch; one that would
//! underflow asks for the exclusive lock (merges run only there: no merge under latches, so
//! a node is never freed while a thread may hold a pointer to it).
//!
//! Why that is safe: every thread holds at most one node's latch (besides the pages it
//! creates, which nobody else knows), so latches cannot deadlock; a node is changed only
//! under its latch and looked at only under it (shared, by readers), so no thread sees a
//! node half written; and from the moment a split's latch is released every key is found
//! from any node to its left by moving right, with or without the parent's separator, so
//! a descent that read a pointer before a split still reaches the key's node. Each
//! single-key operation takes effect under the latch of the leaf that holds its key
//! (linearizable there), and the WAL holds the operations on a key in that order (a key
//! that moves in a split moves under the latch of the leaf it leaves). A scan's position
//! (a leaf) stays valid across such writes: no shared write frees a leaf, and a split
//! leaves the keys it moves reachable through the leaf's link. When no shared write is in
//! progress every split's separators are in place, so the exclusive paths (merges, bulk
//! and range operations, batches, checkpoints, checks) see a B+-tree, alone. A pool of
//! fewer than [`latched::SHARED_SPLIT_FRAMES`] frames splits under the exclusive lock, so
//! that the pins of splits beside each other cannot exhaust it. At one thread every write
//! takes the serial path.
//!
//! An exclusive point write beside other operations walks to its leaf first (its misses
//! read outside the lock) and writes back a few dirty pages at the pool's LRU end under
//! the shared lock (`Pager::clean_ahead`), so its page loads and the write-backs its
//! evictions would need run beside the readers; under the exclusive lock it then waits for
//! its in-memory step, the WAL's hand-off of a full buffer to the file, and, when one is
//! due, a checkpoint (a shared write that finds one due asks for it:
//! `SharedWrite::Maintain`). A scan resumes at its next leaf only if no exclusive write
//! came in between; otherwise it descends again from the next key.

mod options;
pub use options::BTreeOptions;
mod bulk;
mod check;
mod delete;
mod insert;
mod latched;
mod upgrade;

use latched::Top;

use crate::durable::Manifest;
use crate::durable::{logged_engine_methods, Logged};
use crate::durable::{PageRead, Pager, Store};
use crate::error::{Error, Result};
use crate::io::PageId;
use crate::io::Storage;
use crate::kind::EngineKind;
use crate::kit::api::{RangeCursor, SerialEngine, Shareable, SharedWrite};
use crate::kit::bnode::{node, spine};
use crate::page::DATA_FILE;
use crate::settings::Settings;
use crate::stats::counters;
use crate::stats::Stats;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};

/// Frames the tree needs at least: one page is pinned at a time, splits touch a handful.
const MIN_FRAMES: usize = 8;
/// Dirty pages a point write that waits for readers writes back first (`prepare_write`):
/// a write dirties one page and its evictions take about one, so two keep ahead.
const PREPARE_CLEAN: usize = 2;

/// Durable roots, saved in the manifest.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct State {
    root: PageId,
    height: u32,
    entries: u64,
    leaves: u64,
}

/// What the tree did since open (splits also beside other threads: atomics).
#[derive(Debug, Default)]
struct Counters {
    leaf_splits: AtomicU64,
    internal_splits: AtomicU64,
    root_splits: AtomicU64,
    merges: AtomicU64,
    redistributions: AtomicU64,
    /// Leaf splits made beside other threads ([`latched`]).
    shared_splits: AtomicU64,
}

/// The B+-tree engine.
pub struct BTree {
    pager: Pager,
    /// The root and the height, changed beside other threads by a root split
    /// ([`latched`]).
    top: Top,
    /// Entries in the tree (shared inserts add to it beside each other).
    entries: AtomicU64,
    /// Leaves in the tree (shared splits add to it).
    leaves: AtomicU64,
    /// Most entries of a leaf ([`BTreeOptions::leaf_order`], else a page's capacity).
    leaf_cap: usize,
    /// Most separators of an internal node ([`BTreeOptions::inner_order`], else a page's
    /// capacity).
    inner_cap: usize,
    /// Fill factor of bulk loading ([`BTreeOptions::bulk_fill`]).
    bulk_fill: f64,
    /// Open rebuilt a tree of plain nodes ([`upgrade`]): recovery ends with a checkpoint.
    upgraded: bool,
    /// Point writes made under the shared lock ([`BTree::insert_shared`],
    /// [`BTree::delete_shared`]).
    shared_writes: AtomicU64,
    counters: Counters,
    /// A deliberately broken protocol for the model tests ([`latched`]): shared writers
    /// change the node their descent reached without moving right.
    #[cfg(test)]
    broken_no_move_right: bool,
}

/// Check the B+-tree's options.
pub fn validate(s: &Settings, o: &BTreeOptions) -> Result<()> {
    let fill = o.bulk_fill;
    // Below one half, bulk-loaded nodes would break the B+-tree's occupancy invariant.
    if !(0.5..=1.0).contains(&fill) {
        return Err(Error::InvalidOptions(format!(
            "btree bulk_fill {fill} must be within 0.5..=1.0"
        )));
    }
    let page_cap = node::capacity_of(node::Format::BLink, s.page_size);
    for (name, order) in [("leaf_order", o.leaf_order), ("inner_order", o.inner_order)] {
        let Some(order) = order else { continue };
        let min = BTreeOptions::MIN_ORDER;
        if order < min {
            return Err(Error::InvalidOptions(format!(
                "btree {name} {order} is below the minimum order {min} (a {}-byte page holds \
                 {page_cap} entries)",
                s.page_size
            )));
        }
        if order as usize > page_cap {
            // A node is one page: the order needs the smallest page that holds it.
            let mut need = s.page_size;
            while node::capacity_of(node::Format::BLink, need) < order as usize {
                need = need.saturating_mul(2);
            }
            return Err(Error::InvalidOptions(format!(
                "btree {name} {order} is above the {page_cap} entries a {}-byte page holds \
                 (entries are 16 bytes: an order of {order} needs pages of {need} bytes or \
                 more)",
                s.page_size
            )));
        }
    }
    Ok(())
}

/// The most entries of a leaf and of an internal node: the options' orders, else what a
/// page of `page_size` bytes holds.
fn caps(page_size: usize, o: &BTreeOptions) -> (usize, usize) {
    let page_cap = node::capacity_of(node::Format::BLink, page_size);
    let cap = |order: Option<u32>| order.map_or(page_cap, |n| n as usize);
    (cap(o.leaf_order), cap(o.inner_order))
}

impl BTree {
    /// A new empty tree (one empty root leaf).
    pub fn create(storage: Storage, s: Settings, o: BTreeOptions) -> Result<BTree> {
        let (leaf_cap, inner_cap) = caps(s.page_size, &o);
        let config = s.pager_config(MIN_FRAMES, 0);
        let mut pager = Pager::create(storage.device, storage.vfs, config, s.record)?;
        pager.set_page_check(node::check_page);
        let root = pager.alloc_page()?;
        pager.write(root, |b| {
            node::init_blink(b, 0, node::NONE, node::Side::END, &[])
        })?;
        let top = Top::new(root, 1).ok_or_else(|| bad_top(root, 1))?;
        let mut t = BTree {
            pager,
            top,
            entries: AtomicU64::new(0),
            leaves: AtomicU64::new(1),
            leaf_cap,
            inner_cap,
            bulk_fill: o.bulk_fill,
            upgraded: false,
            shared_writes: AtomicU64::new(0),
            counters: Counters::default(),
            #[cfg(test)]
            broken_no_move_right: false,
        };
        t.checkpoint()?;
        Ok(t)
    }

    /// Reopen: restore the checkpoint image and replay the WAL.
    pub fn open(
        storage: Storage,
        manifest: Manifest,
        s: Settings,
        o: BTreeOptions,
    ) -> Result<BTree> {
        let state: State = manifest.engine_state("B+-tree")?;
        let (leaf_cap, inner_cap) = caps(s.page_size, &o);
        let config = s.pager_config(MIN_FRAMES, 0);
        let (mut pager, ops) = Pager::open(storage.device, storage.vfs, &manifest, config)?;
        pager.set_page_check(node::check_page);
        if !crate::kit::api::plausible_height(state.height) {
            return Err(bad_top(state.root, state.height));
        }
        let top =
            Top::new(state.root, state.height).ok_or_else(|| bad_top(state.root, state.height))?;
        let mut t = BTree {
            pager,
            top,
            entries: AtomicU64::new(state.entries),
            leaves: AtomicU64::new(state.leaves),
            leaf_cap,
            inner_cap,
            bulk_fill: o.bulk_fill,
            upgraded: false,
            shared_writes: AtomicU64::new(0),
            counters: Counters::default(),
            #[cfg(test)]
            broken_no_move_right: false,
        };
        if manifest.format_version < upgrade::BLINK_FORMAT {
            t.upgrade()?;
        }
        t.recover(&ops)?;
        Ok(t)
    }

    /// Entries in the tree.
    fn entries(&self) -> u64 {
        self.entries.load(Ordering::Relaxed)
    }

    /// Leaves in the tree.
    fn leaves(&self) -> u64 {
        self.leaves.load(Ordering::Relaxed)
    }

    fn state(&self) -> serde_json::Value {
        let (root, height) = self.top.load();
        serde_json::json!(State {
            root,
            height,
            entries: self.entries(),
            leaves: self.leaves(),
        })
    }

    /// Minimum entries of a non-root leaf.
    fn leaf_min(&self) -> usize {
        self.leaf_cap / 2
    }

    /// Minimum separators of a non-root internal node (the spine's rule, `cap / 2`).
    fn inner_min(&self) -> usize {
        self.inner_cap / 2
    }

    /// Run `f` on the internal levels (the shared split and underflow code, under the
    /// exclusive lock), then publish the root and height it left.
    fn with_spine(
        &mut self,
        f: impl FnOnce(&mut spine::Spine<'_>) -> Result<spine::SpineEvents>,
    ) -> Result<()> {
        let (mut root, mut height) = self.top.load();
        let ev = f(&mut spine::Spine {
            pager: &mut self.pager,
            root: &mut root,
            height: &mut height,
            cap: self.inner_cap,
            format: node::Format::BLink,
        });
        self.top.store(root, height)?;
        let ev = ev?;
        let c = &mut self.counters;
        *c.internal_splits.get_mut() += ev.internal_splits;
        *c.root_splits.get_mut() += ev.root_splits;
        *c.redistributions.get_mut() += ev.redistributions;
        *c.merges.get_mut() += ev.merges;
        Ok(())
    }

    /// Set the root, height and leaf count (a tree built anew under the exclusive lock).
    fn set_tree(&mut self, root: PageId, height: u32, leaves: u64) -> Result<()> {
        self.top.store(root, height)?;
        *self.leaves.get_mut() = leaves;
        Ok(())
    }

    /// Descend to the leaf for `k`: the internal pages passed and the child slot taken in
    /// each, and the leaf. A write's, under the engine's exclusive lock: through the
    /// Pager's exclusive path.
    fn descend(&mut self, k: u64) -> Result<(Vec<(PageId, usize)>, PageId)> {
        let (root, height) = self.top.load();
        let mut path = Vec::with_capacity(height as usize);
        let leaf = walk_down(&mut &mut self.pager, root, height, k, Some(&mut path))?;
        Ok((path, leaf))
    }

    /// The leaf for `k` (a reader's descent, through the Pager's shared path).
    fn walk_down(&self, k: u64, path: Option<&mut Vec<(PageId, usize)>>) -> Result<PageId> {
        let (root, height) = self.top.load();
        walk_down(&mut &self.pager, root, height, k, path)
    }

    /// Up to `limit` keys in `[lo, hi]`.
    fn keys_in(&self, lo: u64, hi: u64, limit: usize) -> Result<Vec<u64>> {
        let mut cur = RangeCursor::bounded(lo, hi);
        let mut out = Vec::new();
        while out.len() < limit && cur.next.is_some() {
            self.scan_shared(&mut cur, &mut out)?;
        }
        out.truncate(limit);
        Ok(out.into_iter().map(|(k, _)| k).collect())
    }

    fn delete_range_unlogged(&mut self, lo: u64, hi: u64) -> Result<()> {
        let mut from = lo;
        loop {
            let keys = self.keys_in(from, hi, 4096)?;
            let Some(&last) = keys.last() else {
                return Ok(());
            };
            for k in keys {
                self.delete_unlogged(k)?;
            }
            match last.checked_add(1) {
                Some(n) if n <= hi => from = n,
                _ => return Ok(()),
            }
        }
    }
}

/// A root and height that cannot be the tree's.
fn bad_top(root: PageId, height: u32) -> Error {
    Error::corruption(
        "MANIFEST",
        None,
        format!("B+-tree root {root} at height {height}"),
    )
}

fn level_error(pid: PageId, found: u32, want: u32) -> Error {
    Error::corruption(
        DATA_FILE,
        Some(pid),
        format!("node at level {found}, expected level {want}"),
    )
}

impl Logged for BTree {
    fn store(&mut self) -> &mut dyn Store {
        &mut self.pager
    }

    fn engine_state(&self) -> serde_json::Value {
        self.state()
    }

    fn insert_unlogged(&mut self, key: u64, value: u64) -> Result<()> {
        BTree::insert_unlogged(self, key, value)
    }

    fn delete_unlogged(&mut self, key: u64) -> Result<()> {
        BTree::delete_unlogged(self, key).map(|_| ())
    }

    fn delete_range_unlogged(&mut self, lo: u64, hi: u64) -> Result<()> {
        BTree::delete_range_unlogged(self, lo, hi)
    }

    fn bulk_unlogged(&mut self, sorted: &[(u64, u64)]) -> Result<()> {
        BTree::bulk_unlogged(self, sorted)
    }

    fn holds_nothing(&self) -> bool {
        self.entries() == 0
    }

    fn checkpoint_after_recovery(&self) -> bool {
        self.upgraded
    }

    fn load_empty(&mut self, sorted: &[(u64, u64)]) -> Result<()> {
        BTree::bulk_unlogged(self, sorted)
    }
}

impl Shareable for BTree {
    const PARALLEL_GETS: bool = true;
    const PARALLEL_SCANS: bool = true;
    const RESTARTS: bool = true;
    const SERIAL_READS_ALONE: bool = true;
    const PARALLEL_POINT_WRITES: bool = true;

    fn insert_shared(&self, key: u64, value: u64) -> Result<SharedWrite> {
        BTree::insert_shared(self, key, value)
    }

    fn delete_shared(&self, key: u64) -> Result<SharedWrite> {
        BTree::delete_shared(self, key)
    }

    fn maintain(&mut self) -> Result<()> {
        self.after_op()
    }

    fn get_shared(&self, key: u64) -> Result<Option<u64>> {
        let leaf = self.walk_down(key, None)?;
        let (_, v) = at_key(&mut &self.pager, leaf, key, |b| lookup(b, key))?;
        Ok(v)
    }

    /// An insert or delete changes the key's leaf (and, on a split or merge, its parents,
    /// which the walk passes); bringing it in may evict a dirty page, and the write itself
    /// dirties one, so a few dirty pages at the pool's LRU end are written back here,
    /// beside the readers, for the write's evictions to find clean victims. (Errors are
    /// the write's to meet: a page whose write-back failed stays dirty.)
    fn prepare_write(&self, key: u64) {
        let _ = self.get_shared(key);
        let _ = self.pager.clean_ahead(PREPARE_CLEAN);
    }

    fn scan_shared(&self, cur: &mut RangeCursor, out: &mut Vec<(u64, u64)>) -> Result<()> {
        let (root, height) = self.top.load();
        scan_leaf(&mut &self.pager, root, height, cur, out)
    }
}

impl SerialEngine for BTree {
    logged_engine_methods!();

    /// Alone under the engine's exclusive lock: the shared read's descent through the
    /// Pager's exclusive path.
    fn get(&mut self, key: u64) -> Result<Option<u64>> {
        let (root, height) = self.top.load();
        let leaf = walk_down(&mut &mut self.pager, root, height, key, None)?;
        let (_, v) = at_key(&mut &mut self.pager, leaf, key, |b| lookup(b, key))?;
        Ok(v)
    }

    fn scan(&mut self, cur: &mut RangeCursor, out: &mut Vec<(u64, u64)>) -> Result<()> {
        let (root, height) = self.top.load();
        scan_leaf(&mut &mut self.pager, root, height, cur, out)
    }

    fn stats(&self) -> Stats {
        let c = &self.counters;
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let leaf_splits = n(&c.leaf_splits);
        let engine_counters = counters(&[
            ("entries", self.entries()),
            ("leaves", self.leaves()),
            ("height", u64::from(self.top.load().1)),
            ("leaf_splits", leaf_splits),
            ("internal_splits", n(&c.internal_splits)),
            ("root_splits", n(&c.root_splits)),
            ("merges", n(&c.merges)),
            ("redistributions", n(&c.redistributions)),
            ("shared_splits", n(&c.shared_splits)),
            ("shared_writes", self.shared_writes.load(Ordering::Relaxed)),
        ]);
        let mut s = self.pager.stats(
            EngineKind::BTree,
            engine_counters,
            self.pager.memory_bytes(),
        );
        s.shape.leaves = Some(self.leaves());
        s.shape.leaf_splits = Some(leaf_splits);
        s
    }

    fn check_integrity(&mut self) -> Result<()> {
        self.check()
    }
}

/// One leaf of a scan from `cur` (its resume position, or a descent from its next key)
/// through `pager`, in the tree of `root` and `height`.
fn scan_leaf(
    pager: &mut impl PageRead,
    root: PageId,
    height: u32,
    cur: &mut RangeCursor,
    out: &mut Vec<(u64, u64)>,
) -> Result<()> {
    let Some(next) = cur.next else { return Ok(()) };
    let leaf = match cur.resume {
        Some(p) => p,
        None => walk_down(pager, root, height, next, None)?,
    };
    let before = out.len();
    let by_link = cur.resume.is_some();
    let (link, hit_end) = pager.page(leaf, |b| {
        if !node::is_leaf(b) {
            return Err(level_error(leaf, node::level(b), 0));
        }
        // A leaf reached by its left sibling's link holds keys (Invariant 2) above
        // those the scan returned: a damaged chain that loops back is caught here, not
        // followed for ever.
        if by_link && (node::count(b) == 0 || node::key(b, 0) < next) {
            return Err(Error::corruption(
                DATA_FILE,
                Some(leaf),
                format!("leaf chain: a leaf reached by a link holds no key at or above {next}"),
            ));
        }
        let start = node::search(b, next).unwrap_or_else(|i| i);
        for i in start..node::count(b) {
            let k = node::key(b, i);
            if !cur.below_hi(k) {
                return Ok((node::NONE, true));
            }
            out.push((k, node::val(b, i)));
        }
        Ok((node::link(b), false))
    })??;
    if let Some(&(last, _)) = out.get(before..).and_then(|s| s.last()) {
        cur.next = last.checked_add(1);
    }
    if hit_end || link == node::NONE {
        cur.next = None;
    }
    cur.resume = Some(link);
    Ok(())
}

/// The value of `key` in the leaf `b`.
fn lookup(b: &[u8], key: u64) -> Option<u64> {
    node::search(b, key).ok().map(|i| node::val(b, i))
}

/// Run `f` on the node whose range holds `k`: `pid` or, when `pid` split after the
/// caller's pointer to it was read, a node to its right (Lehman and Yao's move right,
/// `node::moves_right`). Returns that node and `f`'s answer. The high keys met strictly
/// increase along the way (each node's keys lie at or above its left neighbour's high
/// key), so a chain of right links that does not is corruption, not a walk for ever.
fn at_key<T>(
    pager: &mut impl PageRead,
    mut pid: PageId,
    k: u64,
    f: impl Fn(&[u8]) -> T,
) -> Result<(PageId, T)> {
    let mut passed: Option<u64> = None;
    loop {
        let step = pager.page(pid, |b| match node::side(b).filter(|s| s.above(k)) {
            Some(s) => Err(s),
            None => Ok(f(b)),
        })?;
        match step {
            Ok(t) => return Ok((pid, t)),
            Err(s) if passed.is_some_and(|h| s.high <= h) => {
                return Err(Error::corruption(
                    DATA_FILE,
                    Some(pid),
                    format!("right links: high key {} after {passed:?}", s.high),
                ))
            }
            Err(s) => {
                passed = Some(s.high);
                pid = s.right;
            }
        }
    }
}

/// The leaf for `k` in the tree of `root` and `height`, one page read per level through
/// `pager` (and one more per split it meets that happened after its parent was read:
/// [`at_key`]), recording the path if asked.
fn walk_down(
    pager: &mut impl PageRead,
    root: PageId,
    height: u32,
    k: u64,
    path: Option<&mut Vec<(PageId, usize)>>,
) -> Result<PageId> {
    walk_to_level(pager, root, height, k, 0, path)
}

/// The node at `level` on the way to `k` (a node of that level whose range holds `k`, or
/// one to its left that split after its parent was read) in the tree of `root` and
/// `height`; corruption if the tree has no such level.
fn walk_to(
    pager: &mut impl PageRead,
    root: PageId,
    height: u32,
    k: u64,
    level: u32,
) -> Result<PageId> {
    walk_to_level(pager, root, height, k, level, None)
}

/// [`walk_down`] that stops at `level`.
fn walk_to_level(
    pager: &mut impl PageRead,
    root: PageId,
    height: u32,
    k: u64,
    level: u32,
    mut path: Option<&mut Vec<(PageId, usize)>>,
) -> Result<PageId> {
    if level >= height {
        return Err(level_error(root, height.saturating_sub(1), level));
    }
    let mut pid = root;
    for want in (level + 1..height).rev() {
        let (at, (lvl, slot, child)) = at_key(pager, pid, k, |b| {
            let s = node::child_slot(b, k);
            (node::level(b), s, node::child_at(b, s))
        })?;
        if lvl != want {
            return Err(level_error(at, lvl, want));
        }
        if let Some(p) = path.as_deref_mut() {
            p.push((at, slot));
        }
        pid = child;
    }
    Ok(pid)
}
