//! The probe's measurement loop, generic over an [`io::Device`](Device) and the [`Clock`]
//! its figures are measured in: the wall clock for a [`flashix::io::FileDevice`], the
//! simulated time of a [`SimSsd`] (deterministic). Both run the same steps in the same
//! order ([`measure`]).

use super::{LATENCY_SIZES, PAGE, QD, READ_QUEUE_DEPTHS, SEQ_BYTES};
use flashix::io::{AlignedBuf, Device, IoReq};
use flashix::sim::SimSsd;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
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
    /// Device pages (of `PAGE` = 4096 bytes) the probe uses: `0..pages`, a multiple of the
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
    /// The random-read measurements (QD1, QD32, the QD1 latency of each request size, and
    /// the depths between QD1 and QD32) run interleaved in this many rounds, each a
    /// `1/read_rounds` share of the time and request limits, and report each one's median
    /// round: a device whose latency drifts over seconds (a virtual machine's can) then
    /// gives figures and size ratios of the same moments, where one long test each gave
    /// each figure its own moment. 1 or 0: one round.
    pub read_rounds: u32,
    pub seed: u64,
}

/// What [`measure`] found; rates per second of the clock, bandwidth in MB/s (10^6 bytes).
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    pub rand_read_iops_qd1: f64,
    pub rand_read_iops_qd32: f64,
    /// `(depth, IOPS)` for every depth of [`READ_QUEUE_DEPTHS`], QD1 and QD32 included.
    pub rand_read_iops_by_qd: Vec<(u32, f64)>,
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
/// in [`Plan::read_rounds`] rounds, random 4 KiB reads at QD1 and QD32 (a batch of 32
/// through [`Device::submit`]), the QD1 read latency by request size (the sizes
/// interleaved request by request) and random 4 KiB reads at the depths between
/// ([`READ_QUEUE_DEPTHS`], batches of that many; after the others, with pages of a draw
/// of their own, so that the figures measured before them stay what they were); each
/// figure the median of its rounds; sequential 512 KiB and 4 KiB reads; sequential 4 KiB
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

    let reads = random_reads(dev, clock, plan, &mut small, &mut rng, progress)?;
    let seq = sequential(dev, &m, &mut big, &mut small[0], progress)?;
    let (rand_write_iops_qd1, rand_write_iops_qd32) =
        random_writes(dev, &m, &small, &mut rng, progress)?;
    Ok(Figures {
        rand_read_iops_qd1: reads.qd1,
        rand_read_iops_qd32: reads.qd32,
        rand_read_iops_by_qd: reads.by_qd,
        rand_write_iops_qd1,
        rand_write_iops_qd32,
        seq_read_mb_s: seq.read_mb_s,
        seq_write_mb_s: seq.write_mb_s,
        seq_read_iops_qd1: seq.read_iops_qd1,
        seq_write_iops_qd1: seq.write_iops_qd1,
        read_latency_us_by_size: reads.latency_us_by_size,
    })
}

/// The random-read figures of [`measure`].
struct ReadFigures {
    qd1: f64,
    qd32: f64,
    by_qd: Vec<(u32, f64)>,
    latency_us_by_size: Vec<(u64, f64)>,
}

