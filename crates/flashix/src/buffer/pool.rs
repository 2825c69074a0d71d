//! LRU buffer pool with a budget in bytes (FD-tree paper, App. D: "an LRU buffer manager
//! for caching recently accessed disk pages"; a dirty page is written when evicted).
//!
//! Frames are page-aligned ([`AlignedBuf`]) so `O_DIRECT` needs no copy. A frame is
//! *pinned* while an engine holds it; pinned frames are never evicted. Every page that
//! goes through the pool carries the page envelope of [`crate::page`]: the pool verifies it
//! on a miss and seals it on write-back.
//!
//! Write-ahead rule: each dirty frame remembers an LSN; before the frame is written, the
//! pool calls [`WriteBarrier::before_write`] with it, so the caller can make its WAL durable
//! up to that point (the before-images of [`crate::durable::Pager`]).

use super::latch::{Bytes, HitIndex, Latch, Slot};
use crate::error::{Error, Result};
use crate::io::{AlignedBuf, Device, IoReq, PageId};
use crate::page;
use crate::stats::BufferStats;
use crate::util::sync::Arc;
use rustc_hash::FxHashMap;
use std::collections::BTreeSet;
use std::sync::atomic::Ordering;

/// Dirty unpinned frames a reader's miss beside other threads passes over at the LRU end
/// for a clean one ([`BufferPool::claim`] with `clean`) before it writes back a batch from
/// the LRU end instead: about one batch of write-backs (`super::shared`).
const PASS_OVER: usize = 16;

/// Called before dirty frames are written back.
pub trait WriteBarrier {
    /// Make everything up to `lsn` durable.
    fn before_write(&mut self, lsn: u64) -> Result<()>;
}

/// A barrier for callers with nothing to make durable first.
#[cfg(test)]
pub(crate) struct NoBarrier;

#[cfg(test)]
impl WriteBarrier for NoBarrier {
    fn before_write(&mut self, _lsn: u64) -> Result<()> {
        Ok(())
    }
}

/// Index of a frame in the pool.
pub type FrameId = usize;

/// What a shared reader's lookup found ([`BufferPool::pin_resident`]).
pub(super) enum Lookup {
    /// Resident and loaded: pinned for the reader.
    Hit(FrameId),
    /// Another reader is reading it into its frame.
    Loading,
    /// Not resident.
    Miss,
}

const NIL: usize = usize::MAX;

/// A dirty frame taken for a write-back with the shared pool's lock released
/// ([`BufferPool::dirty_victims`]).
pub(super) struct DirtyVictim {
    pub frame: FrameId,
    pub page: PageId,
    pub lsn: u64,
    /// The frame's bytes, valid while it is pinned, and its latch (held shared to copy
    /// them: a shared writer may change a pinned frame).
    pub bytes: (*const u8, usize),
    pub latch: Arc<Latch>,
    /// The frame's shared-mode changes when it was taken.
    pub changes: u64,
}

/// Page-map entries allocated when the pool is made (more as it fills).
const MAP_PREALLOC: usize = 1 << 16;

struct Frame {
    page: PageId,
    data: AlignedBuf,
    dirty: bool,
    /// A shared reader is reading the page into the frame outside the pool's lock
    /// ([`BufferPool::claim`]); it is pinned and mapped meanwhile.
    loading: bool,
    /// Pins taken with `&mut` or under the shared pool's lock; hits through the
    /// [`HitIndex`] pin the latch instead.
    pins: u32,
    latch: Arc<Latch>,
    lsn: u64,
    /// Changes made in shared mode ([`BufferPool::changed_shared`]): a write-back that
    /// copied the frame before the latest one leaves it dirty.
    changes: u64,
    prev: usize,
    next: usize,
}

/// A structural check of a page read from the device, after its envelope
/// ([`page::verify`]): the owner's format rules that keep its accessors in bounds (an entry
/// count within the page, ...), so that a page whose checksum was forged over damaged
/// contents is `Error::Corruption`, never an out-of-bounds panic.
pub type PageCheck = fn(PageId, &[u8]) -> Result<()>;

fn no_check(_: PageId, _: &[u8]) -> Result<()> {
    Ok(())
}

/// An LRU pool of page frames.
pub struct BufferPool {
    page_size: usize,
    /// Run on every page read from the device ([`BufferPool::set_page_check`]).
    check: PageCheck,
    frames: Vec<Frame>,
    capacity: usize,
    /// Page → frame (Fx hashing: page ids are the engine's own, not adversarial input,
    /// and SipHash was ~3% of an FD-tree insert profile).
    map: FxHashMap<PageId, FrameId>,
    /// Pages of the dirty frames, in page order, so that a flush costs the dirty pages,
    /// not the pool.
    dirty: BTreeSet<PageId>,
    free: Vec<FrameId>,
    /// Frames whose buffer was dropped when the capacity shrank ([`BufferPool::set_capacity`]);
    /// reused, with a new buffer, when it grows again.
    released: Vec<FrameId>,
    /// Most recently used.
    head: usize,
    /// Least recently used.
    tail: usize,
    /// The loaded pages shared readers hit without the shared pool's lock
    /// (`super::latch`): a frame leaves it before it is reused, written back in shared mode
    /// or discarded.
    index: Arc<HitIndex>,
    stats: BufferStats,
    /// A deliberately broken latch for the model tests: evictions ignore the pins of hits
    /// through the index.
    #[cfg(test)]
    pub(super) broken_ignores_hit_pins: bool,
    /// A deliberately broken write-back for the model tests (`super::shared`): frames a
    /// shared writer changed while they were written back are marked clean all the same.
    #[cfg(test)]
    pub(super) broken_ignores_changes: bool,
}

