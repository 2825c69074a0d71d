//! The experiments of `flashix repro pio` (module doc of [`super`]): suites of the bench
//! runner per lens, one per memory setting the paper varies.

use super::{
    nand_bytes, paper, Cell, CellId, LeftOut, Lens, LensInfo, Measured, PioRepro, PioReproArgs,
    Sizes, FIG13B_THREADS, MIXES,
};
use crate::output::report::Record;
use crate::repro::common::Frame;
use crate::runner::{run_bench, BenchConfig};
use crate::units::format_size;
use crate::workload::{Workload, TPCC_SCAN};
use anyhow::{Context, Result};
use flashix::sim::SsdProfile;
use flashix::{DeviceSpec, EngineKind};
use std::path::Path;

const PIO: EngineKind = EngineKind::PioBTree;
const BTREE: EngineKind = EngineKind::BTree;

/// What a run shares.
struct Ctx<'a> {
    a: &'a PioReproArgs,
    z: Sizes,
    f: Frame,
}

/// One suite: engines and workloads under one memory setting.
struct Suite<'s> {
    name: String,
    engines: &'s [EngineKind],
    workloads: Vec<Workload>,
    budget: u64,
    /// Measured operations a workload (before `runner::BUFFER_RULE` stretches a write
    /// phase).
    ops: u64,
    /// Share of searches the cost models tune for (PIO leaf and OPQ, FD-tree k).
    search_fraction: f64,
    opq_bytes: Option<u64>,
    leaf_segments: Option<u32>,
    /// Threads of each cell's measured phase, each count a cell of its own (THREADS_RULE).
    threads: &'s [u32],
    /// Runs of each cell, in rounds over the suite's cells (`runner::ROUND_RULE`); a cell
    /// is its median run.
    repeat: u32,
}

impl Ctx<'_> {
    /// Run suite `s` on `lens`.
    fn suite(&self, lens: Lens, profile: &Path, s: &Suite) -> Result<Vec<Record>> {
        let dir = self.f.data.join(lens.key()).join(&s.name);
        let entries = self.z.entries;
        let cfg = BenchConfig {
            engines: s.engines.to_vec(),
            workloads: s.workloads.clone(),
            entries,
            ops: s.ops,
            buffer_pool_bytes: s.budget,
            prep_buffer_pool_bytes: 64 << 20,
            search_fraction: s.search_fraction,
            pio_opq_bytes: s.opq_bytes,
            pio_leaf_segments: s.leaf_segments,
            seed: self.a.base.seed,
            dir: dir.join("data"),
            out: dir.clone(),
            profile: Some(profile.to_path_buf()),
            device: match lens {
                Lens::Disk => None,
                Lens::Sim(p) => Some(DeviceSpec::SimulatedSsd(sim_config(p, entries))),
            },
            threads: s.threads.to_vec(),
            repeat: s.repeat,
            verbose: false,
            ..BenchConfig::new()
        };
        self.f.say(format!(
            "{}: {} ({} on {}, budget {}{})",
            lens.label(),
            s.name,
            s.workloads
                .iter()
                .map(|w| w.name())
                .collect::<Vec<_>>()
                .join(","),
            s.engines
                .iter()
                .map(|e| e.name())
                .collect::<Vec<_>>()
                .join(","),
            format_size(s.budget),
            s.opq_bytes
                .map(|q| format!(", OPQ {}", format_size(q)))
                .unwrap_or_default()
        ));
        let r = run_bench(&cfg).with_context(|| format!("{} {}", lens.label(), s.name))?;
        std::fs::remove_dir_all(dir.join("data")).ok();
        Ok(r.results)
    }
}

/// Fewest erase blocks a chip of a simulated SSD gets here (`SsdProfile::config_sized`
/// gives each 64).
const SIM_BLOCKS_PER_CHIP: u32 = 16;

/// The simulated SSD of profile `p` for an index of `entries`: the profile's geometry and
/// timing with [`nand_bytes`] of NAND, at least [`SIM_BLOCKS_PER_CHIP`] blocks a chip.
/// `config_sized`'s floor of 64 blocks a chip makes a simulated ioDrive (48 chips) 768
/// MiB, ten times an index of the default size, and every measured phase copies the
/// NAND file, which the log-structured FTL has written nearly all over by then. The
/// profiles' figures depend on the over-provisioning, not the size (`sim::profiles`).
fn sim_config(p: SsdProfile, entries: u64) -> flashix::sim::SimSsdConfig {
    let mut c = p.config_sized(nand_bytes(entries));
    let chips = c.nand.channels * c.nand.ways;
    let block = c.nand.block_bytes() as u64;
    let want = u32::try_from(nand_bytes(entries).div_ceil(block)).unwrap_or(u32::MAX);
    c.nand.blocks = want
        .div_ceil(chips)
        .saturating_mul(chips)
        .max(SIM_BLOCKS_PER_CHIP * chips)
        .min(c.nand.blocks);
    c
}

