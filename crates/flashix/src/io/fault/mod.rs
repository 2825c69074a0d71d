//! Fault injection over a [`Device`] and a [`Vfs`] with **one clock** (docs/design.md, Testing):
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
//! [`Device::trim`], device reads and vfs reads ([`Vfs::read`], [`Vfs::len`],
//! [`Vfs::exists`], [`Vfs::list`]) do not tick. An operation refused by an injected failure does not tick either (it never reached
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
//! too, until [`Faults::clear_failures`]. The failed operation has no effect. The kinds
//! ([`OpKind`]) are a device batch's read and write requests, device syncs, vfs writes
//! (everything that ticks but the syncs), vfs syncs and vfs reads (`read`, `len`, `exists`
//! and `list`: what opening an index and replaying its WAL do with the files), and the
//! unions `AnyRead`, `AnyWrite` and `AnySync` of the device and vfs kinds.
//! [`Faults::fired`] counts the failures that fired (a sticky one once), so a harness can
//! tell an armed failure that no operation met from one that fired. In a batch,
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
use crate::util::Rng;
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
    /// A vfs `read`, `len`, `exists` or `list`.
    VfsRead,
    /// `DeviceRead` or `VfsRead`.
    AnyRead,
    /// `DeviceWrite` or `VfsWrite`.
    AnyWrite,
    /// `DeviceSync` or `VfsSync`.
    AnySync,
}

impl OpKind {
    /// True when a failure aimed at `self` applies to an operation of kind `op`.
    fn covers(self, op: OpKind) -> bool {
        self == op
            || (self == OpKind::AnyRead && matches!(op, OpKind::DeviceRead | OpKind::VfsRead))
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
                rng: Rng::new(seed),
                ticks: 0,
                crash_at: None,
                crashed: false,
                image_error: None,
                failures: Vec::new(),
                fired: 0,
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

    /// How many injected failures have fired so far (a sticky failure counts once, when it
    /// first fires).
    pub fn fired(&self) -> u64 {
        self.lock().fired
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
    /// Injected failures that fired ([`Faults::fired`]).
    fired: u64,
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
                self.fired += 1;
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

mod device;
mod vfs;

use device::DevSlot;
pub use device::FaultyDevice;
pub use vfs::FaultyVfs;
use vfs::VfsModel;

#[cfg(test)]
mod tests;
