//! Moving objects: [`MovingIndex`], the Bx-tree front end (Jensen, Lin, Ooi, VLDB 2004;
//! `bx-tree.md`, FBX notes §2 and §4.4) over any engine. Over [`crate::EngineKind::BTree`] it is
//! the Bx-tree, over the FBX engine the FBX-tree, and it runs over every other engine
//! unchanged: everything it stores is `u64 -> u64` entries of one [`Db`].
//!
//! # Linearisation (Bx-tree)
//! Time is cut into phases of `P = Δt_mu / n` ticks. An update at tick `t` is indexed under
//! the *label* `t_lab = ceil((t + P) / P) * P` (so `t_lab - t` is in `[P, 2P)`), in the
//! partition `code = (t_lab / P - 1) mod (n + 1)`: at most `n + 1` labels are live, and a
//! code is reused `(n + 1) P` ticks later ("rolling partitions"). The object's position is
//! projected to its label, `x_lab = x + v (t_lab - t)`, and its grid cell (a `2^k x 2^k`
//! grid over the space; positions projected outside go to the border cell) numbered by a
//! space-filling curve ([`Curve`], Hilbert by default).
//!
//! # Key layout (u64, most significant bits first)
//! ```text
//! partition code: pbits = bits(n + 1) | curve value: 2k bits | object id: 64 - pbits - 2k bits
//! ```
//! (`n` = 2, `k` = 10: 2 + 20 + 42 bits.) Keys are unique per object, so the index needs
//! only map semantics. The all-ones code is reserved; its next two bits pick a sub-space:
//! `00` the **object directory** (`id -> the object's current key`), `01` and `10` the
//! **overflow** (motion and time of objects that broke the `Δt_mu` promise, below), `11`
//! **meta** entries (format version 1, the options, `now`, the object count, and per code its
//! label and the velocity bounds of its objects).
//!
//! # Value layout (u64)
//! ```text
//! t offset = t_lab - P - t: tbits = bits(P - 1) | qx | qy: pos bits each | qvx | qvy: vel bits each
//! ```
//! with `pos = (64 - tbits) * 3 / 10` and `vel = (64 - tbits - 2 pos) / 2` (`P` = 60: 6, 17,
//! 12 bits). Positions are fixed point over the space (`x0 + (x1 - x0) q / (2^pos - 1)`),
//! velocities symmetric over `±max_speed` (`max_speed q / (2^(vel-1) - 1)`, zero exact).
//! [`MobjectOptions::quantize`] is this rounding: the index is exact for quantised motions,
//! and `get` returns them.
//!
//! # Operations
//! - `update` reads the directory (one `get`) and writes one atomic [`Batch`]: delete the old
//!   key, insert the new one, point the directory at it, and the meta entries that changed
//!   (`now`, the count, the partition's velocity bounds).
//! - `update_from(id, old, new)` is the same batch written **blind**: the caller gives the
//!   motion it reported last, and the old key is computed from it (its label's code still
//!   holds that label: the Bx key of `x_lab`; it does not: the object was migrated, its
//!   overflow entries), so the update reads nothing and, on an engine that appends its
//!   writes (the FBX-tree), is appends only, as the FBX paper's premise has it. A crash in a
//!   partition's migration leaves objects in the overflow whose code still holds their label;
//!   open finds such codes (an overflow object under its code's current label exists only
//!   then), and until the migration is resumed a blind update of that code deletes both
//!   candidate places.
//!
//! # A wrong `old` (the caller's error)
//! Keys carry the object id, so a blind update with a motion other than the last one
//! reported deletes nothing of another object: the object's real entry is left **orphaned**
//! (no directory entry names it) and the directory names the new one. Then: `get` answers
//! the new motion; `range` and `knn` may answer the object at the orphan's motion instead of
//! the new one (at most once per answer, as every answer holds each id once), so a kNN answer
//! is exact for the other objects but for the one place the object may take; `len` is one
//! too many if the object was not in the index at all. `check_integrity` reports the orphan.
//! An orphan in a rolling partition is dropped when its code's label is next replaced (the
//! migration reads the directory of the objects it moves); `remove` deletes an overflow
//! orphan with the object.
//! - `range(R, t)`: per live partition, the window is enlarged by the partition's velocity
//!   bounds times `t - t_lab` (in each direction), decomposed into curve intervals (at most
//!   `max_intervals`, smallest gaps merged), each scanned as one key range; candidates are
//!   filtered exactly with [`Motion::at`].
//! - `knn(x, y, k, t)`: incremental range enlargement. The first square has the half side
//!   `D_k = (2 / sqrt(pi)) (1 - sqrt(1 - sqrt(k / N))) * side` (the expected k-th neighbour
//!   distance for `N` uniform objects), each round widens it by `D_k / k` and scans only
//!   the key intervals not scanned before; it stops when `k` candidates lie within the half
//!   side (every object within it has been seen) or the square covers everything. flashix's
//!   choice: the step doubles every 8 rounds, so a query far from the data ends in
//!   logarithmically many rounds. Over an engine that keeps entry counts (the FBX-tree,
//!   §4.3) the first half side is sized from them instead, without reading a leaf
//!   ([`crate::Db::estimate_count`]): grown from `D_k` until the square's estimated
//!   candidates reach `k`, or shrunk while they still do; the step is then a `k`-th of it.
//!
//! # A broken `Δt_mu` promise (flashix's decision)
//! When an update first uses a label whose code still holds an older label, every object
//! left in that partition has not been updated for more than `Δt_mu`. Before the code is
//! reused, each such object is **migrated** (counted in `migrations`) to the overflow
//! sub-space with its motion unchanged, so `get`, `range` and `knn` still answer it exactly;
//! queries scan the overflow (empty while the promise holds: one probe). Its next update
//! moves it back. Nothing is refused and nothing is lost. An entry the directory does not
//! name (an orphan, above) is dropped instead of migrated.
//!
//! # Invariants (`check_integrity`)
//! 1. Every directory entry points at an existing entry of the same id; every object entry
//!    has a directory entry pointing at it; the object count equals the directory's size.
//! 2. Every entry of a partition code decodes under the code's label (`t_lab - t` in
//!    `[P, 2P)`), and its key is the one its motion gives (cell of `x_lab`, id).
//! 3. The code's velocity bounds cover its entries; no update time exceeds `now`.
//!
//! # Durability and memory
//! All state is entries of the `Db` (meta included), changed only by atomic batches, so
//! the `Db`'s crash safety carries over: after a crash the index is the state after some
//! prefix of the updates and removes, whole. A partition's migration is a series of
//! batches, each moving whole objects; the code's new label is written after the last, so
//! a crash in between leaves a consistent state and the next update resumes it. Memory
//! beyond the `Db`: the options and, per partition code, a label and four bounds.

