//! Results: per-(engine, workload) records, latency percentiles, the device limit and
//! `results.json` (the terminal table of the records is [`super::table`]).

use crate::probe::DeviceProfile;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Latency percentiles in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    #[serde(default)]
    pub mean: f64,
    pub p50: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

impl Latency {
    /// Percentiles of per-operation latencies given in nanoseconds (sorts `ns`).
    pub fn from_nanos(ns: &mut [u64]) -> Latency {
        ns.sort_unstable();
        let us = |q: f64| percentile_sorted(ns, q) as f64 / 1000.0;
        let mean = if ns.is_empty() {
            0.0
        } else {
            ns.iter().map(|&x| x as f64).sum::<f64>() / ns.len() as f64 / 1000.0
        };
        Latency {
            mean,
            p50: us(0.50),
            p99: us(0.99),
            p999: us(0.999),
            max: ns.last().map_or(0.0, |&m| m as f64 / 1000.0),
        }
    }
}

/// The `q`-quantile (0..=1) of sorted values, nearest-rank method: the smallest value such
/// that at least `q` of the values are at most it. 0 for an empty slice.
pub fn percentile_sorted(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let n = sorted.len();
    let rank = (q.clamp(0.0, 1.0) * n as f64).ceil() as usize;
    sorted[rank.clamp(1, n) - 1]
}

