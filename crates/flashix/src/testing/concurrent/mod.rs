//! The concurrent mode of the conformance harness (docs/design.md, Testing):
//! several threads run seeded random histories on one shared [`Db`], every call timed
//! against a global clock, and a checker verifies the Concurrency semantics from the
//! recorded history; crash rounds cut the device and the WAL while the threads write.
//!
//! # Histories (`history.rs`)
//!
//! `threads` workers start together (a [`std::sync::Barrier`]) and each makes `ops` calls
//! drawn from its own seeded stream: inserts, deletes, range deletes, small bulk inserts
//! and atomic batches (shared and own private keys mixed, keys repeated within a batch),
//! gets, `get_many`s, range scans iterated lazily (the `Range` iterator alive while other
//! threads write; the worker yields every few entries), `range_many`s and flushes. Keys
//! come from a pool every thread writes (dense, plus 0 and `u64::MAX`) and from one block
//! per thread that only that thread writes, blocks adjacent so that leaves at their
//! boundaries are shared. Every written value is unique and names its write
//! ([`value_of`]: round, thread, sequence number). A round starts from known contents:
//! loaded with one bulk insert (about half of all keys) before the first round, then what
//! the previous round left.
//!
//! # What is checked
//!
//! After each round without a crash ([`check_history`], `check.rs`):
//! - per key, every read (a `get`, each answer of a `get_many`, each entry of a scan) has
//!   a version that began before the read ended and that no write that completed before
//!   the read began superseded: a read never sees the future, nor a stale value;
//! - no read sees a version older than one the same thread (monotonic reads), or any
//!   thread in a read that ended before it began, saw;
//! - a thread reads its private keys exactly as its own history says;
//! - scans: keys strictly ascending and within bounds; every key present and unchanged
//!   for the whole scan returned; no key absent for the whole scan returned;
//! - the contents after the threads joined: each key holds a last write (for overlapping
//!   last writes, any one) consistent with every read; then `check_integrity`, close,
//!   reopen (the same storage: `reopen_mem` on memory, `Db::open` on a directory), the
//!   same contents and `check_integrity` again.
//!
//! Every call must succeed in these rounds. A failure names the engine, device, seed,
//! round and the calls involved (their thread, position, interval and answer), and
//! `FLASHIX_TRACE` prints the history's options.
//!
//! # Crash rounds (`crash.rs`)
//!
//! With [`Concurrent::crashes`], the storage is wrapped by the fault injector (one clock
//! over device and WAL, [`crate::io::Faults`]). Round 0 runs as above and counts the
//! injector's ticks of the threads' work; every later round arms a power cut at a random
//! tick within that count ([`crate::io::Faults::crash_after`]), so it lands while the
//! threads write and flush (a cut that the threads did not reach is made after they join,
//! [`crate::io::Faults::crash_now`]). Calls after the cut fail; none may fail before it
//! (with [`Concurrent::strict_errors`], each must fail with an I/O error or be refused);
//! once one failed the `Db` refuses everything (`Error::Poisoned`). Calls that failed may
//! or may not have happened. Then the crash image is opened and checked
//! ([`check_recovered`]): `check_integrity`; the reads (those that returned after the cut
//! too, unless [`Concurrent::check_after_cut`] is off: an answer is never allowed to be
//! wrong) pass [`check_history`]; every write that returned before a flush that returned `Ok`
//! was called is there (its effect or a later write's); each thread's private keys are a
//! prefix of its writes, a batch whole or not at all; and no surviving value is older than
//! a write that had to survive. The recovered contents start the next round. At the end:
//! close, reopen, the same contents.

mod check;
mod crash;
mod history;
#[cfg(test)]
mod tests;

pub use check::{check_history, CheckStats};
pub use crash::{check_recovered, CrashStats};
pub use history::{
    run_threads, value_of, Answer, BatchOp, Call, Event, Keys, Outcome, Plan, Recorded, Value,
    BASE, NEVER,
};

