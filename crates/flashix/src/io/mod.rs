//! The I/O seam (docs/design.md, Layers): [`Device`] for page I/O and [`Vfs`] for the small
//! named files of an index directory.
//!
//! A `Device` is a linear array of pages, as the FD-tree paper's storage manager treats a
//! large file (App. D). Requests are page-aligned: a request names a first page and carries a
//! buffer whose length is a whole number of pages. A multi-page request is **one** request
//! all the way down (the multi-page I/O of the FD-tree and bulk index; 512 KiB by default).
//! [`Device::submit`] hands a whole batch to the device at once and returns when every
//! request is done: the psync I/O of the PIO B-tree paper (§2.3).
//!
//! Counters ([`DeviceStats`]) separate reads and writes, pages and requests, bytes, and
//! random vs sequential: a request is sequential when it starts at the page where the
//! previous request of its kind ended.
//!
//! The product API here is the seam itself: [`Device`], [`Vfs`], [`Storage`], the devices
//! and small-file stores an embedder may pass to `Db::create_on` and `Db::open_on`
//! ([`FileDevice`], [`MemDevice`], [`DirVfs`], [`MemVfs`], the read-only overlays) and
//! their counters. The fault injector (`fault`: `Faults`, `FaultPlan`, `FaultyDevice`,
//! `FaultyVfs`), the extent allocator (`alloc`) and the psync helpers (`psync`) are the
//! engines' and the tests' tools, not product API: they are public only with the `testing`
//! cargo feature (the crate's own tests and the bench enable it), and crate-private
//! otherwise.

mod aligned;
#[cfg(feature = "testing")]
pub mod alloc;
#[cfg(not(feature = "testing"))]
pub(crate) mod alloc;
#[cfg(any(test, feature = "testing"))]
pub mod fault;
mod file;
mod mem;
mod overlay;
#[cfg(feature = "testing")]
pub mod psync;
#[cfg(not(feature = "testing"))]
pub(crate) mod psync;
mod vfs;
pub(crate) mod watch;

pub use aligned::AlignedBuf;
#[cfg(feature = "testing")]
pub use alloc::{Extent, ExtentAllocator};
#[cfg(not(feature = "testing"))]
pub(crate) use alloc::{Extent, ExtentAllocator};
#[cfg(any(test, feature = "testing"))]
pub use fault::{FailSpec, FaultPlan, Faults, FaultyDevice, FaultyVfs, OpKind};
pub use file::FileDevice;
pub use mem::MemDevice;
pub use overlay::{OverlayDevice, OverlayVfs};
pub use vfs::{DirVfs, MemVfs, Vfs};

use crate::error::{Error, Result};
use std::sync::Arc;

/// The storage an index lives on: one page [`Device`] and the directory's small files.
/// `Db::create` and `Db::open` build it from a directory; tests and embedders can pass
/// their own (memory, fault injection) to `Db::create_on` and `Db::open_on`.
pub struct Storage {
    /// The page device the index's pages live on.
    pub device: Box<dyn Device>,
    /// The index directory's small files (WAL, manifest).
    pub vfs: Arc<dyn Vfs>,
}
use serde::{Deserialize, Serialize};

/// A page address on a [`Device`].
pub type PageId = u64;

/// Page ids are below this: the page envelope (`crate::page`) keeps 48 bits of them, 2^48
/// pages, an exbibyte at 4 KiB. The extent allocator hands out no page at or past it.
pub const MAX_PAGES: u64 = 1 << 48;

/// Sector size used for torn-write modelling and `O_DIRECT` alignment checks.
pub const SECTOR: usize = 512;

/// One request of a batch given to [`Device::submit`].
#[derive(Debug)]
pub enum IoReq<'a> {
    /// Read `buf.len() / page_size` pages starting at `page` into `buf`.
    Read {
        /// The first page to read.
        page: PageId,
        /// Where the pages go: a whole number of pages.
        buf: &'a mut [u8],
    },
    /// Write `buf` to `buf.len() / page_size` pages starting at `page`.
    Write {
        /// The first page to write.
        page: PageId,
        /// The pages' bytes: a whole number of pages.
        buf: &'a [u8],
    },
}

