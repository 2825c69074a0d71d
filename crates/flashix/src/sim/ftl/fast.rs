//! FAST: fully-associative sector translation (Lee, Park, Chung, Lee, Park, Song, "A log
//! buffer-based flash translation layer using fully-associative sector translation", ACM
//! TECS 2007).
//!
//! Logical block `lbn` has a data block `D`. The log blocks are one sequential log block
//! `SW` (owned by one logical block, offset `i` at page `i`) and up to `log_blocks - 1`
//! random log blocks `RW`, shared by every logical block and written as a ring. A write of
//! offset `o`:
//! 1. no `D`: take a free block as `D`;
//! 2. `D[o]` programmable (above `D`'s write point): program `D[o]`;
//! 3. `o == 0`: merge `SW` if there is one (below), then start again at 2 (the merge may
//!    have given `lbn` a new `D`); if `D[0]` is still taken, a free block becomes `SW` for
//!    `lbn` and `SW[0]` is programmed;
//! 4. `SW` belongs to `lbn` and `o` is its next page: program `SW[o]`; if `SW` is now full,
//!    merge it;
//! 5. otherwise append to the newest `RW`; when it is full, take a free block as a new `RW`,
//!    and when `log_blocks - 1` exist, first reclaim the oldest: a **full merge** of every
//!    logical block with a current page in it (in page order), then its erase.
//!
//! Merge of `SW` (owner `lbn`, `k` pages, offsets `0..k` in order): **switch** when `k ==
//! ppb` and every page is current (erase `D`, `SW` is `D`); **partial** when `k < ppb` and
//! every page is current (copy the current versions of offsets `k..ppb`, from `D` or the
//! `RW` blocks, into `SW[k..]`, erase `D`, `SW` is `D`); otherwise a **full merge** of
//! `lbn`.
//!
//! Full merge of `lbn`: a free block `N` gets the current version of every offset (from
//! `D`, `SW`, `RW`s); `D` and an `SW` of `lbn` are erased; `N` is `D`. `RW` pages become
//! stale; an `RW` block is erased only when it is reclaimed.

use super::{block::check_own, Core, Ftl, FtlKind, FtlStats};
use crate::error::{Error, Result};
use crate::sim::nand::Nand;
use std::collections::VecDeque;

/// FAST FTL. See the module documentation.
pub struct FastFtl {
    core: Core,
    data: Vec<Option<u32>>,
    /// The sequential log block: (owner, block).
    sw: Option<(u32, u32)>,
    /// Random log blocks, oldest first.
    rw: VecDeque<u32>,
}

impl FastFtl {
    pub(crate) fn open(mut core: Core) -> Result<FastFtl> {
        let data = core.recover_block_mapped()?;
        Ok(FastFtl {
            core,
            data,
            sw: None,
            rw: VecDeque::new(),
        })
    }

    fn rw_limit(&self) -> usize {
        self.core.log_limit as usize - 1
    }

    fn merge_sw(&mut self) -> Result<()> {
        let Some((lbn, s)) = self.sw else {
            return Ok(());
        };
        let k = self
            .core
            .nand
            .highest_programmed_page(s)
            .map_or(0, |t| t + 1);
        if !self.core.in_order_prefix(s, lbn, k) {
            return self.full_merge(lbn);
        }
        self.sw = None;
        if k == self.core.ppb {
            self.core.stats.switch_merges += 1;
        } else {
            self.core.merge_into(lbn, s, k, None)?;
            self.core.stats.partial_merges += 1;
        }
        if let Some(d) = self.data[lbn as usize].replace(s) {
            self.core.erase(d)?;
        }
        Ok(())
    }

    fn full_merge(&mut self, lbn: u32) -> Result<()> {
        let n = self.core.alloc()?;
        self.core.merge_into(lbn, n, 0, None)?;
        if let Some(d) = self.data[lbn as usize].replace(n) {
            self.core.erase(d)?;
        }
        if let Some((owner, s)) = self.sw {
            if owner == lbn {
                self.sw = None;
                self.core.erase(s)?;
            }
        }
        self.core.stats.full_merges += 1;
        Ok(())
    }

    /// Step 5: the page of the newest random log block to program next.
    fn rw_page(&mut self) -> Result<(u32, u32)> {
        if let Some(&b) = self.rw.back() {
            if let Some(p) = self.core.next_page(b) {
                return Ok((b, p));
            }
        }
        if self.rw.len() >= self.rw_limit() {
            if let Some(victim) = self.rw.pop_front() {
                for lbn in self.core.lbns_in(victim) {
                    self.full_merge(lbn)?;
                }
                self.core.erase(victim)?;
            }
        }
        let b = self.core.alloc()?;
        self.rw.push_back(b);
        Ok((b, 0))
    }
}

impl Ftl for FastFtl {
    fn kind(&self) -> FtlKind {
        FtlKind::Fast
    }
    fn write(&mut self, lpn: u64, buf: &[u8]) -> Result<()> {
        self.core.host_write(lpn, buf.len())?;
        let (lbn, o) = self.core.split(lpn);
        let mut merged = false;
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
            if o == 0 {
                if !merged && self.sw.is_some() {
                    self.merge_sw()?;
                    merged = true;
                    continue;
                }
                let s = self.core.alloc()?;
                self.sw = Some((lbn, s));
                return self.core.program(s, 0, lpn, buf);
            }
            break;
        }
        if let Some((owner, s)) = self.sw {
            if owner == lbn && self.core.next_page(s) == Some(o) {
                self.core.program(s, o, lpn, buf)?;
                if o + 1 == self.core.ppb {
                    self.merge_sw()?;
                }
                return Ok(());
            }
        }
        let (b, p) = self.rw_page()?;
        self.core.program(b, p, lpn, buf)
    }
    core_ftl_methods!();
    fn check(&self) -> Result<()> {
        self.core.check()?;
        for (lbn, d) in self.data.iter().enumerate() {
            if let Some(d) = *d {
                check_own(&self.core, d, lbn as u32, "data")?;
            }
        }
        if let Some((owner, s)) = self.sw {
            check_own(&self.core, s, owner, "sequential log")?;
        }
        if self.rw.len() > self.rw_limit() {
            return Err(Error::corruption(
                "nand",
                None,
                format!(
                    "FAST holds {} random log blocks, limit {}",
                    self.rw.len(),
                    self.rw_limit()
                ),
            ));
        }
        Ok(())
    }
}
