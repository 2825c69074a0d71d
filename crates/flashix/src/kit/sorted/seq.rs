//! Sequential reading and writing of contiguous page ranges, `io_unit` pages per request
//! (the multi-page I/O of merges, FD-tree paper App. D), with the I/O overlapped with the
//! merge's CPU: a [`SeqReader`] starts reading its next request before it decodes
//! the current one, and a [`ChunkWriter`] starts writing a full request and fills the next
//! one while the device writes ([`crate::io::Device::start_read`], `start_write`). On a
//! device that serves requests at once (memory, simulated SSDs, fault injection) both
//! behave as plain synchronous I/O.
//!
//! Memory: two `io_unit` buffers per reader and per writer (the one in flight and the one
//! being decoded or filled), and a reader's one page of decoded entries.

use super::entry::Entry;
use crate::durable::background::{JobIo, Started};
use crate::error::Result;
use crate::io::{AlignedBuf, PageId};

/// A sequential reader of a contiguous page range of decoded entries, `io_unit` pages per
/// request. Shared by FD-tree runs and LSM components, which differ only in how a page
/// range is checked and decoded.
pub(crate) struct SeqReader {
    first: PageId,
    pages: u64,
    /// Pages requested so far (read, or in flight in `ahead`).
    next: u64,
    /// The entries of the page being taken (decoded a page at a time: a whole 512 KiB
    /// request decoded at once was 768 KiB of entries beside the two request buffers).
    buf: Vec<Entry>,
    pos: usize,
    pages_read: u64,
    /// The request read last: its first page, pages, bytes, and the pages decoded so far.
    cur: Option<(PageId, u64, AlignedBuf, u64)>,
    /// The request in flight: its first page, pages and ticket.
    ahead: Option<(PageId, u64, Started)>,
    /// A buffer to start the next request in.
    spare: Option<AlignedBuf>,
}

impl SeqReader {
    pub(crate) fn new(first: PageId, pages: u64) -> Self {
        SeqReader {
            first,
            pages,
            next: 0,
            buf: Vec::new(),
            pos: 0,
            pages_read: 0,
            cur: None,
            ahead: None,
            spare: None,
        }
    }

    /// Start reading the next request, if any pages are left.
    fn start_next(&mut self, io: &mut dyn JobIo, io_unit: u64) -> Result<()> {
        if self.next >= self.pages || self.ahead.is_some() {
            return Ok(());
        }
        let ps = io.page_size();
        let n = io_unit.max(1).min(self.pages - self.next);
        let len = ps * n as usize;
        let buf = match self.spare.take() {
            Some(b) if b.len() >= len => b,
            _ => AlignedBuf::zeroed(ps * io_unit.max(1).min(self.pages) as usize),
        };
        let first = self.first + self.next;
        let ticket = io.start_read(first, buf, len)?;
        self.ahead = Some((first, n, ticket));
        self.next += n;
        Ok(())
    }

    /// The next entry, or `None` at the end; `decode(pid, bytes, out)` checks page `pid`,
    /// read as `bytes`, and decodes its entries into `out` (empty; the reader's one
    /// buffer, reused page after page: a merge decodes each entry once, into place). The
    /// following request is in flight while the pages of the current one are decoded and
    /// taken.
    #[inline]
    pub(crate) fn peek(
        &mut self,
        io: &mut dyn JobIo,
        io_unit: u64,
        decode: impl Fn(PageId, &[u8], &mut Vec<Entry>) -> Result<()>,
    ) -> Result<Option<Entry>> {
        while self.pos >= self.buf.len() {
            let ps = io.page_size();
            match self.cur.take() {
                Some((first, n, raw, done)) if done < n => {
                    self.buf.clear();
                    let at = done as usize * ps;
                    let decoded = decode(first + done, &raw[at..at + ps], &mut self.buf);
                    self.cur = Some((first, n, raw, done + 1));
                    decoded?;
                    self.pages_read += 1;
                    self.pos = 0;
                }
                done => {
                    // The current request is taken (or none was read yet): its buffer is
                    // the next request's.
                    if let Some((_, _, raw, _)) = done {
                        self.spare = Some(raw);
                    }
                    self.start_next(io, io_unit)?;
                    let Some((first, n, ticket)) = self.ahead.take() else {
                        return Ok(None);
                    };
                    let raw = io.finish(ticket)?;
                    self.cur = Some((first, n, raw, 0));
                    self.start_next(io, io_unit)?;
                }
            }
        }
        Ok(Some(self.buf[self.pos]))
    }

    pub(crate) fn advance(&mut self) {
        self.pos += 1;
    }

