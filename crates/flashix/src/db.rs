//! [`Db`]: the one API every engine is used through (docs/design.md, Public API).

use crate::batch::Batch;
use crate::durable::{Manifest, MANIFEST};
use crate::engine;
use crate::error::{Error, Result};
use crate::io::{Device, DirVfs, FileDevice, MemDevice, OverlayDevice, OverlayVfs, Storage, Vfs};
use crate::kit::api::{Engine, RangeCursor};
use crate::options::{record, DeviceSpec, Options};
use crate::sim::SimSsd;
use crate::stats::Stats;
use std::ops::{Bound, RangeBounds};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// Name of the data file of a [`DeviceSpec::File`] index.
pub const DATA_FILE: &str = "data";

/// Name of the file holding the simulated flash of a [`DeviceSpec::SimulatedSsd`] or
/// [`DeviceSpec::RawNand`] index.
pub const NAND_FILE: &str = "nand";

/// An ordered index `u64 -> u64`, shared by any number of threads (`Db: Send + Sync`,
/// every method on `&self`; share it with `Arc<Db>` or scoped threads).
///
/// # Thread safety
///
/// Every single-key operation is linearizable; a `get_many` answers each key as some `get`
/// during the call would; a range scan returns keys in ascending order, each with a value
/// it held at some instant of the scan, every key present and unchanged for the whole scan
/// and no key absent for the whole scan; a [`Batch`] is all-or-nothing after a crash, and
/// a thread that applied it then reads all of it; [`Db::flush`] makes durable every
/// operation that returned before it was called, from any thread, and concurrent flushes
/// share one WAL sync. What runs in parallel with what depends on the engine: each
/// engine's module doc says. An I/O error in any thread poisons the `Db` for every thread
/// with that error ([`Error::Poisoned`]). [`Db::close`] takes the `Db` by value, so it
/// runs after every borrow (a [`Range`] too) has ended.
pub struct Db {
    engine: Box<dyn Engine>,
    /// Set once, by the first operation that failed with the engine's state unknown.
    poisoned: OnceLock<String>,
    closed: bool,
}

