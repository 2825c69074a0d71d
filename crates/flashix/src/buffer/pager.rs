//! [`Pager`]: crash-safe in-place page updates for engines that keep their nodes in place.
//!
//! # Durability mechanism (DESIGN.md, Contract 3)
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
//! - **Recovery** reads the WAL of the manifest's generation up to its valid prefix (a torn
//!   tail is cut off), writes every page's first before-image back, which restores the
//!   checkpoint image exactly, whatever was torn or half-written since, and hands the
//!   logical records to the engine to replay in order. Replay keeps taking before-images
//!   into the same WAL, so a crash during recovery is recovered the same way. The result
//!   is the state after a prefix of the operations, containing every operation that was
//!   durable in the WAL, in particular everything before the last successful `flush`.
//!
//! Memory: the buffer pool, plus two sets of page ids (pages imaged and pages allocated
//! since the checkpoint), bounded by the WAL size between checkpoints.

use super::pool::{BufferPool, WriteBarrier};
use crate::error::{Error, Result};
use crate::io::{Device, Extent, ExtentAllocator, PageId, Vfs};
use crate::manifest::{wal_name, Manifest};
use crate::options::EngineKind;
use crate::options::Options;
use crate::page;
use crate::stats::{BufferStats, Stats, WalStats};
use crate::wal::{self, LogicalOp, Record, Wal};
use crate::{DeviceStats, Storage};
use std::collections::BTreeMap;
use std::collections::HashSet;
use std::sync::Arc;

struct WalBarrier<'a>(&'a mut Wal);

impl WriteBarrier for WalBarrier<'_> {
    fn before_write(&mut self, lsn: u64) -> Result<()> {
        self.0.ensure_durable(lsn)
    }
}

/// Buffer pool + WAL + allocator of an in-place engine.
pub struct Pager {
    dev: Box<dyn Device>,
    vfs: Arc<dyn Vfs>,
    pool: BufferPool,
    wal: Wal,
    wal_base: WalStats,
    alloc: ExtentAllocator,
    options: Options,
    /// Checkpoint-image pages whose before-image is in the current WAL.
    imaged: HashSet<PageId>,
    /// Pages allocated since the last checkpoint.
    fresh: HashSet<PageId>,
    replaying: bool,
}

impl Pager {
    /// A new, empty index: WAL generation 1 and a first manifest with `engine_state`.
    /// The caller builds its initial pages and then calls [`Pager::checkpoint`].
    pub fn create(storage: Storage, options: Options, min_frames: usize) -> Result<Pager> {
        Pager::create_reserving(storage, options, min_frames, 0)
    }

    /// [`Pager::create`] with `reserved` bytes of the memory budget kept out of the pool
    /// for an engine structure that grows with the index (the PIO B-tree's LSMap).
    pub fn create_reserving(
        storage: Storage,
        options: Options,
        min_frames: usize,
        reserved: u64,
    ) -> Result<Pager> {
        let pool = BufferPool::new(
            options.page_size,
            options.pool_bytes().saturating_sub(reserved),
            min_frames,
        )?;
        let wal = Wal::create(Arc::clone(&storage.vfs), 1)?;
        Ok(Pager {
            dev: storage.device,
            vfs: storage.vfs,
            pool,
            wal,
            wal_base: WalStats::default(),
            alloc: ExtentAllocator::new(0),
            options,
            imaged: HashSet::new(),
            fresh: HashSet::new(),
            replaying: false,
        })
    }

    /// Reopen after a clean close or a crash: restore the checkpoint image and return the
    /// logical operations the engine must replay (with [`Pager::set_replaying`] on).
    pub fn open(
        storage: Storage,
        manifest: &Manifest,
        min_frames: usize,
    ) -> Result<(Pager, Vec<LogicalOp>)> {
        Pager::open_reserving(storage, manifest, min_frames, 0)
    }

    /// [`Pager::open`] with `reserved` bytes of the memory budget kept out of the pool
    /// (see [`Pager::create_reserving`]).
    pub fn open_reserving(
        storage: Storage,
        manifest: &Manifest,
        min_frames: usize,
        reserved: u64,
    ) -> Result<(Pager, Vec<LogicalOp>)> {
        let options = manifest.options.clone();
        let pool = BufferPool::new(
            options.page_size,
            options.pool_bytes().saturating_sub(reserved),
            min_frames,
        )?;
        let alloc = ExtentAllocator::from_state(&manifest.alloc)?;
        let Storage { mut device, vfs } = storage;
        let gen = manifest.generation;
        let name = wal_name(gen);
        // Leftovers of an interrupted checkpoint or manifest switch.
        let replay = wal::recover(&*vfs, gen)?;
        let mut imaged = HashSet::new();
        let mut ops = Vec::new();
        for rec in replay.records {
            match rec {
                Record::Op(op) => ops.push(op),
                Record::Image(pid, bytes) => {
                    if bytes.len() != options.page_size {
                        return Err(Error::corruption(
                            &name,
                            Some(pid),
                            "page image of the wrong size",
                        ));
                    }
                    // The first image of a page is its checkpoint contents.
                    if imaged.insert(pid) {
                        page::verify(pid, &bytes)?;
                        device.write(pid, &bytes)?;
                    }
                }
            }
        }
        if !imaged.is_empty() {
            device.sync()?;
        }
        let wal = Wal::resume(Arc::clone(&vfs), gen, replay.valid_len);
        let pager = Pager {
            dev: device,
            vfs,
            pool,
            wal,
            wal_base: WalStats::default(),
            alloc,
            options,
            imaged,
            fresh: HashSet::new(),
            replaying: false,
        };
        Ok((pager, ops))
    }

