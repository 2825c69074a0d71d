//! The conformance harness run against every engine on every device (docs/design.md, Testing).
//! `FLASHIX_CONFORMANCE_LONG=1` runs the long mode (many more and longer histories).
//! Adding an engine: one line in `engines!`.
//!
//! Each engine is a module with one test per device (`fbx::file_device_direct_io`), so that
//! the test threads share the work instead of three long tests running one engine after
//! another, and `cargo test --test conformance fbx::` or `-- file_device` picks some.
//! The `*_faults` tests run histories with fault steps (injected EIO and ENOSPC at device
//! and file reads, writes and syncs; `flashix::testing`'s module doc) on the same device,
//! from their own seeds, and print what the faults did.

use flashix::sim::FtlKind;
use flashix::testing::{engine_selected, long_mode, run, DeviceKind, History, Report, FAULT_KINDS};
use flashix::EngineKind;
use std::sync::atomic::{AtomicU64, Ordering};

macro_rules! engines {
    ($($module:ident => $engine:ident: $($device:ident),+;)*) => {
        $(
            mod $module {
                $(
                    #[test]
                    fn $device() {
                        super::$device(super::EngineKind::$engine);
                    }
                )+
            }
        )*
    };
}

engines! {
    btree => BTree: memory_device, file_device_direct_io, simulated_ssd,
        memory_faults, file_faults, simulated_ssd_faults;
    fdtree => FdTree: memory_device, file_device_direct_io, simulated_ssd,
        memory_faults, file_faults, simulated_ssd_faults;
    lsm => Lsm: memory_device, file_device_direct_io, simulated_ssd,
        memory_faults, file_faults, simulated_ssd_faults;
    pio => PioBTree: memory_device, file_device_direct_io, simulated_ssd,
        memory_faults, file_faults, simulated_ssd_faults;
    // IPL and d-IPL manage raw NAND blocks themselves (their device is
    // `DeviceSpec::RawNand`): an FTL under them is not their setting.
    ipl => IplBTree: memory_device, file_device_direct_io, memory_faults, file_faults;
    dipl => DiplBTree: memory_device, file_device_direct_io, memory_faults, file_faults;
    bftl => Bftl: memory_device, file_device_direct_io, simulated_ssd,
        memory_faults, file_faults, simulated_ssd_faults;
    bulk => BulkIndex: memory_device, file_device_direct_io, simulated_ssd,
        memory_faults, file_faults, simulated_ssd_faults;
    latree => LaTree: memory_device, file_device_direct_io, simulated_ssd,
        memory_faults, file_faults, simulated_ssd_faults;
    fbx => Fbx: memory_device, file_device_direct_io, simulated_ssd,
        memory_faults, file_faults, simulated_ssd_faults;
}

/// Run histories `0..histories` of `engine` on `threads` threads, each history on its own
/// `device(seed)`, and check what they did together.
fn run_many(
    engine: EngineKind,
    device: impl Fn(u64) -> (DeviceKind, Option<tempfile::TempDir>) + Sync,
    histories: u64,
    ops: usize,
    threads: u64,
    batch_crashes: bool,
) {
    let total = run_histories(engine, device, 0..histories, ops, threads, false);
    eprintln!(
        "{engine:?}: {histories} histories, {} ops, {} reopens, {} crashes ({} inside a \
         batch, {} operations lost after a crash), {} batches, {} entries at the end",
        total.ops,
        total.reopens,
        total.crashes,
        total.crashes_in_batch,
        total.lost_after_crash,
        total.batches,
        total.final_entries
    );
    assert!(total.batches > 0, "{engine:?}: no atomic batch was applied");
    if histories >= 30 && batch_crashes {
        // Batches are a few percent of the operations: a few hundred histories of crash
        // steps must cut some of them mid-application.
        assert!(
            total.crashes_in_batch > 0,
            "{engine:?}: no crash fell inside a batch ({total:?})"
        );
    }
}

