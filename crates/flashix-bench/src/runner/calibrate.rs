//! The device's random-read rate measured beside every cell ([`CALIBRATION_RULE`]).
//!
//! The device profile is measured once, and a device's QD1 read latency can drift (on a
//! virtual machine's disk, by a good share within minutes). A cell's share of the device
//! limit computed from the profile alone then measures the drift as much as the engine:
//! raw QD1 reads of an index's file alternated with B+-tree point searches put the
//! searches much nearer the raw reads' limit than the profile-based share of the same
//! engine does, and that share differs from run to run.
//!
//! So the bench also reads a file of its own at QD1, with the engines' device code
//! ([`FileDevice`], `O_DIRECT`), for [`CALIBRATION_SECONDS`] just before and just after
//! each measured phase, and states the share against the limit of those moments beside
//! the profile's ([`Calibration`]).

use crate::output::report::{Calibration, DeviceLimit};
use crate::probe::{qd1_read_rate, DeviceProfile, WallClock};
use anyhow::{Context, Result};
use flashix::io::{AlignedBuf, Device, FileDevice};
use rand::rngs::StdRng;
use rand::{RngCore, SeedableRng};
use std::path::{Path, PathBuf};

/// Bytes of the calibration file: written once, then read at random.
pub const CALIBRATION_BYTES: u64 = 64 << 20;

/// Seconds of QD1 reads before and after each measured phase.
pub const CALIBRATION_SECONDS: f64 = 0.2;

/// How the share of the device limit beside a cell is computed, as printed and saved.
pub const CALIBRATION_RULE: &str = "beside the share of the profile's limit, each cell on \
     this machine's disk with O_DIRECT states its share of the limit at the time it ran \
     ('dev now'): random 4 KiB reads at QD1 of a 64 MiB file of the bench's own, through the \
     engines' device code (FileDevice, O_DIRECT), for 0.2 s just before the phase (after \
     its copy of the aged image) and 0.2 s just after it (after its close); their combined \
     rate (2 over the sum of the two mean read times) divided by the profile's QD1 IOPS \
     scales the profile's random-read rates (at every queue depth alike), and the limit is then \
     computed by the device-limit rule. Sequential rates are the profile's. On a simulated \
     device or without O_DIRECT there is no calibration.";

/// A file on the bench's disk, read at QD1 before and after every measured phase.
pub struct Calibrator {
    dev: FileDevice,
    pages: u64,
    rng: StdRng,
    path: PathBuf,
}

impl Calibrator {
    /// Create and write the calibration file in `dir`. `None` when the file system refuses
    /// `O_DIRECT` (the reads would measure the page cache).
    pub fn create(dir: &Path, seed: u64) -> Result<Option<Calibrator>> {
        const PAGE: usize = 4096;
        const CHUNK: usize = 512 << 10;
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join("calibrate.dat");
        let _ = std::fs::remove_file(&path);
        let dev = FileDevice::open(&path, PAGE, true)
            .with_context(|| format!("opening the calibration file {}", path.display()))?;
        let mut cal = Calibrator {
            pages: CALIBRATION_BYTES / PAGE as u64,
            rng: StdRng::seed_from_u64(seed ^ 0xca11_b7a7e),
            path,
            dev,
        };
        if !cal.dev.backend().contains("O_DIRECT") {
            return Ok(None);
        }
        // Written, so that reads reach the device (a hole reads as zeros without it).
        let mut chunk = AlignedBuf::zeroed(CHUNK);
        cal.rng.fill_bytes(&mut chunk);
        let step = (CHUNK / PAGE) as u64;
        for first in (0..cal.pages).step_by(step as usize) {
            cal.dev.write(first, &chunk)?;
        }
        cal.dev.sync()?;
        Ok(Some(cal))
    }

    /// QD1 random 4 KiB reads per second over the next [`CALIBRATION_SECONDS`].
    pub fn qd1_iops(&mut self) -> Result<f64> {
        qd1_read_rate(
            &mut self.dev,
            &WallClock::new(),
            self.pages,
            CALIBRATION_SECONDS * 1e6,
            &mut self.rng,
        )
        .context("calibrating the device's QD1 reads")
    }
}

