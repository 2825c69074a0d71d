//! [`Parallel`]: a [`SerialEngine`] served to many threads, its reads beside each other
//! where the engine shares them ([`Shareable`]), one writer at a time.
//!
//! # Thread safety
//!
//! A readers-writer lock over the engine. The reads the engine shares
//! ([`Shareable::PARALLEL_GETS`]: `get`, `get_many`; [`Shareable::PARALLEL_SCANS`]: a scan
//! batch, `range_many`) and `stats` hold it shared: any number run at once, each with its
//! own page reads in flight (the Pager's shared path: the buffer pool's latch protocol and
//! the device's reader handles). Everything else holds it exclusive: writes, checks, and
//! the reads an engine does not share, which then run one at a time as its writes do. So a
//! read sees the structure between two writes, never inside one: every single-key
//! operation is linearizable at the instant its lock is held, and a batch is applied whole
//! before any read sees it.
//!
//! Reads whose engine allows it ([`Shareable::RESTARTS`]) do not hold the lock across
//! their device reads when other operations are in progress: a run of the read that
//! misses a page stops, the page is read with the lock released, and the read runs again
//! under the lock with those bytes at hand (`crate::durable::outside`, which says why the
//! bytes are then current). A reader that held the lock for its read would keep writers
//! out for that long, and a writer waiting for the lock keeps out every reader that comes
//! after it, so each write would drain the device's queue. For the same reason a writer
//! that finds readers first looks for a moment with none, for a little while
//! ([`POLITE`]), before it waits in line. At one thread nothing of this happens: a read
//! loads its misses under the lock and runs once.
//!
//! An engine whose point writes can run beside other operations
//! ([`Shareable::PARALLEL_POINT_WRITES`]) makes an insert or delete that arrives while
//! others are in progress under the shared lock ([`Shareable::insert_shared`],
//! [`Shareable::delete_shared`]: the engine latches what it changes), with the restarts
//! of a read; when the engine says the write needs the exclusive lock (it would
//! restructure), it is made as below, and when it says a checkpoint came due, that runs
//! under the exclusive lock right after. Such writes do not count as writes for a scan's
//! position: the engine keeps what the position names.
//!
//! A point write (`insert`, `delete`) made while other operations are in progress first
//! brings the pages it will change into the buffer pool beside the readers (its search's
//! misses read outside the lock as a reader's, then [`Shareable::prepare_write`] under the
//! shared lock), so that it finds them there under the exclusive lock: readers then wait
//! for its in-memory step, not its page reads. What still runs under the exclusive lock,
//! and so makes readers wait: a write-back of a dirty page its split or eviction needs
//! when cleaning ahead did not reach it, the WAL's hand-off of a full buffer to the file,
//! and a checkpoint (write-back of the dirty pages, a device sync, the manifest switch).
//! The time the lock is held by writes that began beside other operations is counted
//! (`writer_lock_held_ns`, `_max_ns` in the engine counters), and so are the reads made
//! outside it (`reads_outside_the_lock`).
//!
//! Where the engine's serial reads change nothing a scan's position names
//! ([`Shareable::SERIAL_READS_ALONE`]), a read made while no other operation is in
//! progress takes the serial path under the exclusive lock instead (`SerialEngine::get`,
//! `scan`, ...): one thread alone runs the engine's own algorithm, exactly as before it
//! was shared (the PIO B-tree's MPSearch and range search, which move the leaves they read
//! to the LRU end), through the pool's exclusive mode, and takes no lock but an
//! uncontended one.
//!
//! A read that decides on work it cannot do on `&self` (an engine whose paper writes on a
//! read: the LA-tree's buffer emptyings, the FBX-tree's cleans) notes it
//! ([`Shareable::has_deferred`]); the read then runs it as a write right after, if the lock
//! is free, else the engine's next write does.
//!
//! Two things run outside the lock:
//! - the WAL sync of a flush: a flush takes its ticket under the exclusive lock and waits
//!   on it after releasing it, so writers go on while it syncs and concurrent flushes share
//!   one sync (group commit, `crate::durable::commit`);
//! - the gap between two batches of a range scan, where other threads' operations run. A
//!   scan resumes from the smallest key it has not returned (`RangeCursor::next`), so it
//!   returns keys in ascending order, every key present and unchanged for the whole scan
//!   and none absent for the whole scan; an engine's position in its structure
//!   (`RangeCursor::resume`) is dropped when a write came in between, since that write may
//!   have split, merged or freed the page it names.
//!
//! The first operation that fails with the engine's state unknown (a write's error, a
//! read's I/O error) records it before it releases the lock, and every operation after it,
//! in any thread, is refused with that error (`Error::Poisoned`): a read that was waiting
//! for the lock never runs on the state a failed write left.
//!
//! An engine's background merge thread (FD-tree, LSM-tree) runs beside all of this, as it
//! did beside one thread.

