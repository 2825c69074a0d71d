//! Batch update (PIO B-tree paper §3.1.3, Algorithm 2, with the leaf-segment `updateNode`
//! of §3.3, Algorithm 3).
//!
//! `bupdate` takes up to `bcnt` OPQ entries (sorted, one per key) and descends like
//! MPSearch. For each group of at most `pio_max` target leaves:
//! 1. one psync read of each leaf's last segment (plus the segments the new records spill
//!    into), found in the LSMap; a leaf the LSMap does not know is read whole;
//! 2. the entries are appended to the leaves that have room (Algorithm 3 line 4);
//! 3. one psync read of the whole leaves that are full; each is **shrunk** (§3.2.2: its
//!    records replayed, so a delete cancels the puts before it and only the newest put of a
//!    key survives) and rewritten sorted; if it is still too full it **splits** into leaves
//!    of half capacity, if it fell below a quarter it is marked **underflowing**;
//! 4. the group's changed pages are written with psync writes (Algorithm 2 line 8).
//!
//! Then the fence keys go up ([`super::internal`]): each split's separators are inserted
//! into the parents (splitting them in turn), and each underflowing leaf is merged with a
//! sibling or redistributes with it, the merge removing a separator (possibly merging
//! internal nodes up to the root). The changed internal nodes are written with psync
//! writes (Algorithm 2 line 26).
//!
//! The OPQ's range tombstones are applied before any batch ([`super::rdelete`]; the
//! point entries of a tombstone's range are newer than it), so a batch holds point
//! entries only; the tree-level range delete shares the leaf and internal merges
//! ([`PioBTree::join_leaf`], the spine's `join_child`) with the underflow repair here.
//!
//! Simplification: the fence propagation runs after the whole leaf level, one fence at a
//! time, each finding its parent by a descent through the buffer pool (the internal nodes
//! were just read, so these are pool hits), instead of returning the fence records up the
//! recursion level by level as Algorithm 2 does. The I/O is the same: internal nodes are
//! read by the MPSearch descent and written by the final psync writes.

use super::leaf;
use super::mpsearch::Target;
use super::opq::OpqEntry;
use super::{Fenced, PioBTree};
use crate::error::Result;
use crate::io::PageId;
use crate::kit::bnode::node;
use crate::kit::bnode::spine::sibling_pair;

/// Fence work found at the leaf level, done after it.
#[derive(Default)]
struct Fences {
    /// (separator, new right leaf), in key order.
    splits: Vec<(u64, PageId)>,
    /// Lower fence of leaves that fell below the minimum.
    underflows: Vec<u64>,
}

