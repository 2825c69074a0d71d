//! Structures that log changes instead of rewriting nodes (rough models): the FBX-tree's
//! leaf log lists, and the in-page logging of the IPL and d-IPL B+-trees. Their
//! file-emulated NAND's erases and the engines' CPU work on log records are not modelled.

use super::super::{Fidelity, Input, KindCosts};
use super::{cached_from_root, leaves_spanned, levels, node_capacity, U};
use crate::runner::IPL_ERASE_BLOCK_BYTES;
use flashix::{CleanPolicy, DiplOptions, FbxOptions, IplOptions};

/// Bytes of one log sector of the in-page logging kit.
const SECTOR_BYTES: f64 = 512.0;
/// Bytes a logged insert or delete takes in a log sector (a record of key, value and
/// kind, rounded up; rough).
const LOG_RECORD_BYTES: f64 = 20.0;

/// FBX-tree (rough): leaves of `lo = 100` entries (at `U`), inner nodes of `min(500, (B −
/// 32) / 17)`; 17-byte log units, `u = (B − 32) / 17` a log page. A log page collects the
/// units of one of `2^8` key clusters, i.e. of `lpc = n_0 / 256` leaves, so a leaf gains a
/// list page every `g = max(1, u / lpc)` updates. With `r` lookups per update of a leaf,
/// Accumulate-and-Clean (threshold `T`) cleans a leaf after `j* = √(2gT / r)` updates (the
/// extra pages its lookups read reach `T`), at most `lo(1 − U)` (where a reorganisation
/// rebuilds it); a lookup meets a list of `1 + j / (2g)` pages on average.
/// - search: the inner path's misses and the list, read in one batch;
/// - insert, delete, update: the inner path to the leaf's parent, `1/u` of an appended log
///   page, one compact page per clean (`1 / j`), and a reorganisation's list read and two
///   page writes per `lo(1 − U)` updates when the lists grow that long;
/// - range of `len`: the lists of its `len/(lo·U) + 1` leaves in one batch; bulk of `b`
///   consecutive keys: `b` updates of one leaf; range delete: a scan, then a delete per key.
pub(super) fn fbx(input: &Input) -> KindCosts {
    let dev = &input.device;
    let o = FbxOptions::default();
    let page = input.page() as f64;
    let unit_capacity = ((page - 32.0) / 17.0).floor().max(4.0);
    let leaf_order = o.leaf_order.map_or(100.0, f64::from).min(unit_capacity);
    let inner_order = o.inner_order.map_or(500.0, f64::from).min(unit_capacity);
    let nodes = levels(leaf_order as u64, inner_order as u64, input.entries);
    let log_buffer = o
        .log_buffer_pages
        .map_or((input.budget_pages() / 4.0).clamp(1.0, 256.0), f64::from);
    let inner_nodes = &nodes[1..];
    let miss = cached_from_root(inner_nodes, 1.0, input.budget_pages() - log_buffer);
    let inner: f64 = miss.iter().sum();
    let leaves = nodes[0];
    let clusters = 2f64.powi(o.cluster_bits.min(30) as i32);
    let per_cluster = (leaves / clusters).max(1.0);
    let g = (unit_capacity / per_cluster).max(1.0);
    let threshold = match o.clean {
        CleanPolicy::AccumulateClean { threshold } => f64::from(threshold),
        _ => 64.0,
    };
    let sf = input.mix.search_fraction();
    let updates = 1.0 - sf;
    let reorg_at = (leaf_order * (1.0 - U)).max(1.0);
    let cleaned_at = if sf > 0.0 {
        (2.0 * g * threshold * updates / sf).sqrt()
    } else {
        f64::INFINITY
    };
    let j = cleaned_at.min(reorg_at).max(1.0);
    let list = 1.0 + j / (2.0 * g);
    let search = dev
        .random_reads(inner)
        .plus(dev.psync(list, 0.0, list.max(1.0)));
    let mut change = dev
        .random_reads(inner)
        .plus(dev.sequential(0.0, 1.0 / unit_capacity));
    if cleaned_at < reorg_at {
        change = change.plus(dev.sequential(0.0, 1.0 / j));
    } else {
        let full_list = 1.0 + reorg_at / g;
        change = change.plus(
            dev.psync(full_list, 0.0, full_list)
                .plus(dev.sequential(0.0, 2.0))
                .times(1.0 / reorg_at),
        );
    }
    let len = input.mix.range_len;
    let spanned = leaves_spanned(len, leaf_order * U);
    let range = dev
        .random_reads(inner)
        .plus(dev.psync(spanned * list, 0.0, spanned * list))
        .with_keys(len as f64);
    let b = input.mix.bulk_keys as f64;
    let dl = input.mix.range_delete_len;
    let spanned_dl = leaves_spanned(dl, leaf_order * U);
    let range_delete = dev
        .random_reads(inner)
        .plus(dev.psync(spanned_dl * list, 0.0, spanned_dl * list))
        .plus(change.times(dl as f64))
        .with_keys(dl as f64);
    KindCosts {
        params: format!(
            "leaf_order={leaf_order:.0} clean=AC({threshold:.0}) log_buffer={log_buffer:.0} \
             pages list~{list:.1} pages"
        ),
        fidelity: Fidelity::Rough,
        search,
        insert: change,
        delete: change,
        update: change,
        range,
        bulk: change.times(b).with_keys(b),
        range_delete,
    }
}

