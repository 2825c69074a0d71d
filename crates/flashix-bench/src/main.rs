//! The `flashix` command: `flashix probe` measures the device, `flashix bench` runs
//! workloads against engines (docs/benchmarking.md), `flashix compare` sets two runs side
//! by side, and `flashix check / stats / dump / load` operate an index.

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use flashix::sim::SsdProfile;
use flashix::EngineKind;
use flashix_bench::peers::PeerKind;
use flashix_bench::probe::{self, sim::SimProbeConfig, ProbeConfig};
use flashix_bench::runner::{self, BenchConfig, Scale};
use flashix_bench::units::parse_size;
use flashix_bench::workload::{KeyDist, Workload};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "flashix",
    version,
    about = "flashix device probe and benchmarks, and tools to operate an index",
    after_help = OPS_HELP
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Measure the device (or, with --sim, a simulated SSD of a named profile): random 4 KiB
    /// read IOPS at queue depths 1, 2, 4, 8, 16 and 32, random 4 KiB write IOPS at QD1/QD32,
    /// sequential bandwidth and 4 KiB IOPS, latency by size.
    Probe(ProbeArgs),
    /// Run workloads against engines and peers on aged indexes; writes a table,
    /// OUT/results.json and OUT/report.html.
    #[command(after_long_help = BENCH_HELP)]
    Bench(Box<BenchArgs>),
    /// FD-tree cost model: choose k and the number of levels for a device profile and a mix.
    FdtreeModel(flashix_bench::model::FdTreeModelArgs),
    /// PIO B-tree cost model: choose the leaf size in segments and the OPQ size.
    PioModel(flashix_bench::pio_model::PioModelArgs),
    /// Bulk index cost model (thesis §5.5): choose the range size M, with predicted costs.
    BulkModel(flashix_bench::bulk_model::BulkModelArgs),
    /// Every engine's predicted cost per operation for a device profile, entries, a memory
    /// budget and a workload, ranked with the parameters each would use; --verify measures
    /// the top three.
    Advise(flashix_bench::advise::cli::AdviseArgs),
    /// Moving objects: the Bx-tree (`bx`) and the mobject front end over other engines.
    MoBench(flashix_bench::mobench::MoBenchArgs),
    /// Random page writes on a simulated SSD with each FTL: write amplification, erases, copies.
    Sim(flashix_bench::sim_cmd::SimArgs),
    /// Reproduce a paper's experiments: `flashix repro PAPER --out DIR`, where PAPER is
    /// dipl, bulk, fbx, fdtree, pio or all.
    #[command(subcommand)]
    Repro(flashix_bench::repro::Repro),
    /// Render report.html again from a results.json (e.g. one written by an older build);
    /// given a second results.json, add a section comparing the two (`flashix compare`).
    Report(ReportArgs),
    /// Two runs' results.json side by side: per cell ops/s, B/A, pages read and written per
    /// operation and the --repeat noise of each; flags the cells that changed beyond the
    /// noise or the threshold.
    Compare(CompareArgs),
    /// Verify an index without changing it: recovery (in memory), the checksum and page id
    /// of every allocated page, the engine's invariants, a full scan. Exit status 0 only
    /// when clean.
    Check(flashix_bench::ops::CheckArgs),
    /// An index's engine, options, sizes, space use, memory budget and counters (read-only).
    Stats(flashix_bench::ops::StatsArgs),
    /// Every entry, ascending, to standard output: `key value` lines, or --binary.
    Dump(flashix_bench::ops::DumpArgs),
    /// Standard input (a dump, text or binary) into a NEW index of any engine.
    #[command(after_long_help = LOAD_HELP)]
    Load(flashix_bench::ops::LoadArgs),
}

/// The closing help of `flashix`: the commands that operate an index.
const OPS_HELP: &str = "\
OPERATING AN INDEX (none of check, stats, dump changes anything in DIR; an index that
was not closed cleanly is recovered in memory)
  flashix check DIR            verify; exit 0 only when clean
  flashix stats DIR [--json]   engine, options, entries, pages live/allocated, memory
  flashix dump DIR [--binary] > FILE
  flashix load NEW --engine NAME [--binary] [engine options] < FILE
  flashix dump OLD | flashix load NEW --engine lsm     (migrate between engines)
  flashix compare A/results.json B/results.json [--threshold 10%]";