impl IoReq<'_> {
    /// First page of the request.
    pub fn page(&self) -> PageId {
        match self {
            IoReq::Read { page, .. } | IoReq::Write { page, .. } => *page,
        }
    }
    /// Length in bytes.
    pub fn len(&self) -> usize {
        match self {
            IoReq::Read { buf, .. } => buf.len(),
            IoReq::Write { buf, .. } => buf.len(),
        }
    }
    /// True when the request carries no bytes (never valid).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// True for writes.
    pub fn is_write(&self) -> bool {
        matches!(self, IoReq::Write { .. })
    }
}

/// Page I/O on one index's storage. Implementations: [`FileDevice`], [`MemDevice`],
/// the fault injector's `FaultyDevice` (tests, with the `testing` feature), and the
/// simulated SSD.
pub trait Device: Send + Sync {
    /// Page size in bytes (a power of two, at least 512).
    fn page_size(&self) -> usize;

    /// Submit every request of `batch` at once and return when all are done.
    /// The batch may mix reads and writes; engines that follow the PIO paper's
    /// principle 3 keep them apart themselves.
    fn submit(&mut self, batch: &mut [IoReq<'_>]) -> Result<()>;

    /// Make every completed write durable.
    fn sync(&mut self) -> Result<()>;

    /// Tell the device that `pages` pages from `page` hold no live data.
    fn trim(&mut self, page: PageId, pages: u64) -> Result<()>;

    /// Counters since the device was opened.
    fn stats(&self) -> DeviceStats;

    /// Pages the device can hold, when it has a fixed size (a simulated SSD); `None` for a
    /// device that grows until its medium is full (a file, memory). The extent allocator
    /// hands out no page at or past it: running out is [`Error::no_space`] at allocation,
    /// before any page of the operation that needs it is written.
    fn capacity_pages(&self) -> Option<u64> {
        None
    }

    /// Read pages starting at `page` into `buf` (one request).
    fn read(&mut self, page: PageId, buf: &mut [u8]) -> Result<()> {
        self.submit(&mut [IoReq::Read { page, buf }])
    }

    /// Write `buf` to pages starting at `page` (one request).
    fn write(&mut self, page: PageId, buf: &[u8]) -> Result<()> {
        self.submit(&mut [IoReq::Write { page, buf }])
    }

    /// Start reading `len` bytes (whole pages) from `page` into `buf` and return without
    /// waiting: the caller computes while the device works, and [`Device::finish`] gives
    /// the buffer back, filled. The request counts as one request of a batch of one.
    /// Requests started and not yet finished must not overlap each other's pages; every
    /// other call ([`Device::submit`], `sync`, `trim`) first waits for them, so it sees
    /// their effects. By default the request is done before this returns.
    fn start_read(&mut self, page: PageId, mut buf: AlignedBuf, len: usize) -> Result<Ticket> {
        let b = started_slice(&mut buf, len)?;
        self.read(page, b)?;
        Ok(Ticket(Started::Done(buf)))
    }

    /// Start writing the first `len` bytes (whole pages) of `buf` to `page`, as
    /// [`Device::start_read`]. The write is complete (not durable: `sync`) once
    /// [`Device::finish`] returns or another call has waited for it.
    fn start_write(&mut self, page: PageId, mut buf: AlignedBuf, len: usize) -> Result<Ticket> {
        let b = started_slice(&mut buf, len)?;
        self.write(page, b)?;
        Ok(Ticket(Started::Done(buf)))
    }

    /// Whether a started request is complete, so that [`Device::finish`] would not wait
    /// (it may still complete a short transfer). Never blocks: a caller with other work
    /// (an engine thread serving a background merge's requests) asks before it finishes.
    fn is_done(&mut self, ticket: &Ticket) -> bool {
        matches!(ticket.0, Started::Done(_))
    }

    /// Whether started requests run while the caller works (a file through io_uring):
    /// then work done beside the caller's, on another thread, overlaps with its I/O. By
    /// default requests are served at once and an engine keeps its work on its own thread.
    fn overlaps(&self) -> bool {
        false
    }

    /// A second handle on this device for another thread's started requests (a merge
    /// thread's, run beside the engine's): it starts and finishes them itself, and
    /// they are counted in this device's [`DeviceStats`]. It may only read pages nothing
    /// writes meanwhile and write pages reserved for it ([`Device::reserve_writes`]) that
    /// nothing else touches until its requests are finished. `None` (the default): the
    /// other thread's requests go through this handle.
    fn job_device(&mut self) -> Result<Option<Box<dyn Device>>> {
        Ok(None)
    }

    /// Pages `page..page + pages` are about to be written through a
    /// [`Device::job_device`] handle: account for them as written (a [`FileDevice`] then
    /// never fills them with zeros as it grows the file).
    fn reserve_writes(&mut self, page: PageId, pages: u64) -> Result<()> {
        let _ = (page, pages);
        Ok(())
    }

    /// A handle for reads from many threads at once ([`SharedReader`]), or `None` when the
    /// device serves one request at a time (memory, simulated and fault-injecting devices:
    /// their callers serialize reads on the device).
    fn shared_reader(&mut self) -> Result<Option<Arc<dyn SharedReader>>> {
        Ok(None)
    }

    /// Wait for a started request and take its buffer back; its error, if it failed.
    fn finish(&mut self, ticket: Ticket) -> Result<AlignedBuf> {
        match ticket.0 {
            Started::Done(buf) => Ok(buf),
            Started::InFlight(id) => Err(Error::InvalidArgument(format!(
                "request {id} was not started on this device"
            ))),
        }
    }
}

/// Page reads that many threads make at once, beside the [`Device`] they came from
/// ([`Device::shared_reader`]): each call is one read request, counted in that device's
/// counters. A reader sees every write its device completed before the read began; it
/// does not see requests the device started and has not finished ([`Device::start_write`]),
/// so it is used for pages no started request writes (the buffer pool's pages).
pub trait SharedReader: Send + Sync {
    /// Read `buf.len()` bytes (whole pages) from `page`, as [`Device::read`].
    fn read(&self, page: PageId, buf: &mut [u8]) -> Result<()>;

    /// Read every request of `batch` (reads only) at once, as [`Device::submit`]: one
    /// psync group of this thread's, in flight beside other threads' reads. By default
    /// one [`SharedReader::read`] after another.
    fn read_batch(&self, batch: &mut [IoReq<'_>]) -> Result<()> {
        for r in batch.iter_mut() {
            match r {
                IoReq::Read { page, buf } => self.read(*page, buf)?,
                IoReq::Write { page, .. } => {
                    return Err(Error::InvalidArgument(format!(
                        "a shared reader cannot write page {page}"
                    )))
                }
            }
        }
        Ok(())
    }

    /// Write every request of `batch` (writes only) from one of many threads, beside the
    /// others' reads and writes, if the device can take them so: true when written; false
    /// when nothing was written and the device's owner must write them ([`Device::submit`]:
    /// a write that grows the file, say). The caller notes the writes as the device's
    /// owner would (`crate::io::watch`). By default, never.
    fn write_batch(&self, batch: &mut [IoReq<'_>]) -> Result<bool> {
        let _ = batch;
        Ok(false)
    }
}

/// A request started by [`Device::start_read`] or [`Device::start_write`], to give to
/// [`Device::finish`]. A ticket dropped unfinished is harmless: the device keeps the buffer
/// until the request is done and frees it when the device is dropped.
#[must_use = "a started request is finished with Device::finish, which reports its error"]
#[derive(Debug)]
pub struct Ticket(Started);

#[derive(Debug)]
enum Started {
    /// Done already; the buffer is here.
    Done(AlignedBuf),
    /// In flight on the device that issued it, which holds the buffer.
    InFlight(u64),
}

/// `&mut buf[..len]`, or an error when `len` is more than the buffer.
fn started_slice(buf: &mut AlignedBuf, len: usize) -> Result<&mut [u8]> {
    let total = buf.len();
    buf.get_mut(..len).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "a request of {len} bytes does not fit its buffer of {total}"
        ))
    })
}

