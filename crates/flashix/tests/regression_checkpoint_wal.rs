//! Regression (FD-tree conformance, seed 0, step 181): a checkpoint created the next WAL
//! and switched the manifest to it without making the WAL's name durable first. A power
//! cut that kept the manifest's rename (a rename may reach the disk without a directory
//! sync) but not the create left a manifest naming a missing WAL, and `open` failed.

use flashix::io::{Device, Faults, MemDevice, MemVfs, Vfs};
use flashix::{Db, EngineKind, Options, Storage};
use std::sync::Arc;

fn storage(faults: &Faults, dev: &MemDevice, vfs: &MemVfs) -> Storage {
    let d: Box<dyn Device> = Box::new(dev.reopen());
    let v: Arc<dyn Vfs> = Arc::new(vfs.clone());
    Storage {
        device: Box::new(faults.wrap_device(d)),
        vfs: Arc::new(faults.wrap_vfs(v)),
    }
}

#[test]
fn a_crash_anywhere_in_a_checkpoint_leaves_an_openable_index() {
    for seed in 0..8u64 {
        for n in 1..40u64 {
            let dev = MemDevice::new(512);
            let vfs = MemVfs::new();
            let faults = Faults::new(seed * 1000 + n);
            let opts = Options::new(EngineKind::BTree)
                .page_size(512)
                .buffer_pool_bytes(16 * 512);
            let db = Db::create_on(storage(&faults, &dev, &vfs), opts).unwrap();
            for k in 0..50u64 {
                db.insert(k, k).unwrap();
            }
            db.flush().unwrap();
            faults.crash_after(n);
            // Closing takes a checkpoint; the power cut lands somewhere inside it.
            let _ = db.close();
            faults.crash_now();
            assert_eq!(faults.image_error(), None);
            let fresh = Faults::new(seed);
            let db = Db::open_on(storage(&fresh, &dev, &vfs))
                .unwrap_or_else(|e| panic!("seed {seed}, crash after {n}: {e}"));
            assert_eq!(db.range(..).unwrap().count(), 50);
        }
    }
}
