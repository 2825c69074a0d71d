//! LSM-tree behaviour beyond the model check: cascading merges into several components with
//! the invariants holding, tombstones hiding older values and vanishing at the last
//! component, range tombstones (a model history with range deletes of up to 5,000 keys, and
//! the bounded I/O of one range delete), the I/O of a cold point search, and rolling merges
//! run a step per insert (a frozen C0 seen by searches, a merge in progress restarted at
//! open, the writes of one insert bounded).

use flashix::io::{MemDevice, MemVfs};
use flashix::testing::{mem_db, reopen_mem, upserts_across_reopen, Rng};
use flashix::{Db, EngineKind, LsmOptions, Options, Storage};
use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use std::sync::Arc;

fn opts(page_size: usize, frames: u64, k: u32, c0_pages: u64, io_unit_pages: u64) -> Options {
    Options::new(EngineKind::Lsm)
        .page_size(page_size)
        .buffer_pool_bytes(frames * page_size as u64)
        .lsm(LsmOptions {
            k: Some(k),
            c0_bytes: c0_pages * page_size as u64,
            io_unit_bytes: io_unit_pages * page_size as u64,
            search_before_delete: false,
            deamortize: true,
        })
}

/// Component slots (C1 .. Cn, empty ones included): the levels of the typed shape.
fn slots(db: &Db) -> u64 {
    db.stats().shape.levels.len() as u64
}

fn counter(db: &Db, name: &str) -> u64 {
    let s = db.stats();
    *s.engine_counters
        .get(name)
        .unwrap_or_else(|| panic!("{}: no counter {name:?}", s.engine))
}

fn contents(db: &mut Db) -> BTreeMap<u64, u64> {
    db.range(..).unwrap().map(|kv| kv.unwrap()).collect()
}

/// `o` with its rolling merges run to completion in the insert that fills C0 (`false`) or
/// a step per mutation (`true`, the default).
fn deamortized(o: Options, deamortize: bool) -> Options {
    let lsm = LsmOptions {
        deamortize,
        ..o.lsm_options()
    };
    o.lsm(lsm)
}

#[test]
fn merges_cascade_into_several_components_and_invariants_hold() {
    for (io_unit, deamortize) in [(1, true), (3, false), (3, true), (128, true)] {
        let o = deamortized(opts(512, 16, 3, 2, io_unit), deamortize);
        let (mut db, dev, vfs) = mem_db(o).unwrap();
        let mut rng = Rng::new(11);
        let mut model = BTreeMap::new();
        for i in 0..12_000u64 {
            let k = rng.next_u64() % 20_000;
            if i % 5 == 4 {
                db.delete(k).unwrap();
                model.remove(&k);
            } else {
                db.insert(k, i).unwrap();
                model.insert(k, i);
            }
            if i % 1_500 == 0 {
                db.check_integrity().unwrap();
            }
        }
        db.check_integrity().unwrap();
        assert!(
            counter(&db, "components") >= 3,
            "{:?}",
            db.stats().engine_counters
        );
        assert!(counter(&db, "merges") > 50);
        assert!(counter(&db, "merge_pages_written") > 0);
        assert!(counter(&db, "merge_pages_read") > 0);
        assert_eq!(contents(&mut db), model);
        for (&k, &v) in model.iter().step_by(97) {
            assert_eq!(db.get(k).unwrap(), Some(v));
        }
        db.close().unwrap();
        let mut db = reopen_mem(&dev, &vfs).unwrap();
        db.check_integrity().unwrap();
        assert_eq!(contents(&mut db), model);
    }
}