    /// While replaying, operations are not logged again (they are in the WAL already) and
    /// no checkpoint is taken.
    pub fn set_replaying(&mut self, on: bool) {
        self.replaying = on;
    }

    /// The index's options.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Page size.
    pub fn page_size(&self) -> usize {
        self.options.page_size
    }

    /// Append a logical redo record (unless replaying).
    pub fn log(&mut self, op: &LogicalOp) -> Result<()> {
        if !self.replaying {
            self.wal.log_op(op)?;
        }
        Ok(())
    }

    /// Frames of the buffer pool.
    pub fn pool_frames(&self) -> u64 {
        self.pool.frames()
    }

    /// Bytes in the current WAL.
    pub fn wal_bytes(&self) -> u64 {
        self.wal.end()
    }

    /// Run `f` on the page's bytes.
    pub fn read<T>(&mut self, pid: PageId, f: impl FnOnce(&[u8]) -> T) -> Result<T> {
        let fid = self
            .pool
            .fetch(&mut *self.dev, &mut WalBarrier(&mut self.wal), pid)?;
        let out = f(self.pool.data(fid));
        self.pool.unpin(fid);
        Ok(out)
    }

    /// Run `f` on the page's bytes to change them, taking its before-image first if this
    /// is its first change since the checkpoint.
    pub fn write<T>(&mut self, pid: PageId, f: impl FnOnce(&mut [u8]) -> T) -> Result<T> {
        let fid = self
            .pool
            .fetch(&mut *self.dev, &mut WalBarrier(&mut self.wal), pid)?;
        let mut lsn = 0;
        if !self.fresh.contains(&pid) && !self.imaged.contains(&pid) {
            match self.wal.log_image(pid, self.pool.data(fid)) {
                Ok(l) => lsn = l,
                Err(e) => {
                    self.pool.unpin(fid);
                    return Err(e);
                }
            }
            self.imaged.insert(pid);
        }
        let out = f(self.pool.data_mut(fid, lsn));
        self.pool.unpin(fid);
        Ok(out)
    }

    /// Load the pages of `runs` that are not in the buffer pool with psync reads: each run
    /// one request, at most `pio_max` requests per batch (PIO B-tree paper §2.3). Later
    /// [`Pager::read`]s of these pages are pool hits. Returns the pages read.
    pub fn prefetch(&mut self, runs: &[crate::io::psync::Run], pio_max: usize) -> Result<u64> {
        self.pool.fetch_runs(
            &mut *self.dev,
            &mut WalBarrier(&mut self.wal),
            runs,
            pio_max,
        )
    }

    /// Make the pages of `runs` the pool's next victims ([`BufferPool::demote`]).
    pub fn demote(&mut self, runs: &[crate::io::psync::Run]) {
        for &(start, len) in runs {
            for pid in start..start + len {
                self.pool.demote(pid);
            }
        }
    }

    /// Write every dirty page now, in psync groups of at most `pio_max` writes, after the
    /// WAL rule's barrier (write-through of a batch update, PIO B-tree paper §3.4). The
    /// pages stay resident and clean; this is not a checkpoint.
    pub fn write_through(&mut self, pio_max: usize) -> Result<()> {
        self.pool
            .flush_dirty(&mut *self.dev, &mut WalBarrier(&mut self.wal), pio_max)
    }

    /// `len` new contiguous zeroed pages changed through the pool like
    /// [`Pager::alloc_page`]'s (multi-page nodes: the PIO B-tree's leaf segments).
    pub fn alloc_run(&mut self, len: u64) -> Result<Extent> {
        let e = self.alloc.alloc(len);
        for pid in e.start..e.end() {
            self.fresh.insert(pid);
            let fid = self
                .pool
                .create(&mut *self.dev, &mut WalBarrier(&mut self.wal), pid)?;
            self.pool.unpin(fid);
        }
        Ok(e)
    }

