//! The results of a suite: the median of repeated runs of a cell, the [`Results`] of the
//! cells run so far, and saving them to `results.json` and `report.html`.

use super::aging::AGING_RULE;
use super::calibrate::CALIBRATION_RULE;
use super::config::BenchConfig;
use super::measure::{BUFFER_RULE, DEVICE_LIMIT_RULE};
use super::threads::THREADS_RULE;
use super::ROUND_RULE;
use crate::output::report::{self, Record, Repeat, Results, RunOptions, SubjectInfo};
use crate::probe::DeviceProfile;
use anyhow::Result;
use std::path::PathBuf;

/// Write `out/results.json` and `out/report.html`; returns their paths.
pub(super) fn save_results(results: &Results, cfg: &BenchConfig) -> Result<(PathBuf, PathBuf)> {
    let path = cfg.out.join("results.json");
    results.save(&path)?;
    let html = cfg.out.join("report.html");
    crate::output::html::save(results, &html)?;
    Ok((path, html))
}

/// The results of the cells run so far.
pub(super) fn results_of(
    cfg: &BenchConfig,
    profile: &DeviceProfile,
    infos: &[SubjectInfo],
    records: &[Record],
) -> Results {
    Results {
        flashix_version: env!("CARGO_PKG_VERSION").to_string(),
        git_commit: report::git_commit(),
        key_distribution: cfg.key_dist.to_string(),
        scale: cfg.scale_label(),
        device_profile: profile.clone(),
        options: RunOptions {
            page_size: cfg.page_size,
            buffer_pool_bytes: cfg.buffer_pool_bytes,
            prep_buffer_pool_bytes: cfg.prep_buffer_pool_bytes,
            search_fraction: cfg.search_fraction,
            direct_io: cfg.direct_io,
            entries: cfg.entries,
            ops: cfg.ops,
            key_dist: cfg.key_dist.to_string(),
            seed: cfg.seed,
            repeat: cfg.repeat,
            threads: cfg.threads.clone(),
        },
        aging_rule: AGING_RULE.to_string(),
        device_limit_rule: DEVICE_LIMIT_RULE.to_string(),
        buffer_rule: BUFFER_RULE.to_string(),
        round_rule: ROUND_RULE.to_string(),
        calibration_rule: CALIBRATION_RULE.to_string(),
        threads_rule: THREADS_RULE.to_string(),
        subjects: infos.to_vec(),
        results: records.to_vec(),
    }
}

/// The run of median ops/s among `runs` (the lower median for an even count), with the
/// spread of all runs in its `repeat` field.
pub fn median_of(mut runs: Vec<Record>) -> Record {
    runs.sort_by(|a, b| a.ops_per_sec.total_cmp(&b.ops_per_sec));
    let ops: Vec<f64> = runs.iter().map(|r| r.ops_per_sec).collect();
    let p99: Vec<f64> = runs.iter().map(|r| r.latency_us.p99).collect();
    let mid = (runs.len() - 1) / 2;
    let mut rec = runs.swap_remove(mid);
    if ops.len() > 1 {
        let (min, max) = (ops[0], ops[ops.len() - 1]);
        rec.repeat = Some(Repeat {
            runs: ops.len() as u32,
            median_ops_per_sec: rec.ops_per_sec,
            min_ops_per_sec: min,
            max_ops_per_sec: max,
            spread: (max - min) / rec.ops_per_sec.max(1e-9),
            ops_per_sec: ops,
            p99_us: p99,
        });
    }
    rec
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_run_with_spread() {
        let run = |ops: f64| {
            let mut r = crate::output::report::tests_support::record();
            r.ops_per_sec = ops;
            r
        };
        let m = median_of(vec![run(300.0), run(100.0), run(200.0)]);
        assert_eq!(m.ops_per_sec, 200.0);
        let rep = m.repeat.unwrap();
        assert_eq!(rep.runs, 3);
        assert_eq!(rep.ops_per_sec, vec![100.0, 200.0, 300.0]);
        assert_eq!(rep.spread, 1.0);
        // One run: no repeat block.
        assert!(median_of(vec![run(5.0)]).repeat.is_none());
    }
}
