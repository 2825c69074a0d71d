//! The CPU costs of a sorted-run engine's insertion on this machine, for the FD-tree cost
//! model's extension ([`flashix::cost::DeviceCosts::with_cpu_costs`]): the CPU time of an
//! insertion besides its merges, and the CPU time per entry a merge reads or writes.
//!
//! Method: two FD-trees on a memory device (no I/O wait; the CPU of a merge is the same on
//! a file device but for the kernel's request submission), each bulk-loaded with
//! [`LOAD`] random keys and then given [`INSERTS`] new random keys one by one, with two
//! size ratios far apart ([`K_FEW`], [`K_MANY`]), so that their merges move very different
//! numbers of entries per insertion. The process's CPU time per insertion `t` against the
//! entries merged per insertion `m` (pages read and written by merges times the entries of
//! a page) gives the line `t = insert + m · merge_entry`, through the two points.

use crate::subjects::process_cpu_seconds;
use anyhow::{bail, Context, Result};
use flashix::io::{MemDevice, MemVfs};
use flashix::testing::Rng;
use flashix::{Db, EngineKind, FdTreeOptions, Options, Storage};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Keys bulk-loaded before the measured insertions.
pub const LOAD: u64 = 200_000;
/// Insertions measured per tree.
pub const INSERTS: u64 = 300_000;
/// Size ratio of the tree whose merges move few entries per insertion.
pub const K_FEW: u32 = 3;
/// Size ratio of the tree whose merges move many (two levels: each merge rewrites L1).
pub const K_MANY: u32 = 60;
const PAGE: usize = 4096;

/// What [`calibrate`] measured.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CpuCosts {
    /// CPU time of one insertion besides its merges, microseconds.
    pub insert_us: f64,
    /// CPU time per entry a merge reads or writes, microseconds.
    pub merge_entry_us: f64,
}

/// The trees of a calibration: keys loaded, insertions measured, head tree bytes.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    load: u64,
    inserts: u64,
    head_tree_bytes: u64,
}

/// One tree: (CPU microseconds per insertion, entries merged per insertion).
fn run(k: u32, seed: u64, z: Sizes) -> Result<(f64, f64)> {
    let o = Options::new(EngineKind::FdTree)
        .page_size(PAGE)
        .buffer_pool_bytes(64 << 20)
        .fdtree(FdTreeOptions {
            k: Some(k),
            head_tree_bytes: z.head_tree_bytes,
            ..FdTreeOptions::default()
        });
    let s = Storage {
        device: Box::new(MemDevice::new(PAGE)),
        vfs: Arc::new(MemVfs::new()),
    };
    let db = Db::create_on(s, o).context("creating the calibration FD-tree")?;
    let mut rng = Rng::new(seed);
    let mut load: Vec<(u64, u64)> = (0..z.load).map(|i| (rng.next_u64(), i)).collect();
    load.sort_unstable();
    load.dedup_by_key(|p| p.0);
    db.bulk_insert(&load)?;
    let counters = |db: &Db| {
        let s = db.stats();
        let c = |n: &str| s.engine_counters.get(n).copied().unwrap_or(0);
        c("merge_pages_read") + c("merge_pages_written")
    };
    let pages0 = counters(&db);
    let cpu0 = process_cpu_seconds();
    for i in 0..z.inserts {
        db.insert(rng.next_u64(), i)?;
    }
    let cpu = process_cpu_seconds() - cpu0;
    let pages = counters(&db) - pages0;
    let f = FdTreeOptions::entries_per_page(PAGE) as f64;
    Ok((
        cpu * 1e6 / z.inserts as f64,
        pages as f64 * f / z.inserts as f64,
    ))
}

/// Measure [`CpuCosts`] (about a second of CPU). `progress` gets one line.
pub fn calibrate(progress: &mut dyn FnMut(&str)) -> Result<CpuCosts> {
    progress("CPU costs of FD-tree insertions and merges (two trees in memory)");
    calibrate_with(Sizes {
        load: LOAD,
        inserts: INSERTS,
        head_tree_bytes: FdTreeOptions::default().head_tree_bytes,
    })
}

fn calibrate_with(z: Sizes) -> Result<CpuCosts> {
    let few = run(K_FEW, 0x9e37_79b9_7f4a_7c15, z)?;
    let many = run(K_MANY, 0x9e37_79b9_7f4a_7c15, z)?;
    fit(few, many)
}

/// The line through two (CPU µs per insertion, entries merged per insertion) points, its
/// slope and intercept clamped at 0 (a noisy pair may tilt them below).
fn fit((t1, m1): (f64, f64), (t2, m2): (f64, f64)) -> Result<CpuCosts> {
    if m2 <= m1 {
        bail!("the calibration trees merged {m1:.1} and {m2:.1} entries per insertion: no slope");
    }
    let merge_entry_us = ((t2 - t1) / (m2 - m1)).max(0.0);
    let insert_us = (t1 - merge_entry_us * m1).max(0.0);
    Ok(CpuCosts {
        insert_us,
        merge_entry_us,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line through two points, clamped at 0; no slope without two merge volumes.
    #[test]
    fn the_fit_is_the_line_through_the_two_trees() {
        let c = fit((1.0, 10.0), (3.0, 50.0)).unwrap();
        assert!((c.merge_entry_us - 0.05).abs() < 1e-12, "{c:?}");
        assert!((c.insert_us - 0.5).abs() < 1e-12, "{c:?}");
        // A noisy pair whose second tree ran faster: no negative cost.
        assert_eq!(fit((2.0, 10.0), (1.0, 50.0)).unwrap().merge_entry_us, 0.0);
        assert_eq!(fit((1.0, 1.0), (9.0, 2.0)).unwrap().insert_us, 0.0);
        assert!(fit((1.0, 10.0), (2.0, 10.0)).is_err());
    }

    /// The two trees' merges move very different numbers of entries per insertion (the
    /// spread the fit needs; counted from the engine's merge counters, not timed).
    #[test]
    fn the_two_trees_merge_different_volumes() {
        let z = Sizes {
            load: 30_000,
            inserts: 40_000,
            head_tree_bytes: 64 << 10,
        };
        let (_, few) = run(K_FEW, 1, z).unwrap();
        let (_, many) = run(K_MANY, 1, z).unwrap();
        assert!(
            few > 0.0 && many > 3.0 * few,
            "{few} and {many} entries per insertion"
        );
    }
}
