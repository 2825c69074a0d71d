//! The bottom-up bulk load of a B+-tree of [`node`] pages: of plain nodes ([`build`]), of
//! B-link nodes from a stream of entries ([`build_blink`]), and their grouping
//! ([`group_sizes`]: how many items go into each node of a level).

use super::node::{self, Side};
use crate::durable::Pager;
use crate::error::{Error, Result};
use crate::io::PageId;
use crate::page::DATA_FILE;

/// Cut `n` items into groups of `per` (at least `min` each, at most `cap`), as a bulk load
/// does: full groups, with a short last group merged into or balanced with the one before.
pub(crate) fn group_sizes(n: usize, per: usize, min: usize, cap: usize) -> Vec<usize> {
    let mut sizes = vec![per; n / per];
    let rest = n % per;
    if rest > 0 {
        sizes.push(rest);
    }
    if sizes.len() >= 2 && rest > 0 && rest < min {
        let combined = sizes[sizes.len() - 2] + rest;
        sizes.truncate(sizes.len() - 2);
        if combined <= cap {
            sizes.push(combined);
        } else {
            sizes.push(combined / 2);
            sizes.push(combined - combined / 2);
        }
    }
    sizes
}

#[cfg(test)]
mod tests {
    use super::group_sizes;

    #[test]
    fn groups_respect_min_and_cap() {
        for n in 1..2000 {
            let s = group_sizes(n, 21, 15, 30);
            assert_eq!(s.iter().sum::<usize>(), n);
            if s.len() > 1 {
                assert!(s.iter().all(|&x| (15..=30).contains(&x)), "n={n} {s:?}");
            }
        }
    }
}

/// How full a bulk load makes the nodes of a level: `per` items a node, at least `min` and
/// at most `cap` (for internal nodes: separators; a node has one child more).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fill {
    pub per: usize,
    pub min: usize,
    pub cap: usize,
}

/// What [`build`] made: the root, the height (1: the root is a leaf), the leaves.
pub(crate) struct Built {
    pub root: PageId,
    pub height: u32,
    pub leaves: u64,
}

/// Build a tree bottom-up from sorted, distinct, non-empty `sorted` into fresh pages of
/// `pager`: leaves allocated in key order, each linked to the next, filled as `leaf` says;
/// then internal levels of `inner.per + 1` children (`inner.per` separators) until one
/// node is left, the root. The caller frees the empty tree's root first.
pub(crate) fn build(
    pager: &mut Pager,
    sorted: &[(u64, u64)],
    leaf: Fill,
    inner: Fill,
) -> Result<Built> {
    let sizes = group_sizes(sorted.len(), leaf.per, leaf.min, leaf.cap);
    let pages: Vec<PageId> = (0..sizes.len())
        .map(|_| pager.alloc_page())
        .collect::<Result<_>>()?;
    let mut level_nodes: Vec<(u64, PageId)> = Vec::with_capacity(pages.len());
    let mut off = 0;
    for (i, (&size, &pid)) in sizes.iter().zip(&pages).enumerate() {
        let chunk = &sorted[off..off + size];
        let link = pages.get(i + 1).copied().unwrap_or(node::NONE);
        pager.write(pid, |b| node::init(b, 0, link, chunk))?;
        level_nodes.push((chunk[0].0, pid));
        off += size;
    }
    let leaves = pages.len() as u64;
    let mut level = 0;
    while level_nodes.len() > 1 {
        level += 1;
        let sizes = group_sizes(
            level_nodes.len(),
            inner.per + 1,
            inner.min + 1,
            inner.cap + 1,
        );
        let mut upper = Vec::with_capacity(sizes.len());
        let mut off = 0;
        for size in sizes {
            let group = &level_nodes[off..off + size];
            let pid = pager.alloc_page()?;
            let seps: Vec<(u64, u64)> = group[1..].to_vec();
            pager.write(pid, |b| node::init(b, level, group[0].1, &seps))?;
            upper.push((group[0].0, pid));
            off += size;
        }
        level_nodes = upper;
    }
    Ok(Built {
        root: level_nodes[0].1,
        height: level + 1,
        leaves,
    })
}

