//! B+-tree behaviour beyond the model check: structure under growth and shrinkage, the bulk
//! load's fill factor, the I/O a search and a range scan cost, and node orders below a
//! page's capacity (`BTreeOptions::{leaf_order, inner_order}`).

use flashix::io::{MemDevice, MemVfs};
use flashix::testing::{self, run_with, DeviceKind, History, Rng};
use flashix::{BTreeOptions, Db, EngineKind, Error, Options, Storage};
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
    let (db, _, _) = mem_db(512, 8);
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
    let (db, _, _) = mem_db(4096, 64);
    let pairs: Vec<(u64, u64)> = (0..10_000u64).map(|k| (k * 3, k)).collect();
    db.bulk_insert(&pairs).unwrap();
    db.check_integrity().unwrap();
    // 253 entries per 4 KiB leaf, 0.7 of it is 177: 56 full leaves and 88 left over.
    assert_eq!(counter(&db, "leaves"), 57);
    assert_eq!(counter(&db, "height"), 2);
    assert_eq!(db.get(2997).unwrap(), Some(999));
    assert_eq!(db.get(2998).unwrap(), None);
}

#[test]
fn a_cold_search_reads_one_page_per_level_and_a_scan_walks_the_leaf_chain() {
    let (db, dev, vfs) = mem_db(512, 16);
    let pairs: Vec<(u64, u64)> = (0..30_000u64).map(|k| (k, k)).collect();
    db.bulk_insert(&pairs).unwrap();
    let height = counter(&db, "height");
    let leaves = counter(&db, "leaves");
    assert!(height >= 3);
    db.close().unwrap();

    let db = reopen(&dev, &vfs);
    let before = db.stats().device;
    assert_eq!(db.get(12_345).unwrap(), Some(12_345));
    let after = db.stats().device;
    assert_eq!(after.reads - before.reads, height, "one page per level");
    assert_eq!(after.read_requests - before.read_requests, height);
    db.close().unwrap();

    let db = reopen(&dev, &vfs);
    let before = db.stats().device;
    assert_eq!(db.range(..).unwrap().count(), 30_000);
    let after = db.stats().device;
    // Inner nodes on the way to the first leaf, then every leaf once along the links.
    assert_eq!(after.reads - before.reads, (height - 1) + leaves);
}

#[test]
fn updates_overwrite_in_place_without_growing() {
    let (db, _, _) = mem_db(512, 8);
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
    let (db, _, _) = mem_db(512, 8);
    db.insert(0, 1).unwrap();
    db.insert(u64::MAX, 2).unwrap();
    db.bulk_insert(&[(5, 3), (7, 4)]).unwrap();
    let all: Vec<_> = db.range(..).unwrap().map(|kv| kv.unwrap()).collect();
    assert_eq!(all, vec![(0, 1), (5, 3), (7, 4), (u64::MAX, 2)]);
    assert_eq!(counter(&db, "entries"), 4);
    db.check_integrity().unwrap();
}

fn with_orders(page_size: usize, frames: u64, leaf: u32, inner: u32) -> Options {
    Options::new(EngineKind::BTree)
        .page_size(page_size)
        .buffer_pool_bytes(frames * page_size as u64)
        .btree(BTreeOptions::orders(leaf, inner))
}

/// The conformance harness (random histories against a `BTreeMap`, with reopen and crash
/// steps) with tiny node orders, on the seed's page sizes, pools and checkpoint sizes:
/// a few thousand operations split, borrow and merge at several levels.
#[test]
fn conformance_with_tiny_orders() {
    // Equal and unequal minimums (order / 2) of the two kinds.
    const ORDERS: [(u32, u32); 5] = [(4, 5), (5, 4), (4, 8), (9, 4), (6, 6)];
    let mut crashes = 0;
    for seed in 0..60 {
        let h = History {
            engine: EngineKind::BTree,
            device: DeviceKind::Memory,
            seed,
            ops: 2_000,
            crashes: true,
            faults: false,
        };
        let (leaf, inner) = ORDERS[seed as usize % ORDERS.len()];
        match run_with(&h, |o| o.btree(BTreeOptions::orders(leaf, inner))) {
            Ok(r) => crashes += r.crashes,
            Err(e) => panic!("orders ({leaf}, {inner}): {e}"),
        }
    }
    assert!(crashes > 0, "no crash step ran");
}

