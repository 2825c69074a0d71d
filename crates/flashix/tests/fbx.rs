//! FBX-tree (`EngineKind::Fbx`): expected-behaviour tests of the paper's mechanisms (an
//! insert reads no leaf, Algorithm 1 reads each log page once, cleans after reads, the
//! append-only file), space, corruption detection, persistence and bad options. (The
//! conformance and crash harness runs it from `tests/conformance.rs`, the moving-object
//! model test from `tests/mobject.rs`.)

use flashix::io::{Device, DeviceStats, IoReq, MemDevice, MemVfs, PageId};
use flashix::sim::FtlKind;
use flashix::{CleanPolicy, Db, EngineKind, Error, FbxOptions, Options, Stats, Storage};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

fn c(s: &Stats, name: &str) -> u64 {
    s.engine_counters[name]
}

/// A memory device that records the page of every read request, and the batches that
/// held reads.
struct Recording {
    inner: MemDevice,
    reads: Arc<Mutex<Vec<PageId>>>,
    batches: Arc<Mutex<u64>>,
}

impl Device for Recording {
    fn page_size(&self) -> usize {
        self.inner.page_size()
    }
    fn submit(&mut self, batch: &mut [IoReq<'_>]) -> flashix::Result<()> {
        {
            let mut r = self.reads.lock().unwrap();
            for q in batch.iter() {
                if !q.is_write() {
                    r.push(q.page());
                }
            }
            if batch.iter().any(|q| !q.is_write()) {
                *self.batches.lock().unwrap() += 1;
            }
        }
        self.inner.submit(batch)
    }
    fn sync(&mut self) -> flashix::Result<()> {
        self.inner.sync()
    }
    fn trim(&mut self, page: PageId, pages: u64) -> flashix::Result<()> {
        self.inner.trim(page, pages)
    }
    fn stats(&self) -> DeviceStats {
        self.inner.stats()
    }
}

fn db_on(dev: Box<dyn Device>, opts: Options) -> Db {
    Db::create_on(
        Storage {
            device: dev,
            vfs: Arc::new(MemVfs::new()),
        },
        opts,
    )
    .unwrap()
}

fn opts(o: FbxOptions) -> Options {
    Options::new(EngineKind::Fbx)
        .page_size(4096)
        .buffer_pool_bytes(8 << 20)
        .fbx(o)
}

/// §4.1: "the system searches the tree from the root to the parent of the leaf": an insert
/// appends a log entry and reads no leaf (nor any page, with the inner nodes in the pool).
#[test]
fn an_insert_reads_no_leaf_page() {
    let db = db_on(Box::new(MemDevice::new(4096)), opts(FbxOptions::default()));
    // Bulk load: leaves of 70 entries (70% of the order 100), inner nodes in the pool.
    let pairs: Vec<(u64, u64)> = (0..20_000u64).map(|k| (k * 1000, k)).collect();
    db.bulk_insert(&pairs).unwrap();
    let before = db.stats();
    assert!(c(&before, "height") >= 2 && c(&before, "leaves") > 200);
    // One new key in each of 200 leaves: each stays below its order.
    for i in 0..200u64 {
        db.insert(i * 70_000 + 1, i).unwrap();
    }
    let after = db.stats();
    assert_eq!(c(&after, "leaf_rebuilds"), c(&before, "leaf_rebuilds"));
    assert_eq!(c(&after, "reorganizations"), 0);
    assert_eq!(
        after.device.reads, before.device.reads,
        "an insert read a page"
    );
    assert_eq!(c(&after, "log_entries") - c(&before, "log_entries"), 200);
    // A leaf filled past its order is reorganised (split) by the insert that does it.
    for i in 0..31u64 {
        db.insert(5 + i, i).unwrap();
    }
    let s = db.stats();
    assert_eq!(c(&s, "reorganizations"), 1);
    assert_eq!(c(&s, "leaf_splits"), 1);
    db.check_integrity().unwrap();
    assert_eq!(db.get(5 + 30).unwrap(), Some(30));
}

/// §4.3, Algorithm 1: a range query over many leaves reads the union of their log lists,
/// each page once, in a few batches; leaf by leaf (the "original") needs a read batch per
/// leaf, and with a small pool reads shared pages again.
#[test]
fn algorithm_1_reads_each_log_page_at_most_once() {
    let mut counts = Vec::new();
    for batched in [true, false] {
        let reads = Arc::new(Mutex::new(Vec::new()));
        let batches = Arc::new(Mutex::new(0));
        let mem = MemDevice::new(4096);
        let vfs = MemVfs::new();
        // No clustering and a one-page log buffer: every log page holds entries of many
        // leaves, so lists share pages. No cleans, so the lists stay long.
        let o = FbxOptions {
            log_buffer_pages: Some(1),
            cluster_bits: 0,
            clean: CleanPolicy::Never,
            batched_scans: batched,
            ..FbxOptions::default()
        };
        let db = Db::create_on(
            Storage {
                device: Box::new(mem.reopen()),
                vfs: Arc::new(vfs.clone()),
            },
            opts(o).buffer_pool_bytes(4096 * 4096),
        )
        .unwrap();
        let pairs: Vec<(u64, u64)> = (0..10_000u64).map(|k| (k * 100, k)).collect();
        db.bulk_insert(&pairs).unwrap();
        let mut x = 7u64;
        for _ in 0..3000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            db.insert((x >> 33) % 1_000_000, x).unwrap();
        }
        db.close().unwrap();
        // Reopened: the pool is cold.
        let dev = Recording {
            inner: mem.reopen(),
            reads: reads.clone(),
            batches: batches.clone(),
        };
        let db = Db::open_on(Storage {
            device: Box::new(dev),
            vfs: Arc::new(vfs),
        })
        .unwrap();
        let s0 = db.stats();
        assert!(c(&s0, "log_list_len_max") > 1);
        let ranges: Vec<(u64, u64)> = (0..20u64)
            .map(|i| (i * 50_000, i * 50_000 + 20_000))
            .collect();
        reads.lock().unwrap().clear();
        *batches.lock().unwrap() = 0;
        let got = db.range_many(&ranges).unwrap();
        let nbatches = *batches.lock().unwrap();
        let read: Vec<PageId> = std::mem::take(&mut *reads.lock().unwrap());
        let mut distinct = read.clone();
        distinct.sort_unstable();
        distinct.dedup();
        let s = db.stats();
        assert!(!got.is_empty());
        if batched {
            assert_eq!(distinct.len(), read.len(), "a page was read twice");
            assert!(
                c(&s, "range_pages_read") < c(&s, "range_list_pages"),
                "lists shared no page: the test proves nothing"
            );
        }
        eprintln!(
            "batched {batched}: {} pages read ({} distinct) in {nbatches} batches, {} leaves",
            read.len(),
            distinct.len(),
            c(&s, "range_leaves")
        );
        counts.push((nbatches, got));
    }
    // Leaf by leaf takes a batch per leaf, and both answer the same.
    assert!(
        counts[1].0 > 10 * counts[0].0,
        "{} vs {}",
        counts[1].0,
        counts[0].0
    );
    assert_eq!(counts[0].1, counts[1].1);
}

