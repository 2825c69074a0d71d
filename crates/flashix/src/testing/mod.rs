//! The conformance harness (docs/design.md, Testing): seeded random histories of every `Db`
//! operation, checked against a `BTreeMap<u64, u64>` model, for any engine on any device,
//! with `Reopen` and `Crash` steps. A crash step arms the fault injector so that a power cut
//! happens a few writes or syncs later, rebuilds the storage as the cut left it, reopens,
//! and checks the prefix rule of docs/design.md's contract point 3: the contents equal the model after some prefix
//! of the operations that contains every operation before the last successful `flush`.
//! `check_integrity` runs after every reopen and at the end of each history.
//!
//! # Fault steps
//!
//! A history with [`History::faults`] also has fault steps (docs/design.md, contract
//! point 6). A fault step arms one injected I/O error on the history's fault injector
//! ([`crate::io::Faults::fail_nth`], drawn by the seed): a kind of operation among
//! [`FAULT_KINDS`] (device read, write or sync; vfs read, write or sync — the WAL and the
//! manifest), `EIO` or `ENOSPC`, once or sticky, at the `n`-th next operation of that kind
//! for a small `n`. It then runs up to 40 mutations, flushes and reads until one returns an
//! error, and checks:
//! - the error is `Error::Io` carrying the armed errno, and the failure fired (an I/O
//!   error that is not the injected one, any other error, or a panic fails the history);
//! - every read that succeeded before it gave the model's answer;
//! - the `Db` is poisoned: the next mutation returns `Error::Poisoned` (reads that meet an
//!   I/O error poison it too, as a failed read may have stopped half way through a write
//!   or a page load);
//! - after the failures are cleared, the `Db` dropped and the index opened again, it
//!   passes `check_integrity` and holds what the last successful flush made durable plus
//!   a prefix of the mutations since, the failed one included (it may have been logged
//!   before its I/O failed) — the prefix rule of the crash step.
//!
//! The reopen is on the same storage with no crash image: the process did not die, so
//! every write that completed stays written (durable or not); only the failed operation
//! had no effect. So what reopen must see is exactly the prefix rule above: nothing that
//! a flush acknowledged is lost, and no operation is half applied. In half the fault steps
//! power is also cut right after the failure, before the reopen (the durable image of the
//! crash step, with no torn write): the prefix rule must hold there too, so an engine that
//! went on after a failed write or sync as if it had succeeded, and then acknowledged a
//! flush, is caught.
//!
//! If no in-flight operation meets the failure, the step closes the index (a checkpoint:
//! device writes and syncs, the manifest) with the failure still armed; if `close` meets
//! it, the same checks apply but for the poisoning (the `Db` is gone). If that does not
//! meet it either, the same failure is armed again on the reopen, where the vfs reads are
//! (the manifest, the WAL), and recovery writes: an `open` that meets it must return it,
//! and a second `open` without faults must succeed and hold the closed index's contents.
//! After a fault was hit, one reopen in four meets a second drawn failure in the same way.
//! A failure that fires while every operation succeeds (the engine did without the I/O)
//! is "absorbed": power is then cut at once (before the `Db` is dropped, whose flush
//! would sync again) and the prefix rule checked after the reopen, so a failed sync that
//! an engine took as done, and then acknowledged a flush over, loses acknowledged data
//! there and fails the history. One that nothing met is "armed but not hit" (a read
//! failure on an index whose pages are all cached, a sync failure beyond the syncs a step
//! makes). [`Report`] counts all of these, by kind.
//!
//! Fault steps take rolls that are integrity checks in histories without them, so adding
//! them changed no existing seed's operations.
//!
//! Adding an engine to the conformance tests is one line in `tests/conformance.rs`.

pub use crate::util::Rng;

pub mod concurrent;
mod fault_step;
mod grow;
pub mod kill;
pub mod mobject;
#[cfg(test)]
pub(crate) mod readers;

use fault_step::FaultRun;
pub use fault_step::{FaultCount, FAULT_KINDS};
pub use grow::{grow_with_model_k, growth_tuning, model_k_for, ModelKGrowth};

use crate::io::{Device, DirVfs, Faults, FileDevice, MemDevice, MemVfs, Vfs};
use crate::sim::{FtlKind, NandConfig, SimSsd, SimSsdConfig};
use crate::{Db, EngineKind, Error, Options, Storage};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where a history's index lives.
#[derive(Debug, Clone)]
pub enum DeviceKind {
    /// `MemDevice` + `MemVfs`.
    Memory,
    /// `FileDevice` (O_DIRECT when the file system allows) + `DirVfs` in this directory.
    File(PathBuf),
    /// A simulated SSD with this FTL ([`sim_ssd_config`]) over NAND kept in a `MemDevice`
    /// (the fault injector wraps the NAND medium, so a crash tears a NAND operation),
    /// + `MemVfs`.
    SimSsd(FtlKind),
}

/// A new index with `o` on a fresh `MemDevice` and `MemVfs`, returned with both so that
/// a test can reopen it ([`reopen_mem`]) or inspect the device.
pub fn mem_db(o: Options) -> Result<(Db, MemDevice, MemVfs), Error> {
    let dev = MemDevice::new(o.page_size);
    let vfs = MemVfs::new();
    let s = Storage {
        device: Box::new(dev.reopen()),
        vfs: Arc::new(vfs.clone()),
    };
    Ok((Db::create_on(s, o)?, dev, vfs))
}

/// The index of [`mem_db`] opened again on the same device and files.
pub fn reopen_mem(dev: &MemDevice, vfs: &MemVfs) -> Result<Db, Error> {
    Db::open_on(Storage {
        device: Box::new(dev.reopen()),
        vfs: Arc::new(vfs.clone()),
    })
}

/// `ops` upserts of random keys below `keys` (seeded by `seed`, value = the operation's
/// number) into a new index with `o` on a fresh `MemDevice` and `MemVfs`, checked against a
/// model: its integrity, then, dropped without `close` and reopened (the log redoes what
/// the last checkpoint did not hold), its integrity and contents. Returns the stats taken
/// before the reopen.
pub fn upserts_across_reopen(
    o: Options,
    seed: u64,
    ops: u64,
    keys: u64,
) -> Result<crate::Stats, String> {
    let (db, dev, vfs) = mem_db(o).map_err(|e| e.to_string())?;
    let mut rng = Rng::new(seed);
    let mut model = BTreeMap::new();
    for i in 0..ops {
        let k = rng.next_u64() % keys.max(1);
        db.insert(k, i).map_err(|e| format!("insert {i}: {e}"))?;
        model.insert(k, i);
    }
    db.check_integrity().map_err(|e| e.to_string())?;
    let stats = db.stats();
    drop(db);
    let db = reopen_mem(&dev, &vfs).map_err(|e| format!("reopen: {e}"))?;
    db.check_integrity()
        .map_err(|e| format!("after reopen: {e}"))?;
    let got = db
        .range(..)
        .map_err(|e| e.to_string())?
        .collect::<Result<BTreeMap<u64, u64>, Error>>()
        .map_err(|e| e.to_string())?;
    if got != model {
        return Err(format!(
            "after reopen: {} entries, the model {}",
            got.len(),
            model.len()
        ));
    }
    Ok(stats)
}

