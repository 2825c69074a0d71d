//! BAST: block-associative sector translation (Kim, Kim, Noh, Min, Cho, "A space-efficient
//! flash translation layer for CompactFlash systems", IEEE Trans. Consumer Electronics 2002).
//!
//! Logical block `lbn` has a data block `D` and at most one log block `L`, written in page
//! order whatever the offsets (the spare records which logical page each page holds). A
//! write of offset `o`:
//! 1. no `D`: take a free block as `D`;
//! 2. `D[o]` programmable (above `D`'s write point): program `D[o]`;
//! 3. `L` has a free page: program it;
//! 4. `L` full: merge `lbn` (below), then start again at 2;
//! 5. no `L`: when `log_blocks` log blocks exist, merge the logical block of the oldest
//!    one; take a free block as `L` and program its page 0.
//!
//! Merge of `lbn` with log block `L` holding `k` pages:
//! - **switch**: `L` holds offsets `0..ppb` in order, all current: erase `D`, `L` is `D`;
//! - **partial**: `L` holds offsets `0..k` in order, all current, `k < ppb`: copy the
//!   current versions of offsets `k..ppb` (from `D`) into `L[k..]`, erase `D`, `L` is `D`;
//! - **full**: a free block `N` gets the current version of every offset; erase `D`, `L`.

use super::{block::check_own, Core, Ftl, FtlKind, FtlStats};
use crate::error::Result;
use crate::sim::nand::Nand;
use std::collections::VecDeque;

/// BAST FTL. See the module documentation.
pub struct BastFtl {
    core: Core,
    data: Vec<Option<u32>>,
    log: Vec<Option<u32>>,
    /// Logical blocks owning a log block, oldest first.
    fifo: VecDeque<u32>,
}

impl BastFtl {
    pub(crate) fn open(mut core: Core) -> Result<BastFtl> {
        let data = core.recover_block_mapped()?;
        let n = core.logical_blocks as usize;
        Ok(BastFtl {
            core,
            data,
            log: vec![None; n],
            fifo: VecDeque::new(),
        })
    }

    fn merge(&mut self, lbn: u32) -> Result<()> {
        let Some(l) = self.log[lbn as usize].take() else {
            return Ok(());
        };
        self.fifo.retain(|&x| x != lbn);
        let ppb = self.core.ppb;
        let k = self
            .core
            .nand
            .highest_programmed_page(l)
            .map_or(0, |t| t + 1);
        let old = self.data[lbn as usize];
        if self.core.in_order_prefix(l, lbn, k) {
            if k == ppb {
                self.core.stats.switch_merges += 1;
            } else {
                self.core.merge_into(lbn, l, k, None)?;
                self.core.stats.partial_merges += 1;
            }
            self.data[lbn as usize] = Some(l);
        } else {
            let n = self.core.alloc()?;
            self.core.merge_into(lbn, n, 0, None)?;
            self.core.erase(l)?;
            self.data[lbn as usize] = Some(n);
            self.core.stats.full_merges += 1;
        }
        if let Some(d) = old {
            self.core.erase(d)?;
        }
        Ok(())
    }
}

impl Ftl for BastFtl {
    fn kind(&self) -> FtlKind {
        FtlKind::Bast
    }
    fn write(&mut self, lpn: u64, buf: &[u8]) -> Result<()> {
        self.core.host_write(lpn, buf.len())?;
        let (lbn, o) = self.core.split(lpn);
        loop {
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
            match self.log[lbn as usize] {
                Some(l) => match self.core.next_page(l) {
                    Some(p) => return self.core.program(l, p, lpn, buf),
                    None => self.merge(lbn)?,
                },
                None => {
                    if self.fifo.len() as u32 >= self.core.log_limit {
                        if let Some(victim) = self.fifo.front().copied() {
                            self.merge(victim)?;
                        }
                    }
                    let l = self.core.alloc()?;
                    self.log[lbn as usize] = Some(l);
                    self.fifo.push_back(lbn);
                    return self.core.program(l, 0, lpn, buf);
                }
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
            if let Some(l) = self.log[lbn] {
                for lb in self.core.lbns_in(l) {
                    if lb != lbn as u32 {
                        return Err(crate::error::Error::corruption(
                            "nand",
                            None,
                            format!("log block {l} of logical block {lbn} holds a page of {lb}"),
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}
