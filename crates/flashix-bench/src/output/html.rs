//! `report.html`: a self-contained page (inline SVG drawn here, inline CSS, no script, no
//! external resource) with the run's settings, one chart per measure, and the result table.
//!
//! Charts (each an `<svg class="chart" data-chart="NAME">`):
//! - `ops`: operations per second per workload per engine (log scale);
//! - `p50`, `p99`: latency percentiles per workload per engine (log scale);
//! - `ios`, `ios-writes`: device pages read, and written, per operation;
//! - `wa`: write amplification (bytes written per written entry / 16);
//! - `limit`: throughput as a share of the device's limit;
//! - `insert-latency`: mean latency per interval over the measured phase of the workloads
//!   that insert (the FD-tree paper's Fig. 6 and 7), one line per engine;
//! - `threads`: with more than one `--threads` count, operations per second by thread
//!   count per workload, one line per engine and peer: how each one scales.
//!
//! With several thread counts, the series of the other charts are (engine, threads)
//! pairs, `btree x4`.
//!
//! Given a baseline run (`flashix report A.json B.json`), a section before the result table
//! compares B with A cell by cell ([`crate::output::compare`]), flagged cells highlighted.

use crate::output::compare::{self, Comparison};
use crate::output::report::{Record, Results};
use anyhow::{Context, Result};
use std::fmt::Write as _;
use std::path::Path;

/// Colours of the series, in order (engines and peers): distinct for the 7 engines and 6
/// peers of a full run, and then some (Tableau's 20, dark then light).
const COLOURS: [&str; 20] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94",
    "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5",
];

const W: f64 = 1100.0;
const H: f64 = 360.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 90.0;

