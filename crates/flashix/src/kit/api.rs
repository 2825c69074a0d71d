//! The interface between `Db` and the engines: the [`Engine`] trait `Db` calls from any
//! number of threads, the [`SerialEngine`] trait of an engine that one thread at a time
//! drives and the [`Shareable`] trait of what its reads share (together made an `Engine`
//! by [`super::parallel::Parallel`]), the [`RangeCursor`] of a range scan, and the
//! bounded-batch range delete that engines without a structural one share.

use crate::durable::{FlushTicket, LogicalOp};
use crate::error::Result;
use crate::stats::Stats;
use std::ops::Bound;

/// Pages of a level (FD-tree) or leaves of a component (LSM) that the first batch of an
/// open-ended range scan reads when the caller gave no limit hint ([`RangeCursor::ramp`]):
/// 8 packed pages of 4 KiB hold 2,000 entries, so a scan of 1,000 ends within the first
/// batch.
pub const RANGE_RAMP_PAGES: u64 = 8;

/// The greatest tree height a manifest may claim: a tree of fanout 2 or more over 2^64
/// pages is never deeper. A larger (damaged or hostile) height is corruption, refused at
/// open before it sizes a root-to-leaf path.
pub const MAX_TREE_HEIGHT: u32 = 64;

/// True for a height a manifest may hold (1 ..= [`MAX_TREE_HEIGHT`]).
pub fn plausible_height(h: impl Into<u64>) -> bool {
    (1..=u64::from(MAX_TREE_HEIGHT)).contains(&h.into())
}

/// Where a range scan resumes. `next` is the smallest key not yet returned (`None`: done);
/// `hint` is engine-defined state that stays valid whatever is written between two batches
/// (the size of the next batch, [`RangeCursor::ramp`]); `resume` is an engine's position in
/// its structure (the B+-tree keeps the next leaf's page id there), valid only while
/// nothing was written since the batch that set it: the engine's thread-safety layer
/// clears it otherwise, using `epoch` ([`super::parallel::Parallel`]); `want` is how many
/// entries the caller expects to take ([`crate::Range::limit_hint`]), if it said.
#[derive(Debug, Clone)]
pub struct RangeCursor {
    pub next: Option<u64>,
    pub hi: Bound<u64>,
    pub hint: Option<u64>,
    pub resume: Option<u64>,
    pub epoch: u64,
    pub want: Option<u64>,
}

impl RangeCursor {
    /// A cursor over the inclusive `[lo, hi]`.
    pub fn bounded(lo: u64, hi: u64) -> RangeCursor {
        RangeCursor {
            next: Some(lo),
            hi: Bound::Included(hi),
            ..RangeCursor::empty()
        }
    }

    /// A cursor that is done (no key left), to start from with struct update syntax.
    pub fn empty() -> RangeCursor {
        RangeCursor {
            next: None,
            hi: Bound::Unbounded,
            hint: None,
            resume: None,
            epoch: 0,
            want: None,
        }
    }

    /// True if `key` is at or below the upper bound.
    pub fn below_hi(&self, key: u64) -> bool {
        match self.hi {
            Bound::Included(h) => key <= h,
            Bound::Excluded(h) => key < h,
            Bound::Unbounded => true,
        }
    }

    /// The keys left to scan as an inclusive `[next, hi]`, or `None` (and the cursor marked
    /// done) when none are left.
    pub fn remaining(&mut self) -> Option<(u64, u64)> {
        let lo = self.next?;
        let hi = match self.hi {
            Bound::Included(h) => Some(h),
            Bound::Excluded(h) => h.checked_sub(1),
            Bound::Unbounded => Some(u64::MAX),
        };
        match hi {
            Some(hi) if lo <= hi => Some((lo, hi)),
            _ => {
                self.next = None;
                None
            }
        }
    }

    /// Size of the next batch of a scan, at most `max` (the engine's unit: pages of a
    /// level, leaves). A bounded range reads `max`. An open-ended one (`lo..`, its end
    /// decided by the caller, who may stop after a few entries) reads `first`, then twice
    /// as much per batch (kept in `hint`), as readahead grows: a scan stopped early reads
    /// little, and at most twice what it returned. When the caller said how many entries
    /// it will take and has not taken them yet (`want`, which `Db`'s range iterator lowers
    /// by what each batch returned) and a unit holds at most `per_unit` of them (0: the
    /// engine cannot say), a batch is the units that many entries can span instead
    /// (`want / per_unit` rounded up, plus one for a start inside a unit); past the hint,
    /// batches grow from `first` again.
    pub fn ramp(&mut self, first: u64, max: u64, per_unit: u64) -> u64 {
        let max = max.max(1);
        if !matches!(self.hi, Bound::Unbounded) {
            return max;
        }
        match self.want {
            Some(want) if want > 0 && per_unit > 0 => {
                want.div_ceil(per_unit).saturating_add(1).clamp(1, max)
            }
            _ => {
                let n = self.hint.unwrap_or(first).clamp(1, max);
                self.hint = Some(n.saturating_mul(2));
                n
            }
        }
    }
}

