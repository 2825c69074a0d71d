//! `flashix bench`: its arguments (with the long help on workloads, key distributions,
//! scales, engines, peers and threads), the [`BenchConfig`] they become, and the run
//! ([`crate::runner::run_bench`]); a run of moving-object workloads only (`mo-*`) goes to
//! [`super::mo_bench`] instead.

use crate::runner::{self, BenchConfig, Scale};
use crate::subjects::peers::PeerKind;
use crate::units::parse_size;
use crate::workload::{KeyDist, Workload};
use anyhow::{Context, Result};
use flashix::EngineKind;
use std::path::PathBuf;

/// The long help of `flashix bench`: workloads, key distributions, scales, peers, rules.
pub const BENCH_HELP: &str = "\
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
pub struct BenchArgs {
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
    fn moving_objects(&self) -> Result<Option<super::mo_bench::MoBenchArgs>> {
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
        Ok(Some(super::mo_bench::MoBenchArgs {
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
            update_path: super::mo_bench::UpdatePath::Blind,
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

/// `flashix bench`: the moving-object run when every workload is one, else the bench.
pub fn run(a: &BenchArgs) -> Result<()> {
    if let Some(mo) = a.moving_objects()? {
        return super::mo_bench::run(&mo);
    }
    let cfg = a.config()?;
    runner::run_bench(&cfg).map(|_| ())
}
