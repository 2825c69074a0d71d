//! `flashix repro fbx --out DIR`: the FBX-tree paper's §3.1 and §5 (Luo, "FBX-tree") on this
//! machine's disk (O_DIRECT) and on the simulated SSD, each result beside the paper's words,
//! saved to `DIR/repro-fbx.json`. The paper's figures are plots with no values in the text:
//! only its phrases and ratios can be compared (docs/papers.md,
//! FBX-tree), and each is checked against the cells that measure it ([`ClaimCheck`]).
//!
//! Setup (§5): 4 KiB pages, leaf order 100 for both trees; the inner order is the paper's 500
//! capped by what a 4 KiB page holds (FBX: 238 units of 17 bytes), and the B+-tree baseline
//! gets the same caps (`BTreeOptions::orders`), so the comparison is like for like. Keys are
//! uniform random u64 (the paper's records are "calculated to fit" a Bx key: uniform
//! enough), values 8 bytes. Both trees get the same memory budget (`--budget`, 4 MiB): the
//! B+-tree's is all pool; the FBX-tree takes its log buffer from it (a quarter: the paper's
//! 1 MB of 256 pages) and the rest is its pool. Every cell runs on its own index directory;
//! insert cells end with a flush and a close (the B+-tree's dirty pages are written then),
//! which are timed and counted.
//!
//! - **R1 (§3.1, Fig. 2):** `--records` inserts from empty into the Random B-Tree (the
//!   in-place B+-tree), the Sequential B-Tree (FBX with `leaf_logging: false`: every node
//!   appended whole, and no segment cleaning: the paper reclaimed no space) and the
//!   FBX-tree. The paper's file is the pages appended; ours is also given (segments whose
//!   pages are all dead are reused after a checkpoint).
//! - **R2 (§5.1, Fig. 7):** then `--searches` searches of inserted keys on each; the mean
//!   log-list length a search reads (`leaf_rebuild_pages / leaf_rebuilds`) explains the
//!   search ratio (§4.1: R_rdm × ((H − 1) + L_i)).
//! - **R3 (§5.1, Fig. 8):** mixes of 50–90% inserts (the rest searches) on copies of R2's
//!   indexes, at `--records` and twice that (R2's indexes with as many inserts again).
//! - **R4 (§5.2):** the B+-tree with twice the budget (the paper's 8 MiB) on the
//!   write-intensive mixes.
//! - **R5 (§5.2, Fig. 9):** moving-object range queries (`mobject`, 10% windows) over the
//!   FBX-tree with log buffers of 16, 64 and 256 pages (the pool's share held at the
//!   default's: the budget moves with the log buffer), without clustering, without
//!   Algorithm 1, and without either (the "original"); a quarter of the moving-object
//!   operations.
//! - **R6 (§5.3, Fig. 10):** the clean policies (never, naive K = 8, 16, 32, LTN, AC 64) on
//!   mixes of 50, 70 and 90% inserts, on copies of R2's FBX index
//!   (`experiment::open_adjusted` sets the policy: it is not part of the format).
//! - **R7 (§5.3, Fig. 11):** the AC threshold from 10 to 150 on the same mixes.
//! - **R8 (§4.4, Theorems 1–2):** each policy's empirical competitive ratio against the
//!   offline optimum (`cost::logclean::offline_opt`) on random and adversarial operation
//!   sequences in the paper's abstract model.
//! - **R9 (§5):** NTT memory per node (the paper's 14 bytes; ours) and per GiB of data file.
//! - **R10 (extension):** the Bx-tree (mobject over the B+-tree) against the FBX-tree
//!   (mobject over FBX) on the `mo-*` workloads, `--objects` objects, half the
//!   moving-object operations per workload.
//! - **SSD:** R1 and R2 at `--ssd-records` on the simulated OCZ (`SsdProfile::Ocz`, the
//!   paper's Table 1 device as `flashix probe --sim ocz` calibrates it, with NAND sized to
//!   the records so that a B+-tree's rewrites fill it several times and garbage collection
//!   runs),
//!   with the budget scaled by `ssd-records / records` so that memory holds the same share
//!   of the index as on the disk: programs, erases, garbage-collection copies, the
//!   most-erased block, and the simulator's time. The Sequential B-Tree runs with the
//!   segment cleaner there (it would fill the device).
//!
//! Every cell also carries a time computed from its I/O counts and the paper's Table 1 OCZ
//! device ([`OCZ`]: 18,000 / 7,000 / 17,000 / 1,100 IO/s for sequential read / sequential
//! write / random read / random write), so that the 2009 ratios can be set beside today's
//! disk: a request that does not start where the previous one ended costs its first page at
//! the random rate, the rest of its pages at the sequential rate. The WAL (which the paper
//! did not have) is not in that time; its bytes are reported.
//!
//! The files: this one holds the arguments ([`FbxReproArgs`]) and the records of
//! `repro-fbx.json` ([`FbxRepro`], [`Cell`]); `run.rs` runs the experiments ([`run`]),
//! `paper.rs` holds the paper's claims and checks them against the cells, `print.rs` prints
//! the tables ([`print()`]).

