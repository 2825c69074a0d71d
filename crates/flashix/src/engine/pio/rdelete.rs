//! Applying an OPQ range tombstone to the tree (flashix's extension of the PIO B-tree,
//! like RocksDB's `DeleteRange`; the paper's OPQ, §3.1.3, holds point operations only): a
//! tree-level range delete of `[lo, hi]` that touches as few pages as it can.
//!
//! 1. **Descent** over the internal nodes meeting the range, level by level with one psync
//!    read per level (as the parallel range search, §3.1.2): a node the range covers only
//!    in part (at most two per level, the ones holding `lo` and `hi`) is read and loses
//!    the child slots of its children that lie wholly inside `[lo, hi]`; a child subtree
//!    wholly inside is freed after reading only its internal nodes (psync groups of
//!    `pio_max`), to learn their children's page ids. **A leaf wholly inside is freed
//!    without being read** (its LSMap entry dropped, its `L` pages freed).
//! 2. **Boundary leaves** (at most two): read with one psync read, their records replayed
//!    (as the shrink does, §3.2.2), the covered keys dropped and rewritten sorted.
//! 3. **Repair** along the paths of `lo` and `hi + 1`, top-down, until nothing changes: a
//!    root without separators is removed (the tree gets shorter); an internal node below
//!    `cap / 2` separators, or a rewritten boundary leaf below a quarter of its capacity,
//!    merges with a sibling or redistributes with it (the shared spine's
//!    [`crate::kit::bnode::spine::Spine::join_child`] and [`PioBTree::join_leaf`]). A node
//!    may be far below the minimum after losing many children, so one repair may take
//!    several merges; each step merges, redistributes or shortens the tree, so it ends.
//! 4. The changed pages are written with psync writes (Algorithm 2 line 26).
//!
//! Pages read: the internal nodes over the range, the boundary leaves and a sibling of
//! each for the repairs, whatever the number of keys or leaves in the range.
//!
//! **Durability.** Every page changed goes through the [`crate::durable::Pager`], so its
//! checkpoint contents are before-imaged before it is written; freed pages are reused only
//! after the next checkpoint (the allocator's pending list), so the checkpoint image of a
//! freed leaf or node stays intact on the device. A crash in the middle of applying a
//! tombstone is thus undone by the before-images with the rest of the flush, and the
//! tombstone is replayed from the WAL's logical record.
//!
//! **Record count.** The manifest's `leaf_records` counts the records in the leaves, but a
//! leaf freed unread has an unknown count: every non-root leaf holds at least `C/4` records
//! (invariant 2) and, when the LSMap knows its last segment `j`, at least `j × s` (the
//! segments before the last are full). That lower bound is subtracted, so `leaf_records`
//! becomes an upper bound and `leaf_records_bound` is set (`check_integrity` then checks
//! `≥` instead of `=`). It is exact again after a bulk load, a range delete of everything,
//! or when the tree is one leaf again (the root leaf is then counted).

use super::{Fenced, PioBTree};
use crate::error::{Error, Result};
use crate::io::PageId;
use crate::kit::bnode::node;
use crate::page::DATA_FILE;

impl PioBTree {
    /// Delete every key of `[lo, hi]` (`lo <= hi`) from the tree (see the module doc).
    pub(super) fn delete_range_in_tree(&mut self, lo: u64, hi: u64) -> Result<()> {
        self.counters.range_tombstones_applied += 1;
        let inside = |f: &Fenced| {
            f.lo >= lo
                && match f.hi {
                    // h > f.lo: never 0.
                    Some(h) => h - 1 <= hi,
                    None => hi == u64::MAX,
                }
        };
        let meets = |f: &Fenced| f.lo <= hi && f.hi.map_or(true, |h| h > lo);
        let root = Fenced {
            pid: self.root,
            lo: 0,
            hi: None,
        };
        let whole = inside(&root);
        if whole && self.height == 1 {
            // One root leaf, emptied: no need to read it.
            self.leaf_records = 0;
            self.leaf_records_bound = false;
            self.rewrite_leaf(root.pid, &[])?;
            return self.pager.write_through(self.pio_max);
        }
        let (mut partial, mut doomed) = if whole {
            (Vec::new(), vec![root.pid])
        } else {
            (vec![root], Vec::new())
        };
        for level in (1..self.height).rev() {
            let runs: Vec<(PageId, u64)> = partial.iter().map(|n| (n.pid, 1)).collect();
            self.psync_read(&runs)?;
            let mut next_partial = Vec::new();
            let mut next_doomed = Vec::new();
            for at in &partial {
                let n = self.internal(at.pid, level)?;
                // The slots kept, as (lower fence, child); the first becomes the link.
                let mut keep: Vec<(u64, PageId)> = Vec::with_capacity(n.slots());
                for s in 0..n.slots() {
                    let c = n.child(*at, s);
                    if !meets(&c) {
                        keep.push((c.lo, c.pid));
                    } else if inside(&c) {
                        if level == 1 {
                            self.free_leaf_unread(c.pid);
                        } else {
                            next_doomed.push(c.pid);
                        }
                    } else {
                        next_partial.push(c);
                        keep.push((c.lo, c.pid));
                    }
                }
                if keep.len() < n.slots() {
                    // A node the range covers in part keeps a child outside it.
                    let Some((&(_, link), rest)) = keep.split_first() else {
                        return Err(Error::corruption(
                            DATA_FILE,
                            Some(at.pid),
                            format!(
                                "internal node over {}..{:?} lies inside the deleted range \
                                 [{lo}, {hi}] but was not freed",
                                at.lo, at.hi
                            ),
                        ));
                    };
                    self.pager
                        .write(at.pid, |b| node::init(b, level, link, rest))?;
                }
            }
            self.free_subtrees(&doomed, level, &mut next_doomed)?;
            partial = next_partial;
            doomed = next_doomed;
        }
        if whole {
            let pid = self.pager.alloc_run(u64::from(self.segs))?.start;
            self.leaf_records = 0;
            self.leaf_records_bound = false;
            self.rewrite_leaf(pid, &[])?;
            self.root = pid;
            self.height = 1;
            self.leaves = 1;
            return self.pager.write_through(self.pio_max);
        }
        // The boundary leaves (or the root leaf): replayed, filtered, rewritten.
        let segs = u64::from(self.segs);
        let runs: Vec<(PageId, u64)> = partial.iter().map(|l| (l.pid, segs)).collect();
        self.psync_read(&runs)?;
        let mut suspects: Vec<PageId> = Vec::new();
        for l in &partial {
            let (live, n) = self.leaf_live(l.pid)?;
            if !live.iter().any(|(k, _)| (lo..=hi).contains(k)) {
                continue;
            }
            let kept: Vec<(u64, u64)> = live
                .into_iter()
                .filter(|(k, _)| !(lo..=hi).contains(k))
                .collect();
            self.leaf_records = self.leaf_records.saturating_sub(n);
            self.rewrite_leaf(l.pid, &kept)?;
            suspects.push(l.pid);
        }
        self.pager.write_through(self.pio_max)?;
        self.demote_leaves(partial.iter().map(|l| l.pid));
        self.repair_range(lo, hi, &mut suspects)?;
        if self.height == 1 && self.leaf_records_bound {
            let root = self.root;
            self.psync_read(&[self.search_run(root)])?;
            self.leaf_records = self.load_leaf(root)?.records.len() as u64;
            self.leaf_records_bound = false;
        }
        self.pager.write_through(self.pio_max)
    }

