//! Point and range search: C0, then the components newest first. At each level the
//! level's own entry of the key decides first (a tombstone meaning absent), then the
//! level's range tombstones (covered: absent), else the next older level decides
//! ([`crate::kit::sorted::tombs`]).

use super::component::{self, TOMBSTONE};
use super::Lsm;
use crate::error::Result;
use crate::kit::api::{RangeCursor, RANGE_RAMP_PAGES};
use crate::kit::sorted::entry::{Entry, Kind};
use crate::kit::sorted::memo::PageMemo;
use crate::kit::sorted::tombs::Tombs;

/// The entries of one level that a range batch read, sorted by key.
struct Source {
    /// 0: C0; i: Ci.
    level: usize,
    entries: Vec<Entry>,
}

impl Lsm {
    /// The newest entry of `key`: C0 through the pool, then one descent per component,
    /// stopping at the first level whose entry or range tombstones decide.
    pub(super) fn lookup(&mut self, key: u64) -> Result<Option<u64>> {
        let f = self.c0.find(&mut self.pager, self.p.cap, key)?;
        let mut found = f.entry;
        if found.is_none() && !self.c0_tombs.covers(key) {
            // As the FD-tree's levels (§4 Eq. 10): a component's leaves are read through
            // the pool while C0 and the newer components leave room there, past it below.
            let frames = self.pager.pool_frames();
            let mut above = self.c0.pages;
            for (i, c) in self.components.clone().iter().enumerate() {
                if let Some(c) = c {
                    found = component::find(&mut self.pager, self.p.cap, c, key, above < frames)?;
                    if found.is_some() {
                        break;
                    }
                    above += c.pages;
                }
                if self.tombs[i].covers(key) {
                    break;
                }
            }
        }
        Ok(found.filter(|e| e.kind == Kind::Normal).map(|e| e.val))
    }

    /// Whether one range tombstone of a level newer than `level` spans all of `[lo, hi]`:
    /// no key of `level` can show there, so a range batch need not read its leaves (a scan
    /// over a deleted range costs what a range delete saved).
    fn spanned_by_newer(&self, level: usize, lo: u64, hi: u64) -> bool {
        self.all_tombs().take(level).any(|t| t.spans(lo, hi))
    }

    /// C0's index entries with key in [lo, hi] (at most |C0|). With a memo (slot 0), a
    /// range inside the C0 leaf read last needs no descent.
    fn c0_range(
        &mut self,
        lo: u64,
        hi: u64,
        max_leaves: u64,
        mut memo: Option<&mut PageMemo>,
    ) -> Result<(Vec<Entry>, Option<u64>)> {
        if let Some(es) = memo.as_deref_mut().and_then(|m| m.covering(0, lo, hi)) {
            let es = es
                .into_iter()
                .filter(|e| e.key >= lo && e.key <= hi && !e.is_fence())
                .collect();
            return Ok((es, None));
        }
        let cap = self.p.cap;
        let head = self.c0.clone();
        let mut out = Vec::new();
        // At most `max_leaves` leaves per batch (`Head::walk_range`): an open-ended range
        // must not decode all of C0 for every batch.
        let cut = head.walk_range(&mut self.pager, cap, lo, max_leaves, |pid, es| {
            if let Some(m) = memo.as_deref_mut() {
                m.keep(0, pid, &es);
            }
            for e in es {
                if e.key > hi {
                    return Ok(true);
                }
                if e.key >= lo && !e.is_fence() {
                    out.push(e);
                }
            }
            Ok(false)
        })?;
        if let Some(cut) = cut {
            out.retain(|e| e.key <= cut);
        }
        Ok((out, cut))
    }

