//! The conformance harness run against every engine on every device (DESIGN.md, Testing).
//! `FLASHIX_CONFORMANCE_LONG=1` runs the long mode (many more and longer histories).
//! Adding an engine: one line in `ENGINES`.

use flashix::sim::FtlKind;
use flashix::testing::{run, DeviceKind, History};
use flashix::EngineKind;

const ENGINES: &[EngineKind] = &[
    EngineKind::BTree,
    EngineKind::FdTree,
    EngineKind::Lsm,
    EngineKind::PioBTree,
    EngineKind::IplBTree,
    EngineKind::DiplBTree,
    EngineKind::Bftl,
    EngineKind::BulkIndex,
    EngineKind::LaTree,
    EngineKind::Fbx,
];

/// The engines to run: `FLASHIX_CONFORMANCE_ENGINES=bulk,latree` picks some (while
/// developing an engine), else all of `ENGINES`.
fn engines() -> Vec<EngineKind> {
    match std::env::var("FLASHIX_CONFORMANCE_ENGINES") {
        Ok(list) => list
            .split(',')
            .map(|n| {
                n.trim()
                    .parse()
                    .expect("FLASHIX_CONFORMANCE_ENGINES: engine names")
            })
            .collect(),
        Err(_) => ENGINES.to_vec(),
    }
}

fn long() -> bool {
    std::env::var_os("FLASHIX_CONFORMANCE_LONG").is_some()
}

fn run_many(
    engine: EngineKind,
    device: impl Fn(u64) -> (DeviceKind, Option<tempfile::TempDir>),
    histories: u64,
    ops: usize,
    crashes: bool,
) {
    let mut total = flashix::testing::Report::default();
    for seed in 0..histories {
        let (dev, _guard) = device(seed);
        let h = History {
            engine,
            device: dev,
            seed,
            ops,
            crashes,
        };
        match run(&h) {
            Ok(r) => {
                total.ops += r.ops;
                total.reopens += r.reopens;
                total.crashes += r.crashes;
                total.lost_after_crash += r.lost_after_crash;
                total.final_entries += r.final_entries;
                total.batches += r.batches;
                total.crashes_in_batch += r.crashes_in_batch;
            }
            Err(e) => panic!("conformance failure: {e}"),
        }
    }
    eprintln!("{engine:?}: {histories} histories, {total:?}");
    assert!(total.batches > 0, "{engine:?}: no atomic batch was applied");
    if crashes && histories >= 30 {
        // Batches are a few percent of the operations: a few hundred histories of crash
        // steps must cut some of them mid-application.
        assert!(
            total.crashes_in_batch > 0,
            "{engine:?}: no crash fell inside a batch ({total:?})"
        );
    }
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

#[test]
fn memory_device() {
    let (n, ops) = if long() {
        (20_000, 20_000)
    } else {
        (200, 2_000)
    };
    for e in engines() {
        run_many(e, |_| (DeviceKind::Memory, None), n, ops, true);
    }
}

#[test]
fn file_device_direct_io() {
    let (n, ops) = if long() { (2_000, 20_000) } else { (30, 2_000) };
    for e in engines() {
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
        run_many(e, file_device, n, ops, true);
    }
}

/// Every engine that runs on a page device, on a simulated SSD with each FTL, crash steps included (a crash tears a
/// NAND operation of the SSD's medium). The B+-tree gets the most histories: it runs on a
/// small SSD where garbage collection and merges are constant.
#[test]
fn simulated_ssd() {
    let (n, ops): (u64, usize) = if long() { (400, 20_000) } else { (6, 1_500) };
    for ftl in FtlKind::ALL {
        // IPL and d-IPL manage raw NAND blocks themselves (their device is
        // `DeviceSpec::RawNand`): an FTL under them is not their setting.
        let on_ftl = engines()
            .into_iter()
            .filter(|e| !matches!(e, EngineKind::IplBTree | EngineKind::DiplBTree));
        for e in on_ftl {
            let n = if e == EngineKind::BTree {
                n
            } else {
                n.div_ceil(3)
            };
            run_many(e, |_| (DeviceKind::SimSsd(ftl), None), n, ops, true);
        }
    }
}
