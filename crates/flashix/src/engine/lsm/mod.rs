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
//! before range tombstones open unchanged.
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
//!    nor does any level past it; with no component at all no level holds range
//!    tombstones. Every level's range tombstones are sorted, disjoint and coalesced
//!    (`Tombs::check`).
//! 4. C0 is a valid head tree (order, one depth, counts).
//! 5. Counts in the manifest state equal the structure; no two structures share a page,
//!    and no reachable page is free in the extent allocator.
//!
//! # Operations
//! Search ([`search`]): C0, then C1, C2, ... (newest first); at each level the level's
//! entry of the key decides first (a tombstone meaning absent), then its range tombstones
//! (covered: absent), else the next level. A component is searched by a descent from its
//! root: one single-page read per level, through the buffer pool (see [`component`]). Range
//! scans merge the sources newest first in bounded batches (at most `io_unit` leaves per
//! component) in one streaming pass, dropping a key whose winning entry is older than a
//! level whose range tombstones cover it (one forward cursor per level); a component whose
//! batch range one newer range tombstone spans is not read.
//! Insert: an upsert into C0. Delete: a blind tombstone into C0 (no read), or a plain
//! removal from C0 while no component exists; with `LsmOptions::search_before_delete`
//! (the FD-tree paper's baseline) a search first, and nothing for an absent key.
//! `delete_range(lo, hi)`: C0's own entries in the range are removed and, if a component
//! exists, `[lo, hi]` joins C0's range tombstones: the C0 leaves the range spans (C0 is
//! small and lives in the pool) and one interval, whatever the range's size. When C0's entries plus range tombstones reach |C0|
//! it is merged into C1 ([`merge`]), and while a level's entries plus range tombstones
//! exceed its capacity it is merged into the next (rolling merges of whole components;
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
//! after the operation that merged, so a crash finds the old set or the new one. The
//! range tombstones of every level are saved in the same manifest state, so a checkpoint
//! publishes a merge's components and tombstone sets together; C0's range tombstones
//! change under logged operations, as C0's pages do, and every checkpoint saves them.
//! Recovery = `Pager::open` (the checkpoint's state, range
//! tombstones included) + replay of the WAL (logged `DeleteRange`s add them again).
//!
//! # Counters (`Stats::engine_counters`)
//! `components` (non-empty ones), `k`, `k_changes` (re-choices of `k` that changed it,
//! since open), `entries` (stored: C0 and components, tombstones
//! included), `c0_entries`, `c0_height`, `c0_pages`, `c0_capacity`, `merges`,
//! `merge_pages_read`, `merge_pages_written`, `range_deletes` (calls applied),
//! `range_tombstones` (intervals of all levels), `c0_range_tombstones`, and per level i
//! `component_<i>_entries`, `_tombstones`, `_range_tombstones`, `_pages`, `_height`,
//! `_capacity`.
//!
//! # Memory
//! The buffer pool; every level's range tombstones (16 bytes an interval, at most the
//! level's capacity by Invariant 2, reported in `Stats::memory_bytes`); during a merge into
//! C1 the entries of C0 (at most |C0|, 24 bytes each), the first keys of the written nodes
//! (16 bytes per page) and two `io_unit` buffers per input and output (one in flight while
//! the other is decoded or filled: [`crate::kit::sorted::seq`]) and a batch of at most 512
//! merged entries (12 KiB) written a leaf's run at a time; during a range scan at most
//! `io_unit` leaves per component.

mod options;
pub use options::LsmOptions;
mod check;
pub mod component;
mod merge;
mod search;

