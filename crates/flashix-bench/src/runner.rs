//! The benchmark runner: device profile, preparation of the aged index (once per engine),
//! and the measured phase of each workload on a fresh copy of that image.

use crate::probe::{self, DeviceProfile, ProbeConfig};
use crate::report::{self, Latency, ModelPrediction, Record, Results, RunOptions};
use crate::units::format_size;
use crate::workload::{rng_for, KeyDist, KeyGen, KeySpace, OpKind, Workload};
use anyhow::{bail, Context, Result};
use flashix::cost::fdtree as fd_model;
use flashix::{
    Db, DeviceSpec, EngineKind, FdTreeOptions, LsmOptions, Options, PioOptions, Stats, Tuning,
};
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Share of the bulk-loaded leaves that aging makes split (FD-tree paper, App. D).
pub const AGING_SPLIT_SHARE: f64 = 0.2;
/// Longest PIO leaf (in segments) the PIO cost model considers.
pub const PIO_MAX_SEGMENTS: usize = 16;
/// Share of `entries` inserted by aging when an engine reports no leaf counters.
pub const AGING_FALLBACK_SHARE: f64 = 0.1;

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
the lowest is at least half full; other engines get ENTRIES/10 inserts. Then close. Every \
workload starts from a fresh copy of the aged index, opened with the measured pool and \
warmed with min(OPS/10, 10000) unmeasured searches.";

