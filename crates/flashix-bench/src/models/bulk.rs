//! The bulk index's range-size model ([`flashix::cost::bulk`],
//! Lehtonen 2014, §5.5 Theorems 5.1–5.4) for a device profile written by `flashix probe`,
//! or for the thesis's own device (§2.3: 81 us per request, 4 ns per byte); `flashix bulk-model`
//! ([`crate::cmd::bulk_model`]) prints its choice.
//!
//! The profile becomes the thesis's `t_seek + t_byte·b` model: for reads, a least-squares
//! line through the probe's QD1 read latency by request size (4 KiB..512 KiB); for writes,
//! the sequential write bandwidth gives the per-byte time and a 4 KiB random write at QD1
//! what is left of it, the seek.

use crate::probe::DeviceProfile;
use anyhow::{bail, Result};
use flashix::cost::bulk::BulkDeviceCosts;

/// The thesis's device model fitted to a probe profile (module doc).
pub fn bulk_costs(p: &DeviceProfile) -> Result<BulkDeviceCosts> {
    let pts = &p.read_latency_us_by_size;
    if pts.len() < 2 {
        bail!("the device profile has fewer than two read latencies by size");
    }
    let n = pts.len() as f64;
    let mx = pts.iter().map(|q| q.0 as f64).sum::<f64>() / n;
    let my = pts.iter().map(|q| q.1).sum::<f64>() / n;
    let sxy: f64 = pts.iter().map(|q| (q.0 as f64 - mx) * (q.1 - my)).sum();
    let sxx: f64 = pts.iter().map(|q| (q.0 as f64 - mx).powi(2)).sum();
    let per_byte = (sxy / sxx).max(1e-6);
    let seek = (my - per_byte * mx).max(0.0);
    let write_per_byte = 1.0 / p.seq_write_mb_s;
    let write_seek = (1e6 / p.rand_write_iops_qd1 - 4096.0 * write_per_byte).max(0.0);
    Ok(BulkDeviceCosts::new(
        seek,
        write_seek,
        per_byte,
        write_per_byte,
    )?)
}
