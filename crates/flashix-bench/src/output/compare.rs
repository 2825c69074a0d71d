//! `flashix compare A.json B.json`: two runs of `flashix bench` side by side, cell by cell
//! (engine x workload), so that a regression stands out.
//!
//! For each cell in both runs: the ops/s of each, the ratio B/A, the pages read and the
//! pages written per operation of each (`A→B`), and the noise of each run: the `--repeat`
//! spread (`Repeat::spread`, (max - min) / median of the runs' ops/s), or "n/a" for a
//! single run.
//!
//! **The flag rule.** A cell's change in ops/s is flagged when `|B/A - 1|` exceeds its
//! bound: the larger of `--threshold` (10% by default) and the noise of the two runs, half
//! of each run's spread added (each median is known to about ± half its spread). A cell
//! whose pages read, or pages written, per operation change by more than the threshold
//! (and by at least 0.01 page) is flagged too: I/O counts hardly vary between runs, so a
//! change in them is a change in the engine, whatever the wall time says. Flags: `SLOWER`,
//! `faster`, `more-reads`, `fewer-reads`, `more-writes`, `fewer-writes`.

use crate::output::report::{Record, Results};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// I/O per operation changes smaller than this (pages) are never flagged.
const IO_FLOOR: f64 = 0.01;

/// One cell in both runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellChange {
    pub engine: String,
    pub workload: String,
    /// Threads of the measured phase (a cell of A is compared with the cell of B that ran
    /// the same workload on the same engine with as many threads).
    #[serde(default = "one_thread")]
    pub threads: u32,
    pub a_ops_per_sec: f64,
    pub b_ops_per_sec: f64,
    /// B / A of ops/s (`None` when A measured 0).
    pub ratio: Option<f64>,
    /// Pages read, and written, per operation in A and in B.
    pub a_reads_per_op: f64,
    pub b_reads_per_op: f64,
    pub a_writes_per_op: f64,
    pub b_writes_per_op: f64,
    /// The `--repeat` spread of each run (`None`: a single run, noise unknown).
    pub a_spread: Option<f64>,
    pub b_spread: Option<f64>,
    /// The change in ops/s beyond which the cell is flagged (the module doc's rule).
    pub bound: f64,
    /// `SLOWER`, `faster`, `more-reads`, `fewer-reads`, `more-writes`, `fewer-writes`;
    /// empty when the cell is within its bounds.
    pub flags: Vec<String>,
}

fn one_thread() -> u32 {
    1
}

/// The workload of a cell as the tables show it: with its threads when they are not 1.
pub fn workload_label(workload: &str, threads: u32) -> String {
    match threads {
        1 => workload.to_string(),
        t => format!("{workload} x{t}"),
    }
}

/// Whether `a` and `b` are the same cell: engine, workload and threads.
fn same_cell(a: &Record, b: &Record) -> bool {
    a.engine == b.engine && a.workload == b.workload && a.threads == b.threads
}

/// Two runs compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub threshold: f64,
    pub cells: Vec<CellChange>,
    /// Cells of only one run, as `engine/workload` (`engine/workload xN` with N threads).
    pub only_in_a: Vec<String>,
    pub only_in_b: Vec<String>,
}

impl Comparison {
    /// Cells with at least one flag.
    pub fn flagged(&self) -> impl Iterator<Item = &CellChange> {
        self.cells.iter().filter(|c| !c.flags.is_empty())
    }
}

