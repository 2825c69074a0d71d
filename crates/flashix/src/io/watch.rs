//! [`Watched`]: a [`Device`] that notes the pages it is asked to write, so that a reader
//! that read a page with no lock held can tell afterwards whether anything wrote that
//! page meanwhile ([`WriteWatch::unwritten_since`]).
//!
//! # Thread safety
//!
//! The [`WriteWatch`] is shared (`Arc`) between the device, its job handles and any
//! number of readers. A write is noted — its pages and the next sequence number, under a
//! short mutex — *before* it is handed to the device below, so a reader that takes the
//! sequence number before its read and finds no write of its page noted after it when
//! it looks again knows that no write of the page began in between. Writes already in
//! flight when the reader took the number are not seen: a caller uses it only for pages
//! that no started request writes (see `crate::durable::outside`).
//!
//! The watch keeps the last [`WINDOW`] writes; a reader that looks after more than that
//! many treats its page as written (it reads again).

use super::{AlignedBuf, Device, DeviceStats, IoReq, PageId, SharedReader, Ticket};
use crate::error::Result;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

/// Writes the watch remembers.
pub const WINDOW: usize = 1024;

/// The last [`WINDOW`] writes as `(sequence number, first page, pages)`, oldest first,
/// and the number of the last one.
type Noted = (VecDeque<(u64, PageId, u64)>, u64);

/// The writes a device was asked to make, numbered.
#[derive(Default)]
pub struct WriteWatch {
    state: Mutex<Noted>,
}

impl WriteWatch {
    /// A watch that has seen no write.
    pub fn new() -> Arc<WriteWatch> {
        Arc::new(WriteWatch::default())
    }

    fn lock(&self) -> MutexGuard<'_, Noted> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The number of the last write noted: give it to [`WriteWatch::unwritten_since`].
    pub fn now(&self) -> u64 {
        self.lock().1
    }

    /// Note a write of `pages` pages from `first` (before it is issued).
    pub fn note(&self, first: PageId, pages: u64) {
        let mut s = self.lock();
        s.1 += 1;
        let seq = s.1;
        if s.0.len() == WINDOW {
            s.0.pop_front();
        }
        s.0.push_back((seq, first, pages.max(1)));
    }

    /// Whether no write of page `pid` was noted after write number `since`
    /// ([`WriteWatch::now`]); false when more writes than the watch keeps came since.
    pub fn unwritten_since(&self, pid: PageId, since: u64) -> bool {
        let s = self.lock();
        let newer = s.1 - since;
        if newer == 0 {
            return true;
        }
        if newer as usize > s.0.len() {
            return false;
        }
        s.0.iter()
            .rev()
            .take(newer as usize)
            .all(|&(_, first, pages)| !(first..first.saturating_add(pages)).contains(&pid))
    }
}

/// A [`Device`] whose writes (requests, started writes, trims; its job handles' too) are
/// noted in a [`WriteWatch`] before they are issued.
pub struct Watched {
    inner: Box<dyn Device>,
    watch: Arc<WriteWatch>,
}

impl Watched {
    /// Watch `inner`'s writes in `watch`.
    pub fn new(inner: Box<dyn Device>, watch: Arc<WriteWatch>) -> Watched {
        Watched { inner, watch }
    }

    fn pages(&self, bytes: usize) -> u64 {
        (bytes / self.inner.page_size().max(1)) as u64
    }
}

impl Device for Watched {
    fn page_size(&self) -> usize {
        self.inner.page_size()
    }

    fn submit(&mut self, batch: &mut [IoReq<'_>]) -> Result<()> {
        for r in batch.iter().filter(|r| r.is_write()) {
            self.watch.note(r.page(), self.pages(r.len()));
        }
        self.inner.submit(batch)
    }

    fn sync(&mut self) -> Result<()> {
        self.inner.sync()
    }

    fn trim(&mut self, page: PageId, pages: u64) -> Result<()> {
        self.watch.note(page, pages);
        self.inner.trim(page, pages)
    }

    fn stats(&self) -> DeviceStats {
        self.inner.stats()
    }

    fn capacity_pages(&self) -> Option<u64> {
        self.inner.capacity_pages()
    }

    fn read(&mut self, page: PageId, buf: &mut [u8]) -> Result<()> {
        self.inner.read(page, buf)
    }

    fn write(&mut self, page: PageId, buf: &[u8]) -> Result<()> {
        self.watch.note(page, self.pages(buf.len()));
        self.inner.write(page, buf)
    }

    fn start_read(&mut self, page: PageId, buf: AlignedBuf, len: usize) -> Result<Ticket> {
        self.inner.start_read(page, buf, len)
    }

    fn start_write(&mut self, page: PageId, buf: AlignedBuf, len: usize) -> Result<Ticket> {
        self.watch.note(page, self.pages(len));
        self.inner.start_write(page, buf, len)
    }

    fn is_done(&mut self, ticket: &Ticket) -> bool {
        self.inner.is_done(ticket)
    }

    fn overlaps(&self) -> bool {
        self.inner.overlaps()
    }

    fn job_device(&mut self) -> Result<Option<Box<dyn Device>>> {
        Ok(self
            .inner
            .job_device()?
            .map(|d| Box::new(Watched::new(d, Arc::clone(&self.watch))) as Box<dyn Device>))
    }

    fn reserve_writes(&mut self, page: PageId, pages: u64) -> Result<()> {
        self.inner.reserve_writes(page, pages)
    }

    fn shared_reader(&mut self) -> Result<Option<Arc<dyn SharedReader>>> {
        self.inner.shared_reader()
    }

    fn finish(&mut self, ticket: Ticket) -> Result<AlignedBuf> {
        self.inner.finish(ticket)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::MemDevice;

    #[test]
    fn a_write_of_the_page_after_the_mark_is_seen_and_others_are_not() {
        let watch = WriteWatch::new();
        let mut dev = Watched::new(Box::new(MemDevice::new(512).reopen()), watch.clone());
        let page = vec![1u8; 1024];
        dev.write(4, &page).unwrap();
        let mark = watch.now();
        assert!(watch.unwritten_since(4, mark));
        dev.submit(&mut [IoReq::Write {
            page: 10,
            buf: &page,
        }])
        .unwrap();
        assert!(watch.unwritten_since(4, mark), "pages 10-11 are not page 4");
        assert!(!watch.unwritten_since(11, mark));
        dev.trim(3, 2).unwrap();
        assert!(
            !watch.unwritten_since(4, mark),
            "a trim of pages 3-4 changes page 4"
        );
        let mut buf = vec![0u8; 512];
        let mark = watch.now();
        dev.read(4, &mut buf).unwrap();
        assert!(watch.unwritten_since(4, mark), "reads are not writes");
    }

    #[test]
    fn a_mark_older_than_the_window_counts_as_written() {
        let watch = WriteWatch::new();
        let mark = watch.now();
        for i in 0..=WINDOW as u64 {
            watch.note(1000 + i, 1);
        }
        assert!(!watch.unwritten_since(5, mark));
        let mark = watch.now();
        watch.note(6, 1);
        assert!(watch.unwritten_since(5, mark));
    }
}
