//! Batched ingest with range-delete retention, the bulk index's workload (Lehtonen 2014):
//! readings arrive in bulks keyed by time, and the oldest window is dropped by one
//! `delete_range`, which drops whole inner ranges without reading them (thesis Alg. 7).
//!
//! `cargo run -p flashix --example bulk_retention`

mod common;

use flashix::{Batch, BulkOptions, Db, EngineKind, Options};
use std::collections::BTreeMap;

/// Sensors reporting once per tick; a key is `tick * SENSORS + sensor`, so one tick's
/// readings are consecutive keys and time order is key order.
const SENSORS: u64 = 50;
/// Ticks ingested per bulk.
const TICKS_PER_BULK: u64 = 20;
/// Ticks kept: older readings are deleted after each bulk.
const RETAIN_TICKS: u64 = 100;
const BULKS: u64 = 30;

fn key(tick: u64, sensor: u64) -> u64 {
    tick * SENSORS + sensor
}

fn reading(tick: u64, sensor: u64) -> u64 {
    (tick * 31 + sensor * 7) % 1_000
}

fn main() -> flashix::Result<()> {
    let scratch = common::Scratch::new("bulk-retention");
    // Ranges of M..2M-1 tuples (M = 256 here; by default the §5.5 cost model picks M), and
    // no differential layer: every bulk goes straight into the ranges (the thesis's
    // faithful mode; by default small bulks wait in memory and are merged later).
    let opts = Options::new(EngineKind::BulkIndex)
        .page_size(4096)
        .buffer_pool_bytes(1 << 20)
        .bulk(BulkOptions {
            m: Some(256),
            delta_bytes: Some(0),
            ..BulkOptions::default()
        });
    let db = Db::create(scratch.path(), opts)?;
    let mut expected = BTreeMap::new();

    for bulk in 0..BULKS {
        let first_tick = bulk * TICKS_PER_BULK;
        let ticks = first_tick..first_tick + TICKS_PER_BULK;
        // The bulk arrives in any order (here newest sensor first); bulk_insert sorts it.
        let mut pairs = Vec::new();
        for tick in ticks.clone() {
            for sensor in (0..SENSORS).rev() {
                pairs.push((key(tick, sensor), reading(tick, sensor)));
            }
        }
        db.bulk_insert(&pairs)?;
        expected.extend(pairs.iter().copied());

        // Retention: drop every reading older than RETAIN_TICKS, and in the same atomic
        // batch record a correction for the newest reading of sensor 0.
        let now = ticks.end;
        let cutoff = key(now.saturating_sub(RETAIN_TICKS), 0);
        let corrected = key(now - 1, 0);
        let mut batch = Batch::new();
        batch.delete_range(..cutoff).insert(corrected, 9_999);
        db.apply(&batch)?;
        expected.retain(|&k, _| k >= cutoff);
        expected.insert(corrected, 9_999);
    }
    db.flush()?;

    let kept: BTreeMap<u64, u64> = db.range(..)?.collect::<flashix::Result<_>>()?;
    assert_eq!(kept, expected);
    assert_eq!(kept.len() as u64, RETAIN_TICKS * SENSORS);
    let oldest_tick = BULKS * TICKS_PER_BULK - RETAIN_TICKS;
    assert_eq!(kept.keys().next(), Some(&key(oldest_tick, 0)));
    println!(
        "ingested {} readings in {BULKS} bulks; kept the last {RETAIN_TICKS} ticks: {} readings, \
         ticks {oldest_tick}..{}",
        BULKS * TICKS_PER_BULK * SENSORS,
        kept.len(),
        BULKS * TICKS_PER_BULK
    );

    // A window of one sensor: the last 5 ticks of sensor 3.
    let last = BULKS * TICKS_PER_BULK - 1;
    for tick in last - 4..=last {
        let v = db.get(key(tick, 3))?;
        assert_eq!(v, Some(reading(tick, 3)));
        println!("tick {tick} sensor 3: {v:?}");
    }

    let stats = db.stats();
    let counter = |name: &str| stats.engine_counters.get(name).copied().unwrap_or(0);
    println!(
        "engine {}: {} ranges of M..2M-1 tuples now; {} ranges written and {} dropped by \
         the range deletes; {} pages written, {} pages read",
        stats.engine,
        counter("ranges"),
        counter("ranges_written"),
        counter("ranges_dropped"),
        stats.device.writes,
        stats.device.reads
    );
    // 5,000 tuples in ranges of 256..511; retention dropped whole ranges without reading them.
    assert!((10..=20).contains(&counter("ranges")));
    assert!(counter("ranges_dropped") > 0);
    db.close()?;

    // Reopen and check the retained window survived.
    let db = Db::open(scratch.path())?;
    let reopened: BTreeMap<u64, u64> = db.range(..)?.collect::<flashix::Result<_>>()?;
    assert_eq!(reopened, expected);
    db.close()
}