/// [`build`] in B-link nodes (each node's right sibling and high key set: its level's next
/// node and that node's first key), from `n` sorted, distinct entries that `next` yields
/// one by one (from a slice, or from another tree's leaf chain read page by page through
/// the pager it is handed; `None` at the end). A leaf is written
/// once the next one's first key is known, so the stream is held one leaf at a time; each
/// level above is built from its nodes' first keys and pages (16 bytes a node of the level
/// below). The stream must yield exactly `n` entries: fewer or more is corruption of its
/// source.
pub(crate) fn build_blink(
    pager: &mut Pager,
    n: usize,
    mut next: impl FnMut(&mut Pager) -> Result<Option<(u64, u64)>>,
    leaf: Fill,
    inner: Fill,
) -> Result<Built> {
    let short = |got: usize| {
        Error::corruption(
            DATA_FILE,
            None,
            format!("bulk load of {n} entries: the source yields {got}"),
        )
    };
    let sizes = group_sizes(n, leaf.per, leaf.min, leaf.cap);
    let mut level_nodes: Vec<(u64, PageId)> = Vec::with_capacity(sizes.len());
    let mut held: Option<(PageId, Vec<(u64, u64)>)> = None;
    let mut taken = 0;
    for size in sizes {
        let mut chunk = Vec::with_capacity(size);
        while chunk.len() < size {
            match next(pager)? {
                Some(e) => chunk.push(e),
                None => break,
            }
        }
        taken += chunk.len();
        let Some(&(first, _)) = chunk.first().filter(|_| chunk.len() == size) else {
            return Err(short(taken));
        };
        let pid = pager.alloc_page()?;
        if let Some((prev, es)) = held.take() {
            pager.write(prev, |b| {
                node::init_blink(b, 0, node::NONE, Side::split(pid, first), &es)
            })?;
        }
        level_nodes.push((first, pid));
        held = Some((pid, chunk));
    }
    if next(pager)?.is_some() {
        return Err(short(taken + 1));
    }
    if let Some((last, es)) = held {
        pager.write(last, |b| node::init_blink(b, 0, node::NONE, Side::END, &es))?;
    }
    let leaves = level_nodes.len() as u64;
    let mut level = 0;
    while level_nodes.len() > 1 {
        level += 1;
        level_nodes = blink_level(pager, level, &level_nodes, inner)?;
    }
    let root = match level_nodes.first() {
        Some(&(_, root)) => root,
        None => {
            let root = pager.alloc_page()?;
            pager.write(root, |b| node::init_blink(b, 0, node::NONE, Side::END, &[]))?;
            root
        }
    };
    Ok(Built {
        root,
        height: level + 1,
        leaves: leaves.max(1),
    })
}

/// One internal level of B-link nodes above `below` (each node's first key and page):
/// returns its own nodes' first keys and pages.
fn blink_level(
    pager: &mut Pager,
    level: u32,
    below: &[(u64, PageId)],
    inner: Fill,
) -> Result<Vec<(u64, PageId)>> {
    let sizes = group_sizes(below.len(), inner.per + 1, inner.min + 1, inner.cap + 1);
    let pages: Vec<PageId> = (0..sizes.len())
        .map(|_| pager.alloc_page())
        .collect::<Result<_>>()?;
    let mut upper = Vec::with_capacity(sizes.len());
    let mut off = 0;
    for (i, (&size, &pid)) in sizes.iter().zip(&pages).enumerate() {
        let group = &below[off..off + size];
        off += size;
        let side = match (pages.get(i + 1), below.get(off)) {
            (Some(&right), Some(&(high, _))) => Side::split(right, high),
            _ => Side::END,
        };
        pager.write(pid, |b| {
            node::init_blink(b, level, group[0].1, side, &group[1..])
        })?;
        upper.push((group[0].0, pid));
    }
    Ok(upper)
}
