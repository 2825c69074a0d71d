//! The moving-object model test (`tests/mobject.rs`): seeded random histories of
//! `update`, `update_from` (with the last motion reported, as the model knows it), `remove`,
//! `get`, `range`, `knn`, bad input, `flush`, reopen and crash against a
//! brute-force model of the quantised motions, for any engine on any device. A crash step
//! cuts power a few writes later (often inside an update's batch or a partition's
//! migration) and checks that the reopened index equals the model after a prefix of the
//! updates and removes since the last flush, each whole. Objects are left without updates
//! for longer than `Δt_mu` on purpose, so that partitions roll over onto them.

use super::{DeviceKind, Env, Rng};
use crate::mobject::{Curve, Hit, MobjectOptions, Motion, MovingIndex, Neighbor, Rect};
use crate::{EngineKind, Error, Options};
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// One history to run.
#[derive(Debug, Clone)]
pub struct MoHistory {
    /// The engine under the moving-object index.
    pub engine: EngineKind,
    /// The device it runs on.
    pub device: DeviceKind,
    /// The seed the operations are drawn from (a history is a function of it).
    pub seed: u64,
    /// Operations to run.
    pub ops: usize,
    /// Include crash steps.
    pub crashes: bool,
}

/// What a history did.
#[derive(Debug, Default, Clone)]
pub struct MoReport {
    /// Updates applied.
    pub updates: u64,
    /// Of them, blind ones (`update_from`).
    pub blind_updates: u64,
    /// Range queries checked against the model.
    pub ranges: u64,
    /// kNN queries checked against the model.
    pub knns: u64,
    /// Objects the range queries returned.
    pub hits: u64,
    /// Close-and-open steps.
    pub reopens: u64,
    /// Crash steps.
    pub crashes: u64,
    /// Bad-input steps (each must be refused and leave the index as it was).
    pub bad_inputs: u64,
    /// Objects moved to the overflow (`MobjectCounters::migrations`).
    pub migrations: u64,
    /// Entry-count estimates the kNN queries asked for (`MobjectCounters::knn_estimates`).
    pub knn_estimates: u64,
    /// Objects in the index at the end.
    pub final_objects: u64,
}

#[derive(Debug, Clone)]
enum Change {
    Update(u64, Motion),
    /// `update_from(id, old, new)`, `old` the object's motion in the model.
    UpdateFrom(u64, Motion, Motion),
    Remove(u64),
}

type Model = BTreeMap<u64, Motion>;

fn apply(model: &mut Model, c: &Change) {
    match c {
        Change::Update(id, m) | Change::UpdateFrom(id, _, m) => {
            model.insert(*id, *m);
        }
        Change::Remove(id) => {
            model.remove(id);
        }
    }
}

/// The answer of a brute-force range query over the model.
pub fn model_range(model: &Model, r: &Rect, t: u64) -> Vec<Hit> {
    model
        .iter()
        .filter_map(|(&id, m)| {
            let (x, y) = m.at(t);
            r.contains(x, y).then_some(Hit { id, x, y })
        })
        .collect()
}

/// The answer of a brute-force kNN query over the model.
pub fn model_knn(model: &Model, x: f64, y: f64, k: usize, t: u64) -> Vec<Neighbor> {
    let mut all: Vec<Neighbor> = model
        .iter()
        .map(|(&id, m)| {
            let (px, py) = m.at(t);
            let (dx, dy) = (px - x, py - y);
            Neighbor {
                id,
                x: px,
                y: py,
                dist: (dx * dx + dy * dy).sqrt(),
            }
        })
        .collect();
    all.sort_by(|a, b| match a.dist.total_cmp(&b.dist) {
        Ordering::Equal => a.id.cmp(&b.id),
        o => o,
    });
    all.truncate(k);
    all
}

/// Options varied by seed: small grids, few or many phases, both curves, interval caps
/// from 1 (every partition one merged interval) to 256, over the conformance harness's
/// small pages and pools.
fn options_for(engine: EngineKind, rng: &mut Rng) -> MobjectOptions {
    let index: Options = super::options_for(engine, rng);
    let phases = 1 + rng.below(3) as u32;
    let dt = u64::from(phases) * (1 + rng.below(40));
    MobjectOptions::new(index)
        .space(Rect {
            x0: -50.0,
            y0: 10.0,
            x1: 150.0 + rng.below(500) as f64,
            y1: 110.0 + rng.below(500) as f64,
        })
        .max_speed([0.5, 3.0, 10.0][rng.below(3) as usize])
        .max_update_interval(dt)
        .phases(phases)
        .grid_bits([2u32, 4, 6, 10][rng.below(4) as usize])
        .curve(if rng.coin() { Curve::Hilbert } else { Curve::Z })
        .max_intervals([1u32, 4, 256][rng.below(3) as usize])
}

