//! Printing of the d-IPL reproduction: every table beside the paper's numbers.

use super::paper::{PAPER1, PAPER3, PAPER4, PAPER5, PAPER6, PAPER_WA};
use super::{find, DiplRepro, Index};

/// Print every table beside the paper's numbers.
pub fn print(r: &DiplRepro) {
    println!(
        "d-IPL paper reproduction: {} random inserts, 8 KiB nodes, 2 KiB pages, 128 KiB blocks ({:.0} s)",
        r.keys, r.seconds
    );
    let mut frames: Vec<u32> = r.insert.iter().map(|x| x.buffer_frames).collect();
    frames.dedup();
    print_fig12(r, &frames);
    print_table1(r, frames.iter().copied().max().unwrap_or(500));
    print_table2(r, &frames);
    print_table3(r);
    print_fig13(r, &frames);
    print_table4(r);
    print_table5(r);
    print_table6(r);
}

/// Fig. 12: pages read and written and blocks erased by buffer size.
fn print_fig12(r: &DiplRepro, frames: &[u32]) {
    println!("\nFig. 12 (pages read / pages written / blocks erased; the paper gives a plot only)");
    println!(
        "{:>7} | {:>10} {:>10} {:>8} | {:>10} {:>10} {:>8}",
        "frames", "IPL read", "IPL write", "IPL ers", "dIPL read", "dIPL write", "dIPL ers"
    );
    for &f in frames {
        if let (Some(i), Some(d)) = (find(r, Index::Ipl, f), find(r, Index::Dipl, f)) {
            println!(
                "{f:>7} | {:>10} {:>10} {:>8} | {:>10} {:>10} {:>8}",
                i.reads, i.writes, i.erases, d.reads, d.writes, d.erases
            );
        }
    }
}

/// Table 1: splits and cleansings at the largest buffer (`big` frames).
fn print_table1(r: &DiplRepro, big: u32) {
    println!("\nTable 1 (buffer {big} frames; paper at 500)");
    println!(
        "{:>8} | {:>10} {:>10} {:>12} | paper: {:>6} {:>6} {:>8}",
        "", "node spl", "block spl", "cleans/merge", "node", "block", "cleans"
    );
    for (index, paper) in PAPER1 {
        if let Some(x) = find(r, index, big) {
            let bs = if index == Index::Ipl {
                "N/A".to_string()
            } else {
                x.block_splits.to_string()
            };
            println!(
                "{:>8} | {:>10} {:>10} {:>12} | paper: {:>6} {:>6} {:>8}",
                index.name(),
                x.node_splits,
                bs,
                x.block_cleansings,
                paper.0,
                paper.1,
                paper.2
            );
        }
    }
}

/// Table 2: write amplification by buffer size.
fn print_table2(r: &DiplRepro, frames: &[u32]) {
    println!("\nTable 2 (write amplification, Eq. 1: C_n = node writes the buffer requested; per insert: C_n = one per insert)");
    println!(
        "{:>7} | {:>6} {:>6} | per insert: {:>6} {:>6} | paper: {:>6} {:>6}",
        "frames", "IPL", "d-IPL", "IPL", "d-IPL", "IPL", "d-IPL"
    );
    for &f in frames {
        let p = PAPER_WA.iter().find(|x| x.0 == f);
        if let (Some(i), Some(d)) = (find(r, Index::Ipl, f), find(r, Index::Dipl, f)) {
            let (pi, pd) = p.map_or(("-".into(), "-".into()), |p| {
                (format!("{:.2}", p.1), format!("{:.2}", p.2))
            });
            println!(
                "{f:>7} | {:>6.2} {:>6.2} | per insert: {:>6.2} {:>6.2} | paper: {pi:>6} {pd:>6}",
                i.write_amplification,
                d.write_amplification,
                i.write_amplification_per_insert,
                d.write_amplification_per_insert
            );
        }
    }
}

/// Table 3: the insert:delete mixes.
fn print_table3(r: &DiplRepro) {
    println!("\nTable 3 (insert:delete, 500 frames)");
    println!(
        "{:>5} {:>5} | {:>10} {:>10} {:>7} {:>6} | paper: {:>10} {:>10} {:>7} {:>6}",
        "", "ratio", "read", "write", "erase", "blocks", "read", "write", "erase", "blocks"
    );
    for m in &r.mix {
        let p = PAPER3
            .iter()
            .find(|p| p.0 == m.index.name() && p.1 == m.ratio);
        let p = p.copied().unwrap_or(("", "", "-", "-", "-", "-"));
        println!(
            "{:>5} {:>5} | {:>10} {:>10} {:>7} {:>6} | paper: {:>10} {:>10} {:>7} {:>6}",
            m.index.name(),
            m.ratio,
            m.reads,
            m.writes,
            m.erases,
            m.blocks,
            p.2,
            p.3,
            p.4,
            p.5
        );
    }
}

