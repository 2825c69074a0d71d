//! The tables of `flashix repro fdtree`, then the paper's claims and their checks.

use super::{Cell, FdtreeRepro};

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
        "  {:<11} {:<7} {:<14} {:<11} {:>8} {:>7} {:>10} {:>10} {:>9} {:>9} {:>10} {:>7} {:>7} {:>8}  params",
        "lens", "engine", "variant", "workload", "entries", "ops", "us/op", "wall us/op",
        "p99.9 us", "max us", "model us", "rd/op", "wr/op", "wreq/op"
    );
}

fn row(c: &Cell) {
    let model = c.model.as_ref().map_or(String::new(), |m| {
        let p = if c.workload == "o-search" {
            m.search_us
        } else {
            m.insert_us
        };
        format!("{p:.1}")
    });
    println!(
        "  {:<11} {:<7} {:<14} {:<11} {:>8} {:>7} {:>10.1} {:>10.1} {:>9.0} {:>9.0} {:>10} {:>7.2} {:>7.2} {:>8.3}  {}",
        c.lens,
        c.engine,
        c.variant,
        c.workload,
        c.entries,
        c.ops,
        c.us_per_op(),
        c.wall_seconds * 1e6 / c.ops.max(1) as f64,
        c.p999_us,
        c.max_us,
        model,
        c.reads_per_op,
        c.writes_per_op,
        c.write_requests_per_op,
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
    crate::repro::common::print_tables(EXPERIMENTS, &r.cells, |c| &c.experiment, header, row);
    crate::repro::common::print_claims(&r.claims);
}
