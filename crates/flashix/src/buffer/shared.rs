//! [`SharedPool`]: the [`BufferPool`] served to many reading threads at once.
//!
//! # Thread safety
//!
//! The pool has two modes, and the type system keeps them apart:
//! - **exclusive** (`&mut SharedPool`, [`SharedPool::get_mut`]): one thread, the writer,
//!   uses the pool as before — fetch, change, evict, write back — with no lock taken;
//! - **shared** (`&SharedPool`): any number of readers ([`SharedPool::read`]) and shared
//!   writers ([`SharedPool::write`]) at once.
//!
//! In shared mode a hit takes no lock common to all pages: it goes through the pool's
//! sharded hit index (`super::latch`: a shard's lock taken shared, an atomic pin, a
//! reference bit that stands for the move to the LRU head). Everything else — a miss, a
//! page being loaded, a page out of the index — goes through a mutex over the page table,
//! the LRU list, the pins and the counters, held only for those updates: never while a
//! page is read from the device and never while a thread looks at a page's bytes. The
//! protocol:
//! 1. *Hit*: the page's frame is pinned through the hit index, or, for a resident page
//!    not in it, under the mutex (which moves it to the LRU head and enters it in the
//!    index); the reader then reads the bytes under the frame's latch held shared
//!    (`Latch::bytes`) and unpins (an atomic subtract, or under the mutex).
//! 2. *Miss*: under the mutex the reader claims a frame — a spare one or the least recently
//!    used unpinned one, the victim the exclusive path would take (or, for a reader beside
//!    other threads, [`Miss::LoadClean`], the least recently used unpinned *clean* one:
//!    dirty frames are left for the writer to write back, so that the reader does not
//!    write a page while it holds its engine's lock) — maps the page to it, pins it and
//!    marks it *loading*; it
//!    reads the page into the frame with the mutex released, verifies it, then clears
//!    *loading* (or frees the frame if the read failed) and wakes the waiters.
//! 3. A reader that finds the page *loading* waits on the condition variable and looks
//!    again: one device read per page however many readers want it at once.
//! 4. When that victim is dirty (for [`Miss::LoadClean`]: when the unpinned frames at the
//!    LRU end are, past a few),
//!    the reader writes the least recently used one back (for [`Miss::LoadClean`]: up to
//!    `WRITE_BACK_BATCH` of them, in one submission) with the mutex released (pinned, out
//!    of the index, sealed in a copy taken under its latch held shared; the WAL rule's
//!    barrier first) and claims again, so that evictions keep the LRU order; when every
//!    frame is pinned it waits for an unpin. Both are bounded: a wait gives up after
//!    [`PIN_WAIT`] with an error saying the pool is too small for the readers.
//! 5. *Shared write*: the writer pins the page as a reader does (1 to 4), changes the bytes
//!    under the frame's latch held exclusive, and then, under the mutex, marks the frame
//!    dirty with the LSN its change needs durable first and counts the change
//!    (`BufferPool::changed_shared`). A write-back that copied the frame before that
//!    change leaves it dirty (it compares the count it took with the frame's), so no
//!    change is lost to a write-back that ran beside it.
//!
//! Why the bytes may be read without the mutex: a pinned frame is never evicted, released
//! ([`BufferPool::set_capacity`] drops only unpinned frames) or given another page, and its
//! buffer never moves (frames own heap buffers); a frame leaves the hit index, under its
//! shard's lock, before any of that, and only while no hit pins it (`super::latch`). In
//! shared mode the bytes of a loaded frame change only under its latch held exclusive (a
//! shared writer) or with no other pin on it (the write-back of step 4 seals the page's
//! checksum in its own copy), and every reader looks under the latch held shared; a loading
//! frame is written by its loader alone (other readers wait, and it enters the index once
//! loaded). Exclusive mode needs `&mut`, so it cannot overlap any of this. The mutex's, the
//! shards' and the latches' release and acquire order each write before the reads after it.
//! Lock order: a frame's latch, then the WAL's lock (a shared writer logs under its latch,
//! `crate::durable::Pager::write_shared`), then the mutex; a write-back takes the WAL's
//! lock (its barrier) and the latches one after the other, never together.
//!
//! Replacement: exact LRU in exclusive mode and for hits under the mutex; a hit through
//! the index sets its frame's reference bit, and the eviction that finds the frame at the
//! LRU end moves it to the head instead (a second chance, as CLOCK gives).
//!
//! The memory budget is the pool's, exactly as in exclusive mode: shared readers take
//! frames within its capacity and allocate nothing else but the waiters' bookkeeping.

