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
