//! Ranges on the device (thesis §5.1): a range is a sorted run of tuples stored in
//! contiguous checksummed pages, written once into fresh space and never changed in place.
//!
//! Range page format:
//! ```text
//! offset  size  field
//! 0       16    page envelope (crate::page): crc32c, page id, kind KIND_RANGE
//! 16      4     tuples n in this page (1..=f)
//! 20      4     index of this page in its range (0-based)
//! 24      4     pages of the range
//! 28      4     tuples of the range
//! 32      16*n  tuples: key u64, value u64, keys strictly increasing
//! ```
//! A range of c tuples fills ⌈c/f⌉ pages, f per page and the rest in the last
//! (f = (page size − 32) / 16). The range index holds where a range is
//! ([`RangeEntry`]); every field of the page is checked against it when the range is read.
//!
//! [`RangeWriter`] packs new ranges into multi-page writes of at most `io_unit` pages
//! (§5.6, "batching range writes"), never splitting a range across two writes; each write
//! is one fresh extent. [`read_ranges`] reads ranges past the buffer pool, ranges that are
//! contiguous on the device in one request and the rest in one psync batch (§5.6,
//! "batching range reads").

use crate::durable::Pager;
use crate::error::{Error, Result};
use crate::io::{AlignedBuf, Extent, PageId};
use crate::page::{self, read_u32, read_u64, write_u32, write_u64, DATA_FILE};

/// Page kind of range pages.
pub const KIND_RANGE: u16 = 0x31;

const N: usize = page::HEADER;
const INDEX: usize = page::HEADER + 4;
const PAGES: usize = page::HEADER + 8;
const COUNT: usize = page::HEADER + 12;
const TUPLES: usize = page::HEADER + 16;
const TUPLE: usize = 16;

/// Tuples per range page (f).
pub fn per_page(page_size: usize) -> usize {
    (page_size - TUPLES) / TUPLE
}

/// Pages of a range of `count` tuples.
pub fn pages_for(count: usize, page_size: usize) -> u64 {
    count.div_ceil(per_page(page_size)) as u64
}

/// The tuples of one range, in key order.
pub type Tuples = Vec<(u64, u64)>;

/// Where a range is: its range-index entry without k1 (the key it is indexed on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeEntry {
    /// The largest key of the range (k2).
    pub k2: u64,
    /// First page.
    pub start: PageId,
    /// Pages of the range.
    pub pages: u32,
    /// Tuples of the range.
    pub count: u32,
}

impl RangeEntry {
    pub fn extent(&self) -> Extent {
        Extent {
            start: self.start,
            len: u64::from(self.pages),
        }
    }
}

/// Encode `tuples` (sorted, distinct, at least one) as the pages of one range into `buf`
/// (exactly its pages); pages are sealed later, when their address is known.
fn encode(tuples: &[(u64, u64)], buf: &mut [u8], page_size: usize) {
    let f = per_page(page_size);
    let pages = tuples.len().div_ceil(f);
    for (i, (chunk, page_buf)) in tuples.chunks(f).zip(buf.chunks_mut(page_size)).enumerate() {
        page_buf.fill(0);
        page::set_kind(page_buf, KIND_RANGE);
        write_u32(page_buf, N, chunk.len() as u32);
        write_u32(page_buf, INDEX, i as u32);
        write_u32(page_buf, PAGES, pages as u32);
        write_u32(page_buf, COUNT, tuples.len() as u32);
        for (j, &(k, v)) in chunk.iter().enumerate() {
            write_u64(page_buf, TUPLES + j * TUPLE, k);
            write_u64(page_buf, TUPLES + j * TUPLE + 8, v);
        }
    }
}

/// Decode the range `k1 → e` from its pages in `buf` (exactly `e.pages` pages), checking
/// every page against the entry: checksum, page id, kind, position, counts, key order and
/// the bounds k1 and k2. Appends the tuples to `out`.
pub fn decode(k1: u64, e: &RangeEntry, buf: &[u8], out: &mut Vec<(u64, u64)>) -> Result<()> {
    let ps = buf.len() / e.pages.max(1) as usize;
    let first = out.len();
    let mut prev: Option<u64> = None;
    for (i, b) in buf.chunks(ps).enumerate() {
        let pid = e.start + i as u64;
        page::verify(pid, b)?;
        let bad = |what: String| Error::corruption(DATA_FILE, Some(pid), what);
        if page::kind(b) != KIND_RANGE {
            return Err(bad(format!(
                "page kind {} is not a range page",
                page::kind(b)
            )));
        }
        let n = read_u32(b, N) as usize;
        if read_u32(b, INDEX) as usize != i
            || read_u32(b, PAGES) != e.pages
            || read_u32(b, COUNT) != e.count
            || n == 0
            || n > per_page(ps)
        {
            return Err(bad(format!(
                "range page header (n {n}, page {} of {}, count {}) disagrees with the range \
                 index (page {i} of {}, count {})",
                read_u32(b, INDEX),
                read_u32(b, PAGES),
                read_u32(b, COUNT),
                e.pages,
                e.count
            )));
        }
        for j in 0..n {
            let k = read_u64(b, TUPLES + j * TUPLE);
            if prev.is_some_and(|p| p >= k) {
                return Err(bad("range keys out of order".into()));
            }
            prev = Some(k);
            out.push((k, read_u64(b, TUPLES + j * TUPLE + 8)));
        }
    }
    let got = &out[first..];
    if got.len() != e.count as usize
        || got.first().map(|t| t.0) != Some(k1)
        || got.last().map(|t| t.0) != Some(e.k2)
    {
        return Err(Error::corruption(
            DATA_FILE,
            Some(e.start),
            format!(
                "range holds {} tuples from {:?} to {:?}, the range index says {} from {k1} to {}",
                got.len(),
                got.first().map(|t| t.0),
                got.last().map(|t| t.0),
                e.count,
                e.k2
            ),
        ));
    }
    Ok(())
}

