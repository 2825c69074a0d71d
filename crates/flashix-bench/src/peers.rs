//! Peer engines (issue 5, Peers), each behind a cargo feature of `flashix-bench` (`rocksdb`,
//! `fjall`, `redb`, `lmdb`; `peers` enables all four; the default and CI builds have none).
//! They run through the same workload code as the flashix engines ([`Target`]), on the same
//! 8-byte big-endian keys and values, with the same memory budget where they can be
//! bounded, and each result states how memory was bounded, whether I/O bypassed the page
//! cache, and the commit model ([`PeerKind::info`]).
//!
//! Configurations:
//! - RocksDB: as an expert would for a small cache: 10-bit Bloom filters, partitioned index
//!   and filters (`TwoLevelIndexSearch`, `partition_filters`), index and filter blocks in
//!   the block cache with the top level pinned, direct reads and direct I/O for flush and
//!   compaction, WAL on (written per write, synced by the end-of-phase flush). Block cache
//!   = the budget, with the memtables charged to it (a `WriteBufferManager` on the cache,
//!   RocksDB's way to put both under one limit): memtables of [`memtable_bytes`] in all.
//! - fjall: 10-bit Bloom filters (its default); memtables of [`memtable_bytes`] in all and
//!   a cache of the rest of the budget.
//! - redb: `set_cache_size` = the budget; one copy-on-write transaction per write
//!   (`redb`), or per [`BATCH_WRITES`] writes (`redb-batched`, a labelled variant).
//! - LMDB through heed: memory-mapped, without readahead (`MDB_NORDAHEAD`, LMDB's advice
//!   for a database larger than memory), so the page cache it uses cannot be bounded from
//!   inside the process. One write transaction per write (`lmdb`) or per [`BATCH_WRITES`]
//!   writes (`lmdb-batched`).
//!
//! fjall, redb and LMDB read through the page cache: the runner runs their measured phases
//! in a memory cgroup where the machine allows, else marks their results "page cache
//! unbounded" ([`crate::cgroup`]). For the operations the cgroup's limit follows the heap,
//! leaving [`PeerKind::page_cache_share`] of page cache beside it: own cache, memtables and
//! page cache add up to the budget.

use crate::target::TargetInfo;
#[allow(unused_imports)]
use crate::target::{be, from_be, Target};
use anyhow::{bail, Result};
use std::fmt;
use std::path::Path;
use std::str::FromStr;

/// Writes per transaction of the batched variants of redb and LMDB.
pub const BATCH_WRITES: u64 = 1000;

/// Memtable memory of RocksDB and fjall, inside their `budget`: a quarter of it (two
/// memtables of an eighth: one filling while the other is flushed), at least fjall's
/// minimum write buffer of 1 MiB, at most half the budget. The cache gets the rest.
pub fn memtable_bytes(budget: u64) -> u64 {
    (budget / 4).max(1 << 20).min(budget / 2)
}

/// A peer engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PeerKind {
    RocksDb,
    Fjall,
    Redb,
    RedbBatched,
    Lmdb,
    LmdbBatched,
}

