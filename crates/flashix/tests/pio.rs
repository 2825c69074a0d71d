//! PIO B-tree behaviour beyond the conformance harness: a model check under many batch
//! updates, MPSearch's one psync batch per level, OPQ lookup semantics, leaf-segment
//! shrink, and exactly-once recovery of a crash inside a batch update.

use flashix::io::{Device, Faults, MemDevice, MemVfs, Vfs};
use flashix::testing::{run, DeviceKind, History, Rng};
use flashix::{Db, EngineKind, Options, PioOptions, Storage, PIO_OPQ_ENTRY_BYTES};
use std::collections::BTreeMap;
use std::sync::Arc;

fn storage(dev: &MemDevice, vfs: &MemVfs) -> Storage {
    Storage {
        device: Box::new(dev.reopen()),
        vfs: Arc::new(vfs.clone()),
    }
}

fn faulty(faults: &Faults, dev: &MemDevice, vfs: &MemVfs) -> Storage {
    let d: Box<dyn Device> = Box::new(dev.reopen());
    let v: Arc<dyn Vfs> = Arc::new(vfs.clone());
    Storage {
        device: Box::new(faults.wrap_device(d)),
        vfs: Arc::new(faults.wrap_vfs(v)),
    }
}

/// A pool of `frames` pages: the memory budget is the pool plus the OPQ, which the OPQ
/// shares with the pool.
fn opts(page_size: usize, frames: u64, pio: PioOptions) -> Options {
    let opq = pio.opq_bytes.unwrap_or(0);
    Options::new(EngineKind::PioBTree)
        .page_size(page_size)
        .buffer_pool_bytes(frames * page_size as u64 + opq)
        .pio(pio)
}

fn pio(leaf_segments: u32, opq_entries: u64, pio_max: u32, bcnt: u32) -> PioOptions {
    PioOptions {
        leaf_segments: Some(leaf_segments),
        opq_bytes: Some(opq_entries * PIO_OPQ_ENTRY_BYTES),
        pio_max,
        speriod: 7,
        bcnt,
    }
}

fn counter(db: &Db, name: &str) -> u64 {
    db.stats().engine_counters[name]
}

#[test]
fn conformance_quick() {
    for seed in 0..40 {
        let h = History {
            engine: EngineKind::PioBTree,
            device: DeviceKind::Memory,
            seed,
            ops: 1500,
            crashes: true,
            faults: false,
        };
        if let Err(e) = run(&h) {
            panic!("{e}");
        }
    }
}

#[test]
fn matches_a_btreemap_through_splits_merges_and_shrinks() {
    let dev = MemDevice::new(512);
    let vfs = MemVfs::new();
    let db = Db::create_on(storage(&dev, &vfs), opts(512, 32, pio(2, 40, 4, 25))).unwrap();
    let mut model = BTreeMap::new();
    let mut rng = Rng::new(11);
    for i in 0..30_000u64 {
        let k = match rng.below(10) {
            0 => 0,
            1 => u64::MAX,
            _ => rng.below(6_000) * 7,
        };
        if rng.below(3) == 0 {
            db.delete(k).unwrap();
            model.remove(&k);
        } else {
            db.insert(k, i).unwrap();
            model.insert(k, i);
        }
        if i % 5_000 == 0 {
            db.check_integrity().unwrap();
        }
        // Point gets (each leaf's records searched in place, across appended segments,
        // deletes and shrinks) against the model and against get_many (decoded leaves).
        if i % 97 == 0 {
            let probe = [k, rng.below(6_000) * 7, rng.below(6_000) * 7 + 1];
            for q in probe {
                assert_eq!(
                    db.get(q).unwrap(),
                    model.get(&q).copied(),
                    "get({q}) at {i}"
                );
            }
            let want: Vec<Option<u64>> = probe.iter().map(|q| model.get(q).copied()).collect();
            assert_eq!(db.get_many(&probe).unwrap(), want);
        }
    }
    db.check_integrity().unwrap();
    let got: BTreeMap<u64, u64> = db.range(..).unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(got, model);
    let probe: Vec<u64> = (0..500).map(|i| i * 83).chain([0, u64::MAX]).collect();
    let want: Vec<Option<u64>> = probe.iter().map(|k| model.get(k).copied()).collect();
    assert_eq!(db.get_many(&probe).unwrap(), want);
    assert!(counter(&db, "height") >= 3);
    for c in [
        "bupdates",
        "shrinks",
        "leaf_splits",
        "internal_splits",
        "leaf_appends",
    ] {
        assert!(counter(&db, c) > 0, "{c} never happened");
    }
    // Delete most keys so that leaves and internal nodes merge back.
    let keys: Vec<u64> = model.keys().copied().collect();
    for &k in &keys[..keys.len() - 10] {
        db.delete(k).unwrap();
        model.remove(&k);
    }
    db.close().unwrap();
    let db = Db::open_on(storage(&dev, &vfs)).unwrap();
    db.check_integrity().unwrap();
    let got: BTreeMap<u64, u64> = db.range(..).unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(got, model);
    // Counters start at zero on open; the close's checkpoint flushed the deletes.
    let db2 = Db::create_on(
        storage(&MemDevice::new(512), &MemVfs::new()),
        opts(512, 32, pio(2, 40, 4, 25)),
    )
    .unwrap();
    for &k in &keys {
        db2.insert(k, k).unwrap();
    }
    // Deletes are appended blindly and cancel puts only when a full leaf shrinks (§3.2.2):
    // the second pass overflows the leaves, whose shrinks leave them empty, so they merge.
    for _ in 0..2 {
        for &k in &keys {
            db2.delete(k).unwrap();
        }
    }
    db2.flush().unwrap();
    db2.check_integrity().unwrap();
    assert_eq!(db2.range(..).unwrap().count(), 0);
    // Emptied leaves merged up to a single root leaf (internal merges collapsed the levels).
    assert!(
        counter(&db2, "merges") > 0 && counter(&db2, "height") == 1 && counter(&db2, "leaves") == 1,
        "{:?}",
        db2.stats().engine_counters
    );
}

