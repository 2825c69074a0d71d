//! The sweep shared by bulk insertion (thesis §5.3, Alg. 5), the merge of the differential
//! layer, and range deletion (§5.4, Alg. 7): visit the affected ranges from low to high,
//! read each once, merge its changes in, and write the merged tuples out as new ranges
//! (appended into fresh extents) so that every range holds M..2M−1 tuples.
//!
//! - **Routing** (Definition 5.1, not Alg. 5's "largest k1 ≤ l0", which loops forever on a
//!   key between two ranges: notes §1.11, erratum 1): a key goes to the range whose update
//!   interval `(k2 of the previous range, k2]` holds it, a key above every range to the last
//!   range ([`super::index::RangeIndex::route`]).
//! - **The carry** `m` of Alg. 5 and 7: the merged tuples not yet written. While it holds
//!   2M or more, M-sized ranges are written from its front (Alg. 5's inner loop). With
//!   "batching ranges" (§5.6) the carry goes on into the next affected range when that
//!   range is the next one in key order, so consecutive affected ranges are cut together;
//!   otherwise (or without the switch) the carry is closed: written as M-sized ranges and
//!   one of M..2M−1.
//! - **Underflow** (Alg. 7's `|m| < M`, which deletes can cause): the next range in key
//!   order is merged in (or, when there is none, the previous one: §5.4, "the previous
//!   range could be used instead"); a lone carry below M with no other range left is the
//!   one undersized range an index of fewer than M tuples may have.
//! - A range whose changes change nothing (deletes of absent keys) is left where it is
//!   when no carry is open.
//!
//! Old ranges are freed (reused after the next checkpoint, or never with `append_only`);
//! new ranges enter the range index when the write that holds them is done.

use super::range::{read_ranges, RangeEntry, RangeWriter};
use super::BulkIndex;
use crate::error::Result;
use std::collections::HashMap;
use std::ops::Range;

/// A change to one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Insert or replace.
    Put(u64),
    /// Delete (absent keys are fine).
    Del,
}

/// One affected range and what happens to it.
#[derive(Debug, Clone)]
struct Group {
    /// The range (`None`: the index is empty and the ops make the first ranges).
    range: Option<(u64, RangeEntry)>,
    /// Its ops, a slice of the sweep's ops.
    ops: Range<usize>,
    /// Keys of `[lo, hi]` to drop (range deletion).
    cut: Option<(u64, u64)>,
}

/// What one sweep did (counters).
#[derive(Debug, Default, Clone, Copy)]
pub struct SweepReport {
    pub ranges_read: u64,
    pub read_requests: u64,
    pub ranges_written: u64,
    pub write_requests: u64,
    pub pages_written: u64,
    pub neighbour_merges: u64,
    pub ranges_dropped: u64,
}

struct Sweep {
    carry: Vec<(u64, u64)>,
    /// The largest key consumed into the carry so far.
    pos: Option<u64>,
    writer: RangeWriter,
    /// Read-ahead: tuples of ranges read but not consumed yet, by k1.
    cache: HashMap<u64, Vec<(u64, u64)>>,
    report: SweepReport,
}

impl BulkIndex {
    /// Alg. 5 (with Definition 5.1 routing) for `ops`: sorted by key, distinct.
    pub(super) fn sweep_ops(&mut self, ops: &[(u64, Op)]) -> Result<SweepReport> {
        if ops.is_empty() {
            return Ok(SweepReport::default());
        }
        let mut groups = Vec::new();
        if self.index.is_empty() {
            groups.push(Group {
                range: None,
                ops: 0..ops.len(),
                cut: None,
            });
        } else {
            let mut i = 0;
            while i < ops.len() {
                let Some((k1, e)) = self.index.route(ops[i].0) else {
                    break;
                };
                let last = self.index.above(k1).is_none();
                let mut j = i + 1;
                while j < ops.len() && (last || ops[j].0 <= e.k2) {
                    j += 1;
                }
                groups.push(Group {
                    range: Some((k1, e)),
                    ops: i..j,
                    cut: None,
                });
                i = j;
            }
        }
        self.run_sweep(ops, &groups, self.p.batch_ranges)
    }

