//! The tables of `flashix repro pio`, then the paper's claims and their checks.

use super::{Cell, Measured, PioRepro};
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
         (the paper's 16 MB); pools {}; ranges {:?}; OPQs {}; mixes {:?}% search; {:.0} s",
        r.entries,
        r.ops,
        r.page_size,
        format_size(r.budget_bytes),
        sizes(&r.pools),
        r.ranges,
        sizes(&r.opqs),
        r.mixes,
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
