//! The PIO B-tree's node-size and OPQ-size model (Roh et al., VLDB 2011, §3.2.1 Eq. 3–6,
//! §3.5 Eq. 7–9, §3.6 Eq. 10, Appendix Eq. 11–15): the leaf size `L` (in leaf segments,
//! pages) and the OPQ size `O` (in pages) that minimise the average time of an index
//! operation, for a device profile, an insert/search mix and a memory budget.
//!
//! # The model, in the paper's notation (Table 1)
//! - `F`: pointers of an internal node (one page); `F' = (F − 1)·U` entries of an average
//!   node, `U` the node utilisation (0.7 here, the bulk loader's fill). A leaf of `L`
//!   segments holds `L·s` records (`s` per segment page) and on average `E_L = L·s·U` live
//!   entries.
//! - Level sizes: `n(0) = ⌈N / E_L⌉` leaves and `n(ℓ+1) = ⌈n(ℓ) / F'⌉` up to the root; the
//!   height `H` is the number of levels (Eq. 4: `H ≈ log_F'(N)`).
//! - **Buffer pool** (Appendix, Eq. 11–14): the pool gets what the OPQ leaves of the budget,
//!   `M − O` pages (Eq. 9). It caches levels from the root down: a level whose pages fit in
//!   what is left is buffered whole; the first one that does not (`LastLevel`) is buffered
//!   with coverage `Cvrg` = pages left / pages of the level; levels below are not buffered.
//!   Reading a node of level ℓ then costs `(1 − Cvrg(ℓ))` reads.
//! - **Search** (Eq. 7, first term): `Σ_ℓ (1 − Cvrg(ℓ))·Pr` over the internal levels, plus
//!   `(1 − Cvrg(0))·Pr(L)` for the leaf, read whole as one request.
//! - **Update** (Eq. 7 second term with Eq. 8 and 15): an update waits in the OPQ of
//!   `Q = O·B / e` entries (`e` bytes per OPQ entry) and is applied by a batch update of
//!   `b = min(bcnt, Q)` entries. Eq. 8 counts the updates that share one read of a node of
//!   level ℓ as "the total number of OPQ entries divided by the total number of nodes in
//!   the level", between 1 and `bcnt`: `u(ℓ) = Q / n(ℓ)` — the *whole* OPQ, not the batch,
//!   because a batch is a contiguous key range of a full OPQ (the engine flushes the OPQ's
//!   key space round robin), so it meets `n(ℓ)·b/Q` nodes with `Q/n(ℓ)` updates each.
//!   Where the paper clamps at 1 (a node never serves less than one update), this model
//!   counts the distinct nodes a batch meets when updates land on nodes at random:
//!   `x = Q / n(ℓ)` updates per node on average, so a share `1 − e^(−x)` of the nodes in
//!   the batch's range is met, and the reads per update are `r(ℓ) = (1 − e^(−x)) / x`
//!   (→ `1/u(ℓ)` for large `x`, → 1 for small `x`; at least `1/b`). The clamp misses what
//!   decides the OPQ size: with an OPQ of about twice as many entries as a level has
//!   nodes (`x` ≈ 2), the clamp says one read per update where `r` says about half, and
//!   the engine's read counters follow `r`. Node reads go through psync I/O at the amortised
//!   per-page time at the batch's psync group size `g(ℓ)` — the nodes of the level a batch
//!   meets, at most `PioMax` and at most half the pool's pages (a group's pages stay in the
//!   pool until used): `Pr'(g) = max(Pr / g, Pr')`, the queue-depth-1 latency shared by
//!   the group until the device saturates at the measured `Pr'` (with a small pool, long
//!   leaves make small groups: 8-page leaves in a 64-page pool are read 4 at a time) —
//!   `(1 − Cvrg(ℓ))·Pr'(g)·r(ℓ)` per level; at the leaf only the last
//!   segment is read and written (§3.3): `((1 − Cvrg(0))·Pr'(g) + Pw'(g))·r(0)`. A leaf is
//!   shrunk once every `L·s·(1 − U)` appends (its free records), reading it whole and
//!   rewriting it: `(Pr(L) + L·Pw') / (L·s·(1 − U))`.
//!   (The paper ignores the amortised split cost, §3.2.1; so does this model.)
//! - **Average** (Eq. 7): `C = Rs·search + Ri·update`, and (Eq. 10)
//!   `(L, O) := argmin C` over `L` = 1 ..= the longest request the profile measures and `O`
//!   = 1, 2, 4, ... pages while the pool keeps at least two leaves.
//!
//! All times in microseconds.