impl Db {
    /// Create a new index in `dir`, which must be absent or empty.
    pub fn create(dir: impl AsRef<Path>, opts: Options) -> Result<Db> {
        let dir = dir.as_ref();
        opts.validate()?;
        let existed = dir.exists();
        if existed {
            let mut entries = std::fs::read_dir(dir)
                .map_err(|e| Error::io(format!("listing {}", dir.display()), e))?;
            if entries.next().is_some() {
                return Err(Error::AlreadyExists(dir.to_path_buf()));
            }
        } else {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
        }
        let created = device_for(dir, &opts.device, opts.page_size, true).and_then(|device| {
            let vfs: Arc<dyn Vfs> = Arc::new(DirVfs::new(dir));
            Db::create_on(Storage { device, vfs }, opts)
        });
        if created.is_err() {
            // Leave the directory as it was (absent or empty), so that a retry with
            // corrected options works. Best effort: the original error is what matters.
            if existed {
                if let Ok(entries) = std::fs::read_dir(dir) {
                    for e in entries.flatten() {
                        let _ = std::fs::remove_file(e.path());
                    }
                }
            } else {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
        created
    }

    /// Open the index in `dir`; engine and options come from its manifest.
    pub fn open(dir: impl AsRef<Path>) -> Result<Db> {
        Db::open_inner(dir.as_ref(), |o| o)
    }

    /// Open the index in `dir` without changing anything on disk: for inspecting, checking
    /// and exporting an index (`flashix check`, `stats`, `dump`).
    ///
    /// The files are opened read-only beneath a copy-on-write overlay in memory
    /// ([`crate::io::OverlayDevice`], [`crate::io::OverlayVfs`]): the engine's open runs
    /// unchanged, so an index that was not closed cleanly is recovered (its WAL replayed,
    /// torn pages restored) and reads give exactly what [`Db::open`] would, but what
    /// recovery writes, and anything written through the returned `Db` (which accepts
    /// writes), stays in memory and is gone when it is dropped. Nothing is created,
    /// truncated, renamed or written in `dir`; the overlay's memory grows with what is
    /// written through it.
    pub fn open_read_only(dir: impl AsRef<Path>) -> Result<Db> {
        Ok(Db::open_read_only_view(dir.as_ref())?.0)
    }

    /// [`Db::open_read_only`], with a handle on the device the engine sees (after its
    /// recovery) when it holds the engine's pages in the page envelope (`crate::page`):
    /// `None` for an engine on raw NAND, whose pages have their own format.
    pub(crate) fn open_read_only_view(dir: &Path) -> Result<(Db, Option<OverlayDevice>)> {
        if !dir.is_dir() {
            return Err(Error::NotFound(dir.to_path_buf()));
        }
        let base: Arc<dyn Vfs> = Arc::new(DirVfs::read_only(dir));
        if !base.exists(MANIFEST)? {
            return Err(Error::NotAnIndex(dir.to_path_buf()));
        }
        let vfs: Arc<dyn Vfs> = Arc::new(OverlayVfs::new(base));
        let manifest = Manifest::load(&*vfs)?;
        let opts = record::decode(&manifest.options, manifest.format_version)?;
        opts.validate()?;
        let (device, view) = read_only_device(dir, &opts)?;
        let db = Db::from_engine(open_engine(Storage { device, vfs }, manifest, opts)?)?;
        Ok((db, view))
    }

    /// Open the index in `dir` with a buffer pool of `bytes` instead of the one in its
    /// manifest (the pool's size is a runtime setting: the on-disk format does not depend
    /// on it). The new size is saved with the next checkpoint. Benchmarks use it to build
    /// an index with a large pool and measure it with a small one.
    pub fn open_with_buffer_pool(dir: impl AsRef<Path>, bytes: u64) -> Result<Db> {
        Db::open_inner(dir.as_ref(), |o| o.buffer_pool_bytes(bytes))
    }

    /// Open the index in `dir` with its manifest's options changed by `adjust` (validated
    /// again). For benchmarks and experiments that compare runtime settings on one index
    /// (`crate::experiment::open_adjusted`): `adjust` must change only settings the on-disk
    /// format does not depend on (the pool, the FBX clean policy); changing anything else
    /// gives an index its files do not match.
    pub(crate) fn open_adjusted(dir: &Path, adjust: impl FnOnce(Options) -> Options) -> Result<Db> {
        Db::open_inner(dir, adjust)
    }

    fn open_inner(dir: &Path, adjust: impl FnOnce(Options) -> Options) -> Result<Db> {
        if !dir.is_dir() {
            return Err(Error::NotFound(dir.to_path_buf()));
        }
        let vfs: Arc<dyn Vfs> = Arc::new(DirVfs::new(dir));
        if !vfs.exists(MANIFEST)? {
            return Err(Error::NotAnIndex(dir.to_path_buf()));
        }
        let manifest = Manifest::load(&*vfs)?;
        let opts = adjust(record::decode(&manifest.options, manifest.format_version)?);
        if opts.device == DeviceSpec::Memory {
            return Err(Error::Unsupported(format!(
                "the index in {} was created on a memory device, whose pages did not survive",
                dir.display()
            )));
        }
        opts.validate()?;
        let device = device_for(dir, &opts.device, opts.page_size, false)?;
        Db::from_engine(open_engine(Storage { device, vfs }, manifest, opts)?)
    }

    /// Create an index on given storage (`opts.device` is not used).
    pub fn create_on(storage: Storage, opts: Options) -> Result<Db> {
        opts.validate()?;
        if storage.device.page_size() != opts.page_size {
            return Err(Error::InvalidOptions(format!(
                "device page size {} differs from the options' {}",
                storage.device.page_size(),
                opts.page_size
            )));
        }
        if storage.vfs.exists(MANIFEST)? {
            return Err(Error::AlreadyExists(PathBuf::from(MANIFEST)));
        }
        Db::from_engine(create_engine(storage, opts)?)
    }

    /// Open an index on given storage.
    pub fn open_on(storage: Storage) -> Result<Db> {
        if !storage.vfs.exists(MANIFEST)? {
            return Err(Error::NotAnIndex(PathBuf::from(MANIFEST)));
        }
        let manifest = Manifest::load(&*storage.vfs)?;
        let opts = record::decode(&manifest.options, manifest.format_version)?;
        if storage.device.page_size() != opts.page_size {
            return Err(Error::InvalidOptions(format!(
                "device page size {} differs from the index's {}",
                storage.device.page_size(),
                opts.page_size
            )));
        }
        Db::from_engine(open_engine(storage, manifest, opts)?)
    }

    fn from_engine(engine: Box<dyn Engine>) -> Result<Db> {
        Ok(Db {
            engine,
            poisoned: OnceLock::new(),
            closed: false,
        })
    }

    fn usable(&self) -> Result<()> {
        match self.poisoned.get() {
            Some(why) => Err(Error::Poisoned(why.clone())),
            None => Ok(()),
        }
    }

    /// Run a mutating operation; an error leaves the in-memory state unknown, so the Db
    /// refuses further work until it is reopened (recovery restores a consistent state).
    fn mutate<T>(&self, f: impl FnOnce(&dyn Engine) -> Result<T>) -> Result<T> {
        self.usable()?;
        let r = f(&*self.engine);
        if let Err(e) = &r {
            if !matches!(e, Error::InvalidArgument(_)) {
                self.poison(e);
            }
        }
        r
    }

    /// Refuse further work, with `e` as the reason (the first error wins when threads
    /// fail at once).
    fn poison(&self, e: &Error) {
        let why = match e {
            // The engine refused: another thread's failure, whose words are kept.
            Error::Poisoned(why) => why.clone(),
            e => e.to_string(),
        };
        let _ = self.poisoned.set(why);
    }

    /// Insert or overwrite `key` (blind upsert).
    pub fn insert(&self, key: u64, value: u64) -> Result<()> {
        self.mutate(|e| e.insert(key, value))
    }

    /// Delete `key`; deleting an absent key is fine.
    pub fn delete(&self, key: u64) -> Result<()> {
        self.mutate(|e| e.delete(key))
    }

    /// Run a reading operation. A read may write (a buffer-pool eviction, the FBX-tree's
    /// log cleaning on a query), and one that met an I/O error (a failed read or write, a
    /// full device) may have stopped half way through such a write or a page load, so it
    /// poisons the `Db` as a mutating operation does. Other errors (corruption found on a
    /// read, a bad argument) leave the in-memory state as it was.
    fn read<T>(&self, f: impl FnOnce(&dyn Engine) -> Result<T>) -> Result<T> {
        self.usable()?;
        let r = f(&*self.engine);
        if let Err(e) = &r {
            self.poison_if_io(e);
        }
        r
    }

    fn poison_if_io(&self, e: &Error) {
        if matches!(e, Error::Io { .. } | Error::Poisoned(_)) {
            self.poison(e);
        }
    }

    /// The value of `key`.
    pub fn get(&self, key: u64) -> Result<Option<u64>> {
        self.read(|e| e.get(key))
    }

    /// The values of many keys, in the order given (batched by engines that can).
    pub fn get_many(&self, keys: &[u64]) -> Result<Vec<Option<u64>>> {
        self.read(|e| e.get_many(keys))
    }

    /// Entries with keys in `range`, ascending. The iterator reads lazily, a batch at a time.
    pub fn range(&self, range: impl RangeBounds<u64>) -> Result<Range<'_>> {
        self.usable()?;
        let next = match range.start_bound() {
            Bound::Included(&k) => Some(k),
            Bound::Excluded(&k) => k.checked_add(1),
            Bound::Unbounded => Some(0),
        };
        let hi = range.end_bound().cloned();
        let mut cursor = RangeCursor {
            next,
            hi,
            ..RangeCursor::empty()
        };
        if let Some(n) = cursor.next {
            if !cursor.below_hi(n) {
                cursor.next = None;
            }
        }
        Ok(Range {
            db: self,
            cursor,
            buf: Vec::new(),
            pos: 0,
            last: None,
        })
    }

    /// The entries of many inclusive key ranges `(lo, hi)`, ascending by key, each entry
    /// once: the ranges may come in any order and overlap (they are sorted and merged
    /// first). Engines that can share reads between neighbouring ranges do (the FD-tree
    /// and the LSM read a page that several ranges fall in once). Bounded by what it
    /// returns: the caller asked for all of it.
    pub fn range_many(&self, ranges: &[(u64, u64)]) -> Result<Vec<(u64, u64)>> {
        self.usable()?;
        let merged = merge_ranges("range_many", ranges)?;
        let mut out = Vec::new();
        self.read(|e| e.scan_many(&merged, &mut out))?;
        Ok(out)
    }

    /// An estimate of how many entries `ranges` (inclusive `(lo, hi)` pairs, any order,
    /// may overlap) hold, made without reading leaves, or `None` when the engine cannot
    /// estimate (only the FBX-tree can: from its node table's entry counts, §4.3, an upper
    /// bound for fully covered leaves and a key-span share of partly covered ones). The
    /// moving-object kNN sizes its first radius with it.
    pub fn estimate_count(&self, ranges: &[(u64, u64)]) -> Result<Option<u64>> {
        self.usable()?;
        let merged = merge_ranges("estimate_count", ranges)?;
        // The FBX-tree may load inner nodes through its pool (a read): as for any read,
        // an I/O error poisons.
        self.read(|e| e.estimate_count(&merged))
    }

    /// Insert many pairs, in any order; for equal keys the last wins.
    pub fn bulk_insert(&self, pairs: &[(u64, u64)]) -> Result<()> {
        if pairs.is_empty() {
            return self.usable();
        }
        let mut sorted: Vec<(u64, u64)> = pairs.to_vec();
        sorted.sort_by_key(|p| p.0); // stable: equal keys keep input order
        let mut dedup: Vec<(u64, u64)> = Vec::with_capacity(sorted.len());
        for p in sorted {
            match dedup.last_mut() {
                Some(last) if last.0 == p.0 => *last = p,
                _ => dedup.push(p),
            }
        }
        self.mutate(|e| e.bulk_insert(&dedup))
    }

    /// Delete every key in `range`.
    pub fn delete_range(&self, range: impl RangeBounds<u64>) -> Result<()> {
        match crate::batch::inclusive(&range) {
            Some((lo, hi)) => self.mutate(|e| e.delete_range(lo, hi)),
            None => self.usable(),
        }
    }

    /// Apply an atomic batch: its operations in order, logged as one WAL record, so that
    /// after a crash either all of it is there or none of it (contract point 3 of docs/design.md).
    pub fn apply(&self, batch: &Batch) -> Result<()> {
        let ops = batch.ops();
        if ops.is_empty() {
            return self.usable();
        }
        // A WAL record's length is a u32; an operation takes at most 17 bytes.
        if ops.len() as u64 * 17 + 9 > u64::from(u32::MAX) {
            return Err(Error::InvalidArgument(format!(
                "batch: {} operations do not fit one WAL record; split it",
                ops.len()
            )));
        }
        self.mutate(|e| e.apply_batch(ops))
    }

    /// Make every operation before this call durable.
    pub fn flush(&self) -> Result<()> {
        self.mutate(|e| e.flush())
    }

    /// Flush, checkpoint and release the index. It takes the `Db` by value: every other
    /// thread's borrow has ended (unwrap an `Arc<Db>` first, with `Arc::into_inner`).
    pub fn close(mut self) -> Result<()> {
        self.closed = true;
        self.usable()?;
        self.engine.close()
    }

    /// [`Db::close`], returning the counters after its checkpoint (the reproductions count
    /// the I/O of the final checkpoint, where lazy structures do their writing).
    #[doc(hidden)]
    pub fn close_with_stats(mut self) -> Result<Stats> {
        self.closed = true;
        self.usable()?;
        self.engine.close()?;
        Ok(self.engine.stats())
    }

    /// Counters: I/O, buffer pool, WAL, engine, memory.
    pub fn stats(&self) -> Stats {
        self.engine.stats()
    }

    /// Check the engine's structural invariants (documented in each engine's module).
    pub fn check_integrity(&self) -> Result<()> {
        self.usable()?;
        self.engine.check_integrity()
    }

    /// Run `f` beside another thread that holds the engine's lock shared for the whole of
    /// it, as a reader does: what `f`'s reads defer for lack of a free lock stays deferred.
    #[cfg(test)]
    pub(crate) fn beside_a_reader<T>(&self, f: impl FnOnce() -> T) -> T {
        use std::sync::mpsc::channel;
        use std::time::Duration;
        let (held_tx, held_rx) = channel();
        let (done_tx, done_rx) = channel::<()>();
        std::thread::scope(|s| {
            s.spawn(move || {
                self.engine.with_shared_lock(&mut || {
                    let _ = held_tx.send(());
                    let _ = done_rx.recv_timeout(Duration::from_secs(60));
                })
            });
            held_rx
                .recv_timeout(Duration::from_secs(60))
                .expect("the reader took the lock");
            let out = f();
            let _ = done_tx.send(());
            out
        })
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        if !self.closed && self.poisoned.get().is_none() {
            let _ = self.engine.flush();
        }
    }
}

/// Iterator over a key range: `Result<(key, value)>` items in ascending key order.
/// It borrows the `Db` shared: other threads read and write while it is alive, with the
/// guarantees of the `Db`'s thread-safety section.
pub struct Range<'a> {
    db: &'a Db,
    cursor: RangeCursor,
    buf: Vec<(u64, u64)>,
    pos: usize,
    /// The last key returned: keys must come strictly ascending, at or above the start
    /// (a damaged leaf chain that loops back, or a misordered page, is corruption here
    /// rather than an endless or unordered scan).
    last: Option<u64>,
}

