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
];

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
            }
            Err(e) => panic!("conformance failure: {e}"),
        }
    }
    eprintln!("{engine:?}: {histories} histories, {total:?}");
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
    for &e in ENGINES {
        run_many(e, |_| (DeviceKind::Memory, None), n, ops, true);
    }
}

#[test]
fn file_device_direct_io() {
    let (n, ops) = if long() { (2_000, 20_000) } else { (30, 2_000) };
    for &e in ENGINES {
        // A BFTL node read is up to c page reads, each a real O_DIRECT read here: fewer
        // histories keep the test short (memory and simulated SSDs cover it more).
        let n = if e == EngineKind::Bftl { n / 3 } else { n };
        run_many(e, file_device, n, ops, true);
    }
}

/// Every engine on a simulated SSD with each FTL, crash steps included (a crash tears a
/// NAND operation of the SSD's medium). The B+-tree gets the most histories: it runs on a
/// small SSD where garbage collection and merges are constant.
#[test]
fn simulated_ssd() {
    let (n, ops): (u64, usize) = if long() { (400, 20_000) } else { (6, 1_500) };
    for ftl in FtlKind::ALL {
        for &e in ENGINES {
            let n = if e == EngineKind::BTree {
                n
            } else {
                n.div_ceil(3)
            };
            run_many(e, |_| (DeviceKind::SimSsd(ftl), None), n, ops, true);
        }
    }
}