/// Compare every cell of `b` with the same cell of `a`; `threshold` is a fraction (0.1).
pub fn compare(a: &Results, b: &Results, threshold: f64) -> Comparison {
    let key = |r: &Record| format!("{}/{}", r.engine, workload_label(&r.workload, r.threads));
    let mut cells = Vec::new();
    let mut only_in_b = Vec::new();
    for rb in &b.results {
        let Some(ra) = a.results.iter().find(|ra| same_cell(ra, rb)) else {
            only_in_b.push(key(rb));
            continue;
        };
        let a_spread = ra.repeat.as_ref().map(|r| r.spread);
        let b_spread = rb.repeat.as_ref().map(|r| r.spread);
        let noise = (a_spread.unwrap_or(0.0) + b_spread.unwrap_or(0.0)) / 2.0;
        let bound = threshold.max(noise);
        let ratio = (ra.ops_per_sec > 0.0).then(|| rb.ops_per_sec / ra.ops_per_sec);
        let mut flags = Vec::new();
        if let Some(r) = ratio {
            if r - 1.0 > bound {
                flags.push("faster".to_string());
            } else if 1.0 - r > bound {
                flags.push("SLOWER".to_string());
            }
        }
        for (what, ia, ib) in [
            ("reads", ra.reads_per_op, rb.reads_per_op),
            ("writes", ra.writes_per_op, rb.writes_per_op),
        ] {
            let d = ib - ia;
            if d.abs() >= IO_FLOOR && d.abs() > threshold * ia.max(ib) {
                let more = if d > 0.0 { "more" } else { "fewer" };
                flags.push(format!("{more}-{what}"));
            }
        }
        cells.push(CellChange {
            engine: rb.engine.clone(),
            workload: rb.workload.clone(),
            threads: rb.threads,
            a_ops_per_sec: ra.ops_per_sec,
            b_ops_per_sec: rb.ops_per_sec,
            ratio,
            a_reads_per_op: ra.reads_per_op,
            b_reads_per_op: rb.reads_per_op,
            a_writes_per_op: ra.writes_per_op,
            b_writes_per_op: rb.writes_per_op,
            a_spread,
            b_spread,
            bound,
            flags,
        });
    }
    let only_in_a = a
        .results
        .iter()
        .filter(|ra| !b.results.iter().any(|rb| same_cell(ra, rb)))
        .map(key)
        .collect();
    Comparison {
        threshold,
        cells,
        only_in_a,
        only_in_b,
    }
}

/// A spread as the `±` of a median (half the spread), or `n/a`.
pub fn noise(spread: Option<f64>) -> String {
    spread.map_or("n/a".to_string(), |s| format!("±{:.1}%", s * 50.0))
}

/// A ratio as a signed change, `+12.3%`, or `-` when A measured nothing.
pub fn change(ratio: Option<f64>) -> String {
    ratio.map_or("-".to_string(), |r| format!("{:+.1}%", (r - 1.0) * 100.0))
}

/// The terminal table: one line per cell, flagged cells marked, then a summary.
pub fn format(c: &Comparison, a_name: &str, b_name: &str) -> String {
    let header = [
        "engine",
        "workload",
        "A ops/s",
        "B ops/s",
        "B/A",
        "change",
        "A noise",
        "B noise",
        "reads/op A→B",
        "writes/op A→B",
        "flag",
    ];
    let rows: Vec<Vec<String>> = c
        .cells
        .iter()
        .map(|x| {
            vec![
                x.engine.clone(),
                workload_label(&x.workload, x.threads),
                format!("{:.0}", x.a_ops_per_sec),
                format!("{:.0}", x.b_ops_per_sec),
                x.ratio.map_or("-".to_string(), |r| format!("{r:.3}")),
                change(x.ratio),
                noise(x.a_spread),
                noise(x.b_spread),
                format!("{:.3}→{:.3}", x.a_reads_per_op, x.b_reads_per_op),
                format!("{:.3}→{:.3}", x.a_writes_per_op, x.b_writes_per_op),
                x.flags.join(","),
            ]
        })
        .collect();
    let len = |s: &str| s.chars().count();
    let mut widths: Vec<usize> = header.iter().map(|h| len(h)).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(len(cell));
        }
    }
    let line = |cells: &[String]| {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            if i < 2 || i == cells.len() - 1 {
                let _ = write!(s, "{cell:<w$}");
            } else {
                let _ = write!(s, "{cell:>w$}");
            }
        }
        s.trim_end().to_string()
    };
    let mut out = format!("A: {a_name}\nB: {b_name}\n");
    out.push_str(&line(&header.map(String::from)));
    out.push('\n');
    out.push_str(&"-".repeat(widths.iter().sum::<usize>() + 2 * (widths.len() - 1)));
    out.push('\n');
    for row in &rows {
        out.push_str(&line(row));
        out.push('\n');
    }
    for k in &c.only_in_a {
        let _ = writeln!(out, "only in A: {k}");
    }
    for k in &c.only_in_b {
        let _ = writeln!(out, "only in B: {k}");
    }
    let flagged = c.flagged().count();
    let slower = c
        .cells
        .iter()
        .filter(|x| x.flags.iter().any(|f| f == "SLOWER"))
        .count();
    let _ = writeln!(
        out,
        "{flagged} of {} cells changed beyond their bound ({slower} slower); bound: the larger of \
         the threshold {:.0}% and the runs' noise (half of each --repeat spread); I/O flags: \
         reads/op or writes/op changed by more than the threshold",
        c.cells.len(),
        c.threshold * 100.0
    );
    out
}