    /// A new zeroed page (not in the checkpoint image, so it needs no before-image).
    pub fn alloc_page(&mut self) -> Result<PageId> {
        let pid = self.alloc.alloc_page();
        self.fresh.insert(pid);
        let fid = self
            .pool
            .create(&mut *self.dev, &mut WalBarrier(&mut self.wal), pid)?;
        self.pool.unpin(fid);
        Ok(pid)
    }

    /// Free a page; it is reused only after the next checkpoint.
    pub fn free_page(&mut self, pid: PageId) {
        self.pool.discard(pid);
        self.alloc.free(Extent { start: pid, len: 1 });
    }

    /// A run of `len` new contiguous pages for structures written sequentially and
    /// read past the buffer pool (sorted runs, components). Such pages are written only
    /// through [`Pager::device`] while they are new, never changed in place afterwards, and
    /// become part of the durable state with the next checkpoint's manifest.
    pub fn alloc_extent(&mut self, len: u64) -> Extent {
        self.alloc.alloc(len)
    }

    /// Free a run; its pages are reused only after the next checkpoint (shadow paging).
    pub fn free_extent(&mut self, e: Extent) {
        for pid in e.start..e.end() {
            self.pool.discard(pid);
        }
        self.alloc.free(e);
    }

    /// Drop a page's frame from the pool without freeing the page: for an engine that
    /// reuses a page of its own extents and writes it through [`Pager::device`] (BFTL
    /// recycles pages allocated and released since the last checkpoint), so the pool holds
    /// no stale copy.
    pub fn discard(&mut self, pid: PageId) {
        self.pool.discard(pid);
    }

    /// The device, for multi-page I/O that bypasses the buffer pool (FD-tree paper,
    /// App. D: "the merge operation ... can skip the buffer layer"). Only pages of extents
    /// from [`Pager::alloc_extent`] may be written this way.
    pub fn device(&mut self) -> &mut dyn Device {
        &mut *self.dev
    }

    /// Group commit: every logged operation becomes durable.
    pub fn flush(&mut self) -> Result<()> {
        self.wal.sync()
    }

    /// True when the WAL has grown past the configured size and a checkpoint is due
    /// (never while replaying).
    pub fn needs_checkpoint(&self) -> bool {
        !self.replaying && self.wal.end() >= self.options.checkpoint_wal_bytes
    }

    /// True while replaying the WAL.
    pub fn replaying(&self) -> bool {
        self.replaying
    }

    /// Write all dirty pages, sync, and switch to a new manifest and WAL generation.
    pub fn checkpoint(&mut self, engine_state: serde_json::Value) -> Result<()> {
        self.wal.sync()?;
        self.pool
            .flush_all(&mut *self.dev, &mut WalBarrier(&mut self.wal))?;
        self.dev.sync()?;
        let gen = self.wal.generation() + 1;
        let mut new_wal = Wal::create(Arc::clone(&self.vfs), gen)?;
        // The new WAL's name must be durable before the manifest that names it: a rename
        // may reach the disk without a directory sync, a create may not.
        self.vfs.sync_dir()?;
        let manifest = Manifest {
            options: self.options.clone(),
            generation: gen,
            alloc: self.alloc.state(),
            engine: engine_state,
        };
        manifest.store(&*self.vfs)?;
        self.alloc.commit();
        self.imaged.clear();
        self.fresh.clear();
        std::mem::swap(&mut self.wal, &mut new_wal);
        let old = new_wal;
        add_wal_stats(&mut self.wal_base, &old.stats());
        self.wal_base.checkpoints += 1;
        // The old WAL is no longer named by any manifest; a failed removal leaves a stale
        // file that the next open deletes.
        let _ = self.vfs.remove(old.name());
        Ok(())
    }

    /// The extent allocator (integrity checks).
    pub fn allocator(&self) -> &ExtentAllocator {
        &self.alloc
    }

    /// Device counters.
    pub fn device_stats(&self) -> DeviceStats {
        self.dev.stats()
    }

    /// Buffer pool counters.
    pub fn buffer_stats(&self) -> BufferStats {
        self.pool.stats()
    }

    /// WAL counters over all generations since open.
    pub fn wal_stats(&self) -> WalStats {
        let mut s = self.wal_base.clone();
        add_wal_stats(&mut s, &self.wal.stats());
        s
    }

    /// Memory held: pool frames and the page-id sets.
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
        }
    }

    pub fn memory_bytes(&self) -> u64 {
        self.pool.memory_bytes() + 16 * (self.imaged.capacity() + self.fresh.capacity()) as u64
    }
}

fn add_wal_stats(into: &mut WalStats, s: &WalStats) {
    into.records += s.records;
    into.page_images += s.page_images;
    into.bytes += s.bytes;
    into.syncs += s.syncs;
    into.checkpoints += s.checkpoints;
}
