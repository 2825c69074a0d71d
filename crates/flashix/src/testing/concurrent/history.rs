//! Recording concurrent histories: the key layout, the recorded operations, and the worker
//! threads that run seeded random operations on one shared [`Db`] and time each call.
//!
//! Time is a global [`AtomicU64`] clock: a worker reads it (`fetch_add`, sequentially
//! consistent) just before a call and just after it returns, so every event has an interval
//! `[start, end]` of distinct ticks, and `a.end < b.start` means that `a` returned before `b`
//! was called (real-time order). Tick 0 is "before the history": the initial contents.

use crate::io::Faults;
use crate::util::Rng;
use crate::{Batch, Db, Error};
use std::collections::BTreeMap;
use std::fmt;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::time::{Duration, Instant};

/// The end of an operation that failed: it may or may not have happened, and never
/// completed, so it is never older than anything.
pub const NEVER: u64 = u64::MAX;

/// The first key of the dense key region (shared keys, then each thread's private block).
pub const BASE: u64 = 1 << 40;

/// Where the keys of a history come from: `shared` dense keys `BASE..BASE + shared` that
/// every thread writes (plus the extremes 0 and `u64::MAX`, written by inserts, deletes and
/// batches only), then one block of `private` keys per thread, adjacent (so that leaves at
/// the block boundaries hold several threads' keys), written by that thread alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keys {
    /// Worker threads (owners of the private blocks `0..threads`).
    pub threads: usize,
    /// Dense shared keys.
    pub shared: u64,
    /// Private keys per thread.
    pub private: u64,
}

impl Keys {
    /// The dense shared keys, inclusive.
    pub fn shared_range(&self) -> (u64, u64) {
        (BASE, BASE + self.shared - 1)
    }

    /// Thread `t`'s private keys, inclusive.
    pub fn private_range(&self, t: usize) -> (u64, u64) {
        let lo = BASE + self.shared + t as u64 * self.private;
        (lo, lo + self.private - 1)
    }

    /// The thread whose private key `k` is, if any.
    pub fn owner(&self, k: u64) -> Option<usize> {
        let lo = BASE + self.shared;
        if k < lo || self.private == 0 {
            return None;
        }
        let t = (k - lo) / self.private;
        (t < self.threads as u64).then_some(t as usize)
    }

    /// One past the last private key.
    fn end(&self) -> u64 {
        BASE + self.shared + self.threads as u64 * self.private
    }

    fn shared_key(&self, rng: &mut Rng) -> u64 {
        match rng.below(16) {
            0 => 0,
            1 => u64::MAX,
            _ => BASE + rng.below(self.shared),
        }
    }

    fn dense_shared_key(&self, rng: &mut Rng) -> u64 {
        BASE + rng.below(self.shared)
    }

    fn private_key(&self, t: usize, rng: &mut Rng) -> u64 {
        self.private_range(t).0 + rng.below(self.private)
    }

    /// A key to read: shared, the reader's own, another thread's, or one nobody writes.
    fn read_key(&self, t: usize, rng: &mut Rng) -> u64 {
        match rng.below(100) {
            0..=44 => self.shared_key(rng),
            45..=79 => self.private_key(t, rng),
            80..=91 => self.private_key(rng.below(self.threads as u64) as usize, rng),
            92..=95 => BASE - 1 - rng.below(8),
            _ => self.end() + rng.below(8),
        }
    }
}

/// One operation of an atomic [`Batch`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchOp {
    /// `Batch::insert(key, value)`.
    Insert(u64, u64),
    /// `Batch::delete(key)`.
    Delete(u64),
    /// `Batch::delete_range(lo..=hi)`.
    DeleteRange(u64, u64),
}