impl Device for Box<dyn Device> {
    fn page_size(&self) -> usize {
        (**self).page_size()
    }
    fn submit(&mut self, batch: &mut [IoReq<'_>]) -> Result<()> {
        (**self).submit(batch)
    }
    fn sync(&mut self) -> Result<()> {
        (**self).sync()
    }
    fn trim(&mut self, page: PageId, pages: u64) -> Result<()> {
        (**self).trim(page, pages)
    }
    fn stats(&self) -> DeviceStats {
        (**self).stats()
    }
    fn capacity_pages(&self) -> Option<u64> {
        (**self).capacity_pages()
    }
    fn start_read(&mut self, page: PageId, buf: AlignedBuf, len: usize) -> Result<Ticket> {
        (**self).start_read(page, buf, len)
    }
    fn start_write(&mut self, page: PageId, buf: AlignedBuf, len: usize) -> Result<Ticket> {
        (**self).start_write(page, buf, len)
    }
    fn finish(&mut self, ticket: Ticket) -> Result<AlignedBuf> {
        (**self).finish(ticket)
    }
    fn is_done(&mut self, ticket: &Ticket) -> bool {
        (**self).is_done(ticket)
    }
    fn overlaps(&self) -> bool {
        (**self).overlaps()
    }
    fn job_device(&mut self) -> Result<Option<Box<dyn Device>>> {
        (**self).job_device()
    }
    fn reserve_writes(&mut self, page: PageId, pages: u64) -> Result<()> {
        (**self).reserve_writes(page, pages)
    }
    fn shared_reader(&mut self) -> Result<Option<Arc<dyn SharedReader>>> {
        (**self).shared_reader()
    }
}

/// I/O counters of a [`Device`]. Pages and bytes count what was transferred; requests count
/// calls as the device saw them (a 512 KiB read is one request of 128 pages).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceStats {
    /// How requests reach the medium: `io_uring+O_DIRECT`, `pread+O_DIRECT`, `buffered`, `memory`, ...
    pub backend: String,
    /// Pages read.
    pub reads: u64,
    /// Read requests (one request reads one or more consecutive pages).
    pub read_requests: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Read requests that started where the previous read request ended.
    pub sequential_reads: u64,
    /// Read requests that did not (`read_requests - sequential_reads`).
    pub random_reads: u64,
    /// Pages written.
    pub writes: u64,
    /// Write requests (one request writes one or more consecutive pages).
    pub write_requests: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Write requests that started where the previous write request ended.
    pub sequential_writes: u64,
    /// Write requests that did not (`write_requests - sequential_writes`).
    pub random_writes: u64,
    /// Calls to `Device::sync`.
    pub syncs: u64,
    /// Calls to `Device::trim`.
    pub trims: u64,
    /// Batches given to `submit`.
    pub batches: u64,
    /// Batches that held at least one read: `read_requests / read_batches` is the mean
    /// queue depth of reads.
    #[serde(default)]
    pub read_batches: u64,
    /// Largest number of requests in flight at once (given to `submit`, over every handle
    /// sharing the device's counters: a batch's requests, and the single reads of many
    /// threads).
    pub max_queue_depth: u64,
    /// Nanoseconds requests spent in flight, summed over requests (each from its
    /// submission to its completion; requests given to `submit`, from every handle sharing
    /// the device's counters, not the started ones of `start_read`/`start_write`): its
    /// growth over a phase divided by the phase's wall time is the device's mean queue
    /// depth in that phase (Little's law). 0 on a device that does not time its requests.
    #[serde(default)]
    pub inflight_ns: u64,
    /// Bytes of zeros the device wrote to grow its medium ahead of the requests (a
    /// [`FileDevice`] keeps its file free of holes; not included in `write_bytes`).
    #[serde(default)]
    pub fill_bytes: u64,
    /// Simulated flash counters of a simulated SSD (`erases`, `gc_page_copies`,
    /// `max_erase_count`, `sim_time_us`, ...: `sim::SimStats::counters`); empty otherwise.
    #[serde(default)]
    pub flash: std::collections::BTreeMap<String, u64>,
}

