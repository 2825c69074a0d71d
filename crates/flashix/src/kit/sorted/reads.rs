//! The read protocol of an index of sorted levels under a small head tree (the FD-tree's
//! head tree and runs, the LSM-tree's C0 and components): how its point searches and range
//! scans serve the serial and the shared paths, and the thread-safety constants that go
//! with it. An engine implements [`SortedReads`] (its levels borrowed apart from its
//! pager, the pages a write will change) and [`SortedLevels`] for those levels (its own
//! point search, one range batch, over any page source) and gets [`Shareable`] from them;
//! its `SerialEngine` impl takes the same reads with [`sorted_serial_reads!`].
//!
//! Why one protocol serves both: a read of either engine changes nothing, not even a
//! counter, and reads only published structures (a merge writes new extents, which no read
//! reaches until the merge is complete and taken in under the exclusive lock, and the
//! extents it frees are reused only after the next checkpoint). On the shared path
//! (`&Pager`) every page a read reaches is read through the pool's shared path or past it
//! by the device's reader handles, so reads run beside each other and may be stopped at a
//! page the pool misses and run again (`Shareable::RESTARTS`). When nothing else is in
//! progress, a read runs on the serial path under the exclusive lock: the same algorithm
//! over `&mut Pager`, through the Pager's exclusive path (the pool's exclusive mode, the
//! device's own requests past it), which spares every page the shared path's latching,
//! pinning and miss planning ([`PageRead`]). A write changes only the head tree (C0),
//! whose path it can bring into the pool beforehand. A point write that fits its leaf is
//! made under the shared lock, under that leaf's latch (`Shareable::PARALLEL_POINT_WRITES`,
//! [`super::shared`]): readers see the leaf before or after it, whole, and since such a
//! write changes no page id, level or extent, nothing a read or a scan's position names
//! (a key) becomes stale.

use super::entry::{Entry, Kind};
use super::memo::{scan_many_with_memo, PageMemo};
use super::shared::SharedHead;
use crate::durable::{LogicalOp, PageRead, Pager};
use crate::error::Result;
use crate::kit::api::{RangeCursor, SerialEngine, Shareable, SharedWrite};

/// An index of sorted levels whose reads change nothing (module doc): the hooks by which
/// [`Shareable`] and [`sorted_serial_reads!`] serve its searches and scans.
pub(crate) trait SortedReads: SerialEngine + Sync {
    /// What a read reaches besides the pager (the levels, their range tombstones, the
    /// page layout), borrowed apart from the engine's pager: a serial read holds the pager
    /// `&mut` beside it.
    type Levels<'a>: SortedLevels
    where
        Self: 'a;