impl Range<'_> {
    /// Tell the engine the caller expects to take about `n` entries (a `LIMIT`): an
    /// engine that reads an open-ended range ahead in batches (the FD-tree, the LSM-tree,
    /// the PIO B-tree) sizes its first batch for `n` entries instead of its default, so a
    /// short scan reads what it returns. Only a hint: the iterator still yields every
    /// entry of the range, reading more if the caller goes on.
    pub fn limit_hint(mut self, n: u64) -> Self {
        self.cursor.want = Some(n);
        self
    }

    /// Check the keys the last scan step put in `buf` against `last` and the step's start.
    fn check_order(&mut self, start: u64) -> Result<()> {
        let mut prev = self.last;
        for &(k, _) in &self.buf {
            if k < start || prev.is_some_and(|p| k <= p) {
                return Err(Error::corruption(
                    crate::page::DATA_FILE,
                    None,
                    format!(
                        "range scan met key {k} after {prev:?} (scanning from {start}): a \
                         damaged leaf chain or a misordered page"
                    ),
                ));
            }
            prev = Some(k);
        }
        self.last = prev;
        Ok(())
    }
}

impl Iterator for Range<'_> {
    type Item = Result<(u64, u64)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos == self.buf.len() {
            self.cursor.next?;
            self.buf.clear();
            self.pos = 0;
            while let (true, Some(start)) = (self.buf.is_empty(), self.cursor.next) {
                // Another thread's failure since the last batch poisons this scan too.
                let r = self
                    .db
                    .usable()
                    .and_then(|_| self.db.engine.scan(&mut self.cursor, &mut self.buf));
                if let Err(e) = r.and_then(|_| self.check_order(start)) {
                    self.db.poison_if_io(&e);
                    self.cursor.next = None;
                    return Some(Err(e));
                }
                // The limit hint is what is left of it; a batch that found nothing (a
                // region without entries) drops it, and batches grow from the default.
                self.cursor.want = match self.buf.len() as u64 {
                    0 => None,
                    n => self.cursor.want.map(|w| w.saturating_sub(n)),
                };
            }
            if self.buf.is_empty() {
                return None;
            }
        }
        let kv = self.buf[self.pos];
        self.pos += 1;
        Some(Ok(kv))
    }
}

