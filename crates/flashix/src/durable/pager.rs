//! [`Pager`]: crash-safe in-place page updates for engines that keep their nodes in place.
//!
//! # Durability mechanism (docs/design.md, contract point 3)
//!
//! The state of an index is *checkpoint + logical redo*:
//! - A **checkpoint** writes every dirty page, syncs the device, starts a new WAL
//!   generation and atomically switches the manifest (which records the engine's roots and
//!   the extent allocator's state). The pages reachable from that manifest form the
//!   checkpoint image.
//! - Every `Db` operation is appended to the WAL as a **logical redo record** before it
//!   changes pages; `flush` syncs the WAL (group commit).
//! - Pages are updated **in place** (the baseline's random writes are kept). To survive
//!   torn writes, the first change of a checkpoint-image page after a checkpoint appends the
//!   page's **before-image** (its checkpoint contents) to the WAL, and the buffer pool's
//!   write barrier makes that image durable before the page is written back (WAL rule).
//!   Pages allocated since the checkpoint are not in the image and need none; freed pages
//!   are not reused before the next checkpoint (the allocator's pending list).
//! - Which pages need a before-image is read from the page itself: every page changed or
//!   allocated through the Pager carries the **generation stamp** of the WAL generation in
//!   which it was imaged or allocated ([`page::stamp`], format version 4). A page whose
//!   stamp is the current generation's has its image in the current WAL already (or is
//!   not in the checkpoint image); any other page is imaged on its first change. The stamp
//!   is written after the engine's change, so an engine that rewrites a whole page cannot
//!   lose it. A stamp on disk is never ahead of the WAL: a page reaches the device only
//!   after its image is durable, and a checkpoint moves to a new generation, so all stamps
//!   on disk become stale at once.
//! - **Recovery** reads the WAL of the manifest's generation up to its valid prefix (a torn
//!   tail is cut off), writes every page's first before-image back, which restores the
//!   checkpoint image exactly, whatever was torn or half-written since, and hands the
//!   logical records to the engine to replay in order. Replay keeps taking before-images
//!   into the same WAL, so a crash during recovery is recovered the same way (restored
//!   pages are written back stamped with the generation: their image is in its WAL). The result
//!   is the state after a prefix of the operations, containing every operation that was
//!   durable in the WAL, in particular everything before the last successful `flush`.
//!
//! Memory: the buffer pool only. (Before format version 4 the Pager kept the sets of pages
//! imaged and allocated since the checkpoint, 16 bytes a page outside the budget.) During
//! `open`, recovery keeps the ids of the pages the WAL imaged, bounded by the WAL's size.

use super::log::Log;
use super::logged::Store;
use super::manifest::{wal_name, Manifest, OptionsRecord};
use super::outside::{self, Plan};
use super::wal::{LogicalOp, Record};
use crate::buffer::{BufferPool, Miss, NewFrame, SharedIo, SharedPool, WriteBarrier};
use crate::error::{Error, Result};
use crate::io::watch::{Watched, WriteWatch};
use crate::io::{Device, DeviceStats, Extent, ExtentAllocator, PageId, SharedReader, Vfs};
use crate::kind::EngineKind;
use crate::page;
use crate::stats::{BufferStats, Stats, WalStats};
use rustc_hash::FxHashSet;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// The Pager is the [`Store`] of the engines that keep pages on a `Device`.
impl Store for Pager {
    fn log(&mut self) -> &mut Log {
        exclusive(&mut self.log)
    }

    fn checkpoint_wal_bytes(&self) -> u64 {
        self.config.checkpoint_wal_bytes
    }

    fn checkpoint(&mut self, engine_state: serde_json::Value) -> Result<()> {
        self.write_back_and_switch(engine_state)
    }
}

struct WalBarrier<'a>(&'a mut Log);

/// A mutex's contents through `&mut` (no lock is taken; a panic that poisoned it left
/// nothing half-done that the next operation relies on: `Db` poisons on errors).
fn exclusive<T>(m: &mut Mutex<T>) -> &mut T {
    m.get_mut().unwrap_or_else(|e| e.into_inner())
}

/// A mutex's contents from one of many threads.
fn shared<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// How a shared reader's miss reaches the device and the WAL (lock order: the pool's
/// mutex is held by the caller; the log's, then the device's, are taken here).
struct SharedPagerIo<'a>(&'a Pager);

impl SharedIo for SharedPagerIo<'_> {
    fn read_page(&self, pid: PageId, buf: &mut [u8]) -> Result<()> {
        match &self.0.reader {
            Some(r) => r.read(pid, buf),
            None => shared(&self.0.dev).read(pid, buf),
        }
    }

    fn before_write(&self, lsn: u64) -> Result<()> {
        // The sync with the log's lock released: shared writers log under their latches.
        let ticket = shared(&self.0.log).durable_ticket(lsn)?;
        match ticket {
            Some(t) => t.wait(),
            None => Ok(()),
        }
    }

    fn write_pages(&self, pages: &[(PageId, crate::io::AlignedBuf)]) -> Result<()> {
        let mut reqs: Vec<crate::io::IoReq<'_>> = pages
            .iter()
            .map(|(page, buf)| crate::io::IoReq::Write { page: *page, buf })
            .collect();
        // Beside other threads' writes where the device's reader handles take them (the
        // device's mutex would let one batch at a time reach it); noted first, as the
        // watched device notes its own.
        if let Some(r) = &self.0.reader {
            for (page, buf) in pages {
                self.0
                    .watch
                    .note(*page, (buf.len() / self.0.page_size()) as u64);
            }
            if r.write_batch(&mut reqs)? {
                return Ok(());
            }
        }
        shared(&self.0.dev).submit(&mut reqs)
    }
}

/// A shared reader's miss loaded from the bytes it read outside the engine's lock
/// ([`outside`]).
struct StashIo<'a>(&'a Pager, crate::io::AlignedBuf);

impl SharedIo for StashIo<'_> {
    fn read_page(&self, pid: PageId, buf: &mut [u8]) -> Result<()> {
        if self.1.len() == buf.len() {
            buf.copy_from_slice(&self.1);
            return Ok(());
        }
        SharedPagerIo(self.0).read_page(pid, buf)
    }

    fn before_write(&self, lsn: u64) -> Result<()> {
        SharedPagerIo(self.0).before_write(lsn)
    }

    fn write_pages(&self, pages: &[(PageId, crate::io::AlignedBuf)]) -> Result<()> {
        SharedPagerIo(self.0).write_pages(pages)
    }
}

impl WriteBarrier for WalBarrier<'_> {
    fn before_write(&mut self, lsn: u64) -> Result<()> {
        self.0.ensure_durable(lsn)
    }
}

/// Pages freed since the last checkpoint below which [`Pager::extents_publish_due`] makes
/// no checkpoint due, however small the structure (a checkpoint per small merge cost the
/// FD-tree's insert workloads a noticeable share of their CPU).
pub const MIN_PENDING_FREE_PAGES: u64 = 256;

