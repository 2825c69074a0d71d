//! The concurrent mode of the conformance harness (`flashix::testing::concurrent`; docs/design.md,
//! Testing) against every engine: threads sharing one `Db` on a memory device and on a
//! file, and crash rounds that cut power while the threads write. `FLASHIX_CONFORMANCE_LONG=1`
//! runs more threads, calls, rounds and seeds; `FLASHIX_CONFORMANCE_ENGINES` picks engines.
//!
//! Each engine is a module with one test per setting (`btree::memory`, `lsm::crash_memory`),
//! so that `cargo test --test concurrent lsm::` or `-- crash` picks some. Adding an engine is
//! one line in `engines!`.
//!
//! A failure names engine, device and seed:
//! the `repro` test re-runs that one history (its doc says how).

use flashix::testing::concurrent::{run, Concurrent, Summary};
use flashix::testing::{engine_selected, long_mode, DeviceKind};
use flashix::EngineKind;
use std::path::{Path, PathBuf};
use std::time::Duration;

macro_rules! engines {
    ($($module:ident => $engine:ident;)*) => {
        $(
            mod $module {
                #[test]
                fn memory() {
                    super::memory(super::EngineKind::$engine);
                }

                #[test]
                fn file() {
                    super::file(super::EngineKind::$engine);
                }

                #[test]
                fn crash_memory() {
                    super::crash_memory(super::EngineKind::$engine);
                }

                #[test]
                fn crash_file() {
                    super::crash_file(super::EngineKind::$engine);
                }
            }
        )*
    };
}

engines! {
    btree => BTree;
    lsm => Lsm;
    fdtree => FdTree;
    pio => PioBTree;
    bulk => BulkIndex;
    bftl => Bftl;
    latree => LaTree;
    fbx => Fbx;
    ipl => IplBTree;
    dipl => DiplBTree;
}

/// Every engine, for the tests that loop over them.
const ENGINES: [EngineKind; 10] = [
    EngineKind::BTree,
    EngineKind::Lsm,
    EngineKind::FdTree,
    EngineKind::PioBTree,
    EngineKind::BulkIndex,
    EngineKind::Bftl,
    EngineKind::LaTree,
    EngineKind::Fbx,
    EngineKind::IplBTree,
    EngineKind::DiplBTree,
];

/// Seeds of each kind of test, apart so that a failing seed names its test.
const MEMORY_SEEDS: u64 = 0;
const FILE_SEEDS: u64 = 1 << 20;
const CRASH_SEEDS: u64 = 2 << 20;
const CRASH_FILE_SEEDS: u64 = 3 << 20;

/// A history of `e` on `device` from `seed`, sized for the default or the long mode.
fn history(e: EngineKind, device: DeviceKind, seed: u64) -> Concurrent {
    let mut h = Concurrent::new(e, device, seed);
    if long_mode() {
        h.threads = 8;
        h.ops = 1_000;
        h.rounds = 3;
        h.private_keys = 1_000;
        h.deadline = Duration::from_secs(600);
    }
    h
}

/// Run `histories` from `seeds` one after another; their summaries added up.
fn run_all(label: &str, histories: impl Iterator<Item = Concurrent>) -> Summary {
    let mut total = Summary::default();
    let mut n = 0;
    for h in histories {
        match run(&h) {
            Ok(s) => total.add(&s),
            Err(e) => panic!("concurrent conformance failure ({label}): {e}"),
        }
        n += 1;
    }
    let c = &total.check;
    eprintln!(
        "{label}: {n} histories, {} rounds, {} calls, {} flushes ({} syncs saved by group \
         commit), {} leaf splits, {} levels; {} reads ({} key reads, {} scans of {} entries, \
         {} exact private reads), {} key reads beside a write on their key, {} saw a write \
         still running; {} crashes ({} while the threads ran): {} writes had to survive, {} \
         private writes kept, {} lost, {} calls failed ({} not with an I/O error), {} reads \
         after a cut unchecked; {} entries at the end; {} point writes beside other operations",
        total.rounds,
        total.ops,
        total.flushes,
        total.syncs_saved,
        total.leaf_splits,
        total.levels,
        c.reads,
        c.key_reads,
        c.scans,
        c.scanned,
        c.exact,
        c.contended,
        c.saw_in_flight,
        total.crashes,
        total.crashes_while_running,
        total.crash.required,
        total.crash.kept,
        total.crash.lost,
        total.crash.failed,
        total.odd_errors,
        total.unchecked_after_cut,
        total.final_entries,
        total.shared_writes,
    );
    assert!(c.scans > 0 && c.exact > 0, "{label}: nothing was read");
    assert!(total.flushes > 0, "{label}: nothing was flushed");
    total
}

