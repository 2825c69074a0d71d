//! [`Stats`]: what an index reports about itself.

use crate::io::DeviceStats;
use crate::kind::EngineKind;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Buffer pool counters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BufferStats {
    pub capacity_bytes: u64,
    pub frames: u64,
    pub resident: u64,
    pub hits: u64,
    pub misses: u64,
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
    pub bytes: u64,
    pub syncs: u64,
    pub checkpoints: u64,
}

/// Everything an index reports: I/O, buffer, WAL, engine counters and memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    pub engine: EngineKind,
    pub device: DeviceStats,
    pub buffer: BufferStats,
    pub wal: WalStats,
    /// Engine counters (`node_splits`, `merges`, ...), named per STYLE.md.
    pub engine_counters: BTreeMap<String, u64>,
    /// Bytes of memory the index holds: buffer pool plus the engine's documented structures.
    pub memory_bytes: u64,
}

/// Engine counters from `(name, value)` pairs.
pub(crate) fn counters(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|&(k, v)| (k.to_string(), v)).collect()
}