/// Escape text for HTML and SVG.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A compact number: 1234567 -> 1.23M.
fn short(x: f64) -> String {
    let a = x.abs();
    if a >= 1e9 {
        format!("{:.3}G", x / 1e9)
    } else if a >= 1e6 {
        format!("{:.3}M", x / 1e6)
    } else if a >= 1e3 {
        format!("{:.3}k", x / 1e3)
    } else if a >= 10.0 || a == 0.0 {
        format!("{x:.0}")
    } else if a >= 0.1 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// The smallest "round" number (1, 2, 2.5 or 5 times a power of ten, times 5 ticks) at
/// or above `max`, so that the five linear ticks are round numbers.
fn nice_ceil(max: f64) -> f64 {
    if !(max > 0.0 && max.is_finite()) {
        return 1.0;
    }
    let step = max / 5.0;
    let p = 10f64.powf(step.log10().floor());
    let m = [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .find(|m| m * p >= step)
        .unwrap_or(10.0);
    m * p * 5.0
}

/// A y axis: linear from 0, or log10 over the positive values.
struct Axis {
    log: bool,
    lo: f64,
    hi: f64,
}

impl Axis {
    fn new(values: impl Iterator<Item = f64>, log: bool) -> Axis {
        let v: Vec<f64> = values.filter(|x| x.is_finite() && *x > 0.0).collect();
        let max = v.iter().copied().fold(0.0, f64::max);
        if log {
            let min = v.iter().copied().fold(f64::INFINITY, f64::min);
            let (lo, hi) = if v.is_empty() {
                (0.0, 1.0)
            } else {
                (
                    min.log10().floor(),
                    max.log10().ceil().max(min.log10().floor() + 1.0),
                )
            };
            Axis { log, lo, hi }
        } else {
            Axis {
                log,
                lo: 0.0,
                hi: nice_ceil(max),
            }
        }
    }

    /// Fraction of the plot height for `v` (0 at the bottom).
    fn frac(&self, v: f64) -> f64 {
        let x = if self.log {
            if v <= 0.0 {
                return 0.0;
            }
            v.log10()
        } else {
            v
        };
        ((x - self.lo) / (self.hi - self.lo)).clamp(0.0, 1.0)
    }

    fn ticks(&self) -> Vec<f64> {
        if self.log {
            (self.lo as i32..=self.hi as i32)
                .map(|e| 10f64.powi(e))
                .collect()
        } else {
            (0..=5).map(|i| self.hi * f64::from(i) / 5.0).collect()
        }
    }
}

fn svg_open(out: &mut String, name: &str, title: &str, width: f64, height: f64) {
    let _ = write!(
        out,
        r#"<svg class="chart" data-chart="{name}" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{t}"><rect width="100%" height="100%" fill="white"/><text x="{x}" y="22" text-anchor="middle" font-size="16" font-weight="bold">{t}</text>"#,
        x = width / 2.0,
        t = esc(title)
    );
}

fn y_axis(out: &mut String, axis: &Axis, unit: &str, plot_h: f64) {
    for t in axis.ticks() {
        let y = TOP + plot_h * (1.0 - axis.frac(t));
        let _ = write!(
            out,
            r##"<line x1="{LEFT}" x2="{x2}" y1="{y:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{tx}" y="{ty:.1}" text-anchor="end" font-size="11">{label}</text>"##,
            x2 = W - RIGHT,
            tx = LEFT - 6.0,
            ty = y + 4.0,
            label = short(t)
        );
    }
    let _ = write!(
        out,
        r#"<text x="16" y="{y:.1}" transform="rotate(-90 16 {y:.1})" text-anchor="middle" font-size="12">{u}</text>"#,
        y = TOP + plot_h / 2.0,
        u = esc(unit)
    );
}

fn legend(out: &mut String, names: &[String], y: f64) {
    let mut x = LEFT;
    for (i, n) in names.iter().enumerate() {
        let _ = write!(
            out,
            r#"<rect x="{x}" y="{y}" width="12" height="12" fill="{c}"/><text x="{tx}" y="{ty}" font-size="12">{n}</text>"#,
            c = COLOURS[i % COLOURS.len()],
            tx = x + 16.0,
            ty = y + 11.0,
            n = esc(n)
        );
        x += 30.0 + 7.5 * n.len() as f64;
    }
}

/// A grouped bar chart: one group per category, one bar per series. `values[s][c]` is
/// `None` where there is nothing to show.
fn bar_chart(
    name: &str,
    title: &str,
    unit: &str,
    categories: &[String],
    series: &[String],
    values: &[Vec<Option<f64>>],
    log: bool,
) -> String {
    let mut out = String::new();
    svg_open(&mut out, name, title, W, H);
    let plot_h = H - TOP - BOTTOM;
    let axis = Axis::new(values.iter().flatten().flatten().copied(), log);
    y_axis(&mut out, &axis, unit, plot_h);
    let group_w = (W - LEFT - RIGHT) / categories.len().max(1) as f64;
    let bar_w = (group_w * 0.8 / series.len().max(1) as f64).max(1.0);
    for (c, cat) in categories.iter().enumerate() {
        let gx = LEFT + group_w * c as f64 + group_w * 0.1;
        for (s, sname) in series.iter().enumerate() {
            let Some(v) = values.get(s).and_then(|r| r.get(c)).copied().flatten() else {
                continue;
            };
            let h = plot_h * axis.frac(v);
            let x = gx + bar_w * s as f64;
            let _ = write!(
                out,
                r#"<rect class="bar" x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" fill="{col}"><title>{sn} {cn}: {val}</title></rect>"#,
                y = TOP + plot_h - h,
                w = (bar_w - 1.0).max(0.5),
                col = COLOURS[s % COLOURS.len()],
                sn = esc(sname),
                cn = esc(cat),
                val = short(v)
            );
        }
        let _ = write!(
            out,
            r#"<text x="{x:.1}" y="{y}" text-anchor="middle" font-size="11">{c}</text>"#,
            x = LEFT + group_w * (c as f64 + 0.5),
            y = TOP + plot_h + 16.0,
            c = esc(cat)
        );
    }
    legend(&mut out, series, H - 40.0);
    out.push_str("</svg>\n");
    out
}

/// A line chart: one polyline per series of (x, y) points.
fn line_chart(
    name: &str,
    title: &str,
    x_unit: &str,
    y_unit: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> String {
    let mut out = String::new();
    let height = H;
    svg_open(&mut out, name, title, W, height);
    let plot_h = height - TOP - BOTTOM;
    let plot_w = W - LEFT - RIGHT;
    let axis = Axis::new(series.iter().flat_map(|s| s.1.iter().map(|p| p.1)), true);
    y_axis(&mut out, &axis, y_unit, plot_h);
    let x_max = series
        .iter()
        .flat_map(|s| s.1.iter().map(|p| p.0))
        .fold(0.0, f64::max)
        .max(1e-9);
    for i in 0..=5 {
        let xv = x_max * i as f64 / 5.0;
        let _ = write!(
            out,
            r#"<text x="{x:.1}" y="{y}" text-anchor="middle" font-size="11">{l}</text>"#,
            x = LEFT + plot_w * i as f64 / 5.0,
            y = TOP + plot_h + 16.0,
            l = short(xv)
        );
    }
    let _ = write!(
        out,
        r#"<text x="{x}" y="{y}" text-anchor="middle" font-size="12">{u}</text>"#,
        x = LEFT + plot_w / 2.0,
        y = TOP + plot_h + 34.0,
        u = esc(x_unit)
    );
    for (i, (sname, pts)) in series.iter().enumerate() {
        let pts: Vec<String> = pts
            .iter()
            .map(|&(x, y)| {
                format!(
                    "{:.1},{:.1}",
                    LEFT + plot_w * x / x_max,
                    TOP + plot_h * (1.0 - axis.frac(y))
                )
            })
            .collect();
        let _ = write!(
            out,
            r#"<polyline class="line" fill="none" stroke="{c}" stroke-width="1.5" points="{p}"><title>{n}</title></polyline>"#,
            c = COLOURS[i % COLOURS.len()],
            p = pts.join(" "),
            n = esc(sname)
        );
    }
    let names: Vec<String> = series.iter().map(|s| s.0.clone()).collect();
    legend(&mut out, &names, height - 40.0);
    out.push_str("</svg>\n");
    out
}

/// Distinct thread counts of the records, ascending.
fn thread_counts(records: &[Record]) -> Vec<u32> {
    let mut t: Vec<u32> = records.iter().map(|r| r.threads).collect();
    t.sort_unstable();
    t.dedup();
    t
}

/// The series a record belongs to: its engine, with its threads when the run had several
/// thread counts (`btree x4`).
fn series_of(r: &Record, several_counts: bool) -> String {
    if several_counts {
        format!("{} x{}", r.engine, r.threads)
    } else {
        r.engine.clone()
    }
}

/// Series (engines, or (engine, threads) pairs; in first-seen order) and workloads (in
/// first-seen order) of the records.
fn axes(records: &[Record]) -> (Vec<String>, Vec<String>) {
    let several = thread_counts(records).len() > 1;
    let mut engines: Vec<String> = Vec::new();
    let mut workloads: Vec<String> = Vec::new();
    for r in records {
        let series = series_of(r, several);
        if !engines.contains(&series) {
            engines.push(series);
        }
        if !workloads.contains(&r.workload) {
            workloads.push(r.workload.clone());
        }
    }
    (engines, workloads)
}

fn grid(
    records: &[Record],
    engines: &[String],
    workloads: &[String],
    f: impl Fn(&Record) -> Option<f64>,
) -> Vec<Vec<Option<f64>>> {
    let several = thread_counts(records).len() > 1;
    engines
        .iter()
        .map(|e| {
            workloads
                .iter()
                .map(|w| {
                    records
                        .iter()
                        .find(|r| &series_of(r, several) == e && &r.workload == w)
                        .and_then(&f)
                })
                .collect()
        })
        .collect()
}

/// Operations per second of `workload` by thread count, one line per engine and peer
/// (`threads` chart): the counts evenly spaced along x, ops/s linear from 0 on y.
fn threads_chart(workload: &str, records: &[Record]) -> String {
    let counts = thread_counts(records);
    let mut engines: Vec<String> = Vec::new();
    for r in records.iter().filter(|r| r.workload == workload) {
        if !engines.contains(&r.engine) {
            engines.push(r.engine.clone());
        }
    }
    let mut out = String::new();
    svg_open(
        &mut out,
        "threads",
        &format!("{workload}: operations per second by threads"),
        W,
        H,
    );
    let plot_h = H - TOP - BOTTOM;
    let plot_w = W - LEFT - RIGHT;
    let of = |e: &str, t: u32| {
        records
            .iter()
            .find(|r| r.workload == workload && r.engine == e && r.threads == t)
            .map(|r| r.ops_per_sec)
    };
    let axis = Axis::new(
        engines
            .iter()
            .flat_map(|e| counts.iter().filter_map(|&t| of(e, t))),
        false,
    );
    y_axis(&mut out, &axis, "operations / s (all threads)", plot_h);
    let x_of = |i: usize| LEFT + plot_w * (i as f64 + 0.5) / counts.len().max(1) as f64;
    for (i, t) in counts.iter().enumerate() {
        let _ = write!(
            out,
            r#"<text x="{x:.1}" y="{y}" text-anchor="middle" font-size="11">{t}</text>"#,
            x = x_of(i),
            y = TOP + plot_h + 16.0,
        );
    }
    let _ = write!(
        out,
        r#"<text x="{x}" y="{y}" text-anchor="middle" font-size="12">threads</text>"#,
        x = LEFT + plot_w / 2.0,
        y = TOP + plot_h + 34.0,
    );
    for (s, e) in engines.iter().enumerate() {
        let pts: Vec<(f64, f64, u32, f64)> = counts
            .iter()
            .enumerate()
            .filter_map(|(i, &t)| {
                of(e, t).map(|v| (x_of(i), TOP + plot_h * (1.0 - axis.frac(v)), t, v))
            })
            .collect();
        let colour = COLOURS[s % COLOURS.len()];
        let line: Vec<String> = pts
            .iter()
            .map(|p| format!("{:.1},{:.1}", p.0, p.1))
            .collect();
        let _ = write!(
            out,
            r#"<polyline class="line" fill="none" stroke="{colour}" stroke-width="1.5" points="{p}"><title>{n}</title></polyline>"#,
            p = line.join(" "),
            n = esc(e)
        );
        for (x, y, t, v) in pts {
            let _ = write!(
                out,
                r#"<circle cx="{x:.1}" cy="{y:.1}" r="3" fill="{colour}"><title>{n}, {t} {unit}: {v}</title></circle>"#,
                n = esc(e),
                unit = if t == 1 { "thread" } else { "threads" },
                v = short(v)
            );
        }
    }
    legend(&mut out, &engines, H - 40.0);
    out.push_str("</svg>\n");
    out
}

/// The charts of the report, in order.
pub fn charts(res: &Results) -> Vec<String> {
    let recs = &res.results;
    let (engines, workloads) = axes(recs);
    let several = thread_counts(recs).len() > 1;
    let mut out = Vec::new();
    out.push(bar_chart(
        "ops",
        "Throughput per workload",
        "operations / s (log)",
        &workloads,
        &engines,
        &grid(recs, &engines, &workloads, |r| Some(r.ops_per_sec)),
        true,
    ));
    out.push(bar_chart(
        "p50",
        "Median latency (p50)",
        "us (log)",
        &workloads,
        &engines,
        &grid(recs, &engines, &workloads, |r| Some(r.latency_us.p50)),
        true,
    ));
    out.push(bar_chart(
        "p99",
        "Tail latency (p99)",
        "us (log)",
        &workloads,
        &engines,
        &grid(recs, &engines, &workloads, |r| Some(r.latency_us.p99)),
        true,
    ));
    out.push(bar_chart(
        "ios",
        "Device pages read per operation",
        "pages read / op (log)",
        &workloads,
        &engines,
        &grid(recs, &engines, &workloads, |r| Some(r.reads_per_op)),
        true,
    ));
    out.push(bar_chart(
        "ios-writes",
        "Device pages written per operation (WAL not included)",
        "pages written / op (log)",
        &workloads,
        &engines,
        &grid(recs, &engines, &workloads, |r| Some(r.writes_per_op)),
        true,
    ));
    out.push(bar_chart(
        "wa",
        "Write amplification (bytes written per written entry / 16)",
        "x (log)",
        &workloads,
        &engines,
        &grid(recs, &engines, &workloads, |r| r.write_amplification),
        true,
    ));
    out.push(bar_chart(
        "limit",
        "Throughput as a share of the device's limit",
        "% of the device limit",
        &workloads,
        &engines,
        &grid(recs, &engines, &workloads, |r| {
            r.device_limit.as_ref().map(|d| d.share * 100.0)
        }),
        false,
    ));
    for w in &workloads {
        let series: Vec<(String, Vec<(f64, f64)>)> = recs
            .iter()
            .filter(|r| &r.workload == w && r.write_keys_per_op > 0.0 && !r.series.is_empty())
            .map(|r| {
                let mut done = 0u64;
                let pts = r
                    .series
                    .iter()
                    .map(|p| {
                        done += p.ops;
                        (done as f64, p.mean_us)
                    })
                    .collect();
                (series_of(r, several), pts)
            })
            .collect();
        if series.is_empty() {
            continue;
        }
        out.push(line_chart(
            "insert-latency",
            &format!("{w}: mean latency per interval over the run (FD-tree paper Fig. 6/7)"),
            "operations done",
            "mean us per op (log)",
            &series,
        ));
    }
    if several {
        out.extend(workloads.iter().map(|w| threads_chart(w, recs)));
    }
    out
}

fn table(res: &Results) -> String {
    let mut t = String::from(
        "<table><tr><th>engine</th><th>workload</th><th>threads</th><th>ops/s</th><th>keys/s</th>\
         <th>p50 us</th><th>p99 us</th><th>p99.9 us</th><th>max us</th><th>reads/op</th>\
         <th>writes/op</th><th>KiB wr/op</th><th>WAL KiB/op</th><th>write amp.</th>\
         <th>max QD</th><th>mean QD</th><th>read QD</th><th>device limit ops/s</th><th>share</th><th>share now</th><th>runs</th><th>params</th></tr>\n",
    );
    for r in &res.results {
        let _ = writeln!(
            t,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.0}</td><td>{:.0}</td><td>{:.1}</td><td>{:.1}</td>\
             <td>{:.1}</td><td>{:.0}</td><td>{:.3}</td><td>{:.3}</td><td>{:.2}</td><td>{:.3}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&r.engine),
            esc(&r.workload),
            r.threads,
            r.ops_per_sec,
            r.ops_per_sec * r.keys_per_op as f64,
            r.latency_us.p50,
            r.latency_us.p99,
            r.latency_us.p999,
            r.latency_us.max,
            r.reads_per_op,
            r.writes_per_op,
            r.bytes_written_per_op / 1024.0,
            r.wal_bytes_per_op / 1024.0,
            r.write_amplification
                .map_or("-".into(), |x| format!("{x:.1}")),
            r.queue_depth,
            r.mean_queue_depth
                .map_or("-".into(), |q| format!("{q:.2}")),
            r.device_limit
                .as_ref()
                .map_or("-".into(), |d| format!("{:.1}", d.queue_depth)),
            r.device_limit
                .as_ref()
                .map_or("-".into(), |d| format!("{:.0}", d.limit_ops_per_sec)),
            r.device_limit
                .as_ref()
                .map_or("-".into(), |d| format!("{:.1}%", d.share * 100.0)),
            r.share_now()
                .map_or("-".into(), |s| format!("{:.1}%", s * 100.0)),
            r.repeat.as_ref().map_or("1".into(), |p| format!(
                "{} (min {:.0}, max {:.0})",
                p.runs, p.min_ops_per_sec, p.max_ops_per_sec
            )),
            esc(&r.engine_params),
        );
    }
    t.push_str("</table>\n");
    t
}

/// The section comparing this run (B) with a baseline (A): `flashix compare`'s table, the
/// flagged cells highlighted.
pub fn comparison(c: &Comparison, names: &(String, String)) -> String {
    let mut h = format!(
        "<h2>Compared with a baseline</h2><p>A: <code>{}</code>, B (this run): <code>{}</code>. \
         A cell is flagged when ops/s changed by more than the larger of {:.0}% and the runs' \
         noise (half of each <code>--repeat</code> spread; n/a for a single run), or pages \
         read, or written, per operation by more than {:.0}%.</p>\n<table><tr><th>engine</th>\
         <th>workload</th><th>A ops/s</th><th>B ops/s</th><th>B/A</th><th>change</th>\
         <th>A noise</th><th>B noise</th><th>reads/op A&rarr;B</th><th>writes/op A&rarr;B</th>\
         <th>flag</th></tr>\n",
        esc(&names.0),
        esc(&names.1),
        c.threshold * 100.0,
        c.threshold * 100.0
    );
    for x in &c.cells {
        let style = if x
            .flags
            .iter()
            .any(|f| f == "SLOWER" || f.starts_with("more-"))
        {
            " style=\"background:#fdd\""
        } else if x.flags.is_empty() {
            ""
        } else {
            " style=\"background:#dfd\""
        };
        let _ = writeln!(
            h,
            "<tr{style}><td>{}</td><td>{}</td><td>{:.0}</td><td>{:.0}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{:.3}&rarr;{:.3}</td><td>{:.3}&rarr;{:.3}</td><td>{}</td></tr>",
            esc(&x.engine),
            esc(&compare::workload_label(&x.workload, x.threads)),
            x.a_ops_per_sec,
            x.b_ops_per_sec,
            x.ratio.map_or("-".to_string(), |r| format!("{r:.3}")),
            compare::change(x.ratio),
            compare::noise(x.a_spread),
            compare::noise(x.b_spread),
            x.a_reads_per_op,
            x.b_reads_per_op,
            x.a_writes_per_op,
            x.b_writes_per_op,
            esc(&x.flags.join(", "))
        );
    }
    h.push_str("</table>\n");
    for (side, cells) in [("A", &c.only_in_a), ("B", &c.only_in_b)] {
        if !cells.is_empty() {
            let _ = writeln!(h, "<p>Only in {side}: {}</p>", esc(&cells.join(", ")));
        }
    }
    h
}

/// The whole page.
pub fn render(res: &Results) -> String {
    render_with(res, None)
}

/// The page of `res` with a section comparing it with a baseline run.
pub fn render_compared(res: &Results, c: &Comparison, names: &(String, String)) -> String {
    render_with(res, Some(comparison(c, names)))
}

fn render_with(res: &Results, compared: Option<String>) -> String {
    let o = &res.options;
    let p = &res.device_profile;
    let mut h = String::new();
    h.push_str(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>flashix bench report</title><style>\
         body{font-family:sans-serif;margin:20px;max-width:1150px}\
         table{border-collapse:collapse;font-size:12px;margin:8px 0}\
         td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}\
         td:first-child,td:nth-child(2),th,table.info td{text-align:left}\
         svg.chart{display:block;margin:16px 0;border:1px solid #eee}\
         p.rule{font-size:12px;color:#333}</style></head><body>\n",
    );
    let _ = writeln!(
        h,
        "<h1>flashix bench report</h1><p>flashix {} at commit <code>{}</code>; scale \
         <b>{}</b>: {} entries, {} operations per workload, {} keys, seed {}, page {} B, \
         memory budget {} B, {}, {} run(s) per cell.</p>",
        esc(&res.flashix_version),
        esc(&res.git_commit),
        esc(&res.scale),
        o.entries,
        o.ops,
        esc(&res.key_distribution),
        o.seed,
        o.page_size,
        o.buffer_pool_bytes,
        if o.direct_io {
            "O_DIRECT"
        } else {
            "buffered I/O"
        },
        o.repeat
    );
    let _ = writeln!(
        h,
        "<h2>Device</h2><p>{} ({}), measured {}: random 4 KiB read {:.0} IOPS at QD1, {:.0} \
         at QD32; random 4 KiB write {:.0} / {:.0}; sequential read {:.0} MB/s, write {:.0} \
         MB/s.{}</p>",
        esc(&p.path),
        esc(&p.backend),
        esc(&p.measured_at),
        p.rand_read_iops_qd1,
        p.rand_read_iops_qd32,
        p.rand_write_iops_qd1,
        p.rand_write_iops_qd32,
        p.seq_read_mb_s,
        p.seq_write_mb_s,
        read_curve(p)
    );
    h.push_str(
        "<h2>Engines and peers</h2><table class=\"info\"><tr><th>name</th><th>kind</th><th>memory bound</th>\
         <th>bypasses page cache</th><th>commit model</th></tr>\n",
    );
    for s in &res.subjects {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&s.name),
            esc(&s.kind),
            esc(&s.memory_bound),
            if s.page_cache_bypassed { "yes" } else { "no" },
            esc(&s.commit_model)
        );
    }
    h.push_str("</table>\n<h2>Charts</h2>\n");
    for c in charts(res) {
        h.push_str(&c);
    }
    if let Some(c) = compared {
        h.push_str(&c);
    }
    h.push_str("<h2>Results</h2>\n");
    h.push_str(&table(res));
    let _ = writeln!(
        h,
        "<h2>Rules</h2><p class=\"rule\"><b>Preparation:</b> {}</p><p class=\"rule\"><b>Device \
         limit:</b> {}</p><p class=\"rule\"><b>Device limit now:</b> {}</p>{}</body></html>",
        esc(&res.aging_rule),
        esc(&res.device_limit_rule),
        esc(&res.calibration_rule),
        if res.options.threads == [1] {
            String::new()
        } else {
            format!(
                "<p class=\"rule\"><b>Threads:</b> {}</p>",
                esc(&res.threads_rule)
            )
        }
    );
    h
}