/// Whether `e`'s point writes run beside other operations
/// (`Shareable::PARALLEL_POINT_WRITES`): a history of several threads then makes some that
/// way.
fn writes_in_parallel(e: EngineKind) -> bool {
    matches!(
        e,
        EngineKind::BTree | EngineKind::Lsm | EngineKind::FdTree | EngineKind::PioBTree
    )
}

fn memory(e: EngineKind) {
    if !engine_selected(e) {
        return;
    }
    let n = if long_mode() { 40 } else { 2 };
    let seeds = MEMORY_SEEDS..MEMORY_SEEDS + n;
    let total = run_all(
        &format!("{e:?} on memory"),
        seeds.map(|s| {
            let mut h = history(e, DeviceKind::Memory, s);
            h.rounds = 3;
            h
        }),
    );
    if writes_in_parallel(e) {
        // Whether two calls overlap is the scheduler's choice: more seeds, a bounded
        // number, until some point write ran beside another operation.
        let mut shared = total.shared_writes;
        let mut more = MEMORY_SEEDS + n..MEMORY_SEEDS + n + 8;
        while shared == 0 {
            let Some(s) = more.next() else { break };
            let h = history(e, DeviceKind::Memory, s);
            shared += run_all(&format!("{e:?} on memory, seed {s}"), [h].into_iter()).shared_writes;
        }
        assert!(shared > 0, "no point write ran beside another operation");
    }
}

/// A fresh directory for an index under the target directory (/tmp may be tmpfs, which
/// refuses O_DIRECT), and the guard that removes it.
fn index_dir(seed: u64) -> (tempfile::TempDir, PathBuf) {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let dir = tempfile::Builder::new()
        .prefix(&format!("concurrent-{seed}-"))
        .tempdir_in(base)
        .expect("tempdir");
    // `Db::create` wants an absent or empty directory: a fresh one inside.
    let path = dir.path().join("index");
    (dir, path)
}

fn file(e: EngineKind) {
    if !engine_selected(e) {
        return;
    }
    let n = if long_mode() { 8 } else { 1 };
    let mut guards = Vec::new();
    let histories: Vec<Concurrent> = (FILE_SEEDS..FILE_SEEDS + n)
        .map(|s| {
            let (guard, path) = index_dir(s);
            guards.push(guard);
            let mut h = history(e, DeviceKind::File(path), s);
            if !long_mode() {
                // Every flush is an fdatasync: fewer calls on a real file.
                h.ops = 200;
            }
            h
        })
        .collect();
    let total = run_all(&format!("{e:?} on a file"), histories.into_iter());
    if writes_in_parallel(e) {
        // As on memory: more seeds, a bounded number, until writes overlapped.
        let mut shared = total.shared_writes;
        let mut more = FILE_SEEDS + n..FILE_SEEDS + n + 4;
        while shared == 0 {
            let Some(s) = more.next() else { break };
            let (_guard, path) = index_dir(s);
            let h = history(e, DeviceKind::File(path), s);
            shared += run_all(&format!("{e:?} on a file, seed {s}"), [h].into_iter()).shared_writes;
        }
        assert!(shared > 0, "no point write ran beside another operation");
    }
}

fn crash_memory(e: EngineKind) {
    if !engine_selected(e) {
        return;
    }
    let n = if long_mode() { 40 } else { 1 };
    let seeds = CRASH_SEEDS..CRASH_SEEDS + n;
    let total = run_all(
        &format!("{e:?} crashes on memory"),
        seeds.map(|s| {
            let mut h = history(e, DeviceKind::Memory, s);
            h.crashes = true;
            // Reads that return after the cut are checked too: the failed write poisons the
            // engine before any other thread runs on its state
            // (`regression_reads_that_return_after_a_power_cut_are_right`).
            h.check_after_cut = true;
            // One round without a crash (it measures where cuts can fall), then crashes.
            h.rounds = if long_mode() { 9 } else { 5 };
            if !long_mode() {
                h.ops = 200;
            }
            h
        }),
    );
    assert!(total.crashes > 0, "{e:?}: no crash round ran");
}