/// One measured (engine, workload, threads) run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub engine: String,
    pub workload: String,
    /// Threads that ran the measured phase on the one index (`--threads`), each its own
    /// stream (`runner::THREADS_RULE`); the figures below are over all of them: `ops` and
    /// `ops_per_sec` their sum, the latencies those of every thread's operations.
    #[serde(default = "one_u32")]
    pub threads: u32,
    /// Live entries of the aged index the workload started from.
    pub entries: u64,
    /// Operations measured: point operations, range scans or `get_many` calls.
    pub ops: u64,
    /// Keys one operation covers (entries per scan, keys per `get_many`; 1 otherwise).
    #[serde(default = "one")]
    pub keys_per_op: u64,
    pub ops_per_sec: f64,
    pub latency_us: Latency,
    /// Device pages read per operation.
    pub reads_per_op: f64,
    /// Device pages written per operation.
    pub writes_per_op: f64,
    pub read_requests_per_op: f64,
    pub write_requests_per_op: f64,
    /// Bytes written to the device per operation.
    pub bytes_written_per_op: f64,
    /// Bytes appended to the write-ahead log per operation (a file beside the device).
    pub wal_bytes_per_op: f64,
    /// The subject's memory: a flashix engine's accounted `Stats::memory_bytes` at the end
    /// of the measured phase; a peer's measured peak (see `memory_bound`).
    pub memory_bytes: u64,
    /// How much the process's resident memory peaked above its level at the start of the
    /// measured phase (`VmHWM` after a reset, less `VmRSS`; Linux), beside the accounted
    /// `memory_bytes`: the engine's real growth, the bench's own op stream included.
    #[serde(default)]
    pub rss_growth_bytes: Option<u64>,
    /// The memory budget the cell ran with (`--buffer-pool`); 0 in older results.
    #[serde(default)]
    pub budget_bytes: u64,
    pub buffer_hit_ratio: f64,
    /// Wall time of the measured phase, final flush included.
    pub elapsed_s: f64,
    /// Wall time of preparing the aged index (bulk load and aging; shared by an engine's workloads).
    pub prepare_s: f64,
    pub aging_inserts: u64,
    pub key_dist: String,
    /// The engine's parameters in effect, e.g. `k=22 levels=4 deamortize=on`.
    #[serde(default)]
    pub engine_params: String,
    /// The cost model's prediction for this engine, where one applies (FD-tree).
    #[serde(default)]
    pub model: Option<ModelPrediction>,
    /// `flashix` (an engine of this crate) or `peer`.
    #[serde(default)]
    pub kind: String,
    /// How the memory was bounded (buffer pool, block cache, or not at all).
    #[serde(default)]
    pub memory_bound: String,
    /// Whether the I/O bypassed the OS page cache (O_DIRECT).
    #[serde(default)]
    pub page_cache_bypassed: bool,
    /// When writes become durable.
    #[serde(default)]
    pub commit_model: String,
    /// Where the I/O figures come from (flashix counters, or `/proc/self/io` for peers).
    #[serde(default)]
    pub io_counted_by: String,
    /// Largest number of requests in flight at once (flashix `DeviceStats::max_queue_depth`;
    /// 1 for peers).
    #[serde(default = "one")]
    pub queue_depth: u64,
    /// The device's mean queue depth over the measured phase: the time requests spent in
    /// flight, summed (`DeviceStats::inflight_ns`), over the phase's wall time (Little's
    /// law). `None` (null) where the device does not time its requests, for peers, and in
    /// older results.
    #[serde(default)]
    pub mean_queue_depth: Option<f64>,
    /// Keys inserted, updated or deleted per operation.
    #[serde(default)]
    pub write_keys_per_op: f64,
    /// Bytes written (device and WAL) per written key, divided by the 16 bytes of an entry.
    #[serde(default)]
    pub write_amplification: Option<f64>,
    /// Keys written in the phase over the entries the engine's write buffer holds
    /// (`runner::BUFFER_RULE`); `None` for engines without one and workloads that do not
    /// write. Below 1 the buffer absorbed the phase: the cell measured the buffer.
    #[serde(default)]
    pub buffer_turnovers: Option<f64>,
    /// Operations of the stream run before the phase, unmeasured, to turn the write buffer
    /// over once (`runner::BUFFER_RULE`); 0 where there is no buffer to turn over.
    #[serde(default)]
    pub warm_up_write_ops: u64,
    /// The device's limit for this operation mix and the share of it reached.
    #[serde(default)]
    pub device_limit: Option<DeviceLimit>,
    /// The device's random-read rate measured just before and after the phase, and the
    /// limit and share at those moments (`runner::CALIBRATION_RULE`); `None` on a
    /// simulated device, without O_DIRECT, and in older results.
    #[serde(default)]
    pub calibration: Option<Calibration>,
    /// Throughput and latency per interval of the measured phase (about 100 intervals).
    #[serde(default)]
    pub series: Vec<Interval>,
    /// With `--repeat N`: every run's figures; this record is the median run.
    #[serde(default)]
    pub repeat: Option<Repeat>,
    /// On a simulated SSD (`BenchConfig::device`): the simulator's device time of the
    /// measured phase (`Stats.device.flash["sim_time_us"]`), seconds; `None` on a file.
    #[serde(default)]
    pub sim_seconds: Option<f64>,
    /// CPU time of the process (user and system, all threads: `getrusage`) during the
    /// measured phase per operation, microseconds: what an operation costs beside waiting
    /// for its I/O (kernel time of submitting I/O included). `None` in older results.
    #[serde(default)]
    pub cpu_us_per_op: Option<f64>,
    /// The merge thread's time in the phase (FD-tree and LSM-tree merges that ran on it;
    /// `None` for the others and in older results).
    #[serde(default)]
    pub merge_thread: Option<MergeThreadUse>,
    /// Where one index's threads serialized in the phase (engines served through the
    /// library's readers-writer lock); `None` for peers and runs of one thread.
    #[serde(default)]
    pub writer_lock: Option<WriterLockUse>,
}

/// Where the merge thread's time went over the merges it completed during a measured
/// phase (engine counters `merge_thread_us`, `merge_thread_cpu_us`,
/// `merge_thread_io_wait_us`), in microseconds per operation of the phase: whether the
/// merges were bound by their CPU or by their I/O.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MergeThreadUse {
    /// Merges completed on the thread during the phase.
    pub merges: u64,
    /// Their time on the thread.
    pub wall_us_per_op: f64,
    /// The thread's CPU time (user and system) meanwhile.
    pub cpu_us_per_op: f64,
    /// Their waits for their requests.
    pub io_wait_us_per_op: f64,
}

/// How long writers held an index's exclusive lock in a phase (engine counters
/// `writer_lock_held_ns`, `writer_lock_held_max_ns`), and how many reads left their
/// device read outside it (`reads_outside_the_lock`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WriterLockUse {
    /// Share of the phase's wall time the exclusive lock was held.
    pub held_share: f64,
    /// The longest hold, in microseconds.
    pub held_max_us: f64,
    /// Reads that stopped at a miss and read the page outside the lock, per operation.
    pub outside_reads_per_op: f64,
}