use super::api::{Engine, RangeCursor, Shareable, SharedWrite};
use crate::durable::{outside, LogicalOp};
use crate::error::{Error, Result};
use crate::stats::Stats;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard, TryLockError};
use std::time::Instant;

/// An engine behind a readers-writer lock, with a count of the writes made through it.
pub struct Parallel<E> {
    inner: RwLock<E>,
    /// Writes so far: a scan's `resume` taken at another count is stale.
    writes: AtomicU64,
    /// Why the engine's state is unknown, set under the exclusive lock by the first write
    /// that failed (or read that met an I/O error) before the lock is released: no thread
    /// then reads the state it left, even one that passed the `Db`'s poison check before
    /// the failure.
    failed: OnceLock<String>,
    /// Operations in progress, in every thread: a read reads its missed pages outside the
    /// lock only when another operation could wait for it (at one thread it loads them
    /// under the lock, as a serial engine does, and runs once).
    active: AtomicUsize,
    /// Where the lock serializes: time the exclusive lock was held, in all and at most
    /// once, and reads stopped at a miss to read it outside the lock.
    held_ns: AtomicU64,
    held_max_ns: AtomicU64,
    outside_reads: AtomicU64,
}

/// Runs of a read that stops at its misses ([`Shareable::RESTARTS`]), at most: each run
/// but the last may stop at one page and read it outside the lock; the last loads what it
/// misses under the lock.
const RUNS: usize = 4;

/// How long a writer looks for a moment with no reader before it waits in line
/// ([`Parallel`]'s `exclusive`): about a reader's in-memory step, a few times over, and
/// far below a device read.
const POLITE: std::time::Duration = std::time::Duration::from_micros(100);

/// One operation in progress ([`Parallel`]'s `active`).
pub(crate) struct Busy<'a>(&'a AtomicUsize);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl<E: Shareable> Parallel<E> {
    /// Serve `engine` to many threads.
    pub fn new(engine: E) -> Parallel<E> {
        Parallel {
            inner: RwLock::new(engine),
            writes: AtomicU64::new(0),
            failed: OnceLock::new(),
            active: AtomicUsize::new(0),
            held_ns: AtomicU64::new(0),
            held_max_ns: AtomicU64::new(0),
            outside_reads: AtomicU64::new(0),
        }
    }

    /// Refuse to run on a state a failed operation left (checked under the lock).
    fn usable(&self) -> Result<()> {
        match self.failed.get() {
            Some(why) => Err(Error::Poisoned(why.clone())),
            None => Ok(()),
        }
    }

    /// Note `r`'s failure, if it leaves the state unknown: any error of a write but a bad
    /// argument, an I/O error of a read (which may have stopped half way through a
    /// write-back), as `Db` poisons. Called with the lock still held.
    fn note<T>(&self, r: Result<T>, write: bool) -> Result<T> {
        if let Err(e) = &r {
            let unknown = match e {
                Error::InvalidArgument(_) | Error::Poisoned(_) => false,
                Error::Io { .. } => true,
                _ => write,
            };
            if unknown {
                let _ = self.failed.set(e.to_string());
            }
        }
        r
    }