/// The key and value of tuple `j` of a range page, and the page's tuple count (point
/// searches through the buffer pool).
pub fn page_tuples(b: &[u8]) -> usize {
    (read_u32(b, N) as usize).min(per_page(b.len()))
}

/// Tuple `j` of a range page.
pub fn page_tuple(b: &[u8], j: usize) -> (u64, u64) {
    (
        read_u64(b, TUPLES + j * TUPLE),
        read_u64(b, TUPLES + j * TUPLE + 8),
    )
}

/// Read the ranges `(k1, entry)` past the buffer pool and decode them, in the order given.
/// With `batch`, ranges that follow each other on the device are read in one request
/// (up to `io_unit` pages, or one range if larger) and all requests are submitted as one
/// psync batch; without it, one request per range, one after the other (Alg. 4 and 5 as
/// printed). Returns the tuples of each range and the number of requests.
pub fn read_ranges(
    pager: &mut Pager,
    ranges: &[(u64, RangeEntry)],
    batch: bool,
    io_unit: u64,
) -> Result<(Vec<Tuples>, u64)> {
    let runs = runs_of(ranges, batch, io_unit);
    let plain: Vec<crate::io::psync::Run> = runs.iter().map(|r| (r.0, r.1)).collect();
    let bufs: Vec<AlignedBuf> = if batch {
        crate::io::psync::read_runs(pager.device(), &plain, usize::MAX)?
    } else {
        let mut v = Vec::with_capacity(plain.len());
        for run in &plain {
            v.extend(crate::io::psync::read_runs(pager.device(), &[*run], 1)?);
        }
        v
    };
    let out = decode_runs(ranges, &runs, &bufs, pager.page_size())?;
    Ok((out, runs.len() as u64))
}

/// [`read_ranges`] with `batch` from any of many reading threads at once
/// ([`Pager::read_run_shared`]): ranges that follow each other on the device in one request
/// as there, but the requests one after the other (the shared path has no psync batch).
/// Range pages are never dirty in the pool and are written only by writes, which hold the
/// engine to themselves, so reading them past the pool is safe.
pub fn read_ranges_shared(
    pager: &Pager,
    ranges: &[(u64, RangeEntry)],
    io_unit: u64,
) -> Result<Vec<Tuples>> {
    let ps = pager.page_size();
    let runs = runs_of(ranges, true, io_unit);
    let mut bufs = Vec::with_capacity(runs.len());
    for &(start, pages, _) in &runs {
        let mut buf = AlignedBuf::zeroed(pages as usize * ps);
        pager.read_run_shared(start, &mut buf)?;
        bufs.push(buf);
    }
    decode_runs(ranges, &runs, &bufs, ps)
}

/// Runs of `ranges` to read: (first page, pages, ranges in it); with `batch`, ranges that
/// follow each other on the device share a run of at most `io_unit` pages.
fn runs_of(ranges: &[(u64, RangeEntry)], batch: bool, io_unit: u64) -> Vec<(PageId, u64, usize)> {
    let mut runs: Vec<(PageId, u64, usize)> = Vec::new();
    for (_, e) in ranges {
        let pages = u64::from(e.pages);
        match runs.last_mut() {
            Some(r) if batch && r.0 + r.1 == e.start && r.1 + pages <= io_unit => {
                r.1 += pages;
                r.2 += 1;
            }
            _ => runs.push((e.start, pages, 1)),
        }
    }
    runs
}

/// The tuples of each of `ranges`, decoded from the buffers of their `runs`.
fn decode_runs(
    ranges: &[(u64, RangeEntry)],
    runs: &[(PageId, u64, usize)],
    bufs: &[AlignedBuf],
    ps: usize,
) -> Result<Vec<Tuples>> {
    let mut out = Vec::with_capacity(ranges.len());
    let mut it = ranges.iter();
    for (run, buf) in runs.iter().zip(bufs) {
        let mut off = 0usize;
        for _ in 0..run.2 {
            let Some((k1, e)) = it.next() else { break };
            let len = e.pages as usize * ps;
            let mut tuples = Vec::with_capacity(e.count as usize);
            decode(*k1, e, &buf[off..off + len], &mut tuples)?;
            off += len;
            out.push(tuples);
        }
    }
    Ok(out)
}