/// The device of an index in `dir`; `create` for a new index (a simulated SSD formats its
/// flash then, and rebuilds its mapping from it on open). The simulated flash file is
/// opened without `O_DIRECT`: its simulated counters, not wall time, are what it measures.
/// `ranges` checked (`lo <= hi`), sorted and merged where they overlap or touch.
fn merge_ranges(what: &str, ranges: &[(u64, u64)]) -> Result<Vec<(u64, u64)>> {
    if let Some(&(lo, hi)) = ranges.iter().find(|(lo, hi)| lo > hi) {
        return Err(Error::InvalidArgument(format!(
            "{what}: range ({lo}, {hi}) has lo > hi"
        )));
    }
    let mut sorted = ranges.to_vec();
    sorted.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(sorted.len());
    for (lo, hi) in sorted {
        match merged.last_mut() {
            Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
            _ => merged.push((lo, hi)),
        }
    }
    Ok(merged)
}

/// A new engine for `opts` on `storage` (the registry's `engine::create`), with every
/// parameter left to a cost model decided first ([`Options::resolved`]), so that the
/// manifest saves the choice.
fn create_engine(storage: Storage, opts: Options) -> Result<Box<dyn Engine>> {
    let resolved = opts.resolved()?;
    let s = resolved.settings()?;
    engine::create(storage, s, resolved.sub_options, &opts.sub_options)
}

