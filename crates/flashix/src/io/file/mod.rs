//! [`FileDevice`]: one large file treated as a linear array of pages (FD-tree paper, App. D).
//!
//! * The file is created if absent; pages never written read as zeros (a read past the end
//!   of the file is zero-filled, not an error).
//! * `direct_io` opens the file with `O_DIRECT`. When the file system refuses it (`EINVAL`),
//!   reports no direct-I/O support through `statx(STATX_DIOALIGN)`, or needs an offset
//!   alignment that the page size is not a multiple of, the device falls back to buffered I/O.
//!   Caller buffers that are not aligned for `O_DIRECT` go through a reusable bounce
//!   [`AlignedBuf`].
//! * A batch given to [`Device::submit`] goes to the kernel through `io_uring`: one SQE per
//!   request (a multi-page request stays one request), all submitted at once, then every
//!   completion is awaited and checked. Batches larger than the ring go in ring-sized chunks.
//!   Consecutive requests of a chunk that continue one another (same direction, each
//!   beginning where the one before it ends) go as one vectored SQE (`readv`/`writev` of
//!   their buffers): the kernel's cost is per request, and a checkpoint's write-back of a
//!   head tree's 64 adjacent pages took 1.5-2 ms as 64 writes. [`DeviceStats`] still counts
//!   the requests as given, as every device does.
//!   Short transfers are completed with the rest of the request (a read that reaches the end
//!   of the file is zero-filled).
//! * When `io_uring` is unavailable (`ENOSYS`, `EPERM`, ...) or `FLASHIX_NO_IO_URING=1` is
//!   set, requests are served one after the other with `pread`/`pwrite` loops.
//! * **Hybrid polling.** After submitting a batch the device polls the completion queue
//!   for up to [`DEFAULT_SPIN_US`] microseconds (`FLASHIX_IO_SPIN_US` sets another bound,
//!   0 turns polling off) before it sleeps in the kernel for the rest. On this project's
//!   virtio SSD a sleep and wake-up cost about as much as the read itself: B+-tree point
//!   searches (0.81 page reads each, one thread) ran at 19,600-20,800/s sleeping and
//!   28,500-29,200/s polling in runs side by side (18,400 and 35,200/s in an earlier
//!   pair), for 34-35 µs of CPU per search instead of 23-25: the polling spends the wait
//!   on a core. Requests started for read-ahead and write-behind ([`Device::start_read`])
//!   are awaited by sleeping: they are large, and the caller works while they run.
//!
//! * **No holes.** The file grows ahead of the writes: before a batch writes past the
//!   part of the file already written, the device writes zeros up to at least an eighth more
//!   than that part (and at least [`FILL_MIN_BYTES`]), in large sequential requests, and
//!   every later write is an overwrite of written blocks. Without this, a write into a hole
//!   (a leaf allocated as several pages of which only the first were written, or the end of
//!   the file) makes the file system allocate blocks, which ext4 cannot do without blocking:
//!   io_uring then hands the write to its worker threads, which run the writes to one file
//!   one after the other — a psync batch of 64 writes became 64 serial writes (measured: the
//!   PIO B-tree with 8-page leaves reached 9,200 requests/s instead of about 40,000). A
//!   started write ([`Device::start_write`], a merge's sequential output) is one request
//!   nothing waits on at once: past the written part it grows it by itself (growing ahead
//!   wrote each new byte of a merge twice), and a gap it leaves before it is remembered and
//!   filled with zeros only when a batch would write into it. The zeros written are
//!   counted in [`DeviceStats::fill_bytes`].
//!
//! The backend chosen at open is reported in [`DeviceStats::backend`] (and [`FileDevice::backend`]):
//! `io_uring+O_DIRECT`, `io_uring+buffered`, `pread+O_DIRECT` or `pread+buffered`.