    /// Whether a read the engine shares takes its shared path now: always, unless its
    /// serial reads may run alone ([`Shareable::SERIAL_READS_ALONE`]) and no other
    /// operation is in progress (module doc): then nothing can wait for it but an
    /// operation that arrives meanwhile.
    fn shares_now(&self) -> bool {
        !E::SERIAL_READS_ALONE || self.active.load(Ordering::Relaxed) > 0
    }

    /// An operation counted in progress until the guard drops, for tests: every call meanwhile
    /// takes the path it takes beside other operations, however the threads that make the
    /// calls happen to be scheduled.
    #[cfg(test)]
    pub(crate) fn in_progress(&self) -> Busy<'_> {
        self.busy().0
    }

    /// Count an operation in progress until the guard drops; whether another one is.
    fn busy(&self) -> (Busy<'_>, bool) {
        let before = self.active.fetch_add(1, Ordering::Relaxed);
        (Busy(&self.active), before > 0)
    }

    /// Run a read under the shared lock, then the work it deferred, if any
    /// ([`Shareable::run_deferred`]). When the engine's reads restart
    /// ([`Shareable::RESTARTS`]) and other operations are in progress, a run that misses
    /// a page stops, the page is read with the lock released, and `f` runs again
    /// (`crate::durable::outside`); `undo` puts back what a stopped run of `f` changed
    /// outside the engine (a scan's cursor and output).
    fn shared<T>(&self, f: impl FnMut(&E) -> Result<T>, undo: impl FnMut()) -> Result<T> {
        self.shared_op(false, f, undo)
    }

    /// [`Parallel::shared`] for a read (`write` false) or a shared write, whose errors
    /// poison the engine as an exclusive write's do.
    fn shared_op<T>(
        &self,
        write: bool,
        mut f: impl FnMut(&E) -> Result<T>,
        mut undo: impl FnMut(),
    ) -> Result<T> {
        let (_busy, others) = self.busy();
        let restarts = E::RESTARTS && others;
        let mut stash = None;
        let mut run = 1;
        let (r, deferred) = loop {
            let e = self.read();
            self.usable()?;
            if !restarts {
                break (self.note(f(&e), write), e.has_deferred());
            }
            let armed = outside::arm(run < RUNS, stash.take());
            let r = f(&e);
            // A run that stopped at a miss runs again, whatever it returned (a warm-up that
            // leaves its errors to the write swallows the miss's).
            match (r, armed.disarm()) {
                (_, Some(miss)) => {
                    drop(e);
                    undo();
                    self.outside_reads.fetch_add(1, Ordering::Relaxed);
                    stash = Some(self.note(miss.read(), false)?);
                    run += 1;
                }
                (r, _) => break (self.note(r, write), e.has_deferred()),
            }
        };
        if deferred {
            self.settle_deferred()?;
        }
        r
    }

    /// Run the work shared reads deferred, as a write, if the lock is free now; otherwise
    /// the engine's next write does it (readers and writers never wait for it here). Its
    /// error poisons the engine and is the read's, as when the serial read wrote.
    fn settle_deferred(&self) -> Result<()> {
        let mut e = match self.inner.try_write() {
            Ok(e) => e,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) => return Ok(()),
        };
        if self.usable().is_ok() && e.has_deferred() {
            self.writes.fetch_add(1, Ordering::Relaxed);
            let start = Instant::now();
            let r = self.note(e.run_deferred(), true);
            self.held(start);
            r?;
        }
        Ok(())
    }

    /// Run a read that needs the engine to itself.
    fn alone<T>(&self, f: impl FnOnce(&mut E) -> Result<T>) -> Result<T> {
        let _busy = self.busy();
        let mut e = self.exclusive();
        self.usable()?;
        self.note(f(&mut e), false)
    }

    /// The engine, shared with other readers. A panic in another thread's operation (a
    /// bug, which the conformance checks are there to catch) poisons the lock; the engine
    /// is used anyway, as the `Db`'s poisoning does not see panics.
    fn read(&self) -> RwLockReadGuard<'_, E> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The engine, to this thread alone. A thread that waits for the lock keeps out every
    /// reader that comes after it (the lock's guard against writer starvation); where
    /// readers hold the lock only for in-memory steps (their device reads outside it,
    /// [`Shareable::RESTARTS`]), a writer that finds readers first looks, for at most
    /// [`POLITE`], for a moment with none, so that readers do not queue behind it.
    fn exclusive(&self) -> RwLockWriteGuard<'_, E> {
        if E::RESTARTS {
            let deadline = Instant::now() + POLITE;
            loop {
                match self.inner.try_write() {
                    Ok(e) => return e,
                    Err(TryLockError::Poisoned(e)) => return e.into_inner(),
                    Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                        std::hint::spin_loop();
                        std::thread::yield_now();
                    }
                    Err(TryLockError::WouldBlock) => break,
                }
            }
        }
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Run a write: the count moves first, under the exclusive lock.
    fn write<T>(&self, f: impl FnOnce(&mut E) -> Result<T>) -> Result<T> {
        let (_busy, others) = self.busy();
        self.write_counted(f, others)
    }

    /// [`Parallel::write`] of an operation already counted in progress; `others`: whether
    /// other operations were in progress when it began (then its hold of the lock is timed:
    /// at one thread nothing waits for it, and the clock's reads would cost a cheap write
    /// a few percent).
    fn write_counted<T>(&self, f: impl FnOnce(&mut E) -> Result<T>, others: bool) -> Result<T> {
        let mut e = self.exclusive();
        self.usable()?;
        self.writes.fetch_add(1, Ordering::Relaxed);
        let start = others.then(Instant::now);
        let r = self.note(f(&mut e), true);
        if let Some(start) = start {
            self.held(start);
        }
        r
    }

    /// Count the time since `start` that the exclusive lock was held.
    fn held(&self, start: Instant) {
        let ns = start.elapsed().as_nanos() as u64;
        self.held_ns.fetch_add(ns, Ordering::Relaxed);
        self.held_max_ns.fetch_max(ns, Ordering::Relaxed);
    }

    /// A point write of `key`. Alone, at once; beside other operations, its pages are
    /// brought into the pool beside them first (module doc), where the engine shares
    /// reads at all. (Warming up when nothing else runs would only walk the structure
    /// twice.)
    fn point_write(&self, key: u64, f: impl FnOnce(&mut E) -> Result<()>) -> Result<()> {
        let (_busy, others) = self.busy();
        if E::PARALLEL_GETS && others {
            // Its misses read outside the lock where the engine's reads restart; its
            // errors are the write's to meet.
            let prepare = |e: &E| {
                e.prepare_write(key);
                Ok(())
            };
            self.shared(prepare, || {})?;
        }
        self.write_counted(f, others)
    }
}

