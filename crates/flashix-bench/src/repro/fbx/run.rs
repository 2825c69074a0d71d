//! The experiments of `flashix repro fbx` (module doc of [`super`]).

use super::{
    paper, Cell, FbxRepro, FbxReproArgs, RatioRow, Sizes, INNER_ORDER, LEAF_ORDER, OCZ, PAGE, SSD,
};
use crate::cmd::mo_bench::{self, MoBenchArgs, MoWorkload};
use crate::repro::common::{copy_dir, counter, flash, mix, Frame, Lens};
use anyhow::{Context, Result};
use flashix::cost::logclean::{competitive_ratio, CleanPolicy, Op};
use flashix::sim::{SimSsdConfig, SsdProfile};
use flashix::{BTreeOptions, Db, DeviceSpec, EngineKind, FbxOptions, Options, Stats};
use indicatif::{ProgressBar, ProgressStyle};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The trees of R1-R4 (and the simulated SSD).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Subject {
    /// The in-place B+-tree: the paper's Random B-Tree.
    BTree,
    /// FBX with every node appended whole: §3.1's Sequential B-Tree.
    SeqBTree,
    Fbx,
}

impl Subject {
    fn name(self) -> &'static str {
        match self {
            Subject::BTree => "btree",
            Subject::SeqBTree => "seq-btree",
            Subject::Fbx => "fbx",
        }
    }

    /// The tree's options: the paper's orders (module doc), `budget` bytes of memory.
    fn options(self, budget: u64, device: DeviceSpec) -> Options {
        let fbx = |f: FbxOptions| {
            Options::new(EngineKind::Fbx).fbx(FbxOptions {
                leaf_order: Some(LEAF_ORDER),
                inner_order: Some(INNER_ORDER),
                ..f
            })
        };
        let o = match self {
            Subject::BTree => {
                Options::new(EngineKind::BTree).btree(BTreeOptions::orders(LEAF_ORDER, INNER_ORDER))
            }
            // The paper's naive method reclaims no space: no segment cleaning (segments
            // whose pages are all dead are still reused after a checkpoint), except on the
            // simulated SSD, which it would fill.
            Subject::SeqBTree => fbx(FbxOptions {
                space_amp_limit: if matches!(device, DeviceSpec::SimulatedSsd(_)) {
                    2.0
                } else {
                    1e9
                },
                ..FbxOptions::sequential_btree()
            }),
            Subject::Fbx => fbx(FbxOptions::default()),
        };
        o.page_size(PAGE).buffer_pool_bytes(budget).device(device)
    }
}

/// This machine's disk with O_DIRECT.
fn disk() -> DeviceSpec {
    DeviceSpec::File { direct_io: true }
}

/// The simulated SSD of the `ssd` cells for `records` inserts: the paper's Table 1 OCZ
/// (`SsdProfile::Ocz`, calibrated to its IO/s) with [`SSD_NAND_BYTES_PER_RECORD`] of NAND a
/// record (at least [`SSD_MIN_NAND_BYTES`]), so that a tree rewriting its pages in place
/// writes the NAND over several times and the FTL's garbage collection runs: the §1 erase
/// claim is then measured in erases, not only in programs.
pub(super) fn ssd_config(records: u64) -> SimSsdConfig {
    let bytes = records
        .saturating_mul(SSD_NAND_BYTES_PER_RECORD)
        .max(SSD_MIN_NAND_BYTES);
    SsdProfile::Ocz.config_sized(bytes)
}

/// NAND per record inserted on the simulated SSD: about twenty times a record's 16 bytes,
/// room for every tree's live pages and the space the FBX-tree's segments hold, and a
/// small share of what a B+-tree programs (a page rewritten per insert).
pub(super) const SSD_NAND_BYTES_PER_RECORD: u64 = 400;

/// The least NAND of the simulated SSD.
pub(super) const SSD_MIN_NAND_BYTES: u64 = 32 << 20;