/// The random reads of [`measure`], in [`Plan::read_rounds`] rounds, each figure the
/// median of its rounds. `small`: the [`QD`] page buffers; `rng`: the draw of the QD1 and
/// QD32 pages (the latency table and the depths between draw from streams of their own).
fn random_reads<D: Device, C: Clock<D>>(
    dev: &mut D,
    clock: &C,
    plan: &Plan,
    small: &mut [AlignedBuf],
    rng: &mut StdRng,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<ReadFigures> {
    let pages = plan.pages;
    let rounds = plan.read_rounds.max(1);
    let share = Plan {
        us_per_test: plan.us_per_test / f64::from(rounds),
        max_ops: plan.max_ops.map(|m| (m / u64::from(rounds)).max(1)),
        ..plan.clone()
    };
    let part = Meter {
        clock,
        plan: &share,
    };
    let mut qd1 = Vec::with_capacity(rounds as usize);
    let mut qd32 = Vec::with_capacity(rounds as usize);
    let mut by_size: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds as usize); LATENCY_SIZES.len()];
    let mut sized: Vec<AlignedBuf> = LATENCY_SIZES
        .iter()
        .map(|&size| AlignedBuf::zeroed(size as usize))
        .collect();
    // The latency table draws its pages from a stream of its own, so that the pages the
    // later measurements write do not depend on how many reads it did.
    let mut sized_rng = StdRng::seed_from_u64(plan.seed ^ 0x05EE_D0F5_12E5);
    // The same for the depths between QD1 and QD32.
    let mut depth_rng = StdRng::seed_from_u64(plan.seed ^ 0x0DE9_7405_EED5);
    let middle: Vec<u32> = READ_QUEUE_DEPTHS
        .into_iter()
        .filter(|&d| d != 1 && d as usize != QD)
        .collect();
    let mut by_depth: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds as usize); middle.len()];
    for round in 1..=rounds {
        let of = if rounds > 1 {
            format!(" (round {round} of {rounds})")
        } else {
            String::new()
        };
        progress(&format!("random 4 KiB reads, QD1{of}"));
        qd1.push(part.rate(dev, false, |dev, n| {
            read_random_page(dev, pages, &mut small[0], rng, n)
        })?);

        progress(&format!("random 4 KiB reads, QD32{of}"));
        qd32.push(part.rate(dev, false, |dev, n| {
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
        })?);

        progress(&format!("QD1 read latency by request size{of}"));
        let rates = part.latency_by_size(dev, &mut sized, pages, &mut sized_rng)?;
        for (all, rate) in by_size.iter_mut().zip(rates) {
            all.push(rate);
        }

        for (&depth, all) in middle.iter().zip(&mut by_depth) {
            progress(&format!("random 4 KiB reads, QD{depth}{of}"));
            let bufs = &mut small[..depth as usize];
            all.push(part.rate(dev, false, |dev, n| {
                read_random_batch(dev, pages, bufs, &mut depth_rng, n)
            })?);
        }
    }
    let rand_read_iops_qd1 = median(qd1);
    let rand_read_iops_qd32 = median(qd32);
    let mut by_qd = vec![(1, rand_read_iops_qd1)];
    by_qd.extend(middle.iter().zip(by_depth).map(|(&d, r)| (d, median(r))));
    by_qd.push((QD as u32, rand_read_iops_qd32));
    let read_latency_us_by_size: Vec<(u64, f64)> = LATENCY_SIZES
        .iter()
        .zip(by_size)
        .map(|(&size, rates)| (size, 1e6 / median(rates)))
        .collect();

    Ok(ReadFigures {
        qd1: rand_read_iops_qd1,
        qd32: rand_read_iops_qd32,
        by_qd,
        latency_us_by_size: read_latency_us_by_size,
    })
}

/// The sequential figures of [`measure`].
struct SeqFigures {
    read_mb_s: f64,
    read_iops_qd1: f64,
    write_iops_qd1: f64,
    write_mb_s: f64,
}