use crate::error::{Error, Result};

use super::DeviceCosts;
use serde::{Deserialize, Serialize};

/// Random 4 KiB reads per second at queue depth 32 of the reference SSD (the `flashix
/// probe` figure of the virtio SSD of [`DeviceCosts::reference`]).
pub const REFERENCE_PSYNC_READ_IOPS: f64 = 79_130.0;
/// Random 4 KiB writes per second at queue depth 32 of the reference SSD.
pub const REFERENCE_PSYNC_WRITE_IOPS: f64 = 83_673.0;
/// Longest leaf, in segments, the model considers when it derives its inputs.
pub const DERIVED_MAX_SEGMENTS: usize = 16;

/// Node utilisation `U` (Table 1).
pub const UTILIZATION: f64 = 0.7;

/// What the model needs to know about the device (§3.6: "PIO B-tree conducts a
/// micro-benchmark to obtain the flashSSD specifications such as Pr, Pw, Pr(L), Pr' and
/// Pw'").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PioDeviceCosts {
    page_size: usize,
    /// `Pr(L)` for L = 1, 2, ...: one random read of L contiguous pages, queue depth 1.
    read_us: Vec<f64>,
    /// `Pw`: one random page write, queue depth 1 (reported; the batch update uses `Pw'`).
    write_us: f64,
    /// `Pr'`: amortised time per page of random page reads issued `pio_max` at a time.
    psync_read_us: f64,
    /// `Pw'`: amortised time per page of random page writes issued `pio_max` at a time.
    psync_write_us: f64,
}

impl PioDeviceCosts {
    /// A profile from measured times; `read_us[i]` is `Pr(i + 1)`. Every time must be
    /// finite and positive and at least `Pr(1)` given.
    pub fn new(
        page_size: usize,
        read_us: Vec<f64>,
        write_us: f64,
        psync_read_us: f64,
        psync_write_us: f64,
    ) -> Result<Self> {
        if page_size < 512 || !page_size.is_power_of_two() {
            return Err(Error::InvalidArgument(format!(
                "pio cost model: page size {page_size} must be a power of two of at least 512"
            )));
        }
        if read_us.is_empty() {
            return Err(Error::InvalidArgument(
                "pio cost model: need the read latency of at least one page".into(),
            ));
        }
        let named = [
            ("page write latency", write_us),
            ("psync page read time", psync_read_us),
            ("psync page write time", psync_write_us),
        ];
        for (name, v) in read_us.iter().map(|&v| ("read latency", v)).chain(named) {
            if !(v.is_finite() && v > 0.0) {
                return Err(Error::InvalidArgument(format!(
                    "pio cost model: the {name} must be a positive number of microseconds, not {v}"
                )));
            }
        }
        Ok(PioDeviceCosts {
            page_size,
            read_us,
            write_us,
            psync_read_us,
            psync_write_us,
        })
    }

    /// From a [`DeviceCosts`] and the random IOPS at queue depth `pio_max` (`flashix probe`
    /// measures them at 32): `Pr(L)` = one random page read plus `L − 1` pages at the
    /// sequential rate, for L up to `max_segments`; `Pr' = 1/read_iops_qd`,
    /// `Pw' = 1/write_iops_qd`.
    pub fn from_device_costs(
        d: &DeviceCosts,
        max_segments: usize,
        read_iops_qd: f64,
        write_iops_qd: f64,
    ) -> Result<Self> {
        let read_us = (0..max_segments.max(1))
            .map(|l| d.rand_read_page_us() + l as f64 * d.seq_read_page_us())
            .collect();
        PioDeviceCosts::new(
            d.page_size(),
            read_us,
            d.rand_write_page_us(),
            1e6 / read_iops_qd,
            1e6 / write_iops_qd,
        )
    }

