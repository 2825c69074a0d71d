//! Process kills: an engine runs in a child process on a real index
//! directory and is killed with `SIGKILL` at a random moment; the parent reopens the index
//! and checks the prefix rule of docs/design.md's contract point 3 against the operations the child had
//! acknowledged with `flush`.
//!
//! # Mechanism
//!
//! The parent ([`kill_rounds`]) creates the index with [`Db::create`] in a directory on a
//! real file system (the file device with `O_DIRECT` where the file system allows it, or
//! raw NAND in a file for IPL and d-IPL; the options are the conformance harness's small
//! ones for the seed, so that merges, splits, cleansings and checkpoints are frequent),
//! closes it, and then runs rounds on that one directory. Each round:
//!
//! 1. spawns the child: the test binary itself, re-executed with the arguments the test
//!    gives (`--exact <child test> --ignored --nocapture --test-threads=1`) and the
//!    environment variable [`CHILD_ENV`] = `"<engine> <seed> <dir>"`. The child test calls
//!    [`child_main`]. Re-executing the test binary needs no extra binary target and no
//!    cargo build step, and the child runs exactly the library code under test.
//! 2. The child opens the index with [`Db::open`] (recovering whatever the last kill left),
//!    reads its contents as its starting model, prints `flashix-kill: ready <entries>
//!    <digest>`, and runs the round's script: a seeded, deterministic sequence of inserts,
//!    deletes, bulk inserts, range deletes and atomic batches ([`Db::apply`]) with a `flush`
//!    every dozen steps or so (one in six of them a `close` and `open` instead, so that kills
//!    land in the checkpoint of a close and in an open with nothing to recover). In every other round the script is heavy: bulk inserts of
//!    500-4,000 pairs, batches of 50-400 operations, range deletes over most of the
//!    keys, so that a kill lands inside a long operation (a merge, a batch, a bulk).
//! 3. Side channel: after each successful `flush` (or `close`) the child prints `flashix-kill: acked
//!    <n>` on its stdout (a pipe to the parent), `n` being the number of operations of the
//!    script done so far. Rust's stdout is line-buffered, so the line is in the pipe when
//!    `println!` returns; a line the kill cut short is ignored. A kill between a flush
//!    and its line only makes the parent's bound weaker, never wrong.
//! 4. The parent chooses the kill moment from a cycle of eight classes (seeded start):
//!    mostly after a number of the child's lines (`ready` and 0-6 `acked`) plus 0-30
//!    milliseconds (0-150 in heavy rounds); in half the heavy rounds, 0-10 milliseconds
//!    after the child's first or second `flashix-kill: long <n>` line (printed before a
//!    long operation starts; `done <n>` after it), so that the kill lands inside the long
//!    operation; in one round of eight, 0-20 milliseconds after `ready`; in one, 0-25
//!    milliseconds after the spawn, so that the kill can land inside `open` and its
//!    recovery. It kills the child with `SIGKILL` ([`std::process::Child::kill`]) and waits
//!    for it. Timing kills from the child's progress keeps them among its operations however
//!    fast or loaded the machine is.
//!
//! # What is checked
//!
//! The parent regenerates the round's script from the seed and its own model (the child's
//! starting model must equal it: the `ready` line's entry count and digest are compared),
//! up to the first `flush` after the last acknowledged one (the child cannot have done an
//! operation past it: it would have printed the flush's line first). It opens the index
//! in-process — with [`Db::open`] and closes it again, or in one round of three with
//! [`Db::open_read_only`], which leaves the killed state on disk for the next child's
//! recovery, where the next kill may land — runs `check_integrity`, reads the contents, and
//! requires them to equal the model after some prefix of the script's operations that
//! contains every acknowledged one (a batch whole or not at all). Any other outcome is an
//! error that names engine, seed, round and the difference. The recovered state is the
//! next round's starting model. At the end the index is opened, checked, closed, and
//! opened and checked once more.
//!
//! A `SIGKILL` loses only what the process held in memory (what it wrote reached the
//! kernel): the test covers recovery from any moment of the engine's own work — a WAL
//! group commit not yet written, a merge, a checkpoint, a manifest switch half done, an
//! `io_uring` batch in flight — not power loss, which the conformance harness's crash
//! steps cover.

