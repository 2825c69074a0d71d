//! The `flashix` command: `flashix probe` measures the device, `flashix bench` runs
//! workloads against engines (DESIGN.md, Benchmarks).

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use flashix::EngineKind;
use flashix_bench::probe::{self, ProbeConfig};
use flashix_bench::runner::{self, BenchConfig};
use flashix_bench::units::parse_size;
use flashix_bench::workload::{KeyDist, Workload};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "flashix",
    version,
    about = "flashix device probe and benchmarks"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Measure the device: random 4 KiB IOPS at QD1/QD32, sequential bandwidth, latency by size.
    Probe(ProbeArgs),
    /// Run workloads against engines on an aged index; writes a table and OUT/results.json.
    Bench(BenchArgs),
    /// FD-tree cost model: choose k and the number of levels for a device profile and a mix.
    FdtreeModel(flashix_bench::model::FdTreeModelArgs),
    /// PIO B-tree cost model: choose the leaf size in segments and the OPQ size.
    PioModel(flashix_bench::pio_model::PioModelArgs),
    /// Random page writes on a simulated SSD with each FTL: write amplification, erases, copies.
    Sim(flashix_bench::sim_cmd::SimArgs),
    /// Reproduce a paper's experiments on the simulator: `flashix repro dipl --out DIR`.
    #[command(subcommand)]
    Repro(Repro),
}

#[derive(Subcommand)]
enum Repro {
    /// The d-IPL paper (Na, Lee, Moon, TKDE 2011), §6.2: IPL vs d-IPL on raw NAND.
    Dipl(flashix_bench::repro::DiplReproArgs),
}

#[derive(clap::Args)]
struct ProbeArgs {
    /// Directory for the probe's test file.
    #[arg(long, default_value = "./bench-out/probe-dir")]
    dir: PathBuf,
    /// Where to save the profile (JSON).
    #[arg(long, default_value = "./bench-out/device-profile.json")]
    out: PathBuf,
    /// Size of the test file in MiB.
    #[arg(long = "file-mb", default_value_t = 1024)]
    file_mb: u64,
    /// Seconds per test.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
}

#[derive(clap::Args)]
struct BenchArgs {
    /// Comma-separated engines (btree, lsm, fdtree, pio, bulk, bftl, latree, ipl, dipl).
    #[arg(long, default_value = "btree")]
    engines: String,
    /// Comma-separated workloads: o-search, o-insert, o-delete, o-update (100% of one kind);
    /// w-search 80/10/5/5, w-insert 20/50/20/10, w-delete 20/20/50/10
    /// (search/insert/delete/update); range-N (scans of N entries from a random existing
    /// key; max(10, min(OPS, 4M/N)) scans); get-many-N (get_many of N random existing keys;
    /// OPS/N calls); mix-S (S% searches, the rest inserts).
    #[arg(long, default_value = "o-search,o-insert,w-search,w-insert,w-delete")]
    workload: String,
    /// Entries bulk-loaded into the index before aging.
    #[arg(long, default_value_t = BenchConfig::new().entries)]
    entries: u64,
    /// Measured operations per workload.
    #[arg(long, default_value_t = BenchConfig::new().ops)]
    ops: u64,
    /// Buffer pool budget of the measured phase: bytes, or with a unit (16MiB, 4M, 1G).
    #[arg(long = "buffer-pool", default_value = "16MiB")]
    buffer_pool: String,
    /// Buffer pool while the aged index is built (not measured; the structure built does
    /// not depend on it).
    #[arg(long = "prep-buffer-pool", default_value = "256MiB")]
    prep_buffer_pool: String,
    /// FD-tree and LSM size ratio k [default: the FD-tree cost model's choice for the
    /// device profile, --entries, --buffer-pool and --search-fraction].
    #[arg(long)]
    k: Option<u32>,
    /// Turn off the FD-tree's deamortized merges (§3.4), for comparison.
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
    /// Key distribution: uniform, zipf or seq.
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
}

impl BenchArgs {
    fn config(&self) -> Result<BenchConfig> {
        let mut engines = Vec::new();
        for name in self
            .engines
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            let e: EngineKind = name.parse().context("--engines")?;
            if !engines.contains(&e) {
                engines.push(e);
            }
        }
        if engines.is_empty() {
            anyhow::bail!("--engines: no engine given");
        }
        let page_size = parse_size(&self.page_size).context("--page-size")?;
        Ok(BenchConfig {
            engines,
            workloads: Workload::parse_list(&self.workload).context("--workload")?,
            entries: self.entries,
            ops: self.ops,
            buffer_pool_bytes: parse_size(&self.buffer_pool).context("--buffer-pool")?,
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
    let cfg = ProbeConfig {
        dir: a.dir.clone(),
        file_bytes: a
            .file_mb
            .checked_mul(1 << 20)
            .context("--file-mb: too large")?,
        seconds_per_test: a.seconds,
        ..ProbeConfig::default()
    };
    let profile =
        probe::run_probe(&cfg, &mut |m: &str| eprintln!("{m}")).context("probing the device")?;
    probe::print_table(&profile);
    if let Some(parent) = a.out.parent() {
        if !parent.as_os_str().is_empty() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
    }
    probe::save_profile(&profile, &a.out).with_context(|| format!("saving {}", a.out.display()))?;
    println!("profile: {}", a.out.display());
    Ok(())
}

fn run(cli: Cli) -> Result<()> {
    match cli.cmd {
        Cmd::Probe(a) => probe_cmd(&a),
        Cmd::Bench(a) => {
            let cfg = a.config()?;
            runner::run_bench(&cfg).map(|_| ())
        }
        Cmd::FdtreeModel(a) => flashix_bench::model::run(&a),
        Cmd::PioModel(a) => flashix_bench::pio_model::run(&a),
        Cmd::Sim(a) => flashix_bench::sim_cmd::run(&a).map(|_| ()),
        Cmd::Repro(Repro::Dipl(a)) => {
            flashix_bench::repro::run(&a).map(|r| flashix_bench::repro::print(&r))
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
