//! [`Batch`]: an atomic group of inserts, deletes and range deletes (docs/design.md, Public API;
//! what RocksDB users know as a WriteBatch).
//!
//! `Db::apply` logs a batch as **one** WAL record (logical operation kind 5, `durable/wal.rs`)
//! and then applies its operations in order, through the same log cycle as every other
//! operation: no checkpoint is taken between two operations of a batch, so the checkpoint
//! image holds either none of a batch or all of it, and the WAL record is replayed whole or,
//! torn, not at all. After a crash, a batch is all there or not there (the prefix
//! rule of docs/design.md's contract point 3, a batch counting as one operation).

use crate::durable::LogicalOp;
use std::ops::{Bound, RangeBounds};

/// An atomic group of operations, applied in order by [`crate::Db::apply`].
///
/// ```
/// let mut b = flashix::Batch::new();
/// b.insert(1, 10);
/// b.delete(2);
/// b.delete_range(100..200);
/// assert_eq!(b.len(), 3);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Batch {
    ops: Vec<LogicalOp>,
}

impl Batch {
    /// An empty batch.
    pub fn new() -> Batch {
        Batch::default()
    }

    /// Insert or overwrite `key`.
    pub fn insert(&mut self, key: u64, value: u64) -> &mut Batch {
        self.ops.push(LogicalOp::Insert(key, value));
        self
    }

    /// Delete `key` (absent keys are fine).
    pub fn delete(&mut self, key: u64) -> &mut Batch {
        self.ops.push(LogicalOp::Delete(key));
        self
    }

    /// Delete every key in `range`. An empty range adds nothing.
    pub fn delete_range(&mut self, range: impl RangeBounds<u64>) -> &mut Batch {
        if let Some((lo, hi)) = inclusive(&range) {
            self.ops.push(LogicalOp::DeleteRange(lo, hi));
        }
        self
    }

    /// Operations in the batch.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// True when the batch holds no operation.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Remove every operation (the allocation is kept for reuse).
    pub fn clear(&mut self) {
        self.ops.clear();
    }

    pub(crate) fn ops(&self) -> &[LogicalOp] {
        &self.ops
    }
}

/// `range` as a non-empty inclusive `[lo, hi]`, or `None` when it holds no key.
pub(crate) fn inclusive(range: &impl RangeBounds<u64>) -> Option<(u64, u64)> {
    let lo = match range.start_bound() {
        Bound::Included(&k) => Some(k),
        Bound::Excluded(&k) => k.checked_add(1),
        Bound::Unbounded => Some(0),
    };
    let hi = match range.end_bound() {
        Bound::Included(&k) => Some(k),
        Bound::Excluded(&k) => k.checked_sub(1),
        Bound::Unbounded => Some(u64::MAX),
    };
    match (lo, hi) {
        (Some(lo), Some(hi)) if lo <= hi => Some((lo, hi)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_become_inclusive_and_empty_ones_vanish() {
        let mut b = Batch::new();
        b.delete_range(5..5)
            .delete_range((Bound::Excluded(u64::MAX), Bound::Unbounded))
            .delete_range(..0)
            .delete_range((Bound::Included(3), Bound::Included(2)));
        assert!(b.is_empty(), "{b:?}");
        b.delete_range(..).delete_range(1..10).delete_range(7..=7);
        assert_eq!(
            b.ops(),
            [
                LogicalOp::DeleteRange(0, u64::MAX),
                LogicalOp::DeleteRange(1, 9),
                LogicalOp::DeleteRange(7, 7)
            ]
        );
        b.clear();
        assert_eq!(b.len(), 0);
    }
}