/// A closed index of 512-byte pages holding the keys `0, 2, ..., 199_998` (key `2k` has
/// value `k`), bulk-loaded into a pool of `frames` pages with leaves of `leaf_segments`;
/// returns its files and its height.
fn even_keys(frames: u64, leaf_segments: u32) -> (MemDevice, MemVfs, u64) {
    let dev = MemDevice::new(512);
    let vfs = MemVfs::new();
    let o = opts(512, frames, pio(leaf_segments, 64, 64, 64));
    let db = Db::create_on(storage(&dev, &vfs), o).unwrap();
    let pairs: Vec<(u64, u64)> = (0..100_000u64).map(|k| (k * 2, k)).collect();
    db.bulk_insert(&pairs).unwrap();
    let height = counter(&db, "height");
    db.close().unwrap();
    (dev, vfs, height)
}

#[test]
fn get_many_issues_one_psync_batch_per_level() {
    let (dev, vfs, height) = even_keys(4096, 2);
    assert_eq!(height, 4, "512-byte pages, 100k entries");
    // Cold pool: 24 keys 4000 entries apart, each in its own leaf (28 entries per leaf).
    let keys: Vec<u64> = (0..24u64).map(|i| i * 8_000 + 2).rev().collect();
    let db = Db::open_on(storage(&dev, &vfs)).unwrap();
    let before = db.stats().device;
    let got = db.get_many(&keys).unwrap();
    let after = db.stats().device;
    assert_eq!(got, keys.iter().map(|k| Some(k / 2)).collect::<Vec<_>>());
    let batches = after.batches - before.batches;
    let requests = after.read_requests - before.read_requests;
    assert_eq!(batches, height, "one psync read per level");
    // Root, then the distinct nodes of each level, then 24 leaves: far more requests than
    // batches, and the leaf level alone is one batch of 24.
    assert!(requests >= 1 + 24 + 2, "{requests} requests");
    assert!(after.max_queue_depth >= 24);
    assert_eq!(after.write_requests, before.write_requests);
    // The same keys one `get` at a time: one batch per node read; on a cold pool the first
    // is one request per level (the leaf's segments in one request).
    let db = Db::open_on(storage(&dev, &vfs)).unwrap();
    let before = db.stats().device;
    assert_eq!(db.get(keys[0]).unwrap(), Some(keys[0] / 2));
    let first = db.stats().device;
    assert_eq!(first.batches - before.batches, height);
    assert_eq!(first.read_requests - before.read_requests, height);
    for &k in &keys {
        assert_eq!(db.get(k).unwrap(), Some(k / 2));
    }
    let after = db.stats().device;
    assert_eq!(
        after.batches - before.batches,
        after.read_requests - before.read_requests
    );
    assert!(after.batches - before.batches > 24 + 2);
}

/// A point search leaves the leaf it read where the pool's LRU put it (batch updates and
/// MPSearch demote theirs): in a full pool, the leaf of the last search outlives the next
/// search's miss and answers a repeated search without a read.
#[test]
fn a_point_search_keeps_its_leaf_in_the_pool() {
    let (dev, vfs, _) = even_keys(256, 1);
    let db = Db::open_on(storage(&dev, &vfs)).unwrap();
    // Fill the pool with the leaves of many searches.
    let mut rng = Rng::new(5);
    for _ in 0..2_000 {
        let k = rng.below(100_000) * 2;
        assert_eq!(db.get(k).unwrap(), Some(k / 2));
    }
    let (a, b) = (123_456u64, 123_456 + 20_000);
    assert_eq!(db.get(a).unwrap(), Some(a / 2));
    assert_eq!(db.get(b).unwrap(), Some(b / 2));
    let before = db.stats().device.reads;
    assert_eq!(db.get(a).unwrap(), Some(a / 2));
    assert_eq!(
        db.stats().device.reads,
        before,
        "the leaf of {a} was evicted"
    );
}