pub mod mobject;

use super::{exec, gen_mutation, options_for, range_is_valid, KeyGen, Op, Rng};
use crate::{Db, DeviceSpec, EngineKind, Options};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::ops::Bound;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The environment variable that makes the child test a child: `"<engine> <seed> <dir>"`.
pub const CHILD_ENV: &str = "FLASHIX_KILL_CHILD";

/// The prefix of the child's side-channel lines on its stdout.
const MARK: &str = "flashix-kill: ";

/// Steps a child's script may run; a kill lands long before (the parent sleeps at most a
/// fraction of a second), and a child that gets here exits without closing.
const MAX_STEPS: usize = 1_000_000;

/// The keys of heavy bulks and batches: a bounded region (with the conformance key
/// generator's dense one inside it), so an index stays a few tens of thousands of entries
/// however many rounds run, within the raw NAND of IPL and d-IPL.
const HEAVY_REGION: (u64, u64) = (1_000_000, 20_000);

/// What the kill rounds of one engine did.
#[derive(Debug, Default, Clone)]
pub struct KillReport {
    /// Rounds whose child was killed by the signal (not exited on its own).
    pub kills: usize,
    /// Kills that landed before the child was ready (inside `open` and its recovery).
    pub kills_before_ready: usize,
    /// Kills that landed after a long operation of a heavy script began and before the
    /// child said it ended (inside a big bulk, batch or range delete).
    pub kills_in_long_ops: usize,
    /// Rounds with a heavy script.
    pub heavy_rounds: usize,
    /// Rounds checked with [`Db::open_read_only`] (the next child recovers the kill).
    pub read_only_checks: usize,
    /// Flushes the children acknowledged.
    pub flushes_acked: usize,
    /// Operations the children acknowledged with a flush (summed over rounds).
    pub ops_acked: usize,
    /// Operations found in the reopened index: the shortest prefix that matches (summed).
    pub ops_recovered: usize,
    /// Acknowledged operations missing after a kill: always 0 (else the round fails).
    pub lost_after_flush: usize,
    /// Entries in the index at the end.
    pub final_entries: usize,
}

/// A step of a round's script.
#[derive(Debug)]
enum Step {
    /// An operation, and whether it is one of the heavy script's long ones.
    Op(Op, bool),
    /// A `flush`, or (`reopen`) a `close` and an `open`: close flushes too, and takes a
    /// checkpoint that a kill may cut.
    Flush { reopen: bool },
}

/// A round's deterministic script: a function of the seed and the starting contents.
struct Script {
    rng: Rng,
    keys: KeyGen,
    model: BTreeMap<u64, u64>,
    heavy: bool,
}

impl Script {
    fn new(seed: u64, model: BTreeMap<u64, u64>) -> Script {
        let mut rng = Rng::new(seed);
        let keys = KeyGen::new(&mut rng);
        let heavy = is_heavy(seed);
        Script {
            rng,
            keys,
            model,
            heavy,
        }
    }

    /// The next step; an operation is applied to the script's model.
    fn next_step(&mut self) -> Step {
        if self.rng.below(12) == 0 {
            return Step::Flush {
                reopen: self.rng.below(6) == 0,
            };
        }
        let long = self.heavy && self.rng.below(20) == 0;
        let op = if long {
            self.heavy_op()
        } else {
            let roll = self.rng.below(55);
            match gen_mutation(roll, &mut self.rng, &self.keys, &self.model) {
                Some(op) => op,
                None => Op::Delete(0),
            }
        };
        super::apply(&mut self.model, &op);
        Step::Op(op, long)
    }