impl Drop for Calibrator {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The calibration of a cell whose phase was bracketed by `before` and `after` QD1
/// reads/s: `limit_of` computes the phase's device limit for a profile (DEVICE_LIMIT_RULE),
/// here the profile with its random-read rates scaled to those moments (CALIBRATION_RULE).
pub fn calibration(
    profile: &DeviceProfile,
    before: f64,
    after: f64,
    limit_of: impl Fn(&DeviceProfile) -> Option<DeviceLimit>,
) -> Option<Calibration> {
    if !(before > 0.0 && after > 0.0 && profile.rand_read_iops_qd1 > 0.0) {
        return None;
    }
    let now = 2.0 / (1.0 / before + 1.0 / after);
    let factor = now / profile.rand_read_iops_qd1;
    let scaled = profile.with_read_rates_scaled(factor);
    Some(Calibration {
        qd1_iops_before: before,
        qd1_iops_after: after,
        factor,
        device_limit: limit_of(&scaled),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::report::device_limit;
    use crate::probe::example_profile;

    /// One read per operation at QD1: the limit is the device's reads per second of the
    /// moment, the harmonic combination of the reads before and after the phase.
    #[test]
    fn the_limit_of_the_moment_scales_the_profiles_reads() {
        let p = example_profile(); // 20,000 QD1 and 100,000 QD32 reads/s
        let search = |q: &DeviceProfile| device_limit(q, 1.0, 1.0, 4096.0, 0.0, 8_000.0);
        let c = calibration(&p, 10_000.0, 10_000.0, search).unwrap();
        assert!((c.factor - 0.5).abs() < 1e-12);
        let d = c.device_limit.unwrap();
        assert!((d.limit_ops_per_sec - 10_000.0).abs() < 1e-6);
        assert!((d.share - 0.8).abs() < 1e-12);
        // 100 us and 25 us per read: 62.5 us on average, 16,000 reads/s.
        let c = calibration(&p, 10_000.0, 40_000.0, search).unwrap();
        assert!((c.factor - 0.8).abs() < 1e-12);
        assert!((c.device_limit.unwrap().limit_ops_per_sec - 16_000.0).abs() < 1e-6);
        // QD32 reads scale alike; sequential writes do not.
        let batched = |q: &DeviceProfile| device_limit(q, 32.0, 1.0, 4096.0, 0.0, 1.0);
        let c = calibration(&p, 10_000.0, 10_000.0, batched).unwrap();
        assert!((c.device_limit.unwrap().read_iops_at_qd - 50_000.0).abs() < 1e-6);
        let insert = |q: &DeviceProfile| device_limit(q, 1.0, 0.0, 0.0, 1024.0, 1.0);
        let (now, then) = (
            calibration(&p, 10_000.0, 10_000.0, insert)
                .unwrap()
                .device_limit
                .unwrap(),
            insert(&p).unwrap(),
        );
        assert_eq!(now.limit_ops_per_sec, then.limit_ops_per_sec);
        assert_eq!(now.share, then.share);
        // Nothing measured: no calibration.
        assert!(calibration(&p, 0.0, 10_000.0, search).is_none());
    }

    /// On this machine's disk: the file is written whole, read at QD1, and removed with
    /// the calibrator. Where the file system refuses O_DIRECT there is no calibrator.
    #[test]
    fn a_calibrator_reads_a_written_file_and_removes_it() {
        let dir = tempfile::tempdir().unwrap();
        let Some(mut cal) = Calibrator::create(dir.path(), 7).unwrap() else {
            let probe = FileDevice::open(&dir.path().join("x"), 4096, true).unwrap();
            assert!(!probe.backend().contains("O_DIRECT"), "{}", probe.backend());
            return;
        };
        let path = dir.path().join("calibrate.dat");
        // (The device grows its file ahead of the writes.)
        assert!(std::fs::metadata(&path).unwrap().len() >= CALIBRATION_BYTES);
        let written = cal.dev.stats().write_bytes;
        assert!(written >= CALIBRATION_BYTES, "{written}");
        let reads = cal.dev.stats().reads;
        let iops = cal.qd1_iops().unwrap();
        let done = cal.dev.stats().reads - reads;
        assert!(done >= 1 && iops > 0.0);
        // The rate is the reads done over (at least) the calibration's time.
        assert!(
            iops <= done as f64 / CALIBRATION_SECONDS + 1e-6,
            "{iops} from {done}"
        );
        drop(cal);
        assert!(!path.exists());
    }
}