/// A merge-thread check for the FD-tree and the LSM-tree (`o` deamortized, small pages)
/// on an index directory `dir` (a file: merges run on the merge thread): three rounds of
/// random inserts, deletes and range deletes against a model, each ended by a flush and a
/// drop without close while a merge is in progress, then a reopen (the merge restarts or
/// the log redoes it) that must hold the model. Fails unless some merge completed on the
/// thread (`thread_merges`) and a merge was in progress at each drop. Returns the index.
pub fn merges_on_a_file_across_drops(o: Options, dir: &Path, seed: u64) -> Result<Db, String> {
    let counter = |db: &Db, name: &str| db.stats().engine_counters.get(name).copied();
    let contents = |db: &mut Db| -> Result<BTreeMap<u64, u64>, String> {
        db.range(..)
            .map_err(|e| e.to_string())?
            .collect::<Result<BTreeMap<u64, u64>, Error>>()
            .map_err(|e| e.to_string())
    };
    let mut db = Db::create(dir, o).map_err(|e| e.to_string())?;
    let mut rng = Rng::new(seed);
    let mut model = BTreeMap::new();
    for round in 0..3 {
        for i in 0..6_000u64 {
            let k = rng.next_u64() % 20_000;
            let done = match rng.next_u64() % 10 {
                0 => {
                    model.remove(&k);
                    db.delete(k)
                }
                1 if i % 50 == 0 => {
                    model.retain(|x, _| !(k..k + 40).contains(x));
                    db.delete_range(k..k + 40)
                }
                _ => {
                    model.insert(k, i);
                    db.insert(k, i)
                }
            };
            done.map_err(|e| format!("round {round}, op {i}: {e}"))?;
        }
        db.check_integrity().map_err(|e| e.to_string())?;
        if contents(&mut db)? != model {
            return Err(format!("round {round}: the index differs from the model"));
        }
        // Go on until a merge is in progress, then drop without close.
        while counter(&db, "merge_in_progress") == Some(0) {
            let k = rng.next_u64() % 20_000;
            db.insert(k, 1).map_err(|e| e.to_string())?;
            model.insert(k, 1);
        }
        if counter(&db, "thread_merges").unwrap_or(0) == 0 {
            return Err(format!(
                "round {round}: no merge completed on the merge thread"
            ));
        }
        // The thread's time is counted, and its CPU time and waits fit inside it (the
        // clocks count in whole microseconds, each rounded down).
        let time = |n: &str| counter(&db, n).ok_or(format!("no counter {n}"));
        let (wall, cpu, wait) = (
            time("merge_thread_us")?,
            time("merge_thread_cpu_us")?,
            time("merge_thread_io_wait_us")?,
        );
        let merges = counter(&db, "thread_merges").unwrap_or(0);
        if wall == 0 || cpu > wall + merges || wait > wall + merges {
            return Err(format!(
                "round {round}: merge thread times: {wall} us, CPU {cpu} us, waits {wait} us"
            ));
        }
        db.flush().map_err(|e| e.to_string())?;
        drop(db);
        db = Db::open(dir).map_err(|e| format!("reopen {round}: {e}"))?;
        db.check_integrity()
            .map_err(|e| format!("after reopen {round}: {e}"))?;
        if contents(&mut db)? != model {
            return Err(format!(
                "after reopen {round}: the index differs from the model"
            ));
        }
    }
    Ok(db)
}

/// A check of shared writes for the FD-tree and the LSM-tree (`o` on a fresh `MemDevice`
/// and `MemVfs`): threads writing at once, each on keys of its own (inserts and deletes,
/// with a reader beside them so that the writes run beside other operations, under the
/// engine's shared lock). Every thread must read its own writes, some write must have run
/// under the shared lock (`shared_writes`), and the records the threads logged under their
/// leaves' latches must replay, after a flush and a drop without a checkpoint, to what each
/// thread wrote last.
pub fn threads_write_and_the_log_replays_it(o: Options) -> Result<(), String> {
    use std::sync::atomic::{AtomicBool, Ordering};
    const THREADS: u64 = 3;
    const OPS: u64 = 4_000;
    let contents = |db: &Db| -> Result<BTreeMap<u64, u64>, String> {
        db.range(..)
            .map_err(|e| e.to_string())?
            .collect::<Result<BTreeMap<u64, u64>, Error>>()
            .map_err(|e| e.to_string())
    };
    let (db, dev, vfs) = mem_db(o).map_err(|e| e.to_string())?;
    let stop = AtomicBool::new(false);
    let models = std::thread::scope(|s| -> Result<Vec<BTreeMap<u64, Option<u64>>>, String> {
        let (db, stop) = (&db, &stop);
        let reader = s.spawn(move || -> Result<(), String> {
            let mut rng = Rng::new(5);
            while !stop.load(Ordering::Relaxed) {
                db.get(rng.below(20_000))
                    .map_err(|e| format!("reader: {e}"))?;
            }
            Ok(())
        });
        let writers: Vec<_> = (0..THREADS)
            .map(|t| {
                s.spawn(move || -> Result<BTreeMap<u64, Option<u64>>, String> {
                    let mut rng = Rng::new(t);
                    let mut model = BTreeMap::new();
                    for i in 0..OPS {
                        let k = rng.below(20_000 / THREADS) * THREADS + t;
                        let w = if rng.below(4) == 0 {
                            db.delete(k)
                                .map_err(|e| format!("thread {t} delete {k}: {e}"))?;
                            None
                        } else {
                            db.insert(k, i)
                                .map_err(|e| format!("thread {t} insert {k}: {e}"))?;
                            Some(i)
                        };
                        model.insert(k, w);
                        let got = db.get(k).map_err(|e| format!("thread {t} get {k}: {e}"))?;
                        if got != w {
                            return Err(format!("thread {t} key {k}: {got:?}, wrote {w:?}"));
                        }
                    }
                    Ok(model)
                })
            })
            .collect();
        let models: Result<Vec<_>, String> = writers
            .into_iter()
            .map(|w| w.join().map_err(|_| "a writer panicked".to_string())?)
            .collect();
        // The reader stops whether or not a writer failed, so that the scope can end.
        stop.store(true, Ordering::Relaxed);
        reader
            .join()
            .map_err(|_| "the reader panicked".to_string())??;
        models
    })?;
    let shared = db.stats().engine_counters.get("shared_writes").copied();
    if shared.unwrap_or(0) == 0 {
        return Err(format!(
            "no write ran under the shared lock (shared_writes {shared:?})"
        ));
    }
    db.check_integrity().map_err(|e| e.to_string())?;
    let want: BTreeMap<u64, u64> = models
        .iter()
        .flatten()
        .filter_map(|(&k, &w)| w.map(|v| (k, v)))
        .collect();
    if contents(&db)? != want {
        return Err("the index differs from what the threads wrote last".to_string());
    }
    db.flush().map_err(|e| e.to_string())?;
    drop(db);
    let db = reopen_mem(&dev, &vfs).map_err(|e| format!("reopen: {e}"))?;
    db.check_integrity()
        .map_err(|e| format!("after replay: {e}"))?;
    if contents(&db)? != want {
        return Err("after replay: the index differs from what the threads wrote last".to_string());
    }
    Ok(())
}

/// The name of the WAL file the manifest in `vfs` names (a checkpoint also creates the
/// next generation's WAL ahead, empty, so the directory may hold two).
pub fn current_wal_name(vfs: &dyn crate::io::Vfs) -> Result<String, Error> {
    let m = crate::durable::Manifest::load(vfs)?;
    Ok(crate::durable::manifest::wal_name(m.generation))
}

/// The long mode (`FLASHIX_CONFORMANCE_LONG` set): the conformance, kill, memory and
/// decoder tests run many more histories, kills, operations and cases.
pub fn long_mode() -> bool {
    std::env::var_os("FLASHIX_CONFORMANCE_LONG").is_some()
}

