//! Fault injection over a [`Device`] and a [`Vfs`] with **one clock** (DESIGN.md, Testing):
//! simulated power cuts that leave the crash image a real machine could leave, and injected
//! I/O errors (`EIO`, `ENOSPC`, any errno).
//!
//! A [`Faults`] value is one injector: a seeded random source, a clock, a crash point and a
//! list of pending failures, shared (behind a mutex) by every [`FaultyDevice`] and
//! [`FaultyVfs`] made with [`Faults::wrap_device`] and [`Faults::wrap_vfs`]. Nothing is
//! global: two injectors never see each other, so tests run in parallel.
//!
//! # The clock
//!
//! One tick per operation that can change storage:
//! - every **write request** given to [`Device::submit`] (a batch of three writes is three
//!   ticks, in batch order; reads never tick), and every [`Device::sync`];
//! - every [`Vfs::create`], [`Vfs::append`], [`Vfs::truncate`], [`Vfs::rename`],
//!   [`Vfs::remove`], [`Vfs::sync`] and [`Vfs::sync_dir`].
//!
//! [`Device::trim`], device reads and vfs reads (`read`, `len`, `exists`, `list`) do not
//! tick. An operation refused by an injected failure does not tick either (it never reached
//! the medium). [`Faults::ticks`] tells how many ticks happened, so a harness can run a
//! history once, read the tick count, and then replay it with a crash at every tick.
//!
//! # Durability model
//!
//! The injector tracks a *durable* image beside the *volatile* one (the inner device and
//! vfs, which always hold the latest data, so reads see every completed write).
//! - **Device.** A written page is durable after the next [`Device::sync`] of that device.
//!   Before the first overwrite of a page since the last sync the injector reads the page's
//!   durable contents from the inner device (its pre-image) and keeps it until the next
//!   sync; nothing else is copied. **Trim** is forwarded at once and is durable at once: a
//!   trimmed page reads as zeros before and after a crash (the strict choice: an engine
//!   that trims a page the durable state still references loses it).
//! - **Vfs.** Files are tracked by identity (a rename moves the identity). A file's contents
//!   are durable after [`Vfs::sync`] of that file; the directory (which names exist and
//!   which file each names, i.e. creations, removals and renames) is durable after
//!   [`Vfs::sync_dir`]. So a file created and synced without a later `sync_dir` does not
//!   exist after a crash, a rename without a later `sync_dir` is undone, and a file whose
//!   creation is durable but whose contents were never synced is empty. A file removed (or
//!   replaced by a rename) keeps its durable contents until the removal is made durable.
//!   Files present when the vfs is wrapped are taken as durable.
//!
//! # The crash
//!
//! [`Faults::crash_after`]`(n)` makes the `n`-th next tick the crash point. At that instant
//! the inner device(s) and vfs(es) are **rewritten in place** to the crash image, and that
//! operation and every later one (on every wrapped device and vfs, including reads) fails
//! with `Error::Io` whose source has kind `Other` and message `simulated power loss`. The
//! crash image is the durable image plus the crash-point operation as follows:
//! - a device **write request**: torn: each 512-byte sector of the request independently
//!   holds either the new bytes or the durable old bytes (earlier requests of the same batch
//!   are unsynced, so dropped; later ones never ran);
//! - a vfs **append** at file offset `off`: a prefix of the appended bytes ending at `off`,
//!   at a multiple of 512 inside the append, or at its end (so possibly nothing, possibly
//!   everything), written at `off` over the file's durable contents (zero-filled if those are
//!   shorter, which happens when earlier appends were not synced); nothing if the file's
//!   name is not durable;
//! - a vfs **create, truncate, rename or remove**: applied to the durable image or not, on a
//!   coin flip (`create` of a new name adds the name with empty contents; of an existing
//!   file, empties it; `truncate` cuts or zero-extends the durable contents; `rename` points
//!   `to` at the moved file, with its durable contents, and drops its old durable name;
//!   `remove` drops the file's durable name);
//! - a device **sync**, vfs **sync** or **sync_dir**: it takes effect (the image includes
//!   it), but the call still returns the power-loss error.
//!
//! [`Faults::crash_now`] cuts power between operations: the image is exactly the durable one.
//! Every choice above comes from the random source seeded by [`Faults::new`], so a seed and a
//! crash point reproduce an image exactly.
//!
//! After the crash a test reopens the storage with a new handle on the same medium
//! ([`super::MemDevice::reopen`], a clone of the [`super::MemVfs`], the same file path or
//! directory): the injector's own wrappers stay dead. The injector keeps the wrapped inner
//! device and vfs until the last clone of the [`Faults`] is dropped, so a crash still builds
//! the image after the wrappers were dropped. If rewriting the inner storage fails (a real
//! I/O error), [`Faults::image_error`] says so.
//!
//! # Injected errors
//!
//! [`Faults::fail_nth`]`(kind, n, errno, sticky)` fails the `n`-th next operation of `kind`
//! (counted from the call; every attempted operation of that kind counts, and for batches
//! every request counts separately) with `Error::Io` whose source has
//! `raw_os_error() == Some(errno)`; with `sticky`, every later operation of that kind fails
//! too, until [`Faults::clear_failures`]. The failed operation has no effect. In a batch,
//! the requests before the failing one complete and the failing one and those after it are
//! not executed. Order of checks for each operation (each request of a batch): refused if
//! power is already lost, then counted against injected failures (and refused if one
//! fires), then it ticks (and is the crash point if its tick is).
//!
//! [`FaultyDevice::stats`] forwards the inner device's counters, except that reads, batches
//! and queue depth count what the caller submitted, so the injector's pre-image reads do not
//! show.