/// A cell of `experiment` from a runner record on `lens` under suite `s`.
fn cell(experiment: &str, lens: Lens, variant: &str, s: &Suite, r: &Record) -> Cell {
    Cell {
        id: CellId::new(experiment, lens, &r.engine, variant, &r.workload),
        budget: s.budget,
        opq_bytes: if r.engine == PIO.name() {
            s.opq_bytes.unwrap_or(0)
        } else {
            0
        },
        m: Measured::of(r),
        buffer_turnovers: r.buffer_turnovers,
        engine_params: r.engine_params.clone(),
    }
}

/// The lenses of `--lenses` (default: this disk, the ioDrive, the P300).
fn lenses(a: &PioReproArgs) -> Result<Vec<Lens>> {
    // --quick, a smoke test: one simulated SSD (the ioDrive's lens is the same code).
    let mut all = vec![Lens::Disk, Lens::Sim(SsdProfile::P300)];
    if !a.base.quick {
        all.insert(1, Lens::Sim(SsdProfile::Iodrive));
    }
    Lens::parse_all(&a.sizes.lenses, all)
}

/// Fig. 11's OPQs for budget `b`: one page, `b`/4 (the paper's 1024 of 4096 pages) and the paper's largest share (4041 of 4096), leaving the engine its 8 frames
/// and a page for the LSMap; whole pages, in increasing order.
pub(super) fn opqs(b: u64, page: u64) -> Vec<u64> {
    let pages = b / page;
    let largest = (pages * 4041 / 4096).min(pages.saturating_sub(9)).max(1);
    let mut q: Vec<u64> = [1, pages / 4, largest]
        .into_iter()
        .map(|p| p.clamp(1, largest) * page)
        .collect();
    q.dedup();
    q
}

/// Fig. 13's budget (the paper's 4 MB of its 16) and OPQ (its 20 pages of 1024).
fn fig13_setting(b: u64, page: u64) -> (u64, u64) {
    let budget = (b / 4).max(128 << 10);
    let opq = (budget * 20 / 1024).max(2 * flashix::PIO_OPQ_ENTRY_BYTES);
    (budget, opq.min(budget - 9 * page))
}

/// Run the reproduction.
pub fn run(a: &PioReproArgs) -> Result<PioRepro> {
    let z = Sizes::new(a)?;
    let f = a.base.frame("pio")?;
    let page = BenchConfig::new().page_size as u64;
    let cx = Ctx { a, z, f };
    let b = cx.z.budget;
    let pools = cx.z.pools();
    let opq_sizes = opqs(b, page);
    let mut cells = Vec::new();
    let mut infos = Vec::new();
    let mut left_out = Vec::new();
    let single = ["fig9", "fig10", "fig11", "fig12", "fig13"]
        .iter()
        .any(|p| a.base.runs(p));
    for lens in lenses(a)? {
        let fig13b = a.base.runs("fig13b") && cx.fig13b_runs_on(lens, &mut left_out)?;
        if !single && !fig13b {
            // Nothing to run here: no device profile to measure either.
            continue;
        }
        let (path, profile) = cx.f.profile(lens)?;
        infos.push(LensInfo::of(lens, &path, &profile));
        cx.main_cells(lens, &path, &mut cells)?;
        cx.fig9_pools(lens, &path, &pools, &mut cells)?;
        cx.fig11_opqs(lens, &path, &opq_sizes, &mut cells)?;
        cx.fig12(lens, &path, &mut cells)?;
        cx.fig13(lens, &path, page, &mut cells)?;
        if fig13b {
            cx.fig13b(lens, &path, page, &mut cells)?;
        }
    }
    std::fs::remove_dir_all(&cx.f.data).ok();
    let mut r = PioRepro {
        entries: cx.z.entries,
        ops: cx.z.ops,
        budget_bytes: b,
        page_size: page as usize,
        pools,
        ranges: cx.z.ranges.clone(),
        opqs: opq_sizes,
        mixes: MIXES.to_vec(),
        threads: if a.base.runs("fig13b") {
            FIG13B_THREADS.to_vec()
        } else {
            Vec::new()
        },
        left_out,
        lenses: infos,
        quick: a.base.quick,
        wall_seconds: cx.f.seconds(),
        cells,
        claims: Vec::new(),
    };
    r.claims = paper::check(&r);
    cx.f.save(&r)?;
    Ok(r)
}