/// Whether the per-engine tests run `engine`: all of them, or those named in
/// `FLASHIX_CONFORMANCE_ENGINES` (comma-separated engine names).
///
/// # Panics
/// On a name in the list that is no engine's: a test setting, and a misspelt one must
/// stop the run rather than select nothing.
#[allow(clippy::panic)]
pub fn engine_selected(engine: EngineKind) -> bool {
    match std::env::var("FLASHIX_CONFORMANCE_ENGINES") {
        Ok(list) => list.split(',').any(|n| {
            let named: EngineKind = n
                .trim()
                .parse()
                .unwrap_or_else(|e| panic!("FLASHIX_CONFORMANCE_ENGINES: {e}"));
            named == engine
        }),
        Err(_) => true,
    }
}

/// The simulated SSD of [`DeviceKind::SimSsd`] histories for pages of `page_size` bytes:
/// NAND pages of `min(page_size, 2048)` bytes with 32 spare bytes per sector, 16 pages per
/// block, 2 channels, 30% over-provisioning, and at least `device_pages` pages of capacity
/// (small, so that garbage collection and merges run within a history).
pub fn sim_ssd_config(ftl: FtlKind, page_size: usize, device_pages: u32) -> SimSsdConfig {
    let nand_page = page_size.min(2048);
    let per = (page_size / nand_page) as u32;
    let ppb = 16;
    // logical blocks * ppb / per >= device_pages; blocks = logical / 0.7.
    let logical_blocks = (device_pages * per).div_ceil(ppb);
    SimSsdConfig {
        nand: NandConfig {
            page_bytes: nand_page,
            spare_bytes_per_sector: 32,
            pages_per_block: ppb,
            blocks: (logical_blocks as f64 / 0.7).ceil() as u32 + 1,
            channels: 2,
            ..NandConfig::default()
        },
        ftl,
        ..SimSsdConfig::default()
    }
}

/// One history to run.
#[derive(Debug, Clone)]
pub struct History {
    /// The engine under test.
    pub engine: EngineKind,
    /// The device it runs on.
    pub device: DeviceKind,
    /// The seed the operations are drawn from (a history is a function of it).
    pub seed: u64,
    /// Operations to run.
    pub ops: usize,
    /// Include crash steps.
    pub crashes: bool,
    /// Include fault steps (injected I/O errors, see the module doc). They take rolls that
    /// are integrity checks otherwise, so a seed without them runs the operations it ran
    /// before fault steps existed.
    pub faults: bool,
}

/// What a history did (for the test's summary).
#[derive(Debug, Default, Clone)]
pub struct Report {
    /// Operations run.
    pub ops: usize,
    /// Close-and-open steps.
    pub reopens: usize,
    /// Crash steps.
    pub crashes: usize,
    /// Operations after the last flush that a crash lost (allowed by the prefix rule).
    pub lost_after_crash: usize,
    /// Entries in the index at the end.
    pub final_entries: usize,
    /// Atomic batches applied ([`crate::Db::apply`]).
    pub batches: usize,
    /// Crashes that cut a batch while it was being applied (the batch must then be all
    /// there or not there).
    pub crashes_in_batch: usize,
    /// Fault steps: failures armed, and those an operation met and returned.
    pub faults: FaultCount,
    /// [`Report::faults`] by the kind of operation failed (`DeviceRead`, `VfsSync`, ...).
    pub faults_by_kind: BTreeMap<String, FaultCount>,
    /// Of the faults hit, those returned by the `close` after the in-flight operations.
    pub faults_at_close: usize,
    /// Of the faults hit, those returned by the `open` after that `close`.
    pub faults_at_open: usize,
    /// Failures that fired while every operation succeeded (the engine did without the
    /// failed I/O; power was then cut and the prefix rule checked).
    pub faults_absorbed: usize,
    /// Failures armed but not hit: no operation, `close` or `open` of the step met them
    /// (a read failure on an index that is all cached, ...).
    pub faults_not_hit: usize,
    /// Extra failures armed for the `open` after a fault was hit, and those it met.
    pub open_faults: FaultCount,
    /// Operations after the last flush that were lost at a fault (allowed by the prefix
    /// rule).
    pub lost_after_fault: usize,
    /// Fault steps that cut power right after the failure.
    pub crashes_after_fault: usize,
}

impl Report {
    /// Add `r`'s counts to these (a summary of many histories).
    pub fn add(&mut self, r: &Report) {
        self.ops += r.ops;
        self.reopens += r.reopens;
        self.crashes += r.crashes;
        self.lost_after_crash += r.lost_after_crash;
        self.final_entries += r.final_entries;
        self.batches += r.batches;
        self.crashes_in_batch += r.crashes_in_batch;
        self.faults.add(r.faults);
        for (kind, c) in &r.faults_by_kind {
            self.faults_by_kind.entry(kind.clone()).or_default().add(*c);
        }
        self.faults_at_close += r.faults_at_close;
        self.faults_at_open += r.faults_at_open;
        self.faults_absorbed += r.faults_absorbed;
        self.faults_not_hit += r.faults_not_hit;
        self.open_faults.add(r.open_faults);
        self.lost_after_fault += r.lost_after_fault;
        self.crashes_after_fault += r.crashes_after_fault;
    }
}

/// A mutating operation, as the model applies it.
#[derive(Debug, Clone)]
enum Op {
    Insert(u64, u64),
    Delete(u64),
    Bulk(Vec<(u64, u64)>),
    DeleteRange(Bound<u64>, Bound<u64>),
    /// An atomic [`crate::Batch`] of `Insert`, `Delete` and `DeleteRange`, in order.
    Batch(Vec<Op>),
}

fn apply(model: &mut BTreeMap<u64, u64>, op: &Op) {
    match op {
        Op::Insert(k, v) => {
            model.insert(*k, *v);
        }
        Op::Delete(k) => {
            model.remove(k);
        }
        Op::Bulk(pairs) => {
            for &(k, v) in pairs {
                model.insert(k, v);
            }
        }
        Op::DeleteRange(lo, hi) => {
            if range_is_valid(*lo, *hi) {
                let doomed: Vec<u64> = model.range((*lo, *hi)).map(|(&k, _)| k).collect();
                for k in doomed {
                    model.remove(&k);
                }
            }
        }
        Op::Batch(ops) => ops.iter().for_each(|op| apply(model, op)),
    }
}

/// `BTreeMap::range` panics on inverted bounds; `Db` treats them as empty.
fn range_is_valid(lo: Bound<u64>, hi: Bound<u64>) -> bool {
    match (lo, hi) {
        (Bound::Included(a), Bound::Included(b)) => a <= b,
        (Bound::Included(a), Bound::Excluded(b)) | (Bound::Excluded(a), Bound::Included(b)) => {
            a < b
        }
        (Bound::Excluded(a), Bound::Excluded(b)) => a < b && a + 1 != b,
        _ => true,
    }
}

/// The storage of a history, able to make fresh handles on the same data.
pub(crate) struct Env {
    device: DeviceKind,
    page_size: usize,
    mem_dev: MemDevice,
    mem_vfs: MemVfs,
    /// The NAND medium of a simulated SSD, and the SSD's capacity in pages.
    nand_dev: Option<MemDevice>,
    sim_pages: u32,
    faults: Faults,
    seed: u64,
    opens: u64,
}