/// §4.4: reads of a leaf with a long log list lead to a clean under Accumulate-and-Clean:
/// the list becomes one compact page, and the answer is unchanged.
#[test]
fn reads_clean_a_long_log_list() {
    let o = FbxOptions {
        log_buffer_pages: Some(1),
        cluster_bits: 0,
        clean: CleanPolicy::AccumulateClean { threshold: 8 },
        ..FbxOptions::default()
    };
    let db = db_on(Box::new(MemDevice::new(4096)), opts(o));
    // Keys of one leaf interleaved with keys elsewhere: its entries land on many pages.
    for i in 0..2_000u64 {
        db.insert(i % 40, i).unwrap();
        db.insert(1_000_000 + i * 1000, i).unwrap();
    }
    let before = db.stats();
    for _ in 0..20 {
        assert_eq!(db.get(39).unwrap(), Some(1999));
    }
    let after = db.stats();
    assert!(c(&after, "cleans") > c(&before, "cleans"));
    db.check_integrity().unwrap();
}

/// A leaf's clean state means reads since the last clean under the naive method and pages
/// accumulated under AC: reopened with another policy, every leaf starts afresh (the naive
/// method's (k+1)-th read cleans, not its first); reopened with the same policy, the state
/// carries over.
#[test]
fn a_new_clean_policy_starts_every_leaf_afresh() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let path = dir.path().join("fbx");
    let ac = CleanPolicy::AccumulateClean {
        threshold: 1_000_000,
    };
    let o = FbxOptions {
        log_buffer_pages: Some(1),
        cluster_bits: 0,
        clean: ac,
        ..FbxOptions::default()
    };
    let db = Db::create(&path, opts(o)).unwrap();
    for i in 0..2_000u64 {
        db.insert(i % 40, i).unwrap();
        db.insert(1_000_000 + i * 1000, i).unwrap();
    }
    for _ in 0..10 {
        assert_eq!(db.get(39).unwrap(), Some(1999));
    }
    assert_eq!(c(&db.stats(), "cleans"), 0);
    db.close().unwrap();
    let reopen = |policy: CleanPolicy| {
        flashix::experiment::open_adjusted(&path, |o| {
            let f = FbxOptions {
                clean: policy,
                ..o.fbx_options()
            };
            o.fbx(f)
        })
        .unwrap()
    };
    // Naive k = 2: the first two reads after the reopen do not clean (the AC state of ten
    // reads is not a read count)...
    let db = reopen(CleanPolicy::Naive { k: 2 });
    for _ in 0..2 {
        assert_eq!(db.get(39).unwrap(), Some(1999));
        assert_eq!(c(&db.stats(), "cleans"), 0);
    }
    db.close().unwrap();
    // ... and reopened with the same policy the count carries over: the third read cleans.
    let db = reopen(CleanPolicy::Naive { k: 2 });
    assert_eq!(db.get(39).unwrap(), Some(1999));
    assert_eq!(c(&db.stats(), "cleans"), 1);
    db.check_integrity().unwrap();
}