mod check;
pub mod curve;
mod layout;
mod options;
mod partition;
mod query;

pub use curve::{Curve, Intervals};
pub use options::{Hit, MobjectOptions, Motion, Neighbor, Rect};

use crate::error::{Error, Result};
use crate::stats::Stats;
use crate::{Batch, Db, Storage};
use layout::{Layout, SUB_DIRECTORY, SUB_OVERFLOW_MOTION, SUB_OVERFLOW_TIME};
use partition::{Part, State};
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

/// The options the index is created with: `opts.index`, and for the FBX-tree the partition
/// bits that come before the curve value in a key (its log buffer clusters entries by the
/// first bits of the cell number, FBX paper §4.2), unless the caller set them.
fn index_options(opts: &MobjectOptions) -> Result<crate::Options> {
    let mut index = opts.index.clone();
    if index.engine() == crate::EngineKind::Fbx {
        let mut f = index.fbx_options();
        if f.cluster_skip_bits == 0 {
            f.cluster_skip_bits = Layout::new(opts)?.pbits;
            index = index.fbx(f);
        }
    }
    Ok(index)
}

/// A [`MovingIndex`]'s counters: its engine's, and its own since open.
#[derive(Clone, Debug, PartialEq)]
pub struct MobjectStats {
    /// The `Db`'s counters (I/O, buffer pool, WAL, engine).
    pub index: Stats,
    /// The moving-object layer's own counters since open.
    pub counters: MobjectCounters,
}