use super::aligned::{AlignedBuf, ALIGN};
use super::{
    check_page_size, validate, Counters, Device, DeviceStats, IoReq, PageId, SharedReader, Ticket,
};
use crate::error::{Error, Result};
use io_uring::IoUring;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

mod shared;
mod started;
mod uring;

/// Entries of the submission ring: the most requests in flight at once.
const RING_ENTRIES: u32 = 64;

/// Least number of bytes the file grows by when a write goes past its written part.
pub const FILL_MIN_BYTES: u64 = 1 << 20;

/// Most gaps left by started writes that a device remembers ([`FileDevice`]'s "No holes").
const MAX_GAPS: usize = 64;

/// Size of one request of zeros when the file grows.
const FILL_CHUNK_BYTES: usize = 1 << 20;

/// Environment variable that forces the `pread`/`pwrite` fallback when set to `1`.
pub const NO_IO_URING_ENV: &str = "FLASHIX_NO_IO_URING";

/// Environment variable that bounds the completion polling of a submitted batch, in
/// microseconds (0: sleep at once); see the module doc.
pub const IO_SPIN_ENV: &str = "FLASHIX_IO_SPIN_US";

/// Default bound of the completion polling, in microseconds: above a QD1 page read here
/// (about 30 µs when polled), below a 512 KiB transfer (about 400 µs).
pub const DEFAULT_SPIN_US: u64 = 100;

/// The polling bound `value` of [`IO_SPIN_ENV`] asks for: a number of microseconds, the
/// default when unset or not a number.
fn spin_bound(value: Option<&str>) -> std::time::Duration {
    let us = value
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(DEFAULT_SPIN_US);
    std::time::Duration::from_micros(us)
}

/// The open file(s) and what `O_DIRECT` requires of them.
struct Files {
    /// The data file (with `O_DIRECT` when `direct`).
    file: File,
    /// A buffered handle on the same file, used only when `direct` for the rare remainder of
    /// a short transfer that ends at an offset `O_DIRECT` cannot address.
    buffered: Option<File>,
    direct: bool,
    /// Memory alignment needed by `O_DIRECT` (at least [`ALIGN`]).
    mem_align: usize,
    /// File offset (and length) alignment needed by `O_DIRECT`.
    offset_align: usize,
    path: PathBuf,
}

impl Files {
    /// True when a caller buffer must go through the bounce buffer.
    fn needs_bounce(&self, buf: &[u8]) -> bool {
        self.direct && (buf.as_ptr() as usize) % self.mem_align != 0
    }

    /// The handle to use for a transfer at `offset` from `ptr`.
    fn handle_for(&self, offset: u64, ptr: *const u8) -> &File {
        match &self.buffered {
            Some(b)
                if self.direct
                    && (offset % self.offset_align as u64 != 0
                        || (ptr as usize) % self.mem_align != 0) =>
            {
                b
            }
            _ => &self.file,
        }
    }

    fn context(&self, write: bool, page: PageId, pages: u64) -> String {
        let what = if write { "writing" } else { "reading" };
        if pages <= 1 {
            format!("{what} page {page} of {}", self.path.display())
        } else {
            format!(
                "{what} pages {page}..{} of {}",
                page + pages,
                self.path.display()
            )
        }
    }

    /// Read `buf[done..]` from `offset + done` with `pread` until full; the part beyond the
    /// end of the file is zero-filled.
    fn read_rest(
        &self,
        buf: &mut [u8],
        offset: u64,
        mut done: usize,
        page: PageId,
        pages: u64,
    ) -> Result<()> {
        while done < buf.len() {
            let at = offset + done as u64;
            let rest = &mut buf[done..];
            let f = self.handle_for(at, rest.as_ptr());
            match f.read_at(rest, at) {
                Ok(0) => {
                    rest.fill(0);
                    break;
                }
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(self.context(false, page, pages), e)),
            }
        }
        Ok(())
    }

    /// Write `buf[done..]` at `offset + done` with `pwrite` until all is written.
    fn write_rest(
        &self,
        buf: &[u8],
        offset: u64,
        mut done: usize,
        page: PageId,
        pages: u64,
    ) -> Result<()> {
        while done < buf.len() {
            let at = offset + done as u64;
            let rest = &buf[done..];
            let f = self.handle_for(at, rest.as_ptr());
            match f.write_at(rest, at) {
                Ok(0) => {
                    return Err(Error::io(
                        self.context(true, page, pages),
                        io::Error::new(io::ErrorKind::WriteZero, "the write made no progress"),
                    ))
                }
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(self.context(true, page, pages), e)),
            }
        }
        Ok(())
    }
}

