//! Peer engines, each behind a cargo feature of `flashix-bench` (`rocksdb`,
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
//! Threads (`flashix bench --threads N`): every peer serves concurrent readers; writers go
//! as each store's API allows. RocksDB and fjall take writes from any number of threads at
//! once (their own write groups and journal locks order them). redb and LMDB have a single
//! writer: a write transaction holds the store's writer lock (redb's `begin_write` waits
//! for the open write transaction, LMDB's `mdb_txn_begin` for its writer mutex), so their
//! write transactions are serialized by the store, one at a time, while readers go on
//! beside them on snapshots. The batched variants keep a thread's open transaction in that
//! thread's [`Session`](crate::subjects::Session) (an LMDB write transaction must end on the
//! thread that began it): while one thread holds a batch open, the other threads' writes
//! wait for its commit, after [`BATCH_WRITES`] of its writes or when it finishes its
//! stream; a thread reads through its own open transaction, so it sees its own writes.
//!
//! fjall, redb and LMDB read through the page cache: the runner runs their measured phases
//! in a memory cgroup where the machine allows, else marks their results "page cache
//! unbounded" ([`crate::subjects::cgroup`]). For the operations the cgroup's limit follows the heap,
//! leaving [`PeerKind::page_cache_share`] of page cache beside it: own cache, memtables and
//! page cache add up to the budget.

#[cfg(feature = "fjall")]
mod fj;
#[cfg(feature = "lmdb")]
mod lm;
#[cfg(feature = "redb")]
mod rd;
#[cfg(feature = "rocksdb")]
mod rocks;

use crate::subjects::{Target, TargetInfo};
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
    /// measured operations ([`crate::subjects::cgroup::MemoryCgroup::follow_heap`]), so that its own
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
