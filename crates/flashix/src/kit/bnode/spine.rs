//! The internal levels of a B+-tree ("the spine"): separator insertion with node splits up
//! to the root, and underflow repair by redistribution or merge up to the root (Comer
//! 1979). Shared by the B+-tree and the PIO B-tree (whose internal nodes are this format,
//! PIO paper §3.3: "internal nodes stay one page"), which differ only below level 1.
//!
//! Nodes are [`node`] pages of kind [`node::KIND_INTERNAL`] (plain) or
//! [`node::KIND_BLINK_INTERNAL`] (B-link, [`Spine::format`]) at levels ≥ 1; a child of a
//! level-1 node is a leaf (whatever the engine's leaf format). A *path* is the internal
//! pages a descent passed and the child slot it took in each, root first.
//!
//! A B-link node keeps its place in its level ([`node::Side`]) through every change: a
//! split gives the new right node the old node's right sibling and high key and the old
//! node the new one and the separator, writing the new node first (so that a node is
//! never linked to a page not yet written); a redistribution moves the left node's high
//! key to the new separator; a merge gives the left node the right one's.
//!
//! Invariants kept: separators strictly increasing within a node and fencing their
//! subtrees; every non-root internal node holds at least `cap / 2` separators after a
//! repair; a root left without separators is removed (the tree gets one level shorter),
//! and a split root gets a new root above it (one level taller).

use super::node;
use crate::durable::Pager;
use crate::error::{Error, Result};
use crate::io::PageId;
use crate::page::{self, DATA_FILE};

/// Internal pages passed on a descent and the child slot taken in each, root first.
pub(crate) type Path = Vec<(PageId, usize)>;

/// What the spine did, for the engines' counters.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SpineEvents {
    pub internal_splits: u64,
    pub root_splits: u64,
    pub redistributions: u64,
    pub merges: u64,
}

/// The internal levels of one tree: its pager, root, height (levels, leaves included)
/// and the separators an internal node holds at most.
pub(crate) struct Spine<'a> {
    pub pager: &'a mut Pager,
    pub root: &'a mut PageId,
    pub height: &'a mut u32,
    pub cap: usize,
    /// The form of the nodes it makes (a new root; the others keep their node's form).
    pub format: node::Format,
}

/// What [`Spine::join_child`] did to the underflowing node and its sibling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Join {
    /// Separators moved between `left` and `right`; `up` is their new separator in the
    /// parent.
    Redistributed {
        left: PageId,
        right: PageId,
        up: u64,
    },
    /// `right` was merged into `left` and freed; the parent lost a separator.
    Merged { left: PageId, right: PageId },
}

/// An internal node's leftmost child, (separator, child) entries and, for a B-link node,
/// its place in its level.
pub(crate) struct Internal {
    pub link: PageId,
    pub entries: Vec<(u64, u64)>,
    pub side: Option<node::Side>,
}

/// Read internal node `pid`, which must be an internal node at `level` (≥ 1): anything
/// else is corruption naming the page.
pub(crate) fn read_internal(pager: &mut Pager, pid: PageId, level: u32) -> Result<Internal> {
    pager.read(pid, |b| internal_in(b, pid, level))?
}

/// [`read_internal`] on the bytes `b` of page `pid`, read by the caller (a shared reader's
/// page, through `Pager::read_shared` or a batch of its own).
pub(crate) fn internal_in(b: &[u8], pid: PageId, level: u32) -> Result<Internal> {
    let (kind, lvl) = (page::kind(b), node::level(b));
    if !node::is_internal(b) || lvl != level || lvl == 0 {
        return Err(Error::corruption(
            DATA_FILE,
            Some(pid),
            format!(
                "node of kind {kind} at level {lvl}, expected an internal node at level {level}"
            ),
        ));
    }
    Ok(Internal {
        link: node::link(b),
        entries: node::entries(b),
        side: node::side(b),
    })
}