/// The share of the device's limit a result reached (see `runner::DEVICE_LIMIT_RULE`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceLimit {
    /// Queue depth the reads are charged at: the device's mean queue depth in the measured
    /// phase (`Record::mean_queue_depth`), or where the device does not time its requests
    /// the mean requests per read batch (flashix engines), or 32 (peers).
    pub queue_depth: f64,
    /// Random 4 KiB read IOPS of the profile at that queue depth.
    pub read_iops_at_qd: f64,
    /// Operations per second the reads alone would allow.
    pub read_limit_ops_per_sec: Option<f64>,
    /// Operations per second the writes alone would allow (sequential write bandwidth /
    /// bytes written per op).
    pub write_limit_ops_per_sec: Option<f64>,
    /// Operations per second the device allows for both.
    pub limit_ops_per_sec: f64,
    /// Measured ops/s / limit.
    pub share: f64,
}

/// The device measured beside a cell (`runner::CALIBRATION_RULE`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Random 4 KiB reads per second at QD1 just before the phase.
    pub qd1_iops_before: f64,
    /// The same just after it.
    pub qd1_iops_after: f64,
    /// Their combined rate over the profile's QD1 IOPS: the factor the profile's
    /// random-read rates were scaled by.
    pub factor: f64,
    /// The device limit of the phase with those rates, and the share of it reached.
    pub device_limit: Option<DeviceLimit>,
}

/// One interval of a measured phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Seconds since the start of the measured phase at the end of the interval (the last
    /// one includes the final sync).
    pub end_s: f64,
    pub ops: u64,
    pub ops_per_sec: f64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
}

/// The runs of a repeated cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Repeat {
    pub runs: u32,
    pub median_ops_per_sec: f64,
    pub min_ops_per_sec: f64,
    pub max_ops_per_sec: f64,
    /// (max - min) / median of ops/s.
    pub spread: f64,
    /// Every run's ops/s, ascending.
    pub ops_per_sec: Vec<f64>,
    /// Every run's p99 latency (us), in the same order.
    pub p99_us: Vec<f64>,
}

/// How an engine or peer was run: stated once per subject in `results.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubjectInfo {
    pub name: String,
    /// `flashix` or `peer`.
    pub kind: String,
    pub memory_bound: String,
    pub page_cache_bypassed: bool,
    pub commit_model: String,
}

/// Random 4 KiB read IOPS at queue depth `qd`: the profile's rates by queue depth,
/// interpolated linearly in log2(qd) between the measured depths, clamped to the lowest
/// and highest ([`DeviceProfile::read_iops_at`]; QD1 and QD32 alone in older profiles).
pub fn read_iops_at(p: &DeviceProfile, qd: f64) -> f64 {
    p.read_iops_at(qd)
}

/// The device's limit for a mix of `read_requests` and `read_bytes` read and
/// `write_bytes` written per operation at queue depth `qd`, and the share of it that
/// `ops_per_sec` reaches (runner::DEVICE_LIMIT_RULE). `None` when the operation does no
/// I/O or the profile has no rates.
pub fn device_limit(
    p: &DeviceProfile,
    qd: f64,
    read_requests: f64,
    read_bytes: f64,
    write_bytes: f64,
    ops_per_sec: f64,
) -> Option<DeviceLimit> {
    let iops = read_iops_at(p, qd);
    let seq_r = p.seq_read_mb_s * 1e6;
    let seq_w = p.seq_write_mb_s * 1e6;
    if !(iops > 0.0 && seq_r > 0.0 && seq_w > 0.0) {
        return None;
    }
    let t_read = (read_requests / iops).max(read_bytes / seq_r);
    let t_write = write_bytes / seq_w;
    let t = t_read + t_write;
    if !(t > 0.0 && t.is_finite()) {
        return None;
    }
    let limit = 1.0 / t;
    Some(DeviceLimit {
        queue_depth: qd.max(1.0),
        read_iops_at_qd: iops,
        read_limit_ops_per_sec: (t_read > 0.0).then(|| 1.0 / t_read),
        write_limit_ops_per_sec: (t_write > 0.0).then(|| 1.0 / t_write),
        limit_ops_per_sec: limit,
        share: ops_per_sec / limit,
    })
}

/// A cost model's predicted costs per operation, beside which the measured means stand.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelPrediction {
    /// FD-tree §4 Eq. 10: search time with the buffer pool considered, microseconds.
    pub search_us: f64,
    /// FD-tree App. C.3: amortized insertion time (head tree + merges), microseconds.
    pub insert_us: f64,
    pub k: u64,
    pub levels: u32,
}

