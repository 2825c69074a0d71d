//! `flashix probe`: measure a device (docs/benchmarking.md): 4 KiB random read IOPS at
//! queue depths 1, 2, 4, 8, 16 and 32 ([`READ_QUEUE_DEPTHS`]), 4 KiB random write IOPS at
//! queue depth 1 and 32, sequential read and write bandwidth with 512 KiB requests,
//! sequential 4 KiB read and write IOPS at QD1, and mean QD1 read latency by request size
//! (the sizes interleaved request by request, so that drift does not bias their ratios);
//! then the machine's CPU cost of FD-tree insertions and merges ([`cpu`]). The result, a
//! [`DeviceProfile`], feeds the cost models and the "share of the device's limit" column
//! of benchmark reports.
//!
//! The measurements ([`measure`], module `measure`) run on any `io::Device` with a clock:
//! - `flashix probe DIR` ([`run_probe`]): a [`FileDevice`] opened with `direct_io = true` (so
//!   the page cache does not help; the backend actually used is recorded) on a file
//!   `probe.dat` in the probed directory, which it fills first so that reads hit real
//!   blocks, and deletes at the end; wall-clock time;
//! - `flashix probe --sim PROFILE` ([`sim::run_sim_probe`]): a simulated SSD of a named
//!   profile (`flashix::sim::SsdProfile`), in simulated time, with the calibration against
//!   the papers' device figures (module `sim`).
//!
//! Bandwidth is in MB/s with 1 MB = 10^6 bytes.

pub mod cpu;
mod measure;
pub mod sim;

use anyhow::{bail, Context};
use flashix::io::FileDevice;
pub use measure::{measure, qd1_read_rate, Clock, Figures, Plan, SimClock, WallClock};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Page size of the probe device.
const PAGE: usize = 4096;
/// Request size of the sequential tests.
const SEQ_BYTES: usize = 512 * 1024;
/// Queue depth of the "QD32" tests.
const QD: usize = 32;
/// Queue depths of the random-read curve ([`DeviceProfile::rand_read_iops_by_qd`]): a
/// bench cell's reads are charged at the rate of the mean queue depth it reached, and the
/// rate of a real SSD does not grow along a straight line between QD1 and QD32.
pub const READ_QUEUE_DEPTHS: [u32; 6] = [1, 2, 4, 8, 16, 32];
/// Rounds of the random-read measurements of a real device ([`Plan::read_rounds`]).
const PROBE_READ_ROUNDS: u32 = 5;
/// Request sizes of the latency table.
const LATENCY_SIZES: [u64; 8] = [
    4 << 10,
    8 << 10,
    16 << 10,
    32 << 10,
    64 << 10,
    128 << 10,
    256 << 10,
    512 << 10,
];

/// What `flashix probe` measured on one directory's device.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DeviceProfile {
    /// Directory probed.
    pub path: String,
    /// `FileDevice` backend used (`io_uring+O_DIRECT`, ...).
    pub backend: String,
    /// Size of the test file.
    pub file_bytes: u64,
    pub rand_read_iops_qd1: f64,
    pub rand_read_iops_qd32: f64,
    /// Random 4 KiB read IOPS by queue depth, `(depth, IOPS)` for each of
    /// [`READ_QUEUE_DEPTHS`] (depths 1 and 32 repeat the two fields above). Empty in
    /// profiles measured before it was: [`DeviceProfile::read_iops_at`] then draws the
    /// line between QD1 and QD32.
    #[serde(default)]
    pub rand_read_iops_by_qd: Vec<(u32, f64)>,
    pub rand_write_iops_qd1: f64,
    pub rand_write_iops_qd32: f64,
    /// Sequential reads, 512 KiB requests, MB/s (10^6 bytes).
    pub seq_read_mb_s: f64,
    /// Sequential writes, 512 KiB requests, MB/s (10^6 bytes).
    pub seq_write_mb_s: f64,
    /// Sequential 4 KiB reads at QD1, IOPS (absent from profiles measured before it was).
    #[serde(default)]
    pub seq_read_iops_qd1: Option<f64>,
    /// Sequential 4 KiB writes at QD1, IOPS (absent from profiles measured before it was).
    #[serde(default)]
    pub seq_write_iops_qd1: Option<f64>,
    /// Request bytes -> mean QD1 random-read latency in microseconds.
    pub read_latency_us_by_size: Vec<(u64, f64)>,
    /// UTC time of the measurement, `YYYY-MM-DDTHH:MM:SSZ`.
    pub measured_at: String,
    /// The machine's CPU costs of FD-tree insertions and merges ([`cpu::calibrate`]); absent
    /// from simulated profiles and from profiles measured before it was (the cost models
    /// then count I/O only).
    #[serde(default)]
    pub cpu: Option<cpu::CpuCosts>,
}

