//! Basic use of a flashix index: create, insert, get, range, delete, batch, close, reopen.
//!
//! `cargo run -p flashix --example basic`

mod common;

use flashix::{Batch, Db, EngineKind, Options};
use std::collections::BTreeMap;

fn main() -> flashix::Result<()> {
    let scratch = common::Scratch::new("basic");
    let dir = scratch.path();

    // A B+-tree with 4 KiB pages and a 1 MiB memory budget, in one file opened O_DIRECT.
    let opts = Options::new(EngineKind::BTree)
        .page_size(4096)
        .buffer_pool_bytes(1 << 20);
    let db = Db::create(dir, opts)?;

    // Keys and values are u64; insert is an upsert. A BTreeMap holds what we expect.
    let mut expected = BTreeMap::new();
    for k in 0..2_000u64 {
        let key = k * 10;
        db.insert(key, key + 1)?;
        expected.insert(key, key + 1);
    }
    db.insert(u64::MAX, 0)?; // the whole u64 range is usable, 0 and u64::MAX included
    expected.insert(u64::MAX, 0);

    assert_eq!(db.get(500)?, Some(501));
    assert_eq!(db.get(505)?, None);
    println!(
        "get(500) = {:?}, get(505) = {:?}",
        db.get(500)?,
        db.get(505)?
    );

    // Ranges take any RangeBounds<u64> and yield ascending (key, value) pairs.
    let scanned: Vec<(u64, u64)> = db.range(100..=140)?.collect::<flashix::Result<_>>()?;
    println!("range(100..=140) = {scanned:?}");
    assert_eq!(
        scanned,
        vec![(100, 101), (110, 111), (120, 121), (130, 131), (140, 141)]
    );
    // An open-ended scan that stops after a few entries (a LIMIT) says so: engines that
    // read ahead in batches (FD-tree, LSM-tree, PIO B-tree) then read what those span.
    let first3: Vec<(u64, u64)> = db
        .range(100..)?
        .limit_hint(3)
        .take(3)
        .collect::<flashix::Result<_>>()?;
    assert_eq!(first3, vec![(100, 101), (110, 111), (120, 121)]);

    // Deletes are blind: deleting an absent key is fine.
    db.delete(500)?;
    db.delete(505)?;
    expected.remove(&500);
    db.delete_range(1_000..2_000)?;
    expected.retain(|&k, _| !(1_000..2_000).contains(&k));

    // A Batch is applied atomically: after a crash, all of it or none of it.
    let mut batch = Batch::new();
    batch.insert(7, 70).delete(10).delete_range(19_000..);
    db.apply(&batch)?;
    expected.insert(7, 70);
    expected.remove(&10);
    expected.retain(|&k, _| k < 19_000);

    // flush makes everything before it durable; close flushes and releases the index.
    db.flush()?;
    db.close()?;

    // Reopen: the engine and its options come from the manifest.
    let db = Db::open(dir)?;
    let all: BTreeMap<u64, u64> = db.range(..)?.collect::<flashix::Result<_>>()?;
    assert_eq!(all, expected);
    println!(
        "after reopen: {} entries, first {:?}, last {:?}",
        all.len(),
        all.iter().next(),
        all.iter().next_back()
    );
    let stats = db.stats();
    println!(
        "engine {}: {} pages read, {} pages written since open, {} bytes of memory",
        stats.engine, stats.device.reads, stats.device.writes, stats.memory_bytes
    );
    db.close()
}