#[test]
fn searches_see_the_opq_first() {
    let dev = MemDevice::new(512);
    let vfs = MemVfs::new();
    // An OPQ of 1000 entries: nothing below reaches the tree before the close.
    let db = Db::create_on(storage(&dev, &vfs), opts(512, 64, pio(2, 1000, 8, 1000))).unwrap();
    let pairs: Vec<(u64, u64)> = (0..1000u64).map(|k| (k, k)).collect();
    db.bulk_insert(&pairs).unwrap();
    db.insert(5, 50).unwrap(); // update of a key in the tree
    db.delete(7).unwrap(); // delete of a key in the tree
    db.insert(u64::MAX, 1).unwrap(); // a new key
    db.insert(0, 9).unwrap();
    db.delete(0).unwrap(); // newest entry of a key wins, in the appended region
    db.insert(7, 70).unwrap();
    db.delete(7).unwrap();
    assert_eq!(counter(&db, "bupdates"), 0);
    // The seventh append sorted the OPQ (speriod 7), keeping the newest entry per key.
    assert_eq!(counter(&db, "opq_entries"), 4);
    assert_eq!(db.get(5).unwrap(), Some(50));
    assert_eq!(db.get(7).unwrap(), None);
    assert_eq!(db.get(0).unwrap(), None);
    assert_eq!(db.get(u64::MAX).unwrap(), Some(1));
    assert_eq!(db.get(6).unwrap(), Some(6));
    assert_eq!(
        db.get_many(&[7, 5, u64::MAX, 6, 0, 5]).unwrap(),
        vec![None, Some(50), Some(1), Some(6), None, Some(50)]
    );
    let r: Vec<(u64, u64)> = db.range(4..=8).unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(r, vec![(4, 4), (5, 50), (6, 6), (8, 8)]);
    let tail: Vec<(u64, u64)> = db.range(998..).unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(tail, vec![(998, 998), (999, 999), (u64::MAX, 1)]);
    assert!(counter(&db, "opq_hits") >= 5);
    // The same answers once the OPQ is flushed into the tree by the close's checkpoint.
    db.close().unwrap();
    let db = Db::open_on(storage(&dev, &vfs)).unwrap();
    assert_eq!(counter(&db, "opq_entries"), 0);
    assert_eq!(
        db.get_many(&[7, 5, u64::MAX, 6, 0]).unwrap(),
        vec![None, Some(50), Some(1), Some(6), None]
    );
    db.check_integrity().unwrap();
}

#[test]
fn appends_write_the_last_segment_and_a_full_leaf_shrinks() {
    let dev = MemDevice::new(512);
    let vfs = MemVfs::new();
    // Leaves of 4 segments (116 records); a batch update every 2 updates.
    let db = Db::create_on(storage(&dev, &vfs), opts(512, 64, pio(4, 2, 8, 2))).unwrap();
    for i in 0..2u64 {
        db.insert(10, i).unwrap();
    }
    for round in 0..20u64 {
        let before = db.stats().device;
        db.insert(10, round).unwrap();
        db.delete(11).unwrap(); // the OPQ is full: one batch update of two records
        let after = db.stats().device;
        let shrinks = counter(&db, "shrinks");
        if shrinks == 0 {
            // Append-only (§3.2.2): the last segment (or the next, when it spills), never
            // the whole 4-page leaf.
            assert!(after.writes - before.writes <= 2, "round {round}");
        }
    }
    // 2 + 40 records fit in one leaf; now fill it past 116 records.
    for i in 0..40u64 {
        db.insert(10, 100 + i).unwrap();
        db.delete(11).unwrap();
    }
    assert!(counter(&db, "shrinks") >= 1);
    // The shrink cancelled every record but the newest put of key 10.
    assert!(counter(&db, "leaf_records") < 116 / 2);
    assert_eq!(counter(&db, "leaves"), 1);
    assert_eq!(db.get(10).unwrap(), Some(139));
    assert_eq!(db.get(11).unwrap(), None);
    db.check_integrity().unwrap();
}

/// Inserts of new keys fill a leaf with live records only, so its shrink cancels nothing
/// and the leaf splits in two (Algorithm 3 line 8, §3.2.2 "divided into two nodes"):
/// every split leaves both halves at least half full, as a B+-tree's do.
#[test]
fn a_leaf_full_of_new_keys_splits_into_two_halves() {
    let dev = MemDevice::new(512);
    let vfs = MemVfs::new();
    // One-segment leaves of 29 records; batches of 4 entries, spread over the leaves.
    let db = Db::create_on(storage(&dev, &vfs), opts(512, 64, pio(1, 8, 4, 4))).unwrap();
    let cap = 29;
    let mut rng = Rng::new(5);
    let mut keys = std::collections::BTreeSet::new();
    while keys.len() < 6_000 {
        let k = rng.next_u64();
        if keys.insert(k) {
            db.insert(k, k).unwrap();
        }
    }
    db.check_integrity().unwrap();
    let (shrinks, splits) = (counter(&db, "shrinks"), counter(&db, "leaf_splits"));
    assert!(splits > 100, "{splits} splits");
    // A batch of more than a quarter of a leaf may split it in three while the tree is a
    // few leaves wide; after that every shrink is one split in two.
    assert!(
        splits <= shrinks + 2,
        "{splits} splits from {shrinks} shrinks"
    );
    // The tree holds every key but the few still queued in the OPQ, each in one record.
    let records = counter(&db, "leaf_records");
    assert!(records <= keys.len() as u64 && records + 8 >= keys.len() as u64);
    let leaves = counter(&db, "leaves");
    assert!(
        leaves * (cap / 2) <= records + cap,
        "{leaves} leaves for {records} records: leaves below half full"
    );
    let got: Vec<u64> = db.range(..).unwrap().map(|r| r.unwrap().0).collect();
    assert_eq!(got, keys.into_iter().collect::<Vec<_>>());
}

