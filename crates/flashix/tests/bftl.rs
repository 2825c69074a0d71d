//! BFTL (`EngineKind::Bftl`): expected-behaviour tests of the reservation buffer, commit
//! policy and compaction, corruption detection, persistence on a simulated SSD. (The
//! conformance and crash harness runs BFTL from `tests/conformance.rs`.)

use flashix::sim::FtlKind;
use flashix::EngineKind;

use flashix::io::{MemDevice, MemVfs};
use flashix::{BftlOptions, Db, Options, Stats, Storage};
use std::sync::Arc;

fn c(s: &Stats, name: &str) -> u64 {
    s.engine_counters[name]
}

/// 512-byte pages hold (512 - 16 - 2 - 10) / 17 = 28 units of one node; 512-byte nodes hold
/// (512 - 32) / 16 = 30 entries, so a full node with its Reset unit takes 2 pages and the
/// default c is 2 + 3 = 5. The reservation buffer holds 4 units.
fn small_db() -> Db {
    let storage = Storage {
        device: Box::new(MemDevice::new(512)),
        vfs: Arc::new(MemVfs::new()),
    };
    let opts = Options::new(EngineKind::Bftl)
        .page_size(512)
        .buffer_pool_bytes(4 * 512)
        .bftl(BftlOptions {
            node_bytes: 512,
            reservation_units: Some(4),
            c: None,
        });
    Db::create_on(storage, opts).unwrap()
}

#[test]
fn inserts_into_one_node_commit_packed_pages_and_compact_past_c() {
    let db = small_db();
    let s = db.stats();
    // Creation commits the root leaf's Reset unit: one page.
    assert_eq!((c(&s, "c"), c(&s, "commits"), s.device.writes), (5, 1, 1));
    // Every 4 inserts fill the buffer: a commit of one page appended to the root's list.
    // After 16 inserts the list has 1 + 4 = 5 pages (= c, not above it).
    for k in 1..=16u64 {
        db.insert(k, k * 10).unwrap();
    }
    let s = db.stats();
    assert_eq!(c(&s, "commits"), 5);
    assert_eq!(c(&s, "commit_pages"), 5);
    assert_eq!(c(&s, "compactions"), 0);
    assert_eq!(c(&s, "ntt_entries"), 5);
    assert_eq!(c(&s, "live_pages"), 5);
    // Inserts 17-20: the sixth page makes the list longer than c: the node (Reset + 20
    // entries = 21 units) is compacted into one page, and the five older pages go.
    for k in 17..=20u64 {
        db.insert(k, k * 10).unwrap();
    }
    let s = db.stats();
    assert_eq!(c(&s, "commits"), 6);
    assert_eq!(c(&s, "compactions"), 1);
    assert_eq!(c(&s, "compaction_pages"), 1);
    assert_eq!(c(&s, "ntt_entries"), 1);
    assert_eq!(c(&s, "live_pages"), 1);
    assert_eq!(c(&s, "pages_released"), 6);
    assert_eq!(s.device.writes, 7);
    // Node reads: one per insert, each over the list as it stood (1, 2, 3, 4, 5 pages for
    // four inserts each), plus the compaction's read of 6 pages.
    assert_eq!(c(&s, "node_reads"), 21);
    assert_eq!(c(&s, "node_page_reads"), 4 * (1 + 2 + 3 + 4 + 5) + 6);
    // Inserts 21-28: two more commits (list of 3 pages); 29, 30 wait in the buffer; 31
    // finds the leaf full (30 entries): it splits at key 16, the right half (16 entries +
    // Reset) is written at once into one page, the left gets a Truncate unit, and a new
    // root gets Reset + Insert(16, right). 2 + 1 + 2 = 5 units: a commit packing the left
    // leaf's 3 units and the root's 2 into one page.
    for k in 21..=31u64 {
        db.insert(k, k * 10).unwrap();
    }
    let s = db.stats();
    assert_eq!(c(&s, "node_splits"), 1);
    assert_eq!(c(&s, "split_pages"), 1);
    assert_eq!(c(&s, "height"), 2);
    assert_eq!(c(&s, "commits"), 9);
    assert_eq!(c(&s, "commit_pages"), 9);
    assert_eq!(c(&s, "compactions"), 1);
    assert_eq!(s.device.writes, 9 + 1 + 1);
    assert_eq!(c(&s, "reservation_units"), 0);
    // Left leaf: compacted page + 3 commit pages; right leaf: 1; root: 1 (shared with the
    // left leaf's last commit page).
    assert_eq!(c(&s, "ntt_entries"), 4 + 1 + 1);
    assert_eq!(c(&s, "live_pages"), 5);
    db.check_integrity().unwrap();
    let all: Vec<(u64, u64)> = db.range(..).unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(all, (1..=31).map(|k| (k, k * 10)).collect::<Vec<_>>());
}

/// contract point 4 of docs/design.md: a flipped bit in any page is `Corruption` naming `data` and the page, or
/// harmless (a released page).
#[test]
fn a_flipped_bit_in_any_page_is_detected_or_harmless() {
    let dev = MemDevice::new(512);
    let vfs = MemVfs::new();
    let opts = Options::new(EngineKind::Bftl)
        .page_size(512)
        .buffer_pool_bytes(8 * 512)
        .bftl(BftlOptions {
            node_bytes: 256,
            reservation_units: Some(16),
            c: None,
        });
    let mut db = Db::create_on(
        Storage {
            device: Box::new(dev.reopen()),
            vfs: Arc::new(vfs.clone()),
        },
        opts,
    )
    .unwrap();
    let model = flashix::testing::insert_and_delete(&mut db, 3, 1500, 600).unwrap();
    db.close().unwrap();
    let detected = flashix::testing::flip_a_bit_in_every_page(&dev, &vfs, 512, &model).unwrap();
    assert!(detected > 20, "only {detected} pages detected");
}

/// An index on a simulated SSD in a real directory persists in its `nand` file.
#[test]
fn persists_on_a_simulated_ssd_in_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idx");
    let mut cfg = flashix::sim::SimSsdConfig::with_ftl(FtlKind::Fast);
    cfg.nand.blocks = 256;
    let opts = Options::new(EngineKind::Bftl)
        .page_size(2048)
        .device(flashix::DeviceSpec::SimulatedSsd(cfg));
    let mut db = Db::create(&path, opts).unwrap();
    let model = flashix::testing::insert_and_delete(&mut db, 5, 5000, 3000).unwrap();
    db.close().unwrap();
    assert!(path.join("nand").exists());
    let db = Db::open(&path).unwrap();
    db.check_integrity().unwrap();
    let all: std::collections::BTreeMap<u64, u64> =
        db.range(..).unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(all, model);
    assert!(db.stats().device.flash["host_reads"] > 0);
}
