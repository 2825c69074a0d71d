//! [`LsmOptions`]: the LSM-tree's own options.
//!
//! The serde field names are part of the on-disk format (the manifest's options record,
//! `crate::options::record`): renaming one is a format change, caught by the frozen record
//! test and the fixtures.

use serde::{Deserialize, Serialize};

/// LSM-tree sub-options (FD-tree paper, App. D: "the size ratio between two tree components
/// the same as the k value in FD-tree", "the smallest tree the locality area size").
/// Defaults equal the FD-tree's options' so that the two engines compare like for like.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LsmOptions {
    /// Size ratio between adjacent components, |C(i+1)| = k·|C(i)|. At least 2. `None`
    /// (the default): the FD-tree's k for the same index (App. D), from the cost model.
    pub k: Option<u32>,
    /// Maximum size of C0, the in-pool B+-tree, in bytes (the locality area, 512 KiB). At
    /// least two pages.
    pub c0_bytes: u64,
    /// Size of one multi-page I/O request of merges and range scans (512 KiB); a whole
    /// number of pages.
    pub io_unit_bytes: u64,
    /// A delete searches first and writes a tombstone only for a present key, as the
    /// FD-tree paper's baselines delete ("a deletion is implemented by a search followed
    /// by an insertion", §4). Off by default: a blind tombstone, no read.
    #[serde(default)]
    pub search_before_delete: bool,
    /// Run the rolling merges a step per mutation (O'Neil et al. 1996: the merge cursor
    /// advances while inserts go on; the FD-tree's deamortized merge, §3.4 there): a full
    /// C0 is frozen and merged while a new C0 takes the mutations, each advancing the merge
    /// by its work left over the room left in the new C0. Off: the merge runs to
    /// completion inside the insert that filled C0. On by default; absent in records
    /// written before it existed (on). The trade-off: inserts no longer wait for a
    /// merge's I/O (the longest insert is several times shorter, and insert-only phases
    /// come closer to the device limit), but in a mix of searches and writes a point read
    /// may wait behind a merge request in flight, which shows in the mix's tail latency
    /// most in phases shorter than one turnover of C0. The merge is spread evenly over
    /// C0's fill and published at the next freeze; the bench measures both sides.
    #[serde(default = "deamortize_default")]
    pub deamortize: bool,
}

fn deamortize_default() -> bool {
    true
}

impl Default for LsmOptions {
    fn default() -> Self {
        // The FD-tree's defaults (a test in `crate::options` keeps them equal).
        LsmOptions {
            k: None,
            c0_bytes: 512 << 10,
            io_unit_bytes: 512 << 10,
            search_before_delete: false,
            deamortize: true,
        }
    }
}