/// The experiments of one lens, each adding its cells (`path`: the lens's profile).
impl Ctx<'_> {
    /// The whole budget, PIO and B+-tree tuned for searches (§4.1.1): Fig. 9's largest
    /// pool, Fig. 10's ranges and Fig. 11's B+-tree.
    fn main_cells(&self, lens: Lens, path: &Path, cells: &mut Vec<Cell>) -> Result<()> {
        let (a, b) = (self.a, self.z.budget);
        let mut w = Vec::new();
        if a.base.runs("fig9") || a.base.runs("fig11") {
            w.push(Workload::OSearch);
        }
        if a.base.runs("fig10") {
            w.extend(self.z.ranges.iter().map(|&r| Workload::Range(r)));
        }
        if a.base.runs("fig11") {
            w.push(Workload::OInsert);
        }
        if !w.is_empty() {
            let s = Suite {
                name: "main".into(),
                engines: &[PIO, BTREE],
                workloads: w,
                budget: b,
                ops: self.z.ops,
                search_fraction: 1.0,
                opq_bytes: None,
                leaf_segments: None,
                threads: &[1],
                repeat: 1,
            };
            for r in self.suite(lens, path, &s)? {
                let pool = format!("pool {}", format_size(b));
                match r.workload.as_str() {
                    "o-search" => {
                        if a.base.runs("fig9") {
                            cells.push(cell("fig9", lens, &pool, &s, &r));
                        }
                        if a.base.runs("fig11") && r.engine == BTREE.name() {
                            cells.push(cell("fig11", lens, "", &s, &r));
                        }
                    }
                    "o-insert" => {
                        if r.engine == BTREE.name() {
                            cells.push(cell("fig11", lens, "", &s, &r));
                        }
                    }
                    _ => cells.push(cell("fig10", lens, "", &s, &r)),
                }
            }
        }
        Ok(())
    }

    /// Fig. 9 at the pools below the whole budget.
    fn fig9_pools(
        &self,
        lens: Lens,
        path: &Path,
        pools: &[u64],
        cells: &mut Vec<Cell>,
    ) -> Result<()> {
        let b = self.z.budget;
        if self.a.base.runs("fig9") {
            for &pool in pools.iter().filter(|&&p| p != b) {
                let s = Suite {
                    name: format!("fig9-pool-{}", pool >> 10),
                    engines: &[PIO, BTREE],
                    workloads: vec![Workload::OSearch],
                    budget: pool,
                    ops: self.z.ops,
                    search_fraction: 1.0,
                    opq_bytes: None,
                    leaf_segments: None,
                    threads: &[1],
                    repeat: 1,
                };
                let variant = format!("pool {}", format_size(pool));
                for r in self.suite(lens, path, &s)? {
                    cells.push(cell("fig9", lens, &variant, &s, &r));
                }
            }
        }
        Ok(())
    }

    /// Fig. 11's OPQ sweep.
    fn fig11_opqs(
        &self,
        lens: Lens,
        path: &Path,
        opq_sizes: &[u64],
        cells: &mut Vec<Cell>,
    ) -> Result<()> {
        let b = self.z.budget;
        let page = BenchConfig::new().page_size as u64;
        if self.a.base.runs("fig11") {
            for &q in opq_sizes {
                let s = Suite {
                    name: format!("fig11-opq-{}", q / page),
                    engines: &[PIO],
                    workloads: vec![Workload::OInsert, Workload::OSearch],
                    budget: b,
                    ops: self.z.ops,
                    search_fraction: 1.0,
                    opq_bytes: Some(q),
                    leaf_segments: None,
                    threads: &[1],
                    repeat: 1,
                };
                let variant = format!("opq {} pages", q / page);
                for r in self.suite(lens, path, &s)? {
                    cells.push(cell("fig11", lens, &variant, &s, &r));
                }
            }
        }
        Ok(())
    }

    /// Fig. 12's mixes.
    fn fig12(&self, lens: Lens, path: &Path, cells: &mut Vec<Cell>) -> Result<()> {
        let b = self.z.budget;
        if self.a.base.runs("fig12") {
            // One suite of the four indexes, each tuned by its cost model (if any) for a
            // 50% mix (the middle of the five). A quarter of OPS: BUFFER_RULE stretches
            // the buffered engines' phases of the search-heavy mixes to 20 x OPS, mostly
            // searches.
            let s = Suite {
                name: "fig12".into(),
                engines: &[PIO, BTREE, EngineKind::FdTree, EngineKind::Bftl],
                workloads: MIXES.iter().map(|&m| Workload::Mix(m)).collect(),
                budget: b,
                ops: (self.z.ops / 4).max(10),
                search_fraction: 0.5,
                opq_bytes: None,
                leaf_segments: None,
                threads: &[1],
                repeat: 1,
            };
            for r in self.suite(lens, path, &s)? {
                cells.push(cell("fig12", lens, "", &s, &r));
            }
        }
        Ok(())
    }

    /// Fig. 13's TPC-C, inserts and scans with the paper's small budget and OPQ.
    fn fig13(&self, lens: Lens, path: &Path, page: u64, cells: &mut Vec<Cell>) -> Result<()> {
        let b = self.z.budget;
        if self.a.base.runs("fig13") {
            let (budget, opq) = fig13_setting(b, page);
            let s = Suite {
                name: "fig13".into(),
                engines: &[PIO, BTREE],
                workloads: vec![
                    Workload::Tpcc,
                    Workload::OInsert,
                    Workload::Range(TPCC_SCAN),
                ],
                budget,
                ops: self.z.ops,
                search_fraction: 0.715,
                opq_bytes: Some(opq),
                leaf_segments: Some(1),
                threads: &[1],
                repeat: 1,
            };
            for r in self.suite(lens, path, &s)? {
                cells.push(cell("fig13", lens, "", &s, &r));
            }
        }
        Ok(())
    }
}