/// §3.2's manifesto and §4.1: every write to the data file is an append. Without segment
/// reuse the device sees one sequential stream; with reuse it jumps only where a segment
/// starts.
#[test]
fn the_data_file_is_written_sequentially() {
    for (seg, limit) in [(256u32, 100.0f64), (8, 1.5)] {
        let o = FbxOptions {
            segment_pages: seg,
            space_amp_limit: limit,
            ..FbxOptions::default()
        };
        let db = db_on(
            Box::new(MemDevice::new(4096)),
            opts(o).checkpoint_wal_bytes(256 << 10),
        );
        let mut x = 1u64;
        for i in 0..30_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let k = (x >> 40) % 20_000;
            match i % 10 {
                0 => {
                    db.get(k).unwrap();
                }
                1 => db.delete(k).unwrap(),
                _ => db.insert(k, i).unwrap(),
            }
        }
        check_sequential_writes(db);
    }
}

/// After a run: writes were sequential but where a segment starts; the index is sound.
fn check_sequential_writes(db: Db) {
    db.flush().unwrap();
    let s = db.stats();
    let opened = c(&s, "segments_opened");
    eprintln!(
        "writes {} sequential {} random {} segments opened {opened} released {}",
        s.device.writes,
        s.device.sequential_writes,
        s.device.random_writes,
        c(&s, "segments_released")
    );
    assert!(s.device.writes > 1000);
    assert!(
        s.device.random_writes <= opened,
        "{} random writes for {opened} segments",
        s.device.random_writes
    );
    db.check_integrity().unwrap();
    db.close().unwrap();
}