/// The sequential reads and writes of [`measure`]: 512 KiB and 4 KiB reads, then 4 KiB
/// and 512 KiB writes, through the buffers `big` (512 KiB) and `page` (4 KiB).
fn sequential<D: Device, C: Clock<D>>(
    dev: &mut D,
    m: &Meter<'_, C>,
    big: &mut AlignedBuf,
    page: &mut AlignedBuf,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<SeqFigures> {
    let pages = m.plan.pages;
    let seq_pages = (SEQ_BYTES / PAGE) as u64;
    progress("sequential 512 KiB reads");
    let mut next = 0u64;
    let seq_read_mb_s = m.rate(dev, false, |dev, n| {
        dev.read(next, big)?;
        next = (next + seq_pages) % pages;
        *n += 1;
        Ok(())
    })? * SEQ_BYTES as f64
        / 1e6;

    progress("sequential 4 KiB reads, QD1");
    let mut next = 0u64;
    let seq_read_iops_qd1 = m.rate(dev, false, |dev, n| {
        dev.read(next, page)?;
        next = (next + 1) % pages;
        *n += 1;
        Ok(())
    })?;

    progress("sequential 4 KiB writes, QD1");
    let mut next = 0u64;
    let seq_write_iops_qd1 = m.rate(dev, true, |dev, n| {
        dev.write(next, page)?;
        next = (next + 1) % pages;
        *n += 1;
        Ok(())
    })?;

    progress("sequential 512 KiB writes");
    let mut next = 0u64;
    let seq_write_mb_s = m.rate(dev, true, |dev, n| {
        dev.write(next, big)?;
        next = (next + seq_pages) % pages;
        *n += 1;
        Ok(())
    })? * SEQ_BYTES as f64
        / 1e6;

    Ok(SeqFigures {
        read_mb_s: seq_read_mb_s,
        read_iops_qd1: seq_read_iops_qd1,
        write_iops_qd1: seq_write_iops_qd1,
        write_mb_s: seq_write_mb_s,
    })
}

/// The random writes of [`measure`], last: the warm-up, then 4 KiB writes at QD1 and QD32
/// (IOPS), from the buffers `small` to pages drawn by `rng`.
fn random_writes<D: Device, C: Clock<D>>(
    dev: &mut D,
    m: &Meter<'_, C>,
    small: &[AlignedBuf],
    rng: &mut StdRng,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<(f64, f64)> {
    let plan = m.plan;
    let pages = plan.pages;
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

    Ok((rand_write_iops_qd1, rand_write_iops_qd32))
}

/// Random 4 KiB reads at QD1 on pages `0..pages` of `dev` (already written) for `us`
/// microseconds of `clock`, at least one: reads per second. The probe's QD1 figure, alone
/// and short: the bench measures it beside every cell (`runner::CALIBRATION_RULE`).
pub fn qd1_read_rate<D: Device, C: Clock<D>>(
    dev: &mut D,
    clock: &C,
    pages: u64,
    us: f64,
    rng: &mut StdRng,
) -> anyhow::Result<f64> {
    let plan = Plan {
        pages,
        us_per_test: us,
        max_ops: None,
        min_random_write_ops: 0,
        warmup_writes: 0,
        read_rounds: 1,
        seed: 0,
    };
    let mut buf = AlignedBuf::zeroed(PAGE);
    Meter { clock, plan: &plan }.rate(dev, false, |dev, n| {
        read_random_page(dev, pages, &mut buf, rng, n)
    })
}

/// One random 4 KiB read of pages `0..pages`, counted in `n`.
fn read_random_page<D: Device>(
    dev: &mut D,
    pages: u64,
    buf: &mut AlignedBuf,
    rng: &mut StdRng,
    n: &mut u64,
) -> anyhow::Result<()> {
    dev.read(rng.gen_range(0..pages), buf)?;
    *n += 1;
    Ok(())
}

/// One batch of random 4 KiB reads of pages `0..pages`, one into each of `bufs`, submitted
/// at once (a queue depth of `bufs.len()`), counted in `n`.
fn read_random_batch<D: Device>(
    dev: &mut D,
    pages: u64,
    bufs: &mut [AlignedBuf],
    rng: &mut StdRng,
    n: &mut u64,
) -> anyhow::Result<()> {
    let mut batch: Vec<IoReq<'_>> = bufs
        .iter_mut()
        .map(|buf| IoReq::Read {
            page: rng.gen_range(0..pages),
            buf,
        })
        .collect();
    dev.submit(&mut batch)?;
    *n += batch.len() as u64;
    Ok(())
}

/// The median of `v` (the lower one of an even count; 0 for none).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len().saturating_sub(1) / 2).copied().unwrap_or(0.0)
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

    /// QD1 random reads of every size of [`LATENCY_SIZES`] (one buffer of each size in
    /// `bufs`), interleaved: each pass reads once at every size, in an order shuffled anew
    /// each pass, and times each request alone. So a device that speeds up or slows down
    /// while the sizes are measured shifts all of them alike, and the differences between
    /// sizes, which a cost model chooses node sizes by, stay its own (measured one size
    /// after another on a drifting device, 8 KiB reads came out anywhere from barely to
    /// markedly slower than 4 KiB ones from one probe to the next). The shuffle gives every
    /// size the same mix of predecessors: in a fixed rotation the 4 KiB read followed the
    /// 512 KiB one in most passes, and came out slower than the 8 KiB read. Runs as long
    /// as the plan gives one test per size, or until every size did the plan's request
    /// limit. Requests per second of the clock, by size.
    fn latency_by_size<D: Device>(
        &self,
        dev: &mut D,
        bufs: &mut [AlignedBuf],
        pages: u64,
        rng: &mut StdRng,
    ) -> anyhow::Result<Vec<f64>>
    where
        C: Clock<D>,
    {
        let sizes = bufs.len();
        let mut us = vec![0.0f64; sizes];
        let mut order: Vec<usize> = (0..sizes).collect();
        let budget = self.plan.us_per_test * sizes as f64;
        let mut n = 0u64;
        let start = self.clock.now_us(dev);
        loop {
            order.shuffle(rng);
            for &at in &order {
                let buf = &mut bufs[at];
                let size_pages = (buf.len() / PAGE) as u64;
                let page = rng.gen_range(0..pages / size_pages) * size_pages;
                let t0 = self.clock.now_us(dev);
                dev.read(page, buf)?;
                us[at] += self.clock.now_us(dev) - t0;
            }
            n += 1;
            if self.clock.now_us(dev) - start >= budget || self.plan.max_ops.is_some_and(|m| n >= m)
            {
                break;
            }
        }
        Ok(us.iter().map(|&t| n as f64 * 1e6 / t.max(1e-3)).collect())
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

#[cfg(test)]
mod tests {
    use super::*;
    use flashix::io::{DeviceStats, MemDevice};

    /// A device whose every request takes 10 us plus 1 us per 4 KiB past the first, except
    /// in a slow spell (requests `slow.0..slow.1` of the run) when they take 5x as long.
    struct Drifting {
        inner: MemDevice,
        requests: u64,
        slow: (u64, u64),
        now: f64,
    }

    impl Device for Drifting {
        fn page_size(&self) -> usize {
            self.inner.page_size()
        }
        fn submit(&mut self, batch: &mut [IoReq<'_>]) -> flashix::Result<()> {
            for r in batch.iter() {
                let mut us = 10.0 + (r.len() / PAGE - 1) as f64;
                if (self.slow.0..self.slow.1).contains(&self.requests) {
                    us *= 5.0;
                }
                self.requests += 1;
                self.now += us;
            }
            self.inner.submit(batch)
        }
        fn sync(&mut self) -> flashix::Result<()> {
            self.inner.sync()
        }
        fn trim(&mut self, page: u64, pages: u64) -> flashix::Result<()> {
            self.inner.trim(page, pages)
        }
        fn stats(&self) -> DeviceStats {
            self.inner.stats()
        }
    }

    /// The drifting device's own time.
    struct Ticks;

    impl Clock<Drifting> for Ticks {
        fn now_us(&self, dev: &Drifting) -> f64 {
            dev.now
        }
    }

    fn run(read_rounds: u32) -> Figures {
        let pages = 4 * (SEQ_BYTES / PAGE) as u64;
        // The slow spell starts a few thousand requests into the random reads.
        let mut dev = Drifting {
            inner: MemDevice::new(PAGE),
            requests: 0,
            slow: (4 + 2_000, 4 + 2_600),
            now: 0.0,
        };
        let plan = Plan {
            pages,
            us_per_test: 1e12,
            max_ops: Some(2_500),
            min_random_write_ops: 0,
            warmup_writes: 0,
            read_rounds,
            seed: 3,
        };
        measure(&mut dev, &Ticks, &plan, &mut |_| {}).unwrap()
    }

    /// The random reads are measured at every depth of the curve, QD1 and QD32 the same
    /// figures as their own fields; on a device that serves one request at a time (10 us
    /// each) every depth reads at its one rate.
    #[test]
    fn random_reads_are_measured_at_every_queue_depth() {
        let f = run(1);
        let depths: Vec<u32> = f.rand_read_iops_by_qd.iter().map(|p| p.0).collect();
        assert_eq!(depths, READ_QUEUE_DEPTHS.to_vec());
        assert_eq!(f.rand_read_iops_by_qd[0].1, f.rand_read_iops_qd1);
        assert_eq!(f.rand_read_iops_by_qd[5].1, f.rand_read_iops_qd32);
        for &(d, iops) in &f.rand_read_iops_by_qd[1..5] {
            assert!((iops - 100_000.0).abs() < 1.0, "QD{d}: {iops}");
        }
    }

    #[test]
    fn rounds_keep_a_slow_spell_out_of_the_read_figures() {
        let f = run(5);
        assert!((f.rand_read_iops_qd1 - 100_000.0).abs() < 1.0, "{f:?}");
        // The spell falls on the first round's 16 and 32 KiB requests; the medians of every
        // size are the device's steady latencies.
        for &(size, us) in &f.read_latency_us_by_size {
            let want = 10.0 + (size as usize / PAGE - 1) as f64;
            assert!((us - want).abs() < 1e-6, "{size}: {us} us, not {want}");
        }
        // In one round the spell falls on the QD1 test alone, which then reads as slower
        // than an 8 KiB request.
        let one = run(1);
        assert!(one.rand_read_iops_qd1 < 80_000.0, "{one:?}");
    }

    /// A device that slows down steadily (each request 0.01% slower than the one before):
    /// measured one size after another, a later size would take the slowdown for its own
    /// cost; interleaved, the sizes' latencies keep their steady ratios (11 us against 10
    /// for 8 KiB against 4 KiB).
    #[test]
    fn latencies_by_size_are_measured_interleaved() {
        struct Slowing(Drifting);
        impl Device for Slowing {
            fn page_size(&self) -> usize {
                self.0.page_size()
            }
            fn submit(&mut self, batch: &mut [IoReq<'_>]) -> flashix::Result<()> {
                let before = self.0.now;
                let factor = 1.0 + 1e-4 * self.0.requests as f64;
                self.0.submit(batch)?;
                self.0.now = before + (self.0.now - before) * factor;
                Ok(())
            }
            fn sync(&mut self) -> flashix::Result<()> {
                self.0.sync()
            }
            fn trim(&mut self, page: u64, pages: u64) -> flashix::Result<()> {
                self.0.trim(page, pages)
            }
            fn stats(&self) -> DeviceStats {
                self.0.stats()
            }
        }
        struct SlowTicks;
        impl Clock<Slowing> for SlowTicks {
            fn now_us(&self, dev: &Slowing) -> f64 {
                dev.0.now
            }
        }
        let mut dev = Slowing(Drifting {
            inner: MemDevice::new(PAGE),
            requests: 0,
            slow: (0, 0),
            now: 0.0,
        });
        let plan = Plan {
            pages: 4 * (SEQ_BYTES / PAGE) as u64,
            us_per_test: 1e12,
            max_ops: Some(2_000),
            min_random_write_ops: 0,
            warmup_writes: 0,
            read_rounds: 1,
            seed: 5,
        };
        let f = measure(&mut dev, &SlowTicks, &plan, &mut |_| {}).unwrap();
        let lat = &f.read_latency_us_by_size;
        for &(size, us) in lat {
            let ratio = us / lat[0].1;
            let want = (10.0 + (size as usize / PAGE - 1) as f64) / 10.0;
            assert!(
                (ratio / want - 1.0).abs() < 0.01,
                "{size}: {us} us, {ratio} times 4 KiB, not {want}"
            );
        }
    }

    /// The bench's calibration reads at QD1 for the time asked: 10 us a request on the
    /// steady device, 50 us in its slow spell, and random pages within the range.
    #[test]
    fn qd1_read_rate_measures_the_device_of_the_moment() {
        let mut dev = Drifting {
            inner: MemDevice::new(PAGE),
            requests: 0,
            slow: (100, u64::MAX),
            now: 0.0,
        };
        let mut rng = StdRng::seed_from_u64(1);
        let steady = qd1_read_rate(&mut dev, &Ticks, 64, 1_000.0, &mut rng).unwrap();
        assert_eq!(dev.requests, 100);
        assert!((steady - 100_000.0).abs() < 1e-6, "{steady}");
        let slow = qd1_read_rate(&mut dev, &Ticks, 64, 1_000.0, &mut rng).unwrap();
        assert!((slow - 20_000.0).abs() < 1e-6, "{slow}");
        let s = dev.stats();
        assert_eq!((s.reads, s.writes), (120, 0));
        // At least one request, however short the time.
        let before = dev.requests;
        qd1_read_rate(&mut dev, &Ticks, 64, 0.0, &mut rng).unwrap();
        assert_eq!(dev.requests, before + 1);
    }

    #[test]
    fn median_is_the_lower_middle() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 2.0);
        assert_eq!(median(Vec::new()), 0.0);
    }
}
