//! FD-tree behaviour beyond the model check: the I/O of a point search and of a range
//! search, cascading merges with Invariants 1-2, and filters cancelling phantoms.

use flashix::io::{MemDevice, MemVfs};
use flashix::testing::{
    mem_db, merges_on_a_file_across_drops, reopen_mem, upserts_across_reopen, Rng,
};
use flashix::{Db, EngineKind, FdTreeOptions, Options, Storage};
use std::collections::BTreeMap;
use std::sync::Arc;

fn opts(page_size: usize, frames: u64, k: u32, head_pages: u64, deamortize: bool) -> Options {
    Options::new(EngineKind::FdTree)
        .page_size(page_size)
        .buffer_pool_bytes(frames * page_size as u64)
        .fdtree(FdTreeOptions {
            k: Some(k),
            head_tree_bytes: head_pages * page_size as u64,
            deamortize,
            io_unit_bytes: 128 * page_size as u64,
        })
}

fn counter(db: &Db, name: &str) -> u64 {
    let s = db.stats();
    *s.engine_counters
        .get(name)
        .unwrap_or_else(|| panic!("{}: no counter {name:?}", s.engine))
}

#[test]
fn merges_cascade_and_invariants_hold_after_many_inserts() {
    for deamortize in [false, true] {
        let (db, _, _) = mem_db(opts(512, 16, 3, 2, deamortize)).unwrap();
        let mut rng = Rng::new(11);
        let mut model = BTreeMap::new();
        for i in 0..20_000u64 {
            let k = rng.next_u64();
            db.insert(k, i).unwrap();
            model.insert(k, i);
            if i % 2_500 == 0 {
                db.check_integrity().unwrap();
            }
        }
        db.check_integrity().unwrap();
        assert!(counter(&db, "levels") >= 4, "L0 + 3 runs at least");
        assert!(counter(&db, "merges") > 100);
        assert!(counter(&db, "merge_pages_written") > 0 && counter(&db, "merge_pages_read") > 0);
        let got: BTreeMap<u64, u64> = db.range(..).unwrap().map(|kv| kv.unwrap()).collect();
        assert_eq!(got, model);
        for (&k, &v) in model.iter().step_by(97) {
            assert_eq!(db.get(k).unwrap(), Some(v));
        }
    }
}

#[test]
fn a_cold_point_search_reads_at_most_one_page_per_level() {
    let (db, dev, vfs) = mem_db(opts(512, 16, 4, 2, false)).unwrap();
    let mut rng = Rng::new(3);
    let keys: Vec<u64> = (0..8_000).map(|_| rng.next_u64()).collect();
    for &k in &keys {
        db.insert(k, k ^ 5).unwrap();
    }
    db.check_integrity().unwrap();
    let runs = counter(&db, "levels") - 1;
    assert!(runs >= 3);
    db.close().unwrap();
    for &k in keys.iter().step_by(331) {
        let db = reopen_mem(&dev, &vfs).unwrap();
        let head_height = counter(&db, "head_height");
        let before = db.stats().device;
        assert_eq!(db.get(k).unwrap(), Some(k ^ 5));
        let after = db.stats().device;
        assert!(
            after.reads - before.reads <= head_height + runs,
            "{} pages read for a head tree of height {head_height} and {runs} runs",
            after.reads - before.reads
        );
        assert_eq!(
            after.reads - before.reads,
            after.read_requests - before.read_requests
        );
        db.close().unwrap();
    }
}

#[test]
fn a_filter_and_its_phantom_are_both_dropped_by_a_merge_into_the_last_level() {
    // |L0| = 29 entries (two 512-byte pages of 29 entries, half full), k = 2: |L1| = 58.
    let (db, _, _) = mem_db(opts(512, 16, 2, 2, false)).unwrap();
    let pairs: Vec<(u64, u64)> = (0..30u64).map(|k| (k, k)).collect();
    db.bulk_insert(&pairs).unwrap();
    assert_eq!(counter(&db, "levels"), 2, "the bulk load builds L1 only");
    let deleted: Vec<u64> = (0..30u64).step_by(3).collect();
    for &k in &deleted {
        db.delete(k).unwrap();
    }
    assert_eq!(
        counter(&db, "filters_inserted"),
        10,
        "keys in L1 are deleted by filters"
    );
    assert_eq!(counter(&db, "merges"), 0);
    // The head holds the 10 filters and L1's 2 fences: 17 inserts fill it.
    for k in 100..116u64 {
        db.insert(k, k).unwrap();
    }
    assert_eq!(counter(&db, "merges"), 0);
    db.insert(116, 116).unwrap();
    assert_eq!(counter(&db, "merges"), 1);
    db.check_integrity().unwrap();
    // The merge met every filter with its phantom in the last level and dropped both.
    assert_eq!(counter(&db, "filter_entries_in_runs"), 0);
    assert_eq!(counter(&db, "index_entries"), 20 + 17);
    for k in 0..30u64 {
        let want = (k % 3 != 0).then_some(k);
        assert_eq!(db.get(k).unwrap(), want);
    }
}

