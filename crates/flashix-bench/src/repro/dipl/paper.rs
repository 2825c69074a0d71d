//! The d-IPL paper's published numbers (Tables 1 to 6), printed beside the reproduction's,
//! and the elapsed-time model its Table 6 fits.

use super::{find, DiplRepro, Index, InsertRecord, SearchRecord};
use crate::repro::common::{verdict, verdict_cost, Checks, LensFigure};
use crate::repro::ClaimCheck;

/// Paper, Table 1 (500 frames): (index, (node splits, block splits, block cleansings for
/// d-IPL or merges for IPL)).
pub(super) const PAPER1: [(Index, (&str, &str, &str)); 2] = [
    (Index::Ipl, ("2,820", "N/A", "36,141")),
    (Index::Dipl, ("2,830", "277", "9,212")),
];

/// Paper, Table 2 (write amplification by buffer frames 100..500).
pub(super) const PAPER_WA: [(u32, f64, f64); 5] = [
    (100, 1.09, 0.49),
    (200, 0.97, 0.38),
    (300, 0.86, 0.33),
    (400, 0.77, 0.30),
    (500, 0.69, 0.26),
];

/// Paper, Table 3 (insert:delete, 500 frames): (index, ratio, pages read, pages written,
/// blocks erased, blocks in use).
pub(super) const PAPER3: [(&str, &str, &str, &str, &str, &str); 6] = [
    ("ipl", "5:5", "155,900", "164,106", "2,735", "1"),
    ("ipl", "7:3", "2,103,462", "1,103,261", "15,304", "80"),
    ("ipl", "9:1", "4,633,756", "2,314,523", "31,631", "146"),
    ("dipl", "5:5", "12,774", "47,390", "246", "1"),
    ("dipl", "7:3", "1,914,706", "425,444", "4,174", "110"),
    ("dipl", "9:1", "4,462,403", "910,851", "9,051", "211"),
];

/// Paper, Table 4 (500 frames): (average ghosts per block, maximum ghosts per block, ghosts
/// split again).
pub(super) const PAPER4: (&str, &str, &str) = ("0.28", "4", "0");

/// Paper, Table 5 (d-IPL, 500,000 inserts, 800 KB buffer): the rows as printed, each for
/// 2, 4 and 8 KiB nodes.
pub(super) const PAPER5: [[&str; 3]; 13] = [
    ["207", "418", "840"],
    ["126", "254", "510"],
    ["3", "3", "3"],
    ["372,135", "369,967", "369,197"],
    ["382,423", "376,366", "373,500"],
    ["5,721", "2,850", "1,390"],
    ["1,602,379", "2,477,285", "3,722,839"],
    ["760,530", "1,058,651", "704,188"],
    ["137", "124", "134"],
    ["7,328", "12,190", "6,542"],
    ["7,465", "12,314", "6,677"],
    ["140", "127", "137"],
    ["", "", ""],
];

/// Paper, Table 6: (index, FTL, reads, writes, erases, elapsed minutes, space blocks).
pub(super) const PAPER6: [(&str, &str, &str, &str, &str, &str, &str); 4] = [
    (
        "bftl",
        "block (FMAX)",
        "14,533,720",
        "2,132,676",
        "55,353",
        "27.87",
        "1,330",
    ),
    (
        "bftl",
        "fast",
        "13,246,303",
        "824,622",
        "12,456",
        "20.72",
        "",
    ),
    (
        "bftl",
        "page",
        "13,832,766",
        "1,045,478",
        "8,168",
        "22.13",
        "",
    ),
    (
        "dipl",
        "raw NAND",
        "8,336,982",
        "1,608,000",
        "15,541",
        "16.86",
        "266",
    ),
];

/// The paper's elapsed-time model (the `repro::dipl` module doc).
pub(super) fn paper_minutes(reads: u64, writes: u64, erases: u64) -> f64 {
    (reads as f64 * 80.0 + writes as f64 * 200.0 + erases as f64 * 1500.0) / 60e6
}

/// The lens of the IPL and d-IPL runs.
const NAND: &str = "raw NAND";

/// Check the paper's claims (§6.2's text and Tables 1-6) against the run. Counts scale
/// with the keys inserted, so the claims are ratios of IPL to d-IPL (or BFTL to d-IPL) at
/// the same keys and buffer.
pub fn check(r: &DiplRepro) -> Vec<ClaimCheck> {
    let mut k = Checks::new("dipl");
    let mut frames: Vec<u32> = r.insert.iter().map(|x| x.buffer_frames).collect();
    frames.sort_unstable();
    frames.dedup();
    let pairs: Vec<(u32, &InsertRecord, &InsertRecord)> = frames
        .iter()
        .filter_map(|&f| Some((f, find(r, Index::Ipl, f)?, find(r, Index::Dipl, f)?)))
        .collect();
    fig12(&pairs, &mut k);
    table2(&pairs, &mut k);
    table1(&pairs, &mut k);
    table3(r, &mut k);
    table4(r, &mut k);
    fig13(r, &mut k);
    table6(r, &mut k);
    k.rows
}