/// Shared counting and validation for `Device` implementations.
#[derive(Debug, Clone, Default)]
pub struct Counters {
    /// The counts so far.
    pub stats: DeviceStats,
    /// Requests in flight now, over every handle that shares these counters.
    in_flight: u64,
    next_read: Option<PageId>,
    next_write: Option<PageId>,
}

impl Counters {
    /// Counters for a backend named `backend`.
    pub fn new(backend: impl Into<String>) -> Self {
        Counters {
            stats: DeviceStats {
                backend: backend.into(),
                ..DeviceStats::default()
            },
            ..Counters::default()
        }
    }

    /// `n` requests are submitted: the device's queue depth grows by `n`
    /// ([`DeviceStats::max_queue_depth`] over every handle sharing these counters).
    pub fn begin(&mut self, n: u64) {
        self.in_flight += n;
        self.stats.max_queue_depth = self.stats.max_queue_depth.max(self.in_flight);
    }

    /// `n` requests begun together completed after `elapsed` ([`DeviceStats::inflight_ns`]).
    pub fn end(&mut self, n: u64, elapsed: std::time::Duration) {
        self.in_flight = self.in_flight.saturating_sub(n);
        let ns = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        self.stats.inflight_ns = self.stats.inflight_ns.saturating_add(ns.saturating_mul(n));
    }

