//! The threads of a measured phase (`--threads`, [`THREADS_RULE`]): the thread counts of
//! the command line, one operation stream per thread, the phase run by all of them at
//! once on the one shared index, and what they measured merged into the figures of one
//! cell.

use super::measure::{interval_series, SERIES_POINTS};
use crate::output::report::{Interval, Latency};
use crate::subjects::{Session, Target};
use crate::workload::{KeyGen, Op, OpStream, Part, Workload};
use anyhow::{anyhow, bail, Context, Result};
use indicatif::ProgressBar;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, OnceLock};
use std::time::Instant;

/// Most threads a phase may run: far beyond the queue depths a device profile measures,
/// and within the reader slots the LMDB peer opens.
pub const MAX_THREADS: u32 = 1024;

/// How a phase with several threads runs, as printed and saved.
pub const THREADS_RULE: &str = "with --threads N, the measured phase of a cell runs N \
threads on the one index (the engine's Db, or the peer's store, shared by all of them); \
preparation, the copy of the aged image, the cache warm-up and the write warm-up stay on one \
thread. Each thread runs a stream of the workload of its own: its share of the phase's \
operations (split evenly), drawn with a seed derived from --seed and its thread index (the \
same streams in every run), among entries no other thread touches (point workloads: the \
entries whose number is the thread's index modulo N, and its new entries likewise; tpcc: \
every N-th district; range deletes: one contiguous N-th of the keys in key order), so that a \
key one thread deleted is never another's live key; with zipf keys each thread's draws are \
skewed over its own entries. The threads start together; the phase ends when the last one \
is done, with the sync after it, both timed. ops/s is every thread's operations over that \
time, latency percentiles are over every operation of every thread, and the device's mean \
queue depth is the time its requests spent in flight over the phase's wall time. Peers run \
with the same threads: RocksDB and fjall take concurrent writers; redb and LMDB have a \
single writer, so their write transactions wait for each other at the store's writer lock \
(a batched thread holds its batch open until it commits), while reads go on beside them.";

/// The thread counts of `--threads`: comma-separated whole numbers from 1 to
/// [`MAX_THREADS`], each run in turn (repeats dropped, order kept).
pub fn parse_threads(s: &str) -> Result<Vec<u32>> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim) {
        if part.is_empty() {
            bail!("{s:?}: expected thread counts separated by commas, e.g. 1,4");
        }
        let n: u32 = part
            .parse()
            .map_err(|_| anyhow!("{part:?} is not a whole number of threads"))?;
        if n == 0 {
            bail!("0 threads cannot run a phase: give 1 or more");
        }
        if n > MAX_THREADS {
            bail!("{n} threads: at most {MAX_THREADS}");
        }
        if !out.contains(&n) {
            out.push(n);
        }
    }
    Ok(out)
}

/// The streams of a phase's threads, the first for the calling thread.
pub(super) struct Streams {
    pub streams: Vec<OpStream>,
    /// Operations of each stream run before the phase, unmeasured (BUFFER_RULE's write
    /// warm-up): the thread's share of it.
    pub warm: Vec<u64>,
    /// Measured operations of all threads.
    pub ops: u64,
}

impl Streams {
    /// One stream per thread of `threads` for workload `w` on the entries `0..live` of
    /// `gen`: a share of `warm_writes + phase` operations each ([`OpStream::for_part`]),
    /// the first of which (its share of `warm_writes`) are the write warm-up.
    pub fn new(
        w: Workload,
        gen: KeyGen,
        live: u64,
        seed: u64,
        (warm_writes, phase): (u64, u64),
        threads: u32,
    ) -> Result<Streams> {
        let mut out = Streams {
            streams: Vec::new(),
            warm: Vec::new(),
            ops: 0,
        };
        for part in Part::all(threads) {
            let s = OpStream::for_part(w, gen, live, seed, warm_writes + phase, part)?;
            let warm = part.share(warm_writes).min(s.operations());
            out.ops += s.operations() - warm;
            out.warm.push(warm);
            out.streams.push(s);
        }
        Ok(out)
    }
}