mod paper;
mod print;
mod run;

use super::common::{PaperHelp, ReproArgs};
pub use super::ClaimCheck;
pub use print::print;
pub use run::run;

use serde::Serialize;

/// The device name of the cells on the simulated OCZ (`SsdProfile::Ocz`).
pub const SSD: &str = "ssd-ocz";

/// The page size of both trees (§5: 4 KB).
const PAGE: usize = 4096;
/// Leaf order of both trees (§5: 100).
const LEAF_ORDER: u32 = 100;
/// The inner order of both trees: the paper's 500 capped by what a 4 KiB page of FBX's
/// 17-byte units holds.
const INNER_ORDER: u32 = 238;

/// Per-page costs of the paper's Table 1 OCZ SSD, in microseconds: 1 / IO/s.
pub struct OczCosts {
    pub seq_read_us: f64,
    pub seq_write_us: f64,
    pub rnd_read_us: f64,
    pub rnd_write_us: f64,
}

/// FBX Table 1, OCZ 64 GB: 18,000 / 7,000 / 17,000 / 1,100 IO/s.
pub const OCZ: OczCosts = OczCosts {
    seq_read_us: 1e6 / 18_000.0,
    seq_write_us: 1e6 / 7_000.0,
    rnd_read_us: 1e6 / 17_000.0,
    rnd_write_us: 1e6 / 1_100.0,
};

impl OczCosts {
    /// Seconds the OCZ would take for `pages` pages read in requests of which `random` did
    /// not start where the previous one ended (and the same for writes).
    pub fn seconds(&self, reads: u64, random_reads: u64, writes: u64, random_writes: u64) -> f64 {
        let r = random_reads as f64 * self.rnd_read_us
            + reads.saturating_sub(random_reads) as f64 * self.seq_read_us;
        let w = random_writes as f64 * self.rnd_write_us
            + writes.saturating_sub(random_writes) as f64 * self.seq_write_us;
        (r + w) / 1e6
    }
}

/// The help texts of `flashix repro fbx`'s shared arguments.
#[derive(Debug, Clone)]
pub struct Help;

impl PaperHelp for Help {
    const OUT: &'static str = "Where `repro-fbx.json` goes";
    const DIR: &'static str = "Where the indexes are built (default: OUT/repro-fbx-data)";
    const QUICK: &'static str =
        "Small sizes (a test): 20,000 records, few operations, 2,000 moving \
        objects; the claims are printed with their figures, not judged (but the \
        theorems')";
    const PAPER: &'static str =
        "The paper's sizes: 10^6 records (R3 also at 2·10^6), 100,000 searches, \
        20,000 operations a mix, every AC threshold from 10 to 150, 100,000 \
        moving objects (several times the default's run time). The default halves \
        the records and trims the rest";
    const ONLY: &'static str =
        "Run only these parts (R1..R10, ssd; R1 and R2 run together and R3, R4, \
        R6 and R7 start from their indexes); default all";
    const SEED: &'static str = "Seed of keys and workloads";
}