/// Not in the paper (U8): dead pages are released and their segments reused, so under
/// updates of ten times the index's size the file stays within the space limit.
#[test]
fn space_stays_bounded_under_ten_times_the_index_in_updates() {
    let o = FbxOptions {
        segment_pages: 32,
        space_amp_limit: 2.0,
        ..FbxOptions::default()
    };
    // The default WAL limit: its small logical records would let the file grow by every
    // dead segment for long before the WAL alone asked for a checkpoint.
    let db = db_on(Box::new(MemDevice::new(4096)), opts(o));
    let n = 20_000u64;
    let pairs: Vec<(u64, u64)> = (0..n).map(|k| (k * 7, k)).collect();
    db.bulk_insert(&pairs).unwrap();
    let mut model: BTreeMap<u64, u64> = pairs.iter().copied().collect();
    let mut x = 3u64;
    let mut worst = 0.0f64;
    for i in 0..10 * n {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let k = ((x >> 33) % n) * 7;
        db.insert(k, i).unwrap();
        model.insert(k, i);
        if i % 5_000 == 0 {
            let s = db.stats();
            // The footprint includes the freed segments that await a checkpoint.
            let footprint = c(&s, "file_pages") + c(&s, "freed_pages_pending");
            let amp = footprint as f64 / c(&s, "live_pages") as f64;
            worst = worst.max(amp);
        }
    }
    let s = db.stats();
    let (file, live) = (
        c(&s, "file_pages") + c(&s, "freed_pages_pending"),
        c(&s, "live_pages"),
    );
    eprintln!(
        "file {file} live {live} worst amplification {worst:.2} released {} cleaned {}",
        c(&s, "segments_released"),
        c(&s, "segments_cleaned")
    );
    assert!(c(&s, "segments_released") > 0);
    // The limit, plus the cleaner's slack of four segments, plus segments freed since the
    // last checkpoint (pending reuse).
    assert!(
        file as f64 <= 2.0 * live as f64 + 8.0 * 32.0,
        "{file} vs {live}"
    );
    assert!(worst < 3.0, "amplification reached {worst}");
    db.check_integrity().unwrap();
    let got: BTreeMap<u64, u64> = db.range(..).unwrap().map(|kv| kv.unwrap()).collect();
    assert_eq!(got, model);
}

/// Regression (found by the soak: FBX on the simulated SSD ran out of
/// space). A checkpoint's manifest lists the segment of the snapshot it replaces, whose
/// pages die right after it; reopened, that segment held no live page, was never freed,
/// and the cleaner picked it for ever while the file grew by a segment per close or crash.
/// Invariant 3 now says a segment other than the head holds a live page, and open frees
/// the dead ones: closing and reopening an index many times keeps its file the same size.
#[test]
fn closing_and_reopening_does_not_leak_segments() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let path = dir.path().join("fbx");
    let o = FbxOptions {
        segment_pages: 2,
        ..FbxOptions::default()
    };
    let mut db = Db::create(&path, opts(o).page_size(512)).unwrap();
    let mut model = BTreeMap::new();
    let mut files = Vec::new();
    for round in 0..40u64 {
        for i in 0..20 {
            let k = (round * 20 + i) % 200;
            db.insert(k, round).unwrap();
            model.insert(k, round);
        }
        db.close().unwrap();
        db = Db::open(&path).unwrap();
        db.check_integrity().unwrap();
        files.push(c(&db.stats(), "file_pages"));
    }
    // From round 10 on, the keys are all there and each round rewrites as many: the file
    // holds what is live and the slack, not a segment more per reopen.
    let (early, late) = (files[10], *files.last().unwrap());
    assert!(late <= early + 8, "file pages by round: {files:?}");
    let got: BTreeMap<u64, u64> = db.range(..).unwrap().map(|kv| kv.unwrap()).collect();
    assert_eq!(got, model);
}

/// contract point 4 of docs/design.md: a flipped bit in any page is `Corruption` naming `data` and the page, or
/// harmless (a dead page).
#[test]
fn a_flipped_bit_in_any_page_is_detected_or_harmless() {
    let dev = MemDevice::new(512);
    let vfs = MemVfs::new();
    let o = FbxOptions {
        leaf_order: Some(12),
        inner_order: Some(8),
        log_buffer_pages: Some(4),
        cluster_bits: 2,
        segment_pages: 16,
        ..FbxOptions::default()
    };
    let opts = Options::new(EngineKind::Fbx)
        .page_size(512)
        // Enough for the node table besides the log buffer and the pool's minimum: a
        // budget the tables exceed is refused at open.
        .buffer_pool_bytes(32 * 512)
        .fbx(o);
    let mut db = Db::create_on(
        Storage {
            device: Box::new(dev.reopen()),
            vfs: Arc::new(vfs.clone()),
        },
        opts,
    )
    .unwrap();
    let model = flashix::testing::insert_and_delete(&mut db, 3, 1500, 600).unwrap();
    db.close().unwrap();
    let detected = flashix::testing::flip_a_bit_in_every_page(&dev, &vfs, 512, &model).unwrap();
    assert!(detected > 20, "only {detected} pages detected");
}