#[test]
fn filters_cancel_phantoms_through_cascading_merges() {
    let (db, _, _) = mem_db(opts(512, 16, 3, 2, false)).unwrap();
    // Bulk-load, so that every key starts in the levels, then delete half of them.
    let pairs: Vec<(u64, u64)> = (0..3_000u64).map(|k| (k * 2, k)).collect();
    db.bulk_insert(&pairs).unwrap();
    db.check_integrity().unwrap();
    for k in (0..3_000u64).filter(|k| k % 2 == 0) {
        db.delete(k * 2).unwrap();
    }
    assert_eq!(counter(&db, "filters_inserted"), 1_500);
    // Push the filters down with unrelated inserts until the last level is rewritten.
    let levels = counter(&db, "levels");
    let mut k = 0u64;
    while counter(&db, "levels") == levels {
        db.insert(k * 2 + 1, k).unwrap();
        k += 1;
    }
    db.check_integrity().unwrap();
    for j in 0..3_000u64 {
        let want = (j % 2 == 1).then_some(j);
        assert_eq!(db.get(j * 2).unwrap(), want, "key {}", j * 2);
    }
    assert_eq!(db.range(..).unwrap().count() as u64, 1_500 + k);
    // Every filter reached the last level with its phantom: no index entry but the live ones.
    assert_eq!(counter(&db, "filter_entries_in_runs"), 0);
    assert_eq!(counter(&db, "index_entries"), 1_500 + k);
}

#[test]
fn deamortized_merges_bound_the_writes_of_one_insertion() {
    let mut worst = Vec::new();
    for deamortize in [false, true] {
        let (db, _, _) = mem_db(opts(512, 32, 3, 4, deamortize)).unwrap();
        let mut rng = Rng::new(5);
        let mut max = 0;
        for i in 0..12_000u64 {
            let before = db.stats().device.writes;
            db.insert(rng.next_u64(), i).unwrap();
            max = max.max(db.stats().device.writes - before);
        }
        db.check_integrity().unwrap();
        assert_eq!(counter(&db, "forced_merge_completions"), 0);
        worst.push(max);
    }
    // Without deamortization one insertion rewrites whole levels (§3.4, Figure 4); with it,
    // a step is bounded by the merge's share per insertion, rounded up to whole multi-page
    // writes of the I/O unit.
    assert!(
        worst[1] * 4 < worst[0],
        "worst pages written by one insertion: {} amortized, {} deamortized",
        worst[0],
        worst[1]
    );
}

#[test]
fn a_range_search_issues_one_read_request_per_level() {
    let (db, dev, vfs) = mem_db(opts(512, 64, 4, 2, false)).unwrap();
    let pairs: Vec<(u64, u64)> = (0..5_000u64).map(|k| (k * 10, k)).collect();
    db.bulk_insert(&pairs).unwrap();
    for k in 0..1_000u64 {
        db.insert(k * 50 + 5, k).unwrap();
    }
    db.check_integrity().unwrap();
    let runs = counter(&db, "levels") - 1;
    assert!(runs >= 2);
    db.close().unwrap();
    let db = reopen_mem(&dev, &vfs).unwrap();
    // Warm the head tree (the buffer pool holds it; runs are read past the pool).
    let lo = 10_000u64;
    let hi = 30_000u64;
    let want = db.range(lo..=hi).unwrap().count();
    let before = db.stats().device;
    let got = db.range(lo..=hi).unwrap().count();
    let after = db.stats().device;
    assert_eq!(got, want);
    assert!(got > 2_000);
    let requests = after.read_requests - before.read_requests;
    let pages = after.reads - before.reads;
    assert!(pages > 2 * runs, "a multi-page range: {pages} pages");
    // One request per level at most: a level whose span is one page and which the pool
    // holds (the two top ones here: 29 entries a page make the fence levels small) may be
    // served from the pool.
    assert!(
        requests <= runs && requests + 2 >= runs,
        "{requests} requests for {runs} levels and {pages} pages"
    );
}

