//! Engines whose own cost model picks their parameters: the model is run as the engine
//! runs it at creation (`flashix bench` tunes the same way), and its terms are the costs.

use super::super::{Fidelity, Input, KindCosts, OpCost};
use super::{leaves_spanned, U};
use crate::units::format_size;
use anyhow::{Context, Result};
use flashix::cost::bulk::{self, BulkModelInput, BulkTuning};
use flashix::cost::fdtree::{self, FdTreeWorkload};
use flashix::cost::pio::{self, PioWorkload};
use flashix::cost::Tuning;
use flashix::{FdTreeOptions, LsmOptions, PioOptions, PIO_OPQ_ENTRY_BYTES};

/// FD-tree (`lsm == false`) or LSM-tree: the FD-tree paper's model (App. C) chooses `k` and
/// the levels `l` for `N`, the search share and the pool, with the head tree (LSM: C0) at
/// half its bytes as the engines give it (`Settings::fdtree_model_workload`).
/// - search: one random page read per sorted run not in the pool (fractional cascading:
///   one page a run), the pool caching the head tree, then the runs from the top
///   ([`super::cached_from_root`]); runs above the last are taken half full on average
///   (merges empty them in turn), the last holds the rest. Eq. 10 instead caches
///   `log_k(M / |L0|)` levels, a fraction of a level's log-size, which overstates the
///   caching of a partly cached level (at 400,000 entries in 2 MiB, 0.42 reads where a
///   quarter of the run's pages fit). The LSM-tree also descends each component's inner
///   levels, taken as cached while all components' inner pages fit in half the pool, else
///   one more read per component;
/// - insert and update: `t_headtree + t_merge`, Algorithm 5's entries read and written per
///   insert in sequential I/O, over `f` entries a page;
/// - delete: the FD-tree searches first (Algorithm 4) then inserts a filter entry; the
///   LSM-tree inserts a blind tombstone;
/// - range of `len`: one request per sorted run of `1 + len/f` pages (at most the run's
///   pages): the scan reads every source in batches of the same size, whatever the run's
///   share of the range (the engines' counters show one request per run, each about that
///   long, even for a run that holds little of the range);
/// - bulk of `b`: `b` inserts (both engines insert a bulk key by key into a non-empty
///   index); range delete: one range tombstone, carried down by the merges like one entry.
pub(super) fn fdtree(input: &Input, lsm: bool) -> Result<KindCosts> {
    let dev = &input.device;
    let page = input.page();
    let f = FdTreeOptions::entries_per_page(page);
    let head = if lsm {
        LsmOptions::default().c0_bytes
    } else {
        FdTreeOptions::default().head_tree_bytes
    };
    let mut tune =
        FdTreeWorkload::new(input.tuning_entries(), input.mix.search_fraction(), page, f);
    tune.head_tree_bytes = head / 2;
    tune.buffer_bytes = input.budget;
    let k = fdtree::choose(&dev.costs, &tune)
        .context("the FD-tree cost model")?
        .k;
    // The k chosen at creation, at the entries the index holds now.
    let w = FdTreeWorkload {
        entries: input.entries,
        ..tune
    };
    let c = fdtree::evaluate(&dev.costs, &w, k, fdtree::levels_for(&w, k))?;
    let sim = fdtree::simulate_merges(&w, c.k, c.levels)?;
    let ff = f as f64;
    let runs = c.levels.saturating_sub(1).max(1);

    // Run sizes: half of the capacity k^i |L0| above the last run, the last the rest.
    let l0 = w.head_tree_entries();
    let n = input.entries as f64;
    let mut sizes = Vec::new();
    let mut left = n;
    for i in 1..=runs {
        let size = if i == runs {
            left
        } else {
            (l0 * (c.k as f64).powi(i as i32) / 2.0).min(left)
        };
        sizes.push(size.max(0.0));
        left -= size.max(0.0);
    }
    // Runs from the top (the last run is level 0 of `cached_from_root`).
    let run_pages: Vec<f64> = sizes.iter().rev().map(|s| (s / ff).ceil()).collect();
    let head_pages = (head / page as u64) as f64;
    let miss = super::cached_from_root(&run_pages, 1.0, input.budget_pages() - head_pages);
    let mut search = dev.random_reads(miss.iter().sum());
    if lsm {
        let inner_pages: f64 = sizes.iter().map(|s| s / ff / (ff * U)).sum();
        if inner_pages > input.budget_pages() / 2.0 {
            search = search.plus(dev.random_reads(f64::from(runs)));
        }
    }
    let insert = dev
        .sequential(
            sim.entries_read / ff / sim.inserts,
            sim.entries_written / ff / sim.inserts,
        )
        .plus(dev.sequential(0.0, 1.0 / ff));
    let delete = if lsm { insert } else { search.plus(insert) };
    let len = input.mix.range_len as f64;
    let range = sizes
        .iter()
        .map(|s| dev.requests(1.0, (1.0 + len / ff).min((s / ff).ceil().max(1.0))))
        .fold(OpCost::default(), OpCost::plus)
        .with_keys(len);
    let b = input.mix.bulk_keys as f64;
    Ok(KindCosts {
        params: format!("k={} levels={}", c.k, c.levels),
        fidelity: Fidelity::Paper,
        search,
        insert,
        delete,
        update: insert,
        range,
        bulk: insert.times(b).with_keys(b),
        range_delete: insert,
    })
}

