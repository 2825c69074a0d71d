//! What writes the format fixtures (`tests/fixtures/v<N>/<engine>/`), shared by the test
//! that reads them back (`tests/format_fixture.rs`) and the program that writes a new set
//! (`examples/write_fixture.rs`): each engine's options and the operations of the two
//! sessions.

#![allow(dead_code)]

use flashix::sim::NandConfig;
use flashix::{
    BulkOptions, Db, DeviceSpec, DiplOptions, EngineKind, FdTreeOptions, IplOptions, LsmOptions,
    Options, PioOptions,
};
use std::collections::BTreeMap;

/// The engines with a fixture.
pub const ENGINES: [EngineKind; 8] = [
    EngineKind::BTree,
    EngineKind::Lsm,
    EngineKind::FdTree,
    EngineKind::PioBTree,
    EngineKind::Bftl,
    EngineKind::IplBTree,
    EngineKind::DiplBTree,
    EngineKind::BulkIndex,
];

/// The first manifest format with a fixture of `kind`: an engine built after a format
/// has no fixture of it (the bulk index arrived with format 2).
pub fn first_format(kind: EngineKind) -> u32 {
    match kind {
        EngineKind::BulkIndex => 2,
        _ => 1,
    }
}

/// Small pages and a small pool, so that each index spills into several levels, runs,
/// components or blocks while its files stay small.
pub fn options(kind: EngineKind) -> Options {
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
            deamortize: true,
        }),
        EngineKind::PioBTree => o.page_size(512).device(file).pio(PioOptions {
            leaf_segments: Some(2),
            opq_bytes: Some(24 * 64),
            ..PioOptions::default()
        }),
        EngineKind::BulkIndex => o.page_size(512).device(file).bulk(BulkOptions {
            m: Some(16),
            io_unit_bytes: 1536,
            delta_bytes: Some(400),
            ..BulkOptions::default()
        }),
        _ => o.page_size(512).device(file),
    }
}

/// A key of the fixture's key space (a permutation of 0..4001, spread over u64).
pub fn key(i: u64) -> u64 {
    let k = (i * 1_597) % 4_001;
    k.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (k << 7)
}

/// The operations that write a fixture, in two sessions: the first ends with `close` (a
/// checkpoint), the second with `flush` and no close (a WAL tail that `open` replays).
/// Applied to `db` when given; always applied to the returned model.
pub fn history(mut db: Option<&mut Db>, session: u32) -> BTreeMap<u64, u64> {
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

/// Every pair of `db`, in key order.
pub fn contents(db: &mut Db) -> BTreeMap<u64, u64> {
    db.range(..).unwrap().map(|kv| kv.unwrap()).collect()
}
