//! The engines' cost models for `flashix advise`: one function per engine, each giving the
//! [`KindCosts`] of every kind of operation for an [`Input`].
//!
//! - `tuned.rs`: the engines with a cost model of their own that picks their parameters:
//!   FD-tree and LSM-tree (`k`, levels), PIO B-tree (leaf size, OPQ), bulk index (M);
//! - `classic.rs`: B+-tree-shaped structures over the buffer pool: B+-tree, BFTL, LA-tree;
//! - `logging.rs`: structures that log changes instead of rewriting nodes: FBX-tree, IPL
//!   and d-IPL B+-trees.
//!
//! Shared notation: `B` page size, `N` entries, `P` budget pages, `U` = 0.7 node
//! utilisation (the bulk loaders' fill, [`flashix::cost::pio::UTILIZATION`]), `miss(ℓ)` the
//! share of level ℓ's nodes not in the pool when the pool caches levels from the root
//! down ([`cached_from_root`]); level 0 is the leaves.

mod classic;
mod logging;
mod tuned;

use super::{Input, KindCosts};
use anyhow::Result;
use flashix::cost::pio::UTILIZATION;
use flashix::EngineKind;

/// The model of `engine` for `input`.
pub fn costs(engine: EngineKind, input: &Input) -> Result<KindCosts> {
    match engine {
        EngineKind::BTree => Ok(classic::btree(input)),
        EngineKind::Bftl => Ok(classic::bftl(input)),
        EngineKind::LaTree => Ok(classic::latree(input)),
        EngineKind::FdTree => tuned::fdtree(input, false),
        EngineKind::Lsm => tuned::fdtree(input, true),
        EngineKind::PioBTree => tuned::pio(input),
        EngineKind::BulkIndex => tuned::bulk(input),
        EngineKind::Fbx => Ok(logging::fbx(input)),
        EngineKind::IplBTree => Ok(logging::ipl(input, false)),
        EngineKind::DiplBTree => Ok(logging::ipl(input, true)),
    }
}

/// Entries of a node of `bytes` bytes with 16-byte entries after a 32-byte envelope (the
/// B+-tree node format of `kit::bnode`, also BFTL's and the in-page logging kit's fanout).
pub fn node_capacity(bytes: u64) -> u64 {
    (bytes.saturating_sub(32) / 16).max(4)
}

/// Nodes per level of a B+-tree of `entries`, leaves first: leaves of `leaf_cap` entries
/// and inner nodes of `inner_cap`, all filled to `U` ([`flashix::cost::pio::level_nodes`]).
pub fn levels(leaf_cap: u64, inner_cap: u64, entries: u64) -> Vec<f64> {
    flashix::cost::pio::level_nodes(leaf_cap, inner_cap, 1, entries)
}

/// The share of each level's nodes NOT in a pool of `pool_pages` pages that caches levels
/// from the root down, nodes of `node_pages` pages (the PIO paper's Appendix Eq. 12-14
/// for equal node sizes): `miss(ℓ) = 1 − min(1, left(ℓ) / pages(ℓ))`, leaves first.
pub fn cached_from_root(nodes: &[f64], node_pages: f64, pool_pages: f64) -> Vec<f64> {
    let mut left = pool_pages.max(0.0);
    let mut miss = vec![1.0; nodes.len()];
    for (l, &n) in nodes.iter().enumerate().rev() {
        let pages = n * node_pages;
        if pages <= left {
            miss[l] = 0.0;
            left -= pages;
        } else {
            miss[l] = 1.0 - left / pages;
            left = 0.0;
        }
    }
    miss
}

/// Leaves a scan of `len` entries visits in leaves of `leaf_entries` live entries:
/// `len / leaf_entries + 1` (the first is met part-way).
pub fn leaves_spanned(len: u64, leaf_entries: f64) -> f64 {
    len as f64 / leaf_entries.max(1.0) + 1.0
}