use super::{mem_db, options_for, reopen_mem, DeviceKind, Env};
use crate::io::{Faults, MemDevice, MemVfs};
use crate::util::Rng;
use crate::{Db, DeviceSpec, EngineKind, Error, Options};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// One concurrent history to run.
#[derive(Debug, Clone)]
pub struct Concurrent {
    /// The engine under test.
    pub engine: EngineKind,
    /// Where the index lives.
    pub device: DeviceKind,
    /// The seed of the options, the initial contents and every thread's calls.
    pub seed: u64,
    /// Worker threads.
    pub threads: usize,
    /// Calls per thread and round.
    pub ops: usize,
    /// Rounds: each ends with a close and reopen, or (crash rounds) a power cut.
    pub rounds: usize,
    /// Rounds after the first cut power while the threads run (module doc).
    pub crashes: bool,
    /// Keys every thread writes (besides 0 and `u64::MAX`).
    pub shared_keys: u64,
    /// Keys each thread writes alone.
    pub private_keys: u64,
    /// How long one round may take before it counts as hung (a deadlock in the library):
    /// the round then fails instead of the test hanging.
    pub deadline: Duration,
    /// In crash rounds, calls that fail after the power cut must fail with `Error::Io`
    /// (or be refused). Off by default: as in the single-threaded harness's crash step,
    /// any error after the cut is accepted (they are counted, [`Summary::odd_errors`]).
    pub strict_errors: bool,
    /// In crash rounds, check the reads that returned after the power cut too (their
    /// answers must be right like any other's). On by default; off, they are dropped from
    /// the history before the check and counted ([`Summary::unchecked_after_cut`]).
    pub check_after_cut: bool,
}

impl Concurrent {
    /// A history of `engine` on `device` from `seed`: 4 threads of 300 calls, 2 rounds,
    /// 96 shared keys and 512 private keys per thread, no crashes, 120 s per round.
    pub fn new(engine: EngineKind, device: DeviceKind, seed: u64) -> Self {
        Concurrent {
            engine,
            device,
            seed,
            threads: 4,
            ops: 300,
            rounds: 2,
            crashes: false,
            shared_keys: 96,
            private_keys: 512,
            deadline: Duration::from_secs(120),
            strict_errors: false,
            check_after_cut: true,
        }
    }
}

/// What a history did (for the tests' summaries).
#[derive(Debug, Default, Clone)]
pub struct Summary {
    /// Calls made.
    pub ops: usize,
    /// Rounds run.
    pub rounds: usize,
    /// Flushes that returned `Ok`.
    pub flushes: usize,
    /// Flushes another thread's WAL sync covered (`WalStats::syncs_saved`, summed at each
    /// close).
    pub syncs_saved: u64,
    /// Crash rounds.
    pub crashes: usize,
    /// Crash rounds whose power cut came while the threads ran (not after they joined).
    pub crashes_while_running: usize,
    /// What the checker of the histories saw.
    pub check: CheckStats,
    /// What the checker of the crash images saw.
    pub crash: CrashStats,
    /// Calls that failed after a power cut with an error other than `Error::Io`.
    pub odd_errors: usize,
    /// Reads that returned after a power cut and were not checked
    /// ([`Concurrent::check_after_cut`] off).
    pub unchecked_after_cut: usize,
    /// Entries in the index at the end.
    pub final_entries: usize,
    /// Leaf splits in the rounds without a crash (`Shape::leaf_splits`, where the engine
    /// splits leaves), summed at each close.
    pub leaf_splits: u64,
    /// The most levels below the in-memory one an engine of stepped levels had
    /// (`Shape::levels`) at a close.
    pub levels: usize,
    /// Point writes made beside other operations under the engine's shared lock (its
    /// `shared_writes` counter, where it has one), summed at each close in the rounds
    /// without a crash.
    pub shared_writes: u64,
    /// Splits made by those writes (the engine's `shared_splits` counter, where it has
    /// one), summed as `shared_writes`.
    pub shared_splits: u64,
}

impl Summary {
    /// Add `o`'s counts to these.
    pub fn add(&mut self, o: &Summary) {
        self.ops += o.ops;
        self.rounds += o.rounds;
        self.flushes += o.flushes;
        self.syncs_saved += o.syncs_saved;
        self.crashes += o.crashes;
        self.crashes_while_running += o.crashes_while_running;
        self.check.add(&o.check);
        self.crash.add(&o.crash);
        self.odd_errors += o.odd_errors;
        self.unchecked_after_cut += o.unchecked_after_cut;
        self.final_entries += o.final_entries;
        self.leaf_splits += o.leaf_splits;
        self.levels = self.levels.max(o.levels);
        self.shared_writes += o.shared_writes;
        self.shared_splits += o.shared_splits;
    }
}

