//! `flashix repro bulk --out DIR`: the bulk index thesis's Chapter 6 (Lehtonen 2014) on this
//! machine's disk (O_DIRECT) and on the simulated SSD, printed beside the thesis's claims and
//! saved to `DIR/repro-bulk.json`. Its figures are plots: only the numbers its text gives can
//! be compared (docs/papers.md, Bulk index), and each is checked
//! against the cells that measure it ([`ClaimCheck`]).
//!
//! Setup (§6.1): 450,000 initial keys (uniform over u64) put into the bulk index in ONE bulk
//! insertion (every range of size M but the last), a 128 KiB memory budget, the faithful
//! bulk index (no differential layer) with an append-only main file (no GC, as the thesis),
//! M ∈ {1024, 2048, 4096}; the LA-tree with 16 KiB nodes (one node a page) gets the same
//! initial keys by its bulk load and the inserted keys one by one in ascending order. Each
//! insert cell starts from a copy of the initial index (not timed) and ends with a flush and
//! a close (a checkpoint), which are timed and counted: the thesis "flushed the data to disk
//! at the end of the experiment".
//!
//! - E1 (Fig. 6.1): 50,000 keys in elementary bulks of b keys at random positions.
//! - E2/E3 (Figs 6.2-6.3): b = 100 and 1000, totals of 1,000 to 200,000 keys.
//! - E4 (Fig. 6.4): range searches [L, H] of exactly N keys from a random initial key,
//!   averaged over `--searches` (the thesis's 2000).
//! - E5 (Fig. 6.5): range deletes of N keys, each from the same initial state (the bulk index
//!   is rewound to a snapshot between deletes: `experiment::SerialBulkIndex::restore`), averaged
//!   over `--deletes` (the thesis's 2000); besides the thesis's N, N = kM and kM + 1 for
//!   k ∈ {1, 2, 4}, where the thesis says the time oscillates (kM leaves M keys in the two
//!   boundary ranges: one write; kM + 1 leaves M − 1: a neighbour read and merge).
//! - Ablations (§5.6): E1 at b = 100 and 1000 with each switch off (`batch_writes`,
//!   `batch_reads`, `batch_ranges`), with freed ranges reused (`append_only` off), with the
//!   default differential layer (`delta_bytes` None), and with that layer fed the keys one
//!   by one as the LA-tree is.
//! - R2 (repeated bulks, notes §3.4): successive bulk insertions into one index, each
//!   followed by a checkpoint, with every switch on, without `batch_ranges` (the index
//!   deteriorates into ranges of M + 1: the share of ranges of exactly M), and with freed
//!   space reused (live against allocated pages); on this disk and on a small simulated SSD
//!   (48 MiB of NAND) where append-only runs out of space and reuse makes the FTL erase,
//!   copying pages when the freed space is not trimmed.
//! - E1 again on the simulated SSD (`SimSsdConfig::with_ftl`: page-level and FAST FTLs),
//!   M = 2048, with its erases and garbage-collection copies; times there are the
//!   simulator's NAND time (one chip: no parallelism between requests).
//!
//! Differences from the thesis, stated in the output: tuples are 16 bytes here (8 in the
//! thesis), so M = 1024 here has the thesis's M = 2048 range bytes; times are wall time of
//! the real I/O and CPU (the thesis replayed I/O traces); the WAL is written; the LA-tree's
//! budget is one pool (the thesis split it 3/4 LRU cache and 1/4 node cache).
//!
//! The files: this one holds the arguments ([`BulkReproArgs`]) and the records of
//! `repro-bulk.json` ([`BulkRepro`], [`Cell`]); `run.rs` runs the experiments ([`run`]),
//! `paper.rs` holds the thesis's claims and checks them against the cells, `print.rs`
//! prints the tables ([`print()`]).

mod paper;
mod print;
mod run;

use super::common::{PaperHelp, ReproArgs};
pub use super::ClaimCheck;
pub use print::print;
pub use run::{bulk_keys, initial_keys, run};

use serde::Serialize;

