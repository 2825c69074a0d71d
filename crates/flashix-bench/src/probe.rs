//! Device probe. TEMPORARY STUB: the real probe is written on another branch and replaces
//! this file at merge time. Same signatures; `run_probe` returns an error.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DeviceProfile {
    pub path: String,
    pub backend: String,
    pub file_bytes: u64,
    pub rand_read_iops_qd1: f64,
    pub rand_read_iops_qd32: f64,
    pub rand_write_iops_qd1: f64,
    pub rand_write_iops_qd32: f64,
    pub seq_read_mb_s: f64,
    pub seq_write_mb_s: f64,
    pub read_latency_us_by_size: Vec<(u64, f64)>,
    pub measured_at: String,
}

pub struct ProbeConfig {
    pub dir: PathBuf,
    pub file_bytes: u64,
    pub seconds_per_test: f64,
    pub seed: u64,
}

impl Default for ProbeConfig {
    fn default() -> Self {
        ProbeConfig {
            dir: PathBuf::from("./bench-out/probe-dir"),
            file_bytes: 1 << 30,
            seconds_per_test: 2.0,
            seed: 42,
        }
    }
}

pub fn run_probe(
    _cfg: &ProbeConfig,
    _progress: &mut dyn FnMut(&str),
) -> anyhow::Result<DeviceProfile> {
    anyhow::bail!("probe not merged yet")
}

pub fn print_table(_p: &DeviceProfile) {}

pub fn save_profile(_p: &DeviceProfile, _path: &Path) -> anyhow::Result<()> {
    anyhow::bail!("probe not merged yet")
}

pub fn load_profile(_path: &Path) -> anyhow::Result<DeviceProfile> {
    anyhow::bail!("probe not merged yet")
}
