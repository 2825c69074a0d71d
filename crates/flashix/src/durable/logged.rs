//! The operation cycle every engine follows (docs/design.md, contract point 3): log the logical
//! operation, apply it, take a checkpoint when one is due; and on open, replay the logged
//! operations without logging them again, then checkpoint.
//!
//! An engine names its [`Store`] (the `Pager`, or the in-page logging core on raw NAND)
//! and its manifest state, implements the unlogged primitives of its structure, and gets
//! the rest — logging, dispatch of [`LogicalOp`]s, bulk-insert policy, checkpoints and their
//! scheduling, and replay — from the provided methods and [`logged_engine_methods!`].

use super::log::Log;
use super::wal::LogicalOp;
use crate::error::Result;

/// Where an engine's structure becomes durable: a store that owns the [`Log`] and can make
/// everything the engine wrote durable, then switch the manifest ([`Log::switch`]).
pub(crate) trait Store {
    /// The log (WAL generations) of the index.
    fn log(&mut self) -> &mut Log;

    /// WAL size (bytes) after which a checkpoint is due.
    fn checkpoint_wal_bytes(&self) -> u64;

    /// Make every change durable on the device and publish `engine_state` in a new
    /// manifest over a fresh WAL generation. `engine_state` was taken after
    /// [`Logged::before_checkpoint`]; nothing the store does here may change what it
    /// describes.
    fn checkpoint(&mut self, engine_state: serde_json::Value) -> Result<()>;
}

/// An engine whose durability is the logical redo WAL plus checkpoints.
pub(crate) trait Logged {
    /// The store the engine's structure lives in.
    fn store(&mut self) -> &mut dyn Store;

    /// The engine's durable roots for the manifest (root, levels, block table, ...).
    fn engine_state(&self) -> serde_json::Value;

    /// Before a checkpoint: bring what lives only in memory into the structure (the PIO
    /// B-tree's OPQ, BFTL's reservation buffer).
    fn before_checkpoint(&mut self) -> Result<()> {
        Ok(())
    }

    /// After a checkpoint: forget what it made durable (due flags, fresh-page sets), and
    /// act on space the new manifest no longer names (the bulk index trims it).
    fn after_checkpoint(&mut self) -> Result<()> {
        Ok(())
    }

    /// The log the cycle appends to.
    fn log(&mut self) -> &mut Log {
        self.store().log()
    }

    /// WAL size (bytes) after which a checkpoint is due.
    fn checkpoint_wal_bytes(&mut self) -> u64 {
        self.store().checkpoint_wal_bytes()
    }

    /// Make the structure durable and switch the manifest: [`Logged::before_checkpoint`],
    /// the store's checkpoint with [`Logged::engine_state`], [`Logged::after_checkpoint`];
    /// then charge the structures again ([`Logged::charge_memory`]): a checkpoint may
    /// change them (the FBX-tree's snapshot page list grows with it, and would stay
    /// uncharged until the next operation).
    fn checkpoint(&mut self) -> Result<()> {
        self.before_checkpoint()?;
        let state = self.engine_state();
        self.store().checkpoint(state)?;
        self.after_checkpoint()?;
        self.charge_memory()
    }

    /// Insert or replace, unlogged.
    fn insert_unlogged(&mut self, key: u64, value: u64) -> Result<()>;

    /// Delete (absent keys are fine), unlogged.
    fn delete_unlogged(&mut self, key: u64) -> Result<()>;

    /// Delete the inclusive range, unlogged.
    fn delete_range_unlogged(&mut self, lo: u64, hi: u64) -> Result<()>;

    /// Insert sorted, distinct pairs into a non-empty index, unlogged. Default: one insert
    /// each.
    fn bulk_unlogged(&mut self, sorted: &[(u64, u64)]) -> Result<()> {
        sorted
            .iter()
            .try_for_each(|&(k, v)| self.insert_unlogged(k, v))
    }