impl BufferPool {
    /// A pool of `budget_bytes / page_size` frames; at least `min_frames` are required.
    pub fn new(page_size: usize, budget_bytes: u64, min_frames: usize) -> Result<Self> {
        let capacity = (budget_bytes / page_size as u64) as usize;
        if capacity < min_frames {
            return Err(Error::InvalidOptions(format!(
                "buffer pool of {budget_bytes} bytes holds {capacity} pages of {page_size} bytes; \
                 this engine needs at least {min_frames} ({} bytes)",
                min_frames * page_size
            )));
        }
        Ok(BufferPool {
            page_size,
            check: no_check,
            frames: Vec::new(),
            capacity,
            // Frames are made as pages come in; the map grows with them. A budget (from a
            // manifest, possibly damaged) never sizes an allocation up front.
            map: FxHashMap::with_capacity_and_hasher(
                capacity.min(MAP_PREALLOC),
                Default::default(),
            ),
            dirty: BTreeSet::new(),
            free: Vec::new(),
            released: Vec::new(),
            head: NIL,
            tail: NIL,
            index: Arc::new(HitIndex::default()),
            #[cfg(test)]
            broken_ignores_hit_pins: false,
            #[cfg(test)]
            broken_ignores_changes: false,
            stats: BufferStats {
                capacity_bytes: (capacity * page_size) as u64,
                frames: capacity as u64,
                ..BufferStats::default()
            },
        })
    }

    /// Check every page read from the device from now on with `check` as well as its
    /// envelope.
    pub fn set_page_check(&mut self, check: PageCheck) {
        self.check = check;
    }

    /// Counters.
    pub fn stats(&self) -> BufferStats {
        BufferStats {
            resident: self.map.len() as u64,
            hits: self.stats.hits + self.index.hits.load(Ordering::Relaxed),
            ..self.stats.clone()
        }
    }

    /// Frames the pool may hold.
    pub fn frames(&self) -> u64 {
        self.capacity as u64
    }

    /// Bytes held by frames allocated so far.
    pub fn memory_bytes(&self) -> u64 {
        (self.live_frames() * self.page_size) as u64
    }

    /// Frames that hold a buffer.
    fn live_frames(&self) -> usize {
        self.frames.len() - self.released.len()
    }

    /// Change the frames the pool may hold (an engine whose own structures grow gives the
    /// pool what is left of its budget). Shrinking drops unused frames' buffers first, then
    /// evicts least recently used unpinned pages (writing dirty ones, after the barrier)
    /// and drops theirs; pinned frames stay, so the pool may stay above the new capacity
    /// until they are unpinned and the next shrink.
    pub fn set_capacity(
        &mut self,
        dev: &mut dyn Device,
        barrier: &mut dyn WriteBarrier,
        frames: usize,
    ) -> Result<()> {
        self.capacity = frames;
        self.stats.frames = frames as u64;
        self.stats.capacity_bytes = (frames * self.page_size) as u64;
        while self.live_frames() > self.capacity {
            let f = match self.free.pop() {
                Some(f) => f,
                None => {
                    let Some(f) = self.lru_free() else {
                        break;
                    };
                    if self.frames[f].dirty {
                        self.write_back(dev, barrier, &[f])?;
                    }
                    self.evict(f);
                    f
                }
            };
            self.frames[f].data = AlignedBuf::zeroed(0);
            self.released.push(f);
        }
        Ok(())
    }

    fn unlink(&mut self, f: FrameId) {
        let (prev, next) = (self.frames[f].prev, self.frames[f].next);
        if prev != NIL {
            self.frames[prev].next = next;
        } else {
            self.head = next;
        }
        if next != NIL {
            self.frames[next].prev = prev;
        } else {
            self.tail = prev;
        }
        self.frames[f].prev = NIL;
        self.frames[f].next = NIL;
    }

    fn push_front(&mut self, f: FrameId) {
        self.frames[f].prev = NIL;
        self.frames[f].next = self.head;
        if self.head != NIL {
            self.frames[self.head].prev = f;
        }
        self.head = f;
        if self.tail == NIL {
            self.tail = f;
        }
    }

    fn touch(&mut self, f: FrameId) {
        if self.head != f {
            self.unlink(f);
            self.push_front(f);
        }
    }

    /// Whether anyone pins frame `f` (through the pool or a hit through the index).
    fn pinned(&self, f: FrameId) -> bool {
        #[cfg(test)]
        if self.broken_ignores_hit_pins {
            return self.frames[f].pins > 0;
        }
        self.frames[f].pins > 0 || self.frames[f].latch.pins.load(Ordering::SeqCst) > 0
    }