    /// From a [`DeviceCosts`] alone, for a tuning that gives no PIO profile: the reference
    /// SSD's queue-depth-32 throughput ([`REFERENCE_PSYNC_READ_IOPS`],
    /// [`REFERENCE_PSYNC_WRITE_IOPS`]) scaled to the page size, leaves up to
    /// [`DERIVED_MAX_SEGMENTS`].
    pub fn derived(d: &DeviceCosts) -> Result<Self> {
        let scale = 4096.0 / d.page_size() as f64;
        PioDeviceCosts::from_device_costs(
            d,
            DERIVED_MAX_SEGMENTS,
            REFERENCE_PSYNC_READ_IOPS * scale,
            REFERENCE_PSYNC_WRITE_IOPS * scale,
        )
    }

    /// The page size the costs are for, bytes.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Amortised time per page of random page reads issued `group` at a time: the queue
    /// depth-1 latency shared by the group, but no less than the psync time `Pr'` measured
    /// at depth `PioMax` (throughput grows with the queue depth until the device
    /// saturates).
    pub fn psync_read_at(&self, group: f64) -> f64 {
        (self.read_us(1) / group.max(1.0)).max(self.psync_read_us)
    }

    /// [`PioDeviceCosts::psync_read_at`] for writes (`Pw`, `Pw'`).
    pub fn psync_write_at(&self, group: f64) -> f64 {
        (self.write_us / group.max(1.0)).max(self.psync_write_us)
    }

    /// The longest leaf the profile has a read time for.
    pub fn max_segments(&self) -> usize {
        self.read_us.len()
    }

    /// `Pr(L)`.
    pub fn read_us(&self, segments: usize) -> f64 {
        let i = segments.clamp(1, self.read_us.len()) - 1;
        self.read_us[i]
    }
}

/// The workload and budget the choice is for, and the engine's page capacities (the model
/// does not know the PIO B-tree's page formats: the caller gives them for the page size).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PioWorkload {
    /// `Ri`: share of updates (inserts, deletes, updates); `Rs = 1 − Ri` are searches.
    pub insert_ratio: f64,
    /// `N`: entries in the index.
    pub entries: u64,
    /// `M`: memory for the buffer pool and the OPQ, in bytes.
    pub memory_bytes: u64,
    /// `bcnt`: entries per batch update.
    pub bcnt: u64,
    /// `PioMax`: most requests in one psync call.
    pub pio_max: u64,
    /// `s`: records of one leaf segment (one page).
    pub segment_records: u64,
    /// `F`: entries (separators) of one internal node (one page).
    pub node_entries: u64,
    /// `e`: bytes of one OPQ entry in memory.
    pub opq_entry_bytes: u64,
}

/// The model's cost of one configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct PioCost {
    /// `L`: leaf segments (pages) per leaf.
    pub leaf_segments: usize,
    /// OPQ size in pages of the memory budget.
    pub opq_pages: u64,
    /// Levels, leaves included.
    pub height: usize,
    /// Nodes per level, leaves first.
    pub nodes: Vec<f64>,
    /// Buffered share of each level, leaves first.
    pub coverage: Vec<f64>,
    /// Expected time of one point search, microseconds.
    pub search_us: f64,
    /// Expected time of one update (insert, delete or update) amortised over batch
    /// updates, microseconds.
    pub update_us: f64,
    /// `C = Rs·search + Ri·update`.
    pub total_us: f64,
}

