//! The probe's measurement loop, generic over an [`io::Device`](Device) and the [`Clock`]
//! its figures are measured in: the wall clock for a [`flashix::io::FileDevice`], the
//! simulated time of a [`SimSsd`] (deterministic). Both run the same steps in the same
//! order ([`measure`]).

use super::{LATENCY_SIZES, PAGE, QD, SEQ_BYTES};
use flashix::io::{AlignedBuf, Device, IoReq};
use flashix::sim::SimSsd;
use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};
use std::time::Instant;

/// The time a probe measures in.
pub trait Clock<D: ?Sized> {
    /// Microseconds since an arbitrary origin.
    fn now_us(&self, dev: &D) -> f64;
}

/// Wall-clock time (a real device).
pub struct WallClock(Instant);

impl WallClock {
    pub fn new() -> WallClock {
        WallClock(Instant::now())
    }
}

impl Default for WallClock {
    fn default() -> Self {
        WallClock::new()
    }
}

impl<D: ?Sized> Clock<D> for WallClock {
    fn now_us(&self, _: &D) -> f64 {
        self.0.elapsed().as_secs_f64() * 1e6
    }
}

/// The simulated time of a [`SimSsd`] ([`SimSsd::sim_time_us`]).
pub struct SimClock;

impl Clock<SimSsd> for SimClock {
    fn now_us(&self, dev: &SimSsd) -> f64 {
        dev.sim_time_us()
    }
}

/// How long each measurement runs and what precedes the random writes.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Device pages (of [`PAGE`] bytes) the probe uses: `0..pages`, a multiple of the
    /// 512 KiB request.
    pub pages: u64,
    /// Each measurement runs until this much time (of its clock) has passed...
    pub us_per_test: f64,
    /// ...or it did this many requests, whichever comes first (`None`: no limit).
    pub max_ops: Option<u64>,
    /// The random-write measurements run at least this many requests whatever the limits
    /// above (so that they span several garbage-collection cycles of a simulated SSD).
    pub min_random_write_ops: u64,
    /// Random 4 KiB writes done, unmeasured, before the random-write measurements, to
    /// reach steady-state garbage collection or merging.
    pub warmup_writes: u64,
    pub seed: u64,
}

/// What [`measure`] found; rates per second of the clock, bandwidth in MB/s (10^6 bytes).
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    pub rand_read_iops_qd1: f64,
    pub rand_read_iops_qd32: f64,
    pub rand_write_iops_qd1: f64,
    pub rand_write_iops_qd32: f64,
    pub seq_read_mb_s: f64,
    pub seq_write_mb_s: f64,
    pub seq_read_iops_qd1: f64,
    pub seq_write_iops_qd1: f64,
    pub read_latency_us_by_size: Vec<(u64, f64)>,
}