#[test]
fn a_crash_inside_a_batch_update_applies_each_entry_exactly_once() {
    let o = || opts(512, 16, pio(2, 64, 4, 64));
    let base: Vec<(u64, u64)> = (0..2_000u64).map(|k| (k * 10, k)).collect();
    let extra: Vec<(u64, u64)> = (0..64u64).map(|i| (i * 311 + 5, i)).collect();
    // Reference runs without a crash: the leaf records after 63 and after 64 updates.
    let reference = |n: usize| {
        let (dev, vfs) = (MemDevice::new(512), MemVfs::new());
        let db = Db::create_on(storage(&dev, &vfs), o()).unwrap();
        db.bulk_insert(&base).unwrap();
        for &(k, v) in &extra[..n] {
            db.insert(k, v).unwrap();
        }
        db.close().unwrap();
        let db = Db::open_on(storage(&dev, &vfs)).unwrap();
        counter(&db, "leaf_records")
    };
    let (ref63, ref64) = (reference(63), reference(64));
    let mut crashes = 0;
    for n in 1.. {
        let (dev, vfs) = (MemDevice::new(512), MemVfs::new());
        let faults = Faults::new(n);
        let db = Db::create_on(faulty(&faults, &dev, &vfs), o()).unwrap();
        db.bulk_insert(&base).unwrap();
        for &(k, v) in &extra[..63] {
            db.insert(k, v).unwrap();
        }
        db.flush().unwrap();
        assert_eq!(counter(&db, "bupdates"), 0);
        faults.crash_after(n);
        // The 64th update fills the OPQ: the batch update of all 64 is cut at tick n.
        let r = db.insert(extra[63].0, extra[63].1);
        if r.is_ok() {
            assert!(!faults.crashed());
            assert_eq!(counter(&db, "bupdates"), 1);
            break;
        }
        assert!(faults.crashed(), "crash point {n}: {r:?}");
        crashes += 1;
        faults.crash_now();
        drop(db);
        assert_eq!(faults.image_error(), None);
        let db = Db::open_on(storage(&dev, &vfs)).unwrap();
        db.check_integrity().unwrap();
        let got: BTreeMap<u64, u64> = db.range(..).unwrap().map(|r| r.unwrap()).collect();
        let mut want: BTreeMap<u64, u64> = base.iter().copied().collect();
        want.extend(extra[..63].iter().copied());
        let kept_last = got.contains_key(&extra[63].0);
        if kept_last {
            want.insert(extra[63].0, extra[63].1);
        }
        assert_eq!(got, want, "crash point {n}");
        // Recovery replayed onto the checkpoint image: no entry is in the leaves twice.
        let records = counter(&db, "leaf_records");
        assert_eq!(
            records,
            if kept_last { ref64 } else { ref63 },
            "crash point {n}"
        );
    }
    assert!(
        crashes >= 3,
        "the batch update was cut only {crashes} times"
    );
}

#[test]
fn bad_options_are_refused_with_the_option_named() {
    let bad = [
        (pio(0, 64, 4, 4), "leaf_segments"),
        (pio(65, 64, 4, 4), "leaf_segments"),
        (pio(2, 1, 4, 4), "opq_bytes"),
        (pio(2, 64, 0, 4), "pio_max"),
        (pio(2, 64, 4, 0), "bcnt"),
        (
            PioOptions {
                speriod: 0,
                ..pio(2, 64, 4, 4)
            },
            "speriod",
        ),
    ];
    for (p, name) in bad {
        let r = Db::create_on(
            storage(&MemDevice::new(512), &MemVfs::new()),
            opts(512, 64, p),
        );
        match r {
            Err(flashix::Error::InvalidOptions(m)) => assert!(m.contains(name), "{m}"),
            other => panic!("{name}: expected InvalidOptions, got {:?}", other.err()),
        }
    }
    // Leaves of 8 segments need a pool of at least 18 frames.
    let r = Db::create_on(
        storage(&MemDevice::new(512), &MemVfs::new()),
        opts(512, 8, pio(8, 64, 4, 4)),
    );
    assert!(matches!(r, Err(flashix::Error::InvalidOptions(_))));
    let db = Db::create_on(
        storage(&MemDevice::new(512), &MemVfs::new()),
        opts(512, 64, pio(2, 64, 4, 4)),
    )
    .unwrap();
    db.insert(1, 1).unwrap();
    // The OPQ's array (64 entries once it holds one: it grows by at least 4096, at most
    // to its capacity) is in the reported memory.
    assert!(db.stats().memory_bytes >= 64 * PIO_OPQ_ENTRY_BYTES);
}

