//! Process kills of the moving-object index ([`crate::mobject::MovingIndex`]) over an
//! engine: the mechanism, side channel and kill schedule of the parent module, with a
//! script of updates and removes over a pool of object ids (an update one atomic batch;
//! a time jump past `Δt_mu` rolls a partition over and migrates its objects — the long
//! operations of a heavy script). The parent checks that the reopened index (objects read
//! by id, their count, `check_integrity`) equals the model after a prefix of the script's
//! changes that contains every acknowledged one, and that its `now` is the latest time of
//! that prefix; the next round starts from the recovered objects and `now`.

use super::{digest_with, run_child, ChildRun, KillAfter, KillReport, KillTest, MARK, MAX_STEPS};
use crate::mobject::{MobjectOptions, Motion, MovingIndex, Rect};
use crate::testing::Rng;
use crate::EngineKind;
use std::collections::BTreeMap;
use std::time::Instant;

/// The prefix of [`super::CHILD_ENV`] that makes a child a moving-object child:
/// `"mobject:<engine> <seed> <dir>"`.
pub const SPEC_PREFIX: &str = "mobject:";

/// Object ids are below this.
const POOL: u64 = 120;

type Model = BTreeMap<u64, Motion>;

#[derive(Debug, Clone)]
enum Change {
    Update(u64, Motion),
    Remove(u64),
}

fn apply(model: &mut Model, c: &Change) {
    match c {
        Change::Update(id, m) => {
            model.insert(*id, *m);
        }
        Change::Remove(id) => {
            model.remove(id);
        }
    }
}

enum Step {
    /// A change, and whether it jumps time past `Δt_mu` (a partition rollover).
    Change(Change, bool),
    Flush,
}

/// A round's script: a function of the seed, the options and the starting `now`.
struct Script {
    rng: Rng,
    opts: MobjectOptions,
    now: u64,
    heavy: bool,
}

impl Script {
    fn new(seed: u64, opts: MobjectOptions, now: u64) -> Script {
        Script {
            rng: Rng::new(seed),
            opts,
            now,
            heavy: super::is_heavy(seed),
        }
    }

    fn next_step(&mut self) -> Step {
        let rng = &mut self.rng;
        if rng.below(12) == 0 {
            return Step::Flush;
        }
        if rng.below(10) == 0 {
            return Step::Change(Change::Remove(rng.below(POOL)), false);
        }
        let dt_mu = self.opts.max_update_interval;
        let jump = rng.below(if self.heavy { 15 } else { 60 }) == 0;
        self.now += if jump {
            dt_mu + rng.below(2 * dt_mu + 1)
        } else {
            rng.below(2)
        };
        let (space, vmax) = (self.opts.space, self.opts.max_speed);
        let unit = |rng: &mut Rng| rng.below(1 << 20) as f64 / (1u64 << 20) as f64;
        let speed = |rng: &mut Rng| vmax * (2.0 * unit(rng) - 1.0);
        let m = Motion {
            x: space.x0 + (space.x1 - space.x0) * unit(rng),
            y: space.y0 + (space.y1 - space.y0) * unit(rng),
            vx: speed(rng),
            vy: speed(rng),
            t: self.now,
        };
        Step::Change(Change::Update(rng.below(POOL), self.opts.quantize(m)), jump)
    }
}

fn digest(model: &Model, now: u64) -> (usize, u64) {
    let (n, h) = digest_with(model.iter().flat_map(|(&id, m)| {
        [
            id,
            m.x.to_bits(),
            m.y.to_bits(),
            m.vx.to_bits(),
            m.vy.to_bits(),
            m.t,
        ]
    }));
    (n / 6, h ^ now)
}

/// Every object of the pool, and a check that the index counts as many.
fn contents(ix: &mut MovingIndex) -> crate::Result<Model> {
    let mut m = BTreeMap::new();
    for id in 0..POOL {
        if let Some(mo) = ix.get(id)? {
            m.insert(id, mo);
        }
    }
    if ix.len() != m.len() as u64 {
        return Err(crate::Error::InvalidArgument(format!(
            "the index counts {} objects, {} found by id",
            ix.len(),
            m.len()
        )));
    }
    Ok(m)
}