impl Env {
    /// Storage for pages of `page_size` on `device` (a simulated SSD of `sim_pages` pages),
    /// under a fault injector seeded by `seed`.
    pub(crate) fn new(device: DeviceKind, page_size: usize, sim_pages: u32, seed: u64) -> Env {
        Env {
            device,
            page_size,
            mem_dev: MemDevice::new(page_size),
            mem_vfs: MemVfs::new(),
            nand_dev: None,
            sim_pages,
            faults: Faults::new(seed),
            seed,
            opens: 0,
        }
    }

    /// Fresh handles on the same data, under a fresh fault injector (an injector models
    /// the files it has seen, so each open gets its own).
    pub(crate) fn storage(&mut self) -> Result<Storage, Error> {
        self.opens += 1;
        self.faults = Faults::new(self.seed ^ self.opens.rotate_left(32));
        let (dev, vfs): (Box<dyn Device>, Arc<dyn Vfs>) = match &self.device {
            DeviceKind::Memory => (
                Box::new(self.mem_dev.reopen()),
                Arc::new(self.mem_vfs.clone()),
            ),
            DeviceKind::File(dir) => (
                Box::new(FileDevice::open(&dir.join("data"), self.page_size, true)?),
                Arc::new(DirVfs::new(dir.clone())),
            ),
            DeviceKind::SimSsd(ftl) => {
                let cfg = sim_ssd_config(*ftl, self.page_size, self.sim_pages);
                let medium = match &self.nand_dev {
                    Some(m) => m.reopen(),
                    None => MemDevice::new(cfg.nand.page_bytes),
                };
                let backing = Box::new(self.faults.wrap_device(Box::new(medium.reopen())));
                let ssd = if self.nand_dev.is_none() {
                    SimSsd::create(backing, &cfg, self.page_size)?
                } else {
                    SimSsd::open(backing, &cfg, self.page_size)?
                };
                self.nand_dev = Some(medium);
                return Ok(Storage {
                    device: Box::new(ssd),
                    vfs: Arc::new(self.faults.wrap_vfs(Arc::new(self.mem_vfs.clone()))),
                });
            }
        };
        Ok(Storage {
            device: Box::new(self.faults.wrap_device(dev)),
            vfs: Arc::new(self.faults.wrap_vfs(vfs)),
        })
    }
}

/// Keys drawn so that 0, u64::MAX, neighbours and repeats occur.
struct KeyGen {
    bases: Vec<u64>,
}

impl KeyGen {
    fn new(rng: &mut Rng) -> Self {
        let mut bases = vec![0, 1, 2, u64::MAX, u64::MAX - 1, u64::MAX - 2, 1 << 63];
        for _ in 0..24 {
            bases.push(rng.next_u64());
        }
        KeyGen { bases }
    }

    fn key(&self, rng: &mut Rng, model: &BTreeMap<u64, u64>) -> u64 {
        match rng.below(10) {
            0 | 1 => self.bases[rng.below(self.bases.len() as u64) as usize],
            2 => {
                let b = self.bases[rng.below(self.bases.len() as u64) as usize];
                b.wrapping_add(rng.below(5)).wrapping_sub(2)
            }
            3..=5 if !model.is_empty() => {
                // A repeat: near a random present key.
                let probe = rng.next_u64();
                let k = model
                    .range(probe..)
                    .next()
                    .or_else(|| model.iter().next_back())
                    .map(|(&k, _)| k)
                    .unwrap_or(0);
                k.wrapping_add(rng.below(3)).wrapping_sub(1)
            }
            // A dense region so that ranges cover many keys and nodes fill and split.
            _ => 1_000_000 + rng.below(6_000),
        }
    }

    fn bound(&self, rng: &mut Rng, model: &BTreeMap<u64, u64>) -> (Bound<u64>, Bound<u64>) {
        let a = self.key(rng, model);
        let b = if rng.below(2) == 0 {
            a.saturating_add(rng.below(800))
        } else {
            self.key(rng, model)
        };
        let (lo, hi) = if rng.below(8) == 0 {
            (b, a)
        } else {
            (a.min(b), a.max(b))
        };
        let lo = match rng.below(5) {
            0 => Bound::Unbounded,
            1 => Bound::Excluded(lo),
            _ => Bound::Included(lo),
        };
        let hi = match rng.below(5) {
            0 => Bound::Unbounded,
            1 => Bound::Excluded(hi),
            _ => Bound::Included(hi),
        };
        (lo, hi)
    }
}

/// The FD-tree's and LSM-tree's `k` of a history: the drawn one, but where it drew 4 (a
/// third of the histories) none, so that the cost model chooses it for [`tiny_tuning`] and
/// re-chooses it as the tree outgrows that ([`crate::kit::sorted::tune`]) under the
/// history's crashes and faults. No extra draw: every seed's other choices stay.
fn model_k_or(k: u32) -> Option<u32> {
    (k != 4).then_some(k)
}

/// A tuning for 64 entries on the reference device: a history of a few thousand
/// operations outgrows it many times over.
fn tiny_tuning(page_size: usize) -> crate::Tuning {
    crate::Tuning {
        expected_entries: 64,
        ..crate::Tuning::reference(page_size)
    }
}

/// Options varied by seed: small pages and pools make deep trees and constant eviction.
pub(crate) fn options_for(engine: EngineKind, rng: &mut Rng) -> Options {
    let page_size = [512, 512, 1024, 4096][rng.below(4) as usize];
    let frames = [8u64, 16, 64, 1024][rng.below(4) as usize];
    let opts = Options::new(engine)
        .page_size(page_size)
        .buffer_pool_bytes(frames * page_size as u64)
        .checkpoint_wal_bytes([64u64 << 10, 256 << 10, 4 << 20][rng.below(3) as usize]);
    match engine {
        EngineKind::FdTree => fdtree_options(opts, page_size, rng),
        EngineKind::PioBTree => pio_options(opts, page_size, frames, rng),
        EngineKind::IplBTree | EngineKind::DiplBTree => inpage_options(engine, opts, rng),
        EngineKind::Bftl => bftl_options(opts, page_size, rng),
        EngineKind::BulkIndex => bulk_options(opts, page_size, frames, rng),
        EngineKind::LaTree => latree_options(opts, frames, rng),
        EngineKind::Fbx => fbx_options(opts, page_size, frames, rng),
        EngineKind::Lsm => lsm_options(opts, page_size, rng),
        _ => opts,
    }
}

/// [`options_for`]'s draws for an FD-tree.
fn fdtree_options(opts: Options, page_size: usize, rng: &mut Rng) -> Options {
    // A head tree of two pages (its minimum) and small k, so that histories of a few
    // thousand operations build 3+ levels and merge often; multi-page requests of a
    // few pages so that merges and scans cross request boundaries.
    let k = model_k_or(2 + rng.below(3) as u32);
    opts.tuning(tiny_tuning(page_size))
        .fdtree(crate::FdTreeOptions {
            k,
            head_tree_bytes: 2 * page_size as u64,
            deamortize: rng.below(4) != 0,
            io_unit_bytes: [1u64, 3, 128][rng.below(3) as usize] * page_size as u64,
        })
}

