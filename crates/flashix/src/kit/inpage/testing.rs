//! Tests of the kit's shared read path, run by each engine built on it (`engine::ipl`,
//! `engine::dipl`) on its own engine: the shared reads answer as the serial ones with the
//! same flash reads, and readers beside a writer see only written values. An engine's
//! `tests.rs` builds its engine on the medium [`nand`] gives and calls
//! [`shared_read_tests!`], so the tests are written once for both.

use crate::cost::Tuning;
use crate::io::{MemDevice, MemVfs, Storage};
use crate::kind::EngineKind;
use crate::kit::api::{Engine, RangeCursor, Shareable};
use crate::kit::inpage::{InPageBTree, LogPolicy};
use crate::kit::parallel::Parallel;
use crate::settings::{DeviceSpec, Settings};
use crate::sim::NandConfig;
use crate::stats::Stats;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The NAND page of the engines' tests, which is also their node size: one-page nodes.
pub const PAGE: usize = 2048;
/// Pages per erase block of the engines' tests.
pub const PAGES_PER_BLOCK: u32 = 16;
/// Erase blocks of the engines' tests.
pub const BLOCKS: u32 = 128;
/// Buffer frames of the engines' tests: few for a tree of a few dozen nodes, so that the
/// reads load and evict.
pub const FRAMES: u32 = 8;

/// The medium of the engines' tests: storage in memory, and the raw NAND device of
/// [`PAGE`], [`PAGES_PER_BLOCK`] and [`BLOCKS`] for their options.
pub fn nand() -> (Storage, DeviceSpec) {
    let storage = Storage {
        device: Box::new(MemDevice::new(PAGE)),
        vfs: Arc::new(MemVfs::new()),
    };
    let device = DeviceSpec::RawNand(NandConfig {
        page_bytes: PAGE,
        pages_per_block: PAGES_PER_BLOCK,
        blocks: BLOCKS,
        ..NandConfig::default()
    });
    (storage, device)
}

/// A new, empty engine `kind` of policy `P` with options `o` on the medium [`nand`] gives.
pub fn engine<P: LogPolicy>(kind: EngineKind, o: P::Options) -> InPageBTree<P> {
    let (storage, device) = nand();
    let s = Settings {
        page_size: PAGE,
        buffer_pool_bytes: 16 << 20,
        device,
        checkpoint_wal_bytes: 128 << 20,
        tuning: Tuning::reference(PAGE),
        engine: kind,
        record: serde_json::Value::Null,
    };
    InPageBTree::create(storage, s, o).unwrap()
}

/// The kit's tests on an engine: `$engine` is a function returning a new, empty engine
/// (each call its own NAND).
macro_rules! shared_read_tests {
    ($engine:path) => {
        #[test]
        fn shared_reads_match_serial() {
            $crate::kit::inpage::testing::shared_reads_match_serial($engine(), $engine());
        }

        #[test]
        fn readers_beside_a_writer() {
            $crate::kit::inpage::testing::readers_beside_a_writer($engine());
        }
    };
}
pub(crate) use shared_read_tests;

/// A value of key `k` at `version`: a read proves it saw a value written to `k`.
fn value(k: u64, version: u64) -> u64 {
    k * 1000 + version
}

/// The counters a read changes: NAND page and sector reads, buffer hits and misses.
fn read_counters(s: &Stats) -> [u64; 4] {
    let c = |n: &str| s.engine_counters.get(n).copied().unwrap_or(0);
    [
        c("nand_page_reads"),
        c("nand_sector_reads"),
        s.buffer.hits,
        s.buffer.misses,
    ]
}

fn scan_all<F>(lo: u64, hi: u64, mut batch: F) -> Vec<(u64, u64)>
where
    F: FnMut(&mut RangeCursor, &mut Vec<(u64, u64)>),
{
    let mut cur = RangeCursor::bounded(lo, hi);
    let mut out = Vec::new();
    while cur.next.is_some() {
        batch(&mut cur, &mut out);
    }
    out
}

/// The same writes on two twins; then the serial reads on `a` (`&mut`) and the shared
/// ones on `b` (`&self`) answer alike, and from a buffer of clean frames they read the same
/// flash pages and count the same hits and misses. With dirty frames resident the shared
/// answers are those of the model (a dirty frame is read with its in-memory log).
pub fn shared_reads_match_serial<E: Shareable>(mut a: E, mut b: E) {
    let mut model = BTreeMap::new();
    let write = |e: &mut E, model: &mut BTreeMap<u64, u64>, round: u64| {
        for k in (0..3000u64).step_by(3) {
            e.insert(k, value(k, round)).unwrap();
            model.insert(k, value(k, round));
        }
        for k in (0..3000u64).step_by(5 + round as usize) {
            e.delete(k).unwrap();
            model.remove(&k);
        }
    };
    write(&mut a, &mut model.clone(), 0);
    write(&mut b, &mut model, 0);
    a.close().unwrap();
    b.close().unwrap();
    let keys: Vec<u64> = (0..200u64).map(|i| (i * 7919) % 3100).collect();
    let (sa, sb) = (read_counters(&a.stats()), read_counters(&b.stats()));
    assert_eq!(sa, sb, "the twins differ before the reads");
    for &k in &keys {
        let got = b.get_shared(k).unwrap();
        assert_eq!(got, a.get(k).unwrap(), "get({k})");
        assert_eq!(got, model.get(&k).copied(), "get({k})");
    }
    for lo in [0u64, 1000, 2950] {
        let want: Vec<(u64, u64)> = model.range(lo..=lo + 400).map(|(&k, &v)| (k, v)).collect();
        let sh = scan_all(lo, lo + 400, |c, o| b.scan_shared(c, o).unwrap());
        let se = scan_all(lo, lo + 400, |c, o| a.scan(c, o).unwrap());
        assert_eq!(sh, want, "shared scan from {lo}");
        assert_eq!(se, want, "serial scan from {lo}");
    }
    let (da, db) = (read_counters(&a.stats()), read_counters(&b.stats()));
    assert!(
        db[0] > sb[0],
        "the reads read no flash: the buffer is not too small"
    );
    assert_eq!(
        da.iter().zip(sa).map(|(x, y)| x - y).collect::<Vec<_>>(),
        db.iter().zip(sb).map(|(x, y)| x - y).collect::<Vec<_>>(),
        "serial and shared reads: [page reads, sector reads, hits, misses]"
    );
    // Dirty frames resident (no checkpoint since these writes).
    write(&mut b, &mut model, 1);
    for k in 0..3100u64 {
        assert_eq!(b.get_shared(k).unwrap(), model.get(&k).copied(), "get({k})");
    }
    let all = scan_all(0, u64::MAX, |c, o| b.scan_shared(c, o).unwrap());
    assert_eq!(all, model.into_iter().collect::<Vec<_>>());
    b.check_integrity().unwrap();
}

