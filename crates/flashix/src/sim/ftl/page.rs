//! Page-level mapping with greedy garbage collection.
//!
//! Writes (host or copy) go to the next page of an active block. There is one active
//! block per stripe, and stripes are taken in turn: stripe `s` takes its blocks from chip
//! `s` (channel and way as in `Nand`'s timing model) while that chip has a free block, so
//! consecutive writes of a batch land on different chips and overlap. There are
//! `min(channels * ways, spare blocks - 1)` stripes (one with one chip).
//!
//! When an active block is full a free block replaces it; if that took the last free
//! block, garbage collection runs: the victim is the block, other than the active ones,
//! with the fewest current pages (greedy; the lowest block number on a tie); its current
//! pages are copied in page order to the fresh active block and it is erased. A victim
//! holds fewer than a block of current pages because there are more spare blocks than
//! stripes, so its pages fit in the fresh block and one block is free again.
//!
//! After `open` the active blocks are the partially programmed blocks written last (their
//! erased tails are used); every other block without a current page (stale copies, or
//! pages of an erase or programs a crash cut) is erased; other partially programmed blocks
//! are treated as full until garbage collection takes them. If no block is free even so (a
//! crash inside a garbage collection), the collection is finished into an active block's
//! tail.

use super::{Core, Ftl, FtlKind, FtlStats};
use crate::error::{Error, Result};
use crate::sim::nand::Nand;

/// Page-level FTL. See the module documentation.
pub struct PageFtl {
    core: Core,
    /// The active block of each stripe.
    active: Vec<Option<u32>>,
    /// The stripe the next write goes to.
    turn: usize,
}

impl PageFtl {
    pub(crate) fn open(core: Core) -> Result<PageFtl> {
        let cfg = core.nand.config();
        let spare = (core.blocks - core.logical_blocks) as usize;
        let stripes = ((cfg.channels * cfg.ways) as usize).min(spare - 1).max(1);
        let mut partial: Vec<u32> = (0..core.blocks)
            .filter(|&b| {
                core.nand.highest_programmed_page(b).is_some() && core.next_page(b).is_some()
            })
            .collect();
        partial.sort_by_key(|&b| std::cmp::Reverse((core.block_seq[b as usize], b)));
        partial.truncate(stripes);
        let mut active = vec![None; stripes];
        let mut rest = Vec::new();
        for b in partial {
            let s = chip_of(&core, b) % stripes;
            if active[s].is_none() {
                active[s] = Some(b);
            } else {
                rest.push(b);
            }
        }
        for b in rest {
            if let Some(slot) = active.iter_mut().find(|a| a.is_none()) {
                *slot = Some(b);
            }
        }
        let mut ftl = PageFtl {
            core,
            active,
            turn: 0,
        };
        // Blocks without a current page (stale copies, an erase or programs a crash cut)
        // are erased now, so the free list is whole again.
        for b in 0..ftl.core.blocks {
            if !ftl.is_active(b)
                && ftl.core.valid[b as usize] == 0
                && ftl.core.nand.highest_programmed_page(b).is_some()
            {
                ftl.core.erase(b)?;
            }
        }
        if ftl.core.free.is_empty() {
            // A crash cut a garbage collection: finish it into an active block's tail (the
            // victim's uncopied pages fit where the copies would have gone).
            let victim = ftl.victim();
            let need = victim.map(|v| ftl.core.valid[v as usize]);
            let dest = ftl.active.iter().flatten().copied().find(|&a| {
                let room = ftl.core.next_page(a).map_or(0, |p| ftl.core.ppb - p);
                need.is_some_and(|n| n <= room)
            });
            match (victim, dest) {
                (Some(v), Some(a)) => ftl.collect_into(v, a)?,
                _ => {
                    return Err(Error::no_space(format!(
                        "page FTL: no free block at open and no garbage collection victim \
                         fits an active block (victim {victim:?} with {need:?} current pages)"
                    )))
                }
            }
        }
        Ok(ftl)
    }

    fn is_active(&self, b: u32) -> bool {
        self.active.contains(&Some(b))
    }

    /// The greedy victim: fewest current pages among programmed blocks not active.
    fn victim(&self) -> Option<u32> {
        let c = &self.core;
        (0..c.blocks)
            .filter(|&b| !self.is_active(b) && c.nand.highest_programmed_page(b).is_some())
            .min_by_key(|&b| (c.valid[b as usize], b))
    }

    /// A free block, on chip `stripe` when it has one.
    fn alloc_for(&mut self, stripe: usize) -> Result<u32> {
        let stripes = self.active.len();
        let pos = self
            .core
            .free
            .iter()
            .position(|&b| chip_of(&self.core, b) % stripes == stripe);
        match pos.and_then(|i| self.core.free.remove(i)) {
            Some(b) => Ok(b),
            None => self.core.alloc(),
        }
    }

    /// The page the next program goes to, running garbage collection when needed.
    fn next(&mut self) -> Result<(u32, u32)> {
        let s = self.turn;
        self.turn = (s + 1) % self.active.len();
        if let Some(b) = self.active[s] {
            if let Some(p) = self.core.next_page(b) {
                return Ok((b, p));
            }
        }
        let b = self.alloc_for(s)?;
        self.active[s] = Some(b);
        if self.core.free.is_empty() {
            self.collect(b)?;
        }
        let p = self.core.next_page(b).ok_or_else(|| {
            Error::no_space("page FTL: garbage collection filled the active block")
        })?;
        Ok((b, p))
    }

    /// Greedy garbage collection of one victim into the (fresh) active block `dest`.
    fn collect(&mut self, dest: u32) -> Result<()> {
        let victim = self
            .victim()
            .ok_or_else(|| Error::no_space("page FTL: garbage collection found no victim"))?;
        if self.core.valid[victim as usize] >= self.core.ppb {
            return Err(Error::no_space(
                "page FTL: garbage collection (every block is full of current pages)",
            ));
        }
        self.collect_into(victim, dest)
    }

    /// Copy `victim`'s current pages to the next pages of `active` and erase it.
    fn collect_into(&mut self, victim: u32, active: u32) -> Result<()> {
        for p in 0..self.core.ppb {
            let lpn = self.core.owner[self.core.ppn(victim, p) as usize];
            if lpn != super::NONE {
                let dest = self.core.next_page(active).ok_or_else(|| {
                    Error::InvalidArgument("page FTL: garbage collection overflowed".into())
                })?;
                self.core.copy(lpn, active, dest)?;
            }
        }
        self.core.erase(victim)?;
        self.core.stats.gc_victims += 1;
        Ok(())
    }
}

impl Ftl for PageFtl {
    fn kind(&self) -> FtlKind {
        FtlKind::Page
    }
    fn write(&mut self, lpn: u64, buf: &[u8]) -> Result<()> {
        self.core.host_write(lpn, buf.len())?;
        let (b, p) = self.next()?;
        self.core.program(b, p, lpn, buf)
    }
    core_ftl_methods!();
    fn check(&self) -> Result<()> {
        self.core.check()
    }
}

/// The chip (channel-major) of `block`, as in `Nand`'s timing model.
fn chip_of(core: &Core, block: u32) -> usize {
    let cfg = core.nand.config();
    let ch = cfg.channels;
    ((block % ch) * cfg.ways + (block / ch) % cfg.ways) as usize
}