/// The long help of `flashix load`: the input forms.
const LOAD_HELP: &str = "\
INPUT
  text    one `key value` line per entry, decimal u64 (what `flashix dump` writes);
          blank lines are skipped; a malformed line stops the load with its number
  binary  \"FLASHIXD\", u32 version 1, u32 0, then key,value u64 pairs, then u64 count
          and u32 crc32c of the pairs; all little-endian (`flashix dump --binary`)
  The form is detected by the magic. Input whose keys ascend (a dump's) goes in by
  bulk_insert in batches of 65,536; from the first key that does not, one insert at a
  time (the last value of a repeated key wins). On any error the new index is removed.";

#[derive(clap::Args)]
struct CompareArgs {
    /// The baseline run's results.json.
    a: PathBuf,
    /// The run compared with it.
    b: PathBuf,
    /// Least change in ops/s (and in pages read, or written, per operation) that is flagged,
    /// as a percentage (10%) or a fraction (0.1); a noisier cell needs more.
    #[arg(long, default_value = "10%")]
    threshold: String,
    /// Print JSON instead of the table.
    #[arg(long)]
    json: bool,
}

/// A percentage (`10%`) or a fraction (`0.1`).
fn parse_fraction(s: &str) -> Result<f64> {
    let t = s.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|x| x / 100.0),
        None => t.parse::<f64>(),
    }
    .with_context(|| format!("{s:?} is not a percentage or a fraction"))?;
    if !(v.is_finite() && v >= 0.0) {
        anyhow::bail!("{s:?} must be a non-negative percentage");
    }
    Ok(v)
}

#[derive(clap::Args)]
struct ReportArgs {
    /// The results of a `flashix bench` run; given two (A B), the page shows B with a
    /// section comparing it with A (as `flashix compare A B`).
    #[arg(num_args = 1..=2, required = true, value_name = "RESULTS")]
    results: Vec<PathBuf>,
    /// Where to write the page [default: report.html beside the (last) RESULTS].
    #[arg(long)]
    out: Option<PathBuf>,
    /// With two runs: the threshold of `flashix compare`.
    #[arg(long, default_value = "10%")]
    threshold: String,
}

#[derive(clap::Args)]
struct ProbeArgs {
    /// Directory for the probe's test file.
    #[arg(long, default_value = "./bench-out/probe-dir")]
    dir: PathBuf,
    /// Where to save the profile (JSON) [default: ./bench-out/device-profile.json; with
    /// --sim, not saved unless given].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Size of the test file in MiB; with --sim, the simulated NAND in MiB (kept in memory).
    #[arg(long = "file-mb", default_value_t = 1024)]
    file_mb: u64,
    /// Seconds per test (simulated seconds with --sim).
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Probe a simulated SSD of this profile instead of a directory's device, in simulated
    /// time, and compare it with the paper's figures: mtron, intel-x25m, iodrive, p300, ocz.
    #[arg(long)]
    sim: Option<String>,
    /// With --sim: at most this many requests per test.
    #[arg(long = "max-ops", default_value_t = 20_000)]
    max_ops: u64,
}