/// Run one history; `Err` describes the first divergence.
pub fn run(h: &MoHistory) -> Result<MoReport, String> {
    let mut rng = Rng::new(h.seed);
    let opts = options_for(h.engine, &mut rng);
    let sim_pages = if h.engine == EngineKind::BTree {
        600
    } else {
        4000
    };
    let env = Env::new(h.device.clone(), opts.index.page_size, sim_pages, h.seed);
    let mut r = Runner {
        h,
        rng,
        pool: 0,
        opts,
        env,
        mi: None,
        report: MoReport::default(),
        model: BTreeMap::new(),
        durable: BTreeMap::new(),
        since: Vec::new(),
        now: 0,
    };
    let s = r.env.storage().map_err(|e| r.ctx("storage", 0, &e))?;
    let ix = MovingIndex::create_on(s, r.opts.clone()).map_err(|e| r.ctx("create", 0, &e))?;
    r.mi = Some(ix);
    r.pool = 20 + r.rng.below(200);
    for step in 0..h.ops {
        if r.mi.is_none() {
            break;
        }
        r.step(step)?;
    }
    r.finish()
}

/// One history's state: the index, the model, and what the last flush made durable.
struct Runner<'a> {
    h: &'a MoHistory,
    rng: Rng,
    /// Object ids are below this.
    pool: u64,
    opts: MobjectOptions,
    env: Env,
    mi: Option<MovingIndex>,
    report: MoReport,
    model: Model,
    /// The model at the last flush, and the changes since (a crash keeps a prefix of them).
    durable: Model,
    since: Vec<Change>,
    now: u64,
}