/// The moving-object child (`rest` = `"<engine> <seed> <dir>"`): [`super::child_main`]'s
/// protocol with the script of this module.
pub(super) fn child_main(rest: &str) -> Result<bool, String> {
    let mut parts = rest.splitn(3, ' ');
    let (Some(engine), Some(seed), Some(dir)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(format!("{rest:?}: want \"<engine> <seed> <dir>\""));
    };
    let seed: u64 = seed.parse().map_err(|e| format!("{rest:?}: {e}"))?;
    let ctx = |what: &str, e: &dyn std::fmt::Display| {
        format!("mobject over {engine} child, seed {seed}: {what}: {e}")
    };
    let mut ix = MovingIndex::open(dir).map_err(|e| ctx("open", &e))?;
    let model = contents(&mut ix).map_err(|e| ctx("read", &e))?;
    let (n, h) = digest(&model, ix.now());
    println!("{MARK}ready {n} {h}");
    let mut script = Script::new(seed, ix.options().clone(), ix.now());
    let mut done = 0usize;
    for _ in 0..MAX_STEPS {
        match script.next_step() {
            Step::Change(c, long) => {
                if long {
                    println!("{MARK}long {done}");
                }
                let r = match &c {
                    Change::Update(id, m) => ix.update(*id, *m),
                    Change::Remove(id) => ix.remove(*id).map(|_| ()),
                };
                r.map_err(|e| ctx(&format!("change {done}: {c:?}"), &e))?;
                if long {
                    println!("{MARK}done {done}");
                }
                done += 1;
            }
            Step::Flush => {
                ix.flush().map_err(|e| ctx("flush", &e))?;
                println!("{MARK}acked {done}");
            }
        }
    }
    std::mem::forget(ix);
    Ok(true)
}

/// The moving-object index's options for the seed: over the conformance options of
/// `engine` on a real directory ([`super::kill_options`]), a small space, grid and `Δt_mu`
/// so that partitions roll over within a round.
fn options(engine: EngineKind, rng: &mut Rng) -> MobjectOptions {
    let index = super::kill_options(engine, rng);
    let phases = 1 + rng.below(3) as u32;
    MobjectOptions::new(index)
        .space(Rect {
            x0: 0.0,
            y0: 0.0,
            x1: 100.0 + rng.below(900) as f64,
            y1: 100.0 + rng.below(900) as f64,
        })
        .max_speed([0.5, 3.0][rng.below(2) as usize])
        .max_update_interval(u64::from(phases) * (2 + rng.below(30)))
        .phases(phases)
        .grid_bits([2u32, 6, 10][rng.below(3) as usize])
}

/// [`super::kill_rounds`] for the moving-object index over `t.engine`.
pub fn kill_rounds(t: &KillTest) -> Result<KillReport, String> {
    let mut rng = Rng::new(t.seed);
    let opts = options(t.engine, &mut rng);
    MovingIndex::create(&t.dir, opts.clone())
        .and_then(MovingIndex::close)
        .map_err(|e| ctx(t, 0, "create", &e))?;
    let mut rounds = Rounds {
        t,
        opts,
        model: Model::new(),
        now: 0,
        report: KillReport::default(),
        trace: std::env::var_os("FLASHIX_TRACE").is_some(),
        kill_offset: rng.below(8),
        rng,
    };
    for round in 0..t.rounds {
        rounds.round(round)?;
    }
    rounds.finish()
}

/// An error message naming the engine, seed and round.
fn ctx(t: &KillTest, round: usize, what: &str, e: &dyn std::fmt::Display) -> String {
    format!(
        "mobject over {} kill test, seed {}, round {round}: {what}: {e}",
        t.engine, t.seed
    )
}

/// The parent's state across the rounds of one moving-object kill test.
struct Rounds<'a> {
    t: &'a KillTest,
    opts: MobjectOptions,
    rng: Rng,
    /// The objects as the last check found them.
    model: Model,
    /// The index's `now` as the last check found it.
    now: u64,
    report: KillReport,
    trace: bool,
    /// Where the cycle of kill classes starts.
    kill_offset: u64,
}