impl Ctx<'_> {
    /// Whether Fig. 13(b) runs on `lens`: a lens that can time several threads' requests
    /// at once. A simulated SSD that serves them one batch at a time ([`SimThreads`]) is
    /// left out, with the measurement, in `left_out`.
    fn fig13b_runs_on(&self, lens: Lens, left_out: &mut Vec<LeftOut>) -> Result<bool> {
        let Lens::Sim(p) = lens else {
            return Ok(true);
        };
        let t = SimThreads::of(p, self.z.entries)?;
        if !t.serializes() {
            return Ok(true);
        }
        self.f
            .say(format!("{}: fig13b left out: {}", lens.label(), t.why()));
        left_out.push(LeftOut {
            lens: lens.key().into(),
            experiment: "fig13b".into(),
            why: t.why(),
        });
        Ok(false)
    }

    /// Fig. 13(b): the TPC-C trace on the PIO B-tree and the B-link tree (`btree`) with
    /// Fig. 13(a)'s settings at each of [`FIG13B_THREADS`] threads on one index.
    fn fig13b(&self, lens: Lens, path: &Path, page: u64, cells: &mut Vec<Cell>) -> Result<()> {
        let (budget, opq) = fig13_setting(self.z.budget, page);
        let s = Suite {
            name: "fig13b".into(),
            engines: &[PIO, BTREE],
            workloads: vec![Workload::Tpcc],
            budget,
            ops: self.z.ops.saturating_mul(FIG13B_OPS_FACTOR),
            search_fraction: 0.715,
            opq_bytes: Some(opq),
            leaf_segments: Some(1),
            threads: &FIG13B_THREADS,
            repeat: FIG13B_REPEAT,
        };
        for r in self.suite(lens, path, &s)? {
            let variant = threads_variant(r.threads);
            cells.push(cell("fig13b", lens, &variant, &s, &r));
        }
        Ok(())
    }
}

/// Fig. 13(b)'s phases run this many times `--ops`: the threads share a phase's
/// operations, so at 16 threads each runs a sixteenth of them.
const FIG13B_OPS_FACTOR: u64 = 4;

/// Runs of each Fig. 13(b) cell, its median kept: the cells of one engine differ only
/// in their threads, and one run each would leave the scaling to a drift of the device
/// between them (`runner::ROUND_RULE` spreads the runs over the suite).
const FIG13B_REPEAT: u32 = 3;

/// The variant naming a Fig. 13(b) cell of `threads` threads (`t8`).
pub(super) fn threads_variant(threads: u32) -> String {
    format!("t{threads}")
}