/// Arguments of `flashix repro fbx`.
#[derive(clap::Args, Debug, Clone)]
pub struct FbxReproArgs {
    // --out, --dir, --quick, --paper, --only, --seed.
    #[command(flatten)]
    pub base: ReproArgs<Help>,
    /// Records inserted in R1/R2 (default 500,000; the paper's 10^6 with --paper; R3 also
    /// runs at twice this).
    #[arg(long)]
    pub records: Option<u64>,
    /// Searches in R2 (default 50,000; the paper's 10^6 takes minutes on the FBX-tree).
    #[arg(long)]
    pub searches: Option<u64>,
    /// Operations of each mix cell (R3, R4, R6, R7; default 10,000).
    #[arg(long)]
    pub mix_ops: Option<u64>,
    /// Moving objects in R5 and R10 (default 50,000).
    #[arg(long)]
    pub objects: Option<u64>,
    /// Moving-object operations: R10 runs half of them per workload, R5 a quarter
    /// (default 1,000).
    #[arg(long)]
    pub mo_ops: Option<u64>,
    /// Records inserted on the simulated SSD (default 100,000).
    #[arg(long)]
    pub ssd_records: Option<u64>,
    /// The memory budget of every index (default 4 MiB; quick: 256 KiB).
    #[arg(long)]
    pub budget: Option<String>,
}

/// One measured cell.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
pub struct Cell {
    /// `R1`..`R10`.
    pub experiment: String,
    /// `btree` (the Random B-Tree), `seq-btree` (the Sequential B-Tree), `fbx`; `bx` and
    /// `fbx-tree` (moving objects).
    pub subject: String,
    /// A setting that differs from the defaults (a clean policy, a log buffer, a pool),
    /// empty otherwise.
    pub variant: String,
    /// `disk` (this machine, O_DIRECT) or [`SSD`] (the simulated OCZ).
    pub device: String,
    /// What was measured: `insert`, `search`, `mix`, or a moving-object workload.
    pub op: String,
    /// Records (objects) in the index when the cell started.
    pub records: u64,
    /// Share of inserts (updates) in a mix, %.
    pub insert_pct: u32,
    pub ops: u64,
    /// Wall seconds on this disk; the simulator's NAND time on the simulated SSD.
    pub seconds: f64,
    /// Seconds on the paper's OCZ computed from the I/O counts ([`OCZ`]).
    pub ocz_seconds: f64,
    /// Median and 99th percentile latency (moving-object cells), microseconds.
    pub p50_us: f64,
    pub p99_us: f64,
    /// Device pages and requests, and the requests that did not start where the previous
    /// one ended.
    pub pages_read: u64,
    pub read_requests: u64,
    pub random_reads: u64,
    pub pages_written: u64,
    pub write_requests: u64,
    pub random_writes: u64,
    /// Bytes of WAL written (not in the OCZ time).
    pub wal_bytes: u64,
    /// The data file after the cell: pages it spans and pages live (FBX; the B+-tree's
    /// file has no dead pages).
    pub file_pages: u64,
    pub live_pages: u64,
    /// Leaf rebuilds by reads and the log pages they read (FBX): their ratio is the mean
    /// log-list length a read met.
    pub leaf_rebuilds: u64,
    pub leaf_rebuild_pages: u64,
    /// Mean and longest log list over all leaves after the cell (FBX).
    pub mean_list_len: f64,
    pub max_list_len: u64,
    /// Cleans (FBX) in the cell.
    pub cleans: u64,
    /// Tree height and nodes after the cell (the B+-tree's: its leaves).
    pub height: u64,
    pub nodes: u64,
    /// NTT memory (FBX): ours, and the paper's 14 bytes a node.
    pub ntt_bytes: u64,
    pub ntt_paper_bytes: u64,
    /// Simulated SSD: NAND pages programmed, blocks erased, pages copied by garbage
    /// collection, and the most erases of one block.
    pub programs: u64,
    pub erases: u64,
    pub gc_page_copies: u64,
    pub max_erase_count: u64,
    /// Results per query (moving-object cells).
    pub results_per_query: f64,
}

impl Cell {
    /// Operations per second.
    pub fn ops_per_s(&self) -> f64 {
        if self.seconds > 0.0 {
            self.ops as f64 / self.seconds
        } else {
            0.0
        }
    }

