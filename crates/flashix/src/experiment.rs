//! Hooks for experiments that measure an engine below [`Db`]: the paper reproductions of
//! `flashix repro` (in flashix-bench) and tests that compare runtime settings on one index.
//!
//! **Not the stable API.** What is here serves the experiments as they are and changes
//! with them; an embedder uses [`Db`]. Each hook says what it bypasses:
//! - [`InPageTree`]: an IPL or d-IPL B+-tree driven by one thread, on its serial read path
//!   (a search that finds the buffer full of dirty frames evicts the least recently used
//!   one and writes its log sector, as the d-IPL paper's index does; under `Db` a search
//!   evicts a clean frame instead), with the global cleansing of d-IPL §5.3 and a reset of
//!   the flash counters after the build.
//! - [`SerialBulkIndex`]: a bulk index driven by one thread that can be rewound to a
//!   snapshot between range deletes (the bulk index thesis's "each on the same initial
//!   state", §6.3).
//! - [`open_adjusted`]: reopen an index with runtime settings changed (the FBX-tree's clean
//!   policies compared on copies of one index).
//!
//! Thread safety: these types take `&mut self` and are driven by one thread at a time
//! (they are `Send`); none of the concurrency of [`Db`] applies.

use crate::db::Db;
use crate::engine::bulk::BulkIndex;
use crate::error::{Error, Result};
use crate::io::Storage;
use crate::kind::EngineKind;
use crate::kit::api::SerialEngine;
use crate::kit::inpage::{InPageBTree, LogPolicy};
use crate::options::Options;
use crate::stats::Stats;
use std::path::Path;

pub use crate::durable::background::merge_thread_allowed;
pub use crate::engine::bulk::{BulkSnapshot, DELTA_ENTRY_MEMORY};

/// Open the index in `dir` with its manifest's options changed by `adjust` (validated
/// again): experiments that compare runtime settings on copies of one index, such as the
/// FBX-tree's clean policies. `adjust` must change only settings the on-disk format does
/// not depend on (the buffer pool, `FbxOptions::clean`).
pub fn open_adjusted(dir: impl AsRef<Path>, adjust: impl FnOnce(Options) -> Options) -> Result<Db> {
    Db::open_adjusted(dir.as_ref(), adjust)
}

/// What [`InPageTree`] drives: an in-page logging B+-tree of either policy.
trait InPage: SerialEngine {
    fn reset_counters(&mut self);
    fn global_cleansing(&mut self) -> Result<()>;
}

impl<P: LogPolicy> InPage for InPageBTree<P> {
    fn reset_counters(&mut self) {
        InPageBTree::reset_counters(self);
    }

    fn global_cleansing(&mut self) -> Result<()> {
        InPageBTree::global_cleansing(self)
    }
}

/// An IPL or d-IPL B+-tree ([`EngineKind::IplBTree`], [`EngineKind::DiplBTree`]) driven by
/// one thread below [`Db`] (the module doc says what that changes).
pub struct InPageTree {
    tree: Box<dyn InPage>,
}

impl InPageTree {
    /// A new index of `opts.engine()` (IPL or d-IPL) on `storage`.
    pub fn create(storage: Storage, opts: Options) -> Result<InPageTree> {
        opts.validate()?;
        let s = opts.settings()?;
        let tree: Box<dyn InPage> = match opts.engine() {
            EngineKind::IplBTree => Box::new(crate::engine::ipl::IplBTree::create(
                storage,
                s,
                opts.ipl_options(),
            )?),
            EngineKind::DiplBTree => Box::new(crate::engine::dipl::DiplBTree::create(
                storage,
                s,
                opts.dipl_options(),
            )?),
            other => {
                return Err(Error::InvalidArgument(format!(
                    "an InPageTree is an IPL or d-IPL B+-tree, not {other}"
                )))
            }
        };
        Ok(InPageTree { tree })
    }

    /// Insert or replace `key` ([`Db::insert`]).
    pub fn insert(&mut self, key: u64, value: u64) -> Result<()> {
        self.tree.insert(key, value)
    }

    /// Delete `key`, present or not ([`Db::delete`]).
    pub fn delete(&mut self, key: u64) -> Result<()> {
        self.tree.delete(key)
    }

    /// The value of `key` ([`Db::get`]), on the serial read path.
    pub fn get(&mut self, key: u64) -> Result<Option<u64>> {
        self.tree.get(key)
    }

    /// The counters ([`Db::stats`]).
    pub fn stats(&self) -> Stats {
        self.tree.stats()
    }

    /// Reset the NAND and engine counters (the paper measures from an index as built).
    pub fn reset_counters(&mut self) {
        self.tree.reset_counters();
    }

    /// Global cleansing (d-IPL §5.3): rebuild every block that holds log sectors (a d-IPL
    /// cleansing, an IPL merge), so that later reads need no log.
    pub fn global_cleansing(&mut self) -> Result<()> {
        self.tree.global_cleansing()
    }
}

/// A bulk index ([`EngineKind::BulkIndex`]) driven by one thread below [`Db`], which can be
/// rewound to a [`BulkSnapshot`].
pub struct SerialBulkIndex {
    index: BulkIndex,
}

impl SerialBulkIndex {
    /// A new bulk index on `storage`, its parameters left to the cost model decided first
    /// ([`Options::resolved`]).
    pub fn create(storage: Storage, opts: Options) -> Result<SerialBulkIndex> {
        let opts = opts.resolved()?;
        opts.validate()?;
        if opts.engine() != EngineKind::BulkIndex {
            return Err(Error::InvalidArgument(format!(
                "a SerialBulkIndex is a bulk index, not {}",
                opts.engine()
            )));
        }
        let s = opts.settings()?;
        let index = BulkIndex::create(storage, s, opts.bulk_options())?;
        Ok(SerialBulkIndex { index })
    }

    /// Insert `sorted`, which must be in strictly ascending key order ([`Db::bulk_insert`]
    /// sorts for its caller; this does not).
    pub fn bulk_insert(&mut self, sorted: &[(u64, u64)]) -> Result<()> {
        if sorted.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err(Error::InvalidArgument(
                "bulk_insert: pairs not in strictly ascending key order".into(),
            ));
        }
        self.index.bulk_insert(sorted)
    }

    /// Delete the keys of the inclusive range `lo..=hi` ([`Db::delete_range`]).
    pub fn delete_range(&mut self, lo: u64, hi: u64) -> Result<()> {
        if lo > hi {
            return Err(Error::InvalidArgument(format!(
                "delete_range: empty range {lo}..={hi}"
            )));
        }
        self.index.delete_range(lo, hi)
    }

    /// Make every operation so far durable ([`Db::flush`]).
    pub fn flush(&mut self) -> Result<()> {
        self.index.flush()
    }

    /// Flush and take a checkpoint ([`Db::close`]); the index stays usable.
    pub fn close(&mut self) -> Result<()> {
        self.index.close()
    }

    /// The counters ([`Db::stats`]).
    pub fn stats(&self) -> Stats {
        self.index.stats()
    }

    /// The ranges as they are now, to rewind to with [`SerialBulkIndex::restore`].
    pub fn snapshot(&mut self) -> Result<BulkSnapshot> {
        self.index.snapshot()
    }

    /// Rewind the ranges to `snap` and make that state durable with a checkpoint. Only an
    /// `append_only` index can rewind (its old range pages are never overwritten).
    pub fn restore(&mut self, snap: &BulkSnapshot) -> Result<()> {
        self.index.restore(snap)
    }
}
