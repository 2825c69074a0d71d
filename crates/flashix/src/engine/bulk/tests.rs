//! The shared path (module doc, Thread safety): searches, batched lookups and scans beside
//! each other and beside a writer whose sweeps rewrite and free ranges answer as the model
//! does.

use super::{BulkOptions, DELTA_ENTRY_MEMORY};
use crate::{Db, DeviceSpec, EngineKind, Options};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

const PS: usize = 512;

/// A value written to `k` (its key part proves a read saw a value of `k`).
fn value(k: u64, version: u64) -> u64 {
    k * 1000 + version
}

/// Six readers (gets, get_many, scans whose iterators stay open across the writer's
/// operations) beside a writer that upserts and deletes the odd keys between the even
/// ones, which a bulk load wrote and nothing changes, through a small differential layer
/// (a sweep every few writes) and bulk inserts. Ranges of `m..2m-1` tuples (30 a page):
/// through the 16-page pool, or past it when larger than half of it.
fn readers_beside_a_writer(m: u32, device: DeviceSpec) {
    const KEYS: u64 = 3000;
    let dir = tempfile::tempdir().unwrap();
    let b = BulkOptions {
        m: Some(m),
        io_unit_bytes: 16 * PS as u64,
        delta_bytes: Some(24 * DELTA_ENTRY_MEMORY),
        ..BulkOptions::default()
    };
    let opts = Options::new(EngineKind::BulkIndex)
        .page_size(PS)
        .buffer_pool_bytes(16 * PS as u64 + b.delta_bytes.unwrap_or(0))
        .device(device)
        .bulk(b);
    let db = Db::create(dir.path().join("ix"), opts).unwrap();
    let stable: BTreeMap<u64, u64> = (0..KEYS).map(|k| (k * 2, value(k * 2, 0))).collect();
    let pairs: Vec<(u64, u64)> = stable.iter().map(|(&k, &v)| (k, v)).collect();
    db.bulk_insert(&pairs).unwrap();
    let done = AtomicBool::new(false);
    let mut model = stable.clone();
    std::thread::scope(|s| {
        let writer = s.spawn(|| {
            let mut model = BTreeMap::new();
            for round in 1..=3u64 {
                for k in (1..KEYS * 2).step_by(10) {
                    db.insert(k, value(k, round)).unwrap();
                    model.insert(k, value(k, round));
                }
                for k in (1..KEYS * 2).step_by(22) {
                    db.delete(k).unwrap();
                    model.remove(&k);
                }
                let bulk: Vec<(u64, u64)> = (0..KEYS * 2)
                    .skip(round as usize * 2 + 1)
                    .step_by(34)
                    .map(|k| (k, value(k, round)))
                    .collect();
                db.bulk_insert(&bulk).unwrap();
                model.extend(bulk);
                db.flush().unwrap();
            }
            done.store(true, Ordering::Release);
            model
        });
        for t in 0..6u64 {
            let (db, done, stable) = (&db, &done, &stable);
            s.spawn(move || {
                let mut i = t + 1;
                let mut reads = 0u64;
                // Bounded: the writer's work is finite; at least a few hundred reads each.
                while !done.load(Ordering::Acquire) || reads < 300 {
                    reads += 1;
                    i = i
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let k = (i >> 33) % (KEYS * 2);
                    let got = db.get(k).unwrap();
                    if k % 2 == 0 {
                        assert_eq!(got, stable.get(&k).copied(), "get({k})");
                    } else if let Some(v) = got {
                        assert_eq!(v / 1000, k, "get({k}) = {v}: not a value of {k}");
                    }
                    let keys = [k, k + 1, (k * 7) % (KEYS * 2), k / 2 * 2];
                    for (&k, v) in keys.iter().zip(db.get_many(&keys).unwrap()) {
                        if k % 2 == 0 {
                            assert_eq!(v, stable.get(&k).copied(), "get_many({k})");
                        } else {
                            assert!(v.map_or(true, |v| v / 1000 == k), "get_many({k}) = {v:?}");
                        }
                    }
                    if reads % 8 == 0 {
                        let mut last = None;
                        let mut evens = Vec::new();
                        for kv in db.range(k..k + 300).unwrap() {
                            let (key, v) = kv.unwrap();
                            assert!(last < Some(key), "scan out of order: {key} after {last:?}");
                            assert_eq!(v / 1000, key, "scan gave {key} -> {v}");
                            last = Some(key);
                            if key % 2 == 0 {
                                evens.push((key, v));
                            }
                        }
                        let want: Vec<(u64, u64)> =
                            stable.range(k..k + 300).map(|(&k, &v)| (k, v)).collect();
                        assert_eq!(evens, want, "scan from {k}");
                    }
                }
            });
        }
        model.extend(writer.join().unwrap());
    });
    let keys: Vec<u64> = (0..KEYS * 2).collect();
    let want: Vec<Option<u64>> = keys.iter().map(|k| model.get(k).copied()).collect();
    assert_eq!(db.get_many(&keys).unwrap(), want);
    for &k in &keys {
        assert_eq!(db.get(k).unwrap(), model.get(&k).copied(), "key {k}");
    }
    let all: Vec<(u64, u64)> = db.range(..).unwrap().map(|kv| kv.unwrap()).collect();
    assert_eq!(all, model.into_iter().collect::<Vec<_>>());
    assert!(db.stats().engine_counters["point_reads"] > 0);
    db.check_integrity().unwrap();
    db.close().unwrap();
}

#[test]
fn shared_reads_of_pooled_ranges_beside_a_writer() {
    readers_beside_a_writer(40, DeviceSpec::Memory);
}

#[test]
fn shared_reads_of_ranges_past_the_pool_beside_a_writer() {
    readers_beside_a_writer(300, DeviceSpec::Memory);
}

#[test]
fn shared_reads_beside_a_writer_on_a_file() {
    readers_beside_a_writer(40, DeviceSpec::File { direct_io: false });
}