/// What `Db` calls, from any number of threads at once (docs/design.md, Concurrency): every
/// method takes `&self`, and the engine's module doc says what runs in parallel with what.
/// `Db` validates arguments and handles poisoning.
pub trait Engine: Send + Sync {
    /// Insert or replace `key` ([`crate::Db::insert`]).
    fn insert(&self, key: u64, value: u64) -> Result<()>;
    /// Delete `key`, present or not ([`crate::Db::delete`]).
    fn delete(&self, key: u64) -> Result<()>;
    /// The value of `key` ([`crate::Db::get`]).
    fn get(&self, key: u64) -> Result<Option<u64>>;
    /// The values of `keys`, in their order ([`crate::Db::get_many`]).
    fn get_many(&self, keys: &[u64]) -> Result<Vec<Option<u64>>>;
    /// [`SerialEngine::scan`], from any thread: a cursor's `resume` set before a write the
    /// engine has made since is not used.
    fn scan(&self, cur: &mut RangeCursor, out: &mut Vec<(u64, u64)>) -> Result<()>;
    /// [`SerialEngine::scan_many`].
    fn scan_many(&self, ranges: &[(u64, u64)], out: &mut Vec<(u64, u64)>) -> Result<()>;
    /// [`SerialEngine::estimate_count`].
    fn estimate_count(&self, ranges: &[(u64, u64)]) -> Result<Option<u64>>;
    /// Sorted by key, no duplicate keys (Db prepares it).
    fn bulk_insert(&self, sorted: &[(u64, u64)]) -> Result<()>;
    /// A non-empty inclusive range.
    fn delete_range(&self, lo: u64, hi: u64) -> Result<()>;
    /// An atomic batch ([`SerialEngine::apply_batch`]).
    fn apply_batch(&self, ops: &[LogicalOp]) -> Result<()>;
    /// Make every operation that returned before this call durable, from any thread;
    /// concurrent flushes share one WAL sync (group commit, `crate::durable::commit`).
    fn flush(&self) -> Result<()>;
    /// Flush and release the engine's resources ([`crate::Db::close`]).
    fn close(&self) -> Result<()>;
    /// The engine's counters ([`crate::Db::stats`]).
    fn stats(&self) -> Stats;
    /// Check the engine's documented invariants.
    fn check_integrity(&self) -> Result<()>;
    /// Run `f` while this thread holds the engine's lock shared, as a reader does (tests of
    /// what an engine defers while other threads read). By default just `f`.
    #[cfg(test)]
    fn with_shared_lock(&self, f: &mut dyn FnMut()) {
        f()
    }
}