/// The `i`-th key inserted (uniform over u64; distinct for distinct `i`: `mix` is a
/// bijection).
fn key(i: u64, seed: u64) -> u64 {
    mix(i ^ seed.rotate_left(32))
}

fn bar(len: u64, msg: String) -> ProgressBar {
    let pb = ProgressBar::new(len);
    pb.set_style(
        ProgressStyle::with_template("{msg:>36} [{bar:30}] {pos}/{len} {per_sec} eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    pb.set_message(msg);
    pb
}

impl Cell {
    fn new(experiment: &str, subject: &str, variant: &str, op: &str) -> Cell {
        Cell {
            experiment: experiment.into(),
            subject: subject.into(),
            variant: variant.into(),
            device: "disk".into(),
            op: op.into(),
            ..Cell::default()
        }
    }

    /// Add the I/O and engine work between `s0` and `s1`, and take the index's shape from
    /// `s1`.
    fn measure(&mut self, s0: &Stats, s1: &Stats) {
        let (a, b) = (&s0.device, &s1.device);
        self.pages_read += b.reads - a.reads;
        self.read_requests += b.read_requests - a.read_requests;
        self.random_reads += b.random_reads - a.random_reads;
        self.pages_written += b.writes - a.writes;
        self.write_requests += b.write_requests - a.write_requests;
        self.random_writes += b.random_writes - a.random_writes;
        self.ocz_seconds = OCZ.seconds(
            self.pages_read,
            self.random_reads,
            self.pages_written,
            self.random_writes,
        );
        self.wal_bytes += s1.wal.bytes - s0.wal.bytes;
        let d = |n: &str| counter(s1, n) - counter(s0, n);
        self.leaf_rebuilds += d("leaf_rebuilds");
        self.leaf_rebuild_pages += d("leaf_rebuild_pages");
        self.cleans += d("cleans");
        let f = |n: &str| flash(s1, n) - flash(s0, n);
        self.programs += f("flash_programs");
        self.erases += f("erases");
        self.gc_page_copies += f("gc_page_copies");
        self.max_erase_count = flash(s1, "max_erase_count");
        if self.device != "disk" {
            self.seconds += f("sim_time_us") as f64 / 1e6;
        }
        let leaves = counter(s1, "leaves");
        self.mean_list_len = counter(s1, "log_list_len_sum") as f64 / leaves.max(1) as f64;
        self.max_list_len = counter(s1, "log_list_len_max");
        self.file_pages = counter(s1, "file_pages");
        self.live_pages = counter(s1, "live_pages");
        self.ntt_bytes = counter(s1, "ntt_bytes");
        self.ntt_paper_bytes = counter(s1, "ntt_paper_bytes");
        if s1.engine == EngineKind::Fbx {
            self.height = counter(s1, "height");
            self.nodes = leaves + counter(s1, "inner_nodes");
        } else {
            self.height = s1.shape.levels.len() as u64;
            self.nodes = s1.shape.leaves.unwrap_or(0);
        }
    }
}

/// What a run shares.
struct Ctx<'a> {
    a: &'a FbxReproArgs,
    z: Sizes,
    f: Frame,
}

impl Ctx<'_> {
    fn path(&self, name: &str) -> PathBuf {
        self.f.data.join(name)
    }

    /// Insert keys `from..to` one by one, flush and close (timed and counted: the
    /// B+-tree's dirty pages are written then). `db` is open on `dir`.
    fn insert_cell(
        &self,
        db: Db,
        mut c: Cell,
        from: u64,
        to: u64,
        dir: Option<&Path>,
    ) -> Result<Cell> {
        let pb = bar(
            to - from,
            format!("{} {}: inserting", c.experiment, c.subject),
        );
        let s0 = db.stats();
        let t0 = Instant::now();
        for i in from..to {
            db.insert(key(i, self.a.base.seed), i)?;
            if i % 4096 == 0 {
                pb.set_position(i - from);
            }
        }
        db.flush()?;
        let s1 = db.close_with_stats()?;
        pb.finish_and_clear();
        if c.device == "disk" {
            c.seconds = t0.elapsed().as_secs_f64();
        }
        c.records = from;
        c.ops = to - from;
        c.measure(&s0, &s1);
        if let Some(dir) = dir {
            if c.subject == "btree" {
                // The in-place file: every page of it is live.
                let len = std::fs::metadata(dir.join(flashix::DATA_FILE))?.len();
                c.file_pages = len / PAGE as u64;
                c.live_pages = c.file_pages;
            }
        }
        Ok(c)
    }

    /// `ops` searches of keys drawn from the first `records` inserted.
    fn search_cell(&self, db: &mut Db, mut c: Cell, records: u64, ops: u64) -> Result<Cell> {
        let mut rng = StdRng::seed_from_u64(self.a.base.seed ^ 0x5ea7c4);
        let pb = bar(ops, format!("{} {}: searching", c.experiment, c.subject));
        let s0 = db.stats();
        let t0 = Instant::now();
        for j in 0..ops {
            let i = rng.gen_range(0..records);
            let got = db.get(key(i, self.a.base.seed))?;
            anyhow::ensure!(got == Some(i), "{}: key {i} gave {got:?}", c.subject);
            if j % 1024 == 0 {
                pb.set_position(j);
            }
        }
        pb.finish_and_clear();
        if c.device == "disk" {
            c.seconds = t0.elapsed().as_secs_f64();
        }
        c.records = records;
        c.ops = ops;
        c.measure(&s0, &db.stats());
        Ok(c)
    }

    /// A mix of `pct`% inserts of new keys (from `records` on) and searches of inserted
    /// keys on `db`, which holds keys `0..records`; ends with a flush.
    fn mix_cell(&self, db: &mut Db, mut c: Cell, records: u64, pct: u32) -> Result<Cell> {
        let mut rng = StdRng::seed_from_u64(self.a.base.seed ^ u64::from(pct) << 8);
        let ops = self.z.mix_ops;
        let s0 = db.stats();
        let t0 = Instant::now();
        let mut next = records;
        for _ in 0..ops {
            if rng.gen_range(0..100) < pct {
                db.insert(key(next, self.a.base.seed), next)?;
                next += 1;
            } else {
                let i = rng.gen_range(0..next);
                let got = db.get(key(i, self.a.base.seed))?;
                anyhow::ensure!(got == Some(i), "{}: key {i} gave {got:?}", c.subject);
            }
        }
        db.flush()?;
        c.seconds = t0.elapsed().as_secs_f64();
        c.records = records;
        c.insert_pct = pct;
        c.ops = ops;
        c.measure(&s0, &db.stats());
        Ok(c)
    }

    /// A mix cell on a copy of `base` (holding `records` keys), opened by `open`.
    fn mix_on_copy(
        &self,
        base: &Path,
        c: Cell,
        records: u64,
        pct: u32,
        open: impl FnOnce(&Path) -> flashix::Result<Db>,
    ) -> Result<Cell> {
        let work = self.path("work");
        copy_dir(base, &work)?;
        let mut db = open(&work).with_context(|| format!("opening {}", work.display()))?;
        let c = self.mix_cell(&mut db, c, records, pct)?;
        db.close()?;
        std::fs::remove_dir_all(&work).ok();
        Ok(c)
    }

    /// R1 and R2: inserts from empty, then searches, on each tree; the indexes stay for
    /// R3-R7 (`base-{tree}`).
    fn r1_r2(&self, cells: &mut Vec<Cell>) -> Result<()> {
        let n = self.z.records;
        for tree in [Subject::BTree, Subject::SeqBTree, Subject::Fbx] {
            let dir = self.path(&format!("base-{}", tree.name()));
            if dir.exists() {
                std::fs::remove_dir_all(&dir)?;
            }
            self.f
                .say(format!("R1: {n} inserts into the {}", tree.name()));
            let db = Db::create(&dir, tree.options(self.z.budget, disk()))?;
            let c = Cell::new("R1", tree.name(), "", "insert");
            cells.push(self.insert_cell(db, c, 0, n, Some(&dir))?);
            self.f.say(format!(
                "R2: {} searches on the {}",
                self.z.searches,
                tree.name()
            ));
            let mut db = Db::open(&dir)?;
            let c = Cell::new("R2", tree.name(), "", "search");
            cells.push(self.search_cell(&mut db, c, n, self.z.searches)?);
            db.close()?;
            if tree == Subject::SeqBTree {
                std::fs::remove_dir_all(&dir).ok();
            }
        }
        Ok(())
    }

    /// R3 and R4: mixes on copies of R2's B+-tree and FBX-tree, at `records` and at twice
    /// that; R4 gives the B+-tree twice the budget.
    fn r3_r4(&self, cells: &mut Vec<Cell>) -> Result<()> {
        let n = self.z.records;
        for tree in [Subject::BTree, Subject::Fbx] {
            let base = self.path(&format!("base-{}", tree.name()));
            let big = self.path(&format!("base2-{}", tree.name()));
            copy_dir(&base, &big)?;
            self.f
                .say(format!("R3: {n} more inserts into the {}", tree.name()));
            let db = Db::open(&big)?;
            let c = Cell::new("R3", tree.name(), "growing", "insert");
            cells.push(self.insert_cell(db, c, n, 2 * n, None)?);
            for (records, dir) in [(n, &base), (2 * n, &big)] {
                for pct in [50, 60, 70, 80, 90] {
                    self.f
                        .say(format!("R3: {} at {records}, {pct}% inserts", tree.name()));
                    let c = Cell::new("R3", tree.name(), "", "mix");
                    cells.push(self.mix_on_copy(dir, c, records, pct, |d| Db::open(d))?);
                    if tree == Subject::BTree && pct >= 70 {
                        let pool = 2 * self.z.budget;
                        let variant = format!("pool {} MiB", pool >> 20);
                        let c = Cell::new("R4", tree.name(), &variant, "mix");
                        let open = |d: &Path| Db::open_with_buffer_pool(d, pool);
                        cells.push(self.mix_on_copy(dir, c, records, pct, open)?);
                    }
                }
            }
            std::fs::remove_dir_all(&big).ok();
        }
        Ok(())
    }

    /// R6 and R7: clean policies and AC thresholds on copies of R2's FBX-tree.
    fn r6_r7(&self, cells: &mut Vec<Cell>) -> Result<()> {
        let base = self.path("base-fbx");
        let n = self.z.records;
        let mut runs: Vec<(&str, CleanPolicy)> = vec![
            ("R6", CleanPolicy::Never),
            ("R6", CleanPolicy::Naive { k: 8 }),
            ("R6", CleanPolicy::Naive { k: 16 }),
            ("R6", CleanPolicy::Naive { k: 32 }),
            ("R6", CleanPolicy::LongerThanNext),
            ("R6", CleanPolicy::AccumulateClean { threshold: 64 }),
        ];
        runs.extend(
            self.z
                .thresholds
                .iter()
                .map(|&t| ("R7", CleanPolicy::AccumulateClean { threshold: t })),
        );
        for pct in [50, 70, 90] {
            for &(e, policy) in &runs {
                let name = policy.name();
                self.f.say(format!("{e}: {name} at {pct}% inserts"));
                let c = Cell::new(e, "fbx", &name, "mix");
                let open = |d: &Path| {
                    flashix::experiment::open_adjusted(d, |o| {
                        let f = FbxOptions {
                            clean: policy,
                            ..o.fbx_options()
                        };
                        o.fbx(f)
                    })
                };
                cells.push(self.mix_on_copy(&base, c, n, pct, open)?);
            }
        }
        Ok(())
    }

    /// The arguments of a moving-object run of `objects` objects, `budget` bytes.
    fn mo_args(&self, workloads: &str) -> MoBenchArgs {
        MoBenchArgs {
            subjects: String::new(),
            workload: workloads.into(),
            data: "uniform".into(),
            objects: self.z.objects,
            ops: self.z.mo_ops,
            buffer_pool: None,
            max_update_interval: 120,
            max_speed: 3.0,
            ahead: 60,
            seed: self.a.base.seed,
            dir: self.path("mo"),
            out: self.f.data.clone(),
            update_path: mo_bench::UpdatePath::Blind,
        }
    }

    /// One moving-object subject over `index` with a budget of `budget` bytes, `ops`
    /// operations of each workload, a cell per workload.
    fn mo_cells(
        &self,
        e: &str,
        subject: &str,
        variant: &str,
        index: Options,
        workloads: &str,
        (budget, ops): (u64, u64),
    ) -> Result<Vec<Cell>> {
        let mut a = self.mo_args(workloads);
        a.ops = ops;
        let ws: Vec<MoWorkload> = workloads
            .split(',')
            .map(MoWorkload::parse)
            .collect::<Result<_>>()?;
        self.f
            .say(format!("{e}: {subject} {variant} on {workloads}"));
        let name = format!("{subject}{}", if variant.is_empty() { "" } else { "-v" });
        let rows = mo_bench::run_subject(&a, &name, index, &ws, Some(budget))?;
        Ok(rows
            .into_iter()
            .map(|r| {
                let mut c = Cell::new(e, subject, variant, &r.workload);
                c.records = r.objects;
                c.ops = r.ops;
                c.seconds = r.ops as f64 / r.ops_per_s.max(1e-9);
                c.p50_us = r.p50_us;
                c.p99_us = r.p99_us;
                let per = |x: f64| (x * r.ops as f64).round() as u64;
                c.pages_read = per(r.pages_read_per_op);
                c.random_reads = per(r.random_reads_per_op);
                c.pages_written = per(r.pages_written_per_op);
                c.random_writes = per(r.random_writes_per_op);
                c.ocz_seconds = OCZ.seconds(
                    c.pages_read,
                    c.random_reads,
                    c.pages_written,
                    c.random_writes,
                );
                c.results_per_query = r.results_per_query;
                c
            })
            .collect())
    }

    /// R5: moving-object range queries over FBX variants.
    fn r5(&self, cells: &mut Vec<Cell>) -> Result<()> {
        let fbx = |f: FbxOptions| Subject::Fbx.options(self.z.budget, disk()).fbx(f);
        let base = Subject::Fbx.options(self.z.budget, disk()).fbx_options();
        // At most half the budget (the quick run's budget is small).
        let cap = (self.z.budget / PAGE as u64 / 2).max(1) as u32;
        let log_buffer = |f: &FbxOptions, pages: u32| FbxOptions {
            log_buffer_pages: Some(pages.min(cap)),
            ..f.clone()
        };
        let big = 256.min(cap);
        let variants: Vec<(String, FbxOptions)> = vec![
            (format!("log buffer {}", 16.min(cap)), log_buffer(&base, 16)),
            (format!("log buffer {}", 64.min(cap)), log_buffer(&base, 64)),
            (format!("log buffer {big}"), log_buffer(&base, big)),
            (
                "no clustering".into(),
                FbxOptions {
                    cluster_bits: 0,
                    ..log_buffer(&base, 256)
                },
            ),
            (
                "no Algorithm 1".into(),
                FbxOptions {
                    batched_scans: false,
                    ..log_buffer(&base, 256)
                },
            ),
            (
                "original".into(),
                FbxOptions {
                    cluster_bits: 0,
                    batched_scans: false,
                    ..log_buffer(&base, 256)
                },
            ),
        ];
        // The pool's share stays that of the default log buffer: the budget grows and
        // shrinks with the log buffer (else a smaller log buffer would mean a larger pool).
        let pool_share = self.z.budget - u64::from(big) * PAGE as u64;
        let ops = (self.z.mo_ops / 4).max(50);
        for (v, f) in variants {
            let pages = u64::from(f.log_buffer_pages.unwrap_or(big));
            let budget = pool_share + pages * PAGE as u64;
            let c = self.mo_cells("R5", "fbx-tree", &v, fbx(f), "mo-range-10", (budget, ops))?;
            cells.extend(c);
        }
        Ok(())
    }

    /// R10: the Bx-tree against the FBX-tree on the moving-object workloads.
    fn r10(&self, cells: &mut Vec<Cell>) -> Result<()> {
        let w = "mo-update,mo-range-1,mo-range-10,mo-knn-10,mo-mix-50,mo-mix-90";
        let (b, ops) = (self.z.budget, (self.z.mo_ops / 2).max(50));
        let bx = Options::new(EngineKind::BTree).device(disk());
        cells.extend(self.mo_cells("R10", "bx", "", bx, w, (b, ops))?);
        let fbx = Options::new(EngineKind::Fbx).device(disk());
        cells.extend(self.mo_cells("R10", "fbx-tree", "", fbx, w, (b, ops))?);
        Ok(())
    }

    /// R1 and R2 on the simulated OCZ, in one session per tree (the simulator's counters
    /// start at each open), with the budget scaled to the records so that memory holds
    /// the same share of the index as on the disk.
    fn ssd(&self, cells: &mut Vec<Cell>) -> Result<()> {
        let n = self.z.ssd_records;
        let searches = self.z.searches.min(n);
        let budget = ((u128::from(self.z.budget) * u128::from(n) / u128::from(self.z.records))
            as u64)
            .max(256 << 10);
        for tree in [Subject::BTree, Subject::SeqBTree, Subject::Fbx] {
            let dir = self.path(&format!("ssd-{}", tree.name()));
            if dir.exists() {
                std::fs::remove_dir_all(&dir)?;
            }
            self.f.say(format!(
                "ssd: {n} inserts, {searches} searches, {}",
                tree.name()
            ));
            let spec = DeviceSpec::SimulatedSsd(ssd_config(n));
            let db = Db::create(&dir, tree.options(budget, spec))?;
            let mut c = Cell::new("R1", tree.name(), "", "insert");
            c.device = SSD.into();
            cells.push(self.insert_cell(db, c, 0, n, None)?);
            let mut db = Db::open(&dir)?;
            let mut c = Cell::new("R2", tree.name(), "", "search");
            c.device = SSD.into();
            cells.push(self.search_cell(&mut db, c, n, searches)?);
            db.close()?;
            std::fs::remove_dir_all(&dir).ok();
        }
        Ok(())
    }
}

