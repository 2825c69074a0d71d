//! The `io_uring` batch path of [`FileDevice`]: a chunk of at most
//! [`RING_ENTRIES`](super::RING_ENTRIES) requests goes to the kernel as one SQE per request,
//! submitted together; every completion is reaped, then each result is checked and short
//! transfers (or requests the ring never ran) are completed with `pread`/`pwrite`. A ring
//! that fails is dropped and the device falls back to `pread`/`pwrite` for good.

use super::{backend_name, ensure_len, started, FileDevice};
use crate::error::{Error, Result};
use crate::io::aligned::ALIGN;
use crate::io::IoReq;
use io_uring::{opcode, types};
use std::io;
use std::os::unix::io::AsRawFd;

/// Largest transfer put in one SQE (its length field is 32 bits). A larger request is
/// started through the ring and completed like a short transfer. A multiple of every
/// valid page size.
pub(super) const MAX_SQE_BYTES: usize = 1 << 30;

/// `IORING_ENTER_GETEVENTS` of io_uring_enter(2) (the crate keeps its `sys` module private).
const IORING_ENTER_GETEVENTS: u32 = 1;

impl FileDevice {
    /// Serve at most [`RING_ENTRIES`](super::RING_ENTRIES) requests through the ring: push
    /// one SQE per request, submit them together, reap every completion, then check each
    /// result.
    pub(super) fn submit_chunk(&mut self, chunk: &mut [IoReq<'_>]) -> Result<()> {
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
        let spin = self.spin;
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
        let mut started_done: Vec<(u64, i32)> = Vec::new();
        let mut fatal: Option<io::Error> = None;
        while completed < pushed {
            if fatal.is_none() {
                // Submit without waiting, poll the completion queue for a short while (a
                // QD1 page read completes in tens of microseconds, and sleeping for it
                // costs a context switch and a wake-up), then wait in the kernel.
                let r = match ring.submit() {
                    Ok(k) if spin_for_completion(ring, spin) => Ok(k),
                    Ok(k) => ring.submit_and_wait(1).map(|j| j + k),
                    Err(e) => Err(e),
                };
                match r {
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
                let (tag, result) = (cqe.user_data(), cqe.result());
                if started::is_started(tag) {
                    // A started request in flight beside the batch: keep its completion.
                    started_done.push((tag, result));
                    continue;
                }
                let i = tag as usize;
                if i < n && results[i].is_none() {
                    results[i] = Some(result);
                    completed += 1;
                }
            }
        }

        for (tag, result) in started_done {
            self.record_started(tag, result);
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

fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EINTR) | Some(libc::EAGAIN) | Some(libc::EBUSY)
    )
}

/// Poll `ring`'s completion queue for at most `spin`; true when it holds a completion.
fn spin_for_completion(ring: &mut io_uring::IoUring, spin: std::time::Duration) -> bool {
    if spin.is_zero() {
        return false;
    }
    let start = std::time::Instant::now();
    loop {
        // A fresh view of the queue reads its tail again.
        if !ring.completion().is_empty() {
            return true;
        }
        if start.elapsed() >= spin {
            return false;
        }
        for _ in 0..64 {
            std::hint::spin_loop();
        }
    }
}
