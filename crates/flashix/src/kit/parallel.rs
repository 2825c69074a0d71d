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
//! A point write (`insert`, `delete`) that finds readers holding the lock first brings the
//! pages it will change into the buffer pool under the shared lock, beside them
//! ([`Shareable::prepare_write`]), so that it finds them there under the exclusive lock:
//! readers then wait for its in-memory step, not its page reads. (A write that finds the
//! lock free takes it at once; a reader arriving during its page reads waits for them.) What still runs under the exclusive lock, and so
//! makes readers wait: a write-back of a dirty page its split or eviction needs, the WAL's
//! hand-off of a full buffer to the file, and a checkpoint (write-back of the dirty pages,
//! a device sync, the manifest switch).
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

use super::api::{Engine, RangeCursor, Shareable};
use crate::durable::LogicalOp;
use crate::error::{Error, Result};
use crate::stats::Stats;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard, TryLockError};

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
}

impl<E: Shareable> Parallel<E> {
    /// Serve `engine` to many threads.
    pub fn new(engine: E) -> Parallel<E> {
        Parallel {
            inner: RwLock::new(engine),
            writes: AtomicU64::new(0),
            failed: OnceLock::new(),
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

    /// Run a read under the shared lock, then the work it deferred, if any
    /// ([`Shareable::run_deferred`]).
    fn shared<T>(&self, f: impl FnOnce(&E) -> Result<T>) -> Result<T> {
        let (r, deferred) = {
            let e = self.read();
            self.usable()?;
            let r = self.note(f(&e), false);
            (r, e.has_deferred())
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
            self.note(e.run_deferred(), true)?;
        }
        Ok(())
    }

    /// Run a read that needs the engine to itself.
    fn alone<T>(&self, f: impl FnOnce(&mut E) -> Result<T>) -> Result<T> {
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

    /// The engine, to this thread alone.
    fn exclusive(&self) -> RwLockWriteGuard<'_, E> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Run a write: the count moves first, under the exclusive lock.
    fn write<T>(&self, f: impl FnOnce(&mut E) -> Result<T>) -> Result<T> {
        let mut e = self.exclusive();
        self.usable()?;
        self.writes.fetch_add(1, Ordering::Relaxed);
        self.note(f(&mut e), true)
    }

    /// A point write of `key`. When the lock is free, at once; when readers hold it, its
    /// pages are brought into the pool beside them first (module doc), where the engine
    /// shares reads at all. (Warming up when nothing waits would only walk the structure
    /// twice.)
    fn point_write(&self, key: u64, f: impl FnOnce(&mut E) -> Result<()>) -> Result<()> {
        if E::PARALLEL_GETS {
            let free = match self.inner.try_write() {
                Ok(e) => Some(e),
                Err(TryLockError::Poisoned(e)) => Some(e.into_inner()),
                Err(TryLockError::WouldBlock) => None,
            };
            if let Some(mut e) = free {
                self.usable()?;
                self.writes.fetch_add(1, Ordering::Relaxed);
                return self.note(f(&mut e), true);
            }
            self.read().prepare_write(key);
        }
        self.write(f)
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
        self.point_write(key, |e| e.insert(key, value))
    }

    fn delete(&self, key: u64) -> Result<()> {
        self.point_write(key, |e| e.delete(key))
    }

    fn get(&self, key: u64) -> Result<Option<u64>> {
        match E::PARALLEL_GETS {
            true => self.shared(|e| e.get_shared(key)),
            false => self.alone(|e| e.get(key)),
        }
    }

    fn get_many(&self, keys: &[u64]) -> Result<Vec<Option<u64>>> {
        match E::PARALLEL_GETS {
            true => self.shared(|e| e.get_many_shared(keys)),
            false => self.alone(|e| e.get_many(keys)),
        }
    }

    fn scan(&self, cur: &mut RangeCursor, out: &mut Vec<(u64, u64)>) -> Result<()> {
        // Under the engine's lock no write runs: the write count read there is its state.
        match E::PARALLEL_SCANS {
            true => self.shared(|e| {
                fresh(cur, self.writes.load(Ordering::Relaxed));
                e.scan_shared(cur, out)
            }),
            false => self.alone(|e| {
                fresh(cur, self.writes.load(Ordering::Relaxed));
                e.scan(cur, out)
            }),
        }
    }

    fn scan_many(&self, ranges: &[(u64, u64)], out: &mut Vec<(u64, u64)>) -> Result<()> {
        match E::PARALLEL_SCANS {
            true => self.shared(|e| e.scan_many_shared(ranges, out)),
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
        self.read().stats()
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
