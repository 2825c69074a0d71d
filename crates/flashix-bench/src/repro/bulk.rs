//! `flashix repro bulk`: the bulk index thesis's Chapter 6 (Lehtonen 2014) on this
//! machine's disk (O_DIRECT), beside the thesis's printed claims (its figures are plots:
//! only the numbers its text gives can be compared; `../shared/papers/notes/
//! bulk-index-notes.md` §3.2).
//!
//! Setup (§6.1): 450,000 initial keys (uniform over u64) put into the bulk index in ONE
//! bulk insertion (every range of size M but the last), a 128 KiB memory budget, the
//! faithful bulk index (no differential layer) with an append-only main file (no GC, as
//! the thesis), M ∈ {1024, 2048, 4096}; the LA-tree (when built) with 16 KiB nodes gets
//! the same initial keys by its bulk load and the inserted keys one by one in ascending
//! order. Each cell starts from a copy of the initial index (not timed) and ends with a
//! flush and a close (a checkpoint), which are timed and counted: the thesis "flushed the
//! data to disk at the end of the experiment".
//!
//! - E1 (Fig. 6.1): 50,000 keys in elementary bulks of b keys at random positions.
//! - E2/E3 (Figs 6.2-6.3): b = 100 and 1000, totals of 1,000 to 200,000 keys.
//! - E4 (Fig. 6.4): range searches of N keys from a random initial key.
//! - E5 (Fig. 6.5): range deletes of N keys, each from the same initial state (the bulk
//!   index is rewound to a snapshot between deletes: `internals::BulkIndex::restore`).
//! - Ablations (§5.6): E1 at b = 100 and 1000 with each switch off.
//! - E1 again on the simulated SSD (`SimSsdConfig::with_ftl`: page-level and FAST FTLs),
//!   M = 2048, on 32 MiB of NAND, with its erases and garbage-collection copies; times
//!   there are the simulator's NAND time.
//!
//! Differences from the thesis, stated in the output: tuples are 16 bytes here (8 in the
//! thesis), so M = 1024 here has the thesis's M = 2048 range bytes; times are wall time
//! of the real I/O and CPU (the thesis replayed I/O traces); the WAL is written.

use anyhow::{Context, Result};
use flashix::internals::Engine;
use flashix::io::{DirVfs, FileDevice};
use flashix::sim::{FtlKind, SimSsdConfig};
use flashix::{
    BulkOptions, Db, DeviceSpec, DeviceStats, EngineKind, LaTreeOptions, Options, Storage,
};
use serde::Serialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

const PAGE: usize = 4096;
const BUDGET: u64 = 128 << 10;

/// Arguments of `flashix repro bulk`.
#[derive(clap::Args, Debug, Clone)]
pub struct BulkReproArgs {
    /// Where `repro-bulk.json` goes.
    #[arg(long, default_value = "./bench-out")]
    pub out: PathBuf,
    /// Where the indexes are built (default: OUT/repro-bulk-data).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Small sizes (a test): 45,000 initial keys, fewer cells and searches.
    #[arg(long)]
    pub quick: bool,
    /// Seed of keys and positions.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
}

/// One measured cell.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub experiment: String,
    pub engine: String,
    pub m: u32,
    /// Elementary bulk size (E1-E3), keys per search or delete (E4, E5).
    pub b: u64,
    /// Keys inserted (E1-E3), operations averaged (E4, E5).
    pub n: u64,
    /// Seconds per cell (E1-E3) or per operation (E4, E5).
    pub seconds: f64,
    pub pages_read: u64,
    pub read_requests: u64,
    pub pages_written: u64,
    pub write_requests: u64,
    pub ranges_affected: u64,
    /// A §5.6 switch turned off (ablations), or the simulated SSD a cell ran on
    /// (`ssd-page`, `ssd-fast`); empty: this machine's disk with every switch on.
    pub variant: String,
    /// Simulated SSD only: block erases and pages copied by garbage collection.
    pub erases: u64,
    pub gc_page_copies: u64,
}

/// The whole reproduction.
#[derive(Debug, Clone, Serialize)]
pub struct BulkRepro {
    pub initial_keys: u64,
    pub budget_bytes: u64,
    pub latree_built: bool,
    pub cells: Vec<Cell>,
}

struct Sizes {
    initial: u64,
    ms: Vec<u32>,
    e1_total: u64,
    e1_b: Vec<u64>,
    e23_totals: Vec<u64>,
    e4_n: Vec<u64>,
    searches: u64,
    deletes: u64,
}

