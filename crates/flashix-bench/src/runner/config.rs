//! What a suite runs: its [`Scale`], its configuration ([`BenchConfig`]: sizes, engines,
//! peers, workloads, tuning knobs) and its subjects ([`Subject`]: an engine or a peer).

use crate::subjects::peers::PeerKind;
use crate::subjects::TargetInfo;
use crate::units::format_size;
use crate::workload::{KeyDist, Workload};
use anyhow::{bail, Result};
use flashix::{DeviceSpec, EngineKind};
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// How big a suite is: `--scale`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// The default: small enough for the whole default suite to run in minutes.
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
    /// Runs of each (engine, workload, threads) cell; the median run is reported with the
    /// spread.
    pub repeat: u32,
    /// Thread counts: every (engine, workload) cell runs its measured phase with each of
    /// them in turn, that many threads on the one index (`--threads`, THREADS_RULE).
    pub threads: Vec<u32>,
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
    /// The device every engine's index lives on; `None`: this machine's disk
    /// (`DeviceSpec::File` with `direct_io`). A simulated SSD here runs the same suite in
    /// simulated time (`Record::sim_seconds`).
    pub device: Option<DeviceSpec>,
    /// Show progress bars and messages on the terminal.
    pub verbose: bool,
}

impl BenchConfig {
    /// True when the cells run with one thread only (no `--threads`, or `--threads 1`):
    /// the output is then that of a bench without threads.
    pub fn single_threaded(&self) -> bool {
        self.threads == [1]
    }

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
            threads: vec![1],
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
            device: None,
            verbose: true,
        }
    }

    pub(super) fn check(&self) -> Result<()> {
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
        if self.threads.is_empty() {
            bail!("--threads: no thread count given");
        }
        if let Some(&n) = self
            .threads
            .iter()
            .find(|&&n| n == 0 || n > super::threads::MAX_THREADS)
        {
            bail!(
                "--threads: {n} is not a thread count from 1 to {}",
                super::threads::MAX_THREADS
            );
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