/// Crash rounds on a file device under the fault injector (the crash image is written
/// back to the file, and the index reopened from it).
fn crash_file(e: EngineKind) {
    if !engine_selected(e) {
        return;
    }
    let n = if long_mode() { 8 } else { 1 };
    let mut guards = Vec::new();
    let histories: Vec<Concurrent> = (CRASH_FILE_SEEDS..CRASH_FILE_SEEDS + n)
        .map(|s| {
            let (guard, path) = index_dir(s);
            std::fs::create_dir(&path).expect("index dir");
            guards.push(guard);
            let mut h = history(e, DeviceKind::File(path), s);
            h.crashes = true;
            h.rounds = if long_mode() { 6 } else { 3 };
            if !long_mode() {
                h.ops = 120;
            }
            h
        })
        .collect();
    let total = run_all(&format!("{e:?} crashes on a file"), histories.into_iter());
    assert!(total.crashes > 0, "{e:?}: no crash round ran");
}

/// Re-run one history: `FLASHIX_CONCURRENT_REPRO="<engine> <memory|file|crash_memory|crash_file>
/// <seed> [threads] [ops] [rounds] [private keys]"` (a failure message names the engine,
/// the device and the seed; the sizes default to the mode's), then
/// `cargo test --test concurrent repro -- --ignored --nocapture`.
#[test]
#[ignore = "runs the history FLASHIX_CONCURRENT_REPRO names"]
fn repro() {
    let spec = std::env::var("FLASHIX_CONCURRENT_REPRO").expect("FLASHIX_CONCURRENT_REPRO");
    let words: Vec<&str> = spec.split_whitespace().collect();
    let engine: EngineKind = words[0].parse().expect("engine");
    let setting = words[1];
    let seed: u64 = words[2].parse().expect("seed");
    let num = |i: usize| words.get(i).map(|w| w.parse::<usize>().expect("number"));
    let (guard, path) = index_dir(seed);
    let device = if setting.ends_with("file") {
        if setting.starts_with("crash") {
            std::fs::create_dir(&path).expect("index dir");
        }
        DeviceKind::File(path)
    } else {
        DeviceKind::Memory
    };
    let mut h = history(engine, device, seed);
    h.crashes = setting.starts_with("crash");
    h.threads = num(3).unwrap_or(h.threads);
    h.ops = num(4).unwrap_or(h.ops);
    h.rounds = num(5).unwrap_or(h.rounds);
    h.private_keys = num(6).map_or(h.private_keys, |n| n as u64);
    run_all(&spec, std::iter::once(h));
    drop(guard);
}

/// Regression (found by `crash_file` with 4-8 threads, e.g. `lsm crash_file 3 4 1000 4
/// 400` and `btree::crash_file` seed 3145734 in the long mode): a power cut at a WAL append
/// while an earlier append is not yet synced. Group commit makes that common: a flush hands
/// its records to the file and waits for the leader's sync with the writer lock released,
/// and other threads' flushes append meanwhile. The crash image then holds the synced
/// prefix, the unsynced earlier append as zeros, and a prefix of the later append, and
/// `Db::open` refuses it ("damaged WAL record followed by valid records"), where contract point 3 of docs/design.md
/// wants `open` to succeed after a crash at any point. Reproduced single-threaded, where
/// the WAL's 1 MiB write chunk makes the same two appends before one sync.
#[test]
fn regression_crash_at_a_wal_append_after_an_unsynced_one() {
    use flashix::io::{Faults, MemDevice, MemVfs};
    use flashix::{Db, DeviceSpec, Options, Storage};
    use std::sync::Arc;
    let mut refused = Vec::new();
    for seed in 0..8 {
        let dev = MemDevice::new(4096);
        let vfs = MemVfs::new();
        let faults = Faults::new(seed);
        let storage = Storage {
            device: Box::new(faults.wrap_device(Box::new(dev.reopen()))),
            vfs: Arc::new(faults.wrap_vfs(Arc::new(vfs.clone()))),
        };
        let opts = Options::new(EngineKind::BTree)
            .page_size(4096)
            .buffer_pool_bytes(64 << 20)
            .device(DeviceSpec::Memory);
        let db = Db::create_on(storage, opts).expect("create");
        db.insert(1, 1).expect("insert");
        db.flush().expect("flush");
        // Inserts until the WAL hands its first chunk to the file (one tick, not synced),
        // then a power cut at the next tick: the next chunk's append.
        let ticks = faults.ticks();
        let mut k = 2u64;
        while faults.ticks() == ticks && k < 1_000_000 {
            db.insert(k, k).expect("insert");
            k += 1;
        }
        faults.crash_after(1);
        while !faults.crashed() && k < 2_000_000 {
            if db.insert(k, k).is_err() {
                break;
            }
            k += 1;
        }
        assert!(faults.crashed(), "seed {seed}: no crash after {k} inserts");
        drop(db);
        let reopened = Db::open_on(Storage {
            device: Box::new(dev.reopen()),
            vfs: Arc::new(vfs.clone()),
        });
        match reopened {
            Ok(db) => assert_eq!(db.get(1).expect("get"), Some(1), "seed {seed}"),
            Err(e) => refused.push(format!("seed {seed}: {e}")),
        }
    }
    assert!(refused.is_empty(), "open after the crash: {refused:#?}");
}