/// The child of internal node `pid` (at `level` ≥ 1) whose range holds `key`, found by a
/// binary search inside the page bytes (a point descent decodes no node). The node is
/// checked as [`read_internal`] checks it, and its entry count against the page's capacity.
pub(crate) fn child_for(pager: &mut Pager, pid: PageId, level: u32, key: u64) -> Result<PageId> {
    pager.read(pid, |b| child_in(b, pid, level, key))?
}

/// [`child_for`] on the bytes `b` of page `pid`, read by the caller (a shared reader's
/// page).
pub(crate) fn child_in(b: &[u8], pid: PageId, level: u32, key: u64) -> Result<PageId> {
    let cap = node::capacity_of(node::format(b), b.len());
    let (kind, lvl, n) = (page::kind(b), node::level(b), node::count(b));
    if !node::is_internal(b) || lvl != level || lvl == 0 || n > cap {
        return Err(Error::corruption(
            DATA_FILE,
            Some(pid),
            format!(
                "node of kind {kind} at level {lvl} with {n} entries, expected an internal node at level {level} (at most {cap})"
            ),
        ));
    }
    Ok(node::child_at(b, node::child_slot(b, key)))
}

impl Spine<'_> {
    fn internal(&mut self, pid: PageId, level: u32) -> Result<Internal> {
        read_internal(self.pager, pid, level)
    }

    /// Insert separator `sep` with right child `right` (a node of `level - 1`, the new
    /// right neighbour of the child slot at the end of `path`) into the parents on `path`,
    /// splitting full nodes; a split root makes the tree one level taller.
    pub fn insert_separator(
        &mut self,
        mut path: Path,
        mut sep: u64,
        mut right: PageId,
        mut level: u32,
    ) -> Result<SpineEvents> {
        let mut ev = SpineEvents::default();
        loop {
            let Some((pid, slot)) = path.pop() else {
                let new_root = self.pager.alloc_page()?;
                let old_root = *self.root;
                let side = (self.format == node::Format::BLink).then_some(node::Side::END);
                self.pager.write(new_root, |b| {
                    node::init_as(b, level, old_root, side, &[(sep, right)])
                })?;
                *self.root = new_root;
                *self.height += 1;
                ev.root_splits += 1;
                return Ok(ev);
            };
            let n = self.internal(pid, level)?;
            if n.entries.len() < self.cap {
                self.pager
                    .write(pid, |b| node::insert_at(b, slot, sep, right))?;
                return Ok(ev);
            }
            let mut es = n.entries;
            es.insert(slot, (sep, right));
            // The middle separator moves up; its child becomes the new node's leftmost.
            let m = es.len() / 2;
            let (up_key, up_child) = es[m];
            let new = self.pager.alloc_page()?;
            let left_side = n.side.map(|_| node::Side::split(new, up_key));
            self.pager.write(new, |b| {
                node::init_as(b, level, up_child, n.side, &es[m + 1..])
            })?;
            self.pager.write(pid, |b| {
                node::init_as(b, level, n.link, left_side, &es[..m])
            })?;
            ev.internal_splits += 1;
            sep = up_key;
            right = new;
            level += 1;
        }
    }

    /// The internal node at the end of `path` (of `level` ≥ 1) just lost a separator:
    /// restore occupancy by redistribution with a sibling that has more than the minimum,
    /// else by a merge that takes a separator from the parent, up to the root; a root left
    /// without separators is removed.
    pub fn repair_underflow(&mut self, mut path: Path, mut level: u32) -> Result<SpineEvents> {
        let mut ev = SpineEvents::default();
        let min = self.cap / 2;
        let Some((mut pid, _)) = path.pop() else {
            return Ok(ev);
        };
        loop {
            let n = self.internal(pid, level)?;
            if path.is_empty() {
                self.collapse_root()?;
                return Ok(ev);
            }
            if n.entries.len() >= min {
                return Ok(ev);
            }
            let Some((parent, slot)) = path.pop() else {
                return Ok(ev);
            };
            if let Join::Redistributed { .. } = self.join_child(parent, level + 1, slot, &mut ev)? {
                return Ok(ev);
            }
            pid = parent;
            level += 1;
        }
    }

    /// Remove an internal root left without separators: its only child becomes the root
    /// (the tree gets one level shorter). Returns whether it did.
    pub fn collapse_root(&mut self) -> Result<bool> {
        if *self.height < 2 {
            return Ok(false);
        }
        let pid = *self.root;
        let n = self.internal(pid, *self.height - 1)?;
        if !n.entries.is_empty() {
            return Ok(false);
        }
        self.pager.free_page(pid);
        *self.root = n.link;
        *self.height -= 1;
        Ok(true)
    }

    /// Restore the occupancy of the internal child at `slot` of `parent` (a node of
    /// `parent_level` ≥ 2 with at least one separator) with a sibling: redistribution when
    /// the sibling has more than the minimum and the two hold enough for two nodes of at
    /// least `cap / 2` separators (or too many for one node), else a merge into the left
    /// one, which takes the parent's separator between them. Returns which (after a merge
    /// the parent lost a separator). The child may be far below the minimum (a range
    /// delete removed many of its children): a redistribution then leaves both at the
    /// minimum or above, a merge may leave the merged node still below it.
    pub fn join_child(
        &mut self,
        parent: PageId,
        parent_level: u32,
        slot: usize,
        ev: &mut SpineEvents,
    ) -> Result<Join> {
        let level = parent_level - 1;
        let min = self.cap / 2;
        let p = self.internal(parent, parent_level)?;
        if p.entries.is_empty() {
            return Err(Error::corruption(
                DATA_FILE,
                Some(parent),
                "internal node without separators above an underflowing node",
            ));
        }
        let pid = if slot == 0 {
            p.link
        } else {
            p.entries[slot - 1].1
        };
        let (left, right, sep_idx) = siblings(&p, pid, slot);
        let sibling = if left == pid { right } else { left };
        let ln = self.internal(left, level)?;
        let rn = self.internal(right, level)?;
        let sib_count = if sibling == left {
            ln.entries.len()
        } else {
            rn.entries.len()
        };
        // The parent's separator comes down between the two, carrying right's leftmost.
        let mut all = ln.entries;
        all.push((p.entries[sep_idx].0, rn.link));
        all.extend(rn.entries);
        if (sib_count > min || all.len() > self.cap) && all.len() > 2 * min {
            let m = all.len() / 2;
            let (up, up_child) = all[m];
            let left_side = ln.side.map(|_| node::Side::split(right, up));
            self.pager.write(left, |b| {
                node::init_as(b, level, ln.link, left_side, &all[..m])
            })?;
            self.pager.write(right, |b| {
                node::init_as(b, level, up_child, rn.side, &all[m + 1..])
            })?;
            self.pager
                .write(parent, |b| node::set_key(b, sep_idx, up))?;
            ev.redistributions += 1;
            return Ok(Join::Redistributed { left, right, up });
        }
        // The merged node takes the right one's place in its level.
        self.pager
            .write(left, |b| node::init_as(b, level, ln.link, rn.side, &all))?;
        self.pager.free_page(right);
        self.pager.write(parent, |b| node::remove_at(b, sep_idx))?;
        ev.merges += 1;
        Ok(Join::Merged { left, right })
    }
}

/// The node at child slot `slot` of `p` and its sibling, left first, and the index of
/// the separator between them: the right sibling when there is one, else the left.
fn siblings(p: &Internal, pid: PageId, slot: usize) -> (PageId, PageId, usize) {
    sibling_pair(p.link, &p.entries, pid, slot)
}

/// [`siblings`] for callers that hold a parent's link and entries (leaf-level repairs).
pub(crate) fn sibling_pair(
    link: PageId,
    entries: &[(u64, u64)],
    pid: PageId,
    slot: usize,
) -> (PageId, PageId, usize) {
    if slot < entries.len() {
        (pid, entries[slot].1, slot)
    } else {
        let l = if slot >= 2 { entries[slot - 2].1 } else { link };
        (l, pid, slot - 1)
    }
}