fn sizes(quick: bool) -> Sizes {
    if quick {
        Sizes {
            initial: 45_000,
            ms: vec![1024],
            e1_total: 5_000,
            e1_b: vec![1, 100, 1000],
            e23_totals: vec![1_000, 5_000],
            e4_n: vec![1000, 5000],
            searches: 20,
            deletes: 20,
        }
    } else {
        Sizes {
            initial: 450_000,
            ms: vec![1024, 2048, 4096],
            e1_total: 50_000,
            e1_b: vec![1, 10, 50, 100, 300, 1000, 2000, 5000, 10000],
            e23_totals: vec![1_000, 5_000, 10_000, 30_000, 50_000, 100_000, 200_000],
            e4_n: vec![1000, 2000, 5000, 10000, 20000],
            searches: 500,
            deletes: 500,
        }
    }
}

fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The initial keys, sorted (uniform over u64, distinct).
fn initial_keys(n: u64, seed: u64) -> Vec<(u64, u64)> {
    let mut keys: Vec<u64> = (0..n).map(|i| mix(i ^ seed.rotate_left(17))).collect();
    keys.sort_unstable();
    keys.dedup();
    keys.into_iter().map(|k| (k, k)).collect()
}

/// `total` new keys in elementary bulks of `b` consecutive keys just above random
/// initial keys (§6.1), sorted.
fn bulk_keys(init: &[(u64, u64)], total: u64, b: u64, seed: u64) -> Vec<(u64, u64)> {
    let mut used: HashMap<usize, u64> = HashMap::new();
    let mut out = Vec::with_capacity(total as usize);
    let mut r = seed;
    while (out.len() as u64) < total {
        r = mix(r.wrapping_add(0x9e37_79b9_7f4a_7c15));
        let i = (r % init.len() as u64) as usize;
        let off = used.entry(i).or_insert(0);
        let first = init[i].0.saturating_add(*off + 1);
        let n = b.min(total - out.len() as u64);
        *off += n;
        out.extend((0..n).map(|j| (first.saturating_add(j), j)));
    }
    out.sort_unstable_by_key(|p| p.0);
    out.dedup_by_key(|p| p.0);
    out
}

fn flash(s: &DeviceStats, name: &str) -> u64 {
    s.flash.get(name).copied().unwrap_or(0)
}

fn options(engine: EngineKind, m: u32, f: impl FnOnce(&mut BulkOptions)) -> Options {
    let mut b = BulkOptions {
        m: Some(m),
        delta_bytes: Some(0),
        append_only: true,
        ..BulkOptions::default()
    };
    f(&mut b);
    // The LA-tree's nodes are one page: 16 KiB pages (thesis §6.1's node size).
    let page = if engine == EngineKind::LaTree {
        16 << 10
    } else {
        PAGE
    };
    Options::new(engine)
        .page_size(page)
        .buffer_pool_bytes(BUDGET)
        .bulk(b)
        .latree(LaTreeOptions {
            node_bytes: 16 << 10,
            ..LaTreeOptions::default()
        })
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    if to.exists() {
        std::fs::remove_dir_all(to)?;
    }
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        std::fs::copy(e.path(), to.join(e.file_name()))?;
    }
    Ok(())
}

fn delta(a: &DeviceStats, b: &DeviceStats) -> (u64, u64, u64, u64) {
    (
        b.reads - a.reads,
        b.read_requests - a.read_requests,
        b.writes - a.writes,
        b.write_requests - a.write_requests,
    )
}

fn counter(db: &Db, name: &str) -> u64 {
    db.stats().engine_counters.get(name).copied().unwrap_or(0)
}