use super::latch::{Hit, HitIndex, Latch};
use super::pool::{BufferPool, DirtyVictim, FrameId, Lookup};
use crate::error::{Error, Result};
use crate::io::{AlignedBuf, PageId};
use crate::page;
use crate::util::sync::{Arc, AtomicUsize, Condvar, Mutex, MutexGuard};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// The longest a reader waits for a frame to be unpinned or a page to be loaded before it
/// reports the pool too small (a load is one device read; an unpin follows a reader's
/// look at one page).
pub const PIN_WAIT: Duration = Duration::from_secs(30);

/// Dirty frames a miss beside other threads ([`Miss::LoadClean`]) that finds only dirty
/// victims writes back at once, from the LRU end, in one submission: the device takes them
/// in parallel, where one at a time would bound every thread's misses by one page write's
/// latency.
const WRITE_BACK_BATCH: usize = 8;

/// How often a waiting reader looks again even without a wake-up.
const RECHECK: Duration = Duration::from_millis(20);

struct State {
    pool: BufferPool,
}

/// A frame made for a new page ahead of its bytes ([`SharedPool::reserve`]): pinned,
/// zeroed and clean, for a page no other thread knows.
pub struct NewFrame {
    pid: PageId,
    pin: Pin,
    bytes: (*const u8, usize),
}

/// A reader's pin: through the hit index, or under the mutex (with the frame's latch).
enum Pin {
    Hit(Hit),
    Locked(FrameId, Arc<Latch>),
}

impl Pin {
    fn latch(&self) -> &Latch {
        match self {
            Pin::Hit(h) => &h.latch,
            Pin::Locked(_, l) => l,
        }
    }
}

/// What a shared reader's miss does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Miss {
    /// Load the page into the victim the exclusive path would take (module doc, step 2).
    Load,
    /// Load it into the least recently used clean frame: a reader beside other threads,
    /// which leaves dirty frames to the writer (module doc, step 2).
    LoadClean,
    /// Claim, read and count nothing: return `None` (a page another reader is loading is
    /// waited for, as for a load).
    Stop,
}

/// A [`BufferPool`] for one writer or many readers (module doc).
pub struct SharedPool {
    state: Mutex<State>,
    /// The pool's hit index (the pool keeps it in step with its frames).
    index: Arc<HitIndex>,
    /// Readers waiting on `changed` (unpins and loads notify only when there are some);
    /// changed under the mutex, read without it by hits' unpins.
    waiters: AtomicUsize,
    changed: Condvar,
    /// A deliberately broken latch for the model tests: readers do not wait for a page
    /// another reader is loading, and read its frame while it is being filled.
    #[cfg(test)]
    broken_ignores_loading: bool,
    /// A deliberately broken latch for the model tests: shared writers change a frame
    /// without its latch.
    #[cfg(test)]
    broken_writes_unlatched: bool,
}

/// How a shared reader's miss reaches the device and the WAL: the device read, and the
/// write-back of dirty frames (module doc, step 4).
pub trait SharedIo {
    /// Read page `pid` into `buf` (one page).
    fn read_page(&self, pid: PageId, buf: &mut [u8]) -> Result<()>;
    /// The WAL rule: make the log durable up to `lsn` before a page of that LSN is written.
    fn before_write(&self, lsn: u64) -> Result<()>;
    /// Write sealed pages (one batch).
    fn write_pages(&self, pages: &[(PageId, AlignedBuf)]) -> Result<()>;
}

impl SharedPool {
    /// Share `pool`.
    pub fn new(pool: BufferPool) -> SharedPool {
        SharedPool {
            index: pool.hit_index(),
            state: Mutex::new(State { pool }),
            waiters: AtomicUsize::new(0),
            changed: Condvar::new(),
            #[cfg(test)]
            broken_ignores_loading: false,
            #[cfg(test)]
            broken_writes_unlatched: false,
        }
    }