#[test]
fn short_scans_find_the_levels_the_pool_holds_cached() {
    let (db, dev, vfs) = mem_db(opts(512, 16, 4, 2, false)).unwrap();
    let pairs: Vec<(u64, u64)> = (0..5_000u64).map(|k| (k * 10, k)).collect();
    db.bulk_insert(&pairs).unwrap();
    for k in 0..1_000u64 {
        db.insert(k * 50 + 5, k).unwrap();
    }
    let runs = counter(&db, "levels") - 1;
    assert!(runs >= 2);
    db.close().unwrap();
    let mut db = reopen_mem(&dev, &vfs).unwrap();
    let scan = |db: &mut Db, lo: u64| {
        let before = db.stats().device.reads;
        let got: Vec<(u64, u64)> = db
            .range(lo..=lo + 20)
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        (got, db.stats().device.reads - before)
    };
    let (first, cold) = scan(&mut db, 20_000);
    assert_eq!(
        first,
        vec![
            (20_000, 2_000),
            (20_005, 400),
            (20_010, 2_001),
            (20_020, 2_002)
        ]
    );
    // A neighbouring short scan: the head and the pool-held levels' pages are cached now
    // (one page per level spans the range), the lowest level is read past the pool again.
    let (second, warm) = scan(&mut db, 20_030);
    assert_eq!(second.first(), Some(&(20_030, 2_003)));
    assert!(
        warm < runs,
        "a warm short scan reads {warm} pages for {runs} levels (cold: {cold})"
    );
    assert!(warm >= 1, "the lowest level is read past the pool");
}

#[test]
fn deamortize_option_is_saved_and_search_sees_both_head_trees() {
    let (db, dev, vfs) = mem_db(opts(512, 16, 3, 4, true)).unwrap();
    let mut model = BTreeMap::new();
    let mut saw_merge_in_progress = false;
    for k in 0..3_000u64 {
        db.insert(k * 7, k).unwrap();
        model.insert(k * 7, k);
        if counter(&db, "merge_in_progress") == 1 {
            saw_merge_in_progress = true;
            // Everything is visible while the merge runs.
            assert_eq!(db.get(k * 7).unwrap(), Some(k));
            assert_eq!(db.get(0).unwrap(), Some(0));
        }
    }
    assert!(saw_merge_in_progress);
    db.flush().unwrap();
    drop(db);
    let db = reopen_mem(&dev, &vfs).unwrap();
    db.check_integrity().unwrap();
    let got: BTreeMap<u64, u64> = db.range(..).unwrap().map(|kv| kv.unwrap()).collect();
    assert_eq!(got, model);
}

#[test]
fn keys_zero_and_max_are_ordinary_keys() {
    let (db, _, _) = mem_db(opts(512, 8, 2, 2, true)).unwrap();
    for round in 0..200u64 {
        db.insert(0, round).unwrap();
        db.insert(u64::MAX, round).unwrap();
        db.insert(round * 3 + 1, round).unwrap();
        if round % 3 == 0 {
            db.delete(0).unwrap();
        }
    }
    db.check_integrity().unwrap();
    assert_eq!(db.get(u64::MAX).unwrap(), Some(199));
    assert_eq!(db.get(0).unwrap(), Some(199));
    let all: Vec<_> = db
        .range(u64::MAX - 1..)
        .unwrap()
        .map(|kv| kv.unwrap())
        .collect();
    assert_eq!(all, vec![(u64::MAX, 199)]);
}

#[test]
fn invalid_options_are_refused() {
    let dev = MemDevice::new(512);
    let s = Storage {
        device: Box::new(dev),
        vfs: Arc::new(MemVfs::new()),
    };
    // f = 29 for 512-byte pages: k must be below f - 1.
    let o = opts(512, 8, 28, 2, true);
    assert!(matches!(
        Db::create_on(s, o),
        Err(flashix::Error::InvalidOptions(_))
    ));
}

#[test]
fn a_flipped_bit_in_any_page_is_corruption_naming_the_page() {
    let (mut db, dev, vfs) = mem_db(opts(512, 8, 3, 2, true)).unwrap();
    let model = flashix::testing::insert_and_delete(&mut db, 9, 1_500, 4_000).unwrap();
    db.close().unwrap();
    let detected = flashix::testing::flip_a_bit_in_every_page(&dev, &vfs, 512, &model).unwrap();
    // Many pages are free (old runs and head trees), so only the live ones count.
    assert!(detected >= 20, "{detected} pages detected");
}

