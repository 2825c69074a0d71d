//! Readers beside a writer on one `Db`, for the engines' unit tests of their shared read
//! path: the even keys are loaded first and never written again, so every read of one must
//! answer exactly as the model; the odd keys are the writer's, so a read of one finds a
//! value written for that key ([`value`]) or nothing; scans ascend and hold exactly the
//! even keys of their range. What the engines' tests differ in — the index, the writer's
//! mix — they pass in.

use crate::Db;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

/// Key `k`'s value at `version`: its key part proves a read saw a value written for `k`.
pub(crate) fn value(k: u64, version: u64) -> u64 {
    k * 1000 + version
}

/// The even keys `0, 2, .. 2 * (keys - 1)` at version 0, bulk inserted into `db`.
pub(crate) fn load_evens(db: &Db, keys: u64) -> BTreeMap<u64, u64> {
    let fixed: BTreeMap<u64, u64> = (0..keys).map(|k| (k * 2, value(k * 2, 0))).collect();
    let pairs: Vec<(u64, u64)> = fixed.iter().map(|(&k, &v)| (k, v)).collect();
    db.bulk_insert(&pairs).unwrap();
    fixed
}

/// A read of `k` that answered `got`: as `fixed` for an even key, a value of `k` or
/// nothing for an odd one.
fn check(fixed: &BTreeMap<u64, u64>, k: u64, got: Option<u64>, what: &str) {
    if k % 2 == 0 {
        assert_eq!(got, fixed.get(&k).copied(), "{what}({k})");
    } else if let Some(v) = got {
        assert_eq!(v / 1000, k, "{what}({k}) = {v}: not a value of {k}");
    }
}

/// Run `writer` on one thread and `readers` reader threads (gets, get_many, and every
/// `scan_every`-th read a scan of `scan_keys` keys whose iterator stays open across the
/// writer's operations) on `db`, whose even keys are `fixed`'s. Each reader reads at least
/// `min_reads` times and stops once the writer is done, so every wait is bounded by the
/// writer's finite work. Returns what the writer returns.
pub(crate) fn beside_a_writer<T: Send>(
    db: &Db,
    fixed: &BTreeMap<u64, u64>,
    (readers, min_reads): (u64, u64),
    (scan_every, scan_keys): (u64, u64),
    writer: impl FnOnce() -> T + Send,
) -> T {
    let span = fixed.keys().next_back().map_or(0, |&k| k + 10);
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let writer = s.spawn(|| {
            let out = writer();
            done.store(true, Ordering::Release);
            out
        });
        for t in 0..readers {
            let done = &done;
            s.spawn(move || {
                let mut rng = crate::util::Rng::new(t + 1);
                let mut reads = 0u64;
                while !done.load(Ordering::Acquire) || reads < min_reads {
                    reads += 1;
                    let k = rng.below(span);
                    check(fixed, k, db.get(k).unwrap(), "get");
                    let keys = [k, k + 1, (k * 7) % span, k / 2 * 2];
                    for (&k, v) in keys.iter().zip(db.get_many(&keys).unwrap()) {
                        check(fixed, k, v, "get_many");
                    }
                    if reads % scan_every == 0 {
                        let (mut last, mut evens) = (None, Vec::new());
                        for kv in db.range(k..k + scan_keys).unwrap() {
                            let (key, v) = kv.unwrap();
                            assert!(last < Some(key), "scan out of order: {key} after {last:?}");
                            assert_eq!(v / 1000, key, "scan gave {key} -> {v}");
                            last = Some(key);
                            if key % 2 == 0 {
                                evens.push((key, v));
                            }
                        }
                        let want: Vec<(u64, u64)> = fixed
                            .range(k..k + scan_keys)
                            .map(|(&k, &v)| (k, v))
                            .collect();
                        assert_eq!(evens, want, "scan from {k}");
                    }
                }
            });
        }
        writer.join().unwrap()
    })
}

/// After the threads: `db` passes its checks and holds exactly `model`, by a full scan,
/// one batched lookup and single lookups of every key up to the model's last.
pub(crate) fn assert_holds(db: &Db, model: &BTreeMap<u64, u64>) {
    db.check_integrity().unwrap();
    let all: BTreeMap<u64, u64> = db.range(..).unwrap().map(|kv| kv.unwrap()).collect();
    assert_eq!(&all, model);
    let keys: Vec<u64> = (0..=model.keys().next_back().map_or(0, |&k| k + 1)).collect();
    let want: Vec<Option<u64>> = keys.iter().map(|k| model.get(k).copied()).collect();
    assert_eq!(db.get_many(&keys).unwrap(), want);
    for &k in &keys {
        assert_eq!(db.get(k).unwrap(), model.get(&k).copied(), "key {k}");
    }
}

/// The writer of the B+-tree-like engines' tests: three rounds over the odd keys below
/// `2 * keys`, each deleting a fifth of them (a different fifth each round) and writing the
/// rest, then a flush. Returns the model of `db` afterwards (`fixed` and the odd keys).
pub(crate) fn odd_rounds(db: &Db, fixed: &BTreeMap<u64, u64>, keys: u64) -> BTreeMap<u64, u64> {
    let mut model = fixed.clone();
    for round in 1..=3u64 {
        for k in (1..keys * 2).step_by(2) {
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
    model
}