/// The storage of a history, able to reopen the index.
enum Store {
    /// A `MemDevice` and `MemVfs` without fault injection (nothing serializes their I/O).
    Mem(Box<(MemDevice, MemVfs)>),
    /// An index directory, opened with `Db::open`.
    Dir(PathBuf),
    /// Storage under the fault injector (crash rounds, simulated SSDs).
    Faulty(Box<Env>),
}

impl Store {
    /// A new index with `o` on `h`'s device.
    fn create(h: &Concurrent, o: Options) -> Result<(Store, Db), Error> {
        match &h.device {
            DeviceKind::Memory if !h.crashes => {
                let (db, dev, vfs) = mem_db(o)?;
                Ok((Store::Mem(Box::new((dev, vfs))), db))
            }
            DeviceKind::File(dir) if !h.crashes => {
                let o = match o.device {
                    DeviceSpec::RawNand(_) => o,
                    _ => o.device(DeviceSpec::File { direct_io: true }),
                };
                let db = Db::create(dir, o)?;
                Ok((Store::Dir(dir.clone()), db))
            }
            device => {
                let mut env = Env::new(device.clone(), o.page_size, 8_000, h.seed);
                let db = Db::create_on(env.storage()?, o)?;
                Ok((Store::Faulty(Box::new(env)), db))
            }
        }
    }

    /// The index opened again on the same storage (a fresh fault injector for `Faulty`).
    fn reopen(&mut self) -> Result<Db, Error> {
        match self {
            Store::Mem(mem) => reopen_mem(&mem.0, &mem.1),
            Store::Dir(dir) => Db::open(dir),
            Store::Faulty(env) => Db::open_on(env.storage()?),
        }
    }

    /// The fault injector of the current handles, if any.
    fn faults(&self) -> Option<&Faults> {
        match self {
            Store::Faulty(env) => Some(env.faults()),
            _ => None,
        }
    }
}

/// Run one concurrent history (module doc); `Err` describes the first failure.
pub fn run(h: &Concurrent) -> Result<Summary, String> {
    let ctx =
        |round: usize, what: &str, e: &dyn std::fmt::Display| concurrent_ctx(h, round, what, e);
    if h.threads == 0 || h.shared_keys == 0 || h.private_keys == 0 {
        return Err(ctx(
            0,
            "configuration",
            &"threads and key counts must be positive",
        ));
    }
    let mut rng = Rng::new(h.seed);
    let opts = options_for(h.engine, &mut rng);
    if std::env::var_os("FLASHIX_TRACE").is_some() {
        eprintln!("options: {opts:?}");
    }
    let keys = Keys {
        threads: h.threads,
        shared: h.shared_keys,
        private: h.private_keys,
    };
    let (store, db) = Store::create(h, opts).map_err(|e| ctx(0, "create", &e))?;
    let initial = load(&db, &keys, &mut rng).map_err(|e| ctx(0, "loading", &e))?;
    let mut db = Some(db);
    let mut run = ConcurrentRun {
        h,
        store,
        rng,
        keys,
        initial,
        summary: Summary::default(),
        span: 0,
    };
    for round in 0..h.rounds {
        let Some(d) = db.take() else { break };
        db = Some(run.round(round, d)?);
    }
    run.finish(db)
}

/// The error message of a concurrent history: what failed, in which round, of which history.
fn concurrent_ctx(h: &Concurrent, round: usize, what: &str, e: &dyn std::fmt::Display) -> String {
    format!(
        "{:?} on {:?}, seed {}, {} threads x {} ops, round {round}: {what}: {e}",
        h.engine, h.device, h.seed, h.threads, h.ops
    )
}

/// A concurrent history between rounds: its storage, draws and keys, the contents the
/// next round starts from, and the summary so far.
struct ConcurrentRun<'h> {
    h: &'h Concurrent,
    store: Store,
    rng: Rng,
    keys: Keys,
    initial: BTreeMap<u64, u64>,
    summary: Summary,
    /// Injector ticks of round 0's threads: where later rounds' power cuts fall.
    span: u64,
}

