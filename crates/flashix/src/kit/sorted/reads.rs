//! The read protocol of an index of sorted levels under a small head tree (the FD-tree's
//! head tree and runs, the LSM-tree's C0 and components): how its point searches and range
//! scans serve the serial and the shared paths, and the thread-safety constants that go
//! with it. An engine implements [`SortedReads`] (its own point search, one range batch,
//! the pages a write will change) and gets [`Shareable`] from it; its `SerialEngine` impl
//! takes the same reads with [`sorted_serial_reads!`].
//!
//! Why one protocol serves both: a read of either engine changes nothing, not even a
//! counter, and reads only published structures (a merge writes new extents, which no read
//! reaches until the merge is complete and taken in under the exclusive lock, and the
//! extents it frees are reused only after the next checkpoint). Every page a read reaches
//! is read through the pool's shared path or past it by the device's reader handles, so
//! reads run beside each other, may be stopped at a page the pool misses and run again
//! (`Shareable::RESTARTS`), and may run under the exclusive lock when nothing else is in
//! progress. A write changes only the head tree (C0), whose path it can bring into the
//! pool beforehand.

use super::entry::{Entry, Kind};
use super::memo::{scan_many_with_memo, PageMemo};
use crate::error::Result;
use crate::kit::api::{RangeCursor, SerialEngine, Shareable};

/// An index of sorted levels whose reads change nothing (module doc): the hooks by which
/// [`Shareable`] and [`sorted_serial_reads!`] serve its searches and scans.
pub(crate) trait SortedReads: SerialEngine + Sync {
    /// Point search: the entry of `key` that decides it (the newest level's own entry),
    /// or none if no level holds one or a range tombstone hides the older ones; on
    /// `&self`, from any of many reading threads.
    fn newest(&self, key: u64) -> Result<Option<Entry>>;

    /// The limits of a range batch's size: the most pages of the lowest level a batch
    /// reads (`io_unit`) and the entries of a page, for [`RangeCursor::ramp`].
    fn batch_limits(&self) -> (u64, u64);

    /// One batch of a range scan of `[lo, hi]` (what the cursor has left), reading at most
    /// `unit` pages of the lowest level: append its entries to `out`, ascending, and
    /// return the last key the batch is complete up to (`hi` when it reached the end).
    /// With a memo (`scan_many`), the last page read at each level is kept in it.
    fn range_batch(
        &self,
        lo: u64,
        hi: u64,
        unit: u64,
        out: &mut Vec<(u64, u64)>,
        memo: Option<&mut PageMemo>,
    ) -> Result<u64>;

    /// Bring into the pool the pages a point write of `key` will change, beside the
    /// readers (`Shareable::prepare_write`). Errors are left for the write to meet.
    fn warm_write(&self, key: u64);

    /// The value of `key`: its deciding entry if that is a normal one (a filter entry, the
    /// LSM-tree's tombstone, says the key is deleted).
    fn lookup(&self, key: u64) -> Result<Option<u64>> {
        Ok(self
            .newest(key)?
            .filter(|e| e.kind == Kind::Normal)
            .map(|e| e.val))
    }

    /// One batch of a range scan: the cursor's rest, its batch size grown as
    /// [`RangeCursor::ramp`] says, and the cursor moved past the batch.
    fn scan_batch(
        &self,
        cur: &mut RangeCursor,
        out: &mut Vec<(u64, u64)>,
        memo: Option<&mut PageMemo>,
    ) -> Result<()> {
        let Some((lo, hi)) = cur.remaining() else {
            return Ok(());
        };
        let (io_unit, per_page) = self.batch_limits();
        let unit = cur.ramp(crate::kit::api::RANGE_RAMP_PAGES, io_unit, per_page);
        let batch_hi = self.range_batch(lo, hi, unit, out, memo)?;
        cur.next = if batch_hi >= hi {
            None
        } else {
            Some(batch_hi + 1)
        };
        Ok(())
    }

    /// Many ranges, in order, with one [`PageMemo`] for the whole call, so that
    /// neighbouring ranges in one page of a level read it once.
    fn scan_ranges(&self, ranges: &[(u64, u64)], out: &mut Vec<(u64, u64)>) -> Result<()> {
        scan_many_with_memo(self, ranges, out, |e, cur, out, memo| {
            e.scan_batch(cur, out, Some(memo))
        })
    }
}

/// Every read runs on the shared path and may restart (module doc).
impl<E: SortedReads> Shareable for E {
    const PARALLEL_SCANS: bool = true;
    const RESTARTS: bool = true;
    const SERIAL_READS_ALONE: bool = true;
    const PARALLEL_GETS: bool = true;

    /// A batch reads its pages through the pool's shared mode or past it, each run of a
    /// level's pages in one request, and changes nothing.
    fn scan_shared(&self, cur: &mut RangeCursor, out: &mut Vec<(u64, u64)>) -> Result<()> {
        self.scan_batch(cur, out, None)
    }

    fn scan_many_shared(&self, ranges: &[(u64, u64)], out: &mut Vec<(u64, u64)>) -> Result<()> {
        self.scan_ranges(ranges, out)
    }

    fn get_shared(&self, key: u64) -> Result<Option<u64>> {
        self.lookup(key)
    }

    fn prepare_write(&self, key: u64) {
        self.warm_write(key);
    }
}

/// The read methods of `SerialEngine` for a [`SortedReads`] engine: the shared path's
/// reads, on `&mut self` (they change nothing either way). Used inside
/// `impl SerialEngine for ...`, as `logged_engine_methods!()` is.
macro_rules! sorted_serial_reads {
    () => {
        fn get(&mut self, key: u64) -> $crate::error::Result<Option<u64>> {
            $crate::kit::sorted::reads::SortedReads::lookup(self, key)
        }

        fn scan(
            &mut self,
            cur: &mut $crate::kit::api::RangeCursor,
            out: &mut Vec<(u64, u64)>,
        ) -> $crate::error::Result<()> {
            $crate::kit::sorted::reads::SortedReads::scan_batch(self, cur, out, None)
        }

        fn scan_many(
            &mut self,
            ranges: &[(u64, u64)],
            out: &mut Vec<(u64, u64)>,
        ) -> $crate::error::Result<()> {
            $crate::kit::sorted::reads::SortedReads::scan_ranges(self, ranges, out)
        }
    };
}
pub(crate) use sorted_serial_reads;