/// What the [`Pager`] needs of an index's options, as numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PagerConfig {
    /// Page size in bytes.
    pub page_size: usize,
    /// Bytes of the buffer pool (the memory budget less what the engine keeps for its own
    /// structures).
    pub pool_bytes: u64,
    /// The engine's whole memory budget (pool and structures, [`Pager::charge`]).
    pub budget_bytes: u64,
    /// WAL size after which a checkpoint is due.
    pub checkpoint_wal_bytes: u64,
    /// Frames the engine needs at least (a smaller pool is `InvalidOptions`).
    pub min_frames: usize,
}

/// Buffer pool + WAL + allocator of an in-place engine.
///
/// # Thread safety
///
/// `&mut Pager` is one writer (or one thread) with everything to itself, as before: no lock
/// is taken on that path (the mutexes below are reached with `get_mut`). `&Pager` serves
/// any number of readers at once through [`Pager::read_shared`]: the buffer pool's shared
/// mode ([`SharedPool`]) with its reads sent through the device's [`SharedReader`] when it
/// has one (a file: each thread its own request in flight), else one at a time through the
/// device's mutex. A reader whose victim frame is dirty writes it back first: it
/// takes the log's mutex for the WAL rule, then the device's: the lock order is pool, log,
/// device, and nothing takes them in another order.
pub struct Pager {
    dev: Mutex<Box<dyn Device>>,
    /// Reads from many threads at once beside `dev` (a file device's reader handles).
    reader: Option<Arc<dyn SharedReader>>,
    /// Every write asked of `dev` (and its job handles), for reads made outside the
    /// engine's lock ([`outside`]).
    watch: Arc<WriteWatch>,
    pool: SharedPool,
    log: Mutex<Log>,
    /// The extent allocator: under its mutex for a shared writer's new page
    /// ([`Pager::alloc_page_shared`]).
    alloc: Mutex<ExtentAllocator>,
    config: PagerConfig,
    /// [`page::stamp_of`] the current WAL generation.
    stamp: u32,
}

/// A page reserved for a shared writer ([`Pager::reserve_page_shared`]): allocated, its
/// frame pinned in the pool, known to no other thread. [`NewPage::fill`] makes it a page;
/// dropped unfilled, it is given back.
pub struct NewPage<'a> {
    pager: &'a Pager,
    pid: PageId,
    /// `None` once filled or given back.
    frame: Option<NewFrame>,
}

impl NewPage<'_> {
    /// Set the page's bytes with `init`, stamped with the current generation (no I/O):
    /// the page id.
    pub fn fill(mut self, init: impl FnOnce(&mut [u8])) -> PageId {
        if let Some(frame) = self.frame.take() {
            let stamp = self.pager.stamp;
            self.pager.pool.fill(frame, |b| {
                init(b);
                page::set_stamp(b, stamp);
            });
        }
        self.pid
    }
}

impl Drop for NewPage<'_> {
    fn drop(&mut self) {
        if let Some(frame) = self.frame.take() {
            // The frame first, so that the page is not handed out again while the pool
            // still holds a frame of it.
            self.pager.pool.release(frame);
            shared(&self.pager.alloc).unalloc(Extent {
                start: self.pid,
                len: 1,
            });
        }
    }
}

impl Pager {
    /// A new, empty index over `device`: WAL generation 1 ([`Log::create`]). The caller
    /// builds its initial pages and then calls [`Pager::checkpoint`], which writes the
    /// first manifest with `options`.
    pub fn create(
        mut device: Box<dyn Device>,
        vfs: Arc<dyn Vfs>,
        config: PagerConfig,
        options: OptionsRecord,
    ) -> Result<Pager> {
        let pool = BufferPool::new(config.page_size, config.pool_bytes, config.min_frames)?;
        let log = Log::create(vfs, options)?;
        let mut alloc = ExtentAllocator::new(0);
        alloc.set_limit(device.capacity_pages());
        let stamp = page::stamp_of(log.generation());
        let watch = WriteWatch::new();
        Ok(Pager {
            reader: device.shared_reader()?,
            dev: Mutex::new(Box::new(Watched::new(device, Arc::clone(&watch)))),
            watch,
            pool: SharedPool::new(pool),
            log: Mutex::new(log),
            alloc: Mutex::new(alloc),
            config,
            stamp,
        })
    }

    /// Reopen after a clean close or a crash: restore the checkpoint image and return the
    /// logical operations the engine must replay ([`super::Logged::recover`]).
    pub fn open(
        mut device: Box<dyn Device>,
        vfs: Arc<dyn Vfs>,
        manifest: &Manifest,
        config: PagerConfig,
    ) -> Result<(Pager, Vec<LogicalOp>)> {
        let pool = BufferPool::new(config.page_size, config.pool_bytes, config.min_frames)?;
        let mut alloc = ExtentAllocator::from_state(&manifest.alloc)?;
        alloc.set_limit(device.capacity_pages());
        let name = wal_name(manifest.generation);
        // Leftovers of an interrupted checkpoint or manifest switch are dropped.
        let (log, records) = Log::recover(vfs, manifest)?;
        let stamp = page::stamp_of(log.generation());
        let mut imaged = FxHashSet::default();
        let mut ops = Vec::new();
        for rec in records {
            match rec {
                Record::Op(op) => ops.push(op),
                Record::Image(pid, bytes) => {
                    if bytes.len() != config.page_size {
                        return Err(Error::corruption(
                            &name,
                            Some(pid),
                            "page image of the wrong size",
                        ));
                    }
                    // The first image of a page is its checkpoint contents.
                    if imaged.insert(pid) {
                        page::verify(pid, &bytes)?;
                        // Stamped: its image is in this generation's WAL.
                        let mut bytes = bytes;
                        page::set_stamp(&mut bytes, stamp);
                        page::seal(pid, &mut bytes);
                        device.write(pid, &bytes)?;
                    }
                }
            }
        }
        if !imaged.is_empty() {
            device.sync()?;
        }
        let watch = WriteWatch::new();
        let pager = Pager {
            reader: device.shared_reader()?,
            dev: Mutex::new(Box::new(Watched::new(device, Arc::clone(&watch)))),
            watch,
            pool: SharedPool::new(pool),
            log: Mutex::new(log),
            alloc: Mutex::new(alloc),
            config,
            stamp,
        };
        Ok((pager, ops))
    }

    /// Page size.
    pub fn page_size(&self) -> usize {
        self.config.page_size
    }

    /// Check every page read through the pool with `check` after its envelope (the
    /// engine's page format rules, [`crate::buffer::PageCheck`]).
    pub fn set_page_check(&mut self, check: crate::buffer::PageCheck) {
        self.pool.get_mut().set_page_check(check);
    }

    /// Frames of the buffer pool.
    pub fn pool_frames(&self) -> u64 {
        self.pool.with(|p| p.frames())
    }