/// Run the histories of `seeds` (with crash steps, and fault steps if `faults`) of
/// `engine` on `threads` threads, each on its own `device(seed)`; their reports added up.
fn run_histories(
    engine: EngineKind,
    device: impl Fn(u64) -> (DeviceKind, Option<tempfile::TempDir>) + Sync,
    seeds: std::ops::Range<u64>,
    ops: usize,
    threads: u64,
    faults: bool,
) -> Report {
    let next_seed = AtomicU64::new(seeds.start);
    let worker = || -> Result<Report, String> {
        let mut total = Report::default();
        loop {
            let seed = next_seed.fetch_add(1, Ordering::Relaxed);
            if seed >= seeds.end {
                return Ok(total);
            }
            let (dev, _guard) = device(seed);
            let h = History {
                engine,
                device: dev,
                seed,
                ops,
                crashes: true,
                faults,
            };
            match run(&h) {
                Ok(r) => total.add(&r),
                Err(e) => {
                    // The other threads stop after their current history.
                    next_seed.store(seeds.end, Ordering::Relaxed);
                    return Err(e);
                }
            }
        }
    };
    let mut total = Report::default();
    let results: Vec<Result<Report, String>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads.min(seeds.end - seeds.start).max(1))
            .map(|_| s.spawn(worker))
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("conformance worker panicked"))
            .collect()
    });
    for r in results {
        match r {
            Ok(r) => total.add(&r),
            Err(e) => panic!("conformance failure: {e}"),
        }
    }
    total
}

fn file_device(seed: u64) -> (DeviceKind, Option<tempfile::TempDir>) {
    // Under the target directory: /tmp may be tmpfs, which refuses O_DIRECT.
    let base = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let dir = tempfile::Builder::new()
        .prefix(&format!("conf-{seed}-"))
        .tempdir_in(base)
        .expect("tempdir");
    (DeviceKind::File(dir.path().to_path_buf()), Some(dir))
}

fn memory_device(e: EngineKind) {
    if !engine_selected(e) {
        return;
    }
    let (n, ops) = if long_mode() {
        (20_000, 20_000)
    } else {
        (200, 2_000)
    };
    run_many(e, |_| (DeviceKind::Memory, None), n, ops, 1, true);
}

/// Histories on a file wait on the disk (O_DIRECT writes, an fdatasync at each sync) far
/// more than they compute: several at a time keep the disk busy.
const FILE_THREADS: u64 = 4;

fn file_device_direct_io(e: EngineKind) {
    if !engine_selected(e) {
        return;
    }
    let (n, ops) = if long_mode() {
        (2_000, 20_000)
    } else {
        (30, 2_000)
    };
    // Fewer histories for the slow ones on a real file, in the default run (memory and
    // simulated SSDs cover them more): raw NAND makes every program durable at once
    // (an fdatasync each), and a BFTL node read is up to c O_DIRECT page reads, an FBX
    // leaf read its log list.
    let n = match e {
        _ if long_mode() => n,
        EngineKind::IplBTree | EngineKind::DiplBTree | EngineKind::Fbx => n / 6,
        EngineKind::Bftl => n / 3,
        _ => n,
    };
    // On a file the FD-tree's and the LSM-tree's merges run on the merge thread, their
    // device I/O served whenever the thread asks: whether a power cut falls inside a batch
    // (rather than in a merge's I/O beside it) is then up to the thread's pace, so it is
    // not required of them here (it is on memory and simulated SSDs, where they step).
    let on_thread = matches!(e, EngineKind::FdTree | EngineKind::Lsm);
    run_many(e, file_device, n, ops, FILE_THREADS, !on_thread);
}

