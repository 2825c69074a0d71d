//! [`InPageBTree`]: the engine a [`LogPolicy`] makes of the kit's [`Core`]. The IPL and
//! d-IPL B+-trees are this type with their policy (`engine::ipl::IplBTree`,
//! `engine::dipl::DiplBTree`): creating and opening an index, the global cleansing of
//! d-IPL §5.3, the `Engine` methods and the shared read path do not depend on the scheme,
//! so they are written once here and each engine's folder keeps only what it decides (its
//! policy, its options and how they map to the kit's [`Config`](super::Config)).

use super::{Core, LogPolicy};
use crate::durable::{FlushTicket, Logged, LogicalOp, Manifest};
use crate::error::Result;
use crate::io::Storage;
use crate::kit::api::{RangeCursor, SerialEngine, Shareable};
use crate::settings::Settings;
use crate::stats::Stats;

/// An in-page logging B+-tree of policy `P` on raw NAND flash.
pub struct InPageBTree<P: LogPolicy> {
    core: Core<P>,
}

impl<P: LogPolicy> InPageBTree<P> {
    /// A new index (formats the NAND over `storage.device`).
    pub fn create(storage: Storage, s: Settings, o: P::Options) -> Result<Self> {
        Ok(InPageBTree {
            core: Core::create(storage, s, &P::config(&o))?,
        })
    }

    /// Reopen: the last checkpoint, then the WAL replayed.
    pub fn open(storage: Storage, manifest: Manifest, s: Settings, o: P::Options) -> Result<Self> {
        let (core, ops) = Core::open(storage, manifest, s, &P::config(&o))?;
        let mut t = InPageBTree { core };
        Logged::recover(&mut t.core, &ops)?;
        Ok(t)
    }

    /// Global cleansing (d-IPL §5.3): rebuild every block that holds log sectors (a d-IPL
    /// cleansing, an IPL merge), so that later reads need no log. The paper's Fig. 13
    /// applies this read optimisation to both indexes.
    pub fn global_cleansing(&mut self) -> Result<()> {
        self.core.global_cleansing()
    }

    /// Reset the NAND and engine counters (the paper's measurements start from an index
    /// as built).
    pub fn reset_counters(&mut self) {
        self.core.reset_counters();
    }
}

/// Point searches and range scans run beside each other (the kit's module doc, Thread
/// safety).
impl<P: LogPolicy> Shareable for InPageBTree<P> {
    const PARALLEL_GETS: bool = true;
    const PARALLEL_SCANS: bool = true;

    fn get_shared(&self, key: u64) -> Result<Option<u64>> {
        self.core.get_shared(key)
    }

    /// An insert or delete changes the key's leaf (and, on a split, the nodes above it,
    /// which the descent passes): their frames are loaded beside the readers.
    fn prepare_write(&self, key: u64) {
        let _ = self.core.get_shared(key);
    }

    fn scan_shared(&self, cur: &mut RangeCursor, out: &mut Vec<(u64, u64)>) -> Result<()> {
        self.core.scan_shared(cur, out)
    }
}

/// Writes go through the logical redo WAL ([`Logged`]); reads, checks and checkpoints are
/// the [`Core`]'s.
impl<P: LogPolicy> SerialEngine for InPageBTree<P> {
    fn insert(&mut self, key: u64, value: u64) -> Result<()> {
        Logged::logged(&mut self.core, LogicalOp::Insert(key, value))
    }
    fn delete(&mut self, key: u64) -> Result<()> {
        Logged::logged(&mut self.core, LogicalOp::Delete(key))
    }
    fn get(&mut self, key: u64) -> Result<Option<u64>> {
        self.core.get(key)
    }
    fn scan(&mut self, cur: &mut RangeCursor, out: &mut Vec<(u64, u64)>) -> Result<()> {
        self.core.scan(cur, out)
    }
    fn bulk_insert(&mut self, sorted: &[(u64, u64)]) -> Result<()> {
        Logged::bulk_logged(&mut self.core, sorted)
    }
    fn delete_range(&mut self, lo: u64, hi: u64) -> Result<()> {
        Logged::logged(&mut self.core, LogicalOp::DeleteRange(lo, hi))
    }
    fn apply_batch(&mut self, ops: &[LogicalOp]) -> Result<()> {
        Logged::logged(&mut self.core, LogicalOp::Batch(ops.to_vec()))
    }
    fn flush_ticket(&mut self) -> Result<Option<FlushTicket>> {
        self.core.log.prepare_flush()
    }
    fn close(&mut self) -> Result<()> {
        self.core.checkpoint()
    }
    fn stats(&self) -> Stats {
        self.core.stats()
    }
    fn check_integrity(&mut self) -> Result<()> {
        self.core.check()
    }
}
