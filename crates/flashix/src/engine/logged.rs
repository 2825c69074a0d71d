//! The operation cycle every engine on the shared [`Pager`] follows (DESIGN.md, Contract 3):
//! log the logical operation, apply it, take a checkpoint when one is due; and on open,
//! replay the logged operations without logging them again.

use crate::buffer::Pager;
use crate::error::Result;
use crate::wal::LogicalOp;

/// An engine whose durability is the pager's logical redo WAL plus checkpoints.
pub(crate) trait Logged {
    fn pager(&mut self) -> &mut Pager;

    /// Apply an operation to the structure without logging it (live, after logging, and
    /// during replay).
    fn apply(&mut self, op: &LogicalOp) -> Result<()>;

    /// Write the engine's state into a new manifest (`Pager::checkpoint`).
    fn checkpoint(&mut self) -> Result<()>;

    /// True when the engine needs a checkpoint for its own reasons (a completed merge
    /// whose new runs must be published), besides the WAL's size.
    fn checkpoint_due(&self) -> bool {
        false
    }

    /// True when the index holds nothing, so that a bulk insert may bulk-load it.
    fn holds_nothing(&self) -> bool;

    /// Build the structure from sorted, distinct pairs into the empty index, unlogged.
    fn load_empty(&mut self, sorted: &[(u64, u64)]) -> Result<()>;

    /// `Engine::bulk_insert` (sorted, distinct pairs). Into an empty index: a bulk load made
    /// durable by a checkpoint. A batch too big for the log (a quarter of the checkpoint
    /// size): applied unlogged, then a checkpoint. Otherwise one logged record. In the
    /// first two cases a crash before the checkpoint recovers the state before the call,
    /// which the prefix rule allows: the call had not returned.
    fn bulk_logged(&mut self, sorted: &[(u64, u64)]) -> Result<()> {
        if sorted.is_empty() {
            return Ok(());
        }
        if self.holds_nothing() {
            self.load_empty(sorted)?;
            return self.checkpoint();
        }
        if sorted.len() as u64 * 16 > self.pager().options().checkpoint_wal_bytes / 4 {
            for &(k, v) in sorted {
                self.apply(&LogicalOp::Insert(k, v))?;
            }
            return self.checkpoint();
        }
        self.logged(LogicalOp::BulkInsert(sorted.to_vec()))
    }

    /// Log `op`, apply it, and checkpoint if due.
    fn logged(&mut self, op: LogicalOp) -> Result<()> {
        self.pager().log(&op)?;
        self.apply(&op)?;
        self.after_op()
    }

    /// Between operations: checkpoint when due.
    fn after_op(&mut self) -> Result<()> {
        if self.checkpoint_due() || self.pager().needs_checkpoint() {
            self.checkpoint()?;
        }
        Ok(())
    }

    /// Recovery: apply the operations `Pager::open` returned, in order, unlogged.
    fn replay(&mut self, ops: &[LogicalOp]) -> Result<()> {
        self.pager().set_replaying(true);
        let r = ops.iter().try_for_each(|op| self.apply(op));
        self.pager().set_replaying(false);
        r
    }
}

/// The [`crate::engine::Engine`] methods every [`Logged`] engine implements the same way:
/// `insert`, `bulk_insert`, `delete_range` through the log, `flush` (group commit) and
/// `close` (a checkpoint). Used inside `impl Engine for ...`.
macro_rules! logged_engine_methods {
    () => {
        fn insert(&mut self, key: u64, value: u64) -> $crate::error::Result<()> {
            $crate::engine::Logged::logged(self, $crate::wal::LogicalOp::Insert(key, value))
        }

        fn bulk_insert(&mut self, sorted: &[(u64, u64)]) -> $crate::error::Result<()> {
            $crate::engine::Logged::bulk_logged(self, sorted)
        }

        fn delete_range(&mut self, lo: u64, hi: u64) -> $crate::error::Result<()> {
            $crate::engine::Logged::logged(self, $crate::wal::LogicalOp::DeleteRange(lo, hi))
        }

        fn flush(&mut self) -> $crate::error::Result<()> {
            $crate::engine::Logged::pager(self).flush()
        }

        fn close(&mut self) -> $crate::error::Result<()> {
            $crate::engine::Logged::checkpoint(self)
        }
    };
}
pub(crate) use logged_engine_methods;
