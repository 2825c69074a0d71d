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
//!   Short transfers are completed with the rest of the request (a read that reaches the end
//!   of the file is zero-filled).
//! * When `io_uring` is unavailable (`ENOSYS`, `EPERM`, ...) or `FLASHIX_NO_IO_URING=1` is
//!   set, requests are served one after the other with `pread`/`pwrite` loops.
//!
//! * **No holes.** The file grows ahead of the writes: before a batch writes past the
//!   part of the file already written, the device writes zeros up to at least an eighth more
//!   than that part (and at least [`FILL_MIN_BYTES`]), in large sequential requests, and
//!   every later write is an overwrite of written blocks. Without this, a write into a hole
//!   (a leaf allocated as several pages of which only the first were written, or the end of
//!   the file) makes the file system allocate blocks, which ext4 cannot do without blocking:
//!   io_uring then hands the write to its worker threads, which run the writes to one file
//!   one after the other — a psync batch of 64 writes became 64 serial writes (measured: the
//!   PIO B-tree with 8-page leaves reached 9,200 requests/s instead of about 40,000). The
//!   zeros written are counted in [`DeviceStats::fill_bytes`].
//!
//! The backend chosen at open is reported in [`DeviceStats::backend`] (and [`FileDevice::backend`]):
//! `io_uring+O_DIRECT`, `io_uring+buffered`, `pread+O_DIRECT` or `pread+buffered`.

use super::aligned::{AlignedBuf, ALIGN};
use super::{check_page_size, validate, Counters, Device, DeviceStats, IoReq, PageId};
use crate::error::{Error, Result};
use io_uring::{opcode, types, IoUring};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// Entries of the submission ring: the most requests in flight at once.
const RING_ENTRIES: u32 = 64;

/// Largest transfer put in one SQE (its length field is 32 bits). A larger request is
/// started through the ring and completed like a short transfer. A multiple of every
/// valid page size.
const MAX_SQE_BYTES: usize = 1 << 30;

/// Least number of bytes the file grows by when a write goes past its written part.
pub const FILL_MIN_BYTES: u64 = 1 << 20;

/// Size of one request of zeros when the file grows.
const FILL_CHUNK_BYTES: usize = 1 << 20;

/// `IORING_ENTER_GETEVENTS` of io_uring_enter(2) (the crate keeps its `sys` module private).
const IORING_ENTER_GETEVENTS: u32 = 1;

