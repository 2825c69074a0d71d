//! The device profile a suite is measured against: loaded from its file, or measured
//! briefly and saved when the file is missing.

use super::config::BenchConfig;
use super::ui::say_plain;
use crate::probe::{self, DeviceProfile, ProbeConfig};
use anyhow::{Context, Result};

/// Load the device profile, or measure and save a short one when the file is missing.
pub fn device_profile(cfg: &BenchConfig) -> Result<DeviceProfile> {
    let path = cfg
        .profile
        .clone()
        .unwrap_or_else(|| cfg.out.join("device-profile.json"));
    if path.exists() {
        return probe::load_profile(&path)
            .with_context(|| format!("loading the device profile {}", path.display()));
    }
    say_plain(
        cfg,
        &format!(
            "no device profile at {}: measuring a short one (256 MiB file, 0.5 s per test)",
            path.display()
        ),
    );
    let pcfg = ProbeConfig {
        dir: cfg.dir.join("probe"),
        file_bytes: 256 << 20,
        seconds_per_test: 0.5,
        seed: cfg.seed,
    };
    let verbose = cfg.verbose;
    let profile = probe::run_probe(&pcfg, &mut |m: &str| {
        if verbose {
            eprintln!("  probe: {m}");
        }
    })
    .context("measuring the device (pass --profile FILE to use a saved profile)")?;
    let _ = std::fs::remove_dir_all(&pcfg.dir);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    probe::save_profile(&profile, &path)
        .with_context(|| format!("saving the device profile to {}", path.display()))?;
    if cfg.verbose {
        probe::print_table(&profile);
    }
    Ok(profile)
}