/// A [`Device`] on a file.
pub struct FileDevice {
    page_size: usize,
    files: Files,
    /// `None` when requests go through `pread`/`pwrite`.
    ring: Option<IoUring>,
    /// How long a submitted batch's completions are polled before sleeping.
    spin: std::time::Duration,
    /// Reusable bounce buffer for unaligned caller buffers under `O_DIRECT`.
    bounce: AlignedBuf,
    /// Per-chunk scratch: bounce offset of each request (reused between batches).
    slots: Vec<Option<usize>>,
    /// Per-chunk scratch: completion result of each request.
    results: Vec<Option<i32>>,
    /// Shared with the device's job handles ([`Device::job_device`]), which count their
    /// requests here too.
    counters: Arc<Mutex<Counters>>,
    /// `DeviceStats::backend`, kept here for [`FileDevice::backend`].
    backend: String,
    /// A job handle: it starts and finishes requests on its own ring and keeps no account
    /// of the file's written part (its writes go to ranges the device it came from
    /// reserved, [`Device::reserve_writes`]).
    job: bool,
    /// Bytes at the start of the file that this device has written or found written (the
    /// file's length at open): a write below it never fills a hole the device made.
    written_to: u64,
    /// Byte ranges below `written_to` that no write has reached (left behind by started
    /// writes past the written part): a batch write into one fills it with zeros first.
    gaps: Vec<(u64, u64)>,
    /// Bytes at the start of the file that another handle may write without this device
    /// filling any of them with zeros later: the written part up to its first gap
    /// (published by every change of `written_to` and `gaps`, and only ever growing), 0
    /// for a device that does not write (read-only, or a job or reader handle). Shared
    /// with the device's [`shared::FileReaders`], whose writes of pool pages from many
    /// threads stay below it.
    shared_end: Arc<std::sync::atomic::AtomicU64>,
    /// Whether this device writes the file (not opened read-only).
    writable: bool,
    /// Requests started and not yet finished ([`started`]).
    started: Vec<started::Started>,
    next_started: u64,
}

impl Drop for FileDevice {
    fn drop(&mut self) {
        self.drop_started();
    }
}

impl FileDevice {
    /// Open (creating if absent) the file at `path` with pages of `page_size` bytes.
    /// `direct_io` asks for `O_DIRECT`; if the file system refuses it the device falls back
    /// to buffered I/O and says so in [`DeviceStats::backend`]. Batches go through
    /// `io_uring` unless the kernel refuses it or `FLASHIX_NO_IO_URING=1` is set.
    pub fn open(path: &Path, page_size: usize, direct_io: bool) -> Result<Self> {
        let no_uring = std::env::var(NO_IO_URING_ENV).is_ok_and(|v| v.trim() == "1");
        Self::open_with(path, page_size, direct_io, !no_uring)
    }

    /// [`FileDevice::open`] with an explicit choice of trying `io_uring`.
    pub(crate) fn open_with(
        path: &Path,
        page_size: usize,
        direct_io: bool,
        try_io_uring: bool,
    ) -> Result<Self> {
        Self::open_mode(path, page_size, direct_io, try_io_uring, true)
    }