    /// The least recently used frame nobody pins, taken out of the hit index (so that no
    /// reader can pin it until it is entered again), or `None` when every frame is pinned.
    /// A frame that readers hit since it last came here gets a second chance: it moves to
    /// the most recent end with its reference bit cleared, as CLOCK gives one (hits through
    /// the index set the bit instead of moving the frame, `super::latch`).
    fn lru_free(&mut self) -> Option<FrameId> {
        self.lru_free_of(false)
    }

    /// [`BufferPool::lru_free`], passing over dirty frames when `clean` is set: at most
    /// [`PASS_OVER`] unpinned ones (`None` then: the caller writes the LRU end back). A
    /// reader that went further would take the clean frames of a pool whose other frames
    /// are dirty — a write-heavy index's internal nodes, whose leaves each write dirties —
    /// one after another, and every descent would read them again.
    fn lru_free_of(&mut self, clean: bool) -> Option<FrameId> {
        let mut f = self.tail;
        let mut chances = self.map.len();
        let mut passed = 0;
        while f != NIL {
            let prev = self.frames[f].prev;
            let passed_over = clean && self.frames[f].dirty;
            if passed_over && !self.pinned(f) {
                passed += 1;
                if passed > PASS_OVER {
                    return None;
                }
            }
            if !self.pinned(f) && !passed_over {
                let referenced = self.frames[f]
                    .latch
                    .referenced
                    .swap(false, Ordering::Relaxed);
                if referenced && chances > 0 {
                    chances -= 1;
                    self.touch(f);
                } else if self.leave_index(f) {
                    return Some(f);
                }
            }
            f = prev;
        }
        None
    }

    /// Whether some resident frame is unpinned (a waiting reader's look before it sleeps).
    pub(super) fn any_unpinned(&self) -> bool {
        let mut f = self.tail;
        while f != NIL {
            if !self.pinned(f) {
                return true;
            }
            f = self.frames[f].prev;
        }
        false
    }

    /// Take `f` out of the hit index unless a hit pins it (`HitIndex::remove_unpinned`).
    fn leave_index(&self, f: FrameId) -> bool {
        let page = self.frames[f].page;
        #[cfg(test)]
        if self.broken_ignores_hit_pins {
            self.index.remove(page);
            return true;
        }
        self.index.remove_unpinned(page)
    }

    /// A frame to (re)use: a never-used one, a free one, or the LRU unpinned victim.
    fn victim(&mut self, dev: &mut dyn Device, barrier: &mut dyn WriteBarrier) -> Result<FrameId> {
        if let Some(f) = self.spare() {
            return Ok(f);
        }
        let Some(f) = self.lru_free() else {
            return Err(Error::InvalidOptions(format!(
                "buffer pool of {} pages is too small: every page is pinned",
                self.capacity
            )));
        };
        if self.frames[f].dirty {
            self.write_back(dev, barrier, &[f])?;
        }
        self.evict(f);
        Ok(f)
    }

    /// Take frame `f` (resident, unpinned, clean, out of the hit index) out of the pool's
    /// map and LRU list.
    fn evict(&mut self, f: FrameId) {
        self.unlink(f);
        self.map.remove(&self.frames[f].page);
        self.stats.evictions += 1;
    }

    /// A frame that holds no page: a free one, or a new one while the pool is below its
    /// capacity.
    fn spare(&mut self) -> Option<FrameId> {
        if let Some(f) = self.free.pop() {
            return Some(f);
        }
        if self.live_frames() < self.capacity {
            if let Some(f) = self.released.pop() {
                self.frames[f].data = AlignedBuf::zeroed(self.page_size);
                return Some(f);
            }
            self.frames.push(Frame {
                page: 0,
                data: AlignedBuf::zeroed(self.page_size),
                dirty: false,
                loading: false,
                pins: 0,
                latch: Arc::new(Latch::default()),
                lsn: 0,
                changes: 0,
                prev: NIL,
                next: NIL,
            });
            return Some(self.frames.len() - 1);
        }
        None
    }

    /// Write dirty frames (one batch), after the barrier for their largest LSN.
    fn write_back(
        &mut self,
        dev: &mut dyn Device,
        barrier: &mut dyn WriteBarrier,
        fids: &[FrameId],
    ) -> Result<()> {
        if let Some(lsn) = fids.iter().map(|&f| self.frames[f].lsn).max() {
            barrier.before_write(lsn)?;
        }
        for &f in fids {
            let fr = &mut self.frames[f];
            page::seal(fr.page, &mut fr.data);
        }
        let mut reqs: Vec<IoReq<'_>> = Vec::with_capacity(fids.len());
        // Frames are distinct; collect shared borrows of each.
        let frames = &self.frames;
        for &f in fids {
            reqs.push(IoReq::Write {
                page: frames[f].page,
                buf: &frames[f].data,
            });
        }
        dev.submit(&mut reqs)?;
        for &f in fids {
            self.frames[f].dirty = false;
            self.frames[f].lsn = 0;
            self.dirty.remove(&self.frames[f].page);
        }
        self.stats.writebacks += fids.len() as u64;
        Ok(())
    }

