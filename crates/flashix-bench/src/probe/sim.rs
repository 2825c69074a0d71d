//! `flashix probe --sim PROFILE`: the probe on a simulated SSD of a named profile
//! ([`SsdProfile`]), in simulated time, and the papers' device figures each profile is
//! calibrated against ([`paper_figures`], [`compare`]).
//!
//! The simulated SSD keeps its NAND in memory (a `MemDevice`), `nand_bytes` of it (default
//! [`flashix::sim::DEFAULT_NAND_BYTES`], 1 GiB); the probe uses its whole logical capacity
//! rounded down to 512 KiB. Preconditioning: the probe's sequential fill writes every
//! logical page once; before the random-write figures, [`steady_state_writes`] random
//! 4 KiB writes (unmeasured) bring the FTL to steady state, and each random-write figure
//! spans at least two garbage-collection cycles ([`gc_cycle_writes`]). Every figure is in
//! simulated time, so a run is deterministic for a seed.

use super::{measure, DeviceProfile, Plan, SimClock, PAGE, SEQ_BYTES};
use anyhow::Context;
use flashix::io::MemDevice;
use flashix::sim::{FtlKind, SimSsd, SimSsdConfig, SsdProfile};

/// What to simulate and for how long.
#[derive(Debug, Clone)]
pub struct SimProbeConfig {
    pub profile: SsdProfile,
    /// NAND bytes of the simulated device ([`SsdProfile::config_sized`]).
    pub nand_bytes: u64,
    /// Simulated seconds per measurement...
    pub seconds_per_test: f64,
    /// ...or this many requests, whichever comes first.
    pub max_ops: u64,
    /// Multiplies [`steady_state_writes`] (1.0: the documented warm-up).
    pub warmup_factor: f64,
    pub seed: u64,
}

impl SimProbeConfig {
    /// The defaults for `profile`: 1 GiB of NAND, 2 simulated seconds or 20,000 requests
    /// per measurement, the full warm-up.
    pub fn new(profile: SsdProfile) -> SimProbeConfig {
        SimProbeConfig {
            profile,
            nand_bytes: flashix::sim::DEFAULT_NAND_BYTES,
            seconds_per_test: 2.0,
            max_ops: 20_000,
            warmup_factor: 1.0,
            seed: 42,
        }
    }
}

/// Random 4 KiB writes that bring a device of `pages` 4 KiB pages (fully written once) to
/// steady state: with page-level mapping, twice the capacity (the greedy collector's
/// victims then hold the steady share of valid pages; more warm-up hardly changes the
/// random-write figures); with block-level mapping, eight times the log blocks (every log
/// block is taken after `log_blocks` writes to distinct logical blocks; from then on a
/// write to a logical block without one merges the oldest).
pub fn steady_state_writes(cfg: &SimSsdConfig, log_limit: u64, pages: u64) -> u64 {
    match cfg.ftl {
        FtlKind::Page => 2 * pages,
        FtlKind::Block | FtlKind::Bast | FtlKind::Fast => 8 * log_limit.max(1),
    }
}

/// Random 4 KiB writes in which every chip fills one erase block (`chips x
/// pages_per_block` NAND pages): the page FTL's stripes advance together, so its garbage
/// collections come in bursts about this far apart, and the random-write figures are
/// measured over at least two of them ([`Plan::min_random_write_ops`]).
pub fn gc_cycle_writes(cfg: &SimSsdConfig, page_size: usize) -> u64 {
    let per = (page_size / cfg.nand.page_bytes).max(1) as u64;
    let chips = cfg.nand.channels as u64 * cfg.nand.ways as u64;
    (chips * cfg.nand.pages_per_block as u64 / per).max(1)
}