    /// Open the existing file at `path` for reading only (buffered `pread`): every write,
    /// trim or sync fails with an error from the file system. The base of a read-only index
    /// (`crate::io::OverlayDevice`, `Db::open_read_only`); a missing file is an error.
    pub fn open_read_only(path: &Path, page_size: usize) -> Result<Self> {
        Self::open_mode(path, page_size, false, false, false)
    }

    fn open_mode(
        path: &Path,
        page_size: usize,
        direct_io: bool,
        try_io_uring: bool,
        writable: bool,
    ) -> Result<Self> {
        check_page_size(page_size)?;
        let files = open_files(path, page_size, direct_io, writable)?;
        let ring = if try_io_uring {
            IoUring::new(RING_ENTRIES).ok()
        } else {
            None
        };
        let backend = backend_name(ring.is_some(), files.direct);
        let written_to = files
            .file
            .metadata()
            .map_err(|e| Error::io(format!("reading the length of {}", path.display()), e))?
            .len();
        Ok(FileDevice {
            written_to,
            gaps: Vec::new(),
            page_size,
            files,
            ring,
            spin: spin_bound(std::env::var(IO_SPIN_ENV).ok().as_deref()),
            bounce: AlignedBuf::zeroed(0),
            slots: Vec::new(),
            results: Vec::new(),
            counters: Arc::new(Mutex::new(Counters::new(backend))),
            backend: backend.to_string(),
            job: false,
            shared_end: Arc::new(std::sync::atomic::AtomicU64::new(match writable {
                true => written_to,
                false => 0,
            })),
            writable,
            started: Vec::new(),
            next_started: 0,
        })
    }

    /// Publish the bytes other handles may write ([`FileDevice`]'s `shared_end`).
    fn publish_end(&self) {
        if !self.writable || self.job {
            return;
        }
        let first_gap = self.gaps.iter().map(|&(a, _)| a).min();
        let end = first_gap.unwrap_or(self.written_to).min(self.written_to);
        self.shared_end
            .fetch_max(end, std::sync::atomic::Ordering::Release);
    }