/// Results around `records`, for unit tests.
#[cfg(test)]
pub(crate) fn tests_results(records: Vec<Record>) -> Results {
    tests::results(records)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::report::{tests_support::record, Repeat};

    pub(super) fn results(records: Vec<Record>) -> Results {
        Results {
            flashix_version: "0".into(),
            git_commit: "unknown".into(),
            key_distribution: "uniform".into(),
            scale: "quick".into(),
            device_profile: crate::probe::example_profile(),
            options: crate::output::report::RunOptions {
                page_size: 4096,
                buffer_pool_bytes: 1 << 20,
                prep_buffer_pool_bytes: 0,
                search_fraction: 0.5,
                direct_io: true,
                entries: 10,
                ops: 10,
                key_dist: "uniform".into(),
                seed: 1,
                repeat: 1,
                threads: vec![1],
            },
            aging_rule: String::new(),
            device_limit_rule: String::new(),
            buffer_rule: String::new(),
            round_rule: String::new(),
            calibration_rule: String::new(),
            threads_rule: String::new(),
            subjects: Vec::new(),
            results: records,
        }
    }

    fn cell(engine: &str, workload: &str, ops: f64, io: f64) -> Record {
        Record {
            engine: engine.into(),
            workload: workload.into(),
            ops_per_sec: ops,
            reads_per_op: io,
            writes_per_op: 0.0,
            ..record()
        }
    }

    #[test]
    fn flags_follow_the_threshold_the_noise_and_the_io() {
        let a = results(vec![
            cell("btree", "o-search", 1000.0, 2.0),
            cell("btree", "o-insert", 1000.0, 2.0),
            cell("lsm", "o-search", 1000.0, 2.0),
            cell("lsm", "o-insert", 1000.0, 2.0),
            cell("pio", "tpcc", 1.0, 1.0),
        ]);
        let mut noisy = cell("lsm", "o-search", 800.0, 2.0);
        noisy.repeat = Some(Repeat {
            runs: 3,
            median_ops_per_sec: 800.0,
            min_ops_per_sec: 600.0,
            max_ops_per_sec: 1000.0,
            spread: 0.5,
            ops_per_sec: vec![600.0, 800.0, 1000.0],
            p99_us: vec![1.0; 3],
        });
        let b = results(vec![
            cell("btree", "o-search", 1050.0, 2.0), // +5%: within 10%
            cell("btree", "o-insert", 700.0, 2.0),  // -30%
            noisy,                                  // -20%, noise ±25%
            cell("lsm", "o-insert", 1000.0, 3.0),   // same speed, 50% more reads
            cell("fdtree", "tpcc", 1.0, 1.0),
        ]);
        let c = compare(&a, &b, 0.10);
        let flags: Vec<(String, Vec<String>)> = c
            .cells
            .iter()
            .map(|x| (format!("{}/{}", x.engine, x.workload), x.flags.clone()))
            .collect();
        assert_eq!(
            flags,
            vec![
                ("btree/o-search".to_string(), vec![]),
                ("btree/o-insert".to_string(), vec!["SLOWER".to_string()]),
                ("lsm/o-search".to_string(), vec![]),
                ("lsm/o-insert".to_string(), vec!["more-reads".to_string()]),
            ]
        );
        assert_eq!(c.only_in_a, vec!["pio/tpcc".to_string()]);
        assert_eq!(c.only_in_b, vec!["fdtree/tpcc".to_string()]);
        assert!((c.cells[2].bound - 0.25).abs() < 1e-12);
        let t = format(&c, "a.json", "b.json");
        assert!(t.contains("-30.0%"), "{t}");
        assert!(t.contains("n/a"), "{t}");
        assert!(t.contains("±25.0%"), "{t}");
        assert!(t.contains("2 of 4 cells changed"), "{t}");
    }

    /// A cell with 4 threads is compared with the same cell with 4 threads, never with the
    /// one of 1 thread.
    #[test]
    fn cells_of_other_thread_counts_are_other_cells() {
        let threads = |t: u32, ops: f64| Record {
            threads: t,
            ..cell("btree", "o-search", ops, 1.0)
        };
        let a = results(vec![threads(1, 1000.0), threads(4, 3000.0)]);
        let b = results(vec![threads(4, 3000.0), threads(8, 5000.0)]);
        let c = compare(&a, &b, 0.10);
        assert_eq!(c.cells.len(), 1);
        assert_eq!((c.cells[0].threads, c.cells[0].ratio), (4, Some(1.0)));
        assert_eq!(c.only_in_a, vec!["btree/o-search".to_string()]);
        assert_eq!(c.only_in_b, vec!["btree/o-search x8".to_string()]);
        assert!(format(&c, "a", "b").contains("o-search x4"));
    }
}
