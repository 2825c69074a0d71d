//! The experiments of `flashix repro bulk` (module doc of [`super`]).

use super::{paper, BulkRepro, BulkReproArgs, Cell, Sizes, BUDGET, LATREE_NODE, PAGE};
use crate::repro::common::{copy_dir, counter, flash, mix, Frame, Lens};
use anyhow::{Context, Result};
use flashix::experiment::SerialBulkIndex;
use flashix::io::{Device, DirVfs, FileDevice};
use flashix::sim::{FtlKind, NandConfig, SimSsd, SimSsdConfig};
use flashix::{BulkOptions, Db, DeviceSpec, EngineKind, LaTreeOptions, Options, Stats, Storage};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// A switch of [`BulkOptions`] set for one variant.
type Switch = fn(&mut BulkOptions);

fn all_on(_: &mut BulkOptions) {}

/// The §5.6 ablations on E1: (variant, options, keys one by one).
const ABLATIONS: &[(&str, Switch, bool)] = &[
    ("no batch_writes", |b| b.batch_writes = false, false),
    ("no batch_reads", |b| b.batch_reads = false, false),
    ("no batch_ranges", |b| b.batch_ranges = false, false),
    ("reuse", |b| b.append_only = false, false),
    ("delta", |b| b.delta_bytes = None, false),
    ("delta, one by one", |b| b.delta_bytes = None, true),
];

/// R2's variants on this disk.
const R2_DISK: &[(&str, Switch)] = &[
    ("", all_on),
    ("no batch_ranges", |b| b.batch_ranges = false),
    ("reuse", |b| b.append_only = false),
];

/// R2's variants on the small simulated SSD.
const R2_SSD: &[(&str, Switch)] = &[
    ("ssd-small", all_on),
    ("ssd-small reuse", |b| b.append_only = false),
    ("ssd-small reuse, no trim", |b| {
        b.append_only = false;
        b.trim_freed = false;
    }),
];

/// The initial keys, sorted (uniform over u64, distinct).
pub fn initial_keys(n: u64, seed: u64) -> Vec<(u64, u64)> {
    let mut keys: Vec<u64> = (0..n).map(|i| mix(i ^ seed.rotate_left(17))).collect();
    keys.sort_unstable();
    keys.dedup();
    keys.into_iter().map(|k| (k, k)).collect()
}

/// `total` new keys in elementary bulks of `b` consecutive keys just above random initial
/// keys (§6.1), in the order drawn; a second bulk at the same initial key continues above
/// the first, so no key repeats.
fn elementary_bulks(init: &[(u64, u64)], total: u64, b: u64, seed: u64) -> Vec<(u64, u64)> {
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
    out
}

fn sorted(mut pairs: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    pairs.sort_unstable_by_key(|p| p.0);
    pairs.dedup_by_key(|p| p.0);
    pairs
}

/// One bulk of `total` keys in elementary bulks of `b`, sorted (the seed of an E1 cell is
/// `seed ^ b`, of an E2/E3 cell `seed ^ b ^ total.rotate_left(20)`).
pub fn bulk_keys(init: &[(u64, u64)], total: u64, b: u64, seed: u64) -> Vec<(u64, u64)> {
    sorted(elementary_bulks(init, total, b, seed))
}

fn options(engine: EngineKind, m: u32, f: Switch) -> Options {
    let mut b = BulkOptions {
        m: Some(m),
        delta_bytes: Some(0),
        append_only: true,
        ..BulkOptions::default()
    };
    f(&mut b);
    // The LA-tree's nodes are one page: 16 KiB pages (thesis §6.1's node size).
    let page = if engine == EngineKind::LaTree {
        LATREE_NODE
    } else {
        PAGE
    };
    Options::new(engine)
        .page_size(page)
        .buffer_pool_bytes(BUDGET)
        .bulk(b)
        .latree(LaTreeOptions {
            node_bytes: LATREE_NODE as u64,
            ..LaTreeOptions::default()
        })
}

/// The simulated SSDs of E1: the default geometry with the page-level and FAST FTLs.
fn e1_ssds() -> Vec<(&'static str, SimSsdConfig)> {
    vec![
        ("ssd-page", SimSsdConfig::with_ftl(FtlKind::Page)),
        ("ssd-fast", SimSsdConfig::with_ftl(FtlKind::Fast)),
    ]
}

