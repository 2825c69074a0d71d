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
//! - Table 6 (BFTL over FTLs against d-IPL) needs the BFTL engine and the FTLs: not run
//!   here (see [`TABLE6_NOTE`]).

use anyhow::{Context, Result};
use flashix::engine::dipl::DiplBTree;
use flashix::engine::ipl::IplBTree;
use flashix::engine::Engine;
use flashix::io::{MemDevice, MemVfs};
use flashix::testing::Rng;
use flashix::{DiplOptions, EngineKind, IplOptions, Options, Stats, Storage};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What Table 6 would need.
pub const TABLE6_NOTE: &str = "Table 6 (BFTL over FMAX, FAST and page-level FTLs against d-IPL) is not reproduced: it needs the BFTL engine and the FTLs of issue 6, built separately";

const PAGE: usize = 2048;
const PAGES_PER_BLOCK: u32 = 64;
const NAND_BLOCKS: u32 = 1024;

/// `flashix repro dipl` arguments.
#[derive(clap::Args, Debug, Clone)]
pub struct DiplReproArgs {
    /// Where `repro-dipl.json` goes.
    #[arg(long, default_value = "./bench-out")]
    pub out: PathBuf,
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
    /// Only the insert runs (Fig. 12, Tables 1, 2, 4) and searches: no Table 3 or 5.
    #[arg(long = "only-insert")]
    pub only_insert: bool,
}

/// Which index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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

enum Tree {
    Ipl(IplBTree),
    Dipl(DiplBTree),
}

impl Tree {
    fn new(index: Index, node_bytes: u64, frames: u32, ipl_log: Option<u64>) -> Result<Tree> {
        let storage = Storage {
            device: Box::new(MemDevice::new(PAGE)),
            vfs: Arc::new(MemVfs::new()),
        };
        let base = Options::new(match index {
            Index::Ipl => EngineKind::IplBTree,
            Index::Dipl => EngineKind::DiplBTree,
        })
        .page_size(PAGE)
        .device(flashix::DeviceSpec::Memory)
        // No checkpoint during a run: the paper's index has none.
        .checkpoint_wal_bytes(1 << 40);
        Ok(match index {
            Index::Ipl => Tree::Ipl(IplBTree::create(
                storage,
                base.ipl(IplOptions {
                    node_bytes,
                    buffer_frames: Some(frames),
                    nand_blocks: NAND_BLOCKS,
                    pages_per_block: PAGES_PER_BLOCK,
                    log_area_bytes: ipl_log.unwrap_or(IplOptions::default().log_area_bytes),
                }),
            )?),
            Index::Dipl => Tree::Dipl(DiplBTree::create(
                storage,
                base.dipl(DiplOptions {
                    node_bytes,
                    buffer_frames: Some(frames),
                    nand_blocks: NAND_BLOCKS,
                    pages_per_block: PAGES_PER_BLOCK,
                }),
            )?),
        })
    }

    fn engine(&mut self) -> &mut dyn Engine {
        match self {
            Tree::Ipl(t) => t,
            Tree::Dipl(t) => t,
        }
    }

    fn reset(&mut self) {
        match self {
            Tree::Ipl(t) => t.reset_counters(),
            Tree::Dipl(t) => t.reset_counters(),
        }
    }

    fn global_cleansing(&mut self) -> Result<()> {
        match self {
            Tree::Ipl(t) => t.global_cleansing()?,
            Tree::Dipl(t) => t.global_cleansing()?,
        }
        Ok(())
    }
}

fn c(s: &Stats, name: &str) -> u64 {
    s.engine_counters.get(name).copied().unwrap_or(0)
}

/// One insert run (Fig. 12, Tables 1 and 2).
#[derive(Debug, Clone, Serialize)]
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
    pub seconds: f64,
}

/// One search run (Fig. 13).
#[derive(Debug, Clone, Serialize)]
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
#[derive(Debug, Clone, Serialize)]
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
#[derive(Debug, Clone, Serialize)]
pub struct GhostRecord {
    pub buffer_frames: u32,
    pub average_ghosts_per_block: f64,
    pub max_ghosts_per_block: u64,
    pub ghosts_split_again: u64,
    pub ghosts_created: u64,
}