/// Insert `pairs` into a copy of `base` (one bulk insert, or one by one for the LA-tree),
/// flush, and measure.
#[allow(clippy::too_many_arguments)]
fn insert_cell(
    base: &Path,
    work: &Path,
    engine: EngineKind,
    m: u32,
    experiment: &str,
    variant: &str,
    b: u64,
    pairs: &[(u64, u64)],
) -> Result<Cell> {
    copy_dir(base, work)?;
    let mut db = Db::open(work).with_context(|| format!("opening {}", work.display()))?;
    let s0 = db.stats();
    let r0 = counter(&db, "ranges_affected");
    let t0 = Instant::now();
    if engine == EngineKind::BulkIndex {
        db.bulk_insert(pairs)?;
    } else {
        for &(k, v) in pairs {
            db.insert(k, v)?;
        }
    }
    db.flush()?;
    let ranges_affected = counter(&db, "ranges_affected") - r0;
    // §6.1: "we flushed the data to disk at the end of the experiment": the close's
    // checkpoint (the LA-tree's dirty nodes and buffer pages, the bulk index's range
    // index) is timed and counted.
    let s1 = db.close_with_stats()?;
    let seconds = t0.elapsed().as_secs_f64();
    let (pr, rr, pw, wr) = delta(&s0.device, &s1.device);
    // On the simulated SSD the time is the simulator's (NAND latencies), not the wall
    // time of simulating.
    let seconds = if variant.starts_with("ssd-") {
        (flash(&s1.device, "sim_time_us") - flash(&s0.device, "sim_time_us")) as f64 / 1e6
    } else {
        seconds
    };
    let erases = flash(&s1.device, "erases") - flash(&s0.device, "erases");
    let gc = flash(&s1.device, "gc_page_copies") - flash(&s0.device, "gc_page_copies");
    std::fs::remove_dir_all(work).ok();
    Ok(Cell {
        experiment: experiment.into(),
        engine: engine.name().into(),
        m,
        b,
        n: pairs.len() as u64,
        seconds,
        pages_read: pr,
        read_requests: rr,
        pages_written: pw,
        write_requests: wr,
        ranges_affected,
        variant: variant.into(),
        erases,
        gc_page_copies: gc,
    })
}

/// Run the reproduction and save `repro-bulk.json`.
pub fn run(a: &BulkReproArgs) -> Result<BulkRepro> {
    let z = sizes(a.quick);
    let data = a
        .dir
        .clone()
        .unwrap_or_else(|| a.out.join("repro-bulk-data"));
    if data.exists() {
        std::fs::remove_dir_all(&data)?;
    }
    let init = initial_keys(z.initial, a.seed);
    let latree = EngineKind::LaTree.is_built();
    let mut engines = vec![EngineKind::BulkIndex];
    if latree {
        engines.push(EngineKind::LaTree);
    }
    let mut cells = Vec::new();
    for &m in &z.ms {
        for &engine in &engines {
            // The LA-tree has no M: it runs once, under the first M.
            if engine != EngineKind::BulkIndex && m != z.ms[0] {
                continue;
            }
            let base = data.join(format!("{}-{m}-base", engine.name()));
            let mut db = Db::create(&base, options(engine, m, |_| {}))?;
            db.bulk_insert(&init)?;
            db.close()?;
            let work = data.join("work");
            eprintln!("repro bulk: {engine} M {m}: E1-E3");
            for &b in &z.e1_b {
                let pairs = bulk_keys(&init, z.e1_total, b, a.seed ^ b);
                cells.push(insert_cell(&base, &work, engine, m, "E1", "", b, &pairs)?);
            }
            for b in [100u64, 1000] {
                for &t in &z.e23_totals {
                    let pairs = bulk_keys(&init, t, b, a.seed ^ b ^ t.rotate_left(20));
                    let e = if b == 100 { "E2" } else { "E3" };
                    cells.push(insert_cell(&base, &work, engine, m, e, "", b, &pairs)?);
                }
            }
            eprintln!("repro bulk: {engine} M {m}: E4");
            copy_dir(&base, &work)?;
            let mut db = Db::open(&work)?;
            for &n in &z.e4_n {
                let s0 = db.stats();
                let t0 = Instant::now();
                for i in 0..z.searches {
                    // [L, H] holding exactly n initial keys (Alg. 4's bounds).
                    let lo = (mix(a.seed ^ i ^ n << 32) % (init.len() as u64 - n + 1)) as usize;
                    let (l, h) = (init[lo].0, init[lo + n as usize - 1].0);
                    let got = db.range(l..=h)?.count();
                    anyhow::ensure!(got as u64 == n, "range search returned {got} of {n}");
                }
                let seconds = t0.elapsed().as_secs_f64() / z.searches as f64;
                let (pr, rr, pw, wr) = delta(&s0.device, &db.stats().device);
                cells.push(Cell {
                    experiment: "E4".into(),
                    engine: engine.name().into(),
                    m,
                    b: n,
                    n: z.searches,
                    seconds,
                    pages_read: pr / z.searches,
                    read_requests: rr / z.searches,
                    pages_written: pw / z.searches,
                    write_requests: wr / z.searches,
                    ranges_affected: 0,
                    variant: String::new(),
                    erases: 0,
                    gc_page_copies: 0,
                });
            }
            db.close()?;
            std::fs::remove_dir_all(&work).ok();
            if engine == EngineKind::BulkIndex {
                eprintln!("repro bulk: {engine} M {m}: E5 and ablations");
                cells.extend(e5(&data, m, &init, &z, a.seed)?);
                for (variant, f) in [
                    (
                        "no batch_writes",
                        (|b: &mut BulkOptions| b.batch_writes = false) as fn(&mut BulkOptions),
                    ),
                    ("no batch_reads", |b| b.batch_reads = false),
                    ("no batch_ranges", |b| b.batch_ranges = false),
                ] {
                    let vbase = data.join(format!("bulk-{m}-{variant}"));
                    let mut db = Db::create(&vbase, options(engine, m, f))?;
                    db.bulk_insert(&init)?;
                    db.close()?;
                    for b in [100u64, 1000] {
                        let pairs = bulk_keys(&init, z.e1_total, b, a.seed ^ b);
                        cells.push(insert_cell(
                            &vbase, &work, engine, m, "ablation", variant, b, &pairs,
                        )?);
                    }
                    std::fs::remove_dir_all(&vbase).ok();
                }
            }
            std::fs::remove_dir_all(&base).ok();
        }
    }
    // E1 on the simulated SSD (page-level and FAST FTLs), M = 2048 (the thesis's M).
    for ftl in [FtlKind::Page, FtlKind::Fast] {
        let variant = format!("ssd-{}", ftl.name());
        let m = if a.quick { 1024 } else { 2048 };
        for &engine in &engines {
            eprintln!("repro bulk: {engine} on the simulated SSD ({ftl}): E1");
            let base = data.join(format!("{}-{m}-{variant}", engine.name()));
            let o = options(engine, m, |_| {})
                .device(DeviceSpec::SimulatedSsd(SimSsdConfig::with_ftl(ftl)));
            let mut db = Db::create(&base, o)?;
            db.bulk_insert(&init)?;
            db.close()?;
            let work = data.join("work");
            for &b in &z.e1_b {
                let pairs = bulk_keys(&init, z.e1_total, b, a.seed ^ b);
                cells.push(insert_cell(
                    &base, &work, engine, m, "E1", &variant, b, &pairs,
                )?);
            }
            std::fs::remove_dir_all(&base).ok();
        }
    }
    std::fs::remove_dir_all(&data).ok();
    let r = BulkRepro {
        initial_keys: init.len() as u64,
        budget_bytes: BUDGET,
        latree_built: latree,
        cells,
    };
    std::fs::create_dir_all(&a.out)?;
    let p = a.out.join("repro-bulk.json");
    std::fs::write(&p, serde_json::to_string_pretty(&r)?)
        .with_context(|| format!("writing {}", p.display()))?;
    Ok(r)
}