    /// One batch of a range scan: C0's entries of the range and at most `io_unit` leaves
    /// of each component (from a descent to `lo`; only the leaves that may hold keys up to
    /// `hi`; past the pool, except one leaf of a component the pool holds; an open-ended
    /// range `lo..` reads RANGE_RAMP_PAGES first, then twice as many per batch, as the
    /// caller may stop early; C0's leaves likewise), cut at the smallest last key read of a
    /// source that was not read to the end of the range, so that every source is complete
    /// up to the cut. With a memo
    /// (`scan_many`): slot 0 keeps C0's last leaf, slot 1 + i component i's.
    pub(super) fn scan_batch(
        &mut self,
        cur: &mut RangeCursor,
        out: &mut Vec<(u64, u64)>,
        mut memo: Option<&mut PageMemo>,
    ) -> Result<()> {
        let Some((lo, hi)) = cur.remaining() else {
            return Ok(());
        };
        let cap = self.p.cap;
        let mut batch_hi = hi;
        let unit = cur.ramp(RANGE_RAMP_PAGES, self.p.io_unit);
        // C0's leaves span the components' leaves as a component's leaves do: a batch
        // walks C0's share of the largest component's `unit` leaves, plus two for the ends.
        let largest = self.components.iter().flatten().map(|c| c.leaves).max();
        let c0_leaves = largest.map_or(u64::MAX, |l| {
            (unit.saturating_mul(self.c0.pages))
                .div_ceil(l.max(1))
                .saturating_add(2)
        });
        let (c0, c0_cut) = self.c0_range(lo, hi, c0_leaves, memo.as_deref_mut())?;
        if let Some(cut) = c0_cut {
            batch_hi = batch_hi.min(cut);
        }
        let mut sources = vec![Source {
            level: 0,
            entries: c0,
        }];
        // The point lookup's rule (Eq. 10): a component the pool holds is read through it
        // when the batch needs one leaf there, so short scans (the many small key
        // intervals of a moving-object query) find its leaves cached; longer spans go past
        // the pool in one request.
        let frames = self.pager.pool_frames();
        let mut above = self.c0.pages;
        let mut comps = Vec::new();
        for (i, c) in self.components.iter().enumerate() {
            let Some(c) = *c else { continue };
            comps.push((i + 1, c, above < frames));
            above += c.pages;
        }
        // The largest (oldest) component first: its `unit` leaves decide where the batch
        // ends, and the smaller ones then read only up to there (their `unit` leaves span
        // far more keys). The sources are put back newest first below.
        for &(slot, c, cached) in comps.iter().rev() {
            let c = &c;
            if self.spanned_by_newer(slot, lo, hi) {
                continue;
            }
            // A range inside the leaf this component's last range ended in: no descent.
            if let Some(es) = memo.as_deref_mut().and_then(|m| m.covering(slot, lo, hi)) {
                sources.push(Source {
                    level: slot,
                    entries: es
                        .into_iter()
                        .filter(|e| e.key >= lo && e.key <= hi)
                        .collect(),
                });
                continue;
            }
            let (mut first, last) = component::leaf_span(&mut self.pager, cap, c, lo, batch_hi)?;
            loop {
                let n = unit.min(last - first + 1);
                // Within one `scan_many`, a leaf the previous range ended in is not read again.
                let kept = memo.as_deref_mut().and_then(|m| m.get(slot, first));
                let pages = match kept {
                    Some(es) if n == 1 => vec![es],
                    Some(es) => {
                        let mut v = vec![es];
                        v.extend(component::read_leaves(
                            &mut self.pager,
                            cap,
                            c,
                            first + 1,
                            n - 1,
                        )?);
                        v
                    }
                    None if n == 1 && cached => {
                        vec![component::read_leaf_cached(&mut self.pager, cap, c, first)?]
                    }
                    None => component::read_leaves(&mut self.pager, cap, c, first, n)?,
                };
                if let (Some(m), Some(es)) = (memo.as_deref_mut(), pages.last()) {
                    m.keep(slot, first + n - 1, es);
                }
                let last_key = pages.last().and_then(|p| p.last()).map_or(lo, |e| e.key);
                let more = first + n <= last;
                if last_key < lo && more {
                    // The range begins after these leaves: read on.
                    first += n;
                    continue;
                }
                if more && last_key < batch_hi {
                    batch_hi = last_key;
                }
                sources.push(Source {
                    level: slot,
                    entries: pages
                        .into_iter()
                        .flatten()
                        .filter(|e| e.key >= lo && e.key <= hi)
                        .collect(),
                });
                break;
            }
        }
        // Newest first: the first source holding a key decides it.
        sources.sort_by_key(|s| s.level);
        let tombs: Vec<&Tombs> = self.all_tombs().collect();
        merge_newest_first(&sources, &tombs, batch_hi, out);
        cur.next = if batch_hi >= hi {
            None
        } else {
            Some(batch_hi + 1)
        };
        Ok(())
    }
}

