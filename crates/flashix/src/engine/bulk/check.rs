//! `check_integrity`: the invariants of the module doc, read from the device.

use super::range::read_ranges;
use super::BulkIndex;
use crate::error::{Error, Result};
use crate::io::PageId;
use crate::page::DATA_FILE;
use std::collections::HashSet;

impl BulkIndex {
    pub(super) fn check(&mut self) -> Result<()> {
        let m = self.p.m as u64;
        let bad = |page: Option<PageId>, what: String| Error::corruption(DATA_FILE, page, what);
        let ranges: Vec<_> = self.index.iter().collect();
        // 1. Sizes.
        for &(k1, e) in &ranges {
            let c = u64::from(e.count);
            let alone = ranges.len() == 1 && c >= 1 && c < m;
            if !alone && !(m..2 * m).contains(&c) {
                return Err(bad(
                    Some(e.start),
                    format!(
                        "range [{k1}, {}] holds {c} tuples, not {m}..{}",
                        e.k2,
                        2 * m - 1
                    ),
                ));
            }
            if u64::from(e.pages)
                != super::range::pages_for(e.count as usize, self.pager.page_size())
            {
                return Err(bad(
                    Some(e.start),
                    format!("range of {c} tuples in {} pages", e.pages),
                ));
            }
        }
        // 2. Order and disjointness.
        for w in ranges.windows(2) {
            let ((a1, a), (b1, _)) = (w[0], w[1]);
            if a1 > a.k2 || a.k2 >= b1 {
                return Err(bad(
                    Some(a.start),
                    format!(
                        "range [{a1}, {}] overlaps or precedes the range from {b1}",
                        a.k2
                    ),
                ));
            }
        }
        // 3. Contents (decode checks keys, counts and headers against the index).
        for chunk in ranges.chunks(16) {
            read_ranges(&mut self.pager, chunk, true, self.p.io_unit)?;
        }
        // 4. No page shared, none free.
        let mut seen: HashSet<PageId> = HashSet::new();
        let extents = ranges
            .iter()
            .map(|(_, e)| e.extent())
            .chain(self.index_extent);
        for ext in extents {
            for pid in ext.start..ext.end() {
                if !seen.insert(pid) {
                    return Err(bad(Some(pid), "page belongs to two ranges".into()));
                }
                if self.pager.allocator().is_free(pid) {
                    return Err(bad(Some(pid), "live page is free in the allocator".into()));
                }
            }
        }
        // 5. The differential layer within its capacity.
        if self.p.delta_cap > 0 && self.delta.len() > self.p.delta_cap {
            return Err(Error::corruption(
                "memory",
                None,
                format!(
                    "differential layer holds {} entries, capacity {}",
                    self.delta.len(),
                    self.p.delta_cap
                ),
            ));
        }
        Ok(())
    }
}
