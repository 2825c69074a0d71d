//! The on-disk format is frozen by fixtures: `tests/fixtures/v<N>/<engine>/` holds an index
//! directory written by the flashix version whose manifest format is `N` (one per built
//! engine: a checkpointed state plus a WAL tail of flushed operations to replay). A test
//! copies each into a scratch directory, opens it, checks its integrity and compares its
//! contents with the operations that wrote it; then writes to it, reopens it and checks
//! again. A format change that would stop an existing index from opening fails here.
//!
//! To write a new fixture set (after a deliberate format change, with a new version):
//! `FLASHIX_WRITE_FIXTURE=crates/flashix/tests/fixtures/v<N> cargo test -p flashix --test
//! format_fixture -- write_fixture --ignored`.

use flashix::sim::NandConfig;
use flashix::{
    Db, DeviceSpec, DiplOptions, EngineKind, FdTreeOptions, IplOptions, LsmOptions, Options,
    PioOptions,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The engines with a fixture.
const ENGINES: [EngineKind; 7] = [
    EngineKind::BTree,
    EngineKind::Lsm,
    EngineKind::FdTree,
    EngineKind::PioBTree,
    EngineKind::Bftl,
    EngineKind::IplBTree,
    EngineKind::DiplBTree,
];

/// Small pages and a small pool, so that each index spills into several levels, runs,
/// components or blocks while its files stay small.
fn options(kind: EngineKind) -> Options {
    let small_nand = NandConfig {
        page_bytes: 2048,
        pages_per_block: 16,
        blocks: 48,
        ..NandConfig::default()
    };
    let file = DeviceSpec::File { direct_io: false };
    let o = Options::new(kind).buffer_pool_bytes(64 << 10);
    match kind {
        EngineKind::IplBTree => o
            .page_size(2048)
            .device(DeviceSpec::RawNand(small_nand))
            .ipl(IplOptions {
                node_bytes: 2048,
                buffer_frames: Some(8),
                log_area_bytes: 4096,
                nand_blocks: 48,
                pages_per_block: 16,
            }),
        EngineKind::DiplBTree => o
            .page_size(2048)
            .device(DeviceSpec::RawNand(small_nand))
            .dipl(DiplOptions {
                node_bytes: 2048,
                buffer_frames: Some(8),
                nand_blocks: 48,
                pages_per_block: 16,
            }),
        EngineKind::FdTree => o.page_size(512).device(file).fdtree(FdTreeOptions {
            k: Some(4),
            head_tree_bytes: 2048,
            deamortize: true,
            io_unit_bytes: 4096,
        }),
        EngineKind::Lsm => o.page_size(512).device(file).lsm(LsmOptions {
            k: Some(4),
            c0_bytes: 2048,
            io_unit_bytes: 4096,
            search_before_delete: false,
        }),
        EngineKind::PioBTree => o.page_size(512).device(file).pio(PioOptions {
            leaf_segments: Some(2),
            opq_bytes: Some(24 * 64),
            ..PioOptions::default()
        }),
        _ => o.page_size(512).device(file),
    }
}

/// A key of the fixture's key space (a permutation of 0..4001, spread over u64).
fn key(i: u64) -> u64 {
    let k = (i * 1_597) % 4_001;
    k.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (k << 7)
}

/// The operations that write a fixture, in two sessions: the first ends with `close` (a
/// checkpoint), the second with `flush` and no close (a WAL tail that `open` replays).
/// Applied to `db` when given; always applied to the returned model.
fn history(mut db: Option<&mut Db>, session: u32) -> BTreeMap<u64, u64> {
    let mut model = BTreeMap::new();
    let ins = |db: &mut Option<&mut Db>, m: &mut BTreeMap<u64, u64>, k: u64, v: u64| {
        if let Some(db) = db {
            db.insert(k, v).unwrap();
        }
        m.insert(k, v);
    };
    for i in 0..2_500u64 {
        ins(&mut db, &mut model, key(i), i * 3 + 1);
    }
    let bulk: Vec<(u64, u64)> = (2_500..3_000u64).map(|i| (key(i), i)).collect();
    if let Some(db) = db.as_deref_mut() {
        db.bulk_insert(&bulk).unwrap();
    }
    model.extend(bulk.iter().copied());
    for i in (0..3_000u64).step_by(7) {
        if let Some(db) = db.as_deref_mut() {
            db.delete(key(i)).unwrap();
        }
        model.remove(&key(i));
    }
    let (lo, hi) = (u64::MAX / 8, u64::MAX / 8 * 2);
    if let Some(db) = db.as_deref_mut() {
        db.delete_range(lo..hi).unwrap();
    }
    model.retain(|k, _| !(lo..hi).contains(k));
    if session == 0 {
        return model;
    }
    for i in 3_000..3_600u64 {
        ins(&mut db, &mut model, key(i), i);
    }
    for i in (0..3_600u64).step_by(11) {
        if let Some(db) = db.as_deref_mut() {
            db.delete(key(i)).unwrap();
        }
        model.remove(&key(i));
    }
    ins(&mut db, &mut model, 0, u64::MAX);
    ins(&mut db, &mut model, u64::MAX, 0);
    model
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

fn contents(db: &mut Db) -> BTreeMap<u64, u64> {
    db.range(..).unwrap().map(|kv| kv.unwrap()).collect()
}

/// Writes a fixture set into `$FLASHIX_WRITE_FIXTURE` (see the module doc).
#[test]
#[ignore = "writes fixtures; run by hand after a deliberate format change"]
fn write_fixture() {
    let Ok(out) = std::env::var("FLASHIX_WRITE_FIXTURE") else {
        return;
    };
    for kind in ENGINES {
        let dir = Path::new(&out).join(kind.name());
        let mut db = Db::create(&dir, options(kind)).unwrap();
        history(Some(&mut db), 0);
        db.close().unwrap();
        let mut db = Db::open(&dir).unwrap();
        let want = history(None, 1);
        // Replay the second session's operations onto the first's state.
        let first = history(None, 0);
        for (k, _) in first.iter() {
            if !want.contains_key(k) {
                db.delete(*k).unwrap();
            }
        }
        for (&k, &v) in want.iter() {
            if first.get(&k) != Some(&v) {
                db.insert(k, v).unwrap();
            }
        }
        db.flush().unwrap();
        assert_eq!(contents(&mut db), want, "{kind}");
        db.flush().unwrap();
        // No close: the second session stays in the WAL, for `open` to replay.
        std::mem::forget(db);
    }
}

/// Every fixture of every format version this build reads opens, holds what wrote it,
/// passes its integrity check, and keeps working after a write and a reopen.
#[test]
fn fixtures_of_every_supported_format_open_and_read_back() {
    let want = history(None, 1);
    let mut seen = 0;
    for version in std::fs::read_dir(fixtures()).unwrap() {
        let version = version.unwrap().path();
        for kind in ENGINES {
            let src = version.join(kind.name());
            assert!(src.is_dir(), "no fixture {}", src.display());
            // The directory names the manifest format its fixture was written in.
            let manifest = std::fs::read(src.join("MANIFEST")).unwrap();
            let found = u32::from_le_bytes(manifest[8..12].try_into().unwrap());
            let named = version.file_name().unwrap().to_string_lossy().into_owned();
            assert_eq!(format!("v{found}"), named, "{}", src.display());
            let scratch = tempfile::tempdir().unwrap();
            let dir = scratch.path().join("idx");
            copy_dir(&src, &dir);
            let mut db =
                Db::open(&dir).unwrap_or_else(|e| panic!("{}: open failed: {e}", src.display()));
            db.check_integrity().unwrap();
            assert_eq!(contents(&mut db), want, "{}", src.display());
            for &k in want.keys().take(50) {
                assert_eq!(db.get(k).unwrap(), want.get(&k).copied());
            }
            db.insert(42, 4242).unwrap();
            db.close().unwrap();
            let mut db = Db::open(&dir).unwrap();
            db.check_integrity().unwrap();
            let mut want2 = want.clone();
            want2.insert(42, 4242);
            assert_eq!(contents(&mut db), want2, "{} after a reopen", src.display());
            db.close().unwrap();
            seen += 1;
        }
    }
    assert!(seen >= ENGINES.len(), "no fixture set found");
}