impl PeerKind {
    pub const ALL: [PeerKind; 6] = [
        PeerKind::RocksDb,
        PeerKind::Fjall,
        PeerKind::Redb,
        PeerKind::RedbBatched,
        PeerKind::Lmdb,
        PeerKind::LmdbBatched,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PeerKind::RocksDb => "rocksdb",
            PeerKind::Fjall => "fjall",
            PeerKind::Redb => "redb",
            PeerKind::RedbBatched => "redb-batched",
            PeerKind::Lmdb => "lmdb",
            PeerKind::LmdbBatched => "lmdb-batched",
        }
    }

    /// The cargo feature that builds this peer.
    pub fn feature(self) -> &'static str {
        match self {
            PeerKind::RocksDb => "rocksdb",
            PeerKind::Fjall => "fjall",
            PeerKind::Redb | PeerKind::RedbBatched => "redb",
            PeerKind::Lmdb | PeerKind::LmdbBatched => "lmdb",
        }
    }

    /// Whether this binary was built with the peer.
    pub fn built(self) -> bool {
        match self {
            PeerKind::RocksDb => cfg!(feature = "rocksdb"),
            PeerKind::Fjall => cfg!(feature = "fjall"),
            PeerKind::Redb | PeerKind::RedbBatched => cfg!(feature = "redb"),
            PeerKind::Lmdb | PeerKind::LmdbBatched => cfg!(feature = "lmdb"),
        }
    }

    /// How the peer's memory is bounded, whether its I/O bypasses the page cache, and its
    /// commit model, for a memory budget of `budget` bytes.
    pub fn info(self, budget: u64) -> TargetInfo {
        let mib = |b: u64| format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64);
        let batched = format!(
            "one copy-on-write transaction per {BATCH_WRITES} writes (reads see the open \
             transaction), committed with fsync; the end-of-phase flush commits the rest"
        );
        let (memory_bound, page_cache_bypassed, commit_model) = match self {
            PeerKind::RocksDb => (
                format!(
                    "block cache = budget ({}; index and filter blocks inside, top level \
                     pinned; memtables of {} charged to it)",
                    mib(budget),
                    mib(memtable_bytes(budget))
                ),
                true,
                "WAL appended per write without fsync; the end-of-phase flush syncs the WAL \
                 (FlushWAL(sync))"
                    .to_string(),
            ),
            PeerKind::Fjall => (
                format!(
                    "cache {} + memtables {} = budget ({}); reads through the page cache",
                    mib(budget - memtable_bytes(budget)),
                    mib(memtable_bytes(budget)),
                    mib(budget)
                ),
                false,
                "journal appended per write without fsync; the end-of-phase flush persists \
                 it (PersistMode::SyncAll)"
                    .to_string(),
            ),
            PeerKind::Redb => (
                format!(
                    "set_cache_size = budget ({}); reads through the page cache",
                    mib(budget)
                ),
                false,
                "one copy-on-write transaction per write, committed with fsync \
                 (Durability::Immediate)"
                    .to_string(),
            ),
            PeerKind::RedbBatched => (
                format!(
                    "set_cache_size = budget ({}); reads through the page cache",
                    mib(budget)
                ),
                false,
                batched,
            ),
            PeerKind::Lmdb => (
                "memory-mapped file: reads through the page cache".to_string(),
                false,
                "one write transaction per write, synced at commit".to_string(),
            ),
            PeerKind::LmdbBatched => (
                "memory-mapped file: reads through the page cache".to_string(),
                false,
                batched,
            ),
        };
        TargetInfo {
            memory_bound,
            page_cache_bypassed,
            commit_model,
        }
    }
}

impl PeerKind {
    /// The page cache a peer that reads through it gets beside its heap during the
    /// measured operations ([`crate::cgroup::MemoryCgroup::follow_heap`]), so that its own
    /// cache, memtables and page cache add up to the `budget`: LMDB has no cache of its own
    /// and gets the budget; fjall (cache + memtables) and redb (`set_cache_size`) hold the
    /// budget in their heap already and get [`PAGE_CACHE_FLOOR`], room for the pages of
    /// reads and writes in flight. RocksDB bypasses the page cache (not confined).
    pub fn page_cache_share(self, budget: u64) -> u64 {
        match self {
            PeerKind::Lmdb | PeerKind::LmdbBatched => budget,
            PeerKind::RocksDb | PeerKind::Fjall | PeerKind::Redb | PeerKind::RedbBatched => {
                PAGE_CACHE_FLOOR.min(budget)
            }
        }
    }