impl<E: Shareable> Parallel<E> {
    /// A point write under the shared lock, where the engine makes it so and other
    /// operations are in progress (module doc): true when it was made (and the maintenance
    /// it asked for, under the exclusive lock); false when it needs the exclusive lock.
    fn shared_write(&self, f: impl FnMut(&E) -> Result<SharedWrite>) -> Result<bool> {
        if !(E::PARALLEL_POINT_WRITES && self.shares_now()) {
            return Ok(false);
        }
        match self.shared_op(true, f, || {})? {
            SharedWrite::Done => Ok(true),
            SharedWrite::Maintain => self.write(|e| e.maintain()).map(|_| true),
            SharedWrite::Exclusive => Ok(false),
        }
    }
}

/// Drop the cursor's position in the structure if a write came since it was taken (`now`
/// is the write count, read under the engine's lock, where no write runs).
fn fresh(cur: &mut RangeCursor, now: u64) {
    if cur.epoch != now {
        cur.resume = None;
        cur.epoch = now;
    }
}

impl<E: Shareable> Engine for Parallel<E> {
    fn insert(&self, key: u64, value: u64) -> Result<()> {
        if self.shared_write(|e| e.insert_shared(key, value))? {
            return Ok(());
        }
        self.point_write(key, |e| e.insert(key, value))
    }