/// IPL (`dynamic == false`) or d-IPL B+-tree (rough), on the NAND `flashix bench` lays over
/// the file: erase blocks of 128 KiB (`ppb` pages), nodes of `np = node_bytes / B` pages
/// and `F = (node_bytes − 32) / 16` entries, `budget / node_bytes` node frames caching
/// from the root, log sectors of 512 bytes (`spp = B / 512` a page).
/// - IPL: a block holds `nb = (ppb − lp) / np` nodes and a fixed log area of `lp` pages
///   (`S = lp·spp` sectors); a node read reads its `np` pages and the written half of the
///   log area on average; a full log area merges the block: all its pages read, its nodes
///   written, every `S` sector writes.
/// - d-IPL: a block holds on average `nb = U·(ppb / np − 1)` nodes and the rest of it is
///   log (`S = (ppb − nb·np)·spp` sectors); a node read reads its `np` pages and one page
///   of its log sectors (LLSD/LSLM); a full log area cleanses the block (same I/O as a
///   merge).
/// - search: `Σ_ℓ miss(ℓ)` node reads;
/// - insert, delete, update: the search, then one log-sector write per dirty leaf evicted
///   (`miss(0)`), each carrying `1/S` of a merge or cleansing;
/// - range of `len`: node reads of the `len/(F·U) + 1` leaves; bulk of `b` consecutive
///   keys: one path, `b·20 / 512` sectors; range delete: a scan, then those sectors.
pub(super) fn ipl(input: &Input, dynamic: bool) -> KindCosts {
    let dev = &input.device;
    let page = input.page() as f64;
    let node_bytes = if dynamic {
        DiplOptions::default().node_bytes
    } else {
        IplOptions::default().node_bytes
    };
    let np = (node_bytes as f64 / page).max(1.0);
    let ppb = (IPL_ERASE_BLOCK_BYTES as f64 / page).max(np + 1.0);
    let spp = (page / SECTOR_BYTES).max(1.0);
    let fanout = node_capacity(node_bytes);
    let nodes = levels(fanout, fanout, input.entries);
    let frames = (input.budget / node_bytes.max(1)) as f64;
    let miss = cached_from_root(&nodes, 1.0, frames);
    let (nb, log_pages, log_read) = if dynamic {
        let nb = U * ((ppb / np).floor() - 1.0).max(1.0);
        (nb, (ppb - nb * np).max(1.0), 1.0)
    } else {
        let lp = (IplOptions::default().log_area_bytes as f64 / page).max(1.0);
        (((ppb - lp) / np).floor().max(1.0), lp, lp / 2.0)
    };
    let sectors = log_pages * spp;
    let node_read = dev.requests(1.0, np).plus(dev.random_reads(log_read));
    let path: f64 = miss.iter().sum();
    let search = node_read.times(path);
    let merge = dev
        .requests(nb, np)
        .plus(dev.random_reads(log_pages))
        .plus(dev.random_writes(nb * np));
    let sector = dev.random_writes(1.0).plus(merge.times(1.0 / sectors));
    let change = search.plus(sector.times(miss[0]));
    let leaf_entries = fanout as f64 * U;
    let inner: f64 = miss.iter().skip(1).sum();
    let len = input.mix.range_len;
    let range = node_read
        .times(inner + leaves_spanned(len, leaf_entries) * miss[0])
        .with_keys(len as f64);
    let b = input.mix.bulk_keys as f64;
    let per_sector = SECTOR_BYTES / LOG_RECORD_BYTES;
    let bulk = search
        .plus(sector.times((b / per_sector).ceil()))
        .with_keys(b);
    let dl = input.mix.range_delete_len;
    let range_delete = node_read
        .times(inner + leaves_spanned(dl, leaf_entries) * miss[0])
        .plus(sector.times((dl as f64 / per_sector).ceil()))
        .with_keys(dl as f64);
    KindCosts {
        params: format!(
            "node={} log_area~{log_pages:.0} pages/block frames={frames:.0}",
            crate::units::format_size(node_bytes)
        ),
        fidelity: Fidelity::Rough,
        search,
        insert: change,
        delete: change,
        update: change,
        range,
        bulk,
        range_delete,
    }
}