    /// Run `f` on the page's bytes.
    pub fn read<T>(&mut self, pid: PageId, f: impl FnOnce(&[u8]) -> T) -> Result<T> {
        let (pool, dev, mut barrier) = self.io();
        let fid = pool.fetch(dev, &mut barrier, pid)?;
        let out = f(pool.data(fid));
        pool.unpin(fid);
        Ok(out)
    }

    /// Run `f` on page `pid`'s bytes read past the buffer pool, in one request: the pool
    /// neither gains nor loses a page (pages a search touches once, such as the lower
    /// levels of an FD-tree or LSM point search). Only for pages never dirty in the pool.
    /// From any of many reading threads at once (through the device's [`SharedReader`]
    /// when it has one).
    ///
    /// Armed to stop at a miss ([`outside`]), it reads nothing and fails with
    /// [`Error::PageMiss`]; armed with the page's bytes, it uses them (they are checked as
    /// the caller checks what it reads).
    pub fn read_past<T>(&self, pid: PageId, f: impl FnOnce(&[u8]) -> T) -> Result<T> {
        match (outside::plan(pid, &self.watch), &self.reader) {
            (Plan::FromStash(bytes), _) if bytes.len() == self.page_size() => {
                return Ok(f(&bytes));
            }
            (Plan::StopAtMiss, Some(reader)) => {
                return Err(outside::stopped(
                    pid,
                    self.page_size(),
                    Arc::clone(reader),
                    Arc::clone(&self.watch),
                    self.watch.now(),
                ));
            }
            _ => {}
        }
        let mut buf = crate::io::AlignedBuf::zeroed(self.page_size());
        self.read_run_shared(pid, &mut buf)?;
        Ok(f(&buf))
    }

    /// Read the pages from `first` into `buf` (whole pages) in one request past the buffer
    /// pool, from any of many reading threads at once: only pages never dirty in the pool
    /// and written by no request still in flight (a structure's extents once published).
    pub fn read_run_shared(&self, first: PageId, buf: &mut [u8]) -> Result<()> {
        SharedPagerIo(self).read_page(first, buf)
    }

    /// [`Pager::read_run_shared`] for the one thread that holds `&mut`: the device's own
    /// request, no reader handle and no lock taken.
    pub fn read_run(&mut self, first: PageId, buf: &mut [u8]) -> Result<()> {
        exclusive(&mut self.dev).read(first, buf)
    }

    /// Run `f` on the page's bytes to change them, taking its before-image first if this
    /// is its first change since the checkpoint.
    pub fn write<T>(&mut self, pid: PageId, f: impl FnOnce(&mut [u8]) -> T) -> Result<T> {
        let stamp = self.stamp;
        let (pool, dev, mut barrier) = self.io();
        let fid = pool.fetch(dev, &mut barrier, pid)?;
        let mut lsn = 0;
        if page::stamp(pool.data(fid)) != stamp {
            match barrier.0.log_image(pid, pool.data(fid)) {
                Ok(l) => lsn = l,
                Err(e) => {
                    pool.unpin(fid);
                    return Err(e);
                }
            }
        }
        let buf = pool.data_mut(fid, lsn);
        let out = f(buf);
        page::set_stamp(buf, stamp);
        pool.unpin(fid);
        Ok(out)
    }

    /// Load the pages of `runs` that are not in the buffer pool with psync reads: each run
    /// one request, at most `pio_max` requests per batch (PIO B-tree paper §2.3). Later
    /// [`Pager::read`]s of these pages are pool hits. Returns the pages read.
    pub fn prefetch(&mut self, runs: &[crate::io::psync::Run], pio_max: usize) -> Result<u64> {
        let (pool, dev, mut barrier) = self.io();
        pool.fetch_runs(dev, &mut barrier, runs, pio_max)
    }

    /// Make the pages of `runs` the pool's next victims ([`BufferPool::demote`]).
    pub fn demote(&mut self, runs: &[crate::io::psync::Run]) {
        for &(start, len) in runs {
            for pid in start..start + len {
                self.pool.get_mut().demote(pid);
            }
        }
    }

    /// Write every dirty page now, in psync groups of at most `pio_max` writes, after the
    /// WAL rule's barrier (write-through of a batch update, PIO B-tree paper §3.4). The
    /// pages stay resident and clean; this is not a checkpoint.
    pub fn write_through(&mut self, pio_max: usize) -> Result<()> {
        let (pool, dev, mut barrier) = self.io();
        pool.flush_dirty(dev, &mut barrier, pio_max)
    }

    /// `len` new contiguous zeroed pages changed through the pool like
    /// [`Pager::alloc_page`]'s (multi-page nodes: the PIO B-tree's leaf segments).
    pub fn alloc_run(&mut self, len: u64) -> Result<Extent> {
        let e = exclusive(&mut self.alloc).alloc(len)?;
        for pid in e.start..e.end() {
            self.create_stamped(pid)?;
        }
        Ok(e)
    }

    /// A new zeroed page (not in the checkpoint image, so it needs no before-image).
    pub fn alloc_page(&mut self) -> Result<PageId> {
        let pid = exclusive(&mut self.alloc).alloc_page()?;
        self.create_stamped(pid)?;
        Ok(pid)
    }

    /// A zeroed frame for new page `pid`, stamped with the current generation: it is not
    /// in the checkpoint image, so its changes need no before-image.
    fn create_stamped(&mut self, pid: PageId) -> Result<()> {
        let stamp = self.stamp;
        let (pool, dev, mut barrier) = self.io();
        let fid = pool.create(dev, &mut barrier, pid)?;
        page::set_stamp(pool.data_mut(fid, 0), stamp);
        pool.unpin(fid);
        Ok(())
    }

    /// Free a page; it is reused only after the next checkpoint.
    pub fn free_page(&mut self, pid: PageId) {
        self.pool.get_mut().discard(pid);
        exclusive(&mut self.alloc).free(Extent { start: pid, len: 1 });
    }

    /// A run of `len` new contiguous pages for structures written sequentially and
    /// read past the buffer pool (sorted runs, components). Such pages are written only
    /// through [`Pager::device`] while they are new, never changed in place afterwards, and
    /// become part of the durable state with the next checkpoint's manifest.
    pub fn alloc_extent(&mut self, len: u64) -> Result<Extent> {
        exclusive(&mut self.alloc).alloc(len)
    }

    /// Free a run; its pages are reused only after the next checkpoint (shadow paging).
    pub fn free_extent(&mut self, e: Extent) {
        for pid in e.start..e.end() {
            self.pool.get_mut().discard(pid);
        }
        exclusive(&mut self.alloc).free(e);
    }

    /// Pages freed since the last checkpoint: they stay allocated on the device (the
    /// durable manifest may still refer to them) until the next one.
    pub fn pending_free_pages(&self) -> u64 {
        shared(&self.alloc).pending_pages()
    }