    /// Pin `page`, reading it on a miss.
    pub fn fetch(
        &mut self,
        dev: &mut dyn Device,
        barrier: &mut dyn WriteBarrier,
        pid: PageId,
    ) -> Result<FrameId> {
        if let Some(&f) = self.map.get(&pid) {
            self.stats.hits += 1;
            self.frames[f].pins += 1;
            self.touch(f);
            return Ok(f);
        }
        self.stats.misses += 1;
        let f = self.victim(dev, barrier)?;
        let read = dev
            .read(pid, &mut self.frames[f].data)
            .and_then(|_| page::verify(pid, &self.frames[f].data))
            .and_then(|_| (self.check)(pid, &self.frames[f].data));
        if let Err(e) = read {
            self.free.push(f);
            return Err(e);
        }
        self.install(f, pid, false);
        Ok(f)
    }

    /// Load every page of `runs` that is not resident, reading each run that misses a page
    /// as one request and all of them in psync groups of at most `pio_max` requests
    /// ([`crate::io::psync`]; PIO B-tree paper §2.3). Resident pages are kept as they are
    /// (they may be newer than the device). Loaded pages are verified and left unpinned;
    /// the caller bounds the pages of one call by the pool's capacity. Returns the pages
    /// loaded.
    pub fn fetch_runs(
        &mut self,
        dev: &mut dyn Device,
        barrier: &mut dyn WriteBarrier,
        runs: &[crate::io::psync::Run],
        pio_max: usize,
    ) -> Result<u64> {
        let missing: Vec<crate::io::psync::Run> = runs
            .iter()
            .copied()
            .filter(|&(start, len)| {
                (start..start.saturating_add(len)).any(|p| !self.map.contains_key(&p))
            })
            .collect();
        if missing.is_empty() {
            return Ok(0);
        }
        if let [(pid, 1)] = missing[..] {
            // One page (a point search's leaf of one segment): read into its frame, as
            // `fetch` does, instead of into a buffer of its own and copied (the same one
            // request for the device).
            let f = self.fetch(dev, barrier, pid)?;
            self.unpin(f);
            return Ok(1);
        }
        // Decided before any eviction: a page resident now may be newer than the device,
        // and evicting it below writes it back after the read, so its bytes read here are
        // stale even if it is gone by the time its turn comes.
        let absent: Vec<Vec<bool>> = missing
            .iter()
            .map(|&(start, len)| {
                (start..start + len)
                    .map(|p| !self.map.contains_key(&p))
                    .collect()
            })
            .collect();
        let bufs = crate::io::psync::read_runs(dev, &missing, pio_max)?;
        let mut loaded = 0;
        for ((&(start, len), buf), absent) in missing.iter().zip(&bufs).zip(&absent) {
            for (i, pid) in (start..start + len).enumerate() {
                if !absent[i] || self.map.contains_key(&pid) {
                    continue;
                }
                let bytes = &buf[i * self.page_size..(i + 1) * self.page_size];
                page::verify(pid, bytes)?;
                (self.check)(pid, bytes)?;
                self.stats.misses += 1;
                let f = self.victim(dev, barrier)?;
                self.frames[f].data.copy_from_slice(bytes);
                self.install(f, pid, false);
                self.unpin(f);
                loaded += 1;
            }
        }
        Ok(loaded)
    }

    /// A shared reader's lookup (`super::SharedPool`): pin `pid` if it is resident and
    /// loaded (a hit), or say that another reader is loading it, or that it is absent.
    pub(super) fn pin_resident(&mut self, pid: PageId) -> Lookup {
        match self.map.get(&pid) {
            Some(&f) if self.frames[f].loading => Lookup::Loading,
            Some(&f) => {
                self.stats.hits += 1;
                self.frames[f].pins += 1;
                self.touch(f);
                // Out of the index since a write-back in shared mode: its next hit needs no
                // lock again.
                self.enter(f);
                Lookup::Hit(f)
            }
            None => Lookup::Miss,
        }
    }

    /// A frame for a shared reader to read `pid` into with the pool's lock released: a
    /// spare one or the least recently used unpinned one, the victim `fetch` would take,
    /// pinned, mapped to `pid` and marked loading, so that other readers of `pid` wait for
    /// it and nothing evicts it. `None` when that victim is dirty (the caller writes it back
    /// first and claims again: the order of evictions is the LRU order, as in `fetch`) or
    /// every frame is pinned. With `clean`, a reader beside other threads passes over
    /// dirty frames (at most [`PASS_OVER`]; past that `None`, and the caller writes the
    /// LRU end back): it takes the least recently used *clean* unpinned frame, leaving the
    /// write-back of dirty ones to the writer (which cleans ahead of its own evictions,
    /// `super::SharedPool::clean_ahead`), so that it does not hold its engine's lock
    /// across a page write; `None` then only when every unpinned frame is dirty. Counted
    /// as a miss.
    /// A miss is counted with `miss` (not for a new page's frame).
    pub(super) fn claim(&mut self, pid: PageId, clean: bool, miss: bool) -> Option<FrameId> {
        let f = match self.spare() {
            Some(f) => f,
            None => {
                let f = self.lru_free_of(clean)?;
                if self.frames[f].dirty {
                    return None;
                }
                self.evict(f);
                f
            }
        };
        if miss {
            self.stats.misses += 1;
        }
        self.install_unindexed(f, pid, false);
        self.frames[f].loading = true;
        Some(f)
    }