/// An unset k is the cost model's choice for the index's page size, pool and tuning,
/// saved in the manifest; the LSM takes the same k for the same sizes (App. D).
#[test]
fn unset_k_comes_from_the_cost_model_and_survives_reopen() {
    use flashix::cost::{fdtree, DeviceCosts};
    use flashix::{LsmOptions, Tuning};
    // Two tunings far apart: searches only on a device with costly random reads (few
    // levels win), and inserts only (many levels win), must give different k.
    for (search_fraction, rand_read_us) in [(1.0, 500.0), (0.0, 50.0)] {
        let tuning = Tuning {
            device: DeviceCosts::new(4096, rand_read_us, 100.0, 2.0, 2.0).unwrap(),
            expected_entries: 50_000_000,
            search_fraction,
            pio_device: None,
            bulk: None,
        };
        let o = Options::new(EngineKind::FdTree)
            .buffer_pool_bytes(16 << 20)
            .tuning(tuning.clone());
        let f = FdTreeOptions::entries_per_page(o.page_size);
        let want = o
            .fdtree_model_k(o.fdtree_options().head_tree_bytes, f)
            .unwrap();
        let chosen =
            fdtree::choose(&tuning.device, &o.fdtree_model_workload(512 << 10, f)).unwrap();
        assert_eq!(u64::from(want), chosen.k);
        let (db, dev, vfs) = mem_db(o.clone()).unwrap();
        assert_eq!(counter(&db, "k"), u64::from(want));
        db.insert(1, 2).unwrap();
        db.close().unwrap();
        let db = reopen_mem(&dev, &vfs).unwrap();
        assert_eq!(counter(&db, "k"), u64::from(want));

        let lo = Options::new(EngineKind::Lsm)
            .buffer_pool_bytes(16 << 20)
            .tuning(tuning)
            .lsm(LsmOptions::default());
        let (db, _, _) = mem_db(lo).unwrap();
        assert_eq!(counter(&db, "k"), u64::from(want));
    }
    let ks: Vec<u64> = [(1.0, 500.0), (0.0, 50.0)]
        .iter()
        .map(|&(p, r)| {
            let o = Options::new(EngineKind::FdTree).tuning(Tuning {
                device: DeviceCosts::new(4096, r, 100.0, 2.0, 2.0).unwrap(),
                expected_entries: 50_000_000,
                search_fraction: p,
                pio_device: None,
                bulk: None,
            });
            u64::from(
                o.fdtree_model_k(512 << 10, FdTreeOptions::entries_per_page(4096))
                    .unwrap(),
            )
        })
        .collect();
    assert_ne!(ks[0], ks[1], "the tuning must change the choice");
}

/// A tuning for another page size is refused with a clear error.
#[test]
fn tuning_for_another_page_size_is_refused() {
    use flashix::cost::DeviceCosts;
    use flashix::Tuning;
    let o = Options::new(EngineKind::FdTree)
        .page_size(4096)
        .tuning(Tuning {
            device: DeviceCosts::reference(8192),
            expected_entries: 1_000_000,
            search_fraction: 0.5,
            pio_device: None,
            bulk: None,
        });
    let dev = MemDevice::new(4096);
    let s = Storage {
        device: Box::new(dev),
        vfs: Arc::new(MemVfs::new()),
    };
    let err = Db::create_on(s, o).err().expect("must fail");
    assert!(err.to_string().contains("page size"), "{err}");
}

/// §4 Eq. 10: the top levels stay in the pool; the levels below the pool's reach are read
/// past it, so a warm search costs about one read per uncached level and the upper
/// levels' pages are not pushed out by the lowest level's.
#[test]
fn warm_searches_keep_the_upper_levels_in_the_pool() {
    // 512-byte pages (f = 29), head tree of two pages (|L0| = 29), k = 4, a 24-frame pool.
    let (db, _, _) = mem_db(opts(512, 24, 4, 2, false)).unwrap();
    let mut rng = Rng::new(11);
    let keys: Vec<u64> = (0..6_000).map(|_| rng.next_u64()).collect();
    for &k in &keys {
        db.insert(k, k).unwrap();
    }
    db.check_integrity().unwrap();
    let runs = counter(&db, "levels") - 1;
    let pages: Vec<u64> = (1..=runs)
        .map(|i| counter(&db, &format!("level_{i}_pages")))
        .collect();
    // The levels the pool can reach: those with fewer than 24 pages above them (the head
    // tree's two pages included).
    let mut above = counter(&db, "head_pages");
    let mut cached = 0;
    for &p in &pages {
        if above >= 24 {
            break;
        }
        cached += 1;
        above += p;
    }
    assert!(
        cached >= 1 && cached < runs,
        "the test needs cached and uncached levels: {pages:?}"
    );
    for &k in keys.iter().take(2_000) {
        db.get(k).unwrap();
    }
    let s0 = db.stats();
    let n = 2_000u64;
    for &k in keys.iter().skip(2_000).take(n as usize) {
        assert_eq!(db.get(k).unwrap(), Some(k));
    }
    let s1 = db.stats();
    let reads = s1.device.reads - s0.device.reads;
    let misses = s1.buffer.misses - s0.buffer.misses;
    // Every read past the pool is a page of an uncached level: at most one per uncached
    // level per search, and at least one for the searches that reach those levels.
    let past = reads - misses;
    assert!(
        past <= n * (runs - cached),
        "{past} reads past the pool for {n} searches and {} uncached levels",
        runs - cached
    );
    assert!(past > 0, "no level was read past the pool");
    // The cached levels' pages are mostly hits: far fewer misses than searches.
    assert!(
        misses < n / 2,
        "{misses} pool misses for {n} warm searches: the upper levels were evicted"
    );
}

