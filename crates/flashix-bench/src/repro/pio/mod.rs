//! `flashix repro pio --out DIR`: the PIO B-tree paper's §4 experiments (Roh, Park, Kim,
//! Shin, Lee, VLDB 2011; Figs. 9-13) run by the bench suite's runner
//! ([`crate::runner::run_bench`]: bulk load, then aging; the same keys, the same operation
//! stream and the same memory budget for every engine) on three lenses, each result beside
//! the paper's numbers, saved to `DIR/repro-pio.json`:
//!
//! - `this disk`: the machine's disk with O_DIRECT, wall time;
//! - `simulated iodrive` and `simulated p300`: the paper's two enterprise SSDs (its third,
//!   the consumer F120, has no profile), the same workloads on `DeviceSpec::SimulatedSsd`
//!   of the named profile ([`flashix::sim::SsdProfile`]), its time the simulator's device
//!   time of the measured phase (`Record::sim_seconds`); the NAND is sized for the index
//!   ([`nand_bytes`]). The cost models tune for the profile `flashix probe --sim` measures
//!   on a small simulated device, saved as `OUT/sim-profile-NAME.json`. The WAL is a file
//!   beside the device, so simulated time leaves it out: a phase whose writes all stay in
//!   the OPQ or the buffer pool costs no simulated time, and its speedups are not given.
//!
//! Engines are compared per operation (microseconds an operation): the runner stretches
//! the write phases of engines with write buffers (the PIO B-tree's OPQ, the FD-tree's head
//! tree; `runner::BUFFER_RULE`), so their phases are longer than the others'.
//!
//! What is scaled, and how. The paper's index holds 10^9 entries (more than 8 GB) with a
//! memory budget of 16 MB (0.2%); here the index is `--entries` (default 150,000: a few
//! MB) with a budget `B` (`--budget`, default 512 KiB) that stands for the paper's 16 MB.
//! A budget of 0.2% of our index would be a few pages, too few for a psync group (a group
//! is bounded by half the pool, `PioMax` = 64), so the budget is a far larger share of the
//! index than the paper's and the pool caches the internal levels and part of the leaves.
//! Every memory size of §4 is scaled as its share of the 16 MB: Fig. 9's pools of 1, 4
//! and 16 MB (of its 1-16 MB) are `B`/16, `B`/4 and `B` (at least 64 KiB), Fig. 11's OPQ
//! of 1024 pages (of 4096) is `B`/4, its largest (4041 pages, the budget less the LSMap)
//! is `B` less the LSMap and the engine's 8 frames, Fig. 13's 4 MB budget is `B`/4 with
//! an OPQ of 20/1024 of it. The smallest OPQ stays one page (4 KiB), as in the paper.
//! Pages are 4 KiB as in the paper, entries 8-byte keys and values. Fewer points than
//! the paper's sweeps (three pools, three OPQs): each point is a suite of its own, and
//! the runner prepares (bulk loads and ages) its indexes afresh; the PIO B-tree's aging
//! (the B+-tree's count of inserts, `runner::AGING_RULE`: the point's own B+-tree's, or
//! one aged aside first when the point has none) takes much of a point's time on a
//! simulated SSD. The
//! simulated SSDs have [`nand_bytes`] of NAND, at least 16 erase blocks a chip (the
//! profiles' own floor, 64 a chip, is 768 MiB for the ioDrive's 48 chips, and every
//! measured phase copies the NAND file).
//!
//! - **Fig. 9** (`fig9`): O-Search (§4.1.1: point searches only) of the PIO B-tree and
//!   the B+-tree, pools of `B`/16, `B`/4 and `B` (the paper's 1-16 MB). The PIO leaf size is
//!   the cost model's (Eq. 10) for a search-only workload; the B+-tree's node is one page
//!   (the paper chose it by its utility/cost measure).
//! - **Fig. 10** (`fig10`): range searches (`range-N`) of 1K keys up by factors of 8
//!   (the paper's 1K-32M), those within half the index (default 1K, 8K, 64K; 512K with
//!   `--paper`; a scan from a key near the end stops there, for both engines alike), at
//!   the budget `B`.
//! - **Fig. 11** (`fig11`): O-Insert and O-Search of the PIO B-tree at OPQs of one page,
//!   `B`/4 (the paper's 1024 pages) and the largest (`B` less the LSMap and the engine's
//!   8 frames), each taken from the budget (the pool gets the rest); the B+-tree's
//!   O-Insert and O-Search at the whole budget. The PIO leaf is the cost model's for a
//!   search-only workload, as in Fig. 9 (§4.1.3: "configured the same as in §4.1.1").
//! - **Fig. 12** (`fig12`): the four indexes on five insert/search mixes (`mix-S`). The
//!   paper's text names "five workloads ... differentiated by the insert ratio and search
//!   ratio" without the ratios: here 90, 70, 50, 30 and 10% searches, the rest inserts.
//!   The paper tuned each index for each mix; here the PIO B-tree's leaf and OPQ and the
//!   FD-tree's k are their cost models' choice for the middle mix (50% search), one
//!   suite for all five (a suite per mix would prepare both indexes five times over). The
//!   B+-tree and BFTL have no such parameter. Its phases run a quarter of `--ops` (the
//!   runner stretches the buffered engines' phases of the search-heavy mixes to 20 x
//!   that, mostly searches).
//! - **Fig. 13** (`fig13`): the `tpcc` trace (71.5% point search, 23.8% insert, 3.7%
//!   range, 1% delete, TPC-C's locality; see `workload::Tpcc`) on the PIO B-tree and
//!   the B+-tree with §4.2's settings: budget `B`/4 (the paper's 4 MB), leaves of one
//!   segment, 4 KiB nodes, an OPQ of 20/1024 of the budget (the paper's 20 pages). The
//!   paper splits the trace's time by operation; the runner times a phase as a whole, so
//!   the insert and range figures come from phases of the same settings with only
//!   inserts (`o-insert`) and only TPC-C's 20-order ranges (`range-20`).
//! - **Fig. 13(b)** (`fig13b`): the `tpcc` trace on the PIO B-tree and the B-link tree
//!   (`btree`, latched: the paper's "concurrent B-tree ... with a fine-grained locking")
//!   with Fig. 13(a)'s settings, at 1, 2, 4, 8 and 16 threads on the one index
//!   (`runner::THREADS_RULE`: a stream of its own for each thread, every N-th district;
//!   cells `t1` .. `t16`), 4 x `--ops` operations a phase, shared by its threads, each
//!   cell the median of 3 runs in rounds (`runner::ROUND_RULE`). The paper's PIO B-tree
//!   locks the whole index for an OPQ flush; here both engines are served by the
//!   library's readers-writer lock (`Db`), and the cells of more than one thread report
//!   the share of the phase its exclusive side was held. The paper gives
//!   ratios per device (P300 1.33-1.49x, ioDrive 1.3-1.47x, F120 1.17-1.32x); this disk
//!   is judged against their widest band, 1.17-1.49x, at each thread count. It runs on
//!   this disk only: a simulated SSD that serves several threads' requests one batch at a
//!   time on its one clock (`run::SimThreads`, measured when the run starts) cannot show
//!   what threads gain, and is left out with that measurement (`left_out`).
//!
//! The files: this one holds the arguments ([`PioReproArgs`]), the records of
//! `repro-pio.json` ([`PioRepro`], [`Cell`]) and the sizes; `run.rs` runs the experiments
//! ([`run`]), `paper.rs` holds the paper's claims and checks them against the cells,
//! `print.rs` prints the tables ([`print()`]).

