//! `flashix mo-bench` (and `flashix bench --workload mo-*`): moving-object workloads on
//! [`flashix::mobject::MovingIndex`] over chosen engines, on this machine's disk with
//! O_DIRECT.
//!
//! Subjects: `bx` (the Bx-tree: the front end over the B+-tree) and `mobject:<engine>` for
//! any engine. Data (seeded, [`crate::workload::mobject`]): `--objects` objects in a
//! 1000 x 1000 space moving as `--data` says (uniform, Gaussian hotspots or a road grid),
//! speeds up to `--max-speed` per axis; each object reports once per `Δt_mu` ticks, in a
//! round robin, so the promise holds and `n + 1` partitions are live. Preparation, with a
//! 64 MiB pool: the
//! first report of every object at tick 0, then one full `Δt_mu` of reports (every object
//! updated once, spread over the partitions); then the index is reopened with the
//! measured budget it was created with (`--buffer-pool`; default 1 byte per object, at
//! least 64 KiB: about 1% of a Bx-tree's index; each subject prints its share).
//!
//! Workloads, run in the order given on the same index (time moves on only with updates):
//! `mo-range-S` (window of side S% of the space's side, centred uniformly; `mo-range-S-T`
//! asks for the fixed tick `now + T`), `mo-knn-K` (query points uniform),
//! `mo-update` (the next reports of the round robin), `mo-mix-U` (U% updates, the rest half
//! range queries with 10% windows, half 10-NN). Queries ask for a tick uniform in
//! `[now, now + --ahead]` unless the workload fixes it. Updates go through
//! `MovingIndex::update_from` (the stream knows each object's last report, so an update
//! reads nothing) unless `--update-path read` asks for `update`, which reads the object's
//! directory entry first; each row names the path its updates took, from the index's
//! counters.

use crate::output::report::Latency;
use crate::units::{format_size as fmt_size, parse_size};
use crate::workload::mobject::{MoData, World};
use anyhow::{bail, Context, Result};
use flashix::mobject::{MobjectOptions, MovingIndex, Rect};
use flashix::{DeviceSpec, EngineKind, Options};
use indicatif::{ProgressBar, ProgressStyle};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Options of `flashix mo-bench`.
#[derive(clap::Args, Debug, Clone)]
pub struct MoBenchArgs {
    /// Subjects: `bx` (over btree) and `mobject:<engine>`, comma-separated.
    #[arg(long, default_value = "bx,mobject:fdtree,mobject:lsm,mobject:pio")]
    pub subjects: String,
    /// Workloads: mo-update, mo-range-S, mo-knn-K, mo-mix-U, comma-separated.
    #[arg(
        long,
        default_value = "mo-range-1,mo-range-10,mo-knn-1,mo-knn-10,mo-knn-50,mo-update,mo-mix-50"
    )]
    pub workload: String,
    /// Movement: uniform, gaussian (hotspots) or network (road grid); see below.
    #[arg(long, default_value = "uniform")]
    pub data: String,
    /// Moving objects.
    #[arg(long, default_value_t = 100_000)]
    pub objects: u64,
    /// Operations per workload.
    #[arg(long, default_value_t = 5_000)]
    pub ops: u64,
    /// Memory budget of the measured phase [default: 1 byte per object, at least 64 KiB:
    /// about 1% of a Bx-tree's index; each subject prints its share].
    #[arg(long = "buffer-pool")]
    pub buffer_pool: Option<String>,
    /// Δt_mu, ticks.
    #[arg(long = "max-update-interval", default_value_t = 120)]
    pub max_update_interval: u64,
    /// Largest speed per axis, units per tick.
    #[arg(long = "max-speed", default_value_t = 3.0)]
    pub max_speed: f64,
    /// Queries ask for a tick up to this far ahead of now (predictive time).
    #[arg(long, default_value_t = 60)]
    pub ahead: u64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Where the indexes are built.
    #[arg(long, default_value = "bench-data/mo")]
    pub dir: PathBuf,
    /// Where mo-results.json is written.
    #[arg(long, default_value = "bench-out")]
    pub out: PathBuf,
    /// How updates are written: `blind` (update_from, told the object's last report: no
    /// read) or `read` (update, which reads the object's directory entry first).
    #[arg(long = "update-path", value_enum, default_value_t = UpdatePath::Blind)]
    pub update_path: UpdatePath,
}

