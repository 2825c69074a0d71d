//! Flash translation layers over [`Nand`] (the d-IPL paper's §2.1 and §6.3 run
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
//! logical page keeps its previous version. Anything else is damage (contract point 4 of docs/design.md): a spare
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

// First: its `core_ftl_methods!` must be in scope in the FTL modules below.
#[macro_use]
mod core;

pub mod bast;
pub mod block;
pub mod fast;
pub mod page;
mod spare;

use self::core::{Core, NONE};
use super::nand::Nand;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
// `tests` (`use super::*`) names NAND pages; this module no longer does.
#[cfg(test)]
use super::nand::PageAddr;

pub use spare::spare_record_len;

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
    /// The mapping scheme.
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
    /// Logical pages the host read.
    pub host_reads: u64,
    /// Logical pages the host wrote.
    pub host_writes: u64,
    /// Logical pages the host trimmed.
    pub host_trims: u64,
    /// NAND page reads the FTL issued (host reads and copies).
    pub flash_reads: u64,
    /// NAND page programs the FTL issued (host writes and copies).
    pub flash_programs: u64,
    /// Blocks erased.
    pub erases: u64,
    /// Valid pages copied by garbage collection or merges.
    pub gc_page_copies: u64,
    /// Blocks reclaimed by the page-level FTL's garbage collection.
    pub gc_victims: u64,
    /// Block-mapped merges that turned a log block written in order into the data block
    /// (no copy).
    pub switch_merges: u64,
    /// Block-mapped merges that completed an in-order log block with the data block's
    /// remaining valid pages.
    pub partial_merges: u64,
    /// Block-mapped merges that copied a logical block's valid pages into a fresh block.
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
pub trait Ftl: Send + Sync {
    /// The mapping scheme.
    fn kind(&self) -> FtlKind;
    /// Logical pages (of one NAND page each).
    fn logical_pages(&self) -> u64;
    /// Read logical page `lpn` into `buf` (one NAND page); never-written pages read zeros.
    fn read(&mut self, lpn: u64, buf: &mut [u8]) -> Result<()>;
    /// Write `buf` (one NAND page) to logical page `lpn`.
    fn write(&mut self, lpn: u64, buf: &[u8]) -> Result<()>;
    /// Forget logical page `lpn` (reads zeros until written; not persistent).
    fn trim(&mut self, lpn: u64) -> Result<()>;
    /// The counters since creation or the last `reset_stats`.
    fn stats(&self) -> FtlStats;
    /// Log or replacement blocks the block-mapped kinds use at most (module doc, Capacity;
    /// the page-level kind has none and answers the spare blocks it could use).
    fn log_limit(&self) -> u32;
    /// The NAND under the FTL.
    fn nand(&self) -> &Nand;
    /// The NAND under the FTL, mutable (tests, fault injection).
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

#[cfg(test)]
mod tests;