/// A fixed profile for unit tests: 60/70/90 us reads at 4/8/16 KiB, 20k/100k read IOPS,
/// 10k/50k write IOPS, 2048/1024 MB/s sequential.
#[cfg(test)]
pub(crate) fn example_profile() -> DeviceProfile {
    DeviceProfile {
        path: "/dev/test".into(),
        backend: "test".into(),
        file_bytes: 1 << 30,
        rand_read_iops_qd1: 20_000.0,
        rand_read_iops_qd32: 100_000.0,
        rand_read_iops_by_qd: Vec::new(),
        rand_write_iops_qd1: 10_000.0,
        rand_write_iops_qd32: 50_000.0,
        seq_read_mb_s: 2048.0,
        seq_write_mb_s: 1024.0,
        seq_read_iops_qd1: Some(25_000.0),
        seq_write_iops_qd1: Some(15_000.0),
        read_latency_us_by_size: vec![(4096, 60.0), (8192, 70.0), (16384, 90.0)],
        measured_at: "2026-01-01T00:00:00Z".into(),
        cpu: None,
    }
}

impl DeviceProfile {
    /// A profile of measured figures; path, backend, size and time are left empty.
    pub fn from_figures(f: Figures) -> DeviceProfile {
        DeviceProfile {
            path: String::new(),
            backend: String::new(),
            file_bytes: 0,
            rand_read_iops_qd1: f.rand_read_iops_qd1,
            rand_read_iops_qd32: f.rand_read_iops_qd32,
            rand_read_iops_by_qd: f.rand_read_iops_by_qd,
            rand_write_iops_qd1: f.rand_write_iops_qd1,
            rand_write_iops_qd32: f.rand_write_iops_qd32,
            seq_read_mb_s: f.seq_read_mb_s,
            seq_write_mb_s: f.seq_write_mb_s,
            seq_read_iops_qd1: Some(f.seq_read_iops_qd1),
            seq_write_iops_qd1: Some(f.seq_write_iops_qd1),
            read_latency_us_by_size: f.read_latency_us_by_size,
            measured_at: String::new(),
            cpu: None,
        }
    }

    /// The random-read curve: `(log2(depth), IOPS)` points in ascending depth, from
    /// [`Self::rand_read_iops_by_qd`] where it was measured, else QD1 and QD32 alone. Only
    /// depths of at least 1 with a positive rate count.
    fn read_iops_curve(&self) -> Vec<(f64, f64)> {
        let mut pts: Vec<(u32, f64)> = self
            .rand_read_iops_by_qd
            .iter()
            .copied()
            .filter(|&(d, iops)| d >= 1 && iops.is_finite() && iops > 0.0)
            .collect();
        for (d, iops) in [(1, self.rand_read_iops_qd1), (32, self.rand_read_iops_qd32)] {
            if !pts.iter().any(|p| p.0 == d) {
                pts.push((d, iops));
            }
        }
        pts.sort_by_key(|p| p.0);
        pts.dedup_by_key(|p| p.0);
        pts.into_iter()
            .map(|(d, iops)| (f64::from(d).log2(), iops))
            .collect()
    }