    /// The pool, for the one thread that holds `&mut` (exclusive mode).
    pub fn get_mut(&mut self) -> &mut BufferPool {
        &mut self.state.get_mut().unwrap_or_else(|e| e.into_inner()).pool
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Run `f` on the pool under the mutex (counters, sizes: short calls).
    pub fn with<T>(&self, f: impl FnOnce(&BufferPool) -> T) -> T {
        f(&self.lock().pool)
    }

    /// Run `f` on page `pid`'s bytes, loading it through `io` on a miss (module doc).
    pub fn read<T>(&self, io: &dyn SharedIo, pid: PageId, f: impl FnOnce(&[u8]) -> T) -> Result<T> {
        let found = self.read_or_miss(io, pid, Miss::Load, f)?;
        found.ok_or(Error::PageMiss)
    }

    /// [`SharedPool::read`] with a choice of what a miss does ([`Miss`]); `None` when it
    /// stops.
    pub fn read_or_miss<T>(
        &self,
        io: &dyn SharedIo,
        pid: PageId,
        miss: Miss,
        f: impl FnOnce(&[u8]) -> T,
    ) -> Result<Option<T>> {
        let Some((pin, bytes)) = self.pin(io, pid, miss)? else {
            return Ok(None);
        };
        let out = {
            let _shared = pin.latch().bytes.read().unwrap_or_else(|e| e.into_inner());
            // SAFETY: the frame is pinned until `unpin` below, so its buffer (`bytes`)
            // stays allocated, and its latch is held shared, so no shared writer changes
            // it meanwhile (module doc).
            f(unsafe { std::slice::from_raw_parts(bytes.0, bytes.1) })
        };
        self.unpin(pin);
        Ok(Some(out))
    }

    /// Change page `pid` from one of many threads (a shared writer, module doc), loading it
    /// through `io` on a miss as `miss` says (`None` when it stops): `f` runs on the bytes
    /// under the frame's latch held exclusive and says whether it changed them, with the
    /// LSN the frame must be durable to first (its before-image's; 0 for none). A changed
    /// frame is marked dirty before it is unpinned.
    pub fn write<T>(
        &self,
        io: &dyn SharedIo,
        pid: PageId,
        miss: Miss,
        f: impl FnOnce(&mut [u8]) -> Result<Option<(T, u64)>>,
    ) -> Result<Option<Option<T>>> {
        let Some((pin, bytes)) = self.pin(io, pid, miss)? else {
            return Ok(None);
        };
        #[cfg(test)]
        let latched = !self.broken_writes_unlatched;
        #[cfg(not(test))]
        let latched = true;
        let r = {
            let _alone =
                latched.then(|| pin.latch().bytes.write().unwrap_or_else(|e| e.into_inner()));
            // SAFETY: the frame is pinned until `unpin` below, so its buffer (`bytes`)
            // stays allocated, and its latch is held exclusive, so no reader, writer or
            // write-back looks at it meanwhile (module doc).
            f(unsafe { std::slice::from_raw_parts_mut(bytes.0.cast_mut(), bytes.1) })
        };
        if let Ok(Some((_, lsn))) = &r {
            self.lock().pool.changed_shared(pid, *lsn);
        }
        self.unpin(pin);
        Ok(Some(r?.map(|(t, _)| t)))
    }

    /// A frame for new page `pid` (one no other thread knows yet: just allocated) from one
    /// of many threads, zeroed, clean and pinned, claimed as a miss beside other threads
    /// claims one ([`Miss::LoadClean`], reading nothing; dirty frames at the LRU end are
    /// written back first). This is the part of making a new page that may wait and
    /// write, so a caller that must not make others wait for I/O reserves the frame
    /// before it takes the latch it will set the page's bytes under. The frame must be
    /// given to [`SharedPool::fill`] (its bytes, then dirty: a new page needs no
    /// before-image, so no LSN) or [`SharedPool::release`]; its pin holds it until then.
    pub fn reserve(&self, io: &dyn SharedIo, pid: PageId) -> Result<NewFrame> {
        let Some((pin, bytes)) = self.pin_for(io, pid, Miss::LoadClean, true)? else {
            return Err(Error::PageMiss);
        };
        Ok(NewFrame { pid, pin, bytes })
    }

    /// Set a reserved frame's bytes: zeroed, then `init`, under its latch held exclusive;
    /// marked dirty and unpinned. No I/O, no wait but for the pool's mutex.
    pub fn fill(&self, frame: NewFrame, init: impl FnOnce(&mut [u8])) {
        let NewFrame { pid, pin, bytes } = frame;
        {
            let _alone = pin.latch().bytes.write().unwrap_or_else(|e| e.into_inner());
            // SAFETY: the frame is pinned until `unpin` below and its latch is held
            // exclusive (as in `write`).
            let b = unsafe { std::slice::from_raw_parts_mut(bytes.0.cast_mut(), bytes.1) };
            b.fill(0);
            init(b);
        }
        self.lock().pool.changed_shared(pid, 0);
        self.unpin(pin);
    }

    /// Give up a reserved frame unused: unpinned and dropped from the pool unwritten (its
    /// page is free again, and a frame of it must not outlive it: the page may next be
    /// written past the pool).
    pub fn release(&self, frame: NewFrame) {
        let NewFrame { pid, pin, .. } = frame;
        self.unpin(pin);
        // No other thread knows the page, so none pins it or writes it back (it is clean).
        self.lock().pool.discard(pid);
    }

    fn unpin(&self, pin: Pin) {
        let free = match pin {
            Pin::Hit(h) => h.release(),
            Pin::Locked(f, _) => self.lock().pool.unpin_shared(f),
        };
        if free && self.waiters.load(Ordering::SeqCst) > 0 {
            // Under the mutex, so that a reader about to wait cannot miss it.
            let _s = self.lock();
            self.changed.notify_all();
        }
    }

    /// Wait for a change (an unpin, a finished load), at most until `deadline`. A hit's
    /// unpin takes no lock: it notifies only when it sees waiters, so a reader waiting for
    /// an unpin (`for_unpin`) counts itself first and then looks once more, and one of the
    /// two sees the other.
    fn wait<'a>(
        &'a self,
        s: MutexGuard<'a, State>,
        deadline: Instant,
        what: &str,
        for_unpin: bool,
    ) -> Result<MutexGuard<'a, State>> {
        let now = Instant::now();
        if now >= deadline {
            return Err(Error::InvalidOptions(format!(
                "buffer pool of {} pages is too small for its readers: waited {PIN_WAIT:?} \
                 for {what}",
                s.pool.frames()
            )));
        }
        self.waiters.fetch_add(1, Ordering::SeqCst);
        if for_unpin && s.pool.any_unpinned() {
            self.waiters.fetch_sub(1, Ordering::SeqCst);
            return Ok(s);
        }
        let s = self
            .changed
            .wait_timeout(s, RECHECK.min(deadline - now))
            .unwrap_or_else(|e| e.into_inner())
            .0;
        self.waiters.fetch_sub(1, Ordering::SeqCst);
        Ok(s)
    }

    /// Write back up to `n` dirty frames among the `2n` nearest the LRU end, with the mutex
    /// released, so that the next evictions — a writer's under its exclusive lock, or
    /// readers' misses — find clean victims and write nothing (a writer calls this beside
    /// the readers before it takes its lock, `crate::kit::parallel`). Returns the pages
    /// written.
    pub fn clean_ahead(&self, io: &dyn SharedIo, n: usize) -> Result<usize> {
        let victims = self.lock().pool.dirty_victims(n, 2 * n);
        let written = victims.len();
        if written > 0 {
            self.write_back(io, victims)?;
        }
        Ok(written)
    }

    /// Write `victims` back with the mutex released: pinned, so that nothing evicts them
    /// meanwhile, and sealed in copies taken under their latches held shared, so that
    /// their frames are only read (readers may hit them meanwhile; a shared writer that
    /// changes one after its copy leaves it dirty, `BufferPool::cleaned`).
    fn write_back(&self, io: &dyn SharedIo, victims: Vec<DirtyVictim>) -> Result<()> {
        let r = (|| {
            if let Some(lsn) = victims.iter().map(|v| v.lsn).max() {
                io.before_write(lsn)?;
            }
            let pages: Vec<(PageId, AlignedBuf)> = victims
                .iter()
                .map(|v| {
                    let mut copy = AlignedBuf::zeroed(v.bytes.1);
                    let _shared = v.latch.bytes.read().unwrap_or_else(|e| e.into_inner());
                    // SAFETY: the frame is pinned until `cleaned` below, so its buffer is
                    // allocated, and its latch is held shared, so no writer changes it.
                    let bytes = unsafe { std::slice::from_raw_parts(v.bytes.0, v.bytes.1) };
                    copy.copy_from_slice(bytes);
                    page::seal(v.page, &mut copy);
                    (v.page, copy)
                })
                .collect();
            io.write_pages(&pages)
        })();
        let mut s = self.lock();
        s.pool.cleaned(&victims, r.is_ok());
        if self.waiters.load(Ordering::SeqCst) > 0 {
            self.changed.notify_all();
        }
        r
    }

    /// Pin `pid`'s frame for a reader, doing what `miss` says on a miss.
    #[allow(clippy::type_complexity)]
    fn pin(
        &self,
        io: &dyn SharedIo,
        pid: PageId,
        miss: Miss,
    ) -> Result<Option<(Pin, (*const u8, usize))>> {
        self.pin_for(io, pid, miss, false)
    }

    /// [`SharedPool::pin`]; with `new`, a miss zeroes the frame instead of reading the
    /// page (a page just allocated, [`SharedPool::reserve`]).
    #[allow(clippy::type_complexity)]
    fn pin_for(
        &self,
        io: &dyn SharedIo,
        pid: PageId,
        miss: Miss,
        new: bool,
    ) -> Result<Option<(Pin, (*const u8, usize))>> {
        #[cfg(test)]
        let fast = !self.broken_ignores_loading;
        #[cfg(not(test))]
        let fast = true;
        if fast {
            if let Some(h) = self.index.pin(pid) {
                let (p, n) = (h.bytes.0.cast_const(), h.bytes.1);
                return Ok(Some((Pin::Hit(h), (p, n))));
            }
        }
        let deadline = Instant::now() + PIN_WAIT;
        let mut s = self.lock();
        loop {
            match s.pool.pin_resident(pid) {
                Lookup::Hit(f) => {
                    let (p, n) = s.pool.frame_ptr(f);
                    let latch = s.pool.frame_latch(f);
                    return Ok(Some((Pin::Locked(f, latch), (p.cast_const(), n))));
                }
                Lookup::Loading => {
                    #[cfg(test)]
                    if self.broken_ignores_loading {
                        if let Some(f) = s.pool.pin_loading(pid) {
                            let (p, n) = s.pool.frame_ptr(f);
                            let latch = s.pool.frame_latch(f);
                            return Ok(Some((Pin::Locked(f, latch), (p.cast_const(), n))));
                        }
                    }
                    s = self.wait(s, deadline, "a page another reader loads", false)?;
                    continue;
                }
                Lookup::Miss if miss == Miss::Stop => return Ok(None),
                Lookup::Miss => {}
            }
            if let Some(f) = s.pool.claim(pid, miss == Miss::LoadClean, !new) {
                let check = s.pool.page_check();
                let (p, n) = s.pool.frame_ptr(f);
                let latch = s.pool.frame_latch(f);
                drop(s);
                // SAFETY: `f` is pinned and marked loading: no other thread reads or writes
                // its buffer until `loaded` below (module doc, step 2).
                let buf = unsafe { std::slice::from_raw_parts_mut(p, n) };
                let r = match new {
                    true => {
                        buf.fill(0);
                        Ok(())
                    }
                    false => io
                        .read_page(pid, buf)
                        .and_then(|_| page::verify(pid, buf))
                        .and_then(|_| check(pid, buf)),
                };
                let mut s = self.lock();
                s.pool.loaded(f, r.is_ok());
                if self.waiters.load(Ordering::SeqCst) > 0 {
                    self.changed.notify_all();
                }
                drop(s);
                r?;
                return Ok(Some((Pin::Locked(f, latch), (p.cast_const(), n))));
            }
            // The victim is dirty (with `LoadClean`: every unpinned frame is): write the
            // LRU one back with the mutex released, and claim again.
            // Beside other threads (`LoadClean`) a batch, so that their misses do not wait
            // on each other's page writes one by one; alone, one page as the exclusive path.
            let batch = if miss == Miss::LoadClean {
                WRITE_BACK_BATCH
            } else {
                1
            };
            let victims = s.pool.dirty_victims(batch, usize::MAX);
            if victims.is_empty() {
                s = self.wait(s, deadline, "a frame to be unpinned", true)?;
                continue;
            }
            drop(s);
            self.write_back(io, victims)?;
            s = self.lock();
        }
    }
}