    /// Whether the device has a fixed size ([`crate::io::Device::capacity_pages`]): pages
    /// freed and not yet reusable then take room a later allocation may need.
    pub fn fixed_capacity(&self) -> bool {
        shared(&self.alloc).is_limited()
    }

    /// Whether a structure that is shadow-paged by extents (it writes new extents and frees
    /// the ones they replace: sorted runs, components), `live_pages` pages in all, should
    /// publish what it wrote by a checkpoint now: once the pages freed since the last
    /// checkpoint, which the file keeps for a crash, reach its live pages
    /// ([`MIN_PENDING_FREE_PAGES`] at least), so that the file stays within about twice
    /// the structure and replay redoes about that much work; on a device of fixed size
    /// always, so that freed space is reusable at once and a nearly full device still has
    /// room to replay. Never while replaying: the checkpoint after recovery publishes.
    pub fn extents_publish_due(&self, live_pages: u64) -> bool {
        !self.replaying()
            && (self.fixed_capacity()
                || self.pending_free_pages() >= live_pages.max(MIN_PENDING_FREE_PAGES))
    }

    /// Put a page just written through [`Pager::device`] in the pool as a clean frame
    /// ([`BufferPool::put_clean`]), so that its next read is a hit.
    pub fn put_clean(&mut self, pid: PageId, bytes: &[u8]) -> Result<()> {
        let (pool, dev, mut barrier) = self.io();
        pool.put_clean(dev, &mut barrier, pid, bytes)
    }

    /// Drop a page's frame from the pool without freeing the page: for an engine that
    /// reuses a page of its own extents and writes it through [`Pager::device`] (BFTL
    /// recycles pages allocated and released since the last checkpoint), so the pool holds
    /// no stale copy.
    pub fn discard(&mut self, pid: PageId) {
        self.pool.get_mut().discard(pid);
    }

    /// The device, for multi-page I/O that bypasses the buffer pool (FD-tree paper,
    /// App. D: "the merge operation ... can skip the buffer layer"). Only pages of extents
    /// from [`Pager::alloc_extent`] may be written this way.
    pub fn device(&mut self) -> &mut dyn Device {
        &mut **exclusive(&mut self.dev)
    }

    /// True while replaying the WAL.
    pub fn replaying(&self) -> bool {
        shared(&self.log).replaying()
    }

    /// Write all dirty pages (the write barrier syncs the log up to their before-images,
    /// and no further: [`Log::switch`] needs no more of it), sync the device, and switch
    /// to a new manifest and WAL generation; freed pages become reusable.
    fn write_back_and_switch(&mut self, engine_state: serde_json::Value) -> Result<()> {
        let (pool, dev, mut barrier) = self.io();
        pool.flush_all(dev, &mut barrier)?;
        dev.sync()?;
        let log = exclusive(&mut self.log);
        log.switch(exclusive(&mut self.alloc).state(), engine_state)?;
        exclusive(&mut self.alloc).commit();
        self.stamp = page::stamp_of(log.generation());
        Ok(())
    }