/// The long help of `flashix bench`: workloads, key distributions, scales, peers, rules.
const BENCH_HELP: &str = "\
WORKLOADS (--workload, comma-separated; every one seeded by --seed: two runs with the same
seed perform identical operation streams on every engine and peer)
  o-search, o-insert, o-delete, o-update   100% point searches / inserts of new keys /
                                           deletes / updates of existing keys (FD-tree §5)
  w-search   80/10/5/5   search/insert/delete/update (FD-tree paper §5.6)
  w-insert   20/50/20/10
  w-delete   20/20/50/10
  range-N    scans of N entries from a random existing key (selectivity 1 to 1M;
             max(10, min(OPS, 40*OPS/N)) scans: 4M entries at 100,000 OPS)
  get-many-N get_many of N random existing keys (PIO B-tree MPSearch; OPS/N calls)
  mix-S      S% point searches, the rest inserts (PIO B-tree's insert/search mixes)
  tpcc       a TPC-C-like index trace (PIO B-tree §4.2): 71.5% point search, 23.8% insert,
             3.7% range, 1% delete. The sorted keys are cut into 1000 districts (100
             warehouses x 10), each a contiguous key range (spatial locality); each
             operation picks a district uniformly; new orders are appended just above the
             district's highest key; 60% of searches hit one of the district's 32 newest
             orders (temporal locality), the rest an older order; a range scans the
             district's 20 newest orders (stock-level); a delete removes its oldest
             undelivered order (delivery). Needs uniform or zipf keys.
  bulk-insert-N  Db::bulk_insert of elementary bulks of N new keys (N in 1..10,000), one
             new key per 9 live entries in all (bulk index thesis §6.1: 50,000 keys into
             450,000); a bulk is N consecutive keys just above a random live key (seq
             keys: appended at the end)
  range-delete-N Db::delete_range over N consecutive live keys from a random live key;
             max(1, min(OPS, live/10/N)) of them
  Default: the quick suite o-search,o-insert,o-delete,o-update,w-search,w-insert,
  w-delete,range-1000,tpcc,bulk-insert-100,range-delete-100.

MOVING OBJECTS (a run of their own; the same as `flashix mo-bench`, see its help)
  mo-update  position reports (each object once per Δt_mu = 120 ticks, round robin)
  mo-range-S range queries, window side S% of the 1000 x 1000 space, at a tick up to
             --mo-ahead ahead of now; mo-range-S-T at exactly now + T
  mo-knn-K   K nearest neighbours of a uniform point
  mo-mix-U   U% updates, the rest half mo-range-10, half mo-knn-10
  --engines btree is the Bx-tree (`bx`), any other engine E runs as `mobject:E`;
  --entries is the number of objects (quick 100,000, otherwise 1,000,000); --mo-data
  uniform, gaussian (10 hotspots) or network (a road grid); the budget defaults to 1%
  of the index.

KEY DISTRIBUTIONS (--key-dist)
  uniform  keys are a bijective mix of the entry number (distinct, spread over u64);
           existing keys are picked uniformly
  zipf     the same keys; existing keys are picked Zipf(0.99)-skewed (rank 0 hottest)
  seq      keys are the entry numbers 0, 1, 2, ...: inserts append at the end;
           existing keys are picked uniformly

SCALES (--scale; --entries, --ops and --buffer-pool override it)
  quick    400,000 entries, 10,000 ops per workload, 2 MiB budget: the default suite
           (4 engines x 11 workloads) in minutes
  full     10,000,000-entry aged indexes, 1,000,000 ops per workload, 16 MiB budget
  paper    the FD-tree paper's sizes: 1,000,000,000 entries (8 GB of entries), 16 MB
           pool, 10,000,000 ops per workload: hours to days, ~50 GB of disk per engine
           and ~25 GB of RAM

ENGINES AND PEERS (--engines)
  flashix engines: btree, fdtree, lsm, pio, bulk, latree, fbx, bftl, ipl, dipl.
  All run on the same file (O_DIRECT unless --no-direct-io); ipl and dipl lay a NAND of
  128 KiB erase blocks over it, sized for the entries, and keep their own node frames
  (8 KiB nodes) within the budget.
  Peers, each built only with its cargo feature (--features peers for all):
  rocksdb (feature rocksdb; needs Debian's libclang-dev), fjall, redb, redb-batched,
  lmdb, lmdb-batched (feature lmdb). Every result states how memory was bounded,
  whether I/O bypassed the page cache, and the commit model.

THREADS (--threads N[,M...], default 1)
  Each cell's measured phase runs N threads on one shared index (engine or peer). Each
  thread runs its own stream of the workload, seeded by --seed and its thread index, over
  entries no other thread touches, with its share of the phase's operations; preparation
  and the warm-ups stay single-threaded. A cell reports total ops/s, latency percentiles
  over every thread's operations, and the device's mean queue depth (the device limit is
  taken at that depth). Peers: RocksDB and fjall take concurrent writers; redb and LMDB
  serialize their write transactions (a single writer each). Moving-object workloads
  (mo-*) run with one thread only.

FAIRNESS: the same memory budget (--buffer-pool), data, operation stream, a fresh
directory per engine and a fresh copy of its aged image per workload, and a sync at the
end of the measured phase counted in its time. The aging rule and the device-limit rule
are printed at the start and saved in results.json.";

#[derive(clap::Args)]
struct BenchArgs {
    /// Comma-separated engines (btree, fdtree, lsm, pio, bulk, bftl, latree, fbx, ipl,
    /// dipl) and peers (rocksdb, fjall, redb, redb-batched, lmdb, lmdb-batched; each needs
    /// its cargo feature).
    #[arg(long, default_value = "btree,fdtree,lsm,pio")]
    engines: String,
    /// Comma-separated workloads (see below): o-search, o-insert, o-delete, o-update,
    /// w-search, w-insert, w-delete, range-N, get-many-N, mix-S, tpcc, bulk-insert-N,
    /// range-delete-N.
    #[arg(
        long,
        default_value = "o-search,o-insert,o-delete,o-update,w-search,w-insert,w-delete,range-1000,tpcc,bulk-insert-100,range-delete-100"
    )]
    workload: String,
    /// Size of the suite: quick (400k entries, 10k ops, 2 MiB), full (10M entries, 1M ops,
    /// 16 MiB) or paper (1G entries, 10M ops, 16 MiB).
    #[arg(long, default_value = "quick")]
    scale: String,
    /// Entries bulk-loaded into the index before aging [default: the scale's].
    #[arg(long)]
    entries: Option<u64>,
    /// Measured operations per workload [default: the scale's].
    #[arg(long)]
    ops: Option<u64>,
    /// Runs of each (engine, workload, threads) cell, in rounds over all cells; the median
    /// run is reported with the spread.
    #[arg(long, default_value_t = 1)]
    repeat: u32,
    /// Threads of the measured phase, comma-separated (1,4,16): each (engine, workload)
    /// cell runs with each count in turn, that many threads on the one index, each with a
    /// seeded stream of its own (see THREADS below).
    #[arg(long, default_value = "1")]
    threads: String,
    /// Memory budget of the measured phase (the buffer pool; peers' caches): bytes, or with
    /// a unit (16MiB, 4M, 1G) [default: the scale's: quick 2 MiB, full and paper 16 MiB].
    #[arg(long = "buffer-pool")]
    buffer_pool: Option<String>,
    /// Buffer pool while the aged index is built (not measured; the structure built does
    /// not depend on it).
    #[arg(long = "prep-buffer-pool", default_value = "256MiB")]
    prep_buffer_pool: String,
    /// FD-tree and LSM size ratio k [default: the FD-tree cost model's choice for the
    /// device profile, --entries, --buffer-pool and --search-fraction].
    #[arg(long)]
    k: Option<u32>,
    /// Turn off the FD-tree's deamortized merges (§3.4) and the LSM-tree's step-per-insert
    /// rolling merges, for comparison.
    #[arg(long = "no-deamortize")]
    no_deamortize: bool,
    /// Share of searches the cost models tune the engines for.
    #[arg(long = "search-fraction", default_value_t = 0.5)]
    search_fraction: f64,
    /// LSM deletes search first and skip absent keys, as the FD-tree paper's baseline
    /// does (default: blind tombstones).
    #[arg(long = "lsm-search-before-delete")]
    lsm_search_before_delete: bool,
    /// PIO B-tree OPQ size, taken from the --buffer-pool budget [default: the PIO cost
    /// model's choice for the profile, the budget and --search-fraction].
    #[arg(long = "pio-opq")]
    pio_opq: Option<String>,
    /// PIO B-tree leaf size in segments (pages) [default: the PIO cost model's choice].
    #[arg(long = "pio-leaf-segments")]
    pio_leaf_segments: Option<u32>,
    /// Page (node) size in bytes.
    #[arg(long = "page-size", default_value = "4096")]
    page_size: String,
    /// Key distribution: uniform, zipf or seq (see below).
    #[arg(long = "key-dist", default_value = "uniform")]
    key_dist: String,
    /// Seed of keys and operation draws.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Where indexes are built.
    #[arg(long, default_value = "./bench-out/data")]
    dir: PathBuf,
    /// Where results go.
    #[arg(long, default_value = "./bench-out")]
    out: PathBuf,
    /// Device profile to use [default: OUT/device-profile.json; measured briefly if missing].
    #[arg(long)]
    profile: Option<PathBuf>,
    /// Use buffered I/O instead of O_DIRECT.
    #[arg(long = "no-direct-io")]
    no_direct_io: bool,
    /// Moving-object workloads: the movement (uniform, gaussian, network).
    #[arg(long = "mo-data", default_value = "uniform")]
    mo_data: String,
    /// Moving-object workloads: queries ask for a tick up to this far ahead of now.
    #[arg(long = "mo-ahead", default_value_t = 60)]
    mo_ahead: u64,
}