/// The moving-object index's own counters since open.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MobjectCounters {
    /// Successful [`MovingIndex::update`] and [`MovingIndex::update_from`] calls.
    pub updates: u64,
    /// Of them, blind ones ([`MovingIndex::update_from`]: no directory read).
    pub blind_updates: u64,
    /// [`MovingIndex::remove`] calls that removed an object.
    pub removes: u64,
    /// [`MovingIndex::range`] queries.
    pub range_queries: u64,
    /// [`MovingIndex::knn`] calls that passed the argument checks (`k = 0` included).
    pub knn_queries: u64,
    /// Key ranges scanned by queries (one per curve interval per partition, and the
    /// overflow).
    pub key_intervals: u64,
    /// Gaps merged into intervals to respect `max_intervals`.
    pub merged_gaps: u64,
    /// Entries read by queries.
    pub candidates: u64,
    /// Candidates not in the answer (range: outside the window at `t`; kNN: beyond the
    /// k nearest).
    pub false_hits: u64,
    /// kNN enlargement rounds.
    pub knn_rounds: u64,
    /// Entry-count estimates a kNN asked the engine for to size its first radius (FBX
    /// §4.3; engines without counts are asked once a query).
    pub knn_estimates: u64,
    /// Objects moved to the overflow when their partition code was reused.
    pub migrations: u64,
    /// Orphaned entries (left by an `update_from` with a wrong `old`) dropped when their
    /// partition code was reused.
    pub orphans_dropped: u64,
}

/// A moving-object index over a [`Db`] (module doc), shared by any number of threads
/// (`Send + Sync`, every method on `&self`).
///
/// # Thread safety
///
/// One mutex over the index's state (partition labels, the latest time, the object count)
/// and its `Db`: an update, a remove and a query each run alone, so an update's batch and
/// its new state appear together, and a query sees one state from start to end (a
/// partition rollover never runs under it). Its `Db` serves the engine's reads in
/// parallel where the engine does, but under this mutex a moving-object index runs one
/// operation at a time; flushes are group-committed by the `Db` below it.
pub struct MovingIndex {
    inner: Mutex<Inner>,
}

/// The index itself, one operation at a time ([`MovingIndex`]).
pub(crate) struct Inner {
    db: Db,
    opts: MobjectOptions,
    layout: Layout,
    state: State,
    /// Per partition code: a crash interrupted its migration (module doc, Operations), so
    /// a blind update of an object under its label may find it in either place.
    interrupted: Vec<bool>,
    stats: MobjectCounters,
}

impl MovingIndex {
    fn new(inner: Inner) -> MovingIndex {
        MovingIndex {
            inner: Mutex::new(inner),
        }
    }

    /// The index, for one operation.
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Create a moving-object index in `dir` (absent or empty), over `opts`'s engine.
    pub fn create(dir: impl AsRef<Path>, opts: MobjectOptions) -> Result<MovingIndex> {
        Inner::create(dir, opts).map(MovingIndex::new)
    }

    /// Reopen the index in `dir`: engine, options and state come from the index.
    pub fn open(dir: impl AsRef<Path>) -> Result<MovingIndex> {
        Inner::open(dir).map(MovingIndex::new)
    }

    /// [`MovingIndex::open`] with a buffer pool of `bytes` instead of the saved one
    /// ([`Db::open_with_buffer_pool`]: benchmarks load with a large pool and measure with a
    /// small one).
    pub fn open_with_buffer_pool(dir: impl AsRef<Path>, bytes: u64) -> Result<MovingIndex> {
        Inner::open_with_buffer_pool(dir, bytes).map(MovingIndex::new)
    }

    /// [`MovingIndex::create`] on storage of the caller's (tests, embedders).
    pub fn create_on(storage: Storage, opts: MobjectOptions) -> Result<MovingIndex> {
        Inner::create_on(storage, opts).map(MovingIndex::new)
    }

    /// [`MovingIndex::open`] on storage of the caller's.
    pub fn open_on(storage: Storage) -> Result<MovingIndex> {
        Inner::open_on(storage).map(MovingIndex::new)
    }

    /// The options (the engine's options are the `Db`'s, in its manifest).
    pub fn options(&self) -> MobjectOptions {
        self.lock().opts.clone()
    }

    /// The latest update time: updates and queries must not be earlier.
    pub fn now(&self) -> u64 {
        self.lock().state.now
    }

    /// Objects in the index.
    pub fn len(&self) -> u64 {
        self.lock().state.objects
    }

    /// True when the index holds no object.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Insert or replace object `id`'s motion (one atomic batch).
    pub fn update(&self, id: u64, m: Motion) -> Result<()> {
        self.lock().update(id, m)
    }