mod paper;
mod print;
mod run;

pub use super::common::{CellId, Lens, LensInfo, Measured};
use super::common::{PaperHelp, ReproArgs, SizeArgs, SizeHelp};
pub use super::ClaimCheck;
pub use print::print;
pub use run::run;

use serde::Serialize;

/// The help texts of `flashix repro pio`'s shared arguments.
#[derive(Debug, Clone)]
pub struct Help;

impl PaperHelp for Help {
    const OUT: &'static str = "Where `repro-pio.json` (and the device profiles) go";
    const DIR: &'static str = "Where the indexes are built (default: OUT/repro-pio-data)";
    const QUICK: &'static str =
        "Small sizes (a test): 8,000 entries, 200 operations a workload, 256 \
        KiB budget";
    const PAPER: &'static str =
        "Larger sizes: 2,000,000 entries, 50,000 operations a workload, 16 MiB \
        budget (the paper's), ranges up to 512K keys (not timed here; expect \
        a long run). The default is 150,000 entries, 10,000 operations a \
        workload and 512 KiB";
    const ONLY: &'static str =
        "Run only these parts (fig9, fig10, fig11, fig12, fig13, fig13b); default all";
    const SEED: &'static str = "Seed of keys and workloads";
}

impl SizeHelp for Help {
    const ENTRIES: &'static str = "Entries of the index";
    const BUDGET: &'static str =
        "The memory budget of every index, the paper's 16 MB (default 512 KiB; quick: 256 KiB)";
    const LENSES: &'static str =
        "Lenses (disk, iodrive, p300); default all three (with --quick: disk, p300)";
}

/// Arguments of `flashix repro pio`.
#[derive(clap::Args, Debug, Clone)]
pub struct PioReproArgs {
    // --out, --dir, --quick, --paper, --only, --seed.
    #[command(flatten)]
    pub base: ReproArgs<Help>,
    // --entries, --ops, --budget, --lenses.
    #[command(flatten)]
    pub sizes: SizeArgs<Help>,
}

/// NAND bytes of a simulated SSD for an index of `entries`: 16-byte entries in leaves
/// that may be a quarter full (the PIO B-tree's shrunk leaves, §3.2.2), the inserts of
/// the stretched write phases, and room for the FTL's spare blocks and garbage
/// collection; at least 64 MiB.
pub fn nand_bytes(entries: u64) -> u64 {
    (entries.saturating_mul(16).saturating_mul(16)).max(64 << 20)
}