impl BenchArgs {
    /// The `flashix mo-bench` run this is, when every workload is a moving-object one
    /// (`mo-*`): engines become subjects (`btree` is `bx`, another engine `mobject:<engine>`,
    /// `bx` and `mobject:<engine>` as given), `--entries` the number of objects (default
    /// 100,000 at the quick scale, 1,000,000 otherwise), `--ops` the operations per workload
    /// (default 5,000 quick, 50,000 otherwise).
    fn moving_objects(&self) -> Result<Option<flashix_bench::mobench::MoBenchArgs>> {
        let names: Vec<&str> = self.workload.split(',').map(str::trim).collect();
        let mo = names.iter().filter(|w| w.starts_with("mo-")).count();
        if mo == 0 {
            return Ok(None);
        }
        if mo != names.len() {
            anyhow::bail!(
                "--workload: moving-object workloads (mo-*) run on moving-object subjects; \
                 give them in a run of their own"
            );
        }
        let threads = runner::parse_threads(&self.threads).context("--threads")?;
        if threads != [1] {
            anyhow::bail!(
                "--threads: moving-object workloads (mo-*) do not run with several threads \
                 yet (their updates advance one shared clock and queries ask for times from \
                 it); run them with --threads 1"
            );
        }
        let subjects = self
            .engines
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|e| match e {
                "btree" => "bx".to_string(),
                _ if e == "bx" || e.starts_with("mobject:") => e.to_string(),
                _ => format!("mobject:{e}"),
            })
            .collect::<Vec<_>>()
            .join(",");
        let quick = self.scale == "quick";
        Ok(Some(flashix_bench::mobench::MoBenchArgs {
            subjects,
            workload: names.join(","),
            data: self.mo_data.clone(),
            objects: self
                .entries
                .unwrap_or(if quick { 100_000 } else { 1_000_000 }),
            ops: self.ops.unwrap_or(if quick { 5_000 } else { 50_000 }),
            buffer_pool: self.buffer_pool.clone(),
            max_update_interval: 120,
            max_speed: 3.0,
            ahead: self.mo_ahead,
            seed: self.seed,
            dir: self.dir.join("mo"),
            out: self.out.clone(),
            update_path: flashix_bench::mobench::UpdatePath::Blind,
        }))
    }

    fn config(&self) -> Result<BenchConfig> {
        let mut engines = Vec::new();
        let mut peers = Vec::new();
        for name in self
            .engines
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            if let Ok(p) = name.parse::<PeerKind>() {
                if !peers.contains(&p) {
                    peers.push(p);
                }
                continue;
            }
            let e: EngineKind = name.parse().context("--engines")?;
            if !engines.contains(&e) {
                engines.push(e);
            }
        }
        if engines.is_empty() && peers.is_empty() {
            anyhow::bail!("--engines: no engine given");
        }
        let scale: Scale = self.scale.parse().context("--scale")?;
        let (entries, ops, budget) = scale.sizes();
        let page_size = parse_size(&self.page_size).context("--page-size")?;
        Ok(BenchConfig {
            engines,
            peers,
            workloads: Workload::parse_list(&self.workload).context("--workload")?,
            scale,
            entries: self.entries.unwrap_or(entries),
            ops: self.ops.unwrap_or(ops),
            repeat: self.repeat,
            threads: runner::parse_threads(&self.threads).context("--threads")?,
            buffer_pool_bytes: match &self.buffer_pool {
                Some(b) => parse_size(b).context("--buffer-pool")?,
                None => budget,
            },
            prep_buffer_pool_bytes: parse_size(&self.prep_buffer_pool)
                .context("--prep-buffer-pool")?,
            k: self.k,
            deamortize: !self.no_deamortize,
            search_fraction: self.search_fraction,
            lsm_search_before_delete: self.lsm_search_before_delete,
            pio_opq_bytes: self
                .pio_opq
                .as_deref()
                .map(parse_size)
                .transpose()
                .context("--pio-opq")?,
            pio_leaf_segments: self.pio_leaf_segments,
            page_size: usize::try_from(page_size).context("--page-size: too large")?,
            key_dist: self.key_dist.parse::<KeyDist>().context("--key-dist")?,
            seed: self.seed,
            dir: self.dir.clone(),
            out: self.out.clone(),
            profile: self.profile.clone(),
            direct_io: !self.no_direct_io,
            device: None,
            verbose: true,
        })
    }
}

