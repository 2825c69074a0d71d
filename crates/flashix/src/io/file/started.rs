//! Requests started without waiting ([`crate::io::Device::start_read`], `start_write`):
//! the overlap of a merge's I/O with its CPU (a merge reads the next 512 KiB of
//! its inputs and writes the previous 512 KiB of its output while it merges the current).
//!
//! Through the ring, a started request is one SQE tagged [`STARTED_TAG`] | its id, handed to
//! the kernel with a non-blocking `io_uring_enter`; the device keeps the buffer (the
//! kernel's target) in [`Started`] until `Device::finish` takes it back, so a ticket
//! dropped unfinished never leaves the kernel writing into freed memory. At most
//! [`MAX_STARTED`] are in flight; one more first waits for the oldest.
//!
//! Ordering: a batch (`submit`) or a `trim` first waits for the started requests whose
//! pages it overlaps ([`FileDevice::settle_overlapping`]), so that it sees a started write
//! and a started read does not see it; the others stay in flight beside it (the batch's
//! reaping records their completions). A `sync` first waits for every started write
//! ([`FileDevice::settle_writes`]), completing short transfers, so it covers them. Started
//! requests among themselves must not overlap (the `Device` contract).
//!
//! Without a ring, or for a buffer `O_DIRECT` cannot take, a request is served at once with
//! `pread`/`pwrite`, as the default `Device` methods do.

use super::FileDevice;
use crate::error::{Error, Result};
use crate::io::aligned::AlignedBuf;
use crate::io::{IoReq, PageId, Started as TicketState, Ticket};
use io_uring::{opcode, types};
use std::io;
use std::os::unix::io::AsRawFd;

/// Tag of a started request's `user_data` (a batch's SQEs carry their index, far below).
const STARTED_TAG: u64 = 1 << 63;

/// True for the `user_data` of a started request's completion.
pub(super) fn is_started(user_data: u64) -> bool {
    user_data & STARTED_TAG != 0
}

/// Most started requests in flight at once (the ring has room for a batch chunk beside).
pub(super) const MAX_STARTED: usize = 16;

/// A started request in flight or done, not yet finished.
pub(super) struct Started {
    id: u64,
    page: PageId,
    len: usize,
    write: bool,
    buf: AlignedBuf,
    /// The completion's result (bytes or `-errno`), once reaped.
    result: Option<i32>,
    /// Short transfers completed (after `settle`): the request is entirely done.
    settled: bool,
}

impl FileDevice {
    /// Start one request: counted as a batch of one; through the ring when it can be.
    pub(super) fn start(
        &mut self,
        page: PageId,
        mut buf: AlignedBuf,
        len: usize,
        write: bool,
    ) -> Result<Ticket> {
        if len > buf.len() {
            return Err(Error::InvalidArgument(format!(
                "a request of {len} bytes does not fit its buffer of {}",
                buf.len()
            )));
        }
        {
            let b = &mut buf[..len];
            let req = if write {
                IoReq::Write { page, buf: b }
            } else {
                IoReq::Read { page, buf: b }
            };
            self.counters().record_batch(self.page_size, &[req])?;
        }
        // A job handle's writes go where its device reserved them (`Device::reserve_writes`).
        if write && !self.job {
            let start = page * self.page_size as u64;
            self.extend_by_write(start, start + len as u64)?;
        }
        let direct_ok = !self.files.needs_bounce(&buf[..len]);
        if self.ring.is_none() || !direct_ok || len > super::uring::MAX_SQE_BYTES {
            return self.serve_now(page, buf, len, write);
        }
        // Room in the ring: settle the oldest in flight (a settled request holds none).
        while let Some(i) = self.oldest_in_flight() {
            self.settle_at(i)?;
        }
        let id = self.next_started;
        self.next_started += 1;
        let fd = types::Fd(self.files.file.as_raw_fd());
        let offset = page * self.page_size as u64;
        let entry = if write {
            opcode::Write::new(fd, buf.as_ptr(), len as u32)
                .offset(offset)
                .build()
        } else {
            opcode::Read::new(fd, buf.as_mut_ptr(), len as u32)
                .offset(offset)
                .build()
        }
        .user_data(STARTED_TAG | id);
        // The buffer moves into `started` (its heap allocation does not move), where it
        // stays until the completion is reaped.
        self.started.push(Started {
            id,
            page,
            len,
            write,
            buf,
            result: None,
            settled: false,
        });
        let pushed = match self.ring.as_mut() {
            // SAFETY: the SQE's buffer is owned by `self.started` until its completion is
            // reaped (`settle_*`, and `Drop`, which waits for every started request).
            Some(ring) => unsafe { ring.submission().push(&entry) }.is_ok(),
            None => false,
        };
        if !pushed {
            // The ring is full of a batch's leftovers (cannot happen: batches are reaped
            // before they return): serve this one at once.
            return match self.started.pop() {
                Some(s) => self.serve_now(page, s.buf, len, write),
                None => Err(lost()),
            };
        }
        self.enter(0)?;
        Ok(Ticket(TicketState::InFlight(id)))
    }

