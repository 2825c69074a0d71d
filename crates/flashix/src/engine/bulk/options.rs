//! [`BulkOptions`]: the bulk index's own options.
//!
//! The serde field names are part of the on-disk format (the manifest's options record,
//! `crate::options::record`): renaming one is a format change, caught by the frozen record
//! test and the fixtures.

use serde::{Deserialize, Serialize};

/// Bulk index sub-options (Lehtonen 2014, §5). Defaults are the thesis's choices where it
/// makes one, else the cost model's (`m`) or flashix's (the delta layer, space reclaim).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BulkOptions {
    /// The range size parameter M (§5.1): every range holds M..2M−1 tuples. At least 1.
    /// `None` (the default): chosen by the cost model of `crate::cost::bulk` for the
    /// device and the tuning's expected entries and bulk sizes (§5.5).
    pub m: Option<u32>,
    /// Size of one multi-page write of new ranges and of one batched range read (§5.6,
    /// "batching range writes": 512 KiB); a whole number of pages. A range is never split
    /// across two writes, so one range (2M−1 tuples) may be larger than this.
    pub io_unit_bytes: u64,
    /// §5.6 "batching range writes": new ranges are packed into `io_unit_bytes` writes.
    /// Off: one write per range (Alg. 5 as printed).
    pub batch_writes: bool,
    /// §5.6 "batching range reads": the affected ranges of a sweep are read ahead, ranges
    /// contiguous on the device in one request and the others in one psync batch. Off:
    /// one read per range, one at a time.
    pub batch_reads: bool,
    /// §5.6 "batching ranges": consecutive affected ranges are merged before they are cut
    /// into new ranges, so that most new ranges hold exactly M. Off: each affected range
    /// is cut on its own (M-sized ranges and one of M..2M−1).
    pub batch_ranges: bool,
    /// Bytes of the differential layer (§5.6 "differential indexing", §3.3 "deferred
    /// bulks"): single-key upserts and deletes wait in memory (logged in the WAL) and are
    /// merged into the ranges by one Alg. 5 sweep when it is full or at a checkpoint.
    /// Taken from the memory budget. `Some(0)`: the faithful mode, where every single
    /// insert or delete is a bulk of one. `None` (the default): a quarter of the budget, at
    /// most 256 KiB, decided at creation.
    pub delta_bytes: Option<u64>,
    /// Never reuse freed range space: the main file only grows (the thesis's experiments,
    /// §6.1: "the garbage collection is not simulated"). Off: freed ranges return to the
    /// extent allocator after the checkpoint that stops naming them.
    pub append_only: bool,
    /// Tell the device (TRIM) when freed range space becomes reusable, so that a simulated
    /// SSD sees the deferred erases of §5.5.
    pub trim_freed: bool,
}

impl Default for BulkOptions {
    fn default() -> Self {
        BulkOptions {
            m: None,
            io_unit_bytes: 512 << 10,
            batch_writes: true,
            batch_reads: true,
            batch_ranges: true,
            delta_bytes: None,
            append_only: false,
            trim_freed: true,
        }
    }
}
