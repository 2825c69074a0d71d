//! One insert cell of `flashix repro bulk` (E1-E3) with every counter the analysis of its
//! claims used: device requests and bytes, the thesis's SSD model of them (§2.3: 81 us a
//! request and 4 ns a byte, CPU and WAL excluded as its trace replay excluded them), CPU
//! time, the WAL (records, before-images, syncs) and the engine's counters.
//!
//! ```text
//! cargo run --release -p flashix-bench --example bulk_cell -- ENGINE M EXP B TOTALS [KEY=VALUE...]
//!   ENGINE  bulk | latree        M    the bulk index's range size (ignored by the LA-tree)
//!   EXP     E1 | E2 | E3 (the keys' seed, as the repro's)
//!   B       elementary bulk size TOTALS  keys inserted, comma-separated
//!   KEY=VALUE: initial=450000 reps=1 dir=/work/bulkx budget=131072 ssd=page|fast
//!              batch_reads=1 batch_writes=1 batch_ranges=1 (the bulk index's §5.6 switches)
//!              maxbuf=64 k=2 (the LA-tree's max_buffer_pages and K)
//! ```
//!
//! Each cell starts from a copy of the initial index, as the repro's do; the line printed is
//! the last run's counters and every run's wall seconds, sorted.

use flashix::cost::bulk::BulkDeviceCosts;
use flashix::sim::{FtlKind, SimSsdConfig};
use flashix::{BulkOptions, Db, DeviceSpec, EngineKind, LaTreeOptions, Options, Stats};
use flashix_bench::repro::bulk::{bulk_keys, initial_keys};
use flashix_bench::runner::copy_dir;
use flashix_bench::subjects::process_cpu_seconds;
use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

const SEED: u64 = 42;

/// The engine counters that changed between `s0` and `s1`, and the shape ones as they are.
fn engine_counters(s0: &Stats, s1: &Stats) -> String {
    const SHAPE: &[&str] = &[
        "leaves",
        "height",
        "buffer_pages",
        "buffer_entries",
        "ranges",
    ];
    const MOVED: &[&str] = &[
        "ranges_affected",
        "range_read_requests",
        "ranges_written",
        "range_write_requests",
        "emptyings_overflow",
        "emptyings_adapt",
        "leaf_splits",
    ];
    let get = |s: &Stats, n: &str| s.engine_counters.get(n).copied();
    let mut out = Vec::new();
    for n in MOVED {
        if let Some(v) = get(s1, n) {
            out.push(format!("{n}={}", v - get(s0, n).unwrap_or(0)));
        }
    }
    for n in SHAPE {
        if let Some(v) = get(s1, n) {
            out.push(format!("{n}={v}"));
        }
    }
    out.join(" ")
}

/// The command line: the cell and its `KEY=VALUE` settings.
struct Args {
    engine: EngineKind,
    m: u32,
    exp: String,
    b: u64,
    totals: Vec<u64>,
    kv: HashMap<String, String>,
    /// The settings as given, for the printed line.
    given: String,
}