/// An open-ended range (`lo..`, taken in part) reads at each level only the pages that
/// span the lowest level's batch, not a whole multi-page request of every level per batch.
#[test]
fn an_open_ended_range_reads_about_the_pages_it_returns() {
    let (db, dev, vfs) = mem_db(opts(512, 64, 4, 2, false)).unwrap();
    let pairs: Vec<(u64, u64)> = (0..40_000u64).map(|k| (k * 10, k)).collect();
    db.bulk_insert(&pairs).unwrap();
    for k in 0..3_000u64 {
        db.insert(k * 130 + 5, k).unwrap();
    }
    db.check_integrity().unwrap();
    let runs = counter(&db, "levels") - 1;
    assert!(runs >= 3, "{runs} runs");
    let lowest = counter(&db, &format!("level_{runs}_pages"));
    db.close().unwrap();
    let db = reopen_mem(&dev, &vfs).unwrap();
    let take = 1_500usize;
    let before = db.stats().device;
    let got: Vec<(u64, u64)> = db
        .range(100_000..)
        .unwrap()
        .take(take)
        .map(|r| r.unwrap())
        .collect();
    let after = db.stats().device;
    assert_eq!(got.len(), take);
    assert_eq!(got[0].0, 100_000);
    // f = 29 entries per 512-byte page (28 index entries after the leading fence): the
    // lowest level holds the 1,500 entries in about 54 pages; allow the batch's rounding,
    // the levels above (k = 4: a quarter as many pages each) and the fences.
    let pages = after.reads - before.reads;
    assert!(
        pages <= 2 * (take as u64 / 28) + 8 * runs,
        "{pages} pages read for {take} entries ({runs} runs, {lowest} pages in the lowest)"
    );
}

/// A scan told how many entries it will take (`Range::limit_hint`) reads the pages those
/// entries span in its first batch, not the default batch of 8 pages of every level; and
/// the hint changes nothing in what the scan returns, also when the caller takes more.
#[test]
fn a_limit_hint_sizes_the_first_batch_for_the_entries_taken() {
    let (db, dev, vfs) = mem_db(opts(512, 64, 27, 16, false)).unwrap();
    let pairs: Vec<(u64, u64)> = (0..40_000u64).map(|k| (k * 10, k)).collect();
    db.bulk_insert(&pairs).unwrap();
    // The bulk load's lowest level of about 1,430 pages and a fence level above it (1/28
    // as many pages; k = 27, 16 head pages, |L0| = 232).
    assert_eq!(counter(&db, "levels") - 1, 2);
    db.close().unwrap();
    let scan = |hint: Option<u64>, lo: u64, take: usize| {
        let db = reopen_mem(&dev, &vfs).unwrap();
        // Warm the head tree and the fence level (through the pool); the lowest level's
        // pages are read past it.
        db.get(lo).unwrap();
        let before = db.stats().device.reads;
        let mut range = db.range(lo..).unwrap();
        if let Some(n) = hint {
            range = range.limit_hint(n);
        }
        let got: Vec<(u64, u64)> = range.take(take).map(|r| r.unwrap()).collect();
        let reads = db.stats().device.reads - before;
        (got, reads)
    };
    // 20 entries at 28 a page span at most 2 pages of the lowest level: the hinted first
    // batch reads 2 there (and at most as many in the fence level, plus a head leaf),
    // where the default first batch reads 8.
    let (plain, plain_reads) = scan(None, 100_000, 20);
    let (hinted, hinted_reads) = scan(Some(20), 100_000, 20);
    assert_eq!(hinted, plain);
    assert!(
        hinted_reads <= 5 && plain_reads >= hinted_reads + 6,
        "{hinted_reads} pages for 20 entries, {plain_reads} without the hint"
    );
    // Taking more than the hint goes on reading: every entry, in order.
    let (more, _) = scan(Some(20), 100_000, 500);
    let want: Vec<(u64, u64)> = (10_000..10_500u64).map(|k| (k * 10, k)).collect();
    assert_eq!(more, want);
}

