//! Every engine's predicted cost per operation for a device profile, an index size, a
//! memory budget and a workload mix, ranked: the answer of `flashix advise`, whose
//! arguments, tables and `--verify` are [`crate::cmd::advise`].
//!
//! # What is predicted
//! For each engine, a model gives each kind of operation of the [`Mix`] an [`OpCost`]: the
//! pages it reads and writes (amortised: a merge, a batch update, a compaction is shared by
//! the operations that caused it), the device time of that I/O, and the keys its CPU work
//! is proportional to. The cost of one operation of the mix is the share-weighted sum, in
//! microseconds:
//!
//! `cost = device_us + CPU_US_PER_OP + keys × CPU_US_PER_KEY`
//!
//! and the predicted throughput is `10^6 / cost` operations per second (one thread, as
//! `flashix bench` runs). The device time comes from the profile ([`Device`]): a random
//! read of `p` pages at queue depth 1 costs the profile's latency for `p·B` bytes (linear
//! between measured sizes, extended past the largest); a random page write costs one QD1
//! 4 KiB write per 4 KiB; sequential transfers cost `B / bandwidth` per page of 512 KiB
//! requests; psync batches (PIO B-tree, FBX leaf lists) cost the per-page QD1 latency shared
//! by the batch until the device saturates at its QD32 rate.
//!
//! The CPU constants ([`CPU_US_PER_OP`], [`CPU_US_PER_KEY`]) are fitted on the quick
//! suite (`flashix bench`, 400,000 entries, 2 MiB): the B+-tree's `o-search` time per
//! operation less the time of its page reads gives the CPU time per operation, and its
//! `range-1000` time less its reads, over the entries scanned, the CPU time per entry.
//! Both are rough and machine-dependent.
//!
//! # The models ([`engines`])
//! - **FD-tree** and **LSM-tree**: the FD-tree paper's cost model ([`flashix::cost::fdtree`],
//!   App. C) chooses `k` and the levels; search is Eq. 10, insertion Algorithm 5's merge
//!   simulation; the LSM-tree adds a descent per component.
//! - **PIO B-tree**: its paper's model ([`flashix::cost::pio`], Eq. 7-15) chooses the leaf
//!   size and OPQ size; search and update are its terms.
//! - **Bulk index**: the thesis's theorems ([`flashix::cost::bulk`], §5.5) with M chosen
//!   as the engine chooses it; single updates wait in the differential layer and are
//!   swept in (Theorem 5.2 over the expected affected ranges).
//! - **B+-tree**: height and levels cached from the root down in the pool (the PIO model's
//!   [`flashix::cost::pio::coverage`]); one page write per dirty leaf evicted.
//! - **BFTL, LA-tree, FBX-tree, IPL, d-IPL**: small models of their papers' cost shapes,
//!   marked *rough*: each is documented with its formula in [`engines`].
//!
//! Every engine serves every operation through `Db`, so none is excluded by kind; an
//! engine whose model cannot be evaluated (e.g. a budget below what it needs) is listed
//! after the ranking with the reason.

pub mod engines;
pub mod mix;

pub use mix::Mix;

use crate::probe::DeviceProfile;
use anyhow::{bail, Context, Result};
use flashix::cost::bulk::BulkDeviceCosts;
use flashix::cost::pio::PioDeviceCosts;
use flashix::cost::DeviceCosts;
use flashix::EngineKind;

/// CPU time of one operation besides its keys, microseconds (module doc: the B+-tree's
/// quick-suite `o-search` time less its reads).
pub const CPU_US_PER_OP: f64 = 3.0;
/// CPU time per key an operation scans, inserts in bulk or deletes by range, microseconds
/// (module doc: the B+-tree's quick-suite `range-1000`).
pub const CPU_US_PER_KEY: f64 = 0.09;
/// Longest request, in pages, whose QD1 latency the device table holds (longer requests:
/// [`Device::read_us`] extends it by the sequential page time).
const MAX_TABLE_PAGES: usize = 128;

