//! `Db::range_many`: many key ranges in one call, against a `BTreeMap` model on every
//! engine, its bad input, and the reads the FD-tree and the LSM share between neighbouring
//! ranges (the curve intervals of a moving-object query).

use flashix::testing::{mem_db, reopen_mem, Rng};
use flashix::{EngineKind, Error, Options};
use std::collections::BTreeMap;

fn options(kind: EngineKind) -> Options {
    match kind {
        // 2 KiB pages of raw NAND and 8 KiB nodes (tests/bad_input.rs).
        EngineKind::IplBTree | EngineKind::DiplBTree => Options::new(kind),
        // Room for the node table of this many leaves of 512-byte pages: FBX refuses at
        // open a budget its tables exceed.
        EngineKind::Fbx => Options::new(kind)
            .page_size(512)
            .buffer_pool_bytes(128 << 10),
        _ => Options::new(kind)
            .page_size(512)
            .buffer_pool_bytes(32 * 512),
    }
}

/// The model's answer: every entry in any of the ranges, ascending, once.
fn model_many(m: &BTreeMap<u64, u64>, ranges: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out: BTreeMap<u64, u64> = BTreeMap::new();
    for &(lo, hi) in ranges {
        out.extend(m.range(lo..=hi).map(|(k, v)| (*k, *v)));
    }
    out.into_iter().collect()
}

#[test]
fn range_many_equals_the_model_on_every_engine() {
    for kind in EngineKind::ALL {
        let (mut db, dev, vfs) = mem_db(options(kind)).unwrap();
        let mut model = BTreeMap::new();
        let mut rng = Rng::new(11);
        for i in 0..6_000u64 {
            let k = rng.below(50_000);
            if rng.below(5) == 0 {
                db.delete(k).unwrap();
                model.remove(&k);
            } else {
                db.insert(k, i).unwrap();
                model.insert(k, i);
            }
        }
        for round in 0..60 {
            if round == 30 {
                db.close().unwrap();
                db = reopen_mem(&dev, &vfs).unwrap();
            }
            // Writes between the queries: merges (and the FD-tree's frozen head) at
            // every stage.
            for i in 0..150u64 {
                let k = rng.below(50_000);
                if rng.below(4) == 0 {
                    db.delete(k).unwrap();
                    model.remove(&k);
                } else {
                    db.insert(k, i).unwrap();
                    model.insert(k, i);
                }
            }
            // Unsorted, overlapping, adjacent, single keys, and ranges over nothing.
            let n = 1 + rng.below(60) as usize;
            let ranges: Vec<(u64, u64)> = (0..n)
                .map(|_| {
                    let lo = rng.below(52_000);
                    let span = if rng.below(4) == 0 { 2_000 } else { 40 };
                    (lo, lo + rng.below(span))
                })
                .collect();
            assert_eq!(
                db.range_many(&ranges).unwrap(),
                model_many(&model, &ranges),
                "{kind:?} round {round}"
            );
        }
        assert_eq!(db.range_many(&[]).unwrap(), vec![]);
        assert_eq!(
            db.range_many(&[(0, u64::MAX)]).unwrap(),
            model.iter().map(|(k, v)| (*k, *v)).collect::<Vec<_>>(),
            "{kind:?}"
        );
        db.close().unwrap();
    }
}

#[test]
fn an_inverted_range_is_invalid_and_names_itself() {
    let (db, _, _) = mem_db(options(EngineKind::BTree)).unwrap();
    match db.range_many(&[(1, 2), (9, 3)]) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("(9, 3)"), "{m}"),
        other => panic!("{other:?}"),
    }
}

/// Many short neighbouring ranges, as a moving-object query's curve intervals: read one by
/// one with `range`, a page of the lowest level that several fall in is read once per
/// range; with `range_many`, once.
#[test]
fn neighbouring_ranges_share_the_pages_they_fall_in() {
    for kind in [EngineKind::FdTree, EngineKind::Lsm] {
        let (db, dev, vfs) = mem_db(options(kind)).unwrap();
        let pairs: Vec<(u64, u64)> = (0..20_000u64).map(|k| (k * 10, k)).collect();
        db.bulk_insert(&pairs).unwrap();
        let mut rng = Rng::new(3);
        for _ in 0..3_000 {
            let k = rng.below(200_000);
            db.insert(k, k).unwrap();
        }
        db.close().unwrap();
        // Ranges of 3 keys every 40 keys: about 30 entries of 16 bytes per 512-byte page,
        // so several ranges per page.
        let ranges: Vec<(u64, u64)> = (0..200u64)
            .map(|i| (50_000 + i * 40, 50_002 + i * 40))
            .collect();
        let db = reopen_mem(&dev, &vfs).unwrap();
        let before = db.stats().device.reads;
        let mut one_by_one = Vec::new();
        for &(lo, hi) in &ranges {
            one_by_one.extend(db.range(lo..=hi).unwrap().map(|r| r.unwrap()));
        }
        let single = db.stats().device.reads - before;
        db.close().unwrap();
        let db = reopen_mem(&dev, &vfs).unwrap();
        let before = db.stats().device.reads;
        let many = db.range_many(&ranges).unwrap();
        let shared = db.stats().device.reads - before;
        assert_eq!(many, one_by_one, "{kind:?}");
        assert!(!many.is_empty());
        assert!(
            shared * 3 < single,
            "{kind:?}: range_many read {shared} pages, range by range {single}"
        );
    }
}