    /// The counters, locked (shared with the job handles; a poisoned lock still holds
    /// counts).
    fn counters(&self) -> std::sync::MutexGuard<'_, Counters> {
        self.counters.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.files.path
    }

    /// How requests reach the file: `io_uring+O_DIRECT`, `io_uring+buffered`,
    /// `pread+O_DIRECT` or `pread+buffered`.
    pub fn backend(&self) -> &str {
        &self.backend
    }

    /// Grow the written part of the file to cover `end` (see the module doc, "No holes").
    fn fill_to(&mut self, end: u64) -> Result<()> {
        if end <= self.written_to {
            return Ok(());
        }
        let chunk = FILL_CHUNK_BYTES as u64;
        let target = end
            .max(self.written_to + self.written_to / 8)
            .max(self.written_to + FILL_MIN_BYTES)
            .div_ceil(chunk)
            * chunk;
        self.write_zeros(self.written_to, target)?;
        self.written_to = target;
        self.publish_end();
        Ok(())
    }

    /// Before a started write of the bytes `start..end`: the written part grows by the
    /// write itself, and a gap between them is remembered, not filled. A started write is
    /// one request that nothing waits on at once, so io_uring handing a write past the end
    /// of the file (or into a gap) to its workers costs nothing; growing the file ahead
    /// with zeros (`fill_to`) wrote every new byte twice (a merge's fresh extent at the end
    /// of the file: 23 MiB of zeros, 0.5-0.9 ms a MiB, in a 62 ms phase of FD-tree
    /// inserts).
    /// At most [`MAX_GAPS`] gaps are remembered (bounded memory); past that, a new gap is
    /// filled at once.
    fn extend_by_write(&mut self, start: u64, end: u64) -> Result<()> {
        self.cover_gaps(start, end);
        if end <= self.written_to {
            return Ok(());
        }
        if start > self.written_to {
            if self.gaps.len() < MAX_GAPS {
                self.gaps.push((self.written_to, start));
            } else {
                self.write_zeros(self.written_to, start)?;
            }
        }
        self.written_to = end;
        self.publish_end();
        Ok(())
    }

    /// The bytes `start..end` are being written: no gap holds them any more.
    fn cover_gaps(&mut self, start: u64, end: u64) {
        if !self.gaps.iter().any(|&(a, b)| a < end && start < b) {
            return;
        }
        let mut left = Vec::with_capacity(self.gaps.len() + 1);
        for &(a, b) in &self.gaps {
            if b <= start || end <= a {
                left.push((a, b));
                continue;
            }
            if a < start {
                left.push((a, start));
            }
            if end < b {
                left.push((end, b));
            }
        }
        self.gaps = left;
        self.publish_end();
    }

    /// Before a batch writes the bytes of `writes` (start, end): fill with zeros each gap
    /// one of them reaches (the batch then overwrites written blocks only).
    fn fill_gaps(&mut self, writes: &[(u64, u64)]) -> Result<()> {
        let mut i = 0;
        while let Some(&(a, b)) = self.gaps.get(i) {
            if writes.iter().any(|&(s, e)| a < e && s < b) {
                self.write_zeros(a, b)?;
                self.gaps.swap_remove(i);
            } else {
                i += 1;
            }
        }
        self.publish_end();
        Ok(())
    }

    /// Write zeros to the bytes `from..to` (whole pages).
    fn write_zeros(&mut self, from: u64, to: u64) -> Result<()> {
        let chunk = FILL_CHUNK_BYTES as u64;
        let zeros = AlignedBuf::zeroed(FILL_CHUNK_BYTES.min((to - from) as usize));
        // First up to a chunk boundary, then a chunk at a time.
        let mut off = from;
        let target = to;
        while off < target {
            let n = (target - off).min(chunk - off % chunk) as usize;
            let mut done = 0;
            while done < n {
                match self.files.file.write_at(&zeros[done..n], off + done as u64) {
                    Ok(0) => {
                        return Err(Error::io(
                            format!("growing {}", self.files.path.display()),
                            io::Error::new(io::ErrorKind::WriteZero, "wrote nothing"),
                        ))
                    }
                    Ok(k) => done += k,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        return Err(Error::io(
                            format!("growing {} to {target} bytes", self.files.path.display()),
                            e,
                        ))
                    }
                }
            }
            self.counters().stats.fill_bytes += n as u64;
            off += n as u64;
        }
        Ok(())
    }

    /// Serve a batch with `pread`/`pwrite`, one request after the other.
    fn submit_sync(&mut self, batch: &mut [IoReq<'_>]) -> Result<()> {
        let ps = self.page_size as u64;
        for req in batch.iter_mut() {
            let page = req.page();
            let pages = req.len() as u64 / ps;
            let offset = page * ps;
            match req {
                IoReq::Read { buf, .. } => {
                    if self.files.needs_bounce(buf) {
                        ensure_len(&mut self.bounce, buf.len());
                        let b = &mut self.bounce[..buf.len()];
                        self.files.read_rest(b, offset, 0, page, pages)?;
                        buf.copy_from_slice(b);
                    } else {
                        self.files.read_rest(buf, offset, 0, page, pages)?;
                    }
                }
                IoReq::Write { buf, .. } => {
                    if self.files.needs_bounce(buf) {
                        ensure_len(&mut self.bounce, buf.len());
                        let b = &mut self.bounce[..buf.len()];
                        b.copy_from_slice(buf);
                        self.files.write_rest(b, offset, 0, page, pages)?;
                    } else {
                        self.files.write_rest(buf, offset, 0, page, pages)?;
                    }
                }
            }
        }
        Ok(())
    }
}

impl Device for FileDevice {
    fn page_size(&self) -> usize {
        self.page_size
    }

