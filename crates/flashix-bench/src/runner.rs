//! The benchmark runner: device profile, preparation of the aged index (once per engine or
//! peer), and the measured phase of each workload on a fresh copy of that image.
//!
//! Fairness (issue 5): every engine and peer gets the same memory budget, the same data
//! (the same keys bulk-loaded and the same aging inserts), the same operation stream
//! ([`OpStream`], a function of the seed), a fresh directory per engine and a fresh copy of
//! its aged image per workload, and a `sync` ([`Target::flush`]) at the end of the measured
//! phase that is counted in its time.

use crate::cgroup::{evict_from_page_cache, PageCacheBound, PEER_MEMORY_ALLOWANCE};
use crate::peers::{self, PeerKind};
use crate::probe::{self, DeviceProfile, ProbeConfig};
use crate::report::{
    self, Interval, Latency, ModelPrediction, Record, Repeat, Results, RunOptions, SubjectInfo,
};
use crate::target::{process_io, Target, TargetInfo};
use crate::units::format_size;
use crate::workload::{rng_for, KeyDist, KeyGen, KeySpace, Op, OpStream, Workload};
use anyhow::{bail, Context, Result};
use flashix::cost::fdtree as fd_model;
use flashix::{
    Db, DeviceSpec, DiplOptions, EngineKind, FdTreeOptions, IplOptions, LsmOptions, Options,
    PioOptions, Stats, Tuning,
};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Instant;

/// Share of the bulk-loaded leaves that aging makes split (FD-tree paper, App. D).
pub const AGING_SPLIT_SHARE: f64 = 0.2;
/// Longest PIO leaf (in segments) the PIO cost model considers.
pub const PIO_MAX_SEGMENTS: usize = 16;
/// Share of `entries` inserted by aging when an engine reports no leaf counters.
pub const AGING_FALLBACK_SHARE: f64 = 0.1;
/// Points of the per-interval latency series of a measured phase.
pub const SERIES_POINTS: u64 = 100;
/// Pairs per `bulk_insert` call when a peer is loaded or aged.
pub const PEER_LOAD_CHUNK: usize = 100_000;
/// Aging inserts per batch for peers.
pub const PEER_AGING_BATCH: usize = 1000;
/// Erase block of the NAND that the IPL and d-IPL B+-trees lay over the benchmark's file:
/// the d-IPL paper's 128 KiB (§6.1: 64 pages of 2 KiB), in pages of `--page-size`.
pub const IPL_ERASE_BLOCK_BYTES: u64 = 128 << 10;

/// Erase blocks of that NAND for an index of `entries` (plus aging, at most as many again):
/// 16-byte entries in nodes at least half full, over the blocks' data pages (IPL keeps
/// `log_pages` of each block for its log), twice over for the blocks that merges and
/// garbage collection need free, and at least the engines' default.
pub fn ipl_nand_blocks(entries: u64, page_size: u64, log_pages: u64) -> u32 {
    let ppb = (IPL_ERASE_BLOCK_BYTES / page_size).max(1);
    let data_per_block = (ppb.saturating_sub(log_pages)).max(1) * page_size;
    let bytes = entries
        .saturating_mul(2)
        .saturating_mul(16)
        .saturating_mul(2);
    let blocks = 2 * bytes.div_ceil(data_per_block) + 64;
    u32::try_from(blocks)
        .unwrap_or(u32::MAX)
        .max(IplOptions::default().nand_blocks)
}

/// The preparation rule, as printed and saved in `results.json`.
pub const AGING_RULE: &str = "the index is created with the measured buffer pool (so that \
cost models tune it for that pool), then reopened with the preparation pool (PREP_POOL; \
the structure built does not depend on it). One bulk_insert of the first ENTRIES keys (so \
that the engine bulk-loads them: a B+-tree at fill factor 0.7), then new keys are inserted \
one by one, at most ENTRIES of them, until: for an engine with leaf counters (B+-tree), \
engine_counters[\"leaf_splits\"] has grown by 20% of engine_counters[\"leaves\"] measured \
right after the bulk load (FD-tree paper App. D: bulk load with load factor 0.7, then insert \
entries to make 20% of the leaves split); for an engine of stepped levels (FD-tree levels, \
LSM components; counters <level|component>_<i>_entries and _capacity), every level above \
the lowest is at least half full; other engines get ENTRIES/10 inserts. Peers (RocksDB, \
fjall, redb, LMDB) get the same data: the ENTRIES keys in write batches of 100,000, then the \
same aging keys as the first flashix engine of the run (ENTRIES/10 when there is none), in \
batches of 1,000. Then close. Every workload starts from a fresh copy of the aged index, \
opened with the measured pool (peers: the same budget) and warmed with min(OPS/10, 10000) \
unmeasured searches; its measured phase ends with a sync (Db::flush, or the peer's) counted \
in its time.";

/// How the share of the device's limit is computed, as printed and saved.
pub const DEVICE_LIMIT_RULE: &str = "device time per operation = read time + write time, \
with read time = max(read requests per op / random-read IOPS at the engine's mean read queue \
depth in the phase (read requests / read batches, DeviceStats::read_batches; interpolated in \
log2(QD) between the profile's QD1 and QD32, clamped), read bytes per op / sequential read bandwidth) and write time = bytes \
written per op (device and WAL) / sequential write bandwidth. The limit is 1 / device time \
(ops/s); the share is the measured ops/s divided by it. A pure search workload is thus \
bounded by the random-read IOPS at its queue depth, a pure insert workload by the \
sequential write bandwidth divided by the bytes it writes per insert. Peers' I/O is counted \
from /proc/self/io (read and written bytes; requests taken as 4 KiB pages). Their queue depth cannot be observed (background threads, readahead), so their reads are charged at the profile's QD32 rate, the device's best case: a peer's share is a lower bound.";

/// The queue depth a peer's reads are charged at (DEVICE_LIMIT_RULE): the profile's highest.
pub const PEER_CHARGED_QUEUE_DEPTH: u32 = 32;

/// How big a suite is: `--scale`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// The default: the whole default suite in about 2 minutes on a 2-core machine.
    Quick,
    /// 10M-entry aged indexes.
    Full,
    /// The papers' sizes (FD-tree paper §5: an index of one billion entries, a 16 MB
    /// buffer pool, 10 million operations per workload).
    Paper,
}