/// R2's small simulated SSD: 48 MiB of NAND (33.6 MiB for the host), page-level FTL, so
/// that repeated bulks fill it (the initial index is 8 MiB at M = 2048).
fn small_ssd() -> SimSsdConfig {
    SimSsdConfig {
        nand: NandConfig {
            blocks: 384,
            ..NandConfig::default()
        },
        ..SimSsdConfig::with_ftl(FtlKind::Page)
    }
}

/// Create an index at `dir` holding the initial keys (one bulk insertion) and close it.
fn build(dir: &Path, opts: Options, init: &[(u64, u64)]) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    let db = Db::create(dir, opts).with_context(|| format!("creating {}", dir.display()))?;
    db.bulk_insert(init)?;
    db.close()?;
    Ok(())
}

impl Cell {
    fn new(experiment: &str, engine: EngineKind, m: u32, variant: &str, b: u64) -> Cell {
        Cell {
            experiment: experiment.into(),
            engine: engine.name().into(),
            m,
            b,
            bulks: 1,
            variant: variant.into(),
            ..Cell::default()
        }
    }

    /// Add the I/O between `s0` and `s1` (and on a simulated SSD its NAND time).
    fn add_io(&mut self, s0: &Stats, s1: &Stats) {
        let (a, b) = (&s0.device, &s1.device);
        self.pages_read += b.reads - a.reads;
        self.read_requests += b.read_requests - a.read_requests;
        self.read_kib += (b.read_bytes - a.read_bytes) >> 10;
        self.sequential_reads += b.sequential_reads - a.sequential_reads;
        self.random_reads += b.random_reads - a.random_reads;
        self.pages_written += b.writes - a.writes;
        self.write_requests += b.write_requests - a.write_requests;
        self.write_kib += (b.write_bytes - a.write_bytes) >> 10;
        self.sequential_writes += b.sequential_writes - a.sequential_writes;
        self.random_writes += b.random_writes - a.random_writes;
        self.ranges_affected += counter(s1, "ranges_affected") - counter(s0, "ranges_affected");
        self.erases += flash(s1, "erases") - flash(s0, "erases");
        self.gc_page_copies += flash(s1, "gc_page_copies") - flash(s0, "gc_page_copies");
        if self.on_ssd() {
            self.seconds += (flash(s1, "sim_time_us") - flash(s0, "sim_time_us")) as f64 / 1e6;
        }
    }

    /// The bulk index's shape after the cell.
    fn set_shape(&mut self, s: &Stats) {
        self.ranges = counter(s, "ranges");
        self.ranges_of_size_m = counter(s, "ranges_of_size_m");
        self.live_pages = counter(s, "live_pages");
        self.allocated_pages = counter(s, "allocated_pages");
    }
}

/// What a run shares.
struct Ctx<'a> {
    a: &'a BulkReproArgs,
    z: Sizes,
    init: Vec<(u64, u64)>,
    work: PathBuf,
    f: Frame,
}