/// PIO B-tree: its paper's model ([`flashix::cost::pio::choose`], Eq. 10) chooses the leaf
/// size `L` (segments of `s` records) and the OPQ (`Q` entries) for the budget, as the
/// engine does at creation (`PioOptions::resolved`).
/// - search: Eq. 7's search term, `Σ_ℓ miss(ℓ)` inner reads plus `miss(0)` reads of an
///   `L`-page leaf;
/// - insert, delete, update (all through the OPQ): Eq. 7's update term, with the reads per
///   update `r(ℓ)` of Eq. 8 (distinct nodes a batch meets), the last segment written per
///   leaf met, and the amortised leaf shrink;
/// - range of `len`: the inner path, then `len / (s·L·U) + 1` leaves read in one psync
///   batch (parallel range search), past the pool (the engine's counters show about one
///   page per leaf of the range even with part of the leaves in the pool);
/// - bulk of `b` consecutive keys: they share one path: its missing nodes read and
///   `b / s + 1` segments written, in psync groups of the bulks a batch of `bcnt` holds;
/// - range delete of `len`: a queued OPQ range tombstone, applied at a batch update: the
///   last segment of each leaf it spans read (unless cached) and written, in psync groups
///   (in a run shorter than an OPQ's fill it is never applied: the measurement is lower).
pub(super) fn pio(input: &Input) -> Result<KindCosts> {
    let dev = &input.device;
    let page = input.page();
    let o = PioOptions::default();
    let s = PioOptions::leaf_segment_records(page);
    let w = PioWorkload {
        insert_ratio: 1.0 - input.mix.search_fraction(),
        entries: input.entries,
        memory_bytes: input.budget,
        bcnt: u64::from(o.bcnt.max(1)),
        pio_max: u64::from(o.pio_max.max(1)),
        segment_records: s,
        node_entries: PioOptions::internal_node_entries(page),
        opq_entry_bytes: PIO_OPQ_ENTRY_BYTES,
    };
    let chosen = pio::choose(
        &dev.pio,
        &PioWorkload {
            entries: input.tuning_entries(),
            ..w
        },
    )
    .context("the PIO B-tree cost model")?;
    // The leaf and OPQ chosen at creation, at the entries the index holds now.
    let c = pio::cost(&dev.pio, &w, chosen.leaf_segments, chosen.opq_pages)?;
    let l = c.leaf_segments as f64;
    let miss: Vec<f64> = c.coverage.iter().map(|v| 1.0 - v).collect();
    let inner: f64 = miss.iter().skip(1).sum();
    let search = OpCost::io(inner + miss[0] * l, 0.0, c.search_us);

    let queued = c.opq_pages as f64 * page as f64 / PIO_OPQ_ENTRY_BYTES as f64;
    let batch = (w.bcnt as f64).min(queued);
    let r: Vec<f64> = c
        .nodes
        .iter()
        .map(|&n| pio::reads_per_update(queued, batch, n))
        .collect();
    let shrink = 1.0 / ((s as f64) * l * (1.0 - U)).max(1.0);
    let update = OpCost::io(
        miss.iter().zip(&r).map(|(m, r)| m * r).sum::<f64>() + l * shrink,
        r[0] + l * shrink,
        c.update_us,
    );

    let leaf_entries = s as f64 * l * U;
    let len = input.mix.range_len;
    let leaves = leaves_spanned(len, leaf_entries);
    let range = dev
        .random_reads(inner)
        .plus(dev.psync(leaves * l, 0.0, leaves))
        .with_keys(len as f64);
    let b = input.mix.bulk_keys as f64;
    let group = (batch / b).clamp(1.0, w.pio_max as f64);
    let bulk = dev
        .psync(inner + miss[0], b / s as f64 + 1.0, group)
        .with_keys(b);
    let dl = input.mix.range_delete_len;
    let spanned = leaves_spanned(dl, leaf_entries);
    let range_delete = dev
        .psync(spanned * miss[0], spanned, spanned)
        .with_keys(dl as f64);
    Ok(KindCosts {
        params: format!(
            "leaf_segments={} opq={} height={}",
            c.leaf_segments,
            format_size(c.opq_pages * page as u64),
            c.height
        ),
        fidelity: Fidelity::Paper,
        search,
        insert: update,
        delete: update,
        update,
        range,
        bulk,
        range_delete,
    })
}

