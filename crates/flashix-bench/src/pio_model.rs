//! `flashix pio-model`: the PIO B-tree's node-size and OPQ-size model
//! ([`flashix::cost::pio`], Roh et al., VLDB 2011, §3.2.1, §3.5–3.6, Appendix) applied to a
//! device profile written by `flashix probe`.
//!
//! The profile becomes a [`PioDeviceCosts`]: `Pr(L)` is the probe's mean QD1 read latency
//! for requests of `L` pages (linear between the measured request sizes; past the largest
//! one, extrapolated from the last two); `Pw` is one 4 KiB random write at QD1 scaled to the
//! page; `Pr'` and `Pw'` are the QD32 random read and write times per request (the probe's
//! deepest queue, standing for psync groups of `pio_max` = 32..64 requests).

use crate::probe::{load_profile, DeviceProfile};
use crate::units::{format_size, parse_size};
use anyhow::{bail, Context, Result};
use flashix::cost::pio::{self, PioDeviceCosts, PioWorkload};
use std::path::PathBuf;

/// Options of `flashix pio-model`.
#[derive(clap::Args, Debug, Clone)]
pub struct PioModelArgs {
    /// Entries in the index (N).
    #[arg(long, default_value_t = 10_000_000)]
    pub entries: u64,
    /// Share of updates (inserts, deletes, updates) in the workload (Ri); searches are the rest.
    #[arg(long = "insert-fraction", default_value_t = 0.5)]
    pub insert_fraction: f64,
    /// Page size: bytes, or with a unit (4096, 4KiB).
    #[arg(long = "page-size", default_value = "4096")]
    pub page_size: String,
    /// Memory for the buffer pool and the OPQ together (M).
    #[arg(long, default_value = "16MiB")]
    pub memory: String,
    /// Entries per batch update (bcnt).
    #[arg(long, default_value_t = 5000)]
    pub bcnt: u64,
    /// Longest leaf considered, in segments (pages).
    #[arg(long = "max-segments", default_value_t = 16)]
    pub max_segments: usize,
    /// Device profile written by `flashix probe`.
    #[arg(long, default_value = "./bench-out/device-profile.json")]
    pub profile: PathBuf,
}

/// The model's device costs for pages of `page_size` bytes.
pub fn pio_costs(
    profile: &DeviceProfile,
    page_size: usize,
    max_segments: usize,
) -> Result<PioDeviceCosts> {
    let b = page_size as u64;
    let read_us = (1..=max_segments.max(1) as u64)
        .map(|l| profile.read_latency_us(l * b, true))
        .collect::<Result<Vec<f64>>>()?;
    PioDeviceCosts::new(
        page_size,
        read_us,
        1e6 / profile.rand_write_iops_qd1 * (b as f64 / 4096.0),
        1e6 / profile.rand_read_iops_qd32 * (b as f64 / 4096.0),
        1e6 / profile.rand_write_iops_qd32 * (b as f64 / 4096.0),
    )
    .context("converting the device profile into PIO cost-model inputs")
}

/// `flashix pio-model`: load the profile, run the model, print the answer.
pub fn run(args: &PioModelArgs) -> Result<()> {
    if !(0.0..=1.0).contains(&args.insert_fraction) {
        bail!(
            "--insert-fraction must be between 0 and 1, not {}",
            args.insert_fraction
        );
    }
    let page_size = usize::try_from(parse_size(&args.page_size).context("--page-size")?)
        .context("--page-size: too large")?;
    let memory = parse_size(&args.memory).context("--memory")?;
    if !args.profile.exists() {
        bail!(
            "no device profile at {}: run `flashix probe` first, or pass --profile FILE",
            args.profile.display()
        );
    }
    let profile = load_profile(&args.profile)?;
    let dev = pio_costs(&profile, page_size, args.max_segments)?;
    let w = PioWorkload {
        insert_ratio: args.insert_fraction,
        entries: args.entries,
        memory_bytes: memory,
        bcnt: args.bcnt,
        pio_max: u64::from(flashix::PioOptions::default().pio_max),
        segment_records: flashix::PioOptions::leaf_segment_records(page_size),
        node_entries: flashix::PioOptions::internal_node_entries(page_size),
        opq_entry_bytes: flashix::PIO_OPQ_ENTRY_BYTES,
    };
    let best = pio::choose(&dev, &w)?;
    println!(
        "device profile {} ({}, measured {})",
        args.profile.display(),
        profile.backend,
        profile.measured_at
    );
    println!(
        "workload: {} entries, {:.0}% updates, memory {}, bcnt {}, {} pages",
        args.entries,
        args.insert_fraction * 100.0,
        format_size(memory),
        args.bcnt,
        format_size(page_size as u64)
    );
    println!(
        "{:>8} {:>10} {:>7} {:>11} {:>11} {:>11}",
        "segments", "opq", "height", "search_us", "update_us", "avg_us"
    );
    for l in 1..=dev.max_segments() {
        // The best OPQ for this leaf size.
        let mut o = 1u64;
        let mut row: Option<pio::PioCost> = None;
        while o + 2 * l as u64 + 4 <= memory / page_size as u64 {
            let c = pio::cost(&dev, &w, l, o)?;
            if row.as_ref().map_or(true, |r| c.total_us < r.total_us) {
                row = Some(c);
            }
            o *= 2;
        }
        if let Some(c) = row {
            println!(
                "{:>8} {:>10} {:>7} {:>11.1} {:>11.1} {:>11.1}{}",
                l,
                format_size(c.opq_pages * page_size as u64),
                c.height,
                c.search_us,
                c.update_us,
                c.total_us,
                if l == best.leaf_segments {
                    "  <- chosen"
                } else {
                    ""
                }
            );
        }
    }
    println!(
        "choice: leaf_segments {} ({} leaves), opq_bytes {} ({}), predicted {:.1} us per operation",
        best.leaf_segments,
        format_size((best.leaf_segments * page_size) as u64),
        best.opq_pages * page_size as u64,
        format_size(best.opq_pages * page_size as u64),
        best.total_us
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile() -> DeviceProfile {
        crate::probe::example_profile()
    }

    #[test]
    fn profile_to_pio_costs() {
        let p = profile();
        // Pr(1..4) at 4, 8, 12, 16 KiB: 60, 70, 80 (interpolated), 90; Pr(5) at 20 KiB
        // extrapolated from the last two: 100.
        let d = pio_costs(&p, 4096, 5).unwrap();
        let got: Vec<f64> = (1..=5).map(|l| d.read_us(l)).collect();
        assert_eq!(got, vec![60.0, 70.0, 80.0, 90.0, 100.0]);
        assert!(pio_costs(&p, 2048, 2).is_err());
    }

    #[test]
    fn run_needs_a_profile_and_sane_arguments() {
        let mut a = PioModelArgs {
            entries: 1_000_000,
            insert_fraction: 0.5,
            page_size: "4096".into(),
            memory: "16MiB".into(),
            bcnt: 5000,
            max_segments: 4,
            profile: PathBuf::from("/nonexistent/profile.json"),
        };
        assert!(run(&a).unwrap_err().to_string().contains("flashix probe"));
        a.insert_fraction = 2.0;
        assert!(run(&a).is_err());
    }
}
