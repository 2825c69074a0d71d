//! Bulk index behaviour beyond the model check: the thesis's algorithms' I/O bounds
//! (Theorem 5.1: a range search returning T keys reads at most T/M + 2 ranges; Theorem 5.2:
//! a bulk insert reads each affected range once and writes at most (2M−1)R + T tuples;
//! Theorem 5.4: a range delete reads at most three ranges and writes at most three), regression tests for every erratum of the notes
//! (§1.11: keys in gaps, below the first range and above the last; deletes inside one
//! range, leaving 0, M−1, M and 2M−1 tuples, with no successor; an index below M), the
//! §6.1 bulk load, space reclaim, persistence, damage and bad options.

use flashix::io::{MemDevice, MemVfs};
use flashix::testing::{mem_db, reopen_mem};
use flashix::{BulkOptions, Db, EngineKind, Options, Storage};
use std::collections::BTreeMap;
use std::sync::Arc;

const PS: usize = 512;

fn opts(m: u32, delta_entries: u64, f: impl FnOnce(&mut BulkOptions)) -> Options {
    let mut b = BulkOptions {
        m: Some(m),
        io_unit_bytes: 16 * PS as u64,
        delta_bytes: Some(delta_entries * flashix::experiment::DELTA_ENTRY_MEMORY),
        ..BulkOptions::default()
    };
    f(&mut b);
    Options::new(EngineKind::BulkIndex)
        .page_size(PS)
        .buffer_pool_bytes(16 * PS as u64 + b.delta_bytes.unwrap_or(0))
        .bulk(b)
}

fn counter(db: &Db, name: &str) -> u64 {
    let s = db.stats();
    *s.engine_counters
        .get(name)
        .unwrap_or_else(|| panic!("no counter {name:?}"))
}

fn contents(db: &mut Db) -> BTreeMap<u64, u64> {
    db.range(..).unwrap().map(|kv| kv.unwrap()).collect()
}

/// Keys 10, 20, ..., 10·n as one bulk load of an empty index.
fn loaded(m: u32, n: u64) -> (Db, BTreeMap<u64, u64>, MemDevice, MemVfs) {
    loaded_with(m, n, |_| {})
}

fn loaded_with(
    m: u32,
    n: u64,
    f: impl FnOnce(&mut BulkOptions),
) -> (Db, BTreeMap<u64, u64>, MemDevice, MemVfs) {
    let (db, dev, vfs) = mem_db(opts(m, 0, f)).unwrap();
    let pairs: Vec<(u64, u64)> = (1..=n).map(|i| (i * 10, i)).collect();
    db.bulk_insert(&pairs).unwrap();
    (db, pairs.into_iter().collect(), dev, vfs)
}

fn check(db: &mut Db, model: &BTreeMap<u64, u64>) {
    db.check_integrity().unwrap();
    assert_eq!(&contents(db), model);
    assert_eq!(counter(db, "entries"), model.len() as u64);
}

/// §6.1: the initial keys in one bulk insertion give "all ranges except one of size M".
#[test]
fn a_bulk_load_makes_ranges_of_m_but_the_last() {
    for (m, n) in [(8u32, 100u64), (8, 64), (8, 15), (8, 5), (64, 1000), (1, 7)] {
        let (mut db, model, _, _) = loaded(m, n);
        check(&mut db, &model);
        let ranges = counter(&db, "ranges");
        let of_m = counter(&db, "ranges_of_size_m");
        let want = if n < u64::from(m) {
            1
        } else {
            n / u64::from(m)
        };
        assert_eq!(ranges, want, "m {m}, n {n}");
        assert!(
            of_m + 1 >= ranges,
            "m {m}, n {n}: {of_m} of {ranges} ranges hold M"
        );
    }
}