/// Reopen an engine from its manifest with `opts` (its options record decoded, possibly
/// adjusted, e.g. a new buffer pool size), recovering from the WAL. The manifest's record
/// is replaced by `opts`' (current format), which the next checkpoint writes.
fn open_engine(storage: Storage, mut manifest: Manifest, opts: Options) -> Result<Box<dyn Engine>> {
    opts.validate()?;
    let s = opts.settings()?;
    manifest.options = s.record.clone();
    engine::open(storage, manifest, s, opts.sub_options)
}

/// The device of the index in `dir` (options `opts`) opened read-only beneath an
/// [`OverlayDevice`], and a handle on the device that holds the engine's pages in the page
/// envelope (`None` on raw NAND): see [`Db::open_read_only`].
pub(crate) fn read_only_device(
    dir: &Path,
    opts: &Options,
) -> Result<(Box<dyn Device>, Option<OverlayDevice>)> {
    let ps = opts.page_size;
    Ok(match &opts.device {
        DeviceSpec::File { .. } => {
            let dev = OverlayDevice::new(Box::new(FileDevice::open_read_only(
                &dir.join(DATA_FILE),
                ps,
            )?));
            (Box::new(dev.clone()), Some(dev))
        }
        DeviceSpec::Memory => {
            return Err(Error::Unsupported(format!(
                "the index in {} was created on a memory device, whose pages did not survive",
                dir.display()
            )))
        }
        // Opening a simulated SSD rebuilds its mapping from the flash (and may write to
        // it): an overlay on the flash below it, and one above it for the view.
        DeviceSpec::SimulatedSsd(cfg) => {
            cfg.validate(ps)?;
            let nand = OverlayDevice::new(Box::new(FileDevice::open_read_only(
                &dir.join(NAND_FILE),
                cfg.nand.page_bytes,
            )?));
            let dev = OverlayDevice::new(Box::new(SimSsd::open(Box::new(nand), cfg, ps)?));
            (Box::new(dev.clone()), Some(dev))
        }
        DeviceSpec::RawNand(cfg) => {
            cfg.validate()?;
            let dev = OverlayDevice::new(Box::new(FileDevice::open_read_only(
                &dir.join(NAND_FILE),
                cfg.page_bytes,
            )?));
            (Box::new(dev), None)
        }
    })
}