/// The bulk index's page size (the LA-tree's is its 16 KiB node).
const PAGE: usize = 4096;
/// The LA-tree's node and page size (thesis §6.1).
const LATREE_NODE: usize = 16 << 10;
/// The memory budget of both indexes (thesis §6.1: 128 kB).
const BUDGET: u64 = 128 << 10;

/// The help texts of `flashix repro bulk`'s shared arguments.
#[derive(Debug, Clone)]
pub struct Help;

impl PaperHelp for Help {
    const OUT: &'static str = "Where `repro-bulk.json` goes";
    const DIR: &'static str = "Where the indexes are built (default: OUT/repro-bulk-data)";
    const QUICK: &'static str =
        "Small sizes (a test): 45,000 initial keys, fewer cells, searches and \
        deletes; the claims are printed with their figures, not judged";
    const PAPER: &'static str =
        "The thesis's sizes (the default; accepted so that every `repro` takes \
        `--paper`)";
    const ONLY: &'static str =
        "Run only these parts: insert (E1-E3), E4, E5, ablation, R2, ssd (E1 \
        and R2 on the simulated SSDs); default all";
    const SEED: &'static str = "Seed of keys and positions";
}

/// Arguments of `flashix repro bulk`.
#[derive(clap::Args, Debug, Clone)]
pub struct BulkReproArgs {
    // --out, --dir, --quick, --paper, --only, --seed.
    #[command(flatten)]
    pub base: ReproArgs<Help>,
    /// Range searches averaged per size in E4 (default: the thesis's 2000; 50 with --quick).
    #[arg(long)]
    pub searches: Option<u64>,
    /// Range deletes averaged per size in E5 (default: the thesis's 2000; 50 with --quick).
    #[arg(long)]
    pub deletes: Option<u64>,
    /// Runs of each insert cell on this disk, the median reported (default 3; 1 with
    /// --quick); a simulated SSD's time is deterministic: one run.
    #[arg(long)]
    pub reps: Option<u32>,
}

/// One measured cell.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
pub struct Cell {
    /// `E1`..`E5`, `ablation`, `R2`.
    pub experiment: String,
    /// `bulk` or `latree`.
    pub engine: String,
    /// The bulk index's range size (the LA-tree's cells carry the first M; it has none).
    pub m: u32,
    /// Elementary bulk size (E1-E3, ablations, R2), keys per search or delete (E4, E5).
    pub b: u64,
    /// Keys inserted (E1-E3, ablations, R2), operations averaged (E4, E5).
    pub n: u64,
    /// Bulk insertions (R2; 1 elsewhere).
    pub bulks: u64,
    /// Seconds of the whole cell (E4, E5: of its `n` operations; [`Cell::per_op`] divides);
    /// on a simulated SSD the simulator's NAND time.
    pub seconds: f64,
    /// Seconds of every run of an insert cell on this disk (`--reps`); the cell is the
    /// median run.
    pub runs: Vec<f64>,
    /// Device pages (the engine's page: 4 KiB for the bulk index, 16 KiB for the LA-tree),
    /// requests (sequential: starting where the previous one of its kind ended) and KiB, of
    /// the whole cell.
    pub pages_read: u64,
    pub read_requests: u64,
    pub read_kib: u64,
    pub sequential_reads: u64,
    pub random_reads: u64,
    pub pages_written: u64,
    pub write_requests: u64,
    pub write_kib: u64,
    pub sequential_writes: u64,
    pub random_writes: u64,
    /// Ranges the bulk insertions read and rewrote (bulk index).
    pub ranges_affected: u64,
    /// The bulk index after the cell: its ranges, those of exactly M tuples, its live pages
    /// and the pages its main file spans (allocated).
    pub ranges: u64,
    pub ranges_of_size_m: u64,
    pub live_pages: u64,
    pub allocated_pages: u64,
    /// A §5.6 switch turned off or another setting (ablations, R2), and/or the simulated SSD
    /// a cell ran on (`ssd-page`, `ssd-fast`, `ssd-small`); empty: this machine's disk with
    /// every switch on.
    pub variant: String,
    /// Simulated SSD only: block erases and pages copied by garbage collection.
    pub erases: u64,
    pub gc_page_copies: u64,
    /// What stopped a cell early (R2: the device ran out of space), empty otherwise.
    pub note: String,
}

