//! d-IPL B+-tree behaviour beyond the conformance harness: a model check, and one
//! expected-behaviour test per mechanism (ghost node creation, block split, block
//! cleansing, LLSD/LSLM reads, global cleansing) with the flash operations they cost.

mod inpage;

use flashix::io::{MemDevice, MemVfs};
use flashix::{Db, DiplOptions, EngineKind, Options};
use inpage::{c, delta, flash, storage, BLOCKS, PAGES_PER_BLOCK};

/// 2 KiB pages of 4 sectors, 16-page blocks, nodes of `np` pages.
fn opts(np: u64, frames: u32) -> Options {
    inpage::raw_nand(EngineKind::DiplBTree).dipl(DiplOptions {
        node_bytes: 2048 * np,
        buffer_frames: Some(frames),
        nand_blocks: BLOCKS,
        pages_per_block: PAGES_PER_BLOCK,
    })
}

/// Geometry of the expected-count tests: one-page nodes (126 leaf entries), 16-page
/// blocks of 64 sectors, in-memory log sectors of 512 - 60 - 2*15 = 422 record bytes
/// (24 `Put` records of 17 bytes).
fn small() -> (MemDevice, MemVfs, Db) {
    let dev = MemDevice::new(2048);
    let vfs = MemVfs::new();
    let db = Db::create_on(storage(&dev, &vfs), opts(1, 8)).unwrap();
    (dev, vfs, db)
}

#[test]
fn a_split_makes_a_ghost_node_with_two_log_sectors_in_one_program() {
    let (dev, vfs, db) = small();
    let (fill, split) = inpage::fill_then_split(&db);
    // 126 inserts fill the root leaf (block 0: image at page 0, log area from page 1): the
    // first reads the root (one page); Rule 2 writes its in-memory sector at records 25,
    // 49, 73, 97, 121: sectors 4..=8.
    assert_eq!(fill, [1, 5, 5, 0]);
    // Insert 127 splits the root: its sector (records 121..126 + SplitRemove(64), sector 9)
    // and the ghost's GhostCreate (sector 10) share page 2: one program of two sectors.
    // The new root goes to a block of its own: one page program.
    assert_eq!(split, [0, 2, 6, 0]);
    assert_eq!(c(&db, "node_splits"), 1);
    assert_eq!(c(&db, "ghost_nodes_created"), 1);
    assert_eq!(c(&db, "ghost_nodes"), 1);
    assert_eq!(c(&db, "height"), 2);
    assert_eq!(c(&db, "blocks_in_use"), 2);
    // check_integrity rebuilds the ghost from flash (the root's version as of sector 9,
    // keys >= 64) and compares it with its frame.
    db.check_integrity().unwrap();
    // Close writes the ghost's pending record (sector 11, page 2).
    let f2 = flash(&db);
    db.close().unwrap();
    let db = Db::open_on(storage(&dev, &vfs)).unwrap();
    let db = db;
    let r0 = flash(&db);
    // A read of key 127: the root (1 page); the ghost's last sector 11 with its page's
    // earlier sectors 8..=11 (1 read; its LSLM names sector 10, already read); the origin
    // up to sector 9: page 2 sectors 8..=9 (1), its LSLM's sectors 4..=7 on page 1 (1),
    // its image (1). Five page reads, nothing else.
    assert_eq!(db.get(127).unwrap(), Some(127));
    assert_eq!(delta(r0, flash(&db)), [5, 0, 0, 0]);
    assert_eq!(db.get(1).unwrap(), Some(1));
    let _ = f2;
}

#[test]
fn a_full_log_area_cleanses_the_block() {
    let (_dev, _vfs, db) = small();
    let f0 = flash(&db);
    // One root leaf in block 0 (read once): 60 log sectors (pages 1..=15). Upserts of one
    // key log one record each; sectors are written at records 24n + 1, and the 61st write
    // (record 1465) finds the log area full.
    for i in 0..1464u64 {
        db.insert(1, i).unwrap();
    }
    assert_eq!(delta(f0, flash(&db)), [1, 60, 60, 0]);
    assert_eq!(c(&db, "block_cleansings"), 0);
    // Record 1465: cleansing (§4.3, Algorithm 3) reads the root as flash has it (its image
    // and, through the LSLM, its 60 sectors on 15 pages) and writes it (one page) into a
    // fresh block; the in-memory sector that found the log area full is then written to
    // the new block's log area (Fig. 10). The old block, referenced by the creation
    // checkpoint, is erased at the next checkpoint.
    let f1 = flash(&db);
    db.insert(1, 1464).unwrap();
    assert_eq!(delta(f1, flash(&db)), [16, 2, 5, 1]);
    assert_eq!(c(&db, "block_cleansings"), 1);
    assert_eq!(c(&db, "nand_erases"), 0);
    assert_eq!(c(&db, "blocks_pending_erase"), 1);
    // The new block's log area holds that sector; 59 more fill it, written at records
    // 1465 + 24k, and the 60th write (record 2905) cleanses again. That block was never
    // checkpointed, so it is erased at once.
    for i in 0..1439 {
        db.insert(1, 2000 + i).unwrap();
    }
    assert_eq!(c(&db, "block_cleansings"), 1);
    db.insert(1, 1).unwrap();
    assert_eq!(c(&db, "block_cleansings"), 2);
    assert_eq!(c(&db, "nand_erases"), 1);
    assert_eq!(db.get(1).unwrap(), Some(1));
    db.check_integrity().unwrap();
}

#[test]
fn a_full_block_splits_before_its_node_does() {
    let (_dev, _vfs, db) = small();
    // Ascending keys: each leaf split leaves a ghost in the leaves' block, until the block
    // holds its maximum of 15 nodes; the next leaf split first splits the block (7 + 8).
    let mut k = 0u64;
    while c(&db, "block_splits") == 0 {
        let before = flash(&db);
        let cleansings = c(&db, "block_cleansings");
        k += 1;
        db.insert(k, k).unwrap();
        if c(&db, "block_splits") == 1 {
            let d = delta(before, flash(&db));
            // 15 one-page images into two fresh blocks (unbuffered nodes read first), the
            // split's two log sectors (one program when they share a page, else two), the
            // old block released.
            assert_eq!(c(&db, "block_cleansings"), cleansings);
            assert!(d[1] == 16 || d[1] == 17, "{d:?}");
            assert_eq!(d[3], 1, "{d:?}");
        }
        assert!(k < 5000);
    }
    assert_eq!(c(&db, "node_splits"), 15);
    // Root block + the two halves.
    assert_eq!(c(&db, "blocks_in_use"), 3);
    db.check_integrity().unwrap();
}

#[test]
fn random_inserts_and_deletes_match_a_model_across_reopen() {
    inpage::model_across_reopen(opts(1, 8), &["block_cleansings", "block_splits"]);
}