    /// A long operation: a bulk of 500-4,000 pairs, a batch of 50-400 operations,
    /// or a range delete over most of the heavy region.
    fn heavy_op(&mut self) -> Op {
        let (base, span) = HEAVY_REGION;
        let rng = &mut self.rng;
        match rng.below(3) {
            0 => {
                let n = 500 + rng.below(3_500);
                Op::Bulk(
                    (0..n)
                        .map(|_| (base + rng.below(span), rng.next_u64()))
                        .collect(),
                )
            }
            1 => {
                let n = 50 + rng.below(350);
                Op::Batch(
                    (0..n)
                        .map(|_| {
                            let k = base + rng.below(span);
                            match rng.below(10) {
                                0..=6 => Op::Insert(k, rng.next_u64()),
                                7..=8 => Op::Delete(k),
                                _ => Op::DeleteRange(
                                    Bound::Included(k),
                                    Bound::Excluded(k + rng.below(300)),
                                ),
                            }
                        })
                        .collect(),
                )
            }
            _ => {
                let lo = base + rng.below(span / 4);
                let hi = lo + span / 2 + rng.below(span / 2);
                Op::DeleteRange(Bound::Included(lo), Bound::Excluded(hi))
            }
        }
    }
}

fn is_heavy(seed: u64) -> bool {
    seed % 3 == 0
}

/// Entry count and an order-dependent digest of `model`, for the `ready` line.
fn digest(model: &BTreeMap<u64, u64>) -> (usize, u64) {
    let (n, h) = digest_with(model.iter().flat_map(|(&k, &v)| [k, v]));
    (n / 2, h)
}

/// How many words `words` yields, and an order-dependent digest of them.
fn digest_with(words: impl Iterator<Item = u64>) -> (usize, u64) {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut n = 0;
    for x in words {
        h = (h ^ x).wrapping_mul(0x0100_0000_01b3);
        h ^= h >> 29;
        n += 1;
    }
    (n, h)
}

/// The child's side of a round when [`CHILD_ENV`] is set (else `Ok(false)`, nothing
/// done): open the index, print `ready`, run the script, print `acked <n>` after each
/// flush. Returns only on an error, or after a million steps (then without closing:
/// the index is left as a kill would leave it).
pub fn child_main() -> Result<bool, String> {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return Ok(false);
    };
    if let Some(rest) = spec.strip_prefix(mobject::SPEC_PREFIX) {
        return mobject::child_main(rest);
    }
    let mut parts = spec.splitn(3, ' ');
    let (Some(engine), Some(seed), Some(dir)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(format!(
            "{CHILD_ENV}={spec:?}: want \"<engine> <seed> <dir>\""
        ));
    };
    let engine: EngineKind = engine.parse().map_err(|e| format!("{CHILD_ENV}: {e}"))?;
    let seed: u64 = seed.parse().map_err(|e| format!("{CHILD_ENV}: {e}"))?;
    let ctx =
        |what: &str, e: &dyn std::fmt::Display| format!("{engine} child, seed {seed}: {what}: {e}");
    let mut db = Db::open(dir).map_err(|e| ctx("open", &e))?;
    let model = super::contents(&mut db).map_err(|e| ctx("scan", &e))?;
    let (n, h) = digest(&model);
    println!("{MARK}ready {n} {h}");
    let mut script = Script::new(seed, model);
    let mut done = 0usize;
    for _ in 0..MAX_STEPS {
        match script.next_step() {
            Step::Op(op, long) => {
                if long {
                    println!("{MARK}long {done}");
                }
                exec(&mut db, &op).map_err(|e| ctx(&format!("op {done}"), &e))?;
                if long {
                    println!("{MARK}done {done}");
                }
                done += 1;
            }
            Step::Flush { reopen: false } => {
                db.flush().map_err(|e| ctx("flush", &e))?;
                println!("{MARK}acked {done}");
            }
            Step::Flush { reopen: true } => {
                db.close().map_err(|e| ctx("close", &e))?;
                println!("{MARK}acked {done}");
                db = Db::open(dir).map_err(|e| ctx("reopen", &e))?;
            }
        }
    }
    // As a kill would leave it: no close, no flush on drop.
    std::mem::forget(db);
    Ok(true)
}

/// One engine's kill test.
#[derive(Debug, Clone)]
pub struct KillTest {
    /// The engine under test.
    pub engine: EngineKind,
    /// The seed options, scripts and kill moments are drawn from.
    pub seed: u64,
    /// Kill rounds to run on the one index.
    pub rounds: usize,
    /// The index directory (absent or empty).
    pub dir: PathBuf,
    /// The test binary to re-execute and the arguments that make it run only the child test
    /// (`--exact <name> --ignored --nocapture --test-threads=1`).
    pub exe: PathBuf,
    /// See [`KillTest::exe`].
    pub child_args: Vec<String>,
}