/// Table 5 column.
#[derive(Debug, Clone, Serialize)]
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
#[derive(Debug, Clone, Serialize)]
pub struct DiplRepro {
    pub keys: u64,
    pub searches: u64,
    pub insert: Vec<InsertRecord>,
    pub search: Vec<SearchRecord>,
    pub mix: Vec<MixRecord>,
    pub ghosts: Option<GhostRecord>,
    pub node_size: Vec<NodeSizeRecord>,
    pub table6: String,
    pub seconds: f64,
}

/// A random permutation of 1..=n.
fn permutation(n: u64, seed: u64) -> Vec<u64> {
    let mut rng = Rng::new(seed);
    let mut v: Vec<u64> = (1..=n).collect();
    for i in (1..v.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        v.swap(i, j);
    }
    v
}

fn bar(quiet: bool, len: u64, msg: String) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(len);
    if let Ok(style) =
        ProgressStyle::with_template("{msg:28} [{bar:30}] {pos}/{len} {elapsed_precise} eta {eta}")
    {
        pb.set_style(style.progress_chars("=> "));
    }
    pb.set_message(msg);
    pb
}

fn insert_all(t: &mut Tree, keys: &[u64], pb: &ProgressBar) -> Result<()> {
    for (i, &k) in keys.iter().enumerate() {
        t.engine().insert(k, k)?;
        if i % 4096 == 0 {
            pb.set_position(i as u64);
        }
    }
    pb.finish_and_clear();
    Ok(())
}

fn insert_record(index: Index, frames: u32, s: &Stats, seconds: f64, inserts: u64) -> InsertRecord {
    let cleansings = match index {
        Index::Ipl => c(s, "block_merges"),
        Index::Dipl => c(s, "block_cleansings"),
    };
    InsertRecord {
        index,
        buffer_frames: frames,
        reads: c(s, "nand_page_reads"),
        writes: c(s, "nand_page_programs"),
        erases: c(s, "nand_erases") + c(s, "blocks_pending_erase"),
        node_splits: c(s, "node_splits"),
        block_splits: c(s, "block_splits"),
        block_cleansings: cleansings,
        write_amplification: c(s, "write_amplification_milli") as f64 / 1000.0,
        write_amplification_per_insert: c(s, "nand_page_programs") as f64 * PAGE as f64
            / (inserts.max(1) as f64 * 8192.0),
        node_reads: c(s, "node_reads"),
        node_writes: c(s, "node_writes"),
        blocks_in_use: c(s, "blocks_in_use"),
        height: c(s, "height"),
        seconds,
    }
}

fn searches(t: &mut Tree, keys: &[u64], quiet: bool, msg: String) -> Result<u64> {
    t.reset();
    let pb = bar(quiet, keys.len() as u64, msg);
    for (i, &k) in keys.iter().enumerate() {
        if t.engine().get(k)?.is_none() {
            anyhow::bail!("key {k} not found");
        }
        if i % 4096 == 0 {
            pb.set_position(i as u64);
        }
    }
    pb.finish_and_clear();
    Ok(c(&t.engine().stats(), "nand_page_reads"))
}

type InsertOutcome = (InsertRecord, Option<GhostRecord>, Option<SearchRecord>);

/// One index at one buffer size: the inserts, then the searches before and after a
/// global cleansing.
fn insert_and_search(
    a: &DiplReproArgs,
    index: Index,
    frames: u32,
    keys: &[u64],
    search_keys: &[u64],
) -> Result<InsertOutcome> {
    let n = keys.len() as u64;
    let t0 = std::time::Instant::now();
    let mut t = Tree::new(index, 8192, frames, a.ipl_log_area)?;
    t.reset();
    let pb = bar(
        a.quiet,
        n,
        format!("insert {} {frames} frames", index.name()),
    );
    insert_all(&mut t, keys, &pb)?;
    let s = t.engine().stats();
    let rec = insert_record(index, frames, &s, t0.elapsed().as_secs_f64(), n);
    let ghosts = (index == Index::Dipl).then(|| {
        let blocks = c(&s, "blocks_in_use").max(1);
        GhostRecord {
            buffer_frames: frames,
            average_ghosts_per_block: c(&s, "ghost_nodes") as f64 / blocks as f64,
            max_ghosts_per_block: c(&s, "max_ghosts_per_block"),
            ghosts_split_again: c(&s, "ghosts_split_again"),
            ghosts_created: c(&s, "ghost_nodes_created"),
        }
    });
    if search_keys.is_empty() {
        return Ok((rec, ghosts, None));
    }
    let reads = searches(
        &mut t,
        search_keys,
        a.quiet,
        format!("search {} {frames}", index.name()),
    )?;
    t.reset();
    t.global_cleansing()?;
    let g = t.engine().stats();
    let after = searches(
        &mut t,
        search_keys,
        a.quiet,
        format!("search {} {frames} (R)", index.name()),
    )?;
    let search = SearchRecord {
        index,
        buffer_frames: frames,
        reads,
        reads_after_global_cleansing: after,
        cleansing_reads: c(&g, "nand_page_reads"),
        cleansing_writes: c(&g, "nand_page_programs"),
        cleansing_erases: c(&g, "nand_erases") + c(&g, "blocks_pending_erase"),
    };
    Ok((rec, ghosts, Some(search)))
}

