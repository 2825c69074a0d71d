//! `flashix pio-model`: its arguments and the run that prints the PIO B-tree model's
//! leaf size and OPQ size ([`crate::models::pio`]) for a device profile.

use crate::models::pio::pio_costs;
use crate::probe::load_profile;
use crate::units::{format_size, parse_size};
use anyhow::{bail, Context, Result};
use flashix::cost::pio::{self, PioWorkload};
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