    /// Replace object `id`'s motion `old`, the last one given for it, by `new`, without
    /// reading anything: one atomic batch computed from `old` (module doc, Operations). A
    /// wrong `old` is the caller's error: it corrupts no other object, and its effect on
    /// this one is stated in the module doc (A wrong `old`). For an object not in the index,
    /// use [`MovingIndex::update`].
    pub fn update_from(&self, id: u64, old: Motion, new: Motion) -> Result<()> {
        self.lock().update_from(id, old, new)
    }

    /// Remove object `id`; false if it was not there.
    pub fn remove(&self, id: u64) -> Result<bool> {
        self.lock().remove(id)
    }

    /// Object `id`'s motion, exactly `quantize` of the last one given.
    pub fn get(&self, id: u64) -> Result<Option<Motion>> {
        self.lock().get(id)
    }

    /// Objects inside the closed `r` at time `t` (at or after [`MovingIndex::now`]),
    /// sorted by id, with their positions at `t`.
    pub fn range(&self, r: &Rect, t: u64) -> Result<Vec<Hit>> {
        self.lock().range(r, t)
    }

    /// The `k` objects nearest `(x, y)` at time `t` (at or after [`MovingIndex::now`]),
    /// by (distance, id).
    pub fn knn(&self, x: f64, y: f64, k: usize, t: u64) -> Result<Vec<Neighbor>> {
        self.lock().knn(x, y, k, t)
    }

    /// Make every update and remove that returned before this call durable.
    pub fn flush(&self) -> Result<()> {
        self.lock().flush()
    }

    /// Flush, checkpoint and release the index.
    pub fn close(self) -> Result<()> {
        self.inner
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .close()
    }

    /// Counters since open.
    pub fn stats(&self) -> MobjectStats {
        self.lock().stats()
    }

    /// Check the index's invariants (module doc) and its engine's.
    pub fn check_integrity(&self) -> Result<()> {
        self.lock().check_integrity()
    }
}

impl Inner {
    /// Create a moving-object index in `dir` (absent or empty), over `opts`'s engine.
    pub fn create(dir: impl AsRef<Path>, opts: MobjectOptions) -> Result<Inner> {
        opts.validate()?;
        let db = Db::create(dir, index_options(&opts)?)?;
        Inner::init(db, opts)
    }

    /// Reopen the index in `dir`: engine, options and state come from the index.
    pub fn open(dir: impl AsRef<Path>) -> Result<Inner> {
        Inner::from_db(Db::open(dir)?)
    }

    /// [`MovingIndex::open`] with a buffer pool of `bytes` instead of the saved one
    /// ([`Db::open_with_buffer_pool`]: benchmarks load with a large pool and measure with a
    /// small one).
    pub fn open_with_buffer_pool(dir: impl AsRef<Path>, bytes: u64) -> Result<Inner> {
        Inner::from_db(Db::open_with_buffer_pool(dir, bytes)?)
    }

    /// [`MovingIndex::create`] on storage of the caller's (tests, embedders).
    pub fn create_on(storage: Storage, opts: MobjectOptions) -> Result<Inner> {
        opts.validate()?;
        let db = Db::create_on(storage, index_options(&opts)?)?;
        Inner::init(db, opts)
    }

    /// [`MovingIndex::open`] on storage of the caller's.
    pub fn open_on(storage: Storage) -> Result<Inner> {
        Inner::from_db(Db::open_on(storage)?)
    }

    fn init(db: Db, opts: MobjectOptions) -> Result<Inner> {
        let layout = Layout::new(&opts)?;
        let mut b = Batch::new();
        partition::write_options(&layout, &opts, &mut b);
        db.apply(&b)?;
        db.flush()?;
        let state = State {
            now: 0,
            objects: 0,
            parts: vec![Part::empty(None); layout.partitions as usize],
        };
        Ok(Inner {
            db,
            opts,
            interrupted: vec![false; layout.partitions as usize],
            layout,
            state,
            stats: MobjectCounters::default(),
        })
    }

    fn from_db(db: Db) -> Result<Inner> {
        let (opts, layout, state) = partition::read(&db)?;
        let mut inner = Inner {
            db,
            opts,
            interrupted: vec![false; layout.partitions as usize],
            layout,
            state,
            stats: MobjectCounters::default(),
        };
        inner.interrupted = inner.interrupted_migrations()?;
        Ok(inner)
    }