/// Probe a simulated SSD. `progress` receives one line per step.
pub fn run_sim_probe(
    cfg: &SimProbeConfig,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<DeviceProfile> {
    if !(cfg.seconds_per_test.is_finite() && cfg.seconds_per_test > 0.0) {
        anyhow::bail!("simulated seconds per test must be a positive number");
    }
    if !(cfg.warmup_factor.is_finite() && cfg.warmup_factor >= 0.0) {
        anyhow::bail!("the warm-up factor must be a number >= 0");
    }
    let scfg = cfg.profile.config_sized(cfg.nand_bytes);
    let backing = MemDevice::new(scfg.nand.page_bytes);
    let mut ssd = SimSsd::create(Box::new(backing), &scfg, PAGE)
        .with_context(|| format!("creating the simulated SSD {}", cfg.profile))?;
    let seq_pages = (SEQ_BYTES / PAGE) as u64;
    let pages = ssd.capacity_pages() / seq_pages * seq_pages;
    if pages == 0 {
        anyhow::bail!("the simulated SSD is smaller than one 512 KiB request");
    }
    let log_limit = ssd.ftl().log_limit() as u64;
    let warmup = (steady_state_writes(&scfg, log_limit, pages) as f64 * cfg.warmup_factor) as u64;
    progress(&format!(
        "probing the simulated SSD {} ({}): {} MiB of NAND, {} MiB probed",
        cfg.profile,
        cfg.profile.description(),
        (scfg.nand.total_pages() * scfg.nand.page_bytes as u64) >> 20,
        (pages * PAGE as u64) >> 20
    ));
    let plan = Plan {
        pages,
        us_per_test: cfg.seconds_per_test * 1e6,
        max_ops: Some(cfg.max_ops.max(1)),
        min_random_write_ops: gc_cycle_writes(&scfg, PAGE) * 2,
        warmup_writes: warmup,
        read_rounds: 1,
        seed: cfg.seed,
    };
    let f = measure(&mut ssd, &SimClock, &plan, progress)?;
    progress("done");
    Ok(DeviceProfile {
        path: format!("sim:{}", cfg.profile),
        backend: "simulated".into(),
        file_bytes: pages * PAGE as u64,
        measured_at: super::utc_timestamp(std::time::SystemTime::now()),
        ..DeviceProfile::from_figures(f)
    })
}

/// A figure of a profile: one number of a [`DeviceProfile`] or a ratio of two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    RandReadIopsQd1,
    RandWriteIopsQd1,
    SeqReadIopsQd1,
    SeqWriteIopsQd1,
    /// Random 4 KiB read IOPS over random 4 KiB write IOPS, both at QD1.
    RandReadOverRandWrite,
    /// Random 4 KiB read IOPS at QD32 over QD1.
    ReadQd32OverQd1,
    /// Random 4 KiB write IOPS at QD32 over QD1.
    WriteQd32OverQd1,
}

impl Metric {
    pub fn name(self) -> &'static str {
        match self {
            Metric::RandReadIopsQd1 => "random 4 KiB read IOPS, QD1",
            Metric::RandWriteIopsQd1 => "random 4 KiB write IOPS, QD1",
            Metric::SeqReadIopsQd1 => "sequential 4 KiB read IOPS, QD1",
            Metric::SeqWriteIopsQd1 => "sequential 4 KiB write IOPS, QD1",
            Metric::RandReadOverRandWrite => "random read / random write, QD1",
            Metric::ReadQd32OverQd1 => "random read QD32 / QD1",
            Metric::WriteQd32OverQd1 => "random write QD32 / QD1",
        }
    }

    /// The metric of a measured profile (`None`: not measured).
    pub fn of(self, p: &DeviceProfile) -> Option<f64> {
        match self {
            Metric::RandReadIopsQd1 => Some(p.rand_read_iops_qd1),
            Metric::RandWriteIopsQd1 => Some(p.rand_write_iops_qd1),
            Metric::SeqReadIopsQd1 => p.seq_read_iops_qd1,
            Metric::SeqWriteIopsQd1 => p.seq_write_iops_qd1,
            Metric::RandReadOverRandWrite => Some(p.rand_read_iops_qd1 / p.rand_write_iops_qd1),
            Metric::ReadQd32OverQd1 => Some(p.rand_read_iops_qd32 / p.rand_read_iops_qd1),
            Metric::WriteQd32OverQd1 => Some(p.rand_write_iops_qd32 / p.rand_write_iops_qd1),
        }
    }
}

/// How a measured figure is held against the paper's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// Within 25% of the paper's figure.
    Within25Percent,
    /// At least the paper's figure (the paper gives a lower bound: "more than ten-fold").
    AtLeast,
    /// A lower bound the profile does not reach; shown, not held (the reason is in
    /// `flashix::sim::profiles`' module doc, Deviations).
    NotReached,
}