    /// True when the index holds nothing, so that a bulk insert may bulk-load it.
    fn holds_nothing(&self) -> bool;

    /// Build the structure from sorted, distinct pairs into the empty index, unlogged.
    fn load_empty(&mut self, sorted: &[(u64, u64)]) -> Result<()>;

    /// False when a delete of `key` need not be logged or applied (an engine that
    /// searches before it deletes, as the FD-tree paper's baselines do). Default: true,
    /// a blind delete.
    fn delete_needed(&mut self, _key: u64) -> Result<bool> {
        Ok(true)
    }

    /// True when the engine needs a checkpoint for its own reasons (a completed merge
    /// whose new runs must be published, free blocks running low), besides the WAL's size.
    fn checkpoint_due(&self) -> bool {
        false
    }

    /// True when recovery must end with a checkpoint although it replayed nothing (state
    /// the checkpoint image does not yet hold, such as a merge restarted at open).
    fn checkpoint_after_recovery(&self) -> bool {
        false
    }

    /// Apply an operation to the structure without logging it (live, after logging, and
    /// during replay).
    fn apply(&mut self, op: &LogicalOp) -> Result<()> {
        match op {
            LogicalOp::Insert(k, v) => self.insert_unlogged(*k, *v),
            LogicalOp::Delete(k) => self.delete_unlogged(*k),
            LogicalOp::BulkInsert(pairs) => self.bulk_unlogged(pairs),
            LogicalOp::DeleteRange(lo, hi) => self.delete_range_unlogged(*lo, *hi),
            // One record, applied in order with no checkpoint in between (`after_op` runs
            // after the whole batch): all of it or none of it is durable.
            LogicalOp::Batch(ops) => ops.iter().try_for_each(|op| self.apply(op)),
        }
    }

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
            let r = self
                .load_empty(sorted)
                .and_then(|_| self.charge_memory())
                .and_then(|_| self.checkpoint());
            return r.map_err(|e| self.note_no_space(e, None));
        }
        if sorted.len() as u64 * 16 > self.checkpoint_wal_bytes() / 4 {
            let r = sorted
                .iter()
                .try_for_each(|&(k, v)| self.apply(&LogicalOp::Insert(k, v)))
                .and_then(|_| self.charge_memory())
                .and_then(|_| self.checkpoint());
            return r.map_err(|e| self.note_no_space(e, None));
        }
        self.logged(LogicalOp::BulkInsert(sorted.to_vec()))
    }

    /// Log `op`, apply it, and checkpoint if due. When the device is full, the WAL says so
    /// ([`Logged::note_no_space`]).
    fn logged(&mut self, op: LogicalOp) -> Result<()> {
        let start = self.log().bytes();
        self.log().log_op(&op)?;
        if let Err(e) = self.apply(&op) {
            return Err(self.note_no_space(e, Some(start)));
        }
        self.after_op().map_err(|e| self.note_no_space(e, None))
    }

    /// After `e` ended an operation: if it is the device being full, append an
    /// out-of-space record naming the failed logical operation (`op_start`), or none when
    /// the operation was applied and only a checkpoint failed. Recovery then drops that
    /// operation, whose replay would fail the same way (the extent allocator meets the
    /// device's end at the same allocation), and takes no checkpoint at its end, which
    /// could need space the device has not got; so the index opens with everything
    /// logged before. The record is best effort: the `Db` is poisoned by `e` anyway.
    fn note_no_space(
        &mut self,
        e: crate::error::Error,
        op_start: Option<u64>,
    ) -> crate::error::Error {
        if e.is_no_space() && !self.log().replaying() {
            let _ = self.log().log_no_space(op_start);
        }
        e
    }

    /// Between operations: give the buffer pool what the engine's structures leave of the
    /// memory budget (`Stats::memory_bytes` stays within it: `crate::MEMORY_SLACK_BYTES`),
    /// usually [`super::Pager::charge`]. The default charges nothing: an engine whose only
    /// memory is its pool.
    fn charge_memory(&mut self) -> Result<()> {
        Ok(())
    }

    /// Between operations: charge the engine's structures to the budget
    /// ([`Logged::charge_memory`]), then checkpoint when due (never while replaying).
    fn after_op(&mut self) -> Result<()> {
        self.charge_memory()?;
        let wal_full = {
            let limit = self.checkpoint_wal_bytes();
            let log = self.log();
            !log.replaying() && log.bytes() >= limit
        };
        if wal_full || (self.checkpoint_due() && !self.log().replaying()) {
            self.checkpoint()?;
        }
        Ok(())
    }

    /// Recovery's last step: apply the operations the WAL held, in order, unlogged; then
    /// a checkpoint if anything was replayed (or [`Logged::checkpoint_after_recovery`]),
    /// unless the WAL says the device was full ([`super::Log::recovered_out_of_space`]):
    /// then the index goes on in the same generation, as the run that filled the device
    /// did, and its next checkpoint is due as usual.
    fn recover(&mut self, ops: &[LogicalOp]) -> Result<()> {
        self.log().set_replaying(true);
        let r = ops.iter().try_for_each(|op| self.apply(op));
        self.log().set_replaying(false);
        r?;
        self.charge_memory()?;
        if self.log().recovered_out_of_space() {
            return Ok(());
        }
        if !ops.is_empty() || self.checkpoint_after_recovery() {
            self.checkpoint()?;
        }
        Ok(())
    }
}