/// The call a workload's updates go through (`--update-path`).
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdatePath {
    /// `MovingIndex::update_from`: the old motion is known, nothing is read.
    Blind,
    /// `MovingIndex::update`: the directory tells the old key.
    Read,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum MoWorkload {
    Update,
    /// Window side in % of the space's side; a fixed predictive time (else `--ahead`).
    Range(f64, Option<u64>),
    Knn(usize),
    Mix(u32),
}

impl MoWorkload {
    pub(crate) fn parse(s: &str) -> Result<MoWorkload> {
        let num = |p: &str| s.strip_prefix(p).map(str::parse::<f64>);
        Ok(match s {
            "mo-update" => MoWorkload::Update,
            _ if s.starts_with("mo-range-") => {
                let rest = &s["mo-range-".len()..];
                let (side, ahead) = match rest.split_once('-') {
                    Some((a, t)) => (a, Some(t.parse::<u64>().context(s.to_string())?)),
                    None => (rest, None),
                };
                let v: f64 = side.parse().context(s.to_string())?;
                if !(v > 0.0 && v <= 100.0) {
                    bail!("{s}: the window side is a percentage in (0, 100]");
                }
                MoWorkload::Range(v, ahead)
            }
            _ if s.starts_with("mo-knn-") => {
                let k = num("mo-knn-").unwrap_or(Ok(0.0)).context(s.to_string())?;
                if !(k >= 1.0 && k.fract() == 0.0) {
                    bail!("{s}: k is a positive integer");
                }
                MoWorkload::Knn(k as usize)
            }
            _ if s.starts_with("mo-mix-") => {
                let u = num("mo-mix-").unwrap_or(Ok(-1.0)).context(s.to_string())?;
                if !(0.0..=100.0).contains(&u) || u.fract() != 0.0 {
                    bail!("{s}: the update share is an integer percentage");
                }
                MoWorkload::Mix(u as u32)
            }
            _ => bail!(
                "unknown moving-object workload {s:?} (mo-update, mo-range-S, mo-knn-K, mo-mix-U)"
            ),
        })
    }

    /// The operation to run next: the workload's own, or for a mix one drawn from it.
    fn draw(self, rng: &mut StdRng) -> Step {
        match self {
            MoWorkload::Update => Step::Update,
            MoWorkload::Range(s, ahead) => Step::Range(s, ahead),
            MoWorkload::Knn(k) => Step::Knn(k),
            MoWorkload::Mix(u) if rng.gen_range(0..100) < u => Step::Update,
            MoWorkload::Mix(_) if rng.gen_bool(0.5) => Step::Range(10.0, None),
            MoWorkload::Mix(_) => Step::Knn(10),
        }
    }

    fn name(self) -> String {
        match self {
            MoWorkload::Update => "mo-update".into(),
            MoWorkload::Range(s, None) => format!("mo-range-{s}"),
            MoWorkload::Range(s, Some(t)) => format!("mo-range-{s}-{t}"),
            MoWorkload::Knn(k) => format!("mo-knn-{k}"),
            MoWorkload::Mix(u) => format!("mo-mix-{u}"),
        }
    }
}

/// The default budget per object: about 1% of a Bx-tree's index (some 100 bytes per
/// object: its entry, its directory entry, node slack and the WAL).
const DEFAULT_BUDGET_PER_OBJECT: u64 = 1;

/// The buffer pool the index is prepared with.
const PREP_POOL_BYTES: u64 = 64 << 20;

/// One measured operation.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Step {
    Update,
    Range(f64, Option<u64>),
    Knn(usize),
}

/// A subject's name and engine.
fn parse_subject(s: &str) -> Result<(String, EngineKind)> {
    if s == "bx" {
        return Ok(("bx".into(), EngineKind::BTree));
    }
    let Some(e) = s.strip_prefix("mobject:") else {
        bail!("unknown subject {s:?}: bx or mobject:<engine>");
    };
    let kind: EngineKind = e.parse().map_err(|e| anyhow::anyhow!("{s}: {e}"))?;
    Ok((s.to_string(), kind))
}

