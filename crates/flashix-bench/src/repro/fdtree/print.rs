//! The tables of `flashix repro fdtree`, then the paper's claims and their checks.

use super::{Cell, FdtreeRepro, Measured};

/// The experiments in print order, with what each is.
const EXPERIMENTS: &[(&str, &str)] = &[
    (
        "fig10",
        "§5.5 Fig. 10: overall (50% search, 50% insert) by index size",
    ),
    (
        "fig11",
        "§5.5 Fig. 11: range search by entries in the range",
    ),
    ("fig12", "§5.5 Fig. 12: O- and W- workloads"),
    (
        "deamort",
        "§3.4 / §5.4 Fig. 7: the FD-tree with and without deamortized merges",
    ),
];

fn header() {
    println!(
        "  {:<11} {:<7} {:<14} {:<11} {} {:>8}  params",
        "lens",
        "engine",
        "variant",
        "workload",
        Measured::headings(),
        "model us"
    );
}

fn row(c: &Cell) {
    let model = c.model.as_ref().map_or(String::new(), |m| {
        let p = if c.id.workload == "o-search" {
            m.search_us
        } else {
            m.insert_us
        };
        format!("{p:.1}")
    });
    println!(
        "  {:<11} {:<7} {:<14} {:<11} {} {:>8}  {}",
        c.id.lens,
        c.id.engine,
        c.id.variant,
        c.id.workload,
        c.m.columns(),
        model,
        c.engine_params
    );
}

/// Print the run: its setup, a table per experiment and the claims.
pub fn print(r: &FdtreeRepro) {
    println!(
        "flashix repro fdtree: the FD-tree paper (Li et al., VLDB 2010), §5; engines fdtree, \
         btree, lsm, bftl; {} entries, {} operations a workload ({} for deamortization), \
         {} B pages, budget {} KiB per index; {:.0} s",
        r.entries,
        r.ops,
        r.deamort_ops,
        r.page_size,
        r.budget_bytes >> 10,
        r.wall_seconds
    );
    for l in &r.lenses {
        println!(
            "  lens {}: {}; cost-model profile {} (random read / random write {:.1})",
            l.lens, l.device, l.profile, l.read_over_write
        );
    }
    println!(
        "  us/op: wall on this disk, the simulator's device time on a simulated SSD; latencies \
         are wall; model us: the cost model's FD-tree search (o-search) or insertion time"
    );
    crate::repro::common::print_tables(EXPERIMENTS, &r.cells, |c| &c.id.experiment, header, row);
    crate::repro::common::print_claims(&r.claims);
}