/// An engine one thread at a time drives (`&mut self`). Engines log their operations in
/// their own WAL so that recovery stays inside the engine.
pub trait SerialEngine: Send {
    /// Insert or replace `key` ([`crate::Db::insert`]).
    fn insert(&mut self, key: u64, value: u64) -> Result<()>;
    /// Delete `key`, present or not ([`crate::Db::delete`]).
    fn delete(&mut self, key: u64) -> Result<()>;
    /// The value of `key` ([`crate::Db::get`]).
    fn get(&mut self, key: u64) -> Result<Option<u64>>;
    /// The values of `keys`, in their order ([`crate::Db::get_many`]); by default one `get`
    /// per key.
    fn get_many(&mut self, keys: &[u64]) -> Result<Vec<Option<u64>>> {
        keys.iter().map(|&k| self.get(k)).collect()
    }
    /// Append to `out` at least one entry of the range from `cur.next`, unless the range is
    /// exhausted, in which case set `cur.next = None`.
    fn scan(&mut self, cur: &mut RangeCursor, out: &mut Vec<(u64, u64)>) -> Result<()>;
    /// Append to `out` the entries of every range of `ranges` (inclusive, non-empty,
    /// sorted, disjoint; `Db` prepares them), ascending. By default one scan per range;
    /// engines that can share reads between neighbouring ranges override it.
    fn scan_many(&mut self, ranges: &[(u64, u64)], out: &mut Vec<(u64, u64)>) -> Result<()> {
        for &(lo, hi) in ranges {
            let mut cur = RangeCursor::bounded(lo, hi);
            while cur.next.is_some() {
                self.scan(&mut cur, out)?;
            }
        }
        Ok(())
    }
    /// An estimate, without reading leaves, of the entries in `ranges` (inclusive, sorted,
    /// disjoint; `Db` prepares them), or `None` when the engine keeps no counts to answer
    /// from (the default). The FBX-tree answers from its node table (§4.3).
    fn estimate_count(&mut self, ranges: &[(u64, u64)]) -> Result<Option<u64>> {
        let _ = ranges;
        Ok(None)
    }
    /// Sorted by key, no duplicate keys (Db prepares it).
    fn bulk_insert(&mut self, sorted: &[(u64, u64)]) -> Result<()>;
    /// A non-empty inclusive range.
    fn delete_range(&mut self, lo: u64, hi: u64) -> Result<()>;
    /// An atomic batch (`Insert`, `Delete`, `DeleteRange`; non-empty ranges), logged as one
    /// record and applied in order (`durable::Logged::apply`).
    fn apply_batch(&mut self, ops: &[LogicalOp]) -> Result<()>;
    /// The first step of [`crate::Db::flush`]: hand every operation so far to the WAL
    /// file and return the ticket that makes them durable once waited on, with the engine
    /// free for other threads meanwhile (`None`: durable already).
    fn flush_ticket(&mut self) -> Result<Option<FlushTicket>>;
    /// Make every operation so far durable, now.
    fn flush(&mut self) -> Result<()> {
        match self.flush_ticket()? {
            Some(t) => t.wait(),
            None => Ok(()),
        }
    }
    /// Flush and release the engine's resources ([`crate::Db::close`]).
    fn close(&mut self) -> Result<()>;
    /// The engine's counters ([`crate::Db::stats`]).
    fn stats(&self) -> Stats;
    /// Check the engine's documented invariants (the module doc lists them); a violation is
    /// an error naming it.
    fn check_integrity(&mut self) -> Result<()>;
}

