//! [`Settings`]: what every engine gets from the options besides its own sub-options (the
//! common settings as numbers, the device, the effective tuning and the manifest's options
//! record), and [`DeviceSpec`]. A leaf under the engines: engines read their settings here
//! and never the `Options` aggregate, which names every engine's options type.

use crate::cost::Tuning;
use crate::durable::{OptionsRecord, PagerConfig};
use crate::error::{Error, Result};
use crate::kind::EngineKind;
use serde::{Deserialize, Serialize};

/// Where an index's pages live.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum DeviceSpec {
    /// One file `data` in the index directory; `direct_io` asks for `O_DIRECT` (the
    /// default, so the page cache does not help; contract point 5 of docs/design.md).
    File {
        /// Open the file with `O_DIRECT` (falls back to buffered I/O where the file
        /// system refuses it).
        direct_io: bool,
    },
    /// Pages in memory (tests). Such an index cannot be reopened by [`crate::Db::open`].
    Memory,
    /// A simulated SSD ([`crate::sim::SimSsd`]: an FTL over simulated NAND) whose flash
    /// lives in the file `nand` of the index directory. The page size must be a multiple
    /// of the NAND page.
    SimulatedSsd(crate::sim::SimSsdConfig),
    /// Raw simulated NAND flash in the file `nand` of the index directory (IPL and d-IPL
    /// B+-trees build their [`crate::sim::Nand`] on it; the device's page is the NAND page).
    RawNand(crate::sim::NandConfig),
}

/// The settings an engine is created or opened with.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Page (node) size in bytes.
    pub page_size: usize,
    /// The memory budget in bytes.
    pub buffer_pool_bytes: u64,
    /// Where the pages live.
    pub device: DeviceSpec,
    /// WAL size (bytes) after which the index takes a checkpoint.
    pub checkpoint_wal_bytes: u64,
    /// What the cost models tune unset parameters for (the given tuning or the reference).
    pub tuning: Tuning,
    /// The engine these settings are for.
    pub engine: EngineKind,
    /// The options record every manifest of the index carries (the resolved options).
    pub record: OptionsRecord,
}

impl Settings {
    /// The Pager's configuration: the budget less `reserved` bytes that the engine keeps for
    /// structures of its own (the PIO B-tree's OPQ and LSMap).
    pub fn pager_config(&self, min_frames: usize, reserved: u64) -> PagerConfig {
        PagerConfig {
            page_size: self.page_size,
            pool_bytes: self.buffer_pool_bytes.saturating_sub(reserved),
            budget_bytes: self.buffer_pool_bytes,
            checkpoint_wal_bytes: self.checkpoint_wal_bytes,
            min_frames,
        }
    }

    /// The FD-tree cost model's workload ([`crate::cost::fdtree::FdTreeWorkload`]) for an
    /// FD-tree or LSM-tree whose head tree (or LSM C0) has `head_tree_bytes` and whose pages
    /// hold `entries_per_page` entries: the tuning's expected entries (at least 1) and
    /// search share, the page size and the buffer pool. The engines give their head tree a
    /// capacity of half its pages times f (a tree of half-full leaves stays within its
    /// bytes), so the model is given half the head tree's bytes: its |L_0| is then the
    /// engine's.
    pub fn fdtree_model_workload(
        &self,
        head_tree_bytes: u64,
        entries_per_page: u64,
    ) -> crate::cost::fdtree::FdTreeWorkload {
        let t = &self.tuning;
        let mut w = crate::cost::fdtree::FdTreeWorkload::new(
            t.expected_entries.max(1),
            t.search_fraction,
            self.page_size,
            entries_per_page,
        );
        w.head_tree_bytes = head_tree_bytes / 2;
        w.buffer_bytes = self.buffer_pool_bytes;
        w
    }

    /// The `k` of an FD-tree or LSM-tree whose `k` is unset: the cost model's choice
    /// (FD-tree paper, App. C.3; [`crate::cost::fdtree::choose`]) for
    /// [`Settings::fdtree_model_workload`] on the tuning's device. The LSM-tree takes the
    /// FD-tree's rule with its C0 as the head tree (App. D: "the same as the k value in
    /// FD-tree").
    pub fn fdtree_model_k(&self, head_tree_bytes: u64, entries_per_page: u64) -> Result<u32> {
        let w = self.fdtree_model_workload(head_tree_bytes, entries_per_page);
        let c = crate::cost::fdtree::choose(&self.tuning.device, &w).map_err(|e| {
            Error::InvalidOptions(format!("choosing k with the FD-tree cost model: {e}"))
        })?;
        u32::try_from(c.k)
            .map_err(|_| Error::InvalidOptions(format!("cost model chose k = {}", c.k)))
    }
}
