//! The `io_uring` batch path of [`FileDevice`]: a chunk of at most
//! [`RING_ENTRIES`](super::RING_ENTRIES) requests goes to the kernel as one SQE per run of
//! adjacent requests ([`coalesce_runs`]; a lone request is a plain read or write, a longer
//! run one `readv`/`writev`), submitted together; every completion is reaped and spread over
//! its run's requests ([`spread_result`]), then each result is checked and short transfers
//! (or requests the ring never ran) are completed with `pread`/`pwrite`. A ring that fails is
//! dropped and the device falls back to `pread`/`pwrite` for good.

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
    /// one SQE per run of adjacent requests, submit them together, reap every completion,
    /// then check each request's result.
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
        let batch = RingBatch::new(chunk, slots, ps, self.bounce.as_mut_ptr());
        let pushed = batch.push(ring, fd, chunk, ps);
        let reaped = batch.reap(ring, spin, pushed, results);

        for (tag, result) in reaped.started_done {
            self.record_started(tag, result);
        }
        if reaped.failed || pushed < batch.runs.len() {
            // The ring cannot be trusted any more: drop it (unsubmitted SQEs go with it) and
            // serve everything from now on with pread/pwrite.
            self.ring = None;
            self.backend = backend_name(false, self.files.direct).to_string();
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

/// One chunk as the ring sees it: runs of adjacent requests ([`coalesce_runs`]), each one
/// vectored SQE, and one iovec per request. The iovecs stay here, untouched, until every
/// completion is reaped: the SQEs point at them.
struct RingBatch {
    runs: Vec<std::ops::Range<usize>>,
    iovecs: Vec<libc::iovec>,
}

/// What reaping a batch leaves to the device: completions of started requests that came in
/// beside the batch, and whether the ring failed.
struct Reaped {
    started_done: Vec<(u64, i32)>,
    failed: bool,
}

impl RingBatch {
    /// The runs and iovecs of `chunk`; a bounced request's iovec names its slot of the bounce
    /// buffer at `bounce_ptr`.
    fn new(chunk: &mut [IoReq<'_>], slots: &[Option<usize>], ps: u64, bounce_ptr: *mut u8) -> Self {
        let runs = coalesce_runs(chunk, slots, ps);
        let mut iovecs: Vec<libc::iovec> = Vec::with_capacity(chunk.len());
        for (i, req) in chunk.iter_mut().enumerate() {
            let (ptr, len) = match req {
                IoReq::Read { buf, .. } => (buf.as_mut_ptr(), buf.len()),
                IoReq::Write { buf, .. } => (buf.as_ptr() as *mut u8, buf.len()),
            };
            let base = match slots[i] {
                // SAFETY: the slot lies inside `bounce` (sized, and for writes filled, above).
                Some(off) => unsafe { bounce_ptr.add(off) },
                None => ptr,
            };
            iovecs.push(libc::iovec {
                iov_base: base.cast(),
                iov_len: len.min(MAX_SQE_BYTES),
            });
        }
        RingBatch { runs, iovecs }
    }

    /// Push one SQE per run, tagged with the run's index, until the submission queue is full.
    /// Returns how many were pushed.
    fn push(
        &self,
        ring: &mut io_uring::IoUring,
        fd: types::Fd,
        chunk: &[IoReq<'_>],
        ps: u64,
    ) -> usize {
        let mut pushed = 0usize;
        let mut sq = ring.submission();
        for (r, run) in self.runs.iter().enumerate() {
            let first = &chunk[run.start];
            let offset = first.page() * ps;
            let count = run.len();
            let write = first.is_write();
            let iov = &self.iovecs[run.clone()];
            let entry = match (count, write) {
                (1, false) => opcode::Read::new(fd, iov[0].iov_base.cast(), iov[0].iov_len as u32)
                    .offset(offset)
                    .build(),
                (1, true) => opcode::Write::new(fd, iov[0].iov_base.cast(), iov[0].iov_len as u32)
                    .offset(offset)
                    .build(),
                (_, false) => opcode::Readv::new(fd, iov.as_ptr(), count as u32)
                    .offset(offset)
                    .build(),
                (_, true) => opcode::Writev::new(fd, iov.as_ptr(), count as u32)
                    .offset(offset)
                    .build(),
            };
            // SAFETY: the buffers behind the SQE (the caller's, borrowed for the whole
            // call, or the bounce buffer, not touched until the chunk is reaped) and
            // the iovecs naming them stay valid until its completion is reaped below.
            if unsafe { sq.push(&entry.user_data(r as u64)) }.is_err() {
                break;
            }
            pushed += 1;
        }
        pushed
    }

    /// Submit the `pushed` SQEs and reap until each has completed, spreading each run's
    /// completion over `results`. After a fatal submission error, submit nothing more and
    /// wait only for what is in flight.
    fn reap(
        &self,
        ring: &mut io_uring::IoUring,
        spin: std::time::Duration,
        pushed: usize,
        results: &mut [Option<i32>],
    ) -> Reaped {
        let mut submitted = 0usize;
        let mut completed = 0usize;
        let mut started_done: Vec<(u64, i32)> = Vec::new();
        let mut fatal: Option<io::Error> = None;
        while completed < pushed {
            if fatal.is_none() {
                match submit_and_wait(ring, spin) {
                    Ok(k) => submitted += k,
                    Err(e) if is_transient(&e) => {}
                    Err(e) => fatal = Some(e),
                }
            } else {
                if completed >= submitted {
                    break;
                }
                if let Err(e) = wait_in_flight(ring) {
                    if !is_transient(&e) {
                        break;
                    }
                }
            }
            completed += self.drain_completions(ring, results, &mut started_done);
        }
        Reaped {
            started_done,
            failed: fatal.is_some(),
        }
    }

    /// Take every completion in the queue: a started request's goes to `started_done`, a
    /// run's not yet seen is spread over `results`. Returns how many runs completed.
    fn drain_completions(
        &self,
        ring: &mut io_uring::IoUring,
        results: &mut [Option<i32>],
        started_done: &mut Vec<(u64, i32)>,
    ) -> usize {
        let mut completed = 0usize;
        for cqe in ring.completion() {
            let (tag, result) = (cqe.user_data(), cqe.result());
            if started::is_started(tag) {
                // A started request in flight beside the batch: keep its completion.
                started_done.push((tag, result));
                continue;
            }
            let r = tag as usize;
            if let Some(run) = self.runs.get(r) {
                if results[run.start].is_none() {
                    spread_result(result, run.clone(), &self.iovecs, results);
                    completed += 1;
                }
            }
        }
        completed
    }
}

/// Submit what is queued without waiting, poll the completion queue for a short while (a
/// QD1 page read completes in tens of microseconds, and sleeping for it costs a context
/// switch and a wake-up), then wait in the kernel. Returns how many SQEs were submitted.
fn submit_and_wait(ring: &mut io_uring::IoUring, spin: std::time::Duration) -> io::Result<usize> {
    match ring.submit() {
        Ok(k) if spin_for_completion(ring, spin) => Ok(k),
        Ok(k) => ring.submit_and_wait(1).map(|j| j + k),
        Err(e) => Err(e),
    }
}

/// Only wait for what is in flight: submit nothing more.
fn wait_in_flight(ring: &mut io_uring::IoUring) -> io::Result<usize> {
    // SAFETY: plain io_uring_enter(to_submit 0, min_complete 1, GETEVENTS).
    unsafe {
        ring.submitter()
            .enter::<libc::sigset_t>(0, 1, IORING_ENTER_GETEVENTS, None)
    }
}

/// Most requests one vectored SQE carries (well under `IOV_MAX`, 1024).
const MAX_RUN: usize = 256;

/// The chunk's requests as runs of consecutive ones that one vectored request can serve:
/// same direction, each beginning at the page where the one before it ends, none bounced,
/// at most [`MAX_RUN`] requests and [`MAX_SQE_BYTES`] bytes a run. A checkpoint's write-back
/// of a head tree's 64 adjacent pages becomes one 256 KiB write: the kernel's cost is per
/// request (about 15-20 us of submission for an `O_DIRECT` write on this project's VM), so
/// 64 single-page writes took 1.5-2 ms. The device's counters still count the requests as
/// given (a multi-page request is one request; these are many), as every device does.
fn coalesce_runs(
    chunk: &[IoReq<'_>],
    slots: &[Option<usize>],
    ps: u64,
) -> Vec<std::ops::Range<usize>> {
    let mut runs: Vec<std::ops::Range<usize>> = Vec::new();
    let mut bytes = 0usize;
    for (i, req) in chunk.iter().enumerate() {
        if let Some(run) = runs.last_mut() {
            let prev = &chunk[i - 1];
            let joins = slots[i].is_none()
                && slots[i - 1].is_none()
                && prev.is_write() == req.is_write()
                && prev.page() + prev.len() as u64 / ps == req.page()
                && run.len() < MAX_RUN
                && bytes + req.len() <= MAX_SQE_BYTES;
            if joins {
                run.end = i + 1;
                bytes += req.len();
                continue;
            }
        }
        runs.push(i..i + 1);
        bytes = req.len();
    }
    runs
}

/// Give each request of `run` its part of the run's completion `result`: an error to
/// all of them, else the bytes of each that the transfer reached (a short transfer leaves
/// the rest to `finish_chunk`).
fn spread_result(
    result: i32,
    run: std::ops::Range<usize>,
    iovecs: &[libc::iovec],
    results: &mut [Option<i32>],
) {
    if result < 0 {
        for r in &mut results[run] {
            *r = Some(result);
        }
        return;
    }
    let mut left = result as usize;
    for i in run {
        let done = left.min(iovecs[i].iov_len);
        results[i] = Some(done as i32);
        left -= done;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs: same direction, adjacent pages, no bounce slot, at most MAX_RUN requests.
    #[test]
    fn runs_join_adjacent_requests_of_one_direction() {
        const PS: usize = 512;
        let mut bytes = vec![0u8; 8 * PS];
        let (a, rest) = bytes.split_at_mut(PS);
        let (b, rest) = rest.split_at_mut(2 * PS);
        let (c, rest) = rest.split_at_mut(PS);
        let (d, rest) = rest.split_at_mut(PS);
        let (e, f) = rest.split_at_mut(PS);
        let chunk = [
            IoReq::Write { page: 4, buf: a },
            IoReq::Write { page: 5, buf: b },
            IoReq::Write { page: 7, buf: c },
            IoReq::Read { page: 8, buf: d },
            IoReq::Read { page: 10, buf: e },
            IoReq::Read { page: 11, buf: f },
        ];
        let none = [None; 6];
        assert_eq!(
            coalesce_runs(&chunk, &none, PS as u64),
            vec![0..3, 3..4, 4..6]
        );
        // A bounced request stands alone.
        let slots = [None, Some(0), None, None, None, None];
        assert_eq!(
            coalesce_runs(&chunk, &slots, PS as u64),
            vec![0..1, 1..2, 2..3, 3..4, 4..6]
        );
        // At most MAX_RUN requests a run.
        let mut pages = vec![0u8; (MAX_RUN + 3) * PS];
        let long: Vec<IoReq<'_>> = pages
            .chunks_mut(PS)
            .enumerate()
            .map(|(i, buf)| IoReq::Read {
                page: i as u64,
                buf,
            })
            .collect();
        let runs = coalesce_runs(&long, &vec![None; long.len()], PS as u64);
        assert_eq!(runs, vec![0..MAX_RUN, MAX_RUN..MAX_RUN + 3]);
    }

    /// A run's completion: an error to each request; bytes spread in order.
    #[test]
    fn a_runs_result_is_spread_over_its_requests() {
        let iov = |len| libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: len,
        };
        let iovecs = [iov(100), iov(4096), iov(8192), iov(4096)];
        let mut results = [None; 4];
        spread_result(4096 + 5000, 1..4, &iovecs, &mut results);
        assert_eq!(results, [None, Some(4096), Some(5000), Some(0)]);
        spread_result(-5, 0..2, &iovecs, &mut results);
        assert_eq!(results[..2], [Some(-5), Some(-5)]);
    }
}