/// Fig. 13: pages read by searches, before and after a global cleansing.
fn print_fig13(r: &DiplRepro, frames: &[u32]) {
    if !r.search.is_empty() {
        println!("\nFig. 13 ({} random searches: pages read; (R) after a global cleansing; the paper gives a plot only)", r.searches);
        println!(
            "{:>7} | {:>10} {:>10} | {:>10} {:>10}",
            "frames", "IPL", "IPL (R)", "d-IPL", "d-IPL (R)"
        );
        for &f in frames {
            let g = |i| {
                r.search
                    .iter()
                    .find(|x| x.index == i && x.buffer_frames == f)
            };
            if let (Some(i), Some(d)) = (g(Index::Ipl), g(Index::Dipl)) {
                println!(
                    "{f:>7} | {:>10} {:>10} | {:>10} {:>10}",
                    i.reads,
                    i.reads_after_global_cleansing,
                    d.reads,
                    d.reads_after_global_cleansing
                );
            }
        }
    }
}

/// Table 4: ghost nodes after the inserts.
fn print_table4(r: &DiplRepro) {
    if let Some(g) = &r.ghosts {
        println!(
            "\nTable 4 (ghost nodes after the inserts, {} frames; paper at 500)",
            g.buffer_frames
        );
        println!(
            "  average ghosts per block   {:>8.2}   paper {}",
            g.average_ghosts_per_block, PAPER4.0
        );
        println!(
            "  maximum ghosts per block   {:>8}   paper {}",
            g.max_ghosts_per_block, PAPER4.1
        );
        println!(
            "  ghosts split again         {:>8}   paper {}",
            g.ghosts_split_again, PAPER4.2
        );
        println!("  ghosts created             {:>8}", g.ghosts_created);
    }
}

/// Table 5: the d-IPL by node size.
fn print_table5(r: &DiplRepro) {
    println!("\nTable 5 (d-IPL, {} inserts, 800 KB buffer)", r.keys / 2);
    let names = [
        "max fanout (internal)",
        "max fanout (leaf)",
        "index height",
        "index nodes read",
        "index nodes written",
        "index nodes split",
        "2 KiB pages read",
        "2 KiB pages written",
        "blocks split",
        "blocks cleansed",
        "blocks erased",
        "blocks in use",
    ];
    println!(
        "{:>22} | {:>10} {:>10} {:>10} | paper: {:>10} {:>10} {:>10}",
        "", "2 KiB", "4 KiB", "8 KiB", "2 KiB", "4 KiB", "8 KiB"
    );
    for (row, name) in names.iter().enumerate() {
        let v: Vec<u64> = r
            .node_size
            .iter()
            .map(|x| match row {
                0 => x.fanout_internal,
                1 => x.fanout_leaf,
                2 => x.height,
                3 => x.nodes_read,
                4 => x.nodes_written,
                5 => x.node_splits,
                6 => x.pages_read,
                7 => x.pages_written,
                8 => x.block_splits,
                9 => x.block_cleansings,
                10 => x.blocks_erased,
                _ => x.blocks_in_use,
            })
            .collect();
        let cell = |i: usize| v.get(i).map_or("-".to_string(), |x| x.to_string());
        println!(
            "{name:>22} | {:>10} {:>10} {:>10} | paper: {:>10} {:>10} {:>10}",
            cell(0),
            cell(1),
            cell(2),
            PAPER5[row][0],
            PAPER5[row][1],
            PAPER5[row][2]
        );
    }
}

fn print_table6(r: &DiplRepro) {
    if r.table6.is_empty() {
        return;
    }
    println!(
        "\nTable 6 ({} random inserts; BFTL on a simulated SSD with 30% over-provisioning, d-IPL at 100 frames; elapsed = reads x 80 us + writes x 200 us + erases x 1.5 ms)",
        r.keys
    );
    println!(
        "{:>5} {:>13} | {:>11} {:>10} {:>7} {:>8} {:>6} | paper: {:>11} {:>10} {:>7} {:>6} {:>6}",
        "",
        "FTL",
        "reads",
        "writes",
        "erases",
        "min",
        "blocks",
        "reads",
        "writes",
        "erases",
        "min",
        "blocks"
    );
    for x in &r.table6 {
        let p = PAPER6
            .iter()
            .find(|p| p.0 == x.index && p.1 == x.ftl)
            .copied()
            .unwrap_or(("", "", "-", "-", "-", "-", "-"));
        println!(
            "{:>5} {:>13} | {:>11} {:>10} {:>7} {:>8.2} {:>6} | paper: {:>11} {:>10} {:>7} {:>6} {:>6}",
            x.index, x.ftl, x.reads, x.writes, x.erases, x.elapsed_minutes, x.space_blocks, p.2, p.3, p.4, p.5, p.6
        );
    }
    for x in r.table6.iter().filter(|x| x.index == "bftl") {
        println!(
            "  BFTL over {:>12}: host reads {} writes {}, FTL copies {} merges {}, compactions {} commits {} node splits {}, live pages {} (high water {}), c = {}, simulated time {:.2} min",
            x.ftl, x.host_reads, x.host_writes, x.gc_page_copies, x.merges, x.compactions, x.commits, x.node_splits, x.live_pages, x.pages_high_water, x.c, x.sim_time_minutes
        );
    }
    crate::repro::common::print_claims(&r.claims);
}