/// Table 3: a million inserts with `n * del / ins` deletions of inserted keys, each step
/// a deletion with probability (deletions left) / (steps left).
fn mix(
    a: &DiplReproArgs,
    index: Index,
    ratio: &str,
    ins: u64,
    del: u64,
    keys: &[u64],
) -> Result<MixRecord> {
    let n = keys.len() as u64;
    let deletes = n * del / ins;
    let mut t = Tree::new(index, 8192, 500, a.ipl_log_area)?;
    t.reset();
    let mut rng = Rng::new(a.seed ^ ins);
    let mut live: Vec<u64> = Vec::new();
    let (mut next, mut left_del) = (0usize, deletes);
    let total = n + deletes;
    let pb = bar(a.quiet, total, format!("mix {ratio} {}", index.name()));
    for step in 0..total {
        let left = total - step;
        let delete =
            left_del > 0 && !live.is_empty() && (next == keys.len() || rng.below(left) < left_del);
        if delete {
            let i = rng.below(live.len() as u64) as usize;
            let k = live.swap_remove(i);
            t.engine().delete(k)?;
            left_del -= 1;
        } else if next < keys.len() {
            t.engine().insert(keys[next], keys[next])?;
            live.push(keys[next]);
            next += 1;
        }
        if step % 4096 == 0 {
            pb.set_position(step);
        }
    }
    pb.finish_and_clear();
    let s = t.engine().stats();
    Ok(MixRecord {
        index,
        ratio: ratio.to_string(),
        inserts: n,
        deletes,
        reads: c(&s, "nand_page_reads"),
        writes: c(&s, "nand_page_programs"),
        erases: c(&s, "nand_erases") + c(&s, "blocks_pending_erase"),
        blocks: c(&s, "blocks_in_use"),
    })
}

