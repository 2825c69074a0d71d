//! [`LaTreeOptions`]: the LA-tree's own options.
//!
//! The serde field names are part of the on-disk format (the manifest's options record,
//! `crate::options::record`): renaming one is a format change, caught by the frozen record
//! test and the fixtures.

use serde::{Deserialize, Serialize};

/// LA-tree sub-options (Agrawal et al., VLDB 2009; Lehtonen 2014, §4.4 and §6.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaTreeOptions {
    /// Node size in bytes: 0 (the default) for one page, or the page size. Nodes are one
    /// page; the thesis's 16 KiB nodes (§6.1) are `page_size(16384)`.
    pub node_bytes: u64,
    /// Buffers are attached to every K-th level, the root's included (K ≥ 1).
    pub k: u32,
    /// Largest size of one buffer, in pages: a buffer this full is emptied whatever ADAPT
    /// says (bounds memory and scan cost of insert-only workloads).
    pub max_buffer_pages: u64,
    /// ADAPT (thesis Table 4.1) decides when a buffer is emptied. Off: only full buffers
    /// are emptied (fixed buffer sizes, for ablation).
    pub adapt: bool,
}

impl Default for LaTreeOptions {
    fn default() -> Self {
        LaTreeOptions {
            node_bytes: 0,
            k: 2,
            max_buffer_pages: 64,
            adapt: true,
        }
    }
}