    /// Serve a request at once with `pread`/`pwrite` (no ring, or a buffer the ring cannot
    /// take); its ticket is done already.
    fn serve_now(
        &mut self,
        page: PageId,
        mut buf: AlignedBuf,
        len: usize,
        write: bool,
    ) -> Result<Ticket> {
        let ps = self.page_size as u64;
        let pages = len as u64 / ps;
        if write {
            self.files
                .write_rest(&buf[..len], page * ps, 0, page, pages)?;
        } else {
            self.files
                .read_rest(&mut buf[..len], page * ps, 0, page, pages)?;
        }
        Ok(Ticket(TicketState::Done(buf)))
    }

    /// Wait for a started request and take its buffer back.
    pub(super) fn finish_started(&mut self, ticket: Ticket) -> Result<AlignedBuf> {
        let id = match ticket.0 {
            TicketState::Done(buf) => return Ok(buf),
            TicketState::InFlight(id) => id,
        };
        let i = self
            .started
            .iter()
            .position(|s| s.id == id)
            .ok_or_else(|| Error::InvalidArgument(format!("request {id} is not in flight here")))?;
        self.settle_at(i)?;
        let s = self.started.remove(i);
        match s.result {
            Some(r) if r < 0 => Err(Error::io(
                self.files
                    .context(s.write, s.page, (s.len / self.page_size) as u64),
                io::Error::from_raw_os_error(-r),
            )),
            _ => Ok(s.buf),
        }
    }

    /// Whether the request of `ticket` is complete, from the completions the kernel has
    /// posted (no system call, no wait).
    pub(super) fn started_done(&mut self, ticket: &Ticket) -> bool {
        let id = match ticket.0 {
            TicketState::Done(_) => return true,
            TicketState::InFlight(id) => id,
        };
        let done: Vec<(u64, i32)> = match self.ring.as_mut() {
            Some(ring) => ring
                .completion()
                .map(|c| (c.user_data(), c.result()))
                .collect(),
            None => Vec::new(),
        };
        for (tag, result) in done {
            // Nothing but started requests is in flight outside a batch.
            self.record_started(tag, result);
        }
        // A request not found is reported by `finish`, which does not wait for it.
        self.started
            .iter()
            .find(|s| s.id == id)
            .map_or(true, |s| s.result.is_some())
    }

    /// Wait for the started requests that overlap a page range of `ranges` (first page,
    /// pages) and complete their short transfers.
    pub(super) fn settle_overlapping(
        &mut self,
        ranges: impl Iterator<Item = (PageId, u64)> + Clone,
    ) -> Result<()> {
        let ps = self.page_size as u64;
        for i in 0..self.started.len() {
            let s = &self.started[i];
            if s.settled {
                continue;
            }
            let (a, b) = (s.page, s.page + s.len as u64 / ps);
            if ranges.clone().any(|(p, n)| p < b && a < p + n) {
                self.settle_at(i)?;
            }
        }
        Ok(())
    }