    /// The deliberately broken latch of the model tests (`super::SharedPool`): pin a page
    /// even while it is loading.
    #[cfg(test)]
    pub(super) fn pin_loading(&mut self, pid: PageId) -> Option<FrameId> {
        let f = *self.map.get(&pid)?;
        self.stats.hits += 1;
        self.frames[f].pins += 1;
        Some(f)
    }

    /// The shared reader that claimed `f` finished reading into it: on success the page is
    /// resident (and stays pinned for the reader); on failure the frame is free again.
    pub(super) fn loaded(&mut self, f: FrameId, ok: bool) {
        self.frames[f].loading = false;
        match ok {
            true => self.enter(f),
            false => self.discard(self.frames[f].page),
        }
    }

    /// Up to `n` dirty frames nearest the LRU end (among the `look` last) that nobody pins,
    /// each taken out of the hit index and pinned, for a shared reader or writer to write
    /// back with the shared pool's lock released ([`super::SharedPool::clean_ahead`]):
    /// frame, page, LSN and bytes. [`BufferPool::cleaned`] ends it.
    pub(super) fn dirty_victims(&mut self, n: usize, look: usize) -> Vec<DirtyVictim> {
        let mut out = Vec::new();
        let mut f = self.tail;
        let mut looked = 0;
        while f != NIL && out.len() < n && looked < look {
            let prev = self.frames[f].prev;
            if self.frames[f].dirty && !self.pinned(f) && self.leave_index(f) {
                let fr = &mut self.frames[f];
                fr.pins += 1;
                out.push(DirtyVictim {
                    frame: f,
                    page: fr.page,
                    lsn: fr.lsn,
                    bytes: (fr.data.as_ptr(), fr.data.len()),
                    latch: Arc::clone(&fr.latch),
                    changes: fr.changes,
                });
            }
            looked += 1;
            f = prev;
        }
        out
    }

    /// The write-back of `victims` ([`BufferPool::dirty_victims`]) ended: on success they are
    /// clean, unless a shared writer changed one since it was taken (its copy may predate
    /// the change); they are unpinned either way.
    pub(super) fn cleaned(&mut self, victims: &[DirtyVictim], ok: bool) {
        for v in victims {
            #[cfg(test)]
            let unchanged =
                self.broken_ignores_changes || self.frames[v.frame].changes == v.changes;
            #[cfg(not(test))]
            let unchanged = self.frames[v.frame].changes == v.changes;
            if ok && unchanged {
                let fr = &mut self.frames[v.frame];
                fr.dirty = false;
                fr.lsn = 0;
                self.dirty.remove(&v.page);
                self.stats.writebacks += 1;
            }
            self.unpin(v.frame);
        }
    }

    /// The page check run on every page read from the device.
    pub(super) fn page_check(&self) -> PageCheck {
        self.check
    }

    /// The bytes of pinned frame `f`, for a shared reader to use with the pool's lock
    /// released. The pointer stays valid while `f` is pinned: a pinned frame's buffer is
    /// never evicted, released or replaced (`super::SharedPool` states the protocol).
    pub(super) fn frame_ptr(&mut self, f: FrameId) -> (*mut u8, usize) {
        let d = &mut self.frames[f].data;
        (d.as_mut_ptr(), d.len())
    }

    /// The latch of pinned frame `f`.
    pub(super) fn frame_latch(&self, f: FrameId) -> Arc<Latch> {
        Arc::clone(&self.frames[f].latch)
    }

    /// A shared writer changed resident page `pid` (pinned): it is dirty with at least
    /// `lsn` (its before-image's, when this change took one).
    pub(super) fn changed_shared(&mut self, pid: PageId, lsn: u64) {
        let Some(&f) = self.map.get(&pid) else {
            return;
        };
        self.mark_dirty(f);
        let fr = &mut self.frames[f];
        fr.lsn = fr.lsn.max(lsn);
        fr.changes += 1;
    }

    /// Release a shared reader's pin; true when the frame is now unpinned.
    pub(super) fn unpin_shared(&mut self, f: FrameId) -> bool {
        self.unpin(f);
        self.frames[f].pins == 0
    }

    /// Pin a frame for a new page without reading it (contents zeroed, marked dirty).
    pub fn create(
        &mut self,
        dev: &mut dyn Device,
        barrier: &mut dyn WriteBarrier,
        pid: PageId,
    ) -> Result<FrameId> {
        if let Some(&f) = self.map.get(&pid) {
            self.frames[f].pins += 1;
            self.mark_dirty(f);
            self.frames[f].data.fill(0);
            self.touch(f);
            return Ok(f);
        }
        let f = self.victim(dev, barrier)?;
        self.frames[f].data.fill(0);
        self.install(f, pid, true);
        Ok(f)
    }