    fn submit(&mut self, batch: &mut [IoReq<'_>]) -> Result<()> {
        let ps = self.page_size as u64;
        self.settle_overlapping(batch.iter().map(|r| (r.page(), r.len() as u64 / ps)))?;
        self.counters().record_batch(self.page_size, batch)?;
        let ps = self.page_size as u64;
        let end = batch
            .iter()
            .filter(|r| r.is_write())
            .map(|r| r.page() * ps + r.len() as u64)
            .max();
        if let Some(end) = end {
            if !self.gaps.is_empty() {
                let writes: Vec<(u64, u64)> = batch
                    .iter()
                    .filter(|r| r.is_write())
                    .map(|r| (r.page() * ps, r.page() * ps + r.len() as u64))
                    .collect();
                self.fill_gaps(&writes)?;
            }
            self.fill_to(end)?;
        }
        let n = batch.len() as u64;
        self.counters().begin(n);
        let started = std::time::Instant::now();
        let r = batch
            .chunks_mut(RING_ENTRIES as usize)
            .try_for_each(|chunk| match self.ring.is_some() {
                true => self.submit_chunk(chunk),
                false => self.submit_sync(chunk),
            });
        self.counters().end(n, started.elapsed());
        r
    }

    fn sync(&mut self) -> Result<()> {
        self.settle_writes()?;
        self.counters().stats.syncs += 1;
        self.files
            .file
            .sync_data()
            .map_err(|e| Error::io(format!("syncing {}", self.files.path.display()), e))
    }

    fn trim(&mut self, page: PageId, pages: u64) -> Result<()> {
        self.settle_overlapping(std::iter::once((page, pages)))?;
        if pages == 0 {
            return Ok(());
        }
        let len = usize::try_from(pages)
            .ok()
            .and_then(|p| p.checked_mul(self.page_size))
            .ok_or_else(|| {
                Error::InvalidArgument(format!("trim of {pages} pages at page {page} is too large"))
            })?;
        validate(self.page_size, page, len)?;
        self.counters().stats.trims += pages;
        let offset = page * self.page_size as u64;
        // SAFETY: plain fallocate(2) on an open descriptor.
        let rc = unsafe {
            libc::fallocate(
                self.files.file.as_raw_fd(),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                offset as libc::off_t,
                len as libc::off_t,
            )
        };
        if rc != 0 {
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS) => {}
                _ => {
                    return Err(Error::io(
                        format!(
                            "trimming pages {page}..{} of {}",
                            page + pages,
                            self.files.path.display()
                        ),
                        e,
                    ))
                }
            }
        }
        Ok(())
    }

    fn stats(&self) -> DeviceStats {
        let mut s = self.counters().stats.clone();
        s.backend = self.backend.clone();
        s
    }

    fn start_read(&mut self, page: PageId, buf: AlignedBuf, len: usize) -> Result<Ticket> {
        self.start(page, buf, len, false)
    }

    fn start_write(&mut self, page: PageId, buf: AlignedBuf, len: usize) -> Result<Ticket> {
        self.start(page, buf, len, true)
    }

    fn finish(&mut self, ticket: Ticket) -> Result<AlignedBuf> {
        self.finish_started(ticket)
    }

    fn is_done(&mut self, ticket: &Ticket) -> bool {
        self.started_done(ticket)
    }

    fn overlaps(&self) -> bool {
        self.ring.is_some()
    }

    /// A handle on the same file with a ring of its own, for a merge thread's started
    /// requests; it counts them in this device's counters. `None` without a ring.
    fn job_device(&mut self) -> Result<Option<Box<dyn Device>>> {
        if self.ring.is_none() || self.job {
            return Ok(None);
        }
        let mut dev =
            FileDevice::open_with(&self.files.path, self.page_size, self.files.direct, true)?;
        if dev.ring.is_none() || dev.files.direct != self.files.direct {
            return Ok(None);
        }
        dev.counters = Arc::clone(&self.counters);
        dev.job = true;
        Ok(Some(Box::new(dev)))
    }

    fn reserve_writes(&mut self, page: PageId, pages: u64) -> Result<()> {
        let ps = self.page_size as u64;
        self.extend_by_write(page * ps, (page + pages) * ps)
    }

    /// Reader handles on the same file, one per thread reading at once
    /// (`io::file::shared`).
    fn shared_reader(&mut self) -> Result<Option<Arc<dyn SharedReader>>> {
        Ok(Some(Arc::new(shared::FileReaders::of(self))))
    }
}