/// [`options_for`]'s draws for a PIO B-tree.
fn pio_options(opts: Options, page_size: usize, frames: u64, rng: &mut Rng) -> Options {
    // OPQs of a few entries so that batch updates, and crash points inside them, are
    // frequent; leaves of 1-3 segments; small pio_max so that psync groups are cut.
    // The OPQ comes out of the memory budget: add it, so the pool keeps `frames`.
    let opq_bytes = [2u64, 5, 16, 64][rng.below(4) as usize] * crate::PIO_OPQ_ENTRY_BYTES;
    opts.buffer_pool_bytes(frames * page_size as u64 + opq_bytes)
        .pio(crate::PioOptions {
            leaf_segments: Some(1 + rng.below(3) as u32),
            opq_bytes: Some(opq_bytes),
            pio_max: [1u32, 2, 4, 64][rng.below(4) as usize],
            speriod: [1u32, 3, 50][rng.below(3) as usize],
            bcnt: [1u32, 4, 1000][rng.below(3) as usize],
        })
}

/// [`options_for`]'s draws for an in-page logging tree (IPL or d-IPL).
fn inpage_options(engine: EngineKind, opts: Options, rng: &mut Rng) -> Options {
    // Raw NAND of 1-2 KiB pages and 16-page blocks, nodes of one or two pages: small
    // fanouts, so that histories split nodes and blocks, cleanse and merge often.
    let page = [1024usize, 2048][rng.below(2) as usize];
    let node = page as u64 * (1 + rng.below(2));
    let frames = Some([8u32, 12, 64][rng.below(3) as usize]);
    // The RawNand device's config is the geometry (the harness gives the medium).
    let opts = opts
        .page_size(page)
        .device(crate::DeviceSpec::RawNand(NandConfig {
            page_bytes: page,
            pages_per_block: 16,
            blocks: 256,
            ..NandConfig::default()
        }));
    if engine == EngineKind::IplBTree {
        opts.ipl(crate::IplOptions {
            node_bytes: node,
            buffer_frames: frames,
            log_area_bytes: page as u64 * (1 + rng.below(3)),
            nand_blocks: 256,
            pages_per_block: 16,
        })
    } else {
        opts.dipl(crate::DiplOptions {
            node_bytes: node,
            buffer_frames: frames,
            nand_blocks: 256,
            pages_per_block: 16,
        })
    }
}

/// [`options_for`]'s draws for BFTL.
fn bftl_options(opts: Options, page_size: usize, rng: &mut Rng) -> Options {
    // Nodes of 8-30 entries make deep trees; reservation buffers of 1-64 units commit
    // often; c at its minimum (compaction at almost every commit that touches a node)
    // or a little above, so lists grow, compact and release pages within a history.
    let node_bytes = [160u64, 256, 512][rng.below(3) as usize];
    let cap = crate::engine::bftl::capacity(node_bytes);
    let full = crate::kit::ntt::unit::pages_for(cap + 1, page_size) as u32;
    // The pool only caches immutable unit pages; a node read takes up to c of them
    // per level, so small pools make O_DIRECT histories slow without testing more.
    let frames = [16u64, 1024, 4096][rng.below(3) as usize];
    opts.buffer_pool_bytes(frames * page_size as u64)
        .bftl(crate::BftlOptions {
            node_bytes,
            reservation_units: Some([1u32, 7, 64][rng.below(3) as usize]),
            c: [Some(full + 1), Some(full + 3), None][rng.below(3) as usize],
        })
}

/// [`options_for`]'s draws for the bulk index.
fn bulk_options(opts: Options, page_size: usize, frames: u64, rng: &mut Rng) -> Options {
    // Small M (1, 2, 3, 8, 64) so that splits, neighbour merges and multi-range bulks
    // happen within a history; write batches of 1, 3 or 128 pages so ranges cross
    // batch boundaries; the faithful mode (no differential layer) and small layers
    // that merge often; every §5.6 switch both ways.
    let delta_bytes =
        [0u64, 0, 3, 40][rng.below(4) as usize] * crate::engine::bulk::DELTA_ENTRY_MEMORY;
    opts.buffer_pool_bytes(frames * page_size as u64 + delta_bytes)
        .bulk(crate::BulkOptions {
            m: Some([1u32, 2, 3, 8, 64][rng.below(5) as usize]),
            io_unit_bytes: [1u64, 3, 128][rng.below(3) as usize] * page_size as u64,
            batch_writes: rng.below(4) != 0,
            batch_reads: rng.below(4) != 0,
            batch_ranges: rng.below(4) != 0,
            delta_bytes: Some(delta_bytes),
            append_only: rng.below(4) == 0,
            trim_freed: rng.below(2) == 0,
        })
}

/// [`options_for`]'s draws for the LA-tree.
fn latree_options(opts: Options, frames: u64, rng: &mut Rng) -> Options {
    // Nodes of 30-62 entries and buffers of 1-4 pages of 20-41 messages: histories of
    // 2,000 operations split and merge nodes, cascade through K = 1 or 2 buffered
    // levels, and empty buffers by overflow and (ADAPT on) by lookups.
    let page = [512usize, 512, 1024][rng.below(3) as usize];
    opts.page_size(page)
        .buffer_pool_bytes(frames * page as u64)
        .latree(crate::LaTreeOptions {
            node_bytes: if rng.coin() { 0 } else { page as u64 },
            k: 1 + rng.below(2) as u32,
            max_buffer_pages: [1u64, 2, 4][rng.below(3) as usize],
            adapt: rng.below(4) != 0,
        })
}

/// [`options_for`]'s draws for FBX.
fn fbx_options(opts: Options, page_size: usize, frames: u64, rng: &mut Rng) -> Options {
    // Leaves of 3-24 entries and inner nodes of 2-20 separators build deep trees that
    // split often; log buffers of 1-8 pages with 0-3 cluster bits flush often and keep
    // several leaves per page; every clean policy, small thresholds; the Sequential
    // B-Tree mode and leaf-by-leaf scans now and then; segments of 2-16 pages with a
    // tight space limit so that segments are freed, reused and cleaned in a history.
    let pages = [1u32, 2, 8][rng.below(3) as usize];
    let clean = match rng.below(5) {
        0 => crate::CleanPolicy::Never,
        1 => crate::CleanPolicy::Naive {
            k: 1 + rng.below(4) as u32,
        },
        2 => crate::CleanPolicy::LongerThanNext,
        _ => crate::CleanPolicy::AccumulateClean {
            threshold: [1u32, 4, 64][rng.below(3) as usize],
        },
    };
    // Beside the pool and the log buffer, room for the tables of a history's tree (the
    // NTT and the segment table: with leaves of 3 entries and segments of 2 pages, a
    // history makes a thousand leaves and segments): FBX refuses at open a budget its
    // tables exceed. The pool gets what they leave, so it shrinks as they grow.
    let tables: u64 = if long_mode() { 4 << 20 } else { 256 << 10 };
    opts.buffer_pool_bytes((frames + pages as u64) * page_size as u64 + tables)
        .fbx(crate::FbxOptions {
            leaf_order: Some([3u32, 12, 24][rng.below(3) as usize]),
            inner_order: Some([2u32, 8, 20][rng.below(3) as usize]),
            log_buffer_pages: Some(pages),
            cluster_bits: rng.below(4) as u32,
            cluster_skip_bits: [0u32, 1, 60][rng.below(3) as usize],
            clean,
            leaf_logging: rng.below(6) != 0,
            batched_scans: rng.below(4) != 0,
            segment_pages: [2u32, 5, 16][rng.below(3) as usize],
            space_amp_limit: [1.2f64, 2.0, 4.0][rng.below(3) as usize],
        })
}

