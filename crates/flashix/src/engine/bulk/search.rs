//! Bulk search (thesis §5.2, Alg. 4): one read per affected range. `get` is Alg. 4 with
//! L = H (one range-index lookup, one range read, through the buffer pool so that hot
//! ranges stay cached); `get_many` groups the keys per range and reads the ranges in one
//! psync batch; scans read whole ranges past the pool, several per batch (up to `io_unit`
//! pages; an open-ended scan starts with one range and grows, [`RangeCursor::ramp`]).
//! The differential layer is newer than the ranges: it is consulted first, and merged
//! into scans.
//!
//! Each has a shared form (`&self`, beside other readers; module doc, Thread safety): a
//! search's binary search over the range's pages goes through the pool's shared path page
//! by page (the serial one loads the whole range first, in one request), and ranges read
//! past the pool are read a run at a time ([`range::read_ranges_shared`]).

use super::range::{self, read_ranges, read_ranges_shared, RangeEntry, Tuples};
use super::BulkIndex;
use crate::durable::Pager;
use crate::error::Result;
use crate::kit::api::RangeCursor;

/// Ranges a batched lookup reads at once.
const MANY_RANGES: usize = 64;

/// Where a key's lookup goes.
enum Found {
    /// Answered without reading a range (the differential layer, or no range holds it).
    Done(Option<u64>),
    /// In range `(k1, e)`, whose pages number more than half the pool: read past it.
    Large(u64, RangeEntry),
    /// In range `e`, read through the pool.
    Pooled(RangeEntry),
}

/// The batch a scan reads next: the keys `[lo, end]` (of the range's `[lo, hi]`), held by
/// `ranges`.
struct ScanPlan {
    lo: u64,
    hi: u64,
    end: u64,
    ranges: Vec<(u64, RangeEntry)>,
}

impl BulkIndex {
    fn find(&self, key: u64) -> Found {
        if let Some(&d) = self.delta.get(&key) {
            return Found::Done(d);
        }
        let Some((k1, e)) = self.index.floor(key) else {
            return Found::Done(None);
        };
        if key > e.k2 {
            return Found::Done(None);
        }
        self.counters.point_reads.add(1);
        if u64::from(e.pages) * 2 > self.pager.pool_frames() {
            Found::Large(k1, e)
        } else {
            Found::Pooled(e)
        }
    }

    pub(super) fn lookup(&mut self, key: u64) -> Result<Option<u64>> {
        let e = match self.find(key) {
            Found::Done(v) => return Ok(v),
            Found::Large(k1, e) => {
                // A range larger than half the pool is read past it.
                let (got, _) = read_ranges(&mut self.pager, &[(k1, e)], false, self.p.io_unit)?;
                return Ok(in_range(&got.into_iter().next().unwrap_or_default(), key));
            }
            Found::Pooled(e) => e,
        };
        self.pager.prefetch(&[(e.start, u64::from(e.pages))], 1)?;
        // Binary search over the range's pages (all resident now), then in the page.
        search_pages(&self.pager, &e, key)
    }

    /// [`BulkIndex::lookup`] beside other readers: the pages the binary search visits are
    /// loaded through the pool's shared path one at a time.
    pub(super) fn lookup_shared(&self, key: u64) -> Result<Option<u64>> {
        match self.find(key) {
            Found::Done(v) => Ok(v),
            Found::Large(k1, e) => {
                let got = read_ranges_shared(&self.pager, &[(k1, e)], self.p.io_unit)?;
                Ok(in_range(&got.into_iter().next().unwrap_or_default(), key))
            }
            Found::Pooled(e) => search_pages(&self.pager, &e, key),
        }
    }

    /// MPSearch-like batched lookups: keys grouped per range, the ranges read in one psync
    /// batch past the pool.
    pub(super) fn lookup_many(&mut self, keys: &[u64]) -> Result<Vec<Option<u64>>> {
        let (mut out, want, ranges) = self.plan_many(keys);
        for chunk in ranges.chunks(MANY_RANGES) {
            let (got, _) = read_ranges(&mut self.pager, chunk, true, self.p.io_unit)?;
            self.fill_many(keys, &want, chunk, &got, &mut out);
        }
        Ok(out)
    }