/// Model checks of the latch protocol (module doc) under `shuttle`, which runs the threads
/// in many interleavings: `RUSTFLAGS="--cfg flashix_shuttle" cargo test -p flashix --lib
/// buffer::shared`. Three readers share a two-frame pool whose frames start dirty: they
/// meet every path (hits, loads another reader waits for, write-backs by a reader, every
/// frame pinned) and must each see every page whole. The broken variant, whose readers
/// pin a page that is still loading, must be caught.
#[cfg(all(test, flashix_shuttle))]
mod model {
    use super::*;
    use crate::buffer::pool::NoBarrier;
    use crate::io::{Device, MemDevice};
    use shuttle::sync::Arc;

    const PAGE: usize = 512;

    /// A page of `pid` as the device holds it: sealed, its body filled with `pid`.
    fn sealed(pid: PageId) -> Vec<u8> {
        let mut b = vec![0u8; PAGE];
        b[page::HEADER..].fill(pid as u8);
        page::set_kind(&mut b, 1);
        page::seal(pid, &mut b);
        b
    }

    /// A device read in two steps with a scheduling point between them, so that a reader
    /// that does not wait for a load can see a half-filled frame.
    struct SlowIo {
        dev: Mutex<MemDevice>,
    }

    impl SharedIo for SlowIo {
        fn read_page(&self, pid: PageId, buf: &mut [u8]) -> Result<()> {
            let mut full = vec![0u8; PAGE];
            self.dev.lock().unwrap().read(pid, &mut full)?;
            buf[..PAGE / 2].copy_from_slice(&full[..PAGE / 2]);
            shuttle::thread::yield_now();
            buf[PAGE / 2..].copy_from_slice(&full[PAGE / 2..]);
            Ok(())
        }