/// Nodes per level, leaves first (Eq. 4, with ceilings), for leaves of `leaf_segments`
/// segments of `segment_records` records and internal nodes of `node_entries` entries.
pub fn level_nodes(
    segment_records: u64,
    node_entries: u64,
    leaf_segments: usize,
    entries: u64,
) -> Vec<f64> {
    let per_leaf = (segment_records * leaf_segments as u64) as f64 * UTILIZATION;
    let fanout = node_entries as f64 * UTILIZATION;
    let mut n = (entries.max(1) as f64 / per_leaf).ceil();
    let mut out = vec![n];
    while n > 1.0 {
        n = (n / fanout).ceil();
        out.push(n);
    }
    out
}

/// Buffered share of each level (Appendix Eq. 12–14): levels are cached from the root down
/// in `pool_pages`; `nodes` leaves first, a leaf `leaf_segments` pages.
pub fn coverage(nodes: &[f64], leaf_segments: usize, pool_pages: f64) -> Vec<f64> {
    let mut left = pool_pages.max(0.0);
    let mut cov = vec![0.0; nodes.len()];
    for (l, &n) in nodes.iter().enumerate().rev() {
        let pages = n * if l == 0 { leaf_segments as f64 } else { 1.0 };
        if pages <= left {
            cov[l] = 1.0;
            left -= pages;
        } else {
            cov[l] = left / pages;
            left = 0.0;
        }
    }
    cov
}

/// Reads of a level's nodes per update (Eq. 8 with distinct-node counting; see the module
/// doc): an OPQ of `queued` entries over `nodes` nodes, flushed `batch` entries at a time.
pub fn reads_per_update(queued: f64, batch: f64, nodes: f64) -> f64 {
    let x = queued / nodes.max(1.0);
    let r = if x < 1e-9 { 1.0 } else { -(-x).exp_m1() / x };
    r.clamp(1.0 / batch.max(1.0), 1.0)
}

/// The cost of leaf size `leaf_segments` and an OPQ of `opq_pages` pages.
pub fn cost(
    dev: &PioDeviceCosts,
    w: &PioWorkload,
    leaf_segments: usize,
    opq_pages: u64,
) -> Result<PioCost> {
    if !(0.0..=1.0).contains(&w.insert_ratio) {
        return Err(Error::InvalidArgument(format!(
            "pio cost model: insert ratio {} must be within 0..=1",
            w.insert_ratio
        )));
    }
    if leaf_segments == 0 || opq_pages == 0 || w.bcnt == 0 {
        return Err(Error::InvalidArgument(
            "pio cost model: leaf segments, OPQ pages and bcnt must be positive".into(),
        ));
    }
    if w.segment_records == 0 || w.node_entries < 2 || w.opq_entry_bytes == 0 {
        return Err(Error::InvalidArgument(format!(
            "pio cost model: pages of {} records per leaf segment, {} entries per internal \
             node and OPQ entries of {} bytes leave no tree",
            w.segment_records, w.node_entries, w.opq_entry_bytes
        )));
    }
    let b = dev.page_size;
    let nodes = level_nodes(w.segment_records, w.node_entries, leaf_segments, w.entries);
    let pool = w.memory_bytes as f64 / b as f64 - opq_pages as f64;
    let cov = coverage(&nodes, leaf_segments, pool);
    let pr = dev.read_us(1);
    let prl = dev.read_us(leaf_segments);
    let search_us: f64 = (0..nodes.len())
        .map(|l| (1.0 - cov[l]) * if l == 0 { prl } else { pr })
        .sum();
    let queued = opq_pages as f64 * b as f64 / w.opq_entry_bytes as f64;
    let batch = (w.bcnt as f64).min(queued);
    let mut update_us = 0.0;
    for (l, &n) in nodes.iter().enumerate() {
        let r = reads_per_update(queued, batch, n);
        // The psync group: the nodes of the level a batch meets, at most PioMax and at
        // most half the pool's pages (a group's pages are held in the pool until used).
        let node_pages = if l == 0 { leaf_segments as f64 } else { 1.0 };
        let fit = (pool / 2.0 / node_pages).floor();
        let group = (batch * r).min(w.pio_max as f64).min(fit).max(1.0);
        update_us += (1.0 - cov[l]) * dev.psync_read_at(group) * r;
        if l == 0 {
            update_us += dev.psync_write_at(group) * r;
        }
    }
    let records = (w.segment_records * leaf_segments as u64) as f64;
    update_us +=
        (prl + leaf_segments as f64 * dev.psync_write_us) / (records * (1.0 - UTILIZATION));
    let total_us = (1.0 - w.insert_ratio) * search_us + w.insert_ratio * update_us;
    Ok(PioCost {
        leaf_segments,
        opq_pages,
        height: nodes.len(),
        nodes,
        coverage: cov,
        search_us,
        update_us,
        total_us,
    })
}