impl Runner<'_> {
    fn ctx(&self, what: &str, step: usize, e: &dyn std::fmt::Display) -> String {
        let h = self.h;
        format!(
            "mobject over {:?} on {:?}, seed {}, step {step}: {what}: {e}",
            h.engine, h.device, h.seed
        )
    }

    fn ix(&mut self) -> Result<&mut MovingIndex, String> {
        self.mi.as_mut().ok_or_else(|| "no index open".to_string())
    }

    fn step(&mut self, step: usize) -> Result<(), String> {
        match self.rng.below(100) {
            0..=44 => {
                // Updates carry the raw motion; the model keeps its quantised form.
                let c = self.gen_change();
                let r = exec(self.ix()?, &c);
                r.map_err(|e| self.ctx(&format!("{c:?}"), step, &e))?;
                self.report.updates +=
                    matches!(c, Change::Update(..) | Change::UpdateFrom(..)) as u64;
                self.report.blind_updates += matches!(c, Change::UpdateFrom(..)) as u64;
                apply(&mut self.model, &c);
                self.since.push(c);
            }
            45..=52 => {
                let id = self.rng.below(self.pool);
                let got = self.ix()?.get(id);
                let got = got.map_err(|e| self.ctx("get", step, &e))?;
                if got != self.model.get(&id).copied() {
                    return Err(self.ctx(
                        &format!("get({id})"),
                        step,
                        &format!("{got:?} != model {:?}", self.model.get(&id)),
                    ));
                }
            }
            53..=66 => self.range(step)?,
            67..=76 => self.knn(step)?,
            77..=82 => {
                let opts = self.opts.clone();
                let mut rng = std::mem::replace(&mut self.rng, Rng::new(0));
                let r = bad_input(self.ix()?, &mut rng, &opts);
                self.rng = rng;
                r.map_err(|e| self.ctx("bad input", step, &e))?;
                self.report.bad_inputs += 1;
            }
            83..=90 => {
                let r = self.ix()?.flush();
                r.map_err(|e| self.ctx("flush", step, &e))?;
                self.durable = self.model.clone();
                self.since.clear();
            }
            91..=93 => self.reopen(step)?,
            94..=96 if self.h.crashes => self.crash(step)?,
            _ => {
                let r = self.ix()?.check_integrity();
                r.map_err(|e| self.ctx("check_integrity", step, &e))?;
            }
        }
        Ok(())
    }

    /// A coordinate in `[lo, hi]`, the bounds themselves one time in ten.
    fn coord(&mut self, lo: f64, hi: f64) -> f64 {
        match self.rng.below(20) {
            0 => lo,
            1 => hi,
            _ => lo + (hi - lo) * (self.rng.below(1 << 20) as f64 / (1u64 << 20) as f64),
        }
    }

    fn speed(&mut self) -> f64 {
        let vmax = self.opts.max_speed;
        match self.rng.below(10) {
            0 => vmax,
            1 => -vmax,
            2 => 0.0,
            _ => vmax * (self.rng.below(2001) as f64 / 1000.0 - 1.0),
        }
    }

    /// The next update or remove; time moves on with it.
    fn gen_change(&mut self) -> Change {
        let (pool, dt_mu, space) = (self.pool, self.opts.max_update_interval, self.opts.space);
        if self.rng.below(12) == 0 {
            // Mostly ids present in the model, some never seen.
            let id = if self.rng.coin() {
                let n = self.rng.below(self.model.len().max(1) as u64) as usize;
                self.model.keys().nth(n).copied()
            } else {
                None
            };
            return Change::Remove(id.unwrap_or_else(|| self.rng.below(pool)));
        }
        // Time moves on: mostly a tick or none, sometimes a jump past Δt_mu (objects
        // not updated since then break the promise).
        self.now += match self.rng.below(40) {
            0 if self.rng.below(3) == 0 => dt_mu + self.rng.below(2 * dt_mu + 1),
            1..=14 => 1,
            _ => 0,
        };
        // Ids of a third of the pool are updated rarely (they go stale).
        let id = if self.rng.below(8) == 0 {
            self.rng.below(pool)
        } else {
            self.rng.below(pool * 2 / 3 + 1)
        };
        let m = Motion {
            x: self.coord(space.x0, space.x1),
            y: self.coord(space.y0, space.y1),
            vx: self.speed(),
            vy: self.speed(),
            t: self.now,
        };
        let m = self.opts.quantize(m);
        match self.model.get(&id) {
            Some(&old) if self.rng.coin() => Change::UpdateFrom(id, old, m),
            _ => Change::Update(id, m),
        }
    }

    /// A range query at a time from now on, checked against the model.
    fn range(&mut self, step: usize) -> Result<(), String> {
        let (space, dt_mu) = (self.opts.space, self.opts.max_update_interval);
        let t = self.now + self.rng.below(2 * dt_mu + 2);
        let (w, hgt) = (space.x1 - space.x0, space.y1 - space.y0);
        let side = [0.01, 0.1, 0.3, 1.5][self.rng.below(4) as usize];
        let cx = self.coord(space.x0 - w * 0.2, space.x1 + w * 0.2);
        let cy = self.coord(space.y0 - hgt * 0.2, space.y1 + hgt * 0.2);
        let r = Rect {
            x0: cx - w * side / 2.0,
            y0: cy - hgt * side / 2.0,
            x1: cx + w * side / 2.0,
            y1: cy + hgt * side / 2.0,
        };
        let got = self.ix()?.range(&r, t);
        let got = got.map_err(|e| self.ctx("range", step, &e))?;
        let want = model_range(&self.model, &r, t);
        if got != want {
            return Err(self.ctx(
                &format!("range({r:?}, t {t}, now {})", self.now),
                step,
                &format!(
                    "{} hits != model's {}: {:?}",
                    got.len(),
                    want.len(),
                    first_diff(&got, &want)
                ),
            ));
        }
        self.report.ranges += 1;
        self.report.hits += got.len() as u64;
        Ok(())
    }

    /// A kNN query at a time from now on, checked against the model.
    fn knn(&mut self, step: usize) -> Result<(), String> {
        let (space, dt_mu) = (self.opts.space, self.opts.max_update_interval);
        let t = self.now + self.rng.below(2 * dt_mu + 2);
        let x = self.coord(space.x0 - 20.0, space.x1 + 20.0);
        let y = self.coord(space.y0 - 20.0, space.y1 + 20.0);
        let k = [1usize, 2, 5, 20, 500][self.rng.below(5) as usize];
        let got = self.ix()?.knn(x, y, k, t);
        let got = got.map_err(|e| self.ctx("knn", step, &e))?;
        let want = model_knn(&self.model, x, y, k, t);
        if got != want {
            return Err(self.ctx(
                &format!("knn({x}, {y}, {k}, t {t})"),
                step,
                &format!(
                    "{} neighbours != model's {}: {:?}",
                    got.len(),
                    want.len(),
                    first_diff(&got, &want)
                ),
            ));
        }
        self.report.knns += 1;
        Ok(())
    }

    /// Add the closing index's counters to the report.
    fn count(&mut self, ix: &MovingIndex) {
        let c = ix.stats().counters;
        self.report.migrations += c.migrations;
        self.report.knn_estimates += c.knn_estimates;
    }

    /// Close and reopen: the model whole, and time where it was.
    fn reopen(&mut self, step: usize) -> Result<(), String> {
        if let Some(ix) = self.mi.take() {
            self.count(&ix);
            ix.close().map_err(|e| self.ctx("close", step, &e))?;
        }
        self.durable = self.model.clone();
        self.since.clear();
        let s = self
            .env
            .storage()
            .map_err(|e| self.ctx("storage", step, &e))?;
        let mut ix = MovingIndex::open_on(s).map_err(|e| self.ctx("reopen", step, &e))?;
        verify(&mut ix, &self.model, self.pool).map_err(|e| self.ctx("after reopen", step, &e))?;
        if ix.now() != self.now && !self.model.is_empty() && ix.now() > self.now {
            return Err(self.ctx(
                "now after reopen",
                step,
                &format!("{} > {}", ix.now(), self.now),
            ));
        }
        self.mi = Some(ix);
        self.report.reopens += 1;
        Ok(())
    }

    /// Cut power a few writes on (inside updates, flushes and migrations); the reopened
    /// index must be the durable model after a prefix of the changes since, each whole.
    fn crash(&mut self, step: usize) -> Result<(), String> {
        self.env.faults().crash_after(1 + self.rng.below(40));
        let mut n = 0;
        while !self.env.faults().crashed() && n < 30 {
            n += 1;
            if self.rng.below(10) == 0 {
                match self.ix()?.flush() {
                    Ok(()) => {
                        self.durable = self.model.clone();
                        self.since.clear();
                    }
                    Err(_) if self.env.faults().crashed() => {}
                    Err(e) => return Err(self.ctx("flush before the crash", step, &e)),
                }
                continue;
            }
            let c = self.gen_change();
            let r = exec(self.ix()?, &c);
            apply(&mut self.model, &c);
            self.since.push(c.clone());
            if let Err(e) = r {
                if !self.env.faults().crashed() {
                    return Err(self.ctx(&format!("{c:?} before the crash"), step, &e));
                }
            }
        }
        self.env.faults().crash_now();
        if let Some(ix) = self.mi.take() {
            self.count(&ix);
        }
        if let Some(e) = self.env.faults().image_error() {
            return Err(self.ctx("building the crash image", step, &e));
        }
        let s = self
            .env
            .storage()
            .map_err(|e| self.ctx("storage", step, &e))?;
        let mut ix = MovingIndex::open_on(s).map_err(|e| self.ctx("open after crash", step, &e))?;
        ix.check_integrity()
            .map_err(|e| self.ctx("check_integrity after crash", step, &e))?;
        let got =
            contents(&mut ix, self.pool).map_err(|e| self.ctx("read after crash", step, &e))?;
        let mut candidate = self.durable.clone();
        let mut kept = (candidate == got).then_some(0);
        for (i, c) in self.since.iter().enumerate() {
            if kept.is_some() {
                break;
            }
            apply(&mut candidate, c);
            if candidate == got {
                kept = Some(i + 1);
            }
        }
        if kept.is_none() {
            return Err(self.ctx(
                "prefix rule after crash",
                step,
                &format!(
                    "recovered {} objects, no prefix of the {} changes since the last flush gives them",
                    got.len(),
                    self.since.len()
                ),
            ));
        }
        // Time stays where the recovered index says (queries must not precede it).
        self.now = self.now.max(ix.now());
        self.model = got;
        self.durable = self.model.clone();
        self.since.clear();
        self.mi = Some(ix);
        self.report.crashes += 1;
        Ok(())
    }

    /// The model at the end, after close, reopen and close, and the simulator's checks.
    fn finish(mut self) -> Result<MoReport, String> {
        let ops = self.h.ops;
        if let Some(mut ix) = self.mi.take() {
            verify(&mut ix, &self.model, self.pool).map_err(|e| self.ctx("at the end", ops, &e))?;
            self.count(&ix);
            ix.close().map_err(|e| self.ctx("close", ops, &e))?;
        }
        let s = self
            .env
            .storage()
            .map_err(|e| self.ctx("storage", ops, &e))?;
        let mut ix = MovingIndex::open_on(s).map_err(|e| self.ctx("final reopen", ops, &e))?;
        verify(&mut ix, &self.model, self.pool)
            .map_err(|e| self.ctx("after the final reopen", ops, &e))?;
        ix.close().map_err(|e| self.ctx("final close", ops, &e))?;
        self.env
            .check_sim()
            .map_err(|e| self.ctx("simulated SSD check", ops, &e))?;
        self.report.final_objects = self.model.len() as u64;
        Ok(self.report)
    }
}