/// One measured cell: an engine, a workload, a setting, a lens.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
pub struct Cell {
    /// Experiment, lens, engine, variant, workload.
    #[serde(flatten)]
    pub id: CellId,
    /// The memory budget of the cell (bytes).
    pub budget: u64,
    /// The PIO B-tree's OPQ share of it (bytes; 0 for other engines or the model's choice
    /// when `variant` does not set it).
    pub opq_bytes: u64,
    /// The measured phase: sizes, time, latencies, I/O per operation, queue depth.
    #[serde(flatten)]
    pub m: Measured,
    /// Keys written / the write buffer's entries (`runner::BUFFER_RULE`); below 1 the
    /// buffer absorbed the phase.
    pub buffer_turnovers: Option<f64>,
    /// The engine's parameters (`leaf_segments=.. opq_capacity=.. height=..`, `k=..`).
    pub engine_params: String,
}

/// The whole reproduction.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct PioRepro {
    pub entries: u64,
    pub ops: u64,
    /// The budget `B` that stands for the paper's 16 MB.
    pub budget_bytes: u64,
    pub page_size: usize,
    /// Fig. 9's pools (bytes).
    pub pools: Vec<u64>,
    /// Fig. 10's ranges (keys).
    pub ranges: Vec<u64>,
    /// Fig. 11's OPQs (bytes).
    pub opqs: Vec<u64>,
    /// Fig. 12's search shares (percent).
    pub mixes: Vec<u32>,
    /// Fig. 13(b)'s thread counts (empty when it did not run).
    #[serde(default)]
    pub threads: Vec<u32>,
    /// Lenses an experiment left out, and the measured reason.
    #[serde(default)]
    pub left_out: Vec<LeftOut>,
    pub lenses: Vec<LensInfo>,
    /// A `--quick` run: its claims are printed with their figures, not judged.
    #[serde(default)]
    pub quick: bool,
    /// Wall seconds of the whole run.
    pub wall_seconds: f64,
    pub cells: Vec<Cell>,
    /// The paper's claims and what the cells say of each.
    pub claims: Vec<ClaimCheck>,
}

/// Fig. 12's search shares: five insert/search mixes.
const MIXES: [u32; 5] = [90, 70, 50, 30, 10];

/// Fig. 13(b)'s thread counts: "as increasing the number of parallel threads".
const FIG13B_THREADS: [u32; 5] = [1, 2, 4, 8, 16];

/// A lens an experiment left out, and why (measured on that lens's device).
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
pub struct LeftOut {
    /// The lens's key (`p300`).
    pub lens: String,
    /// The experiment (`fig13b`).
    pub experiment: String,
    /// What the lens's device does that the experiment cannot be timed by.
    pub why: String,
}

/// The sizes of a run (`--quick`, the default or `--paper`, then the flags).
struct Sizes {
    entries: u64,
    ops: u64,
    budget: u64,
    /// Fig. 10's ranges: 1024 up by factors of 8 (in `--quick` from 64), those within
    /// half the index.
    ranges: Vec<u64>,
}

impl Sizes {
    fn new(a: &PioReproArgs) -> anyhow::Result<Sizes> {
        let (entries, ops, budget, first, last) = if a.base.quick {
            (8_000, 200, 256 << 10, 64, 512)
        } else if a.base.paper {
            (2_000_000, 50_000, 16 << 20, 1024, 512 << 10)
        } else {
            (150_000, 10_000, 512 << 10, 1024, 64 << 10)
        };
        let (entries, ops, budget) = a.sizes.sizes(entries, ops, budget, 128 << 10)?;
        let mut ranges = Vec::new();
        let mut r = first;
        while r <= last && r <= entries / 2 {
            ranges.push(r);
            r *= 8;
        }
        if ranges.is_empty() {
            ranges.push(first.min(entries / 2));
        }
        Ok(Sizes {
            entries,
            ops,
            budget,
            ranges,
        })
    }

    /// Fig. 9's pools: the paper's 1, 4 and 16 MB (of its 1-16 MB) as shares of the
    /// budget, at least 64 KiB (the cost model needs room for a pool and an OPQ).
    fn pools(&self) -> Vec<u64> {
        let mut p: Vec<u64> = [16, 4, 1]
            .iter()
            .map(|d| (self.budget / d).max(64 << 10))
            .collect();
        p.dedup();
        p
    }
}

/// The claims of a run saved as `repro-pio.json`, checked again by this build (`repro
/// all --resume`: the cells are kept, the checks and reasons are this build's).
pub(crate) fn recheck(json: &str) -> anyhow::Result<Vec<crate::repro::ClaimCheck>> {
    let r: PioRepro = serde_json::from_str(json)?;
    Ok(paper::check(&r))
}