/// Merge the sources of a batch (newest level first, each sorted by key, within the range)
/// in one streaming pass, up to `hi`: the first source holding a key decides it, unless the
/// range tombstones of a newer level cover the key (`tombs[l]`: level l's, C0 first; a level
/// without a source may hold some). Tombstones and hidden keys are left out; the rest goes
/// to `out` in key order. With a handful of levels, picking the least head among them costs
/// less than a map of every entry.
fn merge_newest_first(sources: &[Source], tombs: &[&Tombs], hi: u64, out: &mut Vec<(u64, u64)>) {
    let mut at = vec![0usize; sources.len()];
    // Keys go up, so each level's cursor only moves forward.
    let mut covers: Vec<_> = tombs.iter().map(|t| t.cursor()).collect();
    loop {
        // The least key left; on a tie the newest source (the first) wins.
        let mut best: Option<(u64, usize)> = None;
        for (i, s) in sources.iter().enumerate() {
            if let Some(e) = s.entries.get(at[i]) {
                if e.key <= hi && best.map_or(true, |(k, _)| e.key < k) {
                    best = Some((e.key, i));
                }
            }
        }
        let Some((key, win)) = best else {
            return;
        };
        let e = sources[win].entries[at[win]];
        let newer = sources[win].level.min(covers.len());
        let hidden = covers[..newer].iter_mut().any(|c| c.covers(key));
        if e.kind != TOMBSTONE && !hidden {
            out.push((e.key, e.val));
        }
        for (i, s) in sources.iter().enumerate() {
            while s.entries.get(at[i]).is_some_and(|e| e.key == key) {
                at[i] += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    proptest! {
        /// The streaming merge equals the point search's rule applied key by key: levels
        /// newest first, a level's own entry decides first, then its range tombstones.
        /// Some levels hold range tombstones but no source (an empty component).
        #[test]
        fn merge_newest_first_applies_the_search_rule_to_every_key(
            raw in proptest::collection::vec(
                (
                    proptest::option::of(proptest::collection::btree_map(
                        0u64..80,
                        (any::<u64>(), any::<bool>()),
                        0..25,
                    )),
                    proptest::collection::vec((0u64..80, 0u64..15), 0..4),
                ),
                1..6,
            ),
            hi in 0u64..90,
        ) {
            let mut sources = Vec::new();
            let mut tombs = Vec::new();
            let mut levels: Vec<Option<BTreeMap<u64, Entry>>> = Vec::new();
            for (level, (entries, ranges)) in raw.iter().enumerate() {
                let mut t = Tombs::new();
                for &(lo, len) in ranges {
                    t.add(lo, lo + len);
                }
                tombs.push(t);
                let es: Option<BTreeMap<u64, Entry>> = entries.as_ref().map(|m| {
                    m.iter()
                        .map(|(&k, &(v, normal))| {
                            let kind = if normal { Kind::Normal } else { TOMBSTONE };
                            (k, Entry::new(k, v, kind))
                        })
                        .collect()
                });
                if let Some(es) = &es {
                    sources.push(Source { level, entries: es.values().copied().collect() });
                }
                levels.push(es);
            }
            let mut want = Vec::new();
            for key in 0..=hi {
                for (es, t) in levels.iter().zip(&tombs) {
                    if let Some(e) = es.as_ref().and_then(|m| m.get(&key)) {
                        if e.kind == Kind::Normal {
                            want.push((key, e.val));
                        }
                        break;
                    }
                    if t.covers(key) {
                        break;
                    }
                }
            }
            let refs: Vec<&Tombs> = tombs.iter().collect();
            let mut got = Vec::new();
            merge_newest_first(&sources, &refs, hi, &mut got);
            prop_assert_eq!(got, want);
        }
    }
}