/// Eq. 10: the leaf size and OPQ size of least cost.
pub fn choose(dev: &PioDeviceCosts, w: &PioWorkload) -> Result<PioCost> {
    choose_within(dev, w, None, None)
}

/// Eq. 10 with either parameter fixed (`Some`): leaves of 1 ..= the longest the profile
/// measures, OPQs of 1, 2, 4, ... pages, while the buffer pool keeps the frames the engine
/// needs (two leaves and two internal pages, at least 8).
pub fn choose_within(
    dev: &PioDeviceCosts,
    w: &PioWorkload,
    leaf_segments: Option<usize>,
    opq_pages: Option<u64>,
) -> Result<PioCost> {
    let budget_pages = w.memory_bytes / dev.page_size as u64;
    let leaves: Vec<usize> = match leaf_segments {
        Some(l) => vec![l],
        None => (1..=dev.max_segments()).collect(),
    };
    let mut best: Option<PioCost> = None;
    for l in leaves {
        let min_pool = (2 * l as u64 + 2).max(8);
        let opqs: Vec<u64> = match opq_pages {
            Some(o) => vec![o],
            None => std::iter::successors(Some(1u64), |o| o.checked_mul(2))
                .take_while(|o| o + min_pool <= budget_pages)
                .collect(),
        };
        for o in opqs {
            if o + min_pool > budget_pages {
                continue;
            }
            let c = cost(dev, w, l, o)?;
            if best.as_ref().map_or(true, |b| c.total_us < b.total_us) {
                best = Some(c);
            }
        }
    }
    best.ok_or_else(|| {
        Error::InvalidArgument(format!(
            "pio cost model: a memory budget of {} bytes leaves no room for a buffer pool and an OPQ of {}-byte pages",
            w.memory_bytes, dev.page_size
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6
    }

    /// The PIO B-tree's page capacities with wide leaf segments (`engine::pio::leaf`; the
    /// sums below are worked out for them): 512-byte pages hold (512 - 32) / 17 = 28 leaf
    /// records and (512 - 32) / 16 = 30 internal entries; 4 KiB pages (4096 - 32) / 17 =
    /// 239 and (4096 - 32) / 16 = 254. A new index packs its segments (29 and 252
    /// records). An OPQ entry takes 24 bytes (`PIO_OPQ_ENTRY_BYTES`).
    const S_512: u64 = 28;
    const F_512: u64 = 30;
    const S_4K: u64 = 239;
    const F_4K: u64 = 254;
    const OPQ_ENTRY: u64 = 24;

    fn flat_dev() -> PioDeviceCosts {
        PioDeviceCosts::new(512, vec![100.0], 200.0, 20.0, 40.0).unwrap()
    }

    #[test]
    fn levels_by_hand() {
        // 512-byte pages: 28 records per segment, 30 separators per internal node.
        // E_L = 28 · 0.7 = 19.6; F' = 30 · 0.7 = 21.
        // 8643 entries: ⌈8643 / 19.6⌉ = 441 leaves, ⌈441 / 21⌉ = 21, then the root.
        assert_eq!(level_nodes(S_512, F_512, 1, 8643), vec![441.0, 21.0, 1.0]);
        // Two segments: E_L = 39.2: ⌈220.5⌉ = 221 leaves, ⌈10.52⌉ = 11, root.
        assert_eq!(level_nodes(S_512, F_512, 2, 8643), vec![221.0, 11.0, 1.0]);
        assert_eq!(level_nodes(S_512, F_512, 1, 1), vec![1.0]);
    }

    #[test]
    fn coverage_by_hand() {
        // 132.25 pages: root (1) and level 1 (21) whole, then 110.25 of the 441 leaves.
        let c = coverage(&[441.0, 21.0, 1.0], 1, 132.25);
        assert!(
            close(c[2], 1.0) && close(c[1], 1.0) && close(c[0], 0.25),
            "{c:?}"
        );
        // Leaves of 2 pages: 10 pages cover the root and 9 of the 11 level-1 nodes.
        let c = coverage(&[221.0, 11.0, 1.0], 2, 10.0);
        assert!(
            close(c[2], 1.0) && close(c[1], 9.0 / 11.0) && close(c[0], 0.0),
            "{c:?}"
        );
    }

    #[test]
    fn cost_by_hand() {
        // M = 133.25 pages of 512 bytes, O = 1 page: pool 132.25 pages, leaf coverage 0.25.
        let w = PioWorkload {
            insert_ratio: 0.5,
            entries: 8643,
            memory_bytes: 68_224,
            bcnt: 5000,
            pio_max: 64,
            segment_records: S_512,
            node_entries: F_512,
            opq_entry_bytes: OPQ_ENTRY,
        };
        let c = cost(&flat_dev(), &w, 1, 1).unwrap();
        assert_eq!(c.height, 3);
        // Search: only the leaf level misses: 0.75 · Pr(1) = 75.
        assert!(close(c.search_us, 75.0), "{c:?}");
        // Update: the OPQ holds Q = 512 / 24 = 21.33 entries, one batch; over 441 leaves
        // x = 0.04837 updates per leaf, so r(0) = (1 − e^−x) / x = 0.97620 leaf reads and
        // writes per update (the paper's clamp says 1); level 1 and the root are cached.
        // Leaf: 0.75 · Pr' + Pw' = 15 + 40, times r(0); shrink every 28 · 0.3 = 8.4
        // appends: (Pr(1) + 1 · Pw') / 8.4 = 140 / 8.4 = 16.667.
        let r0 = 0.976_197_9;
        assert!(
            (c.update_us - (55.0 * r0 + 140.0 / 8.4)).abs() < 1e-4,
            "{c:?}"
        );
        assert!(
            (c.total_us - (0.5 * 75.0 + 0.5 * (55.0 * r0 + 140.0 / 8.4))).abs() < 1e-4,
            "{c:?}"
        );
        // A bigger OPQ: 64 pages hold Q = 1365.33 entries, x = 3.0960 per leaf:
        // r(0) = (1 − e^−3.096) / 3.096 = 0.30839; the pool shrinks to 69.25 pages: root,
        // level 1, and 47.25 / 441 of the leaves.
        let c = cost(&flat_dev(), &w, 1, 64).unwrap();
        let r0 = 0.308_388_8;
        let cov0 = 47.25 / 441.0;
        let update = ((1.0 - cov0) * 20.0 + 40.0) * r0 + 140.0 / 8.4;
        assert!((c.update_us - update).abs() < 1e-3, "{c:?}");
        assert!(close(c.search_us, (1.0 - cov0) * 100.0), "{c:?}");
    }

    #[test]
    fn reads_per_update_counts_distinct_nodes() {
        // Few updates per node: about one read each; many: one read per Q/n updates.
        assert!((reads_per_update(1.0, 1.0, 1e6) - 1.0).abs() < 1e-6);
        assert!((reads_per_update(10_000.0, 5000.0, 10.0) - 1e-3).abs() < 1e-9);
        // x = 1: 1 − 1/e.
        let r = reads_per_update(100.0, 100.0, 100.0);
        assert!((r - (1.0 - (-1.0f64).exp())).abs() < 1e-12, "{r}");
        // A batch never reads fewer than one node: at least 1/b per update.
        assert!((reads_per_update(1e9, 10.0, 1.0) - 0.1).abs() < 1e-12);
    }

    #[test]
    fn choices_follow_the_workload_and_the_device() {
        let w = |insert_ratio| PioWorkload {
            insert_ratio,
            entries: 100_000_000,
            memory_bytes: 16 << 20,
            bcnt: 5000,
            pio_max: 64,
            segment_records: S_4K,
            node_entries: F_4K,
            opq_entry_bytes: OPQ_ENTRY,
        };
        // Reads of 1..8 pages: flat latency (package-level parallelism) vs linear.
        let flat = PioDeviceCosts::new(4096, vec![100.0; 8], 200.0, 10.0, 20.0).unwrap();
        let linear = PioDeviceCosts::new(
            4096,
            (1..=8).map(|l| 100.0 * l as f64).collect(),
            200.0,
            10.0,
            20.0,
        )
        .unwrap();
        assert_eq!(choose(&flat, &w(0.0)).unwrap().leaf_segments, 8);
        assert_eq!(choose(&linear, &w(0.0)).unwrap().leaf_segments, 1);
        // Searches only: the OPQ takes memory from the pool and buys nothing.
        assert_eq!(choose(&flat, &w(0.0)).unwrap().opq_pages, 1);
        // Mostly updates: a larger OPQ shares node reads among more updates (Eq. 8). A
        // batch of bcnt entries is a contiguous key range of the whole OPQ, so the sharing
        // grows with the OPQ even when bcnt is far below the number of leaves.
        let heavy = PioWorkload {
            entries: 2_000_000,
            bcnt: 1_000_000,
            ..w(0.9)
        };
        assert!(choose(&flat, &heavy).unwrap().opq_pages >= 64);
        let big = choose(&flat, &w(0.9)).unwrap();
        assert!(big.opq_pages >= 64, "{big:?}");
        // Updates cost less with the larger OPQ than with one page, searches more.
        let one = cost(&flat, &w(0.9), big.leaf_segments, 1).unwrap();
        assert!(big.update_us < one.update_us && big.search_us >= one.search_us);
        let tiny = PioWorkload {
            memory_bytes: 4096 * 4,
            ..w(0.5)
        };
        assert!(choose(&flat, &tiny).is_err());
    }

    #[test]
    fn device_costs_convert_and_bad_numbers_are_refused() {
        let d = DeviceCosts::from_rates(4096, 20_000.0, 10_000.0, 2048.0, 1024.0).unwrap();
        let p = PioDeviceCosts::from_device_costs(&d, 4, 100_000.0, 50_000.0).unwrap();
        // Pr(L) = 50 + (L − 1) · 2; Pr' = 10, Pw' = 20.
        assert_eq!(p.read_us, vec![50.0, 52.0, 54.0, 56.0]);
        assert_eq!(
            (p.write_us, p.psync_read_us, p.psync_write_us),
            (100.0, 10.0, 20.0)
        );
        assert!(PioDeviceCosts::new(4096, vec![], 1.0, 1.0, 1.0).is_err());
        assert!(PioDeviceCosts::new(4096, vec![f64::NAN], 1.0, 1.0, 1.0).is_err());
        assert!(PioDeviceCosts::new(1000, vec![1.0], 1.0, 1.0, 1.0).is_err());
        let w = PioWorkload {
            insert_ratio: 1.5,
            entries: 10,
            memory_bytes: 1 << 20,
            bcnt: 1,
            pio_max: 64,
            segment_records: S_4K,
            node_entries: F_4K,
            opq_entry_bytes: OPQ_ENTRY,
        };
        assert!(cost(&p, &w, 1, 1).is_err());
    }
}