/// One measured cell.
#[derive(Debug, Clone, Serialize)]
pub struct MoResult {
    pub subject: String,
    pub workload: String,
    pub data: String,
    pub objects: u64,
    pub budget_bytes: u64,
    pub index_bytes: u64,
    pub ops: u64,
    pub ops_per_s: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub pages_read_per_op: f64,
    pub pages_written_per_op: f64,
    /// Read and write requests per operation that did not start where the previous one
    /// ended (the rest of the pages were sequential).
    pub random_reads_per_op: f64,
    pub random_writes_per_op: f64,
    pub results_per_query: f64,
    pub candidates_per_query: f64,
    pub false_hit_ratio: f64,
    pub key_intervals_per_query: f64,
    pub knn_rounds_per_query: f64,
    /// The index's accounted memory (`Stats::memory_bytes`) at the end of the workload.
    pub memory_bytes: u64,
    /// The engine's counters that grew in the workload, by how much (what an operation's
    /// pages went to: e.g. the FBX-tree's reorganisations and leaf rebuilds).
    pub engine_growth: std::collections::BTreeMap<String, u64>,
    /// Buffer-pool misses per operation (pages the engine asked for and the pool lacked).
    pub pool_misses_per_op: f64,
    /// The call the workload's updates went through, from the index's counters:
    /// `update_from`, `update`, `both`, or `-` when it made none.
    pub update_path: String,
}

pub fn run(a: &MoBenchArgs) -> Result<()> {
    let subjects: Vec<(String, EngineKind)> = a
        .subjects
        .split(',')
        .map(|s| parse_subject(s.trim()))
        .collect::<Result<_>>()?;
    let workloads: Vec<MoWorkload> = a
        .workload
        .split(',')
        .map(|s| MoWorkload::parse(s.trim()))
        .collect::<Result<_>>()?;
    let budget = a
        .buffer_pool
        .as_deref()
        .map(parse_size)
        .transpose()
        .context("--buffer-pool")?;
    let data: MoData = a.data.parse().context("--data")?;
    if a.objects == 0 || a.ops == 0 {
        bail!("--objects and --ops must be at least 1");
    }
    if !(a.max_speed.is_finite() && a.max_speed > 0.0) {
        bail!("--max-speed must be finite and positive");
    }
    println!(
        "flashix mo-bench: {} objects in a 1000 x 1000 space, max speed {} per axis, Δt_mu {} ticks \
         in n = 2 phases, Hilbert grid 1024 x 1024, at most 256 key intervals per partition and query; \
         {} operations per workload, query centres uniform, queries up to {} ticks ahead; O_DIRECT",
        a.objects, a.max_speed, a.max_update_interval, a.ops, a.ahead
    );
    println!("data: {data}: {}", data.describe(1000.0, a.max_speed));
    let mut all = Vec::new();
    for (name, engine) in &subjects {
        let index = Options::new(*engine).device(DeviceSpec::File { direct_io: true });
        all.extend(run_subject(a, name, index, &workloads, budget)?);
    }
    std::fs::create_dir_all(&a.out)?;
    let path = a.out.join("mo-results.json");
    std::fs::write(&path, serde_json::to_string_pretty(&all)?)?;
    println!("results: {}", path.display());
    Ok(())
}