/// Every key of `[lo, hi]` out of the model.
fn model_delete_range(model: &mut BTreeMap<u64, u64>, lo: u64, hi: u64) {
    let doomed: Vec<u64> = model.range(lo..=hi).map(|(&k, _)| k).collect();
    for k in doomed {
        model.remove(&k);
    }
}

#[test]
fn range_tombstones_match_a_model_through_merges_and_recovery() {
    for deamortize in [false, true] {
        let (mut db, dev, vfs) = mem_db(opts(512, 16, 3, 2, deamortize)).unwrap();
        let mut rng = Rng::new(if deamortize { 21 } else { 22 });
        let mut model = BTreeMap::new();
        let (mut most_tombs, mut most_level_tombs) = (0, 0);
        let space = 60_000u64;
        for i in 0..25_000u64 {
            let k = rng.next_u64() % space;
            match rng.below(100) {
                0..=69 => {
                    db.insert(k, i).unwrap();
                    model.insert(k, i);
                }
                70..=89 => {
                    db.delete(k).unwrap();
                    model.remove(&k);
                }
                _ => {
                    // Ranges of 1 key to about a twelfth of the key space.
                    let span = [0, 10, 300, 5_000][rng.below(4) as usize];
                    let hi = k + rng.below(span + 1);
                    db.delete_range(k..=hi).unwrap();
                    model_delete_range(&mut model, k, hi);
                }
            }
            most_tombs = most_tombs.max(counter(&db, "range_tombstones"));
            let s = db.stats();
            let in_levels = s
                .engine_counters
                .iter()
                .filter(|(n, _)| n.ends_with("_range_tombstones") && n.starts_with("level_"))
                .map(|(_, &v)| v)
                .sum::<u64>();
            most_level_tombs = most_level_tombs.max(in_levels);
            if i % 2_500 == 0 {
                db.check_integrity().unwrap();
                for _ in 0..50 {
                    let k = rng.next_u64() % space;
                    assert_eq!(db.get(k).unwrap(), model.get(&k).copied(), "key {k}");
                }
                let lo = rng.next_u64() % space;
                let got: Vec<(u64, u64)> = db
                    .range(lo..lo + 2_000)
                    .unwrap()
                    .map(|kv| kv.unwrap())
                    .collect();
                let want: Vec<(u64, u64)> =
                    model.range(lo..lo + 2_000).map(|(&k, &v)| (k, v)).collect();
                assert_eq!(got, want, "range from {lo}");
            }
        }
        assert!(counter(&db, "levels") >= 4, "L0 + 3 runs at least");
        assert!(most_tombs > 5, "range tombstones accumulated: {most_tombs}");
        assert!(
            most_level_tombs > 0,
            "merges carried range tombstones into the levels"
        );
        db.check_integrity().unwrap();
        let all = |db: &mut Db| -> BTreeMap<u64, u64> {
            db.range(..).unwrap().map(|kv| kv.unwrap()).collect()
        };
        assert_eq!(all(&mut db), model);
        // Not closed: the WAL's range deletes are replayed on the last checkpoint.
        drop(db);
        let mut db = reopen_mem(&dev, &vfs).unwrap();
        db.check_integrity().unwrap();
        assert_eq!(all(&mut db), model);
        db.close().unwrap();
        let mut db = reopen_mem(&dev, &vfs).unwrap();
        db.check_integrity().unwrap();
        assert_eq!(all(&mut db), model);
        // Inserting until the merges reach the last level retires every tombstone there.
        let mut i = 0u64;
        while counter(&db, "level_1_range_tombstones") > 0
            || counter(&db, "head_range_tombstones") > 0
        {
            let k = space + i;
            db.insert(k, k).unwrap();
            model.insert(k, k);
            i += 1;
            assert!(i < 200_000, "tombstones never left the upper levels");
        }
        db.check_integrity().unwrap();
        assert_eq!(all(&mut db), model);
    }
}