impl Scale {
    pub fn name(self) -> &'static str {
        match self {
            Scale::Quick => "quick",
            Scale::Full => "full",
            Scale::Paper => "paper",
        }
    }

    /// (entries, ops, memory budget in bytes) of the scale. The budget keeps most of the
    /// index out of memory, as in the papers (FD-tree §5: a 16 MB pool for an 8 GB index).
    pub fn sizes(self) -> (u64, u64, u64) {
        match self {
            Scale::Quick => (400_000, 10_000, 2 << 20),
            Scale::Full => (10_000_000, 1_000_000, 16 << 20),
            Scale::Paper => (1_000_000_000, 10_000_000, 16 << 20),
        }
    }

    /// A warning of the time and disk the scale needs, if any.
    pub fn warning(self) -> Option<&'static str> {
        match self {
            Scale::Quick => None,
            Scale::Full => Some(
                "--scale full: 10M-entry aged indexes, 1M operations per workload; about 0.5 GB \
                 of disk per engine (the aged image and one working copy) and tens of minutes \
                 per engine",
            ),
            Scale::Paper => Some(
                "--scale paper: the FD-tree paper's sizes, one billion entries (8 GB of \
                 entries; an aged image plus a working copy need about 40-50 GB of disk per \
                 engine) and 10 million operations per workload: hours to days per engine. \
                 The bulk load passes all entries in one call and the runner keeps the live \
                 entry list: about 25 GB of RAM. Check the free space under --dir first",
            ),
        }
    }
}

impl fmt::Display for Scale {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Scale {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "quick" => Scale::Quick,
            "full" => Scale::Full,
            "paper" => Scale::Paper,
            _ => bail!("unknown scale {s:?}; expected quick, full or paper"),
        })
    }
}

/// Everything `flashix bench` needs.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    pub engines: Vec<EngineKind>,
    /// Peer engines (each needs its cargo feature).
    pub peers: Vec<PeerKind>,
    pub workloads: Vec<Workload>,
    /// The scale the sizes came from (recorded; `entries` and `ops` are what runs).
    pub scale: Scale,
    /// Entries of the bulk-loaded index.
    pub entries: u64,
    /// Measured operations per workload.
    pub ops: u64,
    /// Runs of each (engine, workload) cell; the median run is reported with the spread.
    pub repeat: u32,
    pub buffer_pool_bytes: u64,
    /// Buffer pool while the aged index is built (not measured).
    pub prep_buffer_pool_bytes: u64,
    pub page_size: usize,
    pub key_dist: KeyDist,
    /// FD-tree and LSM size ratio; `None`: the FD-tree cost model's choice for the device
    /// profile, `entries`, the measured pool and `search_fraction`.
    pub k: Option<u32>,
    /// FD-tree deamortized merges (§3.4).
    pub deamortize: bool,
    /// Search share the cost models tune for.
    pub search_fraction: f64,
    /// LSM deletes search first (the FD-tree paper's baseline) instead of blind tombstones.
    pub lsm_search_before_delete: bool,
    /// PIO B-tree OPQ bytes; `None`: its cost model's choice. Taken from the budget.
    pub pio_opq_bytes: Option<u64>,
    /// PIO B-tree leaf segments; `None`: its cost model's choice.
    pub pio_leaf_segments: Option<u32>,
    pub seed: u64,
    /// Where indexes are built.
    pub dir: PathBuf,
    /// Where results go.
    pub out: PathBuf,
    /// Device profile; `None` means `out/device-profile.json`.
    pub profile: Option<PathBuf>,
    pub direct_io: bool,
    /// Show progress bars and messages on the terminal.
    pub verbose: bool,
}

impl BenchConfig {
    /// The scale's name, or that it was overridden when `--entries`, `--ops` or
    /// `--buffer-pool` changed one of its sizes.
    pub fn scale_label(&self) -> String {
        let (entries, ops, budget) = self.scale.sizes();
        if (self.entries, self.ops, self.buffer_pool_bytes) == (entries, ops, budget) {
            self.scale.to_string()
        } else {
            format!("{}, sizes overridden", self.scale)
        }
    }

    /// The defaults of `flashix bench` (`--scale quick`).
    pub fn new() -> Self {
        let (entries, ops, budget) = Scale::Quick.sizes();
        BenchConfig {
            engines: vec![
                EngineKind::BTree,
                EngineKind::FdTree,
                EngineKind::Lsm,
                EngineKind::PioBTree,
            ],
            peers: Vec::new(),
            workloads: Workload::DEFAULT.to_vec(),
            scale: Scale::Quick,
            entries,
            ops,
            repeat: 1,
            buffer_pool_bytes: budget,
            prep_buffer_pool_bytes: 256 << 20,
            page_size: 4096,
            key_dist: KeyDist::Uniform,
            k: None,
            deamortize: true,
            search_fraction: 0.5,
            lsm_search_before_delete: false,
            pio_opq_bytes: None,
            pio_leaf_segments: None,
            seed: 42,
            dir: PathBuf::from("./bench-out/data"),
            out: PathBuf::from("./bench-out"),
            profile: None,
            direct_io: true,
            verbose: true,
        }
    }

    /// The options an index is created with: the measured memory budget, and a cost-model
    /// tuning from the device profile (the engines' own models pick what is left unset:
    /// FD-tree and LSM `k`, PIO B-tree leaf and OPQ size).
    pub fn options(&self, engine: EngineKind, profile: &DeviceProfile) -> Result<Options> {
        let tuning = Tuning {
            device: crate::model::device_costs(profile, self.page_size)?,
            expected_entries: self.entries,
            search_fraction: self.search_fraction,
            pio_device: Some(crate::pio_model::pio_costs(
                profile,
                self.page_size,
                PIO_MAX_SEGMENTS,
            )?),
        };
        let fdtree = FdTreeOptions {
            k: self.k,
            deamortize: self.deamortize,
            ..FdTreeOptions::default()
        };
        let lsm = LsmOptions {
            k: self.k,
            search_before_delete: self.lsm_search_before_delete,
            ..LsmOptions::default()
        };
        let pio = PioOptions {
            leaf_segments: self.pio_leaf_segments,
            opq_bytes: self.pio_opq_bytes,
            ..PioOptions::default()
        };
        // The IPL and d-IPL B+-trees lay a NAND over the file: 128 KiB erase blocks of
        // `--page-size` pages (IPL's 8 KiB log area per block), sized for the entries.
        let ppb = (IPL_ERASE_BLOCK_BYTES / self.page_size as u64).max(1) as u32;
        let ipl_defaults = IplOptions::default();
        let ipl = IplOptions {
            pages_per_block: ppb,
            nand_blocks: ipl_nand_blocks(
                self.entries,
                self.page_size as u64,
                ipl_defaults.log_area_bytes / self.page_size as u64,
            ),
            ..ipl_defaults
        };
        let dipl = DiplOptions {
            pages_per_block: ppb,
            nand_blocks: ipl_nand_blocks(self.entries, self.page_size as u64, 0),
            ..DiplOptions::default()
        };
        Ok(Options::new(engine)
            .page_size(self.page_size)
            .buffer_pool_bytes(self.buffer_pool_bytes)
            .device(DeviceSpec::File {
                direct_io: self.direct_io,
            })
            .tuning(tuning)
            .fdtree(fdtree)
            .lsm(lsm)
            .pio(pio)
            .ipl(ipl)
            .dipl(dipl))
    }

