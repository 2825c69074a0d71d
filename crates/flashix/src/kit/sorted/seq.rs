//! Sequential reading of a contiguous range of sorted pages, `io_unit` pages per request
//! (the multi-page I/O of merges, FD-tree paper App. D).

use super::entry::Entry;
use crate::durable::Pager;
use crate::error::Result;
use crate::io::PageId;

/// A sequential reader of a contiguous page range of decoded entries, `io_unit` pages per
/// request (the multi-page I/O of merges, FD-tree App. D). Shared by FD-tree runs and
/// LSM components, which differ only in how a page range is read and decoded.
pub(crate) struct SeqReader {
    first: PageId,
    pages: u64,
    next: u64,
    buf: Vec<Entry>,
    pos: usize,
    pages_read: u64,
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
        }
    }

    /// The next entry, or `None` at the end; `read(pager, first, n, out)` reads `n` pages
    /// from `first` in one request and decodes their entries into `out` (empty; the
    /// reader's one buffer, reused request after request: a merge decodes each entry once,
    /// into place).
    #[inline]
    pub(crate) fn peek(
        &mut self,
        pager: &mut Pager,
        io_unit: u64,
        read: impl Fn(&mut Pager, PageId, u64, &mut Vec<Entry>) -> Result<()>,
    ) -> Result<Option<Entry>> {
        while self.pos >= self.buf.len() {
            if self.next >= self.pages {
                return Ok(None);
            }
            let n = io_unit.min(self.pages - self.next);
            self.buf.clear();
            read(pager, self.first + self.next, n, &mut self.buf)?;
            self.next += n;
            self.pages_read += n;
            self.pos = 0;
        }
        Ok(Some(self.buf[self.pos]))
    }

    pub(crate) fn advance(&mut self) {
        self.pos += 1;
    }

    /// Pages read so far.
    pub(crate) fn pages_read(&self) -> u64 {
        self.pages_read
    }
}