/// Memory of one range-index entry of the bulk index (its `index::ENTRY_MEMORY`).
const BULK_RANGE_ENTRY_BYTES: u64 = 64;
/// Memory of one differential-layer entry of the bulk index (`DELTA_ENTRY_MEMORY`).
const BULK_DELTA_ENTRY_BYTES: u64 = 40;
/// The bulk index's default differential layer: a quarter of the budget, at most this.
const BULK_DELTA_MAX_BYTES: u64 = 256 << 10;

/// Bulk index: M as the engine chooses it ([`flashix::cost::bulk::choose_m`] with the
/// bench's tuning: bulks of N/9 keys in elementary bulks of 100, the range index within
/// half of what the differential layer leaves of the budget; the largest M when none fits).
/// Tuples of 16 bytes, `t = (B − 32) / 16` a page; loads and sweeps write ranges of M
/// tuples (`⌈M / t⌉` pages; random inserts grow them towards 2M − 1 between sweeps); the
/// pool caches the share `(P − range index − delta) / (N / t)` of the main file.
/// - search: the key's range read whole (one request), unless cached;
/// - insert, delete, update: into the differential layer of `D = delta / 40` entries, swept
///   into the ranges when full: Theorem 5.2 over the expected affected ranges
///   `R = n_r(1 − (1 − 1/n_r)^D)`, divided by `D`;
/// - bulk of `b` consecutive keys: the same sweep with elementary bulks of `b`, `b / D` of
///   it per bulk;
/// - range of `len`: Theorem 5.1; range delete: Theorem 5.4 with the neighbour read (the
///   worst case: at most three range reads and writes whatever `len`).
pub(super) fn bulk(input: &Input) -> Result<KindCosts> {
    let dev = &input.device;
    let page = input.page();
    let tpp = ((page as u64).saturating_sub(32) / 16).max(1);
    let delta = (input.budget / 4).min(BULK_DELTA_MAX_BYTES);
    let left = input.budget.saturating_sub(delta);
    let model_input = BulkModelInput {
        page_size: page,
        tuple_bytes: 16,
        tuples_per_page: tpp,
        range_entry_bytes: BULK_RANGE_ENTRY_BYTES,
        range_index_budget_bytes: left / 2,
    };
    let tuning = Tuning {
        device: dev.costs,
        expected_entries: input.tuning_entries(),
        search_fraction: input.mix.search_fraction(),
        pio_device: None,
        bulk: Some(BulkTuning {
            bulk_keys: None,
            elementary_bulk_keys: None,
            device: Some(dev.bulk),
        }),
    };
    let m = bulk::choose_m(&tuning, &model_input)
        .map(|c| u64::from(c.m))
        .unwrap_or(tpp * bulk::MAX_PAGES);
    let c = &dev.bulk;
    let mf = m as f64;
    let t = tpp as f64;
    let n = input.entries as f64;
    let n_r = (n / mf).max(1.0);
    let range_pages = (mf / t).ceil().max(1.0);
    let main_pages = (n / t).max(1.0);
    let reserved = n_r * BULK_RANGE_ENTRY_BYTES as f64 + delta as f64;
    let pool_pages = ((input.budget as f64 - reserved) / page as f64).max(0.0);
    let miss = 1.0 - (pool_pages / main_pages).min(1.0);
    let search = dev.requests(miss, range_pages);

    let d = (delta / BULK_DELTA_ENTRY_BYTES).max(1) as f64;
    let sweep = |elementary: f64| {
        let r = bulk::expected_ranges(n_r, d, elementary);
        OpCost::io(
            r * (2.0 * mf - 1.0) / t,
            (r * (2.0 * mf - 1.0) + d) / t,
            bulk::bulk_insert_us(c, mf, r, d, 16.0),
        )
    };
    let single = sweep(1.0).times(1.0 / d);
    let b = input.mix.bulk_keys as f64;
    let bulk_op = sweep(b).times(b / d).with_keys(b);
    let len = input.mix.range_len as f64;
    let range = OpCost::io(
        (len / mf + 2.0) * mf / t,
        0.0,
        bulk::range_search_us(c, mf, len, 16.0),
    )
    .with_keys(len);
    let range_delete = OpCost::io(
        (6.0 * mf - 3.0) / t,
        (4.0 * mf - 4.0) / t,
        bulk::range_delete_us(c, mf, 16.0),
    );
    Ok(KindCosts {
        params: format!("m={m} ({} pages) delta={}", m / tpp, format_size(delta)),
        fidelity: Fidelity::Paper,
        search,
        insert: single,
        delete: single,
        update: single,
        range,
        bulk: bulk_op,
        range_delete,
    })
}