/// `U`, the node utilisation the models assume.
pub const U: f64 = UTILIZATION;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_caches_from_the_root() {
        // 100 leaves, 4 inner nodes, a root; 30 pages cache the root, the inner level and
        // 25 of the 100 leaves.
        let m = cached_from_root(&[100.0, 4.0, 1.0], 1.0, 30.0);
        assert_eq!(m, vec![0.75, 0.0, 0.0]);
        // Nodes of two pages: 30 pages hold the root (2) and inner level (8), 20 of the
        // 200 leaf pages.
        let m = cached_from_root(&[100.0, 4.0, 1.0], 2.0, 30.0);
        assert_eq!(m, vec![0.9, 0.0, 0.0]);
        let m = cached_from_root(&[100.0, 4.0, 1.0], 1.0, 3.0);
        assert_eq!(m, vec![1.0, 0.5, 0.0]);
        assert_eq!(node_capacity(4096), 254);
        assert_eq!(leaves_spanned(1000, 250.0), 5.0);
    }
}

/// The simple and rough models against hand-computed values on [`super::test_device`]
/// (reads 50 us per page, 60 us per two-page request; writes 100 us; sequential 1 and 2
/// us per page; psync reads 10 us per page at depth).
#[cfg(test)]
mod by_hand {
    use super::super::{test_device, Input, Mix};
    use super::*;

    fn input(entries: u64, budget_pages: u64, mix: &str) -> Input {
        Input {
            device: test_device(),
            entries,
            budget: budget_pages * 4096,
            mix: Mix::parse(mix).unwrap(),
            tuned_for: None,
        }
    }

    fn close(got: f64, want: f64) {
        assert!(
            (got - want).abs() <= 1e-6 * want.abs().max(1.0),
            "got {got}, want {want}"
        );
    }

    /// 17,700 entries in leaves of 254·0.7 = 177.8: ⌈99.6⌉ = 100 leaves under one root; 26 pages
    /// hold the root and 25 leaves: miss(0) = 0.75.
    #[test]
    fn btree() {
        let k = costs(
            EngineKind::BTree,
            &input(17_700, 26, "search=1,range=1:1778"),
        )
        .unwrap();
        // Search: 0.75 reads of 50 us, + 3 us.
        close(k.search.reads, 0.75);
        close(k.search.us(), 40.5);
        // Update: the search and 0.75 writes of 100 us.
        close(k.update.us(), 37.5 + 75.0 + 3.0);
        // Insert: also 3 / (254 · 0.3) split writes: 3.937 us.
        close(k.insert.us(), 115.5 + 3.0 / 76.2 * 100.0);
        // Range of 1778: 1778 / 177.8 + 1 = 11 leaves, 8.25 reads, 1778 keys of 0.09 us.
        close(k.range.reads, 8.25);
        close(k.range.us(), 412.5 + 3.0 + 1778.0 * 0.09);
    }

    /// 35,600 entries in 8 KiB nodes of 510·0.7 = 357: 100 leaves under one root; a
    /// compacted node is ⌈357·17 / 4064⌉ = 2 pages, a full one ⌈511·17 / 4064⌉ = 3, so c = 6;
    /// 52 pages hold the root (2) and 25 of the 100 leaves (200 pages): miss(0) = 0.75.
    #[test]
    fn bftl() {
        let k = costs(EngineKind::Bftl, &input(35_600, 52, "insert=1")).unwrap();
        // Search: 0.75 · 2 pages of 50 us.
        close(k.search.reads, 1.5);
        close(k.search.device_us, 75.0);
        // Insert: the search, 1/239 of a commit page, and the compaction (6 · 0.75 reads,
        // 2 writes, every 4 appends) for the 100(1 − e^(−5.1)) / 510 appends per insert.
        let appends = 100.0 * (1.0 - (-5.1f64).exp()) / 510.0;
        let compaction = (4.5 * 50.0 + 2.0 * 100.0) / 4.0;
        close(
            k.insert.device_us,
            75.0 + 100.0 / 239.0 + compaction * appends,
        );
        close(k.insert.reads, 1.5 + 4.5 / 4.0 * appends);
    }