/// Run every experiment and write `OUT/repro-dipl.json`.
pub fn run(a: &DiplReproArgs) -> Result<DiplRepro> {
    let start = std::time::Instant::now();
    let n = a.keys;
    let keys = permutation(n, a.seed);
    let search_keys: Vec<u64> = {
        let mut rng = Rng::new(a.seed ^ 0x5EA5C4);
        (0..a.searches).map(|_| 1 + rng.below(n)).collect()
    };
    let mut out = DiplRepro {
        keys: n,
        searches: a.searches,
        insert: Vec::new(),
        search: Vec::new(),
        mix: Vec::new(),
        ghosts: None,
        node_size: Vec::new(),
        table6: TABLE6_NOTE.to_string(),
        seconds: 0.0,
    };
    // Fig. 12, Tables 1, 2, 4; Fig. 13 on the same indexes. IPL and d-IPL run side by
    // side on two threads (independent simulated devices).
    let big = a.frames.iter().copied().max().unwrap_or(500);
    for &frames in &a.frames {
        let (ri, rd) = std::thread::scope(|sc| {
            let h = sc.spawn(|| insert_and_search(a, Index::Ipl, frames, &keys, &search_keys));
            let d = insert_and_search(a, Index::Dipl, frames, &keys, &search_keys);
            let i = h
                .join()
                .unwrap_or_else(|_| Err(anyhow::anyhow!("the IPL run panicked")));
            (i, d)
        });
        for (ins, ghosts, search) in [ri?, rd?] {
            out.insert.push(ins);
            if frames == big && ghosts.is_some() {
                out.ghosts = ghosts;
            }
            out.search.extend(search);
        }
    }
    if a.only_insert {
        out.seconds = start.elapsed().as_secs_f64();
        save(&out, &a.out)?;
        return Ok(out);
    }
    // Table 3: insert:delete mixes at 500 frames, IPL and d-IPL side by side.
    for (ratio, ins, del) in [("5:5", 5u64, 5u64), ("7:3", 7, 3), ("9:1", 9, 1)] {
        let (ri, rd) = std::thread::scope(|sc| {
            let h = sc.spawn(|| mix(a, Index::Ipl, ratio, ins, del, &keys));
            let d = mix(a, Index::Dipl, ratio, ins, del, &keys);
            let i = h
                .join()
                .unwrap_or_else(|_| Err(anyhow::anyhow!("the IPL run panicked")));
            (i, d)
        });
        out.mix.push(ri?);
        out.mix.push(rd?);
    }
    // Table 5: node sizes, 800 KB of buffer, half the keys.
    let half = permutation(n / 2, a.seed ^ 5);
    for node in [2048u64, 4096, 8192] {
        let frames = (800 * 1024 / node) as u32;
        let mut t = Tree::new(Index::Dipl, node, frames, None)?;
        t.reset();
        let pb = bar(
            a.quiet,
            half.len() as u64,
            format!("d-IPL {} KiB nodes", node / 1024),
        );
        insert_all(&mut t, &half, &pb)?;
        let s = t.engine().stats();
        out.node_size.push(NodeSizeRecord {
            node_bytes: node,
            buffer_frames: frames,
            fanout_internal: (node - 32) / 12,
            fanout_leaf: (node - 32) / 16,
            height: c(&s, "height"),
            nodes_read: c(&s, "node_reads"),
            nodes_written: c(&s, "node_writes"),
            node_splits: c(&s, "node_splits"),
            pages_read: c(&s, "nand_page_reads"),
            pages_written: c(&s, "nand_page_programs"),
            block_splits: c(&s, "block_splits"),
            block_cleansings: c(&s, "block_cleansings"),
            blocks_erased: c(&s, "nand_erases") + c(&s, "blocks_pending_erase"),
            blocks_in_use: c(&s, "blocks_in_use"),
        });
    }
    out.seconds = start.elapsed().as_secs_f64();
    save(&out, &a.out)?;
    Ok(out)
}

fn save(r: &DiplRepro, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let p = dir.join("repro-dipl.json");
    let json = serde_json::to_string_pretty(r)?;
    std::fs::write(&p, json).with_context(|| format!("writing {}", p.display()))?;
    Ok(())
}

// ---- printing beside the paper -------------------------------------------------------

/// Paper, Table 2 (write amplification by buffer frames 100..500).
const PAPER_WA: [(u32, f64, f64); 5] = [
    (100, 1.09, 0.49),
    (200, 0.97, 0.38),
    (300, 0.86, 0.33),
    (400, 0.77, 0.30),
    (500, 0.69, 0.26),
];

fn find(r: &DiplRepro, index: Index, frames: u32) -> Option<&InsertRecord> {
    r.insert
        .iter()
        .find(|x| x.index == index && x.buffer_frames == frames)
}