/// A call on the `Db` and, for a read, what it returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// `insert(key, value)`.
    Insert(u64, u64),
    /// `delete(key)`.
    Delete(u64),
    /// `delete_range(lo..=hi)`.
    DeleteRange(u64, u64),
    /// `bulk_insert(pairs)`: for equal keys the last wins.
    Bulk(Vec<(u64, u64)>),
    /// `apply(batch)`.
    Batch(Vec<BatchOp>),
    /// `get(key)` and its answer.
    Get(u64, Option<u64>),
    /// `get_many(keys)` and its answers.
    GetMany(Vec<u64>, Vec<Option<u64>>),
    /// `range((lo, hi))` iterated to its end, lazily, and what it yielded.
    Range(Bound<u64>, Bound<u64>, Vec<(u64, u64)>),
    /// `range_many(ranges)` (inclusive pairs) and what it returned.
    RangeMany(Vec<(u64, u64)>, Vec<(u64, u64)>),
    /// `flush()`.
    Flush,
}

impl Call {
    /// True for the calls that change contents.
    pub fn is_write(&self) -> bool {
        matches!(
            self,
            Call::Insert(..)
                | Call::Delete(_)
                | Call::DeleteRange(..)
                | Call::Bulk(_)
                | Call::Batch(_)
        )
    }

    /// The per-key effects of a write, in the order the `Db` applies them: `(key, value)`,
    /// `None` for a delete. A range delete covers the keys `keys_in(lo, hi)` gives (the
    /// keys that may be present: a range delete of an absent key changes nothing).
    pub fn effects(&self, keys_in: &dyn Fn(u64, u64) -> Vec<u64>) -> Vec<(u64, Option<u64>)> {
        let mut out = Vec::new();
        let range = |out: &mut Vec<(u64, Option<u64>)>, lo: u64, hi: u64| {
            out.extend(keys_in(lo, hi).into_iter().map(|k| (k, None)));
        };
        match self {
            Call::Insert(k, v) => out.push((*k, Some(*v))),
            Call::Delete(k) => out.push((*k, None)),
            Call::DeleteRange(lo, hi) => range(&mut out, *lo, *hi),
            Call::Bulk(pairs) => out.extend(pairs.iter().map(|&(k, v)| (k, Some(v)))),
            Call::Batch(ops) => {
                for op in ops {
                    match op {
                        BatchOp::Insert(k, v) => out.push((*k, Some(*v))),
                        BatchOp::Delete(k) => out.push((*k, None)),
                        BatchOp::DeleteRange(lo, hi) => range(&mut out, *lo, *hi),
                    }
                }
            }
            _ => {}
        }
        out
    }

    /// The keys a write inserts.
    pub fn inserted(&self) -> Vec<u64> {
        self.effects(&|_, _| Vec::new())
            .into_iter()
            .filter_map(|(k, v)| v.map(|_| k))
            .collect()
    }

    /// True when a write may change a key in `lo..=hi`.
    pub fn touches(&self, lo: u64, hi: u64) -> bool {
        let within = |k: &u64| (lo..=hi).contains(k);
        let overlaps = |a: u64, b: u64| a <= hi && lo <= b;
        match self {
            Call::Insert(k, _) | Call::Delete(k) => within(k),
            Call::DeleteRange(a, b) => overlaps(*a, *b),
            Call::Bulk(pairs) => pairs.iter().any(|(k, _)| within(k)),
            Call::Batch(ops) => ops.iter().any(|op| match op {
                BatchOp::Insert(k, _) | BatchOp::Delete(k) => within(k),
                BatchOp::DeleteRange(a, b) => overlaps(*a, *b),
            }),
            _ => false,
        }
    }