fn probe_cmd(a: &ProbeArgs) -> Result<()> {
    if !(a.seconds.is_finite() && a.seconds > 0.0) {
        anyhow::bail!("--seconds must be a positive number of seconds");
    }
    if a.file_mb == 0 {
        anyhow::bail!("--file-mb must be at least 1");
    }
    let bytes = a
        .file_mb
        .checked_mul(1 << 20)
        .context("--file-mb: too large")?;
    if let Some(name) = &a.sim {
        let profile: SsdProfile = name.parse().context("--sim")?;
        let cfg = SimProbeConfig {
            nand_bytes: bytes,
            seconds_per_test: a.seconds,
            max_ops: a.max_ops,
            ..SimProbeConfig::new(profile)
        };
        let p = probe::sim::run_sim_probe(&cfg, &mut |m: &str| eprintln!("{m}"))
            .context("probing the simulated SSD")?;
        probe::print_table(&p);
        probe::sim::print_comparison(profile, &probe::sim::compare(profile, &p));
        if let Some(out) = &a.out {
            save_profile(&p, out)?;
        }
        return Ok(());
    }
    let cfg = ProbeConfig {
        dir: a.dir.clone(),
        file_bytes: bytes,
        seconds_per_test: a.seconds,
        ..ProbeConfig::default()
    };
    let profile =
        probe::run_probe(&cfg, &mut |m: &str| eprintln!("{m}")).context("probing the device")?;
    probe::print_table(&profile);
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("./bench-out/device-profile.json"));
    save_profile(&profile, &out)
}

