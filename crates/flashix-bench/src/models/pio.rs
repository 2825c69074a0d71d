//! The PIO B-tree's node-size and OPQ-size model
//! ([`flashix::cost::pio`], Roh et al., VLDB 2011, §3.2.1, §3.5–3.6, Appendix) applied to a
//! device profile written by `flashix probe` (`flashix pio-model`, [`crate::cmd::pio_model`]).
//!
//! The profile becomes a [`PioDeviceCosts`]: `Pr(L)` is the probe's mean QD1 read latency
//! for requests of `L` pages (linear between the measured request sizes; past the largest
//! one, extrapolated from the last two); `Pw` is one 4 KiB random write at QD1 scaled to the
//! page; `Pr'` and `Pw'` are the QD32 random read and write times per request (the probe's
//! deepest queue, standing for psync groups of `pio_max` = 32..64 requests).

use crate::probe::DeviceProfile;
use anyhow::{Context, Result};
use flashix::cost::pio::PioDeviceCosts;

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
}