fn first_diff<T: PartialEq + std::fmt::Debug>(got: &[T], want: &[T]) -> String {
    for i in 0..got.len().max(want.len()) {
        if got.get(i) != want.get(i) {
            return format!(
                "first difference at {i}: {:?} vs {:?}",
                got.get(i),
                want.get(i)
            );
        }
    }
    "none".into()
}

fn exec(ix: &mut MovingIndex, c: &Change) -> crate::Result<()> {
    match c {
        Change::Update(id, m) => ix.update(*id, *m),
        Change::UpdateFrom(id, old, m) => ix.update_from(*id, *old, *m),
        Change::Remove(id) => ix.remove(*id).map(|_| ()),
    }
}

/// Every object of the pool as the index returns it; also checks that a whole-space
/// range query finds no object outside the pool.
fn contents(ix: &mut MovingIndex, pool: u64) -> crate::Result<Model> {
    let mut m = BTreeMap::new();
    for id in 0..pool {
        if let Some(mo) = ix.get(id)? {
            m.insert(id, mo);
        }
    }
    if ix.len() != m.len() as u64 {
        return Err(Error::InvalidArgument(format!(
            "the index counts {} objects, {} found by id",
            ix.len(),
            m.len()
        )));
    }
    Ok(m)
}

fn verify(ix: &mut MovingIndex, model: &Model, pool: u64) -> Result<(), String> {
    ix.check_integrity()
        .map_err(|e| format!("check_integrity: {e}"))?;
    let got = contents(ix, pool).map_err(|e| format!("read: {e}"))?;
    if &got != model {
        return Err(format!("{} objects vs model's {}", got.len(), model.len()));
    }
    Ok(())
}