    /// Free the subtrees under the internal nodes `nodes` of `level` wholly inside the
    /// range: the nodes are read in psync groups to learn their children; children that
    /// are leaves are freed unread, internal ones go to `next` (the level below).
    fn free_subtrees(
        &mut self,
        nodes: &[PageId],
        level: u32,
        next: &mut Vec<PageId>,
    ) -> Result<()> {
        let g = self.group(1);
        for chunk in nodes.chunks(g) {
            let runs: Vec<(PageId, u64)> = chunk.iter().map(|&p| (p, 1)).collect();
            self.psync_read(&runs)?;
            for &pid in chunk {
                let n = self.internal(pid, level)?;
                let children = std::iter::once(n.link).chain(n.entries.iter().map(|e| e.1));
                for c in children {
                    if level == 1 {
                        self.free_leaf_unread(c);
                    } else {
                        next.push(c);
                    }
                }
                self.pager.free_page(pid);
            }
        }
        Ok(())
    }

    /// Free a leaf wholly inside a deleted range without reading it; `leaf_records` loses
    /// a lower bound of its records and becomes an upper bound (see the module doc).
    fn free_leaf_unread(&mut self, pid: PageId) {
        let full = self
            .lsmap
            .get(pid)
            .map_or(0, |last| u64::from(last) * self.seg_cap as u64);
        let least = full.max(self.leaf_min() as u64);
        self.leaf_records = self.leaf_records.saturating_sub(least);
        self.leaf_records_bound = true;
        self.free_leaf(pid);
        self.leaves -= 1;
        self.counters.leaves_freed_unread += 1;
    }

    /// Step 3 of the module doc: repair top-down along the paths of `lo` and `hi + 1`
    /// until a pass over both changes nothing. `suspects` are the leaves that may be below
    /// the minimum (the rewritten boundary leaves and merged leaves); every other leaf
    /// keeps the invariant and is not read.
    fn repair_range(&mut self, lo: u64, hi: u64, suspects: &mut Vec<PageId>) -> Result<()> {
        let keys: Vec<u64> = std::iter::once(lo).chain(hi.checked_add(1)).collect();
        loop {
            let mut changed = false;
            for &k in &keys {
                while self.repair_step(k, suspects)? {
                    changed = true;
                }
            }
            if !changed {
                return Ok(());
            }
        }
    }

    /// One top-down pass along `key`: remove a root without separators, or join the first
    /// node below the minimum with a sibling. Returns whether it changed the tree.
    fn repair_step(&mut self, key: u64, suspects: &mut Vec<PageId>) -> Result<bool> {
        if self.collapse_root()? {
            return Ok(true);
        }
        let min = self.cap / 2;
        let mut pid = self.root;
        for level in (1..self.height).rev() {
            let n = self.internal(pid, level)?;
            let s = match n.entries.binary_search_by_key(&key, |e| e.0) {
                Ok(j) => j + 1,
                Err(j) => j,
            };
            let child = if s == 0 { n.link } else { n.entries[s - 1].1 };
            if level >= 2 {
                self.psync_read(&[(child, 1)])?;
                if self.internal(child, level - 1)?.entries.len() < min {
                    self.join_internal(pid, level, s)?;
                    return Ok(true);
                }
            } else if suspects.contains(&child) {
                self.psync_read(&[(child, u64::from(self.segs))])?;
                let (live, _) = self.leaf_live(child)?;
                if live.len() < self.leaf_min() {
                    if let Some(merged) = self.join_leaf(pid, s)? {
                        suspects.push(merged);
                    }
                    return Ok(true);
                }
                suspects.retain(|&p| p != child);
            }
            pid = child;
        }
        Ok(false)
    }
}