    /// The extent allocator (integrity checks), under its mutex: the guard must be
    /// dropped before the Pager allocates or frees.
    pub fn allocator(&self) -> MutexGuard<'_, ExtentAllocator> {
        shared(&self.alloc)
    }

    /// Device counters.
    pub fn device_stats(&self) -> DeviceStats {
        shared(&self.dev).stats()
    }

    /// Buffer pool counters.
    pub fn buffer_stats(&self) -> BufferStats {
        self.pool.with(|p| p.stats())
    }

    /// WAL counters over all generations since open.
    pub fn wal_stats(&self) -> WalStats {
        shared(&self.log).stats()
    }

    /// An engine's [`Stats`]: the pager's device, buffer and WAL counters with the
    /// engine's own counters and memory (its pool included).
    pub fn stats(
        &self,
        engine: EngineKind,
        engine_counters: BTreeMap<String, u64>,
        memory_bytes: u64,
    ) -> Stats {
        Stats {
            engine,
            device: self.device_stats(),
            buffer: self.buffer_stats(),
            wal: self.wal_stats(),
            engine_counters,
            memory_bytes,
            shape: Default::default(),
        }
    }

    /// Give the pool `bytes` (at least the engine's minimum frames): an engine whose own
    /// structures grow with the index (the FBX-tree's node table) charges them to its
    /// budget by shrinking the pool ([`BufferPool::set_capacity`]). A no-op when the frame
    /// count does not change.
    pub fn set_pool_bytes(&mut self, bytes: u64) -> Result<()> {
        let frames = ((bytes / self.config.page_size as u64) as usize).max(self.config.min_frames);
        let (pool, dev, mut barrier) = self.io();
        if frames as u64 == pool.frames() {
            return Ok(());
        }
        pool.set_capacity(dev, &mut barrier, frames)
    }

    /// Charge `structures` bytes of the engine's own structures (all of them, those it
    /// reserved at open included) to its memory budget ([`PagerConfig::budget_bytes`]):
    /// the pool gets the rest ([`Pager::set_pool_bytes`], at least the engine's minimum
    /// frames). Called between operations ([`super::Logged::charge_memory`]).
    pub fn charge(&mut self, structures: u64) -> Result<()> {
        self.set_pool_bytes(self.config.budget_bytes.saturating_sub(structures))
    }

    /// Memory held: the pool's frames (the Pager keeps nothing per page besides them).
    pub fn memory_bytes(&self) -> u64 {
        self.pool.with(|p| p.memory_bytes())
    }

    /// The pool, the device and the WAL rule's barrier, for the one thread that holds
    /// `&mut` (no lock taken).
    fn io(&mut self) -> (&mut BufferPool, &mut dyn Device, WalBarrier<'_>) {
        (
            self.pool.get_mut(),
            &mut **exclusive(&mut self.dev),
            WalBarrier(exclusive(&mut self.log)),
        )
    }

    /// Run `f` on page `pid`'s bytes from any of many reading threads at once (the pool's
    /// shared mode, [`SharedPool`]; the type's thread-safety section).
    ///
    /// When this thread's read is armed to stop at a miss ([`outside`]), a page the pool
    /// does not hold is neither claimed nor read: the read fails with
    /// [`Error::PageMiss`], the miss noted for the caller to read the page outside its
    /// lock; armed with that page's bytes, the pool loads it from them.
    pub fn read_shared<T>(&self, pid: PageId, f: impl FnOnce(&[u8]) -> T) -> Result<T> {
        self.shared_access(pid, |io, miss| self.pool.read_or_miss(io, pid, miss, f))
    }

    /// Change page `pid` from one of many threads at once: a shared writer beside readers
    /// and other shared writers (the pool's shared mode, [`SharedPool::write`]). Under the
    /// page's latch held exclusive, `decide` looks at its bytes; when it returns a plan,
    /// the page's before-image (on its first change since the checkpoint, as
    /// [`Pager::write`]) and `op` are appended to the WAL under the log's lock, `change`
    /// applies the plan, and the page is stamped and marked dirty. `None` when `decide`
    /// declined: nothing was logged or changed.
    ///
    /// So the WAL holds the operations on one page in the order their changes were made,
    /// and a page reaches the device only after its image is durable (the pool's write
    /// barrier), as for [`Pager::write`]. Misses go as [`Pager::read_shared`]'s: armed to
    /// stop, a page the pool does not hold fails with [`Error::PageMiss`] before anything
    /// is logged.
    pub fn write_shared<P, T>(
        &self,
        pid: PageId,
        op: &LogicalOp,
        decide: impl FnOnce(&[u8]) -> Option<P>,
        change: impl FnOnce(&mut [u8], P) -> T,
    ) -> Result<Option<T>> {
        self.write_shared_as(pid, Some(op), decide, change)
    }

    /// [`Pager::write_shared`], logging `op` if there is one.
    fn write_shared_as<P, T>(
        &self,
        pid: PageId,
        op: Option<&LogicalOp>,
        decide: impl FnOnce(&[u8]) -> Option<P>,
        change: impl FnOnce(&mut [u8], P) -> T,
    ) -> Result<Option<T>> {
        let stamp = self.stamp;
        let f = |b: &mut [u8]| -> Result<Option<(T, u64)>> {
            let Some(plan) = decide(b) else {
                return Ok(None);
            };
            let mut lsn = 0;
            {
                let mut log = shared(&self.log);
                if page::stamp(b) != stamp {
                    lsn = log.log_image_held(pid, b);
                }
                if let Some(op) = op {
                    log.log_op_held(op);
                }
            }
            let out = change(b, plan);
            page::set_stamp(b, stamp);
            Ok(Some((out, lsn)))
        };
        let out = self.shared_access(pid, |io, miss| self.pool.write(io, pid, miss, f))?;
        // With the latch released: readers of the page do not wait for the WAL's write.
        self.hand_off_shared()?;
        Ok(out)
    }

    /// A new page from one of many threads (a shared writer's split), its bytes set by
    /// `init` and stamped with the current generation: it is not in the checkpoint image,
    /// so it needs no before-image ([`Pager::alloc_page`]'s). Making its frame may write
    /// back dirty pages: a caller that holds a latch others wait for reserves the page
    /// first, with none held ([`Pager::reserve_page_shared`]).
    pub fn alloc_page_shared(&self, init: impl FnOnce(&mut [u8])) -> Result<PageId> {
        Ok(self.reserve_page_shared()?.fill(init))
    }

    /// A new page for a shared writer, allocated and its frame made (what may wait for
    /// the allocator's mutex and write dirty pages back, [`SharedPool::reserve`]) before
    /// the writer takes the latch under which it sets the page's bytes
    /// ([`NewPage::fill`]). Dropped unfilled, the page is given back: its frame leaves
    /// the pool unwritten and the allocator takes it back at once
    /// ([`ExtentAllocator::unalloc`]): nothing links to it and nothing wrote it.
    pub fn reserve_page_shared(&self) -> Result<NewPage<'_>> {
        let pid = shared(&self.alloc).alloc_page()?;
        match self.pool.reserve(&SharedPagerIo(self), pid) {
            Ok(frame) => Ok(NewPage {
                pager: self,
                pid,
                frame: Some(frame),
            }),
            Err(e) => {
                shared(&self.alloc).unalloc(Extent { start: pid, len: 1 });
                Err(e)
            }
        }
    }

    /// [`Pager::write_shared`] of a change that logs no operation of its own (a shared
    /// writer's split reaching a parent: its operation was logged with the leaf's change),
    /// only the page's before-image on its first change since the checkpoint.
    pub fn change_shared<P, T>(
        &self,
        pid: PageId,
        decide: impl FnOnce(&[u8]) -> Option<P>,
        change: impl FnOnce(&mut [u8], P) -> T,
    ) -> Result<Option<T>> {
        self.write_shared_as(pid, None, decide, change)
    }

    /// Log `op` from one of many threads, under a latch of the caller's that orders the
    /// operation with the others on what it changes (an engine's in-memory buffer): the
    /// record is buffered and nothing is written; the caller calls
    /// [`Pager::hand_off_shared`] after it lets go of that latch.
    pub fn log_op_shared(&self, op: &LogicalOp) {
        shared(&self.log).log_op_held(op);
    }

    /// Hand the WAL's buffered records to the file once they fill a write chunk, from any
    /// thread, holding no latch but the WAL's (after [`Pager::log_op_shared`] or a shared
    /// write).
    pub fn hand_off_shared(&self) -> Result<()> {
        shared(&self.log).hand_off_if_full()
    }

    /// Run `access` on page `pid` through the pool's shared mode with the device (or the
    /// stash) and the miss policy this thread's read is armed with ([`outside`]): a miss
    /// it stops at fails with [`Error::PageMiss`], the miss noted.
    fn shared_access<T>(
        &self,
        pid: PageId,
        access: impl FnOnce(&dyn SharedIo, Miss) -> Result<Option<T>>,
    ) -> Result<T> {
        match outside::plan(pid, &self.watch) {
            Plan::Load { armed } => {
                let miss = if armed { Miss::LoadClean } else { Miss::Load };
                access(&SharedPagerIo(self), miss)?.ok_or(Error::PageMiss)
            }
            Plan::StopAtMiss => {
                let Some(reader) = &self.reader else {
                    return access(&SharedPagerIo(self), Miss::LoadClean)?.ok_or(Error::PageMiss);
                };
                // Taken before the lookup: a write noted after it may have changed the page.
                let mark = self.watch.now();
                match access(&SharedPagerIo(self), Miss::Stop)? {
                    Some(out) => Ok(out),
                    None => Err(outside::stopped(
                        pid,
                        self.page_size(),
                        Arc::clone(reader),
                        Arc::clone(&self.watch),
                        mark,
                    )),
                }
            }
            Plan::FromStash(bytes) => {
                access(&StashIo(self, bytes), Miss::LoadClean)?.ok_or(Error::PageMiss)
            }
        }
    }

    /// Bytes in the WAL, from any thread (a shared writer's check for a checkpoint due).
    pub fn wal_bytes_shared(&self) -> u64 {
        shared(&self.log).bytes()
    }

    /// Write back up to `n` dirty pages near the buffer pool's LRU end from any thread
    /// beside the readers ([`SharedPool::clean_ahead`]): a writer's evictions under its
    /// exclusive lock then find clean victims, and readers do not wait for their writes.
    /// Returns the pages written.
    pub fn clean_ahead(&self, n: usize) -> Result<usize> {
        self.pool.clean_ahead(&SharedPagerIo(self), n)
    }

    /// A pager of `frames` frames over a fresh memory device (unit tests of the layers
    /// above it).
    #[cfg(test)]
    pub(crate) fn in_memory(page_size: usize, frames: u64) -> Pager {
        use crate::io::{MemDevice, MemVfs};
        let pool = frames * page_size as u64;
        let config = PagerConfig {
            page_size,
            pool_bytes: pool,
            budget_bytes: pool,
            checkpoint_wal_bytes: u64::MAX,
            min_frames: 2,
        };
        let device = Box::new(MemDevice::new(page_size).reopen());
        Pager::create(
            device,
            Arc::new(MemVfs::new()),
            config,
            serde_json::json!({}),
        )
        .unwrap_or_else(|e| panic!("a memory pager: {e}"))
    }

    /// The pool's write-backs so far: a shared reader that read pages ahead of the pool
    /// uses those bytes only while no write-back has happened since (see
    /// [`Pager::read_run_pooled_shared`]).
    fn shared_writebacks(&self) -> u64 {
        self.pool.with(|p| p.stats().writebacks)
    }

    /// Run `f` on page `pid`'s bytes if the buffer pool holds it (a hit, as in
    /// [`Pager::read_shared`]); else return `None` having read nothing from the device,
    /// from any of many reading threads at once. A miss still claims a frame, the victim
    /// a load would take (written back first if dirty), and leaves it free, so that the
    /// load that follows evicts nothing more; the pool counts it as a miss. This is how a
    /// shared reader learns which pages of a psync group it must read, which
    /// [`Pager::prefetch`] looks up in the pool's map.
    pub fn read_if_resident_shared<T>(
        &self,
        pid: PageId,
        f: impl FnOnce(&[u8]) -> T,
    ) -> Result<Option<T>> {
        use std::cell::Cell;
        /// A miss reads nothing: it fails the load, which frees the frame it claimed.
        struct Probe<'a> {
            pager: &'a Pager,
            missed: Cell<bool>,
        }
        impl SharedIo for Probe<'_> {
            fn read_page(&self, pid: PageId, _buf: &mut [u8]) -> Result<()> {
                self.missed.set(true);
                Err(Error::InvalidArgument(format!(
                    "page {pid} is not in the buffer pool"
                )))
            }

            fn before_write(&self, lsn: u64) -> Result<()> {
                SharedPagerIo(self.pager).before_write(lsn)
            }

            fn write_pages(&self, pages: &[(PageId, crate::io::AlignedBuf)]) -> Result<()> {
                SharedPagerIo(self.pager).write_pages(pages)
            }
        }
        let probe = Probe {
            pager: self,
            missed: Cell::new(false),
        };
        match self.pool.read(&probe, pid, f) {
            Ok(v) => Ok(Some(v)),
            Err(_) if probe.missed.get() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Run `body` with a reader of pages, from any of many reading threads at once, for a
    /// walk in page order over the run `first..first + len` (a node of several pages: the
    /// PIO B-tree's leaf segments). `read(pid, f)` runs `f` on page `pid`'s bytes through
    /// the pool's shared mode, as [`Pager::read_shared`] does; the first page of the run
    /// the pool misses is read together with the rest of the run after it in one request
    /// (as [`Pager::prefetch`] reads a run), and a later page of the run the pool misses
    /// too is loaded from those bytes, unless the pool wrote a page back since they were
    /// read (that page may have been dirty, its bytes on the device older, when they
    /// were read): then it is read again. A page outside the run, or a run of one page,
    /// is read into its frame as [`Pager::read_shared`] reads it. Returns `body`'s result
    /// and the device requests made.
    #[allow(clippy::type_complexity)]
    pub fn read_run_pooled_shared<T>(
        &self,
        first: PageId,
        len: u64,
        body: impl FnOnce(&mut dyn FnMut(PageId, &mut dyn FnMut(&[u8])) -> Result<()>) -> Result<T>,
    ) -> Result<(T, u64)> {
        use std::cell::{Cell, RefCell};
        /// A miss of the run reads the rest of it ahead.
        struct RunIo<'a> {
            pager: &'a Pager,
            first: PageId,
            end: PageId,
            /// The first page read ahead, the pages from it to the run's end, and the
            /// pool's write-backs before they were read.
            ahead: RefCell<Option<(PageId, crate::io::AlignedBuf, u64)>>,
            requests: Cell<u64>,
        }
        impl SharedIo for RunIo<'_> {
            fn read_page(&self, pid: PageId, buf: &mut [u8]) -> Result<()> {
                let ps = buf.len();
                let mut ahead = self.ahead.borrow_mut();
                if let Some((from, bytes, writebacks)) = ahead.as_ref() {
                    if (*from..self.end).contains(&pid)
                        && self.pager.shared_writebacks() == *writebacks
                    {
                        let at = (pid - from) as usize * ps;
                        buf.copy_from_slice(&bytes[at..at + ps]);
                        return Ok(());
                    }
                }
                self.requests.set(self.requests.get() + 1);
                let io = SharedPagerIo(self.pager);
                if ahead.is_none() && (self.first..self.end).contains(&pid) && self.end - pid > 1 {
                    // Taken before the read: a write-back after it may have changed a page
                    // of the run on the device.
                    let writebacks = self.pager.shared_writebacks();
                    let mut run = crate::io::AlignedBuf::zeroed((self.end - pid) as usize * ps);
                    io.read_page(pid, &mut run)?;
                    buf.copy_from_slice(&run[..ps]);
                    *ahead = Some((pid, run, writebacks));
                    return Ok(());
                }
                io.read_page(pid, buf)
            }

            fn before_write(&self, lsn: u64) -> Result<()> {
                SharedPagerIo(self.pager).before_write(lsn)
            }

            fn write_pages(&self, pages: &[(PageId, crate::io::AlignedBuf)]) -> Result<()> {
                SharedPagerIo(self.pager).write_pages(pages)
            }
        }
        let io = RunIo {
            pager: self,
            first,
            end: first.saturating_add(len),
            ahead: RefCell::new(None),
            requests: Cell::new(0),
        };
        let out = body(&mut |pid, f| self.pool.read(&io, pid, |b| f(b)))?;
        Ok((out, io.requests.get()))
    }

    /// Read `runs` (each one request) past the buffer pool in psync groups of at most
    /// `pio_max` requests ([`crate::io::psync::read_runs`], through the device's handle),
    /// then run `f` on each of their pages in order through the pool's shared mode,
    /// loading from those bytes every page the pool misses (unless the pool wrote a page
    /// back since they were read: that page is read again, as in
    /// [`Pager::read_run_pooled_shared`]). From any of many reading threads at once: the
    /// shared counterpart of [`Pager::prefetch`] for pages a reader found absent
    /// ([`Pager::read_if_resident_shared`]). Stops at `f`'s first error. Returns the
    /// pages read from the device.
    pub fn read_runs_pooled_shared(
        &self,
        runs: &[crate::io::psync::Run],
        pio_max: usize,
        mut f: impl FnMut(PageId, &[u8]) -> Result<()>,
    ) -> Result<u64> {
        use std::cell::Cell;
        /// A miss of the page being installed takes its bytes from the batch.
        struct Stash<'a, 'b> {
            pager: &'a Pager,
            page: Cell<(PageId, &'b [u8])>,
            writebacks: u64,
            again: Cell<u64>,
        }
        impl SharedIo for Stash<'_, '_> {
            fn read_page(&self, pid: PageId, buf: &mut [u8]) -> Result<()> {
                let (at, bytes) = self.page.get();
                if at == pid
                    && bytes.len() == buf.len()
                    && self.pager.shared_writebacks() == self.writebacks
                {
                    buf.copy_from_slice(bytes);
                    return Ok(());
                }
                self.again.set(self.again.get() + 1);
                SharedPagerIo(self.pager).read_page(pid, buf)
            }

            fn before_write(&self, lsn: u64) -> Result<()> {
                SharedPagerIo(self.pager).before_write(lsn)
            }

            fn write_pages(&self, pages: &[(PageId, crate::io::AlignedBuf)]) -> Result<()> {
                SharedPagerIo(self.pager).write_pages(pages)
            }
        }
        let writebacks = self.shared_writebacks();
        let bufs = self.read_runs_past_shared(runs, pio_max)?;
        let ps = self.page_size();
        let io = Stash {
            pager: self,
            page: Cell::new((0, &[])),
            writebacks,
            again: Cell::new(0),
        };
        let mut pages = 0;
        for (&(start, len), buf) in runs.iter().zip(&bufs) {
            pages += len;
            for (i, pid) in (start..start + len).enumerate() {
                io.page.set((pid, &buf[i * ps..(i + 1) * ps]));
                self.pool.read(&io, pid, |b| f(pid, b))??;
            }
        }
        Ok(pages + io.again.get())
    }

    /// Read `runs` (each one request) past the buffer pool in psync groups of at most
    /// `pio_max` requests, from any of many reading threads at once — through the device's
    /// reader handles when it has them (each thread's groups in flight beside the
    /// others'), else through the device's mutex, one group at a time: one buffer per
    /// run, in the order given, its pages neither verified nor
    /// put in the pool. Only for pages not dirty in the pool (as
    /// [`Pager::read_run_shared`]); the caller verifies them as the pool would.
    pub fn read_runs_past_shared(
        &self,
        runs: &[crate::io::psync::Run],
        pio_max: usize,
    ) -> Result<Vec<crate::io::AlignedBuf>> {
        match &self.reader {
            Some(r) => crate::io::psync::read_runs_shared(&**r, self.page_size(), runs, pio_max),
            None => {
                let mut dev = shared(&self.dev);
                crate::io::psync::read_runs(&mut **dev, runs, pio_max)
            }
        }
    }
}