    /// [`BulkIndex::lookup_many`] beside other readers (the ranges a run at a time).
    pub(super) fn lookup_many_shared(&self, keys: &[u64]) -> Result<Vec<Option<u64>>> {
        let (mut out, want, ranges) = self.plan_many(keys);
        for chunk in ranges.chunks(MANY_RANGES) {
            let got = read_ranges_shared(&self.pager, chunk, self.p.io_unit)?;
            self.fill_many(keys, &want, chunk, &got, &mut out);
        }
        Ok(out)
    }

    /// The answers the differential layer gives, the keys left to find (range k1, range,
    /// key index), by range, and the distinct ranges that hold them.
    #[allow(clippy::type_complexity)]
    fn plan_many(
        &self,
        keys: &[u64],
    ) -> (
        Vec<Option<u64>>,
        Vec<(u64, RangeEntry, usize)>,
        Vec<(u64, RangeEntry)>,
    ) {
        let mut out = vec![None; keys.len()];
        let mut want: Vec<(u64, RangeEntry, usize)> = Vec::new();
        for (i, &key) in keys.iter().enumerate() {
            if let Some(&d) = self.delta.get(&key) {
                out[i] = d;
                continue;
            }
            if let Some((k1, e)) = self.index.floor(key).filter(|r| key <= r.1.k2) {
                want.push((k1, e, i));
            }
        }
        want.sort_by_key(|w| (w.0, w.2));
        let mut ranges: Vec<(u64, RangeEntry)> = want.iter().map(|w| (w.0, w.1)).collect();
        ranges.dedup_by_key(|r| r.0);
        (out, want, ranges)
    }

    /// The answers of the keys in the ranges of `chunk`, read as `got`.
    fn fill_many(
        &self,
        keys: &[u64],
        want: &[(u64, RangeEntry, usize)],
        chunk: &[(u64, RangeEntry)],
        got: &[Tuples],
        out: &mut [Option<u64>],
    ) {
        self.counters.point_reads.add(chunk.len() as u64);
        for ((k1, _), tuples) in chunk.iter().zip(got) {
            for w in want.iter().filter(|w| w.0 == *k1) {
                out[w.2] = in_range(tuples, keys[w.2]);
            }
        }
    }

    /// Append the next batch of the range to `out` (Alg. 4): the ranges from the one
    /// holding `cur.next`, whole, merged with the differential layer.
    pub(super) fn scan_batch(
        &mut self,
        cur: &mut RangeCursor,
        out: &mut Vec<(u64, u64)>,
    ) -> Result<()> {
        while let Some(plan) = self.plan_scan(cur) {
            let (got, _) = read_ranges(&mut self.pager, &plan.ranges, true, self.p.io_unit)?;
            if self.merge_scan(&plan, &got, cur, out) {
                break;
            }
        }
        Ok(())
    }

    /// [`BulkIndex::scan_batch`] beside other readers (the ranges a run at a time).
    pub(super) fn scan_batch_shared(
        &self,
        cur: &mut RangeCursor,
        out: &mut Vec<(u64, u64)>,
    ) -> Result<()> {
        while let Some(plan) = self.plan_scan(cur) {
            let got = read_ranges_shared(&self.pager, &plan.ranges, self.p.io_unit)?;
            if self.merge_scan(&plan, &got, cur, out) {
                break;
            }
        }
        Ok(())
    }

