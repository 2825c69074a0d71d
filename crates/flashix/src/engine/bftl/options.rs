//! [`BftlOptions`]: BFTL's own options.
//!
//! The serde field names are part of the on-disk format (the manifest's options record,
//! `crate::options::record`): renaming one is a format change, caught by the frozen record
//! test and the fixtures.

use serde::{Deserialize, Serialize};

/// BFTL sub-options (Wu, Kuo, Chang, "An efficient B-tree layer for flash-memory storage
/// systems", RTCSA 2003 / ACM TECS 2007; the d-IPL paper's §2.1.1 and §6.3). Nodes are
/// logical: made of index units scattered over pages, so `node_bytes` only sets the fanout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BftlOptions {
    /// Logical node size in bytes; the fanout is `(node_bytes - 32) / 16` entries (the
    /// d-IPL paper's §6.1: 8 KiB nodes, leaf fanout 510). At least 96 (4 entries).
    pub node_bytes: u64,
    /// Index units the reservation buffer holds before it is committed to flash. `None`:
    /// one node's worth (the fanout), the d-IPL paper's §2.1.1 reading of BFTL ("flushed
    /// ... when a node-sized buffer slot becomes full").
    pub reservation_units: Option<u32>,
    /// Compaction threshold `c`: a node whose node translation table list holds more than
    /// `c` pages is compacted. `None`: BFTL's bound of 4 list entries (Wu et al.'s
    /// experiments, where a compacted node fits one page) plus the extra pages a full
    /// compacted node needs here, so that a node has room for 4 pages of scattered units
    /// beyond its compacted form (8 for 8 KiB nodes on 2 KiB pages). At least one more
    /// than the pages of a full compacted node.
    pub c: Option<u32>,
}

impl Default for BftlOptions {
    fn default() -> Self {
        BftlOptions {
            node_bytes: 8192,
            reservation_units: None,
            c: None,
        }
    }
}
