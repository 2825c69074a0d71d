//! Work on a second thread beside the engine's: a merge that runs on the other core while
//! the engine thread goes on taking operations (the FD-tree's and the LSM-tree's
//! insertions on one core are CPU-bound, merges a large share of it, with the device
//! half idle).
//!
//! The work sees its storage through [`JobIo`]: page size, started reads and writes
//! ([`crate::io::Device::start_read`], `start_write`, `finish`) and extents allocated and
//! freed. Run inline, the [`Pager`] itself is the `JobIo`. Run by [`Background`], the
//! work's thread holds a proxy that sends each call to the engine thread, which alone
//! touches the pager, the device and the allocator — except the started requests when the
//! device gives the work a handle of its own ([`crate::io::Device::job_device`]: a
//! [`crate::io::FileDevice`] opens the same file with a ring of its own, counting in the
//! same counters). Then the work starts and finishes its requests itself, and the engine
//! thread reserves every extent the work may write before the work gets it
//! ([`crate::io::Device::reserve_writes`]: the file device then never grows the file with
//! zeros over it). This takes the merge's requests off the engine thread (it submitted
//! each one, and paid the kernel time of its submission), and the merge no longer waits for an
//! engine operation to start or finish its I/O. An error of such a request fails the
//! work, and the engine operation that receives its result returns the error. Without a
//! handle (memory and simulated devices, fault injection, which thus keeps seeing every
//! request):
//!
//! - the engine thread serves the requests sent so far whenever it calls
//!   [`Background::serve`] (once per operation, without waiting), or waits for the work
//!   to complete (`wait`: when it cannot go on without the result);
//! - a started read or write is sent without waiting (the work names it by its own
//!   number) and started on the device at the next `serve`; `finish` waits for the reply,
//!   given once the device says the request is done ([`crate::io::Device::is_done`]), so
//!   the engine thread never waits for the work's I/O unless told to wait;
//! - an allocation waits for its extent; a free is sent without waiting;
//! - an error the device or the allocator returns for the work's request is returned by
//!   the engine operation that served it (which poisons the `Db`, contract point 6 of docs/design.md), and the
//!   work, told of it, fails.
//!
//! Durability is the work's own rule, unchanged: everything it writes goes to extents it
//! allocated, which no manifest names until the engine publishes the result, so the order
//! of its I/O against the engine's (which the thread's pace decides) does not matter. The
//! extents it holds are [`Background::owned`]: a checkpoint taken meanwhile records them,
//! and a reopen after a crash frees them, as it frees an inline job's.
//!
//! Dropped before it completes (a close, an error), the work is abandoned: its next call
//! fails and its thread ends; requests still in flight stay with the device, which keeps
//! their buffers until they are done.

use super::Pager;
use crate::error::{Error, Result};
use crate::io::{AlignedBuf, Extent, PageId, Ticket};
use crate::util::sync::Exclusive;
use std::collections::HashMap;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender, TryRecvError};

/// Where a work's time on its thread went, in microseconds: on the CPU, or waiting for
/// its started requests (whether a merge is bound by its CPU or by its I/O).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkTimes {
    /// From the work's start to its end on its thread (its device handle's last requests
    /// waited for).
    pub wall_us: u64,
    /// The thread's CPU time meanwhile, user and system.
    pub cpu_us: u64,
    /// Time spent in [`JobIo::finish`], waiting for started requests.
    pub io_wait_us: u64,
}

impl WorkTimes {
    /// The sum of two works' times.
    pub fn add(&mut self, o: WorkTimes) {
        self.wall_us += o.wall_us;
        self.cpu_us += o.cpu_us;
        self.io_wait_us += o.io_wait_us;
    }
}

