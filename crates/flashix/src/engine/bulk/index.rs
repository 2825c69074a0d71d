//! The range index (thesis §5.1): `k1 → (k2, first page, pages, count)` for every range,
//! in memory, with the search "for the nearest neighbour to a key in either direction"
//! the algorithms need. It is persisted at each checkpoint as pages of its own extent,
//! which the manifest names (not in the manifest's JSON: it grows with the index).
//!
//! Range-index page format:
//! ```text
//! offset  size  field
//! 0       16    page envelope (crate::page): crc32c, page id, kind KIND_RANGE_INDEX
//! 16      4     entries n in this page
//! 20      4     index of this page in the extent (0-based)
//! 24      4     pages of the extent
//! 28      4     reserved (0)
//! 32      32*n  entries: k1 u64, k2 u64, first page u64, pages u32, count u32
//! ```

use super::range::RangeEntry;
use crate::durable::Pager;
use crate::error::{Error, Result};
use crate::io::{AlignedBuf, Extent};
use crate::page::{self, read_u32, read_u64, write_u32, write_u64, DATA_FILE};
use std::collections::BTreeMap;
use std::ops::Bound;

/// Page kind of range-index pages.
pub const KIND_RANGE_INDEX: u16 = 0x32;

/// Memory charged per range-index entry: the entry (32 bytes) and the ordered map's
/// share of node overhead.
pub const ENTRY_MEMORY: u64 = 64;

const N: usize = page::HEADER;
const INDEX: usize = page::HEADER + 4;
const PAGES: usize = page::HEADER + 8;
const ENTRIES: usize = page::HEADER + 16;
const ENTRY: usize = 32;

fn per_page(page_size: usize) -> usize {
    (page_size - ENTRIES) / ENTRY
}

/// Add the entries of range-index page `pid` (bytes `b`), page `i` of an extent of `len`
/// pages, to `map`, after checking its envelope and header.
fn decode_page(
    pid: u64,
    b: &[u8],
    i: usize,
    len: usize,
    map: &mut BTreeMap<u64, RangeEntry>,
) -> Result<()> {
    page::verify(pid, b)?;
    let n = read_u32(b, N) as usize;
    if page::kind(b) != KIND_RANGE_INDEX
        || read_u32(b, INDEX) as usize != i
        || read_u32(b, PAGES) as usize != len
        || n > per_page(b.len())
    {
        return Err(Error::corruption(
            DATA_FILE,
            Some(pid),
            "range-index page header disagrees with its extent",
        ));
    }
    for j in 0..n {
        let o = ENTRIES + j * ENTRY;
        let k1 = read_u64(b, o);
        let e = RangeEntry {
            k2: read_u64(b, o + 8),
            start: read_u64(b, o + 16),
            pages: read_u32(b, o + 24),
            count: read_u32(b, o + 28),
        };
        // What later code relies on: a range of keys k1..=k2 in pages that exist.
        let end = e.start.checked_add(u64::from(e.pages));
        if e.k2 < k1 || e.pages == 0 || end.map_or(true, |end| end > page::MAX_PAGES) {
            return Err(Error::corruption(
                DATA_FILE,
                Some(pid),
                format!(
                    "range-index entry {j}: keys {k1}..={}, {} pages at {}",
                    e.k2, e.pages, e.start
                ),
            ));
        }
        map.insert(k1, e);
    }
    Ok(())
}

/// The ranges, ordered by k1.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeIndex {
    map: BTreeMap<u64, RangeEntry>,
}

impl RangeIndex {
    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn insert(&mut self, k1: u64, e: RangeEntry) {
        self.map.insert(k1, e);
    }

    pub fn remove(&mut self, k1: u64) -> Option<RangeEntry> {
        self.map.remove(&k1)
    }

    /// The range with the greatest k1 ≤ `key`.
    pub fn floor(&self, key: u64) -> Option<(u64, RangeEntry)> {
        self.map.range(..=key).next_back().map(|(&k, &e)| (k, e))
    }

    /// The range with the smallest k1 > `key`.
    pub fn above(&self, key: u64) -> Option<(u64, RangeEntry)> {
        self.map
            .range((Bound::Excluded(key), Bound::Unbounded))
            .next()
            .map(|(&k, &e)| (k, e))
    }

    /// The range with the greatest k1 < `key`.
    pub fn below(&self, key: u64) -> Option<(u64, RangeEntry)> {
        self.map.range(..key).next_back().map(|(&k, &e)| (k, e))
    }

    /// The range whose update interval (Definition 5.1: `(k2 of the previous range, k2]`,
    /// the first range's from −∞) holds `key`; the last range for a key above every range.
    /// `None` only when the index is empty.
    pub fn route(&self, key: u64) -> Option<(u64, RangeEntry)> {
        match self.floor(key) {
            Some((k1, e)) if e.k2 >= key => Some((k1, e)),
            Some(last) => Some(self.above(key).unwrap_or(last)),
            None => self.first(),
        }
    }

    pub fn first(&self) -> Option<(u64, RangeEntry)> {
        self.map.iter().next().map(|(&k, &e)| (k, e))
    }