/// Run every measurement on `dev` (pages `0..plan.pages`), timed by `clock`. The order:
/// a sequential fill (512 KiB writes, synced, unmeasured) so reads hit written pages;
/// random 4 KiB reads at QD1 and QD32 (a batch of 32 through [`Device::submit`]);
/// sequential 512 KiB and 4 KiB reads; QD1 read latency by request size; sequential 4 KiB
/// and 512 KiB writes; the random-write warm-up; random 4 KiB writes at QD1 and QD32.
/// Writes come last, random writes after sequential ones, so that the aftereffects of
/// random writes (garbage collection, merges) do not reach the other figures. Each write
/// measurement ends with a sync inside its measured time.
pub fn measure<D: Device, C: Clock<D>>(
    dev: &mut D,
    clock: &C,
    plan: &Plan,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<Figures> {
    let pages = plan.pages;
    let seq_pages = (SEQ_BYTES / PAGE) as u64;
    if pages < seq_pages || pages % seq_pages != 0 {
        anyhow::bail!("the probe needs a multiple of {seq_pages} pages, not {pages}");
    }
    let mut rng = StdRng::seed_from_u64(plan.seed);
    let mut big = AlignedBuf::zeroed(SEQ_BYTES);
    rng.fill_bytes(&mut big);
    let mut small: Vec<AlignedBuf> = (0..QD).map(|_| AlignedBuf::zeroed(PAGE)).collect();
    for b in &mut small {
        rng.fill_bytes(b);
    }
    let m = Meter { clock, plan };

    progress("filling the device");
    let mut p = 0;
    while p < pages {
        dev.write(p, &big)?;
        p += seq_pages;
    }
    dev.sync()?;

    progress("random 4 KiB reads, QD1");
    let rand_read_iops_qd1 = m.rate(dev, false, |dev, n| {
        dev.read(rng.gen_range(0..pages), &mut small[0])?;
        *n += 1;
        Ok(())
    })?;

    progress("random 4 KiB reads, QD32");
    let rand_read_iops_qd32 = m.rate(dev, false, |dev, n| {
        let mut batch: Vec<IoReq<'_>> = small
            .iter_mut()
            .map(|buf| IoReq::Read {
                page: rng.gen_range(0..pages),
                buf,
            })
            .collect();
        dev.submit(&mut batch)?;
        *n += QD as u64;
        Ok(())
    })?;

    progress("sequential 512 KiB reads");
    let mut next = 0u64;
    let seq_read_mb_s = m.rate(dev, false, |dev, n| {
        dev.read(next, &mut big)?;
        next = (next + seq_pages) % pages;
        *n += 1;
        Ok(())
    })? * SEQ_BYTES as f64
        / 1e6;

    progress("sequential 4 KiB reads, QD1");
    let mut next = 0u64;
    let seq_read_iops_qd1 = m.rate(dev, false, |dev, n| {
        dev.read(next, &mut small[0])?;
        next = (next + 1) % pages;
        *n += 1;
        Ok(())
    })?;

    let mut read_latency_us_by_size = Vec::with_capacity(LATENCY_SIZES.len());
    for size in LATENCY_SIZES {
        progress(&format!("QD1 read latency, {} KiB requests", size >> 10));
        let size_pages = size / PAGE as u64;
        let slots = pages / size_pages;
        let mut buf = AlignedBuf::zeroed(size as usize);
        let per_sec = m.rate(dev, false, |dev, n| {
            dev.read(rng.gen_range(0..slots) * size_pages, &mut buf)?;
            *n += 1;
            Ok(())
        })?;
        read_latency_us_by_size.push((size, 1e6 / per_sec));
    }

    progress("sequential 4 KiB writes, QD1");
    let mut next = 0u64;
    let seq_write_iops_qd1 = m.rate(dev, true, |dev, n| {
        dev.write(next, &small[0])?;
        next = (next + 1) % pages;
        *n += 1;
        Ok(())
    })?;

    progress("sequential 512 KiB writes");
    let mut next = 0u64;
    let seq_write_mb_s = m.rate(dev, true, |dev, n| {
        dev.write(next, &big)?;
        next = (next + seq_pages) % pages;
        *n += 1;
        Ok(())
    })? * SEQ_BYTES as f64
        / 1e6;

    if plan.warmup_writes > 0 {
        progress(&format!(
            "random 4 KiB writes to reach steady state ({} writes, unmeasured)",
            plan.warmup_writes
        ));
        for _ in 0..plan.warmup_writes {
            dev.write(rng.gen_range(0..pages), &small[0])?;
        }
        dev.sync()?;
    }

    progress("random 4 KiB writes, QD1");
    let min = plan.min_random_write_ops;
    let rand_write_iops_qd1 = m.rate_min(dev, true, min, |dev, n| {
        dev.write(rng.gen_range(0..pages), &small[0])?;
        *n += 1;
        Ok(())
    })?;

    progress("random 4 KiB writes, QD32");
    let rand_write_iops_qd32 = m.rate_min(dev, true, min, |dev, n| {
        let mut batch: Vec<IoReq<'_>> = small
            .iter()
            .map(|buf| IoReq::Write {
                page: rng.gen_range(0..pages),
                buf,
            })
            .collect();
        dev.submit(&mut batch)?;
        *n += QD as u64;
        Ok(())
    })?;

    Ok(Figures {
        rand_read_iops_qd1,
        rand_read_iops_qd32,
        rand_write_iops_qd1,
        rand_write_iops_qd32,
        seq_read_mb_s,
        seq_write_mb_s,
        seq_read_iops_qd1,
        seq_write_iops_qd1,
        read_latency_us_by_size,
    })
}

/// Runs one measurement against the plan's limits.
struct Meter<'a, C> {
    clock: &'a C,
    plan: &'a Plan,
}

impl<C> Meter<'_, C> {
    /// Run `step` (which adds the requests it did to its counter) until the plan's time or
    /// request limit is reached (at least once); with `sync`, sync the device inside the
    /// measured time. Requests per second of the clock.
    fn rate<D: Device>(
        &self,
        dev: &mut D,
        sync: bool,
        step: impl FnMut(&mut D, &mut u64) -> anyhow::Result<()>,
    ) -> anyhow::Result<f64>
    where
        C: Clock<D>,
    {
        self.rate_min(dev, sync, 0, step)
    }

    /// [`Meter::rate`] that runs at least `min_ops` requests.
    fn rate_min<D: Device>(
        &self,
        dev: &mut D,
        sync: bool,
        min_ops: u64,
        mut step: impl FnMut(&mut D, &mut u64) -> anyhow::Result<()>,
    ) -> anyhow::Result<f64>
    where
        C: Clock<D>,
    {
        let mut n = 0u64;
        let start = self.clock.now_us(dev);
        loop {
            step(dev, &mut n)?;
            let limit = self.clock.now_us(dev) - start >= self.plan.us_per_test
                || self.plan.max_ops.is_some_and(|m| n >= m);
            if limit && n >= min_ops {
                break;
            }
        }
        if sync {
            dev.sync()?;
        }
        let us = (self.clock.now_us(dev) - start).max(1e-3);
        Ok(n as f64 * 1e6 / us)
    }
}
