//! `flashix sim`: a random-write workload on a simulated SSD with each FTL
//! ([`flashix::sim`]), printing what the flash did: write amplification, erases,
//! valid-page copies, merges by kind, wear and simulated time.
//!
//! Each FTL gets a fresh SSD (NAND kept in memory) whose logical pages (one NAND page each)
//! are first written once in order (preconditioning, not counted); then `--writes` times
//! the logical capacity of page writes go to pages drawn uniformly from the first `--span`
//! of the capacity.

use anyhow::{bail, Context, Result};
use flashix::io::{Device, MemDevice};
use flashix::sim::{FtlKind, NandConfig, SimSsd, SimSsdConfig, SimStats};
use flashix::testing::Rng;
use serde::Serialize;
use std::path::PathBuf;

/// Options of `flashix sim`.
#[derive(clap::Args, Debug, Clone)]
pub struct SimArgs {
    /// Comma-separated FTLs: page, block (fmax), bast, fast.
    #[arg(long, default_value = "page,block,bast,fast")]
    pub ftls: String,
    /// Erase blocks of the NAND.
    #[arg(long, default_value_t = 512)]
    pub blocks: u32,
    /// Pages per erase block.
    #[arg(long = "pages-per-block", default_value_t = 64)]
    pub pages_per_block: u32,
    /// NAND page size in bytes.
    #[arg(long = "page-bytes", default_value_t = 2048)]
    pub page_bytes: usize,
    /// Channels and ways (chips per channel).
    #[arg(long, default_value_t = 1)]
    pub channels: u32,
    #[arg(long, default_value_t = 1)]
    pub ways: u32,
    /// Share of the flash hidden from the host.
    #[arg(long = "over-provisioning", default_value_t = 0.3)]
    pub over_provisioning: f64,
    /// Log / replacement blocks of the block-mapped FTLs (0: all the spare allows).
    #[arg(long = "log-blocks", default_value_t = 0)]
    pub log_blocks: u32,
    /// Random page writes, in multiples of the logical capacity.
    #[arg(long, default_value_t = 2.0)]
    pub writes: f64,
    /// Share of the logical capacity the random writes go to.
    #[arg(long, default_value_t = 1.0)]
    pub span: f64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// One FTL's result.
#[derive(Debug, Clone, Serialize)]
pub struct SimResult {
    pub ftl: FtlKind,
    pub logical_pages: u64,
    pub stats: SimStats,
}

/// Run the workload on each FTL and print the table.
pub fn run(a: &SimArgs) -> Result<Vec<SimResult>> {
    if !(a.writes > 0.0 && a.span > 0.0 && a.span <= 1.0) {
        bail!("--writes must be > 0 and --span in (0, 1]");
    }
    let ftls: Vec<FtlKind> = a
        .ftls
        .split(',')
        .map(|s| s.trim().parse::<FtlKind>())
        .collect::<flashix::Result<_>>()?;
    let mut results = Vec::new();
    println!(
        "{:<6} {:>9} {:>9} {:>6} {:>8} {:>9} {:>7} {:>7} {:>7} {:>9} {:>9}",
        "ftl",
        "host_wr",
        "flash_wr",
        "WA",
        "erases",
        "copies",
        "switch",
        "partial",
        "full",
        "wear",
        "sim_s"
    );
    for ftl in ftls {
        let r = run_one(a, ftl).with_context(|| format!("FTL {ftl}"))?;
        let (f, n) = (&r.stats.ftl, &r.stats.nand);
        println!(
            "{:<6} {:>9} {:>9} {:>6.2} {:>8} {:>9} {:>7} {:>7} {:>7} {:>9} {:>9.2}",
            ftl.name(),
            f.host_writes,
            f.flash_programs,
            f.write_amplification(),
            f.erases,
            f.gc_page_copies,
            f.switch_merges,
            f.partial_merges,
            f.full_merges,
            format!("{}..{}", n.min_erase_count, n.max_erase_count),
            n.time_us / 1e6
        );
        results.push(r);
    }
    if let Some(path) = &a.json {
        let text = serde_json::to_string_pretty(&results)?;
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(results)
}

fn run_one(a: &SimArgs, ftl: FtlKind) -> Result<SimResult> {
    let cfg = SimSsdConfig {
        nand: NandConfig {
            page_bytes: a.page_bytes,
            pages_per_block: a.pages_per_block,
            blocks: a.blocks,
            channels: a.channels,
            ways: a.ways,
            ..NandConfig::default()
        },
        ftl,
        over_provisioning: a.over_provisioning,
        log_blocks: a.log_blocks,
        sync_per_op: false,
        ..SimSsdConfig::default()
    };
    let backing = MemDevice::new(a.page_bytes);
    let mut ssd = SimSsd::create(Box::new(backing), &cfg, a.page_bytes)?;
    let pages = ssd.capacity_pages();
    let mut buf = vec![0u8; a.page_bytes];
    for p in 0..pages {
        buf[..8].copy_from_slice(&p.to_le_bytes());
        ssd.write(p, &buf)?;
    }
    ssd.sync()?;
    let pre = ssd.sim_stats();
    let span = ((pages as f64 * a.span) as u64).max(1);
    let n = (pages as f64 * a.writes) as u64;
    let mut rng = Rng::new(a.seed);
    for i in 0..n {
        let p = rng.below(span);
        buf[..8].copy_from_slice(&i.to_le_bytes());
        ssd.write(p, &buf)?;
    }
    ssd.sync()?;
    let end = ssd.sim_stats();
    Ok(SimResult {
        ftl,
        logical_pages: pages,
        stats: diff(&end, &pre),
    })
}

/// Counters of the measured phase: `end - pre` (wear is the end state).
fn diff(end: &SimStats, pre: &SimStats) -> SimStats {
    let (e, p) = (&end.ftl, &pre.ftl);
    let mut s = end.clone();
    s.ftl.host_reads = e.host_reads - p.host_reads;
    s.ftl.host_writes = e.host_writes - p.host_writes;
    s.ftl.host_trims = e.host_trims - p.host_trims;
    s.ftl.flash_reads = e.flash_reads - p.flash_reads;
    s.ftl.flash_programs = e.flash_programs - p.flash_programs;
    s.ftl.erases = e.erases - p.erases;
    s.ftl.gc_page_copies = e.gc_page_copies - p.gc_page_copies;
    s.ftl.gc_victims = e.gc_victims - p.gc_victims;
    s.ftl.switch_merges = e.switch_merges - p.switch_merges;
    s.ftl.partial_merges = e.partial_merges - p.partial_merges;
    s.ftl.full_merges = e.full_merges - p.full_merges;
    let (en, pn) = (&end.nand, &pre.nand);
    s.nand.page_reads = en.page_reads - pn.page_reads;
    s.nand.sector_reads = en.sector_reads - pn.sector_reads;
    s.nand.page_programs = en.page_programs - pn.page_programs;
    s.nand.sector_programs = en.sector_programs - pn.sector_programs;
    s.nand.erases = en.erases - pn.erases;
    s.nand.time_us = en.time_us - pn.time_us;
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_ftl_runs_and_the_page_ftl_amplifies_least() {
        let a = SimArgs {
            ftls: "page,block,bast,fast".into(),
            blocks: 64,
            pages_per_block: 16,
            page_bytes: 2048,
            channels: 1,
            ways: 1,
            over_provisioning: 0.3,
            log_blocks: 0,
            writes: 1.0,
            span: 1.0,
            seed: 1,
            json: None,
        };
        let r = run(&a).unwrap();
        assert_eq!(r.len(), 4);
        for x in &r {
            assert_eq!(x.stats.ftl.host_writes, x.logical_pages);
            assert!(x.stats.ftl.erases > 0, "{:?}", x.ftl);
        }
        let wa: Vec<f64> = r
            .iter()
            .map(|x| x.stats.ftl.write_amplification())
            .collect();
        // Uniform random writes: page-level mapping copies least; FMAX merges most.
        assert!(wa[0] < wa[2] && wa[0] < wa[3] && wa[1] > wa[0], "{wa:?}");
        assert_eq!(r[0].stats.ftl.merges(), 0);
        assert!(r[1].stats.ftl.full_merges > 0 && r[3].stats.ftl.full_merges > 0);
    }
}