/// Every engine that runs on a page device, on a simulated SSD with each FTL, crash steps
/// included (a crash tears a NAND operation of the SSD's medium). The B+-tree gets the most
/// histories: it runs on a small SSD where garbage collection and merges are constant.
fn simulated_ssd(e: EngineKind) {
    if !engine_selected(e) {
        return;
    }
    let (n, ops): (u64, usize) = if long_mode() {
        (400, 20_000)
    } else {
        (6, 1_500)
    };
    let n = if e == EngineKind::BTree {
        n
    } else {
        n.div_ceil(3)
    };
    for ftl in FtlKind::ALL {
        run_many(e, |_| (DeviceKind::SimSsd(ftl), None), n, ops, 1, true);
    }
}

/// Seeds of the fault histories: apart from the others', so that a failing seed names
/// its kind of history.
const FAULT_SEEDS: u64 = 1 << 32;

/// `histories` histories of `ops` operations with fault steps on `device` (named `label`),
/// on `threads` threads; prints what the faults did and checks that they were met.
fn run_faults(
    e: EngineKind,
    label: &str,
    device: impl Fn(u64) -> (DeviceKind, Option<tempfile::TempDir>) + Sync,
    histories: u64,
    ops: usize,
    threads: u64,
) {
    let seeds = FAULT_SEEDS..FAULT_SEEDS + histories;
    let t = run_histories(e, device, seeds, ops, threads, true);
    let kinds: Vec<String> = t
        .faults_by_kind
        .iter()
        .map(|(k, c)| format!("{k} {}/{}", c.hit, c.armed))
        .collect();
    eprintln!(
        "{e:?} faults on {label}: {histories} histories, {} ops, {} crashes; faults armed {}, \
         hit {} (at close {}, at open {}), absorbed {}, armed but not hit {}; hit/armed by \
         kind: {}; extra open faults hit/armed {}/{}; power cut after {} faults; operations \
         lost after a fault {}",
        t.ops,
        t.crashes,
        t.faults.armed,
        t.faults.hit,
        t.faults_at_close,
        t.faults_at_open,
        t.faults_absorbed,
        t.faults_not_hit,
        kinds.join(", "),
        t.open_faults.hit,
        t.open_faults.armed,
        t.crashes_after_fault,
        t.lost_after_fault,
    );
    assert!(
        t.faults.hit > 0,
        "{e:?} on {label}: no fault was hit ({t:?})"
    );
    if long_mode() {
        // Hundreds of histories meet a failure of every kind.
        for kind in FAULT_KINDS {
            let hit = t
                .faults_by_kind
                .get(&format!("{kind:?}"))
                .map_or(0, |c| c.hit);
            assert!(
                hit > 0,
                "{e:?} on {label}: no {kind:?} fault was hit ({t:?})"
            );
        }
    }
}

fn memory_faults(e: EngineKind) {
    if !engine_selected(e) {
        return;
    }
    let (n, ops) = if long_mode() {
        (2_000, 5_000)
    } else {
        (6, 600)
    };
    run_faults(e, "memory", |_| (DeviceKind::Memory, None), n, ops, 1);
}

fn file_faults(e: EngineKind) {
    if !engine_selected(e) {
        return;
    }
    // One history for the engines slowest on a file (`file_device_direct_io`).
    let (n, ops) = match e {
        _ if long_mode() => (400, 5_000),
        EngineKind::IplBTree | EngineKind::DiplBTree | EngineKind::Fbx | EngineKind::BulkIndex => {
            (1, 600)
        }
        _ => (2, 600),
    };
    run_faults(e, "file", file_device, n, ops, FILE_THREADS);
}

fn simulated_ssd_faults(e: EngineKind) {
    if !engine_selected(e) {
        return;
    }
    let (n, ops) = if long_mode() { (100, 5_000) } else { (1, 600) };
    for ftl in FtlKind::ALL {
        run_faults(
            e,
            &format!("{ftl:?} SSD"),
            |_| (DeviceKind::SimSsd(ftl), None),
            n,
            ops,
            1,
        );
    }
}
