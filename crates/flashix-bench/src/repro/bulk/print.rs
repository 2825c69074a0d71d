//! The tables of `flashix repro bulk`, each beside the thesis's claims and their checks.

use super::{BulkRepro, Cell};

/// The experiments in print order, with what each is.
const EXPERIMENTS: &[(&str, &str)] = &[
    (
        "E1",
        "Fig. 6.1: 50,000 keys (quick: 5,000) in elementary bulks of b; seconds per cell",
    ),
    ("E2", "Fig. 6.2: b = 100, n keys inserted; seconds per cell"),
    (
        "E3",
        "Fig. 6.3: b = 1000, n keys inserted; seconds per cell",
    ),
    (
        "E4",
        "Fig. 6.4: range searches of N keys; seconds and I/O per search",
    ),
    (
        "E5",
        "Fig. 6.5: range deletes of N keys from the same initial state; seconds and I/O per delete",
    ),
];

/// LA-tree time / bulk index time for a bulk index cell.
fn ratio(r: &BulkRepro, c: &Cell) -> String {
    if c.engine != "bulk" {
        return "-".into();
    }
    r.cells
        .iter()
        .find(|o| {
            o.engine == "latree"
                && o.experiment == c.experiment
                && o.variant == c.variant
                && o.b == c.b
                && o.n == c.n
        })
        .map_or("-".into(), |o| format!("{:.2}", o.seconds / c.seconds))
}

fn header() {
    println!(
        "  {:<6} {:<9} {:>5} {:>6} {:>7} {:>10} {:>8} {:>9} {:>8} {:>9} {:>6} {:>6} {:>7} {:>6} {:>7}",
        "engine",
        "device",
        "M",
        "b|N",
        "n",
        "seconds",
        "KiB rd",
        "rd rnd/sq",
        "KiB wr",
        "wr rnd/sq",
        "rng aff",
        "LA/blk",
        "erases",
        "gc cp",
        "rng now"
    );
}

fn row(r: &BulkRepro, c: &Cell) {
    // Totals, or per operation (E4, E5) with a decimal.
    let f = |x: u64| {
        if c.ops() == 1 {
            x.to_string()
        } else {
            format!("{:.1}", c.per_op(x))
        }
    };
    println!(
        "  {:<6} {:<9} {:>5} {:>6} {:>7} {:>10.6} {:>8} {:>9} {:>8} {:>9} {:>6} {:>6} {:>7} {:>6} {:>7}",
        c.engine,
        c.device(),
        c.m,
        c.b,
        c.n,
        c.secs(),
        f(c.read_kib),
        format!("{}/{}", f(c.random_reads), f(c.sequential_reads)),
        f(c.write_kib),
        format!("{}/{}", f(c.random_writes), f(c.sequential_writes)),
        f(c.ranges_affected),
        ratio(r, c),
        c.erases,
        c.gc_page_copies,
        if c.engine == "bulk" {
            format!("{}", c.ranges)
        } else {
            "-".into()
        }
    );
}

fn claims(r: &BulkRepro, e: &str) {
    for k in r.claims.iter().filter(|k| k.experiment == e) {
        println!("  thesis: {}", k.claim);
        println!("    here: {} -> {}", k.here, k.verdict.to_uppercase());
        if !k.reason.is_empty() {
            println!("    why: {}", k.reason);
        }
    }
}

/// The share of ranges of exactly M, as a percentage.
fn share_m(c: &Cell) -> f64 {
    100.0 * c.ranges_of_size_m as f64 / c.ranges.max(1) as f64
}

/// Print the tables beside the claims.
pub fn print(r: &BulkRepro) {
    println!(
        "flashix repro bulk: {} initial keys in one bulk insertion, budget {} KiB, M in {:?}; \
         this disk with O_DIRECT (wall time, CPU included; the thesis replayed I/O traces); \
         faithful bulk index (no differential layer, append-only), 16-byte tuples (thesis: 8, \
         so M = 1024 here has the thesis's M = 2048 range bytes); LA-tree 16 KiB nodes, keys \
         one by one in ascending order, one buffer pool (thesis: 3/4 LRU cache, 1/4 node \
         cache); {} searches (E4) and {} deletes (E5) averaged per size (thesis: 2000); {:.0} \
         s in all",
        r.initial_keys,
        r.budget_bytes >> 10,
        r.ms,
        r.searches,
        r.deletes,
        r.wall_seconds
    );
    for s in &r.ssds {
        println!("  simulated SSD {s}");
    }
    println!(
        "  KiB and requests (random/sequential) are the device's; on a simulated SSD seconds \
         are its NAND time; LA/blk is the LA-tree's time over the bulk index's (it has no M: \
         one run beside every M)"
    );
    for (e, what) in EXPERIMENTS {
        let cells: Vec<&Cell> = r.cells.iter().filter(|c| c.experiment == *e).collect();
        println!("\n{e} ({what})");
        if !cells.is_empty() {
            header();
            for c in cells {
                row(r, c);
            }
        }
        claims(r, e);
    }
    println!("\nThe thesis's summary (abstract, §7):");
    claims(r, "all");
    print_ablations(r);
    print_r2(r);
}