impl Cell {
    /// Operations the cell's totals are averaged over in the tables: `n` in E4 and E5
    /// (searches, deletes), 1 elsewhere.
    pub fn ops(&self) -> u64 {
        if matches!(self.experiment.as_str(), "E4" | "E5") {
            self.n.max(1)
        } else {
            1
        }
    }

    /// A total of the cell per operation ([`Cell::ops`]).
    pub fn per_op(&self, total: u64) -> f64 {
        total as f64 / self.ops() as f64
    }

    /// Seconds per operation ([`Cell::ops`]).
    pub fn secs(&self) -> f64 {
        self.seconds / self.ops() as f64
    }

    fn on_ssd(&self) -> bool {
        self.variant.starts_with("ssd-")
    }

    /// The device the cell ran on.
    fn device(&self) -> &str {
        if self.on_ssd() {
            self.variant.split(' ').next().unwrap_or("ssd")
        } else {
            "disk"
        }
    }
}

/// The whole reproduction.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct BulkRepro {
    pub initial_keys: u64,
    pub budget_bytes: u64,
    pub ms: Vec<u32>,
    pub searches: u64,
    pub deletes: u64,
    /// The simulated SSDs: `name: geometry, FTL, latencies`.
    pub ssds: Vec<String>,
    /// Runs per insert cell on this disk (the median reported).
    pub reps: u32,
    /// A `--quick` run: its claims are printed with their figures, not judged.
    #[serde(default)]
    pub quick: bool,
    /// Wall seconds of the whole run.
    pub wall_seconds: f64,
    pub cells: Vec<Cell>,
    /// The thesis's printed claims and what the cells say of each.
    pub claims: Vec<ClaimCheck>,
}

/// The sizes of a run (`--quick` or the default).
struct Sizes {
    initial: u64,
    ms: Vec<u32>,
    e1_total: u64,
    e1_b: Vec<u64>,
    e23_totals: Vec<u64>,
    e4_n: Vec<u64>,
    searches: u64,
    deletes: u64,
    /// R2: bulks of keys at b = 100.
    r2_bulks: u64,
    r2_keys: u64,
    /// The M of the simulated-SSD and R2 runs.
    m_ssd: u32,
    /// Runs per insert cell on this disk.
    reps: u32,
}

impl Sizes {
    fn new(a: &BulkReproArgs) -> Sizes {
        let mut z = if a.base.quick {
            Sizes {
                initial: 45_000,
                ms: vec![1024, 2048],
                e1_total: 5_000,
                e1_b: vec![1, 100, 1000],
                e23_totals: vec![1_000, 5_000],
                e4_n: vec![1000, 5000],
                searches: 50,
                deletes: 50,
                r2_bulks: 4,
                r2_keys: 2_000,
                m_ssd: 1024,
                reps: 1,
            }
        } else {
            Sizes {
                initial: 450_000,
                ms: vec![1024, 2048, 4096],
                e1_total: 50_000,
                e1_b: vec![1, 10, 50, 100, 300, 1000, 2000, 5000, 10000],
                e23_totals: vec![1_000, 5_000, 10_000, 30_000, 50_000, 100_000, 200_000],
                e4_n: vec![1000, 2000, 5000, 10000, 20000],
                searches: 2000,
                deletes: 2000,
                r2_bulks: 20,
                r2_keys: 10_000,
                m_ssd: 2048,
                reps: 3,
            }
        };
        if let Some(s) = a.searches {
            z.searches = s.max(1);
        }
        if let Some(d) = a.deletes {
            z.deletes = d.max(1);
        }
        if let Some(r) = a.reps {
            z.reps = r.max(1);
        }
        z
    }
}

/// The claims of a run saved as `repro-bulk.json`, checked again by this build (`repro
/// all --resume`: the cells are kept, the checks and reasons are this build's).
pub(crate) fn recheck(json: &str) -> anyhow::Result<Vec<crate::repro::ClaimCheck>> {
    let r: BulkRepro = serde_json::from_str(json)?;
    Ok(paper::check(&r))
}
