//! `flashix repro dipl --out DIR`: the experiments of the d-IPL paper (Na, Lee, Moon, TKDE
//! 2011, §6.2) on the raw NAND simulator, printed beside the paper's numbers and saved to
//! `DIR/repro-dipl.json`.
//!
//! Every index runs on a memory-backed [`flashix::sim::Nand`] of 2 KiB pages and 128 KiB
//! blocks with 8 KiB nodes (§6.1), built through the engines directly so that global
//! cleansing (§5.3) can be invoked. Counts are the NAND's: page reads (read operations),
//! page writes (program operations, a log sector write counting as one, as the paper's
//! Table 5 does), block erases (including erases deferred to the next checkpoint, which the
//! paper's index has no notion of). Write amplification is Eq. (1):
//! `WA = (C_p * B_p) / (C_n * B_n)`, `C_n` the node writes the buffer requested (dirty
//! frames evicted; the paper's Table 5 "index nodes written"). That `C_n` falls with the
//! buffer size as fast as `C_p` does, so this WA hardly moves with the buffer, while the
//! paper's Table 2 falls from 100 to 500 frames; the paper's numbers fit a `C_n` that does
//! not depend on the buffer, so the JSON and the table also give Eq. (1) with one node write
//! request per insert (`write_amplification_per_insert`).
//!
//! - Fig. 12, Tables 1 and 2: one million random inserts of unique keys 1..=1,000,000,
//!   buffers of 100..=500 frames, IPL and d-IPL.
//! - Table 3: a million inserts mixed with deletions of inserted keys at 5:5, 7:3, 9:1
//!   (500 frames).
//! - Fig. 13: one million random searches on the indexes built for Fig. 12, then the same
//!   after a global cleansing (the read-optimised "(R)" indexes).
//! - Table 4: ghost nodes after the inserts at 500 frames.
//! - Table 5: 500,000 random inserts into d-IPL with 2, 4 and 8 KiB nodes and an 800 KB
//!   buffer.
//! - Table 6 (§6.3): a million random inserts into BFTL on a simulated SSD (2 KiB pages,
//!   128 KiB blocks, 30% over-provisioning) over the block-level FTL (FMAX), FAST and the
//!   page-level FTL, against d-IPL at 100 frames. Counts are the flash's: page reads
//!   (host reads and the FTL's copy reads), page programs (host writes and copies), block
//!   erases. The elapsed time is `reads x 80 us + writes x 200 us + erases x 1.5 ms`, the
//!   costs the paper's elapsed times fit exactly (solving its three BFTL rows for the
//!   three costs gives 80.0 us, 199.9 us and 1.505 ms, and they give its d-IPL time,
//!   16.86 min); the simulator's own time (bus transfer included) is in the JSON too.
//!   BFTL runs with the default `BftlOptions` (8 KiB nodes, a node-sized reservation
//!   buffer, c = 8 for 8 KiB nodes on 2 KiB pages) and a buffer pool of
//!   [`BFTL_POOL_PAGES`] pages: BFTL caches no nodes (the paper's 13-14.5 reads per
//!   insert are a whole node's pages at each of the three levels). Space usage is the
//!   pages the NTT names (live pages, whole or partly live) in 128 KiB blocks; d-IPL's is
//!   its blocks in use.
//!
//! The reproduction's files: this one holds the arguments ([`DiplReproArgs`]) and the
//! records of `repro-dipl.json` ([`DiplRepro`]); `run.rs` runs the experiments ([`run`]),
//! `paper.rs` holds the paper's published numbers, `print.rs` prints the tables beside
//! them ([`print()`]).

mod paper;
mod print;
mod run;

pub use print::print;
pub use run::run;

use serde::Serialize;
use std::path::PathBuf;

/// BFTL's buffer pool in the Table 6 runs, in pages: the pool's minimum (BFTL caches no
/// nodes; module doc).
pub const BFTL_POOL_PAGES: u64 = 4;