    /// The memory budget of the measured phase. Every engine gets the same: an engine that
    /// keeps a structure outside its pool takes it from this budget (the PIO B-tree's OPQ).
    pub fn measured_pool(&self, _engine: EngineKind, _profile: &DeviceProfile) -> Result<u64> {
        Ok(self.buffer_pool_bytes)
    }

    fn check(&self) -> Result<()> {
        if self.workloads.is_empty() {
            bail!("no workload given");
        }
        if self.entries == 0 {
            bail!("--entries must be at least 1");
        }
        if self.ops == 0 {
            bail!("--ops must be at least 1");
        }
        if self.repeat == 0 {
            bail!("--repeat must be at least 1");
        }
        for &e in &self.engines {
            if !flashix::engine::is_built(e) {
                bail!("engine {e} is not built yet: choose among the engines `--help` lists");
            }
        }
        for p in &self.peers {
            if !p.built() {
                bail!(
                    "peer {p} is not built into this binary: rebuild with `cargo build \
                     --release -p flashix-bench --features {}` (or --features peers)",
                    p.feature()
                );
            }
        }
        if self.engines.is_empty() && self.peers.is_empty() {
            bail!("no engine or peer given");
        }
        if !(0.0..=1.0).contains(&self.search_fraction) {
            bail!("--search-fraction must be within 0..=1");
        }
        Ok(())
    }
}

impl Default for BenchConfig {
    fn default() -> Self {
        BenchConfig::new()
    }
}

/// An engine or a peer: what a result row is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    Engine(EngineKind),
    Peer(PeerKind),
}

impl Subject {
    pub fn name(self) -> &'static str {
        match self {
            Subject::Engine(e) => e.name(),
            Subject::Peer(p) => p.name(),
        }
    }

    /// How memory is bounded, page-cache bypass and commit model.
    pub fn info(self, cfg: &BenchConfig) -> TargetInfo {
        match self {
            Subject::Peer(p) => p.info(cfg.buffer_pool_bytes),
            Subject::Engine(e) => TargetInfo {
                memory_bound: format!(
                    "buffer pool = budget ({}){}",
                    format_size(cfg.buffer_pool_bytes),
                    if e == EngineKind::PioBTree {
                        ", OPQ taken from it"
                    } else {
                        ""
                    }
                ),
                page_cache_bypassed: cfg.direct_io,
                commit_model: "logical redo WAL appended per write; durable at Db::flush (the \
                               end-of-phase sync)"
                    .to_string(),
            },
        }
    }
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

fn say(cfg: &BenchConfig, ui: &Ui, msg: &str) {
    if cfg.verbose {
        ui.println(msg);
    }
}

/// The terminal's progress bars: one for the whole suite (cells done, ETA) and one per
/// phase below it.
pub struct Ui {
    mp: MultiProgress,
    suite: ProgressBar,
    verbose: bool,
}

impl Ui {
    fn new(cfg: &BenchConfig, cells: u64) -> Ui {
        let mp = MultiProgress::with_draw_target(if cfg.verbose {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        });
        let suite = mp.add(ProgressBar::new(cells));
        if let Ok(style) = ProgressStyle::with_template(
            "{msg:<28} [{bar:30}] {pos}/{len} cells, {elapsed} elapsed, eta {eta}",
        ) {
            suite.set_style(style.progress_chars("=> "));
        }
        suite.set_message("suite");
        Ui {
            mp,
            suite,
            verbose: cfg.verbose,
        }
    }

    /// A message above the bars (on stderr without them, e.g. when it is not a terminal).
    fn println(&self, msg: &str) {
        if !self.verbose {
            return;
        }
        if self.mp.is_hidden() {
            eprintln!("{msg}");
        } else {
            let _ = self.mp.println(msg);
        }
    }

    fn bar(&self, len: u64, msg: String) -> ProgressBar {
        self.styled_bar(
            len,
            msg,
            "{msg:<28} [{bar:30}] {pos}/{len} {per_sec} eta {eta}",
        )
    }

    fn styled_bar(&self, len: u64, msg: String, template: &str) -> ProgressBar {
        let pb = self.mp.add(ProgressBar::new(len));
        if let Ok(style) = ProgressStyle::with_template(template) {
            pb.set_style(style.progress_chars("=> "));
        }
        pb.set_message(msg);
        pb
    }

    /// A spinner for a step of unknown length (one bulk_insert call, copying an image).
    fn spinner(&self, msg: String) -> ProgressBar {
        let pb = self.mp.add(ProgressBar::new_spinner());
        if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} {elapsed}") {
            pb.set_style(style);
        }
        pb.set_message(msg);
        pb.enable_steady_tick(std::time::Duration::from_millis(200));
        pb
    }
}

/// Load the device profile, or measure and save a short one when the file is missing.
pub fn device_profile(cfg: &BenchConfig) -> Result<DeviceProfile> {
    let path = cfg
        .profile
        .clone()
        .unwrap_or_else(|| cfg.out.join("device-profile.json"));
    if path.exists() {
        return probe::load_profile(&path)
            .with_context(|| format!("loading the device profile {}", path.display()));
    }
    say_plain(
        cfg,
        &format!(
            "no device profile at {}: measuring a short one (256 MiB file, 0.5 s per test)",
            path.display()
        ),
    );
    let pcfg = ProbeConfig {
        dir: cfg.dir.join("probe"),
        file_bytes: 256 << 20,
        seconds_per_test: 0.5,
        seed: cfg.seed,
    };
    let verbose = cfg.verbose;
    let profile = probe::run_probe(&pcfg, &mut |m: &str| {
        if verbose {
            eprintln!("  probe: {m}");
        }
    })
    .context("measuring the device (pass --profile FILE to use a saved profile)")?;
    let _ = std::fs::remove_dir_all(&pcfg.dir);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    probe::save_profile(&profile, &path)
        .with_context(|| format!("saving the device profile to {}", path.display()))?;
    if cfg.verbose {
        probe::print_table(&profile);
    }
    Ok(profile)
}

fn say_plain(cfg: &BenchConfig, msg: &str) {
    if cfg.verbose {
        eprintln!("{msg}");
    }
}

