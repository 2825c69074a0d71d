//! The shared path (module doc, Thread safety): searches, batched lookups and scans beside
//! each other and beside a writer whose sweeps rewrite and free ranges answer as the model
//! does.

use super::{BulkOptions, DELTA_ENTRY_MEMORY};
use crate::testing::readers::{assert_holds, beside_a_writer, load_evens, value};
use crate::{Db, DeviceSpec, EngineKind, Options};

const PS: usize = 512;

/// Six readers (gets, get_many, scans whose iterators stay open across the writer's
/// operations) beside a writer that upserts and deletes the odd keys between the even
/// ones, which a bulk load wrote and nothing changes, through a small differential layer
/// (a sweep every few writes) and bulk inserts. Ranges of `m..2m-1` tuples (30 a page):
/// through the 16-page pool, or past it when larger than half of it.
fn readers_beside_a_writer(m: u32, device: DeviceSpec) {
    const KEYS: u64 = 3000;
    let dir = tempfile::tempdir().unwrap();
    let b = BulkOptions {
        m: Some(m),
        io_unit_bytes: 16 * PS as u64,
        delta_bytes: Some(24 * DELTA_ENTRY_MEMORY),
        ..BulkOptions::default()
    };
    let opts = Options::new(EngineKind::BulkIndex)
        .page_size(PS)
        .buffer_pool_bytes(16 * PS as u64 + b.delta_bytes.unwrap_or(0))
        .device(device)
        .bulk(b);
    let db = Db::create(dir.path().join("ix"), opts).unwrap();
    let stable = load_evens(&db, KEYS);
    let writer = || {
        let mut model = stable.clone();
        for round in 1..=3u64 {
            for k in (1..KEYS * 2).step_by(10) {
                db.insert(k, value(k, round)).unwrap();
                model.insert(k, value(k, round));
            }
            for k in (1..KEYS * 2).step_by(22) {
                db.delete(k).unwrap();
                model.remove(&k);
            }
            let bulk: Vec<(u64, u64)> = (0..KEYS * 2)
                .skip(round as usize * 2 + 1)
                .step_by(34)
                .map(|k| (k, value(k, round)))
                .collect();
            db.bulk_insert(&bulk).unwrap();
            model.extend(bulk);
            db.flush().unwrap();
        }
        model
    };
    let model = beside_a_writer(&db, &stable, (6, 300), (8, 300), writer);
    assert_holds(&db, &model);
    assert!(db.stats().engine_counters["point_reads"] > 0);
    db.close().unwrap();
}

#[test]
fn shared_reads_of_pooled_ranges_beside_a_writer() {
    readers_beside_a_writer(40, DeviceSpec::Memory);
}

#[test]
fn shared_reads_of_ranges_past_the_pool_beside_a_writer() {
    readers_beside_a_writer(300, DeviceSpec::Memory);
}

#[test]
fn shared_reads_beside_a_writer_on_a_file() {
    readers_beside_a_writer(40, DeviceSpec::File { direct_io: false });
}
