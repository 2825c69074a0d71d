//! LA-tree behaviour beyond the model check: cascaded buffers and their emptying by
//! overflow and by ADAPT, structure under growth and shrinkage, persistence of buffered
//! messages, corruption detection, bulk loading, small budgets and bad options. Table 4.1
//! (ADAPT) is reproduced by a unit test in `engine/latree/adapt.rs`.

use flashix::io::{MemDevice, MemVfs};
use flashix::testing::{mem_db, reopen_mem, Rng};
use flashix::{Db, EngineKind, Error, LaTreeOptions, Options, Storage};
use std::collections::BTreeMap;
use std::sync::Arc;

fn opts(page: usize, frames: u64, k: u32, max_buffer_pages: u64, adapt: bool) -> Options {
    Options::new(EngineKind::LaTree)
        .page_size(page)
        .buffer_pool_bytes(frames * page as u64)
        .latree(LaTreeOptions {
            node_bytes: 0,
            k,
            max_buffer_pages,
            adapt,
        })
}

fn counter(db: &Db, name: &str) -> u64 {
    db.stats().engine_counters[name]
}

fn contents(db: &mut Db) -> BTreeMap<u64, u64> {
    db.range(..).unwrap().map(|kv| kv.unwrap()).collect()
}

#[test]
fn grows_deep_and_shrinks_back_through_cascaded_buffers() {
    for k in [1, 2] {
        let (mut db, _, _) = mem_db(opts(512, 12, k, 2, false)).unwrap();
        let mut rng = Rng::new(7 + k as u64);
        let mut keys: Vec<u64> = (0..12_000).map(|_| rng.next_u64()).collect();
        let mut model = BTreeMap::new();
        for (i, &key) in keys.iter().enumerate() {
            db.insert(key, !key).unwrap();
            model.insert(key, !key);
            if i % 3_000 == 0 {
                db.check_integrity().unwrap();
            }
        }
        db.check_integrity().unwrap();
        assert!(
            counter(&db, "height") >= 3,
            "k={k}: height {}",
            counter(&db, "height")
        );
        assert!(counter(&db, "leaf_splits") > 100);
        assert!(counter(&db, "emptyings_overflow") > 100);
        assert_eq!(counter(&db, "emptyings_adapt"), 0, "ADAPT is off");
        assert!(
            counter(&db, "buffers") >= 2,
            "buffers below the root hold messages"
        );
        assert_eq!(contents(&mut db), model);
        for i in (1..keys.len()).rev() {
            keys.swap(i, rng.below(i as u64 + 1) as usize);
        }
        for (i, &key) in keys.iter().enumerate() {
            db.delete(key).unwrap();
            model.remove(&key);
            if i % 3_000 == 0 {
                db.check_integrity().unwrap();
                assert_eq!(db.get(key).unwrap(), None);
            }
        }
        db.check_integrity().unwrap();
        assert_eq!(contents(&mut db), model);
        assert!(model.is_empty());
        assert!(counter(&db, "merges") > 0 && counter(&db, "redistributions") > 0);
    }
}

#[test]
fn lookups_empty_buffers_by_adapt_and_answer_as_a_map() {
    let (mut db, _, _) = mem_db(opts(512, 16, 1, 8, true)).unwrap();
    let mut rng = Rng::new(3);
    let mut model = BTreeMap::new();
    for i in 0..20_000u64 {
        let k = rng.below(3_000);
        match rng.below(10) {
            0..=3 => {
                db.insert(k, i).unwrap();
                model.insert(k, i);
            }
            4 => {
                db.delete(k).unwrap();
                model.remove(&k);
            }
            _ => assert_eq!(db.get(k).unwrap(), model.get(&k).copied(), "get {k} at {i}"),
        }
    }
    db.check_integrity().unwrap();
    assert!(counter(&db, "emptyings_adapt") > 0);
    assert!(counter(&db, "buffer_pages_scanned") > 0);
    assert_eq!(contents(&mut db), model);
    let lo = 1_000;
    let got: Vec<(u64, u64)> = db.range(lo..2_000).unwrap().map(|kv| kv.unwrap()).collect();
    let want: Vec<(u64, u64)> = model.range(lo..2_000).map(|(&k, &v)| (k, v)).collect();
    assert_eq!(got, want);
}

#[test]
fn an_insert_only_workload_keeps_buffers_within_their_maximum() {
    let (db, _, _) = mem_db(opts(1024, 16, 2, 3, true)).unwrap();
    for k in 0..10_000u64 {
        db.insert(k.wrapping_mul(0x9E37_79B9_7F4A_7C15), k).unwrap();
    }
    db.check_integrity().unwrap(); // includes: every buffer within max_buffer_pages
    let s = db.stats();
    assert!(s.engine_counters["buffer_entries"] > 0);
    assert_eq!(s.engine_counters["emptyings_adapt"], 0, "no lookups");
    assert!(s.engine_counters["emptyings_overflow"] > 0);
    // The sort area and the buffer table are reported beside the pool, and all of it is
    // charged to the 16 KiB budget (the pool gets the rest).
    assert!(
        s.memory_bytes > s.buffer.capacity_bytes,
        "pool and sort area are reported: {} <= {}",
        s.memory_bytes,
        s.buffer.capacity_bytes
    );
    assert!(
        s.memory_bytes <= 16 * 1024,
        "{} over the budget",
        s.memory_bytes
    );
}

