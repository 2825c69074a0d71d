//! [`IplOptions`]: the IPL B+-tree's own options.
//!
//! The serde field names are part of the on-disk format (the manifest's options record,
//! `crate::options::record`): renaming one is a format change, caught by the frozen record
//! test and the fixtures.

use serde::{Deserialize, Serialize};

/// IPL B+-tree sub-options (d-IPL paper §2.2: in-page logging with a fixed log area per
/// erase block, Lee and Moon, SIGMOD 2007). The NAND page is the index's `page_size`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IplOptions {
    /// Node size in bytes, a whole number of NAND pages (§6.1: 8 KiB).
    pub node_bytes: u64,
    /// Buffer frames (one node each). `None`: `buffer_pool_bytes / node_bytes`. At least 8.
    pub buffer_frames: Option<u32>,
    /// The fixed log area at the end of every erase block, in bytes: whole pages (IPL's
    /// 8 KiB of 16 log sectors per 128 KiB block).
    pub log_area_bytes: u64,
    /// Erase blocks of the simulated NAND when the device is not `RawNand` (whose config
    /// gives the geometry), e.g. `Db::create_on` with `DeviceSpec::Memory`.
    pub nand_blocks: u32,
    /// Pages per erase block in that case (§6.1: 64 pages of 2 KiB = 128 KiB).
    pub pages_per_block: u32,
}

impl Default for IplOptions {
    fn default() -> Self {
        IplOptions {
            node_bytes: 8192,
            buffer_frames: None,
            log_area_bytes: 8192,
            nand_blocks: 1024,
            pages_per_block: 64,
        }
    }
}