/// `IPL / d-IPL` of a count.
fn over(ipl: u64, dipl: u64) -> f64 {
    ipl as f64 / dipl.max(1) as f64
}

fn fig12(pairs: &[(u32, &InsertRecord, &InsertRecord)], k: &mut Checks) {
    let e = "Fig. 12";
    let claim = "§6.2.1: d-IPL \"outperformed the IPL B+-tree by more than a factor of two\" in \
                 pages written and blocks erased (a million random inserts, 100-500 frames)";
    if pairs.is_empty() {
        return k.missing(e, claim, "not run (--only-table6)");
    }
    let w = pairs.iter().map(|p| over(p.1.writes, p.2.writes));
    let x = pairs.iter().map(|p| over(p.1.erases, p.2.erases));
    let (wmin, xmin) = (w.fold(f64::MAX, f64::min), x.fold(f64::MAX, f64::min));
    let worst = wmin.min(xmin);
    let v = if worst >= 2.0 {
        "holds"
    } else {
        verdict(worst, 2.0, f64::MAX)
    };
    k.lensed(
        e,
        claim,
        "> 2x fewer writes and erases",
        vec![LensFigure::new(
            NAND,
            format!("writes {wmin:.2}x, erases {xmin:.2}x fewer (least over the buffers)"),
            v,
        )],
        &pairs
            .iter()
            .map(|(f, i, d)| {
                format!(
                    "[{f} frames: writes {}/{}, erases {}/{}]",
                    i.writes, d.writes, i.erases, d.erases
                )
            })
            .collect::<Vec<_>>()
            .join(" "),
    );
}

fn table2(pairs: &[(u32, &InsertRecord, &InsertRecord)], k: &mut Checks) {
    let e = "Table 2";
    let claim = "Table 2: write amplification (Eq. 1) of IPL over d-IPL, 2.2x at 100 frames to \
                 2.7x at 500 (1.09/0.49 ... 0.69/0.26)";
    if pairs.is_empty() {
        return k.missing(e, claim, "not run (--only-table6)");
    }
    let xs: Vec<f64> = pairs
        .iter()
        .map(|p| p.1.write_amplification_per_insert / p.2.write_amplification_per_insert.max(1e-12))
        .collect();
    let min = xs.iter().copied().fold(f64::MAX, f64::min);
    k.lensed(
        e,
        claim,
        "2.2-2.7x",
        vec![LensFigure::new(
            NAND,
            xs.iter()
                .zip(pairs)
                .map(|(x, p)| format!("{x:.2}x at {}", p.0))
                .collect::<Vec<_>>()
                .join(", "),
            verdict(min, 2.22, 2.65),
        )],
        "(C_n = one node write request per insert, the reading under which the paper's \
         Table 2 falls with the buffer)",
    );
    k.last().because(
        "both indexes write their log sectors at the same dirty evictions (848k at 100 frames \
         to 508k at 500, equal within 0.3%) and each writes a fixed number of pages per log \
         sector at every buffer (IPL 4.70: 16 sectors, then a 60-page merge; d-IPL 1.95), so \
         the ratio is 2.4-2.5x at every buffer; the paper's d-IPL writes fall faster with the \
         buffer than its IPL's (1.88x vs 1.58x from 100 to 500 frames; here 1.65x and 1.64x)",
    );
    let (Some(lo), Some(hi)) = (pairs.first(), pairs.last()) else {
        return;
    };
    if lo.0 == hi.0 {
        return;
    }
    let fall = lo.2.write_amplification_per_insert / hi.2.write_amplification_per_insert.max(1e-12);
    k.lensed(
        e,
        &format!(
            "Table 2: d-IPL's write amplification falls with the buffer, 0.49 at 100 frames to \
             0.26 at 500 (1.9x); here {} to {} frames",
            lo.0, hi.0
        ),
        "1.9x",
        vec![LensFigure::new(
            NAND,
            format!(
                "{:.2} to {:.2} ({fall:.2}x)",
                lo.2.write_amplification_per_insert, hi.2.write_amplification_per_insert
            ),
            verdict(fall, 1.88, 1.88),
        )],
        "",
    );
}

