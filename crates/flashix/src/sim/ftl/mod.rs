//! Flash translation layers over [`Nand`] (issue 6; the d-IPL paper's §2.1 and §6.3 run
//! BFTL over FMAX, FAST and a page-level FTL with 30% over-provisioning).
//!
//! An FTL turns the NAND into `logical_pages` logical pages of one NAND page each, read and
//! written in place by the host. Four kinds ([`FtlKind`]):
//!
//! - **Page** ([`page::PageFtl`]): page-level mapping; every write goes to the next page of
//!   the active block; greedy garbage collection (the block with the fewest valid pages)
//!   when the last free block is taken.
//! - **Block** ([`block::BlockFtl`]): block-level mapping with replacement blocks in the
//!   FMAX style (Ban, M-Systems; Chung et al.'s FTL survey): a page goes to its offset in
//!   the logical block's data block, or else to the same offset of its replacement block;
//!   when neither can take it the logical block is merged into a fresh block.
//! - **Bast** ([`bast::BastFtl`]): block-associative sector translation (Kim et al. 2002):
//!   each logical block may own one log block written sequentially; a full log block, or
//!   the oldest one when none is free, is merged (switch, partial or full).
//! - **Fast** ([`fast::FastFtl`]): fully-associative sector translation (Lee et al. 2007): one
//!   sequential log block (SW) for a stream starting at offset 0 and random log blocks (RW)
//!   shared by every logical block, written as a ring; a victim RW block costs a full merge
//!   of every logical block with a valid page in it; the SW block is switched or partially
//!   merged when a new stream starts or it fills.
//!
//! In every kind a page is written "in place" when its offset in the data block is still
//! programmable (above the block's write point: NAND rule 3); block-mapped kinds use log or
//! replacement blocks otherwise.
//!
//! # Capacity
//!
//! `logical_blocks = floor(blocks * (1 - over_provisioning))` (the paper's §6.3: 30% of the
//! total capacity is over-provisioned), `logical_pages = logical_blocks * pages_per_block`.
//! The other blocks are spare. Block-mapped kinds use up to `log_blocks` of them as log or
//! replacement blocks (default: all spare blocks but two) and keep two free, so a merge
//! always finds a fresh block and a merge cut by a crash still leaves one for recovery.
//! The page-level kind needs two spare blocks (module `page`).
//!
//! # Format (the spare area of every page an FTL programs)
//!
//! ```text
//! offset   size  (n = sectors per page)
//! 0        8     logical page number (u64 LE)
//! 8        8     sequence number (u64 LE): one counter over every program, host or copy
//! 16       4     crc32c of the page's data
//! 20       4n    crc32c of each 512-byte data sector
//! 20+4n    4     crc32c of bytes 0..20+4n
//! 24+4n    ...   0xFF
//! ```
//!
//! # Recovery
//!
//! No mapping table is stored: `open` scans every programmed page, and for each logical
//! page the readable copy (both checksums good) with the highest sequence number is its
//! current version. This holds because a copy (garbage collection, merge) always gets a
//! new, higher sequence number than the version it copies and a block is erased only when
//! it holds no current version, after the copies are durable (`Nand` syncs before an
//! erase, and after it, so a program never lands on a block whose erase a crash could
//! undo). A torn program leaves an erased spare or a whole record whose data sectors are
//! each either their programmed bytes (sector checksum) or erased: it is ignored and the
//! logical page keeps its previous version. Anything else is damage (Contract 4): a spare
//! record neither erased nor whole (when a page's spare lies in one 512-byte sector of the
//! medium, which tears atomically), or a data sector that is neither, on a page newer than
//! every whole version of its logical page, makes `open` fail with `Error::Corruption`
//! naming `nand` and the page; damage to a stale version is ignored. The page-level FTL then continues in the most recently written
//! partially programmed block; block-mapped FTLs erase blocks that hold no current version
//! and consolidate each logical block whose current pages are not all at their own offsets
//! in one block: completed in place when one block can take the rest in order (a merge cut
//! by the crash), else merged into a fresh block. Log and replacement blocks therefore do
//! not survive a reopen (their pages are merged at open). Trims are not persistent: after a
//! reopen a trimmed page reads its last written contents again.
//!
//! Counters ([`FtlStats`]) start after `open`'s recovery (the NAND counters are reset then).