    /// Put `bytes` (a sealed page just written to the device) in the pool as a clean,
    /// unpinned frame of `pid`, so that its next read is a hit (the FBX paper's clean:
    /// "put the page to the node buffer pool").
    pub fn put_clean(
        &mut self,
        dev: &mut dyn Device,
        barrier: &mut dyn WriteBarrier,
        pid: PageId,
        bytes: &[u8],
    ) -> Result<()> {
        if let Some(&f) = self.map.get(&pid) {
            self.frames[f].data.copy_from_slice(bytes);
            self.touch(f);
            return Ok(());
        }
        let f = self.victim(dev, barrier)?;
        self.frames[f].data.copy_from_slice(bytes);
        self.install(f, pid, false);
        self.unpin(f);
        Ok(())
    }

    /// Map `f` to `pid` (pinned once, most recently used) and enter it in the hit index.
    fn install(&mut self, f: FrameId, pid: PageId, dirty: bool) {
        self.install_unindexed(f, pid, dirty);
        self.enter(f);
    }

    /// Enter resident, loaded frame `f` in the hit index (no-op if it is there).
    fn enter(&self, f: FrameId) {
        let fr = &self.frames[f];
        let (latch, bytes) = (&fr.latch, Bytes(fr.data.as_ptr().cast_mut(), fr.data.len()));
        self.index.insert(fr.page, || Slot {
            latch: Arc::clone(latch),
            bytes,
        });
    }

    /// The hit index, for the shared pool's readers.
    pub(super) fn hit_index(&self) -> Arc<HitIndex> {
        Arc::clone(&self.index)
    }

    /// [`BufferPool::install`] without entering the index (a frame a reader is loading).
    fn install_unindexed(&mut self, f: FrameId, pid: PageId, dirty: bool) {
        let fr = &mut self.frames[f];
        fr.page = pid;
        fr.dirty = false;
        fr.pins = 1;
        fr.lsn = 0;
        if dirty {
            self.mark_dirty(f);
        }
        self.map.insert(pid, f);
        self.push_front(f);
    }

    fn mark_dirty(&mut self, f: FrameId) {
        let fr = &mut self.frames[f];
        if !fr.dirty {
            fr.dirty = true;
            self.dirty.insert(fr.page);
        }
    }

    /// Release a pin.
    pub fn unpin(&mut self, f: FrameId) {
        let fr = &mut self.frames[f];
        fr.pins = fr.pins.saturating_sub(1);
    }

    /// Read access to a pinned frame.
    pub fn data(&self, f: FrameId) -> &[u8] {
        &self.frames[f].data
    }

    /// Write access to a pinned frame; marks it dirty with at least `lsn`.
    pub fn data_mut(&mut self, f: FrameId, lsn: u64) -> &mut [u8] {
        self.mark_dirty(f);
        let fr = &mut self.frames[f];
        fr.lsn = fr.lsn.max(lsn);
        &mut fr.data
    }

    #[cfg(test)]
    /// True if `pid` is resident and dirty.
    pub fn is_dirty(&self, pid: PageId) -> bool {
        self.map.get(&pid).is_some_and(|&f| self.frames[f].dirty)
    }

    #[cfg(test)]
    /// True if `pid` is resident.
    pub fn contains(&self, pid: PageId) -> bool {
        self.map.contains_key(&pid)
    }

    /// Move a resident, unpinned page to the LRU end, so it is the next to be evicted: for
    /// pages an engine has finished with and will not want soon (the PIO B-tree's leaves
    /// after a batch update or a search), so that they do not push out the upper levels
    /// a cost model expects the pool to hold. A dirty page stays dirty.
    pub fn demote(&mut self, pid: PageId) {
        if let Some(&f) = self.map.get(&pid) {
            // Its reference bit would give it a second chance at the LRU end.
            self.frames[f]
                .latch
                .referenced
                .store(false, Ordering::Relaxed);
            if !self.pinned(f) && self.tail != f {
                self.unlink(f);
                self.frames[f].prev = self.tail;
                self.frames[f].next = NIL;
                if self.tail != NIL {
                    let t = self.tail;
                    self.frames[t].next = f;
                } else {
                    self.head = f;
                }
                self.tail = f;
            }
        }
    }

    /// Drop a page without writing it (it was freed).
    pub fn discard(&mut self, pid: PageId) {
        // No hit pins it: discards come with `&mut` (no readers) or for a frame a reader
        // failed to load (never entered in the index).
        let gone = self.index.remove_unpinned(pid);
        debug_assert!(gone, "page {pid} discarded while a reader pins it");
        if let Some(f) = self.map.remove(&pid) {
            self.unlink(f);
            self.dirty.remove(&pid);
            let fr = &mut self.frames[f];
            fr.dirty = false;
            fr.pins = 0;
            fr.lsn = 0;
            self.free.push(f);
        }
    }

    #[cfg(test)]
    /// Drop every frame without writing (after an error or a recovery restore).
    pub fn clear(&mut self) {
        let pages: Vec<PageId> = self.map.keys().copied().collect();
        for p in pages {
            self.discard(p);
        }
    }

