//! The d-IPL paper's published numbers (Tables 1 to 6), printed beside the reproduction's,
//! and the elapsed-time model its Table 6 fits.

use super::Index;

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