/// What a simulated SSD does with the requests of several threads, measured on a small
/// one of the lens's profile and geometry: whether it gives a reader for many threads at
/// once (`Device::shared_reader`; without one, the threads' requests reach it one batch at
/// a time under its lock), and the simulated time of two reads on different chips
/// submitted as one batch (one thread's psync group) and as two batches one after the
/// other (as two threads' reads reach it).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct SimThreads {
    pub profile: &'static str,
    pub shared_reader: bool,
    /// Simulated microseconds of the two reads as one batch.
    pub together_us: f64,
    /// Simulated microseconds of the same two reads as two batches.
    pub apart_us: f64,
}

impl SimThreads {
    /// Measure profile `p`'s simulated SSD (the lens's config for an index of `entries`,
    /// on memory).
    pub fn of(p: SsdProfile, entries: u64) -> Result<SimThreads> {
        use flashix::io::{Device, IoReq, MemDevice};
        use flashix::sim::SimSsd;
        let page = BenchConfig::new().page_size;
        let cfg = sim_config(p, entries.min(4000));
        let chips = (cfg.nand.channels * cfg.nand.ways) as u64;
        let mut ssd = SimSsd::create(Box::new(MemDevice::new(cfg.nand.page_bytes)), &cfg, page)
            .with_context(|| format!("a small simulated {}", p.name()))?;
        let shared_reader = ssd.shared_reader()?.is_some();
        // Enough pages that two of them sit on different chips, whatever the FTL's order.
        let pages = 2 * chips;
        let buf = vec![7u8; page];
        for pid in 0..pages {
            ssd.write(pid, &buf)?;
        }
        ssd.sync()?;
        let mut a = vec![0u8; page];
        let mut b = vec![0u8; page];
        let mut best: Option<(f64, f64)> = None;
        for j in 1..pages {
            let t0 = ssd.sim_time_us();
            ssd.submit(&mut [
                IoReq::Read {
                    page: 0,
                    buf: &mut a,
                },
                IoReq::Read {
                    page: j,
                    buf: &mut b,
                },
            ])?;
            let t1 = ssd.sim_time_us();
            ssd.read(0, &mut a)?;
            ssd.read(j, &mut b)?;
            let t2 = ssd.sim_time_us();
            let (together, apart) = (t1 - t0, t2 - t1);
            // The pair whose batch overlaps most: two chips.
            if best.map_or(true, |(t, ap)| together / apart < t / ap) {
                best = Some((together, apart));
            }
        }
        let (together_us, apart_us) = best.context("a simulated SSD of one page")?;
        Ok(SimThreads {
            profile: p.name(),
            shared_reader,
            together_us,
            apart_us,
        })
    }

    /// Whether several threads' requests are timed one batch after another: the device
    /// gives no reader for many threads, so they reach it one batch at a time.
    pub fn serializes(&self) -> bool {
        !self.shared_reader
    }

    /// What the measurement says, in a line.
    pub fn why(&self) -> String {
        format!(
            "the simulated {} gives no reader for several threads, so their requests reach \
             it one batch at a time under its lock, and its clock times each batch after the \
             one before: two reads on different chips took {:.1} us of simulated time as one \
             batch (one thread's psync group) and {:.1} us as two (two threads' reads), so \
             its time cannot show what threads gain",
            self.profile, self.together_us, self.apart_us
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opq_sweep_follows_the_papers_shares() {
        // 1 MiB of 4 KiB pages: 1 page, 64 (B/4, the paper's 1024 of 4096) and 247 (the
        // budget less 9 pages; the paper's 4041 of 4096 would be 252).
        assert_eq!(opqs(1 << 20, 4096), vec![4096, 64 * 4096, 247 * 4096]);
        let (budget, opq) = fig13_setting(1 << 20, 4096);
        assert_eq!((budget, opq), (256 << 10, 5120));
        assert_eq!(threads_variant(8), "t8");
    }

    /// The simulated SSDs serve the requests of several threads one batch at a time, and
    /// their clock times two batches one after the other: the lens fig13b leaves out, and
    /// the numbers its line gives.
    #[test]
    fn simulated_ssds_time_several_threads_one_batch_after_another() {
        for p in [SsdProfile::P300, SsdProfile::Iodrive] {
            let t = SimThreads::of(p, 150_000).unwrap();
            assert!(t.serializes(), "{t:?}");
            assert!(t.together_us > 0.0, "{t:?}");
            // Two chips overlap within a batch, not across batches.
            assert!(t.together_us < t.apart_us, "{t:?}");
            let why = t.why();
            assert!(why.contains(&format!("{:.1} us", t.apart_us)), "{why}");
            assert!(why.contains(p.name()), "{why}");
        }
    }
}