use super::{validate, AlignedBuf, Counters, Device, DeviceStats, IoReq, PageId, Vfs, SECTOR};
use crate::error::{Error, Result};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

/// Kinds of operation that [`Faults::fail_nth`] can target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpKind {
    /// A read request of a device batch.
    DeviceRead,
    /// A write request of a device batch.
    DeviceWrite,
    /// A device `sync`.
    DeviceSync,
    /// A vfs `create`, `append`, `truncate`, `rename` or `remove`.
    VfsWrite,
    /// A vfs `sync` or `sync_dir`.
    VfsSync,
    /// `DeviceWrite` or `VfsWrite`.
    AnyWrite,
    /// `DeviceSync` or `VfsSync`.
    AnySync,
}

impl OpKind {
    /// True when a failure aimed at `self` applies to an operation of kind `op`.
    fn covers(self, op: OpKind) -> bool {
        self == op
            || (self == OpKind::AnyWrite && matches!(op, OpKind::DeviceWrite | OpKind::VfsWrite))
            || (self == OpKind::AnySync && matches!(op, OpKind::DeviceSync | OpKind::VfsSync))
    }
}

/// One injected failure (see [`Faults::fail_nth`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailSpec {
    /// Which operations count and fail.
    pub kind: OpKind,
    /// The `n`-th next operation of `kind` fails (1-based; 0 is taken as 1).
    pub n: u64,
    /// The OS error number of the failure (`libc::EIO`, `libc::ENOSPC`, ...).
    pub errno: i32,
    /// Every later operation of `kind` fails too.
    pub sticky: bool,
}

/// A whole injection plan as plain data, for harnesses that generate, print and replay
/// plans: `Faults::with_plan(&plan)` equals `Faults::new(plan.seed)` followed by
/// `crash_after` and `fail_nth` calls.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultPlan {
    /// Seed of the random source (torn sectors, torn append prefixes, coin flips).
    pub seed: u64,
    /// Crash at this tick (1-based, counted from creation).
    pub crash_after: Option<u64>,
    /// Injected failures.
    pub failures: Vec<FailSpec>,
}

/// The shared clock and crash state of one injector. Clones share it.
#[derive(Clone)]
pub struct Faults {
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for Faults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = self.lock();
        f.debug_struct("Faults")
            .field("ticks", &st.ticks)
            .field("crash_at", &st.crash_at)
            .field("crashed", &st.crashed)
            .finish_non_exhaustive()
    }
}

impl Faults {
    /// A fresh injector: no crash planned, no failures, clock at 0.
    pub fn new(seed: u64) -> Faults {
        Faults {
            state: Arc::new(Mutex::new(State {
                rng: Rng(seed),
                ticks: 0,
                crash_at: None,
                crashed: false,
                image_error: None,
                failures: Vec::new(),
                devices: Vec::new(),
                vfses: Vec::new(),
            })),
        }
    }

    /// An injector following `plan`.
    pub fn with_plan(plan: &FaultPlan) -> Faults {
        let f = Faults::new(plan.seed);
        if let Some(n) = plan.crash_after {
            f.crash_after(n);
        }
        for s in &plan.failures {
            f.fail_nth(s.kind, s.n, s.errno, s.sticky);
        }
        f
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means another thread panicked mid-test; the state is usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wrap a device. Its current contents are taken as durable.
    pub fn wrap_device(&self, inner: Box<dyn Device>) -> FaultyDevice {
        let page_size = inner.page_size();
        let mut st = self.lock();
        st.devices.push(DevSlot {
            inner,
            page_size,
            pre: BTreeMap::new(),
        });
        FaultyDevice {
            faults: self.clone(),
            idx: st.devices.len() - 1,
            page_size,
            counters: Counters::new("fault"),
        }
    }

    /// Wrap a vfs. The files it holds now are taken as durable.
    pub fn wrap_vfs(&self, inner: Arc<dyn Vfs>) -> FaultyVfs {
        let model = VfsModel::new(inner);
        let mut st = self.lock();
        st.vfses.push(model);
        FaultyVfs {
            faults: self.clone(),
            idx: st.vfses.len() - 1,
        }
    }

    /// Power cut at the `n`-th next tick (`n >= 1`; 0 means [`Faults::crash_now`]). That
    /// operation is the crash point; it and every later operation fail. Replaces an earlier
    /// plan; does nothing after a crash.
    pub fn crash_after(&self, n: u64) {
        let mut st = self.lock();
        if st.crashed {
            return;
        }
        if n == 0 {
            st.crash(None);
        } else {
            st.crash_at = Some(st.ticks.saturating_add(n));
        }
    }

    /// Power cut now, between operations: the inner storage becomes the durable image.
    pub fn crash_now(&self) {
        self.lock().crash(None);
    }

    /// True once power is lost.
    pub fn crashed(&self) -> bool {
        self.lock().crashed
    }

    /// Fail the `n`-th next operation of `kind` (1-based, counted from this call; 0 is taken
    /// as 1) with OS error `errno`; with `sticky`, every later one of that kind fails too.
    pub fn fail_nth(&self, kind: OpKind, n: u64, errno: i32, sticky: bool) {
        self.lock().failures.push(Failure {
            spec: FailSpec {
                kind,
                n,
                errno,
                sticky,
            },
            remaining: n.max(1),
            fired: false,
        });
    }

    /// Drop every pending and sticky failure.
    pub fn clear_failures(&self) {
        self.lock().failures.clear();
    }

    /// Clock ticks so far.
    pub fn ticks(&self) -> u64 {
        self.lock().ticks
    }

    /// If rewriting the inner storage to the crash image failed, what went wrong.
    pub fn image_error(&self) -> Option<String> {
        self.lock().image_error.clone()
    }
}

/// Splitmix64: small, seedable, good enough for coin flips.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn coin(&mut self) -> bool {
        self.next() & 1 == 1
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}

