//! [`Nand`]: raw NAND flash as the d-IPL paper models it (Na, Lee, Moon, TKDE 2011, §2.3
//! and §6.1): pages of 512-byte sectors (default 2 KiB) with a spare area, erase blocks
//! (default 64 pages = 128 KiB), erase before re-program, in-order page programming inside
//! a block, at most `max_partial_programs` (NOP, default 4) program operations per page,
//! per-block erase counts (wear), and a timing model over channels x ways.
//!
//! # Rules (each violation is `Error::InvalidArgument` naming block/page/sector)
//!
//! 1. A sector is programmed at most once between two erases of its block.
//! 2. A page takes at most `max_partial_programs` program operations between erases.
//! 3. In-order programming: a program of page `p` of block `b` needs `p >=` the highest
//!    page already programmed in `b` (partial programs of that last page are allowed).
//! 4. Addresses in range; data lengths a non-zero multiple of 512 inside the page; spare
//!    lengths equal to `sectors * spare_bytes_per_sector` (or empty: no spare transferred;
//!    a program with an empty spare leaves the sectors' spare bytes erased).
//!
//! In a batch ([`Nand::submit`]) the operations run in order; an illegal one fails the
//! call, the operations before it are done and it and those after it are not.
//!
//! # Medium (the backing device)
//!
//! The backing [`Device`] has pages of `page_bytes` (the NAND page data size):
//!
//! ```text
//! backing page 0            header (below), stored as is
//! then per erase block b, at backing page 1 + b * (pages_per_block + spare_pages):
//!   pages_per_block pages   the block's data pages, in page order
//!   spare_pages pages       the spare bytes of every page of the block, page p's sector s at
//!                           byte (p * sectors_per_page + s) * spare_bytes_per_sector,
//!                           then the block's erase count (u64 LE) right after the last page's
//! spare_pages = ceil((pages_per_block * sectors_per_page * spare_bytes_per_sector + 8) / page_bytes)
//! ```
//!
//! Data and spare bytes are stored **complemented** (byte ^ 0xFF), so a never-written
//! backing page (zeros: a fresh `MemDevice`, a hole of a sparse file) reads as erased flash
//! (0xFF) and `create` writes only the header; an erase writes zeros over the block's data
//! and spare pages and the new erase count (stored as is), as one write request. `create`
//! on a backing device that already holds a header erases every block first.
//!
//! Header (little-endian): magic `FLXNAND1` (8 bytes), format version u32 (1), then
//! `page_bytes, spare_bytes_per_sector, pages_per_block, blocks, channels, ways,
//! max_partial_programs` as u32 and `read_us, program_us, erase_us, bus_ns_per_byte` as
//! f64, then a crc32c of every byte before it.
//!
//! # Durability
//!
//! A program is one write of the data page (read-modify-write for a partial program), then
//! one write of the spare page(s) holding its sectors' spare bytes, then a `sync` of the
//! backing device; an erase is one write then a `sync`. So after a crash (the fault
//! injector's image: synced writes plus the crash-point write torn at 512-byte sectors)
//! every completed operation is on the medium and at most one program (data sectors or
//! spare bytes partly written) or one erase is torn. [`Nand::set_sync_per_op`]`(false)`
//! drops the per-operation `sync` (the simulated SSD syncs when its host syncs) except
//! around an erase: it first syncs every earlier program (so the copies an FTL made of a
//! block's valid pages are durable before the block is erased), and is synced itself (so
//! no later program lands on a block whose erase a crash could undo). A crash then loses
//! the operations after the last sync and tears at most one.
//!
//! `open` rebuilds the in-memory state from the medium: a sector whose data and spare
//! bytes all read 0xFF is erased, any other is programmed; a page's program count is the
//! number of runs of consecutive programmed sectors (each program is one such run, so this
//! is a lower bound when two adjacent runs came from two programs); the highest programmed
//! page of a block is its in-order write point; erase counts come from the spare pages.
//!
//! # Timing model
//!
//! Block `b` sits on channel `b % channels`, way (chip) `(b / channels) % ways`. A read
//! keeps its chip busy for `read_us` (cell to register) and then the channel bus for the
//! transfer (`bus_ns_per_byte` per data and spare byte); a program occupies the bus for the
//! transfer and then its chip for `program_us`; an erase occupies its chip for `erase_us`.
//! Every operation of a batch starts as soon as its chip and bus are free, so a batch
//! spread over channels and ways overlaps and one chip serialises; the batch lasts until
//! its last operation ends, and [`NandStats::time_us`] adds up batch durations.
//!
//! A simulated SSD adds host-side timing ([`HostTiming`], off by default): the NAND
//! operations of each host command ([`Nand::host_command`]) start `command_us` after the
//! batch starts (interface and firmware latency; a batch's commands are queued together,
//! so their latencies overlap), and with
//! `write_back` a batch ends once its reads are transferred and its programs' data reached
//! their chips; the programs and erases run on after it, and the next batch's operations
//! on a busy chip or bus wait for them ([`Nand::drain`] waits for all: a host flush). The
//! clock is kept across batches for that; without write-back every batch starts idle.

