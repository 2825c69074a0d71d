//! Results: per-(engine, workload) records, latency percentiles, the terminal table and
//! `results.json`.

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

/// One measured (engine, workload) run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub engine: String,
    pub workload: String,
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
    pub memory_bytes: u64,
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
}

fn one() -> u64 {
    1
}

/// The content of `results.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results {
    pub flashix_version: String,
    pub git_commit: String,
    pub device_profile: DeviceProfile,
    pub options: RunOptions,
    pub aging_rule: String,
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

/// `git rev-parse HEAD` of the current directory, or "unknown".
pub fn git_commit() -> String {
    std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}

/// The terminal table of results.
pub fn format_table(records: &[Record]) -> String {
    let header = [
        "engine",
        "workload",
        "ops/s",
        "keys/s",
        "mean us",
        "p50 us",
        "p99 us",
        "max us",
        "reads/op",
        "writes/op",
        "KiB wr/op",
        "WAL KiB/op",
    ];
    let rows: Vec<[String; 12]> = records
        .iter()
        .map(|r| {
            [
                r.engine.clone(),
                r.workload.clone(),
                format!("{:.0}", r.ops_per_sec),
                format!("{:.0}", r.ops_per_sec * r.keys_per_op as f64),
                format!("{:.1}", r.latency_us.mean),
                format!("{:.1}", r.latency_us.p50),
                format!("{:.1}", r.latency_us.p99),
                format!("{:.0}", r.latency_us.max),
                format!("{:.3}", r.reads_per_op),
                format!("{:.3}", r.writes_per_op),
                format!("{:.2}", r.bytes_written_per_op / 1024.0),
                format!("{:.3}", r.wal_bytes_per_op / 1024.0),
            ]
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.len());
        }
    }
    let line = |cells: &[String]| -> String {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(&widths).enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            if i < 2 {
                s.push_str(&format!("{c:<w$}"));
            } else {
                s.push_str(&format!("{c:>w$}"));
            }
        }
        s.trim_end().to_string()
    };
    let mut out = line(&header.map(String::from));
    out.push('\n');
    let total: usize = widths.iter().sum::<usize>() + 2 * (widths.len() - 1);
    out.push_str(&"-".repeat(total));
    out.push('\n');
    for row in &rows {
        out.push_str(&line(row));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn table_has_a_row_per_record() {
        let r = Record {
            engine: "btree".into(),
            workload: "o-search".into(),
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
            buffer_hit_ratio: 0.5,
            elapsed_s: 1.0,
            prepare_s: 1.0,
            aging_inserts: 0,
            key_dist: "uniform".into(),
            engine_params: String::new(),
            model: None,
        };
        let t = format_table(&[r.clone(), r]);
        assert_eq!(t.lines().count(), 4);
        assert!(t.contains("o-search"));
        assert!(t.contains("2.00"));
    }
}