#[test]
fn a_range_delete_reads_and_writes_a_bounded_number_of_pages() {
    // 512-byte pages (20 entries), |L0| = 80 entries, k = 4: 400,000 keys make 5 levels.
    let (db, _, _) = mem_db(opts(512, 64, 4, 8, false)).unwrap();
    let pairs: Vec<(u64, u64)> = (0..400_000u64).map(|i| (i * 2, i)).collect();
    db.bulk_insert(&pairs).unwrap();
    assert!(
        counter(&db, "levels") >= 5,
        "{:?}",
        db.stats().engine_counters
    );
    let merges = counter(&db, "merges");
    let mut lo = 0u64;
    for n in [100u64, 1_000, 10_000, 100_000] {
        let hi = lo + 2 * (n - 1);
        let before = db.stats().device;
        db.delete_range(lo..=hi).unwrap();
        let after = db.stats().device;
        let (reads, writes) = (after.reads - before.reads, after.writes - before.writes);
        eprintln!("range delete of {n} keys: {reads} pages read, {writes} written");
        // The head tree (8 pages, in the pool or read once) and nothing of the levels,
        // whatever the range's size; a scan-and-delete read about n / 20 pages.
        assert!(
            reads <= 8 && writes <= 8,
            "{n} keys: {reads} read, {writes} written"
        );
        assert_eq!(db.get(lo).unwrap(), None);
        assert_eq!(db.get(hi).unwrap(), None);
        assert_eq!(db.get(hi + 2).unwrap(), Some((hi + 2) / 2));
        if lo > 0 {
            assert_eq!(db.get(lo - 2).unwrap(), Some((lo - 2) / 2));
        }
        let got: Vec<(u64, u64)> = db
            .range(lo.saturating_sub(4)..=hi + 4)
            .unwrap()
            .map(|kv| kv.unwrap())
            .collect();
        let mut want: Vec<(u64, u64)> = Vec::new();
        if lo > 0 {
            want.extend([((lo - 4), (lo - 4) / 2), (lo - 2, (lo - 2) / 2)]);
        }
        want.extend([(hi + 2, (hi + 2) / 2), (hi + 4, (hi + 4) / 2)]);
        assert_eq!(got, want);
        lo = hi + 100;
    }
    assert_eq!(
        counter(&db, "merges"),
        merges,
        "no merge ran: the figures are the deletes'"
    );
    assert_eq!(counter(&db, "range_tombstones"), 4);
    db.check_integrity().unwrap();
}

/// A `k` left to the cost model is re-chosen whenever the whole tree is one run that has
/// reached its level's capacity (a bulk load, a cascade that overflows the lowest level):
/// each new `k` is the model's for the run's entries, the run sits at the shallowest level
/// that holds it, the tree keeps every entry, and the `k` in effect survives a reopen with
/// another pool. A tree given the same `k` fixed keeps it and grows a level instead.
#[test]
fn a_model_k_is_rechosen_as_the_tree_grows() {
    let tuning = flashix::testing::growth_tuning().unwrap();
    let fd = FdTreeOptions {
        k: None,
        head_tree_bytes: 4 * 4096,
        deamortize: true,
        io_unit_bytes: 16 * 4096,
    };
    let o = Options::new(EngineKind::FdTree)
        .buffer_pool_bytes(16 * 4096)
        .tuning(tuning)
        .fdtree(fd.clone());
    let model_k = |stored: u64| flashix::testing::model_k_for(&o, 4 * 4096, stored).unwrap();
    // The shape after a change of k: the model's k for the lowest level's entries, which
    // sits at the shallowest level whose capacity is above them.
    let check_shape = |db: &Db| {
        let runs = counter(db, "levels") - 1;
        let low = counter(db, &format!("level_{runs}_entries"));
        assert_eq!(counter(db, "k"), model_k(low), "{low} entries in L{runs}");
        assert!(low < counter(db, &format!("level_{runs}_capacity")));
        if runs > 1 {
            let above = counter(db, &format!("level_{}_capacity", runs - 1));
            assert!(low >= above, "L{runs} of {low} entries fits L{}", runs - 1);
        }
    };
    let fixed = |k0: u64| {
        let fd = FdTreeOptions {
            k: Some(k0 as u32),
            ..fd.clone()
        };
        o.clone().fdtree(fd)
    };
    let dir = tempfile::Builder::new()
        .prefix("fdtree-retune-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let mut g = flashix::testing::grow_with_model_k(
        o.clone(),
        fixed,
        dir.path(),
        20_000,
        200_000,
        64 * 4096,
        check_shape,
    )
    .unwrap();
    g.verify().unwrap();
    assert_eq!(g.k0, model_k(1_999));
    let (db, fx) = (&g.db, &g.fixed);
    assert!(
        counter(fx, "levels") > counter(db, "levels"),
        "the fixed k grew levels: {} against {}",
        counter(fx, "levels"),
        counter(db, "levels")
    );
}

