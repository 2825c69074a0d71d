//! `check_integrity` of the in-page logging engines: the kit's invariants (module doc),
//! then the policy's own ([`LogPolicy::check_block`], [`LogPolicy::check_tree`]).

use super::core::{Core, Place};
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
        // Blocks: free, pending and used partition the NAND; members are unique and located.
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
        let mut located = 0;
        for (&b, blk) in &self.blocks {
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
            let data_end = blk.log_start;
            if blk.next_sector as u32 > self.geo.ppb * self.geo.spp
                || (blk.next_sector as u32) < blk.log_start * self.geo.spp
            {
                return Err(broken(format!(
                    "block {b}: next log sector {} outside its log area",
                    blk.next_sector
                )));
            }
            for m in &blk.members {
                if self.location.get(&m.node) != Some(&b) {
                    return Err(broken(format!(
                        "node {} of block {b} is located elsewhere",
                        m.node
                    )));
                }
                located += 1;
                if let Place::Slot(p) = m.place {
                    if p + self.geo.np > data_end {
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
            }
        }
        if located != self.location.len() {
            return Err(broken(format!(
                "{} nodes located, {located} block members",
                self.location.len()
            )));
        }
        // Tree: order, fences, levels, capacity; every located node reachable once; frames
        // agree with flash.
        let mut levels: Vec<Vec<u64>> = vec![Vec::new(); self.height as usize];
        let mut visited = HashSet::new();
        let mut leaf_entries = 0u64;
        let mut stack = vec![(
            self.root,
            None::<u64>,
            None::<u64>,
            self.height as usize - 1,
        )];
        while let Some((id, lo, hi, want)) = stack.pop() {
            if !visited.insert(id) {
                return Err(broken(format!("node {id} is reachable twice")));
            }
            let img = self.current(id)?;
            if let Some(log) = self.cache().frames.get(&id).map(|f| f.log.clone()) {
                let mut flash = self.materialize(id, None)?;
                let recs = format::decode_records(&log)
                    .ok_or_else(|| broken(format!("node {id}: bad in-memory log")))?;
                for r in &recs {
                    if let format::Rec::Init(_) = r {
                        continue;
                    }
                    format::apply(&mut flash.entries, r);
                }
                if flash != img {
                    return Err(broken(format!(
                        "node {id}: flash version plus in-memory log differs from its frame"
                    )));
                }
            }
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
            levels[self.height as usize - 1 - want].push(id);
            if img.level == 0 {
                for &(k, _) in &img.entries {
                    if lo.is_some_and(|l| k < l) || hi.is_some_and(|h| k >= h) {
                        return Err(broken(format!(
                            "leaf {id}: key {k} outside its fences {lo:?}..{hi:?}"
                        )));
                    }
                }
                leaf_entries += img.entries.len() as u64;
                continue;
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
                stack.push((img.entries[i].1, clo, chi, want - 1));
            }
        }
        if visited.len() != self.location.len() {
            return Err(broken(format!(
                "{} nodes reachable, {} stored",
                visited.len(),
                self.location.len()
            )));
        }
        if leaf_entries != self.entries {
            return Err(broken(format!(
                "{leaf_entries} entries in leaves, {} counted",
                self.entries
            )));
        }
        P::check_tree(self, &levels).map_err(broken)
    }
}