/// What one thread measured in the phase.
pub(super) struct ThreadRun {
    /// Latency of each operation, in nanoseconds, in the thread's order.
    pub lat: Vec<u64>,
    /// When each operation completed, nanoseconds since the phase started.
    pub done: Vec<u64>,
    /// Keys the thread's operations wrote (inserted, updated, deleted).
    pub write_keys: u64,
    /// Live entries of the thread's stream after the phase.
    pub live: u64,
}

impl ThreadRun {
    /// Buffers for `ops` operations, touched now, so that a memory cgroup entered later
    /// is not charged for them and the phase does not pay for growing them.
    pub fn with_room(ops: u64) -> ThreadRun {
        let touched = |n: u64| {
            let mut v: Vec<u64> = Vec::with_capacity(n as usize);
            v.resize(n as usize, 1);
            v.clear();
            v
        };
        ThreadRun {
            lat: touched(ops),
            done: touched(ops),
            write_keys: 0,
            live: 0,
        }
    }
}

/// Execute one operation; an error also when a result contradicts the stream (a live key
/// not found while the index holds entries).
pub(super) fn execute(db: &mut dyn Session, op: &Op, live: bool) -> Result<()> {
    match op {
        Op::Get(k) => {
            let v = db.get(*k).context("search")?;
            if v.is_none() && live {
                bail!("the engine lost key {k:#x}: get returned nothing for a live key");
            }
        }
        Op::Insert(k, v) | Op::Update(k, v) => db.insert(*k, *v).context("insert")?,
        Op::Delete(k) => db.delete(*k).context("delete")?,
        Op::Range { start, len } => {
            let (first, _) = db.scan(*start, *len).context("range")?;
            if live && first != Some(*start) {
                bail!("the engine lost key {start:#x}: a range from it began at {first:?}");
            }
        }
        Op::GetMany(keys) => {
            let vs = db.get_many(keys).context("get_many")?;
            if live {
                if let Some(i) = vs.iter().position(Option::is_none) {
                    bail!(
                        "the engine lost key {:#x}: get_many returned nothing for a live key",
                        keys[i]
                    );
                }
            }
        }
        Op::BulkInsert(pairs) => db.bulk_insert(pairs).context("bulk_insert")?,
        Op::DeleteRange { lo, hi, keys } => {
            if *keys > 0 {
                db.delete_range(*lo, *hi).context("delete_range")?;
            }
        }
    }
    Ok(())
}

/// Keys an operation writes (inserts, updates, deletes).
fn written_keys(op: &Op) -> u64 {
    match op {
        Op::Insert(..) | Op::Update(..) | Op::Delete(_) => 1,
        Op::BulkInsert(p) => p.len() as u64,
        Op::DeleteRange { keys, .. } => *keys,
        Op::Get(_) | Op::Range { .. } | Op::GetMany(_) => 0,
    }
}

/// The error of a thread that stopped because another one failed: not the phase's error,
/// which is the other thread's.
#[derive(Debug)]
struct Stopped;

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("stopped: another thread of the phase failed")
    }
}

impl std::error::Error for Stopped {}

/// What every thread of a phase shares while it runs.
struct Shared<'a> {
    pb: &'a ProgressBar,
    /// Set by a thread that failed, so that the others stop at their next operation.
    stop: AtomicBool,
}

