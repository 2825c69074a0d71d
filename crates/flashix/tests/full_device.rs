//! A full device is an error that says so: an index on a small simulated
//! SSD (or raw NAND) takes inserts until the device refuses a write. The call that meets it
//! returns the error a full disk gives (`Error::Io` with ENOSPC, [`Error::is_no_space`]),
//! never a panic and never `InvalidArgument`; the `Db` is poisoned, so later calls fail
//! cleanly; and the index reopened from the same medium holds everything flushed before
//! the error plus a prefix of what came after.
//!
//! The engines are chosen for their different ways of reaching the device: the LSM-tree
//! and the FD-tree fill it in the middle of a merge (a new component or run is written
//! while the old ones still hold their pages), the PIO B-tree while flushing its OPQ (a
//! batch update of many leaves), the FBX-tree while appending and cleaning its log file
//! over a page-mapped FTL that garbage-collects, and the IPL B+-tree when the raw NAND has
//! no erase block left for a split or a merge.

use flashix::io::{Device, MemDevice, MemVfs};
use flashix::sim::{FtlKind, NandConfig, SimSsd};
use flashix::testing::{sim_ssd_config, Rng};
use flashix::{
    CleanPolicy, Db, DeviceSpec, EngineKind, Error, FbxOptions, FdTreeOptions, IplOptions,
    LsmOptions, Options, PioOptions, Stats, Storage, PIO_OPQ_ENTRY_BYTES,
};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Operations between flushes.
const FLUSH_EVERY: u64 = 150;

/// Where an index lives: a simulated SSD over NAND kept in memory, or raw NAND.
enum Medium {
    Ssd { nand: MemDevice, pages: u32 },
    RawNand { dev: MemDevice },
}

impl Medium {
    fn storage(&self, opts: &Options, vfs: &MemVfs, create: bool) -> Result<Storage, Error> {
        let device: Box<dyn Device> = match self {
            Medium::Ssd { nand, pages } => {
                let cfg = sim_ssd_config(FtlKind::Page, opts.page_size, *pages);
                let backing = Box::new(nand.reopen());
                Box::new(if create {
                    SimSsd::create(backing, &cfg, opts.page_size)?
                } else {
                    SimSsd::open(backing, &cfg, opts.page_size)?
                })
            }
            Medium::RawNand { dev } => Box::new(dev.reopen()),
        };
        Ok(Storage {
            device,
            vfs: Arc::new(vfs.clone()),
        })
    }
}

fn counter(s: &Stats, name: &str) -> u64 {
    s.engine_counters.get(name).copied().unwrap_or(0)
}

/// Fill the index until the device is full; check the error, the poisoning and what a
/// reopen finds. Insert `i` writes value `i`, to a new key or (one in three) over an
/// existing one, so that the FTL and log-structured engines have garbage to collect, and
/// a lookup after every fourth. The
/// newest value the reopened index holds names the prefix `p` it must equal: the model
/// after inserts `0..p`, with `p` at least the number flushed. Returns the stats at the
/// moment the device filled.
fn fill_until_full(opts: Options, medium: Medium, seed: u64) -> Stats {
    fill(opts, medium, seed, Reopen::Prefix)
}

/// What a reopen after the device filled must give.
#[derive(PartialEq)]
enum Reopen {
    /// The index, holding every flushed insert and then a prefix.
    Prefix,
    /// That, or a clean ENOSPC from `open`: recovery itself needs free space the full
    /// device has not got (the IPL B+-tree rebuilds every block appended to since the
    /// checkpoint into a fresh erase block).
    PrefixOrNoSpace,
}

fn fill(opts: Options, medium: Medium, seed: u64, reopen: Reopen) -> Stats {
    let engine = opts.engine();
    let vfs = MemVfs::new();
    let storage = medium.storage(&opts, &vfs, true).unwrap();
    let db = Db::create_on(storage, opts.clone()).unwrap();
    let mut rng = Rng::new(seed);
    let mut ops: Vec<u64> = Vec::new();
    let mut flushed = 0usize;
    let error = loop {
        assert!(
            ops.len() < 1_000_000,
            "{engine}: the device never filled up"
        );
        let i = ops.len() as u64;
        let k = if !ops.is_empty() && rng.below(3) == 0 {
            ops[rng.below(ops.len() as u64) as usize]
        } else {
            rng.next_u64()
        };
        ops.push(k);
        if let Err(e) = db.insert(k, i) {
            break e;
        }
        // Queries: the FBX-tree cleans the log lists it reads (its writes may be the
        // ones that meet the full device).
        if i % 4 == 3 {
            if let Err(e) = db.get(ops[rng.below(ops.len() as u64) as usize]) {
                break e;
            }
        }
        if i % FLUSH_EVERY == FLUSH_EVERY - 1 {
            if let Err(e) = db.flush() {
                break e;
            }
            flushed = ops.len();
        }
    };
    assert!(
        error.is_no_space(),
        "{engine}: a full device gave {error:?}, not ENOSPC"
    );
    let full_stats = db.stats();
    eprintln!(
        "DEBUG {engine}: filled with {error} after {} ops, {flushed} flushed",
        ops.len()
    );
    // Poisoned: every later call fails cleanly, reads included.
    for r in [db.insert(1, 1), db.flush()] {
        assert!(
            matches!(r, Err(Error::Poisoned(_))),
            "{engine}: after ENOSPC: {r:?}"
        );
    }
    assert!(matches!(db.get(ops[0]), Err(Error::Poisoned(_))));
    drop(db);

    // Reopen from the same medium: everything flushed is there, then a prefix.
    let storage = medium.storage(&opts, &vfs, false).unwrap();
    let db = match Db::open_on(storage) {
        Ok(db) => db,
        Err(e) if e.is_no_space() && reopen == Reopen::PrefixOrNoSpace => return full_stats,
        Err(e) => panic!("{engine}: reopen: {e}"),
    };
    let got: BTreeMap<u64, u64> = db.range(..).unwrap().map(|kv| kv.unwrap()).collect();
    let p = got.values().max().map_or(0, |&v| v as usize + 1);
    assert!(
        p >= flushed,
        "{engine}: {flushed} inserts were flushed before ENOSPC, the reopened index holds {p}"
    );
    let model: BTreeMap<u64, u64> = ops[..p]
        .iter()
        .enumerate()
        .map(|(i, &k)| (k, i as u64))
        .collect();
    assert!(
        got == model,
        "{engine}: the reopened index is not the state after {p} inserts ({} entries, the model {})",
        got.len(),
        model.len()
    );
    for &k in ops.iter().take(flushed).step_by(97) {
        assert_eq!(
            db.get(k).unwrap(),
            model.get(&k).copied(),
            "{engine}: key {k}"
        );
    }
    full_stats
}