#[test]
fn tombstones_hide_older_values_and_vanish_at_the_last_component() {
    let (mut db, _, _) = mem_db(opts(512, 16, 2, 2, 3)).unwrap();
    // Old values pushed down into components.
    for k in 0..3_000u64 {
        db.insert(k, k + 1).unwrap();
    }
    assert!(counter(&db, "components") >= 2);
    // Delete every third key: tombstones in newer components shadow older values.
    for k in (0..3_000u64).step_by(3) {
        db.delete(k).unwrap();
    }
    db.check_integrity().unwrap();
    let tombstones_somewhere: u64 = (1..=slots(&db))
        .map(|i| counter(&db, &format!("component_{i}_tombstones")))
        .sum::<u64>()
        + counter(&db, "c0_entries");
    assert!(tombstones_somewhere > 0);
    for k in 0..3_000u64 {
        let want = (k % 3 != 0).then_some(k + 1);
        assert_eq!(db.get(k).unwrap(), want, "key {k}");
    }
    let want: BTreeMap<u64, u64> = (0..3_000u64)
        .filter(|k| k % 3 != 0)
        .map(|k| (k, k + 1))
        .collect();
    assert_eq!(contents(&mut db), want);
    // Enough new keys to cascade everything into the last component: no tombstone left
    // there (check_integrity, Invariant 3), and no deleted key back.
    for k in 10_000..40_000u64 {
        db.insert(k, k).unwrap();
    }
    db.check_integrity().unwrap();
    let n = counter(&db, "components");
    let last = (1..=slots(&db))
        .rev()
        .find(|i| counter(&db, &format!("component_{i}_entries")) > 0)
        .unwrap();
    assert!(n >= 2);
    assert_eq!(counter(&db, &format!("component_{last}_tombstones")), 0);
    // All entries of the first 3,000 keys reached the last component by now.
    let total_tombstones: u64 = (1..=last)
        .map(|i| counter(&db, &format!("component_{i}_tombstones")))
        .sum();
    assert_eq!(total_tombstones, 0, "{:?}", db.stats().engine_counters);
    for k in (0..3_000u64).step_by(7) {
        assert_eq!(db.get(k).unwrap(), (k % 3 != 0).then_some(k + 1));
    }
}