/// contract point 2 of docs/design.md: close and open give the same contents, on a file and on a simulated SSD;
/// the options come from the manifest.
#[test]
fn persists_on_a_file_and_on_a_simulated_ssd() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mut cfg = flashix::sim::SimSsdConfig::with_ftl(FtlKind::Page);
    cfg.nand.blocks = 512;
    for (name, device) in [
        ("file", flashix::DeviceSpec::File { direct_io: true }),
        ("ssd", flashix::DeviceSpec::SimulatedSsd(cfg)),
    ] {
        let path = dir.path().join(name);
        let o = Options::new(EngineKind::Fbx)
            .page_size(2048)
            .buffer_pool_bytes(1 << 20)
            .device(device)
            .fbx(FbxOptions {
                leaf_order: Some(50),
                log_buffer_pages: Some(64),
                ..FbxOptions::default()
            });
        let mut db = Db::create(&path, o).unwrap();
        let model = flashix::testing::insert_and_delete(&mut db, 5, 5000, 3000).unwrap();
        db.close().unwrap();
        let db = Db::open(&path).unwrap();
        db.check_integrity().unwrap();
        let got: BTreeMap<u64, u64> = db.range(..).unwrap().map(|kv| kv.unwrap()).collect();
        assert_eq!(got, model, "{name}");
        assert_eq!(c(&db.stats(), "leaf_order"), 50, "{name}");
    }
}

#[test]
fn bad_options_are_refused_with_a_reason() {
    let cases: Vec<(FbxOptions, &str)> = vec![
        (
            FbxOptions {
                leaf_order: Some(1),
                ..FbxOptions::default()
            },
            "leaf_order",
        ),
        (
            FbxOptions {
                leaf_order: Some(300),
                ..FbxOptions::default()
            },
            "leaf_order",
        ),
        (
            FbxOptions {
                inner_order: Some(500),
                ..FbxOptions::default()
            },
            "inner_order",
        ),
        (
            FbxOptions {
                log_buffer_pages: Some(0),
                ..FbxOptions::default()
            },
            "log_buffer_pages",
        ),
        (
            FbxOptions {
                cluster_bits: 17,
                ..FbxOptions::default()
            },
            "cluster_bits",
        ),
        (
            FbxOptions {
                segment_pages: 1,
                ..FbxOptions::default()
            },
            "segment_pages",
        ),
        (
            FbxOptions {
                space_amp_limit: f64::NAN,
                ..FbxOptions::default()
            },
            "space_amp_limit",
        ),
        (
            FbxOptions {
                clean: CleanPolicy::Naive { k: 0 },
                ..FbxOptions::default()
            },
            "k",
        ),
    ];
    for (o, field) in cases {
        match Db::create_on(
            Storage {
                device: Box::new(MemDevice::new(4096)),
                vfs: Arc::new(MemVfs::new()),
            },
            opts(o.clone()),
        ) {
            Err(Error::InvalidOptions(m)) => assert!(m.contains(field), "{field}: {m}"),
            other => panic!("{o:?}: {:?}", other.map(|_| ())),
        }
    }
    // The log buffer comes out of the budget.
    let small = Options::new(EngineKind::Fbx)
        .buffer_pool_bytes(1 << 20)
        .fbx(FbxOptions {
            log_buffer_pages: Some(256),
            ..FbxOptions::default()
        });
    match Db::create_on(
        Storage {
            device: Box::new(MemDevice::new(4096)),
            vfs: Arc::new(MemVfs::new()),
        },
        small,
    ) {
        Err(Error::InvalidOptions(m)) => assert!(m.contains("log buffer"), "{m}"),
        other => panic!("{:?}", other.map(|_| ())),
    }
}