/// Options recorded in `results.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunOptions {
    pub page_size: usize,
    pub buffer_pool_bytes: u64,
    #[serde(default)]
    pub prep_buffer_pool_bytes: u64,
    #[serde(default)]
    pub search_fraction: f64,
    pub direct_io: bool,
    pub entries: u64,
    pub ops: u64,
    pub key_dist: String,
    pub seed: u64,
    /// Runs per cell (`--repeat`).
    #[serde(default = "one_u32")]
    pub repeat: u32,
    /// Thread counts each (engine, workload) cell ran with (`--threads`).
    #[serde(default = "one_thread")]
    pub threads: Vec<u32>,
}

fn one_thread() -> Vec<u32> {
    vec![1]
}

fn one() -> u64 {
    1
}

fn one_u32() -> u32 {
    1
}

/// The content of `results.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results {
    pub flashix_version: String,
    /// `git rev-parse HEAD` at run time, or "unknown".
    pub git_commit: String,
    /// uniform, zipf or seq.
    #[serde(default)]
    pub key_distribution: String,
    /// quick, full or paper (`entries` and `ops` in `options` are what ran).
    #[serde(default)]
    pub scale: String,
    pub device_profile: DeviceProfile,
    pub options: RunOptions,
    pub aging_rule: String,
    #[serde(default)]
    pub device_limit_rule: String,
    /// How write workloads are stretched for engines with write buffers
    /// (`runner::BUFFER_RULE`).
    #[serde(default)]
    pub buffer_rule: String,
    /// How repeated runs of the cells are ordered (`runner::ROUND_RULE`).
    #[serde(default)]
    pub round_rule: String,
    /// How the device limit at a cell's time is measured (`runner::CALIBRATION_RULE`).
    #[serde(default)]
    pub calibration_rule: String,
    /// How the threads of a phase run (`runner::THREADS_RULE`).
    #[serde(default)]
    pub threads_rule: String,
    /// Every engine and peer run: memory bound, page-cache bypass, commit model.
    #[serde(default)]
    pub subjects: Vec<SubjectInfo>,
    pub results: Vec<Record>,
}

impl Results {
    pub fn save(&self, path: &Path) -> Result<()> {
        let json = serde_json::to_string_pretty(self).context("serializing results")?;
        std::fs::write(path, json + "\n").with_context(|| format!("writing {}", path.display()))
    }

    pub fn load(path: &Path) -> Result<Results> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
    }
}

/// `git rev-parse HEAD` of the source tree this binary was built from (with "-dirty" when it
/// has uncommitted changes), or "unknown".
pub fn git_commit() -> String {
    // The source tree this binary was built from, wherever the bench runs.
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(env!("CARGO_MANIFEST_DIR"))
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map(|s| s.trim().to_string())
    };
    match git(&["rev-parse", "HEAD"]).filter(|s| !s.is_empty()) {
        Some(head) => match git(&["status", "--porcelain", "--untracked-files=no"]) {
            Some(changes) if !changes.is_empty() => format!("{head}-dirty"),
            _ => head,
        },
        None => "unknown".to_string(),
    }
}

impl Record {
    /// True when the engine's write buffer held every key the phase wrote
    /// (`buffer_turnovers` below 1).
    pub fn buffer_absorbed(&self) -> bool {
        self.buffer_turnovers.is_some_and(|t| t < 1.0)
    }

    /// True when the subject's memory (`memory_bytes`) passed the cell's budget: no engine
    /// may exceed it silently.
    pub fn over_budget(&self) -> bool {
        self.budget_bytes > 0 && self.memory_bytes > self.budget_bytes
    }

    /// The share of the device limit at the time the phase ran (`dev now`,
    /// `runner::CALIBRATION_RULE`), when the device was calibrated beside it.
    pub fn share_now(&self) -> Option<f64> {
        Some(self.calibration.as_ref()?.device_limit.as_ref()?.share)
    }
}