/// Packs new ranges into writes of at most `io_unit` pages (one range alone when it is
/// larger), each write one fresh extent (§5.6, "batching range writes"); without `batch`,
/// every range is its own write. Ranges become readable (their entries are returned) when
/// the write holding them is done.
pub struct RangeWriter {
    page_size: usize,
    io_unit: u64,
    batch: bool,
    buf: AlignedBuf,
    /// Pages used in `buf`.
    pages: u64,
    /// Ranges in `buf`: k1, k2, first page within `buf`, pages, count.
    pending: Vec<(u64, u64, u64, u32, u32)>,
    /// Writes done.
    pub writes: u64,
    /// Ranges written.
    pub ranges: u64,
    /// Pages written.
    pub pages_written: u64,
}

impl RangeWriter {
    pub fn new(page_size: usize, io_unit: u64, batch: bool) -> RangeWriter {
        RangeWriter {
            page_size,
            io_unit: io_unit.max(1),
            batch,
            buf: AlignedBuf::zeroed(0),
            pages: 0,
            pending: Vec::new(),
            writes: 0,
            ranges: 0,
            pages_written: 0,
        }
    }

    /// Add one range (sorted, distinct, at least one tuple). Returns the entries of the
    /// ranges a write made durable-to-be (written, not yet synced) on the way.
    pub fn push(
        &mut self,
        pager: &mut Pager,
        tuples: &[(u64, u64)],
    ) -> Result<Vec<(u64, RangeEntry)>> {
        debug_assert!(!tuples.is_empty());
        let n = pages_for(tuples.len(), self.page_size);
        let mut done = Vec::new();
        if self.pages > 0 && (!self.batch || self.pages + n > self.io_unit) {
            done = self.flush(pager)?;
        }
        let need = ((self.pages + n) as usize) * self.page_size;
        if self.buf.len() < need {
            let cap = (self.io_unit.max(self.pages + n) as usize) * self.page_size;
            let mut bigger = AlignedBuf::zeroed(cap);
            let used = self.pages as usize * self.page_size;
            bigger[..used].copy_from_slice(&self.buf[..used]);
            self.buf = bigger;
        }
        let off = self.pages as usize * self.page_size;
        encode(
            tuples,
            &mut self.buf[off..off + n as usize * self.page_size],
            self.page_size,
        );
        self.pending.push((
            tuples[0].0,
            tuples[tuples.len() - 1].0,
            self.pages,
            n as u32,
            tuples.len() as u32,
        ));
        self.pages += n;
        if !self.batch {
            done.extend(self.flush(pager)?);
        }
        Ok(done)
    }

    /// Write the pending ranges as one request into a fresh extent; returns their entries.
    pub fn flush(&mut self, pager: &mut Pager) -> Result<Vec<(u64, RangeEntry)>> {
        if self.pages == 0 {
            return Ok(Vec::new());
        }
        let ext = pager.alloc_extent(self.pages)?;
        let len = self.pages as usize * self.page_size;
        for (i, b) in self.buf[..len].chunks_mut(self.page_size).enumerate() {
            page::seal(ext.start + i as u64, b);
        }
        pager.device().write(ext.start, &self.buf[..len])?;
        self.writes += 1;
        self.pages_written += self.pages;
        self.ranges += self.pending.len() as u64;
        self.pages = 0;
        Ok(self
            .pending
            .drain(..)
            .map(|(k1, k2, off, pages, count)| {
                (
                    k1,
                    RangeEntry {
                        k2,
                        start: ext.start + off,
                        pages,
                        count,
                    },
                )
            })
            .collect())
    }
}

#[cfg(test)]
mod hostile_tests {
    use super::*;

    /// Hostile bytes (crate::hostile): a damaged range (two pages) decodes or is
    /// corruption, against its range-index entry.
    #[test]
    fn hostile_range_pages_decode_or_are_corruption() {
        let f = per_page(512);
        let tuples: Vec<(u64, u64)> = (0..f as u64 + 3).map(|k| (10 + k * 3, k)).collect();
        let e = RangeEntry {
            k2: tuples[tuples.len() - 1].0,
            start: 40,
            pages: 2,
            count: tuples.len() as u32,
        };
        let mut valid = vec![0u8; 1024];
        encode(&tuples, &mut valid, 512);
        for (i, p) in valid.chunks_mut(512).enumerate() {
            page::seal(40 + i as u64, p);
        }
        crate::hostile::fuzz_page("bulk range", 40, &valid, |b| {
            let mut b = b.to_vec();
            // Seal the second page too when the first was forged.
            if page::verify(40, &b[..512]).is_ok() {
                page::seal(41, &mut b[512..]);
            }
            let mut out = Vec::new();
            crate::error::ok_or_corruption(decode(10, &e, &b, &mut out))
        });
    }
}
