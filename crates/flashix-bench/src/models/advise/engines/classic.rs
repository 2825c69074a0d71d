//! B+-tree-shaped structures over the buffer pool: the B+-tree (simple model), BFTL and the
//! LA-tree (rough models of their papers' cost shapes).

use super::super::{Fidelity, Input, KindCosts};
use super::{cached_from_root, leaves_spanned, levels, node_capacity, U};
use flashix::{BftlOptions, LaTreeOptions};

/// B+-tree (in place, LRU pool): `f = (B − 32) / 16` entries a node, levels of
/// [`levels`], the pool caching from the root ([`cached_from_root`]); `inner = Σ_{ℓ≥1}
/// miss(ℓ)`, `leaf = miss(0)`.
/// - search: `inner + leaf` random page reads;
/// - insert, delete, update: the search, then one random write per dirty leaf evicted
///   (`leaf` per operation: every miss evicts one page, and the pool is all dirty leaves
///   under updates); an insert adds a split's three page writes every `f(1 − U)` inserts;
/// - range of `len`: `inner + (len / (f·U) + 1)·leaf` reads (the leaf chain);
/// - bulk of `b` consecutive keys: one path read, `(1 + b / (f·U))·leaf` writes;
/// - range delete of `len`: the range's reads, and a write per leaf it spans.
pub(super) fn btree(input: &Input) -> KindCosts {
    let dev = &input.device;
    let f = node_capacity(input.page() as u64);
    let nodes = levels(f, f, input.entries);
    let miss = cached_from_root(&nodes, 1.0, input.budget_pages());
    let inner: f64 = miss.iter().skip(1).sum();
    let leaf = miss[0];
    let leaf_entries = f as f64 * U;
    let search = dev.random_reads(inner + leaf);
    let write_back = dev.random_writes(leaf);
    let split = dev.random_writes(3.0 / (f as f64 * (1.0 - U)));
    let change = search.plus(write_back);
    let len = input.mix.range_len;
    let range = dev
        .random_reads(inner + leaves_spanned(len, leaf_entries) * leaf)
        .with_keys(len as f64);
    let b = input.mix.bulk_keys;
    let bulk = search
        .plus(dev.random_writes(leaves_spanned(b, leaf_entries) * leaf))
        .with_keys(b as f64);
    let dl = input.mix.range_delete_len;
    let spanned = leaves_spanned(dl, leaf_entries);
    let range_delete = dev
        .random_reads(inner + spanned * leaf)
        .plus(dev.random_writes(spanned * leaf))
        .with_keys(dl as f64);
    KindCosts {
        params: format!(
            "height={} leaves={:.0} leaves_cached={:.0}%",
            nodes.len(),
            nodes[0],
            (1.0 - leaf) * 100.0
        ),
        fidelity: Fidelity::Simple,
        search,
        insert: change.plus(split),
        delete: change,
        update: change,
        range,
        bulk,
        range_delete,
    }
}