/// Print every table beside the paper's numbers.
pub fn print(r: &DiplRepro) {
    println!(
        "d-IPL paper reproduction: {} random inserts, 8 KiB nodes, 2 KiB pages, 128 KiB blocks ({:.0} s)",
        r.keys, r.seconds
    );
    println!("\nFig. 12 (pages read / pages written / blocks erased; the paper gives a plot only)");
    println!(
        "{:>7} | {:>10} {:>10} {:>8} | {:>10} {:>10} {:>8}",
        "frames", "IPL read", "IPL write", "IPL ers", "dIPL read", "dIPL write", "dIPL ers"
    );
    let mut frames: Vec<u32> = r.insert.iter().map(|x| x.buffer_frames).collect();
    frames.dedup();
    for &f in &frames {
        if let (Some(i), Some(d)) = (find(r, Index::Ipl, f), find(r, Index::Dipl, f)) {
            println!(
                "{f:>7} | {:>10} {:>10} {:>8} | {:>10} {:>10} {:>8}",
                i.reads, i.writes, i.erases, d.reads, d.writes, d.erases
            );
        }
    }
    let big = frames.iter().copied().max().unwrap_or(500);
    println!("\nTable 1 (buffer {big} frames; paper at 500)");
    println!(
        "{:>8} | {:>10} {:>10} {:>12} | paper: {:>6} {:>6} {:>8}",
        "", "node spl", "block spl", "cleans/merge", "node", "block", "cleans"
    );
    for (index, paper) in [
        (Index::Ipl, ("2,820", "N/A", "36,141")),
        (Index::Dipl, ("2,830", "277", "9,212")),
    ] {
        if let Some(x) = find(r, index, big) {
            let bs = if index == Index::Ipl {
                "N/A".to_string()
            } else {
                x.block_splits.to_string()
            };
            println!(
                "{:>8} | {:>10} {:>10} {:>12} | paper: {:>6} {:>6} {:>8}",
                index.name(),
                x.node_splits,
                bs,
                x.block_cleansings,
                paper.0,
                paper.1,
                paper.2
            );
        }
    }
    println!("\nTable 2 (write amplification, Eq. 1: C_n = node writes the buffer requested; per insert: C_n = one per insert)");
    println!(
        "{:>7} | {:>6} {:>6} | per insert: {:>6} {:>6} | paper: {:>6} {:>6}",
        "frames", "IPL", "d-IPL", "IPL", "d-IPL", "IPL", "d-IPL"
    );
    for &f in &frames {
        let p = PAPER_WA.iter().find(|x| x.0 == f);
        if let (Some(i), Some(d)) = (find(r, Index::Ipl, f), find(r, Index::Dipl, f)) {
            let (pi, pd) = p.map_or(("-".into(), "-".into()), |p| {
                (format!("{:.2}", p.1), format!("{:.2}", p.2))
            });
            println!(
                "{f:>7} | {:>6.2} {:>6.2} | per insert: {:>6.2} {:>6.2} | paper: {pi:>6} {pd:>6}",
                i.write_amplification,
                d.write_amplification,
                i.write_amplification_per_insert,
                d.write_amplification_per_insert
            );
        }
    }
    println!("\nTable 3 (insert:delete, 500 frames)");
    let paper3 = [
        ("ipl", "5:5", "155,900", "164,106", "2,735", "1"),
        ("ipl", "7:3", "2,103,462", "1,103,261", "15,304", "80"),
        ("ipl", "9:1", "4,633,756", "2,314,523", "31,631", "146"),
        ("dipl", "5:5", "12,774", "47,390", "246", "1"),
        ("dipl", "7:3", "1,914,706", "425,444", "4,174", "110"),
        ("dipl", "9:1", "4,462,403", "910,851", "9,051", "211"),
    ];
    println!(
        "{:>5} {:>5} | {:>10} {:>10} {:>7} {:>6} | paper: {:>10} {:>10} {:>7} {:>6}",
        "", "ratio", "read", "write", "erase", "blocks", "read", "write", "erase", "blocks"
    );
    for m in &r.mix {
        let p = paper3
            .iter()
            .find(|p| p.0 == m.index.name() && p.1 == m.ratio);
        let p = p.copied().unwrap_or(("", "", "-", "-", "-", "-"));
        println!(
            "{:>5} {:>5} | {:>10} {:>10} {:>7} {:>6} | paper: {:>10} {:>10} {:>7} {:>6}",
            m.index.name(),
            m.ratio,
            m.reads,
            m.writes,
            m.erases,
            m.blocks,
            p.2,
            p.3,
            p.4,
            p.5
        );
    }
    if !r.search.is_empty() {
        println!("\nFig. 13 ({} random searches: pages read; (R) after a global cleansing; the paper gives a plot only)", r.searches);
        println!(
            "{:>7} | {:>10} {:>10} | {:>10} {:>10}",
            "frames", "IPL", "IPL (R)", "d-IPL", "d-IPL (R)"
        );
        for &f in &frames {
            let g = |i| {
                r.search
                    .iter()
                    .find(|x| x.index == i && x.buffer_frames == f)
            };
            if let (Some(i), Some(d)) = (g(Index::Ipl), g(Index::Dipl)) {
                println!(
                    "{f:>7} | {:>10} {:>10} | {:>10} {:>10}",
                    i.reads,
                    i.reads_after_global_cleansing,
                    d.reads,
                    d.reads_after_global_cleansing
                );
            }
        }
    }
    if let Some(g) = &r.ghosts {
        println!(
            "\nTable 4 (ghost nodes after the inserts, {} frames; paper at 500)",
            g.buffer_frames
        );
        println!(
            "  average ghosts per block   {:>8.2}   paper 0.28",
            g.average_ghosts_per_block
        );
        println!(
            "  maximum ghosts per block   {:>8}   paper 4",
            g.max_ghosts_per_block
        );
        println!(
            "  ghosts split again         {:>8}   paper 0",
            g.ghosts_split_again
        );
        println!("  ghosts created             {:>8}", g.ghosts_created);
    }
    println!("\nTable 5 (d-IPL, {} inserts, 800 KB buffer)", r.keys / 2);
    let paper5: [[&str; 3]; 13] = [
        ["207", "418", "840"],
        ["126", "254", "510"],
        ["3", "3", "3"],
        ["372,135", "369,967", "369,197"],
        ["382,423", "376,366", "373,500"],
        ["5,721", "2,850", "1,390"],
        ["1,602,379", "2,477,285", "3,722,839"],
        ["760,530", "1,058,651", "704,188"],
        ["137", "124", "134"],
        ["7,328", "12,190", "6,542"],
        ["7,465", "12,314", "6,677"],
        ["140", "127", "137"],
        ["", "", ""],
    ];
    let names = [
        "max fanout (internal)",
        "max fanout (leaf)",
        "index height",
        "index nodes read",
        "index nodes written",
        "index nodes split",
        "2 KiB pages read",
        "2 KiB pages written",
        "blocks split",
        "blocks cleansed",
        "blocks erased",
        "blocks in use",
    ];
    println!(
        "{:>22} | {:>10} {:>10} {:>10} | paper: {:>10} {:>10} {:>10}",
        "", "2 KiB", "4 KiB", "8 KiB", "2 KiB", "4 KiB", "8 KiB"
    );
    for (row, name) in names.iter().enumerate() {
        let v: Vec<u64> = r
            .node_size
            .iter()
            .map(|x| match row {
                0 => x.fanout_internal,
                1 => x.fanout_leaf,
                2 => x.height,
                3 => x.nodes_read,
                4 => x.nodes_written,
                5 => x.node_splits,
                6 => x.pages_read,
                7 => x.pages_written,
                8 => x.block_splits,
                9 => x.block_cleansings,
                10 => x.blocks_erased,
                _ => x.blocks_in_use,
            })
            .collect();
        let cell = |i: usize| v.get(i).map_or("-".to_string(), |x| x.to_string());
        println!(
            "{name:>22} | {:>10} {:>10} {:>10} | paper: {:>10} {:>10} {:>10}",
            cell(0),
            cell(1),
            cell(2),
            paper5[row][0],
            paper5[row][1],
            paper5[row][2]
        );
    }
    println!("\nTable 6: {}", r.table6);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_run_writes_every_table_to_the_json() {
        let dir = tempfile::tempdir().unwrap();
        let a = DiplReproArgs {
            out: dir.path().to_path_buf(),
            keys: 3000,
            searches: 500,
            frames: vec![8, 16],
            seed: 1,
            quiet: true,
            ipl_log_area: None,
            only_insert: false,
        };
        let r = run(&a).unwrap();
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("repro-dipl.json")).unwrap())
                .unwrap();
        let insert = v["insert"].as_array().unwrap();
        assert_eq!(insert.len(), 4);
        for rec in insert {
            for f in [
                "index",
                "buffer_frames",
                "reads",
                "writes",
                "erases",
                "node_splits",
                "block_splits",
                "block_cleansings",
                "write_amplification",
            ] {
                assert!(rec.get(f).is_some(), "{f} missing");
            }
        }
        // d-IPL writes less than IPL and never splits blocks in IPL.
        let ipl = find(&r, Index::Ipl, 8).unwrap();
        let dipl = find(&r, Index::Dipl, 8).unwrap();
        assert!(
            dipl.writes < ipl.writes,
            "{} vs {}",
            dipl.writes,
            ipl.writes
        );
        assert_eq!(ipl.block_splits, 0);
        assert!(ipl.node_splits > 0 && dipl.node_splits > 0);
        assert_eq!(r.search.len(), 4);
        assert_eq!(r.mix.len(), 6);
        assert_eq!(r.node_size.len(), 3);
        assert!(r.ghosts.is_some());
        for s in &r.search {
            assert!(s.reads_after_global_cleansing <= s.reads, "{s:?}");
        }
        print(&r);
    }
}