fn backend_name(io_uring: bool, direct: bool) -> &'static str {
    match (io_uring, direct) {
        (true, true) => "io_uring+O_DIRECT",
        (true, false) => "io_uring+buffered",
        (false, true) => "pread+O_DIRECT",
        (false, false) => "pread+buffered",
    }
}

/// Grow `buf` to at least `len` bytes (never shrinks: it is reused between requests).
fn ensure_len(buf: &mut AlignedBuf, len: usize) {
    if buf.len() < len {
        *buf = AlignedBuf::zeroed(len.div_ceil(ALIGN) * ALIGN);
    }
}

fn open_file(path: &Path, direct: bool, writable: bool) -> io::Result<File> {
    let mut o = OpenOptions::new();
    o.read(true);
    if writable {
        o.write(true).create(true);
    }
    if direct {
        o.custom_flags(libc::O_DIRECT);
    }
    o.open(path)
}

/// Open the data file, with `O_DIRECT` when asked for and usable for `page_size`.
fn open_files(path: &Path, page_size: usize, direct_io: bool, writable: bool) -> Result<Files> {
    let ctx = || format!("opening {}", path.display());
    let buffered = |file: File| Files {
        file,
        buffered: None,
        direct: false,
        mem_align: ALIGN,
        offset_align: 1,
        path: path.to_path_buf(),
    };
    if !direct_io {
        return Ok(buffered(
            open_file(path, false, writable).map_err(|e| Error::io(ctx(), e))?,
        ));
    }
    let file = match open_file(path, true, writable) {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            return Ok(buffered(
                open_file(path, false, writable).map_err(|e| Error::io(ctx(), e))?,
            ));
        }
        Err(e) => return Err(Error::io(ctx(), e)),
    };
    // What O_DIRECT needs of this file; when statx cannot tell, assume 4 KiB.
    let (mem_align, offset_align) = match dio_align(&file) {
        Some((_, 0)) => (0, 0), // the file system reports no direct I/O for this file
        Some((m, o)) => ((m as usize).max(ALIGN), o as usize),
        None => (ALIGN, ALIGN),
    };
    if offset_align == 0 || page_size % offset_align != 0 || mem_align % ALIGN != 0 {
        drop(file);
        return Ok(buffered(
            open_file(path, false, writable).map_err(|e| Error::io(ctx(), e))?,
        ));
    }
    let plain = open_file(path, false, writable).map_err(|e| Error::io(ctx(), e))?;
    Ok(Files {
        file,
        buffered: Some(plain),
        direct: true,
        mem_align,
        offset_align,
        path: path.to_path_buf(),
    })
}

/// `(stx_dio_mem_align, stx_dio_offset_align)` of an open file, if the kernel reports them.
fn dio_align(file: &File) -> Option<(u32, u32)> {
    let mut stx = std::mem::MaybeUninit::<libc::statx>::zeroed();
    // SAFETY: statx on an open descriptor with AT_EMPTY_PATH and an empty C string path
    // writes at most one `struct statx` into `stx`.
    let rc = unsafe {
        libc::statx(
            file.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_DIOALIGN,
            stx.as_mut_ptr(),
        )
    };
    if rc != 0 {
        return None;
    }
    // SAFETY: zero-initialised and filled by a successful statx.
    let stx = unsafe { stx.assume_init() };
    if stx.stx_mask & libc::STATX_DIOALIGN == 0 {
        return None;
    }
    Some((stx.stx_dio_mem_align, stx.stx_dio_offset_align))
}

#[cfg(test)]
mod tests;