    /// The entries a peer's write buffer holds, for the bench's BUFFER_RULE (a write phase
    /// turns it over about three times): RocksDB's and fjall's memtables
    /// ([`memtable_bytes`]) taken as their bytes over the 16 bytes of a key and a value,
    /// so at least the entries they hold (a memtable entry carries more); `None` for redb
    /// and LMDB, which write through no buffer of their own.
    pub fn write_buffer_entries(self, budget: u64) -> Option<u64> {
        match self {
            PeerKind::RocksDb | PeerKind::Fjall => Some(memtable_bytes(budget) / 16),
            PeerKind::Lmdb | PeerKind::LmdbBatched | PeerKind::Redb | PeerKind::RedbBatched => None,
        }
    }
}

/// The page cache left to a peer whose own cache already takes the budget
/// ([`PeerKind::page_cache_share`]).
pub const PAGE_CACHE_FLOOR: u64 = 1 << 20;

impl fmt::Display for PeerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PeerKind {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        let norm = s.to_ascii_lowercase().replace('_', "-");
        PeerKind::ALL
            .into_iter()
            .find(|p| p.name() == norm)
            .ok_or_else(|| anyhow::anyhow!("unknown peer {s:?}"))
    }
}

/// Create (`create = true`, in an empty directory) or open the peer's store in `dir` with
/// a memory budget of `budget` bytes.
#[allow(unused_variables)]
pub fn open(kind: PeerKind, dir: &Path, budget: u64, create: bool) -> Result<Box<dyn Target>> {
    if !kind.built() {
        bail!(
            "peer {kind} is not built into this binary: rebuild with `cargo build --release \
             -p flashix-bench --features {}`",
            kind.feature()
        );
    }
    if create {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("creating {}: {e}", dir.display()))?;
    }
    match kind {
        #[cfg(feature = "rocksdb")]
        PeerKind::RocksDb => Ok(Box::new(rocks::Rocks::open(dir, budget)?)),
        #[cfg(feature = "fjall")]
        PeerKind::Fjall => Ok(Box::new(fj::Fjall::open(dir, budget)?)),
        #[cfg(feature = "redb")]
        PeerKind::Redb => Ok(Box::new(rd::Redb::open(dir, budget, 1)?)),
        #[cfg(feature = "redb")]
        PeerKind::RedbBatched => Ok(Box::new(rd::Redb::open(dir, budget, BATCH_WRITES)?)),
        #[cfg(feature = "lmdb")]
        PeerKind::Lmdb => Ok(Box::new(lm::Lmdb::open(dir, 1)?)),
        #[cfg(feature = "lmdb")]
        PeerKind::LmdbBatched => Ok(Box::new(lm::Lmdb::open(dir, BATCH_WRITES)?)),
        #[allow(unreachable_patterns)]
        _ => bail!("peer {kind} is not built into this binary"),
    }
}

#[cfg(feature = "rocksdb")]
mod rocks {
    use super::*;
    use anyhow::Context;
    use rocksdb::{
        BlockBasedIndexType, BlockBasedOptions, Cache, Direction, IteratorMode, Options,
        WriteBatch, WriteBufferManager, DB,
    };

    pub struct Rocks {
        db: DB,
    }

    impl Rocks {
        pub fn open(dir: &Path, budget: u64) -> Result<Rocks> {
            let mut t = BlockBasedOptions::default();
            t.set_bloom_filter(10.0, false);
            t.set_index_type(BlockBasedIndexType::TwoLevelIndexSearch);
            t.set_partition_filters(true);
            t.set_cache_index_and_filter_blocks(true);
            t.set_pin_top_level_index_and_filter(true);
            let cache = Cache::new_lru_cache(budget as usize);
            t.set_block_cache(&cache);
            let memtables = memtable_bytes(budget) as usize;
            let mut o = Options::default();
            // Memtables charged to the block cache: both under the one budget.
            o.set_write_buffer_manager(&WriteBufferManager::new_write_buffer_manager_with_cache(
                memtables, false, cache,
            ));
            o.create_if_missing(true);
            o.set_block_based_table_factory(&t);
            o.set_use_direct_reads(true);
            o.set_use_direct_io_for_flush_and_compaction(true);
            o.set_write_buffer_size(memtables / 2);
            o.set_max_write_buffer_number(2);
            let db = DB::open(&o, dir)
                .with_context(|| format!("opening RocksDB in {}", dir.display()))?;
            Ok(Rocks { db })
        }
    }