    /// Wait for every started write and complete its short transfer, so that a sync
    /// covers it; a failed one fails the sync (and stays for `finish` to report).
    pub(super) fn settle_writes(&mut self) -> Result<()> {
        for i in 0..self.started.len() {
            if self.started[i].write {
                self.settle_at(i)?;
            }
        }
        match self
            .started
            .iter()
            .find(|s| s.write && s.result.is_some_and(|r| r < 0))
        {
            Some(s) => Err(Error::io(
                self.files
                    .context(true, s.page, (s.len / self.page_size) as u64),
                io::Error::from_raw_os_error(-s.result.unwrap_or(-libc::EIO)),
            )),
            None => Ok(()),
        }
    }

    /// Record the completion `cqe` if it is a started request's (true), else leave it to
    /// the caller (a batch's).
    pub(super) fn record_started(&mut self, user_data: u64, result: i32) -> bool {
        if user_data & STARTED_TAG == 0 {
            return false;
        }
        let id = user_data & !STARTED_TAG;
        if let Some(s) = self.started.iter_mut().find(|s| s.id == id) {
            s.result = Some(result);
        }
        true
    }

    /// The oldest started request still in flight when [`MAX_STARTED`] are.
    fn oldest_in_flight(&self) -> Option<usize> {
        let in_flight = self.started.iter().filter(|s| !s.settled).count();
        if in_flight < MAX_STARTED {
            return None;
        }
        self.started.iter().position(|s| !s.settled)
    }

    /// Wait for the completion of `started[i]` and complete a short transfer.
    fn settle_at(&mut self, i: usize) -> Result<()> {
        while self.started[i].result.is_none() {
            self.enter(1)?;
        }
        let ps = self.page_size as u64;
        let s = &mut self.started[i];
        if s.settled {
            return Ok(());
        }
        s.settled = true;
        let Some(r) = s.result else { return Ok(()) };
        if r < 0 {
            return Ok(());
        }
        let (page, len) = (s.page, s.len);
        let pages = len as u64 / ps;
        let done = r as usize;
        let outcome = if s.write {
            self.files
                .write_rest(&s.buf[..len], page * ps, done, page, pages)
        } else {
            self.files
                .read_rest(&mut s.buf[..len], page * ps, done, page, pages)
        };
        if let Err(e) = outcome {
            let errno = match e {
                Error::Io { source, .. } => source.raw_os_error().unwrap_or(libc::EIO),
                _ => libc::EIO,
            };
            s.result = Some(-errno);
        }
        Ok(())
    }

    /// Submit what is queued and wait for at least `wait` completions; record every
    /// completion of a started request.
    fn enter(&mut self, wait: usize) -> Result<()> {
        let Some(ring) = self.ring.as_mut() else {
            return Err(lost());
        };
        loop {
            match ring.submit_and_wait(wait) {
                Ok(_) => break,
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EINTR) | Some(libc::EAGAIN) | Some(libc::EBUSY)
                    ) =>
                {
                    if wait == 0 {
                        break;
                    }
                }
                Err(e) => {
                    return Err(Error::io(
                        format!(
                            "waiting for started requests on {}",
                            self.files.path.display()
                        ),
                        e,
                    ))
                }
            }
        }
        let done: Vec<(u64, i32)> = ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        for (tag, result) in done {
            // Nothing but started requests is in flight outside a batch.
            self.record_started(tag, result);
        }
        Ok(())
    }

    /// On drop: wait for every started request, so the kernel never writes into freed
    /// buffers; if the ring cannot be waited on, leak the buffers instead.
    pub(super) fn drop_started(&mut self) {
        for i in 0..self.started.len() {
            if self.started[i].result.is_some() {
                continue;
            }
            let mut tries = 0;
            while self.started[i].result.is_none() && tries < 1000 {
                if self.enter(1).is_err() {
                    tries += 1;
                }
            }
        }
        for s in std::mem::take(&mut self.started) {
            if s.result.is_none() {
                std::mem::forget(s.buf);
            }
        }
    }
}

/// A started request the device cannot find or wait for (a bug, not a disk error).
fn lost() -> Error {
    Error::io(
        "finishing a started request",
        io::Error::other("the request is not in flight on this device"),
    )
}