    /// Write every dirty page, in page order, in batches.
    pub fn flush_all(
        &mut self,
        dev: &mut dyn Device,
        barrier: &mut dyn WriteBarrier,
    ) -> Result<()> {
        self.flush_dirty(dev, barrier, 64)
    }

    /// Write every dirty page, in page order, in batches of at most `group` writes (the
    /// psync writes of the PIO B-tree's batch update, §3.1.3).
    pub fn flush_dirty(
        &mut self,
        dev: &mut dyn Device,
        barrier: &mut dyn WriteBarrier,
        group: usize,
    ) -> Result<()> {
        let dirty: Vec<FrameId> = self
            .dirty
            .iter()
            .filter_map(|p| self.map.get(p).copied())
            .collect();
        for chunk in dirty.chunks(group.max(1)) {
            self.write_back(dev, barrier, chunk)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::MemDevice;

    fn write_page(pool: &mut BufferPool, dev: &mut MemDevice, pid: PageId, byte: u8) {
        let f = pool.create(dev, &mut NoBarrier, pid).unwrap();
        pool.data_mut(f, 0)[page::HEADER] = byte;
        pool.unpin(f);
    }

    /// A pool of `frames` frames holding pages 0..6, page `p` marked with byte `p + 1`.
    fn six_pages(frames: usize) -> (MemDevice, BufferPool) {
        let mut dev = MemDevice::new(512);
        let mut pool = BufferPool::new(512, 512 * frames as u64, 1).unwrap();
        for p in 0..6 {
            write_page(&mut pool, &mut dev, p, p as u8 + 1);
        }
        (dev, pool)
    }

    /// `fetch_runs` reads each run that misses a page as one request: a one-page run
    /// straight into its frame, a longer one around a resident page, which keeps its newer
    /// contents; runs wholly resident cost nothing; loaded pages are left unpinned.
    #[test]
    fn fetch_runs_reads_what_is_missing_once_and_keeps_resident_pages() {
        let (mut dev, mut pool) = six_pages(8);
        pool.flush_all(&mut dev, &mut NoBarrier).unwrap();
        pool.clear();
        // Page 3 resident and newer than the device.
        let f = pool.fetch(&mut dev, &mut NoBarrier, 3).unwrap();
        pool.data_mut(f, 0)[page::HEADER] = 33;
        pool.unpin(f);
        let before = dev.stats().read_requests;
        // (runs, pages loaded, read requests since `before`)
        for (runs, loaded, requests) in [
            (&[(0, 1)][..], 1, 1),
            (&[(2, 3)][..], 2, 2),
            (&[(0, 1), (2, 3)][..], 0, 2),
        ] {
            let got = pool.fetch_runs(&mut dev, &mut NoBarrier, runs, 8).unwrap();
            assert_eq!(got, loaded, "{runs:?}");
            assert_eq!(dev.stats().read_requests - before, requests, "{runs:?}");
        }
        for (p, byte) in [(0, 1), (2, 3), (3, 33), (4, 5)] {
            let f = pool.fetch(&mut dev, &mut NoBarrier, p).unwrap();
            assert_eq!(pool.data(f)[page::HEADER], byte, "page {p}");
            pool.unpin(f);
        }
        assert_eq!(dev.stats().read_requests - before, 2);
        // Nothing stayed pinned: shrunk to one frame, the pool keeps the most recent page.
        pool.set_capacity(&mut dev, &mut NoBarrier, 1).unwrap();
        assert_eq!(pool.memory_bytes(), 512);
        assert!(pool.contains(4) && !pool.contains(0));
    }

    /// Shrinking the capacity frees memory: unused frames first, then least recently used
    /// pages (dirty ones written back, intact); pinned frames stay; growing again reuses
    /// the released frames.
    #[test]
    fn a_shrunk_pool_releases_memory_and_grows_back() {
        let (mut dev, mut pool) = six_pages(6);
        pool.discard(5);
        let pinned = pool.fetch(&mut dev, &mut NoBarrier, 0).unwrap();
        assert_eq!(pool.memory_bytes(), 512 * 6);
        pool.set_capacity(&mut dev, &mut NoBarrier, 2).unwrap();
        // The discarded frame's buffer, then pages 1, 2 and 3 (least recent), went; page 0
        // is pinned and page 4 is the most recent.
        assert_eq!(pool.memory_bytes(), 512 * 2);
        assert!(pool.contains(0) && pool.contains(4));
        assert!(!pool.contains(1) && !pool.contains(3));
        assert_eq!(pool.stats().writebacks, 3);
        assert_eq!(pool.stats().frames, 2);
        // Every pinned: the pool cannot go below its pinned frames.
        let pinned4 = pool.fetch(&mut dev, &mut NoBarrier, 4).unwrap();
        pool.set_capacity(&mut dev, &mut NoBarrier, 1).unwrap();
        assert_eq!(pool.memory_bytes(), 512 * 2);
        pool.unpin(pinned);
        pool.unpin(pinned4);
        pool.set_capacity(&mut dev, &mut NoBarrier, 4).unwrap();
        for p in 1..4 {
            let f = pool.fetch(&mut dev, &mut NoBarrier, p).unwrap();
            assert_eq!(pool.data(f)[page::HEADER], p as u8 + 1);
            pool.unpin(f);
        }
        assert_eq!(pool.memory_bytes(), 512 * 4);
        assert_eq!(pool.stats().resident, 4);
    }

    #[test]
    fn lru_evicts_least_recent_and_writes_dirty_pages_back() {
        let mut dev = MemDevice::new(512);
        let mut pool = BufferPool::new(512, 512 * 3, 2).unwrap();
        for p in 0..3 {
            write_page(&mut pool, &mut dev, p, p as u8 + 1);
        }
        // Touch page 0 so page 1 is the LRU one.
        let f = pool.fetch(&mut dev, &mut NoBarrier, 0).unwrap();
        pool.unpin(f);
        write_page(&mut pool, &mut dev, 3, 4);
        assert!(!pool.contains(1) && pool.contains(0));
        assert_eq!(pool.stats().evictions, 1);
        assert_eq!(pool.stats().writebacks, 1);
        // Page 1 comes back from the device, intact.
        let f = pool.fetch(&mut dev, &mut NoBarrier, 1).unwrap();
        assert_eq!(pool.data(f)[page::HEADER], 2);
        assert_eq!(pool.stats().misses, 1);
        assert_eq!(pool.stats().hits, 1);
    }

    #[test]
    fn flush_writes_exactly_the_dirty_pages_in_page_order() {
        let mut dev = MemDevice::new(512);
        let mut pool = BufferPool::new(512, 512 * 4, 2).unwrap();
        // Pages 9, 3, 7, 5 dirty; 7 discarded; 5 written back by an eviction of a 5th page.
        for p in [9, 3, 7, 5] {
            write_page(&mut pool, &mut dev, p, 1);
        }
        pool.discard(7);
        let f = pool.fetch(&mut dev, &mut NoBarrier, 9).unwrap();
        pool.unpin(f);
        let f = pool.fetch(&mut dev, &mut NoBarrier, 3).unwrap();
        pool.unpin(f);
        write_page(&mut pool, &mut dev, 11, 2); // the free frame of 7
        write_page(&mut pool, &mut dev, 1, 3); // evicts 5 (least recent), writing it
        assert!(!pool.contains(5));
        let before = dev.stats();
        pool.flush_all(&mut dev, &mut NoBarrier).unwrap();
        let after = dev.stats();
        assert_eq!(after.writes - before.writes, 4, "pages 1, 3, 9, 11");
        for p in [1, 3, 9, 11] {
            assert!(!pool.is_dirty(p));
        }
        let again = dev.stats();
        pool.flush_all(&mut dev, &mut NoBarrier).unwrap();
        assert_eq!(dev.stats().writes, again.writes, "nothing left to write");
        assert_eq!(
            again.writes, 5,
            "page 5 by the eviction, then 1, 3, 9, 11; never 7"
        );
    }

    #[test]
    fn pinned_frames_are_not_evicted() {
        let mut dev = MemDevice::new(512);
        let mut pool = BufferPool::new(512, 1024, 1).unwrap();
        let a = pool.create(&mut dev, &mut NoBarrier, 0).unwrap();
        let b = pool.create(&mut dev, &mut NoBarrier, 1).unwrap();
        assert!(pool.create(&mut dev, &mut NoBarrier, 2).is_err());
        pool.unpin(a);
        let c = pool.create(&mut dev, &mut NoBarrier, 2).unwrap();
        assert!(pool.contains(1) && !pool.contains(0));
        pool.unpin(b);
        pool.unpin(c);
    }

    #[test]
    fn barrier_sees_the_largest_lsn_before_a_write() {
        struct Rec(Vec<u64>);
        impl WriteBarrier for Rec {
            fn before_write(&mut self, lsn: u64) -> Result<()> {
                self.0.push(lsn);
                Ok(())
            }
        }
        let mut dev = MemDevice::new(512);
        let mut pool = BufferPool::new(512, 512, 1).unwrap();
        let mut rec = Rec(Vec::new());
        let f = pool.create(&mut dev, &mut rec, 0).unwrap();
        pool.data_mut(f, 7);
        pool.data_mut(f, 5);
        pool.unpin(f);
        let g = pool.create(&mut dev, &mut rec, 1).unwrap();
        pool.unpin(g);
        assert_eq!(rec.0, vec![7]);
    }

    #[test]
    fn a_corrupt_page_is_reported_with_its_id() {
        let mut dev = MemDevice::new(512);
        let mut pool = BufferPool::new(512, 512, 1).unwrap();
        write_page(&mut pool, &mut dev, 5, 9);
        pool.flush_all(&mut dev, &mut NoBarrier).unwrap();
        pool.clear();
        dev.flip_bit(5 * 512 + 100, 3);
        match pool.fetch(&mut dev, &mut NoBarrier, 5) {
            Err(Error::Corruption { page: Some(5), .. }) => {}
            other => panic!("expected corruption of page 5, got {other:?}"),
        }
    }

    #[test]
    fn budget_below_minimum_is_invalid_options() {
        assert!(matches!(
            BufferPool::new(4096, 4096, 4),
            Err(Error::InvalidOptions(_))
        ));
    }
}