fn table1(pairs: &[(u32, &InsertRecord, &InsertRecord)], k: &mut Checks) {
    let Some(&(f, i, d)) = pairs.last() else {
        return;
    };
    let x = over(i.block_cleansings, d.block_cleansings);
    k.lensed(
        "Table 1",
        "Table 1 (500 frames): IPL merges 36,141 blocks, d-IPL cleanses 9,212 (3.9x fewer \
         block reorganisations)",
        "3.9x",
        vec![LensFigure::new(
            NAND,
            format!(
                "{x:.2}x at {f} frames ({} merges, {} cleansings)",
                i.block_cleansings, d.block_cleansings
            ),
            verdict(x, 3.92, 3.92),
        )],
        "",
    )
    .because(
        "a merge (and a cleansing) folded the buffered frames' pending log sectors into the new \
         block (137,391 in IPL's 25,554 merges at 500 frames), which Algorithm 3 does not; \
         applying only the log on flash (this build), IPL merges 33,078 and d-IPL cleanses \
         9,230 (paper 36,141, 9,212): one merge per 16 of IPL's 530,755 log sectors (one per \
         dirty eviction and 418,200 physical records of 1,639 split nodes); the 9% left is not \
         explained",
    );
}

fn table3(r: &DiplRepro, k: &mut Checks) {
    let e = "Table 3";
    let claim = "Table 3: with deletions mixed in (5:5, 7:3, 9:1), d-IPL erases 11.1x, 3.7x and \
                 3.5x fewer blocks than IPL";
    if r.mix.is_empty() {
        return k.missing(e, claim, "not run (--only-insert / --only-table6)");
    }
    let mut figs = Vec::new();
    let mut vs = Vec::new();
    for (ratio, paper) in [
        ("5:5", 2735.0 / 246.0),
        ("7:3", 15304.0 / 4174.0),
        ("9:1", 31631.0 / 9051.0),
    ] {
        let g = |i: Index| r.mix.iter().find(|m| m.index == i && m.ratio == ratio);
        if let (Some(i), Some(d)) = (g(Index::Ipl), g(Index::Dipl)) {
            let x = over(i.erases, d.erases);
            figs.push(format!("{ratio} {x:.2}x"));
            vs.push(verdict(x, paper, paper));
        }
    }
    // The weakest of the three mixes judges the claim.
    let order = [
        "does not hold",
        "weaker here",
        "within 25%",
        "holds, stronger here",
        "holds",
    ];
    let v = order
        .iter()
        .find(|o| vs.contains(o))
        .copied()
        .unwrap_or("not measured");
    k.lensed(
        e,
        claim,
        "11.1x, 3.7x, 3.5x",
        vec![LensFigure::new(NAND, figs.join(", "), v)],
        "",
    )
    .because(
        "a rebuild folded the buffered frames' pending log sectors into the new block, which \
         saved IPL (a merge per 16 sectors) far more than d-IPL: 7.60x, 2.89x, 3.26x then; \
         applying only the log on flash (this build) 8.76x, 3.41x, 3.83x (IPL 3,643, 29,673, \
         33,991 erases; d-IPL 416, 8,691, 8,883), and IPL's 5:5 merges read 163,148 pages \
         (paper 155,900; 4 before); at 5:5 the tree stays at 3-4 buffered nodes and d-IPL \
         cleanses every 151 sectors (62,774 in 416 cleansings), the rest of that gap is not \
         explained",
    );
}

fn table4(r: &DiplRepro, k: &mut Checks) {
    let claim = "Table 4 (500 frames): ghost nodes are rare, 0.28 per block on average (at most \
                 4), and none is split again";
    let Some(g) = &r.ghosts else {
        return k.missing("Table 4", claim, "not run (--only-table6)");
    };
    let v = if g.ghosts_split_again == 0 && g.average_ghosts_per_block <= 0.35 {
        "holds"
    } else {
        "differs"
    };
    k.lensed(
        "Table 4",
        claim,
        "0.28 / 4 / 0",
        vec![LensFigure::new(
            NAND,
            format!(
                "{:.2} / {} / {} at {} frames",
                g.average_ghosts_per_block,
                g.max_ghosts_per_block,
                g.ghosts_split_again,
                g.buffer_frames
            ),
            v,
        )],
        "",
    )
    .because(
        "not a deviation: Algorithm 1 and §5.2 split a ghost like any node when its block has \
         room; 30 of the 33 are leaves split in the first 205k inserts, while the whole tree \
         (<= 528 nodes) fits in the 500 frames and a leaf logs only full sectors of 24 records \
         (Rule 2), so a ghost gains its 255 entries in ~11 sectors, fewer than its block's free \
         log area; 3 are level-1 nodes (always buffered); none after the tree outgrows the \
         buffer, and the count grows with it (17, 24, 28, 29, 33 at 100-500 frames)",
    );
}

