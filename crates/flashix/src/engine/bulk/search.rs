//! Bulk search (thesis §5.2, Alg. 4): one read per affected range. `get` is Alg. 4 with
//! L = H (one range-index lookup, one range read, through the buffer pool so that hot
//! ranges stay cached); `get_many` groups the keys per range and reads the ranges in one
//! psync batch; scans read whole ranges past the pool, several per batch (up to `io_unit`
//! pages; an open-ended scan starts with one range and grows, [`RangeCursor::ramp`]).
//! The differential layer is newer than the ranges: it is consulted first, and merged
//! into scans.

use super::range::{self, read_ranges, RangeEntry};
use super::BulkIndex;
use crate::error::Result;
use crate::kit::api::RangeCursor;

impl BulkIndex {
    pub(super) fn lookup(&mut self, key: u64) -> Result<Option<u64>> {
        if let Some(&d) = self.delta.get(&key) {
            return Ok(d);
        }
        let Some((k1, e)) = self.index.floor(key) else {
            return Ok(None);
        };
        if key > e.k2 {
            return Ok(None);
        }
        self.counters.point_reads += 1;
        if u64::from(e.pages) * 2 > self.pager.pool_frames() {
            // A range larger than half the pool is read past it.
            let (got, _) = read_ranges(&mut self.pager, &[(k1, e)], false, self.p.io_unit)?;
            let t = got.into_iter().next().unwrap_or_default();
            return Ok(t.binary_search_by_key(&key, |t| t.0).ok().map(|i| t[i].1));
        }
        self.pager.prefetch(&[(e.start, u64::from(e.pages))], 1)?;
        // Binary search over the range's pages (all resident now), then in the page.
        let (mut lo, mut hi) = (0u64, u64::from(e.pages));
        while lo < hi {
            let mid = (lo + hi) / 2;
            let pid = e.start + mid;
            let (first, last, n) = self.pager.read(pid, |b| {
                let n = range::page_tuples(b);
                let first = range::page_tuple(b, 0).0;
                let last = range::page_tuple(b, n.saturating_sub(1)).0;
                (first, last, n)
            })?;
            if n == 0 {
                break;
            }
            if key < first {
                hi = mid;
            } else if key > last {
                lo = mid + 1;
            } else {
                return self.pager.read(pid, |b| {
                    let n = range::page_tuples(b);
                    let (mut a, mut z) = (0, n);
                    while a < z {
                        let c = (a + z) / 2;
                        let (k, v) = range::page_tuple(b, c);
                        if k == key {
                            return Some(v);
                        }
                        if k < key {
                            a = c + 1;
                        } else {
                            z = c;
                        }
                    }
                    None
                });
            }
        }
        Ok(None)
    }

    /// MPSearch-like batched lookups: keys grouped per range, the ranges read in one psync
    /// batch past the pool.
    pub(super) fn lookup_many(&mut self, keys: &[u64]) -> Result<Vec<Option<u64>>> {
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
        for chunk in ranges.chunks(64) {
            let (got, _) = read_ranges(&mut self.pager, chunk, true, self.p.io_unit)?;
            self.counters.point_reads += chunk.len() as u64;
            for ((k1, _), tuples) in chunk.iter().zip(&got) {
                for w in want.iter().filter(|w| w.0 == *k1) {
                    let key = keys[w.2];
                    out[w.2] = tuples
                        .binary_search_by_key(&key, |t| t.0)
                        .ok()
                        .map(|j| tuples[j].1);
                }
            }
        }
        Ok(out)
    }

    /// Append the next batch of the range to `out` (Alg. 4): the ranges from the one
    /// holding `cur.next`, whole, merged with the differential layer.
    pub(super) fn scan_batch(
        &mut self,
        cur: &mut RangeCursor,
        out: &mut Vec<(u64, u64)>,
    ) -> Result<()> {
        loop {
            let Some((lo, hi)) = cur.remaining() else {
                return Ok(());
            };
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
            let (got, _) = read_ranges(&mut self.pager, &ranges, true, self.p.io_unit)?;
            self.counters.scan_ranges_read += ranges.len() as u64;
            let before = out.len();
            let mut delta = self.delta.range(lo..=end).peekable();
            for tuples in &got {
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
            if out.len() > before || cur.next.is_none() {
                return Ok(());
            }
        }
    }
}
