//! [`Parallel`]: an engine whose reads run in parallel ([`SharedReads`]), served to many
//! threads with one writer at a time.
//!
//! # Thread safety
//!
//! A readers-writer lock over the engine. Reads (`get`, `get_many`, a scan batch and
//! `range_many` where the engine's scans are shared, `stats`) hold it shared: any number run at once, each
//! with its own page reads in flight (the Pager's shared path: the buffer pool's latch
//! protocol and the device's reader handles). Writes hold it exclusive, so a read sees the
//! structure between two writes, never inside one: every single-key operation is
//! linearizable at the instant its lock is held, and a batch is applied whole before any
//! read sees it.
//!
//! A point write (`insert`, `delete`) first brings the pages it will change into the
//! buffer pool under the shared lock, beside the readers (`SharedReads::prepare_write`: the
//! B+-tree walks to the key's leaf, the LSM-tree to C0's), so that it finds them there
//! under the exclusive lock: readers then wait for its in-memory step, not its page reads.
//! What still runs under the exclusive lock, and so makes readers wait: the scans of an
//! engine whose scans are not shared (`SharedReads::SHARED_SCANS`), `estimate_count`, a write-back of a
//! dirty page its split or eviction needs, the WAL's hand-off of a full buffer to the file,
//! and a checkpoint (write-back of the dirty pages, a device sync, the manifest switch).
//!
//! A flush takes its WAL ticket under the exclusive lock and syncs with every lock
//! released (group commit, `crate::durable::commit`). Between two batches of a range scan
//! other threads run; as in [`super::serial::Serial`], a scan resumes from the smallest
//! key it has not returned, and its position in the structure is dropped when a write came
//! in between.

use super::api::{Engine, RangeCursor, SharedReads};
use crate::durable::LogicalOp;
use crate::error::Result;
use crate::stats::Stats;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// An engine behind a readers-writer lock, with a count of the writes made through it.
pub struct Parallel<E> {
    inner: RwLock<E>,
    /// Writes so far: a scan's `resume` taken at another count is stale.
    writes: AtomicU64,
}

impl<E: SharedReads> Parallel<E> {
    /// Serve `engine` to many threads.
    pub fn new(engine: E) -> Parallel<E> {
        Parallel {
            inner: RwLock::new(engine),
            writes: AtomicU64::new(0),
        }
    }

    /// The engine, shared with other readers. A panic in another thread (a bug) poisons
    /// the lock; the engine is used anyway, as [`super::serial::Serial`] does.
    fn read(&self) -> RwLockReadGuard<'_, E> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn exclusive(&self) -> RwLockWriteGuard<'_, E> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Run a write: the count moves first, under the exclusive lock.
    fn write<T>(&self, f: impl FnOnce(&mut E) -> Result<T>) -> Result<T> {
        let mut e = self.exclusive();
        self.writes.fetch_add(1, Ordering::Relaxed);
        f(&mut e)
    }

    /// Bring the pages a write of `key` changes into the buffer pool beside the readers
    /// (module doc, [`SharedReads::prepare_write`]).
    fn warm(&self, key: u64) {
        self.read().prepare_write(key);
    }
}

/// Drop the cursor's position in the structure if a write came since it was taken (`now`
/// is the write count, read under the engine's lock).
fn fresh(cur: &mut RangeCursor, now: u64) {
    if cur.epoch != now {
        cur.resume = None;
        cur.epoch = now;
    }
}

impl<E: SharedReads> Engine for Parallel<E> {
    fn insert(&self, key: u64, value: u64) -> Result<()> {
        self.warm(key);
        self.write(|e| e.insert(key, value))
    }

    fn delete(&self, key: u64) -> Result<()> {
        self.warm(key);
        self.write(|e| e.delete(key))
    }

    fn get(&self, key: u64) -> Result<Option<u64>> {
        self.read().get_shared(key)
    }

    fn get_many(&self, keys: &[u64]) -> Result<Vec<Option<u64>>> {
        self.read().get_many_shared(keys)
    }

    fn scan(&self, cur: &mut RangeCursor, out: &mut Vec<(u64, u64)>) -> Result<()> {
        if !E::SHARED_SCANS {
            let mut e = self.exclusive();
            fresh(cur, self.writes.load(Ordering::Relaxed));
            return e.scan(cur, out);
        }
        let e = self.read();
        // Under the shared lock no write runs: the count read here is the engine's state.
        fresh(cur, self.writes.load(Ordering::Relaxed));
        e.scan_shared(cur, out)
    }

    fn scan_many(&self, ranges: &[(u64, u64)], out: &mut Vec<(u64, u64)>) -> Result<()> {
        match E::SHARED_SCANS {
            true => self.read().scan_many_shared(ranges, out),
            false => self.exclusive().scan_many(ranges, out),
        }
    }

    fn estimate_count(&self, ranges: &[(u64, u64)]) -> Result<Option<u64>> {
        // Engines with shared reads keep no counts to estimate from (only the FBX-tree
        // does, and it is served by `Serial`).
        self.exclusive().estimate_count(ranges)
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
        let ticket = self.exclusive().flush_ticket()?;
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
        self.exclusive().check_integrity()
    }
}