/// Run the rest of `stream` through `session` from `t0`, then finish the session (its
/// commit is part of the phase). On an error the other threads are told to stop.
fn run_thread(
    mut session: Box<dyn Session + '_>,
    mut stream: OpStream,
    mut run: ThreadRun,
    t0: Instant,
    shared: &Shared<'_>,
) -> Result<ThreadRun> {
    let result = (|| {
        let mut n = 0u64;
        while let Some(op) = stream.next_op() {
            if shared.stop.load(Ordering::Relaxed) {
                return Err(Stopped.into());
            }
            let live = stream.live() > 0;
            run.write_keys += written_keys(&op);
            let start = Instant::now();
            execute(session.as_mut(), &op, live)?;
            let end = Instant::now();
            run.lat.push(end.duration_since(start).as_nanos() as u64);
            run.done.push(end.duration_since(t0).as_nanos() as u64);
            n += 1;
            if n % 64 == 0 {
                shared.pb.inc(64);
            }
        }
        run.live = stream.live();
        session.finish()
    })();
    if result.is_err() {
        shared.stop.store(true, Ordering::Relaxed);
    }
    result.map(|()| run)
}

/// Run the measured phase: stream `i` of `streams` with buffers `runs[i]` on a thread of
/// its own, all on `target`, the first on the calling thread through `first` (the
/// session the warm-ups ran in; a phase of one thread spawns none). The threads make
/// their sessions, then start together. Returns what each thread measured, in order, and
/// the instant the phase started; the first error of any thread fails the phase.
pub(super) fn run_phase<'t>(
    target: &'t dyn Target,
    first: Box<dyn Session + 't>,
    streams: Vec<OpStream>,
    runs: Vec<ThreadRun>,
    pb: &ProgressBar,
) -> Result<(Vec<ThreadRun>, Instant)> {
    let barrier = Barrier::new(streams.len().max(1));
    let start: OnceLock<Instant> = OnceLock::new();
    let shared = Shared {
        pb,
        stop: AtomicBool::new(false),
    };
    let mut work = streams.into_iter().zip(runs);
    let (stream0, run0) = work.next().context("a phase without a thread")?;
    std::thread::scope(|s| {
        let handles: Vec<_> = work
            .map(|(stream, run)| {
                let (barrier, start, shared) = (&barrier, &start, &shared);
                s.spawn(move || {
                    let session = target.session();
                    // Every thread reaches the barrier, also one whose session failed.
                    barrier.wait();
                    let t0 = start.get().copied().unwrap_or_else(Instant::now);
                    match session {
                        Ok(session) => run_thread(session, stream, run, t0, shared),
                        Err(e) => {
                            shared.stop.store(true, Ordering::Relaxed);
                            Err(e.context("opening a session of the store"))
                        }
                    }
                })
            })
            .collect();
        let t0 = *start.get_or_init(Instant::now);
        barrier.wait();
        let mut results = vec![run_thread(first, stream0, run0, t0, &shared)];
        for h in handles {
            let joined = h
                .join()
                .map_err(|_| anyhow!("a thread of the phase panicked"));
            results.push(joined.and_then(|r| r));
        }
        let several = results.len() > 1;
        let mut out = Vec::with_capacity(results.len());
        let mut stopped = None;
        for (i, r) in results.into_iter().enumerate() {
            match r {
                Ok(run) => out.push(run),
                Err(e) if e.is::<Stopped>() => stopped = stopped.or(Some(e)),
                Err(e) if several => return Err(e.context(format!("thread {i} of the phase"))),
                Err(e) => return Err(e),
            }
        }
        if let Some(e) = stopped {
            return Err(e);
        }
        Ok((out, t0))
    })
}

/// The figures of a phase over all its threads.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Merged {
    pub ops: u64,
    pub write_keys: u64,
    /// Percentiles over every operation of every thread.
    pub latency: Latency,
    /// About [`SERIES_POINTS`] intervals of operations in the order they completed, the
    /// last one ending at `elapsed_s` (it includes the final sync).
    pub series: Vec<Interval>,
}