#[test]
fn a_cold_point_search_reads_c0_height_plus_one_page_per_component_level() {
    let (db, dev, vfs) = mem_db(opts(512, 16, 3, 2, 128)).unwrap();
    let mut rng = Rng::new(3);
    let keys: Vec<u64> = (0..8_000).map(|_| rng.next_u64()).collect();
    for &k in &keys {
        db.insert(k, k ^ 5).unwrap();
    }
    db.check_integrity().unwrap();
    assert!(counter(&db, "components") >= 3);
    db.close().unwrap();
    for &k in keys.iter().step_by(331) {
        let db = reopen_mem(&dev, &vfs).unwrap();
        let levels: u64 = counter(&db, "c0_height")
            + (1..=slots(&db))
                .map(|i| counter(&db, &format!("component_{i}_height")))
                .sum::<u64>();
        let before = db.stats().device;
        assert_eq!(db.get(k).unwrap(), Some(k ^ 5));
        let after = db.stats().device;
        assert!(
            after.reads - before.reads <= levels,
            "{} pages read for {levels} levels",
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
fn bulk_insert_into_an_empty_index_builds_one_component() {
    let (db, dev, vfs) = mem_db(opts(512, 16, 3, 2, 3)).unwrap();
    let pairs: Vec<(u64, u64)> = (0..5_000u64).map(|k| (k * 2, k)).collect();
    db.bulk_insert(&pairs).unwrap();
    db.check_integrity().unwrap();
    assert_eq!(counter(&db, "components"), 1);
    assert_eq!(counter(&db, "merges"), 0);
    db.close().unwrap();
    let mut db = reopen_mem(&dev, &vfs).unwrap();
    assert_eq!(contents(&mut db), pairs.iter().copied().collect());
    assert_eq!(db.get(4).unwrap(), Some(2));
    assert_eq!(db.get(5).unwrap(), None);
}

#[test]
fn invalid_options_are_refused() {
    for o in [
        opts(512, 16, 1, 2, 1),
        opts(512, 16, 3, 1, 1),
        Options::new(EngineKind::Lsm).lsm(LsmOptions {
            k: Some(3),
            c0_bytes: 8192,
            io_unit_bytes: 1000,
            search_before_delete: false,
            deamortize: true,
        }),
    ] {
        let dev = MemDevice::new(o.page_size);
        let s = Storage {
            device: Box::new(dev),
            vfs: Arc::new(MemVfs::new()),
        };
        assert!(Db::create_on(s, o).is_err());
    }
}

#[test]
fn a_flipped_bit_in_any_page_is_corruption_naming_the_page() {
    let (mut db, dev, vfs) = mem_db(opts(512, 8, 3, 2, 3)).unwrap();
    let model = flashix::testing::insert_and_delete(&mut db, 9, 1_500, 4_000).unwrap();
    db.close().unwrap();
    let detected = flashix::testing::flip_a_bit_in_every_page(&dev, &vfs, 512, &model).unwrap();
    // Many pages are free (old components and C0 trees), so only the live ones count.
    assert!(detected >= 10, "{detected} pages detected");
}

#[test]
fn a_short_range_search_reads_one_leaf_per_component_on_a_cold_pool() {
    let (db, dev, vfs) = mem_db(opts(512, 16, 3, 2, 128)).unwrap();
    for k in 0..8_000u64 {
        db.insert(k.wrapping_mul(0x9E37_79B9_7F4A_7C15), k).unwrap();
    }
    for k in 0..8_000u64 {
        db.insert(1 << 40 | k, k).unwrap();
    }
    db.check_integrity().unwrap();
    assert!(counter(&db, "components") >= 3);
    db.close().unwrap();
    let db = reopen_mem(&dev, &vfs).unwrap();
    let levels: u64 = counter(&db, "c0_height")
        + 1
        + (1..=slots(&db))
            .map(|i| {
                let h = counter(&db, &format!("component_{i}_height"));
                if h > 0 {
                    h + 1
                } else {
                    0
                }
            })
            .sum::<u64>();
    let before = db.stats().device;
    let lo = (1 << 40) + 4_000;
    let got: Vec<(u64, u64)> = db
        .range(lo..lo + 5)
        .unwrap()
        .map(|kv| kv.unwrap())
        .collect();
    assert_eq!(
        got,
        (4_000..4_005).map(|k| (1 << 40 | k, k)).collect::<Vec<_>>()
    );
    let after = db.stats().device;
    // C0's leaf chain may cross one leaf boundary, a component's range one leaf boundary.
    assert!(
        after.reads - before.reads <= levels,
        "{} pages read, at most {levels} expected",
        after.reads - before.reads
    );
    // Again: the inner nodes are cached, and so is the leaf of every component the pool
    // holds (the point lookup's rule); only the components below it are read past the pool.
    let comps = counter(&db, "components");
    let again: Vec<(u64, u64)> = db
        .range(lo..lo + 5)
        .unwrap()
        .map(|kv| kv.unwrap())
        .collect();
    assert_eq!(again, got);
    let warm = db.stats().device.reads - after.reads;
    assert!(
        warm < comps,
        "{warm} pages read again for {comps} components"
    );
    // Ranges of 40 keys cross a leaf boundary or two in each component (about 30 entries
    // per 512-byte leaf): they read those leaves, not an I/O unit (128 leaves) of each.
    for i in 0..20u64 {
        let lo = (1 << 40) + i * 397;
        let before = db.stats().device.reads;
        let n = db.range(lo..lo + 40).unwrap().count();
        assert_eq!(n, 40);
        let read = db.stats().device.reads - before;
        assert!(
            read <= levels + 3 * comps,
            "a 40-key range read {read} pages ({levels} levels, {comps} components)"
        );
    }
}

/// An open-ended range (`lo..`) that the caller stops early reads a first batch of
/// RANGE_RAMP_PAGES (16) leaves per component and grows 4x per batch, not a whole
/// `io_unit` (128 leaves here) of every component.
#[test]
fn an_open_ended_range_stopped_early_reads_a_ramp_not_an_io_unit() {
    let (db, dev, vfs) = mem_db(opts(512, 16, 3, 2, 128)).unwrap();
    let mut rng = Rng::new(5);
    for k in 0..30_000u64 {
        db.insert(rng.next_u64() % 1_000_000, k).unwrap();
    }
    db.check_integrity().unwrap();
    let components = counter(&db, "components");
    assert!(components >= 3, "{components} components");
    db.close().unwrap();
    let db = reopen_mem(&dev, &vfs).unwrap();
    let before = db.stats().device;
    let take = 100usize;
    let got: Vec<(u64, u64)> = db
        .range(500_000..)
        .unwrap()
        .take(take)
        .map(|kv| kv.unwrap())
        .collect();
    assert_eq!(got.len(), take);
    assert!(got.windows(2).all(|w| w[0].0 < w[1].0));
    let pages = db.stats().device.reads - before.reads;
    // 100 entries fit one batch: 16 leaves per component plus its descent (height <= 4)
    // and C0's pages; a whole io_unit would be 128 leaves per component.
    let bound = components * (16 + 4) + 8;
    assert!(
        pages <= bound,
        "{pages} pages read for {take} entries over {components} components (at most {bound})"
    );
}

/// With `search_before_delete` (the FD-tree paper's baseline), a delete of an absent key
/// writes nothing and a delete of a present key a tombstone; contents stay the model's.
#[test]
fn search_before_delete_skips_absent_keys() {
    let o = opts(512, 16, 2, 2, 3);
    let lsm = LsmOptions {
        search_before_delete: true,
        ..o.lsm_options()
    };
    let o = o.lsm(lsm);
    let (db, _, _) = mem_db(o).unwrap();
    let mut model = std::collections::BTreeMap::new();
    for k in 0..500u64 {
        db.insert(k * 2, k).unwrap();
        model.insert(k * 2, k);
    }
    let wal0 = db.stats().wal.bytes;
    for k in 0..500u64 {
        db.delete(k * 2 + 1).unwrap(); // absent: no log record, no tombstone
    }
    assert_eq!(
        db.stats().wal.bytes,
        wal0,
        "deletes of absent keys were logged"
    );
    for k in (0..500u64).step_by(3) {
        db.delete(k * 2).unwrap();
        model.remove(&(k * 2));
    }
    assert!(db.stats().wal.bytes > wal0);
    db.check_integrity().unwrap();
    let got: Vec<(u64, u64)> = db.range(..).unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(got, model.into_iter().collect::<Vec<_>>());
}

/// How a model history reopens its index.
#[derive(Debug, Clone, Copy)]
enum Reopen {
    /// `close` (a checkpoint), then open.
    Close,
    /// `flush` and drop without a checkpoint, then open: the range deletes since the last
    /// checkpoint come back by WAL replay.
    DropAfterFlush,
}

fn reopen(db: Db, dev: &MemDevice, vfs: &MemVfs, how: Reopen) -> Db {
    match how {
        Reopen::Close => db.close().unwrap(),
        Reopen::DropAfterFlush => {
            let db = db;
            db.flush().unwrap();
            drop(db);
        }
    }
    let db = reopen_mem(dev, vfs).unwrap();
    db.check_integrity().unwrap();
    db
}

fn delete_range_in_model(model: &mut BTreeMap<u64, u64>, r: RangeInclusive<u64>) {
    let doomed: Vec<u64> = model.range(r).map(|(&k, _)| k).collect();
    for k in doomed {
        model.remove(&k);
    }
}

/// Point gets of present and absent keys, partial range scans and the full contents, all
/// against the model.
fn agrees_with_model(db: &mut Db, model: &BTreeMap<u64, u64>, rng: &mut Rng, space: u64) {
    for _ in 0..60 {
        let k = rng.below(space);
        assert_eq!(db.get(k).unwrap(), model.get(&k).copied(), "get {k}");
    }
    for (&k, &v) in model.iter().step_by(41) {
        assert_eq!(db.get(k).unwrap(), Some(v), "get {k}");
    }
    for _ in 0..8 {
        let lo = rng.below(space);
        let hi = lo + rng.below(3_000);
        let got: Vec<(u64, u64)> = db.range(lo..=hi).unwrap().map(|kv| kv.unwrap()).collect();
        let want: Vec<(u64, u64)> = model.range(lo..=hi).map(|(&k, &v)| (k, v)).collect();
        assert_eq!(got, want, "range {lo}..={hi}");
    }
    assert_eq!(&contents(db), model);
}

/// A random history of inserts, deletes and range deletes of 1 to 5,000 keys against a
/// `BTreeMap`, with 512-byte pages and a small C0 so that merges cascade through several
/// components with range tombstones at every level; reopened `how` along the way and at
/// the end.
fn range_delete_history(seed: u64, c0_pages: u64, how: Reopen) {
    const SPACE: u64 = 20_000;
    // Odd seeds run the merges to completion at once, even ones a step per mutation.
    let o = deamortized(opts(512, 16, 3, c0_pages, 3), seed % 2 == 0);
    let (mut db, dev, vfs) = mem_db(o).unwrap();
    let mut rng = Rng::new(seed);
    let mut model = BTreeMap::new();
    let mut most_range_tombstones = 0;
    let mut most_components = 0;
    // Counters start again at a reopen.
    let mut merges = 0;
    for i in 0..30_000u64 {
        let k = rng.below(SPACE);
        // Range deletes are rare enough that a fifth or so of the key space stays present.
        match rng.below(1_000) {
            0..=6 => {
                let most = [1, 10, 100, 1_000, 5_000][rng.below(5) as usize];
                let hi = k + rng.below(most);
                db.delete_range(k..=hi).unwrap();
                delete_range_in_model(&mut model, k..=hi);
            }
            7..=156 => {
                db.delete(k).unwrap();
                model.remove(&k);
            }
            _ => {
                db.insert(k, i).unwrap();
                model.insert(k, i);
            }
        }
        most_range_tombstones = most_range_tombstones.max(counter(&db, "range_tombstones"));
        most_components = most_components.max(counter(&db, "components"));
        if i % 1_000 == 999 {
            db.check_integrity().unwrap();
            agrees_with_model(&mut db, &model, &mut rng, SPACE);
        }
        if i % 10_000 == 9_999 {
            merges += counter(&db, "merges");
            db = reopen(db, &dev, &vfs, how);
            agrees_with_model(&mut db, &model, &mut rng, SPACE);
        }
    }
    assert!(merges > 100, "{merges} merges");
    assert!(most_components >= 3, "{most_components} components");
    assert!(most_range_tombstones >= 3, "{most_range_tombstones}");
    eprintln!(
        "{how:?}: {merges} merges, at most {most_components} components and \
         {most_range_tombstones} range tombstones, {} keys left",
        model.len()
    );
    // The last operations are range deletes, so that a reopen without a checkpoint must
    // replay them from the WAL.
    for _ in 0..5 {
        let lo = rng.below(SPACE);
        let hi = lo + rng.below(2_000);
        db.delete_range(lo..=hi).unwrap();
        delete_range_in_model(&mut model, lo..=hi);
    }
    assert!(counter(&db, "c0_range_tombstones") > 0);
    db = reopen(db, &dev, &vfs, how);
    agrees_with_model(&mut db, &model, &mut rng, SPACE);
}

#[test]
fn range_deletes_of_any_size_agree_with_a_model_across_cascading_merges_and_reopens() {
    range_delete_history(21, 2, Reopen::Close);
}

#[test]
fn range_deletes_come_back_by_wal_replay_after_a_reopen_without_close() {
    range_delete_history(22, 8, Reopen::DropAfterFlush);
}

/// A range delete adds one interval to C0's range tombstones (and removes C0's own
/// entries of the range): the pages it reads and writes do not grow with the range. The
/// range tombstones then move down with the merges and retire at the last component.
#[test]
fn a_range_delete_reads_and_writes_a_bounded_number_of_pages() {
    // 4 KiB pages: 169 entries a page, |C0| = 8 · 169 / 2 = 676, k = 8: |C1| = 5,408,
    // |C2| = 43,264, |C3| = 346,112. Merges run to completion in the insert that fills C0
    // (not deamortized): a range delete then does no merge work, and its own pages are
    // what the test counts.
    let o = deamortized(opts(4096, 64, 8, 8, 32), false);
    let (mut db, dev, vfs) = mem_db(o).unwrap();
    let mut model: BTreeMap<u64, u64> = (0..250_000u64).map(|i| (i * 2, i + 1)).collect();
    let pairs: Vec<(u64, u64)> = model.iter().map(|(&k, &v)| (k, v)).collect();
    db.bulk_insert(&pairs).unwrap();
    // Odd keys among them: merges into C1 and C2 over the bulk-loaded C3.
    let mut rng = Rng::new(7);
    for i in 0..20_000u64 {
        let k = rng.below(250_000) * 2 + 1;
        db.insert(k, i).unwrap();
        model.insert(k, i);
    }
    assert!(
        counter(&db, "components") >= 2,
        "{:?}",
        db.stats().engine_counters
    );
    // Insert until a merge has just emptied C0 (and its checkpoint cleaned the pool): the
    // five range deletes below then add five range tombstones to an empty C0, far below
    // |C0|, so none of them can trigger a merge, and no checkpoint is due. Whatever N, a
    // range delete touches C0's one page (in the pool for the first four, read after a
    // reopen for the fifth) and no component page.
    let merges = counter(&db, "merges");
    while counter(&db, "merges") == merges {
        let k = rng.below(250_000) * 2 + 1;
        db.insert(k, 1).unwrap();
        model.insert(k, 1);
    }
    db.flush().unwrap();
    assert_eq!(counter(&db, "c0_entries"), 0);
    assert!(model.len() >= 200_000);
    let keys: Vec<u64> = model.keys().copied().collect();
    let mut deleted = Vec::new();
    let ranges = [
        (100usize, 1_000usize),
        (1_000, 10_000),
        (10_000, 30_000),
        (100_000, 60_000),
        (50_000, 170_000),
    ];
    for (i, &(n, at)) in ranges.iter().enumerate() {
        if i == 4 {
            assert_eq!(counter(&db, "range_deletes"), 4);
            assert_eq!(counter(&db, "c0_range_tombstones"), 4);
            assert_eq!(counter(&db, "range_tombstones"), 4);
            db.close().unwrap();
            db = reopen_mem(&dev, &vfs).unwrap();
        }
        let merges = counter(&db, "merges");
        let (lo, hi) = (keys[at], keys[at + n - 1]);
        assert_eq!(model.range(lo..=hi).count(), n);
        let before = db.stats().device;
        db.delete_range(lo..=hi).unwrap();
        let after = db.stats().device;
        let (read, written) = (after.reads - before.reads, after.writes - before.writes);
        let pool = if i == 4 { "cold" } else { "warm" };
        eprintln!(
            "range delete of {n} keys ({pool} pool): {read} pages read, {written} pages written"
        );
        assert!(read <= 8, "a range delete of {n} keys read {read} pages");
        assert!(
            written <= 8,
            "a range delete of {n} keys wrote {written} pages"
        );
        assert_eq!(counter(&db, "merges"), merges, "a range delete merged");
        delete_range_in_model(&mut model, lo..=hi);
        deleted.push((lo, hi, keys[at - 1], keys[at + n]));
    }
    assert_eq!(counter(&db, "c0_range_tombstones"), 5);
    assert_eq!(counter(&db, "range_tombstones"), 5);
    db.check_integrity().unwrap();
    for &(lo, hi, below, above) in &deleted {
        for k in [lo, lo + 1, (lo + hi) / 2, hi - 1, hi] {
            assert_eq!(db.get(k).unwrap(), None, "key {k} in [{lo}, {hi}]");
        }
        assert_eq!(db.get(below).unwrap(), model.get(&below).copied());
        assert_eq!(db.get(above).unwrap(), model.get(&above).copied());
        assert!(model.contains_key(&below) && model.contains_key(&above));
        let got: Vec<(u64, u64)> = db
            .range(below..=above)
            .unwrap()
            .map(|kv| kv.unwrap())
            .collect();
        assert_eq!(got, vec![(below, model[&below]), (above, model[&above])]);
    }
    assert_eq!(contents(&mut db), model);
    // New keys, some inside the deleted ranges, until the merges have carried every range
    // tombstone down to the last component, which retires them (C2 must overflow into C3,
    // about |C2| inserts).
    let mut inserted = 0u64;
    while counter(&db, "range_tombstones") > 0 {
        assert!(inserted < 200_000, "{:?}", db.stats().engine_counters);
        let k = rng.below(1_000_000);
        db.insert(k, inserted).unwrap();
        model.insert(k, inserted);
        inserted += 1;
    }
    eprintln!("range tombstones retired after {inserted} inserts");
    db.check_integrity().unwrap();
    assert_eq!(contents(&mut db), model);
    db.close().unwrap();
    let mut db = reopen_mem(&dev, &vfs).unwrap();
    db.check_integrity().unwrap();
    assert_eq!(counter(&db, "range_tombstones"), 0);
    assert_eq!(contents(&mut db), model);
}

/// A `k` left to the cost model is re-chosen whenever one component holds the whole tree
/// and has outgrown its level (a bulk load; a cascade overflowing the last component): each
/// new `k` is the model's for that component's entries, it sits at the first level that
/// holds it, the tree keeps every entry, and the `k` survives a reopen with another pool.
/// A tree given the same `k` fixed keeps it and grows a level instead.
#[test]
fn a_model_k_is_rechosen_as_the_tree_grows() {
    let tuning = flashix::testing::growth_tuning().unwrap();
    let lsm = LsmOptions {
        k: None,
        c0_bytes: 4 * 4096,
        io_unit_bytes: 16 * 4096,
        search_before_delete: false,
        deamortize: true,
    };
    let o = Options::new(EngineKind::Lsm)
        .buffer_pool_bytes(16 * 4096)
        .tuning(tuning)
        .lsm(lsm.clone());
    let model_k = |entries: u64| flashix::testing::model_k_for(&o, 4 * 4096, entries).unwrap();
    // The shape after a change of k: the model's k for the last component's entries,
    // which sits at the first level that holds them.
    let check_shape = |db: &Db| {
        let levels = db.stats().shape.levels;
        let low = levels.iter().rposition(|l| l.entries > 0).unwrap();
        let n = levels[low].entries;
        assert_eq!(
            counter(db, "k"),
            model_k(n),
            "{n} entries in the last component"
        );
        assert!(n <= levels[low].capacity);
        if low > 0 {
            assert!(
                n > levels[low - 1].capacity,
                "{n} entries fit the level above"
            );
        }
    };
    let fixed = |k0: u64| {
        let l = LsmOptions {
            k: Some(k0 as u32),
            ..lsm.clone()
        };
        o.clone().lsm(l)
    };
    let dir = tempfile::Builder::new()
        .prefix("lsm-retune-")
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
        slots(fx) > slots(db),
        "the fixed k grew levels: {} against {}",
        slots(fx),
        slots(db)
    );
}

/// Without deamortization one insert rewrites whole components (the one that fills C0
/// runs the rolling merge and its cascade); a step per insert bounds its writes by the
/// merge's share per insert, rounded up to whole multi-page writes of the I/O unit, and the
/// merge completes before the new C0 fills.
#[test]
fn rolling_merges_bound_the_writes_of_one_insert() {
    let mut worst = Vec::new();
    for deamortize in [false, true] {
        let (db, _, _) = mem_db(deamortized(opts(512, 32, 3, 4, 3), deamortize)).unwrap();
        let mut rng = Rng::new(5);
        let mut max = 0;
        for i in 0..12_000u64 {
            let before = db.stats().device.writes;
            db.insert(rng.next_u64(), i).unwrap();
            max = max.max(db.stats().device.writes - before);
        }
        db.check_integrity().unwrap();
        assert!(counter(&db, "components") >= 3);
        assert_eq!(counter(&db, "forced_merge_completions"), 0);
        worst.push(max);
    }
    assert!(
        worst[1] * 4 < worst[0],
        "worst pages written by one insert: {} amortized, {} deamortized",
        worst[0],
        worst[1]
    );
}

/// While a rolling merge runs, point and range searches see the new C0, the frozen C0 and
/// the old components; a merge in progress at a checkpoint (`close`) is completed first,
/// and one interrupted without a checkpoint is redone by the log's replay (the frozen C0
/// lives in memory alone). Both keep every key, deletes and range deletes included.
#[test]
fn searches_see_the_frozen_c0_and_a_merge_in_progress_survives_reopen() {
    for how in [Reopen::Close, Reopen::DropAfterFlush] {
        let (db, dev, vfs) = mem_db(opts(512, 16, 3, 4, 3)).unwrap();
        let mut model = BTreeMap::new();
        let mut rng = Rng::new(3);
        let mut checked_during_merge = 0;
        for i in 0..6_000u64 {
            let k = rng.below(8_000) * 3;
            match i % 10 {
                0 => {
                    db.delete(k).unwrap();
                    model.remove(&k);
                }
                1 if i % 500 == 1 => {
                    db.delete_range(k..=k + 300).unwrap();
                    delete_range_in_model(&mut model, k..=k + 300);
                }
                _ => {
                    db.insert(k, i).unwrap();
                    model.insert(k, i);
                }
            }
            if counter(&db, "merge_in_progress") == 1 && i % 97 == 0 {
                checked_during_merge += 1;
                assert!(counter(&db, "frozen_c0_entries") > 0);
                assert_eq!(db.get(k).unwrap(), model.get(&k).copied());
                let lo = rng.below(8_000) * 3;
                let got: Vec<(u64, u64)> = db
                    .range(lo..=lo + 600)
                    .unwrap()
                    .map(|kv| kv.unwrap())
                    .collect();
                let want: Vec<(u64, u64)> =
                    model.range(lo..=lo + 600).map(|(&k, &v)| (k, v)).collect();
                assert_eq!(got, want);
                db.check_integrity().unwrap();
            }
        }
        assert!(checked_during_merge >= 5, "{checked_during_merge}");
        // Stop in the middle of a merge.
        let mut i = 0u64;
        while counter(&db, "merge_in_progress") == 0 {
            let k = 1 + rng.below(8_000) * 3;
            db.insert(k, i).unwrap();
            model.insert(k, i);
            i += 1;
        }
        db.insert(2, 2).unwrap();
        model.insert(2, 2);
        assert_eq!(counter(&db, "merge_in_progress"), 1);
        let mut db = reopen(db, &dev, &vfs, how);
        // The checkpoint of `close`, or the one that ends recovery, completed the merge.
        assert_eq!(counter(&db, "merge_in_progress"), 0, "{how:?}");
        assert_eq!(counter(&db, "frozen_c0_entries"), 0, "{how:?}");
        assert_eq!(contents(&mut db), model, "{how:?}");
        // The index goes on.
        for j in 0..3_000u64 {
            let k = 2 + rng.below(8_000) * 3;
            db.insert(k, j).unwrap();
            model.insert(k, j);
        }
        db.check_integrity().unwrap();
        assert_eq!(contents(&mut db), model, "{how:?}");
    }
}

/// Merges are published by a checkpoint once the pages they freed reach the components'
/// (256 pages at least), not after every merge: fewer checkpoints than merges, a data
/// file that stays within a bound of the index, and an index reopened without `close`
/// (the log redoes the merges since the last checkpoint) that holds every entry.
#[test]
fn merges_are_published_once_the_pages_they_freed_reach_the_components() {
    const PAGE: u64 = 512;
    for deamortize in [false, true] {
        let o = deamortized(opts(PAGE as usize, 16, 3, 2, 3), deamortize);
        let (db, dev, vfs) = mem_db(o).unwrap();
        let mut rng = Rng::new(31);
        let mut model = BTreeMap::new();
        let mut most_over = 0i64;
        for i in 0..30_000u64 {
            let k = rng.next_u64() % 100_000;
            db.insert(k, i).unwrap();
            model.insert(k, i);
            let live: u64 = db
                .stats()
                .engine_counters
                .iter()
                .filter(|(n, _)| n.starts_with("component_") && n.ends_with("_pages"))
                .map(|(_, &v)| v)
                .sum();
            // The live components L; the pages freed since the checkpoint, at most
            // max(L, 256) before the merge that makes one due, plus that merge's (up to
            // L); a merge's output in progress (up to L for a cascade into the last
            // component); the two C0s.
            let file = (dev.len_bytes() / PAGE) as i64;
            most_over = most_over.max(file - 4 * live.max(256) as i64);
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
            "the file outgrew four times the components by {most_over} pages"
        );
        db.check_integrity().unwrap();
        drop(db);
        let mut db = reopen_mem(&dev, &vfs).unwrap();
        db.check_integrity().unwrap();
        assert_eq!(contents(&mut db), model);
    }
}

/// With rolling merges, a completed merge is published by a checkpoint taken when C0 is
/// next frozen: C0's pages are flushed just before they are freed, and the new C0's
/// pages, all allocated after that checkpoint, change without before-images. Amortized,
/// the checkpoint follows the merge at once (C0 is then the new, empty one).
#[test]
fn c0_pages_change_without_before_images_between_publications() {
    for deamortize in [false, true] {
        let o = deamortized(opts(512, 16, 3, 2, 3), deamortize);
        let s = upserts_across_reopen(o, 37, 30_000, 100_000).unwrap();
        let merges = s.engine_counters["merges"];
        assert!(merges > 500, "{merges} merges");
        assert!(s.wal.checkpoints >= 10, "{} checkpoints", s.wal.checkpoints);
        if deamortize {
            // Publishing at the merge's completion logged an image of a C0 page after
            // each checkpoint (21 images for 21 checkpoints).
            assert!(
                s.wal.page_images * 4 < s.wal.checkpoints,
                "{} before-images for {} checkpoints",
                s.wal.page_images,
                s.wal.checkpoints
            );
        }
    }
}

/// On a file (a device whose requests overlap with work) rolling merges run on the merge
/// thread: see `flashix::testing::merges_on_a_file_across_drops`.
#[test]
fn merges_on_the_merge_thread_match_a_model_and_survive_a_drop_mid_merge() {
    let dir = tempfile::Builder::new()
        .prefix("lsm-thread-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let db =
        flashix::testing::merges_on_a_file_across_drops(opts(512, 16, 3, 4, 8), dir.path(), 19)
            .unwrap();
    assert!(slots(&db) >= 2);
}

/// Threads writing at once on keys of their own, beside a reader, replay from the log: see
/// `flashix::testing::threads_write_and_the_log_replays_it`.
#[test]
fn writes_beside_each_other_replay_from_the_log() {
    for deamortize in [false, true] {
        flashix::testing::threads_write_and_the_log_replays_it(deamortized(
            opts(512, 64, 3, 4, 3),
            deamortize,
        ))
        .unwrap();
    }
}