impl PioBTree {
    /// Apply a batch of OPQ entries (sorted by key, one per key) to the tree.
    pub(super) fn bupdate(&mut self, batch: Vec<OpqEntry>) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        self.counters.bupdates += 1;
        self.counters.bupdate_entries += batch.len() as u64;
        let keys: Vec<u64> = batch.iter().map(|e| e.key).collect();
        let mut fences = Fences::default();
        let b = &batch;
        self.mpsearch(&keys, &mut |t: &mut PioBTree, leaves: &[Target]| {
            t.update_leaves(leaves, b, &mut fences)
        })?;
        for (sep, right) in fences.splits {
            // The leaf left of the new one currently covers `sep`.
            let (path, _) = self.descend_path(sep)?;
            self.insert_fence(path, sep, right)?;
        }
        for lo in fences.underflows {
            self.rebalance_leaf(lo)?;
        }
        self.pager.write_through(self.pio_max)
    }

    /// Steps 1–4 above for one group of leaves.
    fn update_leaves(
        &mut self,
        leaves: &[Target],
        batch: &[OpqEntry],
        fences: &mut Fences,
    ) -> Result<()> {
        let cap = self.seg_cap;
        let c = self.leaf_capacity();
        let segs = self.segs;
        let runs: Vec<(PageId, u64)> = leaves
            .iter()
            .map(|l| match self.lsmap.get(l.at.pid) {
                Some(last) => {
                    let spill = (l.to - l.from).div_ceil(cap) as u64;
                    let n = (u64::from(segs - last)).min(1 + spill);
                    (l.at.pid + u64::from(last), n)
                }
                None => (l.at.pid, u64::from(segs)),
            })
            .collect();
        self.psync_read(&runs)?;
        let mut full: Vec<Target> = Vec::new();
        for l in leaves {
            let pid = l.at.pid;
            let last = match self.lsmap.get(pid) {
                Some(last) => last,
                None => self.load_leaf(pid)?.last,
            };
            let count = leaf::tail(self.layout, &mut self.pager, pid, segs, last)?;
            let recs = &batch[l.from..l.to];
            if usize::from(last) * cap + count + recs.len() <= c {
                let new_last =
                    leaf::append(self.layout, &mut self.pager, pid, segs, last, count, recs)?;
                self.lsmap.insert(pid, new_last);
                self.leaf_records += recs.len() as u64;
                self.counters.leaf_appends += 1;
            } else {
                full.push(*l);
            }
        }
        let runs: Vec<(PageId, u64)> = full.iter().map(|l| (l.at.pid, u64::from(segs))).collect();
        self.psync_read(&runs)?;
        for l in &full {
            self.shrink(l.at, &batch[l.from..l.to], fences)?;
        }
        self.pager.write_through(self.pio_max)
    }

    /// Shrink a full leaf with the records that did not fit, then split it or mark it
    /// underflowing (Algorithm 3 lines 5–15).
    fn shrink(&mut self, at: Fenced, recs: &[OpqEntry], fences: &mut Fences) -> Result<()> {
        self.counters.shrinks += 1;
        let img = self.load_leaf(at.pid)?;
        let old = img.records.len() as u64;
        let live = leaf::live(img.records.into_iter().chain(recs.iter().copied()));
        self.leaf_records = self.leaf_records.saturating_sub(old);
        if live.len() <= self.leaf_max() {
            self.rewrite_leaf(at.pid, &live)?;
            if live.len() < self.leaf_min() && self.height > 1 {
                fences.underflows.push(at.lo);
            }
            return Ok(());
        }
        // Split (Algorithm 3 line 8; §3.2.2: "divided into two nodes"): into two leaves,
        // or into the fewest of at most `leaf_max` entries when a batch brought more. A
        // split of a leaf whose records all live (inserts of new keys) makes two halves, as
        // in a B+-tree. (Pieces of at most half the capacity split such a leaf in three
        // thirds; the PIO B-tree then aged to markedly more leaves than the B+-tree and
        // read more pages per search.)
        let pieces = live.len().div_ceil(self.leaf_max().max(1)).max(2);
        let mut start = 0;
        for i in 0..pieces {
            let end = live.len() * (i + 1) / pieces;
            let piece = &live[start..end];
            if i == 0 {
                self.rewrite_leaf(at.pid, piece)?;
            } else {
                let pid = self.pager.alloc_run(u64::from(self.segs))?.start;
                self.rewrite_leaf(pid, piece)?;
                self.leaves += 1;
                self.counters.leaf_splits += 1;
                fences.splits.push((piece[0].0, pid));
            }
            start = end;
        }
        Ok(())
    }

    /// Rewrite a leaf with sorted live entries and account for them.
    pub(super) fn rewrite_leaf(&mut self, pid: PageId, live: &[(u64, u64)]) -> Result<()> {
        let last = leaf::rewrite(self.layout, &mut self.pager, pid, self.segs, live)?;
        self.lsmap.insert(pid, last);
        self.leaf_records += live.len() as u64;
        Ok(())
    }

    /// The live entries of a whole leaf and its record count.
    pub(super) fn leaf_live(&mut self, pid: PageId) -> Result<(Vec<(u64, u64)>, u64)> {
        let img = self.load_leaf(pid)?;
        let n = img.records.len() as u64;
        Ok((leaf::live(img.records), n))
    }

    /// While the leaf covering `key` is a non-root leaf below the minimum, merge it with a
    /// sibling or redistribute with it (§3.1.3: "node redistribution or node merge").
    fn rebalance_leaf(&mut self, key: u64) -> Result<()> {
        loop {
            let (path, pid) = self.descend_path(key)?;
            let Some(&(parent, slot)) = path.last() else {
                return Ok(());
            };
            self.psync_read(&[(pid, u64::from(self.segs))])?;
            let (live, _) = self.leaf_live(pid)?;
            if live.len() >= self.leaf_min() {
                return Ok(());
            }
            if self.join_leaf(parent, slot)?.is_none() {
                return Ok(());
            }
            self.rebalance_internal(path)?;
            // `key` now routes to the merged leaf, which may still be below the minimum.
        }
    }

    /// Merge the leaf at child slot `slot` of the level-1 node `parent` with a sibling, or
    /// redistribute with it when the two hold more than one leaf may keep. Returns the
    /// merged leaf if it merged (the parent lost a separator; the merged leaf may still be
    /// below the minimum when both were).
    pub(super) fn join_leaf(&mut self, parent: PageId, slot: usize) -> Result<Option<PageId>> {
        let p = self.internal(parent, 1)?;
        if p.entries.is_empty() {
            return Err(crate::error::Error::corruption(
                crate::page::DATA_FILE,
                Some(parent),
                "internal node without separators above an underflowing leaf",
            ));
        }
        let pid = if slot == 0 {
            p.link
        } else {
            p.entries[slot - 1].1
        };
        let (left, right, sep_idx) = sibling_pair(p.link, &p.entries, pid, slot);
        let segs = u64::from(self.segs);
        self.psync_read(&[(left, segs), (right, segs)])?;
        let (mut all, l_recs) = self.leaf_live(left)?;
        let (r_live, r_recs) = self.leaf_live(right)?;
        all.extend(r_live);
        self.leaf_records = self.leaf_records.saturating_sub(l_recs + r_recs);
        if all.len() > self.leaf_max() {
            let m = all.len() / 2;
            self.rewrite_leaf(left, &all[..m])?;
            self.rewrite_leaf(right, &all[m..])?;
            let sep = all[m].0;
            self.pager
                .write(parent, |b| node::set_key(b, sep_idx, sep))?;
            self.counters.redistributions += 1;
            return Ok(None);
        }
        self.rewrite_leaf(left, &all)?;
        self.free_leaf(right);
        self.leaves -= 1;
        self.pager.write(parent, |b| node::remove_at(b, sep_idx))?;
        self.counters.merges += 1;
        Ok(Some(left))
    }
}
