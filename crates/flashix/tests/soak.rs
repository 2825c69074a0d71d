//! The soak: conformance histories with crash *and* fault steps for
//! every engine on every device, round robin, for a wall-clock budget. Not part of CI
//! (ignored); run it in a release build:
//!
//! ```text
//! FLASHIX_SOAK_SECONDS=3600 cargo test --release -p flashix --test soak -- --ignored --nocapture
//! ```
//!
//! `FLASHIX_SOAK_SECONDS` (default 3600) bounds the run: no history starts after it; each
//! runs `FLASHIX_SOAK_OPS` operations (default 5,000). Seeds start at `FLASHIX_SOAK_SEED`
//! (default 10^7, above every CI and long-mode seed) and go up by one per history, so a
//! run is reproducible and two runs with different starting seeds cover different
//! histories. A failure prints the history (engine, device, seed, operations) that
//! `flashix::testing::run` replays, for a named regression test (`tests/regression_soak.rs`
//! keeps them); a cell (engine and device) that failed is not run again, and the others go
//! on to the end of the budget. The summary prints per
//! engine the histories, operations, crashes and faults (armed / hit).
//! `FLASHIX_SOAK_THREADS` (default 2) histories run at a time.

use flashix::sim::FtlKind;
use flashix::testing::{run, DeviceKind, History, Report};
use flashix::EngineKind;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .map(|v| v.parse().expect("a number"))
        .unwrap_or(default)
}

/// Every (engine, device) the conformance tests cover; `File` stands for a fresh
/// directory under the target directory (O_DIRECT where the file system allows).
fn cells() -> Vec<(EngineKind, Option<FtlKind>, bool)> {
    let mut out = Vec::new();
    for e in EngineKind::ALL {
        out.push((e, None, false));
        out.push((e, None, true));
        if !matches!(e, EngineKind::IplBTree | EngineKind::DiplBTree) {
            for ftl in FtlKind::ALL {
                out.push((e, Some(ftl), false));
            }
        }
    }
    out
}

#[test]
#[ignore = "the soak: long, run by hand (see the module doc)"]
fn soak_every_engine_with_crashes_and_faults() {
    let budget = Duration::from_secs(env_u64("FLASHIX_SOAK_SECONDS", 3600));
    let ops = env_u64("FLASHIX_SOAK_OPS", 5_000) as usize;
    let first_seed = env_u64("FLASHIX_SOAK_SEED", 10_000_000);
    let threads = env_u64("FLASHIX_SOAK_THREADS", 2);
    let cells = cells();
    let next = AtomicU64::new(0);
    let totals: Mutex<BTreeMap<String, (u64, Report)>> = Mutex::new(BTreeMap::new());
    let failures: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let failed: Mutex<std::collections::BTreeSet<usize>> = Mutex::default();
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                while start.elapsed() < budget {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let cell = (i % cells.len() as u64) as usize;
                    if failed.lock().unwrap().contains(&cell) {
                        // One failure per cell is enough to work on; the rest of the hour
                        // goes to the other cells.
                        if failed.lock().unwrap().len() == cells.len() {
                            break;
                        }
                        continue;
                    }
                    let (engine, ftl, file) = cells[cell];
                    let seed = first_seed + i;
                    let dir = file.then(|| {
                        tempfile::Builder::new()
                            .prefix(&format!("soak-{seed}-"))
                            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
                            .expect("tempdir")
                    });
                    let device = match (ftl, &dir) {
                        (Some(ftl), _) => DeviceKind::SimSsd(ftl),
                        (None, Some(d)) => DeviceKind::File(d.path().to_path_buf()),
                        (None, None) => DeviceKind::Memory,
                    };
                    let h = History {
                        engine,
                        device: device.clone(),
                        seed,
                        ops,
                        crashes: true,
                        faults: true,
                    };
                    match run(&h) {
                        Ok(r) => {
                            let key = format!("{engine} on {}", device_name(&device));
                            let mut t = totals.lock().unwrap();
                            let entry = t.entry(key).or_default();
                            entry.0 += 1;
                            entry.1.add(&r);
                        }
                        Err(e) => {
                            eprintln!("soak failure: {h:?}: {e}");
                            failed.lock().unwrap().insert(cell);
                            failures.lock().unwrap().push(format!("{h:?}: {e}"));
                        }
                    }
                }
            });
        }
    });
    let totals = totals.into_inner().unwrap();
    let mut histories = 0;
    for (cell, (n, r)) in &totals {
        histories += n;
        eprintln!(
            "{cell}: {n} histories, {} ops, {} crashes, faults {} armed / {} hit, {} reopens",
            r.ops, r.crashes, r.faults.armed, r.faults.hit, r.reopens
        );
    }
    eprintln!(
        "soak: {histories} histories of {ops} operations in {:.0} s from seed {first_seed}",
        start.elapsed().as_secs_f64()
    );
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "soak failures: {failures:#?}");
}

fn device_name(d: &DeviceKind) -> String {
    match d {
        DeviceKind::Memory => "memory".into(),
        DeviceKind::File(_) => "file".into(),
        DeviceKind::SimSsd(ftl) => format!("ssd-{ftl:?}"),
    }
}