    /// Random 4 KiB read IOPS at queue depth `qd` (a mean, so any real number): linear in
    /// log2(qd) between the two measured depths around it, clamped to the lowest and the
    /// highest measured depth (a depth below 1 is charged at QD1). A profile without the
    /// curve gives the line between its QD1 and QD32 rates, as before the curve was
    /// measured.
    pub fn read_iops_at(&self, qd: f64) -> f64 {
        let pts = self.read_iops_curve();
        let x = if qd.is_finite() {
            qd.max(1.0).log2()
        } else {
            f64::MAX
        };
        let (first, last) = (pts[0], pts[pts.len() - 1]);
        if x <= first.0 {
            return first.1;
        }
        if x >= last.0 {
            return last.1;
        }
        let i = pts.iter().position(|p| p.0 >= x).unwrap_or(pts.len() - 1);
        let ((x0, y0), (x1, y1)) = (pts[i - 1], pts[i]);
        y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    }

    /// The same profile with every random-read rate (QD1, QD32 and the curve) multiplied
    /// by `factor`: the device as measured at another moment (`runner::CALIBRATION_RULE`).
    pub fn with_read_rates_scaled(&self, factor: f64) -> DeviceProfile {
        DeviceProfile {
            rand_read_iops_qd1: self.rand_read_iops_qd1 * factor,
            rand_read_iops_qd32: self.rand_read_iops_qd32 * factor,
            rand_read_iops_by_qd: self
                .rand_read_iops_by_qd
                .iter()
                .map(|&(d, iops)| (d, iops * factor))
                .collect(),
            ..self.clone()
        }
    }

