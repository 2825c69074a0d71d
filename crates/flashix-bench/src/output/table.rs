//! The terminal table of a run's records: one row per cell, and a line under it for every
//! cell whose subject's memory passed its budget.

use super::report::Record;

/// The terminal table of results.
pub fn format_table(records: &[Record]) -> String {
    let header = [
        "engine",
        "workload",
        "threads",
        "ops",
        "ops/s",
        "keys/s",
        "mean us",
        "cpu us",
        "p50 us",
        "p99 us",
        "max us",
        "reads/op",
        "writes/op",
        "KiB wr/op",
        "WAL KiB/op",
        "mean QD",
        "dev limit",
        "dev now",
        "mem MiB",
        "rss+ MiB",
        "spread",
    ];
    let rows: Vec<[String; 21]> = records
        .iter()
        .map(|r| {
            [
                r.engine.clone(),
                if r.buffer_absorbed() {
                    format!("{}*", r.workload)
                } else {
                    r.workload.clone()
                },
                r.threads.to_string(),
                r.ops.to_string(),
                format!("{:.0}", r.ops_per_sec),
                format!("{:.0}", r.ops_per_sec * r.keys_per_op as f64),
                format!("{:.1}", r.latency_us.mean),
                r.cpu_us_per_op
                    .map_or("-".to_string(), |c| format!("{c:.1}")),
                format!("{:.1}", r.latency_us.p50),
                format!("{:.1}", r.latency_us.p99),
                format!("{:.0}", r.latency_us.max),
                format!("{:.3}", r.reads_per_op),
                format!("{:.3}", r.writes_per_op),
                format!("{:.2}", r.bytes_written_per_op / 1024.0),
                format!("{:.3}", r.wal_bytes_per_op / 1024.0),
                r.mean_queue_depth
                    .map_or("-".to_string(), |q| format!("{q:.2}")),
                r.device_limit
                    .as_ref()
                    .map_or("-".to_string(), |d| format!("{:.1}%", d.share * 100.0)),
                r.share_now()
                    .map_or("-".to_string(), |s| format!("{:.1}%", s * 100.0)),
                format!(
                    "{:.2}{}",
                    r.memory_bytes as f64 / (1 << 20) as f64,
                    if r.over_budget() { "!" } else { "" }
                ),
                r.rss_growth_bytes.map_or("-".to_string(), |b| {
                    format!("{:.2}", b as f64 / (1 << 20) as f64)
                }),
                r.repeat
                    .as_ref()
                    .map_or("-".to_string(), |p| format!("±{:.0}%", p.spread * 50.0)),
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
    if records.iter().any(Record::buffer_absorbed) {
        out.push_str(
            "* the engine's write buffer absorbed the phase (fewer keys written than it \
             holds): the cell measured the buffer, not the device\n",
        );
    }
    for r in records.iter().filter(|r| r.over_budget()) {
        out.push_str(&format!(
            "! {} {}: memory {:.2} MiB is over the {:.2} MiB budget\n",
            r.engine,
            r.workload,
            r.memory_bytes as f64 / (1 << 20) as f64,
            r.budget_bytes as f64 / (1 << 20) as f64
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::report::{device_limit, tests_support};

    #[test]
    fn a_cell_over_its_budget_is_marked() {
        let within = Record {
            engine: "btree".into(),
            memory_bytes: 2 << 20,
            budget_bytes: 2 << 20,
            ..tests_support::record()
        };
        let over = Record {
            engine: "fbx".into(),
            memory_bytes: 11 << 20,
            ..within.clone()
        };
        assert!(!within.over_budget() && over.over_budget());
        let t = format_table(std::slice::from_ref(&within));
        assert!(!t.contains('!'), "{t}");
        let t = format_table(&[within, over]);
        assert!(t.contains("11.00!"), "{t}");
        assert!(
            t.contains("! fbx o-search: memory 11.00 MiB is over the 2.00 MiB budget"),
            "{t}"
        );
    }

    #[test]
    fn table_has_a_row_per_record() {
        // 1234.5 ops/s, and the device limit of one page read per operation at 10k ops/s.
        let r = tests_support::record();
        let t = format_table(&[r.clone(), r.clone()]);
        assert_eq!(t.lines().count(), 4);
        assert!(t.contains("o-search"));
        assert!(t.contains("2.00"));
        // 1 read per op at QD1 on a 20k IOPS device: 10k ops/s is half the limit.
        assert!(t.contains("50.0%"), "{t}");
        assert_eq!(r.share_now(), None);
        // Calibrated beside the phase at 12.5k reads/s: 80% of the limit of the moment.
        let p = crate::probe::example_profile();
        let now =
            |q: &crate::probe::DeviceProfile| device_limit(q, 1.0, 1.0, 4096.0, 0.0, 10_000.0);
        let r = Record {
            calibration: crate::runner::calibration(&p, 12_500.0, 12_500.0, now),
            ..r
        };
        assert!((r.share_now().unwrap() - 0.8).abs() < 1e-12);
        let t = format_table(&[r]);
        assert!(t.contains("dev now") && t.contains("80.0%"), "{t}");
    }
}