/// docs/design.md, contract point 4: a flipped bit in any page (internal nodes, leaf segments) is
/// corruption naming that page, or harmless on a free page.
#[test]
fn a_flipped_bit_in_any_page_is_corruption_naming_the_page() {
    let dev = MemDevice::new(512);
    let vfs = MemVfs::new();
    let mut db = Db::create_on(storage(&dev, &vfs), opts(512, 16, pio(2, 16, 8, 16))).unwrap();
    let model = flashix::testing::insert_and_delete(&mut db, 9, 1_500, 4_000).unwrap();
    db.close().unwrap();
    let detected = flashix::testing::flip_a_bit_in_every_page(&dev, &vfs, 512, &model).unwrap();
    assert!(detected >= 20, "{detected} pages detected");
}

/// Leaf and OPQ sizes left unset are the cost model's choice (§3.6, Eq. 10) for the
/// tuning, saved in the manifest; the OPQ comes out of the memory budget as it fills and
/// the pool gets the rest (§4.1.3).
#[test]
fn unset_sizes_come_from_the_cost_model_and_the_opq_shares_the_budget() {
    use flashix::cost::pio::PioDeviceCosts;
    use flashix::cost::DeviceCosts;
    use flashix::Tuning;
    // Flat read latency up to 8 pages (package-level parallelism) and cheap psync I/O:
    // searches-only prefers long leaves and the smallest OPQ; updates-only on few leaves
    // prefers a large OPQ (Eq. 8: more updates share each node read).
    let dev = PioDeviceCosts::new(4096, vec![100.0; 8], 200.0, 10.0, 20.0).unwrap();
    let tuning = |search_fraction| Tuning {
        device: DeviceCosts::reference(4096),
        expected_entries: 200_000,
        search_fraction,
        pio_device: Some(dev.clone()),
        bulk: None,
    };
    let budget = 4u64 << 20;
    let mut chosen = Vec::new();
    for search_fraction in [1.0, 0.0] {
        let o = Options::new(EngineKind::PioBTree)
            .buffer_pool_bytes(budget)
            .tuning(tuning(search_fraction));
        let want = o.resolved().unwrap().pio_options();
        let (l, q) = (want.leaf_segments.unwrap(), want.opq_bytes.unwrap());
        let (dev, vfs) = (MemDevice::new(4096), MemVfs::new());
        let db = Db::create_on(storage(&dev, &vfs), o).unwrap();
        assert_eq!(counter(&db, "leaf_segments"), u64::from(l));
        assert_eq!(counter(&db, "opq_capacity"), q / PIO_OPQ_ENTRY_BYTES);
        // The OPQ's entries are allocated as it fills: a new index's pool is the budget
        // less the OPQ's appended-region index and the PIO's small tables (tombstones, the
        // LSMap: under a page when new), charged by the checkpoint that ends `create`.
        let index = PioOptions::opq_index_bytes(q, 5000);
        let pool = db.stats().buffer.capacity_bytes;
        let all = (budget - index) / 4096 * 4096;
        assert!(
            pool <= all && pool + 4096 >= all,
            "pool {pool}, budget less the OPQ's index {all}"
        );
        // A nearly full OPQ leaves the pool the paper's share: the budget less the OPQ and
        // its index (§4.1.3); the pool shrinks as the OPQ fills, within the budget.
        for i in 0..q / PIO_OPQ_ENTRY_BYTES - 1 {
            db.insert(1_000 + i, i).unwrap();
            assert!(db.stats().memory_bytes <= budget);
        }
        assert_eq!(counter(&db, "opq_entries"), q / PIO_OPQ_ENTRY_BYTES - 1);
        let pool = db.stats().buffer.capacity_bytes;
        let opq_out = (budget - q - index) / 4096 * 4096;
        assert!(
            pool <= opq_out && pool + 4096 >= opq_out,
            "pool {pool}, budget less the OPQ and its index {opq_out}"
        );
        db.insert(7, 70).unwrap();
        db.close().unwrap();
        let db = Db::open_on(storage(&dev, &vfs)).unwrap();
        assert_eq!(counter(&db, "leaf_segments"), u64::from(l));
        assert_eq!(counter(&db, "opq_capacity"), q / PIO_OPQ_ENTRY_BYTES);
        assert_eq!(db.get(7).unwrap(), Some(70));
        chosen.push((l, q));
    }
    assert!(
        chosen[0].0 >= 4 && chosen[0].1 == 4096,
        "searches only: long leaves, one-page OPQ, got {chosen:?}"
    );
    assert!(
        chosen[1].1 > 4096,
        "updates only: a larger OPQ, got {chosen:?}"
    );
    // A fixed size is kept and the model picks the other for it.
    let o = Options::new(EngineKind::PioBTree)
        .buffer_pool_bytes(budget)
        .tuning(tuning(0.0))
        .pio(PioOptions {
            leaf_segments: Some(3),
            ..PioOptions::default()
        });
    assert_eq!(o.resolved().unwrap().pio_options().leaf_segments, Some(3));
    // An OPQ as large as the budget leaves no pool.
    let o = Options::new(EngineKind::PioBTree)
        .buffer_pool_bytes(budget)
        .pio(PioOptions {
            opq_bytes: Some(budget),
            ..PioOptions::default()
        });
    let (dev, vfs) = (MemDevice::new(4096), MemVfs::new());
    let err = Db::create_on(storage(&dev, &vfs), o)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("opq_bytes"), "{err}");
}

