//! `flashix repro fdtree --out DIR`: the FD-tree paper's §5 experiments (Li et al., VLDB
//! 2010; Figs. 7, 10, 11, 12 and the cost model of §4 / Appendix C) run by the bench
//! suite's runner ([`crate::runner::run_bench`]: bulk load at 0.7, then aging by App. D's
//! rule; the same keys, the same operation stream and the same memory budget for every
//! engine) on three lenses, each result beside the paper's numbers, saved to
//! `DIR/repro-fdtree.json`:
//!
//! - `this disk`: the machine's disk with O_DIRECT, wall time;
//! - `simulated mtron` and `simulated intel-x25m`: the same workloads on
//!   `DeviceSpec::SimulatedSsd` of the named profile ([`flashix::sim::SsdProfile`]), its
//!   time the simulator's device time of the measured phase (`Record::sim_seconds`). The
//!   NAND is sized for the index ([`nand_bytes`]). The cost models tune for, and predict
//!   with, the profile `flashix probe --sim` measures on a small simulated device
//!   ([`crate::probe::sim::run_sim_probe`]), saved as `OUT/sim-profile-NAME.json`. The
//!   WAL is a file beside the device, so simulated time leaves it out (wall time on this
//!   disk includes its appends and the final sync): a phase whose writes all stay in the
//!   buffer pool, the head tree or a memtable costs no simulated time, and its speedups are
//!   not given.
//!
//! Known limit: the FD-tree's head tree (512 KiB, App. D) holds 32,768 entries, so a
//! measured phase with fewer writes than that never merges (nor does the LSM-tree's
//! first component): the FD-tree's and LSM's amortized insertion cost shows only with
//! `--ops` well above it (`--paper`), and in the deamortization runs.
//!
//! Engines: fdtree, btree, lsm, bftl (App. D), one budget (`--budget`). Differences from
//! the paper: 4 KiB pages (the paper's 2 KiB), 8-byte keys and values, BFTL with its
//! default compaction threshold (the paper tuned c = 11 on the Mtron, 2 on the Intel),
//! and sizes thousands of times smaller (the paper's index is 10^9 entries with a 16 MB
//! pool: 0.2%).
//!
//! - **Fig. 10** (`fig10`): overall time (the 50% search / 50% insert workload of §5.2,
//!   `mix-50`) at `--entries` / 4 and `--entries`.
//! - **Fig. 11** (`fig11`): range scans by the entries they cover (`range-N`).
//! - **Fig. 12** (`fig12`): O-Search, O-Insert, O-Delete, O-Update, W-Search, W-Insert,
//!   W-Delete (App. D's mixes).
//! - **§3.4 / §5.4 Fig. 7** (`deamort`): `mix-50` with `--deamort-ops` operations on the
//!   FD-tree with and without deamortized merges: mean, p99.9 and worst latency.
//! - **§5.2 / App. C** (`model`): the cost model's search and insertion time for the
//!   FD-tree's k and levels (`Record::model`) against O-Search and O-Insert as measured.
//!
//! The files: this one holds the arguments ([`FdtreeReproArgs`]), the records of
//! `repro-fdtree.json` ([`FdtreeRepro`], [`Cell`]) and the sizes; `run.rs` runs the
//! experiments ([`run`]), `paper.rs` holds the paper's claims and checks them against the
//! cells, `print.rs` prints the tables ([`print()`]).

mod paper;
mod print;
mod run;

pub use super::common::{CellId, Lens, LensInfo, Measured};
use super::common::{PaperHelp, ReproArgs, SizeArgs, SizeHelp};
pub use super::ClaimCheck;
pub use print::print;
pub use run::run;

use crate::output::report::ModelPrediction;
use serde::Serialize;

/// The help texts of `flashix repro fdtree`'s shared arguments.
#[derive(Debug, Clone)]
pub struct Help;

impl PaperHelp for Help {
    const OUT: &'static str = "Where `repro-fdtree.json` (and the device profiles) go";
    const DIR: &'static str = "Where the indexes are built (default: OUT/repro-fdtree-data)";
    const QUICK: &'static str = "Small sizes (a test): 8,000 entries, 200 operations a \
        workload; the claims are printed with their figures, not judged";
    const PAPER: &'static str =
        "Larger sizes: 2,000,000 entries, 50,000 operations a workload, 16 MiB \
        budget, 200,000 operations for deamortization (the B+-tree's updates on \
        the simulated Mtron are slow in wall time: expect a long run). The \
        default is 200,000 entries, 10,000 operations, 1 MiB and 100,000 for \
        deamortization (the runner's BUFFER_RULE stretches the buffered engines' \
        write phases)";
    const ONLY: &'static str =
        "Run only these parts (fig10, fig11, fig12, deamort, model); default \
        all";
    const SEED: &'static str = "Seed of keys and workloads";
}