/// Environment variable that forces the `pread`/`pwrite` fallback when set to `1`.
pub const NO_IO_URING_ENV: &str = "FLASHIX_NO_IO_URING";

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
    /// Reusable bounce buffer for unaligned caller buffers under `O_DIRECT`.
    bounce: AlignedBuf,
    /// Per-chunk scratch: bounce offset of each request (reused between batches).
    slots: Vec<Option<usize>>,
    /// Per-chunk scratch: completion result of each request.
    results: Vec<Option<i32>>,
    counters: Counters,
    /// Bytes at the start of the file that this device has written or found written (the
    /// file's length at open): a write below it never fills a hole the device made.
    written_to: u64,
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
        check_page_size(page_size)?;
        let files = open_files(path, page_size, direct_io)?;
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
            page_size,
            files,
            ring,
            bounce: AlignedBuf::zeroed(0),
            slots: Vec::new(),
            results: Vec::new(),
            counters: Counters::new(backend),
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.files.path
    }

    /// How requests reach the file: `io_uring+O_DIRECT`, `io_uring+buffered`,
    /// `pread+O_DIRECT` or `pread+buffered`.
    pub fn backend(&self) -> &str {
        &self.counters.stats.backend
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
        let zeros = AlignedBuf::zeroed(FILL_CHUNK_BYTES);
        // From the end of the written part (a whole number of pages), first up to a chunk
        // boundary, then a chunk at a time.
        let mut off = self.written_to;
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
            self.counters.stats.fill_bytes += n as u64;
            off += n as u64;
        }
        self.written_to = target;
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

    /// Serve at most [`RING_ENTRIES`] requests through the ring: push one SQE per request,
    /// submit them together, reap every completion, then check each result.
    fn submit_chunk(&mut self, chunk: &mut [IoReq<'_>]) -> Result<()> {
        let ps = self.page_size as u64;
        let n = chunk.len();

        // Bounce slots for unaligned buffers, each rounded up to ALIGN.
        let mut slots = std::mem::take(&mut self.slots);
        slots.clear();
        let mut bounce_total = 0usize;
        for req in chunk.iter() {
            let buf: &[u8] = match req {
                IoReq::Read { buf, .. } => buf,
                IoReq::Write { buf, .. } => buf,
            };
            if self.files.needs_bounce(buf) {
                slots.push(Some(bounce_total));
                bounce_total += buf.len().div_ceil(ALIGN) * ALIGN;
            } else {
                slots.push(None);
            }
        }
        ensure_len(&mut self.bounce, bounce_total);
        for (req, slot) in chunk.iter().zip(&slots) {
            if let (IoReq::Write { buf, .. }, Some(off)) = (req, slot) {
                self.bounce[*off..*off + buf.len()].copy_from_slice(buf);
            }
        }

        let mut results = std::mem::take(&mut self.results);
        results.clear();
        results.resize(n, None);

        let outcome = self.run_ring(chunk, &slots, &mut results);
        let checked = outcome.and_then(|()| self.finish_chunk(chunk, &slots, &results, ps));
        self.slots = slots;
        self.results = results;
        checked
    }

    /// Push, submit and reap one chunk. On return no request of the chunk is in flight.
    /// `results[i]` is `None` for a request the ring never ran (the ring failed; the caller
    /// then serves it synchronously).
    fn run_ring(
        &mut self,
        chunk: &mut [IoReq<'_>],
        slots: &[Option<usize>],
        results: &mut [Option<i32>],
    ) -> Result<()> {
        let ps = self.page_size as u64;
        let Some(ring) = self.ring.as_mut() else {
            return Ok(());
        };
        let fd = types::Fd(self.files.file.as_raw_fd());
        let bounce_ptr = self.bounce.as_mut_ptr();
        let n = chunk.len();

        // Push every request as one SQE.
        let mut pushed = 0usize;
        {
            let mut sq = ring.submission();
            for (i, req) in chunk.iter_mut().enumerate() {
                let offset = req.page() * ps;
                let entry = match req {
                    IoReq::Read { buf, .. } => {
                        let len = buf.len().min(MAX_SQE_BYTES) as u32;
                        let ptr = match slots[i] {
                            // SAFETY: the slot lies inside `bounce` (sized above).
                            Some(off) => unsafe { bounce_ptr.add(off) },
                            None => buf.as_mut_ptr(),
                        };
                        opcode::Read::new(fd, ptr, len).offset(offset).build()
                    }
                    IoReq::Write { buf, .. } => {
                        let len = buf.len().min(MAX_SQE_BYTES) as u32;
                        let ptr = match slots[i] {
                            // SAFETY: the slot lies inside `bounce` (sized and filled above).
                            Some(off) => unsafe { bounce_ptr.add(off) as *const u8 },
                            None => buf.as_ptr(),
                        };
                        opcode::Write::new(fd, ptr, len).offset(offset).build()
                    }
                };
                // SAFETY: the buffer behind the SQE (the caller's, borrowed for the whole
                // call, or the bounce buffer, not touched until the chunk is reaped) stays
                // valid until its completion is reaped below.
                if unsafe { sq.push(&entry.user_data(i as u64)) }.is_err() {
                    break;
                }
                pushed += 1;
            }
        }

        let mut submitted = 0usize;
        let mut completed = 0usize;
        let mut fatal: Option<io::Error> = None;
        while completed < pushed {
            if fatal.is_none() {
                match ring.submit_and_wait(1) {
                    Ok(k) => submitted += k,
                    Err(e) if is_transient(&e) => {}
                    Err(e) => fatal = Some(e),
                }
            } else {
                if completed >= submitted {
                    break;
                }
                // Only wait for what is in flight: submit nothing more.
                // SAFETY: plain io_uring_enter(to_submit 0, min_complete 1, GETEVENTS).
                let r = unsafe {
                    ring.submitter()
                        .enter::<libc::sigset_t>(0, 1, IORING_ENTER_GETEVENTS, None)
                };
                if let Err(e) = r {
                    if !is_transient(&e) {
                        break;
                    }
                }
            }
            for cqe in ring.completion() {
                let i = cqe.user_data() as usize;
                if i < n && results[i].is_none() {
                    results[i] = Some(cqe.result());
                    completed += 1;
                }
            }
        }

        if fatal.is_some() || pushed < n {
            // The ring cannot be trusted any more: drop it (unsubmitted SQEs go with it) and
            // serve everything from now on with pread/pwrite.
            self.ring = None;
            self.counters.stats.backend = backend_name(false, self.files.direct).to_string();
        }
        Ok(())
    }

    /// Check each completion of a chunk; complete short transfers and requests the ring did
    /// not run; copy bounced reads back to the caller.
    fn finish_chunk(
        &mut self,
        chunk: &mut [IoReq<'_>],
        slots: &[Option<usize>],
        results: &[Option<i32>],
        ps: u64,
    ) -> Result<()> {
        let mut first_err: Option<Error> = None;
        for (i, req) in chunk.iter_mut().enumerate() {
            let page = req.page();
            let pages = req.len() as u64 / ps;
            let offset = page * ps;
            let write = req.is_write();
            let done = match results[i] {
                Some(r) if r < 0 => {
                    if first_err.is_none() {
                        first_err = Some(Error::io(
                            self.files.context(write, page, pages),
                            io::Error::from_raw_os_error(-r),
                        ));
                    }
                    continue;
                }
                Some(r) => r as usize,
                None => 0,
            };
            let r = match req {
                IoReq::Read { buf, .. } => match slots[i] {
                    Some(off) => {
                        let b = &mut self.bounce[off..off + buf.len()];
                        let r = self.files.read_rest(b, offset, done, page, pages);
                        buf.copy_from_slice(b);
                        r
                    }
                    None => self.files.read_rest(buf, offset, done, page, pages),
                },
                IoReq::Write { buf, .. } => match slots[i] {
                    Some(off) => {
                        let b = &self.bounce[off..off + buf.len()];
                        self.files.write_rest(b, offset, done, page, pages)
                    }
                    None => self.files.write_rest(buf, offset, done, page, pages),
                },
            };
            if let Err(e) = r {
                if first_err.is_none() {
                    first_err = Some(e);
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl Device for FileDevice {
    fn page_size(&self) -> usize {
        self.page_size
    }

    fn submit(&mut self, batch: &mut [IoReq<'_>]) -> Result<()> {
        self.counters.record_batch(self.page_size, batch)?;
        let ps = self.page_size as u64;
        let end = batch
            .iter()
            .filter(|r| r.is_write())
            .map(|r| r.page() * ps + r.len() as u64)
            .max();
        if let Some(end) = end {
            self.fill_to(end)?;
        }
        for chunk in batch.chunks_mut(RING_ENTRIES as usize) {
            if self.ring.is_some() {
                self.submit_chunk(chunk)?;
            } else {
                self.submit_sync(chunk)?;
            }
        }
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        self.counters.stats.syncs += 1;
        self.files
            .file
            .sync_data()
            .map_err(|e| Error::io(format!("syncing {}", self.files.path.display()), e))
    }

    fn trim(&mut self, page: PageId, pages: u64) -> Result<()> {
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
        self.counters.stats.trims += pages;
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
        self.counters.stats.clone()
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

fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EINTR) | Some(libc::EAGAIN) | Some(libc::EBUSY)
    )
}

/// Grow `buf` to at least `len` bytes (never shrinks: it is reused between requests).
fn ensure_len(buf: &mut AlignedBuf, len: usize) {
    if buf.len() < len {
        *buf = AlignedBuf::zeroed(len.div_ceil(ALIGN) * ALIGN);
    }
}

fn open_file(path: &Path, direct: bool) -> io::Result<File> {
    let mut o = OpenOptions::new();
    o.read(true).write(true).create(true);
    if direct {
        o.custom_flags(libc::O_DIRECT);
    }
    o.open(path)
}

/// Open the data file, with `O_DIRECT` when asked for and usable for `page_size`.
fn open_files(path: &Path, page_size: usize, direct_io: bool) -> Result<Files> {
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
            open_file(path, false).map_err(|e| Error::io(ctx(), e))?,
        ));
    }
    let file = match open_file(path, true) {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            return Ok(buffered(
                open_file(path, false).map_err(|e| Error::io(ctx(), e))?,
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
            open_file(path, false).map_err(|e| Error::io(ctx(), e))?,
        ));
    }
    let plain = open_file(path, false).map_err(|e| Error::io(ctx(), e))?;
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
mod tests {
    use super::*;
    use std::path::PathBuf;

    const PS: usize = 4096;
    const BACKENDS: [&str; 4] = [
        "io_uring+O_DIRECT",
        "io_uring+buffered",
        "pread+O_DIRECT",
        "pread+buffered",
    ];

    /// Directories to test in: the system temp dir and one under the workspace target dir
    /// (the system temp dir may be tmpfs, which may refuse O_DIRECT).
    fn test_dirs() -> Vec<tempfile::TempDir> {
        let mut dirs = Vec::new();
        if let Ok(d) = tempfile::tempdir() {
            dirs.push(d);
        }
        let target =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/flashix-test-tmp");
        if std::fs::create_dir_all(&target).is_ok() {
            if let Ok(d) = tempfile::tempdir_in(&target) {
                dirs.push(d);
            }
        }
        assert!(!dirs.is_empty());
        dirs
    }

    /// Every combination of (direct_io, io_uring) in every test directory.
    fn devices(name: &str) -> Vec<(FileDevice, std::sync::Arc<tempfile::TempDir>)> {
        let mut out = Vec::new();
        for dir in test_dirs() {
            let dir = std::sync::Arc::new(dir);
            for direct in [true, false] {
                for uring in [true, false] {
                    let sub = dir.path().join(format!("{direct}-{uring}"));
                    std::fs::create_dir_all(&sub).unwrap();
                    let dev = FileDevice::open_with(&sub.join(name), PS, direct, uring).unwrap();
                    assert!(BACKENDS.contains(&dev.backend()), "{}", dev.backend());
                    if !uring {
                        assert!(dev.backend().starts_with("pread+"));
                    }
                    if !direct {
                        assert!(dev.backend().ends_with("+buffered"));
                    }
                    out.push((dev, dir.clone()));
                }
            }
        }
        out
    }

    fn pattern(seed: u64, len: usize) -> Vec<u8> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    fn aligned(data: &[u8]) -> AlignedBuf {
        let mut b = AlignedBuf::zeroed(data.len());
        b.copy_from_slice(data);
        b
    }

    #[test]
    fn backend_is_one_of_four() {
        for (dev, _d) in devices("data") {
            assert!(BACKENDS.contains(&dev.backend()));
            assert_eq!(dev.stats().backend, dev.backend());
            assert_eq!(dev.page_size(), PS);
        }
        let d = tempfile::tempdir().unwrap();
        let dev = FileDevice::open(&d.path().join("data"), PS, true).unwrap();
        assert!(BACKENDS.contains(&dev.backend()));
        assert_eq!(dev.path(), d.path().join("data"));
        eprintln!(
            "backend chosen in {}: {}",
            d.path().display(),
            dev.backend()
        );
    }

    #[test]
    fn single_and_multi_page_round_trip() {
        for (mut dev, _d) in devices("data") {
            let one = aligned(&pattern(1, PS));
            dev.write(3, &one).unwrap();
            let many = aligned(&pattern(2, 128 * PS));
            dev.write(10, &many).unwrap();
            let mut r1 = AlignedBuf::zeroed(PS);
            dev.read(3, &mut r1).unwrap();
            assert_eq!(&r1[..], &one[..], "{}", dev.backend());
            let mut rm = AlignedBuf::zeroed(128 * PS);
            dev.read(10, &mut rm).unwrap();
            assert_eq!(&rm[..], &many[..], "{}", dev.backend());
            // Never-written pages inside the file read as zeros.
            let mut hole = AlignedBuf::zeroed(2 * PS);
            hole.fill(0xAA);
            dev.read(5, &mut hole).unwrap();
            assert!(hole.iter().all(|&b| b == 0));
            // Survives reopen.
            dev.sync().unwrap();
            let path = dev.path().to_path_buf();
            drop(dev);
            let mut dev = FileDevice::open(&path, PS, true).unwrap();
            let mut rm = AlignedBuf::zeroed(128 * PS);
            dev.read(10, &mut rm).unwrap();
            assert_eq!(&rm[..], &many[..]);
        }
    }

    #[test]
    fn mixed_batch_of_40() {
        for (mut dev, _d) in devices("data") {
            // Pre-write pages 0..200 so the batch's reads have something to read.
            let base = aligned(&pattern(7, 200 * PS));
            dev.write(0, &base).unwrap();
            // 20 writes of 1..=4 pages at pages 300.. and 20 reads of 1..=3 pages from base.
            let wdata: Vec<(u64, AlignedBuf)> = (0..20u64)
                .map(|i| {
                    (
                        300 + i * 8,
                        aligned(&pattern(100 + i, (1 + i as usize % 4) * PS)),
                    )
                })
                .collect();
            let mut rbufs: Vec<(u64, AlignedBuf)> = (0..20u64)
                .map(|i| (i * 9, AlignedBuf::zeroed((1 + i as usize % 3) * PS)))
                .collect();
            {
                let mut batch: Vec<IoReq<'_>> = Vec::new();
                let mut rit = rbufs.iter_mut();
                for (p, b) in &wdata {
                    batch.push(IoReq::Write { page: *p, buf: b });
                    if let Some((rp, rb)) = rit.next() {
                        batch.push(IoReq::Read { page: *rp, buf: rb });
                    }
                }
                assert_eq!(batch.len(), 40);
                dev.submit(&mut batch).unwrap();
            }
            for (p, b) in &rbufs {
                let s = *p as usize * PS;
                assert_eq!(&b[..], &base[s..s + b.len()], "{}", dev.backend());
            }
            for (p, b) in &wdata {
                let mut r = AlignedBuf::zeroed(b.len());
                dev.read(*p, &mut r).unwrap();
                assert_eq!(&r[..], &b[..], "{}", dev.backend());
            }
            let s = dev.stats();
            assert_eq!(s.max_queue_depth, 40);
        }
    }

    #[test]
    fn batch_larger_than_ring() {
        for (mut dev, _d) in devices("data") {
            let bufs: Vec<AlignedBuf> = (0..150u64).map(|i| aligned(&pattern(i, PS))).collect();
            let mut batch: Vec<IoReq<'_>> = bufs
                .iter()
                .enumerate()
                .map(|(i, b)| IoReq::Write {
                    page: (i as u64 * 7) % 151,
                    buf: b,
                })
                .collect();
            dev.submit(&mut batch).unwrap();
            let mut outs: Vec<AlignedBuf> = (0..150).map(|_| AlignedBuf::zeroed(PS)).collect();
            let mut batch: Vec<IoReq<'_>> = outs
                .iter_mut()
                .enumerate()
                .map(|(i, b)| IoReq::Read {
                    page: (i as u64 * 7) % 151,
                    buf: b,
                })
                .collect();
            dev.submit(&mut batch).unwrap();
            for (o, b) in outs.iter().zip(&bufs) {
                assert_eq!(&o[..], &b[..]);
            }
        }
    }

    #[test]
    fn reads_past_eof_are_zero_filled() {
        for (mut dev, _d) in devices("data") {
            let data = aligned(&pattern(3, 2 * PS));
            dev.write(0, &data).unwrap();
            // Entirely past EOF.
            let mut r = AlignedBuf::zeroed(4 * PS);
            r.fill(0x55);
            dev.read(100, &mut r).unwrap();
            assert!(r.iter().all(|&b| b == 0));
            // Straddling EOF: first page real, rest zeros.
            let mut r = AlignedBuf::zeroed(4 * PS);
            r.fill(0x55);
            dev.read(1, &mut r).unwrap();
            assert_eq!(&r[..PS], &data[PS..]);
            assert!(r[PS..].iter().all(|&b| b == 0), "{}", dev.backend());
            // A read of an empty, fresh file.
            let d2 = tempfile::tempdir().unwrap();
            let mut fresh = FileDevice::open(&d2.path().join("x"), PS, true).unwrap();
            let mut r = AlignedBuf::zeroed(PS);
            r.fill(1);
            fresh.read(0, &mut r).unwrap();
            assert!(r.iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn unaligned_caller_buffers() {
        for (mut dev, _d) in devices("data") {
            let data = pattern(9, 3 * PS);
            let mut wv = vec![0u8; 3 * PS + 1];
            wv[1..].copy_from_slice(&data);
            let one = pattern(10, PS);
            let mut ov = vec![0u8; PS + 3];
            ov[3..].copy_from_slice(&one);
            {
                let mut batch = [
                    IoReq::Write {
                        page: 4,
                        buf: &wv[1..],
                    },
                    IoReq::Write {
                        page: 20,
                        buf: &ov[3..],
                    },
                ];
                dev.submit(&mut batch).unwrap();
            }
            let mut rv = vec![0u8; 3 * PS + 5];
            let mut rv2 = vec![0u8; PS + 7];
            {
                let mut batch = [
                    IoReq::Read {
                        page: 4,
                        buf: &mut rv[5..],
                    },
                    IoReq::Read {
                        page: 20,
                        buf: &mut rv2[7..],
                    },
                ];
                dev.submit(&mut batch).unwrap();
            }
            assert_eq!(&rv[5..], &data[..], "{}", dev.backend());
            assert_eq!(&rv2[7..], &one[..], "{}", dev.backend());
            // Single unaligned request through the one-request helpers too.
            let mut rv3 = vec![0u8; PS + 1];
            dev.read(5, &mut rv3[1..]).unwrap();
            assert_eq!(&rv3[1..], &data[PS..2 * PS]);
        }
    }

    #[test]
    fn fallback_path_round_trip() {
        let d = tempfile::tempdir().unwrap();
        let mut dev = FileDevice::open_with(&d.path().join("data"), PS, true, false).unwrap();
        assert!(dev.backend().starts_with("pread+"));
        let data = aligned(&pattern(11, 16 * PS));
        dev.write(2, &data).unwrap();
        let mut r = AlignedBuf::zeroed(20 * PS);
        dev.read(0, &mut r).unwrap();
        assert!(r[..2 * PS].iter().all(|&b| b == 0));
        assert_eq!(&r[2 * PS..18 * PS], &data[..]);
        assert!(r[18 * PS..].iter().all(|&b| b == 0));
        dev.sync().unwrap();
        dev.trim(2, 4).unwrap();
        let mut r = AlignedBuf::zeroed(4 * PS);
        dev.read(2, &mut r).unwrap();
        assert!(r.iter().all(|&b| b == 0));
        let s = dev.stats();
        assert_eq!(s.syncs, 1);
        assert_eq!(s.trims, 4);
    }

    #[test]
    fn counters_requests_pages_and_sequentiality() {
        for (mut dev, _d) in devices("data") {
            let big = AlignedBuf::zeroed(128 * PS);
            dev.write(0, &big).unwrap();
            let s = dev.stats();
            assert_eq!(s.write_requests, 1);
            assert_eq!(s.writes, 128);
            assert_eq!(s.write_bytes, 128 * PS as u64);
            assert_eq!(s.random_writes, 1);
            dev.write(128, &big[..PS]).unwrap(); // starts where the previous write ended
            dev.write(5, &big[..PS]).unwrap(); // random
            let s = dev.stats();
            assert_eq!(s.sequential_writes, 1);
            assert_eq!(s.random_writes, 2);
            assert_eq!(s.write_requests, 3);
            assert_eq!(s.writes, 130);

            let mut r = AlignedBuf::zeroed(128 * PS);
            dev.read(0, &mut r).unwrap();
            dev.read(128, &mut r[..2 * PS]).unwrap();
            dev.read(7, &mut r[..PS]).unwrap();
            let s = dev.stats();
            assert_eq!(s.read_requests, 3);
            assert_eq!(s.reads, 131);
            assert_eq!(s.sequential_reads, 1);
            assert_eq!(s.random_reads, 2);
            assert_eq!(s.batches, 6);
            assert_eq!(s.max_queue_depth, 1);
        }
    }

    #[test]
    fn invalid_requests_and_errors_name_the_file() {
        let d = tempfile::tempdir().unwrap();
        let mut dev = FileDevice::open(&d.path().join("data"), PS, true).unwrap();
        let mut short = vec![0u8; 100];
        assert!(matches!(
            dev.read(0, &mut short),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            FileDevice::open(&d.path().join("data"), 1000, true),
            Err(Error::InvalidOptions(_))
        ));
        // A path whose parent does not exist.
        let missing = d.path().join("no/such/dir/data");
        match FileDevice::open(&missing, PS, true) {
            Err(e @ Error::Io { .. }) => {
                assert!(e.to_string().contains("no/such/dir/data"), "{e}");
                assert!(!e.is_no_space());
            }
            Err(e) => panic!("unexpected error {e}"),
            Ok(_) => panic!("opened a file in a missing directory"),
        }
    }

    /// The file grows ahead of the writes with zeros (no holes), never over data already
    /// there, and what it wrote is counted apart from the requests.
    #[test]
    fn the_file_grows_ahead_of_writes_without_touching_data() {
        for (mut dev, dir) in devices("fill") {
            let path = dev.path().to_path_buf();
            let a = aligned(&pattern(1, PS));
            dev.write(3, &a).unwrap();
            let len = std::fs::metadata(&path).unwrap().len();
            assert_eq!(len, FILL_MIN_BYTES, "{}", dev.backend());
            let s = dev.stats();
            assert_eq!(s.fill_bytes, FILL_MIN_BYTES);
            assert_eq!(s.write_bytes, PS as u64, "zeros are not request bytes");
            // A write inside the grown part does not grow it.
            dev.write(100, &a).unwrap();
            assert_eq!(dev.stats().fill_bytes, FILL_MIN_BYTES);
            drop(dev);
            // Reopened on a file of one odd page count: growth starts at its end.
            let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            f.set_len(FILL_MIN_BYTES + 3 * PS as u64).unwrap();
            drop(f);
            let mut dev = FileDevice::open(&path, PS, true).unwrap();
            let far = (FILL_MIN_BYTES / PS as u64) + 2;
            let b = aligned(&pattern(2, PS));
            dev.write(far, &b).unwrap();
            dev.write(far + 4000, &b).unwrap();
            let len = std::fs::metadata(&path).unwrap().len();
            assert!(len >= (far + 4001) * PS as u64, "{len}");
            for (page, want) in [(3, &a), (100, &a), (far, &b), (far + 4000, &b)] {
                let mut r = AlignedBuf::zeroed(PS);
                dev.read(page, &mut r).unwrap();
                assert_eq!(&r[..], &want[..], "page {page}");
            }
            let mut r = AlignedBuf::zeroed(PS);
            dev.read(far + 1, &mut r).unwrap();
            assert!(r.iter().all(|&x| x == 0));
            drop(dir);
        }
    }
}