    impl Target for Rocks {
        fn get(&mut self, key: u64) -> Result<Option<u64>> {
            self.db
                .get(be(key))
                .context("RocksDB get")?
                .map(|v| from_be(&v))
                .transpose()
        }
        fn insert(&mut self, key: u64, value: u64) -> Result<()> {
            self.db.put(be(key), be(value)).context("RocksDB put")
        }
        fn delete(&mut self, key: u64) -> Result<()> {
            self.db.delete(be(key)).context("RocksDB delete")
        }
        fn get_many(&mut self, keys: &[u64]) -> Result<Vec<Option<u64>>> {
            self.db
                .multi_get(keys.iter().map(|&k| be(k)))
                .into_iter()
                .map(|r| {
                    r.context("RocksDB multi_get")?
                        .map(|v| from_be(&v))
                        .transpose()
                })
                .collect()
        }
        fn scan(&mut self, start: u64, len: u64) -> Result<(Option<u64>, u64)> {
            let k = be(start);
            let mut first = None;
            let mut n = 0;
            for kv in self
                .db
                .iterator(IteratorMode::From(&k, Direction::Forward))
                .take(len as usize)
            {
                let (key, _) = kv.context("RocksDB iterator")?;
                first.get_or_insert(from_be(&key)?);
                n += 1;
            }
            Ok((first, n))
        }
        fn bulk_insert(&mut self, pairs: &[(u64, u64)]) -> Result<()> {
            let mut b = WriteBatch::default();
            for &(k, v) in pairs {
                b.put(be(k), be(v));
            }
            self.db.write(b).context("RocksDB write batch")
        }
        fn delete_range(&mut self, lo: u64, hi: u64) -> Result<()> {
            let mut b = WriteBatch::default();
            b.delete_range(be(lo), be(hi));
            b.delete(be(hi)); // delete_range's end is exclusive
            self.db.write(b).context("RocksDB delete_range")
        }
        fn flush(&mut self) -> Result<()> {
            self.db.flush_wal(true).context("RocksDB FlushWAL(sync)")
        }
        fn close(self: Box<Self>) -> Result<()> {
            self.db.flush_wal(true).context("RocksDB FlushWAL(sync)")?;
            drop(self);
            Ok(())
        }
    }
}

#[cfg(feature = "fjall")]
mod fj {
    use super::*;
    use anyhow::Context;
    use fjall::{Config, Keyspace, PartitionCreateOptions, PartitionHandle, PersistMode};

    pub struct Fjall {
        ks: Keyspace,
        part: PartitionHandle,
    }

    impl Fjall {
        pub fn open(dir: &Path, budget: u64) -> Result<Fjall> {
            let memtables = memtable_bytes(budget);
            let ks = Config::new(dir)
                .cache_size(budget - memtables)
                .max_write_buffer_size(memtables)
                .open()
                .with_context(|| format!("opening fjall in {}", dir.display()))?;
            let part = ks
                .open_partition(
                    "index",
                    PartitionCreateOptions::default()
                        .max_memtable_size(u32::try_from(memtables / 2).unwrap_or(u32::MAX)),
                )
                .context("opening the fjall partition")?;
            Ok(Fjall { ks, part })
        }
    }