    /// The codes whose migration a crash interrupted: those with an overflow object still
    /// under the code's current label (a migration moves only objects of the label it
    /// replaces, and the label is replaced after its last batch).
    fn interrupted_migrations(&mut self) -> Result<Vec<bool>> {
        let mut objects = Vec::new();
        self.scan_overflow(&mut objects)?;
        self.stats = MobjectCounters::default();
        let mut out = vec![false; self.state.parts.len()];
        for (_, m) in objects {
            let label = self.layout.label(m.t);
            let code = self.layout.code(label) as usize;
            if self.state.parts[code].label == Some(label) {
                out[code] = true;
            }
        }
        Ok(out)
    }

    /// Insert or replace object `id`'s motion (one atomic batch).
    pub fn update(&mut self, id: u64, m: Motion) -> Result<()> {
        self.check_id(id)?;
        self.check_motion(&m, "motion")?;
        let q = self.layout.quantize(m);
        let (label, code) = self.take_label(q.t)?;
        let old = self.lookup(id)?;
        let mut gone = Vec::new();
        if let Some(k) = old {
            self.delete_entry(k, id, &mut gone);
        }
        self.write_update(id, &q, label, code, &gone, old.is_none())
    }

    /// Replace object `id`'s motion `old` by `new` without reading (module doc, Operations).
    pub fn update_from(&mut self, id: u64, old: Motion, new: Motion) -> Result<()> {
        self.check_id(id)?;
        self.check_motion(&old, "old motion")?;
        self.check_motion(&new, "motion")?;
        if old.t > new.t {
            return Err(Error::InvalidArgument(format!(
                "old motion.t {} is after motion.t {}: the old motion is the one reported \
                 last",
                old.t, new.t
            )));
        }
        let q = self.layout.quantize(new);
        let (label, code) = self.take_label(q.t)?;
        // After the label is taken: taking it may have migrated the object itself.
        let gone = self.stored_keys(id, &self.layout.quantize(old));
        self.write_update(id, &q, label, code, &gone, false)?;
        self.stats.blind_updates += 1;
        Ok(())
    }

    /// The label and code of an update at `t`, the code's migration made first if it still
    /// holds an older label.
    fn take_label(&mut self, t: u64) -> Result<(u64, u64)> {
        let label = self.layout.label(t);
        let code = self.layout.code(label);
        if self.state.parts[code as usize].label != Some(label) {
            self.rollover(code, label)?;
        }
        Ok((label, code))
    }

    /// The keys an object last reported with the quantised motion `q` is stored under now
    /// (module doc, Operations): computed, not read.
    fn stored_keys(&self, id: u64, q: &Motion) -> Vec<u64> {
        let l = &self.layout;
        let label = l.label(q.t);
        let code = l.code(label);
        let overflow = [
            l.reserved_key(SUB_OVERFLOW_MOTION, id),
            l.reserved_key(SUB_OVERFLOW_TIME, id),
        ];
        if self.state.parts[code as usize].label != Some(label) {
            return overflow.to_vec();
        }
        let (xl, yl) = q.at(label);
        let mut keys = vec![l.bx_key(code, l.curve_value(xl, yl), id)];
        if self.interrupted[code as usize] {
            keys.extend(overflow);
        }
        keys
    }

    /// The update's batch: delete `gone`, insert the quantised motion `q` under `label` in
    /// `code`, point the directory at it, and the meta entries that change.
    fn write_update(
        &mut self,
        id: u64,
        q: &Motion,
        label: u64,
        code: u64,
        gone: &[u64],
        new_object: bool,
    ) -> Result<()> {
        let l = &self.layout;
        let mut next = self.state.clone();
        next.now = next.now.max(q.t);
        next.objects += u64::from(new_object);
        next.parts[code as usize] = next.parts[code as usize].grown(q.vx, q.vy);
        let (xl, yl) = q.at(label);
        let key = l.bx_key(code, l.curve_value(xl, yl), id);
        let mut b = Batch::new();
        for &k in gone {
            b.delete(k);
        }
        b.insert(key, l.pack(q, label - l.phase - q.t));
        b.insert(l.reserved_key(SUB_DIRECTORY, id), key);
        partition::write_changes(l, Some(&self.state), &next, &mut b);
        self.db.apply(&b)?;
        self.state = next;
        self.stats.updates += 1;
        Ok(())
    }