#[test]
fn buffered_messages_survive_close_and_reopen() {
    let (mut db, dev, vfs) = mem_db(opts(512, 12, 2, 4, true)).unwrap();
    let model = flashix::testing::insert_and_delete(&mut db, 5, 3_000, 2_000).unwrap();
    assert!(counter(&db, "buffer_entries") > 0);
    db.close().unwrap();
    let mut db = reopen_mem(&dev, &vfs).unwrap();
    db.check_integrity().unwrap();
    assert!(counter(&db, "buffer_entries") > 0, "messages stay buffered");
    assert_eq!(contents(&mut db), model);
    // And after a flush without close (recovery replays the WAL).
    db.insert(1 << 50, 7).unwrap();
    db.flush().unwrap();
    drop(db);
    let mut db = reopen_mem(&dev, &vfs).unwrap();
    let mut want = model;
    want.insert(1 << 50, 7);
    assert_eq!(contents(&mut db), want);
}

#[test]
fn a_flipped_bit_in_any_page_is_corruption_naming_the_page() {
    let (mut db, dev, vfs) = mem_db(opts(512, 12, 1, 2, true)).unwrap();
    let model = flashix::testing::insert_and_delete(&mut db, 9, 1_500, 4_000).unwrap();
    assert!(counter(&db, "buffer_pages") > 0);
    db.close().unwrap();
    let detected = flashix::testing::flip_a_bit_in_every_page(&dev, &vfs, 512, &model).unwrap();
    assert!(detected >= 20, "{detected} pages detected");
}

#[test]
fn bulk_insert_into_an_empty_tree_is_a_bulk_load_then_inserts_are_buffered() {
    let (db, _, _) = mem_db(opts(4096, 64, 2, 4, true)).unwrap();
    let pairs: Vec<(u64, u64)> = (0..10_000u64).map(|k| (k * 3, k)).collect();
    db.bulk_insert(&pairs).unwrap();
    db.check_integrity().unwrap();
    // 254 entries per 4 KiB leaf at 0.7: 177 per leaf, as the B+-tree's bulk load.
    assert_eq!(counter(&db, "leaves"), 57);
    assert_eq!(counter(&db, "buffer_entries"), 0);
    let more: Vec<(u64, u64)> = (0..50u64).map(|k| (k * 3 + 1, k)).collect();
    db.bulk_insert(&more).unwrap();
    assert_eq!(
        counter(&db, "buffer_entries"),
        50,
        "one by one into the root buffer"
    );
    assert_eq!(db.get(2997).unwrap(), Some(999));
    assert_eq!(db.get(4).unwrap(), Some(1));
    assert_eq!(db.get(2998).unwrap(), None);
    db.delete_range(0..=30).unwrap();
    assert_eq!(db.range(..=30).unwrap().count(), 0);
    db.check_integrity().unwrap();
}

#[test]
fn the_thesis_budget_of_128_kib_with_16_kib_nodes_is_accepted() {
    let o = Options::new(EngineKind::LaTree)
        .page_size(16 << 10)
        .buffer_pool_bytes(128 << 10);
    let (db, _, _) = mem_db(o).unwrap();
    for k in 0..20_000u64 {
        db.insert(k * 7 % 20_011, k).unwrap();
    }
    db.check_integrity().unwrap();
    assert_eq!(db.get(7).unwrap(), Some(1));
    assert!(db.stats().memory_bytes <= (128 << 10) + 4096);
}

#[test]
fn bad_options_are_refused() {
    let good = opts(512, 12, 2, 4, true);
    let bad = [
        good.clone().latree(LaTreeOptions {
            node_bytes: 4096,
            ..LaTreeOptions::default()
        }),
        good.clone().latree(LaTreeOptions {
            k: 0,
            ..LaTreeOptions::default()
        }),
        good.clone().latree(LaTreeOptions {
            max_buffer_pages: 0,
            ..LaTreeOptions::default()
        }),
        // Below the minimum budget of 5 pages (4 frames and a one-page sort area).
        good.clone().buffer_pool_bytes(4 * 512),
    ];
    for o in bad {
        let s = Storage {
            device: Box::new(MemDevice::new(o.page_size)),
            vfs: Arc::new(MemVfs::new()),
        };
        assert!(
            matches!(Db::create_on(s, o.clone()), Err(Error::InvalidOptions(_))),
            "{o:?}"
        );
    }
    let s = Storage {
        device: Box::new(MemDevice::new(512)),
        vfs: Arc::new(MemVfs::new()),
    };
    Db::create_on(s, good.buffer_pool_bytes(5 * 512)).unwrap();
}