/// The device as the models see it: the profile's figures for pages of `page` bytes.
#[derive(Debug, Clone)]
pub struct Device {
    /// Page size in bytes.
    pub page: usize,
    /// The FD-tree model's per-page costs.
    pub costs: DeviceCosts,
    /// The PIO B-tree model's costs (latency by leaf size, psync throughput).
    pub pio: PioDeviceCosts,
    /// The bulk index model's per-request and per-byte costs.
    pub bulk: BulkDeviceCosts,
    /// QD1 latency of a read of `i + 1` pages, microseconds.
    read_us_by_pages: Vec<f64>,
}

impl Device {
    /// The models' view of `profile` for pages of `page` bytes (the conversions of
    /// `flashix fdtree-model`, `pio-model` and `bulk-model`).
    pub fn new(profile: &DeviceProfile, page: usize) -> Result<Device> {
        let costs = crate::models::fdtree::device_costs(profile, page)?;
        let pio = crate::models::pio::pio_costs(profile, page, crate::runner::PIO_MAX_SEGMENTS)?;
        let bulk = crate::models::bulk::bulk_costs(profile)?;
        let read_us_by_pages = (1..=MAX_TABLE_PAGES as u64)
            .map(|p| profile.read_latency_us(p * page as u64, true))
            .collect::<Result<Vec<f64>>>()
            .context("the device profile's read latency by request size")?;
        Ok(Device {
            page,
            costs,
            pio,
            bulk,
            read_us_by_pages,
        })
    }

    /// One QD1 read request of `pages` pages (at least one), microseconds.
    pub fn read_us(&self, pages: f64) -> f64 {
        let p = pages.max(1.0);
        let whole = p.ceil() as usize;
        if whole <= MAX_TABLE_PAGES {
            let hi = self.read_us_by_pages[whole - 1];
            let lo = if whole >= 2 {
                self.read_us_by_pages[whole - 2]
            } else {
                hi
            };
            // Linear between whole page counts.
            return lo + (hi - lo) * (p - (whole as f64 - 1.0));
        }
        self.read_us_by_pages[MAX_TABLE_PAGES - 1]
            + (p - MAX_TABLE_PAGES as f64) * self.costs.seq_read_page_us()
    }

    /// One random page write at QD1, microseconds.
    pub fn write_us(&self) -> f64 {
        self.costs.rand_write_page_us()
    }

    /// `pages` random single-page reads, microseconds.
    pub fn random_reads(&self, pages: f64) -> OpCost {
        OpCost::io(pages, 0.0, pages * self.read_us(1.0))
    }

    /// `requests` read requests of `pages` pages each.
    pub fn requests(&self, requests: f64, pages: f64) -> OpCost {
        OpCost::io(requests * pages, 0.0, requests * self.read_us(pages))
    }

    /// `pages` random single-page writes.
    pub fn random_writes(&self, pages: f64) -> OpCost {
        OpCost::io(0.0, pages, pages * self.write_us())
    }

    /// Pages read and written in large sequential requests (merges, appends).
    pub fn sequential(&self, read_pages: f64, write_pages: f64) -> OpCost {
        OpCost::io(
            read_pages,
            write_pages,
            read_pages * self.costs.seq_read_page_us()
                + write_pages * self.costs.seq_write_page_us(),
        )
    }

    /// Pages read and written in psync batches of `group` requests.
    pub fn psync(&self, read_pages: f64, write_pages: f64, group: f64) -> OpCost {
        OpCost::io(
            read_pages,
            write_pages,
            read_pages * self.pio.psync_read_at(group)
                + write_pages * self.pio.psync_write_at(group),
        )
    }
}

/// Predicted cost of one operation of one kind: pages read and written, device time, and
/// the keys its CPU work is proportional to.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct OpCost {
    /// Pages read.
    pub reads: f64,
    /// Pages written.
    pub writes: f64,
    /// Device time of those pages, microseconds.
    pub device_us: f64,
    /// Keys the operation processes (scanned, inserted in bulk, deleted by range).
    pub keys: f64,
}

impl OpCost {
    /// Pages read and written and their device time.
    pub fn io(reads: f64, writes: f64, device_us: f64) -> OpCost {
        OpCost {
            reads,
            writes,
            device_us,
            keys: 0.0,
        }
    }

