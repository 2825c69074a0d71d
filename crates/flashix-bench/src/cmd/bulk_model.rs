//! `flashix bulk-model`: its arguments and the run that prints the bulk index model's
//! range size M and every candidate ([`crate::models::bulk`]).

use crate::models::bulk::bulk_costs;
use crate::probe::load_profile;
use crate::units::parse_size;
use anyhow::{bail, Context, Result};
use flashix::cost::bulk::{self, BulkDeviceCosts, BulkModelInput, BulkTuning};
use flashix::cost::Tuning;
use std::path::PathBuf;

/// Options of `flashix bulk-model`.
#[derive(clap::Args, Debug, Clone)]
pub struct BulkModelArgs {
    /// Entries in the index (N).
    #[arg(long, default_value_t = 10_000_000)]
    pub entries: u64,
    /// Keys per bulk insertion (T; default N/9, the thesis's 50,000 into 450,000).
    #[arg(long = "bulk-keys")]
    pub bulk_keys: Option<u64>,
    /// Keys per elementary bulk (b).
    #[arg(long = "elementary-bulk", default_value_t = 100)]
    pub elementary_bulk: u64,
    /// Share of point searches; the rest are keys of bulk insertions.
    #[arg(long = "search-fraction", default_value_t = 0.5)]
    pub search_fraction: f64,
    /// Page size: bytes, or with a unit.
    #[arg(long = "page-size", default_value = "4096")]
    pub page_size: String,
    /// Memory the range index may use.
    #[arg(long, default_value = "1MiB")]
    pub memory: String,
    /// Device profile written by `flashix probe`; without it, the thesis's device (§2.3).
    #[arg(long)]
    pub profile: Option<PathBuf>,
}

/// `flashix bulk-model`: run the model and print the choice and every candidate.
pub fn run(a: &BulkModelArgs) -> Result<()> {
    if !(0.0..=1.0).contains(&a.search_fraction) {
        bail!("--search-fraction must be between 0 and 1");
    }
    let page_size = usize::try_from(parse_size(&a.page_size).context("--page-size")?)?;
    flashix::io::check_page_size(page_size)?;
    let memory = parse_size(&a.memory).context("--memory")?;
    let (device, from) = match &a.profile {
        Some(p) => (bulk_costs(&load_profile(p)?)?, p.display().to_string()),
        None => (
            BulkDeviceCosts::thesis(),
            "the thesis's SSD (§2.3)".to_string(),
        ),
    };
    let tuning = Tuning {
        expected_entries: a.entries,
        search_fraction: a.search_fraction,
        bulk: Some(BulkTuning {
            bulk_keys: a.bulk_keys,
            elementary_bulk_keys: Some(a.elementary_bulk),
            device: Some(device),
        }),
        ..Tuning::reference(page_size)
    };
    let tuples_per_page = ((page_size - 32) / 16) as u64;
    let c = bulk::choose_m(
        &tuning,
        &BulkModelInput {
            page_size,
            tuple_bytes: 16,
            tuples_per_page,
            range_entry_bytes: 64,
            range_index_budget_bytes: memory,
        },
    )?;
    println!(
        "bulk index M model (thesis §5.5): {} entries, bulks of {} keys in elementary bulks \
         of {}, {:.0}% searches, {page_size}-byte pages ({tuples_per_page} tuples of 16 \
         bytes), range index within {memory} bytes",
        a.entries,
        c.bulk_keys,
        c.elementary_bulk_keys,
        a.search_fraction * 100.0
    );
    println!(
        "device ({from}): read {:.1} us + {:.5} us/byte, write {:.1} us + {:.5} us/byte",
        c.device.seek_read_us,
        c.device.read_us_per_byte,
        c.device.seek_write_us,
        c.device.write_us_per_byte
    );
    println!(
        "{:>7} {:>6} {:>9} {:>11} {:>12} {:>12} {:>12} {:>11}",
        "M", "pages", "ranges", "index KiB", "search us", "bulk ms", "us/key", "delete us"
    );
    for k in &c.candidates {
        println!(
            "{:>7} {:>6} {:>9.0} {:>11.1} {:>12.1} {:>12.2} {:>12.3} {:>11.1}{}",
            k.m,
            u64::from(k.m) / tuples_per_page,
            k.ranges,
            k.range_index_bytes / 1024.0,
            k.point_search_us,
            k.bulk_insert_us / 1000.0,
            k.bulk_insert_per_key_us,
            k.range_delete_us,
            if k.m == c.m { "  <- chosen" } else { "" }
        );
    }
    println!("chosen: m = {}", c.m);
    Ok(())
}