/// Merge what the threads of a phase of `elapsed_s` seconds measured: latencies of every
/// operation, and the intervals of the operations in completion order over all threads
/// (for one thread, its own order).
pub(super) fn merge(mut runs: Vec<ThreadRun>, elapsed_s: f64) -> Merged {
    let write_keys = runs.iter().map(|r| r.write_keys).sum();
    let (done, mut lat): (Vec<u64>, Vec<u64>) = if runs.len() == 1 {
        let r = runs.remove(0);
        (r.done, r.lat)
    } else {
        let mut pairs: Vec<(u64, u64)> = runs
            .iter()
            .flat_map(|r| r.done.iter().copied().zip(r.lat.iter().copied()))
            .collect();
        drop(runs);
        pairs.sort_unstable();
        pairs.into_iter().unzip()
    };
    let ops = lat.len() as u64;
    let interval = ops.div_ceil(SERIES_POINTS).max(1);
    let mut ends: Vec<f64> = done
        .chunks(interval as usize)
        .map(|c| c.last().map_or(0.0, |&ns| ns as f64 / 1e9))
        .collect();
    if let Some(last) = ends.last_mut() {
        *last = elapsed_s;
    }
    let series = interval_series(&lat, interval, &ends);
    Merged {
        ops,
        write_keys,
        latency: Latency::from_nanos(&mut lat),
        series,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_counts_parse_with_clear_errors() {
        assert_eq!(parse_threads("1").unwrap(), vec![1]);
        assert_eq!(parse_threads("1,4, 16").unwrap(), vec![1, 4, 16]);
        assert_eq!(parse_threads("4,1,4").unwrap(), vec![4, 1]);
        assert_eq!(parse_threads("1024").unwrap(), vec![1024]);
        let err = |s: &str| parse_threads(s).unwrap_err().to_string();
        assert!(err("0").contains("0 threads"), "{}", err("0"));
        assert!(err("1,0").contains("0 threads"));
        assert!(
            err("two").contains("\"two\" is not a whole number"),
            "{}",
            err("two")
        );
        assert!(err("-1").contains("not a whole number"));
        assert!(err("1.5").contains("not a whole number"));
        assert!(err("").contains("separated by commas"), "{}", err(""));
        assert!(err("1,,2").contains("separated by commas"));
        assert!(err("1025").contains("at most 1024"), "{}", err("1025"));
    }

    fn run(lat: &[u64], done: &[u64]) -> ThreadRun {
        ThreadRun {
            lat: lat.to_vec(),
            done: done.to_vec(),
            write_keys: 1,
            live: 0,
        }
    }

    /// Two threads' operations merge into percentiles over all of them and intervals in
    /// completion order; one thread keeps its own order.
    #[test]
    fn latencies_merge_over_every_threads_operations() {
        // Thread a: 1..=100 us, done at 2, 4, ... ms; thread b: 1000..=1099 us, done at
        // 1, 3, ... ms.
        let a_lat: Vec<u64> = (1..=100).map(|x| x * 1000).collect();
        let a_done: Vec<u64> = (1..=100).map(|i| i * 2_000_000).collect();
        let b_lat: Vec<u64> = (1000..1100).map(|x| x * 1000).collect();
        let b_done: Vec<u64> = (0..100).map(|i| i * 2_000_000 + 1_000_000).collect();
        let m = merge(vec![run(&a_lat, &a_done), run(&b_lat, &b_done)], 0.25);
        assert_eq!((m.ops, m.write_keys), (200, 2));
        let mut all: Vec<u64> = a_lat.iter().chain(&b_lat).copied().collect();
        assert_eq!(m.latency, Latency::from_nanos(&mut all));
        assert_eq!(m.latency.p50, 100.0);
        assert_eq!(m.latency.max, 1099.0);
        assert_eq!(m.latency.p99, 1097.0);
        // 200 ops in intervals of 2: each interval one op of b, then one of a.
        assert_eq!(m.series.len(), 100);
        assert!(m.series.iter().all(|p| p.ops == 2));
        assert_eq!((m.series[0].p50_us, m.series[0].max_us), (1.0, 1000.0));
        assert_eq!(m.series[0].end_s, 0.002);
        assert_eq!(m.series[99].end_s, 0.25);
        assert_eq!(m.series.iter().map(|p| p.ops).sum::<u64>(), 200);

        let one = merge(vec![run(&[5000, 1000, 3000], &[5, 6, 9])], 1.0);
        assert_eq!(one.ops, 3);
        assert_eq!(one.series.iter().map(|p| p.mean_us).sum::<f64>(), 9.0);
        assert_eq!(one.latency.p50, 3.0);
    }

    /// A store whose sessions find no key (`found`: the first session, made by the test,
    /// finds every key).
    struct Forgetful;

    struct Lookup {
        found: bool,
    }

    impl Target for Forgetful {
        fn session(&self) -> Result<Box<dyn Session + '_>> {
            Ok(Box::new(Lookup { found: false }))
        }
        fn flush(&self) -> Result<()> {
            Ok(())
        }
        fn close(self: Box<Self>) -> Result<()> {
            Ok(())
        }
    }

    impl Session for Lookup {
        fn get(&mut self, _: u64) -> Result<Option<u64>> {
            Ok(self.found.then_some(1))
        }
        fn insert(&mut self, _: u64, _: u64) -> Result<()> {
            Ok(())
        }
        fn delete(&mut self, _: u64) -> Result<()> {
            Ok(())
        }
        fn scan(&mut self, _: u64, _: u64) -> Result<(Option<u64>, u64)> {
            Ok((None, 0))
        }
        fn bulk_insert(&mut self, _: &[(u64, u64)]) -> Result<()> {
            Ok(())
        }
        fn delete_range(&mut self, _: u64, _: u64) -> Result<()> {
            Ok(())
        }
    }

    /// The thread that fails fails the phase with its own error, not the one of a thread
    /// it stopped.
    #[test]
    fn a_failing_thread_fails_the_phase_with_its_error() {
        let gen = KeyGen::new(crate::workload::KeyDist::Uniform, 3);
        let s = Streams::new(Workload::OSearch, gen, 1_000, 3, (0, 200_000), 2).unwrap();
        let runs = s
            .streams
            .iter()
            .map(|x| ThreadRun::with_room(x.operations()))
            .collect();
        let first = Box::new(Lookup { found: true });
        let phase = run_phase(&Forgetful, first, s.streams, runs, &ProgressBar::hidden());
        let Err(err) = phase else {
            panic!("the phase succeeded")
        };
        let msg = format!("{err:#}");
        assert!(msg.starts_with("thread 1 of the phase"), "{msg}");
        assert!(msg.contains("lost key"), "{msg}");
    }

    /// The phase runs every thread's stream to its end on the shared index, and reports
    /// each thread's operations.
    #[test]
    fn a_phase_runs_every_thread_on_one_index() {
        use flashix::io::{MemDevice, MemVfs};
        use flashix::{Db, EngineKind, Options, Storage};
        let storage = Storage {
            device: Box::new(MemDevice::new(4096)),
            vfs: std::sync::Arc::new(MemVfs::new()),
        };
        let db = Db::create_on(storage, Options::new(EngineKind::BTree)).unwrap();
        let gen = KeyGen::new(crate::workload::KeyDist::Uniform, 3);
        let pairs: Vec<(u64, u64)> = {
            let mut p: Vec<_> = (0..2_000).map(|i| (gen.key_of(i), i)).collect();
            p.sort_unstable();
            p
        };
        db.bulk_insert(&pairs).unwrap();
        let s = Streams::new(Workload::WDelete, gen, 2_000, 3, (0, 1_000), 3).unwrap();
        assert_eq!(s.ops, 1_000);
        let runs = s
            .streams
            .iter()
            .map(|x| ThreadRun::with_room(x.operations()))
            .collect();
        let first = Target::session(&db).unwrap();
        let (runs, _) = run_phase(&db, first, s.streams, runs, &ProgressBar::hidden()).unwrap();
        let lens: Vec<usize> = runs.iter().map(|r| r.lat.len()).collect();
        assert_eq!(lens, vec![334, 333, 333]);
        assert!(runs.iter().all(|r| r.done.windows(2).all(|w| w[0] <= w[1])));
    }
}