/// Every key of `[lo, hi]` out of the model.
fn model_delete_range(model: &mut BTreeMap<u64, u64>, lo: u64, hi: u64) {
    let doomed: Vec<u64> = model.range(lo..=hi).map(|(&k, _)| k).collect();
    for k in doomed {
        model.remove(&k);
    }
}

/// Range deletes are OPQ range tombstones applied to the tree when the OPQ is flushed:
/// a model check through many flushes, with leaves freed unread, boundary leaves rewritten
/// and the tree shrinking, then a reopen by WAL replay and one after a clean close.
#[test]
fn range_tombstones_match_a_model_through_flushes_and_recovery() {
    let (dev, vfs) = (MemDevice::new(512), MemVfs::new());
    // 512-byte pages: leaves of 2 segments (56 records), 30 separators a node; an OPQ of
    // 40 slots flushed in batches of 25.
    let mut db = Db::create_on(storage(&dev, &vfs), opts(512, 32, pio(2, 40, 4, 25))).unwrap();
    let space = 60_000u64;
    let pairs: Vec<(u64, u64)> = (0..space / 2).map(|k| (k * 2, k)).collect();
    db.bulk_insert(&pairs).unwrap();
    let mut model: BTreeMap<u64, u64> = pairs.iter().copied().collect();
    let mut rng = Rng::new(17);
    let (mut most_tombs, mut ranges) = (0, 0);
    for i in 0..12_000u64 {
        let k = rng.below(space);
        match rng.below(100) {
            0..=59 => {
                db.insert(k, i).unwrap();
                model.insert(k, i);
            }
            60..=79 => {
                db.delete(k).unwrap();
                model.remove(&k);
            }
            80..=89 => {
                // 1 to 5,000 keys.
                let span = [0, 10, 300, 4_999][rng.below(4) as usize];
                let hi = k + rng.below(span + 1);
                db.delete_range(k..=hi).unwrap();
                model_delete_range(&mut model, k, hi);
                ranges += 1;
            }
            90..=97 => assert_eq!(db.get(k).unwrap(), model.get(&k).copied(), "key {k}"),
            _ => {
                let got: Vec<(u64, u64)> = db
                    .range(k..k + 500)
                    .unwrap()
                    .map(|kv| kv.unwrap())
                    .collect();
                let want: Vec<(u64, u64)> =
                    model.range(k..k + 500).map(|(&k, &v)| (k, v)).collect();
                assert_eq!(got, want, "range from {k}");
            }
        }
        most_tombs = most_tombs.max(counter(&db, "range_tombstones"));
        if i % 1_000 == 0 {
            db.check_integrity().unwrap();
        }
    }
    for c in [
        "range_tombstones_applied",
        "leaves_freed_unread",
        "merges",
        "bupdates",
    ] {
        assert!(
            counter(&db, c) > 0,
            "{c} never happened: {:?}",
            db.stats().engine_counters
        );
    }
    assert!(
        most_tombs >= 2,
        "{most_tombs} tombstones at most in the OPQ"
    );
    assert_eq!(counter(&db, "range_deletes"), ranges);
    db.check_integrity().unwrap();
    let all = |db: &mut Db| -> BTreeMap<u64, u64> {
        db.range(..).unwrap().map(|kv| kv.unwrap()).collect()
    };
    assert_eq!(all(&mut db), model);
    // Not closed: the WAL's range deletes are replayed into the OPQ on the checkpoint.
    db.flush().unwrap();
    drop(db);
    let mut db = Db::open_on(storage(&dev, &vfs)).unwrap();
    db.check_integrity().unwrap();
    assert_eq!(all(&mut db), model);
    db.close().unwrap();
    let mut db = Db::open_on(storage(&dev, &vfs)).unwrap();
    db.check_integrity().unwrap();
    assert_eq!(all(&mut db), model);
    // Deleting everything leaves one empty root leaf, counted exactly.
    db.delete_range(..).unwrap();
    db.insert(5, 5).unwrap();
    db.close().unwrap();
    let mut db = Db::open_on(storage(&dev, &vfs)).unwrap();
    db.check_integrity().unwrap();
    assert_eq!(all(&mut db), BTreeMap::from([(5, 5)]));
    assert_eq!(counter(&db, "height"), 1);
    assert_eq!(counter(&db, "leaf_records"), 1);
    assert_eq!(counter(&db, "leaf_records_bound"), 0);
}