/// Erratum 1 (Alg. 5 loops forever on a key between two ranges): keys in the gaps, below
/// the first range and above the last are routed by Definition 5.1 and inserted.
#[test]
fn keys_in_gaps_below_and_above_every_range_are_inserted() {
    let (mut db, mut model, _, _) = loaded(4, 40);
    let bulk: Vec<(u64, u64)> = vec![(1, 1), (15, 2), (45, 3), (205, 4), (399, 5), (10_000, 6)];
    db.bulk_insert(&bulk).unwrap();
    model.extend(bulk.iter().copied());
    check(&mut db, &model);
    for (k, v) in [(0u64, 7u64), (u64::MAX, 8), (55, 9)] {
        db.insert(k, v).unwrap();
        model.insert(k, v);
    }
    check(&mut db, &model);
}

/// Theorem 5.2's R: a bulk insert reads each affected range exactly once, and no other.
#[test]
fn a_bulk_insert_reads_each_affected_range_once() {
    for batch_reads in [true, false] {
        let (mut db, mut model, _, _) = loaded_with(8, 400, |b| b.batch_reads = batch_reads);
        let ranges = counter(&db, "ranges");
        // One key in the update interval of every third range.
        let keys: Vec<u64> = (0..ranges).step_by(3).map(|r| r * 80 + 15).collect();
        let before = counter(&db, "ranges_read");
        let pairs: Vec<(u64, u64)> = keys.iter().map(|&k| (k, 0)).collect();
        db.bulk_insert(&pairs).unwrap();
        model.extend(pairs);
        assert_eq!(counter(&db, "ranges_read") - before, keys.len() as u64);
        check(&mut db, &model);
    }
}

/// Theorem 5.4 (with the neighbour read it omits, erratum 4): a range delete of any size
/// reads at most three ranges and writes at most three, and drops the inner ranges with
/// no main-file I/O.
#[test]
fn a_range_delete_of_any_size_reads_and_writes_at_most_three_ranges() {
    let m = 8u64;
    for (lo, hi) in [
        (15u64, 15u64),
        (15, 95),
        (15, 705),
        (80, 6_400),
        (85, 6_395),
        (5, 30_000),
        (0, 3_000),
        (3_000, u64::MAX),
        (9_999, 20_000),
        (7_995, 8_005),
    ] {
        let (mut db, mut model, _, _) = loaded(m as u32, 1_000);
        let (r0, w0) = (counter(&db, "ranges_read"), counter(&db, "ranges_written"));
        let d0 = db.stats().device;
        db.delete_range(lo..=hi).unwrap();
        model.retain(|&k, _| k < lo || k > hi);
        let read = counter(&db, "ranges_read") - r0;
        let written = counter(&db, "ranges_written") - w0;
        let d = db.stats().device;
        assert!(read <= 3, "[{lo}, {hi}]: {read} ranges read");
        assert!(written <= 3, "[{lo}, {hi}]: {written} ranges written");
        assert!(d.read_requests - d0.read_requests <= 3, "[{lo}, {hi}]");
        check(&mut db, &model);
    }
}