    impl Target for Fjall {
        fn get(&mut self, key: u64) -> Result<Option<u64>> {
            self.part
                .get(be(key))
                .context("fjall get")?
                .map(|v| from_be(&v))
                .transpose()
        }
        fn insert(&mut self, key: u64, value: u64) -> Result<()> {
            self.part.insert(be(key), be(value)).context("fjall insert")
        }
        fn delete(&mut self, key: u64) -> Result<()> {
            self.part.remove(be(key)).context("fjall remove")
        }
        fn scan(&mut self, start: u64, len: u64) -> Result<(Option<u64>, u64)> {
            let mut first = None;
            let mut n = 0;
            for kv in self.part.range(be(start)..).take(len as usize) {
                let (key, _) = kv.context("fjall range")?;
                first.get_or_insert(from_be(&key)?);
                n += 1;
            }
            Ok((first, n))
        }
        fn bulk_insert(&mut self, pairs: &[(u64, u64)]) -> Result<()> {
            let mut b = self.ks.batch();
            for &(k, v) in pairs {
                b.insert(&self.part, be(k), be(v));
            }
            b.commit().context("fjall batch commit")
        }
        fn delete_range(&mut self, lo: u64, hi: u64) -> Result<()> {
            let mut keys = Vec::new();
            for kv in self.part.range(be(lo)..=be(hi)) {
                let (key, _) = kv.context("fjall range")?;
                keys.push(key);
            }
            let mut b = self.ks.batch();
            for k in keys {
                b.remove(&self.part, k);
            }
            b.commit().context("fjall batch commit")
        }
        fn flush(&mut self) -> Result<()> {
            self.ks
                .persist(PersistMode::SyncAll)
                .context("fjall persist")
        }
        fn close(self: Box<Self>) -> Result<()> {
            self.ks
                .persist(PersistMode::SyncAll)
                .context("fjall persist")?;
            Ok(())
        }
    }
}

#[cfg(feature = "redb")]
mod rd {
    use super::*;
    use anyhow::Context;
    use redb::{Database, ReadableTable, TableDefinition, WriteTransaction};

    const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("index");

    pub struct Redb {
        db: Database,
        /// Writes per transaction (1: one transaction per write).
        batch: u64,
        open: Option<WriteTransaction>,
        pending: u64,
    }

    impl Redb {
        pub fn open(dir: &Path, budget: u64, batch: u64) -> Result<Redb> {
            let path = dir.join("redb.db");
            let db = redb::Builder::new()
                .set_cache_size(budget as usize)
                .create(&path)
                .with_context(|| format!("opening redb {}", path.display()))?;
            // Make sure the table exists, so reads before any write find it.
            let tx = db.begin_write().context("redb begin_write")?;
            tx.open_table(TABLE).context("redb open_table")?;
            tx.commit().context("redb commit")?;
            Ok(Redb {
                db,
                batch,
                open: None,
                pending: 0,
            })
        }

        /// Run `f` on the table inside the open write transaction (or a new one), and
        /// commit when `writes` completes a batch.
        fn write<T>(
            &mut self,
            writes: u64,
            f: impl FnOnce(&mut redb::Table<&[u8], &[u8]>) -> Result<T>,
        ) -> Result<T> {
            let tx = match self.open.take() {
                Some(tx) => tx,
                None => self.db.begin_write().context("redb begin_write")?,
            };
            let out = {
                let mut t = tx.open_table(TABLE).context("redb open_table")?;
                f(&mut t)?
            };
            self.pending += writes;
            if self.pending >= self.batch {
                tx.commit().context("redb commit")?;
                self.pending = 0;
            } else {
                self.open = Some(tx);
            }
            Ok(out)
        }

        fn commit_open(&mut self) -> Result<()> {
            if let Some(tx) = self.open.take() {
                tx.commit().context("redb commit")?;
            }
            self.pending = 0;
            Ok(())
        }
    }

