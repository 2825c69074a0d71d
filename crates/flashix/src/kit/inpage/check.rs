//! `check_integrity` of the in-page logging engines: the kit's invariants (module doc),
//! then the policy's own ([`LogPolicy::check_block`], [`LogPolicy::check_tree`]).

use super::core::{Block, Core, Member, Place};
use super::format::{self, NodeImage, NAND_FILE};
use super::policy::LogPolicy;
use crate::error::{Error, Result};
use std::collections::HashSet;

fn broken(d: String) -> Error {
    Error::corruption(NAND_FILE, None, format!("integrity: {d}"))
}

impl<P: LogPolicy> Core<P> {
    /// The node's current version: its frame if resident, else read from flash.
    fn current(&mut self, id: u64) -> Result<NodeImage> {
        match self.cache().frames.get(&id).map(|f| f.img.clone()) {
            Some(img) => Ok(img),
            None => self.materialize(id, None),
        }
    }

    pub fn check(&mut self) -> Result<()> {
        self.nand_mut().check()?;
        self.check_block_partition()?;
        self.check_blocks()?;
        let levels = self.check_tree_shape()?;
        P::check_tree(self, &levels).map_err(broken)
    }

    /// Blocks: free, pending and used partition the NAND; no block is listed twice.
    fn check_block_partition(&mut self) -> Result<()> {
        let total = self.nand_mut().config().blocks as usize;
        let mut seen = HashSet::new();
        for &b in self
            .free
            .iter()
            .chain(self.pending.iter())
            .chain(self.blocks.keys())
        {
            if !seen.insert(b) {
                return Err(broken(format!("block {b} is both free/pending and in use")));
            }
        }
        if seen.len() != total {
            return Err(broken(format!(
                "{} of {total} blocks accounted for",
                seen.len()
            )));
        }
        Ok(())
    }

    /// Every used block is well formed, and its members are exactly the located nodes.
    fn check_blocks(&self) -> Result<()> {
        let mut located = 0;
        for (&b, blk) in &self.blocks {
            self.check_block(b, blk)?;
            for m in &blk.members {
                self.check_member(b, blk, m)?;
                located += 1;
            }
        }
        if located != self.location.len() {
            return Err(broken(format!(
                "{} nodes located, {located} block members",
                self.location.len()
            )));
        }
        Ok(())
    }

    /// One used block: member count, non-empty unless it is the allocation block, the
    /// policy's own rules, and a log cursor inside its log area.
    fn check_block(&self, b: u32, blk: &Block) -> Result<()> {
        if blk.members.len() > self.geo.max_members {
            return Err(broken(format!(
                "block {b} holds {} nodes, at most {}",
                blk.members.len(),
                self.geo.max_members
            )));
        }
        if blk.members.is_empty() && self.alloc_block != Some(b) {
            return Err(broken(format!("block {b} is in use but holds no node")));
        }
        P::check_block(&self.geo, b, blk).map_err(broken)?;
        if blk.next_sector as u32 > self.geo.ppb * self.geo.spp
            || (blk.next_sector as u32) < blk.log_start * self.geo.spp
        {
            return Err(broken(format!(
                "block {b}: next log sector {} outside its log area",
                blk.next_sector
            )));
        }
        Ok(())
    }

    /// One member of block `b`: located there, its slot in the data area, a ghost with a log
    /// sector, and no sector past the block's log cursor.
    fn check_member(&self, b: u32, blk: &Block, m: &Member) -> Result<()> {
        if self.location.get(&m.node) != Some(&b) {
            return Err(broken(format!(
                "node {} of block {b} is located elsewhere",
                m.node
            )));
        }
        if let Place::Slot(p) = m.place {
            if p + self.geo.np > blk.log_start {
                return Err(broken(format!(
                    "node {} of block {b} lies in the log area",
                    m.node
                )));
            }
        }
        if m.place == Place::Ghost && m.sectors.is_empty() {
            return Err(broken(format!(
                "ghost node {} of block {b} has no log sector",
                m.node
            )));
        }
        if m.sectors.iter().any(|&s| s >= blk.next_sector) {
            return Err(broken(format!(
                "node {} of block {b} names an unwritten sector",
                m.node
            )));
        }
        Ok(())
    }

