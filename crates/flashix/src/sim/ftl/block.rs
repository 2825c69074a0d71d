//! Block-level mapping with replacement blocks in the FMAX style (the block-mapping FTL
//! the d-IPL paper's Table 6 calls FMAX; Chung et al., "A survey of flash translation
//! layer", J. Syst. Archit. 2009, §3.2).
//!
//! Logical block `lbn` has a data block `D` and at most one replacement block `R`. A write
//! of offset `o`:
//! 1. `lbn` has no data block: take a free block as `D`, program `D[o]`;
//! 2. `D[o]` programmable (above `D`'s write point, NAND rule 3): program `D[o]`;
//! 3. `R` exists and `R[o]` programmable: program `R[o]`;
//! 4. no `R`: take a free block as `R` (when `log_blocks` replacement blocks exist, first
//!    merge the logical block of the oldest one), program `R[o]`;
//! 5. else full merge: a free block `N` gets, offset by offset, the new page at `o` and the
//!    current version of every other offset (copies); `D` and `R` are erased; `N` is `D`.
//!
//! Block budget: data blocks <= logical blocks, replacement blocks <= `log_blocks` <=
//! spare blocks - 2, so two blocks are free before a merge takes its `N`.

use super::{Core, Ftl, FtlKind, FtlStats};
use crate::error::Result;
use crate::sim::nand::Nand;
use std::collections::VecDeque;

/// FMAX-style block-mapped FTL. See the module documentation.
pub struct BlockFtl {
    core: Core,
    data: Vec<Option<u32>>,
    repl: Vec<Option<u32>>,
    /// Logical blocks owning a replacement block, oldest first.
    fifo: VecDeque<u32>,
}

impl BlockFtl {
    pub(crate) fn open(mut core: Core) -> Result<BlockFtl> {
        let data = core.recover_block_mapped()?;
        let n = core.logical_blocks as usize;
        Ok(BlockFtl {
            core,
            data,
            repl: vec![None; n],
            fifo: VecDeque::new(),
        })
    }

    /// Step 5 (and reclaiming a replacement block): merge `lbn` into a fresh block.
    fn merge(&mut self, lbn: u32, host: Option<(u32, &[u8])>) -> Result<()> {
        let n = self.core.alloc()?;
        self.core.merge_into(lbn, n, 0, host)?;
        if let Some(d) = self.data[lbn as usize].replace(n) {
            self.core.erase(d)?;
        }
        if let Some(r) = self.repl[lbn as usize].take() {
            self.core.erase(r)?;
            self.fifo.retain(|&l| l != lbn);
        }
        self.core.stats.full_merges += 1;
        Ok(())
    }
}

impl Ftl for BlockFtl {
    fn kind(&self) -> FtlKind {
        FtlKind::Block
    }
    fn write(&mut self, lpn: u64, buf: &[u8]) -> Result<()> {
        self.core.host_write(lpn, buf.len())?;
        let (lbn, o) = self.core.split(lpn);
        let d = match self.data[lbn as usize] {
            Some(d) => d,
            None => {
                let d = self.core.alloc()?;
                self.data[lbn as usize] = Some(d);
                d
            }
        };
        if self.core.writable(d, o) {
            return self.core.program(d, o, lpn, buf);
        }
        match self.repl[lbn as usize] {
            Some(r) if self.core.writable(r, o) => self.core.program(r, o, lpn, buf),
            Some(_) => self.merge(lbn, Some((o, buf))),
            None => {
                if self.fifo.len() as u32 >= self.core.log_limit {
                    if let Some(victim) = self.fifo.front().copied() {
                        self.merge(victim, None)?;
                    }
                }
                let r = self.core.alloc()?;
                self.repl[lbn as usize] = Some(r);
                self.fifo.push_back(lbn);
                self.core.program(r, o, lpn, buf)
            }
        }
    }
    core_ftl_methods!();
    fn check(&self) -> Result<()> {
        self.core.check()?;
        for (lbn, d) in self.data.iter().enumerate() {
            if let Some(d) = *d {
                check_own(&self.core, d, lbn as u32, "data")?;
            }
            if let Some(r) = self.repl[lbn] {
                check_own(&self.core, r, lbn as u32, "replacement")?;
            }
        }
        Ok(())
    }
}

/// A data or replacement block holds only its logical block's pages at their offsets.
pub(super) fn check_own(core: &Core, block: u32, lbn: u32, what: &str) -> Result<()> {
    if core.holds_own_pages(block, lbn) {
        Ok(())
    } else {
        Err(crate::error::Error::corruption(
            "nand",
            None,
            format!("{what} block {block} of logical block {lbn} holds a page not at its offset"),
        ))
    }
}