impl SizeHelp for Help {
    const ENTRIES: &'static str =
        "Entries of the largest index (Fig. 10 also runs a quarter of it)";
    const BUDGET: &'static str = "The memory budget of every index (default 1 MiB; quick: 128 KiB)";
    const LENSES: &'static str =
        "Lenses (disk, mtron, intel-x25m); default all three (with --quick: disk, mtron)";
}

/// Arguments of `flashix repro fdtree`.
#[derive(clap::Args, Debug, Clone)]
pub struct FdtreeReproArgs {
    // --out, --dir, --quick, --paper, --only, --seed.
    #[command(flatten)]
    pub base: ReproArgs<Help>,
    // --entries, --ops, --budget, --lenses.
    #[command(flatten)]
    pub sizes: SizeArgs<Help>,
    /// Operations of the deamortization runs (enough inserts for a merge of the lower
    /// levels).
    #[arg(long)]
    pub deamort_ops: Option<u64>,
}

/// NAND bytes of a simulated SSD for an index of `entries`: 16-byte entries, half again
/// for aging, twice over for the FD-tree's and LSM's merges (old and new level both
/// live), and room for the FTL's spare blocks and garbage collection; at least 64 MiB.
pub fn nand_bytes(entries: u64) -> u64 {
    (entries.saturating_mul(16).saturating_mul(12)).max(64 << 20)
}

/// One measured cell: an engine, a workload, a lens.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
pub struct Cell {
    /// Experiment, lens, engine, variant, workload.
    #[serde(flatten)]
    pub id: CellId,
    /// The index size the suite asked for (`BenchConfig::entries`: the bulk load); the
    /// same for every engine of a size.
    pub size: u64,
    /// The measured phase: sizes, time, latencies, I/O per operation.
    #[serde(flatten)]
    pub m: Measured,
    /// The engine's parameters (`k=.. levels=..`).
    pub engine_params: String,
    /// The FD-tree cost model's prediction for this index (FD-tree cells).
    pub model: Option<ModelPrediction>,
}

/// The whole reproduction.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct FdtreeRepro {
    pub entries: u64,
    pub ops: u64,
    pub deamort_ops: u64,
    pub budget_bytes: u64,
    pub page_size: usize,
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

/// The sizes of a run (`--quick`, the default or `--paper`, then the flags).
struct Sizes {
    entries: u64,
    ops: u64,
    deamort_ops: u64,
    budget: u64,
    /// Entries of Fig. 11's ranges.
    ranges: Vec<u64>,
}

impl Sizes {
    fn new(a: &FdtreeReproArgs) -> anyhow::Result<Sizes> {
        let mut z = if a.base.quick {
            Sizes {
                entries: 8_000,
                ops: 200,
                deamort_ops: 1_000,
                budget: 128 << 10,
                ranges: vec![10, 300],
            }
        } else if a.base.paper {
            Sizes {
                entries: 2_000_000,
                ops: 50_000,
                deamort_ops: 200_000,
                budget: 16 << 20,
                ranges: vec![10, 100, 1000, 10_000],
            }
        } else {
            Sizes {
                entries: 200_000,
                ops: 10_000,
                deamort_ops: 100_000,
                budget: 1 << 20,
                ranges: vec![10, 1000, 10_000],
            }
        };
        (z.entries, z.ops, z.budget) = a.sizes.sizes(z.entries, z.ops, z.budget, 64 << 10)?;
        z.deamort_ops = a.deamort_ops.map_or(z.deamort_ops, |n| n.max(10));
        Ok(z)
    }
}

/// The claims of a run saved as `repro-fdtree.json`, checked again by this build (`repro
/// all --resume`: the cells are kept, the checks and reasons are this build's).
pub(crate) fn recheck(json: &str) -> anyhow::Result<Vec<crate::repro::ClaimCheck>> {
    let r: FdtreeRepro = serde_json::from_str(json)?;
    Ok(paper::check(&r))
}
