//! The checkers on real recorded histories: a round of four threads on a B+-tree passes,
//! and each kind of damage done to its record afterwards (a stale answer, an answer from
//! the future, a scan that drops or reorders a key, changed final contents, a lost flushed
//! write, a non-prefix after a "crash") is reported. The hand-made histories of
//! `check.rs` and `crash.rs` test each rule alone; these show the rules bite on the
//! histories the harness really records.

use super::*;

/// One recorded round on a fresh memory index, and the contents after it.
fn real_round(seed: u64) -> (Recorded, BTreeMap<u64, u64>) {
    let mut rng = Rng::new(seed);
    let o = options_for(EngineKind::BTree, &mut rng);
    let (db, _dev, _vfs) = mem_db(o).unwrap();
    let keys = Keys {
        threads: 4,
        shared: 32,
        private: 64,
    };
    let initial = load(&db, &keys, &mut rng).unwrap();
    let plan = Plan {
        keys,
        ops: 300,
        seed,
        round: 1,
        after_failure: 0,
        deadline: Duration::from_secs(120),
        faults: None,
    };
    let db = Arc::new(db);
    let events = run_threads(&db, &plan).unwrap();
    let after = settle(&db).unwrap();
    let rec = Recorded {
        keys: Some(keys),
        initial,
        events,
    };
    check_history(&rec, Some(&after)).unwrap();
    check_recovered(&rec, &after).unwrap();
    (rec, after)
}

/// The writes that may change `k`, by start.
fn writes_of(rec: &Recorded, k: u64) -> Vec<&Event> {
    let mut w: Vec<&Event> = rec
        .events
        .iter()
        .filter(|e| e.call.is_write() && e.call.touches(k, k))
        .collect();
    w.sort_by_key(|e| e.start);
    w
}

#[test]
fn a_stale_or_future_answer_in_a_real_history_is_reported() {
    let (rec, _) = real_round(7);
    let mut stale = 0;
    let mut future = 0;
    for (i, e) in rec.events.iter().enumerate() {
        let Call::Get(k, got) = e.call else { continue };
        let w = writes_of(&rec, k);
        // Stale: the initial value, once a write that returned before the get replaced it.
        let old = rec.initial.get(&k).copied();
        if let (true, Some(v0)) = (stale < 5 && old != got, old) {
            if !w.iter().any(|x| x.end < e.start) {
                continue;
            }
            let mut bad = rec.clone();
            bad.events[i].call = Call::Get(k, Some(v0));
            let err = check_history(&bad, None).unwrap_err();
            assert!(
                err.contains("stale") || err.contains("its own history says"),
                "{err}"
            );
            stale += 1;
        }
        // Future: the value of an insert that began after the get ended.
        let later = w.iter().find_map(|x| match x.call {
            Call::Insert(_, v) if x.start > e.end => Some(v),
            _ => None,
        });
        if let (true, Some(v)) = (future < 5, later) {
            let mut bad = rec.clone();
            bad.events[i].call = Call::Get(k, Some(v));
            let err = check_history(&bad, None).unwrap_err();
            assert!(
                err.contains("future") || err.contains("its own history says"),
                "{err}"
            );
            future += 1;
        }
    }
    assert!(stale > 0 && future > 0, "{stale} stale, {future} future");
}

#[test]
fn a_scan_that_drops_or_reorders_a_key_in_a_real_history_is_reported() {
    let (rec, after) = real_round(8);
    let mut dropped = 0;
    let mut swapped = 0;
    for (i, e) in rec.events.iter().enumerate() {
        let Call::Range(lo, hi, got) = &e.call else {
            continue;
        };
        if got.len() >= 2 && swapped < 5 {
            let mut bad = rec.clone();
            let mut g = got.clone();
            g.swap(0, 1);
            bad.events[i].call = Call::Range(*lo, *hi, g);
            assert!(check_history(&bad, None)
                .unwrap_err()
                .contains("out of order"));
            swapped += 1;
        }
        // Drop a key no write touched during the scan.
        let quiet = got.iter().position(|&(k, _)| {
            writes_of(&rec, k)
                .iter()
                .all(|x| x.end < e.start || x.start > e.end)
        });
        if let (true, Some(j)) = (dropped < 5, quiet) {
            let mut bad = rec.clone();
            let mut g = got.clone();
            g.remove(j);
            bad.events[i].call = Call::Range(*lo, *hi, g);
            let err = check_history(&bad, None).unwrap_err();
            assert!(
                err.contains("left out") || err.contains("its own history says"),
                "{err}"
            );
            dropped += 1;
        }
    }
    assert!(
        dropped > 0 && swapped > 0,
        "{dropped} dropped, {swapped} swapped"
    );
    // The contents after the threads: a private key (one writer, so one last write)
    // missing, or holding an overwritten value.
    let keys = rec.keys.unwrap();
    let k = *after.keys().find(|&&k| keys.owner(k).is_some()).unwrap();
    let mut missing = after.clone();
    missing.remove(&k);
    assert!(check_history(&rec, Some(&missing)).is_err());
    let overwritten = after.iter().find_map(|(&k, &v)| {
        let old = rec.initial.get(&k).copied()?;
        (keys.owner(k).is_some() && old != v).then_some((k, old))
    });
    let (k, old) = overwritten.unwrap();
    let mut changed = after.clone();
    changed.insert(k, old);
    assert!(check_history(&rec, Some(&changed)).is_err());
}

#[test]
fn a_lost_flushed_write_or_a_non_prefix_in_a_real_history_is_reported() {
    let (rec, after) = real_round(9);
    let last_flush = rec
        .events
        .iter()
        .filter(|e| e.call == Call::Flush)
        .map(|e| e.start)
        .max()
        .unwrap();
    let keys = rec.keys.unwrap();
    // A private key whose last write returned before the last flush: back to its value
    // before that write (the initial one) is a lost flushed write or a non-prefix.
    let flushed = after.keys().copied().find(|&k| {
        keys.owner(k).is_some()
            && rec.initial.get(&k) != after.get(&k)
            && writes_of(&rec, k).iter().all(|w| w.end < last_flush)
    });
    let k = flushed.unwrap();
    let mut lost = after.clone();
    match rec.initial.get(&k) {
        Some(&v) => lost.insert(k, v),
        None => lost.remove(&k),
    };
    let err = check_recovered(&rec, &lost).unwrap_err();
    assert!(
        err.contains("had to survive") || err.contains("no prefix"),
        "{err}"
    );
    // A thread's earliest private write undone while its later ones stay: no prefix.
    let t = keys.owner(k).unwrap();
    let (lo, hi) = keys.private_range(t);
    let first = rec
        .events
        .iter()
        .filter(|e| e.thread == t && matches!(e.call, Call::Insert(..)) && e.call.touches(lo, hi))
        .min_by_key(|e| e.start)
        .unwrap();
    let Call::Insert(k, _) = first.call else {
        unreachable!()
    };
    if writes_of(&rec, k).len() == 1 {
        let mut holed = after.clone();
        match rec.initial.get(&k) {
            Some(&v) => holed.insert(k, v),
            None => holed.remove(&k),
        };
        assert!(check_recovered(&rec, &holed).is_err());
    }
}