/// How an engine reads a page it may reach from either side of its lock: a reader on
/// `&Pager` through the pool's shared path (beside other readers), a writer or a lone
/// serial reader on `&mut Pager` through its exclusive path, which the engine's exclusive
/// lock makes safe and which costs a fraction of the shared path's latching, pinning and
/// miss planning on every page. Pages read past the pool go to the device the same way:
/// through its reader handles (or its mutex) from `&Pager`, straight to it from
/// `&mut Pager`; the device counts the requests alike.
pub(crate) trait PageRead {
    /// Run `f` on page `pid`'s bytes through the buffer pool.
    fn page<T>(&mut self, pid: PageId, f: impl FnOnce(&[u8]) -> T) -> Result<T>;

    /// Run `f` on page `pid`'s bytes read past the buffer pool in one request (as
    /// [`Pager::read_past`]: only for pages never dirty in the pool).
    fn page_past<T>(&mut self, pid: PageId, f: impl FnOnce(&[u8]) -> T) -> Result<T>;

    /// Read the pages from `first` into `buf` (whole pages) in one request past the
    /// buffer pool (as [`Pager::read_run_shared`]: only pages never dirty in the pool).
    fn run_past(&mut self, first: PageId, buf: &mut [u8]) -> Result<()>;

    /// The Pager read from, for what a read asks of it besides pages (the page size, the
    /// pool's frames).
    fn pager(&self) -> &Pager;
}

