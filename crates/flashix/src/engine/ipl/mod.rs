//! The IPL B+-tree (`EngineKind::IplBTree`; d-IPL paper §2.2, after Lee and Moon's
//! In-Page Logging, SIGMOD 2007, and Na, Moon, Lee, DASFAA 2009) on raw NAND flash
//! ([`crate::sim::Nand`]), and the core it shares with the d-IPL B+-tree
//! ([`crate::engine::dipl`]).
//!
//! # Scheme
//! Every erase block holds node slots (data pages, `node_bytes` each) followed by a fixed
//! log area (`IplOptions::log_area_bytes`, 8 KiB = 16 log sectors by default). A buffer
//! frame that becomes dirty gets an in-memory 512-byte log sector collecting physiological
//! records of its changes; the sector (never the node) is written to the log area of the
//! node's block when the frame is evicted (Rule 1) or the sector is full (Rule 2). A node
//! read reads its data pages and the whole written part of its block's log area and applies
//! its records. A block whose log area is full is **merged**: every node's current version
//! is written to a fresh block and the old one is erased.
//!
//! A node split logs `SplitRemove` in the old node. The new node goes to a free slot of the
//! old node's block, else of the current allocation block, else of a new block. If its slot
//! can still be programmed (no log sector written to that block yet) its image is written
//! there; otherwise the slot has evaporated (§2.3.2: pages before a written log sector can
//! no longer be programmed) and the node is written as **physical** log records (`Init`
//! then one `Put` per entry) in that block's log area — the frequent log overflow of §2.3.1.
//! Deletions are log records; underflow is allowed and nodes are not merged; an empty node
//! is released at its block's merge when its parent is buffered and keeps another child.
//!
//! # On-flash format
//! Node images, log sectors and records: [`format`]. The block table (members, log area
//! position, sectors written) and the root are in the manifest at each checkpoint.
//!
//! # Invariants (checked by `check_integrity`)
//! 1. The NAND rules hold ([`crate::sim::Nand::check`]): erase before program, in-order
//!    pages, at most 4 partial programs per page.
//! 2. Blocks in use, pending erase and free partition the NAND; each node is a member of
//!    exactly one block; a block holds at most its slots; images lie before the log area.
//! 3. B+-tree order: keys strictly increase in a node and lie within the fences of its
//!    parent; levels decrease by one; internal nodes have at least one child; every
//!    stored node is reachable exactly once; the entry count matches the leaves.
//! 4. Each buffered node equals its flash version (base + log sectors) plus its in-memory
//!    log sector.
//!
//! # Durability
//! Logical redo WAL with group commit on `flush`, checkpoints that make flash current and
//! switch the manifest, deferred erase of blocks the last checkpoint references, and
//! recovery that rebuilds blocks holding programs newer than the checkpoint: [`durable`].
//!
//! # Memory
//! `buffer_frames` frames of one node plus one log sector each, the block table, and the
//! node -> block and node -> parent maps (a few dozen bytes per node).

mod options;
pub use options::IplOptions;
mod check;
mod core;
mod durable;
mod flash;
pub mod format;
mod ops;

pub(crate) use self::core::Core;
pub use self::core::Flavor;
pub use durable::validate;

use crate::durable::Logged;
use crate::durable::Manifest;
use crate::engine::Engine;
use crate::error::Result;
use crate::io::Storage;
use crate::options::Options;

/// The `Engine` methods of an engine that wraps a [`Core`] in a field `core`.
macro_rules! core_engine_methods {
    () => {
        fn insert(&mut self, key: u64, value: u64) -> $crate::error::Result<()> {
            $crate::durable::Logged::logged(
                &mut self.core,
                $crate::durable::LogicalOp::Insert(key, value),
            )
        }
        fn delete(&mut self, key: u64) -> $crate::error::Result<()> {
            $crate::durable::Logged::logged(&mut self.core, $crate::durable::LogicalOp::Delete(key))
        }
        fn get(&mut self, key: u64) -> $crate::error::Result<Option<u64>> {
            self.core.get(key)
        }
        fn scan(
            &mut self,
            cur: &mut $crate::engine::RangeCursor,
            out: &mut Vec<(u64, u64)>,
        ) -> $crate::error::Result<()> {
            self.core.scan(cur, out)
        }
        fn bulk_insert(&mut self, sorted: &[(u64, u64)]) -> $crate::error::Result<()> {
            $crate::durable::Logged::bulk_logged(&mut self.core, sorted)
        }
        fn delete_range(&mut self, lo: u64, hi: u64) -> $crate::error::Result<()> {
            $crate::durable::Logged::logged(
                &mut self.core,
                $crate::durable::LogicalOp::DeleteRange(lo, hi),
            )
        }
        fn flush(&mut self) -> $crate::error::Result<()> {
            self.core.log.sync()
        }
        fn close(&mut self) -> $crate::error::Result<()> {
            self.core.checkpoint()
        }
        fn stats(&self) -> $crate::stats::Stats {
            self.core.stats()
        }
        fn check_integrity(&mut self) -> $crate::error::Result<()> {
            self.core.check()
        }
    };
}
pub(crate) use core_engine_methods;

/// The IPL B+-tree engine.
pub struct IplBTree {
    core: Core,
}

impl IplBTree {
    /// A new index (formats the NAND over `storage.device`).
    pub fn create(storage: Storage, opts: Options) -> Result<IplBTree> {
        Ok(IplBTree {
            core: Core::create(Flavor::Ipl, storage, opts)?,
        })
    }

    /// Reopen: the last checkpoint, then the WAL replayed.
    pub fn open(storage: Storage, manifest: Manifest, opts: Options) -> Result<IplBTree> {
        let (core, ops) = Core::open(Flavor::Ipl, storage, manifest, opts)?;
        let mut t = IplBTree { core };
        Logged::recover(&mut t.core, &ops)?;
        Ok(t)
    }

    /// Merge every block that holds log sectors (the read optimisation of §5.3 applied
    /// to the IPL B+-tree, as the paper's Fig. 13 does for both indexes).
    pub fn global_cleansing(&mut self) -> Result<()> {
        self.core.global_cleansing()
    }

    /// Reset the NAND and engine counters (the paper's measurements start from an index
    /// as built).
    pub fn reset_counters(&mut self) {
        self.core.reset_counters();
    }
}

impl Engine for IplBTree {
    core_engine_methods!();
}
