//! [`Stats`]: what an index reports about itself.

use crate::io::DeviceStats;
use crate::kind::EngineKind;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Buffer pool counters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BufferStats {
    /// Bytes of the pool's frames (`frames` x the page size).
    pub capacity_bytes: u64,
    /// Page frames in the pool.
    pub frames: u64,
    /// Pages resident in the pool now.
    pub resident: u64,
    /// Page fetches answered from the pool.
    pub hits: u64,
    /// Page fetches that read the page from the device.
    pub misses: u64,
    /// Pages evicted to make room.
    pub evictions: u64,
    /// Dirty pages written back (on eviction or checkpoint).
    pub writebacks: u64,
}

/// WAL counters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WalStats {
    /// Logical redo records appended.
    pub records: u64,
    /// Full-page before-images appended (in-place engines).
    pub page_images: u64,
    /// Bytes appended to the WAL (records, page images and their headers).
    pub bytes: u64,
    /// WAL syncs that had new bytes to make durable (group commits: a `Db::flush` with
    /// nothing new appended costs none).
    pub syncs: u64,
    /// Flushes that needed no sync of their own: another thread's flush, running at the
    /// same time, made their records durable (group commit).
    #[serde(default)]
    pub syncs_saved: u64,
    /// Checkpoints taken (each starts a new WAL generation).
    pub checkpoints: u64,
}

/// Everything an index reports: I/O, buffer, WAL, engine counters and memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// The engine of the index.
    pub engine: EngineKind,
    /// Page I/O on the index's device since open (and flash counters of a simulated one).
    pub device: DeviceStats,
    /// The buffer pool's counters since open.
    pub buffer: BufferStats,
    /// The WAL's counters since open.
    pub wal: WalStats,
    /// Engine counters (`node_splits`, `merges`, ...), named per STYLE.md: for display.
    /// What callers read back is typed in [`Stats::shape`].
    pub engine_counters: BTreeMap<String, u64>,
    /// Bytes of memory the index holds: buffer pool plus the engine's documented structures.
    /// At most [`crate::Options::buffer_pool_bytes`] (the budget) plus
    /// [`crate::MEMORY_SLACK_BYTES`] between operations: every engine charges its
    /// structures to the budget and gives its buffer pool the rest.
    pub memory_bytes: u64,
    /// The structure's shape, typed: levels of a stepped engine, leaves of a tree.
    pub shape: Shape,
}

/// The shape of an index, for callers that act on it (the benchmark's aging rule).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shape {
    /// The levels below the in-memory one of an engine of stepped levels (FD-tree levels
    /// `L1..`, LSM components `C1..`), by level; empty for other engines.
    pub levels: Vec<LevelShape>,
    /// Leaves of a B+-tree-like engine (`None` where the engine has no leaf count).
    pub leaves: Option<u64>,
    /// Leaf splits since open (`None` where the engine does not split leaves).
    pub leaf_splits: Option<u64>,
    /// Entries the engine's write buffer holds before it must write to the device: the
    /// PIO B-tree's OPQ, the FD-tree's head tree, the LSM's C0, the bulk index's delta,
    /// the FBX-tree's log buffer (about: its pages of index units). `None` for an engine
    /// without one (the B+-tree writes a dirty page when the pool evicts it).
    #[serde(default)]
    pub write_buffer_entries: Option<u64>,
}

/// One level of a stepped engine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LevelShape {
    /// Level number (1 is the level below the in-memory head tree or C0).
    pub level: u64,
    /// Entries it holds.
    pub entries: u64,
    /// Entries it can hold before it is merged down.
    pub capacity: u64,
}

/// Engine counters from `(name, value)` pairs.
pub(crate) fn counters(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|&(k, v)| (k.to_string(), v)).collect()
}