impl PageRead for &Pager {
    fn page<T>(&mut self, pid: PageId, f: impl FnOnce(&[u8]) -> T) -> Result<T> {
        self.read_shared(pid, f)
    }

    fn page_past<T>(&mut self, pid: PageId, f: impl FnOnce(&[u8]) -> T) -> Result<T> {
        self.read_past(pid, f)
    }

    fn run_past(&mut self, first: PageId, buf: &mut [u8]) -> Result<()> {
        self.read_run_shared(first, buf)
    }

    fn pager(&self) -> &Pager {
        self
    }
}

impl PageRead for &mut Pager {
    fn page<T>(&mut self, pid: PageId, f: impl FnOnce(&[u8]) -> T) -> Result<T> {
        self.read(pid, f)
    }

    fn page_past<T>(&mut self, pid: PageId, f: impl FnOnce(&[u8]) -> T) -> Result<T> {
        let mut buf = crate::io::AlignedBuf::zeroed(self.page_size());
        self.read_run(pid, &mut buf)?;
        Ok(f(&buf))
    }

    fn run_past(&mut self, first: PageId, buf: &mut [u8]) -> Result<()> {
        self.read_run(first, buf)
    }

    fn pager(&self) -> &Pager {
        self
    }
}

/// A page source lent to a callee, which reads through it as its owner would: generic
/// read functions pass `&mut pager` on.
impl<P: PageRead> PageRead for &mut P {
    fn page<T>(&mut self, pid: PageId, f: impl FnOnce(&[u8]) -> T) -> Result<T> {
        (**self).page(pid, f)
    }

    fn page_past<T>(&mut self, pid: PageId, f: impl FnOnce(&[u8]) -> T) -> Result<T> {
        (**self).page_past(pid, f)
    }

    fn run_past(&mut self, first: PageId, buf: &mut [u8]) -> Result<()> {
        (**self).run_past(first, buf)
    }

