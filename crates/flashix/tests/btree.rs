//! B+-tree behaviour beyond the model check: structure under growth and shrinkage, the bulk
//! load's fill factor, and the I/O a search and a range scan cost.

use flashix::io::{MemDevice, MemVfs};
use flashix::testing::Rng;
use flashix::{Db, EngineKind, Options, Storage};
use std::sync::Arc;

fn mem_db(page_size: usize, frames: u64) -> (Db, MemDevice, MemVfs) {
    let dev = MemDevice::new(page_size);
    let vfs = MemVfs::new();
    let s = Storage {
        device: Box::new(dev.reopen()),
        vfs: Arc::new(vfs.clone()),
    };
    let opts = Options::new(EngineKind::BTree)
        .page_size(page_size)
        .buffer_pool_bytes(frames * page_size as u64);
    (Db::create_on(s, opts).unwrap(), dev, vfs)
}

fn reopen(dev: &MemDevice, vfs: &MemVfs) -> Db {
    Db::open_on(Storage {
        device: Box::new(dev.reopen()),
        vfs: Arc::new(vfs.clone()),
    })
    .unwrap()
}

fn counter(db: &Db, name: &str) -> u64 {
    db.stats().engine_counters[name]
}

#[test]
fn grows_deep_and_shrinks_back_with_splits_merges_and_redistributions() {
    let (mut db, _, _) = mem_db(512, 8);
    let mut rng = Rng::new(7);
    let mut keys: Vec<u64> = (0..20_000).map(|_| rng.next_u64()).collect();
    for (i, &k) in keys.iter().enumerate() {
        db.insert(k, !k).unwrap();
        if i % 4_000 == 0 {
            db.check_integrity().unwrap();
        }
    }
    db.check_integrity().unwrap();
    assert!(
        counter(&db, "height") >= 4,
        "20k entries in 512-byte pages must be at least 4 levels"
    );
    assert!(counter(&db, "internal_splits") > 0 && counter(&db, "root_splits") >= 3);
    // Delete in another order.
    for i in (1..keys.len()).rev() {
        keys.swap(i, rng.below(i as u64 + 1) as usize);
    }
    for (i, &k) in keys.iter().enumerate() {
        db.delete(k).unwrap();
        if i % 4_000 == 0 {
            db.check_integrity().unwrap();
            assert_eq!(db.get(k).unwrap(), None);
        }
    }
    db.check_integrity().unwrap();
    assert!(counter(&db, "merges") > 0 && counter(&db, "redistributions") > 0);
    assert_eq!(counter(&db, "height"), 1);
    assert_eq!(counter(&db, "entries"), 0);
    assert_eq!(db.range(..).unwrap().count(), 0);
}

#[test]
fn bulk_load_fills_leaves_to_seventy_percent() {
    let (mut db, _, _) = mem_db(4096, 64);
    let pairs: Vec<(u64, u64)> = (0..10_000u64).map(|k| (k * 3, k)).collect();
    db.bulk_insert(&pairs).unwrap();
    db.check_integrity().unwrap();
    // 254 entries per 4 KiB leaf, 0.7 of it is 177: 56 full leaves and 88 left over.
    assert_eq!(counter(&db, "leaves"), 57);
    assert_eq!(counter(&db, "height"), 2);
    assert_eq!(db.get(2997).unwrap(), Some(999));
    assert_eq!(db.get(2998).unwrap(), None);
}

#[test]
fn a_cold_search_reads_one_page_per_level_and_a_scan_walks_the_leaf_chain() {
    let (mut db, dev, vfs) = mem_db(512, 16);
    let pairs: Vec<(u64, u64)> = (0..30_000u64).map(|k| (k, k)).collect();
    db.bulk_insert(&pairs).unwrap();
    let height = counter(&db, "height");
    let leaves = counter(&db, "leaves");
    assert!(height >= 3);
    db.close().unwrap();

    let mut db = reopen(&dev, &vfs);
    let before = db.stats().device;
    assert_eq!(db.get(12_345).unwrap(), Some(12_345));
    let after = db.stats().device;
    assert_eq!(after.reads - before.reads, height, "one page per level");
    assert_eq!(after.read_requests - before.read_requests, height);
    db.close().unwrap();

    let mut db = reopen(&dev, &vfs);
    let before = db.stats().device;
    assert_eq!(db.range(..).unwrap().count(), 30_000);
    let after = db.stats().device;
    // Inner nodes on the way to the first leaf, then every leaf once along the links.
    assert_eq!(after.reads - before.reads, (height - 1) + leaves);
}

#[test]
fn updates_overwrite_in_place_without_growing() {
    let (mut db, _, _) = mem_db(512, 8);
    for k in 0..1000u64 {
        db.insert(k, 1).unwrap();
    }
    let leaves = counter(&db, "leaves");
    for k in 0..1000u64 {
        db.insert(k, 2).unwrap();
    }
    assert_eq!(counter(&db, "leaves"), leaves);
    assert_eq!(counter(&db, "entries"), 1000);
    assert!(db.range(..).unwrap().all(|kv| kv.unwrap().1 == 2));
}

/// Regression (conformance seed 0, step 14): inserts that did not split a leaf were not
/// counted, so a later `bulk_insert` took the tree for empty and bulk-loaded over it.
#[test]
fn regression_bulk_insert_after_plain_inserts_keeps_them() {
    let (mut db, _, _) = mem_db(512, 8);
    db.insert(0, 1).unwrap();
    db.insert(u64::MAX, 2).unwrap();
    db.bulk_insert(&[(5, 3), (7, 4)]).unwrap();
    let all: Vec<_> = db.range(..).unwrap().map(|kv| kv.unwrap()).collect();
    assert_eq!(all, vec![(0, 1), (5, 3), (7, 4), (u64::MAX, 2)]);
    assert_eq!(counter(&db, "entries"), 4);
    db.check_integrity().unwrap();
}