impl Args {
    fn parse() -> anyhow::Result<Args> {
        let a: Vec<String> = std::env::args().collect();
        anyhow::ensure!(
            a.len() >= 6,
            "usage: bulk_cell ENGINE M EXP B TOTALS [KEY=VALUE...]"
        );
        Ok(Args {
            engine: match a[1].as_str() {
                "latree" => EngineKind::LaTree,
                _ => EngineKind::BulkIndex,
            },
            m: a[2].parse()?,
            exp: a[3].clone(),
            b: a[4].parse()?,
            totals: a[5].split(',').map(str::parse).collect::<Result<_, _>>()?,
            kv: a[6..]
                .iter()
                .filter_map(|x| x.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            given: a[6..].join(" "),
        })
    }

    fn flag(&self, k: &str) -> bool {
        self.kv.get(k).map_or(true, |v| v != "0")
    }

    fn num(&self, k: &str, d: u64) -> anyhow::Result<u64> {
        Ok(self.kv.get(k).map_or(Ok(d), |v| v.parse())?)
    }

    /// The index's options: the repro's for the engine, with the settings given.
    fn options(&self) -> anyhow::Result<Options> {
        let bulk = BulkOptions {
            m: Some(self.m),
            delta_bytes: Some(0),
            append_only: true,
            batch_reads: self.flag("batch_reads"),
            batch_writes: self.flag("batch_writes"),
            batch_ranges: self.flag("batch_ranges"),
            ..BulkOptions::default()
        };
        let latree = LaTreeOptions {
            node_bytes: 16 << 10,
            max_buffer_pages: self.num("maxbuf", 64)?,
            k: self.num("k", 2)? as u32,
            adapt: true,
        };
        let page = if self.engine == EngineKind::LaTree {
            16 << 10
        } else {
            4096
        };
        let mut opts = Options::new(self.engine)
            .page_size(page)
            .buffer_pool_bytes(self.num("budget", 128 << 10)?)
            .bulk(bulk)
            .latree(latree);
        if let Some(s) = self.kv.get("ssd") {
            let ftl = if s == "fast" {
                FtlKind::Fast
            } else {
                FtlKind::Page
            };
            opts = opts.device(DeviceSpec::SimulatedSsd(SimSsdConfig::with_ftl(ftl)));
        }
        Ok(opts)
    }
}

fn main() -> anyhow::Result<()> {
    let a = Args::parse()?;
    let init = initial_keys(a.num("initial", 450_000)?, SEED);
    let root = Path::new(a.kv.get("dir").map_or("/work/bulkx", String::as_str)).to_path_buf();
    let (base, work) = (root.join("base"), root.join("work"));
    if root.exists() {
        std::fs::remove_dir_all(&root)?;
    }
    let db = Db::create(&base, a.options()?)?;
    db.bulk_insert(&init)?;
    db.close()?;
    for &t in &a.totals {
        let seed = if a.exp == "E1" {
            SEED ^ a.b
        } else {
            SEED ^ a.b ^ t.rotate_left(20)
        };
        let pairs = bulk_keys(&init, t, a.b, seed);
        let mut walls = Vec::new();
        let mut line = String::new();
        for _ in 0..a.num("reps", 1)? {
            copy_dir(&base, &work)?;
            let (wall, l) = run_once(&a, &work, &pairs, t)?;
            walls.push(wall);
            line = l;
        }
        walls.sort_by(f64::total_cmp);
        let walls: Vec<String> = walls.iter().map(|w| format!("{w:.3}")).collect();
        println!("{line} | wall s {}", walls.join(" "));
    }
    std::fs::remove_dir_all(&root).ok();
    Ok(())
}

/// Insert `pairs` (`t` keys) into the index copied to `work`: its wall seconds and the
/// line of its counters.
fn run_once(a: &Args, work: &Path, pairs: &[(u64, u64)], t: u64) -> anyhow::Result<(f64, String)> {
    let db = Db::open(work)?;
    let s0 = db.stats();
    let (t0, c0) = (Instant::now(), process_cpu_seconds());
    if a.engine == EngineKind::LaTree {
        for &(k, v) in pairs {
            db.insert(k, v)?;
        }
    } else {
        db.bulk_insert(pairs)?;
    }
    db.flush()?;
    let s1 = db.close_with_stats()?;
    let (wall, cpu) = (t0.elapsed().as_secs_f64(), process_cpu_seconds() - c0);
    let (d0, d1) = (&s0.device, &s1.device);
    let (rr, wr) = (
        d1.read_requests - d0.read_requests,
        d1.write_requests - d0.write_requests,
    );
    let (rb, wb) = (
        d1.read_bytes - d0.read_bytes,
        d1.write_bytes - d0.write_bytes,
    );
    let model = BulkDeviceCosts::thesis();
    let model_ms = (model.seek_read_us * rr as f64
        + model.seek_write_us * wr as f64
        + model.read_us_per_byte * rb as f64
        + model.write_us_per_byte * wb as f64)
        / 1e3;
    let sim = |s: &Stats| s.device.flash.get("sim_time_us").copied().unwrap_or(0);
    let (w0, w1) = (&s0.wal, &s1.wal);
    let line = format!(
        "{} M {} {} b={} n={t} [{}]: reads {rr} req {} KiB, writes {wr} req {} KiB | thesis \
         model {model_ms:.1} ms | simulated SSD {:.1} ms | cpu {cpu:.3} s | wal {} KiB, {} \
         records, {} page images, {} syncs | {}",
        a.engine.name(),
        a.m,
        a.exp,
        a.b,
        a.given,
        rb >> 10,
        wb >> 10,
        (sim(&s1) - sim(&s0)) as f64 / 1e3,
        (w1.bytes - w0.bytes) >> 10,
        w1.records - w0.records,
        w1.page_images - w0.page_images,
        w1.syncs - w0.syncs,
        engine_counters(&s0, &s1),
    );
    Ok((wall, line))
}
