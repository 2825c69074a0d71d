//! The shared path (module doc, Thread safety): searches beside each other and beside a
//! writer answer as the model does, and the cleans they decide wait for the next write.

use super::{CleanPolicy, FbxOptions, DEFERRED_CLEANS};
use crate::testing::readers::{assert_holds, beside_a_writer, load_evens, value};
use crate::{Db, DeviceSpec, EngineKind, Options};

fn counter(db: &Db, name: &str) -> u64 {
    db.stats().engine_counters[name]
}

/// Short log lists on many log pages, cleaned often: one log-buffer page, no clustering.
fn options(clean: CleanPolicy, device: DeviceSpec) -> Options {
    Options::new(EngineKind::Fbx)
        .page_size(512)
        .buffer_pool_bytes(24 * 512)
        .device(device)
        .fbx(FbxOptions {
            log_buffer_pages: Some(1),
            cluster_bits: 0,
            clean,
            ..FbxOptions::default()
        })
}

/// Six readers (gets, get_many, a scan now and then) beside a writer that overwrites and
/// deletes the odd keys between the even ones, which a bulk load wrote and nothing
/// changes: every even key reads as the model says, every odd one as a value of its own
/// or nothing. The readers' cleans are all written by the end, and the index checks.
fn readers_beside_a_writer(device: DeviceSpec) {
    const KEYS: u64 = 1500;
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(
        dir.path().join("ix"),
        options(CleanPolicy::Naive { k: 1 }, device),
    )
    .unwrap();
    let stable = load_evens(&db, KEYS);
    let writer = || {
        let mut model = stable.clone();
        for round in 1..=3u64 {
            for k in (1..KEYS * 2).step_by(6) {
                db.insert(k, value(k, round)).unwrap();
                model.insert(k, value(k, round));
            }
            for k in (1..KEYS * 2).step_by(14) {
                db.delete(k).unwrap();
                model.remove(&k);
            }
            db.flush().unwrap();
        }
        model
    };
    let model = beside_a_writer(&db, &stable, (6, 300), (50, 40), writer);
    // Every clean decided has been written once the flush ran the waiting ones.
    db.flush().unwrap();
    let (cleans, pages) = (counter(&db, "cleans"), counter(&db, "clean_pages"));
    assert!(cleans > 0, "no clean: the test proves nothing");
    assert_eq!(cleans, pages, "cleans decided vs compact pages written");
    assert_holds(&db, &model);
    db.close().unwrap();
}

#[test]
fn shared_searches_beside_a_writer_in_memory() {
    readers_beside_a_writer(DeviceSpec::Memory);
}

#[test]
fn shared_searches_beside_a_writer_on_a_file() {
    readers_beside_a_writer(DeviceSpec::File { direct_io: false });
}

/// An index whose `leaves` leaves each have a log list of its own pages (a key inserted
/// into each, one log-buffer page flushed in between), on memory.
fn leaves_with_logs(clean: CleanPolicy, leaves: u64) -> (Db, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(
        dir.path().join("ix"),
        options(clean, DeviceSpec::Memory).buffer_pool_bytes(256 * 512),
    )
    .unwrap();
    // Bulk-loaded leaves of 18 keys (70% of the order 27 of 512-byte pages).
    let pairs: Vec<(u64, u64)> = (0..leaves * 18).map(|k| (k * 10, k)).collect();
    db.bulk_insert(&pairs).unwrap();
    for round in 0..2 {
        for l in 0..leaves {
            db.insert(l * 180 + 1 + round, round).unwrap();
        }
    }
    db.flush().unwrap();
    (db, dir)
}

/// A search beside other readers does not write: the clean its policy decides waits, is
/// decided once however often the leaf is read meanwhile, and is written by the next
/// write, after which the leaf is one compact page.
#[test]
fn a_shared_search_leaves_its_clean_to_the_next_write() {
    let (db, _dir) = leaves_with_logs(CleanPolicy::Naive { k: 1 }, 40);
    let (c0, p0) = (counter(&db, "cleans"), counter(&db, "clean_pages"));
    let writes0 = db.stats().device.writes;
    db.beside_a_reader(|| {
        for _ in 0..6 {
            assert_eq!(db.get(1800 + 1).unwrap(), Some(0));
        }
    });
    assert_eq!(counter(&db, "cleans"), c0 + 1);
    assert_eq!(counter(&db, "clean_pages"), p0);
    assert_eq!(db.stats().device.writes, writes0, "a read wrote");
    db.insert(5, 5).unwrap();
    assert_eq!(counter(&db, "clean_pages"), p0 + 1);
    assert_eq!(counter(&db, "cleans"), c0 + 1);
    assert_eq!(db.get(1800 + 2).unwrap(), Some(1));
    db.check_integrity().unwrap();
}

/// At most `DEFERRED_CLEANS` cleans wait: reads of more leaves deciding one are not
/// counted until a write has made room, and a later read decides again.
#[test]
fn at_most_a_bounded_set_of_cleans_waits() {
    let leaves = DEFERRED_CLEANS as u64 + 20;
    let (db, _dir) = leaves_with_logs(CleanPolicy::Naive { k: 1 }, leaves);
    let (c0, p0) = (counter(&db, "cleans"), counter(&db, "clean_pages"));
    let read_all = |db: &Db| {
        db.beside_a_reader(|| {
            for l in 0..leaves {
                for _ in 0..2 {
                    assert_eq!(db.get(l * 180 + 1).unwrap(), Some(0));
                }
            }
        })
    };
    read_all(&db);
    assert_eq!(counter(&db, "cleans"), c0 + DEFERRED_CLEANS as u64);
    db.flush().unwrap();
    assert_eq!(counter(&db, "clean_pages"), p0 + DEFERRED_CLEANS as u64);
    // The leaves left out decide now; the cleaned ones are compact and write nothing.
    read_all(&db);
    db.flush().unwrap();
    assert_eq!(counter(&db, "cleans"), c0 + leaves);
    assert_eq!(counter(&db, "clean_pages"), p0 + leaves);
    db.check_integrity().unwrap();
}

/// Alone, a search cleans right after the read, as the paper's order has it: the lock is
/// free, so the clean it decided is written before `get` returns.
#[test]
fn a_search_alone_cleans_at_once() {
    let (db, _dir) = leaves_with_logs(CleanPolicy::Naive { k: 1 }, 40);
    let (c0, p0) = (counter(&db, "cleans"), counter(&db, "clean_pages"));
    let mut reads = 0;
    while counter(&db, "cleans") == c0 && reads < 6 {
        assert_eq!(db.get(1800 + 1).unwrap(), Some(0));
        reads += 1;
    }
    assert_eq!(
        counter(&db, "cleans"),
        c0 + 1,
        "no clean after {reads} reads"
    );
    assert_eq!(counter(&db, "clean_pages"), p0 + 1, "the clean waits");
    db.check_integrity().unwrap();
}