/// The profile's random-read rates by queue depth, as a sentence for the device section
/// (empty for a profile without them).
fn read_curve(p: &crate::probe::DeviceProfile) -> String {
    if p.rand_read_iops_by_qd.is_empty() {
        return String::new();
    }
    let rates: Vec<String> = p
        .rand_read_iops_by_qd
        .iter()
        .map(|(d, iops)| format!("QD{d} {iops:.0}"))
        .collect();
    format!(
        " Random 4 KiB read IOPS by queue depth: {}.",
        rates.join(", ")
    )
}

/// Write `report.html`.
pub fn save(res: &Results, path: &Path) -> Result<()> {
    std::fs::write(path, render(res)).with_context(|| format!("writing {}", path.display()))
}

/// Write `report.html` with the comparison section (`names`: the baseline's and this
/// run's results files).
pub fn save_compared(
    res: &Results,
    c: &Comparison,
    names: &(String, String),
    path: &Path,
) -> Result<()> {
    std::fs::write(path, render_compared(res, c, names))
        .with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_subject_of_a_full_run_has_its_own_colour() {
        let mut c = COLOURS.to_vec();
        c.sort_unstable();
        c.dedup();
        assert_eq!(c.len(), COLOURS.len());
        // 7 engines and 6 peers.
        assert!(COLOURS.len() >= 13);
    }

    #[test]
    fn round_axis_tops() {
        assert_eq!(nice_ceil(67.0), 100.0); // ticks of 20
        assert_eq!(nice_ceil(110.0), 125.0); // ticks of 25
        assert_eq!(nice_ceil(100.0), 100.0);
        assert_eq!(nice_ceil(0.3), 0.5);
        assert_eq!(nice_ceil(0.0), 1.0);
        let a = Axis::new([3.0, 2000.0].into_iter(), true);
        assert_eq!((a.lo, a.hi), (0.0, 4.0));
        assert_eq!(a.frac(1000.0), 0.75);
        assert_eq!(a.ticks().len(), 5);
    }

    /// With more than one thread count the report has a `threads` chart per workload, a
    /// line per engine through its counts; with one it has none, and the other charts'
    /// series stay the engines.
    #[test]
    fn a_chart_of_throughput_by_threads_with_several_counts() {
        let rec = |engine: &str, workload: &str, threads: u32, ops: f64| Record {
            engine: engine.into(),
            workload: workload.into(),
            threads,
            ops_per_sec: ops,
            ..crate::output::report::tests_support::record()
        };
        let mut res = crate::output::compare::tests_results(vec![
            rec("btree", "o-search", 1, 1000.0),
            rec("lsm", "o-search", 1, 800.0),
        ]);
        let one = charts(&res);
        assert!(!one.iter().any(|c| c.contains("data-chart=\"threads\"")));
        assert!(one[0].contains(">btree<"), "{}", one[0]);
        res.results.extend([
            rec("btree", "o-search", 4, 3000.0),
            rec("lsm", "o-search", 4, 1600.0),
            rec("btree", "w-search", 4, 2000.0),
        ]);
        res.options.threads = vec![1, 4];
        let all = charts(&res);
        let threads: Vec<&String> = all
            .iter()
            .filter(|c| c.contains("data-chart=\"threads\""))
            .collect();
        assert_eq!(threads.len(), 2);
        assert!(threads[0].contains("o-search: operations per second by threads"));
        // Two lines of two points each (btree and lsm), a marker per point.
        assert_eq!(threads[0].matches("class=\"line\"").count(), 2);
        assert_eq!(threads[0].matches("<circle").count(), 4);
        assert!(
            threads[0].contains("btree, 4 threads: 3.000k"),
            "{}",
            threads[0]
        );
        // w-search ran with 4 threads only: one point.
        assert_eq!(threads[1].matches("<circle").count(), 1);
        assert!(all[0].contains(">btree x4<"), "{}", all[0]);
        let page = render(&res);
        assert!(page.contains("<th>threads</th>") && page.contains("<b>Threads:</b>"));
    }

    #[test]
    fn bars_scale_to_their_values_and_text_is_escaped() {
        let svg = bar_chart(
            "t",
            "a <b>",
            "u",
            &["w1".into(), "w2".into()],
            &["e&1".into(), "e2".into()],
            &[vec![Some(25.0), None], vec![Some(100.0), None]],
            false,
        );
        assert!(svg.contains("a &lt;b&gt;") && svg.contains("e&amp;1"));
        // Two bars (None draws nothing); 25 on a 0..100 axis is a quarter of the height.
        assert_eq!(svg.matches("class=\"bar\"").count(), 2);
        let h = (H - TOP - BOTTOM) / 4.0;
        assert!(svg.contains(&format!("height=\"{h:.1}\"")), "{svg}");
    }
}