/// Run every (engine or peer, workload) cell of `cfg` `cfg.repeat` times, print the table,
/// and write `out/results.json` and `out/report.html`.
pub fn run_bench(cfg: &BenchConfig) -> Result<Results> {
    cfg.check()?;
    std::fs::create_dir_all(&cfg.out)
        .with_context(|| format!("creating the output directory {}", cfg.out.display()))?;
    std::fs::create_dir_all(&cfg.dir)
        .with_context(|| format!("creating the data directory {}", cfg.dir.display()))?;
    if let Some(w) = cfg.scale.warning() {
        say_plain(cfg, &format!("warning: {w}"));
    }
    let profile = device_profile(cfg)?;
    let subjects: Vec<Subject> = cfg
        .engines
        .iter()
        .map(|&e| Subject::Engine(e))
        .chain(cfg.peers.iter().map(|&p| Subject::Peer(p)))
        .collect();
    if cfg.verbose {
        println!(
            "flashix bench (scale {}): {} entries, {} ops/workload, {} keys, page {} B, \
             memory budget {}, {}, seed {}, {} run(s) per cell",
            cfg.scale_label(),
            cfg.entries,
            cfg.ops,
            cfg.key_dist,
            cfg.page_size,
            format_size(cfg.buffer_pool_bytes),
            if cfg.direct_io {
                "O_DIRECT"
            } else {
                "buffered I/O"
            },
            cfg.seed,
            cfg.repeat,
        );
        println!(
            "preparation (PREP_POOL = {}): {AGING_RULE}",
            format_size(cfg.prep_buffer_pool_bytes)
        );
        println!("device limit: {DEVICE_LIMIT_RULE}");
    }
    let cells = subjects.len() as u64 * cfg.workloads.len() as u64 * u64::from(cfg.repeat);
    let ui = Ui::new(cfg, cells);

    let mut records = Vec::new();
    let mut infos = Vec::new();
    // Aging inserts of the first flashix engine: what peers get too.
    let mut aging_for_peers: Option<u64> = None;
    for &subject in &subjects {
        ui.suite.set_message(format!("suite: {subject}"));
        let subject_dir = cfg.dir.join(subject.name());
        let prep = match subject {
            Subject::Engine(e) => prepare(cfg, &ui, e, &profile)
                .with_context(|| format!("preparing the {e} index"))?,
            Subject::Peer(p) => {
                let aging = aging_for_peers
                    .unwrap_or_else(|| (cfg.entries as f64 * AGING_FALLBACK_SHARE).round() as u64);
                prepare_peer(cfg, &ui, p, aging)
                    .with_context(|| format!("preparing the {p} store"))?
            }
        };
        if matches!(subject, Subject::Engine(_)) && aging_for_peers.is_none() {
            aging_for_peers = Some(prep.aging_inserts);
        }
        let info = subject.info(cfg);
        infos.push(SubjectInfo {
            name: subject.name().to_string(),
            kind: match subject {
                Subject::Engine(_) => "flashix".into(),
                Subject::Peer(_) => "peer".into(),
            },
            memory_bound: info.memory_bound.clone(),
            page_cache_bypassed: info.page_cache_bypassed,
            commit_model: info.commit_model.clone(),
        });
        for &w in &cfg.workloads {
            let mut runs = Vec::with_capacity(cfg.repeat as usize);
            for _ in 0..cfg.repeat {
                let rec = run_workload(cfg, &ui, subject, &prep, w, &profile)
                    .with_context(|| format!("running {w} on {subject}"))?;
                ui.suite.inc(1);
                runs.push(rec);
            }
            let rec = median_of(runs);
            say(
                cfg,
                &ui,
                &format!(
                    "{subject} {w}: {:.0} ops/s, p50 {:.1} us, p99 {:.1} us, {:.3} reads/op, \
                     {:.3} writes/op{}",
                    rec.ops_per_sec,
                    rec.latency_us.p50,
                    rec.latency_us.p99,
                    rec.reads_per_op,
                    rec.writes_per_op,
                    rec.device_limit
                        .as_ref()
                        .map(|d| format!(", {:.0}% of the device limit", d.share * 100.0))
                        .unwrap_or_default()
                ),
            );
            // How memory was bounded is known once a phase ran (a memory cgroup or not).
            if let Some(last) = infos.last_mut() {
                last.memory_bound.clone_from(&rec.memory_bound);
            }
            records.push(rec);
        }
        std::fs::remove_dir_all(&subject_dir)
            .with_context(|| format!("removing {}", subject_dir.display()))?;
        // Save what is done so far, so that a failure or an interrupt later in a long run
        // keeps the finished subjects' results.
        save_results(&results_of(cfg, &profile, &infos, &records), cfg)?;
    }
    ui.suite.finish_and_clear();

    let results = results_of(cfg, &profile, &infos, &records);
    let (path, html) = save_results(&results, cfg)?;
    if cfg.verbose {
        println!("{}", report::format_table(&results.results));
        println!("results: {}", path.display());
        println!("report:  {}", html.display());
    }
    Ok(results)
}

/// Write `out/results.json` and `out/report.html`; returns their paths.
fn save_results(results: &Results, cfg: &BenchConfig) -> Result<(PathBuf, PathBuf)> {
    let path = cfg.out.join("results.json");
    results.save(&path)?;
    let html = cfg.out.join("report.html");
    crate::html::save(results, &html)?;
    Ok((path, html))
}

/// The results of the cells run so far.
fn results_of(
    cfg: &BenchConfig,
    profile: &DeviceProfile,
    infos: &[SubjectInfo],
    records: &[Record],
) -> Results {
    Results {
        flashix_version: env!("CARGO_PKG_VERSION").to_string(),
        git_commit: report::git_commit(),
        key_distribution: cfg.key_dist.to_string(),
        scale: cfg.scale_label(),
        device_profile: profile.clone(),
        options: RunOptions {
            page_size: cfg.page_size,
            buffer_pool_bytes: cfg.buffer_pool_bytes,
            prep_buffer_pool_bytes: cfg.prep_buffer_pool_bytes,
            search_fraction: cfg.search_fraction,
            direct_io: cfg.direct_io,
            entries: cfg.entries,
            ops: cfg.ops,
            key_dist: cfg.key_dist.to_string(),
            seed: cfg.seed,
            repeat: cfg.repeat,
        },
        aging_rule: AGING_RULE.to_string(),
        device_limit_rule: DEVICE_LIMIT_RULE.to_string(),
        subjects: infos.to_vec(),
        results: records.to_vec(),
    }
}

/// The run of median ops/s among `runs` (the lower median for an even count), with the
/// spread of all runs in its `repeat` field.
pub fn median_of(mut runs: Vec<Record>) -> Record {
    runs.sort_by(|a, b| a.ops_per_sec.total_cmp(&b.ops_per_sec));
    let ops: Vec<f64> = runs.iter().map(|r| r.ops_per_sec).collect();
    let p99: Vec<f64> = runs.iter().map(|r| r.latency_us.p99).collect();
    let mid = (runs.len() - 1) / 2;
    let mut rec = runs.swap_remove(mid);
    if ops.len() > 1 {
        let (min, max) = (ops[0], ops[ops.len() - 1]);
        rec.repeat = Some(Repeat {
            runs: ops.len() as u32,
            median_ops_per_sec: rec.ops_per_sec,
            min_ops_per_sec: min,
            max_ops_per_sec: max,
            spread: (max - min) / rec.ops_per_sec.max(1e-9),
            ops_per_sec: ops,
            p99_us: p99,
        });
    }
    rec
}

/// An aged index image of one engine or peer.
pub struct Prepared {
    pub aged_dir: PathBuf,
    /// Entries the image holds: `entries + aging_inserts`.
    pub live: u64,
    pub aging_inserts: u64,
    pub prepare_s: f64,
}