/// The [`Ftl`] methods every FTL serves from its [`Core`] (`self.core`): size, reads,
/// trim, counters and the NAND (writes differ by FTL).
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

pub mod bast;
pub mod block;
pub mod fast;
pub mod page;

use super::nand::{Nand, PageAddr, NAND_SECTOR};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::str::FromStr;

/// Which FTL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum FtlKind {
    /// Page-level mapping, greedy garbage collection.
    Page,
    /// Block-level mapping with FMAX-style replacement blocks.
    Block,
    /// BAST: block-associative log blocks.
    Bast,
    /// FAST: one sequential and fully-associative random log blocks.
    Fast,
}

impl FtlKind {
    /// Every kind.
    pub const ALL: [FtlKind; 4] = [FtlKind::Page, FtlKind::Block, FtlKind::Bast, FtlKind::Fast];

    /// Short name (command line, reports).
    pub fn name(self) -> &'static str {
        match self {
            FtlKind::Page => "page",
            FtlKind::Block => "block",
            FtlKind::Bast => "bast",
            FtlKind::Fast => "fast",
        }
    }
}

impl fmt::Display for FtlKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for FtlKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        FtlKind::ALL
            .into_iter()
            .find(|k| {
                k.name().eq_ignore_ascii_case(s)
                    || (s.eq_ignore_ascii_case("fmax") && *k == FtlKind::Block)
            })
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "unknown FTL {s:?}; expected one of page, block (fmax), bast, fast"
                ))
            })
    }
}

/// FTL parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FtlConfig {
    pub kind: FtlKind,
    /// Share of the NAND's blocks kept from the host (0.3: the paper's §6.3).
    pub over_provisioning: f64,
    /// Log (BAST, FAST: one SW plus RW) or replacement (Block) blocks at most; 0 = every
    /// spare block but the two kept free for merges.
    pub log_blocks: u32,
}

impl Default for FtlConfig {
    fn default() -> Self {
        FtlConfig {
            kind: FtlKind::Page,
            over_provisioning: 0.3,
            log_blocks: 0,
        }
    }
}

/// FTL counters. Pages are NAND pages.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FtlStats {
    pub host_reads: u64,
    pub host_writes: u64,
    pub host_trims: u64,
    /// NAND page reads the FTL issued (host reads and copies).
    pub flash_reads: u64,
    /// NAND page programs the FTL issued (host writes and copies).
    pub flash_programs: u64,
    pub erases: u64,
    /// Valid pages copied by garbage collection or merges.
    pub gc_page_copies: u64,
    /// Blocks reclaimed by the page-level FTL's garbage collection.
    pub gc_victims: u64,
    pub switch_merges: u64,
    pub partial_merges: u64,
    pub full_merges: u64,
}

impl FtlStats {
    /// Flash programs per host write (0 before any write).
    pub fn write_amplification(&self) -> f64 {
        if self.host_writes == 0 {
            0.0
        } else {
            self.flash_programs as f64 / self.host_writes as f64
        }
    }

    /// Merges of every kind.
    pub fn merges(&self) -> u64 {
        self.switch_merges + self.partial_merges + self.full_merges
    }
}

/// A logical page device over a [`Nand`].
pub trait Ftl: Send {
    fn kind(&self) -> FtlKind;
    /// Logical pages (of one NAND page each).
    fn logical_pages(&self) -> u64;
    /// Read logical page `lpn` into `buf` (one NAND page); never-written pages read zeros.
    fn read(&mut self, lpn: u64, buf: &mut [u8]) -> Result<()>;
    /// Write `buf` (one NAND page) to logical page `lpn`.
    fn write(&mut self, lpn: u64, buf: &[u8]) -> Result<()>;
    /// Forget logical page `lpn` (reads zeros until written; not persistent).
    fn trim(&mut self, lpn: u64) -> Result<()>;
    fn stats(&self) -> FtlStats;
    fn nand(&self) -> &Nand;
    fn nand_mut(&mut self) -> &mut Nand;
    /// Zero the FTL's and the NAND's counters (wear stays).
    fn reset_stats(&mut self);
    /// Check the mapping against the NAND and the FTL's invariants.
    fn check(&self) -> Result<()>;
}