/// [`options_for`]'s draws for the LSM-tree.
fn lsm_options(opts: Options, page_size: usize, rng: &mut Rng) -> Options {
    // The same small sizes as the FD-tree: C0 of two pages and small k build several
    // components in a few thousand operations; multi-page requests of a few pages.
    let k = model_k_or(2 + rng.below(3) as u32);
    opts.tuning(tiny_tuning(page_size)).lsm(crate::LsmOptions {
        k,
        c0_bytes: 2 * page_size as u64,
        io_unit_bytes: [1u64, 3, 128][rng.below(3) as usize] * page_size as u64,
        search_before_delete: rng.coin(),
        deamortize: rng.coin(),
    })
}

fn contents(db: &mut Db) -> Result<BTreeMap<u64, u64>, Error> {
    let mut m = BTreeMap::new();
    for kv in db.range(..)? {
        let (k, v) = kv?;
        if m.insert(k, v).is_some() {
            return Err(Error::InvalidArgument(format!(
                "range returned key {k} twice"
            )));
        }
    }
    Ok(m)
}

impl Env {
    /// The fault injector of the current handles.
    pub(crate) fn faults(&self) -> &Faults {
        &self.faults
    }

    /// The simulated SSD's medium and config after a history, for its final check.
    pub(crate) fn check_sim(&self) -> Result<(), Error> {
        if let (DeviceKind::SimSsd(ftl), Some(medium)) = (&self.device, &self.nand_dev) {
            let cfg = sim_ssd_config(*ftl, self.page_size, self.sim_pages);
            SimSsd::open(Box::new(medium.reopen()), &cfg, self.page_size)?.check()?;
        }
        Ok(())
    }
}

/// Run one history; `Err` describes the first divergence.
pub fn run(h: &History) -> Result<Report, String> {
    run_with(h, |o| o)
}

/// [`run`] with the seed's options passed through `adjust` first (e.g. to set an engine's
/// own options while keeping the seed's page size, pool and checkpoint size); the
/// history's operations are the same as [`run`]'s for the seed.
pub fn run_with(h: &History, adjust: impl FnOnce(Options) -> Options) -> Result<Report, String> {
    let mut run = HistoryRun::start(h, adjust)?;
    for step in 0..h.ops {
        if !run.step(step)? {
            break;
        }
    }
    run.finish()
}

/// The error message of a history: what failed, at which step, of which history.
fn history_ctx(h: &History, what: &str, step: usize, e: &dyn std::fmt::Display) -> String {
    format!(
        "{:?} on {:?}, seed {}, step {step}: {what}: {e}",
        h.engine, h.device, h.seed
    )
}

/// Simulated SSD pages for a history's engine and options.
fn sim_pages_for(h: &History, opts: &Options) -> u32 {
    // The B+-tree updates in place: 400 pages hold it and keep the FTL collecting.
    // Out-of-place engines (runs, components) need room for old and new versions.
    // The in-page-logging trees keep a whole NAND medium on the SSD: a header page and
    // 256 blocks of 16 data pages and a spare page (`options_for`). An append-only bulk
    // index never frees a page (a few pages an operation with M = 1): room for the
    // history, which would otherwise fill the device (a correct ENOSPC, not what a
    // history checks). FBX with a leaf order of 3 on 512-byte pages holds about a page
    // per 1.6 live keys, and its file may reach `space_amp_limit` (up to 2) times that plus
    // the segments freed since the last checkpoint (up to half the live pages) before the
    // cleaner or a checkpoint makes room: 2,300 live keys filled 4,016 pages (soak seed
    // 30,000,044), so it gets room in proportion to the history.
    match h.engine {
        EngineKind::BTree => 400,
        EngineKind::IplBTree | EngineKind::DiplBTree => 4400,
        EngineKind::BulkIndex if opts.bulk_options().append_only => {
            4000 + 16 * h.ops.min(1 << 20) as u32
        }
        EngineKind::Fbx => 4000 + 3 * h.ops.min(20_000) as u32,
        _ => 4000,
    }
}

/// A history in progress: its environment, the open index (none between a close or crash
/// and the reopen), the draws, the model and the report.
struct HistoryRun<'h> {
    h: &'h History,
    env: Env,
    db: Option<Db>,
    rng: Rng,
    keys: KeyGen,
    t: Tracked,
    report: Report,
    trace: bool,
}

impl<'h> HistoryRun<'h> {
    /// Draw the options, create the device and the index.
    fn start(h: &'h History, adjust: impl FnOnce(Options) -> Options) -> Result<Self, String> {
        let ctx =
            |what: &str, step: usize, e: &dyn std::fmt::Display| history_ctx(h, what, step, e);
        let mut rng = Rng::new(h.seed);
        let opts = adjust(options_for(h.engine, &mut rng));
        let sim_pages = sim_pages_for(h, &opts);
        let mut env = Env::new(h.device.clone(), opts.page_size, sim_pages, h.seed);
        let keys = KeyGen::new(&mut rng);
        let report = Report::default();
        let storage = env.storage().map_err(|e| ctx("storage", 0, &e))?;
        let env_opts = format!("{opts:?}");
        let db = Some(Db::create_on(storage, opts).map_err(|e| ctx("create", 0, &e))?);
        let t = Tracked::default();
        let trace = std::env::var_os("FLASHIX_TRACE").is_some();
        if trace {
            eprintln!("options: {:?}", env_opts);
        }
        Ok(HistoryRun {
            h,
            env,
            db,
            rng,
            keys,
            t,
            report,
            trace,
        })
    }

    /// One operation of the history, drawn from its roll. False when no index is open (a
    /// fault step left it closed): the history ends.
    fn step(&mut self, step: usize) -> Result<bool, String> {
        let h = self.h;
        let ctx = |what: &str, e: &dyn std::fmt::Display| history_ctx(h, what, step, e);
        let Some(d) = self.db.as_mut() else {
            return Ok(false);
        };
        self.report.ops += 1;
        let roll = self.rng.below(100);
        let op = gen_mutation(roll, &mut self.rng, &self.keys, &self.t.model);
        if self.trace {
            eprintln!("step {step}: roll {roll} {op:?}");
        }
        if let Some(op) = op {
            self.report.batches += matches!(op, Op::Batch(_)) as usize;
            exec(d, &op).map_err(|e| ctx(&format!("{op:?}"), &e))?;
            self.t.applied(op);
            return Ok(true);
        }
        match roll {
            56..=86 => {
                let read = match roll {
                    56..=70 => Read::Get,
                    71..=76 => Read::GetMany,
                    _ => Read::Range,
                };
                checked_read(read, d, &mut self.rng, &self.keys, &self.t.model)
                    .map_err(|(what, e)| ctx(&what, &e))?;
            }
            87..=94 => {
                d.flush().map_err(|e| ctx("flush", &e))?;
                self.t.flushed();
            }
            95..=96 => self.reopen(step)?,
            97..=98 if h.crashes => self.crash(step)?,
            55 | 99 if h.faults => {
                let mut run = FaultRun {
                    env: &mut self.env,
                    db: &mut self.db,
                    rng: &mut self.rng,
                    keys: &self.keys,
                    t: &mut self.t,
                    report: &mut self.report,
                };
                run.fault_step(&ctx)?;
            }
            _ => {
                if let Some(d) = self.db.as_mut() {
                    d.check_integrity()
                        .map_err(|e| ctx("check_integrity", &e))?;
                }
            }
        }
        Ok(true)
    }

    /// Close the index, reopen it and compare it with the model.
    fn reopen(&mut self, step: usize) -> Result<(), String> {
        let h = self.h;
        let ctx = |what: &str, e: &dyn std::fmt::Display| history_ctx(h, what, step, e);
        if let Some(d) = self.db.take() {
            d.close().map_err(|e| ctx("close", &e))?;
        }
        self.t.flushed();
        let s = self.env.storage().map_err(|e| ctx("storage", &e))?;
        let mut d = Db::open_on(s).map_err(|e| ctx("reopen", &e))?;
        verify(&mut d, &self.t.model).map_err(|e| ctx("after reopen", &e))?;
        self.db = Some(d);
        self.report.reopens += 1;
        Ok(())
    }