const PAGE: usize = 2048;
const PAGES_PER_BLOCK: u32 = 64;
const NAND_BLOCKS: u32 = 1024;

/// `flashix repro dipl` arguments.
#[derive(clap::Args, Debug, Clone)]
pub struct DiplReproArgs {
    /// Where `repro-dipl.json` goes.
    #[arg(long, default_value = "./bench-out")]
    pub out: PathBuf,
    /// Small sizes (a test, seconds): 10,000 keys, 5,000 searches, buffers of 8 and 16
    /// frames, Table 5's 800 KB scaled by keys / 1,000,000, 64 blocks for BFTL.
    #[arg(long, conflicts_with_all = ["paper", "keys", "searches", "frames", "bftl_blocks"])]
    pub quick: bool,
    /// The paper's sizes (the default; accepted so that every `repro` takes `--paper`).
    #[arg(long)]
    pub paper: bool,
    /// Keys inserted (the paper: 1,000,000). Table 5 inserts half as many.
    #[arg(long, default_value_t = 1_000_000)]
    pub keys: u64,
    /// Random searches of Fig. 13 (the paper: 1,000,000).
    #[arg(long, default_value_t = 1_000_000)]
    pub searches: u64,
    /// Buffer sizes in frames (the paper: 100,200,300,400,500).
    #[arg(long, default_value = "100,200,300,400,500", value_delimiter = ',')]
    pub frames: Vec<u32>,
    /// Seed of key orders.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// No progress bars.
    #[arg(long)]
    pub quiet: bool,
    /// IPL log area per block in bytes (default: `IplOptions`' 8 KiB, IPL's 16 sectors).
    #[arg(long = "ipl-log-area")]
    pub ipl_log_area: Option<u64>,
    /// Only the insert runs (Fig. 12, Tables 1, 2, 4) and searches: no Table 3, 5 or 6.
    #[arg(long = "only-insert")]
    pub only_insert: bool,
    /// Only Table 6 (BFTL over three FTLs, d-IPL at 100 frames).
    #[arg(long = "only-table6")]
    pub only_table6: bool,
    /// Erase blocks of BFTL's simulated SSD in Table 6 (30% of them over-provisioned).
    #[arg(long = "bftl-blocks", default_value_t = 1024)]
    pub bftl_blocks: u32,
    /// BFTL's compaction threshold c in Table 6 (default: `BftlOptions`' choice, 8).
    #[arg(long = "bftl-c")]
    pub bftl_c: Option<u32>,
    /// BFTL's buffer pool in pages in Table 6.
    #[arg(long = "bftl-pool-pages", default_value_t = BFTL_POOL_PAGES)]
    pub bftl_pool_pages: u64,
}

impl DiplReproArgs {
    /// The sizes a run uses: `--quick` replaces the paper's.
    fn resolved(&self) -> DiplReproArgs {
        let mut a = self.clone();
        if a.quick {
            a.keys = 10_000;
            a.searches = 5_000;
            // The IPL's and d-IPL's smallest buffer; the paper's 100..500 frames scaled by
            // the keys would be 2..10.
            a.frames = vec![8, 16];
            a.bftl_blocks = 64;
        }
        a
    }
}

/// Which index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Index {
    Ipl,
    Dipl,
}

impl Index {
    fn name(self) -> &'static str {
        match self {
            Index::Ipl => "ipl",
            Index::Dipl => "dipl",
        }
    }
}

/// One insert run (Fig. 12, Tables 1 and 2).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct InsertRecord {
    pub index: Index,
    pub buffer_frames: u32,
    pub reads: u64,
    pub writes: u64,
    pub erases: u64,
    pub node_splits: u64,
    pub block_splits: u64,
    pub block_cleansings: u64,
    pub write_amplification: f64,
    /// Eq. (1) with `C_n` = one node write request per insert (the reading of `C_n` under
    /// which the paper's Table 2 falls with the buffer size; see the module doc).
    pub write_amplification_per_insert: f64,
    pub node_reads: u64,
    pub node_writes: u64,
    pub blocks_in_use: u64,
    pub height: u64,
    /// The NAND's simulated time.
    pub sim_time_us: u64,
    pub seconds: f64,
}

