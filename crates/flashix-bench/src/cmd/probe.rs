//! `flashix probe`: measure the device of a directory, or with `--sim` a simulated SSD of a
//! named profile ([`crate::probe`]), print the table and save the profile that the bench
//! and the cost models read.

use crate::probe::{self, sim::SimProbeConfig, ProbeConfig};
use anyhow::{Context, Result};
use flashix::sim::SsdProfile;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct ProbeArgs {
    /// Directory for the probe's test file.
    #[arg(long, default_value = "./bench-out/probe-dir")]
    dir: PathBuf,
    /// Where to save the profile (JSON) [default: ./bench-out/device-profile.json; with
    /// --sim, not saved unless given].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Size of the test file in MiB; with --sim, the simulated NAND in MiB (kept in memory).
    #[arg(long = "file-mb", default_value_t = 1024)]
    file_mb: u64,
    /// Seconds per test (simulated seconds with --sim).
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Probe a simulated SSD of this profile instead of a directory's device, in simulated
    /// time, and compare it with the paper's figures: mtron, intel-x25m, iodrive, p300, ocz.
    #[arg(long)]
    sim: Option<String>,
    /// With --sim: at most this many requests per test.
    #[arg(long = "max-ops", default_value_t = 20_000)]
    max_ops: u64,
}

/// `flashix probe`: measure the device (or a simulated SSD), print the table, save the
/// profile.
pub fn run(a: &ProbeArgs) -> Result<()> {
    if !(a.seconds.is_finite() && a.seconds > 0.0) {
        anyhow::bail!("--seconds must be a positive number of seconds");
    }
    if a.file_mb == 0 {
        anyhow::bail!("--file-mb must be at least 1");
    }
    let bytes = a
        .file_mb
        .checked_mul(1 << 20)
        .context("--file-mb: too large")?;
    if let Some(name) = &a.sim {
        let profile: SsdProfile = name.parse().context("--sim")?;
        let cfg = SimProbeConfig {
            nand_bytes: bytes,
            seconds_per_test: a.seconds,
            max_ops: a.max_ops,
            ..SimProbeConfig::new(profile)
        };
        let p = probe::sim::run_sim_probe(&cfg, &mut |m: &str| eprintln!("{m}"))
            .context("probing the simulated SSD")?;
        probe::print_table(&p);
        probe::sim::print_comparison(profile, &probe::sim::compare(profile, &p));
        if let Some(out) = &a.out {
            save_profile(&p, out)?;
        }
        return Ok(());
    }
    let cfg = ProbeConfig {
        dir: a.dir.clone(),
        file_bytes: bytes,
        seconds_per_test: a.seconds,
        ..ProbeConfig::default()
    };
    let profile =
        probe::run_probe(&cfg, &mut |m: &str| eprintln!("{m}")).context("probing the device")?;
    probe::print_table(&profile);
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("./bench-out/device-profile.json"));
    save_profile(&profile, &out)
}

/// Save a profile to `out` (creating its directory) and say where.
fn save_profile(p: &probe::DeviceProfile, out: &std::path::Path) -> Result<()> {
    if let Some(parent) = out.parent() {
        if !parent.as_os_str().is_empty() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
    }
    probe::save_profile(p, out).with_context(|| format!("saving {}", out.display()))?;
    println!("profile: {}", out.display());
    Ok(())
}