        fn before_write(&self, _lsn: u64) -> Result<()> {
            Ok(())
        }

        fn write_pages(&self, pages: &[(PageId, AlignedBuf)]) -> Result<()> {
            let mut dev = self.dev.lock().unwrap();
            for (pid, b) in pages {
                dev.write(*pid, b)?;
            }
            Ok(())
        }
    }

    /// Which latch the scenario breaks.
    #[derive(Clone, Copy, PartialEq)]
    enum Broken {
        Nothing,
        /// Readers pin a page another reader is still loading.
        Loading,
        /// Evictions take frames that hits through the index pin.
        HitPins,
        /// Shared writers change frames without their latch.
        UnlatchedWrites,
        /// A write-back marks its frames clean even when a writer changed them meanwhile.
        LostChanges,
    }

    /// Pages 0 to 3 on a slow device and a two-frame pool, broken as `broken` says, whose
    /// frames hold pages 0 and 1 dirty: the first misses must write one back.
    fn setup(broken: Broken) -> (Arc<SharedPool>, Arc<SlowIo>) {
        let mut dev = MemDevice::new(PAGE);
        for pid in 0..4 {
            dev.write(pid, &sealed(pid)).unwrap();
        }
        let mut pool = SharedPool::new(BufferPool::new(PAGE, 2 * PAGE as u64, 1).unwrap());
        pool.broken_ignores_loading = broken == Broken::Loading;
        pool.broken_writes_unlatched = broken == Broken::UnlatchedWrites;
        pool.get_mut().broken_ignores_hit_pins = broken == Broken::HitPins;
        pool.get_mut().broken_ignores_changes = broken == Broken::LostChanges;
        for pid in [0, 1] {
            let p = pool.get_mut();
            let f = p.create(&mut dev, &mut NoBarrier, pid).unwrap();
            p.data_mut(f, 0).copy_from_slice(&sealed(pid));
            p.unpin(f);
        }
        let io = SlowIo {
            dev: Mutex::new(dev),
        };
        (Arc::new(pool), Arc::new(io))
    }