use crate::durable::Manifest;
use crate::durable::{logged_engine_methods, Logged};
use crate::durable::{Pager, Store};
use crate::error::{Error, Result};
use crate::io::Storage;
use crate::kind::EngineKind;
use crate::kit::api::{Engine, RangeCursor};
use crate::kit::sorted::entry::{self, Entry, Kind, Layout};
use crate::kit::sorted::head::Head;
use crate::kit::sorted::memo::scan_many_with_memo;
use crate::kit::sorted::tombs::Tombs;
use crate::kit::sorted::tune::Retune;
use crate::settings::Settings;
use crate::stats::counters;
use crate::stats::{LevelShape, Stats};
use component::{Component, ComponentWriter, TOMBSTONE};
use merge::Input;
use serde::{Deserialize, Serialize};

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
    range_deletes: u64,
    k_changes: u64,
}

/// Sizes derived from the options.
#[derive(Debug, Clone, Copy)]
struct Params {
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
/// head tree is C0's size (FD-tree paper App. D: "the same as the k value in FD-tree").
pub(crate) fn resolve(s: &Settings, mut o: LsmOptions) -> Result<LsmOptions> {
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
    components: Vec<Option<Component>>,
    /// Level i + 1's range tombstones at index i, also where the component is `None`; as
    /// long as `components`.
    tombs: Vec<Tombs>,
    checkpoint_due: bool,
    search_before_delete: bool,
    /// Re-choose `k` as the tree grows (`k` left to the cost model;
    /// [`crate::kit::sorted::tune`]).
    retune: Option<Retune>,
    counters: Counters,
}

impl Lsm {
    /// Memory besides the pool, charged to the budget (`Logged::charge_memory`): every
    /// level's range tombstones.
    fn structure_bytes(&self) -> u64 {
        self.all_tombs().map(Tombs::memory_bytes).sum::<u64>()
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
        let c0 = Head::create(&mut pager, p.lay)?;
        let mut t = Lsm {
            pager,
            p,
            c0,
            c0_tombs: Tombs::new(),
            components: Vec::new(),
            tombs: Vec::new(),
            checkpoint_due: false,
            search_before_delete: o.search_before_delete,
            retune,
            counters: Counters::default(),
        };
        t.checkpoint()?;
        Ok(t)
    }

    /// Reopen: restore the checkpoint image and replay the WAL.
    pub fn open(storage: Storage, manifest: Manifest, s: Settings, o: LsmOptions) -> Result<Lsm> {
        let state: State = serde_json::from_value(manifest.engine.clone())
            .map_err(|e| Error::corruption("MANIFEST", None, format!("bad LSM state: {e}")))?;
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
        let (pager, ops) = Pager::open(storage.device, storage.vfs, &manifest, config)?;
        let mut t = Lsm {
            pager,
            p,
            c0: state.c0,
            c0_tombs: state.c0_tombs,
            components: state.components,
            tombs,
            checkpoint_due: false,
            search_before_delete: o.search_before_delete,
            retune,
            counters: Counters::default(),
        };
        t.recover(&ops)?;
        Ok(t)
    }

    fn state(&self) -> serde_json::Value {
        serde_json::json!(State {
            c0: self.c0.clone(),
            components: self.components.clone(),
            c0_tombs: self.c0_tombs.clone(),
            tombs: self.tombs.clone(),
            k: Some(self.p.k),
            retune_pool_bytes: self.retune.as_ref().map(Retune::pool_bytes),
            packed: self.p.lay.is_packed(),
        })
    }

    fn insert_unlogged(&mut self, key: u64, value: u64) -> Result<()> {
        self.c0.upsert(
            &mut self.pager,
            self.p.lay,
            Entry::new(key, value, Kind::Normal),
        )?;
        self.after_mutation()
    }