    /// Both costs, one after the other.
    pub fn plus(self, o: OpCost) -> OpCost {
        OpCost {
            reads: self.reads + o.reads,
            writes: self.writes + o.writes,
            device_us: self.device_us + o.device_us,
            keys: self.keys + o.keys,
        }
    }

    /// The cost `f` times (an amortised share when `f < 1`).
    pub fn times(self, f: f64) -> OpCost {
        OpCost {
            reads: self.reads * f,
            writes: self.writes * f,
            device_us: self.device_us * f,
            keys: self.keys * f,
        }
    }

    /// The same, processing `keys` keys.
    pub fn with_keys(self, keys: f64) -> OpCost {
        OpCost { keys, ..self }
    }

    /// Time of the operation, microseconds: device time plus the CPU constants.
    pub fn us(&self) -> f64 {
        self.device_us + CPU_US_PER_OP + self.keys * CPU_US_PER_KEY
    }
}

/// What is asked: the device, the index and the workload.
#[derive(Debug, Clone)]
pub struct Input {
    /// The device, for the index's page size.
    pub device: Device,
    /// Entries the index holds.
    pub entries: u64,
    /// Memory budget in bytes (the buffer pool and every engine structure taken from it).
    pub budget: u64,
    /// The workload.
    pub mix: Mix,
    /// Entries the engines' parameters were chosen for at creation, when the index has
    /// grown (or shrunk) to `entries` since; `None`: `entries`.
    pub tuned_for: Option<u64>,
}

impl Input {
    /// Entries the parameters are chosen for.
    pub fn tuning_entries(&self) -> u64 {
        self.tuned_for.unwrap_or(self.entries).max(1)
    }

    /// Page size in bytes.
    pub fn page(&self) -> usize {
        self.device.page
    }

    /// The budget in whole pages.
    pub fn budget_pages(&self) -> f64 {
        (self.budget / self.device.page as u64) as f64
    }
}

/// How much a model is to be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fidelity {
    /// The engine's own cost model from its paper, the one that tunes it.
    Paper,
    /// A simple I/O-count model of a classic structure.
    Simple,
    /// A small model of the paper's cost shape, not checked in detail.
    Rough,
}

impl Fidelity {
    /// Short name for the tables.
    pub fn name(self) -> &'static str {
        match self {
            Fidelity::Paper => "paper",
            Fidelity::Simple => "simple",
            Fidelity::Rough => "rough",
        }
    }
}

/// One engine's costs by kind of operation, for the [`Mix`]'s sizes.
#[derive(Debug, Clone, PartialEq)]
pub struct KindCosts {
    /// The parameters the engine would use (as `key=value` words).
    pub params: String,
    /// How much the model is to be trusted.
    pub fidelity: Fidelity,
    pub search: OpCost,
    pub insert: OpCost,
    pub delete: OpCost,
    pub update: OpCost,
    pub range: OpCost,
    pub bulk: OpCost,
    pub range_delete: OpCost,
}

impl KindCosts {
    /// The share-weighted cost of one operation of `mix`.
    pub fn of_mix(&self, mix: &Mix) -> OpCost {
        [
            (self.search, mix.search),
            (self.insert, mix.insert),
            (self.delete, mix.delete),
            (self.update, mix.update),
            (self.range, mix.range),
            (self.bulk, mix.bulk),
            (self.range_delete, mix.range_delete),
        ]
        .into_iter()
        .filter(|(_, share)| *share > 0.0)
        .fold(OpCost::default(), |acc, (c, share)| {
            acc.plus(c.times(share))
        })
    }
}

/// One engine's prediction for the mix.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    pub engine: EngineKind,
    /// The parameters the engine would use.
    pub params: String,
    pub fidelity: Fidelity,
    /// Cost of one operation of the mix.
    pub cost: OpCost,
    /// `cost.us()`.
    pub us_per_op: f64,
    /// `10^6 / us_per_op`.
    pub ops_per_sec: f64,
}

/// The ranking: engines by predicted cost per operation (cheapest first), and the engines
/// whose model could not be evaluated, with the reason.
#[derive(Debug, Clone)]
pub struct Ranking {
    pub ranked: Vec<Prediction>,
    pub excluded: Vec<(EngineKind, String)>,
}