    fn scenario(broken: Broken) {
        let (pool, io) = setup(broken);
        // Each reader reads a page twice in a row: the second read is a hit through the
        // index while other readers' misses evict.
        let readers: Vec<_> = [[2u64, 2, 3, 0], [3, 3, 2, 1], [2, 2, 0, 3]]
            .into_iter()
            .map(|order| {
                let (pool, io) = (Arc::clone(&pool), Arc::clone(&io));
                shuttle::thread::spawn(move || {
                    for pid in order {
                        let whole = pool
                            .read(&*io, pid, |b| {
                                b[page::HEADER..].iter().all(|&x| x == pid as u8)
                            })
                            .unwrap();
                        assert!(whole, "page {pid} read while it was being loaded");
                    }
                })
            })
            .collect();
        for r in readers {
            r.join().unwrap();
        }
        let s = pool.with(|p| p.stats());
        assert_eq!(s.hits + s.misses, 12, "every read pinned its page once");
    }

    /// Two writers change pages 0 and 1 (each writes its body in two halves with a
    /// scheduling point between them) while two readers read pages 0 to 3 in a two-frame
    /// pool whose frames start dirty, so that reads evict and write back the pages being
    /// changed, and a third thread writes dirty frames back. Every read must see a page
    /// whole (before or after a change), and after the threads the device, once the pool
    /// is written back, must hold every change.
    fn writes_scenario(broken: Broken) {
        let (pool, io) = setup(broken);
        let changed = |pid: PageId| 0x80 | pid as u8;
        let writers: Vec<_> = [0u64, 1]
            .into_iter()
            .map(|pid| {
                let (pool, io) = (Arc::clone(&pool), Arc::clone(&io));
                shuttle::thread::spawn(move || {
                    pool.write(&*io, pid, Miss::Load, |b| {
                        let half = page::HEADER + (PAGE - page::HEADER) / 2;
                        b[page::HEADER..half].fill(changed(pid));
                        shuttle::thread::yield_now();
                        b[half..].fill(changed(pid));
                        Ok(Some(((), 0)))
                    })
                    .unwrap();
                })
            })
            .collect();
        let readers: Vec<_> = [[0u64, 2, 1, 3], [1, 3, 0, 2]]
            .into_iter()
            .map(|order| {
                let (pool, io) = (Arc::clone(&pool), Arc::clone(&io));
                shuttle::thread::spawn(move || {
                    for pid in order {
                        let whole = pool
                            .read(&*io, pid, |b| {
                                let body = &b[page::HEADER..];
                                body.iter().all(|&x| x == body[0])
                            })
                            .unwrap();
                        assert!(whole, "page {pid} read while it was being changed");
                    }
                })
            })
            .collect();
        // A write-back beside the writers, as a writer's `clean_ahead` makes.
        let cleaner = {
            let (pool, io) = (Arc::clone(&pool), Arc::clone(&io));
            shuttle::thread::spawn(move || {
                pool.clean_ahead(&*io, 2).unwrap();
            })
        };
        for t in writers.into_iter().chain(readers).chain([cleaner]) {
            t.join().unwrap();
        }
        while pool.clean_ahead(&*io, 2).unwrap() > 0 {}
        let mut buf = vec![0u8; PAGE];
        for pid in [0u64, 1] {
            io.dev.lock().unwrap().read(pid, &mut buf).unwrap();
            let kept = buf[page::HEADER..].iter().all(|&x| x == changed(pid));
            assert!(kept, "the change of page {pid} was lost");
        }
    }

