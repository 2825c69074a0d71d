//! One `Db` shared by many threads: the types are `Send + Sync`, and readers running beside
//! a writer on a buffer pool far smaller than they need at once (every frame pinned, pages
//! loaded by one reader while others wait for them, dirty frames written back by readers)
//! read only values that were written, and leave a tree that passes its checks. The full
//! semantics are checked by the concurrent conformance harness (`tests/concurrent.rs`).

use flashix::mobject::MovingIndex;
use flashix::{Db, DeviceSpec, EngineKind, Options, Range};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[test]
fn db_moving_index_and_range_are_send_and_sync() {
    fn shared<T: Send + Sync>() {}
    shared::<Db>();
    shared::<Range<'static>>();
    shared::<MovingIndex>();
}

/// The README's example: two threads share one `Db` through an `Arc`.
#[test]
fn two_threads_share_one_db() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::create(dir.path().join("ix"), Options::new(EngineKind::BTree)).unwrap());
    let writer = {
        let db = Arc::clone(&db);
        std::thread::spawn(move || -> flashix::Result<()> {
            for k in 0..1000 {
                db.insert(k, k * 2)?;
            }
            db.flush()
        })
    };
    for k in 1000..2000 {
        db.insert(k, k * 2).unwrap();
    }
    writer.join().unwrap().unwrap();
    assert_eq!(db.get(10).unwrap(), Some(20));
    assert_eq!(db.range(..).unwrap().count(), 2000);
    Arc::into_inner(db).unwrap().close().unwrap();
}

/// Writes of key `k` carry a value `k * 1000 + version`: a read proves it saw a written
/// value (its key part) and never one from before the key was first written.
fn value(k: u64, version: u64) -> u64 {
    k * 1000 + version
}

/// `readers` threads (gets, scans whose iterators stay open across the writer's operations,
/// get_many) beside one writer that overwrites, deletes and splits (or merges) over `KEYS`
/// keys, on a 16-page pool.
fn readers_beside_a_writer<const KEYS: u64>(engine: EngineKind, device: DeviceSpec, readers: u64) {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options::new(engine)
        .page_size(512)
        .buffer_pool_bytes(16 * 512)
        .device(device);
    let db = Db::create(dir.path().join("ix"), opts).unwrap();
    db.bulk_insert(
        &(0..KEYS)
            .map(|k| (k * 2, value(k * 2, 0)))
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            for round in 1..=3u64 {
                for k in (0..KEYS * 2).step_by(3) {
                    db.insert(k, value(k, round)).unwrap();
                }
                for k in (0..KEYS * 2).step_by(7) {
                    db.delete(k).unwrap();
                }
                db.flush().unwrap();
            }
            done.store(true, Ordering::Release);
        });
        for t in 0..readers {
            let (db, done) = (&db, &done);
            s.spawn(move || {
                let mut i = t;
                while !done.load(Ordering::Acquire) {
                    i = i
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let k = (i >> 33) % (KEYS * 2);
                    if let Some(v) = db.get(k).unwrap() {
                        assert_eq!(v / 1000, k, "get({k}) = {v}: not a value written to {k}");
                    }
                    let mut last = None;
                    for kv in db.range(k..k + 200).unwrap() {
                        let (key, v) = kv.unwrap();
                        assert!(last < Some(key), "scan out of order: {key} after {last:?}");
                        assert_eq!(v / 1000, key, "scan gave {key} -> {v}");
                        last = Some(key);
                    }
                    let keys = [k, k + 1, k / 2];
                    for (&k, v) in keys.iter().zip(db.get_many(&keys).unwrap()) {
                        assert!(v.map_or(true, |v| v / 1000 == k), "get_many({k}) = {v:?}");
                    }
                }
            });
        }
    });
    // After the writer: the last round's state, exactly.
    for k in 0..KEYS * 2 {
        let want = if k % 7 == 0 {
            None
        } else if k % 3 == 0 {
            Some(value(k, 3))
        } else if k % 2 == 0 {
            Some(value(k, 0))
        } else {
            None
        };
        assert_eq!(db.get(k).unwrap(), want, "key {k}");
    }
    db.check_integrity().unwrap();
    db.close().unwrap();
}

/// The engines on a page device whose reads run in parallel (`kit::parallel`): all but the
/// IPL and d-IPL B+-trees, which run on raw NAND (their kit's own tests,
/// `kit::inpage::testing`, run readers beside a writer, and so does `tests/concurrent.rs`).
const PARALLEL: [EngineKind; 8] = [
    EngineKind::BTree,
    EngineKind::Lsm,
    EngineKind::FdTree,
    EngineKind::PioBTree,
    EngineKind::BulkIndex,
    EngineKind::Bftl,
    EngineKind::LaTree,
    EngineKind::Fbx,
];

#[test]
fn readers_beside_a_writer_in_memory() {
    for engine in PARALLEL {
        readers_beside_a_writer::<3000>(engine, DeviceSpec::Memory, 8);
    }
}

/// On a file the readers' misses go through the device's reader handles, each its own
/// request in flight, and the LSM-tree's merges run on their thread. Fewer keys and readers
/// than in memory: every miss here is a synchronous direct read, and the point is that the
/// reads overlap, which four readers over a tree several times the pool already make them do.
#[test]
fn readers_beside_a_writer_on_a_file() {
    for engine in PARALLEL {
        readers_beside_a_writer::<1000>(engine, DeviceSpec::File { direct_io: true }, 4);
    }
}