/// A range delete is one OPQ tombstone: the call reads and writes no page; applying it
/// when the OPQ is flushed reads the internal nodes over the range and the boundary leaves
/// (and a sibling of each for the repairs), never the leaves inside the range.
#[test]
fn a_range_delete_reads_a_bounded_number_of_pages() {
    let (dev, vfs) = (MemDevice::new(512), MemVfs::new());
    let segs = 2u64;
    let o = opts(512, 64, pio(segs as u32, 1000, 16, 1000));
    let db = Db::create_on(storage(&dev, &vfs), o).unwrap();
    let pairs: Vec<(u64, u64)> = (0..400_000u64).map(|i| (i * 2, i)).collect();
    db.bulk_insert(&pairs).unwrap();
    let height = counter(&db, "height");
    assert!(height >= 4, "{height} levels");
    db.close().unwrap();
    let mut lo = 10u64;
    let mut cuts: Vec<(u64, u64)> = Vec::new();
    for n in [100u64, 1_000, 10_000, 100_000] {
        let hi = lo + 2 * (n - 1);
        let db = Db::open_on(storage(&dev, &vfs)).unwrap();
        let before = db.stats().device;
        db.delete_range(lo..=hi).unwrap();
        let after = db.stats().device;
        assert_eq!(
            (after.reads - before.reads, after.writes - before.writes),
            (0, 0),
            "the call only adds a tombstone to the OPQ"
        );
        assert_eq!(counter(&db, "range_tombstones"), 1);
        let freed0 = counter(&db, "leaves_freed_unread");
        let leaves0 = counter(&db, "leaves");
        // The close's checkpoint flushes the OPQ: the tombstone is applied.
        let s = db.close_with_stats().unwrap();
        let reads = s.device.reads - after.reads;
        let freed = s.engine_counters["leaves_freed_unread"] - freed0;
        let leaves_gone = leaves0 - s.engine_counters["leaves"];
        eprintln!(
            "range delete of {n} keys: {reads} pages read to apply it, {freed} leaves freed \
             unread, {leaves_gone} leaves fewer, height {}",
            s.engine_counters["height"]
        );
        // About n / 40 leaves in the range (bulk-loaded at 0.7 of 2 packed segments of 29
        // records): all but the boundary ones freed unread.
        assert!(freed + 4 >= n / 40, "{n} keys: {freed} leaves freed unread");
        // Leaves read: at most the 2 boundary leaves and 2 siblings, whatever n; internal
        // nodes: the ones over the range (a node has at least 16 children) and a path of
        // siblings for the repairs.
        let bound = 4 * segs + 3 * height + freed / 15;
        assert!(
            reads <= bound,
            "{n} keys: {reads} pages read, bound {bound}"
        );
        assert!(
            n < 10_000 || reads * 10 < freed * segs,
            "{n} keys: {reads} pages read for {freed} leaves of {segs} pages"
        );
        cuts.push((lo, hi));
        lo = hi + 1_000;
    }
    let db = Db::open_on(storage(&dev, &vfs)).unwrap();
    db.check_integrity().unwrap();
    for &(lo, hi) in &cuts {
        assert_eq!(db.get(lo).unwrap(), None);
        assert_eq!(db.get(hi).unwrap(), None);
        assert_eq!(db.get(lo - 2).unwrap(), Some((lo - 2) / 2));
        assert_eq!(db.get(hi + 2).unwrap(), Some((hi + 2) / 2));
        let got: Vec<(u64, u64)> = db
            .range(lo - 4..=hi + 4)
            .unwrap()
            .map(|kv| kv.unwrap())
            .collect();
        let want: Vec<(u64, u64)> = [lo - 4, lo - 2, hi + 2, hi + 4]
            .iter()
            .filter(|&&k| k < 800_000)
            .map(|&k| (k, k / 2))
            .collect();
        assert_eq!(got, want, "around [{lo}, {hi}]");
    }
    let gone: u64 = cuts.iter().map(|&(lo, hi)| (hi - lo) / 2 + 1).sum();
    assert_eq!(db.range(..).unwrap().count() as u64, 400_000 - gone);
}

/// A crash at any point of applying a range tombstone to the tree (the close's checkpoint
/// flushes the OPQ) is undone by the before-images and the range delete is replayed from
/// the WAL: the reopened index is the model, whole and consistent.
#[test]
fn a_crash_while_applying_a_range_tombstone_is_undone_and_replayed() {
    let o = || opts(512, 16, pio(2, 64, 4, 64));
    let base: Vec<(u64, u64)> = (0..4_000u64).map(|k| (k * 10, k)).collect();
    let mut model: BTreeMap<u64, u64> = base.iter().copied().collect();
    model_delete_range(&mut model, 1_005, 30_000);
    model.insert(3, 3);
    model.insert(20_005, 1);
    let mut crashes = 0;
    for n in 1.. {
        let (dev, vfs) = (MemDevice::new(512), MemVfs::new());
        let faults = Faults::new(n);
        let db = Db::create_on(faulty(&faults, &dev, &vfs), o()).unwrap();
        db.bulk_insert(&base).unwrap();
        db.insert(3, 3).unwrap();
        db.delete_range(1_005..=30_000).unwrap();
        db.insert(20_005, 1).unwrap();
        db.flush().unwrap();
        faults.crash_after(n);
        let r = db.close();
        if !faults.crashed() {
            assert!(r.is_ok(), "crash point {n}: {r:?}");
            break;
        }
        // (A crash in the close's last, best-effort steps may leave it `Ok`.)
        crashes += 1;
        faults.crash_now();
        assert_eq!(faults.image_error(), None);
        let db = Db::open_on(storage(&dev, &vfs)).unwrap();
        db.check_integrity().unwrap();
        let got: BTreeMap<u64, u64> = db.range(..).unwrap().map(|r| r.unwrap()).collect();
        assert_eq!(got, model, "crash point {n}");
        db.close().unwrap();
    }
    assert!(crashes >= 3, "the apply was cut only {crashes} times");
}