    /// Microseconds per operation on the OCZ.
    pub fn ocz_us(&self) -> f64 {
        self.ocz_seconds * 1e6 / self.ops.max(1) as f64
    }

    /// Log pages a read rebuilt on average (FBX), 0 without rebuilds.
    pub fn pages_per_rebuild(&self) -> f64 {
        if self.leaf_rebuilds == 0 {
            0.0
        } else {
            self.leaf_rebuild_pages as f64 / self.leaf_rebuilds as f64
        }
    }
}

/// One policy's empirical competitive ratios in the abstract model (R8).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct RatioRow {
    pub policy: String,
    /// The theorem's bound (naive: K; LTN: 3; AC: √K/2 + 1/3).
    pub bound: f64,
    /// Over the random sequences: mean and largest ratio.
    pub mean_random: f64,
    pub max_random: f64,
    /// The largest over the adversarial sequences, and which one.
    pub max_adversarial: f64,
    pub adversary: String,
}

/// The whole reproduction.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct FbxRepro {
    pub records: u64,
    pub searches: u64,
    pub mix_ops: u64,
    pub objects: u64,
    pub ssd_records: u64,
    pub budget_bytes: u64,
    pub leaf_order: u32,
    pub inner_order: u32,
    /// The simulated SSD: geometry, FTL, latencies.
    pub ssd: String,
    /// A `--quick` run: its claims are printed with their figures, not judged (but the
    /// theorems', whose sequences do not depend on the sizes).
    #[serde(default)]
    pub quick: bool,
    /// Wall seconds of the whole run.
    pub wall_seconds: f64,
    pub cells: Vec<Cell>,
    pub ratios: Vec<RatioRow>,
    /// The paper's printed claims and what the cells say of each.
    pub claims: Vec<ClaimCheck>,
}

/// The sizes of a run (`--quick` or the default, then the flags).
struct Sizes {
    records: u64,
    searches: u64,
    mix_ops: u64,
    objects: u64,
    mo_ops: u64,
    ssd_records: u64,
    budget: u64,
    /// AC thresholds of R7.
    thresholds: Vec<u32>,
}

impl Sizes {
    fn new(a: &FbxReproArgs) -> anyhow::Result<Sizes> {
        let mut z = if a.base.quick {
            Sizes {
                records: 20_000,
                searches: 2_000,
                mix_ops: 2_000,
                objects: 2_000,
                mo_ops: 100,
                ssd_records: 5_000,
                budget: 256 << 10,
                thresholds: vec![10, 60, 150],
            }
        } else if a.base.paper {
            Sizes {
                records: 1_000_000,
                searches: 100_000,
                mix_ops: 20_000,
                objects: 100_000,
                mo_ops: 2_000,
                ssd_records: 200_000,
                budget: 4 << 20,
                thresholds: (1..=15).map(|i| i * 10).collect(),
            }
        } else {
            Sizes {
                records: 500_000,
                searches: 50_000,
                mix_ops: 10_000,
                objects: 50_000,
                mo_ops: 1_000,
                ssd_records: 100_000,
                budget: 4 << 20,
                thresholds: vec![10, 30, 50, 60, 70, 90, 120, 150],
            }
        };
        let at_least = |v: Option<u64>, d: u64, min: u64| v.map_or(d, |v| v.max(min));
        z.records = at_least(a.records, z.records, 1000);
        z.searches = at_least(a.searches, z.searches, 1);
        z.mix_ops = at_least(a.mix_ops, z.mix_ops, 1);
        z.objects = at_least(a.objects, z.objects, 100);
        z.mo_ops = at_least(a.mo_ops, z.mo_ops, 4);
        z.ssd_records = at_least(a.ssd_records, z.ssd_records, 1000);
        if let Some(b) = &a.budget {
            z.budget = crate::units::parse_size(b)?.max(64 << 10);
        }
        Ok(z)
    }
}

/// The claims of a run saved as `repro-fbx.json`, checked again by this build (`repro
/// all --resume`: the cells are kept, the checks and reasons are this build's).
pub(crate) fn recheck(json: &str) -> anyhow::Result<Vec<crate::repro::ClaimCheck>> {
    let r: FbxRepro = serde_json::from_str(json)?;
    Ok(paper::check(&r))
}