impl Rounds<'_> {
    /// One round: spawn the child, kill it, and check the recovered index against the
    /// script; the recovered objects and `now` become the model.
    fn round(&mut self, round: usize) -> Result<(), String> {
        let t = self.t;
        let heavy = round % 2 == 1;
        let seed = super::round_seed(self.rng.next_u64(), heavy);
        self.report.heavy_rounds += heavy as usize;
        let kill = KillAfter::choose(&mut self.rng, self.kill_offset + round as u64, heavy);
        let started = Instant::now();
        let spec = format!("{SPEC_PREFIX}{} {seed} {}", t.engine, t.dir.display());
        let run: ChildRun = run_child(t, &spec, kill).map_err(|e| ctx(t, round, "child", &e))?;
        self.check_child_run(round, &run)?;
        let acked = run.acked.unwrap_or(0);
        let start_now = self.now;
        let changes = self.script_to_next_flush(round, seed, &run)?;
        let got = self.open_and_read(round)?;
        let kept = self.check_prefix(round, &changes, acked, &got)?;
        self.check_now(round, &changes[..acked + kept], start_now)?;
        self.report.ops_recovered += acked + kept;
        if self.trace {
            eprintln!(
                "mobject over {} seed {} round {round}: {kill:?}, heavy {heavy}: {acked} acked, \
                 {kept} more recovered, {} objects, now {}; round {:?}",
                t.engine,
                t.seed,
                got.len(),
                self.now,
                started.elapsed()
            );
        }
        self.model = got;
        Ok(())
    }

    /// The child was killed (not ended on its own) and, if it said `ready`, started from
    /// the model; counts what it printed.
    fn check_child_run(&mut self, round: usize, run: &ChildRun) -> Result<(), String> {
        let t = self.t;
        if !run.killed {
            return Err(ctx(
                t,
                round,
                "the child ended before the kill",
                &run.stderr,
            ));
        }
        self.report.kills += 1;
        self.report.kills_in_long_ops += run.in_long as usize;
        match run.ready {
            Some(r) if r != digest(&self.model, self.now) => {
                return Err(ctx(
                    t,
                    round,
                    "the child's starting objects",
                    &format!("{r:?} != the parent's {:?}", digest(&self.model, self.now)),
                ))
            }
            Some(_) => {}
            None => self.report.kills_before_ready += 1,
        }
        self.report.flushes_acked += run.flushes;
        self.report.ops_acked += run.acked.unwrap_or(0);
        Ok(())
    }

    /// The round's script regenerated up to the first flush after the last acknowledged
    /// one: the child cannot have made a change past it.
    fn script_to_next_flush(
        &self,
        round: usize,
        seed: u64,
        run: &ChildRun,
    ) -> Result<Vec<Change>, String> {
        let acked = run.acked.unwrap_or(0);
        let mut script = Script::new(seed, self.opts.clone(), self.now);
        let mut changes: Vec<Change> = Vec::new();
        loop {
            match script.next_step() {
                Step::Change(c, _) => changes.push(c),
                Step::Flush if changes.len() > acked || run.acked.is_none() => break,
                Step::Flush => {}
            }
            if changes.len() > MAX_STEPS {
                return Err(ctx(
                    self.t,
                    round,
                    "regenerating the script",
                    &"no flush found",
                ));
            }
        }
        Ok(changes)
    }

    /// Opens the killed index, checks its integrity, reads its objects and `now` (kept in
    /// `self.now`) and closes it.
    fn open_and_read(&mut self, round: usize) -> Result<Model, String> {
        let t = self.t;
        let mut ix =
            MovingIndex::open(&t.dir).map_err(|e| ctx(t, round, "open after the kill", &e))?;
        ix.check_integrity()
            .map_err(|e| ctx(t, round, "check_integrity after the kill", &e))?;
        let got = contents(&mut ix).map_err(|e| ctx(t, round, "read after the kill", &e))?;
        self.now = ix.now();
        ix.close()
            .map_err(|e| ctx(t, round, "close after the check", &e))?;
        Ok(got)
    }

    /// The prefix rule: `got` is the model after every acknowledged change and some more
    /// of `changes`; returns how many more.
    fn check_prefix(
        &mut self,
        round: usize,
        changes: &[Change],
        acked: usize,
        got: &Model,
    ) -> Result<usize, String> {
        let mut candidate = std::mem::take(&mut self.model);
        changes[..acked.min(changes.len())]
            .iter()
            .for_each(|c| apply(&mut candidate, c));
        let mut kept = (candidate == *got).then_some(0);
        for (i, c) in changes.iter().enumerate().skip(acked) {
            if kept.is_some() {
                break;
            }
            apply(&mut candidate, c);
            if candidate == *got {
                kept = Some(i + 1 - acked);
            }
        }
        let Some(kept) = kept else {
            return Err(ctx(
                self.t,
                round,
                "prefix rule after the kill",
                &format!(
                    "{} objects recovered, no prefix of the script's {} changes with the {acked} \
                     acknowledged gives them",
                    got.len(),
                    changes.len()
                ),
            ));
        };
        Ok(kept)
    }

    /// `now` is saved with each change's batch: after recovery it is the latest time of
    /// the recovered `prefix`, or `start_now` if it holds no update.
    fn check_now(&self, round: usize, prefix: &[Change], start_now: u64) -> Result<(), String> {
        let want_now = prefix
            .iter()
            .filter_map(|c| match c {
                Change::Update(_, m) => Some(m.t),
                Change::Remove(_) => None,
            })
            .fold(start_now, u64::max);
        if self.now != want_now {
            return Err(ctx(
                self.t,
                round,
                "now after the kill",
                &format!(
                    "{} != {want_now}, the latest time of the recovered changes",
                    self.now
                ),
            ));
        }
        Ok(())
    }

    /// After the last round: the index opens, checks and holds the model.
    fn finish(mut self) -> Result<KillReport, String> {
        let t = self.t;
        let mut ix = MovingIndex::open(&t.dir).map_err(|e| ctx(t, t.rounds, "final open", &e))?;
        ix.check_integrity()
            .map_err(|e| ctx(t, t.rounds, "final check_integrity", &e))?;
        let got = contents(&mut ix).map_err(|e| ctx(t, t.rounds, "final read", &e))?;
        if got != self.model {
            return Err(ctx(
                t,
                t.rounds,
                "final open",
                &format!("{} objects != {}", got.len(), self.model.len()),
            ));
        }
        ix.close()
            .map_err(|e| ctx(t, t.rounds, "final close", &e))?;
        self.report.final_entries = self.model.len();
        Ok(self.report)
    }
}