/// Save a profile to `out` (creating its directory) and say where.
fn save_profile(p: &probe::DeviceProfile, out: &std::path::Path) -> Result<()> {
    if let Some(parent) = out.parent() {
        if !parent.as_os_str().is_empty() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
    }
    probe::save_profile(p, out).with_context(|| format!("saving {}", out.display()))?;
    println!("profile: {}", out.display());
    Ok(())
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.cmd {
        Cmd::Check(a) => flashix_bench::ops::check_cmd(&a),
        cmd => run_other(cmd).map(|()| ExitCode::SUCCESS),
    }
}

fn run_other(cmd: Cmd) -> Result<()> {
    match cmd {
        Cmd::Check(_) => Ok(()),
        Cmd::Stats(a) => flashix_bench::ops::stats_cmd(&a),
        Cmd::Dump(a) => flashix_bench::ops::dump_cmd(&a),
        Cmd::Load(a) => flashix_bench::ops::load_cmd(&a),
        Cmd::Compare(a) => {
            let threshold = parse_fraction(&a.threshold).context("--threshold")?;
            let ra = flashix_bench::report::Results::load(&a.a)?;
            let rb = flashix_bench::report::Results::load(&a.b)?;
            let c = flashix_bench::compare::compare(&ra, &rb, threshold);
            if a.json {
                println!("{}", serde_json::to_string_pretty(&c)?);
            } else {
                print!(
                    "{}",
                    flashix_bench::compare::format(
                        &c,
                        &a.a.display().to_string(),
                        &a.b.display().to_string()
                    )
                );
            }
            Ok(())
        }
        Cmd::Probe(a) => probe_cmd(&a),
        Cmd::Bench(a) => {
            if let Some(mo) = a.moving_objects()? {
                return flashix_bench::mobench::run(&mo);
            }
            let cfg = a.config()?;
            runner::run_bench(&cfg).map(|_| ())
        }
        Cmd::FdtreeModel(a) => flashix_bench::model::run(&a),
        Cmd::PioModel(a) => flashix_bench::pio_model::run(&a),
        Cmd::BulkModel(a) => flashix_bench::bulk_model::run(&a),
        Cmd::Advise(a) => flashix_bench::advise::cli::run(&a),
        Cmd::MoBench(a) => flashix_bench::mobench::run(&a),
        Cmd::Sim(a) => flashix_bench::sim_cmd::run(&a).map(|_| ()),
        Cmd::Repro(r) => flashix_bench::repro::run(&r),
        Cmd::Report(a) => {
            let (base, run) = match a.results.as_slice() {
                [run] => (None, run),
                [base, run] => (Some(base), run),
                _ => anyhow::bail!("report: give one or two results.json"),
            };
            let res = flashix_bench::report::Results::load(run)?;
            let out = a.out.unwrap_or_else(|| run.with_file_name("report.html"));
            match base {
                Some(base) => {
                    let threshold = parse_fraction(&a.threshold).context("--threshold")?;
                    let base_res = flashix_bench::report::Results::load(base)?;
                    let c = flashix_bench::compare::compare(&base_res, &res, threshold);
                    let names = (base.display().to_string(), run.display().to_string());
                    flashix_bench::html::save_compared(&res, &c, &names, &out)?;
                }
                None => flashix_bench::html::save(&res, &out)?,
            }
            println!("report: {}", out.display());
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
