//! [`FbxOptions`]: the FBX-tree's own options, defaulting to the paper's choices (§4.2, §5,
//! §5.3).
//!
//! The serde field names are part of the on-disk format (the manifest's options record,
//! `crate::options::record`): renaming one is a format change.

use crate::cost::logclean::CleanPolicy;
use serde::{Deserialize, Serialize};

/// FBX-tree sub-options.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FbxOptions {
    /// Most entries a leaf holds (§5: "the order of the leaf node is 100"). A leaf whose
    /// entries at its last rebuild plus the log entries since could exceed it is rebuilt
    /// and split (or compacted). `None`: 100, or what one page holds when that is less
    /// (27 on 512-byte pages).
    pub leaf_order: Option<u32>,
    /// Most separators an inner node holds (§5: 500). `None`: 500, or what one page holds
    /// when that is less (the paper's entries were 8 bytes, ours are 17-byte units: a
    /// 4 KiB page holds 238).
    pub inner_order: Option<u32>,
    /// Pages of the log buffer (§4.2: "1M space, which can contain 2^8 log pages"), taken
    /// from the memory budget. `None`: 256, or a quarter of the budget's pages when that
    /// is less (at least one).
    pub log_buffer_pages: Option<u32>,
    /// Bits of a key that choose its log-buffer page (§4.2: "the first 8 bit of cell
    /// number"); 0 turns clustering off (one stream of log pages, E7's "original").
    pub cluster_bits: u32,
    /// Leading key bits skipped before the cluster bits (a moving-object key's partition
    /// number comes first; `crate::mobject` sets it).
    pub cluster_skip_bits: u32,
    /// When a leaf's log list is cleaned (§4.4).
    pub clean: CleanPolicy,
    /// Leaves are logs (the FBX-tree). `false`: every node, leaves included, is appended
    /// whole at each change: §3.1's "Sequential B-Tree".
    pub leaf_logging: bool,
    /// Range queries read the union of the leaves' log pages once (§4.3, Algorithm 1).
    /// `false`: leaf by leaf, as a B+-tree walks its leaves (E7's "original").
    pub batched_scans: bool,
    /// Pages of a segment: the file grows and is reused in segments, written from start to
    /// end (module doc, Space).
    pub segment_pages: u32,
    /// The segment cleaner keeps the file's pages at most this multiple of the live pages
    /// (plus a few segments of slack).
    pub space_amp_limit: f64,
}

impl Default for FbxOptions {
    fn default() -> Self {
        FbxOptions {
            leaf_order: None,
            inner_order: None,
            log_buffer_pages: None,
            cluster_bits: 8,
            cluster_skip_bits: 0,
            clean: CleanPolicy::default(),
            leaf_logging: true,
            batched_scans: true,
            segment_pages: 256,
            space_amp_limit: 2.0,
        }
    }
}

impl FbxOptions {
    /// §3.1's "Sequential B-Tree": every node appended whole, no leaf logging.
    pub fn sequential_btree() -> Self {
        FbxOptions {
            leaf_logging: false,
            ..FbxOptions::default()
        }
    }
}
