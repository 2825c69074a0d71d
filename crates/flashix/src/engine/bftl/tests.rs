//! The shared read path beside a writer: readers on several threads (`get`, `get_many`,
//! range scans) while one thread inserts, overwrites and deletes through the `Db`, checked
//! against a `BTreeMap` model.

use crate::io::{MemDevice, MemVfs};
use crate::{BftlOptions, Db, EngineKind, Options, Storage};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

const KEYS: u64 = 1500;

/// Key `k`'s value at `version`: a read proves it saw a value written for `k`.
fn value(k: u64, version: u64) -> u64 {
    k * 1000 + version
}

/// Small nodes and a small reservation buffer, so that the writer's operations commit,
/// compact, split and remove nodes while the readers search.
fn db() -> Db {
    let storage = Storage {
        device: Box::new(MemDevice::new(512)),
        vfs: std::sync::Arc::new(MemVfs::new()),
    };
    let opts = Options::new(EngineKind::Bftl)
        .page_size(512)
        .buffer_pool_bytes(16 * 512)
        .bftl(BftlOptions {
            node_bytes: 512,
            reservation_units: Some(8),
            c: None,
        });
    Db::create_on(storage, opts).unwrap()
}

/// Even keys are loaded once and never written again: every read must find them exactly
/// as the model holds them. Odd keys are the writer's: a read finds a value written for
/// the key, or nothing. Every thread runs a fixed number of operations, so none waits for
/// another beyond the engine's lock.
#[test]
fn shared_reads_beside_a_writer_answer_as_the_model() {
    let db = db();
    let mut model: BTreeMap<u64, u64> = (0..KEYS).map(|k| (k * 2, value(k * 2, 0))).collect();
    let load: Vec<(u64, u64)> = model.iter().map(|(&k, &v)| (k, v)).collect();
    db.bulk_insert(&load).unwrap();
    let fixed = model.clone();
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let writer = s.spawn(|| {
            let mut model = fixed.clone();
            for round in 1..=3u64 {
                for k in (1..KEYS * 2).step_by(2) {
                    if (k / 2 + round) % 5 == 0 {
                        db.delete(k).unwrap();
                        model.remove(&k);
                    } else {
                        db.insert(k, value(k, round)).unwrap();
                        model.insert(k, value(k, round));
                    }
                }
                db.flush().unwrap();
            }
            done.store(true, Ordering::Release);
            model
        });
        for t in 0..4u64 {
            let (db, fixed, done) = (&db, &fixed, &done);
            s.spawn(move || {
                let mut rng = crate::util::Rng::new(t + 1);
                for i in 0..3000u64 {
                    let k = rng.below(KEYS * 2 + 10);
                    match i % 10 {
                        0 => {
                            let hi = k + 60;
                            let got: Vec<(u64, u64)> =
                                db.range(k..hi).unwrap().map(|kv| kv.unwrap()).collect();
                            assert!(got.windows(2).all(|w| w[0].0 < w[1].0), "{got:?}");
                            assert!(got.iter().all(|&(k, v)| v / 1000 == k), "{got:?}");
                            let evens: Vec<(u64, u64)> =
                                got.iter().copied().filter(|e| e.0 % 2 == 0).collect();
                            let want: Vec<(u64, u64)> =
                                fixed.range(k..hi).map(|(&k, &v)| (k, v)).collect();
                            assert_eq!(evens, want, "scan of {k}..{hi}");
                        }
                        1 => {
                            let keys: Vec<u64> =
                                (0..16).map(|j| (k + j * 37) % (KEYS * 2)).collect();
                            let got = db.get_many(&keys).unwrap();
                            for (&k, v) in keys.iter().zip(got) {
                                check(fixed, k, v);
                            }
                        }
                        _ => check(fixed, k, db.get(k).unwrap()),
                    }
                    if done.load(Ordering::Acquire) && i >= 1000 {
                        break;
                    }
                }
            });
        }
        model = writer.join().unwrap();
    });
    db.check_integrity().unwrap();
    let got: BTreeMap<u64, u64> = db.range(..).unwrap().map(|kv| kv.unwrap()).collect();
    assert_eq!(got, model);
    for (&k, &v) in model.iter().step_by(13) {
        assert_eq!(db.get(k).unwrap(), Some(v));
    }
    let s = db.stats();
    assert!(s.engine_counters["node_splits"] > 0 && s.engine_counters["compactions"] > 0);
}

fn check(fixed: &BTreeMap<u64, u64>, k: u64, got: Option<u64>) {
    if k % 2 == 0 {
        assert_eq!(got, fixed.get(&k).copied(), "get {k}");
    } else if let Some(v) = got {
        assert_eq!(v / 1000, k, "get {k}: {v}");
    }
}