/// Range ends at and next to leaf boundaries on consecutive keys: each range delete is
/// applied at once (an OPQ of two slots), and the keys just outside it survive.
#[test]
fn range_deletes_keep_the_keys_next_to_their_ends() {
    let (dev, vfs) = (MemDevice::new(512), MemVfs::new());
    let db = Db::create_on(storage(&dev, &vfs), opts(512, 32, pio(2, 2, 4, 2))).unwrap();
    let pairs: Vec<(u64, u64)> = (0..40_000u64).map(|k| (k, k)).collect();
    db.bulk_insert(&pairs).unwrap();
    let mut model: BTreeMap<u64, u64> = pairs.iter().copied().collect();
    let mut rng = Rng::new(5);
    for i in 0..600u64 {
        let lo = rng.below(40_000);
        // Around one and two leaves (40 records each after the bulk load: 0.7 of two
        // packed segments of 29), and longer.
        let span = [38, 39, 40, 41, 79, 80, 81, 800][rng.below(8) as usize];
        let hi = lo + span;
        db.delete_range(lo..=hi).unwrap();
        model_delete_range(&mut model, lo, hi);
        // Fills the OPQ: the tombstone is applied to the tree now.
        db.insert(1_000_000 + i, i).unwrap();
        model.insert(1_000_000 + i, i);
        assert_eq!(counter(&db, "range_tombstones"), 0);
        let (a, b) = (lo.saturating_sub(3), hi + 3);
        let got: Vec<(u64, u64)> = db.range(a..=b).unwrap().map(|kv| kv.unwrap()).collect();
        let want: Vec<(u64, u64)> = model.range(a..=b).map(|(&k, &v)| (k, v)).collect();
        assert_eq!(got, want, "around [{lo}, {hi}]");
        if i % 100 == 0 {
            db.check_integrity().unwrap();
        }
    }
    db.check_integrity().unwrap();
    assert!(counter(&db, "leaves_freed_unread") > 100);
    let got: BTreeMap<u64, u64> = db.range(..).unwrap().map(|kv| kv.unwrap()).collect();
    assert_eq!(got, model);
}

#[test]
fn a_scan_does_not_read_leaves_a_queued_range_tombstone_spans() {
    let (dev, vfs) = (MemDevice::new(512), MemVfs::new());
    let o = opts(512, 64, pio(2, 1000, 16, 1000));
    let db = Db::create_on(storage(&dev, &vfs), o).unwrap();
    let pairs: Vec<(u64, u64)> = (0..20_000u64).map(|i| (i * 2, i)).collect();
    db.bulk_insert(&pairs).unwrap();
    db.close().unwrap();
    let db = Db::open_on(storage(&dev, &vfs)).unwrap();
    // Keys 1,000..=30,000 deleted by one tombstone still in the OPQ, two keys put back.
    db.delete_range(1_000..=30_000).unwrap();
    db.insert(20_000, 7).unwrap();
    db.insert(20_001, 8).unwrap();
    let leaves = counter(&db, "leaves");
    let before = db.stats().device.reads;
    let got: Vec<(u64, u64)> = db.range(0..=40_000).unwrap().map(|r| r.unwrap()).collect();
    let reads = db.stats().device.reads - before;
    let mut want: Vec<(u64, u64)> = (0..20_000u64)
        .map(|i| (i * 2, i))
        .filter(|(k, _)| !(1_000..=30_000).contains(k))
        .collect();
    want.extend([(20_000, 7), (20_001, 8)]);
    want.sort_unstable();
    assert!(
        got == want,
        "{} entries, {} expected",
        got.len(),
        want.len()
    );
    // The range spans ~513 leaves (bulk-loaded with 39 records: 0.7 of 2 segments of 28);
    // the ~372 inside the tombstone are skipped, the rest (and the internal nodes) read.
    let skipped = counter(&db, "leaves_skipped_by_tombstones");
    assert!(skipped >= 360, "{skipped} leaves skipped of {leaves}");
    assert!(
        reads < 2 * (leaves - skipped) + 40,
        "{reads} pages read with {skipped} of {leaves} leaves skipped"
    );
}
