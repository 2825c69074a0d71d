//! The state and operations the four FTLs share ([`Core`]: the NAND, the map of current
//! versions and its reverse, valid counts, free blocks, the sequence counter, the scan that
//! rebuilds them at open and the block-mapped recovery), and `core_ftl_methods!`, the [`Ftl`]
//! methods every FTL serves from its `Core`. "Module doc" below means the parent module's
//! (Capacity, Format, Recovery).
//!
//! [`Ftl`]: super::Ftl

/// The [`Ftl`](super::Ftl) methods every FTL serves from its [`Core`] (`self.core`): size,
/// reads, trim, counters and the NAND (writes differ by FTL).
macro_rules! core_ftl_methods {
    () => {
        fn logical_pages(&self) -> u64 {
            self.core.logical_pages()
        }
        fn read(&mut self, lpn: u64, buf: &mut [u8]) -> Result<()> {
            self.core.check_lpn(lpn, "read")?;
            self.core.check_len(buf.len(), "read", lpn)?;
            self.core.stats.host_reads += 1;
            self.core.read_current(lpn, buf)
        }
        fn trim(&mut self, lpn: u64) -> Result<()> {
            self.core.check_lpn(lpn, "trim")?;
            self.core.trim(lpn);
            Ok(())
        }
        fn stats(&self) -> FtlStats {
            self.core.stats.clone()
        }
        fn log_limit(&self) -> u32 {
            self.core.log_limit
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
    };
}
use super::spare::{check_page, make_spare, parse_spare, spare_record_len, PageCheck};
use super::{FtlConfig, FtlKind, FtlStats};
use crate::error::{Error, Result};
use crate::sim::nand::{Nand, PageAddr, NAND_SECTOR};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// "No page" in the maps.
pub(super) const NONE: u64 = u64::MAX;

/// The state every FTL shares: the NAND, the page-level map of current versions (block
/// mapped FTLs keep it too, so reads and merges find a page wherever it is), valid counts,
/// free blocks and the sequence counter.
pub(crate) struct Core {
    pub nand: Nand,
    pub ppb: u32,
    pub blocks: u32,
    pub logical_blocks: u32,
    /// Spare blocks usable as log/replacement blocks.
    pub log_limit: u32,
    /// Logical page -> physical page of its current version (`NONE`: never written).
    pub loc: Vec<u64>,
    /// Physical page -> logical page whose current version it holds (`NONE`: not current).
    pub owner: Vec<u64>,
    /// Current versions per block.
    pub valid: Vec<u32>,
    /// Erased blocks, taken from the front, returned at the back.
    pub free: VecDeque<u32>,
    pub seq: u64,
    /// Highest sequence number of each block's pages (recovery: most recent block).
    pub block_seq: Vec<u64>,
    pub stats: FtlStats,
}

impl Core {
    pub(super) fn open(nand: Nand, cfg: &FtlConfig) -> Result<Core> {
        let nc = nand.config().clone();
        let need = spare_record_len(nc.sectors_per_page());
        if nc.spare_bytes_per_page() < need {
            return Err(Error::InvalidOptions(format!(
                "FTL needs {need} spare bytes per NAND page, the NAND has {}",
                nc.spare_bytes_per_page()
            )));
        }
        let op = cfg.over_provisioning;
        if !(0.0..1.0).contains(&op) {
            return Err(Error::InvalidOptions(format!(
                "over_provisioning {op} must be in [0, 1)"
            )));
        }
        let logical_blocks = (nc.blocks as f64 * (1.0 - op)).floor() as u32;
        let spare = nc.blocks - logical_blocks;
        // Block-mapped kinds keep two blocks free (module doc, Capacity); FAST needs room
        // for SW and one RW on top.
        let (min_logs, keep_free) = match cfg.kind {
            FtlKind::Page => (0, 2),
            FtlKind::Block | FtlKind::Bast => (1, 2),
            FtlKind::Fast => (2, 2),
        };
        let min_spare = min_logs + keep_free;
        if logical_blocks == 0 || spare < min_spare {
            return Err(Error::InvalidOptions(format!(
                "{} FTL on {} blocks with over-provisioning {op}: {logical_blocks} logical and \
                 {spare} spare blocks; it needs at least 1 logical and {min_spare} spare",
                cfg.kind, nc.blocks
            )));
        }
        let max_logs = spare - keep_free;
        let log_limit = if cfg.log_blocks == 0 {
            max_logs
        } else if cfg.log_blocks > max_logs || cfg.log_blocks < min_logs {
            return Err(Error::InvalidOptions(format!(
                "log_blocks {} must be {min_logs} to {max_logs} (spare blocks less two) for \
                 the {} FTL on {} blocks with over-provisioning {op}",
                cfg.log_blocks, cfg.kind, nc.blocks
            )));
        } else {
            cfg.log_blocks
        };
        let ppb = nc.pages_per_block;
        let lp = logical_blocks as u64 * ppb as u64;
        let mut core = Core {
            ppb,
            blocks: nc.blocks,
            logical_blocks,
            log_limit,
            loc: vec![NONE; lp as usize],
            owner: vec![NONE; nc.total_pages() as usize],
            valid: vec![0; nc.blocks as usize],
            free: VecDeque::new(),
            seq: 1,
            block_seq: vec![0; nc.blocks as usize],
            stats: FtlStats::default(),
            nand,
        };
        core.scan()?;
        Ok(core)
    }

    /// Rebuild `loc`, `owner`, `valid`, `free`, `seq` from the flash (module doc, Recovery).
    fn scan(&mut self) -> Result<()> {
        let pb = self.nand.config().page_bytes;
        let sp = self.nand.config().spare_bytes_per_page();
        let mut best = vec![0u64; self.loc.len()];
        let mut data = vec![0u8; pb];
        let mut spare = vec![0u8; sp];
        // A page's spare lies in one 512-byte sector of the medium when this holds, so a
        // torn write leaves it erased or whole: anything else is damage.
        let spare_atomic = NAND_SECTOR % sp == 0;
        let mut damaged: Vec<(u64, u64, u64)> = Vec::new();
        for b in 0..self.blocks {
            let Some(top) = self.nand.highest_programmed_page(b) else {
                self.free.push_back(b);
                continue;
            };
            for p in 0..=top {
                let addr = PageAddr::new(b, p);
                if self.nand.is_page_erased(addr) {
                    continue;
                }
                self.nand.read(addr, &mut data, &mut spare)?;
                let (lpn, seq) = match check_page(&data, &spare) {
                    PageCheck::Valid { lpn, seq } => (lpn, seq),
                    PageCheck::Torn => continue,
                    PageCheck::Damaged { lpn, seq } => {
                        damaged.push((lpn, seq, self.ppn(b, p)));
                        continue;
                    }
                    PageCheck::BadSpare if spare_atomic => {
                        return Err(Error::corruption(
                            "nand",
                            Some(self.ppn(b, p)),
                            format!("the FTL record in the spare area of {addr} is damaged"),
                        ));
                    }
                    PageCheck::BadSpare => continue,
                };
                self.seq = self.seq.max(seq + 1);
                self.block_seq[b as usize] = self.block_seq[b as usize].max(seq);
                if lpn < self.loc.len() as u64 && seq > best[lpn as usize] {
                    best[lpn as usize] = seq;
                    let old = self.loc[lpn as usize];
                    if old != NONE {
                        self.owner[old as usize] = NONE;
                        self.valid[(old / self.ppb as u64) as usize] -= 1;
                    }
                    let ppn = self.ppn(b, p);
                    self.loc[lpn as usize] = ppn;
                    self.owner[ppn as usize] = lpn;
                    self.valid[b as usize] += 1;
                }
            }
        }
        // A damaged page newer than every whole version of its logical page was that
        // page's current version: report it rather than fall back to an older one.
        for (lpn, seq, ppn) in damaged {
            if lpn < best.len() as u64 && seq > best[lpn as usize] {
                return Err(Error::corruption(
                    "nand",
                    Some(ppn),
                    format!(
                        "the current version of logical page {lpn} at {} is damaged",
                        self.addr(ppn)
                    ),
                ));
            }
        }
        Ok(())
    }

    pub fn logical_pages(&self) -> u64 {
        self.loc.len() as u64
    }

    pub fn ppn(&self, block: u32, page: u32) -> u64 {
        block as u64 * self.ppb as u64 + page as u64
    }

    pub fn addr(&self, ppn: u64) -> PageAddr {
        PageAddr::new(
            (ppn / self.ppb as u64) as u32,
            (ppn % self.ppb as u64) as u32,
        )
    }

    /// The logical block and offset of a logical page.
    pub fn split(&self, lpn: u64) -> (u32, u32) {
        (
            (lpn / self.ppb as u64) as u32,
            (lpn % self.ppb as u64) as u32,
        )
    }

    /// True when page `page` of `block` can be programmed now (erased and above the
    /// block's write point).
    pub fn writable(&self, block: u32, page: u32) -> bool {
        match self.nand.highest_programmed_page(block) {
            None => true,
            Some(t) => page > t,
        }
    }

    /// The next page of `block` in program order, if any.
    pub fn next_page(&self, block: u32) -> Option<u32> {
        match self.nand.highest_programmed_page(block) {
            None => Some(0),
            Some(t) if t + 1 < self.ppb => Some(t + 1),
            Some(_) => None,
        }
    }

    pub fn check_lpn(&self, lpn: u64, what: &str) -> Result<()> {
        if lpn >= self.logical_pages() {
            return Err(Error::InvalidArgument(format!(
                "FTL {what} of logical page {lpn}: beyond the device's {} logical pages",
                self.logical_pages()
            )));
        }
        Ok(())
    }

    /// Check a host write of `len` bytes to `lpn` and count it.
    /// A write beyond the logical capacity is the device being full ([`Error::no_space`]),
    /// as a write past the end of a full disk is; a read or trim there is a bad argument.
    pub fn host_write(&mut self, lpn: u64, len: usize) -> Result<()> {
        if lpn >= self.logical_pages() {
            return Err(Error::no_space(format!(
                "FTL write of logical page {lpn}: beyond the device's {} logical pages",
                self.logical_pages()
            )));
        }
        self.check_len(len, "write", lpn)?;
        self.stats.host_writes += 1;
        Ok(())
    }

    pub fn check_len(&self, len: usize, what: &str, lpn: u64) -> Result<()> {
        let pb = self.nand.config().page_bytes;
        if len != pb {
            return Err(Error::InvalidArgument(format!(
                "FTL {what} of logical page {lpn}: {len} bytes, a logical page is {pb}"
            )));
        }
        Ok(())
    }

    /// Take a free block; none left is the device being full ([`Error::no_space`]).
    pub fn alloc(&mut self) -> Result<u32> {
        self.free.pop_front().ok_or_else(|| {
            Error::no_space(
                "FTL: taking a free block (none left: more data than the logical capacity?)",
            )
        })
    }

    /// Program `data` as the new current version of `lpn` at `block`/`page`.
    pub fn program(&mut self, block: u32, page: u32, lpn: u64, data: &[u8]) -> Result<()> {
        let sp = self.nand.config().spare_bytes_per_page();
        let spare = make_spare(sp, lpn, self.seq, data);
        self.nand
            .program(PageAddr::new(block, page), data, &spare)?;
        self.block_seq[block as usize] = self.seq;
        self.seq += 1;
        self.stats.flash_programs += 1;
        let old = self.loc[lpn as usize];
        if old != NONE {
            self.owner[old as usize] = NONE;
            self.valid[(old / self.ppb as u64) as usize] -= 1;
        }
        let ppn = self.ppn(block, page);
        self.loc[lpn as usize] = ppn;
        self.owner[ppn as usize] = lpn;
        self.valid[block as usize] += 1;
        Ok(())
    }

    /// Read the current version of `lpn` (zeros if none), checking its checksums.
    pub fn read_current(&mut self, lpn: u64, buf: &mut [u8]) -> Result<()> {
        let ppn = self.loc[lpn as usize];
        if ppn == NONE {
            buf.fill(0);
            return Ok(());
        }
        let addr = self.addr(ppn);
        let mut spare = vec![0u8; self.nand.config().spare_bytes_per_page()];
        self.nand.read(addr, buf, &mut spare)?;
        self.stats.flash_reads += 1;
        match parse_spare(buf, &spare) {
            Some((l, _)) if l == lpn => Ok(()),
            _ => Err(Error::corruption(
                "nand",
                Some(ppn),
                format!("FTL page {addr} holding logical page {lpn} fails its checksum"),
            )),
        }
    }

    /// Copy the current version of `lpn` to `block`/`page` (a valid-page copy).
    pub fn copy(&mut self, lpn: u64, block: u32, page: u32) -> Result<()> {
        let mut buf = vec![0u8; self.nand.config().page_bytes];
        self.read_current(lpn, &mut buf)?;
        self.program(block, page, lpn, &buf)?;
        self.stats.gc_page_copies += 1;
        Ok(())
    }

    /// Forget `lpn`'s current version.
    pub fn trim(&mut self, lpn: u64) {
        let old = self.loc[lpn as usize];
        if old != NONE {
            self.owner[old as usize] = NONE;
            self.valid[(old / self.ppb as u64) as usize] -= 1;
            self.loc[lpn as usize] = NONE;
        }
        self.stats.host_trims += 1;
    }

    /// Erase `block` (it must hold no current version) and return it to the free list.
    pub fn erase(&mut self, block: u32) -> Result<()> {
        if self.valid[block as usize] != 0 {
            return Err(Error::Corruption {
                file: "nand".into(),
                page: None,
                detail: format!(
                    "FTL bug: erase of block {block} that holds {} current pages",
                    self.valid[block as usize]
                ),
            });
        }
        self.nand.erase(block)?;
        self.stats.erases += 1;
        self.block_seq[block as usize] = 0;
        self.free.push_back(block);
        Ok(())
    }

    /// Program into `dest` at their own offsets the current versions of `lbn`'s pages from
    /// offset `from` on that are not there already, with `host` (offset, data) written
    /// instead of the current version of its offset. Offsets in increasing order, so
    /// `dest`'s pages are programmed in order (`dest`'s write point must be below `from`).
    pub fn merge_into(
        &mut self,
        lbn: u32,
        dest: u32,
        from: u32,
        host: Option<(u32, &[u8])>,
    ) -> Result<()> {
        for off in from..self.ppb {
            let lpn = lbn as u64 * self.ppb as u64 + off as u64;
            match host {
                Some((o, data)) if o == off => self.program(dest, off, lpn, data)?,
                _ => {
                    let cur = self.loc[lpn as usize];
                    if cur != NONE && cur != self.ppn(dest, off) {
                        self.copy(lpn, dest, off)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// True when every current page in `block` belongs to `lbn` and sits at its own offset.
    pub fn holds_own_pages(&self, block: u32, lbn: u32) -> bool {
        (0..self.ppb).all(|p| {
            let o = self.owner[self.ppn(block, p) as usize];
            o == NONE || o == lbn as u64 * self.ppb as u64 + p as u64
        })
    }

    /// True when `block` holds the current versions of `lbn`'s offsets `0..k` in order at
    /// pages `0..k` (a log block that can become the data block).
    pub fn in_order_prefix(&self, block: u32, lbn: u32, k: u32) -> bool {
        (0..k).all(|p| {
            self.owner[self.ppn(block, p) as usize] == lbn as u64 * self.ppb as u64 + p as u64
        })
    }

    /// Logical blocks with a current page in `block`, in page order.
    pub fn lbns_in(&self, block: u32) -> Vec<u32> {
        let mut out = Vec::new();
        for p in 0..self.ppb {
            let o = self.owner[self.ppn(block, p) as usize];
            if o != NONE {
                let lbn = (o / self.ppb as u64) as u32;
                if !out.contains(&lbn) {
                    out.push(lbn);
                }
            }
        }
        out
    }

    /// The block-mapped FTLs' recovery (module doc, Recovery): returns each logical block's
    /// data block.
    pub fn recover_block_mapped(&mut self) -> Result<Vec<Option<u32>>> {
        for b in 0..self.blocks {
            if self.nand.highest_programmed_page(b).is_some() && self.valid[b as usize] == 0 {
                self.erase(b)?;
            }
        }
        let mut of: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
        for (lpn, &ppn) in self.loc.iter().enumerate() {
            if ppn != NONE {
                of.entry((lpn as u64 / self.ppb as u64) as u32)
                    .or_default()
                    .insert((ppn / self.ppb as u64) as u32);
            }
        }
        let mut data = vec![None; self.logical_blocks as usize];
        let mut rest = Vec::new();
        // Pass 1: logical blocks settled without a new block.
        for (&lbn, set) in &of {
            let mut done = false;
            for &b in set {
                if !self.holds_own_pages(b, lbn) {
                    continue;
                }
                let top = self.nand.highest_programmed_page(b);
                let outside: Vec<u64> = (0..self.ppb)
                    .map(|off| lbn as u64 * self.ppb as u64 + off as u64)
                    .filter(|&l| {
                        let c = self.loc[l as usize];
                        c != NONE && (c / self.ppb as u64) as u32 != b
                    })
                    .collect();
                if outside
                    .iter()
                    .all(|&l| top.map_or(true, |t| (l % self.ppb as u64) as u32 > t))
                {
                    for l in outside {
                        self.copy(l, b, (l % self.ppb as u64) as u32)?;
                    }
                    data[lbn as usize] = Some(b);
                    done = true;
                    break;
                }
            }
            if done {
                for &b in set {
                    if Some(b) != data[lbn as usize] && self.valid[b as usize] == 0 {
                        self.erase(b)?;
                    }
                }
            } else {
                rest.push(lbn);
            }
        }
        // Pass 2: merge the others into fresh blocks.
        for lbn in rest {
            let n = self.alloc()?;
            self.merge_into(lbn, n, 0, None)?;
            data[lbn as usize] = Some(n);
            for b in 0..self.blocks {
                if b != n
                    && self.valid[b as usize] == 0
                    && self.nand.highest_programmed_page(b).is_some()
                    && data.iter().all(|d| *d != Some(b))
                {
                    self.erase(b)?;
                }
            }
        }
        Ok(data)
    }

    /// Check the maps against each other and the NAND (for `check_integrity`).
    pub fn check(&self) -> Result<()> {
        let bad = |detail: String| Err(Error::corruption("nand", None, detail));
        let mut valid = vec![0u32; self.blocks as usize];
        for (lpn, &ppn) in self.loc.iter().enumerate() {
            if ppn == NONE {
                continue;
            }
            if self.owner[ppn as usize] != lpn as u64 {
                return bad(format!(
                    "FTL map: logical page {lpn} -> {} but that page is owned by {}",
                    self.addr(ppn),
                    self.owner[ppn as usize] as i64
                ));
            }
            if self.nand.is_page_erased(self.addr(ppn)) {
                return bad(format!(
                    "FTL map: logical page {lpn} -> erased {}",
                    self.addr(ppn)
                ));
            }
            valid[(ppn / self.ppb as u64) as usize] += 1;
        }
        if valid != self.valid {
            return bad("FTL valid-page counts disagree with the map".into());
        }
        let owned = self.owner.iter().filter(|&&o| o != NONE).count();
        if owned != self.loc.iter().filter(|&&l| l != NONE).count() {
            return bad("FTL reverse map holds pages the map does not".into());
        }
        for &b in &self.free {
            if self.nand.highest_programmed_page(b).is_some() {
                return bad(format!("FTL free block {b} is not erased"));
            }
        }
        self.nand.check()
    }
}
