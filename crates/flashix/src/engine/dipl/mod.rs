//! The d-IPL B+-tree (`EngineKind::DiplBTree`; Na, Lee, Moon, TKDE 2011, §3-§5) on raw NAND
//! flash ([`crate::sim::Nand`]), built on the in-page logging kit
//! (`crate::kit::inpage`: formats, buffer, tree operations, durability) with the
//! `Dipl` policy (`policy.rs`). It differs from the IPL B+-tree in:
//!
//! # Scheme
//! - **Dynamic log area** (§3.2): a block holds its regular nodes from page 0 and its log
//!   area right after them, to the end of the block; a block never holds more than
//!   `pages_per_block / node_pages - 1` nodes, so the log area keeps at least one node's
//!   worth of sectors.
//! - **Ghost nodes** (N.a, §3.2): a node born from a split stays in its origin's block as
//!   a ghost: its base is the record `GhostCreate(origin, key, sector)`, meaning "the
//!   origin's entries >= key as of the origin's log sector `sector`", whose last record is
//!   the origin's `SplitRemove(key)`. The two sectors are written together to the block's
//!   log area at the split (**Rule 3**); Rules 1 and 2 are the IPL ones.
//! - **Block split before node split** (B.d, §4.2, Algorithm 2): a full node in a full
//!   block first splits the block: the nodes as flash has them (base plus log records) are
//!   written to two fresh blocks, the first `d` and the remaining `d + 1` of the `2d + 1`;
//!   the old block is erased.
//! - **Block cleansing** (§4.3, Algorithm 3): a log sector that finds the log area full
//!   first rewrites the block's nodes, each its base plus the block's log records (ghosts
//!   embodied), into a fresh block, and is then written to its log area (Fig. 10);
//!   in-memory log sectors of other buffered nodes stay in the buffer; empty nodes whose
//!   parent is buffered and keeps another child are released there (§4.4: underflow
//!   allowed, no node merges), and a block left empty is released.
//! - **Blocks of siblings** (B.b): the root has a block of its own; every other block holds
//!   consecutive nodes of one level. A root split puts the new root in a new block.
//! - **LLSD and LSLM** (§5.1): every log sector carries the LLSD (the last log sector of
//!   every member of the block) and its owner's LSLM (a bitmap of its earlier sectors). A
//!   node read reads the page of its last sector, follows the LSLM and reads only the other
//!   pages holding its sectors. Recovery rebuilds each member's sector list from the LLSD of
//!   the block's last sector and the members' LSLMs.
//! - **Ghost fetch** (§5.2): a ghost's base is its origin's version as of the split,
//!   computed from the origin's base and its log sectors up to the split's sector.
//! - **Global cleansing** (§5.3): [`DiplBTree::global_cleansing`] cleanses every block that
//!   holds log sectors, so later reads need no log.
//!
//! # Invariants (checked by `check_integrity`)
//! The kit's (NAND rules; blocks partition the NAND; B+-tree order and fences; frames
//! equal flash plus their log), and: (B.b) the root's block holds only the root, and the
//! members of every block are consecutive nodes of one level in member order; a block
//! holds at most `pages_per_block / node_pages - 1` nodes; regular nodes lie before the log
//! area; every ghost has a log sector; the LSLM of each node's last sector names exactly
//! its earlier sectors (checked on every read).
//!
//! # Durability and memory
//! The kit's: logical redo WAL, checkpoints switching the manifest (state tag `"Dipl"`),
//! erases of checkpointed blocks deferred to the next checkpoint, recovery from the LLSD
//! and LSLM and by rebuilding blocks with programs newer than the checkpoint, then WAL
//! replay.
//!
//! # Thread safety
//! Served to many threads by `kit::parallel::Parallel`: one operation at a time, reads included,
//! since its reads go through the in-page logging core's node buffer on raw NAND. A flush takes its WAL ticket under the lock and syncs outside it, so
//! concurrent flushes share one sync (group commit); a range scan's batches interleave with
//! other threads' operations (`crate::Db`'s guarantees).

mod options;
pub use options::DiplOptions;

mod policy;
use policy::Dipl;

use crate::durable::Logged;
use crate::durable::Manifest;
use crate::error::Result;
use crate::io::Storage;
use crate::kit::api::{SerialEngine, Shareable};
use crate::kit::inpage::{self, core_engine_methods, Config, Core};
use crate::settings::Settings;

/// The d-IPL B+-tree engine.
pub struct DiplBTree {
    core: Core<Dipl>,
}

impl DiplBTree {
    /// A new index (formats the NAND over `storage.device`).
    pub fn create(storage: Storage, s: Settings, o: DiplOptions) -> Result<DiplBTree> {
        let cfg = config(&o);
        Ok(DiplBTree {
            core: Core::create(storage, s, &cfg)?,
        })
    }

    /// Reopen: the last checkpoint, then the WAL replayed.
    pub fn open(
        storage: Storage,
        manifest: Manifest,
        s: Settings,
        o: DiplOptions,
    ) -> Result<DiplBTree> {
        let cfg = config(&o);
        let (core, ops) = Core::open(storage, manifest, s, &cfg)?;
        let mut t = DiplBTree { core };
        Logged::recover(&mut t.core, &ops)?;
        Ok(t)
    }

    /// Global cleansing (§5.3): every block with log sectors is cleansed.
    pub fn global_cleansing(&mut self) -> Result<()> {
        self.core.global_cleansing()
    }

    /// Reset the NAND and engine counters (the paper's measurements start from an index
    /// as built).
    pub fn reset_counters(&mut self) {
        self.core.reset_counters();
    }
}

/// Check the d-IPL B+-tree's options (the NAND geometry they imply).
pub fn validate(s: &Settings, o: &DiplOptions) -> Result<()> {
    inpage::validate::<Dipl>(s, &config(o))
}

/// The kit's numbers from the d-IPL options (no fixed log area).
fn config(o: &DiplOptions) -> Config {
    Config {
        node_bytes: o.node_bytes,
        buffer_frames: o.buffer_frames,
        log_area_bytes: 0,
        nand_blocks: o.nand_blocks,
        pages_per_block: o.pages_per_block,
    }
}

/// Reads run one at a time (module doc, Thread safety).
impl Shareable for DiplBTree {
    const PARALLEL_GETS: bool = false;
    const PARALLEL_SCANS: bool = false;
}

impl SerialEngine for DiplBTree {
    core_engine_methods!();
}