fn print_ablations(r: &BulkRepro) {
    let abl: Vec<&Cell> = r
        .cells
        .iter()
        .filter(|c| c.experiment == "ablation")
        .collect();
    if abl.is_empty() {
        return;
    }
    println!(
        "\n§5.6 ablations: E1 at b = 100 and 1000 with one setting changed, against every switch \
         on (append-only, no differential layer); \"delta\" is the default differential layer \
         (a quarter of the budget), \"one by one\" feeds it the keys as the LA-tree gets them; \
         LA/this: the LA-tree's E1 time over this cell's"
    );
    println!(
        "  {:>5} {:>5} {:<18} {:>10} {:>8} {:>7} {:>8} {:>8} {:>8} {:>8} {:>7} {:>9}",
        "M",
        "b",
        "setting",
        "seconds",
        "vs on",
        "LA/this",
        "rd req",
        "KiB rd",
        "wr req",
        "KiB wr",
        "ranges",
        "of size M"
    );
    for c in abl {
        let on = r.cells.iter().find(|o| {
            o.experiment == "E1"
                && o.variant.is_empty()
                && o.engine == "bulk"
                && o.m == c.m
                && o.b == c.b
        });
        let la = r.cells.iter().find(|o| {
            o.experiment == "E1" && o.variant.is_empty() && o.engine == "latree" && o.b == c.b
        });
        println!(
            "  {:>5} {:>5} {:<18} {:>10.6} {:>8} {:>7} {:>8} {:>8} {:>8} {:>8} {:>7} {:>8.0}%",
            c.m,
            c.b,
            c.variant,
            c.seconds,
            on.map_or("-".into(), |o| format!("{:.2}x", c.seconds / o.seconds)),
            la.map_or("-".into(), |o| format!("{:.2}", o.seconds / c.seconds)),
            c.read_requests,
            c.read_kib,
            c.write_requests,
            c.write_kib,
            c.ranges,
            share_m(c)
        );
    }
}

fn print_r2(r: &BulkRepro) {
    let cells: Vec<&Cell> = r.cells.iter().filter(|c| c.experiment == "R2").collect();
    if cells.is_empty() {
        return;
    }
    println!(
        "\nR2: repeated bulk insertions (b = 100) into one index, each followed by a checkpoint: \
         batching ranges keeps ranges at M (§5.6: without it the index deteriorates into \
         ranges of M + 1); reuse bounds the main file (pages allocated) at the cost of the \
         FTL's erases (and copies, unless freed space is trimmed); append-only never erases \
         but runs out of space"
    );
    println!(
        "  {:<9} {:<16} {:>5} {:>6} {:>7} {:>10} {:>8} {:>8} {:>7} {:>9} {:>7} {:>9} {:>7} {:>7}",
        "device",
        "setting",
        "M",
        "bulks",
        "keys",
        "seconds",
        "KiB rd",
        "KiB wr",
        "ranges",
        "of size M",
        "live pg",
        "alloc pg",
        "erases",
        "gc cp"
    );
    for c in cells {
        let setting = c
            .variant
            .strip_prefix(c.device())
            .unwrap_or(&c.variant)
            .trim();
        println!(
            "  {:<9} {:<16} {:>5} {:>6} {:>7} {:>10.6} {:>8} {:>8} {:>7} {:>8.0}% {:>7} {:>9} {:>7} {:>7}",
            c.device(),
            if setting.is_empty() { "all on" } else { setting },
            c.m,
            c.bulks,
            c.n,
            c.seconds,
            c.read_kib,
            c.write_kib,
            c.ranges,
            share_m(c),
            c.live_pages,
            c.allocated_pages,
            c.erases,
            c.gc_page_copies
        );
        if !c.note.is_empty() {
            println!("    ({})", c.note);
        }
    }
}