    /// A blind tombstone; with no component, nothing older can hold the key.
    fn delete_unlogged(&mut self, key: u64) -> Result<()> {
        if self.components.iter().all(Option::is_none) {
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
        self.c0.remove_range(&mut self.pager, self.p.lay, lo, hi)?;
        if self.components.iter().any(Option::is_some) {
            self.c0_tombs.add(lo, hi);
        }
        self.after_mutation()
    }

    /// True if no component at a level above `i` (0-based index) is non-empty.
    fn is_last(&self, i: usize) -> bool {
        self.components[i + 1..].iter().all(Option::is_none)
    }

    /// C0 is full: its entries (fences included, as before range tombstones) and its
    /// range tombstones reach |C0|, and it holds something to merge.
    fn c0_full(&self) -> bool {
        let held = self.c0.index_entries > 0 || !self.c0_tombs.is_empty();
        held && self.c0.entries + self.c0_tombs.len() as u64 >= self.p.cap0
    }

    /// Level i + 1's fill against |C(i+1)|: its entries and its range tombstones (so that
    /// range tombstones, too, move down and retire at the last level).
    fn fill(&self, i: usize) -> u64 {
        self.components[i].map_or(0, |c| c.entries) + self.tombs[i].len() as u64
    }

    /// Merge C0 into C1 when C0 is full, then cascade while a level exceeds its capacity.
    fn after_mutation(&mut self) -> Result<()> {
        if !self.c0_full() {
            return Ok(());
        }
        let lay = self.p.lay;
        let newer: Vec<Entry> = self
            .c0
            .all_entries(&mut self.pager, lay)?
            .into_iter()
            .filter(|e| !e.is_fence())
            .collect();
        if self.components.is_empty() {
            self.components.push(None);
            self.tombs.push(Tombs::new());
        }
        let old_c0 = std::mem::replace(&mut self.c0, Head::create(&mut self.pager, self.p.lay)?);
        let c0_tombs = std::mem::take(&mut self.c0_tombs);
        self.merge_into(0, Input::memory(newer), c0_tombs)?;
        old_c0.free(&mut self.pager, lay)?;
        let mut i = 0;
        while i < self.components.len() && self.fill(i) > self.p.capacity(i + 1) {
            if self.is_last(i) {
                // The last component outgrew its level, and every level above it is
                // empty: it holds the whole tree (and, as the last, no tombstones). A
                // merge with nothing would copy it unchanged, so it moves to the level
                // that holds it, under k or the k re-chosen for its size.
                self.place_whole_tree(i);
                break;
            }
            if self.components.len() == i + 1 {
                self.components.push(None);
                self.tombs.push(Tombs::new());
            }
            // The level's entries and range tombstones move down together.
            let c = self.components[i].take();
            let tombs = std::mem::take(&mut self.tombs[i]);
            let newer = c.map_or_else(|| Input::memory(Vec::new()), Input::component);
            self.merge_into(i + 1, newer, tombs)?;
            if let Some(c) = c {
                self.pager.free_extent(c.extent());
            }
            i += 1;
        }
        // Levels past the last component hold no range tombstones (Invariant 3): nothing
        // is lost with them.
        while self.components.last().is_some_and(Option::is_none) {
            self.components.pop();
            let t = self.tombs.pop();
            debug_assert!(t.unwrap_or_default().is_empty());
        }
        self.checkpoint_due = !self.pager.replaying();
        Ok(())
    }

    /// Merge `newer` with its range tombstones `newer_tombs` into level `i` (0-based
    /// index). The output level keeps the union of both inputs' range tombstones, or none
    /// when it is the last (tombs.rs), also when the output holds no entry.
    fn merge_into(&mut self, i: usize, newer: Input, newer_tombs: Tombs) -> Result<()> {
        let older = self.components[i];
        let drop = self.is_last(i);
        let out = merge::merge(
            &mut self.pager,
            self.p.lay,
            self.p.io_unit,
            newer,
            &newer_tombs,
            older.map_or_else(|| Input::memory(Vec::new()), Input::component),
            drop,
        )?;
        if let Some(o) = older {
            self.pager.free_extent(o.extent());
        }
        self.components[i] = out.component;
        let older_tombs = std::mem::take(&mut self.tombs[i]);
        if !drop {
            // The union is a set of keys: add the smaller set's intervals to the larger.
            let (mut all, other) = if newer_tombs.len() >= older_tombs.len() {
                (newer_tombs, older_tombs)
            } else {
                (older_tombs, newer_tombs)
            };
            all.union(&other);
            self.tombs[i] = all;
        }
        self.counters.merges += 1;
        self.counters.merge_pages_read += out.pages_read;
        self.counters.merge_pages_written += out.pages_written;
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

    /// Build one component of an empty index directly from sorted input.
    fn bulk_load(&mut self, sorted: &[(u64, u64)]) -> Result<()> {
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

    /// Every level's range tombstones, C0's first.
    fn all_tombs(&self) -> impl Iterator<Item = &Tombs> {
        std::iter::once(&self.c0_tombs).chain(&self.tombs)
    }

    /// No entry in C0 and no component. Range tombstones then hide nothing (none exist
    /// without a component, Invariant 3; `bulk_load` clears them all the same).
    fn is_empty(&self) -> bool {
        self.c0.entries == 0 && self.components.iter().all(Option::is_none)
    }
}

impl Logged for Lsm {
    fn store(&mut self) -> &mut dyn Store {
        &mut self.pager
    }

    fn charge_memory(&mut self) -> Result<()> {
        let bytes = self.structure_bytes();
        self.pager.charge(bytes)
    }

    fn engine_state(&self) -> serde_json::Value {
        self.state()
    }

    fn after_checkpoint(&mut self) -> Result<()> {
        self.checkpoint_due = false;
        Ok(())
    }

    fn insert_unlogged(&mut self, key: u64, value: u64) -> Result<()> {
        Lsm::insert_unlogged(self, key, value)
    }

    fn delete_unlogged(&mut self, key: u64) -> Result<()> {
        Lsm::delete_unlogged(self, key)
    }

    fn delete_range_unlogged(&mut self, lo: u64, hi: u64) -> Result<()> {
        Lsm::delete_range_unlogged(self, lo, hi)
    }

    fn holds_nothing(&self) -> bool {
        self.is_empty()
    }

    fn load_empty(&mut self, sorted: &[(u64, u64)]) -> Result<()> {
        self.bulk_load(sorted)
    }

    /// With `search_before_delete`, only a present key is deleted (FD-tree paper §4: "a
    /// deletion is implemented by a search followed by an insertion").
    fn delete_needed(&mut self, key: u64) -> Result<bool> {
        Ok(!self.search_before_delete || self.lookup(key)?.is_some())
    }

    /// A merge publishes its new components (and frees the old) with a checkpoint.
    fn checkpoint_due(&self) -> bool {
        self.checkpoint_due
    }
}

impl Engine for Lsm {
    logged_engine_methods!();

    fn get(&mut self, key: u64) -> Result<Option<u64>> {
        self.lookup(key)
    }

    fn scan(&mut self, cur: &mut RangeCursor, out: &mut Vec<(u64, u64)>) -> Result<()> {
        self.scan_batch(cur, out, None)
    }

    fn scan_many(&mut self, ranges: &[(u64, u64)], out: &mut Vec<(u64, u64)>) -> Result<()> {
        scan_many_with_memo(self, ranges, out, |e, cur, out, memo| {
            e.scan_batch(cur, out, Some(memo))
        })
    }

    fn stats(&self) -> Stats {
        let c = &self.counters;
        let live: Vec<&Component> = self.components.iter().flatten().collect();
        let mut engine_counters = counters(&[
            ("components", live.len() as u64),
            ("k", self.p.k),
            ("k_changes", self.counters.k_changes),
            (
                "entries",
                self.c0.index_entries + live.iter().map(|c| c.entries).sum::<u64>(),
            ),
            ("c0_entries", self.c0.index_entries),
            ("c0_height", u64::from(self.c0.height)),
            ("c0_pages", self.c0.pages),
            ("c0_capacity", self.p.cap0),
            ("merges", c.merges),
            ("merge_pages_read", c.merge_pages_read),
            ("merge_pages_written", c.merge_pages_written),
            ("range_deletes", c.range_deletes),
            ("c0_range_tombstones", self.c0_tombs.len() as u64),
            (
                "range_tombstones",
                self.all_tombs().map(|t| t.len() as u64).sum(),
            ),
        ]);
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
