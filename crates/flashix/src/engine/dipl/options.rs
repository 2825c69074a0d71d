//! [`DiplOptions`]: the d-IPL B+-tree's own options.
//!
//! The serde field names are part of the on-disk format (the manifest's options record,
//! `crate::options::record`): renaming one is a format change, caught by the frozen record
//! test and the fixtures.

use serde::{Deserialize, Serialize};

/// d-IPL B+-tree sub-options (Na, Lee, Moon, TKDE 2011, §3-§5). The NAND page is the
/// index's `page_size`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiplOptions {
    /// Node size in bytes, a whole number of NAND pages (§6.1: 8 KiB).
    pub node_bytes: u64,
    /// Buffer frames (one node each). `None`: `buffer_pool_bytes / node_bytes`. At least 8.
    pub buffer_frames: Option<u32>,
    /// Erase blocks of the simulated NAND when the device is not `RawNand` (whose config
    /// gives the geometry).
    pub nand_blocks: u32,
    /// Pages per erase block in that case (§6.1: 64).
    pub pages_per_block: u32,
}

impl Default for DiplOptions {
    fn default() -> Self {
        DiplOptions {
            node_bytes: 8192,
            buffer_frames: None,
            nand_blocks: 1024,
            pages_per_block: 64,
        }
    }
}
