//! An index on a simulated SSD: `DeviceSpec::SimulatedSsd` runs the engine's pages through a
//! flash translation layer over simulated NAND (kept in the file `nand` of the index
//! directory), and `Db::stats()` reports what the flash did: programs, erases, pages copied
//! by garbage collection, wear per block and write amplification.
//!
//! The same random inserts go to a B+-tree (in-place page writes) on two simulated SSDs:
//! one with a page-mapped FTL (greedy garbage collection) and one with a FAST FTL
//! (block-mapped, with log blocks: its merges copy valid pages, so the same host writes cost
//! more programs and erases). Any engine runs on either; only the device spec changes.
//!
//! `cargo run -p flashix --example simulated_ssd`

mod common;

use flashix::sim::{FtlKind, NandConfig, SimSsdConfig};
use flashix::{Db, DeviceSpec, EngineKind, Options};
use std::collections::BTreeMap;

const INSERTS: u64 = 4_000;
const PAGES_PER_BLOCK: u32 = 16;
const BLOCKS: u32 = 16;

fn ssd(ftl: FtlKind) -> SimSsdConfig {
    SimSsdConfig {
        // 16 erase blocks of 16 pages of 2 KiB: 512 KiB of flash, 30% of it spare; small, so
        // that garbage collection has to erase blocks.
        nand: NandConfig {
            page_bytes: 2048,
            pages_per_block: PAGES_PER_BLOCK,
            blocks: BLOCKS,
            ..NandConfig::default()
        },
        ftl,
        ..SimSsdConfig::default()
    }
}

fn run(engine: EngineKind, ftl: FtlKind) -> flashix::Result<()> {
    let scratch = common::Scratch::new(&format!("simulated-ssd-{engine}-{ftl}"));
    let opts = Options::new(engine)
        .page_size(4096)
        .buffer_pool_bytes(64 << 10) // a small budget, so pages go to the device
        .device(DeviceSpec::SimulatedSsd(ssd(ftl)));
    let db = Db::create(scratch.path(), opts)?;

    let mut model = BTreeMap::new();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for i in 0..INSERTS {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let key = x % 100_000;
        db.insert(key, i)?;
        model.insert(key, i);
        if i % 2_000 == 1_999 {
            db.flush()?;
        }
    }
    db.flush()?;
    for (&k, &v) in model.iter().step_by(97) {
        assert_eq!(db.get(k)?, Some(v), "{engine}: key {k}");
    }

    let stats = db.stats();
    let dev = &stats.device;
    let flash = &dev.flash;
    let f = |name: &str| flash.get(name).copied().unwrap_or(0);
    println!(
        "{engine:>5} on {:<11}: {} host page writes ({} NAND pages), {} NAND programs, \
         {} GC page copies, {} erases (per block: {}..{}), write amplification {:.2}, \
         {:.1} ms of simulated flash time",
        dev.backend,
        dev.writes,
        f("host_writes"),
        f("flash_programs"),
        f("gc_page_copies"),
        f("erases"),
        f("min_erase_count"),
        f("max_erase_count"),
        f("write_amplification_milli") as f64 / 1000.0,
        f("sim_time_us") as f64 / 1000.0,
    );
    assert_eq!(dev.backend, format!("simssd-{ftl}"));
    // A 4 KiB index page is two 2 KiB NAND pages. The FTL programs each of them once, and
    // again each valid page that garbage collection or a merge moves.
    assert_eq!(f("host_writes"), 2 * dev.writes);
    assert!(f("flash_programs") >= f("host_writes"));
    assert!(f("max_erase_count") >= f("min_erase_count"));
    if f("host_writes") > u64::from(PAGES_PER_BLOCK * BLOCKS) {
        // More pages written than the flash holds: blocks must have been erased.
        assert!(f("erases") > 0);
    }
    db.close()?;

    // The flash (and its wear) lives in the directory: reopen and read everything back.
    let db = Db::open(scratch.path())?;
    let back: BTreeMap<u64, u64> = db.range(..)?.collect::<flashix::Result<_>>()?;
    assert_eq!(back, model);
    assert!(db.stats().device.flash["max_erase_count"] > 0);
    db.close()
}

fn main() -> flashix::Result<()> {
    run(EngineKind::BTree, FtlKind::Page)?;
    run(EngineKind::BTree, FtlKind::Fast)
}