    #[test]
    fn writers_and_readers_see_whole_pages_and_keep_every_change() {
        shuttle::check_random(|| writes_scenario(Broken::Nothing), 2000);
        // The depth that finds the broken write-back below.
        shuttle::check_pct(|| writes_scenario(Broken::Nothing), 20000, 4);
    }

    #[test]
    #[should_panic(expected = "while it was being changed")]
    fn a_writer_that_does_not_take_the_latch_is_caught() {
        crate::util::sync::check_seeded(|| writes_scenario(Broken::UnlatchedWrites), 2000, 2000, 4);
    }

    #[test]
    #[should_panic(expected = "was lost")]
    fn a_write_back_that_forgets_a_change_made_while_it_copied_is_caught() {
        crate::util::sync::check_seeded(|| writes_scenario(Broken::LostChanges), 2000, 20000, 4);
    }

    #[test]
    fn readers_see_whole_pages_in_every_interleaving() {
        shuttle::check_random(|| scenario(Broken::Nothing), 2000);
        shuttle::check_pct(|| scenario(Broken::Nothing), 2000, 3);
    }

    #[test]
    #[should_panic(expected = "while it was being loaded")]
    fn a_reader_that_does_not_wait_for_a_load_is_caught() {
        crate::util::sync::check_seeded(|| scenario(Broken::Loading), 2000, 2000, 3);
    }

