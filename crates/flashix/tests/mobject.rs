//! The moving-object index against a brute-force model of the quantised motions
//! (`flashix::testing::mobject`): seeded histories of update, remove, get, range, kNN, bad
//! input, flush, reopen and crash (crash points inside update batches and partition
//! migrations). The B+-tree (the Bx-tree) on memory, a file and every simulated-SSD FTL;
//! every other engine on memory. `FLASHIX_CONFORMANCE_LONG=1` runs many more.

use flashix::sim::FtlKind;
use flashix::testing::mobject::{run, MoHistory, MoReport};
use flashix::testing::{long_mode, DeviceKind};
use flashix::EngineKind;

fn run_many(
    engine: EngineKind,
    device: impl Fn(u64) -> (DeviceKind, Option<tempfile::TempDir>),
    n: u64,
    ops: usize,
) -> MoReport {
    let mut total = MoReport::default();
    for seed in 0..n {
        let (dev, _guard) = device(seed);
        let h = MoHistory {
            engine,
            device: dev,
            seed,
            ops,
            crashes: true,
        };
        match run(&h) {
            Ok(r) => {
                total.updates += r.updates;
                total.ranges += r.ranges;
                total.knns += r.knns;
                total.hits += r.hits;
                total.reopens += r.reopens;
                total.crashes += r.crashes;
                total.bad_inputs += r.bad_inputs;
                total.migrations += r.migrations;
                total.knn_estimates += r.knn_estimates;
                total.final_objects += r.final_objects;
            }
            Err(e) => panic!("mobject model failure: {e}"),
        }
    }
    eprintln!("{engine:?}: {n} histories, {total:?}");
    assert!(
        total.hits > 0 && total.knns > 0,
        "queries found nothing: {total:?}"
    );
    total
}

fn file_device(seed: u64) -> (DeviceKind, Option<tempfile::TempDir>) {
    let base = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let dir = tempfile::Builder::new()
        .prefix(&format!("mobject-{seed}-"))
        .tempdir_in(base)
        .expect("tempdir");
    (DeviceKind::File(dir.path().to_path_buf()), Some(dir))
}

#[test]
fn bx_tree_on_memory() {
    let (n, ops) = if long_mode() {
        (2_000, 5_000)
    } else {
        (120, 1_500)
    };
    let t = run_many(EngineKind::BTree, |_| (DeviceKind::Memory, None), n, ops);
    assert!(t.crashes > 0, "no crash step ran");
    // The B+-tree keeps no counts: a kNN asks once and starts from the Bx-tree's radius.
    assert!(t.knn_estimates <= t.knns, "{t:?}");
    assert!(
        t.migrations > 0,
        "no partition rolled over onto a stale object: {t:?}"
    );
}

#[test]
fn bx_tree_on_a_file() {
    let (n, ops) = if long_mode() {
        (200, 5_000)
    } else {
        (12, 1_500)
    };
    run_many(EngineKind::BTree, file_device, n, ops);
}

#[test]
fn bx_tree_on_simulated_ssds() {
    let (n, ops) = if long_mode() {
        (200, 5_000)
    } else {
        (4, 1_500)
    };
    for ftl in FtlKind::ALL {
        run_many(
            EngineKind::BTree,
            |_| (DeviceKind::SimSsd(ftl), None),
            n,
            ops,
        );
    }
}

/// The FBX-tree: the same front end over `EngineKind::Fbx`, on every device (a test per
/// device, so that they run beside each other).
fn fbx_tree_histories() -> (u64, usize) {
    if long_mode() {
        (500, 5_000)
    } else {
        (40, 1_500)
    }
}

#[test]
fn fbx_tree_on_memory() {
    let (n, ops) = fbx_tree_histories();
    let t = run_many(EngineKind::Fbx, |_| (DeviceKind::Memory, None), n, ops);
    assert!(t.crashes > 0, "no crash step ran");
    // §4.3: kNN sizes its first radius from the node table's counts (and its answers,
    // checked against the model, stay exact).
    assert!(t.knn_estimates > t.knns / 2, "{t:?}");
}

#[test]
fn fbx_tree_on_a_file() {
    let (n, ops) = fbx_tree_histories();
    run_many(EngineKind::Fbx, file_device, n / 10, ops);
}

#[test]
fn fbx_tree_on_simulated_ssds() {
    let (_, ops) = fbx_tree_histories();
    for ftl in FtlKind::ALL {
        run_many(EngineKind::Fbx, |_| (DeviceKind::SimSsd(ftl), None), 2, ops);
    }
}

/// Every other engine under the same front end, shorter.
#[test]
fn every_engine_on_memory() {
    let (n, ops) = if long_mode() {
        (200, 5_000)
    } else {
        (8, 1_000)
    };
    for e in [
        EngineKind::FdTree,
        EngineKind::Lsm,
        EngineKind::PioBTree,
        EngineKind::Bftl,
        EngineKind::BulkIndex,
        EngineKind::LaTree,
        EngineKind::IplBTree,
        EngineKind::DiplBTree,
    ] {
        run_many(e, |_| (DeviceKind::Memory, None), n, ops);
    }
}