/// The [`crate::kit::api::SerialEngine`] methods every [`Logged`] engine implements the same way:
/// `insert`, `delete`, `bulk_insert`, `delete_range`, `apply_batch` through the log, `flush` (group
/// commit) and `close` (a checkpoint). Used inside `impl SerialEngine for ...`.
macro_rules! logged_engine_methods {
    () => {
        fn insert(&mut self, key: u64, value: u64) -> $crate::error::Result<()> {
            $crate::durable::Logged::logged(self, $crate::durable::LogicalOp::Insert(key, value))
        }

        fn delete(&mut self, key: u64) -> $crate::error::Result<()> {
            if !$crate::durable::Logged::delete_needed(self, key)? {
                return Ok(());
            }
            $crate::durable::Logged::logged(self, $crate::durable::LogicalOp::Delete(key))
        }

        fn bulk_insert(&mut self, sorted: &[(u64, u64)]) -> $crate::error::Result<()> {
            $crate::durable::Logged::bulk_logged(self, sorted)
        }

        fn delete_range(&mut self, lo: u64, hi: u64) -> $crate::error::Result<()> {
            $crate::durable::Logged::logged(self, $crate::durable::LogicalOp::DeleteRange(lo, hi))
        }

        fn apply_batch(&mut self, ops: &[$crate::durable::LogicalOp]) -> $crate::error::Result<()> {
            $crate::durable::Logged::logged(self, $crate::durable::LogicalOp::Batch(ops.to_vec()))
        }

        fn flush_ticket(&mut self) -> $crate::error::Result<Option<$crate::durable::FlushTicket>> {
            $crate::durable::Logged::log(self).prepare_flush()
        }

        fn close(&mut self) -> $crate::error::Result<()> {
            $crate::durable::Logged::checkpoint(self)
        }
    };
}
pub(crate) use logged_engine_methods;

/// [`Logged::store`] and [`Logged::charge_memory`] of an engine whose store is its `pager`
/// field and whose memory besides the pool is what its `structure_bytes()` counts: the
/// store is the pager, and the charge is those bytes. Used inside `impl Logged for ...`.
macro_rules! pager_store_methods {
    () => {
        fn store(&mut self) -> &mut dyn $crate::durable::Store {
            &mut self.pager
        }

        fn charge_memory(&mut self) -> $crate::error::Result<()> {
            let bytes = self.structure_bytes();
            self.pager.charge(bytes)
        }
    };
}
pub(crate) use pager_store_methods;