fn counter(s: &Stats, name: &str) -> Option<u64> {
    s.engine_counters.get(name).copied()
}

/// How aging decides it is done (AGING_RULE), from the counters after the bulk load.
enum AgingGoal {
    /// Until `leaf_splits` has grown by `target` from `splits0`.
    LeafSplits { target: u64, splits0: u64 },
    /// Until every level above the lowest is at least half full.
    Levels,
    /// A fixed number of inserts.
    Inserts(u64),
}

/// (level, entries, capacity) of an engine of stepped levels, from its counters
/// `<level|component>_<i>_entries` and `_capacity`, by level.
pub fn level_fill(counters: &BTreeMap<String, u64>) -> Vec<(u64, u64, u64)> {
    let mut out = Vec::new();
    for prefix in ["level_", "component_"] {
        for (name, &cap) in counters {
            let Some(i) = name
                .strip_prefix(prefix)
                .and_then(|r| r.strip_suffix("_capacity"))
                .and_then(|i| i.parse::<u64>().ok())
            else {
                continue;
            };
            let entries = counters
                .get(&format!("{prefix}{i}_entries"))
                .copied()
                .unwrap_or(0);
            out.push((i, entries, cap));
        }
    }
    out.sort_unstable();
    out
}

/// True when every level above the lowest is at least half full (an index of one level
/// or none counts as aged).
pub fn levels_half_full(levels: &[(u64, u64, u64)]) -> bool {
    match levels.split_last() {
        None => true,
        Some((_, upper)) => upper.iter().all(|&(_, e, cap)| e.saturating_mul(2) >= cap),
    }
}

fn describe_levels(levels: &[(u64, u64, u64)]) -> String {
    levels
        .iter()
        .map(|&(i, e, cap)| format!("L{i} {:.0}%", 100.0 * e as f64 / cap.max(1) as f64))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Build the aged index of `engine` in `dir/<engine>/aged` (AGING_RULE).
pub fn prepare(
    cfg: &BenchConfig,
    ui: &Ui,
    engine: EngineKind,
    profile: &DeviceProfile,
) -> Result<Prepared> {
    let engine_dir = cfg.dir.join(engine.name());
    if engine_dir.exists() {
        std::fs::remove_dir_all(&engine_dir)
            .with_context(|| format!("removing the old {}", engine_dir.display()))?;
    }
    let aged_dir = engine_dir.join("aged");
    let t0 = Instant::now();
    Db::create(&aged_dir, cfg.options(engine, profile)?)
        .with_context(|| format!("creating a {engine} index in {}", aged_dir.display()))?
        .close()
        .context("closing the new index")?;
    let mut db = Db::open_with_buffer_pool(&aged_dir, cfg.prep_buffer_pool_bytes)
        .with_context(|| format!("opening {} with the preparation pool", aged_dir.display()))?;
    let gen = KeyGen::new(cfg.key_dist, cfg.seed);

    // Bulk load: one call, so that the engine builds the index bottom-up (a chunked load
    // would bulk-load only the first chunk and insert the rest one by one at the right edge,
    // leaving half-full leaves).
    let pb = ui.spinner(format!("{engine}: bulk load of {} entries", cfg.entries));
    let pairs: Vec<(u64, u64)> = (0..cfg.entries)
        .map(|i| {
            let k = gen.key_of(i);
            (k, gen.value_of(k, 0))
        })
        .collect();
    db.bulk_insert(&pairs).context("bulk_insert")?;
    pb.finish_and_clear();
    drop(pairs);

    // Age.
    let s0 = db.stats();
    let mut ks = KeySpace::with_entries(gen, cfg.entries);
    let limit = cfg.entries;
    let goal = match (counter(&s0, "leaves"), counter(&s0, "leaf_splits")) {
        (Some(leaves), Some(splits0)) => AgingGoal::LeafSplits {
            target: (leaves as f64 * AGING_SPLIT_SHARE).ceil() as u64,
            splits0,
        },
        _ if !level_fill(&s0.engine_counters).is_empty() => AgingGoal::Levels,
        _ => AgingGoal::Inserts(
            ((cfg.entries as f64 * AGING_FALLBACK_SHARE).round() as u64).min(limit),
        ),
    };
    let grown = |db: &Db, splits0: u64| {
        counter(&db.stats(), "leaf_splits")
            .unwrap_or(splits0)
            .saturating_sub(splits0)
    };
    // Leaf splits come late (leaves fill from the bulk fill factor first), so the aging bar
    // shows splits and inserts, and its ETA is rough; the level rule shows inserts.
    let pb = match goal {
        AgingGoal::LeafSplits { target, .. } => ui.styled_bar(
            target,
            format!("{engine}: aging"),
            "{msg:<28} [{bar:30}] {pos}/{len} leaf splits, {prefix} inserts, {elapsed}, eta {eta}",
        ),
        AgingGoal::Levels => ui.bar(limit, format!("{engine}: aging (levels)")),
        AgingGoal::Inserts(n) => ui.bar(n, format!("{engine}: aging (inserts)")),
    };
    let mut inserts = 0u64;
    loop {
        if inserts % 256 == 0 {
            let done = match goal {
                AgingGoal::LeafSplits { target, splits0 } => {
                    let g = grown(&db, splits0);
                    pb.set_position(g.min(target));
                    pb.set_prefix(inserts.to_string());
                    g >= target
                }
                AgingGoal::Levels => {
                    pb.set_position(inserts);
                    levels_half_full(&level_fill(&db.stats().engine_counters))
                }
                AgingGoal::Inserts(n) => {
                    pb.set_position(inserts);
                    inserts >= n
                }
            };
            if done {
                break;
            }
        }
        if inserts >= limit {
            break;
        }
        let k = ks.insert_new();
        db.insert(k, gen.value_of(k, 1)).context("aging insert")?;
        inserts += 1;
    }
    pb.finish_and_clear();
    db.flush().context("flush after aging")?;
    let s1 = db.stats();
    let summary = match goal {
        AgingGoal::LeafSplits { target, splits0 } => format!(
            "{} leaf splits of {target} wanted, {} leaves after bulk load",
            grown(&db, splits0),
            counter(&s0, "leaves").unwrap_or(0)
        ),
        AgingGoal::Levels => {
            let levels = level_fill(&s1.engine_counters);
            format!(
                "levels {}{}",
                describe_levels(&levels),
                if levels_half_full(&levels) {
                    ""
                } else {
                    " (insert limit reached first)"
                }
            )
        }
        AgingGoal::Inserts(_) => "no leaf or level counters".to_string(),
    };
    say(
        cfg,
        ui,
        &format!("{engine}: aged with {inserts} inserts ({summary})"),
    );
    db.close().context("closing the aged index")?;
    let prepare_s = t0.elapsed().as_secs_f64();
    say(cfg, ui, &format!("{engine}: prepared in {prepare_s:.1} s"));
    Ok(Prepared {
        aged_dir,
        live: ks.live(),
        aging_inserts: inserts,
        prepare_s,
    })
}

/// Build the aged store of a peer in `dir/<peer>/aged`: the same ENTRIES keys in write
/// batches, then `aging` more keys (the next entry indices, as for the flashix engines) in
/// batches (AGING_RULE).
pub fn prepare_peer(cfg: &BenchConfig, ui: &Ui, peer: PeerKind, aging: u64) -> Result<Prepared> {
    let dir = cfg.dir.join(peer.name());
    if dir.exists() {
        std::fs::remove_dir_all(&dir)
            .with_context(|| format!("removing the old {}", dir.display()))?;
    }
    let aged_dir = dir.join("aged");
    let t0 = Instant::now();
    let mut db = peers::open(peer, &aged_dir, cfg.prep_buffer_pool_bytes, true)?;
    let gen = KeyGen::new(cfg.key_dist, cfg.seed);
    let total = cfg.entries + aging;
    let pb = ui.bar(total, format!("{peer}: load and age"));
    let mut chunk = Vec::with_capacity(PEER_LOAD_CHUNK);
    let mut i = 0;
    while i < total {
        let size = if i < cfg.entries {
            PEER_LOAD_CHUNK.min((cfg.entries - i) as usize)
        } else {
            PEER_AGING_BATCH.min((total - i) as usize)
        };
        chunk.clear();
        chunk.extend((i..i + size as u64).map(|j| {
            let k = gen.key_of(j);
            (k, gen.value_of(k, u64::from(j >= cfg.entries)))
        }));
        chunk.sort_unstable();
        db.bulk_insert(&chunk).context("loading the peer")?;
        i += size as u64;
        pb.set_position(i);
    }
    pb.finish_and_clear();
    db.flush().context("flush after loading")?;
    db.close().context("closing the aged store")?;
    let prepare_s = t0.elapsed().as_secs_f64();
    say(
        cfg,
        ui,
        &format!(
            "{peer}: loaded {} entries and aged with {aging} inserts in {prepare_s:.1} s",
            cfg.entries
        ),
    );
    Ok(Prepared {
        aged_dir,
        live: total,
        aging_inserts: aging,
        prepare_s,
    })
}

/// Copy every file of `from` into a fresh `to`, and sync the copies.
pub fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    if to.exists() {
        std::fs::remove_dir_all(to).with_context(|| format!("removing {}", to.display()))?;
    }
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for entry in std::fs::read_dir(from).with_context(|| format!("listing {}", from.display()))? {
        let entry = entry.with_context(|| format!("listing {}", from.display()))?;
        let src = entry.path();
        let dst = to.join(entry.file_name());
        let ty = entry
            .file_type()
            .with_context(|| format!("reading {}", src.display()))?;
        if ty.is_dir() {
            copy_dir(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst)
                .with_context(|| format!("copying {} to {}", src.display(), dst.display()))?;
            // Write the copy back now, so the measured phase does not pay for it.
            std::fs::File::open(&dst)
                .and_then(|f| f.sync_all())
                .with_context(|| format!("syncing {}", dst.display()))?;
        }
    }
    Ok(())
}