    /// Power cut a few writes or syncs from now, while mutating and flushing; then open the
    /// crash image and settle the model against it.
    fn crash(&mut self, step: usize) -> Result<(), String> {
        let h = self.h;
        let ctx = |what: &str, e: &dyn std::fmt::Display| history_ctx(h, what, step, e);
        self.env.faults.crash_after(1 + self.rng.below(80));
        self.run_until_crash(step)?;
        self.env.faults.crash_now();
        drop(self.db.take());
        if let Some(e) = self.env.faults.image_error() {
            return Err(ctx("building the crash image", &e));
        }
        let s = self.env.storage().map_err(|e| ctx("storage", &e))?;
        let mut d = Db::open_on(s).map_err(|e| ctx("open after crash", &e))?;
        self.report.lost_after_crash += self
            .t
            .settle(&mut d)
            .map_err(|e| ctx("after the crash", &e))?;
        self.report.crashes += 1;
        self.db = Some(d);
        Ok(())
    }

    /// Mutations and flushes until the armed crash fires, at most 40 of them; an error is
    /// expected only once the crash has fired.
    fn run_until_crash(&mut self, step: usize) -> Result<(), String> {
        let h = self.h;
        let ctx = |what: &str, e: &dyn std::fmt::Display| history_ctx(h, what, step, e);
        let mut in_flight = 0;
        while !self.env.faults.crashed() && in_flight < 40 {
            in_flight += 1;
            let roll = self.rng.below(60);
            let Some(d) = self.db.as_mut() else { break };
            match gen_mutation(roll, &mut self.rng, &self.keys, &self.t.model) {
                Some(op) => {
                    let batch = matches!(op, Op::Batch(_));
                    self.report.batches += batch as usize;
                    let r = exec(d, &op);
                    self.t.applied(op.clone());
                    if let Err(e) = r {
                        if !self.env.faults.crashed() {
                            return Err(ctx(&format!("{op:?} before the crash"), &e));
                        }
                        self.report.crashes_in_batch += batch as usize;
                    }
                }
                None => match d.flush() {
                    Ok(()) => self.t.flushed(),
                    Err(_) if self.env.faults.crashed() => {}
                    Err(e) => return Err(ctx("flush before the crash", &e)),
                },
            }
        }
        Ok(())
    }

    /// The end of a history: verify, close, reopen and verify again; on a simulated SSD,
    /// check the FTL's mapping and the NAND rules on the medium the history left.
    fn finish(mut self) -> Result<Report, String> {
        let h = self.h;
        let ctx = |what: &str, e: &dyn std::fmt::Display| history_ctx(h, what, h.ops, e);
        if let Some(mut d) = self.db.take() {
            verify(&mut d, &self.t.model).map_err(|e| ctx("at the end", &e))?;
            d.close().map_err(|e| ctx("close", &e))?;
        }
        let s = self.env.storage().map_err(|e| ctx("storage", &e))?;
        let mut d = Db::open_on(s).map_err(|e| ctx("final reopen", &e))?;
        verify(&mut d, &self.t.model).map_err(|e| ctx("after the final reopen", &e))?;
        if let (DeviceKind::SimSsd(ftl), Some(medium)) = (&h.device, &self.env.nand_dev) {
            // The FTL's mapping and the NAND rules on the medium the history left.
            d.close().map_err(|e| ctx("final close", &e))?;
            let cfg = sim_ssd_config(*ftl, self.env.page_size, self.env.sim_pages);
            SimSsd::open(Box::new(medium.reopen()), &cfg, self.env.page_size)
                .and_then(|ssd| ssd.check())
                .map_err(|e| ctx("simulated SSD check", &e))?;
        }
        self.report.final_entries = self.t.model.len();
        Ok(self.report)
    }
}

/// What a history knows the index must hold: the model after every operation that
/// returned, the model at the last successful flush (or close), and the mutations since
/// (including one that failed: it may or may not have happened). After a crash or a
/// failed operation the contents must equal `durable` plus some prefix of `since`.
#[derive(Default)]
struct Tracked {
    model: BTreeMap<u64, u64>,
    durable: BTreeMap<u64, u64>,
    since: Vec<Op>,
}

impl Tracked {
    /// `op` was run (it returned, or failed and may have happened).
    fn applied(&mut self, op: Op) {
        apply(&mut self.model, &op);
        self.since.push(op);
    }

    /// A flush or close succeeded: everything so far is durable.
    fn flushed(&mut self) {
        self.durable = self.model.clone();
        self.since.clear();
    }

    /// The prefix rule on the index `d` just reopened (after a crash or a failed
    /// operation): `check_integrity`, then its contents must be `durable` plus a prefix of
    /// `since`. They become the model; returns how many operations of `since` they lack.
    fn settle(&mut self, d: &mut Db) -> Result<usize, String> {
        d.check_integrity()
            .map_err(|e| format!("check_integrity: {e}"))?;
        let got = contents(d).map_err(|e| format!("scan: {e}"))?;
        let mut candidate = self.durable.clone();
        let mut matched = (candidate == got).then_some(0);
        for (i, op) in self.since.iter().enumerate() {
            if matched.is_some() {
                break;
            }
            apply(&mut candidate, op);
            if candidate == got {
                matched = Some(i + 1);
            }
        }
        let Some(kept) = matched else {
            return Err(format!(
                "prefix rule: recovered state is no prefix of the {} operations since the last flush ({})",
                self.since.len(),
                describe_diff(&got, &self.durable)
            ));
        };
        let lost = self.since.len() - kept;
        self.model = got;
        self.flushed();
        Ok(lost)
    }
}

/// A reading operation of a history.
#[derive(Debug, Clone, Copy)]
enum Read {
    Get,
    GetMany,
    Range,
}

/// Outcome of a [`checked_read`] that did not match: the `Db`'s error, or a wrong answer.
enum ReadFailure {
    Db(Error),
    Wrong(String),
}

impl std::fmt::Display for ReadFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadFailure::Db(e) => write!(f, "{e}"),
            ReadFailure::Wrong(s) => f.write_str(s),
        }
    }
}