    /// Check a batch (lengths whole pages, non-empty) and count it.
    pub fn record_batch(&mut self, page_size: usize, batch: &[IoReq<'_>]) -> Result<()> {
        for req in batch {
            validate(page_size, req.page(), req.len())?;
        }
        self.stats.batches += 1;
        if batch.iter().any(|r| !r.is_write()) {
            self.stats.read_batches += 1;
        }
        self.stats.max_queue_depth = self.stats.max_queue_depth.max(batch.len() as u64);
        for req in batch {
            let pages = (req.len() / page_size) as u64;
            let (next, s) = if req.is_write() {
                (&mut self.next_write, &mut self.stats)
            } else {
                (&mut self.next_read, &mut self.stats)
            };
            let sequential = *next == Some(req.page());
            *next = Some(req.page() + pages);
            if req.is_write() {
                s.writes += pages;
                s.write_requests += 1;
                s.write_bytes += req.len() as u64;
                if sequential {
                    s.sequential_writes += 1;
                } else {
                    s.random_writes += 1;
                }
            } else {
                s.reads += pages;
                s.read_requests += 1;
                s.read_bytes += req.len() as u64;
                if sequential {
                    s.sequential_reads += 1;
                } else {
                    s.random_reads += 1;
                }
            }
        }
        Ok(())
    }
}

/// Check that a request is whole pages and addresses a sane page range.
pub fn validate(page_size: usize, page: PageId, len: usize) -> Result<()> {
    if len == 0 || len % page_size != 0 {
        return Err(Error::InvalidArgument(format!(
            "I/O of {len} bytes at page {page} is not a whole number of {page_size}-byte pages"
        )));
    }
    let pages = (len / page_size) as u64;
    let end = page
        .checked_add(pages)
        .and_then(|e| e.checked_mul(page_size as u64));
    if !matches!(end, Some(e) if e <= i64::MAX as u64) {
        return Err(Error::InvalidArgument(format!(
            "page {page} is out of range"
        )));
    }
    Ok(())
}

/// Check a page size: a power of two, at least 512 bytes, at most 1 MiB.
pub fn check_page_size(page_size: usize) -> Result<()> {
    if !page_size.is_power_of_two() || !(SECTOR..=1 << 20).contains(&page_size) {
        return Err(Error::InvalidOptions(format!(
            "page size {page_size} must be a power of two between 512 and 1048576 bytes"
        )));
    }
    Ok(())
}