    impl Target for Redb {
        fn get(&mut self, key: u64) -> Result<Option<u64>> {
            if let Some(tx) = &self.open {
                let t = tx.open_table(TABLE).context("redb open_table")?;
                let v = t.get(be(key).as_slice()).context("redb get")?;
                return v.map(|g| from_be(g.value())).transpose();
            }
            let tx = self.db.begin_read().context("redb begin_read")?;
            let t = tx.open_table(TABLE).context("redb open_table")?;
            let v = t.get(be(key).as_slice()).context("redb get")?;
            v.map(|g| from_be(g.value())).transpose()
        }
        fn insert(&mut self, key: u64, value: u64) -> Result<()> {
            self.write(1, |t| {
                t.insert(be(key).as_slice(), be(value).as_slice())
                    .context("redb insert")?;
                Ok(())
            })
        }
        fn delete(&mut self, key: u64) -> Result<()> {
            self.write(1, |t| {
                t.remove(be(key).as_slice()).context("redb remove")?;
                Ok(())
            })
        }
        fn scan(&mut self, start: u64, len: u64) -> Result<(Option<u64>, u64)> {
            let k = be(start);
            let mut first = None;
            let mut n = 0;
            if let Some(tx) = &self.open {
                let t = tx.open_table(TABLE).context("redb open_table")?;
                for kv in t
                    .range(k.as_slice()..)
                    .context("redb range")?
                    .take(len as usize)
                {
                    let (key, _) = kv.context("redb range")?;
                    first.get_or_insert(from_be(key.value())?);
                    n += 1;
                }
                return Ok((first, n));
            }
            let tx = self.db.begin_read().context("redb begin_read")?;
            let t = tx.open_table(TABLE).context("redb open_table")?;
            for kv in t
                .range(k.as_slice()..)
                .context("redb range")?
                .take(len as usize)
            {
                let (key, _) = kv.context("redb range")?;
                first.get_or_insert(from_be(key.value())?);
                n += 1;
            }
            Ok((first, n))
        }
        fn bulk_insert(&mut self, pairs: &[(u64, u64)]) -> Result<()> {
            // One transaction for the bulk (a bulk is one write of the commit model).
            self.write(self.batch.max(1), |t| {
                for &(k, v) in pairs {
                    t.insert(be(k).as_slice(), be(v).as_slice())
                        .context("redb insert")?;
                }
                Ok(())
            })
        }
        fn delete_range(&mut self, lo: u64, hi: u64) -> Result<()> {
            self.write(self.batch.max(1), |t| {
                t.retain_in(be(lo).as_slice()..=be(hi).as_slice(), |_, _| false)
                    .context("redb retain_in")?;
                Ok(())
            })
        }
        fn flush(&mut self) -> Result<()> {
            self.commit_open()
        }
        fn close(mut self: Box<Self>) -> Result<()> {
            self.commit_open()
        }
    }
}

#[cfg(feature = "lmdb")]
mod lm {
    use super::*;
    use anyhow::Context;
    use heed::types::Bytes;
    use heed::{Database, Env, EnvOpenOptions};
    use std::ops::Bound;

    /// Map size: address space, not memory (the file grows as needed).
    const MAP_BYTES: usize = 1 << 40;

    pub struct Lmdb {
        /// The open write transaction of the batched variant. It borrows `env`, which is
        /// boxed (a stable address) and declared after it, so it is dropped (aborted)
        /// before the environment.
        open: Option<heed::RwTxn<'static>>,
        env: Box<Env>,
        db: Database<Bytes, Bytes>,
        batch: u64,
        pending: u64,
    }

    impl Lmdb {
        pub fn open(dir: &Path, batch: u64) -> Result<Lmdb> {
            // SAFETY: heed requires that the environment is not opened twice in one process
            // and that the file is not modified from outside; the bench opens each run
            // directory once, alone.
            let env = unsafe {
                EnvOpenOptions::new()
                    .map_size(MAP_BYTES)
                    .max_dbs(1)
                    .flags(heed::EnvFlags::NO_READ_AHEAD)
                    .open(dir)
                    .with_context(|| format!("opening LMDB in {}", dir.display()))?
            };
            let env = Box::new(env);
            let mut wtxn = env.write_txn().context("LMDB write_txn")?;
            let db: Database<Bytes, Bytes> = env
                .create_database(&mut wtxn, Some("index"))
                .context("LMDB create_database")?;
            wtxn.commit().context("LMDB commit")?;
            Ok(Lmdb {
                open: None,
                env,
                db,
                batch,
                pending: 0,
            })
        }