/// Run workload `w` on a fresh copy of the aged image and measure it.
pub fn run_workload(
    cfg: &BenchConfig,
    ui: &Ui,
    subject: Subject,
    prep: &Prepared,
    w: Workload,
    profile: &DeviceProfile,
) -> Result<Record> {
    let run_dir = cfg.dir.join(subject.name()).join("run");
    let pb = ui.spinner(format!("{subject}: copying the aged image"));
    copy_dir(&prep.aged_dir, &run_dir)?;
    pb.finish_and_clear();
    let rec = measure(cfg, ui, subject, prep, w, &run_dir, profile);
    let removed = std::fs::remove_dir_all(&run_dir)
        .with_context(|| format!("removing {}", run_dir.display()));
    let rec = rec?;
    removed?;
    Ok(rec)
}

/// Execute one operation; an error also when a result contradicts the stream (a live key
/// not found while the index holds entries).
fn execute(db: &mut dyn Target, op: &Op, live: bool) -> Result<()> {
    match op {
        Op::Get(k) => {
            let v = db.get(*k).context("search")?;
            if v.is_none() && live {
                bail!("the engine lost key {k:#x}: get returned nothing for a live key");
            }
        }
        Op::Insert(k, v) | Op::Update(k, v) => db.insert(*k, *v).context("insert")?,
        Op::Delete(k) => db.delete(*k).context("delete")?,
        Op::Range { start, len } => {
            let (first, _) = db.scan(*start, *len).context("range")?;
            if live && first != Some(*start) {
                bail!("the engine lost key {start:#x}: a range from it began at {first:?}");
            }
        }
        Op::GetMany(keys) => {
            let vs = db.get_many(keys).context("get_many")?;
            if live {
                if let Some(i) = vs.iter().position(Option::is_none) {
                    bail!(
                        "the engine lost key {:#x}: get_many returned nothing for a live key",
                        keys[i]
                    );
                }
            }
        }
        Op::BulkInsert(pairs) => db.bulk_insert(pairs).context("bulk_insert")?,
        Op::DeleteRange { lo, hi, keys } => {
            if *keys > 0 {
                db.delete_range(*lo, *hi).context("delete_range")?;
            }
        }
    }
    Ok(())
}

/// Keys an operation writes (inserts, updates, deletes).
fn written_keys(op: &Op) -> u64 {
    match op {
        Op::Insert(..) | Op::Update(..) | Op::Delete(_) => 1,
        Op::BulkInsert(p) => p.len() as u64,
        Op::DeleteRange { keys, .. } => *keys,
        Op::Get(_) | Op::Range { .. } | Op::GetMany(_) => 0,
    }
}

/// Bytes of an entry (8-byte key, 8-byte value), the unit of write amplification.
pub const ENTRY_BYTES: f64 = 16.0;

fn open_subject(
    cfg: &BenchConfig,
    subject: Subject,
    dir: &Path,
    profile: &DeviceProfile,
) -> Result<Box<dyn Target>> {
    Ok(match subject {
        Subject::Engine(e) => Box::new(
            Db::open_with_buffer_pool(dir, cfg.measured_pool(e, profile)?)
                .with_context(|| format!("opening {}", dir.display()))?,
        ),
        Subject::Peer(p) => peers::open(p, dir, cfg.buffer_pool_bytes, false)?,
    })
}

