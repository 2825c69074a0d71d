//! The leaf-level steps a B+-tree of [`node`] pages takes on an overfull or underfull
//! leaf, whatever the tree above it (the B+-tree's and the LA-tree's): a split into two
//! leaves linked in key order, and the repair of an underfull leaf with its sibling by
//! redistribution or merge. The parent's separators change here; the levels above are the
//! caller's ([`super::spine`]).

use super::node;
use crate::durable::Pager;
use crate::error::Result;
use crate::io::PageId;

/// Split the full leaf `leaf`, whose entries with the new one are `es` and whose link is
/// `link`: the lower half stays, the upper half moves to a new right sibling between it
/// and `link`. Returns the separator for the parent (the sibling's first key) and the
/// sibling.
pub(crate) fn split(
    pager: &mut Pager,
    leaf: PageId,
    link: u64,
    es: &[(u64, u64)],
) -> Result<(u64, PageId)> {
    let mid = es.len() / 2;
    let right = pager.alloc_page()?;
    pager.write(right, |b| node::init(b, 0, link, &es[mid..]))?;
    pager.write(leaf, |b| node::init(b, 0, right, &es[..mid]))?;
    Ok((es[mid].0, right))
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

/// Repair an underfull leaf with its sibling: `left` and `right` are adjacent children of
/// `parent` around separator slot `sep_idx`, `all` their entries in order and `r_link`
/// the right one's link. With `redistribute` (the sibling has entries to spare) the two
/// share them evenly; otherwise the left takes all of them and the right's place in the
/// leaf chain.
pub(crate) fn repair(
    pager: &mut Pager,
    parent: PageId,
    sep_idx: usize,
    (left, right): (PageId, PageId),
    all: &[(u64, u64)],
    r_link: u64,
    redistribute: bool,
) -> Result<Repair> {
    if redistribute {
        let m = all.len() / 2;
        let new_sep = all[m].0;
        pager.write(left, |b| node::init(b, 0, right, &all[..m]))?;
        pager.write(right, |b| node::init(b, 0, r_link, &all[m..]))?;
        pager.write(parent, |b| node::set_key(b, sep_idx, new_sep))?;
        return Ok(Repair::Redistributed);
    }
    pager.write(left, |b| node::init(b, 0, r_link, all))?;
    pager.free_page(right);
    pager.write(parent, |b| node::remove_at(b, sep_idx))?;
    Ok(Repair::Merged)
}