/// Alg. 7's edge cases (erratum 1 for deletes): [L, H] inside one range; leaving 0, M−1,
/// M and 2M−1 tuples in the boundaries; no successor (the previous range is merged);
/// L below the first range and H above the last; an index left below M.
#[test]
fn range_delete_edge_cases_keep_every_range_within_m_to_2m_minus_1() {
    let m = 4u64;
    // Ranges of 4 keys: [10..40], [50..80], ... (bulk load of 10·i).
    let cases: Vec<(u64, u64)> = vec![
        (20, 30),      // inside one range, 2 left: neighbour merge
        (10, 40),      // exactly one range: 0 left, no I/O
        (20, 70),      // 1 + 1 = 2 left (< M): neighbour
        (20, 60),      // 1 + 2 = 3 = M−1 left
        (30, 60),      // 2 + 2 = M left
        (395, 10_000), // no successor: the previous range is merged
        (0, 15),       // L below the first range
        (0, 395),      // all but one key: the index drops below M
        (0, u64::MAX), // everything
        (385, 400),    // the last range, from inside it
        (41, 49),      // a gap: nothing
    ];
    for (lo, hi) in cases {
        let (mut db, mut model, _, _) = loaded(m as u32, 40);
        db.delete_range(lo..=hi).unwrap();
        model.retain(|&k, _| k < lo || k > hi);
        check(&mut db, &model);
        // And the index keeps working after it.
        db.bulk_insert(&[(12, 1), (1_000, 2)]).unwrap();
        model.insert(12, 1);
        model.insert(1_000, 2);
        check(&mut db, &model);
    }
    // Boundary ranges of 2M−1 with one key deleted from each (the theorem's worst case:
    // 4M−4 left, written as M, M and 2M−4).
    let (mut db, mut model, _, _) = loaded(m as u32, 40);
    let grow: Vec<(u64, u64)> = [11u64, 12, 13, 181, 182, 183]
        .iter()
        .map(|&k| (k, 0))
        .collect();
    db.bulk_insert(&grow).unwrap();
    model.extend(grow);
    check(&mut db, &model);
    let w0 = counter(&db, "ranges_written");
    db.delete_range(40..=180).unwrap();
    model.retain(|&k, _| !(40..=180).contains(&k));
    check(&mut db, &model);
    assert!(counter(&db, "ranges_written") - w0 <= 3);
}

/// The faithful mode (no differential layer) and a small layer give the same contents;
/// single deletes of absent keys write nothing.
#[test]
fn single_operations_in_the_faithful_and_the_delta_mode() {
    for delta in [0u64, 5] {
        let (mut db, _, _) = mem_db(opts(3, delta, |_| {})).unwrap();
        let mut model = BTreeMap::new();
        let mut x = 7u64;
        for i in 0..3_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let k = (x >> 33) % 500;
            if i % 4 == 3 {
                db.delete(k).unwrap();
                model.remove(&k);
            } else {
                db.insert(k, i).unwrap();
                model.insert(k, i);
            }
            if i % 97 == 0 {
                assert_eq!(db.get(k).unwrap(), model.get(&k).copied());
            }
        }
        check(&mut db, &model);
        let w0 = counter(&db, "ranges_written");
        db.delete(10_000).unwrap();
        db.flush().unwrap();
        if delta == 0 {
            assert_eq!(
                counter(&db, "ranges_written"),
                w0,
                "absent key rewrote a range"
            );
        }
        let keys: Vec<u64> = (0..600).collect();
        let got = db.get_many(&keys).unwrap();
        let want: Vec<Option<u64>> = keys.iter().map(|k| model.get(k).copied()).collect();
        assert_eq!(got, want);
    }
}

/// Freed ranges come back to the allocator after a checkpoint and are trimmed; an
/// append-only index never reuses space and counts it as garbage.
#[test]
fn freed_ranges_are_reused_and_trimmed_unless_append_only() {
    for append_only in [false, true] {
        // Checkpoints after every bulk (a bulk this large is applied, then checkpointed).
        let o = opts(8, 0, |b| b.append_only = append_only).checkpoint_wal_bytes(4 * PS as u64);
        let (db, dev, vfs) = mem_db(o).unwrap();
        let mut model = BTreeMap::new();
        for round in 0..20u64 {
            let pairs: Vec<(u64, u64)> = (0..200).map(|i| (i * 7 + round % 7, round)).collect();
            db.bulk_insert(&pairs).unwrap();
            model.extend(pairs);
        }
        let trims = db.stats().device.trims;
        db.close().unwrap();
        let mut db = reopen_mem(&dev, &vfs).unwrap();
        check(&mut db, &model);
        let allocated = counter(&db, "allocated_pages");
        let live = counter(&db, "live_pages");
        if append_only {
            assert!(counter(&db, "garbage_pages") > 0);
            assert!(allocated >= live + counter(&db, "garbage_pages"));
        } else {
            assert!(
                allocated < 3 * live,
                "{allocated} pages allocated, {live} live"
            );
            assert!(trims > 0, "nothing trimmed");
        }
    }
}