mod config;
mod timing;

use crate::error::{Error, Result};
use crate::io::Device;
use serde::{Deserialize, Serialize};
use timing::{Clock, Timed};

pub use config::NandConfig;
pub use timing::HostTiming;

/// Bytes of a NAND sector (the unit of partial programming and of torn writes).
pub const NAND_SECTOR: usize = 512;

/// The name used in corruption errors.
const FILE: &str = "nand";

/// A page of the NAND: erase block and page inside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PageAddr {
    /// The erase block.
    pub block: u32,
    /// The page inside the block.
    pub page: u32,
}

impl PageAddr {
    /// Page `page` of erase block `block`.
    pub fn new(block: u32, page: u32) -> PageAddr {
        PageAddr { block, page }
    }
}

impl std::fmt::Display for PageAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "block {} page {}", self.block, self.page)
    }
}

/// One operation of a batch given to [`Nand::submit`].
#[derive(Debug)]
pub enum NandOp<'a> {
    /// Read sectors `[first_sector, first_sector + data.len() / 512)` of a page and their
    /// spare bytes (`spare.len() == sectors * spare_bytes_per_sector`, or empty to skip the
    /// spare). Erased bytes read as 0xFF.
    Read {
        /// The page.
        addr: PageAddr,
        /// The first sector read.
        first_sector: u32,
        /// Where the sectors' bytes go (whole sectors).
        data: &'a mut [u8],
        /// Where their spare bytes go, or empty.
        spare: &'a mut [u8],
    },
    /// Program sectors of a page (a partial program when fewer than all sectors).
    Program {
        /// The page.
        addr: PageAddr,
        /// The first sector programmed.
        first_sector: u32,
        /// The sectors' bytes (whole sectors).
        data: &'a [u8],
        /// Their spare bytes, or empty to leave the spare erased.
        spare: &'a [u8],
    },
    /// Erase a block: every byte of its pages and spare reads 0xFF again.
    Erase {
        /// The erase block.
        block: u32,
    },
}

/// NAND counters since the [`Nand`] was created or opened (or [`Nand::reset_stats`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NandStats {
    /// Read operations (each reads part or all of one page).
    pub page_reads: u64,
    /// Sectors read by those operations.
    pub sector_reads: u64,
    /// Program operations (full or partial).
    pub page_programs: u64,
    /// Sectors programmed by those operations.
    pub sector_programs: u64,
    /// Blocks erased.
    pub erases: u64,
    /// Simulated time in microseconds (a batch overlaps across channels x ways).
    pub time_us: f64,
    /// Highest and lowest erase count over all blocks (wear; persistent across open).
    pub max_erase_count: u64,
    /// See `max_erase_count`.
    pub min_erase_count: u64,
}