    /// The levels and the pager for the shared path, from any of many reading threads.
    fn levels(&self) -> (Self::Levels<'_>, &Pager);

    /// The levels and the pager for its exclusive path: a serial read, alone under the
    /// engine's exclusive lock.
    fn levels_mut(&mut self) -> (Self::Levels<'_>, &mut Pager);

    /// Bring into the pool the pages a point write of `key` will change, beside the
    /// readers (`Shareable::prepare_write`). Errors are left for the write to meet.
    fn warm_write(&self, key: u64);

    /// The head tree as the shared writes see it, under the engine's shared lock: an
    /// insert is the same in both engines (`Shareable::insert_shared`, an upsert into the
    /// head tree under its leaf's latch), a delete is each engine's own.
    fn shared_head(&self) -> SharedHead<'_>;

    /// `Shareable::delete_shared`: what decides the delete (a search, the levels below the
    /// head tree) is the engine's; it is made through [`SortedReads::shared_head`].
    fn head_delete_shared(&self, key: u64) -> Result<SharedWrite>;

    /// `Shareable::maintain`: what the shared writes asked for, under the exclusive lock.
    fn head_maintain(&mut self) -> Result<()>;
}

/// The reads of a [`SortedReads`] engine, written once over a page source: `&Pager` on
/// the shared path, `&mut Pager` on the serial one ([`PageRead`]).
pub(crate) trait SortedLevels {
    /// Point search: the entry of `key` that decides it (the newest level's own entry),
    /// or none if no level holds one or a range tombstone hides the older ones.
    fn newest(&self, pager: impl PageRead, key: u64) -> Result<Option<Entry>>;

    /// The limits of a range batch's size: the most pages of the lowest level a batch
    /// reads (`io_unit`) and the entries of a page, for [`RangeCursor::ramp`].
    fn batch_limits(&self) -> (u64, u64);

    /// One batch of a range scan of `[lo, hi]` (what the cursor has left), reading at most
    /// `unit` pages of the lowest level: append its entries to `out`, ascending, and
    /// return the last key the batch is complete up to (`hi` when it reached the end).
    /// With a memo (`scan_many`), the last page read at each level is kept in it.
    fn range_batch(
        &self,
        pager: impl PageRead,
        lo: u64,
        hi: u64,
        unit: u64,
        out: &mut Vec<(u64, u64)>,
        memo: Option<&mut PageMemo>,
    ) -> Result<u64>;

    /// The value of `key`: its deciding entry if that is a normal one (a filter entry, the
    /// LSM-tree's tombstone, says the key is deleted).
    fn lookup(&self, pager: impl PageRead, key: u64) -> Result<Option<u64>> {
        Ok(self
            .newest(pager, key)?
            .filter(|e| e.kind == Kind::Normal)
            .map(|e| e.val))
    }

    /// One batch of a range scan: the cursor's rest, its batch size grown as
    /// [`RangeCursor::ramp`] says, and the cursor moved past the batch.
    fn scan_batch(
        &self,
        pager: impl PageRead,
        cur: &mut RangeCursor,
        out: &mut Vec<(u64, u64)>,
        memo: Option<&mut PageMemo>,
    ) -> Result<()> {
        let Some((lo, hi)) = cur.remaining() else {
            return Ok(());
        };
        let (io_unit, per_page) = self.batch_limits();
        let unit = cur.ramp(crate::kit::api::RANGE_RAMP_PAGES, io_unit, per_page);
        let batch_hi = self.range_batch(pager, lo, hi, unit, out, memo)?;
        cur.next = if batch_hi >= hi {
            None
        } else {
            Some(batch_hi + 1)
        };
        Ok(())
    }

    /// Many ranges, in order, with one [`PageMemo`] for the whole call, so that
    /// neighbouring ranges in one page of a level read it once.
    fn scan_ranges(
        &self,
        mut pager: impl PageRead,
        ranges: &[(u64, u64)],
        out: &mut Vec<(u64, u64)>,
    ) -> Result<()> {
        scan_many_with_memo(self, ranges, out, |l, cur, out, memo| {
            l.scan_batch(&mut pager, cur, out, Some(memo))
        })
    }
}

/// Every read runs on the shared path and may restart (module doc).
impl<E: SortedReads> Shareable for E {
    const PARALLEL_SCANS: bool = true;
    const RESTARTS: bool = true;
    const SERIAL_READS_ALONE: bool = true;
    const PARALLEL_GETS: bool = true;
    const PARALLEL_POINT_WRITES: bool = true;

    /// An upsert into the head tree's leaf under its latch, logged there
    /// ([`SharedHead::upsert`]), unless the head tree is full already or the leaf must
    /// split (then nothing is done and the exclusive path inserts).
    fn insert_shared(&self, key: u64, value: u64) -> Result<SharedWrite> {
        let e = Entry::new(key, value, Kind::Normal);
        self.shared_head().upsert(e, &LogicalOp::Insert(key, value))
    }

    fn delete_shared(&self, key: u64) -> Result<SharedWrite> {
        self.head_delete_shared(key)
    }

    fn maintain(&mut self) -> Result<()> {
        self.head_maintain()
    }

    /// A batch reads its pages through the pool's shared mode or past it, each run of a
    /// level's pages in one request, and changes nothing.
    fn scan_shared(&self, cur: &mut RangeCursor, out: &mut Vec<(u64, u64)>) -> Result<()> {
        let (levels, pager) = self.levels();
        levels.scan_batch(pager, cur, out, None)
    }

    fn scan_many_shared(&self, ranges: &[(u64, u64)], out: &mut Vec<(u64, u64)>) -> Result<()> {
        let (levels, pager) = self.levels();
        levels.scan_ranges(pager, ranges, out)
    }

    fn get_shared(&self, key: u64) -> Result<Option<u64>> {
        let (levels, pager) = self.levels();
        levels.lookup(pager, key)
    }

    fn prepare_write(&self, key: u64) {
        self.warm_write(key);
    }
}

/// The read methods of `SerialEngine` for a [`SortedReads`] engine: the shared path's
/// reads, on `&mut self`, through the Pager's exclusive path ([`SortedReads::levels_mut`]):
/// alone under the engine's exclusive lock, a read needs none of the shared path's
/// latching and pinning. Used inside `impl SerialEngine for ...`, as
/// `logged_engine_methods!()` is.
macro_rules! sorted_serial_reads {
    () => {
        fn get(&mut self, key: u64) -> $crate::error::Result<Option<u64>> {
            use $crate::kit::sorted::reads::{SortedLevels, SortedReads};
            let (levels, pager) = SortedReads::levels_mut(self);
            levels.lookup(pager, key)
        }

        fn scan(
            &mut self,
            cur: &mut $crate::kit::api::RangeCursor,
            out: &mut Vec<(u64, u64)>,
        ) -> $crate::error::Result<()> {
            use $crate::kit::sorted::reads::{SortedLevels, SortedReads};
            let (levels, pager) = SortedReads::levels_mut(self);
            levels.scan_batch(pager, cur, out, None)
        }

        fn scan_many(
            &mut self,
            ranges: &[(u64, u64)],
            out: &mut Vec<(u64, u64)>,
        ) -> $crate::error::Result<()> {
            use $crate::kit::sorted::reads::{SortedLevels, SortedReads};
            let (levels, pager) = SortedReads::levels_mut(self);
            levels.scan_ranges(pager, ranges, out)
        }
    };
}
pub(crate) use sorted_serial_reads;

/// The serial reads against the shared ones, for each engine's tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::SortedReads;
    use crate::kit::api::{RangeCursor, Shareable};
    use crate::testing::Rng;

    /// Build two engines alike with `twin` and put them through the same writes, the
    /// first read on the serial path (the Pager's exclusive path), the second on the
    /// shared one: every answer is the same, and so are the device's reads (pages and
    /// requests) and the pool's hits and misses while the pool holds every page the reads
    /// reach (`roomy`). In a pool they overflow the two replace pages differently (exact
    /// LRU on the exclusive path, a second chance for hits on the shared one), so only
    /// the answers are compared. Returns the pages each read from the device.
    pub(crate) fn serial_reads_answer_as_the_shared<E: SortedReads>(
        twin: impl Fn() -> E,
        roomy: bool,
    ) -> [u64; 2] {
        let (mut serial, mut shared) = (twin(), twin());
        const KEYS: u64 = 6000;
        let pairs: Vec<(u64, u64)> = (0..KEYS).map(|k| (k * 3, k)).collect();
        let mut rng = Rng::new(7);
        for e in [&mut serial, &mut shared] {
            e.bulk_insert(&pairs).unwrap();
        }
        // New keys and overwrites one by one: several levels, with tombstones.
        for i in 0..4000u64 {
            let k = rng.below(KEYS * 3);
            for e in [&mut serial, &mut shared] {
                match i % 10 {
                    0 => e.delete(k).unwrap(),
                    1 if i % 200 == 1 => e.delete_range(k, k + 30).unwrap(),
                    _ => e.insert(k, i).unwrap(),
                }
            }
        }
        let start = [serial.stats(), shared.stats()];
        for round in 0..900u64 {
            let k = rng.below(KEYS * 3);
            if round % 7 == 0 {
                for e in [&mut serial, &mut shared] {
                    e.insert(k, round).unwrap();
                    if round % 63 == 0 {
                        e.delete_range(k, k + 20).unwrap();
                    }
                }
            }
            let before = [serial.stats(), shared.stats()];
            let ranges: Vec<(u64, u64)> = (0..1 + rng.below(6))
                .map(|i| (k + i * 40, k + i * 40 + rng.below(30)))
                .collect();
            let (want, got) = match round % 4 {
                0 | 1 => (
                    vec![(k, serial.get(k).unwrap().unwrap_or(u64::MAX))],
                    vec![(k, shared.get_shared(k).unwrap().unwrap_or(u64::MAX))],
                ),
                2 => {
                    let hi = k + rng.below(2000);
                    (
                        scan_all(k, hi, |c, o| serial.scan(c, o).unwrap()),
                        scan_all(k, hi, |c, o| shared.scan_shared(c, o).unwrap()),
                    )
                }
                _ => {
                    let (mut a, mut b) = (Vec::new(), Vec::new());
                    serial.scan_many(&ranges, &mut a).unwrap();
                    shared.scan_many_shared(&ranges, &mut b).unwrap();
                    (a, b)
                }
            };
            assert_eq!(got, want, "round {round}");
            if roomy {
                let after = [serial.stats(), shared.stats()];
                // Pages and requests read from the device, the pool's hits and misses.
                let moved = |i: usize| {
                    let (a, b) = (&before[i], &after[i]);
                    (
                        b.device.reads - a.device.reads,
                        b.device.read_requests - a.device.read_requests,
                        b.buffer.hits - a.buffer.hits,
                        b.buffer.misses - a.buffer.misses,
                    )
                };
                assert_eq!(
                    moved(0),
                    moved(1),
                    "round {round}: reads, requests, hits, misses"
                );
            }
        }
        let end = [serial.stats(), shared.stats()];
        assert!(
            end[0].device.reads > start[0].device.reads,
            "the reads never reached the device"
        );
        serial.check_integrity().unwrap();
        shared.check_integrity().unwrap();
        [0, 1].map(|i| end[i].device.reads - start[i].device.reads)
    }

    /// `[lo, hi]` scanned to its end by `batch`, one batch after the other.
    fn scan_all(
        lo: u64,
        hi: u64,
        mut batch: impl FnMut(&mut RangeCursor, &mut Vec<(u64, u64)>),
    ) -> Vec<(u64, u64)> {
        let mut cur = RangeCursor::bounded(lo, hi);
        let mut out = Vec::new();
        while cur.next.is_some() {
            batch(&mut cur, &mut out);
        }
        out
    }
}