impl ConcurrentRun<'_> {
    /// One round: the threads run on `d` (under an armed power cut in a crash round), then
    /// the round is checked. Returns the index the next round runs on.
    fn round(&mut self, round: usize, d: Db) -> Result<Db, String> {
        let h = self.h;
        let ctx = |what: &str, e: &dyn std::fmt::Display| concurrent_ctx(h, round, what, e);
        let crash = h.crashes && round > 0;
        let faults = self.store.faults().cloned();
        if let (true, Some(f)) = (crash, &faults) {
            f.crash_after(1 + self.rng.below(self.span.max(1)));
        }
        let ticks = faults.as_ref().map_or(0, |f| f.ticks());
        let plan = Plan {
            keys: self.keys,
            ops: h.ops,
            seed: self.rng.next_u64(),
            round: round as u64 + 1,
            after_failure: if h.crashes { 3 } else { 0 },
            deadline: h.deadline,
            faults: faults.clone(),
        };
        let shared = Arc::new(d);
        let events = run_threads(&shared, &plan).map_err(|e| ctx("threads", &e))?;
        let d = Arc::into_inner(shared).ok_or_else(|| ctx("threads", &"Db still shared"))?;
        let rec = Recorded {
            keys: Some(self.keys),
            initial: self.initial.clone(),
            events,
        };
        self.summary.rounds += 1;
        self.summary.ops += rec.events.len();
        self.summary.flushes += rec
            .events
            .iter()
            .filter(|e| e.call == Call::Flush && e.outcome == Outcome::Ok)
            .count();
        if !crash {
            if let Some(e) = rec.events.iter().find(|e| e.outcome != Outcome::Ok) {
                return Err(ctx("a call failed", e));
            }
            self.span = faults.as_ref().map_or(0, |f| f.ticks()) - ticks;
            return self.after_clean_round(round, d, &rec);
        }
        let Some(f) = faults else {
            return Err(ctx("crash round", &"no fault injector"));
        };
        self.summary.crashes += 1;
        self.summary.crashes_while_running += f.crashed() as usize;
        self.check_failures(round, &rec)?;
        if rec.events.iter().any(|e| e.outcome != Outcome::Ok) {
            // One call failed: the Db refuses everything now.
            match d.get(0) {
                Err(Error::Poisoned(_)) => {}
                r => {
                    let why = format!("a call failed, yet get(0) gave {r:?}");
                    return Err(ctx("not poisoned", &why));
                }
            }
        }
        self.after_crash(round, d, &rec, &f)
    }

    /// A round without a crash: check the history against the contents, close, reopen
    /// and find the same contents.
    fn after_clean_round(&mut self, round: usize, d: Db, rec: &Recorded) -> Result<Db, String> {
        let h = self.h;
        let ctx = |what: &str, e: &dyn std::fmt::Display| concurrent_ctx(h, round, what, e);
        let after = settle(&d).map_err(|e| ctx("after the threads", &e))?;
        let s = check_history(rec, Some(&after)).map_err(|e| ctx("check", &e))?;
        self.summary.check.add(&s);
        let st = d.stats();
        self.summary.syncs_saved += st.wal.syncs_saved;
        self.summary.leaf_splits += st.shape.leaf_splits.unwrap_or(0);
        let counter = |name: &str| st.engine_counters.get(name).copied().unwrap_or(0);
        self.summary.shared_writes += counter("shared_writes");
        self.summary.shared_splits += counter("shared_splits");
        self.summary.levels = self.summary.levels.max(st.shape.levels.len());
        d.close().map_err(|e| ctx("close", &e))?;
        let d = self.store.reopen().map_err(|e| ctx("reopen", &e))?;
        let again = settle(&d).map_err(|e| ctx("after reopen", &e))?;
        if again != after {
            return Err(ctx("after reopen", &differ(&again, &after)));
        }
        self.initial = after;
        Ok(d)
    }

    /// The calls of a crash round that failed, in the order they ended: none before the
    /// power cut; one with a non-I/O error is counted, and refused with `strict_errors`.
    fn check_failures(&mut self, round: usize, rec: &Recorded) -> Result<(), String> {
        let h = self.h;
        let ctx = |what: &str, e: &dyn std::fmt::Display| concurrent_ctx(h, round, what, e);
        let mut failed: Vec<&Event> = rec
            .events
            .iter()
            .filter(|e| matches!(e.outcome, Outcome::Failed(_)))
            .collect();
        failed.sort_by_key(|e| e.end);
        for e in &failed {
            let Outcome::Failed(why) = &e.outcome else {
                continue;
            };
            if !e.after_cut {
                return Err(ctx("a call failed before the power cut", e));
            }
            if !why.starts_with("I/O error") {
                self.summary.odd_errors += 1;
                if h.strict_errors {
                    let what = format!(
                        "a call failed with a non-I/O error after the power cut (the first \
                         call to fail: {})",
                        failed[0]
                    );
                    return Err(ctx(&what, e));
                }
            }
        }
        Ok(())
    }

    /// After a crash round's threads: cut the power, open the crash image and check the
    /// history and the recovered contents, which start the next round.
    fn after_crash(
        &mut self,
        round: usize,
        d: Db,
        rec: &Recorded,
        f: &Faults,
    ) -> Result<Db, String> {
        let h = self.h;
        let ctx = |what: &str, e: &dyn std::fmt::Display| concurrent_ctx(h, round, what, e);
        f.crash_now();
        drop(d);
        if let Some(e) = f.image_error() {
            return Err(ctx("building the crash image", &e));
        }
        let d = self
            .store
            .reopen()
            .map_err(|e| ctx("open after the crash", &e))?;
        let recovered = settle(&d).map_err(|e| ctx("after the crash", &e))?;
        let mut reads = rec.clone();
        if !h.check_after_cut {
            reads
                .events
                .retain(|e| e.call.is_write() || e.call == Call::Flush || !e.after_cut);
            self.summary.unchecked_after_cut += rec.events.len() - reads.events.len();
        }
        let s = check_history(&reads, None).map_err(|e| ctx("check", &e))?;
        self.summary.check.add(&s);
        let c = check_recovered(rec, &recovered).map_err(|e| ctx("crash check", &e))?;
        self.summary.crash.add(&c);
        self.initial = recovered;
        Ok(d)
    }

    /// After the last round: close; with crashes, reopen and find the same contents first.
    fn finish(mut self, db: Option<Db>) -> Result<Summary, String> {
        let h = self.h;
        let ctx = |what: &str, e: &dyn std::fmt::Display| concurrent_ctx(h, h.rounds, what, e);
        if let Some(d) = db {
            if h.crashes {
                d.close().map_err(|e| ctx("final close", &e))?;
                let d = self.store.reopen().map_err(|e| ctx("final reopen", &e))?;
                let again = settle(&d).map_err(|e| ctx("final reopen", &e))?;
                if again != self.initial {
                    return Err(ctx("final reopen", &differ(&again, &self.initial)));
                }
                d.close().map_err(|e| ctx("final close", &e))?;
            } else {
                d.close().map_err(|e| ctx("final close", &e))?;
            }
        }
        self.summary.final_entries = self.initial.len();
        Ok(self.summary)
    }
}

