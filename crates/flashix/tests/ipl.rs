//! d-IPL B+-tree behaviour beyond the conformance harness: a model check, and one
//! expected-behaviour test per mechanism (ghost node creation, block split, block
//! cleansing, LLSD/LSLM reads, global cleansing) with the flash operations they cost.

use flashix::engine::ipl::IplBTree;
use flashix::engine::Engine;
use flashix::io::{MemDevice, MemVfs};
use flashix::testing::{run, DeviceKind, History, Rng};
use flashix::{Db, IplOptions, EngineKind, Options, Storage};
use std::collections::BTreeMap;
use std::sync::Arc;

fn storage(dev: &MemDevice, vfs: &MemVfs) -> Storage {
    Storage {
        device: Box::new(dev.reopen()),
        vfs: Arc::new(vfs.clone()),
    }
}

/// 2 KiB pages of 4 sectors, 16-page blocks, nodes of `np` pages.
fn opts(np: u64, frames: u32) -> Options {
    Options::new(EngineKind::IplBTree)
        .page_size(2048)
        .ipl(IplOptions {
            node_bytes: 2048 * np,
            buffer_frames: Some(frames),
            log_area_bytes: 4096,
            nand_blocks: 128,
            pages_per_block: 16,
        })
}

fn counter(e: &IplBTree, name: &str) -> u64 {
    e.stats().engine_counters.get(name).copied().unwrap_or(0)
}

#[test]
fn random_inserts_and_deletes_match_a_model_across_reopen() {
    let dev = MemDevice::new(2048);
    let vfs = MemVfs::new();
    let mut db = Db::create_on(storage(&dev, &vfs), opts(1, 8)).unwrap();
    let mut rng = Rng::new(7);
    let mut model = BTreeMap::new();
    for i in 0..20_000u64 {
        let k = rng.below(5_000);
        if i % 4 == 3 {
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
    let all: BTreeMap<u64, u64> = db.range(..).unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(all, model);
    let s = db.stats();
    assert!(s.engine_counters["block_merges"] > 0);
    db.close().unwrap();
    let mut db = Db::open_on(storage(&dev, &vfs)).unwrap();
    db.check_integrity().unwrap();
    let all: BTreeMap<u64, u64> = db.range(..).unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(all, model);
}

#[test]
fn conformance_histories_with_crashes() {
    for seed in 0..20 {
        let h = History {
            engine: EngineKind::IplBTree,
            device: DeviceKind::Memory,
            seed,
            ops: 2000,
            crashes: true,
        };
        run(&h).unwrap();
    }
}