    /// Apply a write to a model, its operations in order (a range delete removes what the
    /// operations before it in a batch inserted).
    pub fn apply(&self, model: &mut BTreeMap<u64, u64>) {
        let range = |model: &mut BTreeMap<u64, u64>, lo: u64, hi: u64| {
            let doomed: Vec<u64> = model.range(lo..=hi).map(|(&k, _)| k).collect();
            for k in doomed {
                model.remove(&k);
            }
        };
        match self {
            Call::Insert(k, v) => {
                model.insert(*k, *v);
            }
            Call::Delete(k) => {
                model.remove(k);
            }
            Call::DeleteRange(lo, hi) => range(model, *lo, *hi),
            Call::Bulk(pairs) => model.extend(pairs.iter().copied()),
            Call::Batch(ops) => {
                for op in ops {
                    match op {
                        BatchOp::Insert(k, v) => {
                            model.insert(*k, *v);
                        }
                        BatchOp::Delete(k) => {
                            model.remove(k);
                        }
                        BatchOp::DeleteRange(lo, hi) => range(model, *lo, *hi),
                    }
                }
            }
            _ => {}
        }
    }
}

/// A short description of a call (reads' results summarised).
impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Call::Insert(k, v) => write!(f, "insert({k}, {})", Value(*v)),
            Call::Delete(k) => write!(f, "delete({k})"),
            Call::DeleteRange(lo, hi) => write!(f, "delete_range({lo}..={hi})"),
            Call::Bulk(p) => write!(f, "bulk_insert({} pairs)", p.len()),
            Call::Batch(ops) => write!(f, "apply(batch of {} ops)", ops.len()),
            Call::Get(k, v) => write!(f, "get({k}) = {}", Answer(*v)),
            Call::GetMany(ks, _) => write!(f, "get_many({} keys)", ks.len()),
            Call::Range(lo, hi, got) => write!(f, "range({lo:?}, {hi:?}) = {} entries", got.len()),
            Call::RangeMany(r, got) => {
                write!(f, "range_many({} ranges) = {} entries", r.len(), got.len())
            }
            Call::Flush => write!(f, "flush()"),
        }
    }
}

/// A value as the history wrote it: `r<round>.t<thread>#<seq>` (see [`value_of`]).
pub struct Value(pub u64);

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        let (round, thread, seq) = (v >> 48, (v >> 32) & 0xFFFF, v & 0xFFFF_FFFF);
        match (round, thread) {
            (1.., 1..) => write!(f, "{v} (r{}.t{}#{seq})", round - 1, thread - 1),
            _ => write!(f, "{v}"),
        }
    }
}

/// An answer: a value or absent.
pub struct Answer(pub Option<u64>);

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(v) => write!(f, "{}", Value(v)),
            None => f.write_str("absent"),
        }
    }
}

/// The unique value of the `seq`-th value thread `thread` writes in round `round` (the
/// loader of the initial contents is thread `threads`): every written value identifies its
/// write.
pub fn value_of(round: u64, thread: usize, seq: u64) -> u64 {
    ((round + 1) << 48) | ((thread as u64 + 1) << 32) | (seq & 0xFFFF_FFFF)
}

/// How a call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// It returned `Ok`.
    Ok,
    /// It returned an error other than `Error::Poisoned`: it may or may not have happened.
    Failed(String),
    /// It returned `Error::Poisoned`: the `Db` refused it before doing anything.
    Refused(String),
}

/// One recorded call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The thread that made it.
    pub thread: usize,
    /// Its position in that thread's history.
    pub index: usize,
    /// The clock just before the call.
    pub start: u64,
    /// The clock just after it returned.
    pub end: u64,
    /// The call and its answer.
    pub call: Call,
    /// How it ended.
    pub outcome: Outcome,
    /// The fault injector had cut power when the call returned.
    pub after_cut: bool,
}

impl Event {
    /// The tick after which the event is known to have completed: its end, or [`NEVER`]
    /// if it failed (it may still be going on, or have done nothing).
    pub fn completed(&self) -> u64 {
        match self.outcome {
            Outcome::Ok => self.end,
            _ => NEVER,
        }
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "thread {} op #{} {} [{}, {}]",
            self.thread, self.index, self.call, self.start, self.end
        )?;
        match &self.outcome {
            Outcome::Ok => Ok(()),
            Outcome::Failed(e) => write!(f, " (failed: {e})"),
            Outcome::Refused(e) => write!(f, " (refused: {e})"),
        }?;
        if self.after_cut {
            f.write_str(" (returned after the power cut)")?;
        }
        Ok(())
    }
}