/// A random bad argument: must be `InvalidArgument` naming the field, and change nothing.
fn bad_input(ix: &mut MovingIndex, rng: &mut Rng, opts: &MobjectOptions) -> Result<(), String> {
    let now = ix.now();
    let s = opts.space;
    let ok = Motion {
        x: s.x0,
        y: s.y1,
        vx: 0.0,
        vy: opts.max_speed,
        t: now,
    };
    let id = rng.below(50);
    let before = ix.get(id).map_err(|e| e.to_string())?;
    let (r, field): (crate::Result<()>, &str) = match rng.below(12) {
        0 if now > 0 => (ix.update(id, Motion { t: now - 1, ..ok }), "motion.t"),
        1 => (
            ix.update(
                id,
                Motion {
                    vx: opts.max_speed * 1.01,
                    ..ok
                },
            ),
            "motion.vx",
        ),
        2 => (
            ix.update(
                id,
                Motion {
                    x: s.x1 + 1e-6,
                    ..ok
                },
            ),
            "motion.x",
        ),
        3 => (ix.update(id, Motion { y: f64::NAN, ..ok }), "motion.y"),
        4 => (
            ix.update(
                id,
                Motion {
                    vy: f64::INFINITY,
                    ..ok
                },
            ),
            "motion.vy",
        ),
        5 => (ix.update(u64::MAX, ok), "id"),
        6 => (
            ix.range(
                &Rect {
                    x0: 1.0,
                    y0: 0.0,
                    x1: 0.0,
                    y1: 1.0,
                },
                now,
            )
            .map(|_| ()),
            "rect",
        ),
        7 if now > 0 => (ix.knn(0.0, 0.0, 3, now - 1).map(|_| ()), "query time"),
        8 => (ix.knn(f64::NAN, 0.0, 3, now).map(|_| ()), "knn point"),
        9 => (
            ix.update_from(id, Motion { t: now + 1, ..ok }, Motion { t: now + 1, ..ok }),
            "old motion.t",
        ),
        10 => (
            ix.update_from(id, Motion { x: f64::NAN, ..ok }, ok),
            "old motion.x",
        ),
        _ => (
            ix.update_from(
                id,
                ok,
                Motion {
                    vy: -opts.max_speed * 2.0,
                    ..ok
                },
            ),
            "motion.vy",
        ),
    };
    match r {
        Err(Error::InvalidArgument(msg)) if msg.contains(field) => {}
        other => {
            return Err(format!(
                "{field}: expected InvalidArgument naming it, got {other:?}"
            ))
        }
    }
    let after = ix.get(id).map_err(|e| e.to_string())?;
    if after != before {
        return Err(format!(
            "{field}: object {id} changed: {before:?} -> {after:?}"
        ));
    }
    Ok(())
}