/// E5: range deletes of N keys, each from the same initial state (§6.3), on the bulk
/// index driven below `Db` so that it can be rewound between deletes.
fn e5(data: &Path, m: u32, init: &[(u64, u64)], z: &Sizes, seed: u64) -> Result<Vec<Cell>> {
    let dir = data.join(format!("bulk-{m}-e5"));
    std::fs::create_dir_all(&dir)?;
    let storage = Storage {
        device: Box::new(FileDevice::open(&dir.join(flashix::DATA_FILE), PAGE, true)?),
        vfs: Arc::new(DirVfs::new(&dir)),
    };
    let mut t =
        flashix::internals::create_bulk(storage, options(EngineKind::BulkIndex, m, |_| {}))?;
    t.bulk_insert(init)?;
    t.flush()?;
    let snap = t.snapshot()?;
    let mut cells = Vec::new();
    for &n in &z.e4_n {
        let mut seconds = 0.0;
        let (mut pr, mut rr, mut pw, mut wr) = (0, 0, 0, 0);
        for i in 0..z.deletes {
            let lo_i = (mix(seed ^ i ^ n << 40) % (init.len() as u64 - n)) as usize;
            let (lo, hi) = (init[lo_i].0, init[lo_i + n as usize - 1].0);
            let s0 = t.stats().device;
            let t0 = Instant::now();
            t.delete_range(lo, hi)?;
            t.flush()?;
            seconds += t0.elapsed().as_secs_f64();
            let d = delta(&s0, &t.stats().device);
            pr += d.0;
            rr += d.1;
            pw += d.2;
            wr += d.3;
            t.restore(&snap)?;
        }
        let k = z.deletes;
        cells.push(Cell {
            experiment: "E5".into(),
            engine: "bulk".into(),
            m,
            b: n,
            n: k,
            seconds: seconds / k as f64,
            pages_read: pr / k,
            read_requests: rr / k,
            pages_written: pw / k,
            write_requests: wr / k,
            ranges_affected: 0,
            variant: String::new(),
            erases: 0,
            gc_page_copies: 0,
        });
    }
    t.close()?;
    drop(t);
    std::fs::remove_dir_all(&dir).ok();
    Ok(cells)
}

