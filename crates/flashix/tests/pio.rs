//! PIO B-tree behaviour beyond the conformance harness: a model check under many batch
//! updates, MPSearch's one psync batch per level, OPQ lookup semantics, leaf-segment
//! shrink, and exactly-once recovery of a crash inside a batch update.

use flashix::io::{Device, Faults, MemDevice, MemVfs, Vfs};
use flashix::testing::{run, DeviceKind, History, Rng};
use flashix::{Db, EngineKind, Options, PioOptions, Storage, PIO_OPQ_ENTRY_BYTES};
use std::collections::BTreeMap;
use std::sync::Arc;

fn storage(dev: &MemDevice, vfs: &MemVfs) -> Storage {
    Storage {
        device: Box::new(dev.reopen()),
        vfs: Arc::new(vfs.clone()),
    }
}

fn faulty(faults: &Faults, dev: &MemDevice, vfs: &MemVfs) -> Storage {
    let d: Box<dyn Device> = Box::new(dev.reopen());
    let v: Arc<dyn Vfs> = Arc::new(vfs.clone());
    Storage {
        device: Box::new(faults.wrap_device(d)),
        vfs: Arc::new(faults.wrap_vfs(v)),
    }
}

fn opts(page_size: usize, frames: u64, pio: PioOptions) -> Options {
    Options::new(EngineKind::PioBTree)
        .page_size(page_size)
        .buffer_pool_bytes(frames * page_size as u64)
        .pio(pio)
}

fn pio(leaf_segments: u32, opq_entries: u64, pio_max: u32, bcnt: u32) -> PioOptions {
    PioOptions {
        leaf_segments,
        opq_bytes: opq_entries * PIO_OPQ_ENTRY_BYTES,
        pio_max,
        speriod: 7,
        bcnt,
    }
}

fn counter(db: &Db, name: &str) -> u64 {
    db.stats().engine_counters[name]
}

#[test]
fn conformance_quick() {
    for seed in 0..40 {
        let h = History {
            engine: EngineKind::PioBTree,
            device: DeviceKind::Memory,
            seed,
            ops: 1500,
            crashes: true,
        };
        if let Err(e) = run(&h) {
            panic!("{e}");
        }
    }
}

#[test]
fn matches_a_btreemap_through_splits_merges_and_shrinks() {
    let dev = MemDevice::new(512);
    let vfs = MemVfs::new();
    let mut db = Db::create_on(storage(&dev, &vfs), opts(512, 32, pio(2, 40, 4, 25))).unwrap();
    let mut model = BTreeMap::new();
    let mut rng = Rng::new(11);
    for i in 0..30_000u64 {
        let k = match rng.below(10) {
            0 => 0,
            1 => u64::MAX,
            _ => rng.below(6_000) * 7,
        };
        if rng.below(3) == 0 {
            db.delete(k).unwrap();
            model.remove(&k);
        } else {
            db.insert(k, i).unwrap();
            model.insert(k, i);
        }
        if i % 5_000 == 0 {
            db.check_integrity().unwrap();
        }
    }
    db.check_integrity().unwrap();
    let got: BTreeMap<u64, u64> = db.range(..).unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(got, model);
    let probe: Vec<u64> = (0..500).map(|i| i * 83).chain([0, u64::MAX]).collect();
    let want: Vec<Option<u64>> = probe.iter().map(|k| model.get(k).copied()).collect();
    assert_eq!(db.get_many(&probe).unwrap(), want);
    assert!(counter(&db, "height") >= 3);
    for c in [
        "bupdates",
        "shrinks",
        "leaf_splits",
        "internal_splits",
        "leaf_appends",
    ] {
        assert!(counter(&db, c) > 0, "{c} never happened");
    }
    // Delete most keys so that leaves and internal nodes merge back.
    let keys: Vec<u64> = model.keys().copied().collect();
    for &k in &keys[..keys.len() - 10] {
        db.delete(k).unwrap();
        model.remove(&k);
    }
    db.close().unwrap();
    let mut db = Db::open_on(storage(&dev, &vfs)).unwrap();
    db.check_integrity().unwrap();
    let got: BTreeMap<u64, u64> = db.range(..).unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(got, model);
    // Counters start at zero on open; the close's checkpoint flushed the deletes.
    let mut db2 = Db::create_on(
        storage(&MemDevice::new(512), &MemVfs::new()),
        opts(512, 32, pio(2, 40, 4, 25)),
    )
    .unwrap();
    for &k in &keys {
        db2.insert(k, k).unwrap();
    }
    // Deletes are appended blindly and cancel puts only when a full leaf shrinks (§3.2.2):
    // the second pass overflows the leaves, whose shrinks leave them empty, so they merge.
    for _ in 0..2 {
        for &k in &keys {
            db2.delete(k).unwrap();
        }
    }
    db2.flush().unwrap();
    db2.check_integrity().unwrap();
    assert_eq!(db2.range(..).unwrap().count(), 0);
    assert!(
        counter(&db2, "merges") > 0 && counter(&db2, "redistributions") > 0,
        "{:?}",
        db2.stats().engine_counters
    );
}