struct Failure {
    spec: FailSpec,
    remaining: u64,
    fired: bool,
}

/// The operation at the crash point, for building the crash image.
enum CrashOp {
    DeviceWrite {
        dev: usize,
        page: PageId,
        data: Vec<u8>,
    },
    Vfs {
        vfs: usize,
        op: VfsOp,
    },
}

enum VfsOp {
    Create(String),
    Append {
        name: String,
        off: u64,
        data: Vec<u8>,
    },
    Truncate {
        name: String,
        len: u64,
    },
    Rename {
        from: String,
        to: String,
    },
    Remove(String),
}

struct State {
    rng: Rng,
    ticks: u64,
    crash_at: Option<u64>,
    crashed: bool,
    image_error: Option<String>,
    failures: Vec<Failure>,
    devices: Vec<DevSlot>,
    vfses: Vec<VfsModel>,
}

impl State {
    /// Refuse the operation if power is lost or an injected failure fires.
    fn admit(&mut self, op: OpKind, what: impl FnOnce() -> String) -> Result<()> {
        if self.crashed {
            return Err(power_loss(&what()));
        }
        match self.check_failure(op) {
            Some(errno) => Err(injected(&what(), errno)),
            None => Ok(()),
        }
    }

    /// Count one operation of kind `op` against the pending failures; the errno if it fails.
    fn check_failure(&mut self, op: OpKind) -> Option<i32> {
        let mut hit = None;
        for f in &mut self.failures {
            if !f.spec.kind.covers(op) {
                continue;
            }
            if f.fired {
                // Only sticky failures stay in the list once fired.
                hit.get_or_insert(f.spec.errno);
                continue;
            }
            f.remaining = f.remaining.saturating_sub(1);
            if f.remaining == 0 {
                f.fired = true;
                hit.get_or_insert(f.spec.errno);
            }
        }
        self.failures.retain(|f| !f.fired || f.spec.sticky);
        hit
    }

    /// Advance the clock; true when this tick is the crash point.
    fn tick(&mut self) -> bool {
        self.ticks += 1;
        self.crash_at == Some(self.ticks)
    }

    /// Cut power: rewrite every inner device and vfs to its crash image.
    fn crash(&mut self, op: Option<CrashOp>) {
        if self.crashed {
            return;
        }
        self.crashed = true;
        self.crash_at = None;
        self.failures.clear();
        let mut errors = Vec::new();
        for (i, d) in self.devices.iter_mut().enumerate() {
            let torn = match &op {
                Some(CrashOp::DeviceWrite { dev, page, data }) if *dev == i => {
                    Some((*page, data.as_slice()))
                }
                _ => None,
            };
            if let Err(e) = d.restore(torn, &mut self.rng) {
                errors.push(format!("device {i}: {e}"));
            }
        }
        for (i, v) in self.vfses.iter_mut().enumerate() {
            let vop = match &op {
                Some(CrashOp::Vfs { vfs, op }) if *vfs == i => Some(op),
                _ => None,
            };
            if let Err(e) = v.restore(vop, &mut self.rng) {
                errors.push(format!("vfs {i}: {e}"));
            }
        }
        if !errors.is_empty() {
            self.image_error = Some(errors.join("; "));
        }
    }
}

fn power_loss(what: &str) -> Error {
    Error::io(
        format!("{what} (fault injection)"),
        std::io::Error::other("simulated power loss"),
    )
}

fn injected(what: &str, errno: i32) -> Error {
    Error::io(
        format!("{what} (injected failure)"),
        std::io::Error::from_raw_os_error(errno),
    )
}