/// Merges are published by a checkpoint once the pages they freed reach the levels' (256
/// pages at least), not after every merge: fewer checkpoints than merges, a data file
/// that stays within a bound of the index, and an index reopened without `close` (the log
/// redoes the merges since the last checkpoint) that holds every entry.
#[test]
fn merges_are_published_once_the_pages_they_freed_reach_the_levels() {
    const PAGE: u64 = 512;
    for deamortize in [false, true] {
        let (db, dev, vfs) = mem_db(opts(PAGE as usize, 16, 3, 2, deamortize)).unwrap();
        let mut rng = Rng::new(31);
        let mut model = BTreeMap::new();
        let mut most_over = 0i64;
        for i in 0..30_000u64 {
            let k = rng.next_u64() % 100_000;
            db.insert(k, i).unwrap();
            model.insert(k, i);
            let levels: u64 = db
                .stats()
                .engine_counters
                .iter()
                .filter(|(n, _)| n.starts_with("level_") && n.ends_with("_pages"))
                .map(|(_, &v)| v)
                .sum();
            // The live levels L; the pages freed since the checkpoint, at most
            // max(L, 256) before the merge that makes one due, plus that merge's (up to
            // L); a merge's output in progress (up to L for a cascade into the lowest
            // level); the head trees. (A checkpoint after every merge kept the file
            // within 3L here; with none, it grows with every merge.)
            let file = (dev.len_bytes() / PAGE) as i64;
            most_over = most_over.max(file - 4 * levels.max(256) as i64);
        }
        let s = db.stats();
        let merges = counter(&db, "merges");
        assert!(merges > 500, "{merges} merges");
        assert!(
            (10..merges / 10).contains(&s.wal.checkpoints),
            "{} checkpoints for {merges} merges",
            s.wal.checkpoints
        );
        assert!(
            most_over <= 64,
            "the file outgrew four times the levels by {most_over} pages"
        );
        db.check_integrity().unwrap();
        drop(db);
        let db = reopen_mem(&dev, &vfs).unwrap();
        db.check_integrity().unwrap();
        let got: BTreeMap<u64, u64> = db.range(..).unwrap().map(|kv| kv.unwrap()).collect();
        assert_eq!(got, model);
    }
}

/// Deamortized, a completed merge is published by a checkpoint taken when the head tree
/// is next frozen: its pages are flushed just before they stop changing, and the new head
/// tree's pages, all allocated after that checkpoint, change without before-images.
#[test]
fn head_tree_pages_change_without_before_images_between_publications() {
    for deamortize in [false, true] {
        let o = opts(512, 16, 3, 2, deamortize);
        let s = upserts_across_reopen(o, 37, 30_000, 100_000).unwrap();
        let merges = s.engine_counters["merges"];
        assert!(merges > 500, "{merges} merges");
        assert!(s.wal.checkpoints >= 10, "{} checkpoints", s.wal.checkpoints);
        if deamortize {
            // Publishing at the merge's completion logged an image of a head-tree page
            // after each checkpoint (34 images for 34 checkpoints).
            assert!(
                s.wal.page_images * 4 < s.wal.checkpoints,
                "{} before-images for {} checkpoints",
                s.wal.page_images,
                s.wal.checkpoints
            );
        }
    }
}

/// On a file (a device whose requests overlap with work) deamortized merges run on the
/// merge thread: see `flashix::testing::merges_on_a_file_across_drops`.
#[test]
fn merges_on_the_merge_thread_match_a_model_and_survive_a_drop_mid_merge() {
    let dir = tempfile::Builder::new()
        .prefix("fdtree-thread-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let db = merges_on_a_file_across_drops(opts(512, 16, 3, 4, true), dir.path(), 17).unwrap();
    assert!(counter(&db, "levels") >= 3);
}

/// Threads writing at once on keys of their own, beside a reader, replay from the log: see
/// `flashix::testing::threads_write_and_the_log_replays_it`.
#[test]
fn writes_beside_each_other_replay_from_the_log() {
    for deamortize in [false, true] {
        flashix::testing::threads_write_and_the_log_replays_it(opts(512, 64, 3, 4, deamortize))
            .unwrap();
    }
}
