//! The [`Record`] of a measured cell, from what its phase did ([`PhaseRun`]): throughput
//! and latencies over all its threads, I/O per operation from the engine's counters (or
//! the process's, for peers), the device's mean queue depth, write amplification, and the
//! share of the device's limit at the queue depth the phase reached (DEVICE_LIMIT_RULE).

use super::calibrate::calibration;
use super::config::Subject;
use super::measure::{Cell, PhaseRun, ENTRY_BYTES, PEER_CHARGED_QUEUE_DEPTH};
use super::params::engine_params;
use crate::output::report::{self, MergeThreadUse, Record, WriterLockUse};
use crate::probe::DeviceProfile;
use anyhow::Result;
use flashix::io::DeviceStats;
use flashix::Stats;

/// What the I/O counters give beside the record's own fields.
struct Io {
    read_bytes_per_op: f64,
    /// The queue depth the phase's reads are charged at (DEVICE_LIMIT_RULE).
    read_queue_depth: f64,
}

impl Cell<'_> {
    /// The record of the cell's phase `run`, its device limit by `profile` and, where the
    /// device was read beside the phase, by the rates `calibrated` (before, after).
    pub(super) fn record(
        &self,
        run: PhaseRun,
        profile: &DeviceProfile,
        calibrated: Option<(f64, f64)>,
    ) -> Result<Record> {
        let (cfg, subject, w) = (self.cfg, self.subject, self.w);
        let ops = run.merged.ops as f64;
        let (engine_params, model) = match (subject, &run.end.stats) {
            (Subject::Engine(e), Some(s)) => engine_params(cfg, e, s, run.live, profile)?,
            _ => (String::new(), None),
        };
        let info = subject.info(cfg);
        let write_keys = run.merged.write_keys;
        let mut rec = Record {
            engine: subject.name().to_string(),
            workload: w.name(),
            threads: self.threads,
            entries: self.prep.live,
            ops: run.merged.ops,
            keys_per_op: w.keys_per_op(),
            ops_per_sec: ops / run.elapsed_s.max(1e-9),
            latency_us: run.merged.latency,
            reads_per_op: 0.0,
            writes_per_op: 0.0,
            read_requests_per_op: 0.0,
            write_requests_per_op: 0.0,
            bytes_written_per_op: 0.0,
            wal_bytes_per_op: 0.0,
            memory_bytes: cfg.buffer_pool_bytes,
            rss_growth_bytes: run.rss_growth,
            budget_bytes: cfg.buffer_pool_bytes,
            buffer_hit_ratio: 0.0,
            elapsed_s: run.elapsed_s,
            prepare_s: self.prep.prepare_s,
            aging_inserts: self.prep.aging_inserts,
            key_dist: cfg.key_dist.to_string(),
            engine_params,
            model,
            kind: match subject {
                Subject::Engine(_) => "flashix".into(),
                Subject::Peer(_) => "peer".into(),
            },
            memory_bound: info.memory_bound,
            page_cache_bypassed: info.page_cache_bypassed,
            commit_model: info.commit_model,
            io_counted_by: String::new(),
            queue_depth: 1,
            mean_queue_depth: None,
            write_keys_per_op: write_keys as f64 / ops,
            buffer_turnovers: self
                .prep
                .write_buffer
                .filter(|_| w.writes())
                .map(|b| write_keys as f64 / b as f64),
            warm_up_write_ops: run.warm_writes,
            write_amplification: None,
            device_limit: None,
            calibration: None,
            series: run.merged.series.clone(),
            repeat: None,
            sim_seconds: None,
            cpu_us_per_op: Some((run.end.cpu_s - run.start.cpu_s) * 1e6 / ops),
            merge_thread: None,
            writer_lock: None,
        };
        let io = match (&run.start.stats, &run.end.stats) {
            (Some(s0), Some(s1)) => engine_io(&mut rec, s0, s1, run.elapsed_s),
            _ => peer_io(&mut rec, run.start.io, run.end.io),
        };
        let written = rec.bytes_written_per_op + rec.wal_bytes_per_op;
        if rec.write_keys_per_op > 0.0 {
            rec.write_amplification = Some(written / (rec.write_keys_per_op * ENTRY_BYTES));
        }
        let limit_of = |p: &DeviceProfile| {
            report::device_limit(
                p,
                io.read_queue_depth,
                rec.read_requests_per_op,
                io.read_bytes_per_op,
                written,
                rec.ops_per_sec,
            )
        };
        let device_limit = limit_of(profile);
        let calibration =
            calibrated.and_then(|(before, after)| calibration(profile, before, after, limit_of));
        rec.device_limit = device_limit;
        rec.calibration = calibration;
        Ok(rec)
    }
}

/// The device's mean queue depth over a phase of `elapsed_s` seconds between its counters
/// `d0` and `d1`: the time requests spent in flight over the wall time (Little's law);
/// `None` when the device did not time its requests (no in-flight time at all).
pub fn mean_queue_depth(d0: &DeviceStats, d1: &DeviceStats, elapsed_s: f64) -> Option<f64> {
    let inflight = d1.inflight_ns.saturating_sub(d0.inflight_ns);
    (inflight > 0 && elapsed_s > 0.0).then(|| inflight as f64 / (elapsed_s * 1e9))
}

