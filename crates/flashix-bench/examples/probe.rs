//! Run the device probe on a directory: `cargo run --release --example probe -- DIR [MiB] [SECONDS]`.
//! Writes `DIR/probe.dat` (deleted at the end) and prints the table and the JSON profile.

use flashix_bench::probe::{print_table, run_probe, ProbeConfig};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut cfg = ProbeConfig::default();
    if let Some(dir) = args.next() {
        cfg.dir = dir.into();
    }
    if let Some(mib) = args.next() {
        cfg.file_bytes = mib.parse::<u64>()? << 20;
    }
    if let Some(secs) = args.next() {
        cfg.seconds_per_test = secs.parse()?;
    }
    let p = run_probe(&cfg, &mut |s| eprintln!("{s}"))?;
    print_table(&p);
    println!("{}", serde_json::to_string_pretty(&p)?);
    Ok(())
}
