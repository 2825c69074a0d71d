//! The moving-object index against a brute-force model of the quantised motions
//! (`flashix::testing::mobject`): seeded histories of update, remove, get, range, kNN, bad
//! input, flush, reopen and crash (crash points inside update batches and partition
//! migrations). The B+-tree (the Bx-tree) on memory, a file and every simulated-SSD FTL;
//! every other engine on memory. `FLASHIX_CONFORMANCE_LONG=1` runs many more.

use flashix::mobject::{MobjectOptions, Motion, Rect};
use flashix::sim::FtlKind;
use flashix::testing::mobject::{model_knn, model_range, run, MoHistory, MoReport};
use flashix::testing::{long_mode, DeviceKind};
use flashix::EngineKind;
use std::collections::BTreeMap;

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
                total.blind_updates += r.blind_updates;
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
    assert!(total.blind_updates > 0, "no update_from ran: {total:?}");
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

/// The index of the blind-update tests: `n` objects at tick 0 in a 1000 x 1000 space, each
/// updated once, with the motions the model keeps (quantised, as the index returns them).
fn loaded(
    engine: EngineKind,
    n: u64,
    seed: u64,
) -> (
    flashix::mobject::MovingIndex,
    MobjectOptions,
    BTreeMap<u64, Motion>,
) {
    let opts = MobjectOptions::new(flashix::Options::new(engine).page_size(1024))
        .space(Rect {
            x0: 0.0,
            y0: 0.0,
            x1: 1000.0,
            y1: 1000.0,
        })
        .max_speed(3.0)
        .max_update_interval(120)
        .phases(2);
    let storage = flashix::Storage {
        device: Box::new(flashix::io::MemDevice::new(1024)),
        vfs: std::sync::Arc::new(flashix::io::MemVfs::new()),
    };
    let ix = flashix::mobject::MovingIndex::create_on(storage, opts.clone()).expect("create");
    let mut rng = flashix::testing::Rng::new(seed);
    let mut model = BTreeMap::new();
    for id in 0..n {
        let m = opts.quantize(Motion {
            x: rng.below(1000) as f64,
            y: rng.below(1000) as f64,
            vx: rng.below(7) as f64 - 3.0,
            vy: rng.below(7) as f64 - 3.0,
            t: 0,
        });
        ix.update(id, m).expect("update");
        model.insert(id, m);
    }
    (ix, opts, model)
}

