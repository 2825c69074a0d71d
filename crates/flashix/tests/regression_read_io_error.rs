//! Regression (found by the conformance harness's fault steps): a read
//! (`get`, `get_many`, a range) that met an I/O error other than ENOSPC left the `Db`
//! usable, although the error may have stopped a buffer-pool eviction half way (the B+-tree
//! evicts a dirty page on a read) or a page load. The fault step's "the `Db` is poisoned"
//! check failed on every engine: `insert after range(..) failed with I/O error while
//! writing page 18 (injected failure): the Db is not poisoned: Ok(())`. Now any I/O error a
//! read meets poisons the `Db`, and the index reopens with everything flushed.

use flashix::io::fault::OpKind;
use flashix::io::{Faults, MemDevice, MemVfs, Vfs};
use flashix::{Db, EngineKind, Error, Options, Storage};
use std::sync::Arc;

fn storage(f: &Faults, dev: &MemDevice, vfs: &MemVfs) -> Storage {
    Storage {
        device: Box::new(f.wrap_device(Box::new(dev.reopen()))),
        vfs: Arc::new(f.wrap_vfs(Arc::new(vfs.clone()) as Arc<dyn Vfs>)),
    }
}

/// Fill `engine` with flushed keys in a 16-page pool, arm `kind` to fail with EIO, read
/// until a read returns it; the `Db` must then refuse work, and reopen whole. False when
/// no read met the failure.
fn read_meets(engine: EngineKind, kind: OpKind) -> bool {
    let dev = MemDevice::new(512);
    let vfs = MemVfs::new();
    let faults = Faults::new(7);
    let opts = Options::new(engine)
        .page_size(512)
        .buffer_pool_bytes(16 * 512)
        .checkpoint_wal_bytes(4 << 20);
    let db = Db::create_on(storage(&faults, &dev, &vfs), opts).unwrap();
    let n = 3_000u64;
    let mut want = std::collections::BTreeMap::new();
    for k in 0..n {
        db.insert(k * 7 % n, k).unwrap();
        want.insert(k * 7 % n, k);
    }
    db.flush().unwrap();
    faults.fail_nth(kind, 1, libc::EIO, false);
    let mut failure = None;
    for i in 0..n {
        let k = i * 331 % n;
        let r = match i % 3 {
            0 => db.get(k).map(|_| ()),
            1 => db.get_many(&[k, k / 2]).map(|_| ()),
            _ => db
                .range(k..k + 40)
                .unwrap()
                .try_for_each(|kv| kv.map(|_| ())),
        };
        if let Err(e) = r {
            failure = Some(e);
            break;
        }
    }
    let Some(e) = failure else {
        return false;
    };
    match &e {
        Error::Io { source, .. } => assert_eq!(source.raw_os_error(), Some(libc::EIO), "{e}"),
        other => panic!("{engine:?} {kind:?}: expected the injected EIO, got {other}"),
    }
    assert!(
        matches!(db.insert(1, 1), Err(Error::Poisoned(_))),
        "{engine:?} {kind:?}: the Db is usable after a read met {e}"
    );
    assert!(matches!(db.get(1), Err(Error::Poisoned(_))));
    drop(db);
    faults.clear_failures();
    let db = Db::open_on(storage(&Faults::new(8), &dev, &vfs)).unwrap();
    db.check_integrity().unwrap();
    let got: std::collections::BTreeMap<u64, u64> =
        db.range(..).unwrap().map(|kv| kv.unwrap()).collect();
    assert_eq!(got, want, "{engine:?} {kind:?}: flushed contents changed");
    true
}

#[test]
fn a_read_that_meets_an_io_error_poisons_the_db() {
    for engine in [EngineKind::BTree, EngineKind::FdTree, EngineKind::Fbx] {
        assert!(
            read_meets(engine, OpKind::DeviceRead),
            "{engine:?}: no read met a failed device read"
        );
    }
    // The B+-tree's reads evict dirty pages: a failed write on a read.
    assert!(
        read_meets(EngineKind::BTree, OpKind::DeviceWrite),
        "no B+-tree read met a failed device write"
    );
}

/// The FBX-tree's `estimate_count` walks inner nodes through the pool: a failed read there
/// is an I/O error like any read's, and poisons the `Db` (it did not before).
#[test]
fn an_estimate_that_meets_an_io_error_poisons_the_db() {
    let dev = MemDevice::new(512);
    let vfs = MemVfs::new();
    // A budget that holds the tables of 3,000 entries (open refuses one that does not).
    let opts = Options::new(EngineKind::Fbx)
        .page_size(512)
        .buffer_pool_bytes(64 * 512);
    let db = Db::create_on(storage(&Faults::new(7), &dev, &vfs), opts).unwrap();
    for k in 0..3_000u64 {
        db.insert(k, k).unwrap();
    }
    db.close().unwrap();
    let faults = Faults::new(9);
    let db = Db::open_on(storage(&faults, &dev, &vfs)).unwrap();
    assert!(db.estimate_count(&[(0, 2_999)]).unwrap().is_some());
    // A cold pool again, then the estimate's first page read fails.
    drop(db);
    let db = Db::open_on(storage(&faults, &dev, &vfs)).unwrap();
    faults.fail_nth(OpKind::DeviceRead, 1, libc::EIO, false);
    let e = db.estimate_count(&[(0, 2_999)]).unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e}");
    assert!(matches!(db.insert(1, 1), Err(Error::Poisoned(_))));
}
