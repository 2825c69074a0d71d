//! The tables of `flashix repro pio`, then the paper's claims and their checks.

use super::paper::{fig13b_words, FIG13B};
use super::run::threads_variant;
use super::{Cell, Measured, PioRepro};
use crate::repro::common::lens_label;
use crate::units::format_size;

/// The experiments in print order, with what each is.
const EXPERIMENTS: &[(&str, &str)] = &[
    (
        "fig9",
        "§4.1.1 Fig. 9: point search by buffer pool (the paper's 1-16 MB: B/16-B)",
    ),
    ("fig10", "§4.1.2 Fig. 10: range search by keys in the range"),
    (
        "fig11",
        "§4.1.3 Fig. 11: insert and point search by OPQ size (taken from the budget B)",
    ),
    (
        "fig12",
        "§4.1.4 Fig. 12: insert/search mixes (mix-S: S% searches, the rest inserts)",
    ),
    (
        "fig13",
        "§4.2 Fig. 13: the TPC-C trace, and its inserts and ranges alone (budget B/4)",
    ),
    (
        "fig13b",
        "§4.2 Fig. 13(b): the TPC-C trace by threads on one index (variant tN: N threads; \
         budget B/4)",
    ),
];

fn header() {
    println!(
        "  {:<8} {:<7} {:<17} {:<10} {}  params",
        "lens",
        "engine",
        "variant",
        "workload",
        Measured::headings()
    );
}

fn row(c: &Cell) {
    // A write phase the buffer absorbed (runner::BUFFER_RULE) is marked.
    let absorbed = if c.buffer_turnovers.is_some_and(|t| t < 1.0) {
        "*"
    } else {
        ""
    };
    println!(
        "  {:<8} {:<7} {:<17} {:<10} {}  {}",
        c.id.lens,
        c.id.engine,
        c.id.variant,
        format!("{}{absorbed}", c.id.workload),
        c.m.columns(),
        c.engine_params
    );
}

