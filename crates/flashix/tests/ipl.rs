//! IPL B+-tree behaviour beyond the conformance harness (which runs its crash histories):
//! a model check across reopen, and expected flash operation counts of a merge and of a
//! node split into an evaporated slot (physical log records, §2.3).

mod inpage;

use flashix::io::{MemDevice, MemVfs};
use flashix::{Db, EngineKind, IplOptions, Options};
use inpage::{c, delta, flash, storage, BLOCKS, PAGES_PER_BLOCK};

/// 2 KiB pages of 4 sectors, 16-page blocks, nodes of `np` pages.
fn opts(np: u64, frames: u32) -> Options {
    inpage::raw_nand(EngineKind::IplBTree).ipl(IplOptions {
        node_bytes: 2048 * np,
        buffer_frames: Some(frames),
        log_area_bytes: 4096,
        nand_blocks: BLOCKS,
        pages_per_block: PAGES_PER_BLOCK,
    })
}

/// One-page nodes (126 leaf entries), 16-page blocks: 14 node slots and a fixed log area
/// of 2 pages (8 sectors) at pages 14-15; in-memory log sectors of 512 - 60 = 452 record
/// bytes (26 `Put` records of 17 bytes).
fn small() -> Db {
    Db::create_on(storage(&MemDevice::new(2048), &MemVfs::new()), opts(1, 8)).unwrap()
}

#[test]
fn a_full_log_area_merges_the_block() {
    let db = small();
    let f0 = flash(&db);
    // Upserts of one key, one record each: the root is read once; sectors are written at
    // records 26n + 1; the 9th write (record 235) finds the 8-sector log area full.
    for i in 0..234u64 {
        db.insert(1, i).unwrap();
    }
    assert_eq!(delta(f0, flash(&db)), [1, 8, 8, 0]);
    let f1 = flash(&db);
    db.insert(1, 234).unwrap();
    // The merge reads the root as flash has it (its image and the 2 pages of the log area)
    // and writes it (one page) to a fresh block, applying only the records on flash (d-IPL
    // §4.3); the in-memory sector that found the log area full is then written to the new
    // block's log area (Fig. 10). The old block, which the creation checkpoint references,
    // is erased at the next checkpoint.
    assert_eq!(delta(f1, flash(&db)), [3, 2, 5, 1]);
    assert_eq!(c(&db, "block_merges"), 1);
    assert_eq!(c(&db, "blocks_pending_erase"), 1);
    db.close().unwrap();
}

#[test]
fn a_split_into_an_evaporated_slot_writes_physical_log_records() {
    let db = small();
    let (fill, split) = inpage::fill_then_split(&db);
    // 126 inserts fill the root leaf: one read, sectors at records 27, 53, 79, 105.
    assert_eq!(fill, [1, 4, 4, 0]);
    // Insert 127 splits the root. The new node gets slot 1 of the root's block, but pages
    // before the written log area can no longer be programmed (§2.3.2), so it is written
    // as `Init` + 63 `Put` records: 26 fit a sector, so Rule 2 writes two sectors and 11
    // records stay in memory (§2.3.1). The new root takes a fresh block: one page.
    assert_eq!(split, [0, 3, 6, 0]);
    assert_eq!(c(&db, "node_splits"), 1);
    assert_eq!(c(&db, "ghost_nodes"), 1, "a node whose base is in the log");
    db.check_integrity().unwrap();
    for k in 1..=127 {
        assert_eq!(db.get(k).unwrap(), Some(k));
    }
}

#[test]
fn a_merge_while_a_node_is_written_as_physical_records_keeps_its_records() {
    let db = small();
    // 126 inserts fill the root leaf (sectors at records 27, 53, 79, 105); upserts of key 1
    // fill the 8-sector log area (sectors at records 131, 157, 183, 209).
    for k in 1..=126 {
        db.insert(k, k).unwrap();
    }
    for i in 0..83 {
        db.insert(1, 1000 + i).unwrap();
    }
    assert_eq!(c(&db, "log_sector_writes"), 8);
    assert_eq!(c(&db, "block_merges"), 0);
    // Insert 127 splits the root leaf. The new node's slot has evaporated, so it is written
    // as `Init` + 63 `Put` records; its first full sector finds the log area full and the
    // block is merged while none of its records is on flash: the merge writes it empty (its
    // version on flash) and its records follow in the new block's log area.
    db.insert(127, 127).unwrap();
    assert_eq!(c(&db, "block_merges"), 1);
    assert_eq!(c(&db, "physical_nodes"), 1);
    assert_eq!(c(&db, "physical_records"), 63);
    assert_eq!(c(&db, "ghost_nodes"), 0, "the merge made it a regular node");
    db.check_integrity().unwrap();
    assert_eq!(db.get(1).unwrap(), Some(1082));
    for k in 2..=127 {
        assert_eq!(db.get(k).unwrap(), Some(k));
    }
    db.check_integrity().unwrap();
}

#[test]
fn random_inserts_and_deletes_match_a_model_across_reopen() {
    inpage::model_across_reopen(opts(1, 8), &["block_merges"]);
}
