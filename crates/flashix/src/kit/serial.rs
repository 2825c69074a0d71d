//! [`Serial`]: a [`SerialEngine`] served to many threads, one operation at a time.
//!
//! # Thread safety
//!
//! One mutex over the engine: every operation runs alone, from start to end, so each is
//! linearizable at the instant it holds the mutex, a batch is applied whole before any
//! other operation sees the engine, and a `get_many` or a scan batch sees one state.
//! Two things run outside the mutex:
//! - the WAL sync of a flush: a flush takes its ticket under the mutex and waits on it
//!   after releasing it, so writers go on while it syncs and concurrent flushes share one
//!   sync (group commit, `crate::durable::commit`);
//! - the gap between two batches of a range scan: other threads' operations run there. A
//!   scan resumes from the smallest key it has not returned (`RangeCursor::next`), so it
//!   returns keys in ascending order, every key present and unchanged for the whole scan
//!   and none absent for the whole scan; an engine's position in its structure
//!   (`RangeCursor::resume`) is dropped when a write came in between, since that write may
//!   have split, merged or freed the page it names.
//!
//! The engine's background merge thread (FD-tree, LSM-tree) runs beside all of this, as it
//! did beside one thread.

use super::api::{Engine, RangeCursor, SerialEngine};
use crate::durable::LogicalOp;
use crate::error::Result;
use crate::stats::Stats;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// An engine behind one mutex, with a count of the writes made through it.
pub struct Serial<E> {
    inner: Mutex<E>,
    /// Writes so far: a scan's `resume` taken at another count is stale.
    writes: AtomicU64,
}

impl<E: SerialEngine> Serial<E> {
    /// Serve `engine` to many threads.
    pub fn new(engine: E) -> Serial<E> {
        Serial {
            inner: Mutex::new(engine),
            writes: AtomicU64::new(0),
        }
    }

    /// The engine, for the caller's operation. A panic in another thread's operation left
    /// the engine in an unknown state, which the `Db`'s poisoning does not see; the engine
    /// is used anyway, as a panic is a bug that the conformance checks are there to catch.
    fn lock(&self) -> MutexGuard<'_, E> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Run a write: the count moves first, so a scan that reads the count after this write
    /// has begun never keeps a position from before it.
    fn write<T>(&self, f: impl FnOnce(&mut E) -> Result<T>) -> Result<T> {
        let mut e = self.lock();
        self.writes.fetch_add(1, Ordering::Relaxed);
        f(&mut e)
    }
}

impl<E: SerialEngine> Engine for Serial<E> {
    fn insert(&self, key: u64, value: u64) -> Result<()> {
        self.write(|e| e.insert(key, value))
    }

    fn delete(&self, key: u64) -> Result<()> {
        self.write(|e| e.delete(key))
    }

    fn get(&self, key: u64) -> Result<Option<u64>> {
        self.lock().get(key)
    }

    fn get_many(&self, keys: &[u64]) -> Result<Vec<Option<u64>>> {
        self.lock().get_many(keys)
    }

    fn scan(&self, cur: &mut RangeCursor, out: &mut Vec<(u64, u64)>) -> Result<()> {
        let mut e = self.lock();
        // Under the lock, no write runs: the count read here is the engine's state.
        let now = self.writes.load(Ordering::Relaxed);
        if cur.epoch != now {
            cur.resume = None;
            cur.epoch = now;
        }
        e.scan(cur, out)
    }

    fn scan_many(&self, ranges: &[(u64, u64)], out: &mut Vec<(u64, u64)>) -> Result<()> {
        self.lock().scan_many(ranges, out)
    }

    fn estimate_count(&self, ranges: &[(u64, u64)]) -> Result<Option<u64>> {
        self.lock().estimate_count(ranges)
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
        let ticket = self.lock().flush_ticket()?;
        match ticket {
            Some(t) => t.wait(),
            None => Ok(()),
        }
    }

    fn close(&self) -> Result<()> {
        self.write(|e| e.close())
    }

    fn stats(&self) -> Stats {
        self.lock().stats()
    }

    fn check_integrity(&self) -> Result<()> {
        self.lock().check_integrity()
    }
}