/// Open the FTL `cfg.kind` over `nand`, rebuilding its mapping from the flash (an erased
/// NAND gives an empty device).
pub fn open(nand: Nand, cfg: &FtlConfig) -> Result<Box<dyn Ftl>> {
    let core = Core::open(nand, cfg)?;
    let mut ftl: Box<dyn Ftl> = match cfg.kind {
        FtlKind::Page => Box::new(page::PageFtl::open(core)?),
        FtlKind::Block => Box::new(block::BlockFtl::open(core)?),
        FtlKind::Bast => Box::new(bast::BastFtl::open(core)?),
        FtlKind::Fast => Box::new(fast::FastFtl::open(core)?),
    };
    ftl.reset_stats();
    Ok(ftl)
}

/// "No page" in the maps.
const NONE: u64 = u64::MAX;

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
    fn open(nand: Nand, cfg: &FtlConfig) -> Result<Core> {
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
    pub fn host_write(&mut self, lpn: u64, len: usize) -> Result<()> {
        self.check_lpn(lpn, "write")?;
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

    /// Take a free block.
    pub fn alloc(&mut self) -> Result<u32> {
        self.free.pop_front().ok_or_else(|| {
            Error::InvalidArgument(
                "FTL: no free block left (more data than the logical capacity?)".into(),
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

/// Bytes of the FTL's spare record for pages of `sectors` sectors.
pub fn spare_record_len(sectors: usize) -> usize {
    24 + 4 * sectors
}

/// The spare record of a page (module doc, Format).
fn make_spare(len: usize, lpn: u64, seq: u64, data: &[u8]) -> Vec<u8> {
    let n = data.len() / NAND_SECTOR;
    let end = 20 + 4 * n;
    let mut s = vec![0xFFu8; len];
    s[0..8].copy_from_slice(&lpn.to_le_bytes());
    s[8..16].copy_from_slice(&seq.to_le_bytes());
    s[16..20].copy_from_slice(&crc32c::crc32c(data).to_le_bytes());
    for (i, sector) in data.chunks(NAND_SECTOR).enumerate() {
        s[20 + 4 * i..24 + 4 * i].copy_from_slice(&crc32c::crc32c(sector).to_le_bytes());
    }
    let c = crc32c::crc32c(&s[0..end]);
    s[end..end + 4].copy_from_slice(&c.to_le_bytes());
    s
}

/// What a programmed page holds (module doc, Recovery).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PageCheck {
    /// A whole version of `lpn`.
    Valid { lpn: u64, seq: u64 },
    /// Nothing: erased spare, or a torn program (every data sector new or erased).
    Torn,
    /// The record is whole but a data sector is neither its programmed bytes nor erased.
    Damaged { lpn: u64, seq: u64 },
    /// The record is neither erased nor whole.
    BadSpare,
}

fn check_page(data: &[u8], s: &[u8]) -> PageCheck {
    let n = data.len() / NAND_SECTOR;
    let end = 20 + 4 * n;
    let u32_at = |o: usize| u32::from_le_bytes([s[o], s[o + 1], s[o + 2], s[o + 3]]);
    let u64_at = |o: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&s[o..o + 8]);
        u64::from_le_bytes(b)
    };
    if s.len() < end + 4 || s[..end + 4].iter().all(|&b| b == 0xFF) {
        return PageCheck::Torn;
    }
    if u32_at(end) != crc32c::crc32c(&s[0..end]) {
        return PageCheck::BadSpare;
    }
    let (lpn, seq) = (u64_at(0), u64_at(8));
    if u32_at(16) == crc32c::crc32c(data) {
        return PageCheck::Valid { lpn, seq };
    }
    let torn = data.chunks(NAND_SECTOR).enumerate().all(|(i, sector)| {
        u32_at(20 + 4 * i) == crc32c::crc32c(sector) || sector.iter().all(|&b| b == 0xFF)
    });
    if torn {
        PageCheck::Torn
    } else {
        PageCheck::Damaged { lpn, seq }
    }
}

/// `(lpn, seq)` of a page holding a whole version.
fn parse_spare(data: &[u8], s: &[u8]) -> Option<(u64, u64)> {
    match check_page(data, s) {
        PageCheck::Valid { lpn, seq } => Some((lpn, seq)),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
