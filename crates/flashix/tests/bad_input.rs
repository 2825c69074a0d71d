//! Bad input and injected faults (docs/design.md, contract points
//! 2, 4 and 6): each
//! case returns the `Error` that says what and where, and none panics.

use flashix::io::fault::OpKind;
use flashix::io::{Faults, MemDevice, MemVfs, Vfs};
use flashix::{BTreeOptions, Db, DeviceSpec, EngineKind, Error, Options, Storage};
use std::path::Path;
use std::sync::Arc;

fn tmp() -> tempfile::TempDir {
    // Under the target directory: /tmp may be tmpfs, which refuses O_DIRECT.
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn small(engine: EngineKind) -> Options {
    Options::new(engine)
        .page_size(512)
        .buffer_pool_bytes(16 * 512)
}

fn flip_bit(path: &Path, byte: u64, bit: u8) {
    let mut data = std::fs::read(path).unwrap();
    data[byte as usize] ^= 1 << bit;
    std::fs::write(path, data).unwrap();
}

#[test]
fn open_of_a_missing_directory_is_not_found() {
    let d = tmp();
    let missing = d.path().join("nope");
    assert!(matches!(Db::open(&missing), Err(Error::NotFound(p)) if p == missing));
}

#[test]
fn create_over_an_existing_index_or_non_empty_directory_is_refused() {
    let d = tmp();
    Db::create(d.path(), small(EngineKind::BTree))
        .unwrap()
        .close()
        .unwrap();
    assert!(matches!(
        Db::create(d.path(), small(EngineKind::BTree)),
        Err(Error::AlreadyExists(_))
    ));
    let other = tmp();
    std::fs::write(other.path().join("notes.txt"), b"mine").unwrap();
    assert!(matches!(
        Db::create(other.path(), small(EngineKind::BTree)),
        Err(Error::AlreadyExists(_))
    ));
    // Nothing was touched.
    assert_eq!(
        std::fs::read(other.path().join("notes.txt")).unwrap(),
        b"mine"
    );
}

#[test]
fn open_of_a_directory_of_garbage_says_so() {
    let d = tmp();
    std::fs::write(d.path().join("data"), vec![0xAB; 10_000]).unwrap();
    std::fs::write(d.path().join("random.bin"), b"\x00\x01garbage").unwrap();
    assert!(matches!(Db::open(d.path()), Err(Error::NotAnIndex(_))));
    std::fs::write(d.path().join("MANIFEST"), b"this is not a manifest at all").unwrap();
    match Db::open(d.path()) {
        Err(Error::Corruption { file, .. }) => assert_eq!(file, "MANIFEST"),
        other => panic!("expected corruption of MANIFEST, got {:?}", other.err()),
    }
}

#[test]
fn engines_not_built_yet_are_unsupported_by_name() {
    for kind in EngineKind::ALL {
        let d = tmp();
        // The in-page-logging trees keep their defaults: 2 KiB pages of raw NAND, 8 KiB
        // nodes (a 512-byte page disagrees with their NAND page).
        let opts = match kind {
            EngineKind::IplBTree | EngineKind::DiplBTree => Options::new(kind),
            _ => small(kind),
        };
        match Db::create(d.path(), opts) {
            Ok(db) => db.close().unwrap(),
            Err(Error::Unsupported(msg)) => assert!(msg.contains(kind.name()), "{msg}"),
            Err(e) => panic!("{kind:?}: unexpected {e}"),
        }
    }
}

#[test]
fn invalid_options_are_refused() {
    let d = tmp();
    for ps in [0usize, 256, 1000, 3000, 4097] {
        let r = Db::create(
            d.path().join(format!("ps{ps}")),
            Options::new(EngineKind::BTree).page_size(ps),
        );
        assert!(matches!(r, Err(Error::InvalidOptions(_))), "page size {ps}");
    }
    let r = Db::create(
        d.path().join("pool"),
        Options::new(EngineKind::BTree).buffer_pool_bytes(4096),
    );
    match r {
        Err(Error::InvalidOptions(msg)) => assert!(msg.contains("at least"), "{msg}"),
        other => panic!("expected InvalidOptions, got {:?}", other.err()),
    }
    // A refused create leaves nothing behind: the same directory takes a valid create.
    assert!(!d.path().join("pool").exists());
    let empty = d.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let r = Db::create(
        &empty,
        Options::new(EngineKind::BTree).buffer_pool_bytes(4096),
    );
    assert!(matches!(r, Err(Error::InvalidOptions(_))));
    Db::create(&empty, small(EngineKind::BTree))
        .unwrap()
        .close()
        .unwrap();
    let r = Db::create(
        d.path().join("fill"),
        Options::new(EngineKind::BTree).btree(BTreeOptions {
            bulk_fill: 0.3,
            ..BTreeOptions::default()
        }),
    );
    assert!(matches!(r, Err(Error::InvalidOptions(_))));
}

#[test]
fn a_memory_index_cannot_be_reopened_from_its_directory() {
    let d = tmp();
    Db::create(
        d.path(),
        small(EngineKind::BTree).device(DeviceSpec::Memory),
    )
    .unwrap()
    .close()
    .unwrap();
    assert!(matches!(Db::open(d.path()), Err(Error::Unsupported(_))));
}

/// An index of a few hundred pages, closed cleanly.
fn build(dir: &Path, n: u64) {
    let db = Db::create(dir, small(EngineKind::BTree)).unwrap();
    for k in 0..n {
        db.insert(k * 7, k).unwrap();
    }
    db.close().unwrap();
}

fn read_all(dir: &Path) -> Result<Vec<(u64, u64)>, Error> {
    let db = Db::open(dir)?;
    let all = db.range(..)?.collect::<Result<Vec<_>, _>>()?;
    db.check_integrity()?;
    Ok(all)
}

#[test]
fn a_flipped_bit_in_any_data_page_is_corruption_naming_the_page() {
    let d = tmp();
    build(d.path(), 3_000);
    let data = d.path().join("data");
    let pages = std::fs::metadata(&data).unwrap().len() / 512;
    assert!(pages > 100);
    let pristine = std::fs::read(&data).unwrap();
    // The device grows its file ahead of the writes with zeros: those pages are no part
    // of the index (never written by it), so only written pages are flipped.
    let written: Vec<u64> = (0..pages)
        .filter(|&p| {
            let at = (p * 512) as usize;
            pristine[at..at + 512].iter().any(|&b| b != 0)
        })
        .collect();
    assert!(written.len() > 100);
    let mut detected = 0;
    for &page in &written {
        std::fs::write(&data, &pristine).unwrap();
        flip_bit(&data, page * 512 + 40 + (page * 13) % 400, (page % 8) as u8);
        match read_all(d.path()) {
            Err(Error::Corruption {
                file,
                page: Some(p),
                ..
            }) => {
                assert_eq!(file, "data");
                assert_eq!(p, page);
                detected += 1;
            }
            // A page no longer part of the tree (freed) may be damaged harmlessly; the
            // answer must still be right.
            Ok(all) => assert_eq!(all.len(), 3_000),
            Err(e) => panic!("page {page}: unexpected {e}"),
        }
    }
    assert!(
        detected >= written.len() - 2,
        "only {detected} of {} flips detected",
        written.len()
    );
}

#[test]
fn a_flipped_bit_in_the_wal_is_corruption_naming_the_file() {
    let d = tmp();
    build(d.path(), 10);
    {
        let db = Db::open(d.path()).unwrap();
        for k in 100..200 {
            db.insert(k, k).unwrap();
        }
        db.flush().unwrap();
        // Dropped without close: the WAL holds the records.
    }
    let wal = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .find(|n| n.starts_with("wal-"))
        .unwrap();
    flip_bit(&d.path().join(&wal), 20, 2);
    match Db::open(d.path()) {
        Err(Error::Corruption { file, .. }) => assert_eq!(file, wal),
        other => panic!("expected corruption of {wal}, got {:?}", other.err()),
    }
}

#[test]
fn a_flipped_bit_in_the_manifest_is_corruption_naming_the_file() {
    let d = tmp();
    build(d.path(), 10);
    let len = std::fs::metadata(d.path().join("MANIFEST")).unwrap().len();
    for byte in [0, 9, 13, 17, len / 2, len - 1] {
        let before = std::fs::read(d.path().join("MANIFEST")).unwrap();
        flip_bit(&d.path().join("MANIFEST"), byte, 1);
        match Db::open(d.path()) {
            Err(Error::Corruption { file, .. }) => assert_eq!(file, "MANIFEST"),
            Err(Error::UnsupportedVersion { .. }) => assert!((8..12).contains(&byte)),
            other => panic!("byte {byte}: expected corruption, got {:?}", other.err()),
        }
        std::fs::write(d.path().join("MANIFEST"), before).unwrap();
    }
    assert_eq!(read_all(d.path()).unwrap().len(), 10);
}

/// Inject `errno` on the first operation of `kind` after some flushed work; the failing
/// call returns the error, and the index reopens with everything flushed before.
fn injected(kind: OpKind, errno: i32) {
    let faults = Faults::new(1);
    let dev = MemDevice::new(512);
    let vfs = MemVfs::new();
    let storage = |f: &Faults| Storage {
        device: Box::new(f.wrap_device(Box::new(dev.reopen()))),
        vfs: Arc::new(f.wrap_vfs(Arc::new(vfs.clone()) as Arc<dyn Vfs>)),
    };
    // Small checkpoints, so that device syncs happen within the loop below.
    let opts = small(EngineKind::BTree).checkpoint_wal_bytes(64 << 10);
    let db = Db::create_on(storage(&faults), opts).unwrap();
    for k in 0..2_000u64 {
        db.insert(k, k).unwrap();
    }
    db.flush().unwrap();
    faults.fail_nth(kind, 1, errno, true);
    let mut failure = None;
    for k in 2_000..200_000u64 {
        let mut r = db.insert(k, k);
        if r.is_ok() && k % 100 == 0 {
            r = db.flush();
        }
        if let Err(e) = r {
            failure = Some(e);
            break;
        }
    }
    let e = failure.unwrap_or_else(|| panic!("{kind:?}: no operation failed"));
    match &e {
        Error::Io { source, .. } => assert_eq!(source.raw_os_error(), Some(errno), "{e}"),
        other => panic!("{kind:?}: expected an I/O error, got {other}"),
    }
    assert_eq!(e.is_no_space(), errno == libc::ENOSPC);
    // The Db refuses further work rather than guessing.
    assert!(matches!(db.insert(1, 1), Err(Error::Poisoned(_))));
    drop(db);
    faults.clear_failures();
    let db = Db::open_on(storage(&faults)).unwrap();
    db.check_integrity().unwrap();
    for k in 0..2_000u64 {
        assert_eq!(
            db.get(k).unwrap(),
            Some(k),
            "{kind:?}: flushed key {k} lost"
        );
    }
    // Whatever else survived is a prefix: keys 2000.. without holes.
    let all: Vec<u64> = db.range(2_000..).unwrap().map(|kv| kv.unwrap().0).collect();
    assert!(
        all.iter().enumerate().all(|(i, &k)| k == 2_000 + i as u64),
        "not a prefix"
    );
}

#[test]
fn eio_and_enospc_during_writes_and_syncs() {
    for kind in [
        OpKind::DeviceWrite,
        OpKind::DeviceSync,
        OpKind::VfsWrite,
        OpKind::VfsSync,
    ] {
        for errno in [libc::EIO, libc::ENOSPC] {
            injected(kind, errno);
        }
    }
}
