//! Updates and buffer emptying (Lehtonen 2014, §4.4: "when some buffer higher up in the
//! tree becomes full, it is emptied and its contents migrate to nodes and buffers lower in
//! the tree").
//!
//! An insert or delete is a message appended to the root's buffer. Emptying a buffer
//! detaches its chain from the node and reads it oldest first, in chunks that fit the
//! sort area; each chunk is sorted by key with the newest message of a key winning, then
//! either partitioned among the buffers of the next buffered level below (appended to
//! each), or, from the lowest buffered level, applied to the leaves in key order with
//! splits and merges. Chunks are processed oldest first, so every buffer and leaf sees a
//! key's messages in sequence order. Buffers pushed over `max_buffer_pages` are emptied in
//! turn ([`LaTree::settle`]), highest first: the cascade.

use super::buffer::{self, Msg};
use super::LaTree;
use crate::error::Result;
use crate::io::PageId;

/// Why a buffer was emptied (counters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cause {
    Adapt,
    Overflow,
}

impl LaTree {
    /// The buffered level below a buffered node at `level` to which its emptying sends
    /// messages: the largest level `t ≥ 1` below `level` with `(t − 1) mod K = 0`; `None`
    /// when the node is at level 1 or is a leaf root (its messages go to the leaves).
    pub(super) fn target_level(&self, level: u32) -> Option<u32> {
        (level >= 2).then(|| 1 + ((level - 2) / self.k) * self.k)
    }

    /// True if nodes at `level` carry buffers (besides the root, which always does).
    pub(super) fn is_buffered_level(&self, level: u32) -> bool {
        level >= 1 && (level - 1) % self.k == 0
    }

    /// Append an update to the root buffer; empty it when it outgrows the maximum. The
    /// emptyings lookups decided on the shared path come first, as they would have come
    /// before this write on the serial path.
    pub(super) fn put(&mut self, key: u64, val: u64, delete: bool) -> Result<()> {
        self.empty_deferred()?;
        self.seq += 1;
        let m = Msg {
            key,
            val,
            seq: self.seq,
            delete,
        };
        let root = self.root;
        let b = self.buffers.remove(&root);
        let b = buffer::append(&mut self.pager, b, self.height - 1, &[m])?;
        self.put_buffer(root, b);
        self.settle()
    }

    /// Empty buffers over the maximum until none is, highest level first.
    pub(super) fn settle(&mut self) -> Result<()> {
        while self.maybe_overfull {
            let over = self
                .buffers
                .iter()
                .filter(|(_, b)| b.pages > self.max_buffer_pages)
                .max_by_key(|(_, b)| b.level)
                .map(|(&p, _)| p);
            match over {
                Some(pid) => self.empty(pid, Cause::Overflow)?,
                None => self.maybe_overfull = false,
            }
        }
        Ok(())
    }

    /// Empty the buffer of `pid` entirely.
    pub(super) fn empty(&mut self, pid: PageId, cause: Cause) -> Result<()> {
        let Some(buf) = self.buffers.remove(&pid) else {
            return Ok(());
        };
        match cause {
            Cause::Adapt => self.counters.emptyings_adapt += 1,
            Cause::Overflow => self.counters.emptyings_overflow += 1,
        }
        let target = self.target_level(buf.level);
        let pages = buffer::pages_oldest_first(&self.pager, &buf)?;
        let mut next = 0;
        while next < pages.len() {
            let mut chunk = Vec::new();
            while let Some(&p) = pages.get(next) {
                if !chunk.is_empty() && chunk.len() + self.per_page > self.sort_entries {
                    break;
                }
                let (msgs, _) = buffer::read_page(&self.pager, p)?;
                self.pager.free_page(p);
                chunk.extend(msgs);
                next += 1;
            }
            let chunk = buffer::newest_per_key(chunk);
            match target {
                Some(t) => self.push_down(&chunk, t)?,
                None => self.apply_to_leaves(&chunk)?,
            }
        }
        Ok(())
    }

    /// Append sorted, distinct-key messages to the buffers of the nodes at `level` whose
    /// key spans hold them (one descent per node reached).
    fn push_down(&mut self, msgs: &[Msg], level: u32) -> Result<()> {
        let mut rest = msgs;
        while let Some(first) = rest.first() {
            let d = self.descend(first.key, level)?;
            let n = match d.hi {
                Some(h) => rest.partition_point(|m| m.key < h),
                None => rest.len(),
            };
            let b = self.buffers.remove(&d.node);
            let b = buffer::append(&mut self.pager, b, level, &rest[..n])?;
            self.put_buffer(d.node, b);
            rest = &rest[n..];
        }
        Ok(())
    }

    /// Apply sorted, distinct-key messages to the leaves in key order.
    fn apply_to_leaves(&mut self, msgs: &[Msg]) -> Result<()> {
        for m in msgs {
            if m.delete {
                self.leaf_delete(m.key)?;
            } else {
                self.leaf_insert(m.key, m.val)?;
            }
        }
        Ok(())
    }
}