/// Tiny orders make a tall tree of random inserts, and deleting everything again takes it
/// back to one leaf through merges and redistributions at every level.
#[test]
fn tiny_orders_grow_tall_and_shrink_back() {
    let (db, _, _) = testing::mem_db(with_orders(512, 16, 4, 5)).unwrap();
    let mut rng = Rng::new(3);
    let mut keys: Vec<u64> = (0..5_000).map(|_| rng.next_u64()).collect();
    for (i, &k) in keys.iter().enumerate() {
        db.insert(k, !k).unwrap();
        if i % 1_000 == 0 {
            db.check_integrity().unwrap();
        }
    }
    db.check_integrity().unwrap();
    // Leaves of 2..=4 entries under internal nodes of 3..=6 children.
    let leaves = counter(&db, "leaves");
    assert!((5_000 / 4..=5_000 / 2).contains(&leaves), "{leaves} leaves");
    // At least 1,250 leaves under internal nodes of at most 6 children: 4+ internal levels.
    assert!(
        counter(&db, "height") >= 5,
        "height {}",
        counter(&db, "height")
    );
    assert!(counter(&db, "internal_splits") > 0);
    for i in (1..keys.len()).rev() {
        keys.swap(i, rng.below(i as u64 + 1) as usize);
    }
    for (i, &k) in keys.iter().enumerate() {
        db.delete(k).unwrap();
        if i % 1_000 == 0 {
            db.check_integrity().unwrap();
        }
    }
    db.check_integrity().unwrap();
    assert!(counter(&db, "merges") > 0 && counter(&db, "redistributions") > 0);
    assert_eq!(counter(&db, "height"), 1);
    assert_eq!(counter(&db, "entries"), 0);
}

/// With a leaf order of 100 and an inner order of 200 in 4 KiB pages (which hold 253), no
/// node grows past its order: `check_integrity` checks every node against it, and the tree
/// has the leaves and levels of those orders, not of the page's. 100,000 keys make level-1
/// nodes that would pass 200 separators if the inner order were not kept.
#[test]
fn orders_cap_every_node_below_the_page() {
    let (db, _, _) = testing::mem_db(with_orders(4096, 64, 100, 200)).unwrap();
    let mut rng = Rng::new(20);
    for i in 0..100_000 {
        let k = rng.next_u64();
        db.insert(k, k).unwrap();
        if i % 20_000 == 0 {
            db.check_integrity().unwrap();
        }
    }
    db.check_integrity().unwrap();
    let entries = counter(&db, "entries");
    assert_eq!(entries, 100_000);
    let leaves = db.stats().shape.leaves.unwrap();
    // At most 100 entries a leaf, at least 50.
    assert!(
        (entries / 100..=entries / 50).contains(&leaves),
        "{leaves} leaves"
    );
    // Root, level 1 (at most 201 children a node), leaves.
    assert_eq!(counter(&db, "height"), 3);

    // The bulk load fills to 0.7 of each order: leaves of 70 entries (the last 60) and
    // internal nodes of 140 separators; 143 leaves fit under one root of 142.
    let (db, _, _) = testing::mem_db(with_orders(4096, 64, 100, 200)).unwrap();
    let pairs: Vec<(u64, u64)> = (0..10_000u64).map(|k| (k * 3, k)).collect();
    db.bulk_insert(&pairs).unwrap();
    db.check_integrity().unwrap();
    assert_eq!(counter(&db, "leaves"), 143);
    assert_eq!(counter(&db, "height"), 2);
    assert_eq!(db.get(2997).unwrap(), Some(999));
}

fn invalid(o: Options) -> String {
    match testing::mem_db(o) {
        Err(Error::InvalidOptions(msg)) => msg,
        other => panic!("expected InvalidOptions, got {:?}", other.err()),
    }
}

#[test]
fn orders_below_the_minimum_or_above_a_page_are_invalid_options() {
    for bad in [0, 1, 3] {
        let msg = invalid(with_orders(4096, 64, bad, 100));
        assert!(
            msg.contains(&format!("leaf_order {bad}")) && msg.contains("minimum order 4"),
            "{msg}"
        );
        let msg = invalid(with_orders(4096, 64, 100, bad));
        assert!(msg.contains(&format!("inner_order {bad}")), "{msg}");
    }
    // 4 KiB pages hold 253 entries: the FBX-tree paper's inner order 500 needs 8 KiB.
    let msg = invalid(with_orders(4096, 64, 100, 500));
    assert!(
        msg.contains("inner_order 500")
            && msg.contains("253 entries a 4096-byte page holds")
            && msg.contains("8192 bytes"),
        "{msg}"
    );
    let msg = invalid(with_orders(512, 64, 31, 4));
    assert!(
        msg.contains("leaf_order 31") && msg.contains("29 entries"),
        "{msg}"
    );
    // The bounds themselves are valid, and so are the paper's orders in 8 KiB pages.
    for (page, leaf, inner) in [(512, 4, 29), (4096, 253, 4), (8192, 100, 500)] {
        let (db, _, _) = testing::mem_db(with_orders(page, 64, leaf, inner)).unwrap();
        db.insert(1, 2).unwrap();
        db.check_integrity().unwrap();
    }
}

