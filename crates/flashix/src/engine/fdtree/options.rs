//! [`FdTreeOptions`]: the FD-tree's own options.
//!
//! The serde field names are part of the on-disk format (the manifest's options record,
//! `crate::options::record`): renaming one is a format change, caught by the frozen record
//! test and the fixtures.

use serde::{Deserialize, Serialize};

/// FD-tree sub-options (FD-tree paper §3.2, §3.4, App. D).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FdTreeOptions {
    /// Logarithmic size ratio between adjacent levels, |L(i+1)| = k·|L(i)| (§3.2). Must
    /// satisfy `2 <= k < f - 1`, f the entries of a page (§3.2: "obtaining k < f - 1").
    /// `None` (the default): the cost model's answer (§4, App. C.3,
    /// [`crate::cost::fdtree::choose`]) for the index's page size, head tree and buffer
    /// pool and the [`crate::Options::tuning`] (device, expected entries, search share), chosen
    /// when the index is created and saved in its manifest, and re-chosen for the entries
    /// the tree holds whenever they are all in one run that has reached its level's
    /// capacity (the tree outgrew the size it was tuned for; `kit::sorted::tune`).
    /// A given `k` stays fixed.
    pub k: Option<u32>,
    /// Maximum size of the head tree L0 in bytes: the flash "locality area" (§3.1 P2;
    /// App. D: 512 KiB). At least two pages; at most a quarter of the memory budget
    /// (`buffer_pool_bytes`, whole pages): a larger value is lowered to that when the index
    /// is created, and the manifest saves the value used.
    pub head_tree_bytes: u64,
    /// Deamortized merge with two head trees (§3.4).
    pub deamortize: bool,
    /// Size of one multi-page I/O request of merges and range scans (App. D: 512 KiB);
    /// a whole number of pages.
    pub io_unit_bytes: u64,
}

impl Default for FdTreeOptions {
    fn default() -> Self {
        FdTreeOptions {
            k: None,
            head_tree_bytes: 512 << 10,
            deamortize: true,
            io_unit_bytes: 512 << 10,
        }
    }
}
