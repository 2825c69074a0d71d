//! The leaf-level steps a B+-tree of [`node`] pages takes on an overfull or underfull
//! leaf, whatever the tree above it (the B+-tree's and the LA-tree's): a split into two
//! leaves linked in key order, and the repair of an underfull leaf with its sibling by
//! redistribution or merge. The parent's separators change here; the levels above are the
//! caller's ([`super::spine`]).

use super::node;
use crate::durable::Pager;
use crate::error::Result;
use crate::io::PageId;

/// Split the full leaf `leaf`, whose entries with the new one are `es`, whose link is
/// `link` and whose place in its level is `side` (a B-link leaf's; `None` for a plain
/// one): the lower half stays, the upper half moves to a new right sibling between it and
/// `link`, written first, which takes over `side`. Returns the separator for the parent
/// (the sibling's first key) and the sibling.
pub(crate) fn split(
    pager: &mut Pager,
    leaf: PageId,
    link: u64,
    side: Option<node::Side>,
    es: &[(u64, u64)],
) -> Result<(u64, PageId)> {
    let mid = es.len() / 2;
    let right = pager.alloc_page()?;
    let sep = es[mid].0;
    pager.write(right, |b| node::init_as(b, 0, link, side, &es[mid..]))?;
    let left_side = side.map(|_| node::Side::split(right, sep));
    pager.write(leaf, |b| node::init_as(b, 0, right, left_side, &es[..mid]))?;
    Ok((sep, right))
}

/// What [`repair`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Repair {
    /// The two leaves hold half each; the parent's separator moved.
    Redistributed,
    /// The right leaf was merged into the left and freed; the parent lost the separator
    /// between them (and may now be underfull).
    Merged,
}

/// The right one of two leaves [`repair`] joins: its link and, for a B-link leaf, its
/// place in its level.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RightLeaf {
    pub link: u64,
    pub side: Option<node::Side>,
}

/// Repair an underfull leaf with its sibling: `left` and `right` are adjacent children of
/// `parent` around separator slot `sep_idx`, `all` their entries in order and `r` what the
/// right one links to. With `redistribute` (the sibling has entries to spare) the two
/// share them evenly (a B-link left leaf's high key becomes the new separator); otherwise
/// the left takes all of them and the right's place in the leaf chain and its level.
pub(crate) fn repair(
    pager: &mut Pager,
    parent: PageId,
    sep_idx: usize,
    (left, right): (PageId, PageId),
    all: &[(u64, u64)],
    r: RightLeaf,
    redistribute: bool,
) -> Result<Repair> {
    if redistribute {
        let m = all.len() / 2;
        let new_sep = all[m].0;
        let left_side = r.side.map(|_| node::Side::split(right, new_sep));
        pager.write(left, |b| node::init_as(b, 0, right, left_side, &all[..m]))?;
        pager.write(right, |b| node::init_as(b, 0, r.link, r.side, &all[m..]))?;
        pager.write(parent, |b| node::set_key(b, sep_idx, new_sep))?;
        return Ok(Repair::Redistributed);
    }
    pager.write(left, |b| node::init_as(b, 0, r.link, r.side, all))?;
    pager.free_page(right);
    pager.write(parent, |b| node::remove_at(b, sep_idx))?;
    Ok(Repair::Merged)
}