/// The orders are part of the options record: a reopened tree keeps them (a tree that lost
/// them would find its nodes of a few entries below half a page and fail its check).
#[test]
fn reopen_keeps_the_orders() {
    let (db, dev, vfs) = testing::mem_db(with_orders(512, 16, 4, 5)).unwrap();
    for k in 0..1_000u64 {
        db.insert(k * 4, k).unwrap();
    }
    db.close().unwrap();
    let db = testing::reopen_mem(&dev, &vfs).unwrap();
    db.check_integrity().unwrap();
    // Three keys into every gap: 4,000 entries in leaves of at most 4 (with the page's
    // order of 30 the 500-odd leaves would take them all without a split).
    for k in 0..1_000u64 {
        for d in 1..4 {
            db.insert(k * 4 + d, k).unwrap();
        }
    }
    db.check_integrity().unwrap();
    let leaves = counter(&db, "leaves");
    assert!(leaves >= 4_000 / 4, "{leaves} leaves");
    db.close().unwrap();
    let db = testing::reopen_mem(&dev, &vfs).unwrap();
    db.check_integrity().unwrap();
    assert_eq!(db.range(..).unwrap().count(), 4_000);
}

/// The same on a file device, where `Db::open` reads the options from the manifest alone.
#[test]
fn reopen_from_a_directory_keeps_the_orders() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idx");
    let o = with_orders(512, 16, 4, 5).device(flashix::DeviceSpec::File { direct_io: false });
    let db = Db::create(&path, o).unwrap();
    for k in 0..500u64 {
        db.insert(k, k).unwrap();
    }
    db.close().unwrap();
    let db = Db::open(&path).unwrap();
    db.check_integrity().unwrap();
    for k in 500..1_000u64 {
        db.insert(k, k).unwrap();
    }
    db.check_integrity().unwrap();
    assert!(counter(&db, "leaves") >= 1_000 / 4);
    db.close().unwrap();
}

/// A damaged leaf chain that loops back (the last leaf's link forged to point at the
/// first leaf, the page re-sealed) makes a full scan fail with corruption instead of
/// scanning for ever.
#[test]
fn a_leaf_chain_that_loops_back_is_corruption_not_an_endless_scan() {
    use flashix::io::Device;
    let (db, dev, vfs) = mem_db(512, 64);
    for k in 0..2000u64 {
        db.insert(k, k).unwrap();
    }
    db.close().unwrap();
    let mut d = dev.reopen();
    let pages = dev.len_bytes() / 512;
    let (mut first, mut last) = (None, None);
    let mut buf = vec![0u8; 512];
    for pid in 0..pages {
        d.read(pid, &mut buf).unwrap();
        let kind = u16::from_le_bytes([buf[12], buf[13]]);
        let count = u32::from_le_bytes(buf[16..20].try_into().unwrap());
        let link = u64::from_le_bytes(buf[24..32].try_into().unwrap());
        // B-link leaves (kind 5): the link at 24 and again as the right link at 32, the
        // entries from 48.
        if kind != 5 || count == 0 {
            continue;
        }
        let key0 = u64::from_le_bytes(buf[48..56].try_into().unwrap());
        if key0 == 0 {
            first = Some(pid);
        }
        if link == u64::MAX {
            last = Some(pid);
        }
    }
    let (first, last) = (first.unwrap(), last.unwrap());
    d.read(last, &mut buf).unwrap();
    buf[24..32].copy_from_slice(&first.to_le_bytes());
    buf[32..40].copy_from_slice(&first.to_le_bytes());
    let crc = crc32c::crc32c(&buf[4..]);
    buf[0..4].copy_from_slice(&crc.to_le_bytes());
    d.write(last, &buf).unwrap();
    drop(d);
    let db = reopen(&dev, &vfs);
    let got: Result<Vec<(u64, u64)>, Error> = db.range(..).unwrap().collect();
    match got {
        Err(Error::Corruption { page: Some(p), .. }) => assert_eq!(p, first),
        other => panic!(
            "expected corruption at page {first}, got {:?}",
            other.map(|v| v.len())
        ),
    }
}
