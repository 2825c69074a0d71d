//! Page-level mapping with greedy garbage collection.
//!
//! Every write (host or copy) goes to the next page of the active block. When the active
//! block is full the first free block becomes active; if that took the last free block,
//! garbage collection runs: the victim is the block, other than the active one, with the
//! fewest current pages (greedy; the lowest block number on a tie); its current pages are
//! copied in page order to the active block and it is erased. A victim holds fewer than a
//! block of current pages because at least two blocks are spare, so its pages fit in the
//! fresh active block and one block is free again.
//!
//! After `open` the active block is the partially programmed block written last (its
//! erased tail is used); every other block without a current page (stale copies, or
//! pages of an erase or programs a crash cut) is erased; other partially programmed blocks
//! are treated as full until garbage collection takes them. If no block is free even so (a
//! crash inside a garbage collection), the collection is finished into the active block's
//! tail.

use super::{Core, Ftl, FtlKind, FtlStats};
use crate::error::{Error, Result};
use crate::sim::nand::Nand;

/// Page-level FTL. See the module documentation.
pub struct PageFtl {
    core: Core,
    active: Option<u32>,
}

impl PageFtl {
    pub(crate) fn open(core: Core) -> Result<PageFtl> {
        let active = (0..core.blocks)
            .filter(|&b| {
                core.nand.highest_programmed_page(b).is_some() && core.next_page(b).is_some()
            })
            .max_by_key(|&b| core.block_seq[b as usize]);
        let mut ftl = PageFtl { core, active };
        // Blocks without a current page (stale copies, an erase or programs a crash cut)
        // are erased now, so the free list is whole again.
        for b in 0..ftl.core.blocks {
            if Some(b) != active
                && ftl.core.valid[b as usize] == 0
                && ftl.core.nand.highest_programmed_page(b).is_some()
            {
                ftl.core.erase(b)?;
            }
        }
        if ftl.core.free.is_empty() {
            // A crash cut a garbage collection: finish it into the active block's tail (the
            // victim's uncopied pages fit where the copies would have gone).
            let room = active
                .and_then(|b| ftl.core.next_page(b).map(|p| ftl.core.ppb - p))
                .unwrap_or(0);
            let c = &ftl.core;
            let victim = (0..c.blocks)
                .filter(|&b| Some(b) != active && c.nand.highest_programmed_page(b).is_some())
                .min_by_key(|&b| (c.valid[b as usize], b));
            match (victim, active) {
                (Some(v), Some(a)) if c.valid[v as usize] <= room => ftl.collect_into(v, a)?,
                _ => {
                    return Err(Error::InvalidArgument(format!(
                        "page FTL: no free block at open and no victim fits the active block \
                         ({active:?}, room {room}; victim {victim:?} with {:?} current pages; \
                         current pages per block {:?})",
                        victim.map(|v| c.valid[v as usize]),
                        c.valid
                    )))
                }
            }
        }
        Ok(ftl)
    }

    /// The page the next program goes to, running garbage collection when needed.
    fn next(&mut self) -> Result<(u32, u32)> {
        if let Some(b) = self.active {
            if let Some(p) = self.core.next_page(b) {
                return Ok((b, p));
            }
        }
        let b = self.core.alloc()?;
        self.active = Some(b);
        if self.core.free.is_empty() {
            self.collect(b)?;
        }
        let p = self.core.next_page(b).ok_or_else(|| {
            Error::InvalidArgument("page FTL: garbage collection filled the active block".into())
        })?;
        Ok((b, p))
    }

    /// Greedy garbage collection of one victim into the (fresh) active block.
    fn collect(&mut self, active: u32) -> Result<()> {
        let c = &self.core;
        let victim = (0..c.blocks)
            .filter(|&b| b != active && c.nand.highest_programmed_page(b).is_some())
            .min_by_key(|&b| (c.valid[b as usize], b))
            .ok_or_else(|| {
                Error::InvalidArgument("page FTL: no garbage collection victim".into())
            })?;
        if c.valid[victim as usize] >= c.ppb {
            return Err(Error::InvalidArgument(
                "page FTL: every block is full of current pages".into(),
            ));
        }
        self.collect_into(victim, active)
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
    fn logical_pages(&self) -> u64 {
        self.core.logical_pages()
    }
    fn read(&mut self, lpn: u64, buf: &mut [u8]) -> Result<()> {
        self.core.check_lpn(lpn, "read")?;
        self.core.check_len(buf.len(), "read", lpn)?;
        self.core.stats.host_reads += 1;
        self.core.read_current(lpn, buf)
    }
    fn write(&mut self, lpn: u64, buf: &[u8]) -> Result<()> {
        self.core.check_lpn(lpn, "write")?;
        self.core.check_len(buf.len(), "write", lpn)?;
        self.core.stats.host_writes += 1;
        let (b, p) = self.next()?;
        self.core.program(b, p, lpn, buf)
    }
    fn trim(&mut self, lpn: u64) -> Result<()> {
        self.core.check_lpn(lpn, "trim")?;
        self.core.trim(lpn);
        Ok(())
    }
    fn stats(&self) -> FtlStats {
        self.core.stats.clone()
    }
    fn nand(&self) -> &Nand {
        &self.core.nand
    }
    fn nand_mut(&mut self) -> &mut Nand {
        &mut self.core.nand
    }
    fn reset_stats(&mut self) {
        self.core.stats = FtlStats::default();
        self.core.nand.reset_stats();
    }
    fn check(&self) -> Result<()> {
        self.core.check()
    }
}