    /// Every range in key order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, RangeEntry)> + '_ {
        self.map.iter().map(|(&k, &e)| (k, e))
    }

    /// The ranges with k1 in `from..` in key order.
    pub fn iter_from(&self, from: u64) -> impl Iterator<Item = (u64, RangeEntry)> + '_ {
        self.map.range(from..).map(|(&k, &e)| (k, e))
    }

    /// Tuples in all ranges.
    pub fn tuples(&self) -> u64 {
        self.map.values().map(|e| u64::from(e.count)).sum()
    }

    /// Memory charged for the index.
    pub fn memory_bytes(&self) -> u64 {
        self.map.len() as u64 * ENTRY_MEMORY
    }

    /// Write the index into a fresh extent through the device (past the pool); `None`
    /// when it is empty.
    pub fn save(&self, pager: &mut Pager) -> Result<Option<Extent>> {
        if self.map.is_empty() {
            return Ok(None);
        }
        let ps = pager.page_size();
        let f = per_page(ps);
        let pages = self.map.len().div_ceil(f);
        let ext = pager.alloc_extent(pages as u64)?;
        let mut buf = AlignedBuf::zeroed(pages * ps);
        let entries: Vec<(u64, RangeEntry)> = self.iter().collect();
        for (i, (chunk, b)) in entries.chunks(f).zip(buf.chunks_mut(ps)).enumerate() {
            page::set_kind(b, KIND_RANGE_INDEX);
            write_u32(b, N, chunk.len() as u32);
            write_u32(b, INDEX, i as u32);
            write_u32(b, PAGES, pages as u32);
            for (j, (k1, e)) in chunk.iter().enumerate() {
                let o = ENTRIES + j * ENTRY;
                write_u64(b, o, *k1);
                write_u64(b, o + 8, e.k2);
                write_u64(b, o + 16, e.start);
                write_u32(b, o + 24, e.pages);
                write_u32(b, o + 28, e.count);
            }
            page::seal(ext.start + i as u64, b);
        }
        pager.device().write(ext.start, &buf)?;
        Ok(Some(ext))
    }

    /// Read an index saved by [`RangeIndex::save`] in `ext` holding `ranges` entries.
    pub fn load(pager: &mut Pager, ext: Option<Extent>, ranges: u64) -> Result<RangeIndex> {
        let mut idx = RangeIndex::default();
        let Some(ext) = ext else {
            if ranges != 0 {
                return Err(Error::corruption(
                    "MANIFEST",
                    None,
                    format!("bulk index state names {ranges} ranges and no range index"),
                ));
            }
            return Ok(idx);
        };
        let ps = pager.page_size();
        let len = usize::try_from(ext.len)
            .ok()
            .filter(|&l| l > 0 && l <= (1 << 24))
            .ok_or_else(|| {
                Error::corruption("MANIFEST", None, "range index extent of a bad length")
            })?;
        let mut buf = AlignedBuf::zeroed(len * ps);
        pager.device().read(ext.start, &mut buf)?;
        for (i, b) in buf.chunks(ps).enumerate() {
            decode_page(ext.start + i as u64, b, i, len, &mut idx.map)?;
        }
        if idx.map.len() as u64 != ranges {
            return Err(Error::corruption(
                DATA_FILE,
                Some(ext.start),
                format!(
                    "range index holds {} ranges, the manifest says {ranges}",
                    idx.map.len()
                ),
            ));
        }
        Ok(idx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(k2: u64) -> RangeEntry {
        RangeEntry {
            k2,
            start: 0,
            pages: 1,
            count: 1,
        }
    }

    /// Hostile bytes (crate::hostile): a damaged range-index page decodes into entries of
    /// keys k1 <= k2 in pages that exist, or is corruption naming the page.
    #[test]
    fn hostile_range_index_pages_decode_or_are_corruption() {
        let mut valid = vec![0u8; 512];
        page::set_kind(&mut valid, KIND_RANGE_INDEX);
        let n = per_page(512);
        write_u32(&mut valid, N, n as u32);
        write_u32(&mut valid, INDEX, 1);
        write_u32(&mut valid, PAGES, 3);
        for j in 0..n {
            let o = ENTRIES + j * ENTRY;
            write_u64(&mut valid, o, j as u64 * 100);
            write_u64(&mut valid, o + 8, j as u64 * 100 + 50);
            write_u64(&mut valid, o + 16, 1000 + j as u64 * 4);
            write_u32(&mut valid, o + 24, 4);
            write_u32(&mut valid, o + 28, 60);
        }
        page::seal(7, &mut valid);
        crate::hostile::fuzz_page("bulk range index", 7, &valid, |b| {
            let mut map = BTreeMap::new();
            let r = decode_page(7, b, 1, 3, &mut map);
            if r.is_ok() {
                if map.len() > n {
                    return Err(format!("{} entries in a page", map.len()));
                }
                if let Some((k1, e)) = map.iter().find(|(&k1, e)| e.k2 < k1 || e.pages == 0) {
                    return Err(format!("entry {k1}: {e:?} accepted"));
                }
            }
            crate::error::ok_or_corruption(r)
        });
    }

    /// Definition 5.1 routing, and the cases Alg. 5 gets wrong (notes §1.11, erratum 1):
    /// a key in a gap goes to the next range, a key below the first range to the first, a
    /// key above the last to the last.
    #[test]
    fn routing_follows_the_update_intervals() {
        let mut idx = RangeIndex::default();
        assert_eq!(idx.route(5), None);
        idx.insert(10, e(20));
        idx.insert(30, e(40));
        idx.insert(50, e(60));
        let at = |k| idx.route(k).map(|r| r.0);
        assert_eq!(at(0), Some(10), "below the first range");
        assert_eq!(at(10), Some(10));
        assert_eq!(at(20), Some(10));
        assert_eq!(at(21), Some(30), "in the gap (20, 30): the next range");
        assert_eq!(at(29), Some(30));
        assert_eq!(at(40), Some(30));
        assert_eq!(at(45), Some(50));
        assert_eq!(at(60), Some(50));
        assert_eq!(at(61), Some(50), "above the last range");
        assert_eq!(at(u64::MAX), Some(50));
    }
}