    /// 17,700 entries: 100 leaves of 177.8 under one root (two buffered levels at most:
    /// here the root's); 26 pages: miss(0) = 0.75; 169 messages of 24 bytes a page.
    #[test]
    fn latree() {
        // Searches only: ADAPT empties at once (E = 1): half a message's page per buffer.
        let k = costs(EngineKind::LaTree, &input(17_700, 26, "search=1")).unwrap();
        close(k.search.reads, 0.75 + 1.0 / 338.0);
        close(k.search.us(), (0.75 + 1.0 / 338.0) * 50.0 + 3.0);
        // Inserts only: buffers are emptied full, E = 64 · 169 = 10,816 messages, touching
        // all 177.8 children: 177.8 / 10,816 leaf reads and writes per message (× 0.75),
        // plus the message written and read once (1/169 page, 2 + 1 us a page).
        let k = costs(EngineKind::LaTree, &input(17_700, 26, "insert=1")).unwrap();
        let touched = 177.8 / 10_816.0 * 0.75;
        close(k.insert.device_us, 3.0 / 169.0 + touched * 150.0);
    }

    /// 17,450 entries in leaves of 100·0.7 = 70: 250 leaves, 2 inner nodes of 239·0.7 and a
    /// root; 64 pages (16 of them the log buffer) cache the inner nodes. 250 leaves in 256
    /// clusters: each log page holds one leaf's units, g = 239.
    #[test]
    fn fbx() {
        // Searches only: cleaned at every read, a list of 1 + 1/478 pages, read in one
        // batch at max(50 / 1.002, 10) us a page: 50 us.
        let k = costs(EngineKind::Fbx, &input(17_450, 64, "search=1")).unwrap();
        close(k.search.reads, 1.0 + 1.0 / 478.0);
        close(k.search.device_us, 50.0);
        // Inserts only: 1/239 of a log page (2 us) and a reorganisation every 30 updates
        // reading a list of 1 + 30/239 pages (50 us in one batch) and writing 2 (4 us).
        let k = costs(EngineKind::Fbx, &input(17_450, 64, "insert=1")).unwrap();
        close(k.insert.device_us, 2.0 / 239.0 + 54.0 / 30.0);
        close(k.insert.writes, 1.0 / 239.0 + 2.0 / 30.0);
    }

    /// 35,600 entries in 8 KiB nodes (2 pages) of 357: 100 leaves, one root; 26 frames:
    /// miss(0) = 0.75. Erase blocks of 32 pages, 8 sectors a page.
    #[test]
    fn ipl_and_dipl() {
        // IPL: 15 nodes and a 2-page log area (16 sectors) a block. A node read is one
        // 2-page request (60 us) and one page of log (50 us). A merge reads 15 nodes (900
        // us) and the log (100 us) and writes 30 pages (3000 us): 250 us a sector.
        let k = costs(EngineKind::IplBTree, &input(35_600, 52, "insert=1")).unwrap();
        close(k.search.device_us, 0.75 * 110.0);
        close(k.search.reads, 0.75 * 3.0);
        close(k.insert.device_us, 82.5 + 0.75 * (100.0 + 250.0));
        close(k.insert.writes, 0.75 * (1.0 + 30.0 / 16.0));
        // d-IPL: 0.7 · 15 = 10.5 nodes and 32 − 21 = 11 log pages (88 sectors) a block; a
        // cleansing reads 21 pages in 10.5 requests (630 us) and 11 log pages (550 us),
        // writes 21 (2100 us).
        let k = costs(EngineKind::DiplBTree, &input(35_600, 52, "insert=1")).unwrap();
        close(k.search.device_us, 82.5);
        close(k.insert.device_us, 82.5 + 0.75 * (100.0 + 3280.0 / 88.0));
    }
}