fn device_for(
    dir: &Path,
    spec: &DeviceSpec,
    page_size: usize,
    create: bool,
) -> Result<Box<dyn Device>> {
    Ok(match spec {
        DeviceSpec::File { direct_io } => Box::new(FileDevice::open(
            &dir.join(DATA_FILE),
            page_size,
            *direct_io,
        )?),
        DeviceSpec::Memory => Box::new(MemDevice::new(page_size)),
        DeviceSpec::SimulatedSsd(cfg) => {
            cfg.validate(page_size)?;
            let backing = Box::new(FileDevice::open(
                &dir.join(NAND_FILE),
                cfg.nand.page_bytes,
                false,
            )?);
            if create {
                Box::new(SimSsd::create(backing, cfg, page_size)?)
            } else {
                Box::new(SimSsd::open(backing, cfg, page_size)?)
            }
        }
        // The engine builds its `sim::Nand` on the backing file (create or open).
        DeviceSpec::RawNand(cfg) => {
            cfg.validate()?;
            Box::new(FileDevice::open(
                &dir.join(NAND_FILE),
                cfg.page_bytes,
                false,
            )?)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_served() {
        for kind in crate::EngineKind::ALL {
            let storage = Storage {
                device: Box::new(MemDevice::new(4096)),
                vfs: Arc::new(crate::io::MemVfs::new()),
            };
            // (It may refuse the storage, as IPL refuses a device that is not its NAND's.)
            let r = create_engine(storage, Options::new(kind));
            assert!(
                !matches!(r, Err(Error::Unsupported(_))),
                "{kind:?}: {:?}",
                r.err()
            );
        }
    }

    #[test]
    fn db_is_send_and_sync() {
        fn shared<T: Send + Sync>() {}
        shared::<Db>();
        shared::<Range<'static>>();
    }

    /// A batch applies in order (a delete after an insert of the same key wins, a range
    /// delete covers inserts before it and not after), survives reopen, and an empty batch
    /// is a no-op.
    #[test]
    fn batches_apply_in_order_and_persist() {
        let dev = MemDevice::new(512);
        let vfs = crate::io::MemVfs::new();
        let s = Storage {
            device: Box::new(dev.reopen()),
            vfs: Arc::new(vfs.clone()),
        };
        let opts = Options::new(crate::EngineKind::BTree)
            .page_size(512)
            .buffer_pool_bytes(8 * 512);
        let db = Db::create_on(s, opts).unwrap();
        db.insert(1, 1).unwrap();
        let mut b = Batch::new();
        b.insert(2, 20)
            .delete(2)
            .insert(3, 30)
            .insert(10, 100)
            .delete_range(5..=10)
            .insert(7, 70)
            .delete(1)
            .delete_range(20..20);
        db.apply(&b).unwrap();
        db.apply(&Batch::new()).unwrap();
        let want = vec![(3, 30), (7, 70)];
        let all: Vec<_> = db.range(..).unwrap().map(|r| r.unwrap()).collect();
        assert_eq!(all, want);
        db.close().unwrap();
        let db = Db::open_on(Storage {
            device: Box::new(dev.reopen()),
            vfs: Arc::new(vfs),
        })
        .unwrap();
        let all: Vec<_> = db.range(..).unwrap().map(|r| r.unwrap()).collect();
        assert_eq!(all, want);
    }

    #[test]
    fn bulk_insert_keeps_the_last_of_equal_keys_and_ranges_handle_edges() {
        let s = Storage {
            device: Box::new(MemDevice::new(512)),
            vfs: Arc::new(crate::io::MemVfs::new()),
        };
        let opts = Options::new(crate::EngineKind::BTree)
            .page_size(512)
            .buffer_pool_bytes(8 * 512);
        let db = Db::create_on(s, opts).unwrap();
        db.bulk_insert(&[(5, 1), (u64::MAX, 2), (5, 3), (0, 4)])
            .unwrap();
        assert_eq!(db.get(5).unwrap(), Some(3));
        let all: Vec<_> = db.range(..).unwrap().map(|r| r.unwrap()).collect();
        assert_eq!(all, vec![(0, 4), (5, 3), (u64::MAX, 2)]);
        assert_eq!(
            db.range((Bound::Excluded(u64::MAX), Bound::Unbounded))
                .unwrap()
                .count(),
            0
        );
        assert_eq!(
            db.range((Bound::Included(6), Bound::Excluded(5)))
                .unwrap()
                .count(),
            0
        );
        assert_eq!(db.range(u64::MAX..).unwrap().count(), 1);
        db.delete_range(..u64::MAX).unwrap();
        let all: Vec<_> = db.range(..).unwrap().map(|r| r.unwrap()).collect();
        assert_eq!(all, vec![(u64::MAX, 2)]);
        db.delete_range(..).unwrap();
        assert_eq!(db.range(..).unwrap().count(), 0);
    }
}