/// The calling thread's CPU time (zero where the clock cannot be read).
fn thread_cpu() -> std::time::Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to write.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return std::time::Duration::ZERO;
    }
    std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn micros(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// The storage a background-capable job uses.
pub trait JobIo {
    /// Bytes a page.
    fn page_size(&self) -> usize;
    /// [`crate::io::Device::start_read`].
    fn start_read(&mut self, page: PageId, buf: AlignedBuf, len: usize) -> Result<Started>;
    /// [`crate::io::Device::start_write`].
    fn start_write(&mut self, page: PageId, buf: AlignedBuf, len: usize) -> Result<Started>;
    /// [`crate::io::Device::finish`].
    fn finish(&mut self, started: Started) -> Result<AlignedBuf>;
    /// [`Pager::alloc_extent`].
    fn alloc_extent(&mut self, len: u64) -> Result<Extent>;
    /// [`Pager::free_extent`].
    fn free_extent(&mut self, e: Extent);
}

/// A request started through a [`JobIo`]: the device's ticket (inline) or the number the
/// work gave it (in the background).
#[must_use = "a started request is finished with JobIo::finish, which reports its error"]
#[derive(Debug)]
pub enum Started {
    /// Started on the device by the caller's thread.
    Local(Ticket),
    /// Sent to the engine thread under this number.
    Remote(u64),
}

impl JobIo for Pager {
    fn page_size(&self) -> usize {
        Pager::page_size(self)
    }

    fn start_read(&mut self, page: PageId, buf: AlignedBuf, len: usize) -> Result<Started> {
        Ok(Started::Local(self.device().start_read(page, buf, len)?))
    }

    fn start_write(&mut self, page: PageId, buf: AlignedBuf, len: usize) -> Result<Started> {
        Ok(Started::Local(self.device().start_write(page, buf, len)?))
    }

    fn finish(&mut self, started: Started) -> Result<AlignedBuf> {
        match started {
            Started::Local(t) => self.device().finish(t),
            Started::Remote(id) => Err(Error::InvalidArgument(format!(
                "request {id} was sent to another thread"
            ))),
        }
    }

    fn alloc_extent(&mut self, len: u64) -> Result<Extent> {
        Pager::alloc_extent(self, len)
    }

    fn free_extent(&mut self, e: Extent) {
        Pager::free_extent(self, e)
    }
}

/// What the work's thread asks of the engine thread.
enum Request<T> {
    Start {
        id: u64,
        page: PageId,
        buf: AlignedBuf,
        len: usize,
        write: bool,
    },
    Finish(u64),
    Alloc(u64),
    Free(Extent),
    /// The work's result and its times; the last message.
    Done(Result<T>, WorkTimes),
}

/// The engine thread's replies.
enum Reply {
    Finished(Result<AlignedBuf>),
    Extent(Result<Extent>),
}

/// The work's side: each call goes to the engine thread.
struct Remote<T> {
    page_size: usize,
    /// The device's handle for this thread ([`crate::io::Device::job_device`]), if it has
    /// one: started requests go to it directly, not through the engine thread.
    direct: Option<Box<dyn crate::io::Device>>,
    next: u64,
    tx: Sender<Request<T>>,
    rx: Receiver<Reply>,
    /// Time spent waiting in `finish`.
    io_wait: std::time::Duration,
}

/// What the work sees of an error its engine's operation met and returned: the same
/// error, so that the engine operation that receives the work's result (in any thread)
/// reports it as it is, an I/O error poisoning the `Db` with that error.
fn failed_here(e: &Error) -> Error {
    e.duplicate()
}

fn abandoned() -> Error {
    Error::InvalidArgument("background work abandoned by its engine".into())
}

impl<T> Remote<T> {
    /// [`JobIo::finish`]: wait for a started request and take its buffer back.
    fn finish_now(&mut self, started: Started) -> Result<AlignedBuf> {
        let id = match (started, self.direct.as_mut()) {
            (Started::Remote(id), _) => id,
            (Started::Local(t), Some(dev)) => return dev.finish(t),
            (Started::Local(_), None) => {
                return Err(Error::InvalidArgument(
                    "a request started on the engine thread".into(),
                ))
            }
        };
        match self.ask(Request::Finish(id))? {
            Reply::Finished(r) => r,
            Reply::Extent(_) => Err(Error::InvalidArgument(
                "background work: an extent in reply to a finish".into(),
            )),
        }
    }

    fn send(&self, r: Request<T>) -> Result<()> {
        self.tx.send(r).map_err(|_| abandoned())
    }

    /// Send `r` and wait for the engine thread's reply.
    fn ask(&self, r: Request<T>) -> Result<Reply> {
        self.send(r)?;
        recv_soon(&self.rx).map_err(|_| abandoned())
    }

    fn start(&mut self, page: PageId, buf: AlignedBuf, len: usize, write: bool) -> Result<Started> {
        if let Some(dev) = self.direct.as_mut() {
            // An abandoned work stops at its next request, as it would at the engine's
            // closed channel (no reply is pending here: the work asked for nothing).
            if let Err(TryRecvError::Disconnected) = self.rx.try_recv() {
                return Err(abandoned());
            }
            let t = if write {
                dev.start_write(page, buf, len)?
            } else {
                dev.start_read(page, buf, len)?
            };
            return Ok(Started::Local(t));
        }
        let id = self.next;
        self.next += 1;
        self.send(Request::Start {
            id,
            page,
            buf,
            len,
            write,
        })?;
        Ok(Started::Remote(id))
    }
}

impl<T> JobIo for Remote<T> {
    fn page_size(&self) -> usize {
        self.page_size
    }

    fn start_read(&mut self, page: PageId, buf: AlignedBuf, len: usize) -> Result<Started> {
        self.start(page, buf, len, false)
    }

    fn start_write(&mut self, page: PageId, buf: AlignedBuf, len: usize) -> Result<Started> {
        self.start(page, buf, len, true)
    }

    fn finish(&mut self, started: Started) -> Result<AlignedBuf> {
        let t0 = std::time::Instant::now();
        let out = self.finish_now(started);
        self.io_wait += t0.elapsed();
        out
    }

    fn alloc_extent(&mut self, len: u64) -> Result<Extent> {
        match self.ask(Request::Alloc(len))? {
            Reply::Extent(r) => r,
            Reply::Finished(_) => Err(Error::InvalidArgument(
                "background work: a buffer in reply to an allocation".into(),
            )),
        }
    }

    fn free_extent(&mut self, e: Extent) {
        // An abandoned work's extents are the engine's to free (`Background::owned`).
        let _ = self.send(Request::Free(e));
    }
}

/// How long a thread polls for the other's next message before it sleeps: a reply comes
/// within one operation of the engine's, while waking a sleeping thread can take many
/// times as long (on a virtual machine especially), several times per 512 KiB of a merge.
const POLL: std::time::Duration = std::time::Duration::from_micros(50);

/// How often an engine thread waiting for the work to get far enough
/// ([`Background::serve`]) looks at its progress while the work computes.
const RECHECK: std::time::Duration = std::time::Duration::from_micros(200);

/// The next message of `rx`: polled for up to [`POLL`], then waited for.
fn recv_soon<M>(rx: &Receiver<M>) -> std::result::Result<M, std::sync::mpsc::RecvError> {
    let start = std::time::Instant::now();
    loop {
        match rx.try_recv() {
            Ok(m) => return Ok(m),
            Err(TryRecvError::Disconnected) => return Err(std::sync::mpsc::RecvError),
            Err(TryRecvError::Empty) if start.elapsed() < POLL => std::hint::spin_loop(),
            Err(TryRecvError::Empty) => return rx.recv(),
        }
    }
}

/// Environment variable that keeps merges on the engine's thread when set to `0`.
pub const MERGE_THREAD_ENV: &str = "FLASHIX_MERGE_THREAD";

/// Whether engines may run merges on a merge thread: the environment variable
/// `FLASHIX_MERGE_THREAD` is not `0`.
pub fn merge_thread_allowed() -> bool {
    std::env::var(MERGE_THREAD_ENV).map_or(true, |v| v.trim() != "0")
}

/// A thread an engine keeps for its background work, one work at a time (starting a
/// thread per merge costs as much time as a small merge's worth of insertions). It ends
/// when the `Worker` is dropped and its work done.
pub struct Worker {
    tx: Sender<Box<dyn FnOnce() + Send>>,
}

impl Worker {
    pub fn spawn() -> Result<Worker> {
        let (tx, rx) = channel::<Box<dyn FnOnce() + Send>>();
        std::thread::Builder::new()
            .name("flashix-merge".into())
            .spawn(move || {
                while let Ok(work) = rx.recv() {
                    work();
                }
            })
            .map_err(|e| Error::io("starting a merge thread", e))?;
        Ok(Worker { tx })
    }
}

/// Work running on a [`Worker`], served by the engine thread (module doc).
pub struct Background<T> {
    /// Reached only by the engine's writer: `Exclusive` keeps the engine `Sync`.
    rx: Exclusive<Receiver<Request<T>>>,
    tx: Sender<Reply>,
    /// The work has sent its result (or ended without one).
    ended: bool,
    /// Requests started on the device for the work, by the work's number; a request the
    /// device refused holds its error, reported at its finish.
    started: HashMap<u64, Result<Ticket>>,
    /// The request the work waits to finish.
    finishing: Option<u64>,
    /// Extents allocated for the work and not freed by it.
    owned: Vec<Extent>,
    /// The work starts its requests on a handle of its own: its new extents are reserved.
    direct_io: bool,
    /// The work's times, once it has ended.
    times: Option<WorkTimes>,
}

impl<T: Send + 'static> Background<T> {
    /// Run `work` on `worker` over `pager`'s storage; it holds the extents `owned` already
    /// (allocated for it before it started). When the device gives the work a handle of
    /// its own ([`crate::io::Device::job_device`]), the work starts and finishes its
    /// requests itself, and every extent it may write is reserved for it first
    /// ([`crate::io::Device::reserve_writes`]).
    pub fn spawn(
        worker: &Worker,
        pager: &mut Pager,
        owned: Vec<Extent>,
        work: impl FnOnce(&mut dyn JobIo) -> Result<T> + Send + 'static,
    ) -> Result<Background<T>> {
        let direct = pager.device().job_device()?;
        if direct.is_some() {
            for e in &owned {
                pager.device().reserve_writes(e.start, e.len)?;
            }
        }
        let (req_tx, req_rx) = channel();
        let (rep_tx, rep_rx) = channel();
        let direct_io = direct.is_some();
        let mut remote = Remote {
            page_size: pager.page_size(),
            direct,
            next: 0,
            tx: req_tx,
            rx: rep_rx,
            io_wait: std::time::Duration::ZERO,
        };
        worker
            .tx
            .send(Box::new(move || {
                let (t0, cpu0) = (std::time::Instant::now(), thread_cpu());
                let out = work(&mut remote);
                // The work's own device handle goes first: its drop waits for the requests
                // still in flight (a failed work's), so that none lands in an extent after
                // the engine has taken the result and freed or reused it.
                remote.direct = None;
                let times = WorkTimes {
                    wall_us: micros(t0.elapsed()),
                    cpu_us: micros(thread_cpu().saturating_sub(cpu0)),
                    io_wait_us: micros(remote.io_wait),
                };
                let _ = remote.tx.send(Request::Done(out, times));
            }))
            .map_err(|_| Error::InvalidArgument("the merge thread has ended".into()))?;
        Ok(Background {
            rx: Exclusive::new(req_rx),
            tx: rep_tx,
            ended: false,
            started: HashMap::new(),
            finishing: None,
            owned,
            direct_io,
            times: None,
        })
    }

    /// Extents the work holds that no manifest names (freed if it is abandoned).
    pub fn owned(&self) -> Vec<Extent> {
        self.owned.clone()
    }

    /// Where the work's time went on its thread, once it has ended.
    pub fn times(&self) -> Option<WorkTimes> {
        self.times
    }

    /// Serve the work's requests sent so far; with `wait`, until it completes or
    /// `enough()` holds (checked between requests and at least every [`RECHECK`] while
    /// the work computes). `Some` holds its result once it has completed (then this
    /// `Background` is spent).
    pub fn serve(
        &mut self,
        pager: &mut Pager,
        wait: bool,
        enough: &dyn Fn() -> bool,
    ) -> Result<Option<T>> {
        // When the wait began (taken only by a call that waits: this runs every operation).
        let mut start = None;
        loop {
            let req = match self.rx.get_mut().try_recv() {
                Ok(r) => r,
                Err(TryRecvError::Empty) => {
                    if self.reply_finish(pager, wait)? {
                        continue;
                    }
                    if !wait || enough() {
                        return Ok(None);
                    }
                    if start.get_or_insert_with(std::time::Instant::now).elapsed() < POLL {
                        std::hint::spin_loop();
                        continue;
                    }
                    // The work is computing: wait until it asks for something.
                    match self.rx.get_mut().recv_timeout(RECHECK) {
                        Ok(r) => r,
                        Err(RecvTimeoutError::Timeout) => continue,
                        Err(RecvTimeoutError::Disconnected) => {
                            self.ended = true;
                            return Err(self.lost());
                        }
                    }
                }
                Err(TryRecvError::Disconnected) => {
                    self.ended = true;
                    return Err(self.lost());
                }
            };
            if let Some(out) = self.handle(pager, req)? {
                return Ok(Some(out));
            }
        }
    }

    /// Act on one request; the work's result when it is its last.
    fn handle(&mut self, pager: &mut Pager, req: Request<T>) -> Result<Option<T>> {
        match req {
            Request::Start {
                id,
                page,
                buf,
                len,
                write,
            } => {
                let dev = pager.device();
                let t = if write {
                    dev.start_write(page, buf, len)
                } else {
                    dev.start_read(page, buf, len)
                };
                match t {
                    Ok(t) => {
                        self.started.insert(id, Ok(t));
                    }
                    Err(e) => {
                        // The operation serving the request meets the error (the work
                        // fails at its finish).
                        self.started.insert(id, Err(failed_here(&e)));
                        return Err(e);
                    }
                }
            }
            Request::Finish(id) => self.finishing = Some(id),
            Request::Alloc(len) => match pager.alloc_extent(len).and_then(|e| {
                if self.direct_io {
                    pager.device().reserve_writes(e.start, e.len)?;
                }
                Ok(e)
            }) {
                Ok(e) => {
                    self.owned.push(e);
                    self.reply(Reply::Extent(Ok(e)))?;
                }
                Err(e) => {
                    self.reply(Reply::Extent(Err(failed_here(&e))))?;
                    return Err(e);
                }
            },
            Request::Free(e) => {
                pager.free_extent(e);
                self.owned = subtract(&self.owned, e);
            }
            Request::Done(out, times) => {
                self.ended = true;
                self.times = Some(times);
                self.owned.clear();
                return out.map(Some);
            }
        }
        Ok(None)
    }

    /// Reply to the finish the work waits for if its request is done (or, with `wait`,
    /// once it is); true if it replied.
    fn reply_finish(&mut self, pager: &mut Pager, wait: bool) -> Result<bool> {
        let Some(id) = self.finishing else {
            return Ok(false);
        };
        let done = match self.started.get(&id) {
            Some(Ok(t)) => wait || pager.device().is_done(t),
            // Refused at its start, or never started: reported now.
            _ => true,
        };
        if !done {
            return Ok(false);
        }
        self.finishing = None;
        let out = match self.started.remove(&id) {
            Some(Ok(t)) => pager.device().finish(t),
            Some(Err(e)) => Err(e),
            None => Err(Error::InvalidArgument(format!(
                "background request {id} was never started"
            ))),
        };
        match out {
            Ok(buf) => self.reply(Reply::Finished(Ok(buf)))?,
            Err(e) => {
                // The operation serving the finish meets the error; the work fails too.
                self.reply(Reply::Finished(Err(failed_here(&e))))?;
                return Err(e);
            }
        }
        Ok(true)
    }

    fn reply(&self, r: Reply) -> Result<()> {
        self.tx.send(r).map_err(|_| self.lost())
    }

    /// The work's thread ended without a result (it panicked).
    fn lost(&self) -> Error {
        Error::InvalidArgument("a merge thread ended without its result".into())
    }
}

