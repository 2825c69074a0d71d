//! The shared read path beside a writer: readers on several threads (`get`, `get_many`,
//! range scans) while one thread inserts, overwrites and deletes through the `Db`, checked
//! against a `BTreeMap` model; and the ADAPT emptyings that lookups on the shared path
//! decide, done by the next write.

use crate::io::{MemDevice, MemVfs};
use crate::testing::readers::{assert_holds, beside_a_writer, odd_rounds, value};
use crate::{Db, EngineKind, LaTreeOptions, Options, Storage};
use std::collections::BTreeMap;

const KEYS: u64 = 1500;

/// Small pages and buffers, buffers at every level, ADAPT on: the writer's messages
/// cascade and split nodes, and lookups fire registers.
fn db() -> Db {
    let storage = Storage {
        device: Box::new(MemDevice::new(512)),
        vfs: std::sync::Arc::new(MemVfs::new()),
    };
    let opts = Options::new(EngineKind::LaTree)
        .page_size(512)
        .buffer_pool_bytes(24 * 512)
        .latree(LaTreeOptions {
            node_bytes: 0,
            k: 1,
            max_buffer_pages: 4,
            adapt: true,
        });
    Db::create_on(storage, opts).unwrap()
}

fn counter(db: &Db, name: &str) -> u64 {
    db.stats().engine_counters[name]
}

/// Four readers beside a writer over the odd keys between the even ones, which are
/// written once before the readers start.
#[test]
fn shared_reads_beside_a_writer_answer_as_the_model() {
    let db = db();
    let fixed: BTreeMap<u64, u64> = (0..KEYS).map(|k| (k * 2, value(k * 2, 0))).collect();
    // Inserted, not bulk loaded: the even keys start in the buffers as well as the leaves.
    for (&k, &v) in &fixed {
        db.insert(k, v).unwrap();
    }
    let writer = || odd_rounds(&db, &fixed, KEYS);
    let model = beside_a_writer(&db, &fixed, (4, 1000), (10, 60), writer);
    assert_holds(&db, &model);
    assert!(counter(&db, "buffer_pages_scanned") > 0);
}

/// Lookups through the `Db` run on the shared path: the buffers their registers fire for
/// are not emptied by the lookups (which change nothing) but by the next write, and the
/// answers stay the model's throughout.
#[test]
fn adapt_emptyings_decided_by_shared_lookups_wait_for_the_next_write() {
    let db = db();
    let mut model = BTreeMap::new();
    for k in 0..400u64 {
        let k = k.wrapping_mul(0x9E37_79B9_7F4A_7C15) % 10_000;
        db.insert(k, k + 1).unwrap();
        model.insert(k, k + 1);
    }
    assert!(counter(&db, "buffer_entries") > 0);
    let before = counter(&db, "emptyings_adapt");
    let buffered = counter(&db, "buffer_entries");
    // Misses scan whole buffers: enough of them fire some register.
    db.beside_a_reader(|| {
        for k in 0..2_000u64 {
            let k = 10_000 + k;
            assert_eq!(db.get(k).unwrap(), None);
        }
    });
    assert_eq!(counter(&db, "emptyings_adapt"), before, "a lookup wrote");
    assert_eq!(counter(&db, "buffer_entries"), buffered, "a lookup wrote");
    db.insert(5, 6).unwrap();
    model.insert(5, 6);
    assert!(counter(&db, "emptyings_adapt") > before);
    db.check_integrity().unwrap();
    for (&k, &v) in &model {
        assert_eq!(db.get(k).unwrap(), Some(v));
    }
    let got: BTreeMap<u64, u64> = db.range(..).unwrap().map(|kv| kv.unwrap()).collect();
    assert_eq!(got, model);
}

/// Alone, the lookups empty what their registers decide right away (the lock is free), as
/// the paper's order has it.
#[test]
fn adapt_emptyings_of_lookups_alone_come_at_once() {
    let db = db();
    for k in 0..400u64 {
        let k = k.wrapping_mul(0x9E37_79B9_7F4A_7C15) % 10_000;
        db.insert(k, k + 1).unwrap();
    }
    let before = counter(&db, "emptyings_adapt");
    for k in 0..2_000u64 {
        assert_eq!(db.get(10_000 + k).unwrap(), None);
    }
    assert!(counter(&db, "emptyings_adapt") > before);
    db.check_integrity().unwrap();
}