#[allow(clippy::too_many_arguments)]
fn measure(
    cfg: &BenchConfig,
    ui: &Ui,
    subject: Subject,
    prep: &Prepared,
    w: Workload,
    run_dir: &Path,
    profile: &DeviceProfile,
) -> Result<Record> {
    let gen = KeyGen::new(cfg.key_dist, cfg.seed);
    let mut stream = OpStream::new(w, gen, prep.live, cfg.seed, cfg.ops)?;
    let nops = stream.operations();
    let mut lat: Vec<u64> = Vec::with_capacity(nops as usize);
    // Touch the latency buffer now, so that a memory cgroup entered below is not charged
    // for it.
    lat.resize(nops as usize, 1);
    lat.clear();
    let info = subject.info(cfg);
    // A peer reading through the page cache runs its phase in a memory cgroup (module
    // crate::cgroup), from a store none of which is cached.
    let page_cache = match subject {
        Subject::Peer(_) if !info.page_cache_bypassed => {
            evict_from_page_cache(run_dir)?;
            let bound = PageCacheBound::confine(
                cfg.buffer_pool_bytes + PEER_MEMORY_ALLOWANCE,
                subject.name(),
            );
            if let PageCacheBound::Unbounded(why) = &bound {
                say(cfg, ui, &format!("{subject}: {why}"));
            }
            Some(bound)
        }
        _ => None,
    };
    let mut db = open_subject(cfg, subject, run_dir, profile)?;

    // Warm the cache (not measured), with draws of its own so the measured stream does not
    // depend on the warm-up.
    let warm = (cfg.ops / 10).min(10_000);
    let mut wrng = rng_for(cfg.seed, 0x5741_524d ^ w.seed_index());
    for _ in 0..warm {
        if let Some(k) = stream.pick_existing(&mut wrng) {
            db.get(k).context("warm-up search")?;
        }
    }

    let pb = ui.bar(nops, format!("{subject}: {w}"));
    let interval = nops.div_ceil(SERIES_POINTS).max(1);
    let mut interval_ends: Vec<f64> = Vec::with_capacity(SERIES_POINTS as usize + 1);
    let mut write_keys = 0u64;
    let s0 = db.flashix_stats();
    let io0 = process_io();
    let t0 = Instant::now();
    let mut n = 0u64;
    while let Some(op) = stream.next_op() {
        let live = stream.live() > 0;
        write_keys += written_keys(&op);
        let start = Instant::now();
        execute(db.as_mut(), &op, live)?;
        lat.push(start.elapsed().as_nanos() as u64);
        n += 1;
        if n % interval == 0 {
            interval_ends.push(t0.elapsed().as_secs_f64());
        }
        if n % 64 == 0 {
            pb.set_position(n);
        }
    }
    db.flush()
        .context("sync (flush) at the end of the measured phase")?;
    let elapsed = t0.elapsed().as_secs_f64();
    if n % interval != 0 {
        interval_ends.push(elapsed);
    } else if let Some(last) = interval_ends.last_mut() {
        // The last interval includes the final sync.
        *last = elapsed;
    }
    pb.finish_and_clear();
    let io1 = process_io();
    let s1 = db.flashix_stats();
    let memory = db.memory_bytes().unwrap_or(cfg.buffer_pool_bytes);
    db.close().context("closing the index")?;
    let (memory, memory_bound) = match &page_cache {
        Some(PageCacheBound::Cgroup(cg)) => {
            let peak = cg.peak_bytes()?;
            let bound = format!(
                "memory cgroup for the measured phase: budget + {} = {} for heap and page \
                 cache (peak {}, limit hit {} times); {}",
                format_size(PEER_MEMORY_ALLOWANCE),
                format_size(cg.limit()),
                format_size(peak),
                cg.limit_hits()?,
                info.memory_bound
            );
            (peak, bound)
        }
        Some(PageCacheBound::Unbounded(why)) => (memory, format!("{why}; {}", info.memory_bound)),
        None => (memory, info.memory_bound.clone()),
    };
    // Leave the cgroup.
    drop(page_cache);

    let series = interval_series(&lat, interval, &interval_ends);
    let ops = nops as f64;
    let per_op = |a: u64, b: u64| b.saturating_sub(a) as f64 / ops;
    let (engine_params, model) = match (subject, &s1) {
        (Subject::Engine(e), Some(s)) => engine_params(cfg, e, s, stream.live(), profile)?,
        _ => (String::new(), None),
    };
    let mut rec = Record {
        engine: subject.name().to_string(),
        workload: w.name(),
        entries: prep.live,
        ops: nops,
        keys_per_op: w.keys_per_op(),
        ops_per_sec: ops / elapsed.max(1e-9),
        latency_us: Latency::from_nanos(&mut lat),
        reads_per_op: 0.0,
        writes_per_op: 0.0,
        read_requests_per_op: 0.0,
        write_requests_per_op: 0.0,
        bytes_written_per_op: 0.0,
        wal_bytes_per_op: 0.0,
        memory_bytes: memory,
        buffer_hit_ratio: 0.0,
        elapsed_s: elapsed,
        prepare_s: prep.prepare_s,
        aging_inserts: prep.aging_inserts,
        key_dist: cfg.key_dist.to_string(),
        engine_params,
        model,
        kind: match subject {
            Subject::Engine(_) => "flashix".into(),
            Subject::Peer(_) => "peer".into(),
        },
        memory_bound,
        page_cache_bypassed: info.page_cache_bypassed,
        commit_model: info.commit_model,
        io_counted_by: String::new(),
        queue_depth: 1,
        write_keys_per_op: write_keys as f64 / ops,
        write_amplification: None,
        device_limit: None,
        series,
        repeat: None,
    };
    let read_bytes_per_op;
    let read_queue_depth;
    match (s0, s1) {
        (Some(s0), Some(s1)) => {
            let (d0, d1) = (&s0.device, &s1.device);
            rec.reads_per_op = per_op(d0.reads, d1.reads);
            rec.writes_per_op = per_op(d0.writes, d1.writes);
            rec.read_requests_per_op = per_op(d0.read_requests, d1.read_requests);
            rec.write_requests_per_op = per_op(d0.write_requests, d1.write_requests);
            rec.bytes_written_per_op = per_op(d0.write_bytes, d1.write_bytes);
            rec.wal_bytes_per_op = per_op(s0.wal.bytes, s1.wal.bytes);
            read_bytes_per_op = per_op(d0.read_bytes, d1.read_bytes);
            let hits = s1.buffer.hits.saturating_sub(s0.buffer.hits);
            let misses = s1.buffer.misses.saturating_sub(s0.buffer.misses);
            rec.buffer_hit_ratio = if hits + misses == 0 {
                0.0
            } else {
                hits as f64 / (hits + misses) as f64
            };
            rec.queue_depth = d1.max_queue_depth.max(1);
            let read_batches = d1.read_batches.saturating_sub(d0.read_batches);
            read_queue_depth = if read_batches == 0 {
                1.0
            } else {
                d1.read_requests.saturating_sub(d0.read_requests) as f64 / read_batches as f64
            };
            rec.io_counted_by = "flashix device and WAL counters".into();
        }
        _ => {
            // Peers: the process's storage I/O, in 4 KiB pages.
            read_bytes_per_op = per_op(io0.0, io1.0);
            rec.bytes_written_per_op = per_op(io0.1, io1.1);
            rec.reads_per_op = read_bytes_per_op / 4096.0;
            rec.writes_per_op = rec.bytes_written_per_op / 4096.0;
            rec.read_requests_per_op = rec.reads_per_op;
            rec.write_requests_per_op = rec.writes_per_op;
            read_queue_depth = PEER_CHARGED_QUEUE_DEPTH as f64;
            rec.io_counted_by = "/proc/self/io (bytes; requests taken as 4 KiB pages, charged \
                                 at QD32)"
                .into();
        }
    }
    let written = rec.bytes_written_per_op + rec.wal_bytes_per_op;
    if rec.write_keys_per_op > 0.0 {
        rec.write_amplification = Some(written / (rec.write_keys_per_op * ENTRY_BYTES));
    }
    rec.device_limit = report::device_limit(
        profile,
        read_queue_depth,
        rec.read_requests_per_op,
        read_bytes_per_op,
        written,
        rec.ops_per_sec,
    );
    Ok(rec)
}

