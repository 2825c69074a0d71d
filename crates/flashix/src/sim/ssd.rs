//! [`SimSsd`]: a simulated SSD, an FTL over [`Nand`], as an [`io::Device`](crate::io::Device)
//! so every engine and the conformance harness run on it (docs/design.md, Layers).
//!
//! A device page (the engine's page, `page_size`) is `page_size / page_bytes` consecutive
//! logical NAND pages of the FTL: device page `p` is logical pages `p * n .. (p + 1) * n`.
//! Every request of a batch is served in order, and the NAND operations of the whole batch
//! are timed as one NAND batch ([`Nand::begin_batch`]), so reads and writes landing on
//! different channels and ways overlap in simulated time.
//!
//! Durability: with `sync_per_op == false` (the default) NAND programs reach the medium
//! without a sync of the backing device; [`Device::sync`] syncs it (and `Nand` syncs before
//! each erase, see its module doc). So written pages are durable after `sync`, as the
//! `Device` contract says, and a crash leaves the state of the last sync plus at most one
//! torn NAND operation, from which the FTL's open-time scan rebuilds its mapping (module
//! `ftl`, Recovery).
//!
//! Full: a write past the SSD's logical capacity, or one the FTL cannot place because no
//! block is free even after garbage collection, is [`Error::no_space`], the error a full
//! disk gives (an OS `ENOSPC`), so the `Db` that meets it is poisoned as on a full disk.
//!
//! [`DeviceStats::flash`] carries the simulated counters (FTL and NAND, see
//! [`SimStats::counters`]) so they reach `Db::stats()`.

use super::ftl::{self, Ftl, FtlConfig, FtlKind, FtlStats};
use super::nand::{HostTiming, Nand, NandConfig, NandStats};
use crate::error::{Error, Result};
use crate::io::{Counters, Device, DeviceStats, IoReq, PageId};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A simulated SSD's geometry, FTL and over-provisioning (`DeviceSpec::SimulatedSsd`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SimSsdConfig {
    /// The flash: geometry and timing.
    pub nand: NandConfig,
    /// The flash translation layer.
    pub ftl: FtlKind,
    /// Share of the flash hidden from the host (0.3, the d-IPL paper's §6.3).
    pub over_provisioning: f64,
    /// Log / replacement blocks of the block-mapped FTLs (0: all the spare allows).
    pub log_blocks: u32,
    /// Sync the backing medium after every NAND program (slow on a file; `false` syncs it
    /// when the host syncs).
    pub sync_per_op: bool,
    /// Latency of a host request before its NAND operations start, in microseconds
    /// ([`HostTiming::command_us`]). Left out of the manifest's record when 0, so the
    /// record of a config without host timing is what earlier builds wrote.
    #[serde(skip_serializing_if = "is_zero")]
    pub command_us: f64,
    /// Write-back of programs ([`HostTiming::write_back`]): a write completes once its
    /// data reached the chips; [`Device::sync`] waits for the programs. Left out of the
    /// record when off.
    #[serde(skip_serializing_if = "is_false")]
    pub write_back: bool,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Default for SimSsdConfig {
    fn default() -> Self {
        SimSsdConfig {
            nand: NandConfig::default(),
            ftl: FtlKind::Page,
            over_provisioning: 0.3,
            log_blocks: 0,
            sync_per_op: false,
            command_us: 0.0,
            write_back: false,
        }
    }
}

impl SimSsdConfig {
    /// The config with FTL `ftl`.
    pub fn with_ftl(ftl: FtlKind) -> Self {
        SimSsdConfig {
            ftl,
            ..SimSsdConfig::default()
        }
    }

    fn ftl_config(&self) -> FtlConfig {
        FtlConfig {
            kind: self.ftl,
            over_provisioning: self.over_provisioning,
            log_blocks: self.log_blocks,
        }
    }