/// A flashix engine's I/O between its counters `s0` and `s1` into `rec` (per operation of
/// the phase of `elapsed_s` seconds).
fn engine_io(rec: &mut Record, s0: &Stats, s1: &Stats, elapsed_s: f64) -> Io {
    let ops = rec.ops as f64;
    let per_op = |a: u64, b: u64| b.saturating_sub(a) as f64 / ops;
    let (d0, d1) = (&s0.device, &s1.device);
    rec.reads_per_op = per_op(d0.reads, d1.reads);
    rec.writes_per_op = per_op(d0.writes, d1.writes);
    rec.read_requests_per_op = per_op(d0.read_requests, d1.read_requests);
    rec.write_requests_per_op = per_op(d0.write_requests, d1.write_requests);
    rec.bytes_written_per_op = per_op(d0.write_bytes, d1.write_bytes);
    rec.wal_bytes_per_op = per_op(s0.wal.bytes, s1.wal.bytes);
    let hits = s1.buffer.hits.saturating_sub(s0.buffer.hits);
    let misses = s1.buffer.misses.saturating_sub(s0.buffer.misses);
    rec.buffer_hit_ratio = if hits + misses == 0 {
        0.0
    } else {
        hits as f64 / (hits + misses) as f64
    };
    rec.queue_depth = d1.max_queue_depth.max(1);
    rec.mean_queue_depth = mean_queue_depth(d0, d1, elapsed_s);
    let read_batches = d1.read_batches.saturating_sub(d0.read_batches);
    let read_batch_depth = if read_batches == 0 {
        1.0
    } else {
        d1.read_requests.saturating_sub(d0.read_requests) as f64 / read_batches as f64
    };
    rec.io_counted_by = "flashix device and WAL counters".into();
    rec.merge_thread = merge_thread_use(s0, s1, ops);
    if rec.threads > 1 {
        rec.writer_lock = writer_lock_use(s0, s1, ops, elapsed_s);
    }
    let sim_us = |s: &Stats| s.device.flash.get("sim_time_us").copied();
    if let (Some(a), Some(b)) = (sim_us(s0), sim_us(s1)) {
        rec.sim_seconds = Some(b.saturating_sub(a) as f64 / 1e6);
    }
    Io {
        read_bytes_per_op: per_op(d0.read_bytes, d1.read_bytes),
        read_queue_depth: rec.mean_queue_depth.unwrap_or(read_batch_depth),
    }
}

/// A peer's I/O: the process's storage I/O between `io0` and `io1` (bytes read, written),
/// in 4 KiB pages, its reads charged at QD32 (DEVICE_LIMIT_RULE).
fn peer_io(rec: &mut Record, io0: (u64, u64), io1: (u64, u64)) -> Io {
    let ops = rec.ops as f64;
    let per_op = |a: u64, b: u64| b.saturating_sub(a) as f64 / ops;
    let read_bytes_per_op = per_op(io0.0, io1.0);
    rec.bytes_written_per_op = per_op(io0.1, io1.1);
    rec.reads_per_op = read_bytes_per_op / 4096.0;
    rec.writes_per_op = rec.bytes_written_per_op / 4096.0;
    rec.read_requests_per_op = rec.reads_per_op;
    rec.write_requests_per_op = rec.writes_per_op;
    rec.io_counted_by =
        "/proc/self/io (bytes; requests taken as 4 KiB pages, charged at QD32)".into();
    Io {
        read_bytes_per_op,
        read_queue_depth: f64::from(PEER_CHARGED_QUEUE_DEPTH),
    }
}

/// The merge thread's use between the engine's counters `s0` and `s1`, per operation of
/// the `ops` between them; `None` when no merge completed on it.
fn merge_thread_use(s0: &Stats, s1: &Stats, ops: f64) -> Option<MergeThreadUse> {
    let delta = |n: &str| {
        let c = |s: &Stats| s.engine_counters.get(n).copied().unwrap_or(0);
        c(s1).saturating_sub(c(s0))
    };
    let merges = delta("thread_merges");
    (merges > 0).then(|| MergeThreadUse {
        merges,
        wall_us_per_op: delta("merge_thread_us") as f64 / ops,
        cpu_us_per_op: delta("merge_thread_cpu_us") as f64 / ops,
        io_wait_us_per_op: delta("merge_thread_io_wait_us") as f64 / ops,
    })
}

/// The writer lock's use between `s0` and `s1` over a phase of `elapsed_s` seconds and
/// `ops` operations; `None` for an index served without it.
fn writer_lock_use(s0: &Stats, s1: &Stats, ops: f64, elapsed_s: f64) -> Option<WriterLockUse> {
    let get = |s: &Stats, n: &str| s.engine_counters.get(n).copied();
    let held = get(s1, "writer_lock_held_ns")?.saturating_sub(get(s0, "writer_lock_held_ns")?);
    let outside = get(s1, "reads_outside_the_lock")
        .unwrap_or(0)
        .saturating_sub(get(s0, "reads_outside_the_lock").unwrap_or(0));
    Some(WriterLockUse {
        held_share: held as f64 / 1e9 / elapsed_s.max(1e-9),
        held_max_us: get(s1, "writer_lock_held_max_ns").unwrap_or(0) as f64 / 1e3,
        outside_reads_per_op: outside as f64 / ops.max(1.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 3 s of requests in flight over a 2 s phase is a mean queue depth of 1.5; a device
    /// that does not time its requests has none.
    #[test]
    fn the_mean_queue_depth_is_in_flight_time_over_wall_time() {
        let d0 = DeviceStats {
            inflight_ns: 1_000_000_000,
            ..DeviceStats::default()
        };
        let d1 = DeviceStats {
            inflight_ns: 4_000_000_000,
            ..DeviceStats::default()
        };
        assert_eq!(mean_queue_depth(&d0, &d1, 2.0), Some(1.5));
        assert_eq!(mean_queue_depth(&d1, &d1, 2.0), None);
        let none = DeviceStats::default();
        assert_eq!(mean_queue_depth(&none, &none, 2.0), None);
    }
}