    /// Tree: order, fences, levels, capacity; every located node reachable once; frames agree
    /// with flash. Returns the node ids of each level, root level first, in key order.
    fn check_tree_shape(&mut self) -> Result<Vec<Vec<u64>>> {
        let mut walk = Walk {
            levels: vec![Vec::new(); self.height as usize],
            visited: HashSet::new(),
            leaf_entries: 0,
            stack: vec![Visit {
                id: self.root,
                lo: None,
                hi: None,
                level: self.height as usize - 1,
            }],
        };
        while let Some(v) = walk.stack.pop() {
            self.check_node(v, &mut walk)?;
        }
        if walk.visited.len() != self.location.len() {
            return Err(broken(format!(
                "{} nodes reachable, {} stored",
                walk.visited.len(),
                self.location.len()
            )));
        }
        if walk.leaf_entries != self.entries {
            return Err(broken(format!(
                "{} entries in leaves, {} counted",
                walk.leaf_entries, self.entries
            )));
        }
        Ok(walk.levels)
    }

    /// One node of the walk: visited once, its frame consistent, its level, capacity and key
    /// order; a leaf's keys within its fences, an internal node's children pushed on the stack.
    fn check_node(&mut self, v: Visit, walk: &mut Walk) -> Result<()> {
        let Visit {
            id,
            lo,
            hi,
            level: want,
        } = v;
        if !walk.visited.insert(id) {
            return Err(broken(format!("node {id} is reachable twice")));
        }
        let img = self.current(id)?;
        self.check_frame(id, &img)?;
        if img.level as usize != want {
            return Err(broken(format!(
                "node {id} at level {}, expected {want}",
                img.level
            )));
        }
        if img.entries.len() > self.geo.cap(img.level) {
            return Err(broken(format!(
                "node {id} holds {} entries, over capacity",
                img.entries.len()
            )));
        }
        for w in img.entries.windows(2) {
            if w[0].0 >= w[1].0 {
                return Err(broken(format!("node {id}: keys not increasing")));
            }
        }
        walk.levels[self.height as usize - 1 - want].push(id);
        if img.level == 0 {
            for &(k, _) in &img.entries {
                if lo.is_some_and(|l| k < l) || hi.is_some_and(|h| k >= h) {
                    return Err(broken(format!(
                        "leaf {id}: key {k} outside its fences {lo:?}..{hi:?}"
                    )));
                }
            }
            walk.leaf_entries += img.entries.len() as u64;
            return Ok(());
        }
        if img.entries.is_empty() {
            return Err(broken(format!("internal node {id} has no child")));
        }
        for (i, &(k, _)) in img.entries.iter().enumerate().skip(1) {
            if lo.is_some_and(|l| k <= l) || hi.is_some_and(|h| k >= h) {
                return Err(broken(format!(
                    "node {id}: separator {k} of slot {i} outside {lo:?}..{hi:?}"
                )));
            }
        }
        // Push right to left so that the traversal visits each level in key order.
        let n = img.entries.len();
        for i in (0..n).rev() {
            let clo = if i == 0 { lo } else { Some(img.entries[i].0) };
            let chi = img.entries.get(i + 1).map(|e| e.0).or(hi);
            walk.stack.push(Visit {
                id: img.entries[i].1,
                lo: clo,
                hi: chi,
                level: want - 1,
            });
        }
        Ok(())
    }

    /// A resident node with an in-memory log: its flash version with that log applied is its
    /// frame.
    fn check_frame(&mut self, id: u64, img: &NodeImage) -> Result<()> {
        let Some(log) = self.cache().frames.get(&id).map(|f| f.log.clone()) else {
            return Ok(());
        };
        let mut flash = self.materialize(id, None)?;
        let recs = format::decode_records(&log)
            .ok_or_else(|| broken(format!("node {id}: bad in-memory log")))?;
        for r in &recs {
            if let format::Rec::Init(_) = r {
                continue;
            }
            format::apply(&mut flash.entries, r);
        }
        if flash != *img {
            return Err(broken(format!(
                "node {id}: flash version plus in-memory log differs from its frame"
            )));
        }
        Ok(())
    }
}

/// A node still to be checked, with the fences its parent gives it and the level it must be at.
struct Visit {
    id: u64,
    lo: Option<u64>,
    hi: Option<u64>,
    level: usize,
}

/// What the tree walk gathers: the nodes of each level, the nodes seen, the entries in leaves,
/// and the nodes still to visit.
struct Walk {
    levels: Vec<Vec<u64>>,
    visited: HashSet<u64>,
    leaf_entries: u64,
    stack: Vec<Visit>,
}