/// A blind update with a wrong `old` leaves the object's real entry orphaned: the other
/// objects' answers stay exact (kNN: but for the one place the object may take),
/// `check_integrity` reports the orphan, and the orphan is dropped when its partition code
/// is reused.
#[test]
fn a_wrong_old_motion_leaves_the_other_objects_exact_and_is_reported() {
    for engine in [EngineKind::BTree, EngineKind::Fbx] {
        let (ix, opts, mut model) = loaded(engine, 400, 5);
        let x = 17;
        let real = model[&x];
        let wrong = Motion {
            x: (real.x + 500.0) % 1000.0,
            ..real
        };
        let new = opts.quantize(Motion {
            x: 10.0,
            y: 10.0,
            vx: 0.0,
            vy: 0.0,
            t: 1,
        });
        ix.update_from(x, wrong, new).expect("update_from");
        model.insert(x, new);
        let err = ix.check_integrity().expect_err("the orphan is reported");
        assert!(err.to_string().contains("orphaned"), "{engine:?}: {err}");
        assert_eq!(ix.get(x).unwrap(), Some(new), "{engine:?}");
        let others: BTreeMap<u64, Motion> = model
            .iter()
            .filter(|(&id, _)| id != x)
            .map(|(&k, &v)| (k, v))
            .collect();
        let mut rng = flashix::testing::Rng::new(9);
        for _ in 0..200 {
            let (cx, cy) = (rng.below(1000) as f64, rng.below(1000) as f64);
            let half = [5.0, 50.0, 300.0][rng.below(3) as usize];
            let r = Rect {
                x0: cx - half,
                y0: cy - half,
                x1: cx + half,
                y1: cy + half,
            };
            let t = 1 + rng.below(100);
            let got = ix.range(&r, t).unwrap();
            assert!(got.iter().filter(|h| h.id == x).count() <= 1, "{engine:?}");
            let got: Vec<_> = got.into_iter().filter(|h| h.id != x).collect();
            assert_eq!(got, model_range(&others, &r, t), "{engine:?} range {r:?}");
            let k = [1usize, 5, 20][rng.below(3) as usize];
            let got = ix.knn(cx, cy, k, t).unwrap();
            assert_eq!(got.len(), k, "{engine:?}");
            assert!(got.iter().filter(|n| n.id == x).count() <= 1, "{engine:?}");
            let got: Vec<_> = got.into_iter().filter(|n| n.id != x).collect();
            let want = model_knn(&others, cx, cy, k, t);
            assert!(got.len() + 1 >= k, "{engine:?}");
            assert_eq!(
                got[..],
                want[..got.len()],
                "{engine:?} knn ({cx}, {cy}) k {k}"
            );
        }
        // Time moves past every partition's label: the others' blind updates (right `old`)
        // reuse the orphan's code, whose migration drops it.
        for t in [70, 140, 210] {
            for id in 0..400 {
                if id == x {
                    continue;
                }
                let m = Motion { t, ..model[&id] };
                let m = opts.quantize(Motion {
                    x: m.x.clamp(0.0, 1000.0),
                    ..m
                });
                ix.update_from(id, model[&id], m).expect("update_from");
                model.insert(id, m);
            }
        }
        let c = ix.stats().counters;
        assert_eq!(c.orphans_dropped, 1, "{engine:?}: {c:?}");
        ix.check_integrity().expect("no orphan left");
        for (&id, m) in &model {
            assert_eq!(ix.get(id).unwrap(), Some(*m), "{engine:?} object {id}");
        }
        let all = Rect {
            x0: -1e4,
            y0: -1e4,
            x1: 1e4,
            y1: 1e4,
        };
        assert_eq!(ix.range(&all, 210).unwrap(), model_range(&model, &all, 210));
    }
}

/// FBX §3: with the old motion known, an update is log appends only. It reads no leaf and
/// nothing from the device unless it reorganises a leaf that may be full (the FBX-tree's
/// split rule, module doc of the engine), where `update` rebuilds the directory's leaf each
/// time.
#[test]
fn an_fbx_update_from_reads_no_page() {
    let (ix, opts, mut model) = loaded(EngineKind::Fbx, 2000, 3);
    let probe = |ix: &flashix::mobject::MovingIndex| {
        let s = ix.stats().index;
        let c = |name: &str| s.engine_counters[name];
        (c("reorganizations"), c("leaf_rebuilds"), s.device.reads)
    };
    let moved = |m: Motion, t: u64| {
        opts.quantize(Motion {
            x: (m.x + 1.0).min(1000.0),
            t,
            ..m
        })
    };
    let mut plain = 0;
    for id in 0..200 {
        let (reorgs, rebuilds, reads) = probe(&ix);
        let m = moved(model[&id], 1);
        ix.update_from(id, model[&id], m).unwrap();
        model.insert(id, m);
        let (reorgs2, rebuilds2, reads2) = probe(&ix);
        if reorgs2 == reorgs {
            assert_eq!(
                (rebuilds2, reads2),
                (rebuilds, reads),
                "blind update of {id} read a leaf or the device without reorganising"
            );
            plain += 1;
        }
    }
    assert!(
        plain >= 100,
        "{plain} of 200 blind updates reorganised nothing"
    );
    let (reorgs, rebuilds, _) = probe(&ix);
    for id in 200..220 {
        ix.update(id, moved(model[&id], 1)).unwrap();
    }
    let (reorgs2, rebuilds2, _) = probe(&ix);
    assert!(
        rebuilds2 - rebuilds >= 20 + (reorgs2 - reorgs),
        "the reading update rebuilds the directory's leaf every time"
    );
    assert_eq!(ix.stats().counters.blind_updates, 200);
}