    /// The ranges of the next batch from `cur.next`, up to the batch's budget of pages;
    /// `None` when the scan is done.
    fn plan_scan(&self, cur: &mut RangeCursor) -> Option<ScanPlan> {
        let (lo, hi) = cur.remaining()?;
        let start = self.index.floor(lo).map_or(0, |r| r.0);
        let budget = cur.ramp(1, self.p.io_unit, 0);
        let mut ranges = Vec::new();
        let mut pages = 0u64;
        for (k1, e) in self.index.iter_from(start) {
            if k1 > hi {
                break;
            }
            if e.k2 < lo {
                continue;
            }
            if !ranges.is_empty() && pages + u64::from(e.pages) > budget.max(1) {
                break;
            }
            pages += u64::from(e.pages);
            ranges.push((k1, e));
        }
        // This batch covers [lo, end]; past the last range it covers up to hi.
        let more = ranges
            .last()
            .and_then(|r| self.index.above(r.0))
            .filter(|&(k1, _)| k1 <= hi);
        let end = match (&more, ranges.last()) {
            (Some(_), Some(last)) => last.1.k2,
            _ => hi,
        };
        Some(ScanPlan {
            lo,
            hi,
            end,
            ranges,
        })
    }

    /// Append the entries of `plan`'s keys to `out`: the ranges read (`got`) merged with
    /// the differential layer; move the cursor past them. True when the call may return
    /// (something appended, or the scan done).
    fn merge_scan(
        &self,
        plan: &ScanPlan,
        got: &[Tuples],
        cur: &mut RangeCursor,
        out: &mut Vec<(u64, u64)>,
    ) -> bool {
        let (lo, hi, end) = (plan.lo, plan.hi, plan.end);
        self.counters.scan_ranges_read.add(plan.ranges.len() as u64);
        let before = out.len();
        let mut delta = self.delta.range(lo..=end).peekable();
        for tuples in got {
            let from = tuples.partition_point(|t| t.0 < lo);
            for &(k, v) in &tuples[from..] {
                if k > end {
                    break;
                }
                // Differential entries up to k come first; one for k supersedes it.
                let mut superseded = false;
                while let Some((&dk, &dv)) = delta.peek() {
                    if dk > k {
                        break;
                    }
                    if let Some(dv) = dv {
                        out.push((dk, dv));
                    }
                    superseded = dk == k;
                    delta.next();
                }
                if !superseded {
                    out.push((k, v));
                }
            }
        }
        out.extend(delta.filter_map(|(&k, &v)| v.map(|v| (k, v))));
        cur.next = if end >= hi { None } else { Some(end + 1) };
        out.len() > before || cur.next.is_none()
    }
}

/// The value of `key` in a range's tuples.
fn in_range(tuples: &[(u64, u64)], key: u64) -> Option<u64> {
    tuples
        .binary_search_by_key(&key, |t| t.0)
        .ok()
        .map(|i| tuples[i].1)
}

/// `key`'s value in range `e` by binary search over its pages, then in the page, each
/// page read through the pool (its shared path: a miss loads the one page).
fn search_pages(pager: &Pager, e: &RangeEntry, key: u64) -> Result<Option<u64>> {
    let (mut lo, mut hi) = (0u64, u64::from(e.pages));
    while lo < hi {
        let mid = (lo + hi) / 2;
        let pid = e.start + mid;
        match pager.read_shared(pid, |b| look(b, key))? {
            PageLook::Empty => break,
            PageLook::Below => hi = mid,
            PageLook::Above => lo = mid + 1,
            PageLook::Holds(v) => return Ok(v),
        }
    }
    Ok(None)
}

/// Where `key` lies with respect to a range page.
enum PageLook {
    /// The page holds no tuple.
    Empty,
    /// Below its first key.
    Below,
    /// Above its last key.
    Above,
    /// Within its keys: its value, if the page holds it.
    Holds(Option<u64>),
}

fn look(b: &[u8], key: u64) -> PageLook {
    let n = range::page_tuples(b);
    if n == 0 {
        return PageLook::Empty;
    }
    if key < range::page_tuple(b, 0).0 {
        return PageLook::Below;
    }
    if key > range::page_tuple(b, n - 1).0 {
        return PageLook::Above;
    }
    let (mut a, mut z) = (0, n);
    while a < z {
        let c = (a + z) / 2;
        let (k, v) = range::page_tuple(b, c);
        if k == key {
            return PageLook::Holds(Some(v));
        }
        if k < key {
            a = c + 1;
        } else {
            z = c;
        }
    }
    PageLook::Holds(None)
}