    /// Alg. 7: delete every key of `[lo, hi]`. Ranges inside it leave the range index with
    /// no main-file I/O; the (at most two) boundary ranges are read, trimmed and merged
    /// with each other, and with a neighbour if fewer than M tuples remain.
    pub(super) fn sweep_delete_range(&mut self, lo: u64, hi: u64) -> Result<SweepReport> {
        let from = self.index.floor(lo).map_or(0, |r| r.0);
        let overlapping: Vec<(u64, RangeEntry)> = self
            .index
            .iter_from(from)
            .take_while(|&(k1, _)| k1 <= hi)
            .filter(|&(_, e)| e.k2 >= lo)
            .collect();
        let mut report = SweepReport::default();
        let mut groups = Vec::new();
        for (k1, e) in overlapping {
            if lo <= k1 && e.k2 <= hi {
                self.index.remove(k1);
                self.free_range(e);
                report.ranges_dropped += 1;
            } else {
                groups.push(Group {
                    range: Some((k1, e)),
                    ops: 0..0,
                    cut: Some((lo, hi)),
                });
            }
        }
        let r = self.run_sweep(&[], &groups, true)?;
        report.ranges_read = r.ranges_read;
        report.read_requests = r.read_requests;
        report.ranges_written = r.ranges_written;
        report.write_requests = r.write_requests;
        report.pages_written = r.pages_written;
        report.neighbour_merges = r.neighbour_merges;
        Ok(report)
    }

    fn run_sweep(
        &mut self,
        ops: &[(u64, Op)],
        groups: &[Group],
        batch_ranges: bool,
    ) -> Result<SweepReport> {
        let m = self.p.m;
        let mut sw = Sweep {
            carry: Vec::new(),
            pos: None,
            writer: RangeWriter::new(self.pager.page_size(), self.p.io_unit, self.p.batch_writes),
            cache: HashMap::new(),
            report: SweepReport::default(),
        };
        let mut gi = 0;
        loop {
            let next = groups.get(gi);
            if !sw.carry.is_empty() {
                let goes_on = batch_ranges
                    && next.is_some_and(|g| {
                        let succ = sw.pos.and_then(|p| self.index.above(p)).map(|r| r.0);
                        g.range.is_some_and(|r| Some(r.0) == succ)
                    });
                if !goes_on {
                    if sw.carry.len() >= m {
                        self.emit(&mut sw, true)?;
                        continue;
                    }
                    // Underflow: merge a neighbour in (Alg. 7, |m| < M).
                    if let Some((k1, e)) = sw.pos.and_then(|p| self.index.above(p)) {
                        sw.report.neighbour_merges += 1;
                        match next.filter(|g| g.range.is_some_and(|r| r.0 == k1)) {
                            Some(g) => {
                                self.consume(&mut sw, groups, gi, ops, g)?;
                                gi += 1;
                            }
                            None => {
                                let g = Group {
                                    range: Some((k1, e)),
                                    ops: 0..0,
                                    cut: None,
                                };
                                self.consume(&mut sw, groups, gi, ops, &g)?;
                            }
                        }
                        continue;
                    }
                    // No successor: the previous range, which may be one this sweep wrote.
                    self.flush_writer(&mut sw)?;
                    let first = sw.carry[0].0;
                    if let Some((k1, e)) = self.index.below(first) {
                        sw.report.neighbour_merges += 1;
                        let mut before = self.read_one(&mut sw, k1, e)?;
                        self.index.remove(k1);
                        self.free_range(e);
                        before.append(&mut sw.carry);
                        sw.carry = before;
                    }
                    self.emit(&mut sw, true)?;
                    continue;
                }
            }
            let Some(g) = next else { break };
            self.consume(&mut sw, groups, gi, ops, g)?;
            gi += 1;
            if batch_ranges && sw.carry.len() >= 2 * m {
                self.emit(&mut sw, false)?;
            }
        }
        self.flush_writer(&mut sw)?;
        Ok(sw.report)
    }

    /// Read group `g`'s range (from the read-ahead, else with read-ahead of the next
    /// groups' ranges), merge its ops and cut, and append the result to the carry. An
    /// unchanged range with no carry open stays where it is.
    fn consume(
        &mut self,
        sw: &mut Sweep,
        groups: &[Group],
        gi: usize,
        ops: &[(u64, Op)],
        g: &Group,
    ) -> Result<()> {
        let ops = &ops[g.ops.clone()];
        let Some((k1, e)) = g.range else {
            // Empty index: the ops are the tuples.
            sw.carry.extend(ops.iter().filter_map(|&(k, op)| match op {
                Op::Put(v) => Some((k, v)),
                Op::Del => None,
            }));
            sw.pos = sw.carry.last().map(|t| t.0);
            return Ok(());
        };
        let tuples = match sw.cache.remove(&k1) {
            Some(t) => t,
            None if self.p.batch_reads => {
                // Read ahead the ranges of the next groups, up to one io_unit.
                let mut want = vec![(k1, e)];
                let mut pages = u64::from(e.pages);
                for h in groups.iter().skip(gi + 1) {
                    let Some((hk, he)) = h.range else { break };
                    if hk == k1 || sw.cache.contains_key(&hk) {
                        continue;
                    }
                    if pages + u64::from(he.pages) > self.p.io_unit {
                        break;
                    }
                    pages += u64::from(he.pages);
                    want.push((hk, he));
                }
                let (mut got, requests) =
                    read_ranges(&mut self.pager, &want, true, self.p.io_unit)?;
                sw.report.ranges_read += want.len() as u64;
                sw.report.read_requests += requests;
                let first = got.remove(0);
                for ((hk, _), t) in want.iter().skip(1).zip(got) {
                    sw.cache.insert(*hk, t);
                }
                first
            }
            None => self.read_one(sw, k1, e)?,
        };
        let (merged, changed) = merge(&tuples, ops, g.cut);
        if !changed && sw.carry.is_empty() {
            return Ok(());
        }
        self.index.remove(k1);
        self.free_range(e);
        sw.carry.extend(merged);
        let top = ops.last().map_or(e.k2, |o| o.0.max(e.k2));
        sw.pos = Some(sw.pos.map_or(top, |p| p.max(top)));
        Ok(())
    }