/// A recorded concurrent history: the contents before it and every call of every thread.
#[derive(Debug, Clone, Default)]
pub struct Recorded {
    /// The key layout (which keys are private to whom).
    pub keys: Option<Keys>,
    /// The contents before the first call (tick 0).
    pub initial: BTreeMap<u64, u64>,
    /// Every call, in no particular order.
    pub events: Vec<Event>,
}

impl Recorded {
    /// The owner of private key `k`, if any.
    pub fn owner(&self, k: u64) -> Option<usize> {
        self.keys.and_then(|l| l.owner(k))
    }
}

/// What the worker threads of one round do.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The key layout (its `threads` workers run).
    pub keys: Keys,
    /// Calls per thread.
    pub ops: usize,
    /// The seed of the round's calls (each thread draws from its own stream).
    pub seed: u64,
    /// The round (part of every value written).
    pub round: u64,
    /// Calls a thread still makes after its first failure (they must be refused).
    pub after_failure: usize,
    /// How long the round may take before it is declared hung.
    pub deadline: Duration,
    /// The fault injector under the `Db`, if any (to tell the calls that returned after
    /// it cut power, [`Event::after_cut`]).
    pub faults: Option<Faults>,
}

/// Run `plan.keys.threads` workers on `db`, started together, and return their calls.
/// Waits at most `plan.deadline`: a worker that has not finished by then (a deadlock or a
/// livelock in the library) makes it return an error, leaving the worker running.
pub fn run_threads(db: &Arc<Db>, plan: &Plan) -> Result<Vec<Event>, String> {
    let threads = plan.keys.threads;
    let clock = Arc::new(AtomicU64::new(1));
    let barrier = Arc::new(Barrier::new(threads));
    let (tx, rx) = mpsc::channel();
    let mut handles = Vec::with_capacity(threads);
    for t in 0..threads {
        let (db, clock, barrier, tx, plan) = (
            db.clone(),
            clock.clone(),
            barrier.clone(),
            tx.clone(),
            plan.clone(),
        );
        let h = std::thread::Builder::new()
            .name(format!("flashix-concurrent-{t}"))
            .spawn(move || {
                barrier.wait();
                let events = Worker::new(&db, &plan, t, &clock).run();
                let _ = tx.send(events);
            })
            .map_err(|e| format!("spawning worker {t}: {e}"))?;
        handles.push(h);
    }
    drop(tx);
    let until = Instant::now() + plan.deadline;
    let mut events = Vec::new();
    for _ in 0..threads {
        let left = until.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(e) => events.extend(e),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let stuck: Vec<String> = handles
                    .iter()
                    .filter(|h| !h.is_finished())
                    .filter_map(|h| h.thread().name().map(str::to_string))
                    .collect();
                return Err(format!(
                    "workers {stuck:?} did not finish within {:?}: a deadlock or livelock",
                    plan.deadline
                ));
            }
            // Every sender is gone: a worker panicked (its join below says why).
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    for (t, h) in handles.into_iter().enumerate() {
        if let Err(p) = h.join() {
            let why = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            return Err(format!("worker {t} panicked: {why}"));
        }
    }
    Ok(events)
}

/// One worker: its random stream, its next value, and the calls it made.
struct Worker<'a> {
    db: &'a Db,
    plan: &'a Plan,
    t: usize,
    clock: &'a AtomicU64,
    rng: Rng,
    seq: u64,
    events: Vec<Event>,
}

impl<'a> Worker<'a> {
    fn new(db: &'a Db, plan: &'a Plan, t: usize, clock: &'a AtomicU64) -> Self {
        let stream = plan.seed ^ (t as u64 + 1).wrapping_mul(0xA24B_AED4_963E_E407);
        Worker {
            db,
            plan,
            t,
            clock,
            rng: Rng::new(stream ^ plan.round.rotate_left(40)),
            seq: 0,
            events: Vec::with_capacity(plan.ops),
        }
    }