    /// Remove object `id`; false if it was not there.
    pub fn remove(&mut self, id: u64) -> Result<bool> {
        self.check_id(id)?;
        let Some(k) = self.lookup(id)? else {
            return Ok(false);
        };
        let mut next = self.state.clone();
        next.objects = next.objects.saturating_sub(1);
        let mut gone = Vec::new();
        self.delete_entry(k, id, &mut gone);
        // An overflow orphan goes with the object (module doc, A wrong `old`).
        gone.push(self.layout.reserved_key(SUB_OVERFLOW_MOTION, id));
        gone.push(self.layout.reserved_key(SUB_OVERFLOW_TIME, id));
        gone.push(self.layout.reserved_key(SUB_DIRECTORY, id));
        gone.sort_unstable();
        gone.dedup();
        let mut b = Batch::new();
        for k in gone {
            b.delete(k);
        }
        partition::write_changes(&self.layout, Some(&self.state), &next, &mut b);
        self.db.apply(&b)?;
        self.state = next;
        self.stats.removes += 1;
        Ok(true)
    }

    /// Object `id`'s motion, exactly `quantize` of the last one given.
    pub fn get(&mut self, id: u64) -> Result<Option<Motion>> {
        self.check_id(id)?;
        match self.lookup(id)? {
            Some(k) => self.load(k, id).map(Some),
            None => Ok(None),
        }
    }

    /// Make every update and remove before this call durable.
    pub fn flush(&mut self) -> Result<()> {
        self.db.flush()
    }

    /// Flush, checkpoint and release the index.
    pub fn close(self) -> Result<()> {
        self.db.close()
    }

    /// Counters since open.
    pub fn stats(&self) -> MobjectStats {
        MobjectStats {
            index: self.db.stats(),
            counters: self.stats,
        }
    }

    // --- internals ---

    fn check_id(&self, id: u64) -> Result<()> {
        if id >= self.layout.id_limit() {
            return Err(Error::InvalidArgument(format!(
                "id {id} does not fit the key layout's {} id bits (ids below {})",
                self.layout.id_bits,
                self.layout.id_limit()
            )));
        }
        Ok(())
    }

    /// `t` is not before `now`.
    fn check_time(&self, t: u64, what: &str) -> Result<()> {
        if t < self.state.now {
            return Err(Error::InvalidArgument(format!(
                "{what} {t} is before now ({}): time does not go backwards",
                self.state.now
            )));
        }
        Ok(())
    }

    /// A motion the index can hold, named `what` in errors; a new motion (`what` is
    /// `motion`) is not before `now`, an old one not after it.
    fn check_motion(&self, m: &Motion, what: &str) -> Result<()> {
        let s = self.opts.space;
        for (name, v) in [("x", m.x), ("y", m.y), ("vx", m.vx), ("vy", m.vy)] {
            if !v.is_finite() {
                return Err(Error::InvalidArgument(format!(
                    "{what}.{name} is {v}: not a finite number"
                )));
            }
        }
        if !(s.x0 <= m.x && m.x <= s.x1) {
            return Err(Error::InvalidArgument(format!(
                "{what}.x {} is outside the space [{}, {}]",
                m.x, s.x0, s.x1
            )));
        }
        if !(s.y0 <= m.y && m.y <= s.y1) {
            return Err(Error::InvalidArgument(format!(
                "{what}.y {} is outside the space [{}, {}]",
                m.y, s.y0, s.y1
            )));
        }
        for (name, v) in [("vx", m.vx), ("vy", m.vy)] {
            if v.abs() > self.opts.max_speed {
                return Err(Error::InvalidArgument(format!(
                    "{what}.{name} {v} exceeds max_speed {}",
                    self.opts.max_speed
                )));
            }
        }
        if what == "motion" {
            self.check_time(m.t, "motion.t")
        } else if m.t > self.state.now {
            Err(Error::InvalidArgument(format!(
                "{what}.t {} is after now ({}): it is a motion reported before",
                m.t, self.state.now
            )))
        } else {
            Ok(())
        }
    }

