//! The tables of `flashix repro fbx`, then the paper's claims and their checks.

use super::{Cell, FbxRepro};

/// The experiments in print order, with what each is.
const EXPERIMENTS: &[(&str, &str)] = &[
    (
        "R1",
        "§3.1 Fig. 2 and §5.1 Fig. 7: inserts from empty (with the close)",
    ),
    ("R2", "§5.1 Fig. 7: searches of inserted keys"),
    (
        "R3",
        "§5.1 Fig. 8: mixes of inserts and searches (and the growth to 2n)",
    ),
    ("R4", "§5.2: the B+-tree with twice the budget"),
    (
        "R5",
        "§5.2 Fig. 9: moving-object range queries (10% windows) over FBX variants",
    ),
    ("R6", "§5.3 Fig. 10: clean policies on mixes"),
    ("R7", "§5.3 Fig. 11: the AC threshold on mixes"),
    ("R10", "extension: Bx-tree vs FBX-tree on moving objects"),
];

fn header() {
    println!(
        "  {:<9} {:<15} {:<8} {:<12} {:>8} {:>4} {:>7} {:>9} {:>9} {:>9} {:>7} {:>7} {:>7} {:>7} {:>6} {:>6} {:>6} {:>8} {:>8} {:>7}",
        "subject",
        "variant",
        "device",
        "op",
        "records",
        "ins%",
        "ops",
        "ops/s",
        "us/op",
        "OCZ us/op",
        "rd/op",
        "wr/op",
        "rndw/op",
        "WAL B/op",
        "L read",
        "L mean",
        "cleans",
        "file pg",
        "live pg",
        "erases"
    );
}

fn row(c: &Cell) {
    let per = |x: u64| x as f64 / c.ops.max(1) as f64;
    println!(
        "  {:<9} {:<15} {:<8} {:<12} {:>8} {:>4} {:>7} {:>9.0} {:>9.1} {:>9.1} {:>7.2} {:>7.2} {:>7.3} {:>7.0} {:>6.2} {:>6.2} {:>6} {:>8} {:>8} {:>7}",
        c.subject,
        c.variant,
        c.device,
        c.op,
        c.records,
        c.insert_pct,
        c.ops,
        c.ops_per_s(),
        c.seconds * 1e6 / c.ops.max(1) as f64,
        c.ocz_us(),
        per(c.pages_read),
        per(c.pages_written),
        per(c.random_writes),
        per(c.wal_bytes),
        c.pages_per_rebuild(),
        c.mean_list_len,
        c.cleans,
        c.file_pages,
        c.live_pages,
        c.erases
    );
}

/// Print the run: its setup, a table per experiment, the competitive ratios and the claims.
pub fn print(r: &FbxRepro) {
    println!(
        "flashix repro fbx: the FBX-tree paper (Luo), §3.1 and §5; leaf order {}, inner order {}, \
         4 KiB pages, budget {} KiB per index; {} records, {} searches, {} operations a mix, {} \
         moving objects, {} records on the simulated SSD ({}); {:.0} s",
        r.leaf_order,
        r.inner_order,
        r.budget_bytes >> 10,
        r.records,
        r.searches,
        r.mix_ops,
        r.objects,
        r.ssd_records,
        r.ssd,
        r.wall_seconds
    );
    println!(
        "  times: wall on this disk (O_DIRECT) or the simulator's NAND time (ssd-ocz); OCZ: the \
         I/O counts at the paper's Table 1 costs; L read: log pages a leaf rebuild read; L mean: \
         over all leaves after the cell"
    );
    crate::repro::common::print_tables(EXPERIMENTS, &r.cells, |c| &c.experiment, header, row);
    if !r.ratios.is_empty() {
        println!("\nR8: §4.4 competitive ratios in the abstract model (policy cost / offline optimum with as many cleans)");
        println!(
            "  {:<10} {:>7} {:>12} {:>11} {:>11}  adversary",
            "policy", "bound", "random mean", "random max", "adv. max"
        );
        for x in &r.ratios {
            println!(
                "  {:<10} {:>7.2} {:>12.2} {:>11.2} {:>11.2}  {}",
                x.policy, x.bound, x.mean_random, x.max_random, x.max_adversarial, x.adversary
            );
        }
    }
    crate::repro::common::print_claims(&r.claims);
}