fn bar(len: u64, msg: String) -> ProgressBar {
    let pb = ProgressBar::new(len);
    pb.set_style(
        ProgressStyle::with_template("{msg:>32} [{bar:30}] {pos}/{len} {per_sec} eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    pb.set_message(msg);
    pb
}

/// Prepare subject `name`, a moving-object index over `index` (its engine, device and
/// engine options; the budget is set here), run `workloads` on it, print a row per
/// workload and return them. The index is removed afterwards.
pub(crate) fn run_subject(
    a: &MoBenchArgs,
    name: &str,
    index: Options,
    workloads: &[MoWorkload],
    budget: Option<u64>,
) -> Result<Vec<MoResult>> {
    let dir = a.dir.join(name.replace(':', "-"));
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    // The index is created with the measured budget (engines that size parts of their
    // memory at creation, the PIO B-tree's OPQ, size them for it) and prepared with a
    // 64 MiB pool, as `flashix bench` ages its indexes.
    let budget = budget.unwrap_or((a.objects * DEFAULT_BUDGET_PER_OBJECT).max(64 << 10));
    let opts = MobjectOptions::new(index.buffer_pool_bytes(budget))
        .max_speed(a.max_speed)
        .max_update_interval(a.max_update_interval);
    let data: MoData = a.data.parse().context("--data")?;
    let mut world = World::new(
        data,
        a.objects,
        SIDE,
        a.max_speed,
        a.max_update_interval,
        a.seed,
    );
    MovingIndex::create(&dir, opts)?.close()?;
    let t0 = Instant::now();
    prepare_subject(a, name, &dir, &mut world)?;
    let index_bytes = dir_bytes(&dir)?;
    println!(
        "{name}: prepared in {:.1} s, index {} on disk, measured with {} ({:.2}% of it)",
        t0.elapsed().as_secs_f64(),
        fmt_size(index_bytes),
        fmt_size(budget),
        budget as f64 * 100.0 / index_bytes as f64
    );
    let mi = MovingIndex::open_with_buffer_pool(&dir, budget)?;
    let mut rng = StdRng::seed_from_u64(a.seed ^ 0x5eed);
    let mut out = Vec::new();
    println!(
        "  {:<18} {:>9} {:>9} {:>9} {:>8} {:>8} {:>9} {:>9} {:>8} {:>8} {:>9}  updates by",
        "workload",
        "ops/s",
        "p50 us",
        "p99 us",
        "rd/op",
        "wr/op",
        "res/q",
        "cand/q",
        "false%",
        "ivs/q",
        "mem MiB",
    );
    for &w in workloads {
        let mut r = run_workload(a, name, &mi, &mut world, &mut rng, w)?;
        r.data = data.to_string();
        r.budget_bytes = budget;
        r.index_bytes = index_bytes;
        println!(
            "  {:<18} {:>9.0} {:>9.1} {:>9.1} {:>8.2} {:>8.2} {:>9.1} {:>9.1} {:>7.1}% {:>8.1} {:>9}  {}",
            r.workload,
            r.ops_per_s,
            r.p50_us,
            r.p99_us,
            r.pages_read_per_op,
            r.pages_written_per_op,
            r.results_per_query,
            r.candidates_per_query,
            r.false_hit_ratio * 100.0,
            r.key_intervals_per_query,
            format!(
                "{:.2}{}",
                r.memory_bytes as f64 / (1 << 20) as f64,
                if r.memory_bytes > budget { "!" } else { "" }
            ),
            r.update_path
        );
        out.push(r);
    }
    if out.iter().any(|r| r.memory_bytes > budget) {
        println!("  ! memory over the {} budget", fmt_size(budget));
    }
    mi.close()?;
    std::fs::remove_dir_all(&dir).ok();
    Ok(out)
}

/// Side of the square world the objects move in.
const SIDE: f64 = 1000.0;

/// Fill the index in `dir` with the preparation pool: every object's first report, then
/// one more report per object drawn from `world`.
fn prepare_subject(a: &MoBenchArgs, name: &str, dir: &Path, world: &mut World) -> Result<()> {
    let mi = MovingIndex::open_with_buffer_pool(dir, PREP_POOL_BYTES)?;
    let pb = bar(2 * a.objects, format!("{name}: preparing"));
    for id in 0..a.objects {
        mi.update(id, world.initial(id))?;
        pb.inc(1);
    }
    for _ in 0..a.objects {
        let (id, old, m) = world.next_report();
        update(a, &mi, id, old, m)?;
        pb.inc(1);
    }
    pb.finish_and_clear();
    mi.close()?;
    Ok(())
}

/// Run `a.ops` operations of workload `w` on `mi` (updates from `world`, query places and
/// times from `rng`) and measure them. The row's data set, budget and index size are the
/// caller's to fill in.
fn run_workload(
    a: &MoBenchArgs,
    name: &str,
    mi: &MovingIndex,
    world: &mut World,
    rng: &mut StdRng,
    w: MoWorkload,
) -> Result<MoResult> {
    let before = mi.stats();
    let mut lat = Vec::with_capacity(a.ops as usize);
    let pb = bar(a.ops, format!("{name}: {}", w.name()));
    let mut results = 0u64;
    let mut queries = 0u64;
    let start = Instant::now();
    for _ in 0..a.ops {
        let step = w.draw(rng);
        let t = Instant::now();
        match step {
            Step::Update => {
                let (id, old, m) = world.next_report();
                update(a, mi, id, old, m)?;
            }
            Step::Range(s, ahead) => {
                let w = SIDE * s / 100.0;
                let (cx, cy) = (rng.gen_range(0.0..=SIDE), rng.gen_range(0.0..=SIDE));
                let r = Rect {
                    x0: cx - w / 2.0,
                    y0: cy - w / 2.0,
                    x1: cx + w / 2.0,
                    y1: cy + w / 2.0,
                };
                let at = mi.now() + ahead.unwrap_or_else(|| rng.gen_range(0..=a.ahead));
                results += mi.range(&r, at)?.len() as u64;
                queries += 1;
            }
            Step::Knn(k) => {
                let (x, y) = (rng.gen_range(0.0..=SIDE), rng.gen_range(0.0..=SIDE));
                let at = mi.now() + rng.gen_range(0..=a.ahead);
                results += mi.knn(x, y, k, at)?.len() as u64;
                queries += 1;
            }
        }
        lat.push(t.elapsed().as_nanos() as u64);
        pb.inc(1);
    }
    mi.flush()?;
    let secs = start.elapsed().as_secs_f64();
    pb.finish_and_clear();
    let after = mi.stats();
    let lat = Latency::from_nanos(&mut lat);
    let c =
        |f: fn(&flashix::mobject::MobjectCounters) -> u64| f(&after.counters) - f(&before.counters);
    let per_q = |v: u64| {
        if queries == 0 {
            0.0
        } else {
            v as f64 / queries as f64
        }
    };
    let per_op = |v: u64| v as f64 / a.ops as f64;
    let (d0, d1) = (&before.index.device, &after.index.device);
    let cands = c(|c| c.candidates);
    Ok(MoResult {
        subject: name.to_string(),
        workload: w.name(),
        data: String::new(),
        objects: a.objects,
        budget_bytes: 0,
        index_bytes: 0,
        ops: a.ops,
        ops_per_s: a.ops as f64 / secs,
        p50_us: lat.p50,
        p99_us: lat.p99,
        pages_read_per_op: per_op(d1.reads - d0.reads),
        pages_written_per_op: per_op(d1.writes - d0.writes),
        random_reads_per_op: per_op(d1.random_reads - d0.random_reads),
        random_writes_per_op: per_op(d1.random_writes - d0.random_writes),
        results_per_query: per_q(results),
        candidates_per_query: per_q(cands),
        false_hit_ratio: if cands == 0 {
            0.0
        } else {
            c(|c| c.false_hits) as f64 / cands as f64
        },
        key_intervals_per_query: per_q(c(|c| c.key_intervals)),
        knn_rounds_per_query: per_q(c(|c| c.knn_rounds)),
        memory_bytes: after.index.memory_bytes,
        engine_growth: after
            .index
            .engine_counters
            .iter()
            .filter_map(|(k, &v)| {
                let was = before.index.engine_counters.get(k).copied().unwrap_or(0);
                (v > was).then(|| (k.clone(), v - was))
            })
            .collect(),
        pool_misses_per_op: per_op(after.index.buffer.misses - before.index.buffer.misses),
        update_path: update_path(c(|c| c.updates), c(|c| c.blind_updates)).into(),
    })
}

/// Object `id` reports `new`, its last report having been `old`, by the path `a` asks for.
fn update(
    a: &MoBenchArgs,
    mi: &MovingIndex,
    id: u64,
    old: flashix::mobject::Motion,
    new: flashix::mobject::Motion,
) -> Result<()> {
    match a.update_path {
        UpdatePath::Blind => mi.update_from(id, old, new)?,
        UpdatePath::Read => mi.update(id, new)?,
    }
    Ok(())
}

/// The path `updates` updates took, `blind` of them by `update_from`.
fn update_path(updates: u64, blind: u64) -> &'static str {
    match (updates, blind) {
        (0, _) => "-",
        (u, b) if b == u => "update_from",
        (_, 0) => "update",
        _ => "both",
    }
}

fn dir_bytes(dir: &Path) -> Result<u64> {
    let mut n = 0;
    for e in std::fs::read_dir(dir)? {
        n += e?.metadata()?.len();
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workload_names_parse_and_round_trip() {
        for s in [
            "mo-update",
            "mo-range-1",
            "mo-range-10",
            "mo-range-2.5-120",
            "mo-knn-50",
            "mo-mix-50",
        ] {
            assert_eq!(MoWorkload::parse(s).unwrap().name(), s);
        }
        for bad in [
            "mo-range-0",
            "mo-range-1-x",
            "mo-knn-0",
            "mo-knn-1.5",
            "mo-mix-101",
            "mo-walk",
        ] {
            assert!(MoWorkload::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_subject("bx").unwrap().1, EngineKind::BTree);
        assert_eq!(parse_subject("mobject:lsm").unwrap().1, EngineKind::Lsm);
        assert!(parse_subject("mobject:nope").is_err());
    }
}