impl Ctx<'_> {
    /// Insert `pairs` into a copy of `base` (one bulk insert, or one by one), flush, close,
    /// and measure.
    fn insert_cell(
        &self,
        base: &Path,
        mut c: Cell,
        pairs: &[(u64, u64)],
        one_by_one: bool,
    ) -> Result<Cell> {
        copy_dir(base, &self.work)?;
        let db =
            Db::open(&self.work).with_context(|| format!("opening {}", self.work.display()))?;
        let s0 = db.stats();
        let t0 = Instant::now();
        if one_by_one {
            for &(k, v) in pairs {
                db.insert(k, v)?;
            }
        } else {
            db.bulk_insert(pairs)?;
        }
        db.flush()?;
        // §6.1: "we flushed the data to disk at the end of the experiment": the close's
        // checkpoint (the LA-tree's dirty nodes and buffer pages, the bulk index's range
        // index) is timed and counted.
        let s1 = db.close_with_stats()?;
        if !c.on_ssd() {
            c.seconds = t0.elapsed().as_secs_f64();
        }
        c.n = pairs.len() as u64;
        c.add_io(&s0, &s1);
        c.set_shape(&s1);
        std::fs::remove_dir_all(&self.work).ok();
        Ok(c)
    }

    /// E1-E3 from `base`.
    fn inserts(&self, base: &Path, engine: EngineKind, m: u32, variant: &str) -> Result<Vec<Cell>> {
        let one_by_one = engine != EngineKind::BulkIndex;
        let mut cells = Vec::new();
        for &b in &self.z.e1_b {
            let pairs = bulk_keys(&self.init, self.z.e1_total, b, self.a.base.seed ^ b);
            let c = Cell::new("E1", engine, m, variant, b);
            cells.push(self.insert_cell(base, c, &pairs, one_by_one)?);
        }
        if !variant.is_empty() {
            return Ok(cells);
        }
        for b in [100u64, 1000] {
            for &t in &self.z.e23_totals {
                let pairs = bulk_keys(&self.init, t, b, self.a.base.seed ^ b ^ t.rotate_left(20));
                let e = if b == 100 { "E2" } else { "E3" };
                let c = Cell::new(e, engine, m, variant, b);
                cells.push(self.insert_cell(base, c, &pairs, one_by_one)?);
            }
        }
        Ok(cells)
    }

    /// E4: range searches of exactly N initial keys on a copy of `base`.
    fn searches(&self, base: &Path, engine: EngineKind, m: u32) -> Result<Vec<Cell>> {
        copy_dir(base, &self.work)?;
        let db = Db::open(&self.work)?;
        let init = &self.init;
        let mut cells = Vec::new();
        for &n in &self.z.e4_n {
            let mut c = Cell::new("E4", engine, m, "", n);
            let s0 = db.stats();
            let t0 = Instant::now();
            for i in 0..self.z.searches {
                // [L, H] holding exactly n initial keys (Alg. 4's bounds).
                let lo =
                    (mix(self.a.base.seed ^ i ^ n << 32) % (init.len() as u64 - n + 1)) as usize;
                let (l, h) = (init[lo].0, init[lo + n as usize - 1].0);
                let got = db.range(l..=h)?.count();
                anyhow::ensure!(got as u64 == n, "range search returned {got} of {n}");
            }
            c.seconds = t0.elapsed().as_secs_f64();
            c.add_io(&s0, &db.stats());
            c.n = self.z.searches;
            cells.push(c);
        }
        db.close()?;
        std::fs::remove_dir_all(&self.work).ok();
        Ok(cells)
    }

    /// E5: range deletes of N keys, each from the same initial state (§6.3), on the bulk
    /// index driven below `Db` so that it can be rewound between deletes.
    fn deletes(&self, m: u32) -> Result<Vec<Cell>> {
        let dir = self.f.data.join(format!("bulk-{m}-e5"));
        std::fs::create_dir_all(&dir)?;
        let storage = Storage {
            device: Box::new(FileDevice::open(&dir.join(flashix::DATA_FILE), PAGE, true)?),
            vfs: Arc::new(DirVfs::new(&dir)),
        };
        let opts = options(EngineKind::BulkIndex, m, all_on);
        let mut t = SerialBulkIndex::create(storage, opts)?;
        t.bulk_insert(&self.init)?;
        t.flush()?;
        let snap = t.snapshot()?;
        // The thesis's sizes, then kM and kM + 1 (the oscillation §6.3 describes).
        let mut sizes = self.z.e4_n.clone();
        for k in [1u64, 2, 4] {
            sizes.extend([k * u64::from(m), k * u64::from(m) + 1]);
        }
        let init = &self.init;
        let mut cells = Vec::new();
        for n in sizes {
            let mut c = Cell::new("E5", EngineKind::BulkIndex, m, "", n);
            for i in 0..self.z.deletes {
                let lo_i = (mix(self.a.base.seed ^ i ^ n << 40) % (init.len() as u64 - n)) as usize;
                let (lo, hi) = (init[lo_i].0, init[lo_i + n as usize - 1].0);
                let s0 = t.stats();
                let t0 = Instant::now();
                t.delete_range(lo, hi)?;
                t.flush()?;
                c.seconds += t0.elapsed().as_secs_f64();
                c.add_io(&s0, &t.stats());
                t.restore(&snap)?;
            }
            c.n = self.z.deletes;
            cells.push(c);
        }
        t.close()?;
        drop(t);
        std::fs::remove_dir_all(&dir).ok();
        Ok(cells)
    }

    /// The §5.6 ablations on E1 at b = 100 and 1000.
    fn ablations(&self, m: u32) -> Result<Vec<Cell>> {
        let mut cells = Vec::new();
        for &(variant, f, one_by_one) in ABLATIONS {
            let base = self.f.data.join(format!("bulk-{m}-ablation"));
            build(&base, options(EngineKind::BulkIndex, m, f), &self.init)?;
            for b in [100u64, 1000] {
                let pairs = bulk_keys(&self.init, self.z.e1_total, b, self.a.base.seed ^ b);
                let c = Cell::new("ablation", EngineKind::BulkIndex, m, variant, b);
                cells.push(self.insert_cell(&base, c, &pairs, one_by_one)?);
            }
            std::fs::remove_dir_all(&base).ok();
        }
        Ok(cells)
    }

    /// R2: `r2_bulks` bulk insertions of `r2_keys` keys (b = 100) into one index, each
    /// followed by a checkpoint; stops early, with a note, when the device is full. The
    /// index stays open throughout (driven below `Db`, whose close ends it): a simulated
    /// SSD's counters start at each open, after the FTL's recovery has erased the blocks
    /// holding no current page, which would hide the erases.
    fn repeated(
        &self,
        m: u32,
        variant: &str,
        f: Switch,
        ssd: Option<SimSsdConfig>,
    ) -> Result<Cell> {
        let dir = self.f.data.join("r2");
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        std::fs::create_dir_all(&dir)?;
        let mut opts = options(EngineKind::BulkIndex, m, f);
        let device: Box<dyn Device> = match &ssd {
            None => Box::new(FileDevice::open(&dir.join(flashix::DATA_FILE), PAGE, true)?),
            Some(cfg) => {
                opts = opts.device(DeviceSpec::SimulatedSsd(cfg.clone()));
                let nand = dir.join(flashix::NAND_FILE);
                let backing = FileDevice::open(&nand, cfg.nand.page_bytes, false)?;
                Box::new(SimSsd::create(Box::new(backing), cfg, PAGE)?)
            }
        };
        let storage = Storage {
            device,
            vfs: Arc::new(DirVfs::new(&dir)),
        };
        let mut t = SerialBulkIndex::create(storage, opts)?;
        t.bulk_insert(&self.init)?;
        t.close()?;
        let (bulks, keys) = (self.z.r2_bulks, self.z.r2_keys);
        let all = elementary_bulks(&self.init, bulks * keys, 100, self.a.base.seed ^ 0x52);
        let mut c = Cell::new("R2", EngineKind::BulkIndex, m, variant, 100);
        c.bulks = 0;
        for (k, part) in all.chunks(keys as usize).enumerate() {
            let pairs = sorted(part.to_vec());
            let s0 = t.stats();
            let t0 = Instant::now();
            // `close` of an engine is its checkpoint; the engine stays usable.
            match t.bulk_insert(&pairs).and_then(|()| t.close()) {
                Ok(()) => {
                    if !c.on_ssd() {
                        c.seconds += t0.elapsed().as_secs_f64();
                    }
                    let s1 = t.stats();
                    c.add_io(&s0, &s1);
                    c.set_shape(&s1);
                    c.bulks += 1;
                    c.n += pairs.len() as u64;
                }
                Err(e) => {
                    c.note = format!("stopped at bulk {} of {bulks}: {e}", k + 1);
                    break;
                }
            }
        }
        drop(t);
        std::fs::remove_dir_all(&dir).ok();
        Ok(c)
    }
}