fn fig13(r: &DiplRepro, k: &mut Checks) {
    let e = "Fig. 13";
    let Some(&f) = r
        .search
        .iter()
        .map(|s| s.buffer_frames)
        .collect::<Vec<_>>()
        .last()
    else {
        return k.missing(e, "§6.2.3 Fig. 13: random searches", "not run");
    };
    let g = |i: Index| {
        r.search
            .iter()
            .find(|s| s.index == i && s.buffer_frames == f)
    };
    let (Some(i), Some(d)) = (g(Index::Ipl), g(Index::Dipl)) else {
        return;
    };
    let extra = |s: &SearchRecord| s.reads.saturating_sub(s.reads_after_global_cleansing);
    let ipl_extra = i.reads as f64 / i.reads_after_global_cleansing.max(1) as f64 - 1.0;
    k.lensed(
        e,
        "§6.2.3: a search of the IPL B+-tree reads \"about 50 percent additional\" pages \
         compared with the read-optimised (R) index",
        "+50%",
        vec![LensFigure::new(
            NAND,
            format!("+{:.0}% at {f} frames", ipl_extra * 100.0),
            verdict(ipl_extra, 0.5, 0.5),
        )],
        "",
    );
    let x = extra(d) as f64 / extra(i).max(1) as f64;
    k.lensed(
        e,
        "§6.2.3: d-IPL's additional reads are \"just about twice\" IPL's (its log sectors' \
         LLSD and LSLM)",
        "2x",
        vec![LensFigure::new(
            NAND,
            format!("{x:.2}x ({} vs {} extra pages)", extra(d), extra(i)),
            verdict_cost(x, 2.0, 2.0),
        )],
        "",
    );
    let same = i.reads_after_global_cleansing as f64 / d.reads_after_global_cleansing.max(1) as f64;
    k.lensed(
        e,
        "§6.2.3: after a global cleansing the two indexes' searches \"overlap completely\"",
        "1.0x",
        vec![LensFigure::new(
            NAND,
            format!("IPL (R) / d-IPL (R) {same:.2}x"),
            if (0.9..=1.1).contains(&same) {
                "holds"
            } else {
                "differs"
            },
        )],
        "",
    );
}

fn table6(r: &DiplRepro, k: &mut Checks) {
    let e = "Table 6";
    let claim = "Table 6: BFTL takes 1.65x (FMAX), 1.23x (FAST) and 1.31x (page FTL) d-IPL's \
                 elapsed time for a million inserts";
    let Some(d) = r.table6.iter().find(|x| x.index == "dipl") else {
        return k.missing(e, claim, "not run (--only-insert)");
    };
    let mut lenses = Vec::new();
    for (ftl, name, paper) in [
        ("block (FMAX)", "simulated SSD, FMAX", 27.87 / 16.86),
        ("fast", "simulated SSD, FAST", 20.72 / 16.86),
        ("page", "simulated SSD, page FTL", 22.13 / 16.86),
    ] {
        if let Some(b) = r.table6.iter().find(|x| x.index == "bftl" && x.ftl == ftl) {
            let x = b.elapsed_minutes / d.elapsed_minutes.max(1e-12);
            lenses.push(LensFigure::new(
                name,
                format!("{x:.2}x (paper {paper:.2}x)"),
                verdict(x, paper, paper),
            ));
        }
    }
    k.lensed(
        e,
        claim,
        "1.23-1.65x",
        lenses,
        "(reads x 80 us + writes x 200 us + erases x 1.5 ms, the paper's costs)",
    );
    if let Some(b) = r
        .table6
        .iter()
        .find(|x| x.index == "bftl" && x.ftl == "block (FMAX)")
    {
        let x = b.space_blocks as f64 / d.space_blocks.max(1) as f64;
        k.lensed(
            e,
            "Table 6: BFTL over FMAX takes 5.0x d-IPL's space (1,330 vs 266 blocks)",
            "5.0x",
            vec![LensFigure::new(
                "simulated SSD, FMAX",
                format!("{x:.2}x ({} vs {} blocks)", b.space_blocks, d.space_blocks),
                verdict(x, 5.0, 5.0),
            )],
            "",
        )
        .because(
            "BFTL's space here is its live pages packed into 128 KiB blocks; the paper's 1,330 \
             counts the blocks FMAX holds for BFTL, each partly live (a measure of the FTL \
             more than of BFTL)",
        );
    }
}