/// R8: each policy's empirical competitive ratios on random sequences (write shares 50-90%,
/// 400 operations each) and on adversarial ones (blocks of `w` writes then `r` reads: the
/// Fig. 6 squares, and the ski-rental worst case of one write before many reads).
pub(super) fn ratios(seed: u64, sequences: usize) -> Vec<RatioRow> {
    let policies: Vec<(CleanPolicy, f64)> = vec![
        (CleanPolicy::Naive { k: 8 }, 8.0),
        (CleanPolicy::Naive { k: 32 }, 32.0),
        (CleanPolicy::LongerThanNext, 3.0),
        (
            CleanPolicy::AccumulateClean { threshold: 64 },
            (64f64).sqrt() / 2.0 + 1.0 / 3.0,
        ),
        (
            CleanPolicy::AccumulateClean { threshold: 16 },
            (16f64).sqrt() / 2.0 + 1.0 / 3.0,
        ),
    ];
    let mut rng = StdRng::seed_from_u64(seed ^ 0x7a710);
    let random: Vec<Vec<Op>> = (0..sequences)
        .map(|i| {
            let w = 0.5 + 0.1 * (i % 5) as f64;
            (0..400)
                .map(|_| if rng.gen_bool(w) { Op::Write } else { Op::Read })
                .collect()
        })
        .collect();
    let blocks = |w: usize, r: usize, times: usize| -> Vec<Op> {
        let mut ops = Vec::new();
        for _ in 0..times {
            ops.extend(std::iter::repeat(Op::Write).take(w));
            ops.extend(std::iter::repeat(Op::Read).take(r));
        }
        ops
    };
    let mut adversarial: Vec<(String, Vec<Op>)> = Vec::new();
    for s in [2usize, 3, 4, 5, 8, 9, 12, 16] {
        adversarial.push((format!("(w^{s} r^{s})x8"), blocks(s, s, 8)));
        adversarial.push((format!("(w^{} r^{s})x8", s + 1), blocks(s + 1, s, 8)));
    }
    for r in [4usize, 16, 64, 200] {
        adversarial.push((format!("(w r^{r})x4"), blocks(1, r, 4)));
    }
    policies
        .into_iter()
        .map(|(p, bound)| {
            let rs: Vec<f64> = random
                .iter()
                .filter_map(|ops| competitive_ratio(p, ops))
                .collect();
            let (adv, adversary) = adversarial
                .iter()
                .filter_map(|(name, ops)| competitive_ratio(p, ops).map(|r| (r, name.clone())))
                .fold(
                    (0.0, String::new()),
                    |best, x| if x.0 > best.0 { x } else { best },
                );
            RatioRow {
                policy: p.name(),
                bound,
                mean_random: rs.iter().sum::<f64>() / rs.len().max(1) as f64,
                max_random: rs.iter().copied().fold(0.0, f64::max),
                max_adversarial: adv,
                adversary,
            }
        })
        .collect()
}