fn ssd(pages: u32) -> Medium {
    Medium::Ssd {
        nand: MemDevice::new(2048),
        pages,
    }
}

#[test]
fn lsm_fills_the_device_mid_merge() {
    let opts = Options::new(EngineKind::Lsm)
        .page_size(2048)
        .buffer_pool_bytes(16 * 2048)
        .checkpoint_wal_bytes(64 << 10)
        .lsm(LsmOptions {
            k: Some(3),
            c0_bytes: 4 * 2048,
            io_unit_bytes: 3 * 2048,
            search_before_delete: false,
            deamortize: true,
        });
    let s = fill_until_full(opts, ssd(160), 1);
    assert!(counter(&s, "merges") > 0, "{s:?}");
}

#[test]
fn fdtree_fills_the_device_mid_merge() {
    let opts = Options::new(EngineKind::FdTree)
        .page_size(2048)
        .buffer_pool_bytes(16 * 2048)
        .checkpoint_wal_bytes(64 << 10)
        .fdtree(FdTreeOptions {
            k: Some(3),
            head_tree_bytes: 2 * 2048,
            deamortize: true,
            io_unit_bytes: 3 * 2048,
        });
    let s = fill_until_full(opts, ssd(160), 2);
    assert!(counter(&s, "merges") > 0, "{s:?}");
}

#[test]
fn pio_fills_the_device_mid_opq_flush() {
    let opq_bytes = 64 * PIO_OPQ_ENTRY_BYTES;
    let opts = Options::new(EngineKind::PioBTree)
        .page_size(2048)
        .buffer_pool_bytes(16 * 2048 + opq_bytes)
        .checkpoint_wal_bytes(64 << 10)
        .pio(PioOptions {
            leaf_segments: Some(2),
            opq_bytes: Some(opq_bytes),
            pio_max: 4,
            speriod: 3,
            bcnt: 4,
        });
    // Many seeds: the device fills at a different point of a batch update in each. A
    // replay that took other OPQ batches than the run it replays (the batch cursor was
    // not reset by the checkpoint's flush) allocated differently and met the full device
    // in `open` for 4 of these 30 seeds.
    for seed in 0..30 {
        let s = fill_until_full(opts.clone(), ssd(160), seed);
        assert!(counter(&s, "bupdates") > 0, "seed {seed}: {s:?}");
    }
}

#[test]
fn fbx_fills_the_device_while_cleaning_over_a_garbage_collecting_ftl() {
    let opts = Options::new(EngineKind::Fbx)
        .page_size(2048)
        .buffer_pool_bytes(20 * 2048)
        .checkpoint_wal_bytes(64 << 10)
        .fbx(FbxOptions {
            leaf_order: Some(12),
            inner_order: Some(8),
            log_buffer_pages: Some(2),
            cluster_bits: 1,
            cluster_skip_bits: 0,
            clean: CleanPolicy::AccumulateClean { threshold: 4 },
            leaf_logging: true,
            batched_scans: true,
            segment_pages: 5,
            space_amp_limit: 2.0,
        });
    let s = fill_until_full(opts, ssd(160), 4);
    assert!(
        counter(&s, "cleans") > 0,
        "the log was never cleaned: {s:?}"
    );
    let gc = s.device.flash.get("gc_victims").copied().unwrap_or(0);
    assert!(gc > 0, "the FTL never collected garbage: {s:?}");
}

/// Known limit: the IPL B+-tree's recovery rebuilds each block that took log sectors
/// since the checkpoint into a fresh block, so a reopen of a full raw NAND may itself be
/// out of space; it must then say so cleanly.
#[test]
fn ipl_fills_the_raw_nand() {
    let geometry = NandConfig {
        page_bytes: 2048,
        pages_per_block: 16,
        blocks: 24,
        ..NandConfig::default()
    };
    let opts = Options::new(EngineKind::IplBTree)
        .page_size(2048)
        .checkpoint_wal_bytes(64 << 10)
        .device(DeviceSpec::RawNand(geometry))
        .ipl(IplOptions {
            node_bytes: 2048,
            buffer_frames: Some(8),
            log_area_bytes: 4096,
            nand_blocks: 24,
            pages_per_block: 16,
        });
    let medium = Medium::RawNand {
        dev: MemDevice::new(2048),
    };
    fill(opts, medium, 5, Reopen::PrefixOrNoSpace);
}