    /// The decoded entries not yet taken, starting with the one [`SeqReader::peek`]
    /// returned (empty before the first `peek` and at the end of each page).
    pub(crate) fn buffered(&self) -> &[Entry] {
        &self.buf[self.pos.min(self.buf.len())..]
    }

    /// Take `n` entries of [`SeqReader::buffered`].
    pub(crate) fn consume(&mut self, n: usize) {
        self.pos += n;
    }

    /// Pages read so far.
    pub(crate) fn pages_read(&self) -> u64 {
        self.pages_read
    }
}

/// The output side of a merge: whole pages are built in a chunk of `io_unit` pages, and a
/// full chunk is written as one request while the next one fills (at most one request in
/// flight). Shared by the FD-tree's run writer and the LSM's component writer.
pub(crate) struct ChunkWriter {
    chunk: AlignedBuf,
    /// Pages built in `chunk`.
    pages: u64,
    in_flight: Option<Started>,
    spare: Option<AlignedBuf>,
}

impl ChunkWriter {
    /// A writer of chunks of `chunk_pages` pages of `page_size` bytes.
    pub(crate) fn new(page_size: usize, chunk_pages: u64) -> Self {
        ChunkWriter {
            chunk: AlignedBuf::zeroed(page_size * chunk_pages.max(1) as usize),
            pages: 0,
            in_flight: None,
            spare: None,
        }
    }

    /// The next page of the chunk to build (`page_size` bytes); [`ChunkWriter::built`]
    /// counts it.
    pub(crate) fn next_page(&mut self, page_size: usize) -> &mut [u8] {
        let at = self.pages as usize * page_size;
        &mut self.chunk[at..at + page_size]
    }

    /// Count the page just built; true when the chunk is full.
    pub(crate) fn built(&mut self, page_size: usize) -> bool {
        self.pages += 1;
        self.pages as usize * page_size == self.chunk.len()
    }

    /// Pages built and not yet written.
    pub(crate) fn pending(&self) -> u64 {
        self.pages
    }

    /// Start writing the built pages at `first` (after the previous request finished), and
    /// go on in the other buffer.
    pub(crate) fn write(&mut self, io: &mut dyn JobIo, first: PageId) -> Result<()> {
        if self.pages == 0 {
            return Ok(());
        }
        self.wait(io)?;
        let len = self.pages as usize * io.page_size();
        let next = match self.spare.take() {
            Some(b) => b,
            None => AlignedBuf::zeroed(self.chunk.len()),
        };
        let full = std::mem::replace(&mut self.chunk, next);
        self.pages = 0;
        self.in_flight = Some(io.start_write(first, full, len)?);
        Ok(())
    }

    /// Wait for the request in flight (a run is complete once its last request is).
    pub(crate) fn wait(&mut self, io: &mut dyn JobIo) -> Result<()> {
        if let Some(t) = self.in_flight.take() {
            self.spare = Some(io.finish(t)?);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::durable::Pager;
    use crate::kit::sorted::entry::Kind;

    const PAGE: usize = 512;
    /// Entries the test's decoder makes of each page.
    const PER_PAGE: u64 = 3;

    /// A reader hands its decoder one page at a time, so that at most one page's entries
    /// are decoded at once whatever the request size (a whole 512 KiB request decoded at
    /// once was 768 KiB of entries beside the two request buffers), and the entries come
    /// in order across requests, every page read once.
    #[test]
    fn a_reader_decodes_one_page_at_a_time() {
        let mut pager = Pager::in_memory(PAGE, 8);
        let pages = 10u64;
        let e = pager.alloc_extent(pages).unwrap();
        for i in 0..pages {
            pager.device().write(e.start + i, &[i as u8; PAGE]).unwrap();
        }
        for io_unit in [1, 3, 4, 16] {
            let mut r = SeqReader::new(e.start, pages);
            let decode = |pid: PageId, bytes: &[u8], out: &mut Vec<Entry>| {
                assert_eq!(bytes.len(), PAGE, "one page at a time");
                let i = pid - e.start;
                assert!(bytes.iter().all(|&b| u64::from(b) == i), "page {i}'s bytes");
                out.extend((0..PER_PAGE).map(|j| Entry::new(i * PER_PAGE + j, i, Kind::Normal)));
                Ok(())
            };
            let mut got = Vec::new();
            while let Some(x) = r.peek(&mut pager, io_unit, decode).unwrap() {
                assert!(r.buffered().len() as u64 <= PER_PAGE);
                got.push((x.key, x.val));
                r.advance();
            }
            let want: Vec<(u64, u64)> = (0..pages * PER_PAGE).map(|k| (k, k / PER_PAGE)).collect();
            assert_eq!(got, want, "io_unit {io_unit}");
            assert_eq!(r.pages_read(), pages);
        }
    }
}