/// Run the reproduction: every part `--only` names, then the claims' checks; writes
/// `repro-fbx.json`.
pub fn run(a: &FbxReproArgs) -> Result<FbxRepro> {
    let z = Sizes::new(a)?;
    let f = a.base.frame("fbx")?;
    let cx = Ctx { a, z, f };
    let mut cells = Vec::new();
    let base_needed = ["R1", "R2", "R3", "R4", "R6", "R7", "R9"]
        .iter()
        .any(|p| a.base.runs(p));
    if base_needed {
        cx.r1_r2(&mut cells)?;
    }
    if a.base.runs("R3") || a.base.runs("R4") {
        cx.r3_r4(&mut cells)?;
    }
    if a.base.runs("R6") || a.base.runs("R7") {
        cx.r6_r7(&mut cells)?;
    }
    if a.base.runs("R5") {
        cx.r5(&mut cells)?;
    }
    if a.base.runs("R10") {
        cx.r10(&mut cells)?;
    }
    if a.base.runs("ssd") {
        cx.ssd(&mut cells)?;
    }
    let ratios = if a.base.runs("R8") {
        cx.f.say("R8: competitive ratios in the abstract model".into());
        ratios(a.base.seed, if a.base.quick { 20 } else { 200 })
    } else {
        Vec::new()
    };
    for t in ["btree", "fbx"] {
        std::fs::remove_dir_all(cx.path(&format!("base-{t}"))).ok();
    }
    let mut r = FbxRepro {
        records: cx.z.records,
        searches: cx.z.searches,
        mix_ops: cx.z.mix_ops,
        objects: cx.z.objects,
        ssd_records: cx.z.ssd_records,
        budget_bytes: cx.z.budget,
        leaf_order: LEAF_ORDER,
        inner_order: INNER_ORDER,
        ssd: Lens::describe_ssd(SsdProfile::Ocz.description(), &ssd_config(cx.z.ssd_records)),
        quick: a.base.quick,
        wall_seconds: cx.f.seconds(),
        cells,
        ratios,
        claims: Vec::new(),
    };
    r.claims = paper::check(&r);
    cx.f.save(&r)?;
    Ok(r)
}