/// Per-page in-memory state.
#[derive(Debug, Clone, Copy, Default)]
struct PageState {
    /// Bit s set: sector s programmed since the last erase.
    programmed: u32,
    /// Program operations since the last erase.
    programs: u32,
}

/// Raw NAND flash over a backing device. See the module documentation.
pub struct Nand {
    backing: Box<dyn Device>,
    cfg: NandConfig,
    /// Backing pages per block: data pages then spare pages.
    block_span: u64,
    pages: Vec<PageState>,
    /// Highest programmed page per block (`None`: erased block).
    top: Vec<Option<u32>>,
    erase_counts: Vec<u64>,
    stats: NandStats,
    sync_per_op: bool,
    /// Writes given to the backing device since its last sync.
    unsynced: bool,
    /// Inside [`Nand::begin_batch`]: operations whose time is summed at `end_batch`.
    pending: Option<Vec<Timed>>,
    /// Simulated time and when each bus and chip is next free (Timing model).
    clock: Clock,
    host_timing: HostTiming,
}

impl std::fmt::Debug for Nand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nand")
            .field("cfg", &self.cfg)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl Nand {
    /// Create a NAND medium on `backing` (page size `cfg.page_bytes`), every block erased
    /// with erase count 0.
    pub fn create(backing: Box<dyn Device>, cfg: NandConfig) -> Result<Nand> {
        cfg.validate()?;
        let mut nand = Nand::new(backing, cfg)?;
        let mut page0 = vec![0u8; nand.cfg.page_bytes];
        nand.backing.read(0, &mut page0)?;
        if page0.iter().any(|&b| b != 0) {
            // A used medium: erase every block (a fresh one already reads as erased).
            let zeros = vec![0u8; nand.block_span as usize * nand.cfg.page_bytes];
            for b in 0..nand.cfg.blocks {
                nand.backing.write(nand.block_base(b), &zeros)?;
            }
        }
        let header = nand.cfg.encode();
        page0.fill(0);
        page0[..header.len()].copy_from_slice(&header);
        nand.backing.write(0, &page0)?;
        nand.backing.sync()?;
        Ok(nand)
    }

    /// Open the NAND medium on `backing`: read the header and rebuild the per-page state
    /// and erase counts from the medium.
    pub fn open(mut backing: Box<dyn Device>) -> Result<Nand> {
        let ps = backing.page_size();
        let mut page0 = vec![0u8; ps];
        backing.read(0, &mut page0)?;
        let cfg = NandConfig::decode(&page0)?;
        let mut nand = Nand::new(backing, cfg)?;
        let spp = nand.cfg.sectors_per_page();
        let spb = nand.cfg.spare_bytes_per_sector;
        let ppb = nand.cfg.pages_per_block as usize;
        let pbytes = nand.cfg.page_bytes;
        let mut buf = vec![0u8; nand.block_span as usize * pbytes];
        for b in 0..nand.cfg.blocks {
            nand.backing.read(nand.block_base(b), &mut buf)?;
            let spare = &buf[ppb * pbytes..];
            for p in 0..ppb {
                let mut mask = 0u32;
                for s in 0..spp {
                    let d = &buf[p * pbytes + s * NAND_SECTOR..][..NAND_SECTOR];
                    let sp = &spare[(p * spp + s) * spb..][..spb];
                    // Stored complemented: zeros are erased flash.
                    if d.iter().chain(sp).any(|&x| x != 0) {
                        mask |= 1 << s;
                    }
                }
                let idx = b as usize * ppb + p;
                nand.pages[idx] = PageState {
                    programmed: mask,
                    programs: runs(mask),
                };
                if mask != 0 {
                    nand.top[b as usize] = Some(p as u32);
                }
            }
            let o = ppb * spp * spb;
            let mut c = [0u8; 8];
            c.copy_from_slice(&spare[o..o + 8]);
            nand.erase_counts[b as usize] = u64::from_le_bytes(c);
        }
        Ok(nand)
    }

    fn new(backing: Box<dyn Device>, cfg: NandConfig) -> Result<Nand> {
        if backing.page_size() != cfg.page_bytes {
            return Err(Error::InvalidOptions(format!(
                "NAND backing device has {}-byte pages, the NAND page is {} bytes",
                backing.page_size(),
                cfg.page_bytes
            )));
        }
        let block_span = cfg.pages_per_block as u64 + cfg.spare_pages();
        let n = cfg.total_pages() as usize;
        let blocks = cfg.blocks as usize;
        Ok(Nand {
            backing,
            block_span,
            pages: vec![PageState::default(); n],
            top: vec![None; blocks],
            erase_counts: vec![0; blocks],
            stats: NandStats::default(),
            sync_per_op: true,
            unsynced: false,
            pending: None,
            clock: Clock::new(cfg.channels, cfg.ways),
            host_timing: HostTiming::default(),
            cfg,
        })
    }

    /// Geometry and timing.
    pub fn config(&self) -> &NandConfig {
        &self.cfg
    }

    /// With `false`, programs and erases are not synced one by one; [`Nand::sync`] makes
    /// them durable (the default, `true`, syncs after every operation).
    pub fn set_sync_per_op(&mut self, on: bool) {
        self.sync_per_op = on;
    }

    /// Make every completed program and erase durable on the backing device.
    pub fn sync(&mut self) -> Result<()> {
        if self.unsynced {
            self.backing.sync()?;
            self.unsynced = false;
        }
        Ok(())
    }

    /// Counters of the backing device (its own I/O, not the NAND's).
    pub fn backing_stats(&self) -> crate::io::DeviceStats {
        self.backing.stats()
    }

    /// Run a batch of operations. They run in order; the simulated time of the batch
    /// overlaps operations on different chips and buses (module doc, Timing model).
    pub fn submit(&mut self, ops: &mut [NandOp<'_>]) -> Result<()> {
        let mut timed = Vec::with_capacity(ops.len());
        let mut result = Ok(());
        for op in ops.iter_mut() {
            let r = match op {
                NandOp::Read {
                    addr,
                    first_sector,
                    data,
                    spare,
                } => self
                    .do_read(*addr, *first_sector, data, spare)
                    .map(|()| Timed::Read {
                        block: addr.block,
                        bytes: data.len() + spare.len(),
                    }),
                NandOp::Program {
                    addr,
                    first_sector,
                    data,
                    spare,
                } => self
                    .do_program(*addr, *first_sector, data, spare)
                    .map(|()| Timed::Program {
                        block: addr.block,
                        bytes: data.len() + spare.len(),
                    }),
                NandOp::Erase { block } => self
                    .do_erase(*block)
                    .map(|()| Timed::Erase { block: *block }),
            };
            match r {
                Ok(t) => timed.push(t),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        match &mut self.pending {
            Some(p) => p.extend(timed),
            None => self.run_batch(&timed),
        }
        result
    }

    /// From now until [`Nand::end_batch`], every operation (of any number of `submit`
    /// calls) is timed as one batch: a layer above that issues its operations one by one
    /// (an FTL serving a batch of host requests) still gets the overlap of a batch.
    pub fn begin_batch(&mut self) {
        self.pending.get_or_insert_with(Vec::new);
    }

    /// End the batch begun by [`Nand::begin_batch`] and add its simulated time.
    pub fn end_batch(&mut self) {
        if let Some(p) = self.pending.take() {
            self.run_batch(&p);
        }
    }

    /// Read a whole page (and its spare, unless `spare` is empty).
    pub fn read(&mut self, addr: PageAddr, data: &mut [u8], spare: &mut [u8]) -> Result<()> {
        self.read_sectors(addr, 0, data, spare)
    }

    /// Read sectors of a page starting at `first_sector`.
    pub fn read_sectors(
        &mut self,
        addr: PageAddr,
        first_sector: u32,
        data: &mut [u8],
        spare: &mut [u8],
    ) -> Result<()> {
        self.submit(&mut [NandOp::Read {
            addr,
            first_sector,
            data,
            spare,
        }])
    }

    /// Program a whole page.
    pub fn program(&mut self, addr: PageAddr, data: &[u8], spare: &[u8]) -> Result<()> {
        self.program_sectors(addr, 0, data, spare)
    }

    /// Program sectors of a page starting at `first_sector` (a partial program).
    pub fn program_sectors(
        &mut self,
        addr: PageAddr,
        first_sector: u32,
        data: &[u8],
        spare: &[u8],
    ) -> Result<()> {
        self.submit(&mut [NandOp::Program {
            addr,
            first_sector,
            data,
            spare,
        }])
    }

    /// Erase a block.
    pub fn erase(&mut self, block: u32) -> Result<()> {
        self.submit(&mut [NandOp::Erase { block }])
    }

    /// Times `block` was erased (0 for a block out of range).
    pub fn erase_count(&self, block: u32) -> u64 {
        self.erase_counts.get(block as usize).copied().unwrap_or(0)
    }

    /// True when no sector of the page was programmed since its block's last erase (false
    /// for an address out of range).
    pub fn is_page_erased(&self, addr: PageAddr) -> bool {
        self.page_index(addr)
            .map(|i| self.pages[i].programmed == 0)
            .unwrap_or(false)
    }

    /// Bitmask of the page's programmed sectors (bit s = sector s; 0 out of range).
    pub fn programmed_sectors(&self, addr: PageAddr) -> u32 {
        self.page_index(addr)
            .map(|i| self.pages[i].programmed)
            .unwrap_or(0)
    }

    /// Program operations the page took since its block's last erase (0 out of range).
    pub fn program_count(&self, addr: PageAddr) -> u32 {
        self.page_index(addr)
            .map(|i| self.pages[i].programs)
            .unwrap_or(0)
    }

    /// The highest programmed page of `block` (its in-order write point), `None` when the
    /// block is erased or out of range.
    pub fn highest_programmed_page(&self, block: u32) -> Option<u32> {
        self.top.get(block as usize).copied().flatten()
    }

    /// Counters, with the current wear.
    pub fn stats(&self) -> NandStats {
        NandStats {
            max_erase_count: self.erase_counts.iter().copied().max().unwrap_or(0),
            min_erase_count: self.erase_counts.iter().copied().min().unwrap_or(0),
            ..self.stats.clone()
        }
    }

    /// Simulated time in microseconds ([`NandStats::time_us`], without the wear scan of
    /// [`Nand::stats`]).
    pub fn time_us(&self) -> f64 {
        self.stats.time_us
    }

    /// Zero the operation counters and simulated time (wear stays).
    pub fn reset_stats(&mut self) {
        self.stats = NandStats::default();
    }

    /// Check that the in-memory state obeys the NAND rules: no page above a block's write
    /// point is programmed, the write point is programmed, no page took more than NOP
    /// programs, and a page's programmed sectors need at least as many programs as runs.
    pub fn check(&self) -> Result<()> {
        let ppb = self.cfg.pages_per_block;
        let all = if self.cfg.sectors_per_page() == 32 {
            u32::MAX
        } else {
            (1u32 << self.cfg.sectors_per_page()) - 1
        };
        for b in 0..self.cfg.blocks {
            let top = self.top[b as usize];
            for p in 0..ppb {
                let st = self.pages[(b * ppb + p) as usize];
                let at = PageAddr::new(b, p);
                let fail = |what: &str| {
                    Err(Error::corruption(
                        FILE,
                        Some(b as u64 * ppb as u64 + p as u64),
                        format!("NAND rule broken at {at}: {what}"),
                    ))
                };
                if st.programmed & !all != 0 {
                    return fail("sector bits beyond the page");
                }
                if st.programs > self.cfg.max_partial_programs {
                    return fail("more programs than the NOP limit");
                }
                if st.programs < runs(st.programmed) {
                    return fail("fewer programs than runs of programmed sectors");
                }
                match top {
                    None if st.programmed != 0 => return fail("programmed in an erased block"),
                    Some(t) if p > t && st.programmed != 0 => {
                        return fail("programmed above the block's write point")
                    }
                    Some(t) if p == t && st.programmed == 0 => {
                        return fail("the block's write point is not programmed")
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    // ---- internals ----

    fn block_base(&self, block: u32) -> u64 {
        1 + block as u64 * self.block_span
    }

    fn page_index(&self, addr: PageAddr) -> Option<usize> {
        (addr.block < self.cfg.blocks && addr.page < self.cfg.pages_per_block)
            .then(|| addr.block as usize * self.cfg.pages_per_block as usize + addr.page as usize)
    }

    /// Validate address, sector range and spare length; the page index and sector count.
    fn check_op(
        &self,
        what: &str,
        addr: PageAddr,
        first_sector: u32,
        data_len: usize,
        spare_len: usize,
    ) -> Result<(usize, usize)> {
        let idx = self.page_index(addr).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "NAND {what} of {addr}: out of range ({} blocks of {} pages)",
                self.cfg.blocks, self.cfg.pages_per_block
            ))
        })?;
        let spp = self.cfg.sectors_per_page();
        if data_len == 0 || data_len % NAND_SECTOR != 0 {
            return Err(Error::InvalidArgument(format!(
                "NAND {what} of {addr} sector {first_sector}: {data_len} bytes is not a \
                 non-zero multiple of 512"
            )));
        }
        let n = data_len / NAND_SECTOR;
        if first_sector as usize + n > spp {
            return Err(Error::InvalidArgument(format!(
                "NAND {what} of {addr}: sectors {first_sector}..{} beyond the page's {spp}",
                first_sector as usize + n
            )));
        }
        let want = n * self.cfg.spare_bytes_per_sector;
        if spare_len != 0 && spare_len != want {
            return Err(Error::InvalidArgument(format!(
                "NAND {what} of {addr} sector {first_sector}: spare of {spare_len} bytes, \
                 expected {want} for {n} sectors (or 0)"
            )));
        }
        Ok((idx, n))
    }

    /// Backing page and byte offset of the spare bytes of `addr`'s sector `s`.
    fn spare_pos(&self, addr: PageAddr, s: usize) -> (u64, usize) {
        let spp = self.cfg.sectors_per_page();
        let off = (addr.page as usize * spp + s) * self.cfg.spare_bytes_per_sector;
        (
            self.block_base(addr.block)
                + self.cfg.pages_per_block as u64
                + (off / self.cfg.page_bytes) as u64,
            off % self.cfg.page_bytes,
        )
    }

    /// Read the backing pages covering `len` spare bytes from `addr`'s sector `s`: the first
    /// backing page, the buffer, and the offset of the bytes in it.
    fn read_spare_span(
        &mut self,
        addr: PageAddr,
        s: usize,
        len: usize,
    ) -> Result<(u64, Vec<u8>, usize)> {
        let (page, off) = self.spare_pos(addr, s);
        let pb = self.cfg.page_bytes;
        let npages = (off + len).div_ceil(pb);
        let mut buf = vec![0u8; npages * pb];
        self.backing.read(page, &mut buf)?;
        Ok((page, buf, off))
    }

    fn do_read(
        &mut self,
        addr: PageAddr,
        first_sector: u32,
        data: &mut [u8],
        spare: &mut [u8],
    ) -> Result<()> {
        let (_, n) = self.check_op("read", addr, first_sector, data.len(), spare.len())?;
        let pb = self.cfg.page_bytes;
        let mut page = vec![0u8; pb];
        self.backing
            .read(self.block_base(addr.block) + addr.page as u64, &mut page)?;
        let off = first_sector as usize * NAND_SECTOR;
        for (d, s) in data.iter_mut().zip(&page[off..]) {
            *d = !*s;
        }
        if !spare.is_empty() {
            let (_, buf, o) = self.read_spare_span(addr, first_sector as usize, spare.len())?;
            for (d, s) in spare.iter_mut().zip(&buf[o..]) {
                *d = !*s;
            }
        }
        self.stats.page_reads += 1;
        self.stats.sector_reads += n as u64;
        Ok(())
    }

    fn do_program(
        &mut self,
        addr: PageAddr,
        first_sector: u32,
        data: &[u8],
        spare: &[u8],
    ) -> Result<()> {
        let (idx, n) = self.check_op("program", addr, first_sector, data.len(), spare.len())?;
        let st = self.pages[idx];
        let mask = (((1u64 << n) - 1) << first_sector) as u32;
        if st.programmed & mask != 0 {
            let s = (st.programmed & mask).trailing_zeros();
            return Err(Error::InvalidArgument(format!(
                "NAND program of {addr} sector {s}: sector already programmed since the \
                 block's last erase (erase before re-program)"
            )));
        }
        if st.programs >= self.cfg.max_partial_programs {
            return Err(Error::InvalidArgument(format!(
                "NAND program of {addr} sector {first_sector}: the page already took {} \
                 programs since the last erase (NOP limit {})",
                st.programs, self.cfg.max_partial_programs
            )));
        }
        if let Some(t) = self.top[addr.block as usize] {
            if addr.page < t {
                return Err(Error::InvalidArgument(format!(
                    "NAND program of {addr} sector {first_sector}: out of order, page {t} of \
                     the block is already programmed (pages of a block are programmed in order)"
                )));
            }
        }
        let pb = self.cfg.page_bytes;
        let data_page = self.block_base(addr.block) + addr.page as u64;
        let mut page = vec![0u8; pb];
        if st.programmed != 0 {
            self.backing.read(data_page, &mut page)?;
        }
        let off = first_sector as usize * NAND_SECTOR;
        for (d, s) in page[off..off + data.len()].iter_mut().zip(data) {
            *d = !*s;
        }
        self.unsynced = true;
        self.backing.write(data_page, &page)?;
        if !spare.is_empty() {
            let (sp, mut buf, o) =
                self.read_spare_span(addr, first_sector as usize, spare.len())?;
            for (d, s) in buf[o..o + spare.len()].iter_mut().zip(spare) {
                *d = !*s;
            }
            self.backing.write(sp, &buf)?;
        }
        if self.sync_per_op {
            self.sync()?;
        }
        let st = &mut self.pages[idx];
        st.programmed |= mask;
        st.programs += 1;
        self.top[addr.block as usize] = Some(addr.page);
        self.stats.page_programs += 1;
        self.stats.sector_programs += n as u64;
        Ok(())
    }

    fn do_erase(&mut self, block: u32) -> Result<()> {
        if block >= self.cfg.blocks {
            return Err(Error::InvalidArgument(format!(
                "NAND erase of block {block}: out of range ({} blocks)",
                self.cfg.blocks
            )));
        }
        if !self.sync_per_op {
            // The programs before an erase (an FTL's copies of the block's valid pages)
            // must be durable before the erase can reach the medium.
            self.sync()?;
        }
        let pb = self.cfg.page_bytes;
        let mut buf = vec![0u8; self.block_span as usize * pb];
        let count = self.erase_counts[block as usize] + 1;
        let o = self.cfg.pages_per_block as usize * (pb + self.cfg.spare_bytes_per_page());
        buf[o..o + 8].copy_from_slice(&count.to_le_bytes());
        self.unsynced = true;
        self.backing.write(self.block_base(block), &buf)?;
        // Also when not syncing per operation: a program must never land on a block whose
        // erase a crash could still undo (it would mix old and new sectors).
        self.sync()?;
        let ppb = self.cfg.pages_per_block as usize;
        let first = block as usize * ppb;
        self.pages[first..first + ppb].fill(PageState::default());
        self.top[block as usize] = None;
        self.erase_counts[block as usize] = count;
        self.stats.erases += 1;
        Ok(())
    }
}

/// Runs of consecutive set bits (each program sets one run).
fn runs(mask: u32) -> u32 {
    (mask & !(mask << 1)).count_ones()
}

#[cfg(test)]
mod tests;