/// Sets `done` when dropped, so that the readers stop even if the writer panics.
struct Done<'a>(&'a AtomicBool);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Three readers (gets, scans, get_many, all on the shared path) beside one writer on
/// `engine` behind [`Parallel`], on a buffer far smaller than the tree, so that readers
/// load, evict and wait for each other's loads while the writer leaves dirty frames.
/// Keys `k % 4 == 0` are never written after the start: every read sees them exactly. The
/// others take versions 1..=3 (or are deleted and written again): a read sees a value
/// written to its key, and no reader sees a key's versions go back. The writer reads each
/// key back after writing it (its leaf's frame then dirty). At the end every key is the
/// model's and the tree passes its checks.
pub fn readers_beside_a_writer<E: Shareable>(mut engine: E) {
    const KEYS: u64 = 2400;
    let mut model = BTreeMap::new();
    for k in 0..KEYS {
        engine.insert(k, value(k, 0)).unwrap();
        model.insert(k, value(k, 0));
    }
    let db = Parallel::new(engine);
    let done = AtomicBool::new(false);
    let model = std::thread::scope(|s| {
        let writer = s.spawn(|| {
            let _done = Done(&done);
            let mut model = model;
            for round in 1..=3u64 {
                for k in (0..KEYS).filter(|k| k % 4 != 0) {
                    if k % 4 == 3 && round % 2 == 1 {
                        db.delete(k).unwrap();
                        model.remove(&k);
                    } else {
                        db.insert(k, value(k, round)).unwrap();
                        model.insert(k, value(k, round));
                    }
                    assert_eq!(db.get(k).unwrap(), model.get(&k).copied(), "read back {k}");
                }
                db.flush().unwrap();
            }
            model
        });
        for t in 0..3u64 {
            let (db, done) = (&db, &done);
            s.spawn(move || {
                let mut seen: HashMap<u64, u64> = HashMap::new();
                let mut check = |k: u64, v: Option<u64>| {
                    if k % 4 == 0 {
                        assert_eq!(v, (k < KEYS).then(|| value(k, 0)), "stable key {k}");
                        return;
                    }
                    if let Some(v) = v {
                        assert_eq!(v / 1000, k, "{k} -> {v}: not a value written to {k}");
                        let last = seen.entry(k).or_insert(0);
                        assert!(v % 1000 >= *last, "{k}: version {} after {last}", v % 1000);
                        *last = v % 1000;
                    }
                };
                let mut i = t + 1;
                while !done.load(Ordering::Acquire) {
                    i = i
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let k = (i >> 33) % (KEYS + 50);
                    check(k, db.get(k).unwrap());
                    let keys = [k, k / 2, k + 1];
                    for (&k, v) in keys.iter().zip(db.get_many(&keys).unwrap()) {
                        check(k, v);
                    }
                    let got = scan_all(k, k + 60, |c, o| db.scan(c, o).unwrap());
                    for w in got.windows(2) {
                        assert!(w[0].0 < w[1].0, "scan out of order: {:?}", w);
                    }
                    for &(key, v) in &got {
                        check(key, Some(v));
                    }
                    let stable = (k..=k + 60).filter(|x| x % 4 == 0 && *x < KEYS);
                    let returned = got.iter().filter(|(x, _)| x % 4 == 0).count();
                    assert_eq!(
                        returned,
                        stable.count(),
                        "scan from {k} missed a stable key"
                    );
                }
            });
        }
        writer.join().unwrap()
    });
    for k in 0..KEYS + 50 {
        assert_eq!(db.get(k).unwrap(), model.get(&k).copied(), "key {k}");
    }
    let all = scan_all(0, u64::MAX, |c, o| db.scan(c, o).unwrap());
    assert_eq!(all, model.into_iter().collect::<Vec<_>>());
    db.check_integrity().unwrap();
    let s = db.stats();
    assert!(s.buffer.misses > 0 && s.buffer.hits > 0);
    assert!(s.buffer.resident <= s.buffer.frames, "{:?}", s.buffer);
    db.close().unwrap();
}
