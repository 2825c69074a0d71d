//! The on-disk format is frozen by fixtures: `tests/fixtures/v<N>/<engine>/` holds an index
//! directory written by the flashix version whose manifest format is `N` (one per built
//! engine: a checkpointed state plus a WAL tail of flushed operations to replay). A test
//! copies each into a scratch directory, opens it, checks its integrity and compares its
//! contents with the operations that wrote it; then writes to it, reopens it and checks
//! again. A format change that would stop an existing index from opening fails here.
//!
//! A new fixture set (after a deliberate format change, with a new version) is written by
//! `cargo run -p flashix --example write_fixture -- crates/flashix/tests/fixtures/v<N>`.

mod fixture_history;

use fixture_history::{contents, first_format, history, ENGINES};
use flashix::Db;
use std::path::{Path, PathBuf};

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

#[test]
fn fixtures_of_every_supported_format_open_and_read_back() {
    let want = history(None, 1);
    let mut seen = 0;
    for version in std::fs::read_dir(fixtures()).unwrap() {
        let version = version.unwrap().path();
        let number: u32 = version.file_name().unwrap().to_string_lossy()[1..]
            .parse()
            .unwrap();
        for kind in ENGINES.into_iter().filter(|&k| first_format(k) <= number) {
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

/// The engine state of the manifest in `dir`.
fn engine_state(dir: &Path) -> serde_json::Value {
    let m = std::fs::read(dir.join("MANIFEST")).unwrap();
    let n = u32::from_le_bytes(m[12..16].try_into().unwrap()) as usize;
    let body: serde_json::Value = serde_json::from_slice(&m[20..20 + n]).unwrap();
    body["engine"].clone()
}

/// FD-trees and LSM-trees written before format 7 keep their 24-byte entries (engine
/// state without `packed`) through the merges of thousands of inserts, and those of
/// format 7 their packed ones: the integrity check refuses a page whose kind is not of
/// the index's layout, and the contents match a model.
#[test]
fn sorted_indexes_keep_their_page_layout_through_merges() {
    use flashix::EngineKind;
    for kind in [EngineKind::FdTree, EngineKind::Lsm] {
        for (version, packed) in [(6, false), (7, true)] {
            let src = fixtures().join(format!("v{version}")).join(kind.name());
            let scratch = tempfile::tempdir().unwrap();
            let dir = scratch.path().join("idx");
            copy_dir(&src, &dir);
            let mut want = history(None, 1);
            let db = Db::open(&dir).unwrap();
            let merges = db.stats().engine_counters.get("merges").copied();
            for i in 0..3_000u64 {
                let k = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
                db.insert(k, i).unwrap();
                want.insert(k, i);
            }
            assert!(
                db.stats().engine_counters.get("merges").copied() > merges,
                "{src:?}: no merge"
            );
            db.check_integrity().unwrap();
            db.close().unwrap();
            assert_eq!(
                engine_state(&dir)["packed"].as_bool().unwrap_or(false),
                packed,
                "{src:?}"
            );
            let mut db = Db::open(&dir).unwrap();
            db.check_integrity().unwrap();
            assert_eq!(contents(&mut db), want, "{src:?}");
        }
    }
}