/// What of a [`SerialEngine`]'s reads run beside each other when
/// [`super::parallel::Parallel`] serves it to many threads: point searches
/// ([`Shareable::PARALLEL_GETS`]) and range scans ([`Shareable::PARALLEL_SCANS`]) whose
/// engine reads its structure through the Pager's shared path
/// (`crate::durable::Pager::read_shared`) and changes nothing a read changes for another
/// read or the next write. An engine that shares none keeps both false and needs none of
/// the methods: its reads then run one at a time, as its writes do.
pub trait Shareable: SerialEngine + Sync {
    /// `get` and `get_many` run beside each other ([`Shareable::get_shared`]).
    const PARALLEL_GETS: bool;
    /// Range scans run beside other reads ([`Shareable::scan_shared`]); false for an
    /// engine whose scans need `&mut self` (read-ahead through the device's started
    /// requests).
    const PARALLEL_SCANS: bool;
    /// A shared read (`get_shared`, `get_many_shared`, `scan_shared`) may be stopped at a
    /// page the buffer pool misses and run again from the start, with that page read
    /// outside the lock meanwhile (`crate::durable::outside`): before its last page read
    /// it changes nothing, not even a counter, and no background thread of the engine
    /// writes a page a reader can reach in place. False by default: the read then loads
    /// its pages under the shared lock.
    const RESTARTS: bool = false;
    /// The serial reads (`SerialEngine::get`, `get_many`, `scan`, `scan_many`) change
    /// nothing a scan's position names, so a read made while no other operation is in
    /// progress may take them under the exclusive lock (`super::parallel`). False by
    /// default, and for engines whose serial reads restructure (the LA-tree's emptyings,
    /// the FBX-tree's cleans): their reads always take the shared path.
    const SERIAL_READS_ALONE: bool = false;
    /// [`SerialEngine::get`] on `&self` (called only when [`Shareable::PARALLEL_GETS`]).
    fn get_shared(&self, key: u64) -> Result<Option<u64>> {
        let _ = key;
        Err(not_shared("point searches"))
    }
    /// [`SerialEngine::get_many`] on `&self`; by default one `get_shared` per key.
    fn get_many_shared(&self, keys: &[u64]) -> Result<Vec<Option<u64>>> {
        keys.iter().map(|&k| self.get_shared(k)).collect()
    }
    /// Before a point write of `key` takes the writer lock: bring the pages the write will
    /// change into the buffer pool, beside the readers, so that readers then wait only for
    /// its in-memory step (`super::parallel`). Errors are left for the write to meet. By
    /// default nothing.
    fn prepare_write(&self, key: u64) {
        let _ = key;
    }
    /// A shared read decided on work it could not do on `&self` — a step of the paper's
    /// algorithm that writes, such as an LA-tree buffer emptying or an FBX-tree clean after
    /// a read — and noted it for [`Shareable::run_deferred`]. By default never.
    fn has_deferred(&self) -> bool {
        false
    }
    /// Do the work shared reads deferred, under the exclusive lock, as a write: right after
    /// the read when the lock is free (so that one thread sees the paper's order), else
    /// by the engine's next write. By default nothing.
    fn run_deferred(&mut self) -> Result<()> {
        Ok(())
    }
    /// Point writes (inserts, deletes) run beside reads and beside each other when they
    /// can ([`Shareable::insert_shared`], [`Shareable::delete_shared`]). False by default:
    /// every write takes the exclusive lock.
    const PARALLEL_POINT_WRITES: bool = false;
    /// [`SerialEngine::insert`] on `&self`, when the engine can make it so: logged and
    /// applied, linearizable with every other operation on the key (called only when
    /// [`Shareable::PARALLEL_POINT_WRITES`]). [`SharedWrite::Exclusive`] when it cannot (it then
    /// changed nothing, and the caller inserts under the exclusive lock). Like a shared
    /// read, it may be stopped at a page miss and run again ([`Shareable::RESTARTS`]):
    /// before it changes anything, it changes nothing, not even a counter.
    fn insert_shared(&self, key: u64, value: u64) -> Result<SharedWrite> {
        let _ = (key, value);
        Ok(SharedWrite::Exclusive)
    }
    /// [`SerialEngine::delete`] on `&self`, as [`Shareable::insert_shared`] is the insert.
    fn delete_shared(&self, key: u64) -> Result<SharedWrite> {
        let _ = key;
        Ok(SharedWrite::Exclusive)
    }
    /// After shared writes that said [`SharedWrite::Maintain`]: what the engine does
    /// between operations under the exclusive lock (a checkpoint that came due). By
    /// default nothing.
    fn maintain(&mut self) -> Result<()> {
        Ok(())
    }
    /// [`SerialEngine::scan`] on `&self` (called only when [`Shareable::PARALLEL_SCANS`]).
    fn scan_shared(&self, cur: &mut RangeCursor, out: &mut Vec<(u64, u64)>) -> Result<()> {
        let _ = (cur, out);
        Err(not_shared("range scans"))
    }
    /// [`SerialEngine::scan_many`] on `&self`; by default one scan per range.
    fn scan_many_shared(&self, ranges: &[(u64, u64)], out: &mut Vec<(u64, u64)>) -> Result<()> {
        for &(lo, hi) in ranges {
            let mut cur = RangeCursor::bounded(lo, hi);
            while cur.next.is_some() {
                self.scan_shared(&mut cur, out)?;
            }
        }
        Ok(())
    }
}

/// What a shared write ([`Shareable::insert_shared`], [`Shareable::delete_shared`]) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SharedWrite {
    /// Done.
    Done,
    /// Done, and [`Shareable::maintain`] is due.
    Maintain,
    /// Nothing done: the write needs the exclusive lock (it restructures).
    Exclusive,
}

/// The error of a shared read an engine does not have (a bug of the caller: `Parallel`
/// checks the constants first).
fn not_shared(what: &str) -> crate::error::Error {
    crate::error::Error::Unsupported(format!("this engine's {what} do not run in parallel"))
}

/// Keys a range delete collects before deleting them ([`delete_range_by_scan`]).
pub(crate) const DELETE_RANGE_BATCH: usize = 4096;