    /// Mean QD1 read latency of a request of `bytes`, linear between the measured request
    /// sizes. Below the smallest measured size it is an error; above the largest, an error
    /// too unless `extrapolate_up`, which extends the line through the last two sizes (or
    /// scales the only one).
    pub fn read_latency_us(&self, bytes: u64, extrapolate_up: bool) -> anyhow::Result<f64> {
        let mut t: Vec<(u64, f64)> = self.read_latency_us_by_size.clone();
        t.sort_by_key(|p| p.0);
        let sizes = || {
            t.iter()
                .map(|(s, _)| crate::units::format_size(*s))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if let Some(&(_, us)) = t.iter().find(|p| p.0 == bytes) {
            return Ok(us);
        }
        let pair = match t.iter().position(|p| p.0 > bytes) {
            Some(0) | None if t.is_empty() => {
                anyhow::bail!("the profile has no read latencies by request size")
            }
            Some(0) => anyhow::bail!(
                "the profile measured read latency for requests of {} only; {bytes} bytes is below that range",
                sizes()
            ),
            Some(i) => (t[i - 1], t[i]),
            None if !extrapolate_up => anyhow::bail!(
                "the profile measured read latency for requests of {} only; {bytes} bytes is above that range",
                sizes()
            ),
            None if t.len() >= 2 => (t[t.len() - 2], t[t.len() - 1]),
            None => return Ok(t[0].1 * bytes as f64 / t[0].0 as f64),
        };
        let ((s0, t0), (s1, t1)) = pair;
        let x = bytes as f64;
        Ok((t0 + (t1 - t0) * (x - s0 as f64) / (s1 as f64 - s0 as f64)).max(t0.min(t1)))
    }
}

/// What to probe and for how long.
#[derive(Debug, Clone)]
pub struct ProbeConfig {
    /// Directory whose device is measured (created if absent).
    pub dir: PathBuf,
    /// Size of the test file (rounded down to a multiple of 512 KiB; at least 512 KiB).
    pub file_bytes: u64,
    /// Duration of each measurement.
    pub seconds_per_test: f64,
    /// Seed of the random offsets.
    pub seed: u64,
}

impl Default for ProbeConfig {
    fn default() -> Self {
        ProbeConfig {
            dir: PathBuf::from("."),
            file_bytes: 1 << 30,
            seconds_per_test: 2.0,
            seed: 42,
        }
    }
}

/// Removes the probe file when dropped (also on error).
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Measure the device under `cfg.dir`. `progress` receives one line per step.
pub fn run_probe(
    cfg: &ProbeConfig,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<DeviceProfile> {
    let file_bytes = cfg.file_bytes / SEQ_BYTES as u64 * SEQ_BYTES as u64;
    if file_bytes < SEQ_BYTES as u64 {
        bail!(
            "probe file size {} is too small: at least {} bytes are needed",
            cfg.file_bytes,
            SEQ_BYTES
        );
    }
    if !cfg.seconds_per_test.is_finite() || cfg.seconds_per_test < 0.0 {
        bail!(
            "seconds per test must be a non-negative number, not {}",
            cfg.seconds_per_test
        );
    }
    std::fs::create_dir_all(&cfg.dir)
        .with_context(|| format!("creating probe directory {}", cfg.dir.display()))?;
    let path = cfg.dir.join("probe.dat");
    let _ = std::fs::remove_file(&path);
    let guard = RemoveOnDrop(path.clone());
    let mut dev = FileDevice::open(&path, PAGE, true)
        .with_context(|| format!("opening probe file {}", path.display()))?;
    let backend = dev.backend().to_string();
    let measured_at = utc_timestamp(SystemTime::now());

    progress(&format!(
        "probing {} with a {} MiB file ({backend})",
        cfg.dir.display(),
        file_bytes >> 20
    ));
    let plan = Plan {
        pages: file_bytes / PAGE as u64,
        us_per_test: cfg.seconds_per_test * 1e6,
        max_ops: None,
        min_random_write_ops: 0,
        warmup_writes: 0,
        read_rounds: PROBE_READ_ROUNDS,
        seed: cfg.seed,
    };
    let f = measure(&mut dev, &WallClock::new(), &plan, progress)?;
    drop(dev);
    drop(guard);
    let cpu = cpu::calibrate(progress)?;
    progress("done");
    Ok(DeviceProfile {
        path: cfg.dir.display().to_string(),
        backend,
        file_bytes,
        measured_at,
        cpu: Some(cpu),
        ..DeviceProfile::from_figures(f)
    })
}

/// `YYYY-MM-DDTHH:MM:SSZ` for a time (UTC), without a date library.
fn utc_timestamp(t: SystemTime) -> String {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Print a profile as a table.
pub fn print_table(p: &DeviceProfile) {
    println!("device profile of {}", p.path);
    println!("  backend        {}", p.backend);
    println!("  test file      {} MiB", p.file_bytes >> 20);
    println!("  measured at    {}", p.measured_at);
    println!();
    println!("  {:<30} {:>14}", "test", "result");
    println!("  {:-<30} {:->14}", "", "");
    // Random reads by queue depth: QD1, the depths between where they were measured, QD32.
    let between = p
        .rand_read_iops_by_qd
        .iter()
        .copied()
        .filter(|&(d, _)| d != 1 && d != 32);
    let reads = std::iter::once((1, p.rand_read_iops_qd1))
        .chain(between)
        .chain(std::iter::once((32, p.rand_read_iops_qd32)));
    for (d, iops) in reads {
        let name = format!("random 4 KiB read, QD{d}");
        println!("  {name:<30} {iops:>9.0} IOPS");
    }
    let rows = [
        ("random 4 KiB write, QD1", p.rand_write_iops_qd1, "IOPS"),
        ("random 4 KiB write, QD32", p.rand_write_iops_qd32, "IOPS"),
        ("sequential 512 KiB read", p.seq_read_mb_s, "MB/s"),
        ("sequential 512 KiB write", p.seq_write_mb_s, "MB/s"),
    ];
    for (name, v, unit) in rows {
        println!("  {name:<30} {v:>9.0} {unit}");
    }
    for (name, v) in [
        ("sequential 4 KiB read, QD1", p.seq_read_iops_qd1),
        ("sequential 4 KiB write, QD1", p.seq_write_iops_qd1),
    ] {
        match v {
            Some(v) => println!("  {name:<30} {v:>9.0} IOPS"),
            None => println!("  {name:<30} {:>14}", "-"),
        }
    }
    println!();
    println!("  {:<30} {:>14}", "QD1 read latency by size", "mean");
    println!("  {:-<30} {:->14}", "", "");
    for (size, us) in &p.read_latency_us_by_size {
        let label = format!("{} KiB", size >> 10);
        println!("  {label:<30} {us:>11.1} us");
    }
    if let Some(c) = p.cpu {
        println!();
        println!("  {:<30} {:>14}", "CPU (FD-tree insertion)", "time");
        println!("  {:-<30} {:->14}", "", "");
        println!(
            "  {:<30} {:>11.3} us",
            "insertion besides merges", c.insert_us
        );
        println!(
            "  {:<30} {:>11.1} ns",
            "per entry merged",
            c.merge_entry_us * 1e3
        );
    }
}

/// Write a profile as pretty JSON.
pub fn save_profile(p: &DeviceProfile, path: &Path) -> anyhow::Result<()> {
    let json = serde_json::to_string_pretty(p).context("encoding the device profile")?;
    std::fs::write(path, json + "\n")
        .with_context(|| format!("writing device profile {}", path.display()))
}

/// Read a profile written by [`save_profile`].
pub fn load_profile(path: &Path) -> anyhow::Result<DeviceProfile> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading device profile {}", path.display()))?;
    serde_json::from_str(&text)
        .with_context(|| format!("parsing device profile {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    #[test]
    fn probe_small_file_and_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = ProbeConfig {
            dir: dir.path().join("dev"),
            file_bytes: 16 << 20,
            seconds_per_test: 0.05,
            seed: 7,
        };
        let mut lines = Vec::new();
        let p = run_probe(&cfg, &mut |s| lines.push(s.to_string())).unwrap();
        assert!(!lines.is_empty());
        assert_eq!(p.file_bytes, 16 << 20);
        assert!(!p.backend.is_empty());
        for v in [
            p.rand_read_iops_qd1,
            p.rand_read_iops_qd32,
            p.rand_write_iops_qd1,
            p.rand_write_iops_qd32,
            p.seq_read_mb_s,
            p.seq_write_mb_s,
        ] {
            assert!(v.is_finite() && v > 0.0, "{p:?}");
        }
        assert_eq!(
            p.read_latency_us_by_size
                .iter()
                .map(|x| x.0)
                .collect::<Vec<_>>(),
            LATENCY_SIZES.to_vec()
        );
        assert!(p.read_latency_us_by_size.iter().all(|x| x.1 > 0.0));
        assert!(!cfg.dir.join("probe.dat").exists());
        assert_eq!(p.measured_at.len(), 20, "{}", p.measured_at);
        print_table(&p);

        let file = dir.path().join("profile.json");
        save_profile(&p, &file).unwrap();
        let q = load_profile(&file).unwrap();
        assert_eq!(q.path, p.path);
        assert_eq!(q.backend, p.backend);
        assert_eq!(q.file_bytes, p.file_bytes);
        assert_eq!(q.measured_at, p.measured_at);
        assert!(close(q.rand_read_iops_qd1, p.rand_read_iops_qd1));
        assert!(close(q.rand_read_iops_qd32, p.rand_read_iops_qd32));
        assert!(close(q.rand_write_iops_qd1, p.rand_write_iops_qd1));
        assert!(close(q.rand_write_iops_qd32, p.rand_write_iops_qd32));
        assert!(close(q.seq_read_mb_s, p.seq_read_mb_s));
        assert!(close(q.seq_write_mb_s, p.seq_write_mb_s));
        assert_eq!(
            q.read_latency_us_by_size.len(),
            p.read_latency_us_by_size.len()
        );
        for (a, b) in q
            .read_latency_us_by_size
            .iter()
            .zip(&p.read_latency_us_by_size)
        {
            assert_eq!(a.0, b.0);
            assert!(close(a.1, b.1));
        }
    }

    #[test]
    fn too_small_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = ProbeConfig {
            dir: dir.path().to_path_buf(),
            file_bytes: 4096,
            ..ProbeConfig::default()
        };
        assert!(run_probe(&cfg, &mut |_| {}).is_err());
    }

    #[test]
    fn timestamps() {
        assert_eq!(utc_timestamp(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = UNIX_EPOCH + std::time::Duration::from_secs(951_782_400 + 3661); // 2000-02-29 01:01:01
        assert_eq!(utc_timestamp(t), "2000-02-29T01:01:01Z");
        let t = UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
        assert_eq!(utc_timestamp(t), "2023-11-14T22:13:20Z");
    }
}