/// The thesis's printed claims (notes §3.2), beside which the tables are printed.
const CLAIMS: &[(&str, &str)] = &[
    ("E1", "bulk index \"about twice as fast as the LA-tree for smaller values of elementary bulk size\"; the difference \"narrows a little\" at b ~300; gains shrink above b = 2,000; \"minimum of 5 ranges affected\" at b = 10,000"),
    ("E2", "b = 100: \"for small insertions, the LA-tree is nearly as efficient\"; the difference grows with the insertion; M = 4096 \"superior\" for 30,000 keys and above"),
    ("E3", "b = 1000: M = 2048 \"the better choice for all the tested cases up to 200 000 added keys\""),
    ("E4", "the LA-tree \"takes up to 50 % more time per range search\" (M = 2048)"),
    ("E5", "range deletion stays \"below a small constant value\", oscillating: best at multiples of M deleted"),
    ("all", "bulk insertion \"2-4 times as fast on most data\", \"more than 4 times as fast at best\""),
];

/// Print the tables beside the claims.
pub fn print(r: &BulkRepro) {
    println!(
        "flashix repro bulk: {} initial keys, budget {} KiB, O_DIRECT, faithful bulk index \
         (no differential layer, append-only), 16-byte tuples (thesis: 8); LA-tree {}",
        r.initial_keys,
        r.budget_bytes >> 10,
        if r.latree_built {
            "16 KiB nodes, keys one by one"
        } else {
            "not built: bulk index only"
        }
    );
    for (e, claim) in CLAIMS {
        let cells: Vec<&Cell> = r.cells.iter().filter(|c| c.experiment == *e).collect();
        println!("\n{e}: thesis: {claim}");
        if cells.is_empty() {
            continue;
        }
        println!(
            "  {:<7} {:<9} {:>5} {:>6} {:>7} {:>11} {:>9} {:>7} {:>9} {:>7} {:>7} {:>8} {:>7} {:>8}",
            "engine",
            "device",
            "M",
            "b|N",
            "n",
            "seconds",
            "pg read",
            "rd req",
            "pg wrtn",
            "wr req",
            "ranges",
            "LA/bulk",
            "erases",
            "gc copy"
        );
        for c in &cells {
            let la = r
                .cells
                .iter()
                .find(|o| {
                    o.engine == "latree"
                        && o.experiment == c.experiment
                        && o.variant == c.variant
                        && o.b == c.b
                        && o.n == c.n
                })
                .filter(|_| c.engine == "bulk")
                .map_or("-".to_string(), |o| format!("{:.2}", o.seconds / c.seconds));
            let device = if c.variant.is_empty() {
                "disk"
            } else {
                &c.variant
            };
            println!(
                "  {:<7} {:<9} {:>5} {:>6} {:>7} {:>11.6} {:>9} {:>7} {:>9} {:>7} {:>7} {:>8} {:>7} {:>8}",
                c.engine,
                device,
                c.m,
                c.b,
                c.n,
                c.seconds,
                c.pages_read,
                c.read_requests,
                c.pages_written,
                c.write_requests,
                c.ranges_affected,
                la,
                c.erases,
                c.gc_page_copies
            );
        }
    }
    let abl: Vec<&Cell> = r
        .cells
        .iter()
        .filter(|c| c.experiment == "ablation")
        .collect();
    if !abl.is_empty() {
        println!("\n§5.6 ablations (E1 at b = 100 and 1000), against all switches on:");
        for c in abl {
            let on = r.cells.iter().find(|o| {
                o.experiment == "E1"
                    && o.variant.is_empty()
                    && o.engine == "bulk"
                    && o.m == c.m
                    && o.b == c.b
            });
            println!(
                "  M {:>5} b {:>5} {:<16} {:>10.6} s ({}), {} read / {} write requests",
                c.m,
                c.b,
                c.variant,
                c.seconds,
                on.map_or("-".into(), |o| format!(
                    "{:.2}x the time with it on",
                    c.seconds / o.seconds
                )),
                c.read_requests,
                c.write_requests
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elementary_bulks_are_clustered_new_keys() {
        let init = initial_keys(1000, 1);
        let pairs = bulk_keys(&init, 500, 100, 2);
        assert_eq!(pairs.len(), 500);
        let set: std::collections::HashSet<u64> = init.iter().map(|p| p.0).collect();
        assert!(pairs.iter().all(|p| !set.contains(&p.0)));
        // 5 runs of consecutive keys (or fewer, merged).
        let runs = pairs.windows(2).filter(|w| w[1].0 != w[0].0 + 1).count() + 1;
        assert!(runs <= 5, "{runs} runs");
    }
}