/// Delete every key of `[lo, hi]` for an engine whose range delete is a run of point
/// deletes: collect up to [`DELETE_RANGE_BATCH`] keys with `scan` (the engine's range
/// batch), delete them with `delete`, and resume with a fresh cursor where the scan stopped
/// (the deletes may have changed the structure). Memory stays bounded by the batch.
pub(crate) fn delete_range_by_scan<E: ?Sized>(
    engine: &mut E,
    lo: u64,
    hi: u64,
    mut scan: impl FnMut(&mut E, &mut RangeCursor, &mut Vec<(u64, u64)>) -> Result<()>,
    mut delete: impl FnMut(&mut E, u64) -> Result<()>,
) -> Result<()> {
    let mut from = Some(lo);
    let mut keys = Vec::new();
    while let Some(next) = from {
        let mut cur = RangeCursor::bounded(next, hi);
        keys.clear();
        while keys.len() < DELETE_RANGE_BATCH && cur.next.is_some() {
            scan(engine, &mut cur, &mut keys)?;
        }
        for &(k, _) in &keys {
            delete(engine, k)?;
        }
        from = cur.next;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cur(next: Option<u64>, hi: Bound<u64>) -> RangeCursor {
        RangeCursor {
            next,
            hi,
            ..RangeCursor::empty()
        }
    }

    /// A range delete larger than a batch deletes exactly the range's keys, resuming
    /// after each batch, and never holds more than a batch (plus one scan call) of keys.
    #[test]
    fn delete_range_by_scan_works_in_bounded_batches() {
        let mut map: std::collections::BTreeMap<u64, u64> =
            (0..20_000u64).map(|k| (k * 2, k)).collect();
        let mut most = 0usize;
        delete_range_by_scan(
            &mut map,
            1_001,
            30_000,
            |m, cur, out| {
                // A range batch of at most 7 entries, as an engine's scan returns them.
                let Some((lo, hi)) = cur.remaining() else {
                    return Ok(());
                };
                let got: Vec<(u64, u64)> =
                    m.range(lo..=hi).take(7).map(|(&k, &v)| (k, v)).collect();
                cur.next = match got.last() {
                    Some(&(k, _)) if got.len() == 7 => k.checked_add(1),
                    _ => None,
                };
                out.extend(got);
                most = most.max(out.len());
                Ok(())
            },
            |m, k| {
                m.remove(&k);
                Ok(())
            },
        )
        .unwrap();
        assert!(most <= DELETE_RANGE_BATCH + 7, "{most} keys held");
        assert!(most >= DELETE_RANGE_BATCH, "{most}: one batch never filled");
        let left: Vec<u64> = map.keys().copied().collect();
        let want: Vec<u64> = (0..20_000u64)
            .map(|k| k * 2)
            .filter(|k| !(1_001..=30_000).contains(k))
            .collect();
        assert_eq!(left, want);
    }

    #[test]
    fn ramp_grows_open_ended_batches_and_keeps_bounded_ones_whole() {
        let mut open = cur(Some(5), Bound::Unbounded);
        let sizes: Vec<u64> = (0..6).map(|_| open.ramp(16, 300, 250)).collect();
        assert_eq!(sizes, [16, 32, 64, 128, 256, 300]);
        let mut bounded = cur(Some(5), Bound::Included(9));
        assert_eq!(bounded.ramp(16, 300, 250), 300);
        assert_eq!(bounded.hint, None);
        // A zero limit still reads one.
        assert_eq!(cur(Some(5), Bound::Unbounded).ramp(16, 0, 250), 1);
        // A limit hint sizes a batch for the entries still wanted; past it, batches grow
        // from the default; an engine that cannot say what a unit holds keeps its own.
        let mut hinted = cur(Some(5), Bound::Unbounded);
        hinted.want = Some(1000);
        assert_eq!(hinted.ramp(16, 300, 250), 5);
        hinted.want = Some(300);
        assert_eq!(hinted.ramp(16, 300, 250), 3);
        hinted.want = Some(0);
        let sizes: Vec<u64> = (0..3).map(|_| hinted.ramp(16, 300, 250)).collect();
        assert_eq!(sizes, [16, 32, 64]);
        let mut small = cur(Some(5), Bound::Unbounded);
        small.want = Some(10);
        assert_eq!(small.ramp(16, 300, 250), 2);
        let mut unknown = cur(Some(5), Bound::Unbounded);
        unknown.want = Some(10);
        assert_eq!(unknown.ramp(16, 300, 0), 16);
    }

    #[test]
    fn remaining_is_the_inclusive_rest_or_done() {
        assert_eq!(cur(Some(3), Bound::Included(9)).remaining(), Some((3, 9)));
        assert_eq!(cur(Some(3), Bound::Excluded(9)).remaining(), Some((3, 8)));
        assert_eq!(
            cur(Some(0), Bound::Unbounded).remaining(),
            Some((0, u64::MAX))
        );
        assert_eq!(cur(Some(9), Bound::Included(9)).remaining(), Some((9, 9)));
        for mut c in [
            cur(Some(0), Bound::Excluded(0)),
            cur(Some(10), Bound::Included(9)),
            cur(Some(9), Bound::Excluded(9)),
            cur(None, Bound::Unbounded),
        ] {
            assert_eq!(c.remaining(), None);
            assert_eq!(c.next, None, "a finished cursor is marked done");
        }
    }
}
