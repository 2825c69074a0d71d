//! Point and range search: C0, then the components newest first; the newest entry of a key
//! decides, a tombstone meaning absent.

use super::component::{self, TOMBSTONE};
use super::Lsm;
use crate::error::Result;
use crate::kit::api::{RangeCursor, RANGE_RAMP_PAGES};
use crate::kit::sorted::entry::{Entry, Kind, NONE};
use crate::kit::sorted::head::Head;
use crate::kit::sorted::memo::PageMemo;
use std::collections::BTreeMap;

impl Lsm {
    /// The newest entry of `key`: C0 through the pool, then one descent per component.
    pub(super) fn lookup(&mut self, key: u64) -> Result<Option<u64>> {
        let f = self.c0.find(&mut self.pager, self.p.cap, key)?;
        let mut found = f.entry;
        if found.is_none() {
            // As the FD-tree's levels (§4 Eq. 10): a component's leaves are read through
            // the pool while C0 and the newer components leave room there, past it below.
            let frames = self.pager.pool_frames();
            let mut above = self.c0.pages;
            for c in self.components.clone().iter().flatten() {
                found = component::find(&mut self.pager, self.p.cap, c, key, above < frames)?;
                if found.is_some() {
                    break;
                }
                above += c.pages;
            }
        }
        Ok(found.filter(|e| e.kind == Kind::Normal).map(|e| e.val))
    }

    /// C0's index entries with key in [lo, hi] (at most |C0|). With a memo (slot 0), a
    /// range inside the C0 leaf read last needs no descent.
    fn c0_range(
        &mut self,
        lo: u64,
        hi: u64,
        mut memo: Option<&mut PageMemo>,
    ) -> Result<Vec<Entry>> {
        if let Some(es) = memo.as_deref_mut().and_then(|m| m.covering(0, lo, hi)) {
            return Ok(es
                .into_iter()
                .filter(|e| e.key >= lo && e.key <= hi && !e.is_fence())
                .collect());
        }
        let cap = self.p.cap;
        let head = self.c0.clone();
        let mut pid = head.leaf_for(&mut self.pager, cap, lo)?;
        let mut out = Vec::new();
        let mut steps = 0u64;
        while pid != NONE {
            steps += 1;
            if steps > head.pages {
                return Err(component::corrupt(
                    Some(pid),
                    "C0 leaf chain longer than C0",
                ));
            }
            let (es, link) = Head::leaf(&mut self.pager, cap, pid)?;
            if let Some(m) = memo.as_deref_mut() {
                m.keep(0, pid, &es);
            }
            for e in es {
                if e.key > hi {
                    return Ok(out);
                }
                if e.key >= lo && !e.is_fence() {
                    out.push(e);
                }
            }
            pid = link;
        }
        Ok(out)
    }

    /// One batch of a range scan: C0's entries of the range and at most `io_unit` leaves
    /// of each component (from a descent to `lo`; only the leaves that may hold keys up to
    /// `hi`; past the pool, except one leaf of a component the pool holds; an open-ended
    /// range `lo..` reads RANGE_RAMP_PAGES first, then 4x more per batch, as the caller may
    /// stop early), cut at the smallest last key read of a component that was not read to
    /// the end of the range, so that every source is complete up to the cut. With a memo
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
        let mut sources: Vec<Vec<Entry>> = vec![self.c0_range(lo, hi, memo.as_deref_mut())?];
        let unit = cur.ramp(RANGE_RAMP_PAGES, self.p.io_unit);
        // The point lookup's rule (Eq. 10): a component the pool holds is read through it
        // when the batch needs one leaf there, so short scans (the many small key
        // intervals of a moving-object query) find its leaves cached; longer spans go past
        // the pool in one request.
        let frames = self.pager.pool_frames();
        let mut above = self.c0.pages;
        for (i, c) in self.components.clone().iter().enumerate() {
            let Some(c) = c else { continue };
            let slot = i + 1;
            let cached = above < frames;
            above += c.pages;
            // A range inside the leaf this component's last range ended in: no descent.
            if let Some(es) = memo.as_deref_mut().and_then(|m| m.covering(slot, lo, hi)) {
                sources.push(
                    es.into_iter()
                        .filter(|e| e.key >= lo && e.key <= hi)
                        .collect(),
                );
                continue;
            }
            let (mut first, last) = component::leaf_span(&mut self.pager, cap, c, lo, hi)?;
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
                if more && last_key < hi {
                    batch_hi = batch_hi.min(last_key);
                }
                sources.push(
                    pages
                        .into_iter()
                        .flatten()
                        .filter(|e| e.key >= lo && e.key <= hi)
                        .collect(),
                );
                break;
            }
        }
        let mut merged: BTreeMap<u64, Entry> = BTreeMap::new();
        for src in sources {
            for e in src {
                if e.key <= batch_hi {
                    merged.entry(e.key).or_insert(e);
                }
            }
        }
        out.extend(
            merged
                .values()
                .filter(|e| e.kind != TOMBSTONE)
                .map(|e| (e.key, e.val)),
        );
        cur.next = if batch_hi >= hi {
            None
        } else {
            Some(batch_hi + 1)
        };
        Ok(())
    }
}
