//! [`FileReaders`]: the [`SharedReader`] of a [`FileDevice`], so that the single reads of
//! many threads are all in flight at once (docs/design.md, Concurrency).
//!
//! A read takes an idle *reader handle* — a [`FileDevice`] on the same file with its own
//! `io_uring` ring (or `pread` where the device has none), counting its requests in the
//! device's counters — or opens one when every handle is busy, reads through it as the
//! device would (the same hybrid polling), and puts it back. So there are as many rings as
//! threads that read at once, each request goes to the kernel from its own thread, and a
//! batch the device's owner submits is in flight beside them. The counters stay exact:
//! every handle records its requests and its in-flight time in the one shared `Counters`.
//!
//! The handles also write, for the buffer pool's write-backs from many threads
//! ([`SharedReader::write_batch`]): only pages below the device's `shared_end`, the part
//! of the file the device has written and will never fill with zeros, so that a handle's
//! write never races the device's own growth of the file; a write that would grow it is
//! left to the device. The caller notes the writes for the reads made outside the lock
//! (`crate::io::watch`) before it issues them.
//!
//! Polling: a handle polls its completion queue (the device's hybrid polling) only while
//! fewer readers are waiting than the machine has cores less one; beyond that every
//! reader sleeps in the kernel. Polling spends the wait on a core, which pays when one
//! thread waits (a sleep and wake-up cost about as much as the read) but not when more
//! threads poll than there are cores: they then wait for a core instead of the device.

use super::FileDevice;
use crate::error::Result;
use crate::io::{Counters, Device, IoReq, PageId, SharedReader};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// Reader handles of one file ([`SharedReader`]).
pub(crate) struct FileReaders {
    path: PathBuf,
    page_size: usize,
    direct: bool,
    io_uring: bool,
    counters: Arc<Mutex<Counters>>,
    /// The device's `shared_end`: writes through the handles stay below it.
    shared_end: Arc<AtomicU64>,
    /// Handles not in use.
    idle: Mutex<Vec<FileDevice>>,
    /// Reads in flight now.
    active: AtomicUsize,
    /// Most readers that poll at once (module doc).
    pollers: usize,
}

impl FileReaders {
    /// Readers of `dev`'s file, opened with its choices (`O_DIRECT`, `io_uring`).
    pub(super) fn of(dev: &FileDevice) -> FileReaders {
        FileReaders {
            path: dev.files.path.clone(),
            page_size: dev.page_size,
            direct: dev.files.direct,
            io_uring: dev.ring.is_some(),
            counters: Arc::clone(&dev.counters),
            shared_end: Arc::clone(&dev.shared_end),
            idle: Mutex::new(Vec::new()),
            active: AtomicUsize::new(0),
            pollers: std::thread::available_parallelism()
                .map_or(1, |n| n.get().saturating_sub(1).max(1)),
        }
    }

    fn idle(&self) -> MutexGuard<'_, Vec<FileDevice>> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A handle of the readers: it keeps no account of the file's written part, and writes
    /// only below the device's `shared_end` ([`SharedReader::write_batch`]).
    fn open(&self) -> Result<FileDevice> {
        let mut h = FileDevice::open_with(&self.path, self.page_size, self.direct, self.io_uring)?;
        h.counters = Arc::clone(&self.counters);
        h.job = true;
        Ok(h)
    }
}

impl FileReaders {
    /// Run `f` on an idle handle (module doc: polling only while few readers wait).
    fn with_handle<T>(&self, f: impl FnOnce(&mut FileDevice) -> Result<T>) -> Result<T> {
        let taken = self.idle().pop();
        let mut h = match taken {
            Some(h) => h,
            None => self.open()?,
        };
        let waiting = self.active.fetch_add(1, Ordering::Relaxed) + 1;
        let spin = h.spin;
        if waiting > self.pollers {
            h.spin = Duration::ZERO;
        }
        let r = f(&mut h);
        h.spin = spin;
        self.active.fetch_sub(1, Ordering::Relaxed);
        self.idle().push(h);
        r
    }
}

impl SharedReader for FileReaders {
    fn read(&self, page: PageId, buf: &mut [u8]) -> Result<()> {
        self.with_handle(|h| h.read(page, buf))
    }

    /// The whole batch through one handle's ring: one submission, every request in
    /// flight at once, as the device's own `submit`.
    fn read_batch(&self, batch: &mut [IoReq<'_>]) -> Result<()> {
        if let Some(r) = batch.iter().find(|r| r.is_write()) {
            return Err(crate::error::Error::InvalidArgument(format!(
                "a shared reader cannot write page {}",
                r.page()
            )));
        }
        self.with_handle(|h| h.submit(batch))
    }

    /// Writes whose pages all lie below the device's `shared_end` (the part of the file
    /// it will never fill with zeros) go through a handle, beside other threads' reads
    /// and writes: as many in flight as threads write at once. Others are left to the
    /// device's owner, which grows the file.
    fn write_batch(&self, batch: &mut [IoReq<'_>]) -> Result<bool> {
        let ps = self.page_size as u64;
        let end = self.shared_end.load(Ordering::Acquire);
        let within = batch
            .iter()
            .all(|r| r.is_write() && (r.page() + r.len() as u64 / ps) * ps <= end);
        if !within || batch.is_empty() {
            return Ok(false);
        }
        self.with_handle(|h| {
            // The handle then fills nothing: every byte it writes is written already.
            h.written_to = h.written_to.max(end);
            h.submit(batch)
        })?;
        Ok(true)
    }
}