/// Everything `flashix bench` needs.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    pub engines: Vec<EngineKind>,
    pub workloads: Vec<Workload>,
    /// Entries of the bulk-loaded index.
    pub entries: u64,
    /// Measured operations per workload.
    pub ops: u64,
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
    /// The defaults of `flashix bench`.
    pub fn new() -> Self {
        BenchConfig {
            engines: vec![EngineKind::BTree],
            workloads: Workload::DEFAULT.to_vec(),
            entries: 1_500_000,
            ops: 100_000,
            buffer_pool_bytes: 16 << 20,
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
        Ok(Options::new(engine)
            .page_size(self.page_size)
            .buffer_pool_bytes(self.buffer_pool_bytes)
            .device(DeviceSpec::File {
                direct_io: self.direct_io,
            })
            .tuning(tuning)
            .fdtree(fdtree)
            .lsm(lsm)
            .pio(pio))
    }

    /// The memory budget of the measured phase. Every engine gets the same: an engine that
    /// keeps a structure outside its pool takes it from this budget (the PIO B-tree's OPQ).
    pub fn measured_pool(&self, _engine: EngineKind, _profile: &DeviceProfile) -> Result<u64> {
        Ok(self.buffer_pool_bytes)
    }

    fn check(&self) -> Result<()> {
        if self.engines.is_empty() {
            bail!("no engine given");
        }
        if self.workloads.is_empty() {
            bail!("no workload given");
        }
        if self.entries == 0 {
            bail!("--entries must be at least 1");
        }
        if self.ops == 0 {
            bail!("--ops must be at least 1");
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

fn say(cfg: &BenchConfig, msg: &str) {
    if cfg.verbose {
        eprintln!("{msg}");
    }
}

fn bar(cfg: &BenchConfig, len: u64, msg: String) -> ProgressBar {
    styled_bar(
        cfg,
        len,
        msg,
        "{msg:<28} [{bar:30}] {pos}/{len} {per_sec} eta {eta}",
    )
}

fn styled_bar(cfg: &BenchConfig, len: u64, msg: String, template: &str) -> ProgressBar {
    if !cfg.verbose {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template(template) {
        pb.set_style(style.progress_chars("=> "));
    }
    pb.set_message(msg);
    pb
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
    say(
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

/// Run every (engine, workload) of `cfg`, print the table, and write `out/results.json`.
pub fn run_bench(cfg: &BenchConfig) -> Result<Results> {
    cfg.check()?;
    std::fs::create_dir_all(&cfg.out)
        .with_context(|| format!("creating the output directory {}", cfg.out.display()))?;
    std::fs::create_dir_all(&cfg.dir)
        .with_context(|| format!("creating the data directory {}", cfg.dir.display()))?;
    let profile = device_profile(cfg)?;
    if cfg.verbose {
        println!(
            "flashix bench: {} entries, {} ops/workload, {} keys, page {} B, buffer pool {}, {}",
            cfg.entries,
            cfg.ops,
            cfg.key_dist,
            cfg.page_size,
            format_size(cfg.buffer_pool_bytes),
            if cfg.direct_io {
                "O_DIRECT"
            } else {
                "buffered I/O"
            }
        );
    }
    if cfg.verbose {
        println!(
            "preparation (PREP_POOL = {}): {AGING_RULE}",
            format_size(cfg.prep_buffer_pool_bytes)
        );
    }

    let mut records = Vec::new();
    for &engine in &cfg.engines {
        let prep = prepare(cfg, engine, &profile)
            .with_context(|| format!("preparing the {engine} index"))?;
        for &w in &cfg.workloads {
            let rec = run_workload(cfg, engine, &prep, w, &profile)
                .with_context(|| format!("running {w} on {engine}"))?;
            say(
                cfg,
                &format!(
                    "{engine} {w}: {:.0} ops/s, p50 {:.1} us, p99 {:.1} us, {:.3} reads/op, {:.3} writes/op",
                    rec.ops_per_sec,
                    rec.latency_us.p50,
                    rec.latency_us.p99,
                    rec.reads_per_op,
                    rec.writes_per_op
                ),
            );
            records.push(rec);
        }
        let engine_dir = cfg.dir.join(engine.name());
        std::fs::remove_dir_all(&engine_dir)
            .with_context(|| format!("removing {}", engine_dir.display()))?;
    }

    let results = Results {
        flashix_version: env!("CARGO_PKG_VERSION").to_string(),
        git_commit: report::git_commit(),
        device_profile: profile,
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
        },
        aging_rule: AGING_RULE.to_string(),
        results: records,
    };
    let path = cfg.out.join("results.json");
    results.save(&path)?;
    if cfg.verbose {
        println!("{}", report::format_table(&results.results));
        println!("results: {}", path.display());
    }
    Ok(results)
}

/// An aged index image of one engine.
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
pub fn prepare(cfg: &BenchConfig, engine: EngineKind, profile: &DeviceProfile) -> Result<Prepared> {
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
    let pb = bar(cfg, cfg.entries, format!("{engine}: bulk load"));
    let pairs: Vec<(u64, u64)> = (0..cfg.entries)
        .map(|i| {
            let k = gen.key_of(i);
            (k, gen.value_of(k, 0))
        })
        .collect();
    db.bulk_insert(&pairs).context("bulk_insert")?;
    pb.inc(cfg.entries);
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
    // shows splits and inserts, without an ETA; the level rule shows inserts.
    let pb = match goal {
        AgingGoal::LeafSplits { target, .. } => styled_bar(
            cfg,
            target,
            format!("{engine}: aging"),
            "{msg:<28} [{bar:30}] {pos}/{len} leaf splits, {prefix} inserts, {elapsed}",
        ),
        AgingGoal::Levels => bar(cfg, limit, format!("{engine}: aging (levels)")),
        AgingGoal::Inserts(n) => bar(cfg, n, format!("{engine}: aging (inserts)")),
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
        &format!("{engine}: aged with {inserts} inserts ({summary})"),
    );
    db.close().context("closing the aged index")?;
    let prepare_s = t0.elapsed().as_secs_f64();
    say(cfg, &format!("{engine}: prepared in {prepare_s:.1} s"));
    Ok(Prepared {
        aged_dir,
        live: ks.live(),
        aging_inserts: inserts,
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
    engine: EngineKind,
    prep: &Prepared,
    w: Workload,
    profile: &DeviceProfile,
) -> Result<Record> {
    let run_dir = cfg.dir.join(engine.name()).join("run");
    copy_dir(&prep.aged_dir, &run_dir)?;
    let rec = measure(cfg, engine, prep, w, &run_dir, profile);
    let removed = std::fs::remove_dir_all(&run_dir)
        .with_context(|| format!("removing {}", run_dir.display()));
    let rec = rec?;
    removed?;
    Ok(rec)
}

fn measure(
    cfg: &BenchConfig,
    engine: EngineKind,
    prep: &Prepared,
    w: Workload,
    run_dir: &Path,
    profile: &DeviceProfile,
) -> Result<Record> {
    let mut db = Db::open_with_buffer_pool(run_dir, cfg.measured_pool(engine, profile)?)
        .with_context(|| format!("opening {}", run_dir.display()))?;
    let gen = KeyGen::new(cfg.key_dist, cfg.seed);
    let mut ks = KeySpace::with_entries(gen, prep.live);
    let mut rng = rng_for(cfg.seed, 1 + w.seed_index());

    // Warm the buffer pool (not measured).
    let warm = (cfg.ops / 10).min(10_000);
    for _ in 0..warm {
        if let Some(k) = ks.pick_existing(&mut rng) {
            db.get(k).context("warm-up search")?;
        }
    }

    let nops = w.operations(cfg.ops);
    let pb = bar(cfg, nops, format!("{engine}: {w}"));
    let mut lat: Vec<u64> = Vec::with_capacity(nops as usize);
    let mut batch: Vec<u64> = Vec::new();
    let s0 = db.stats();
    let t0 = Instant::now();
    for n in 0..nops {
        let kind = w.draw(&mut rng);
        // Choose the keys before starting the clock; a missing existing key (empty index)
        // becomes a key that was never inserted.
        let missing = gen.key_of(ks.next_index());
        let (key, value) = match kind {
            OpKind::Search | OpKind::Range(_) => (ks.pick_existing(&mut rng).unwrap_or(missing), 0),
            OpKind::Insert => {
                let k = ks.insert_new();
                (k, gen.value_of(k, n + 2))
            }
            OpKind::Delete => (ks.delete_existing(&mut rng).unwrap_or(missing), 0),
            OpKind::Update => {
                let k = ks.pick_existing(&mut rng).unwrap_or(missing);
                (k, gen.value_of(k, n + 2))
            }
            OpKind::GetMany(b) => {
                batch.clear();
                batch.extend((0..b).map(|_| ks.pick_existing(&mut rng).unwrap_or(missing)));
                (0, 0)
            }
        };
        let start = Instant::now();
        match kind {
            OpKind::Search => {
                let v = db.get(key).context("search")?;
                if v.is_none() && ks.live() > 0 {
                    bail!("the engine lost key {key:#x}: get returned nothing for a live key");
                }
            }
            OpKind::Insert | OpKind::Update => db.insert(key, value).context("insert")?,
            OpKind::Delete => db.delete(key).context("delete")?,
            OpKind::Range(len) => {
                let mut first = None;
                for kv in db.range(key..).context("range")?.take(len as usize) {
                    let (k, _) = kv.context("range scan")?;
                    first.get_or_insert(k);
                }
                if ks.live() > 0 && first != Some(key) {
                    bail!("the engine lost key {key:#x}: a range from it began at {first:?}");
                }
            }
            OpKind::GetMany(_) => {
                let vs = db.get_many(&batch).context("get_many")?;
                if ks.live() > 0 {
                    if let Some(i) = vs.iter().position(Option::is_none) {
                        bail!(
                            "the engine lost key {:#x}: get_many returned nothing for a live key",
                            batch[i]
                        );
                    }
                }
            }
        }
        lat.push(start.elapsed().as_nanos() as u64);
        if n % 64 == 63 {
            pb.set_position(n + 1);
        }
    }
    db.flush()
        .context("flush at the end of the measured phase")?;
    let elapsed = t0.elapsed().as_secs_f64();
    pb.finish_and_clear();
    let s1 = db.stats();
    db.close().context("closing the index")?;
    let (engine_params, model) = engine_params(cfg, engine, &s1, ks.live(), profile)?;

    let ops = nops as f64;
    let d0 = &s0.device;
    let d1 = &s1.device;
    let per_op = |a: u64, b: u64| b.saturating_sub(a) as f64 / ops;
    let hits = s1.buffer.hits.saturating_sub(s0.buffer.hits);
    let misses = s1.buffer.misses.saturating_sub(s0.buffer.misses);
    Ok(Record {
        engine: engine.name().to_string(),
        workload: w.name(),
        entries: cfg.entries,
        ops: nops,
        keys_per_op: w.keys_per_op(),
        ops_per_sec: ops / elapsed.max(1e-9),
        latency_us: Latency::from_nanos(&mut lat),
        reads_per_op: per_op(d0.reads, d1.reads),
        writes_per_op: per_op(d0.writes, d1.writes),
        read_requests_per_op: per_op(d0.read_requests, d1.read_requests),
        write_requests_per_op: per_op(d0.write_requests, d1.write_requests),
        bytes_written_per_op: per_op(d0.write_bytes, d1.write_bytes),
        wal_bytes_per_op: per_op(s0.wal.bytes, s1.wal.bytes),
        memory_bytes: s1.memory_bytes,
        buffer_hit_ratio: if hits + misses == 0 {
            0.0
        } else {
            hits as f64 / (hits + misses) as f64
        },
        elapsed_s: elapsed,
        prepare_s: prep.prepare_s,
        aging_inserts: prep.aging_inserts,
        key_dist: cfg.key_dist.to_string(),
        engine_params,
        model,
    })
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
}