/// Print the run: its setup, a table per experiment and the claims.
pub fn print(r: &PioRepro) {
    let sizes = |v: &[u64]| {
        v.iter()
            .map(|&b| format_size(b))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!(
        "flashix repro pio: the PIO B-tree paper (Roh et al., VLDB 2011), §4; engines pio, \
         btree, fdtree, bftl; {} entries, {} operations a workload, {} B pages, budget B = {} \
         (the paper's 16 MB); pools {}; ranges {:?}; OPQs {}; mixes {:?}% search; threads \
         {:?} (fig13b); {:.0} s",
        r.entries,
        r.ops,
        r.page_size,
        format_size(r.budget_bytes),
        sizes(&r.pools),
        r.ranges,
        sizes(&r.opqs),
        r.mixes,
        r.threads,
        r.wall_seconds
    );
    for l in &r.lenses {
        println!(
            "  lens {}: {}; cost-model profile {} (random read / random write {:.1}, reads at \
             QD32 / QD1 {:.1})",
            l.lens, l.device, l.profile, l.read_over_write, l.read_qd32_over_qd1
        );
    }
    println!(
        "  us/op: wall on this disk, the simulator's device time on a simulated SSD; latencies \
         are wall; rreq/wreq: requests an op (a psync group is several); qd: deepest queue; \
         * a write phase the buffer absorbed"
    );
    crate::repro::common::print_tables(EXPERIMENTS, &r.cells, |c| &c.id.experiment, header, row);
    print_fig13b(r);
    println!("\nThe paper's claims (the paper's number, then ours per lens):");
    for c in &r.claims {
        println!("  [{}] {} — {}", c.verdict, c.experiment, c.claim);
        if !c.paper_value.is_empty() {
            println!("      paper: {}", c.paper_value);
        }
        if c.lenses.is_empty() {
            println!("      here: {}", c.here);
        }
        for l in &c.lenses {
            println!("      {}: {} [{}]", l.lens, l.value, l.verdict);
        }
        if !c.lenses.is_empty() && c.here.contains("no ratio") {
            println!("      here: {}", c.here);
        }
        if !c.reason.is_empty() {
            println!("      why: {}", c.reason);
        }
    }
}

/// Fig. 13(b) by threads on each lens that ran it: each engine's ops/s and its scaling
/// over one thread, the device's mean queue depth and the exclusive lock's share of the
/// phase, then PIO's speedup over the B-link tree beside the paper's ratios and its
/// verdict (the claim's); then the lenses left out and why.
fn print_fig13b(r: &PioRepro) {
    let find = |lens: &str, engine: &str, t: u32| {
        let variant = threads_variant(t);
        r.cells.iter().find(|c| {
            c.id.experiment == "fig13b"
                && c.id.lens == lens
                && c.id.engine == engine
                && c.id.variant == variant
        })
    };
    let mut lenses: Vec<&str> = Vec::new();
    for c in r.cells.iter().filter(|c| c.id.experiment == "fig13b") {
        if !lenses.contains(&c.id.lens.as_str()) {
            lenses.push(&c.id.lens);
        }
    }
    let left: Vec<_> = r
        .left_out
        .iter()
        .filter(|l| l.experiment == "fig13b")
        .collect();
    if lenses.is_empty() && left.is_empty() {
        return;
    }
    println!(
        "\nfig13b by threads: PIO B-tree (pio) over the B-link tree (btree); the paper: P300 \
         1.33-1.49x, ioDrive 1.3-1.47x, F120 1.17-1.32x; this disk is judged against their \
         widest band, 1.17-1.49x"
    );
    for lens in lenses {
        let label = lens_label(lens);
        println!("  {label}:");
        println!(
            "  {:>7} {:>10} {:>7} {:>6} {:>6} {:>10} {:>7} {:>6} {:>6} {:>8}  verdict",
            "threads",
            "pio ops/s",
            "scaling",
            "qd",
            "lock",
            "btree ops/s",
            "scaling",
            "qd",
            "lock",
            "speedup"
        );
        for &t in &r.threads {
            let (Some(p), Some(o)) = (find(lens, "pio", t), find(lens, "btree", t)) else {
                continue;
            };
            let base = |e: &str| find(lens, e, 1).map(|c| c.m.ops_per_sec());
            let scaling = |c: &Cell, e: &str| match base(e) {
                Some(b) if b > 0.0 => format!("{:.2}x", c.m.ops_per_sec() / b),
                _ => "-".into(),
            };
            let qd = |c: &Cell| {
                c.m.mean_queue_depth
                    .map_or("-".into(), |q| format!("{q:.2}"))
            };
            let lock = |c: &Cell| {
                c.m.lock_held_share
                    .map_or("-".into(), |h| format!("{:.0}%", h * 100.0))
            };
            let speedup = Measured::speedup(&p.m, &o.m).map_or("-".into(), |x| format!("{x:.2}x"));
            let words = fig13b_words(t);
            let verdict = r
                .claims
                .iter()
                .find(|c| c.experiment == FIG13B && c.claim == words)
                .and_then(|c| c.lenses.iter().find(|l| l.lens == label))
                .map_or("-", |l| l.verdict.as_str());
            println!(
                "  {:>7} {:>10.0} {:>7} {:>6} {:>6} {:>10.0} {:>7} {:>6} {:>6} {:>8}  {}",
                t,
                p.m.ops_per_sec(),
                scaling(p, "pio"),
                qd(p),
                lock(p),
                o.m.ops_per_sec(),
                scaling(o, "btree"),
                qd(o),
                lock(o),
                speedup,
                verdict
            );
        }
    }
    println!(
        "  qd: the device's mean queue depth in the phase (in-flight time over wall time); \
         lock: share of the phase the exclusive lock was held by writes made beside other \
         operations (not counted at one thread)"
    );
    for l in left {
        println!("  {}: left out of fig13b: {}", lens_label(&l.lens), l.why);
    }
}
