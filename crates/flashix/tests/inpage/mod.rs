//! What the IPL and d-IPL B+-trees' tests share (`tests/ipl.rs`, `tests/dipl.rs`): storage
//! in memory that survives a reopen, options on a small raw NAND, the flash counters, and
//! the model check across reopen.

use flashix::io::{MemDevice, MemVfs};
use flashix::sim::NandConfig;
use flashix::testing::insert_and_delete;
use flashix::{Db, DeviceSpec, EngineKind, Options, Storage};
use std::collections::BTreeMap;
use std::sync::Arc;

/// 2 KiB NAND pages of 4 sectors, 16 pages per block, 128 blocks.
pub const PAGE: usize = 2048;
pub const PAGES_PER_BLOCK: u32 = 16;
pub const BLOCKS: u32 = 128;

/// Storage on `dev` and `vfs`, which keep their contents across a reopen.
pub fn storage(dev: &MemDevice, vfs: &MemVfs) -> Storage {
    Storage {
        device: Box::new(dev.reopen()),
        vfs: Arc::new(vfs.clone()),
    }
}

/// Options of `kind` on raw NAND of [`PAGE`], [`PAGES_PER_BLOCK`] and [`BLOCKS`], before
/// the engine's own options.
pub fn raw_nand(kind: EngineKind) -> Options {
    Options::new(kind)
        .page_size(PAGE)
        .device(DeviceSpec::RawNand(NandConfig {
            page_bytes: PAGE,
            pages_per_block: PAGES_PER_BLOCK,
            blocks: BLOCKS,
            ..NandConfig::default()
        }))
}

/// An engine counter; a name the engine does not report is a failure.
pub fn c(db: &Db, name: &str) -> u64 {
    let s = db.stats();
    *s.engine_counters
        .get(name)
        .unwrap_or_else(|| panic!("{}: no counter {name:?}", s.engine))
}

/// (page reads, page programs, sector programs, erases + erases waiting for a checkpoint).
pub fn flash(db: &Db) -> [u64; 4] {
    [
        c(db, "nand_page_reads"),
        c(db, "nand_page_programs"),
        c(db, "nand_sector_programs"),
        c(db, "nand_erases") + c(db, "blocks_pending_erase"),
    ]
}

pub fn delta(a: [u64; 4], b: [u64; 4]) -> [u64; 4] {
    [b[0] - a[0], b[1] - a[1], b[2] - a[2], b[3] - a[3]]
}

/// Fill the root leaf of a new index of one-page nodes (126 entries) with keys 1..=126,
/// then split it with key 127: the flash operations of each step ([`flash`] deltas).
pub fn fill_then_split(db: &Db) -> ([u64; 4], [u64; 4]) {
    let f0 = flash(db);
    for k in 1..=126 {
        db.insert(k, k).unwrap();
    }
    let f1 = flash(db);
    db.insert(127, 127).unwrap();
    (delta(f0, f1), delta(f1, flash(db)))
}

/// Random inserts and deletes against a `BTreeMap` on an index of `opts`, checked before
/// and after a close and reopen; each of `rebuilt` (counter names) must have counted.
pub fn model_across_reopen(opts: Options, rebuilt: &[&str]) {
    let dev = MemDevice::new(PAGE);
    let vfs = MemVfs::new();
    let mut db = Db::create_on(storage(&dev, &vfs), opts).unwrap();
    let model = insert_and_delete(&mut db, 7, 20_000, 5_000).unwrap();
    db.check_integrity().unwrap();
    let all: BTreeMap<u64, u64> = db.range(..).unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(all, model);
    for name in rebuilt {
        assert!(c(&db, name) > 0, "{name}");
    }
    db.close().unwrap();
    let db = Db::open_on(storage(&dev, &vfs)).unwrap();
    db.check_integrity().unwrap();
    let all: BTreeMap<u64, u64> = db.range(..).unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(all, model);
}