/// §4.3: the entry-count estimate comes from the node table without reading a leaf; it is
/// an upper bound over the whole key space (entries at the last rebuild plus log entries
/// since) and near the true count of a range that spans many leaves. Engines without
/// counts answer `None`.
#[test]
fn entry_count_estimate_reads_no_leaf_and_is_near_the_count() {
    let db = db_on(Box::new(MemDevice::new(4096)), opts(FbxOptions::default()));
    let mut model = BTreeMap::new();
    let mut x = 7u64;
    for i in 0..30_000u64 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let k = x >> 1;
        db.insert(k, i).unwrap();
        model.insert(k, i);
        if i % 7 == 0 {
            // Tombstones and overwrites make the estimate an upper bound, not exact.
            let at = x.rotate_left(17) >> 1;
            let gone = *model.range(at..).next().unwrap_or((&k, &0)).0;
            db.delete(gone).unwrap();
            model.remove(&gone);
        }
    }
    let before = db.stats();
    let all = db.estimate_count(&[(0, u64::MAX)]).unwrap().unwrap();
    assert!(all >= model.len() as u64, "{all} < {}", model.len());
    assert!(all <= 2 * model.len() as u64, "{all} vs {}", model.len());
    for i in 1..20u64 {
        let (lo, hi) = (i * (u64::MAX / 64), (i + 3) * (u64::MAX / 64));
        let truth = model.range(lo..=hi).count() as f64;
        let est = db.estimate_count(&[(lo, hi)]).unwrap().unwrap() as f64;
        assert!(
            est >= 0.8 * truth && est <= 1.5 * truth,
            "[{lo}, {hi}]: estimate {est}, {truth} entries"
        );
    }
    // Overlapping and unsorted ranges count once; a bad range is refused.
    let one = db.estimate_count(&[(10, 1 << 62)]).unwrap().unwrap();
    let two = db
        .estimate_count(&[(1 << 61, 1 << 62), (10, 1 << 61)])
        .unwrap()
        .unwrap();
    assert!(one.abs_diff(two) <= 1, "{one} vs {two}");
    assert!(matches!(
        db.estimate_count(&[(5, 4)]),
        Err(Error::InvalidArgument(_))
    ));
    let after = db.stats();
    assert_eq!(c(&after, "leaf_rebuilds"), c(&before, "leaf_rebuilds"));
    let btree = db_on(
        Box::new(MemDevice::new(4096)),
        Options::new(EngineKind::BTree).page_size(4096),
    );
    btree.insert(1, 1).unwrap();
    assert_eq!(btree.estimate_count(&[(0, 10)]).unwrap(), None);
}

/// The node table is charged to the budget: as the tree grows, the pool gets fewer frames,
/// and the index's memory stays within the budget (plus the Pager's page-id sets, which
/// no engine charges yet).
#[test]
fn the_node_table_is_charged_to_the_budget() {
    let budget = 1u64 << 20;
    let db = db_on(
        Box::new(MemDevice::new(4096)),
        opts(FbxOptions::default()).buffer_pool_bytes(budget),
    );
    let frames0 = db.stats().buffer.frames;
    let mut x = 3u64;
    let mut peak = 0;
    for i in 0..60_000u64 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        db.insert(x, i).unwrap();
        if i % 5000 == 0 {
            peak = peak.max(db.stats().memory_bytes);
        }
    }
    let s = db.stats();
    let tables = c(&s, "ntt_bytes");
    // Several frames' worth (the compact table costs a few tens of bytes a leaf).
    assert!(
        tables > 16 << 10,
        "a table of {tables} bytes proves nothing"
    );
    assert!(
        s.buffer.frames < frames0 && s.buffer.frames * 4096 + tables <= budget,
        "{} frames at first, {} now, tables {tables}",
        frames0,
        s.buffer.frames
    );
    let slack = budget / 16;
    assert!(
        peak.max(s.memory_bytes) <= budget + slack,
        "memory {} / peak {peak} over the budget {budget}",
        s.memory_bytes
    );
    // The index still answers (the shrunk pool wrote nothing wrong back).
    db.check_integrity().unwrap();
}
