//! The shared read path beside a writer: readers on several threads (`get`, `get_many`,
//! range scans) while one thread inserts, overwrites and deletes through the `Db`, checked
//! against a `BTreeMap` model (`testing::readers`).

use crate::io::{MemDevice, MemVfs};
use crate::testing::readers::{assert_holds, beside_a_writer, load_evens, odd_rounds};
use crate::{BftlOptions, Db, EngineKind, Options, Storage};

const KEYS: u64 = 1500;

/// Small nodes and a small reservation buffer, so that the writer's operations commit,
/// compact, split and remove nodes while the readers search.
fn db() -> Db {
    let storage = Storage {
        device: Box::new(MemDevice::new(512)),
        vfs: std::sync::Arc::new(MemVfs::new()),
    };
    let opts = Options::new(EngineKind::Bftl)
        .page_size(512)
        .buffer_pool_bytes(16 * 512)
        .bftl(BftlOptions {
            node_bytes: 512,
            reservation_units: Some(8),
            c: None,
        });
    Db::create_on(storage, opts).unwrap()
}

/// Four readers beside a writer over the odd keys between the loaded even ones.
#[test]
fn shared_reads_beside_a_writer_answer_as_the_model() {
    let db = db();
    let fixed = load_evens(&db, KEYS);
    let writer = || odd_rounds(&db, &fixed, KEYS);
    let model = beside_a_writer(&db, &fixed, (4, 1000), (10, 60), writer);
    assert_holds(&db, &model);
    let s = db.stats();
    assert!(s.engine_counters["node_splits"] > 0 && s.engine_counters["compactions"] > 0);
}