        fn write<T>(
            &mut self,
            writes: u64,
            f: impl FnOnce(&Database<Bytes, Bytes>, &mut heed::RwTxn<'static>) -> Result<T>,
        ) -> Result<T> {
            let mut tx = match self.open.take() {
                Some(tx) => tx,
                None => {
                    let tx = self.env.write_txn().context("LMDB write_txn")?;
                    // SAFETY: the transaction borrows the boxed environment, which lives
                    // at a stable address until `self` is dropped; the transaction is
                    // committed or dropped (field order) before it.
                    unsafe { std::mem::transmute::<heed::RwTxn<'_>, heed::RwTxn<'static>>(tx) }
                }
            };
            let out = f(&self.db, &mut tx)?;
            self.pending += writes;
            if self.pending >= self.batch {
                tx.commit().context("LMDB commit")?;
                self.pending = 0;
            } else {
                self.open = Some(tx);
            }
            Ok(out)
        }

        fn commit_open(&mut self) -> Result<()> {
            if let Some(tx) = self.open.take() {
                tx.commit().context("LMDB commit")?;
            }
            self.pending = 0;
            self.env.force_sync().context("LMDB sync")?;
            Ok(())
        }

        fn scan_in(
            db: &Database<Bytes, Bytes>,
            tx: &heed::RoTxn,
            start: u64,
            len: u64,
        ) -> Result<(Option<u64>, u64)> {
            let k = be(start);
            let range = (Bound::Included(&k[..]), Bound::Unbounded);
            let mut first = None;
            let mut n = 0;
            for kv in db
                .range(tx, &range)
                .context("LMDB range")?
                .take(len as usize)
            {
                let (key, _) = kv.context("LMDB range")?;
                first.get_or_insert(from_be(key)?);
                n += 1;
            }
            Ok((first, n))
        }
    }

    impl Target for Lmdb {
        fn get(&mut self, key: u64) -> Result<Option<u64>> {
            let k = be(key);
            if let Some(tx) = &self.open {
                let v = self.db.get(tx, &k[..]).context("LMDB get")?;
                return v.map(from_be).transpose();
            }
            let tx = self.env.read_txn().context("LMDB read_txn")?;
            let v = self.db.get(&tx, &k[..]).context("LMDB get")?;
            v.map(from_be).transpose()
        }
        fn insert(&mut self, key: u64, value: u64) -> Result<()> {
            self.write(1, |db, tx| {
                db.put(tx, &be(key)[..], &be(value)[..])
                    .context("LMDB put")?;
                Ok(())
            })
        }
        fn delete(&mut self, key: u64) -> Result<()> {
            self.write(1, |db, tx| {
                db.delete(tx, &be(key)[..]).context("LMDB delete")?;
                Ok(())
            })
        }
        fn scan(&mut self, start: u64, len: u64) -> Result<(Option<u64>, u64)> {
            if let Some(tx) = &self.open {
                return Self::scan_in(&self.db, tx, start, len);
            }
            let tx = self.env.read_txn().context("LMDB read_txn")?;
            Self::scan_in(&self.db, &tx, start, len)
        }
        fn bulk_insert(&mut self, pairs: &[(u64, u64)]) -> Result<()> {
            self.write(self.batch.max(1), |db, tx| {
                for &(k, v) in pairs {
                    db.put(tx, &be(k)[..], &be(v)[..]).context("LMDB put")?;
                }
                Ok(())
            })
        }
        fn delete_range(&mut self, lo: u64, hi: u64) -> Result<()> {
            self.write(self.batch.max(1), |db, tx| {
                let (l, h) = (be(lo), be(hi));
                let range = (Bound::Included(&l[..]), Bound::Included(&h[..]));
                db.delete_range(tx, &range).context("LMDB delete_range")?;
                Ok(())
            })
        }
        fn flush(&mut self) -> Result<()> {
            self.commit_open()
        }
        fn close(mut self: Box<Self>) -> Result<()> {
            self.commit_open()
        }
    }
}