    /// The object's current key, from the directory.
    fn lookup(&mut self, id: u64) -> Result<Option<u64>> {
        self.db.get(self.layout.reserved_key(SUB_DIRECTORY, id))
    }

    /// The keys of the object at `key` (an overflow object has two), into `out`.
    fn delete_entry(&self, key: u64, id: u64, out: &mut Vec<u64>) {
        out.push(key);
        if self.layout.is_reserved(key) {
            out.push(self.layout.reserved_key(SUB_OVERFLOW_TIME, id));
        }
    }

    /// The motion of the object at `key`.
    fn load(&mut self, key: u64, id: u64) -> Result<Motion> {
        let l = &self.layout;
        let bad = |what: String| Error::corruption("mobject", None, what);
        if l.is_reserved(key) {
            if l.sub_of(key) != SUB_OVERFLOW_MOTION || l.rest_of(key) != id {
                return Err(bad(format!("directory of {id} names key {key:#x}")));
            }
            let time_key = l.reserved_key(SUB_OVERFLOW_TIME, id);
            let v = self.db.get(key)?;
            let t = self.db.get(time_key)?;
            let l = &self.layout;
            return match (v.and_then(|v| l.unpack(v, None)), t) {
                (Some(m), Some(t)) => Ok(Motion { t, ..m }),
                _ => Err(bad(format!("overflow entries of {id} missing or damaged"))),
            };
        }
        let code = l.code_of(key);
        let label = self
            .state
            .parts
            .get(code as usize)
            .and_then(|p| p.label)
            .ok_or_else(|| {
                bad(format!(
                    "key {key:#x} of {id} is in partition {code} with no label"
                ))
            })?;
        let v = self.db.get(key)?;
        v.and_then(|v| self.layout.unpack(v, Some(label)))
            .ok_or_else(|| bad(format!("entry {key:#x} of {id} missing or damaged")))
    }

    /// Give partition `code` the label `label`: first move every object still indexed
    /// under its old label to the overflow (module doc), in batches of whole objects.
    fn rollover(&mut self, code: u64, label: u64) -> Result<()> {
        const CHUNK: usize = 1024;
        if let Some(old) = self.state.parts[code as usize].label {
            let (c0, c1) = self.layout.full_interval();
            let (lo, hi) = self.layout.bx_range(code, c0, c1);
            let mut from = lo;
            loop {
                let chunk: Vec<(u64, u64)> = self
                    .db
                    .range(from..=hi)?
                    .take(CHUNK)
                    .collect::<Result<_>>()?;
                let Some(&(last, _)) = chunk.last() else {
                    break;
                };
                let l = &self.layout;
                let dirs: Vec<u64> = chunk
                    .iter()
                    .map(|&(k, _)| l.reserved_key(SUB_DIRECTORY, l.id_of(k)))
                    .collect();
                let named = self.db.get_many(&dirs)?;
                let l = &self.layout;
                let mut b = Batch::new();
                let mut moved = 0;
                for (&(k, v), named) in chunk.iter().zip(named) {
                    let id = l.id_of(k);
                    if named != Some(k) {
                        // An orphan (module doc, A wrong `old`): the object is elsewhere.
                        b.delete(k);
                        self.stats.orphans_dropped += 1;
                        continue;
                    }
                    let m = l.unpack(v, Some(old)).ok_or_else(|| {
                        Error::corruption("mobject", None, format!("entry {k:#x} of {id} damaged"))
                    })?;
                    let mk = l.reserved_key(SUB_OVERFLOW_MOTION, id);
                    b.delete(k);
                    b.insert(mk, l.pack(&m, 0));
                    b.insert(l.reserved_key(SUB_OVERFLOW_TIME, id), m.t);
                    b.insert(l.reserved_key(SUB_DIRECTORY, id), mk);
                    moved += 1;
                }
                self.db.apply(&b)?;
                self.stats.migrations += moved;
                if chunk.len() < CHUNK || last == hi {
                    break;
                }
                from = last + 1;
            }
        }
        let mut next = self.state.clone();
        next.parts[code as usize] = Part::empty(Some(label));
        let mut b = Batch::new();
        partition::write_changes(&self.layout, Some(&self.state), &next, &mut b);
        self.db.apply(&b)?;
        self.state = next;
        self.interrupted[code as usize] = false;
        Ok(())
    }
}