    /// Check the NAND config and that `page_size` is whole NAND pages.
    pub fn validate(&self, page_size: usize) -> Result<()> {
        self.nand.validate()?;
        if page_size == 0 || page_size % self.nand.page_bytes != 0 {
            return Err(Error::InvalidOptions(format!(
                "simulated SSD: page size {page_size} is not a multiple of the NAND page ({} \
                 bytes)",
                self.nand.page_bytes
            )));
        }
        if !(self.command_us.is_finite() && self.command_us >= 0.0) {
            return Err(Error::InvalidOptions(format!(
                "simulated SSD: command_us {} must be a finite number >= 0",
                self.command_us
            )));
        }
        if !(0.0..1.0).contains(&self.over_provisioning) {
            return Err(Error::InvalidOptions(format!(
                "simulated SSD: over_provisioning {} must be in [0, 1)",
                self.over_provisioning
            )));
        }
        Ok(())
    }
}

/// The simulated counters of a [`SimSsd`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SimStats {
    /// The FTL's counters (host pages, programs, copies, merges).
    pub ftl: FtlStats,
    /// The NAND's counters (operations, wear, simulated time).
    pub nand: NandStats,
}

impl SimStats {
    /// Named counters for [`DeviceStats::flash`]: the FTL's (`host_writes`,
    /// `flash_programs`, `erases`, `gc_page_copies`, `switch_merges`, ...), the NAND's
    /// (`nand_page_reads`, `nand_sector_programs`, `max_erase_count`, ...), simulated time
    /// in whole microseconds (`sim_time_us`) and write amplification in thousandths
    /// (`write_amplification_milli`).
    pub fn counters(&self) -> BTreeMap<String, u64> {
        let f = &self.ftl;
        let n = &self.nand;
        [
            ("host_reads", f.host_reads),
            ("host_writes", f.host_writes),
            ("host_trims", f.host_trims),
            ("flash_reads", f.flash_reads),
            ("flash_programs", f.flash_programs),
            ("erases", f.erases),
            ("gc_page_copies", f.gc_page_copies),
            ("gc_victims", f.gc_victims),
            ("switch_merges", f.switch_merges),
            ("partial_merges", f.partial_merges),
            ("full_merges", f.full_merges),
            ("merges", f.merges()),
            (
                "write_amplification_milli",
                (f.write_amplification() * 1000.0).round() as u64,
            ),
            ("nand_page_reads", n.page_reads),
            ("nand_sector_reads", n.sector_reads),
            ("nand_page_programs", n.page_programs),
            ("nand_sector_programs", n.sector_programs),
            ("nand_erases", n.erases),
            ("max_erase_count", n.max_erase_count),
            ("min_erase_count", n.min_erase_count),
            ("sim_time_us", n.time_us.round() as u64),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
}

/// A simulated SSD. See the module documentation.
pub struct SimSsd {
    ftl: Box<dyn Ftl>,
    page_size: usize,
    /// NAND pages per device page.
    per: u64,
    counters: Counters,
}

impl SimSsd {
    /// A new SSD on `backing` (a fresh or reusable medium: it is formatted).
    pub fn create(
        backing: Box<dyn Device>,
        cfg: &SimSsdConfig,
        page_size: usize,
    ) -> Result<SimSsd> {
        cfg.validate(page_size)?;
        let nand = Nand::create(backing, cfg.nand.clone())?;
        SimSsd::on(nand, cfg, page_size)
    }

    /// Open the SSD on `backing`: the NAND geometry comes from the medium, the FTL rebuilds
    /// its mapping from it.
    pub fn open(backing: Box<dyn Device>, cfg: &SimSsdConfig, page_size: usize) -> Result<SimSsd> {
        let nand = Nand::open(backing)?;
        if nand.config() != &cfg.nand {
            return Err(Error::InvalidOptions(format!(
                "simulated SSD: the medium holds NAND geometry {:?}, the options say {:?}",
                nand.config(),
                cfg.nand
            )));
        }
        cfg.validate(page_size)?;
        SimSsd::on(nand, cfg, page_size)
    }

    fn on(mut nand: Nand, cfg: &SimSsdConfig, page_size: usize) -> Result<SimSsd> {
        nand.set_sync_per_op(cfg.sync_per_op);
        nand.set_host_timing(HostTiming {
            command_us: cfg.command_us,
            write_back: cfg.write_back,
        });
        let ftl = ftl::open(nand, &cfg.ftl_config())?;
        let per = (page_size / cfg.nand.page_bytes) as u64;
        Ok(SimSsd {
            ftl,
            page_size,
            per,
            counters: Counters::new(format!("simssd-{}", cfg.ftl)),
        })
    }

    /// Device pages the SSD exposes.
    pub fn capacity_pages(&self) -> u64 {
        self.ftl.logical_pages() / self.per
    }

    /// FTL and NAND counters.
    pub fn sim_stats(&self) -> SimStats {
        SimStats {
            ftl: self.ftl.stats(),
            nand: self.ftl.nand().stats(),
        }
    }

    /// Simulated time since the SSD was created or opened, in microseconds (the clock
    /// of the timing model; with write-back it runs ahead to the programs' end only on a
    /// sync).
    pub fn sim_time_us(&self) -> f64 {
        self.ftl.nand().time_us()
    }

    /// The FTL (and through it the NAND).
    pub fn ftl(&self) -> &dyn Ftl {
        &*self.ftl
    }

    /// Check the FTL's mapping and the NAND rules.
    pub fn check(&self) -> Result<()> {
        self.ftl.check()
    }

    /// Check that `pages` pages from `page` are on the SSD. A write past the end is the
    /// SSD being full: the error a full disk gives ([`Error::no_space`]), which poisons the
    /// `Db` (an engine's allocator grows its page space until the device refuses a page).
    /// A read or trim there is a bad argument.
    fn check_range(&self, page: PageId, pages: u64, write: bool) -> Result<()> {
        let beyond = page
            .checked_add(pages)
            .map_or(true, |e| e > self.capacity_pages());
        if beyond && write {
            return Err(Error::no_space(format!(
                "writing pages {page}..{} of the simulated SSD (it has {} pages)",
                page.saturating_add(pages),
                self.capacity_pages()
            )));
        }
        if beyond {
            return Err(Error::InvalidArgument(format!(
                "simulated SSD: pages {page}..{} beyond its {} pages",
                page.saturating_add(pages),
                self.capacity_pages()
            )));
        }
        Ok(())
    }

    fn serve(&mut self, batch: &mut [IoReq<'_>]) -> Result<()> {
        let nb = self.page_size / self.per as usize;
        for req in batch.iter_mut() {
            self.ftl.nand_mut().host_command();
            let first = req.page() * self.per;
            match req {
                IoReq::Read { buf, .. } => {
                    for (i, chunk) in buf.chunks_mut(nb).enumerate() {
                        self.ftl.read(first + i as u64, chunk)?;
                    }
                }
                IoReq::Write { buf, .. } => {
                    for (i, chunk) in buf.chunks(nb).enumerate() {
                        self.ftl.write(first + i as u64, chunk)?;
                    }
                }
            }
        }
        Ok(())
    }
}

impl Device for SimSsd {
    fn page_size(&self) -> usize {
        self.page_size
    }

    fn submit(&mut self, batch: &mut [IoReq<'_>]) -> Result<()> {
        self.counters.record_batch(self.page_size, batch)?;
        for req in batch.iter() {
            self.check_range(
                req.page(),
                (req.len() / self.page_size) as u64,
                req.is_write(),
            )?;
        }
        self.ftl.nand_mut().begin_batch();
        let r = self.serve(batch);
        self.ftl.nand_mut().end_batch();
        r
    }

    fn sync(&mut self) -> Result<()> {
        self.counters.stats.syncs += 1;
        self.ftl.nand_mut().drain();
        self.ftl.nand_mut().sync()
    }

    fn trim(&mut self, page: PageId, pages: u64) -> Result<()> {
        self.check_range(page, pages, false)?;
        self.counters.stats.trims += pages;
        for lpn in page * self.per..(page + pages) * self.per {
            self.ftl.trim(lpn)?;
        }
        Ok(())
    }

    fn capacity_pages(&self) -> Option<u64> {
        Some(SimSsd::capacity_pages(self))
    }

    fn stats(&self) -> DeviceStats {
        DeviceStats {
            flash: self.sim_stats().counters(),
            ..self.counters.stats.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::MemDevice;

    fn small(ftl: FtlKind) -> SimSsdConfig {
        SimSsdConfig {
            nand: NandConfig {
                pages_per_block: 8,
                blocks: 32,
                channels: 2,
                ..NandConfig::default()
            },
            ftl,
            ..SimSsdConfig::default()
        }
    }

    #[test]
    fn pages_of_two_nand_pages_read_back_and_survive_reopen() {
        for kind in FtlKind::ALL {
            let cfg = small(kind);
            let mem = MemDevice::new(2048);
            let mut ssd = SimSsd::create(Box::new(mem.clone()), &cfg, 4096).unwrap();
            // 32 blocks * 0.7 = 22 logical blocks of 8 NAND pages = 88 device pages.
            assert_eq!(ssd.capacity_pages(), 88, "{kind}");
            let pages: Vec<Vec<u8>> = (0..88u8).map(|i| vec![i; 4096]).collect();
            for round in 0..3 {
                let mut reqs: Vec<IoReq<'_>> = pages
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| (i + round) % 3 != 0)
                    .map(|(i, b)| IoReq::Write {
                        page: i as u64,
                        buf: b,
                    })
                    .collect();
                ssd.submit(&mut reqs).unwrap();
            }
            ssd.sync().unwrap();
            ssd.check().unwrap();
            let st = ssd.stats();
            assert_eq!(st.writes, 58 + 59 + 59, "{kind}");
            assert_eq!(st.flash["host_writes"], 2 * st.writes, "{kind}");
            assert!(st.flash["flash_programs"] >= st.flash["host_writes"]);
            assert_eq!(st.flash["nand_page_programs"], st.flash["flash_programs"]);
            drop(ssd);
            let mut ssd = SimSsd::open(Box::new(mem.reopen()), &cfg, 4096).unwrap();
            let mut buf = vec![0u8; 4096];
            for (i, want) in pages.iter().enumerate() {
                ssd.read(i as u64, &mut buf).unwrap();
                assert_eq!(&buf, want, "{kind} page {i}");
            }
            assert!(matches!(
                ssd.read(88, &mut buf),
                Err(Error::InvalidArgument(m)) if m.contains("beyond")
            ));
            // A write past the end is the SSD being full: the error a full disk gives.
            let e = ssd.write(88, &buf).unwrap_err();
            assert!(e.is_no_space(), "{kind}: {e}");
            assert!(e.to_string().contains("simulated SSD"), "{e}");
        }
    }

    #[test]
    fn a_batch_on_two_channels_takes_less_simulated_time_than_one_by_one() {
        let cfg = small(FtlKind::Page);
        let mut ssd = SimSsd::create(Box::new(MemDevice::new(2048)), &cfg, 2048).unwrap();
        let bufs: Vec<Vec<u8>> = (0..16u8).map(|i| vec![i; 2048]).collect();
        // The page FTL alternates between block 0 (channel 0) and block 1 (channel 1).
        for (i, b) in bufs.iter().enumerate() {
            ssd.write(i as u64, b).unwrap();
        }
        let mut out: Vec<Vec<u8>> = vec![vec![0u8; 2048]; 16];
        let base = ssd.sim_stats().nand.time_us;
        let mut reqs: Vec<IoReq<'_>> = out
            .iter_mut()
            .enumerate()
            .map(|(i, b)| IoReq::Read {
                page: i as u64,
                buf: b,
            })
            .collect();
        ssd.submit(&mut reqs).unwrap();
        let batched = ssd.sim_stats().nand.time_us - base;
        for (i, b) in out.iter_mut().enumerate() {
            ssd.read(i as u64, b).unwrap();
        }
        let serial = ssd.sim_stats().nand.time_us - base - batched;
        // A read: 25 us + (2048 + 64) * 25 ns = 77.8 us; 8 on each channel overlap.
        assert!((serial - 16.0 * 77.8).abs() < 1e-6, "{serial}");
        assert!((batched - 8.0 * 77.8).abs() < 1e-6, "{batched}");
    }

    /// Host timing is left out of the record when off (the record earlier builds wrote),
    /// and read back when on.
    #[test]
    fn host_timing_is_in_the_record_only_when_set() {
        let plain = serde_json::to_value(SimSsdConfig::default()).unwrap();
        assert!(plain.get("command_us").is_none() && plain.get("write_back").is_none());
        assert_eq!(
            serde_json::from_value::<SimSsdConfig>(plain).unwrap(),
            SimSsdConfig::default()
        );
        let timed = SimSsdConfig {
            command_us: 12.5,
            write_back: true,
            ..SimSsdConfig::default()
        };
        let v = serde_json::to_value(&timed).unwrap();
        assert_eq!(
            (v["command_us"].as_f64(), v["write_back"].as_bool()),
            (Some(12.5), Some(true))
        );
        assert_eq!(serde_json::from_value::<SimSsdConfig>(v).unwrap(), timed);
    }

    #[test]
    fn command_latency_and_write_back_time_a_write_and_sync_waits_for_it() {
        let cfg = SimSsdConfig {
            command_us: 10.0,
            write_back: true,
            ..small(FtlKind::Page)
        };
        let mut ssd = SimSsd::create(Box::new(MemDevice::new(2048)), &cfg, 2048).unwrap();
        let buf = vec![7u8; 2048];
        // Posted: 10 us of command, then the transfer of 2048 + 64 bytes at 25 ns/B.
        let xfer = (2048.0 + 64.0) * 25.0 / 1000.0;
        ssd.write(0, &buf).unwrap();
        let t1 = ssd.sim_time_us();
        assert!((t1 - (10.0 + xfer)).abs() < 1e-6, "{t1}");
        // The next write lands on the other channel: it does not wait for the program.
        ssd.write(1, &buf).unwrap();
        let t2 = ssd.sim_time_us() - t1;
        assert!((t2 - (10.0 + xfer)).abs() < 1e-6, "{t2}");
        // A sync waits for the second program: 200 us after its transfer ended.
        ssd.sync().unwrap();
        let t3 = ssd.sim_time_us() - t1 - t2;
        assert!((t3 - 200.0).abs() < 1e-6, "{t3}");
        // Without write-back a write lasts until its program ends.
        let cfg = SimSsdConfig {
            command_us: 10.0,
            ..small(FtlKind::Page)
        };
        let mut ssd = SimSsd::create(Box::new(MemDevice::new(2048)), &cfg, 2048).unwrap();
        ssd.write(0, &buf).unwrap();
        let t = ssd.sim_time_us();
        assert!((t - (10.0 + xfer + 200.0)).abs() < 1e-6, "{t}");
        // A batch of two reads pays the command latency once.
        let mut a = vec![0u8; 2048];
        let mut b = vec![0u8; 2048];
        ssd.write(1, &buf).unwrap();
        let base = ssd.sim_time_us();
        let mut reqs = vec![
            IoReq::Read {
                page: 0,
                buf: &mut a,
            },
            IoReq::Read {
                page: 1,
                buf: &mut b,
            },
        ];
        ssd.submit(&mut reqs).unwrap();
        let t = ssd.sim_time_us() - base;
        assert!((t - (10.0 + 25.0 + xfer)).abs() < 1e-6, "{t}");
    }
}