/// BFTL (rough): logical nodes of `F = (node_bytes − 32) / 16` entries made of 17-byte
/// index units, `u = (B − 32) / 17` a page; a node's list holds its compacted form, `cp =
/// ⌈F·U·17 / (B − 32)⌉` pages (the scattered units a list gains before compaction, up to
/// `c = full + 3` pages, are ignored); the pool caches unit pages from the root down.
/// - search: `Σ_ℓ miss(ℓ)·cp` random reads (a node read reads its list);
/// - insert, delete, update: the search (BFTL descends to the leaf), `1/u` of a commit
///   page, and compaction: each commit of `res = F` units appends a page to the lists of
///   the `n_0(1 − e^{−res/n_0})` leaves it touches, a list is compacted after `c − cp`
///   appends, reading `c·miss(0)` pages and writing `cp`;
/// - range of `len`: leaves are not chained, so each of the `len/(F·U) + 1` leaves is a
///   new descent;
/// - bulk of `b` consecutive keys: one descent, `b/u` commit pages, one list append;
/// - range delete of `len`: the range's reads, then the deletes' units.
pub(super) fn bftl(input: &Input) -> KindCosts {
    let dev = &input.device;
    let o = BftlOptions::default();
    let page = input.page() as f64;
    let fanout = node_capacity(o.node_bytes);
    let units_per_page = ((page - 32.0) / 17.0).floor().max(1.0);
    let cp = (fanout as f64 * U * 17.0 / (page - 32.0)).ceil().max(1.0);
    let full = ((fanout + 1) as f64 * 17.0 / (page - 32.0)).ceil();
    let c = o.c.map_or(full + 3.0, f64::from);
    let res = o.reservation_units.map_or(fanout as f64, f64::from);
    let nodes = levels(fanout, fanout, input.entries);
    let miss = cached_from_root(&nodes, cp, input.budget_pages());
    let path: f64 = miss.iter().sum::<f64>() * cp;
    let search = dev.random_reads(path);
    let leaves = nodes[0];
    let appends = leaves * (1.0 - (-res / leaves.max(1.0)).exp()) / res;
    let compaction = dev
        .random_reads(c * miss[0])
        .plus(dev.random_writes(cp))
        .times(1.0 / (c - cp).max(1.0));
    let change = search
        .plus(dev.random_writes(1.0 / units_per_page))
        .plus(compaction.times(appends));
    let leaf_entries = fanout as f64 * U;
    let len = input.mix.range_len;
    let range = search
        .times(leaves_spanned(len, leaf_entries))
        .with_keys(len as f64);
    let b = input.mix.bulk_keys as f64;
    let bulk = search
        .plus(dev.random_writes(b / units_per_page))
        .plus(compaction)
        .with_keys(b);
    let dl = input.mix.range_delete_len;
    let range_delete = search
        .times(leaves_spanned(dl, leaf_entries))
        .plus(dev.random_writes(dl as f64 / units_per_page))
        .plus(compaction.times(leaves_spanned(dl, leaf_entries)))
        .with_keys(dl as f64);
    KindCosts {
        params: format!(
            "node={} c={c:.0} reservation={res:.0} list~{cp:.0} pages",
            crate::units::format_size(o.node_bytes)
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

/// LA-tree (rough): a B+-tree of `f = (B − 32) / 16` entries a node with buffers at levels
/// 1, 1 + K, ... and the root (`nb` buffered levels on a path), messages of 24 bytes, `mp
/// = (B − 32) / 24` a page. ADAPT empties a level-1 buffer once the lookups since its last
/// emptying have scanned more pages than emptying costs; with `r` lookups per message
/// arriving (the mix's searches over its writes), a buffer of `m` messages has cost its
/// lookups `r·m² / (2·mp)` pages and emptying costs `2·C(1 − e^{−m/C})` (reading and
/// writing the leaves it touches among its `C = f·U` children), so it is emptied at the
/// `E` where they meet (at most `max_buffer_pages·mp`).
/// - insert, delete, update: the message written and read once per buffered level
///   (sequential), and `C(1 − e^{−E/C}) / E` leaf reads and writes (times `miss(0)`);
/// - search: the B+-tree's reads plus half a buffer (`E / (2·mp)` pages) per buffered level;
/// - range: the B+-tree's scan plus the buffers on the path; bulk: one insert per key
///   (thesis §6.1: no bulk algorithm); range delete: a scan, then a delete per key.
pub(super) fn latree(input: &Input) -> KindCosts {
    let dev = &input.device;
    let o = LaTreeOptions::default();
    let page = input.page() as f64;
    let f = node_capacity(input.page() as u64);
    let nodes = levels(f, f, input.entries);
    let miss = cached_from_root(&nodes, 1.0, input.budget_pages());
    let inner: f64 = miss.iter().skip(1).sum();
    let height = nodes.len();
    let k = o.k.max(1) as usize;
    let buffered = (1..height.saturating_sub(1)).step_by(k).count() + usize::from(height >= 2);
    let nb = buffered as f64;
    let mp = ((page - 32.0) / 24.0).floor().max(1.0);
    let children = f as f64 * U;
    let m_max = o.max_buffer_pages.max(1) as f64 * mp;
    let writes_share = 1.0 - input.mix.search_fraction();
    let r = if writes_share > 0.0 {
        input.mix.search_fraction() / writes_share
    } else {
        f64::INFINITY
    };
    let empty_cost = |m: f64| 2.0 * children * (1.0 - (-m / children).exp());
    let mut e = 1.0;
    while e < m_max && r * e * e / (2.0 * mp) < empty_cost(e) {
        e *= 1.05;
    }
    let e = e.min(m_max);
    let touched = children * (1.0 - (-e / children).exp()) / e;
    let change = dev
        .sequential(nb / mp, nb / mp)
        .plus(dev.random_reads(touched * miss[0]))
        .plus(dev.random_writes(touched * miss[0]));
    let buffers = nb * e / (2.0 * mp);
    let search = dev.random_reads(inner + miss[0] + buffers);
    let leaf_entries = f as f64 * U;
    let len = input.mix.range_len;
    let range = dev
        .random_reads(inner + leaves_spanned(len, leaf_entries) * miss[0] + buffers)
        .with_keys(len as f64);
    let b = input.mix.bulk_keys as f64;
    let dl = input.mix.range_delete_len;
    let range_delete = dev
        .random_reads(inner + leaves_spanned(dl, leaf_entries) * miss[0] + buffers)
        .plus(change.times(dl as f64))
        .with_keys(dl as f64);
    KindCosts {
        params: format!(
            "K={} buffered_levels={buffered} max_buffer={} pages emptied_at~{e:.0} messages",
            o.k, o.max_buffer_pages
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