    fn pager(&self) -> &Pager {
        (**self).pager()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{MemDevice, MemVfs};

    const PAGE: usize = 512;

    fn config() -> PagerConfig {
        PagerConfig {
            page_size: PAGE,
            pool_bytes: 2 * PAGE as u64,
            budget_bytes: 2 * PAGE as u64,
            checkpoint_wal_bytes: u64::MAX,
            min_frames: 2,
        }
    }

    fn fill(pager: &mut Pager, pid: PageId, byte: u8) {
        pager
            .write(pid, |b| {
                // An engine may rewrite the whole page, header included.
                b.fill(byte);
                page::set_kind(b, 1);
            })
            .unwrap();
    }

    fn images(pager: &Pager) -> u64 {
        pager.wal_stats().page_images
    }

    /// A page reserved for a shared writer ([`Pager::reserve_page_shared`]) is made before
    /// the writer takes its latch: the write-back its frame needs happens there, and its
    /// fill writes nothing. Dropped unfilled it is given back: the allocator is as before
    /// and hands the same page out next, and no frame of it stays in the pool.
    #[test]
    fn a_reserved_page_writes_back_before_its_fill_and_goes_back_unused() {
        let dev = MemDevice::new(PAGE);
        let mut pager = Pager::create(
            Box::new(dev.reopen()),
            Arc::new(MemVfs::new()),
            config(),
            serde_json::json!({}),
        )
        .unwrap();
        for _ in 0..2 {
            let p = pager.alloc_page().unwrap();
            fill(&mut pager, p, 3);
        }
        // Both frames of the pool are dirty.
        let writes = |p: &Pager| p.device_stats().writes;
        let before = pager.allocator().state();
        let w = writes(&pager);
        let np = pager.reserve_page_shared().unwrap();
        let pid = np.pid;
        assert!(
            writes(&pager) > w,
            "no dirty page was written back for the frame"
        );
        drop(np);
        assert_eq!(
            pager.allocator().state(),
            before,
            "the page was not given back"
        );
        assert!(!pager.pool.with(|p| p.contains(pid)), "its frame stayed");

        let np = pager.reserve_page_shared().unwrap();
        assert_eq!(np.pid, pid);
        let w = writes(&pager);
        let filled = np.fill(|b| {
            b[page::HEADER] = 5;
            page::set_kind(b, 1);
        });
        assert_eq!(filled, pid);
        assert_eq!(writes(&pager), w, "the fill wrote");
        assert_eq!(pager.read_shared(pid, |b| b[page::HEADER]).unwrap(), 5);
        assert_ne!(pager.allocator().state(), before);
    }

    /// Reads outside the engine's lock (`super::outside`): a read armed to stop stops at a
    /// miss having read nothing; armed with the page read meanwhile, the pool loads it
    /// from those bytes when nothing wrote the page since the miss (no device read), and
    /// from the device when a write of it came in between (never the stale bytes).
    #[test]
    fn a_page_read_outside_the_lock_is_used_only_if_nothing_wrote_it_since() {
        let dir = tempfile::tempdir().unwrap();
        let dev = crate::io::FileDevice::open(&dir.path().join("data"), PAGE, false).unwrap();
        let mut pager = Pager::create(
            Box::new(dev),
            Arc::new(MemVfs::new()),
            config(),
            serde_json::json!({}),
        )
        .unwrap();
        let pids: Vec<PageId> = (0..3).map(|_| pager.alloc_page().unwrap()).collect();
        for &p in &pids {
            fill(&mut pager, p, p as u8 + 1);
        }
        Store::checkpoint(&mut pager, serde_json::json!({})).unwrap();
        // The two-frame pool holds pids 1 and 2: pid 0 is a miss.
        let body = |b: &[u8]| b[page::HEADER];
        let reads = |p: &Pager| p.device_stats().read_requests;

        let armed = outside::arm(true, None);
        let r = pager.read_shared(pids[0], body);
        let miss = armed.disarm().expect("the read stopped at its miss");
        assert!(matches!(r, Err(Error::PageMiss)), "{r:?}");
        let before = reads(&pager);
        let stash = miss.read().unwrap();
        assert_eq!(reads(&pager), before + 1, "the miss is read once, outside");
        let armed = outside::arm(true, Some(stash));
        assert_eq!(pager.read_shared(pids[0], body).unwrap(), 1);
        assert!(armed.disarm().is_none());
        assert_eq!(
            reads(&pager),
            before + 1,
            "loaded from the stash, not the device"
        );

        // Again for pid 1 (evicted by pid 0's load), but a write of it reaches the device
        // between the miss and the run that would use the stash.
        let armed = outside::arm(true, None);
        assert!(pager.read_shared(pids[1], body).is_err());
        let stash = armed.disarm().unwrap().read().unwrap();
        fill(&mut pager, pids[1], 7);
        fill(&mut pager, pids[2], 8);
        fill(&mut pager, pids[0], 9); // evicts pid 1: its new bytes are written back
        let before = reads(&pager);
        let armed = outside::arm(true, Some(stash));
        assert_eq!(
            pager.read_shared(pids[1], body).unwrap(),
            7,
            "the page as written"
        );
        drop(armed);
        assert_eq!(reads(&pager), before + 1, "read again from the device");
    }

    /// The before-image rule read from the pages' generation stamps (format 4): a page of
    /// the checkpoint image is imaged once per generation, also after it was written back
    /// and evicted from the pool in between, and again after the next checkpoint; new
    /// pages never are; recovery restores the images and stamps them, so replay does not
    /// image them again.
    #[test]
    fn pages_are_imaged_once_per_generation_without_a_set_in_memory() {
        let dev = MemDevice::new(PAGE);
        let vfs = MemVfs::new();
        let mut pager = Pager::create(
            Box::new(dev.reopen()),
            Arc::new(vfs.clone()),
            config(),
            serde_json::json!({}),
        )
        .unwrap();
        let pids: Vec<PageId> = (0..4).map(|_| pager.alloc_page().unwrap()).collect();
        for &p in &pids {
            fill(&mut pager, p, 1);
            fill(&mut pager, p, 1);
        }
        assert_eq!(images(&pager), 0, "new pages need no before-image");
        Store::checkpoint(&mut pager, serde_json::json!({})).unwrap();

        fill(&mut pager, pids[0], 2);
        fill(&mut pager, pids[0], 3);
        fill(&mut pager, pids[1], 2);
        assert_eq!(images(&pager), 2);
        // Pages 2 and 3 push 0 and 1 out of the two-frame pool (written back, stamped).
        fill(&mut pager, pids[2], 2);
        fill(&mut pager, pids[3], 2);
        assert_eq!(images(&pager), 4);
        fill(&mut pager, pids[0], 4);
        fill(&mut pager, pids[1], 4);
        assert_eq!(
            images(&pager),
            4,
            "read back from the device, still stamped"
        );

        Store::checkpoint(&mut pager, serde_json::json!({})).unwrap();
        fill(&mut pager, pids[0], 5);
        assert_eq!(images(&pager), 5, "a new generation images again");
        Store::checkpoint(&mut pager, serde_json::json!({})).unwrap();

        // Change every page (evicting some), make the WAL durable, and crash: recovery
        // restores the checkpoint's contents.
        for &p in &pids {
            fill(&mut pager, p, 9);
        }
        pager
            .log()
            .prepare_flush()
            .unwrap()
            .unwrap()
            .wait()
            .unwrap();
        drop(pager);
        let manifest = Manifest::load(&vfs).unwrap();
        let (mut pager, ops) = Pager::open(
            Box::new(dev.reopen()),
            Arc::new(vfs.clone()),
            &manifest,
            config(),
        )
        .unwrap();
        assert!(ops.is_empty());
        let before = images(&pager);
        for (&p, want) in pids.iter().zip([5, 4, 2, 2]) {
            assert_eq!(pager.read(p, |b| b[page::HEADER]).unwrap(), want);
            fill(&mut pager, p, 7);
        }
        assert_eq!(
            images(&pager),
            before,
            "restored pages are stamped: no new images"
        );
    }
}