    fn delete(&self, key: u64) -> Result<()> {
        if self.shared_write(|e| e.delete_shared(key))? {
            return Ok(());
        }
        self.point_write(key, |e| e.delete(key))
    }

    fn get(&self, key: u64) -> Result<Option<u64>> {
        match E::PARALLEL_GETS && self.shares_now() {
            true => self.shared(|e| e.get_shared(key), || {}),
            false => self.alone(|e| e.get(key)),
        }
    }

    fn get_many(&self, keys: &[u64]) -> Result<Vec<Option<u64>>> {
        match E::PARALLEL_GETS && self.shares_now() {
            true => self.shared(|e| e.get_many_shared(keys), || {}),
            false => self.alone(|e| e.get_many(keys)),
        }
    }

    fn scan(&self, cur: &mut RangeCursor, out: &mut Vec<(u64, u64)>) -> Result<()> {
        // Under the engine's lock no write runs: the write count read there is its state.
        match E::PARALLEL_SCANS && self.shares_now() {
            true => {
                let (was, had) = (cur.clone(), out.len());
                let cur = std::cell::RefCell::new(cur);
                let out = std::cell::RefCell::new(out);
                self.shared(
                    |e| {
                        let (mut cur, mut out) = (cur.borrow_mut(), out.borrow_mut());
                        fresh(&mut cur, self.writes.load(Ordering::Relaxed));
                        e.scan_shared(&mut cur, &mut out)
                    },
                    || {
                        **cur.borrow_mut() = was.clone();
                        out.borrow_mut().truncate(had);
                    },
                )
            }
            false => self.alone(|e| {
                fresh(cur, self.writes.load(Ordering::Relaxed));
                e.scan(cur, out)
            }),
        }
    }

    fn scan_many(&self, ranges: &[(u64, u64)], out: &mut Vec<(u64, u64)>) -> Result<()> {
        match E::PARALLEL_SCANS && self.shares_now() {
            true => {
                let had = out.len();
                let out = std::cell::RefCell::new(out);
                self.shared(
                    |e| e.scan_many_shared(ranges, &mut out.borrow_mut()),
                    || out.borrow_mut().truncate(had),
                )
            }
            false => self.alone(|e| e.scan_many(ranges, out)),
        }
    }

    fn estimate_count(&self, ranges: &[(u64, u64)]) -> Result<Option<u64>> {
        self.alone(|e| e.estimate_count(ranges))
    }

    fn bulk_insert(&self, sorted: &[(u64, u64)]) -> Result<()> {
        self.write(|e| e.bulk_insert(sorted))
    }

    fn delete_range(&self, lo: u64, hi: u64) -> Result<()> {
        self.write(|e| e.delete_range(lo, hi))
    }

    fn apply_batch(&self, ops: &[LogicalOp]) -> Result<()> {
        self.write(|e| e.apply_batch(ops))
    }

    fn flush(&self) -> Result<()> {
        let ticket = self.write(|e| e.flush_ticket())?;
        match ticket {
            Some(t) => t.wait(),
            None => Ok(()),
        }
    }

    fn close(&self) -> Result<()> {
        self.write(|e| e.close())
    }

    fn stats(&self) -> Stats {
        let mut s = self.read().stats();
        for (name, n) in [
            ("writer_lock_held_ns", &self.held_ns),
            ("writer_lock_held_max_ns", &self.held_max_ns),
            ("reads_outside_the_lock", &self.outside_reads),
        ] {
            s.engine_counters
                .insert(name.into(), n.load(Ordering::Relaxed));
        }
        s
    }

    fn check_integrity(&self) -> Result<()> {
        self.alone(|e| e.check_integrity())
    }

    #[cfg(test)]
    fn with_shared_lock(&self, f: &mut dyn FnMut()) {
        let _reading = self.read();
        f()
    }
}