fn lost_handle(what: &str) -> Error {
    Error::InvalidArgument(format!("{what}: the fault injector lost this handle"))
}

// ---------------------------------------------------------------------------------------
// Device

/// One wrapped device: the inner device and the pre-images of pages written since the
/// last sync.
struct DevSlot {
    inner: Box<dyn Device>,
    page_size: usize,
    pre: BTreeMap<PageId, Vec<u8>>,
}

impl DevSlot {
    /// Read and keep the durable contents of every page that `reqs` write and that has no
    /// pre-image yet.
    fn save_pre_images(&mut self, reqs: &[IoReq<'_>]) -> Result<()> {
        let ps = self.page_size;
        let mut missing: Vec<PageId> = Vec::new();
        for req in reqs.iter().filter(|r| r.is_write()) {
            let first = req.page();
            for p in first..first + (req.len() / ps) as u64 {
                if !self.pre.contains_key(&p) {
                    missing.push(p);
                }
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        missing.sort_unstable();
        missing.dedup();
        // Contiguous runs, one read request each.
        let mut runs: Vec<(PageId, u64)> = Vec::new();
        for p in missing {
            match runs.last_mut() {
                Some((start, n)) if *start + *n == p => *n += 1,
                _ => runs.push((p, 1)),
            }
        }
        let mut bufs: Vec<AlignedBuf> = runs
            .iter()
            .map(|&(_, n)| AlignedBuf::zeroed(n as usize * ps))
            .collect();
        let mut reqs: Vec<IoReq<'_>> = runs
            .iter()
            .zip(bufs.iter_mut())
            .map(|(&(page, _), buf)| IoReq::Read {
                page,
                buf: &mut buf[..],
            })
            .collect();
        self.inner.submit(&mut reqs)?;
        drop(reqs);
        for (&(start, _), buf) in runs.iter().zip(bufs.iter()) {
            for (i, chunk) in buf.chunks(ps).enumerate() {
                self.pre.insert(start + i as u64, chunk.to_vec());
            }
        }
        Ok(())
    }

    /// Rewrite the inner device to the durable image, plus the torn request if any.
    fn restore(&mut self, torn: Option<(PageId, &[u8])>, rng: &mut Rng) -> Result<()> {
        let ps = self.page_size;
        let pre = std::mem::take(&mut self.pre);
        let bufs: Vec<(PageId, AlignedBuf)> = pre
            .iter()
            .map(|(&p, d)| {
                let mut b = AlignedBuf::zeroed(ps);
                b.copy_from_slice(d);
                (p, b)
            })
            .collect();
        if !bufs.is_empty() {
            let mut reqs: Vec<IoReq<'_>> = bufs
                .iter()
                .map(|(p, b)| IoReq::Write {
                    page: *p,
                    buf: &b[..],
                })
                .collect();
            self.inner.submit(&mut reqs)?;
        }
        if let Some((page, data)) = torn {
            let mut b = AlignedBuf::zeroed(data.len());
            for (s, chunk) in b.chunks_mut(SECTOR).enumerate() {
                let off = s * SECTOR;
                if rng.coin() {
                    chunk.copy_from_slice(&data[off..off + SECTOR]);
                } else {
                    // The durable old bytes: the pre-image (always saved before the crash
                    // write); zeros if it is somehow missing.
                    let p = page + (off / ps) as u64;
                    let within = off % ps;
                    if let Some(old) = pre.get(&p) {
                        chunk.copy_from_slice(&old[within..within + SECTOR]);
                    }
                }
            }
            self.inner.write(page, &b)?;
        }
        self.inner.sync()
    }
}

/// A [`Device`] wrapped by [`Faults`]: ticks the shared clock, keeps pre-images, fails and
/// crashes as planned.
pub struct FaultyDevice {
    faults: Faults,
    idx: usize,
    page_size: usize,
    counters: Counters,
}

impl FaultyDevice {
    /// The injector this device belongs to.
    pub fn faults(&self) -> &Faults {
        &self.faults
    }
}

enum Stop {
    Fail(i32),
    Crash,
}

impl Device for FaultyDevice {
    fn page_size(&self) -> usize {
        self.page_size
    }

    fn submit(&mut self, batch: &mut [IoReq<'_>]) -> Result<()> {
        let mut guard = self.faults.lock();
        let st = &mut *guard;
        if st.crashed {
            return Err(power_loss("submitting a device batch"));
        }
        for req in batch.iter() {
            validate(self.page_size, req.page(), req.len())?;
        }
        let mut stop = None;
        for (i, req) in batch.iter().enumerate() {
            let op = if req.is_write() {
                OpKind::DeviceWrite
            } else {
                OpKind::DeviceRead
            };
            if let Some(errno) = st.check_failure(op) {
                stop = Some((i, Stop::Fail(errno)));
                break;
            }
            if req.is_write() && st.tick() {
                stop = Some((i, Stop::Crash));
                break;
            }
        }
        let run = stop.as_ref().map_or(batch.len(), |(i, _)| *i);
        let with_crash = match stop {
            Some((i, Stop::Crash)) => i + 1,
            _ => run,
        };
        let slot = st
            .devices
            .get_mut(self.idx)
            .ok_or_else(|| lost_handle("device"))?;
        let saved = slot.save_pre_images(&batch[..with_crash]);
        if let Some((i, Stop::Crash)) = stop {
            let what = format!("writing page {}", batch[i].page());
            let op = match &batch[i] {
                IoReq::Write { page, buf } => Some(CrashOp::DeviceWrite {
                    dev: self.idx,
                    page: *page,
                    data: buf.to_vec(),
                }),
                IoReq::Read { .. } => None,
            };
            st.crash(op);
            return Err(power_loss(&what));
        }
        saved?;
        if run > 0 {
            self.counters.record_batch(self.page_size, &batch[..run])?;
            slot.inner.submit(&mut batch[..run])?;
        }
        match stop {
            Some((i, Stop::Fail(errno))) => {
                let verb = if batch[i].is_write() {
                    "writing"
                } else {
                    "reading"
                };
                Err(injected(&format!("{verb} page {}", batch[i].page()), errno))
            }
            _ => Ok(()),
        }
    }

    fn sync(&mut self) -> Result<()> {
        let mut guard = self.faults.lock();
        let st = &mut *guard;
        st.admit(OpKind::DeviceSync, || "syncing the device".into())?;
        let crash = st.tick();
        let slot = st
            .devices
            .get_mut(self.idx)
            .ok_or_else(|| lost_handle("device"))?;
        let synced = slot.inner.sync();
        if synced.is_ok() {
            slot.pre.clear();
        }
        if crash {
            st.crash(None);
            return Err(power_loss("syncing the device"));
        }
        synced
    }

    fn trim(&mut self, page: PageId, pages: u64) -> Result<()> {
        let mut guard = self.faults.lock();
        let st = &mut *guard;
        if st.crashed {
            return Err(power_loss(&format!("trimming page {page}")));
        }
        let slot = st
            .devices
            .get_mut(self.idx)
            .ok_or_else(|| lost_handle("device"))?;
        slot.inner.trim(page, pages)?;
        // Trim is durable at once: the durable contents of trimmed pages are zeros.
        for (_, old) in slot.pre.range_mut(page..page.saturating_add(pages)) {
            old.fill(0);
        }
        Ok(())
    }

    fn stats(&self) -> DeviceStats {
        let inner = {
            let st = self.faults.lock();
            st.devices.get(self.idx).map(|d| d.inner.stats())
        };
        let own = &self.counters.stats;
        let mut s = inner.unwrap_or_else(|| own.clone());
        s.reads = own.reads;
        s.read_requests = own.read_requests;
        s.read_bytes = own.read_bytes;
        s.sequential_reads = own.sequential_reads;
        s.random_reads = own.random_reads;
        s.batches = own.batches;
        s.max_queue_depth = own.max_queue_depth;
        s
    }
}

// ---------------------------------------------------------------------------------------
// Vfs

type FileId = u64;

/// What the injector knows about a file's durable contents.
enum Durable {
    /// Durable contents equal the volatile file.
    Clean,
    /// Durable contents are the volatile file's first `common` bytes followed by `tail`.
    Dirty { common: u64, tail: Vec<u8> },
    /// The file has no volatile name any more; these are its durable contents.
    Detached(Vec<u8>),
}

/// One wrapped vfs: volatile and durable directories (name -> file id) and per-file
/// durable state. Invariant: ids named in `names` are `Clean` or `Dirty`; ids named only in
/// `durable` are `Detached`; other ids are forgotten.
struct VfsModel {
    inner: Arc<dyn Vfs>,
    init_error: Option<String>,
    next_id: FileId,
    names: BTreeMap<String, FileId>,
    durable: BTreeMap<String, FileId>,
    files: HashMap<FileId, Durable>,
}

/// A file of the crash image.
enum Img {
    /// The volatile file of the same name is already right.
    Keep,
    Bytes(Vec<u8>),
}

impl VfsModel {
    fn new(inner: Arc<dyn Vfs>) -> Self {
        let mut m = VfsModel {
            inner,
            init_error: None,
            next_id: 0,
            names: BTreeMap::new(),
            durable: BTreeMap::new(),
            files: HashMap::new(),
        };
        match m.inner.list() {
            Ok(list) => {
                for name in list {
                    let id = m.fresh();
                    m.names.insert(name, id);
                    m.files.insert(id, Durable::Clean);
                }
                m.durable = m.names.clone();
            }
            Err(e) => m.init_error = Some(e.to_string()),
        }
        m
    }

    fn fresh(&mut self) -> FileId {
        self.next_id += 1;
        self.next_id
    }

    fn check_init(&self, what: &str) -> Result<()> {
        match &self.init_error {
            Some(e) => Err(Error::io(
                what.to_string(),
                std::io::Error::other(format!("listing the directory when wrapping it: {e}")),
            )),
            None => Ok(()),
        }
    }

    fn vname(&self, id: FileId) -> Option<&str> {
        self.names
            .iter()
            .find(|(_, &v)| v == id)
            .map(|(n, _)| n.as_str())
    }

    fn is_durable(&self, id: FileId) -> bool {
        self.durable.values().any(|&v| v == id)
    }

    /// The durable contents of file `id`.
    fn durable_content(&self, id: FileId) -> Result<Vec<u8>> {
        if let Some(Durable::Detached(d)) = self.files.get(&id) {
            return Ok(d.clone());
        }
        let name = self.vname(id).ok_or_else(|| lost_handle("vfs file"))?;
        let mut v = self.inner.read(name)?;
        if let Some(Durable::Dirty { common, tail }) = self.files.get(&id) {
            v.truncate(*common as usize);
            v.extend_from_slice(tail);
        }
        Ok(v)
    }

    /// Durable state of `id` (volatile `name`) after cutting the volatile file to `len`.
    fn after_cut(&self, id: FileId, name: &str, len: u64) -> Result<Option<Durable>> {
        match self.files.get(&id) {
            Some(Durable::Dirty { common, tail }) => {
                if len >= *common {
                    return Ok(None);
                }
                let v = self.inner.read(name)?;
                let end = (*common as usize).min(v.len());
                let start = (len as usize).min(end);
                let mut t = v[start..end].to_vec();
                t.extend_from_slice(tail);
                Ok(Some(Durable::Dirty {
                    common: len,
                    tail: t,
                }))
            }
            _ => {
                let cur = self.inner.len(name)?;
                if len >= cur {
                    return Ok(Some(Durable::Dirty {
                        common: cur,
                        tail: Vec::new(),
                    }));
                }
                let v = self.inner.read(name)?;
                let start = (len as usize).min(v.len());
                Ok(Some(Durable::Dirty {
                    common: len,
                    tail: v[start..].to_vec(),
                }))
            }
        }
    }

    fn create(&mut self, name: &str) -> Result<()> {
        match self.names.get(name).copied() {
            Some(id) => {
                let st = self.after_cut(id, name, 0)?;
                self.inner.create(name)?;
                if let Some(st) = st {
                    self.files.insert(id, st);
                }
            }
            None => {
                self.inner.create(name)?;
                let id = self.fresh();
                self.names.insert(name.to_string(), id);
                self.files.insert(
                    id,
                    Durable::Dirty {
                        common: 0,
                        tail: Vec::new(),
                    },
                );
            }
        }
        Ok(())
    }

    fn append(&mut self, name: &str, data: &[u8]) -> Result<()> {
        let Some(&id) = self.names.get(name) else {
            return self.inner.append(name, data);
        };
        if let Some(Durable::Clean) = self.files.get(&id) {
            let cur = self.inner.len(name)?;
            self.files.insert(
                id,
                Durable::Dirty {
                    common: cur,
                    tail: Vec::new(),
                },
            );
        }
        self.inner.append(name, data)
    }

    fn truncate(&mut self, name: &str, len: u64) -> Result<()> {
        let Some(&id) = self.names.get(name) else {
            return self.inner.truncate(name, len);
        };
        let st = self.after_cut(id, name, len)?;
        self.inner.truncate(name, len)?;
        if let Some(st) = st {
            self.files.insert(id, st);
        }
        Ok(())
    }

    fn sync(&mut self, name: &str) -> Result<()> {
        self.inner.sync(name)?;
        if let Some(&id) = self.names.get(name) {
            self.files.insert(id, Durable::Clean);
        }
        Ok(())
    }

    /// `id` loses its volatile name: keep its durable contents if its name is durable.
    fn detach_content(&self, id: Option<FileId>) -> Result<Option<Vec<u8>>> {
        match id {
            Some(d) if self.is_durable(d) => Ok(Some(self.durable_content(d)?)),
            _ => Ok(None),
        }
    }

    fn detach(&mut self, id: Option<FileId>, content: Option<Vec<u8>>) {
        if let Some(d) = id {
            match content {
                Some(c) => self.files.insert(d, Durable::Detached(c)),
                None => self.files.remove(&d),
            };
        }
    }

    fn rename(&mut self, from: &str, to: &str) -> Result<()> {
        let Some(&id) = self.names.get(from) else {
            return self.inner.rename(from, to);
        };
        if from == to {
            return self.inner.rename(from, to);
        }
        let displaced = self.names.get(to).copied();
        let keep = self.detach_content(displaced)?;
        self.inner.rename(from, to)?;
        self.names.remove(from);
        self.names.insert(to.to_string(), id);
        self.detach(displaced, keep);
        Ok(())
    }

    fn remove(&mut self, name: &str) -> Result<()> {
        let Some(&id) = self.names.get(name) else {
            return self.inner.remove(name);
        };
        let keep = self.detach_content(Some(id))?;
        self.inner.remove(name)?;
        self.names.remove(name);
        self.detach(Some(id), keep);
        Ok(())
    }

    fn sync_dir(&mut self) -> Result<()> {
        self.inner.sync_dir()?;
        self.durable = self.names.clone();
        let live: HashSet<FileId> = self.names.values().copied().collect();
        self.files.retain(|id, _| live.contains(id));
        Ok(())
    }

    /// Make `img` hold bytes (the durable contents of `id`).
    fn materialize<'a>(&self, id: FileId, img: &'a mut Img) -> Result<&'a mut Vec<u8>> {
        if let Img::Keep = img {
            *img = Img::Bytes(self.durable_content(id)?);
        }
        match img {
            Img::Bytes(b) => Ok(b),
            Img::Keep => Err(lost_handle("vfs file")),
        }
    }

    /// Apply a crash-point create, truncate, rename or remove to the durable image.
    fn apply_dir_op(
        &self,
        op: &VfsOp,
        dir: &mut BTreeMap<String, FileId>,
        content: &mut HashMap<FileId, Img>,
    ) -> Result<()> {
        match op {
            VfsOp::Append { .. } => {}
            VfsOp::Create(name) => match self.names.get(name) {
                Some(&id) => {
                    if let Some(img) = content.get_mut(&id) {
                        *img = Img::Bytes(Vec::new());
                    }
                }
                None => {
                    let id = self.next_id + 1;
                    dir.insert(name.clone(), id);
                    content.insert(id, Img::Bytes(Vec::new()));
                }
            },
            VfsOp::Truncate { name, len } => {
                if let Some(&id) = self.names.get(name) {
                    if let Some(img) = content.get_mut(&id) {
                        self.materialize(id, img)?.resize(*len as usize, 0);
                    }
                }
            }
            VfsOp::Rename { from, to } => {
                if let (Some(&id), false) = (self.names.get(from), from == to) {
                    let bytes = match content.remove(&id) {
                        Some(Img::Bytes(b)) => b,
                        _ => self.durable_content(id)?,
                    };
                    content.insert(id, Img::Bytes(bytes));
                    dir.retain(|_, v| *v != id);
                    dir.insert(to.clone(), id);
                }
            }
            VfsOp::Remove(name) => {
                if let Some(&id) = self.names.get(name) {
                    dir.retain(|_, v| *v != id);
                }
            }
        }
        Ok(())
    }

    /// The crash image: durable name -> contents.
    fn image(&self, op: Option<&VfsOp>, rng: &mut Rng) -> Result<BTreeMap<String, Img>> {
        let mut dir = self.durable.clone();
        let mut content: HashMap<FileId, Img> = HashMap::new();
        for (name, &id) in &dir {
            let keep = matches!(self.files.get(&id), Some(Durable::Clean))
                && self.names.get(name) == Some(&id);
            let img = if keep {
                Img::Keep
            } else {
                Img::Bytes(self.durable_content(id)?)
            };
            content.insert(id, img);
        }
        match op {
            None => {}
            Some(VfsOp::Append { name, off, data }) => {
                let k = torn_prefix(*off, data.len() as u64, rng) as usize;
                if let Some(&id) = self.names.get(name) {
                    if let Some(img) = content.get_mut(&id) {
                        if k > 0 {
                            let c = self.materialize(id, img)?;
                            let off = *off as usize;
                            if c.len() < off + k {
                                c.resize(off + k, 0);
                            }
                            c[off..off + k].copy_from_slice(&data[..k]);
                        }
                    }
                }
            }
            // Create, truncate, rename, remove: applied or not, on a coin flip.
            Some(dir_op) if rng.coin() => self.apply_dir_op(dir_op, &mut dir, &mut content)?,
            Some(_) => {}
        }
        let mut out = BTreeMap::new();
        for (name, id) in dir {
            if let Some(img) = content.remove(&id) {
                out.insert(name, img);
            }
        }
        Ok(out)
    }

    /// Rewrite the inner vfs to the crash image.
    fn restore(&mut self, op: Option<&VfsOp>, rng: &mut Rng) -> Result<()> {
        self.check_init("building the crash image")?;
        let image = self.image(op, rng)?;
        for name in self.inner.list()? {
            if !matches!(image.get(&name), Some(Img::Keep)) {
                self.inner.remove(&name)?;
            }
        }
        for (name, img) in &image {
            if let Img::Bytes(b) = img {
                self.inner.create(name)?;
                if !b.is_empty() {
                    self.inner.append(name, b)?;
                }
                self.inner.sync(name)?;
            }
        }
        self.inner.sync_dir()?;
        self.files.clear();
        self.names.clear();
        self.durable.clear();
        Ok(())
    }
}

/// Bytes of an append of `len` bytes at file offset `off` that reach the crash image: 0,
/// `len`, or a cut at a multiple of 512 inside the append, uniformly among those.
fn torn_prefix(off: u64, len: u64, rng: &mut Rng) -> u64 {
    if len == 0 {
        return 0;
    }
    let s = SECTOR as u64;
    let inside = (off + len - 1) / s - off / s; // multiples of 512 strictly inside
    let r = rng.below(inside + 2);
    if r == 0 {
        0
    } else if r == inside + 1 {
        len
    } else {
        (off / s + r) * s - off
    }
}

/// A [`Vfs`] wrapped by [`Faults`]: ticks the shared clock, tracks durable contents and
/// names, fails and crashes as planned.
pub struct FaultyVfs {
    faults: Faults,
    idx: usize,
}

impl FaultyVfs {
    /// The injector this vfs belongs to.
    pub fn faults(&self) -> &Faults {
        &self.faults
    }

    /// Run a clock-ticking operation: admit, tick (crashing with `crash_op` at the crash
    /// point, after `before_crash`), else `f` on the model.
    fn ticking(
        &self,
        kind: OpKind,
        what: impl Fn() -> String,
        crash_op: impl FnOnce(&VfsModel) -> Result<Option<VfsOp>>,
        f: impl FnOnce(&mut VfsModel) -> Result<()>,
    ) -> Result<()> {
        let mut guard = self.faults.lock();
        let st = &mut *guard;
        st.admit(kind, &what)?;
        let model = st
            .vfses
            .get_mut(self.idx)
            .ok_or_else(|| lost_handle("vfs"))?;
        model.check_init(&what())?;
        if st.tick() {
            let op = st
                .vfses
                .get(self.idx)
                .map(crash_op)
                .transpose()
                .ok()
                .flatten()
                .flatten();
            if op.is_none() && kind == OpKind::VfsSync {
                // Syncs take effect at the crash point.
                if let Some(m) = st.vfses.get_mut(self.idx) {
                    let _ = f(m);
                }
            }
            st.crash(op.map(|op| CrashOp::Vfs { vfs: self.idx, op }));
            return Err(power_loss(&what()));
        }
        let model = st
            .vfses
            .get_mut(self.idx)
            .ok_or_else(|| lost_handle("vfs"))?;
        f(model)
    }

    /// Run a non-ticking operation (reads): refused only after a crash.
    fn reading<T>(
        &self,
        what: impl Fn() -> String,
        f: impl FnOnce(&dyn Vfs) -> Result<T>,
    ) -> Result<T> {
        let st = self.faults.lock();
        if st.crashed {
            return Err(power_loss(&what()));
        }
        let model = st.vfses.get(self.idx).ok_or_else(|| lost_handle("vfs"))?;
        model.check_init(&what())?;
        f(&*model.inner)
    }
}

impl Vfs for FaultyVfs {
    fn create(&self, name: &str) -> Result<()> {
        self.ticking(
            OpKind::VfsWrite,
            || format!("creating {name}"),
            |_| Ok(Some(VfsOp::Create(name.to_string()))),
            |m| m.create(name),
        )
    }

    fn append(&self, name: &str, data: &[u8]) -> Result<()> {
        self.ticking(
            OpKind::VfsWrite,
            || format!("appending to {name}"),
            |m| {
                Ok(if m.names.contains_key(name) {
                    Some(VfsOp::Append {
                        name: name.to_string(),
                        off: m.inner.len(name)?,
                        data: data.to_vec(),
                    })
                } else {
                    None
                })
            },
            |m| m.append(name, data),
        )
    }

    fn read(&self, name: &str) -> Result<Vec<u8>> {
        self.reading(|| format!("reading {name}"), |v| v.read(name))
    }

    fn len(&self, name: &str) -> Result<u64> {
        self.reading(|| format!("reading the length of {name}"), |v| v.len(name))
    }

    fn truncate(&self, name: &str, len: u64) -> Result<()> {
        self.ticking(
            OpKind::VfsWrite,
            || format!("truncating {name}"),
            |_| {
                Ok(Some(VfsOp::Truncate {
                    name: name.to_string(),
                    len,
                }))
            },
            |m| m.truncate(name, len),
        )
    }

    fn sync(&self, name: &str) -> Result<()> {
        self.ticking(
            OpKind::VfsSync,
            || format!("syncing {name}"),
            |_| Ok(None),
            |m| m.sync(name),
        )
    }

    fn rename(&self, from: &str, to: &str) -> Result<()> {
        self.ticking(
            OpKind::VfsWrite,
            || format!("renaming {from} to {to}"),
            |_| {
                Ok(Some(VfsOp::Rename {
                    from: from.to_string(),
                    to: to.to_string(),
                }))
            },
            |m| m.rename(from, to),
        )
    }

    fn remove(&self, name: &str) -> Result<()> {
        self.ticking(
            OpKind::VfsWrite,
            || format!("removing {name}"),
            |_| Ok(Some(VfsOp::Remove(name.to_string()))),
            |m| m.remove(name),
        )
    }

    fn exists(&self, name: &str) -> Result<bool> {
        self.reading(|| format!("looking up {name}"), |v| v.exists(name))
    }

    fn list(&self) -> Result<Vec<String>> {
        self.reading(|| "listing the directory".to_string(), |v| v.list())
    }

    fn sync_dir(&self) -> Result<()> {
        self.ticking(
            OpKind::VfsSync,
            || "syncing the directory".to_string(),
            |_| Ok(None),
            |m| m.sync_dir(),
        )
    }
}

#[cfg(test)]
mod tests;