/// One search run (Fig. 13).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct SearchRecord {
    pub index: Index,
    pub buffer_frames: u32,
    pub reads: u64,
    pub reads_after_global_cleansing: u64,
    /// The global cleansing's own cost.
    pub cleansing_reads: u64,
    pub cleansing_writes: u64,
    pub cleansing_erases: u64,
}

/// Table 3 row.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct MixRecord {
    pub index: Index,
    pub ratio: String,
    pub inserts: u64,
    pub deletes: u64,
    pub reads: u64,
    pub writes: u64,
    pub erases: u64,
    pub blocks: u64,
}

/// Table 4.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct GhostRecord {
    pub buffer_frames: u32,
    pub average_ghosts_per_block: f64,
    pub max_ghosts_per_block: u64,
    pub ghosts_split_again: u64,
    pub ghosts_created: u64,
}

/// Table 5 column.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct NodeSizeRecord {
    pub node_bytes: u64,
    pub buffer_frames: u32,
    pub fanout_internal: u64,
    pub fanout_leaf: u64,
    pub height: u64,
    pub nodes_read: u64,
    pub nodes_written: u64,
    pub node_splits: u64,
    pub pages_read: u64,
    pub pages_written: u64,
    pub block_splits: u64,
    pub block_cleansings: u64,
    pub blocks_erased: u64,
    pub blocks_in_use: u64,
}

/// Everything `repro-dipl.json` holds.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct DiplRepro {
    pub keys: u64,
    pub searches: u64,
    pub insert: Vec<InsertRecord>,
    pub search: Vec<SearchRecord>,
    pub mix: Vec<MixRecord>,
    pub ghosts: Option<GhostRecord>,
    pub node_size: Vec<NodeSizeRecord>,
    pub table6: Vec<Table6Record>,
    /// A `--quick` run: its claims are printed with their figures, not judged.
    #[serde(default)]
    pub quick: bool,
    pub seconds: f64,
    /// The paper's claims and what the run says of each.
    pub claims: Vec<crate::repro::ClaimCheck>,
}

/// Table 6 row: one index (and FTL) after the inserts.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Table6Record {
    /// "bftl" or "dipl".
    pub index: String,
    /// "block (FMAX)", "fast", "page"; "raw NAND" for d-IPL.
    pub ftl: String,
    pub reads: u64,
    pub writes: u64,
    pub erases: u64,
    /// reads x 80 us + writes x 200 us + erases x 1.5 ms (module doc).
    pub elapsed_minutes: f64,
    /// The simulator's time (bus transfer included).
    pub sim_time_minutes: f64,
    /// BFTL: live pages in 128 KiB blocks; d-IPL: blocks in use.
    pub space_blocks: u64,
    /// Below: BFTL and FTL details (0 for d-IPL).
    pub host_reads: u64,
    pub host_writes: u64,
    pub gc_page_copies: u64,
    pub merges: u64,
    pub compactions: u64,
    pub commits: u64,
    pub node_splits: u64,
    pub live_pages: u64,
    pub pages_high_water: u64,
    pub c: u64,
    pub seconds: f64,
}

fn find(r: &DiplRepro, index: Index, frames: u32) -> Option<&InsertRecord> {
    r.insert
        .iter()
        .find(|x| x.index == index && x.buffer_frames == frames)
}

/// The claims of a run saved as `repro-dipl.json`, checked again by this build (`repro
/// all --resume`: the cells are kept, the checks and reasons are this build's).
pub(crate) fn recheck(json: &str) -> anyhow::Result<Vec<crate::repro::ClaimCheck>> {
    let r: DiplRepro = serde_json::from_str(json)?;
    Ok(paper::check(&r))
}
