//! What a check of a tree of [`node`] pages verifies of each node, whatever the tree
//! (the B+-tree's and the LA-tree's `check_integrity`): the node is an allocated page of
//! the expected level, its keys ascend and lie in the range its parent gives it; and the
//! ranges its children get in turn.

use super::node;
use crate::durable::Pager;
use crate::error::{Error, Result};
use crate::io::PageId;

/// A node as a check read it: its link (a leaf's next leaf, an internal node's first
/// child) and its entries (a leaf's pairs, an internal node's separators and children).
pub(crate) struct Checked {
    pub link: u64,
    pub entries: Vec<(u64, u64)>,
    /// A B-link node's place in its level (`None` for a plain node).
    pub side: Option<node::Side>,
}

/// Read node `pid`, which must be allocated, at `level`, with ascending keys in
/// `[lo, hi)`; `bad` makes the error that names the tree's invariant.
pub(crate) fn read_node(
    pager: &mut Pager,
    pid: PageId,
    level: u32,
    (lo, hi): (Option<u64>, Option<u64>),
    bad: fn(PageId, String) -> Error,
) -> Result<Checked> {
    let allocated = {
        let alloc = pager.allocator();
        pid < alloc.high_water() && !alloc.is_free(pid)
    };
    if !allocated {
        return Err(bad(pid, "reachable page is not allocated".into()));
    }
    let (leaf, lvl, link, es, side) = pager.read(pid, |b| {
        (
            node::is_leaf(b),
            node::level(b),
            node::link(b),
            node::entries(b),
            node::side(b),
        )
    })?;
    if lvl != level || leaf != (level == 0) {
        return Err(bad(
            pid,
            format!("node level {lvl} (leaf: {leaf}), expected {level}"),
        ));
    }
    for pair in es.windows(2) {
        if pair[0].0 >= pair[1].0 {
            return Err(bad(
                pid,
                format!("keys out of order: {} then {}", pair[0].0, pair[1].0),
            ));
        }
    }
    for &(k, _) in &es {
        if lo.is_some_and(|l| k < l) || hi.is_some_and(|h| k >= h) {
            return Err(bad(
                pid,
                format!("key {k} outside the parent's range {lo:?}..{hi:?}"),
            ));
        }
    }
    Ok(Checked {
        link,
        entries: es,
        side,
    })
}

/// The children of an internal node whose keys lie in `[lo, hi)`, each with its range:
/// child slot 0 (the link) covers `[lo, key0)`, slot `j` covers `[key(j-1), key(j))`, the
/// last `[key(last), hi)`.
pub(crate) fn child_ranges(
    n: &Checked,
    lo: Option<u64>,
    hi: Option<u64>,
) -> Vec<(PageId, Option<u64>, Option<u64>)> {
    let mut out = Vec::with_capacity(n.entries.len() + 1);
    let mut child_lo = lo;
    let mut child = n.link;
    for &(sep, next_child) in &n.entries {
        out.push((child, child_lo, Some(sep)));
        child_lo = Some(sep);
        child = next_child;
    }
    out.push((child, child_lo, hi));
    out
}