    fn value(&mut self) -> u64 {
        self.seq += 1;
        value_of(self.plan.round, self.t, self.seq)
    }

    /// Make the worker's calls; after the first failure, `after_failure` more.
    fn run(mut self) -> Vec<Event> {
        let mut left_after_failure = None;
        for index in 0..self.plan.ops {
            if left_after_failure == Some(0) {
                break;
            }
            let call = self.draw();
            let ev = self.exec(index, call);
            match (&ev.outcome, left_after_failure.as_mut()) {
                (_, Some(n)) => *n -= 1,
                (Outcome::Ok, None) => {}
                (_, None) => left_after_failure = Some(self.plan.after_failure),
            }
            self.events.push(ev);
        }
        self.events
    }

    /// A random inclusive sub-range of `lo..=hi` of at most `len` keys.
    fn sub_range(&mut self, (lo, hi): (u64, u64), len: u64) -> (u64, u64) {
        let a = lo + self.rng.below(hi - lo + 1);
        (a, (a + self.rng.below(len)).min(hi))
    }

    /// A key a write of a batch or bulk may touch: shared or the worker's own.
    fn write_key(&mut self) -> u64 {
        if self.rng.coin() {
            self.plan.keys.dense_shared_key(&mut self.rng)
        } else {
            self.plan.keys.private_key(self.t, &mut self.rng)
        }
    }

    /// A range a range delete may cover: in the shared keys or in the worker's own.
    fn write_range(&mut self, len: u64) -> (u64, u64) {
        let region = if self.rng.coin() {
            self.plan.keys.shared_range()
        } else {
            self.plan.keys.private_range(self.t)
        };
        self.sub_range(region, len)
    }

    /// Scan bounds: in the shared keys, in a private block, across block boundaries, or
    /// everything; of every bound kind, now and then inverted (empty).
    fn scan_bounds(&mut self) -> (Bound<u64>, Bound<u64>) {
        let k = self.plan.keys;
        let (lo, hi) = match self.rng.below(20) {
            0 => return (Bound::Unbounded, Bound::Unbounded),
            1..=9 => self.sub_range(k.shared_range(), 64),
            10..=14 => self.sub_range(k.private_range(self.t), 64),
            15..=17 => {
                let t = self.rng.below(k.threads as u64) as usize;
                self.sub_range(k.private_range(t), 64)
            }
            _ => self.sub_range((k.shared_range().0, k.end() - 1), 4 * k.private),
        };
        let (lo, hi) = if self.rng.below(16) == 0 {
            (hi, lo)
        } else {
            (lo, hi)
        };
        let lo = match self.rng.below(6) {
            0 => Bound::Unbounded,
            1 => Bound::Excluded(lo),
            _ => Bound::Included(lo),
        };
        let hi = match self.rng.below(6) {
            0 => Bound::Unbounded,
            1 => Bound::Excluded(hi),
            _ => Bound::Included(hi),
        };
        (lo, hi)
    }