    #[test]
    #[should_panic(expected = "while it was being loaded")]
    fn an_eviction_that_ignores_a_hits_pin_is_caught() {
        crate::util::sync::check_seeded(|| scenario(Broken::HitPins), 2000, 2000, 3);
    }
}

#[cfg(all(test, not(flashix_shuttle)))]
mod tests {
    use super::*;
    use crate::buffer::pool::NoBarrier;
    use crate::io::{Device, MemDevice};

    const PAGE: usize = 512;

    struct DevIo(std::sync::Mutex<MemDevice>);

    impl SharedIo for DevIo {
        fn read_page(&self, pid: PageId, buf: &mut [u8]) -> Result<()> {
            self.0.lock().unwrap().read(pid, buf)
        }

        fn before_write(&self, _lsn: u64) -> Result<()> {
            Ok(())
        }

        fn write_pages(&self, pages: &[(PageId, AlignedBuf)]) -> Result<()> {
            let mut dev = self.0.lock().unwrap();
            for (pid, b) in pages {
                dev.write(*pid, b)?;
            }
            Ok(())
        }
    }

    /// `clean_ahead` writes back the dirty pages at the LRU end, sealed, and leaves them
    /// resident and clean, their bytes unchanged; the rest stay dirty.
    #[test]
    fn clean_ahead_writes_back_the_lru_end() {
        let mut dev = MemDevice::new(PAGE);
        let mut pool = SharedPool::new(BufferPool::new(PAGE, 4 * PAGE as u64, 1).unwrap());
        for pid in 0..4u64 {
            let p = pool.get_mut();
            let f = p.create(&mut dev, &mut NoBarrier, pid).unwrap();
            p.data_mut(f, 0)[page::HEADER..].fill(pid as u8 + 1);
            p.unpin(f);
        }
        let io = DevIo(std::sync::Mutex::new(dev));
        assert_eq!(pool.clean_ahead(&io, 2).unwrap(), 2);
        let mut buf = vec![0u8; PAGE];
        for pid in 0..2u64 {
            io.0.lock().unwrap().read(pid, &mut buf).unwrap();
            page::verify(pid, &buf).unwrap();
            assert!(buf[page::HEADER..].iter().all(|&b| b == pid as u8 + 1));
        }
        let p = pool.get_mut();
        assert!(!p.is_dirty(0) && !p.is_dirty(1));
        assert!(p.is_dirty(2) && p.is_dirty(3));
        for pid in 0..4u64 {
            let same = pool
                .read(&io, pid, |b| {
                    b[page::HEADER..].iter().all(|&x| x == pid as u8 + 1)
                })
                .unwrap();
            assert!(same, "page {pid}");
        }
        let s = pool.with(|p| p.stats());
        assert_eq!((s.misses, s.writebacks), (0, 2));
    }
}
