//! The conformance harness run against every engine on every device (DESIGN.md, Testing).
//! `FLASHIX_CONFORMANCE_LONG=1` runs the long mode (many more and longer histories).
//! Adding an engine: one line in `engines!`.
//!
//! Each engine is a module with one test per device (`fbx::file_device_direct_io`), so that
//! the test threads share the work instead of three long tests running one engine after
//! another, and `cargo test --test conformance fbx::` or `-- file_device` picks some.

use flashix::sim::FtlKind;
use flashix::testing::{run, DeviceKind, History, Report};
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
    btree => BTree: memory_device, file_device_direct_io, simulated_ssd;
    fdtree => FdTree: memory_device, file_device_direct_io, simulated_ssd;
    lsm => Lsm: memory_device, file_device_direct_io, simulated_ssd;
    pio => PioBTree: memory_device, file_device_direct_io, simulated_ssd;
    // IPL and d-IPL manage raw NAND blocks themselves (their device is
    // `DeviceSpec::RawNand`): an FTL under them is not their setting.
    ipl => IplBTree: memory_device, file_device_direct_io;
    dipl => DiplBTree: memory_device, file_device_direct_io;
    bftl => Bftl: memory_device, file_device_direct_io, simulated_ssd;
    bulk => BulkIndex: memory_device, file_device_direct_io, simulated_ssd;
    latree => LaTree: memory_device, file_device_direct_io, simulated_ssd;
    fbx => Fbx: memory_device, file_device_direct_io, simulated_ssd;
}

/// Whether to run `engine`: `FLASHIX_CONFORMANCE_ENGINES=bulk,latree` picks some (while
/// developing an engine), else all.
fn selected(engine: EngineKind) -> bool {
    match std::env::var("FLASHIX_CONFORMANCE_ENGINES") {
        Ok(list) => list
            .split(',')
            .map(|n| {
                n.trim()
                    .parse()
                    .expect("FLASHIX_CONFORMANCE_ENGINES: engine names")
            })
            .collect::<Vec<EngineKind>>()
            .contains(&engine),
        Err(_) => true,
    }
}

fn long() -> bool {
    std::env::var_os("FLASHIX_CONFORMANCE_LONG").is_some()
}

/// Run histories `0..histories` of `engine` on `threads` threads, each history on its own
/// `device(seed)`, and check what they did together.
fn run_many(
    engine: EngineKind,
    device: impl Fn(u64) -> (DeviceKind, Option<tempfile::TempDir>) + Sync,
    histories: u64,
    ops: usize,
    threads: u64,
) {
    let next_seed = AtomicU64::new(0);
    let worker = || -> Result<Report, String> {
        let mut total = Report::default();
        loop {
            let seed = next_seed.fetch_add(1, Ordering::Relaxed);
            if seed >= histories {
                return Ok(total);
            }
            let (dev, _guard) = device(seed);
            let h = History {
                engine,
                device: dev,
                seed,
                ops,
                crashes: true,
            };
            match run(&h) {
                Ok(r) => add(&mut total, &r),
                Err(e) => {
                    // The other threads stop after their current history.
                    next_seed.store(histories, Ordering::Relaxed);
                    return Err(e);
                }
            }
        }
    };
    let mut total = Report::default();
    let results: Vec<Result<Report, String>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads.min(histories).max(1))
            .map(|_| s.spawn(worker))
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("conformance worker panicked"))
            .collect()
    });
    for r in results {
        match r {
            Ok(r) => add(&mut total, &r),
            Err(e) => panic!("conformance failure: {e}"),
        }
    }
    eprintln!("{engine:?}: {histories} histories, {total:?}");
    assert!(total.batches > 0, "{engine:?}: no atomic batch was applied");
    if histories >= 30 {
        // Batches are a few percent of the operations: a few hundred histories of crash
        // steps must cut some of them mid-application.
        assert!(
            total.crashes_in_batch > 0,
            "{engine:?}: no crash fell inside a batch ({total:?})"
        );
    }
}

fn add(total: &mut Report, r: &Report) {
    total.ops += r.ops;
    total.reopens += r.reopens;
    total.crashes += r.crashes;
    total.lost_after_crash += r.lost_after_crash;
    total.final_entries += r.final_entries;
    total.batches += r.batches;
    total.crashes_in_batch += r.crashes_in_batch;
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
    if !selected(e) {
        return;
    }
    let (n, ops) = if long() {
        (20_000, 20_000)
    } else {
        (200, 2_000)
    };
    run_many(e, |_| (DeviceKind::Memory, None), n, ops, 1);
}

/// Histories on a file wait on the disk (O_DIRECT writes, an fdatasync at each sync) far
/// more than they compute: several at a time keep the disk busy.
const FILE_THREADS: u64 = 4;

fn file_device_direct_io(e: EngineKind) {
    if !selected(e) {
        return;
    }
    let (n, ops) = if long() { (2_000, 20_000) } else { (30, 2_000) };
    // Fewer histories for the slow ones on a real file, in the default run (memory and
    // simulated SSDs cover them more): raw NAND makes every program durable at once
    // (an fdatasync each), and a BFTL node read is up to c O_DIRECT page reads, an FBX
    // leaf read its log list.
    let n = match e {
        _ if long() => n,
        EngineKind::IplBTree | EngineKind::DiplBTree | EngineKind::Fbx => n / 6,
        EngineKind::Bftl => n / 3,
        _ => n,
    };
    run_many(e, file_device, n, ops, FILE_THREADS);
}

/// Every engine that runs on a page device, on a simulated SSD with each FTL, crash steps
/// included (a crash tears a NAND operation of the SSD's medium). The B+-tree gets the most
/// histories: it runs on a small SSD where garbage collection and merges are constant.
fn simulated_ssd(e: EngineKind) {
    if !selected(e) {
        return;
    }
    let (n, ops): (u64, usize) = if long() { (400, 20_000) } else { (6, 1_500) };
    let n = if e == EngineKind::BTree {
        n
    } else {
        n.div_ceil(3)
    };
    for ftl in FtlKind::ALL {
        run_many(e, |_| (DeviceKind::SimSsd(ftl), None), n, ops, 1);
    }
}