impl<T> Drop for Background<T> {
    fn drop(&mut self) {
        // Close the reply channel: the work's next call fails, and it ends; wait for its
        // last message, so that nothing of it runs once its engine is gone.
        let (tx, _) = channel();
        drop(std::mem::replace(&mut self.tx, tx));
        while !self.ended {
            match self.rx.get_mut().recv() {
                Ok(Request::Done(..)) | Err(_) => self.ended = true,
                Ok(_) => {}
            }
        }
    }
}

/// `owned` without the pages of `e` (a whole extent, or part of one: a run's unused
/// tail).
fn subtract(owned: &[Extent], e: Extent) -> Vec<Extent> {
    let mut out = Vec::with_capacity(owned.len() + 1);
    for &o in owned {
        let (a, b) = (o.start, o.end());
        let (c, d) = (e.start, e.end());
        if d <= a || b <= c {
            out.push(o);
            continue;
        }
        if a < c {
            out.push(Extent {
                start: a,
                len: c - a,
            });
        }
        if d < b {
            out.push(Extent {
                start: d,
                len: b - d,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subtracting_an_extent_keeps_the_pages_around_it() {
        let owned = vec![Extent { start: 10, len: 10 }, Extent { start: 40, len: 5 }];
        assert_eq!(
            subtract(&owned, Extent { start: 14, len: 2 }),
            vec![
                Extent { start: 10, len: 4 },
                Extent { start: 16, len: 4 },
                Extent { start: 40, len: 5 },
            ]
        );
        assert_eq!(
            subtract(&owned, Extent { start: 40, len: 5 }),
            vec![Extent { start: 10, len: 10 }]
        );
    }

    /// A job that allocates, writes, reads back and frees through a [`JobIo`]: the same
    /// bytes and the same extents held, inline and in the background.
    fn job(io: &mut dyn JobIo) -> Result<Vec<u8>> {
        let ps = io.page_size();
        let e = io.alloc_extent(4)?;
        let mut buf = AlignedBuf::zeroed(2 * ps);
        buf[..2 * ps]
            .iter_mut()
            .enumerate()
            .for_each(|(i, b)| *b = i as u8);
        let w = io.start_write(e.start, buf, 2 * ps)?;
        io.finish(w)?;
        let r = io.start_read(e.start + 1, AlignedBuf::zeroed(ps), ps)?;
        let back = io.finish(r)?;
        io.free_extent(Extent {
            start: e.start + 2,
            len: 2,
        });
        Ok(back[..8].to_vec())
    }

    #[test]
    fn background_work_does_what_the_inline_work_does() {
        let mut inline = Pager::in_memory(512, 8);
        let want = job(&mut inline).unwrap();
        let mut pager = Pager::in_memory(512, 8);
        let worker = Worker::spawn().unwrap();
        let mut bg = Background::spawn(&worker, &mut pager, Vec::new(), job).unwrap();
        let got = loop {
            if let Some(out) = bg.serve(&mut pager, false, &|| true).unwrap() {
                break out;
            }
        };
        assert_eq!(got, want);
        assert_eq!(got, (0..8).map(|i| (512 + i) as u8).collect::<Vec<u8>>());
        assert!(bg.owned().is_empty());
        assert_eq!(
            pager.allocator().pending_pages(),
            inline.allocator().pending_pages()
        );
    }

    #[test]
    fn an_abandoned_work_ends_and_its_engine_knows_its_extents() {
        let mut pager = Pager::in_memory(512, 8);
        let (gate_tx, gate) = channel::<()>();
        let worker = Worker::spawn().unwrap();
        let mut bg = Background::spawn(
            &worker,
            &mut pager,
            Vec::new(),
            move |io: &mut dyn JobIo| {
                let e = io.alloc_extent(3)?;
                io.free_extent(Extent {
                    start: e.start + 2,
                    len: 1,
                });
                // Held here until the engine has let go of it.
                let _ = gate.recv_timeout(std::time::Duration::from_millis(50));
                io.alloc_extent(1)
            },
        )
        .unwrap();
        let e = loop {
            assert!(bg.serve(&mut pager, false, &|| true).unwrap().is_none());
            if let [e] = bg.owned()[..] {
                if e.len == 2 {
                    break e;
                }
            }
            std::thread::yield_now();
        };
        assert_eq!(e.start, pager.allocator().high_water() - 3);
        // Dropping waits for the work, whose next call fails.
        drop(bg);
        drop(gate_tx);
    }
}