/// What a child printed and how it ended.
struct ChildRun {
    ready: Option<(usize, u64)>,
    acked: Option<usize>,
    flushes: usize,
    /// The last line said a long operation had begun (and none said it ended).
    in_long: bool,
    killed: bool,
    stderr: String,
}

/// Run the kill rounds of `t` (module doc); `Err` names the first failure.
pub fn kill_rounds(t: &KillTest) -> Result<KillReport, String> {
    let mut rng = Rng::new(t.seed);
    let opts = kill_options(t.engine, &mut rng);
    Db::create(&t.dir, opts)
        .and_then(Db::close)
        .map_err(|e| t.ctx(0, "create", &e))?;
    let mut rounds = Rounds {
        t,
        model: BTreeMap::new(),
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

impl KillTest {
    /// An error message naming the engine, seed and round.
    fn ctx(&self, round: usize, what: &str, e: &dyn std::fmt::Display) -> String {
        format!(
            "{} kill test, seed {}, round {round}: {what}: {e}",
            self.engine, self.seed
        )
    }
}

/// The parent's state across the rounds of one kill test.
struct Rounds<'a> {
    t: &'a KillTest,
    rng: Rng,
    /// The index's contents as the last check found them.
    model: BTreeMap<u64, u64>,
    report: KillReport,
    trace: bool,
    /// Where the cycle of kill classes starts.
    kill_offset: u64,
}

impl Rounds<'_> {
    /// One round: spawn the child, kill it, and check the recovered index against the
    /// script; the recovered contents become the model.
    fn round(&mut self, round: usize) -> Result<(), String> {
        let t = self.t;
        let heavy = round % 2 == 1;
        let seed = round_seed(self.rng.next_u64(), heavy);
        self.report.heavy_rounds += heavy as usize;
        let kill = KillAfter::choose(&mut self.rng, self.kill_offset + round as u64, heavy);
        let round_started = Instant::now();
        let spec = format!("{} {seed} {}", t.engine, t.dir.display());
        let run = run_child(t, &spec, kill).map_err(|e| t.ctx(round, "child", &e))?;
        let child_time = round_started.elapsed();
        self.check_child_run(round, &run)?;
        let acked = run.acked.unwrap_or(0);
        let ops = self.script_to_next_flush(round, seed, &run)?;
        let read_only = self.rng.below(3) == 0;
        self.report.read_only_checks += read_only as usize;
        let got = self.open_and_read(round, read_only)?;
        let kept = self.check_prefix(round, &ops, acked, &got)?;
        self.report.ops_recovered += acked + kept;
        if self.trace {
            eprintln!(
                "{} seed {} round {round}: {kill:?}, heavy {heavy}, read-only {read_only}: \
                 {acked} acked, {kept} more recovered, {} entries; child {child_time:?}, \
                 round {:?}",
                t.engine,
                t.seed,
                got.len(),
                round_started.elapsed()
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
            return Err(t.ctx(round, "the child ended before the kill", &run.stderr));
        }
        self.report.kills += 1;
        if let Some((n, h)) = run.ready {
            if (n, h) != digest(&self.model) {
                return Err(t.ctx(
                    round,
                    "the child's starting contents",
                    &format!(
                        "{n} entries (digest {h:x}) != the parent's {} ({:x})",
                        self.model.len(),
                        digest(&self.model).1
                    ),
                ));
            }
        } else {
            self.report.kills_before_ready += 1;
        }
        self.report.kills_in_long_ops += run.in_long as usize;
        self.report.flushes_acked += run.flushes;
        self.report.ops_acked += run.acked.unwrap_or(0);
        Ok(())
    }

    /// The round's script regenerated up to the first flush after the last acknowledged
    /// one: the child cannot have done an operation past it.
    fn script_to_next_flush(
        &self,
        round: usize,
        seed: u64,
        run: &ChildRun,
    ) -> Result<Vec<Op>, String> {
        let acked = run.acked.unwrap_or(0);
        let mut script = Script::new(seed, self.model.clone());
        let mut ops: Vec<Op> = Vec::new();
        loop {
            match script.next_step() {
                Step::Op(op, _) => ops.push(op),
                Step::Flush { .. } if ops.len() > acked || run.acked.is_none() => break,
                Step::Flush { .. } => {}
            }
            if ops.len() > MAX_STEPS {
                return Err(self
                    .t
                    .ctx(round, "regenerating the script", &"no flush found"));
            }
        }
        if ops.len() < acked {
            return Err(self
                .t
                .ctx(round, "side channel", &format!("acked {acked} > script")));
        }
        Ok(ops)
    }

    /// Opens the killed index (read-only or not), checks its integrity, reads its
    /// contents and closes it.
    fn open_and_read(&self, round: usize, read_only: bool) -> Result<BTreeMap<u64, u64>, String> {
        let t = self.t;
        let mut db = if read_only {
            Db::open_read_only(&t.dir)
        } else {
            Db::open(&t.dir)
        }
        .map_err(|e| t.ctx(round, "open after the kill", &e))?;
        db.check_integrity()
            .map_err(|e| t.ctx(round, "check_integrity after the kill", &e))?;
        let got = super::contents(&mut db).map_err(|e| t.ctx(round, "scan after the kill", &e))?;
        if read_only {
            drop(db);
        } else {
            db.close()
                .map_err(|e| t.ctx(round, "close after the check", &e))?;
        }
        Ok(got)
    }

    /// The prefix rule: `got` is the model after every acknowledged operation and some
    /// more of `ops`; returns how many more.
    fn check_prefix(
        &mut self,
        round: usize,
        ops: &[Op],
        acked: usize,
        got: &BTreeMap<u64, u64>,
    ) -> Result<usize, String> {
        let mut start = std::mem::take(&mut self.model);
        for op in &ops[..acked] {
            super::apply(&mut start, op);
        }
        let Some(kept) = matching_prefix(&start, &ops[acked..], got) else {
            return Err(self.t.ctx(
                round,
                "prefix rule after the kill",
                &format!(
                    "the index is no prefix of operations ..{} of the script \
                     ({} acknowledged; {})",
                    ops.len(),
                    acked,
                    super::describe_diff(got, &start)
                ),
            ));
        };
        Ok(kept)
    }

    /// After the last round: the index opens, checks, closes and does so once more.
    fn finish(mut self) -> Result<KillReport, String> {
        let t = self.t;
        let model = &self.model;
        let mut db = Db::open(&t.dir).map_err(|e| t.ctx(t.rounds, "final open", &e))?;
        super::verify(&mut db, model).map_err(|e| t.ctx(t.rounds, "final open", &e))?;
        db.close().map_err(|e| t.ctx(t.rounds, "final close", &e))?;
        let mut db = Db::open(&t.dir).map_err(|e| t.ctx(t.rounds, "reopen", &e))?;
        super::verify(&mut db, model).map_err(|e| t.ctx(t.rounds, "reopen", &e))?;
        db.close().map_err(|e| t.ctx(t.rounds, "close", &e))?;
        self.report.final_entries = model.len();
        Ok(self.report)
    }
}

/// The conformance harness's options for the seed, on a real directory: the file device
/// with `O_DIRECT` (raw NAND in a file for IPL and d-IPL, as the harness gives them).
fn kill_options(engine: EngineKind, rng: &mut Rng) -> Options {
    let o = options_for(engine, rng);
    match o.device {
        DeviceSpec::RawNand(_) => o,
        _ => o.device(DeviceSpec::File { direct_io: true }),
    }
}

/// When the parent kills the child.
#[derive(Debug, Clone, Copy)]
enum KillAfter {
    /// This long after the spawn.
    Spawn(Duration),
    /// This long after the child's n-th side-channel line (`ready` is the first).
    Lines(usize, Duration),
    /// This long after the child's n-th `long` line (the start of a long operation).
    Long(usize, Duration),
}

impl KillAfter {
    /// The module doc's schedule: from the spawn (inside startup, open or recovery), or
    /// some time after one of the child's lines; longer in heavy rounds, or just after a
    /// long operation began, to land inside one. A kill timed from a line, not from the
    /// spawn alone, lands among the script's operations however fast or loaded the
    /// machine is.
    fn choose(rng: &mut Rng, class: u64, heavy: bool) -> KillAfter {
        // Any four consecutive classes hold two that kill among the script's operations.
        match class % 8 {
            0 => KillAfter::Spawn(Duration::from_millis(rng.below(25))),
            4 => KillAfter::Lines(1, Duration::from_millis(rng.below(20))),
            1 | 2 | 5 | 6 if heavy => KillAfter::Long(
                1 + rng.below(2) as usize,
                Duration::from_millis(rng.below(10)),
            ),
            _ => KillAfter::Lines(
                2 + rng.below(6) as usize,
                Duration::from_millis(rng.below(if heavy { 150 } else { 30 })),
            ),
        }
    }
}

/// A round's seed from random bits: heavy ([`is_heavy`]) as asked. Every other round is
/// heavy, so that a short run has some.
fn round_seed(bits: u64, heavy: bool) -> u64 {
    (bits >> 2) * 3 + u64::from(!heavy)
}

/// How long a child may take to print a line (a debug build opening a large index on a
/// busy machine) before the round fails.
const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// Run the child of `t` with [`CHILD_ENV`] = `spec` and kill it at `kill`.
fn run_child(t: &KillTest, spec: &str, kill: KillAfter) -> Result<ChildRun, String> {
    let mut child = Command::new(&t.exe)
        .args(&t.child_args)
        .env(CHILD_ENV, spec)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("spawning {}: {e}", t.exe.display()))?;
    let spawned = Instant::now();
    let (Some(stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err("the child's pipes".into());
    };
    let (tx, rx) = mpsc::channel::<String>();
    let out = std::thread::spawn(move || {
        let mut r = BufReader::new(stdout);
        let mut line = String::new();
        // Only whole lines: the kill may cut the last one.
        while matches!(r.read_line(&mut line), Ok(n) if n > 0) {
            if line.ends_with('\n') {
                if let Some(i) = line.find(MARK) {
                    let _ = tx.send(line[i + MARK.len()..].trim_end().to_string());
                }
            }
            line.clear();
        }
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let mut lines: Vec<String> = Vec::new();
    match kill {
        KillAfter::Spawn(d) => std::thread::sleep(d.saturating_sub(spawned.elapsed())),
        KillAfter::Lines(n, d) | KillAfter::Long(n, d) => {
            let counted = |lines: &[String]| match kill {
                KillAfter::Long(..) => lines.iter().filter(|l| l.starts_with("long ")).count(),
                _ => lines.len(),
            };
            while counted(&lines) < n {
                match rx.recv_timeout(READY_TIMEOUT) {
                    Ok(l) => lines.push(l),
                    // It ended on its own: the status and stderr below say why.
                    Err(mpsc::RecvTimeoutError::Disconnected) => break,
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        let _ = child.kill();
                        let _ = child.wait();
                        return Err(format!(
                            "{} lines of the child's {n} after {READY_TIMEOUT:?}",
                            lines.len()
                        ));
                    }
                }
            }
            std::thread::sleep(d);
        }
    }
    let _ = child.kill();
    let status = child
        .wait()
        .map_err(|e| format!("waiting for the child: {e}"))?;
    let _ = out.join();
    let stderr = err.join().unwrap_or_default();
    lines.extend(rx.try_iter());
    let killed = {
        use std::os::unix::process::ExitStatusExt;
        status.signal() == Some(libc::SIGKILL)
    };
    let mut run = ChildRun {
        ready: None,
        acked: None,
        flushes: 0,
        in_long: lines.last().is_some_and(|l| l.starts_with("long ")),
        killed,
        stderr,
    };
    for l in &lines {
        let mut w = l.split(' ');
        match (w.next(), w.next(), w.next()) {
            (Some("ready"), Some(n), Some(h)) => {
                run.ready = n.parse().ok().zip(h.parse().ok());
            }
            (Some("acked"), Some(n), None) => {
                run.acked = Some(n.parse().map_err(|e| format!("line {l:?}: {e}"))?);
                run.flushes += 1;
            }
            (Some("long" | "done"), Some(_), None) => {}
            _ => return Err(format!("unexpected line {l:?} from the child")),
        }
    }
    if run.acked.is_some() && run.ready.is_none() {
        return Err("the child acknowledged a flush before it was ready".into());
    }
    Ok(run)
}

/// The number of `ops` after which `start` equals `got` (the shortest such prefix), if
/// any. Keeps a count of the keys on which the two differ and updates it with the keys
/// each operation changes, so a long script costs the keys it touches, not a comparison
/// of whole maps per operation.
fn matching_prefix(
    start: &BTreeMap<u64, u64>,
    ops: &[Op],
    got: &BTreeMap<u64, u64>,
) -> Option<usize> {
    let mut candidate = start.clone();
    let mut differing = got
        .iter()
        .filter(|(k, v)| candidate.get(k) != Some(v))
        .count()
        + candidate.keys().filter(|k| !got.contains_key(k)).count();
    if differing == 0 {
        return Some(0);
    }
    for (i, op) in ops.iter().enumerate() {
        apply_keyed(&mut candidate, op, &mut |k, before, after| {
            let want = got.get(&k).copied();
            let was = before != want;
            let is = after != want;
            match (was, is) {
                (true, false) => differing -= 1,
                (false, true) => differing += 1,
                _ => {}
            }
        });
        if differing == 0 {
            return Some(i + 1);
        }
    }
    None
}

/// [`super::apply`], calling `f(key, before, after)` for each key it writes.
fn apply_keyed(
    model: &mut BTreeMap<u64, u64>,
    op: &Op,
    f: &mut impl FnMut(u64, Option<u64>, Option<u64>),
) {
    match op {
        Op::Insert(k, v) => {
            let before = model.insert(*k, *v);
            f(*k, before, Some(*v));
        }
        Op::Delete(k) => {
            let before = model.remove(k);
            f(*k, before, None);
        }
        Op::Bulk(pairs) => {
            for &(k, v) in pairs {
                let before = model.insert(k, v);
                f(k, before, Some(v));
            }
        }
        Op::DeleteRange(lo, hi) => {
            if range_is_valid(*lo, *hi) {
                let doomed: Vec<(u64, u64)> =
                    model.range((*lo, *hi)).map(|(&k, &v)| (k, v)).collect();
                for (k, v) in doomed {
                    model.remove(&k);
                    f(k, Some(v), None);
                }
            }
        }
        Op::Batch(ops) => ops.iter().for_each(|op| apply_keyed(model, op, f)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The prefix search finds the shortest matching prefix, including the empty one, and
    /// none when the state is no prefix (an operation missing in the middle).
    #[test]
    fn matching_prefix_finds_the_shortest_prefix() {
        let start: BTreeMap<u64, u64> = [(1, 1), (2, 2)].into();
        let ops = vec![
            Op::Insert(3, 3),
            Op::Delete(1),
            Op::Batch(vec![Op::Insert(1, 9), Op::Delete(2)]),
            Op::DeleteRange(Bound::Included(0), Bound::Unbounded),
            Op::Bulk(vec![(5, 5), (5, 6)]),
        ];
        assert_eq!(matching_prefix(&start, &ops, &start), Some(0));
        let after = |n: usize| {
            let mut m = start.clone();
            ops[..n]
                .iter()
                .for_each(|op| super::super::apply(&mut m, op));
            m
        };
        for n in 0..=ops.len() {
            assert_eq!(
                matching_prefix(&start, &ops, &after(n)),
                Some(n),
                "prefix {n}"
            );
        }
        // Operation 1 (delete 1) missing, operation 0 there: no prefix.
        let skipped: BTreeMap<u64, u64> = [(1, 1), (2, 2), (3, 3), (9, 9)].into();
        assert_eq!(matching_prefix(&start, &ops, &skipped), None);
        let half_batch: BTreeMap<u64, u64> = [(1, 9), (2, 2), (3, 3)].into();
        assert_eq!(matching_prefix(&start, &ops, &half_batch), None);
    }

    /// A script is a function of its seed and starting contents.
    #[test]
    fn scripts_are_deterministic() {
        let run = |seed| {
            let mut s = Script::new(seed, BTreeMap::new());
            (0..300)
                .map(|_| format!("{:?}", s.next_step()))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(3), run(3));
        assert_ne!(run(3), run(4));
    }
}