#[test]
fn contents_survive_close_and_reopen() {
    let (db, mut model, dev, vfs) = loaded(8, 500);
    db.delete_range(1_000..=2_000).unwrap();
    model.retain(|&k, _| !(1_000..=2_000).contains(&k));
    db.insert(3, 3).unwrap();
    model.insert(3, 3);
    db.close().unwrap();
    let mut db = reopen_mem(&dev, &vfs).unwrap();
    check(&mut db, &model);
}

#[test]
fn a_flipped_bit_in_any_page_is_corruption_naming_the_page() {
    let (mut db, dev, vfs) = mem_db(opts(4, 3, |_| {})).unwrap();
    let model = flashix::testing::insert_and_delete(&mut db, 9, 1_500, 4_000).unwrap();
    db.close().unwrap();
    let detected =
        flashix::testing::flip_a_bit_in_every_page(&dev, &vfs, PS as u64, &model).unwrap();
    assert!(detected >= 10, "{detected} pages detected");
}

#[test]
fn invalid_options_are_refused() {
    for o in [
        opts(0, 0, |_| {}),
        opts(4, 0, |b| b.io_unit_bytes = 1000),
        opts(4, 0, |b| b.io_unit_bytes = 0),
        opts(4, 0, |_| {}).buffer_pool_bytes(PS as u64),
        Options::new(EngineKind::BulkIndex)
            .buffer_pool_bytes(64 << 10)
            .bulk(BulkOptions {
                delta_bytes: Some(1 << 20),
                ..BulkOptions::default()
            }),
    ] {
        let dev = MemDevice::new(o.page_size);
        let s = Storage {
            device: Box::new(dev),
            vfs: Arc::new(MemVfs::new()),
        };
        assert!(
            matches!(
                Db::create_on(s, o.clone()),
                Err(flashix::Error::InvalidOptions(_))
            ),
            "{o:?}"
        );
    }
}

/// §5.6, each switch measured: batching range writes packs new ranges into fewer write
/// requests, batching range reads reads a sweep's ranges in fewer requests, and batching
/// ranges keeps more ranges at exactly M after repeated bulks ("keeps the index from
/// deteriorating").
#[test]
fn the_section_5_6_switches_do_what_they_say() {
    let run = |f: fn(&mut BulkOptions)| {
        let (mut db, mut model, _, _) = loaded_with(8, 2_000, f);
        let d0 = db.stats().device;
        for round in 0..5u64 {
            // One new key in the update interval of each of 100 consecutive ranges (the
            // bulk load's ranges hold 10·i for 8 consecutive i).
            let pairs: Vec<(u64, u64)> =
                (0..100u64).map(|i| (i * 80 + 11 + round, round)).collect();
            db.bulk_insert(&pairs).unwrap();
            model.extend(pairs);
        }
        check(&mut db, &model);
        let d = db.stats().device;
        let share_m = counter(&db, "ranges_of_size_m") as f64 / counter(&db, "ranges") as f64;
        (
            d.write_requests - d0.write_requests,
            d.read_requests - d0.read_requests,
            share_m,
        )
    };
    let all = run(|_| {});
    let (writes, _, _) = run(|b| b.batch_writes = false);
    let (_, reads, _) = run(|b| b.batch_reads = false);
    let (_, _, share_m) = run(|b| b.batch_ranges = false);
    assert!(all.0 * 2 < writes, "batched writes {} vs {writes}", all.0);
    assert!(all.1 * 2 < reads, "batched reads {} vs {reads}", all.1);
    assert!(
        all.2 > share_m + 0.2,
        "share of M-sized ranges {} vs {share_m}",
        all.2
    );
}