    fn read_one(&mut self, sw: &mut Sweep, k1: u64, e: RangeEntry) -> Result<Vec<(u64, u64)>> {
        if let Some(t) = sw.cache.remove(&k1) {
            return Ok(t);
        }
        let (mut got, requests) = read_ranges(&mut self.pager, &[(k1, e)], false, self.p.io_unit)?;
        sw.report.ranges_read += 1;
        sw.report.read_requests += requests;
        Ok(got.pop().unwrap_or_default())
    }

    /// Write the carry's front as M-sized ranges while 2M or more remain; with `close`,
    /// the rest too (M..2M−1 tuples, or fewer only as the index's one undersized range).
    fn emit(&mut self, sw: &mut Sweep, close: bool) -> Result<()> {
        let m = self.p.m;
        let mut at = 0;
        while sw.carry.len() - at >= 2 * m {
            let done = sw.writer.push(&mut self.pager, &sw.carry[at..at + m])?;
            self.install(done);
            at += m;
        }
        if close && at < sw.carry.len() {
            let done = sw.writer.push(&mut self.pager, &sw.carry[at..])?;
            self.install(done);
            at = sw.carry.len();
        }
        sw.carry.drain(..at);
        Ok(())
    }

    fn flush_writer(&mut self, sw: &mut Sweep) -> Result<()> {
        let done = sw.writer.flush(&mut self.pager)?;
        self.install(done);
        sw.report.ranges_written = sw.writer.ranges;
        sw.report.write_requests = sw.writer.writes;
        sw.report.pages_written = sw.writer.pages_written;
        Ok(())
    }

    fn install(&mut self, done: Vec<(u64, RangeEntry)>) {
        for (k1, e) in done {
            self.index.insert(k1, e);
        }
    }
}

/// Merge sorted `ops` into sorted `tuples` (a put inserts or replaces, a delete removes)
/// and drop the keys of `cut`. Returns the result and whether anything changed.
pub fn merge(
    tuples: &[(u64, u64)],
    ops: &[(u64, Op)],
    cut: Option<(u64, u64)>,
) -> (Vec<(u64, u64)>, bool) {
    let mut out = Vec::with_capacity(tuples.len() + ops.len());
    let mut changed = false;
    let (mut i, mut j) = (0, 0);
    while i < tuples.len() || j < ops.len() {
        let take_op = match (tuples.get(i), ops.get(j)) {
            (Some(t), Some(o)) => o.0 <= t.0,
            (None, Some(_)) => true,
            _ => false,
        };
        if take_op {
            let (k, op) = ops[j];
            let replaces = tuples.get(i).is_some_and(|t| t.0 == k);
            match op {
                Op::Put(v) => {
                    changed |= !replaces || tuples[i].1 != v;
                    out.push((k, v));
                }
                Op::Del => changed |= replaces,
            }
            if replaces {
                i += 1;
            }
            j += 1;
        } else {
            out.push(tuples[i]);
            i += 1;
        }
    }
    if let Some((lo, hi)) = cut {
        let before = out.len();
        out.retain(|t| t.0 < lo || t.0 > hi);
        changed |= out.len() != before;
    }
    (out, changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_applies_puts_deletes_and_cuts() {
        let t = [(1, 10), (3, 30), (5, 50), (7, 70)];
        let ops = [
            (0, Op::Put(0)),
            (3, Op::Put(31)),
            (4, Op::Del),
            (7, Op::Del),
        ];
        let (out, changed) = merge(&t, &ops, None);
        assert_eq!(out, [(0, 0), (1, 10), (3, 31), (5, 50)]);
        assert!(changed);
        let (out, changed) = merge(&t, &[(4, Op::Del), (5, Op::Put(50))], None);
        assert_eq!(out, t);
        assert!(
            !changed,
            "a delete of an absent key and a same-value put change nothing"
        );
        let (out, changed) = merge(&t, &[], Some((2, 5)));
        assert_eq!(out, [(1, 10), (7, 70)]);
        assert!(changed);
        assert!(!merge(&t, &[], Some((8, 9))).1);
    }
}