/// Evaluate every engine's model for `input` and rank them.
pub fn advise(input: &Input) -> Result<Ranking> {
    if input.entries == 0 {
        bail!("--entries must be at least 1");
    }
    if input.budget_pages() < 16.0 {
        bail!(
            "--budget must hold at least 16 pages of {} bytes",
            input.device.page
        );
    }
    let mut ranked = Vec::new();
    let mut excluded = Vec::new();
    for engine in EngineKind::ALL {
        match engines::costs(engine, input) {
            Ok(k) => {
                let cost = k.of_mix(&input.mix);
                let us = cost.us();
                ranked.push(Prediction {
                    engine,
                    params: k.params,
                    fidelity: k.fidelity,
                    cost,
                    us_per_op: us,
                    ops_per_sec: 1e6 / us,
                });
            }
            Err(e) => excluded.push((engine, format!("{e:#}"))),
        }
    }
    ranked.sort_by(|a, b| a.us_per_op.total_cmp(&b.us_per_op));
    Ok(Ranking { ranked, excluded })
}

/// A device with round numbers for tests: 50 us per 4 KiB read and 60 us per 8 KiB read at
/// QD1, 100 us per random page write, 10 us per page read and 20 us per page written at
/// QD32, 1 us and 2 us per page read and written sequentially.
#[cfg(test)]
pub(crate) fn test_device() -> Device {
    let profile = DeviceProfile {
        path: "test".into(),
        backend: "test".into(),
        file_bytes: 1 << 30,
        rand_read_iops_qd1: 20_000.0,
        rand_read_iops_qd32: 100_000.0,
        rand_read_iops_by_qd: Vec::new(),
        rand_write_iops_qd1: 10_000.0,
        rand_write_iops_qd32: 50_000.0,
        seq_read_mb_s: 4096.0,
        seq_write_mb_s: 2048.0,
        seq_read_iops_qd1: None,
        seq_write_iops_qd1: None,
        read_latency_us_by_size: vec![(4096, 50.0), (8192, 60.0), (16384, 80.0)],
        measured_at: "2026-01-01T00:00:00Z".into(),
        cpu: None,
    };
    Device::new(&profile, 4096).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_times_come_from_the_profile() {
        let d = test_device();
        assert_eq!(d.read_us(1.0), 50.0);
        assert_eq!(d.read_us(0.2), 50.0);
        assert_eq!(d.read_us(1.5), 55.0);
        assert_eq!(d.read_us(4.0), 80.0);
        // Past the measured sizes: the line through the last two (20 us per 8 KiB).
        assert_eq!(d.read_us(6.0), 100.0);
        assert_eq!(d.write_us(), 100.0);
        assert_eq!(d.costs.seq_read_page_us(), 1.0);
        assert_eq!(d.costs.seq_write_page_us(), 2.0);
        assert_eq!(d.pio.psync_read_at(1e9), 10.0);
        let c = d.requests(2.0, 2.0).plus(d.random_writes(0.5));
        assert_eq!((c.reads, c.writes, c.device_us), (4.0, 0.5, 170.0));
        // 170 us of I/O, 3 us per operation, 0.09 us for each of 100 keys.
        assert!((c.with_keys(100.0).us() - 182.0).abs() < 1e-9);
    }

    #[test]
    fn every_engine_is_ranked_cheapest_first() {
        let input = Input {
            device: test_device(),
            entries: 100_000,
            budget: 1 << 20,
            mix: Mix::from_workload(crate::workload::Workload::WInsert).unwrap(),
            tuned_for: None,
        };
        let r = advise(&input).unwrap();
        assert_eq!(r.ranked.len(), EngineKind::ALL.len(), "{:?}", r.excluded);
        assert!(r
            .ranked
            .windows(2)
            .all(|w| w[0].us_per_op <= w[1].us_per_op));
        for p in &r.ranked {
            assert!(p.us_per_op > CPU_US_PER_OP && p.ops_per_sec > 0.0, "{p:?}");
            assert!(!p.params.is_empty(), "{p:?}");
        }
        let tiny = Input {
            budget: 4096,
            ..input
        };
        assert!(advise(&tiny).is_err());
    }
}