/// Per-interval points from per-operation latencies (ns, in operation order), `interval`
/// operations each, and the elapsed time at the end of each interval.
pub fn interval_series(lat: &[u64], interval: u64, ends: &[f64]) -> Vec<Interval> {
    let mut out = Vec::with_capacity(ends.len());
    let mut prev_end = 0.0;
    for (chunk, &end) in lat.chunks(interval.max(1) as usize).zip(ends) {
        let mut v = chunk.to_vec();
        let l = Latency::from_nanos(&mut v);
        let dt = (end - prev_end).max(1e-9);
        out.push(Interval {
            end_s: end,
            ops: chunk.len() as u64,
            ops_per_sec: chunk.len() as f64 / dt,
            mean_us: l.mean,
            p50_us: l.p50,
            p99_us: l.p99,
            max_us: l.max,
        });
        prev_end = end;
    }
    out
}

/// The engine's parameters in effect (from its counters) and, for the FD-tree, the cost
/// model's prediction for them: Eq. 10 search and App. C.3 insertion cost for the k and
/// levels in use, the live entries and the measured pool.
fn engine_params(
    cfg: &BenchConfig,
    engine: EngineKind,
    s: &Stats,
    live: u64,
    profile: &DeviceProfile,
) -> Result<(String, Option<ModelPrediction>)> {
    if engine == EngineKind::PioBTree {
        let c = |n: &str| counter(s, n).unwrap_or(0);
        return Ok((
            format!(
                "leaf_segments={} opq_capacity={} height={}",
                c("leaf_segments"),
                c("opq_capacity"),
                c("height")
            ),
            None,
        ));
    }
    let (Some(k), Some(levels)) = (
        counter(s, "k"),
        counter(s, "levels").or(counter(s, "components").map(|c| c + 1)),
    ) else {
        return Ok((String::new(), None));
    };
    let mut params = format!("k={k} levels={levels}");
    if engine == EngineKind::Lsm && cfg.lsm_search_before_delete {
        params.push_str(" search_before_delete=on");
    }
    if engine != EngineKind::FdTree {
        return Ok((params, None));
    }
    params.push_str(if cfg.deamortize {
        " deamortize=on"
    } else {
        " deamortize=off"
    });
    let opts = cfg.options(engine, profile)?;
    let mut w = fd_model::workload_for(&opts, opts.get_fdtree().head_tree_bytes);
    w.entries = live.max(1);
    let dev = crate::model::device_costs(profile, cfg.page_size)?;
    let levels = u32::try_from(levels).context("levels")?;
    // The index may have fewer levels than the model needs for its entries (the lowest
    // level's capacity must hold them): then the model has no prediction for it.
    let model = fd_model::evaluate(&dev, &w, k, levels)
        .ok()
        .map(|c| ModelPrediction {
            search_us: c.search_cost_us,
            insert_us: c.insert_cost_us,
            k,
            levels,
        });
    Ok((params, model))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(counters: &[(&str, u64)]) -> BTreeMap<String, u64> {
        counters.iter().map(|&(k, v)| (k.to_string(), v)).collect()
    }

    #[test]
    fn levels_are_read_from_either_counter_family() {
        let s = stats(&[
            ("level_2_entries", 50),
            ("level_2_capacity", 100),
            ("level_1_entries", 4),
            ("level_1_capacity", 10),
            ("level_1_pages", 1),
            ("levels", 3),
        ]);
        assert_eq!(level_fill(&s), vec![(1, 4, 10), (2, 50, 100)]);
        let s = stats(&[("component_1_capacity", 10), ("component_3_capacity", 1000)]);
        assert_eq!(level_fill(&s), vec![(1, 0, 10), (3, 0, 1000)]);
        assert!(level_fill(&stats(&[("leaves", 3)])).is_empty());
    }

    #[test]
    fn half_full_ignores_the_lowest_level() {
        assert!(levels_half_full(&[]));
        assert!(levels_half_full(&[(1, 0, 100)]));
        assert!(levels_half_full(&[(1, 5, 10), (2, 0, 100)]));
        assert!(!levels_half_full(&[(1, 4, 10), (2, 100, 100)]));
        assert!(!levels_half_full(&[(1, 5, 10), (2, 49, 100), (3, 1, 1000)]));
        assert!(levels_half_full(&[(1, 9, 10), (2, 50, 100), (3, 1, 1000)]));
    }

    #[test]
    fn intervals_split_the_run() {
        // 10 ops of 1..=10 us in intervals of 4: 4, 4 and 2 ops.
        let lat: Vec<u64> = (1..=10).map(|x| x * 1000).collect();
        let s = interval_series(&lat, 4, &[1.0, 3.0, 3.5]);
        assert_eq!(s.iter().map(|p| p.ops).collect::<Vec<_>>(), vec![4, 4, 2]);
        assert_eq!(s[0].ops_per_sec, 4.0);
        assert_eq!(s[1].ops_per_sec, 2.0);
        assert_eq!(s[2].ops_per_sec, 4.0);
        assert_eq!((s[1].p50_us, s[1].max_us), (6.0, 8.0));
        assert_eq!(s[2].mean_us, 9.5);
    }

    #[test]
    fn median_run_with_spread() {
        let run = |ops: f64| {
            let mut r = crate::report::tests_support::record();
            r.ops_per_sec = ops;
            r
        };
        let m = median_of(vec![run(300.0), run(100.0), run(200.0)]);
        assert_eq!(m.ops_per_sec, 200.0);
        let rep = m.repeat.unwrap();
        assert_eq!(rep.runs, 3);
        assert_eq!(rep.ops_per_sec, vec![100.0, 200.0, 300.0]);
        assert_eq!(rep.spread, 1.0);
        // One run: no repeat block.
        assert!(median_of(vec![run(5.0)]).repeat.is_none());
    }
}