/// Run the reproduction and save `repro-bulk.json`.
pub fn run(a: &BulkReproArgs) -> Result<BulkRepro> {
    let z = Sizes::new(a);
    let data = a
        .base
        .dir
        .clone()
        .unwrap_or_else(|| a.base.out.join("repro-bulk-data"));
    if data.exists() {
        std::fs::remove_dir_all(&data)?;
    }
    let f = Frame::open("bulk", &a.base.out, Some(&data), a.base.quick, a.base.seed)?.width(5);
    let ctx = Ctx {
        a,
        init: initial_keys(z.initial, a.base.seed),
        work: data.join("work"),
        z,
        f,
    };
    let z = &ctx.z;
    let engines = [EngineKind::BulkIndex, EngineKind::LaTree];
    let mut cells = Vec::new();
    for &m in &z.ms {
        for &engine in &engines {
            // The LA-tree has no M: it runs once, under the first M.
            if engine != EngineKind::BulkIndex && m != z.ms[0] {
                continue;
            }
            if a.base.runs("insert") || a.base.runs("E4") {
                let base = ctx.f.data.join(format!("{}-{m}-base", engine.name()));
                build(&base, options(engine, m, all_on), &ctx.init)?;
                if a.base.runs("insert") {
                    ctx.f.say(format!("{engine} M {m}: E1-E3"));
                    cells.extend(ctx.inserts(&base, engine, m, "")?);
                }
                if a.base.runs("E4") {
                    ctx.f.say(format!("{engine} M {m}: E4"));
                    cells.extend(ctx.searches(&base, engine, m)?);
                }
                std::fs::remove_dir_all(&base).ok();
            }
            if engine == EngineKind::BulkIndex && a.base.runs("E5") {
                ctx.f.say(format!("{engine} M {m}: E5"));
                cells.extend(ctx.deletes(m)?);
            }
            if engine == EngineKind::BulkIndex && a.base.runs("ablation") {
                ctx.f.say(format!("{engine} M {m}: ablations"));
                cells.extend(ctx.ablations(m)?);
            }
        }
    }
    if a.base.runs("R2") {
        ctx.f.say(format!("bulk M {}: R2 on this disk", z.m_ssd));
        for &(variant, f) in R2_DISK {
            cells.push(ctx.repeated(z.m_ssd, variant, f, None)?);
        }
    }
    let mut ssds = Vec::new();
    for (name, cfg) in e1_ssds().into_iter().filter(|_| a.base.runs("ssd")) {
        ssds.push(Lens::describe_ssd(name, &cfg));
        for &engine in &engines {
            ctx.f
                .say(format!("{engine} on the simulated SSD ({name}): E1"));
            let base = ctx.f.data.join(format!("{}-{name}", engine.name()));
            let opts =
                options(engine, z.m_ssd, all_on).device(DeviceSpec::SimulatedSsd(cfg.clone()));
            build(&base, opts, &ctx.init)?;
            cells.extend(ctx.inserts(&base, engine, z.m_ssd, name)?);
            std::fs::remove_dir_all(&base).ok();
        }
    }
    if a.base.runs("ssd") {
        ssds.push(Lens::describe_ssd("ssd-small", &small_ssd()));
        ctx.f
            .say(format!("bulk M {}: R2 on the small simulated SSD", z.m_ssd));
        for &(variant, f) in R2_SSD {
            cells.push(ctx.repeated(z.m_ssd, variant, f, Some(small_ssd()))?);
        }
    }
    std::fs::remove_dir_all(&ctx.f.data).ok();
    let mut r = BulkRepro {
        initial_keys: ctx.init.len() as u64,
        budget_bytes: BUDGET,
        ms: z.ms.clone(),
        searches: z.searches,
        deletes: z.deletes,
        ssds,
        reps: z.reps,
        quick: a.base.quick,
        wall_seconds: ctx.f.seconds(),
        cells,
        claims: Vec::new(),
    };
    r.claims = paper::check(&r);
    std::fs::create_dir_all(&a.base.out)?;
    let p = a.base.out.join("repro-bulk.json");
    std::fs::write(&p, serde_json::to_string_pretty(&r)?)
        .with_context(|| format!("writing {}", p.display()))?;
    Ok(r)
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

    #[test]
    fn repeated_bulks_never_repeat_a_key() {
        let init = initial_keys(10, 3);
        let all = elementary_bulks(&init, 4000, 100, 4);
        assert_eq!(sorted(all.clone()).len(), all.len());
    }
}