/// Regression (found by `bftl::crash_file` and, in the long mode, `bftl::crash_memory`
/// seed 2097159: a scan that returned after the power cut gave a key a value that a batch
/// had overwritten before the scan began): a `Range` iterator does not look at the `Db`'s
/// poisoning between its batches, and a BFTL write that fails (here at a power cut, while
/// committing its reservation buffer) leaves the engine without the deletes the buffer
/// held, so the live scan goes on and returns keys deleted (with `Ok`) before it began.
/// docs/design.md, Concurrency: an I/O error in any thread poisons the `Db` for every thread;
/// and no read may return a wrong answer. Single-threaded here: the scan is open while
/// the failing insert runs, as it is beside another thread's.
#[test]
fn regression_a_live_range_after_a_failed_write_returns_deleted_keys() {
    use flashix::io::{Faults, MemDevice, MemVfs};
    use flashix::{BftlOptions, Db, Options, Storage};
    use std::sync::Arc;
    let mut wrong = Vec::new();
    for cut in 10..18u64 {
        let dev = MemDevice::new(512);
        let vfs = MemVfs::new();
        let faults = Faults::new(cut);
        let storage = Storage {
            device: Box::new(faults.wrap_device(Box::new(dev.reopen()))),
            vfs: Arc::new(faults.wrap_vfs(Arc::new(vfs.clone()))),
        };
        let opts = Options::new(EngineKind::Bftl)
            .page_size(512)
            .buffer_pool_bytes(1024 * 512)
            .bftl(BftlOptions {
                node_bytes: 160,
                reservation_units: Some(64),
                c: None,
            });
        let db = Db::create_on(storage, opts).expect("create");
        for k in 0..400u64 {
            db.insert(k, k).expect("insert");
        }
        db.flush().expect("flush");
        for k in (0..400u64).step_by(3) {
            db.delete(k).expect("delete");
        }
        let mut scan = db.range(..).expect("range").limit_hint(1);
        let mut got = vec![scan.next()];
        // Power is cut a few writes from now, while inserts run beside the open scan.
        faults.crash_after(cut);
        let mut k = 1000u64;
        while db.insert(k, k).is_ok() && k < 100_000 {
            k += 1;
        }
        got.extend(scan.map(Some));
        let deleted: Vec<u64> = got
            .iter()
            .filter_map(|r| match r {
                Some(Ok((k, _))) if k % 3 == 0 && *k < 400 => Some(*k),
                _ => None,
            })
            .take(4)
            .collect();
        if !deleted.is_empty() {
            wrong.push(format!(
                "power cut at the {cut}th write from the scan's start: deleted keys {deleted:?}"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "the scan returned deleted keys: {wrong:#?}"
    );
}

/// Regression (found by `lsm::crash_file` and `fdtree::crash_file` with 4-8 threads): when
/// a power cut fails an I/O of the merge thread's (served by the engine thread inside
/// another thread's call), a thread waiting on that merge gets `Error::InvalidArgument`
/// ("the request failed; the engine's operation returned the error"), which does not
/// poison the `Db`, or a `Corruption` ("LSM component: merge output out of order"),
/// instead of the I/O error. docs/design.md, contract point 6 and Concurrency: an I/O error in any
/// thread poisons the `Db` for every thread with that error. Runs crash rounds with
/// [`Concurrent::strict_errors`]; other failures (the WAL bug above) are skipped here.
#[test]
fn regression_a_failed_merge_io_reaches_other_threads_as_an_io_error() {
    let mut wrong = Vec::new();
    for e in [EngineKind::Lsm, EngineKind::FdTree] {
        for seed in 1..=6 {
            let (_guard, path) = index_dir(seed);
            std::fs::create_dir(&path).expect("index dir");
            let mut h = Concurrent::new(e, DeviceKind::File(path), seed);
            h.crashes = true;
            h.strict_errors = true;
            h.threads = 8;
            h.ops = 300;
            h.rounds = 4;
            h.private_keys = 1_000;
            if let Err(why) = run(&h) {
                if why.contains("non-I/O error") {
                    wrong.push(why);
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// Regression (found by `bftl::crash_memory` seed 2097159 and `bulk::crash_memory` seed
/// 2097186 in the long mode, and `pio::crash_memory` seed 2097152): reads that were running
/// when a power cut failed another thread's write (they had passed the `Db`'s poison check
/// before it) and that returned `Ok` after it gave wrong answers: a scan with a value a
/// batch had overwritten before it began (BFTL), a `get` that found absent a key holding a
/// value (bulk index), a scan that left out a key present and unchanged for the whole scan
/// (PIO B-tree). The same cause as
/// `regression_a_live_range_after_a_failed_write_returns_deleted_keys`, seen through the
/// harness: crash rounds on memory with [`Concurrent::check_after_cut`] on, for every
/// engine; failures other than wrong answers after the cut are skipped here.
#[test]
fn regression_reads_that_return_after_a_power_cut_are_right() {
    let mut wrong = Vec::new();
    for e in ENGINES {
        for seed in CRASH_SEEDS..CRASH_SEEDS + 4 {
            let mut h = history(e, DeviceKind::Memory, seed);
            h.crashes = true;
            h.check_after_cut = true;
            h.rounds = 5;
            h.ops = 200;
            if let Err(why) = run(&h) {
                if why.contains("(returned after the power cut):") {
                    wrong.push(why);
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// The B-link tree's splits beside other threads (`engine::btree`, Thread safety): four
/// threads insert interleaved keys, so that they meet in the same leaves and split them
/// and their parents under latches while the others write and read; afterwards the tree
/// holds its invariants (`check_integrity`) and exactly the keys written, and a reopened
/// index holds the same. Whether writes overlap is the scheduler's choice, so rounds of
/// fresh keys run until splits were made beside other threads (a bounded number).
#[test]
fn btree_splits_beside_other_threads() {
    use flashix::{Db, Options};
    use std::collections::BTreeMap;
    const THREADS: u64 = 4;
    const PER_THREAD: u64 = 3_000;
    const MAX_ROUNDS: u64 = 20;
    let (_guard, dir) = index_dir(4 << 20);
    let opts = Options::new(EngineKind::BTree)
        .page_size(512)
        .buffer_pool_bytes(1024 * 512);
    let db = Db::create(&dir, opts).expect("create");
    let mut model = BTreeMap::new();
    let check = |db: &Db, model: &BTreeMap<u64, u64>| {
        db.check_integrity().expect("check_integrity");
        let got: BTreeMap<u64, u64> = db
            .range(..)
            .expect("range")
            .map(|r| r.expect("range"))
            .collect();
        assert!(&got == model, "contents differ from the model");
    };
    let shared_splits = |db: &Db| db.stats().engine_counters.get("shared_splits").copied();
    for round in 0..MAX_ROUNDS {
        let base = round * THREADS * PER_THREAD;
        let start = std::sync::Barrier::new(THREADS as usize);
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let (db, start) = (&db, &start);
                s.spawn(move || {
                    start.wait();
                    for i in 0..PER_THREAD {
                        let k = base + i * THREADS + t;
                        db.insert(k, k ^ 0xabcd).expect("insert");
                        if i % 7 == 0 {
                            // A read of a key another thread writes, beside the splits.
                            let other = base + i * THREADS + (t + 1) % THREADS;
                            if let Some(v) = db.get(other).expect("get") {
                                assert_eq!(v, other ^ 0xabcd, "key {other}");
                            }
                        }
                    }
                });
            }
        });
        model.extend((base..base + THREADS * PER_THREAD).map(|k| (k, k ^ 0xabcd)));
        check(&db, &model);
        if shared_splits(&db).unwrap_or(0) > 0 {
            break;
        }
    }
    let splits = shared_splits(&db);
    eprintln!("shared splits: {splits:?} ({} keys)", model.len());
    assert!(
        splits.is_some_and(|n| n > 0),
        "no split ran beside another thread"
    );
    db.close().expect("close");
    let db = Db::open(&dir).expect("reopen");
    check(&db, &model);
}