/// An index grown by random bulks of random sizes, so that ranges hold anything from M to
/// 2M−1 tuples, with its model.
fn grown_at_random(m: u32, bulks: usize, seed: u64) -> (Db, BTreeMap<u64, u64>) {
    let (db, _, _) = mem_db(opts(m, 0, |_| {})).unwrap();
    let mut rng = flashix::testing::Rng::new(seed);
    let mut model = BTreeMap::new();
    for b in 0..bulks {
        let n = 1 + rng.below(120);
        let pairs: Vec<(u64, u64)> = (0..n).map(|_| (rng.below(100_000), b as u64)).collect();
        db.bulk_insert(&pairs).unwrap();
        model.extend(pairs);
    }
    (db, model)
}

/// Theorem 5.1: a range search returning T keys reads at most T/M + 2 ranges of the main
/// file (the ranges inside hold at least M each; two more at the ends), in at most as many
/// requests.
#[test]
fn a_range_search_reads_at_most_t_over_m_plus_two_ranges() {
    for m in [4u32, 8, 32] {
        let (mut db, model) = grown_at_random(m, 60, u64::from(m));
        check(&mut db, &model);
        let mut rng = flashix::testing::Rng::new(7);
        for _ in 0..200 {
            let lo = rng.below(100_000);
            let hi = lo + [0, 10, 500, 5_000, 100_000][rng.below(5) as usize];
            let r0 = counter(&db, "scan_ranges_read");
            let q0 = db.stats().device.read_requests;
            let got: Vec<(u64, u64)> = db.range(lo..=hi).unwrap().map(|kv| kv.unwrap()).collect();
            let want: Vec<(u64, u64)> = model.range(lo..=hi).map(|(&k, &v)| (k, v)).collect();
            assert_eq!(got, want, "m {m} [{lo}, {hi}]");
            let t = got.len() as u64;
            let bound = t / u64::from(m) + 2;
            let read = counter(&db, "scan_ranges_read") - r0;
            let requests = db.stats().device.read_requests - q0;
            assert!(
                read <= bound,
                "m {m} [{lo}, {hi}]: T {t}, {read} ranges read > {bound}"
            );
            assert!(
                requests <= bound,
                "m {m} [{lo}, {hi}]: {requests} requests > {bound}"
            );
        }
    }
}

/// Theorem 5.2: a bulk insertion of T keys into the update intervals of R ranges reads
/// those R ranges once each and writes at most (2M−1)R + T tuples, as ranges of M..2M−1
/// (so at most ((2M−1)R + T) / M ranges), on random bulks.
#[test]
fn a_bulk_insert_writes_at_most_2m_minus_1_r_plus_t_tuples() {
    for m in [4u32, 8, 32] {
        let (mut db, mut model) = grown_at_random(m, 40, 100 + u64::from(m));
        let mut rng = flashix::testing::Rng::new(11);
        let m = u64::from(m);
        for _ in 0..60 {
            let n = 1 + rng.below(200);
            // Clustered or spread keys: few ranges affected by many keys, or many by few.
            let base = rng.below(100_000);
            let spread = [50, 2_000, 100_000][rng.below(3) as usize];
            let mut pairs: Vec<(u64, u64)> = (0..n)
                .map(|i| ((base + rng.below(spread)) % 100_000, i))
                .collect();
            pairs.sort_unstable();
            pairs.dedup_by_key(|p| p.0);
            let t = pairs.len() as u64;
            let (r0, w0) = (counter(&db, "ranges_read"), counter(&db, "ranges_written"));
            let e0 = counter(&db, "entries");
            db.bulk_insert(&pairs).unwrap();
            model.extend(pairs);
            let r = counter(&db, "last_ranges_affected");
            assert_eq!(
                counter(&db, "ranges_read") - r0,
                r,
                "each affected range read once"
            );
            assert!(r <= t, "{r} ranges affected by {t} keys");
            let written = counter(&db, "ranges_written") - w0;
            let tuples = (2 * m - 1) * r + t;
            assert!(
                written <= tuples / m,
                "m {m}: {written} ranges written for R {r}, T {t} (at most {})",
                tuples / m
            );
            // The tuples written: the affected ranges' and the new keys, no more.
            let grown = counter(&db, "entries") - e0;
            assert!(grown <= t);
            check(&mut db, &model);
        }
    }
}
