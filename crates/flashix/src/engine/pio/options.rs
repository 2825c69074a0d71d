//! [`PioOptions`]: the PIO B-tree's own options.
//!
//! The serde field names are part of the on-disk format (the manifest's options record,
//! `crate::options::record`): renaming one is a format change, caught by the frozen record
//! test and the fixtures.

use serde::{Deserialize, Serialize};

/// PIO B-tree sub-options (Roh et al., VLDB 2011). Defaults: the paper's experimental
/// settings for `pio_max`, `speriod` and `bcnt` (§4.1: "PioMax, speriod, and bcnt were
/// fixed at 64, 5000, and 5000"), and the cost model's choice (§3.6, Eq. 10;
/// `PioOptions::resolved`) for `leaf_segments` and `opq_bytes` left `None`, made
/// when the index is created for the [`crate::Options::tuning`] and saved in its manifest.
///
/// **Memory.** As in the paper (§4.1.3: "after allocating the main memory to OPQ and
/// LSMap, the rest of main memory space was allocated to the buffer pool"), the PIO
/// B-tree's [`crate::Options::buffer_pool_bytes`] is its memory budget `M`: the OPQ takes
/// `opq_bytes` of it and the buffer pool gets the rest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PioOptions {
    /// Leaf node size L in leaf segments (pages), §3.2.2, 1..=64. Internal nodes are one
    /// page. `None`: the cost model's choice.
    pub leaf_segments: Option<u32>,
    /// Memory of the operation queue (OPQ, §3.1.3) in bytes, taken from the memory
    /// budget; an OPQ entry takes [`PIO_OPQ_ENTRY_BYTES`]. At least two entries.
    /// `None`: the cost model's choice.
    pub opq_bytes: Option<u64>,
    /// Largest number of requests in one psync I/O call (`PioMax`, §3.1.1). Default 64.
    /// 1..=4096.
    pub pio_max: u32,
    /// Sort period: the OPQ's appended region is sorted and merged into its sorted region
    /// every `speriod` appends (§3.1.3). Default 5000. At least 1.
    pub speriod: u32,
    /// Batch count: entries one batch update (`bupdate`) takes from a full OPQ
    /// (§3.1.3). Default 5000. At least 1.
    pub bcnt: u32,
}

/// Bytes of one OPQ entry in memory: key, value and operation flag (§3.1.3, Figure 7).
pub const PIO_OPQ_ENTRY_BYTES: u64 = 24;

impl Default for PioOptions {
    fn default() -> Self {
        PioOptions {
            leaf_segments: None,
            opq_bytes: None,
            pio_max: 64,
            speriod: 5000,
            bcnt: 5000,
        }
    }
}