/// Run `read` on random keys and compare with the model; `Err` names the call and says
/// what went wrong.
fn checked_read(
    read: Read,
    d: &mut Db,
    rng: &mut Rng,
    keys: &KeyGen,
    model: &BTreeMap<u64, u64>,
) -> Result<(), (String, ReadFailure)> {
    match read {
        Read::Get => {
            let k = keys.key(rng, model);
            let what = || format!("get({k})");
            let got = d.get(k).map_err(|e| (what(), ReadFailure::Db(e)))?;
            if got != model.get(&k).copied() {
                let why = format!("{got:?} != model {:?}", model.get(&k));
                return Err((what(), ReadFailure::Wrong(why)));
            }
        }
        Read::GetMany => {
            let n = rng.below(50) as usize;
            let ks: Vec<u64> = (0..n).map(|_| keys.key(rng, model)).collect();
            let what = || "get_many".to_string();
            let got = d.get_many(&ks).map_err(|e| (what(), ReadFailure::Db(e)))?;
            let want: Vec<Option<u64>> = ks.iter().map(|k| model.get(k).copied()).collect();
            if got != want {
                let why = format!("{ks:?}: {got:?} != {want:?}");
                return Err((what(), ReadFailure::Wrong(why)));
            }
        }
        Read::Range => {
            let (lo, hi) = keys.bound(rng, model);
            // A third of the ranges carry a limit hint (Range::limit_hint), derived from the
            // bound (not drawn, so the random stream stays the same): it must change
            // nothing in what the scan returns.
            let hint = match lo {
                Bound::Included(k) | Bound::Excluded(k) if k % 3 == 0 => Some(k % 2_000 + 1),
                _ => None,
            };
            let what = || format!("range({lo:?}, {hi:?}) limit_hint {hint:?}");
            let mut range = d
                .range((lo, hi))
                .map_err(|e| (what(), ReadFailure::Db(e)))?;
            if let Some(n) = hint {
                range = range.limit_hint(n);
            }
            let got: Vec<(u64, u64)> = range
                .collect::<Result<_, _>>()
                .map_err(|e| (what(), ReadFailure::Db(e)))?;
            let want: Vec<(u64, u64)> = if range_is_valid(lo, hi) {
                model.range((lo, hi)).map(|(&k, &v)| (k, v)).collect()
            } else {
                Vec::new()
            };
            if got != want {
                let why = format!("{} entries != model's {}", got.len(), want.len());
                return Err((what(), ReadFailure::Wrong(why)));
            }
        }
    }
    Ok(())
}

/// A mutation for `roll` (0..=54), or `None` for other rolls.
fn gen_mutation(roll: u64, rng: &mut Rng, keys: &KeyGen, model: &BTreeMap<u64, u64>) -> Option<Op> {
    match roll {
        0..=33 => Some(Op::Insert(keys.key(rng, model), rng.next_u64())),
        34..=35 => {
            // A batch of up to 40 operations, keys often repeated within it (an insert
            // then a delete of the same key: order matters), its writes spread over the
            // whole batch so that crash points fall inside it.
            let most = if rng.below(4) == 0 { 40 } else { 6 };
            let n = 1 + rng.below(most) as usize;
            let mut ops: Vec<Op> = Vec::with_capacity(n);
            for _ in 0..n {
                let k = match ops.last() {
                    Some(Op::Insert(k, _)) | Some(Op::Delete(k)) if rng.coin() => *k,
                    _ => keys.key(rng, model),
                };
                ops.push(match rng.below(10) {
                    0..=5 => Op::Insert(k, rng.next_u64()),
                    6..=8 => Op::Delete(k),
                    _ => Op::DeleteRange(
                        Bound::Included(k),
                        Bound::Excluded(k.saturating_add(rng.below(100))),
                    ),
                });
            }
            Some(Op::Batch(ops))
        }
        36..=49 => Some(Op::Delete(keys.key(rng, model))),
        50..=52 => {
            let big = rng.below(4) == 0;
            let n = rng.below(if big { 600 } else { 40 }) as usize;
            Some(Op::Bulk(
                (0..n)
                    .map(|_| (keys.key(rng, model), rng.next_u64()))
                    .collect(),
            ))
        }
        53..=54 => {
            // Mostly narrow ranges, so that trees grow large enough to be deep.
            let (lo, hi) = if rng.below(4) == 0 {
                keys.bound(rng, model)
            } else {
                let a = keys.key(rng, model);
                (
                    Bound::Included(a),
                    Bound::Included(a.saturating_add(rng.below(200))),
                )
            };
            Some(Op::DeleteRange(lo, hi))
        }
        _ => None,
    }
}

fn exec(db: &mut Db, op: &Op) -> Result<(), Error> {
    match op {
        Op::Insert(k, v) => db.insert(*k, *v),
        Op::Delete(k) => db.delete(*k),
        Op::Bulk(p) => db.bulk_insert(p),
        Op::DeleteRange(lo, hi) => db.delete_range((*lo, *hi)),
        Op::Batch(ops) => {
            let mut b = crate::Batch::new();
            for op in ops {
                match op {
                    Op::Insert(k, v) => b.insert(*k, *v),
                    Op::Delete(k) => b.delete(*k),
                    Op::DeleteRange(lo, hi) => b.delete_range((*lo, *hi)),
                    Op::Bulk(_) | Op::Batch(_) => {
                        return Err(Error::InvalidArgument(format!("{op:?} in a batch")))
                    }
                };
            }
            db.apply(&b)
        }
    }
}

/// Contents equal the model and the engine's invariants hold.
fn verify(db: &mut Db, model: &BTreeMap<u64, u64>) -> Result<(), String> {
    db.check_integrity()
        .map_err(|e| format!("check_integrity: {e}"))?;
    let got = contents(db).map_err(|e| format!("scan: {e}"))?;
    if &got != model {
        return Err(describe_diff(&got, model));
    }
    Ok(())
}

fn describe_diff(got: &BTreeMap<u64, u64>, want: &BTreeMap<u64, u64>) -> String {
    let missing: Vec<_> = want
        .iter()
        .filter(|(k, v)| got.get(k) != Some(v))
        .take(5)
        .collect();
    let extra: Vec<_> = got
        .iter()
        .filter(|(k, _)| !want.contains_key(k))
        .take(5)
        .collect();
    format!(
        "contents differ: {} entries vs model's {}; missing or different: {missing:?}; extra: {extra:?}",
        got.len(),
        want.len()
    )
}

/// Flip one bit in every page of a closed index on `dev`/`vfs` in turn (pages of
/// `page_size` bytes), reopen, check integrity and read everything back: each damage must
/// be `Error::Corruption` naming the data file and that page, or — on a free page —
/// harmless, the contents still equal to `model`. Returns how many pages were detected.
/// docs/design.md, contract point 4.
pub fn flip_a_bit_in_every_page(
    dev: &MemDevice,
    vfs: &MemVfs,
    page_size: u64,
    model: &BTreeMap<u64, u64>,
) -> Result<u64, String> {
    let pages = dev.len_bytes() / page_size;
    let mut detected = 0;
    for page in 0..pages {
        let byte = page * page_size + 40 + (page * 13) % (page_size - 112);
        let bit = (page % 8) as u8;
        dev.flip_bit(byte, bit);
        let r = Db::open_on(Storage {
            device: Box::new(dev.reopen()),
            vfs: Arc::new(vfs.clone()),
        })
        .and_then(|db| {
            db.check_integrity()?;
            db.range(..)?.collect::<crate::Result<BTreeMap<u64, u64>>>()
        });
        dev.flip_bit(byte, bit);
        match r {
            Err(Error::Corruption {
                file,
                page: Some(p),
                ..
            }) if file == "data" && p == page => detected += 1,
            Ok(all) if &all == model => {}
            Ok(_) => return Err(format!("page {page}: damage gave a wrong answer")),
            Err(e) => return Err(format!("page {page}: unexpected {e}")),
        }
    }
    Ok(detected)
}

/// `ops` operations on random keys below `keys` (every fifth a delete, the rest inserts of
/// the operation's number), applied to `db` and to the returned model.
pub fn insert_and_delete(
    db: &mut Db,
    seed: u64,
    ops: u64,
    keys: u64,
) -> crate::Result<BTreeMap<u64, u64>> {
    let mut rng = Rng::new(seed);
    let mut model = BTreeMap::new();
    for i in 0..ops {
        let k = rng.below(keys);
        if i % 5 == 4 {
            db.delete(k)?;
            model.remove(&k);
        } else {
            db.insert(k, i)?;
            model.insert(k, i);
        }
    }
    Ok(model)
}