/// A record for unit tests.
#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;

    pub fn record() -> Record {
        Record {
            engine: "btree".into(),
            workload: "o-search".into(),
            threads: 1,
            entries: 10,
            ops: 10,
            keys_per_op: 1,
            ops_per_sec: 1234.5,
            latency_us: Latency::default(),
            reads_per_op: 1.0,
            writes_per_op: 0.0,
            read_requests_per_op: 1.0,
            write_requests_per_op: 0.0,
            bytes_written_per_op: 2048.0,
            wal_bytes_per_op: 32.0,
            memory_bytes: 0,
            rss_growth_bytes: None,
            budget_bytes: 0,
            buffer_hit_ratio: 0.5,
            elapsed_s: 1.0,
            prepare_s: 1.0,
            aging_inserts: 0,
            key_dist: "uniform".into(),
            engine_params: String::new(),
            model: None,
            kind: "flashix".into(),
            memory_bound: String::new(),
            page_cache_bypassed: true,
            commit_model: String::new(),
            io_counted_by: String::new(),
            queue_depth: 1,
            mean_queue_depth: None,
            write_keys_per_op: 0.0,
            write_amplification: None,
            buffer_turnovers: None,
            warm_up_write_ops: 0,
            device_limit: device_limit(
                &crate::probe::example_profile(),
                1.0,
                1.0,
                4096.0,
                0.0,
                10_000.0,
            ),
            calibration: None,
            series: Vec::new(),
            repeat: None,
            sim_seconds: None,
            cpu_us_per_op: None,
            merge_thread: None,
            writer_lock: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::table::format_table;

    #[test]
    fn percentiles_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile_sorted(&v, 0.5), 50);
        assert_eq!(percentile_sorted(&v, 0.99), 99);
        assert_eq!(percentile_sorted(&v, 0.999), 100);
        assert_eq!(percentile_sorted(&v, 1.0), 100);
        assert_eq!(percentile_sorted(&v, 0.0), 1);
        assert_eq!(percentile_sorted(&[], 0.5), 0);
        assert_eq!(percentile_sorted(&[7], 0.99), 7);
        let v: Vec<u64> = (1..=1000).collect();
        assert_eq!(percentile_sorted(&v, 0.999), 999);
    }

    #[test]
    fn latency_from_nanos() {
        let mut ns: Vec<u64> = (1..=1000).rev().map(|x| x * 1000).collect();
        let l = Latency::from_nanos(&mut ns);
        assert_eq!(l.mean, 500.5);
        assert_eq!(l.p50, 500.0);
        assert_eq!(l.p99, 990.0);
        assert_eq!(l.p999, 999.0);
        assert_eq!(l.max, 1000.0);
    }

    #[test]
    fn device_limit_follows_the_rule() {
        let p = crate::probe::example_profile();
        assert_eq!(read_iops_at(&p, 1.0), 20_000.0);
        assert_eq!(read_iops_at(&p, 32.0), 100_000.0);
        assert_eq!(read_iops_at(&p, 1000.0), 100_000.0);
        // log2(4) = 2 of 5 steps from QD1 to QD32.
        assert!((read_iops_at(&p, 4.0) - (20_000.0 + 80_000.0 * 0.4)).abs() < 1e-6);
        // Pure search at QD1: one read per op.
        let d = device_limit(&p, 1.0, 1.0, 4096.0, 0.0, 5_000.0).unwrap();
        assert!((d.limit_ops_per_sec - 20_000.0).abs() < 1e-6);
        assert!((d.share - 0.25).abs() < 1e-9);
        assert!(d.write_limit_ops_per_sec.is_none());
        // Pure insert: 1024 MB/s / 1024 bytes per insert = 10^6 ops/s.
        let d = device_limit(&p, 1.0, 0.0, 0.0, 1024.0, 1e5).unwrap();
        assert!((d.limit_ops_per_sec - 1e6).abs() < 1e-3);
        assert!((d.share - 0.1).abs() < 1e-9);
        // Mixed: the times add.
        let d = device_limit(&p, 1.0, 1.0, 4096.0, 1024.0, 1.0).unwrap();
        assert!((1.0 / d.limit_ops_per_sec - (1.0 / 20_000.0 + 1e-6)).abs() < 1e-12);
        // A big sequential read is bounded by bandwidth, not IOPS.
        let d = device_limit(&p, 1.0, 1.0, 2048e6, 0.0, 0.5).unwrap();
        assert!((d.limit_ops_per_sec - 1.0).abs() < 1e-9);
        assert!(device_limit(&p, 1.0, 0.0, 0.0, 0.0, 1.0).is_none());
    }

    /// With the rates measured at QD1 to QD32, the rate of a mean queue depth is
    /// interpolated between the two measured depths around it (linear in log2), clamped
    /// outside them; the limit of a search workload follows it.
    #[test]
    fn the_device_limit_uses_the_rate_at_the_queue_depth_reached() {
        let mut p = crate::probe::example_profile();
        p.rand_read_iops_by_qd = vec![
            (1, 20_000.0),
            (2, 36_000.0),
            (4, 60_000.0),
            (8, 80_000.0),
            (16, 90_000.0),
            (32, 100_000.0),
        ];
        assert_eq!(read_iops_at(&p, 0.3), 20_000.0);
        assert_eq!(read_iops_at(&p, 1.0), 20_000.0);
        assert_eq!(read_iops_at(&p, 2.0), 36_000.0);
        assert_eq!(read_iops_at(&p, 8.0), 80_000.0);
        assert_eq!(read_iops_at(&p, 64.0), 100_000.0);
        // log2(3) lies 0.585 of the way from QD2 to QD4.
        let x = 3f64.log2() - 1.0;
        assert!((read_iops_at(&p, 3.0) - (36_000.0 + 24_000.0 * x)).abs() < 1e-6);
        // sqrt(2) is half way (in log2) from QD1 to QD2.
        assert!((read_iops_at(&p, 2f64.sqrt()) - 28_000.0).abs() < 1e-6);
        // Between QD16 and QD32 it is not the line from QD1 to QD32 any more.
        assert!((read_iops_at(&p, 24.0) - (90_000.0 + 10_000.0 * (1.5f64.log2()))).abs() < 1e-6);
        // A search workload at a mean depth of 4: one read per op, 60,000 reads/s.
        let d = device_limit(&p, 4.0, 1.0, 4096.0, 0.0, 30_000.0).unwrap();
        assert_eq!(d.read_iops_at_qd, 60_000.0);
        assert!((d.share - 0.5).abs() < 1e-12);
        // The curve out of order, with a depth of 0 and a rate of 0, reads the same.
        p.rand_read_iops_by_qd.reverse();
        p.rand_read_iops_by_qd.push((0, 5.0));
        p.rand_read_iops_by_qd.push((64, 0.0));
        assert_eq!(read_iops_at(&p, 8.0), 80_000.0);
        assert_eq!(read_iops_at(&p, 64.0), 100_000.0);
        // A scaled profile (a calibration) scales the curve too.
        let half = p.with_read_rates_scaled(0.5);
        assert_eq!(read_iops_at(&half, 8.0), 40_000.0);
        assert_eq!(half.rand_read_iops_qd32, 50_000.0);
    }

    /// A profile saved before the curve was measured loads, and reads as the line between
    /// its QD1 and QD32 rates.
    #[test]
    fn an_old_profile_interpolates_between_qd1_and_qd32() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/device-profile.json"
        ))
        .unwrap();
        assert!(!text.contains("rand_read_iops_by_qd"));
        let p: DeviceProfile = serde_json::from_str(&text).unwrap();
        assert!(p.rand_read_iops_by_qd.is_empty());
        let (lo, hi) = (p.rand_read_iops_qd1, p.rand_read_iops_qd32);
        assert_eq!(read_iops_at(&p, 1.0), lo);
        assert_eq!(read_iops_at(&p, 32.0), hi);
        assert!((read_iops_at(&p, 4.0) - (lo + (hi - lo) * 0.4)).abs() < 1e-6);
    }

    /// Older results (without threads or a mean queue depth) load as one thread, and the
    /// table shows a dash for the depth it does not know.
    #[test]
    fn records_without_threads_load_as_one_thread() {
        let r = tests_support::record();
        let mut json = serde_json::to_value(&r).unwrap();
        let obj = json.as_object_mut().unwrap();
        obj.remove("threads");
        obj.remove("mean_queue_depth");
        let old: Record = serde_json::from_value(json).unwrap();
        assert_eq!((old.threads, old.mean_queue_depth), (1, None));
        let saved = serde_json::to_value(&old).unwrap();
        assert!(saved["mean_queue_depth"].is_null());
        let t = format_table(&[
            old,
            Record {
                threads: 4,
                mean_queue_depth: Some(3.25),
                ..r
            },
        ]);
        let header = t.lines().next().unwrap();
        assert!(
            header.contains("threads") && header.contains("mean QD"),
            "{t}"
        );
        assert!(t.contains("3.25"), "{t}");
    }
}