    /// The next call, drawn.
    fn draw(&mut self) -> Call {
        let k = self.plan.keys;
        let t = self.t;
        match self.rng.below(100) {
            0..=13 => {
                let key = k.shared_key(&mut self.rng);
                Call::Insert(key, self.value())
            }
            14..=29 => {
                let key = k.private_key(t, &mut self.rng);
                Call::Insert(key, self.value())
            }
            30..=34 => Call::Delete(k.shared_key(&mut self.rng)),
            35..=39 => Call::Delete(k.private_key(t, &mut self.rng)),
            40..=45 => {
                // Keys often repeated within the batch (order matters), now and then a
                // range delete, shared and private keys mixed.
                let n = 1 + self.rng.below(8);
                let mut ops: Vec<BatchOp> = Vec::new();
                for _ in 0..n {
                    let key = match ops.last() {
                        Some(BatchOp::Insert(key, _)) | Some(BatchOp::Delete(key))
                            if self.rng.below(3) == 0 =>
                        {
                            *key
                        }
                        _ => self.write_key(),
                    };
                    ops.push(match self.rng.below(10) {
                        0..=5 => BatchOp::Insert(key, self.value()),
                        6..=8 => BatchOp::Delete(key),
                        _ => {
                            let (lo, hi) = self.write_range(12);
                            BatchOp::DeleteRange(lo, hi)
                        }
                    });
                }
                Call::Batch(ops)
            }
            46..=48 => {
                let n = 1 + self.rng.below(40);
                let pairs = (0..n)
                    .map(|_| {
                        let key = self.write_key();
                        (key, self.value())
                    })
                    .collect();
                Call::Bulk(pairs)
            }
            49..=51 => {
                let (lo, hi) = self.write_range(24);
                Call::DeleteRange(lo, hi)
            }
            52..=68 => Call::Get(k.read_key(t, &mut self.rng), None),
            69..=74 => {
                let n = 1 + self.rng.below(16);
                let keys = (0..n).map(|_| k.read_key(t, &mut self.rng)).collect();
                Call::GetMany(keys, Vec::new())
            }
            75..=86 => {
                let (lo, hi) = self.scan_bounds();
                Call::Range(lo, hi, Vec::new())
            }
            87..=89 => {
                let n = 1 + self.rng.below(4);
                let ranges = (0..n)
                    .map(|_| {
                        let a = k.read_key(t, &mut self.rng);
                        (a, a.saturating_add(self.rng.below(24)))
                    })
                    .collect();
                Call::RangeMany(ranges, Vec::new())
            }
            _ => Call::Flush,
        }
    }

    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::SeqCst)
    }

    /// Make the call, timed, and record its answer.
    fn exec(&mut self, index: usize, mut call: Call) -> Event {
        let db = self.db;
        let start = self.tick();
        let r: Result<(), Error> = match &mut call {
            Call::Insert(k, v) => db.insert(*k, *v),
            Call::Delete(k) => db.delete(*k),
            Call::DeleteRange(lo, hi) => db.delete_range(*lo..=*hi),
            Call::Bulk(pairs) => db.bulk_insert(pairs),
            Call::Batch(ops) => {
                let mut b = Batch::new();
                for op in ops.iter() {
                    match op {
                        BatchOp::Insert(k, v) => b.insert(*k, *v),
                        BatchOp::Delete(k) => b.delete(*k),
                        BatchOp::DeleteRange(lo, hi) => b.delete_range(*lo..=*hi),
                    };
                }
                db.apply(&b)
            }
            Call::Get(k, got) => db.get(*k).map(|v| *got = v),
            Call::GetMany(keys, got) => db.get_many(keys).map(|v| *got = v),
            Call::Range(lo, hi, got) => scan_lazily(db, *lo, *hi, got),
            Call::RangeMany(ranges, got) => db.range_many(ranges).map(|v| *got = v),
            Call::Flush => db.flush(),
        };
        let end = self.tick();
        let outcome = match r {
            Ok(()) => Outcome::Ok,
            Err(Error::Poisoned(why)) => Outcome::Refused(why),
            Err(e) => Outcome::Failed(e.to_string()),
        };
        Event {
            thread: self.t,
            index,
            start,
            end,
            call,
            outcome,
            after_cut: self.plan.faults.as_ref().is_some_and(|f| f.crashed()),
        }
    }
}

/// Iterate a range to its end, one entry at a time, yielding the processor every few
/// entries so that other threads' writes land while the iterator is alive.
fn scan_lazily(
    db: &Db,
    lo: Bound<u64>,
    hi: Bound<u64>,
    got: &mut Vec<(u64, u64)>,
) -> Result<(), Error> {
    for (i, kv) in db.range((lo, hi))?.enumerate() {
        got.push(kv?);
        if i % 8 == 7 {
            std::thread::yield_now();
        }
    }
    Ok(())
}