/// A device figure a paper gives, and where.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PaperFigure {
    pub metric: Metric,
    pub target: f64,
    pub bound: Bound,
    /// Paper and figure/table.
    pub source: &'static str,
}

/// The figures the papers give for the device a profile models (the targets of
/// `flashix::sim::profiles`' module doc).
pub fn paper_figures(profile: SsdProfile) -> Vec<PaperFigure> {
    let within = |metric, target, source| PaperFigure {
        metric,
        target,
        bound: Bound::Within25Percent,
        source,
    };
    let at_least = |metric, target, source| PaperFigure {
        metric,
        target,
        bound: Bound::AtLeast,
        source,
    };
    match profile {
        SsdProfile::Mtron => vec![within(
            Metric::RandReadOverRandWrite,
            62.7,
            "FD-tree §1 and Fig. 1 (random writes 62.7X slower than random reads)",
        )],
        SsdProfile::IntelX25m => vec![within(
            Metric::RandReadOverRandWrite,
            5.6,
            "FD-tree §1 and Fig. 1 (random writes 5.6X slower than random reads)",
        )],
        SsdProfile::Iodrive | SsdProfile::P300 => vec![
            at_least(
                Metric::ReadQd32OverQd1,
                10.0,
                "PIO B-tree §2.1 and Fig. 3(a) (more than ten-fold with outstanding I/Os)",
            ),
            PaperFigure {
                metric: Metric::WriteQd32OverQd1,
                target: 10.0,
                bound: Bound::NotReached,
                source: "PIO B-tree §2.1 and Fig. 3(b) (more than ten-fold with outstanding \
                         I/Os); not reached in steady state",
            },
        ],
        SsdProfile::Ocz => vec![
            within(
                Metric::SeqReadIopsQd1,
                18_000.0,
                "FBX-tree Table 1 (IO/s, 4K)",
            ),
            within(
                Metric::SeqWriteIopsQd1,
                7_000.0,
                "FBX-tree Table 1 (IO/s, 4K)",
            ),
            within(
                Metric::RandReadIopsQd1,
                17_000.0,
                "FBX-tree Table 1 (IO/s, 4K)",
            ),
            within(
                Metric::RandWriteIopsQd1,
                1_100.0,
                "FBX-tree Table 1 (IO/s, 4K)",
            ),
        ],
    }
}

/// A paper figure against the measured one.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub figure: PaperFigure,
    pub measured: f64,
    /// `(measured - target) / target`, in percent.
    pub error_percent: f64,
    pub ok: bool,
}

/// Hold a measured profile against the paper's figures for `profile`.
pub fn compare(profile: SsdProfile, measured: &DeviceProfile) -> Vec<Comparison> {
    paper_figures(profile)
        .into_iter()
        .map(|figure| {
            let m = figure.metric.of(measured).unwrap_or(f64::NAN);
            let error_percent = (m - figure.target) / figure.target * 100.0;
            let ok = match figure.bound {
                Bound::Within25Percent => error_percent.abs() <= 25.0,
                Bound::AtLeast => m >= figure.target,
                Bound::NotReached => true,
            };
            Comparison {
                figure,
                measured: m,
                error_percent,
                ok,
            }
        })
        .collect()
}

/// Print the comparison as a table.
pub fn print_comparison(profile: SsdProfile, rows: &[Comparison]) {
    println!();
    println!("  paper figures for {profile} ({})", profile.description());
    println!(
        "  {:<34} {:>10} {:>10} {:>8}  source",
        "metric", "paper", "simulated", "error"
    );
    println!(
        "  {:-<34} {:->10} {:->10} {:->8}  {:-<6}",
        "", "", "", "", ""
    );
    for r in rows {
        let paper = match r.figure.bound {
            Bound::Within25Percent => format!("{}", r.figure.target),
            Bound::AtLeast | Bound::NotReached => format!(">={}", r.figure.target),
        };
        println!(
            "  {:<34} {:>10} {:>10.1} {:>7.1}%  {}{}",
            r.figure.metric.name(),
            paper,
            r.measured,
            r.error_percent,
            r.figure.source,
            if r.ok { "" } else { "  [OUT OF BOUND]" }
        );
    }
}