/// Load about half of all keys (0 and `u64::MAX` included) with one bulk insert and
/// flush; returns the contents.
fn load(db: &Db, keys: &Keys, rng: &mut Rng) -> Result<BTreeMap<u64, u64>, Error> {
    let mut all = vec![0, u64::MAX];
    let (lo, hi) = keys.shared_range();
    all.extend(lo..=hi);
    for t in 0..keys.threads {
        let (lo, hi) = keys.private_range(t);
        all.extend(lo..=hi);
    }
    let mut model = BTreeMap::new();
    let mut seq = 0;
    for k in all {
        if rng.coin() {
            seq += 1;
            model.insert(k, value_of(0, keys.threads, seq));
        }
    }
    let pairs: Vec<(u64, u64)> = model.iter().map(|(&k, &v)| (k, v)).collect();
    db.bulk_insert(&pairs)?;
    db.flush()?;
    Ok(model)
}

/// `check_integrity`, then the contents.
fn settle(db: &Db) -> Result<BTreeMap<u64, u64>, String> {
    db.check_integrity()
        .map_err(|e| format!("check_integrity: {e}"))?;
    let mut all = BTreeMap::new();
    for kv in db.range(..).map_err(|e| format!("scan: {e}"))? {
        let (k, v) = kv.map_err(|e| format!("scan: {e}"))?;
        if all.insert(k, v).is_some() {
            return Err(format!("scan: key {k} returned twice"));
        }
    }
    Ok(all)
}

/// How two contents differ (a few keys).
fn differ(got: &BTreeMap<u64, u64>, want: &BTreeMap<u64, u64>) -> String {
    let mut keys: Vec<u64> = got.keys().chain(want.keys()).copied().collect();
    keys.sort_unstable();
    keys.dedup();
    let d: Vec<String> = keys
        .into_iter()
        .filter(|k| got.get(k) != want.get(k))
        .take(5)
        .map(|k| {
            format!(
                "key {k}: {} now, {} before",
                Answer(got.get(&k).copied()),
                Answer(want.get(&k).copied())
            )
        })
        .collect();
    format!(
        "contents changed: {} entries now, {} before; {d:?}",
        got.len(),
        want.len()
    )
}
