//! The head tree L0 (§3.2): a small B+-tree of pages kept through the buffer pool and
//! updated in place (random writes confined to the locality area, §3.1 P2).
//!
//! Leaves hold index entries (normal and filter) and the fences of L1, sorted by
//! [`Entry::pos`]. Fractional cascading continues into the head: every leaf but the first
//! begins with a fence (Invariant 1, §3.2), so the backward scan of a search stops in the
//! leaf it starts in. A leaf split that would start the new leaf with an index entry puts an
//! internal fence in front of it, copying the page id of the last fence before it (§3.2,
//! "Internal fence"), or [`NONE`] when no fence precedes it (keys below every key of L1).
//! Deleting an index entry does not rebalance: the head tree is rebuilt at every merge.

use super::entry::{self, Entry, Kind, Layout, NONE};
use crate::durable::{PageRead, Pager};
use crate::error::{Error, Result};
use crate::io::PageId;
use crate::page::DATA_FILE;
use serde::{Deserialize, Serialize};

/// A head tree's durable roots and counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Head {
    pub root: PageId,
    pub height: u32,
    pub first_leaf: PageId,
    /// Leaf entries: index entries and fences.
    pub entries: u64,
    /// Index entries (normal and filter) among them.
    pub index_entries: u64,
    pub pages: u64,
}

/// Packs a sorted stream of entries into pages of `cap` entries while keeping Invariant 1:
/// a page that would begin with an index entry begins with an internal fence instead
/// (§3.2), whose page id is that of the last fence seen (Algorithm 3, lines 17-21). It
/// says where each entry goes ([`Packer::place`]) and holds no entries, so a writer can put
/// them straight into page bytes (the FD-tree's run writer); [`Packer::pack`] makes pages
/// of entries (head-tree bulk loads).
pub struct Packer {
    cap: usize,
    /// Entries placed in the page being filled.
    len: usize,
    last_fence_pid: u64,
    /// Pages closed so far.
    pages: u64,
    fence_first_page: bool,
}

/// Where [`Packer::place`] puts an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// The page being filled is full: close it; the entry starts the next one.
    pub close: bool,
    /// The internal fence to put before the entry, first in its page.
    pub fence: Option<Entry>,
}

impl Packer {
    /// `fence_first_page`: runs need a fence on every page; the head's first leaf does not.
    pub fn new(cap: usize, fence_first_page: bool) -> Self {
        Packer {
            cap,
            len: 0,
            last_fence_pid: NONE,
            pages: 0,
            fence_first_page,
        }
    }

    /// Place `e`, the next entry of the stream.
    #[inline]
    pub fn place(&mut self, e: &Entry) -> Place {
        let close = self.len >= self.cap;
        if close {
            self.len = 0;
            self.pages += 1;
        }
        let fence = (self.len == 0 && !e.is_fence() && (self.pages > 0 || self.fence_first_page))
            .then(|| Entry::new(e.key, self.last_fence_pid, Kind::Internal));
        if e.is_fence() {
            self.last_fence_pid = e.val;
        }
        self.len += 1 + usize::from(fence.is_some());
        Place { close, fence }
    }

    /// Place the entries of `es` (index entries and fences, in order; not empty) that go
    /// into one page: where the first goes, as [`Packer::place`] says, and how many of
    /// `es` (at least 1) go into its page. Entries past the first of a page need no fence,
    /// so they fill the page; the last fence among them is the one a later page's
    /// internal fence points to. The same as [`Packer::place`] of each.
    #[inline]
    pub fn place_run(&mut self, es: &[Entry]) -> (Place, usize) {
        let place = self.place(&es[0]);
        let more = (es.len() - 1).min(self.cap.saturating_sub(self.len));
        self.len += more;
        if let Some(f) = es[1..1 + more].iter().rev().find(|e| e.is_fence()) {
            self.last_fence_pid = f.val;
        }
        (place, 1 + more)
    }

    /// The pages of `sorted`, packed by [`Packer::place`].
    pub fn pack(cap: usize, fence_first_page: bool, sorted: &[Entry]) -> Vec<Vec<Entry>> {
        let mut packer = Packer::new(cap, fence_first_page);
        let mut pages: Vec<Vec<Entry>> = Vec::new();
        for &e in sorted {
            let place = packer.place(&e);
            if place.close || pages.is_empty() {
                pages.push(Vec::with_capacity(cap));
            }
            if let Some(page) = pages.last_mut() {
                page.extend(place.fence);
                page.push(e);
            }
        }
        pages
    }
}

/// What an upsert did in its leaf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Placed {
    Replaced,
    Inserted,
    /// The key is new and the leaf has no room: it splits.
    Full,
}

/// Where a shared upsert puts its entry in its leaf ([`Head::upsert_shared`]).
#[derive(Debug, Clone, Copy)]
enum Slot {
    /// Over the key's entry at this slot.
    Replace(usize),
    /// A new entry at this slot (the leaf has room).
    Insert(usize),
}

/// The result of looking `key` up in a head tree.
pub struct Found {
    /// The index entry of `key` in this head tree.
    pub entry: Option<Entry>,
    /// The page of L1 to search next: the last fence at or below `key` (`NONE` if none).
    pub fence: u64,
}

fn corrupt(pid: PageId, what: String) -> Error {
    Error::corruption(DATA_FILE, Some(pid), format!("FD-tree head tree: {what}"))
}

fn read_node(
    mut pager: impl PageRead,
    pid: PageId,
    lay: Layout,
) -> Result<(u16, u32, u64, Vec<Entry>)> {
    pager
        .page(pid, |b| {
            let kind = lay.checked_kind(b)?;
            lay.decode(b)
                .map(|es| (kind, entry::level(b), entry::link(b), es))
        })?
        .map_err(|e| corrupt(pid, e))
}

fn child_at(leftmost: u64, seps: &[Entry], s: usize) -> u64 {
    if s == 0 {
        leftmost
    } else {
        seps[s - 1].val
    }
}

impl Head {
    /// An empty head tree: one empty root leaf.
    pub fn create(pager: &mut Pager, lay: Layout) -> Result<Head> {
        let root = pager.alloc_page()?;
        pager.write(root, |b| lay.init(b, entry::KIND_HEAD_LEAF, 0, NONE, &[]))?;
        Ok(Head {
            root,
            height: 1,
            first_leaf: root,
            entries: 0,
            index_entries: 0,
            pages: 1,
        })
    }

    /// Descend to the leaf for `pos`: the internal pages and child slots passed, and the leaf.
    fn descend(
        &self,
        mut pager: impl PageRead,
        lay: Layout,
        pos: (u64, u8),
    ) -> Result<(Vec<(PageId, usize)>, PageId)> {
        // The height comes from a manifest: it bounds the loop, not an allocation.
        let mut path =
            Vec::with_capacity(self.height.min(crate::kit::api::MAX_TREE_HEIGHT) as usize);
        let mut pid = self.root;
        for depth in 0..self.height.saturating_sub(1) {
            let want = self.height - 1 - depth;
            // The child is found in the node's bytes (no decoded copy of the node).
            let (kind, lvl, slot, child) = pager
                .page(pid, |b| -> std::result::Result<_, String> {
                    let n = lay.checked_count(b)?;
                    let s = lay.partition(b, n, pos)?;
                    let child = match s {
                        0 => entry::link(b),
                        _ => lay.entry(b, s - 1)?.val,
                    };
                    Ok((lay.checked_kind(b)?, entry::level(b), s, child))
                })?
                .map_err(|e| corrupt(pid, e))?;
            if kind != entry::KIND_HEAD_INTERNAL || lvl != want {
                return Err(corrupt(
                    pid,
                    format!("node at level {lvl}, expected {want}"),
                ));
            }
            path.push((pid, slot));
            pid = child;
        }
        Ok((path, pid))
    }

    /// Look `key` up: its index entry here, and the fence to follow into L1 (§3.3, Search;
    /// Algorithm 1, lines 2-3).
    pub fn find(&self, mut pager: impl PageRead, lay: Layout, key: u64) -> Result<Found> {
        let pos = entry::index_pos(key);
        let (_, leaf) = self.descend(&mut pager, lay, pos)?;
        pager
            .page(leaf, |b| -> std::result::Result<_, String> {
                let n = lay.checked_count(b)?;
                let end = lay.partition(b, n, pos)?;
                let entry = match end {
                    0 => None,
                    _ => Some(lay.entry(b, end - 1)?),
                }
                .filter(|e: &Entry| e.key == key && !e.is_fence());
                // Scan backward to the fence (Invariant 1 stops it within this leaf).
                let fence = lay.fence_before(b, end)?.unwrap_or(NONE);
                Ok(Found { entry, fence })
            })?
            .map_err(|e| corrupt(leaf, e))
    }

    /// The leaf for `key` (range scans start there).
    pub fn leaf_for(&self, pager: impl PageRead, lay: Layout, key: u64) -> Result<PageId> {
        Ok(self.descend(pager, lay, (key, 0))?.1)
    }

    /// A leaf's entries and its right neighbour.
    pub fn leaf(pager: impl PageRead, lay: Layout, pid: PageId) -> Result<(Vec<Entry>, u64)> {
        let (kind, _, link, es) = read_node(pager, pid, lay)?;
        if kind != entry::KIND_HEAD_LEAF {
            return Err(corrupt(pid, "leaf chain reaches a non-leaf page".into()));
        }
        Ok((es, link))
    }

    /// Insert or overwrite the index entry `e` (normal or filter) of its key (§3.3,
    /// Insertion; a newer entry of a key replaces an older one in the same level).
    pub fn upsert(&mut self, pager: &mut Pager, lay: Layout, e: Entry) -> Result<()> {
        debug_assert!(!e.is_fence());
        let pos = e.pos();
        let (path, leaf) = self.descend(&mut *pager, lay, pos)?;
        // One visit of the leaf: a binary search on its bytes, then the entry replaced or
        // inserted in place; a full leaf is split below (and rewritten whole).
        let placed = pager
            .write(leaf, |b| -> std::result::Result<_, String> {
                let n = lay.checked_count(b)?;
                Ok(match lay.search(b, n, pos)? {
                    Ok(i) => {
                        lay.set(b, i, e);
                        Placed::Replaced
                    }
                    Err(i) if n < lay.cap() => {
                        lay.insert_at(b, i, e);
                        Placed::Inserted
                    }
                    Err(_) => Placed::Full,
                })
            })?
            .map_err(|e| corrupt(leaf, e))?;
        if placed == Placed::Replaced {
            return Ok(());
        }
        self.entries += 1;
        self.index_entries += 1;
        if placed == Placed::Inserted {
            return Ok(());
        }
        let (_, _, link, mut es) = read_node(&mut *pager, leaf, lay)?;
        let i = es.partition_point(|x| x.pos() <= pos);
        es.insert(i, e);
        let mid = es.len() / 2;
        let mut right = es.split_off(mid);
        if !right[0].is_fence() {
            // Invariant 1 in the head: the new leaf starts with a fence.
            let pid = es
                .iter()
                .rev()
                .find(|x| x.is_fence())
                .map_or(NONE, |x| x.val);
            right.insert(0, Entry::new(right[0].key, pid, Kind::Internal));
            self.entries += 1;
        }
        let new = pager.alloc_page()?;
        self.pages += 1;
        pager.write(new, |b| lay.init(b, entry::KIND_HEAD_LEAF, 0, link, &right))?;
        pager.write(leaf, |b| lay.init(b, entry::KIND_HEAD_LEAF, 0, new, &es))?;
        let sep = Entry::new(right[0].key, new, right[0].kind);
        self.insert_into_parent(pager, lay, path, sep, 1)
    }

    fn insert_into_parent(
        &mut self,
        pager: &mut Pager,
        lay: Layout,
        mut path: Vec<(PageId, usize)>,
        mut sep: Entry,
        mut level: u32,
    ) -> Result<()> {
        loop {
            let Some((pid, slot)) = path.pop() else {
                let root = pager.alloc_page()?;
                let old = self.root;
                pager.write(root, |b| {
                    lay.init(b, entry::KIND_HEAD_INTERNAL, level, old, &[sep])
                })?;
                self.root = root;
                self.height += 1;
                self.pages += 1;
                return Ok(());
            };
            let (_, _, leftmost, mut seps) = read_node(&mut *pager, pid, lay)?;
            seps.insert(slot, sep);
            if seps.len() <= lay.cap() {
                return pager.write(pid, |b| {
                    lay.init(b, entry::KIND_HEAD_INTERNAL, level, leftmost, &seps)
                });
            }
            let m = seps.len() / 2;
            let up = seps[m];
            let new = pager.alloc_page()?;
            self.pages += 1;
            pager.write(new, |b| {
                lay.init(b, entry::KIND_HEAD_INTERNAL, level, up.val, &seps[m + 1..])
            })?;
            pager.write(pid, |b| {
                lay.init(b, entry::KIND_HEAD_INTERNAL, level, leftmost, &seps[..m])
            })?;
            sep = Entry::new(up.key, new, up.kind);
            level += 1;
        }
    }

    /// [`Head::upsert`] from one of many threads (a shared writer beside readers and other
    /// shared writers, the engine's lock held shared): when the key's leaf holds the key
    /// or has room, `e` is put there and `op` logged under the leaf's latch
    /// ([`Pager::write_shared`]), so the log holds a key's writes in the order they took
    /// effect. `Some(true)` when the entry is new (the caller counts it: the counts here
    /// change only on `&mut`), `Some(false)` when it replaced the key's; `None` when the
    /// leaf is full (a split, for the exclusive path) or does not decode (the exclusive
    /// path meets the error): nothing was logged or changed. The descent is valid because
    /// splits, the only change of a head tree's shape, run on `&mut`.
    pub fn upsert_shared(
        &self,
        pager: &Pager,
        lay: Layout,
        e: Entry,
        op: &crate::durable::LogicalOp,
    ) -> Result<Option<bool>> {
        debug_assert!(!e.is_fence());
        let pos = e.pos();
        let (_, leaf) = self.descend(pager, lay, pos)?;
        let decide = |b: &[u8]| {
            let n = lay.checked_count(b).ok()?;
            match lay.search(b, n, pos).ok()? {
                Ok(i) => Some(Slot::Replace(i)),
                Err(i) if n < lay.cap() => Some(Slot::Insert(i)),
                Err(_) => None,
            }
        };
        let change = |b: &mut [u8], at: Slot| match at {
            Slot::Replace(i) => {
                lay.set(b, i, e);
                false
            }
            Slot::Insert(i) => {
                lay.insert_at(b, i, e);
                true
            }
        };
        pager.write_shared(leaf, op, decide, change)
    }

    /// [`Head::remove`] from one of many threads, as [`Head::upsert_shared`] is the upsert:
    /// the index entry of `key` is removed, if its leaf holds one, and `op` is logged under
    /// the leaf's latch either way (a removal of an absent key changes nothing, as replay
    /// finds). `Some(true)` when an entry went (the caller counts it), `Some(false)` when
    /// none was there; `None` when the leaf does not decode (nothing logged).
    pub fn remove_shared(
        &self,
        pager: &Pager,
        lay: Layout,
        key: u64,
        op: &crate::durable::LogicalOp,
    ) -> Result<Option<bool>> {
        let pos = entry::index_pos(key);
        let (_, leaf) = self.descend(pager, lay, pos)?;
        let decide = |b: &[u8]| {
            lay.checked_count(b)
                .and_then(|n| lay.search(b, n, pos))
                .ok()
                .map(|at| at.ok())
        };
        let change = |b: &mut [u8], at: Option<usize>| match at {
            Some(i) => {
                lay.remove_at(b, i);
                true
            }
            None => false,
        };
        pager.write_shared(leaf, op, decide, change)
    }

    /// Remove the index entry of `key` if present (§3.3, Deletion: "first performed on the
    /// head tree").
    pub fn remove(&mut self, pager: &mut Pager, lay: Layout, key: u64) -> Result<bool> {
        let pos = entry::index_pos(key);
        let (_, leaf) = self.descend(&mut *pager, lay, pos)?;
        let at = pager
            .read(leaf, |b| -> std::result::Result<_, String> {
                lay.search(b, lay.checked_count(b)?, pos)
            })?
            .map_err(|e| corrupt(leaf, e))?;
        let Ok(i) = at else { return Ok(false) };
        pager.write(leaf, |b| lay.remove_at(b, i))?;
        self.entries -= 1;
        self.index_entries -= 1;
        Ok(true)
    }

    /// Build a head tree bottom-up from entries sorted by position (bulk loading, §3.3
    /// Merge: "the new levels L_j (0 <= j < i) are rebuilt with the external fences").
    pub fn bulk_load(pager: &mut Pager, lay: Layout, sorted: &[Entry]) -> Result<Head> {
        if sorted.is_empty() {
            return Head::create(pager, lay);
        }
        let leaves = Packer::pack(lay.cap(), false, sorted);
        let pids: Vec<PageId> = (0..leaves.len())
            .map(|_| pager.alloc_page())
            .collect::<Result<_>>()?;
        let mut head = Head {
            root: NONE,
            height: 1,
            first_leaf: pids[0],
            entries: 0,
            index_entries: 0,
            pages: pids.len() as u64,
        };
        let mut level_nodes: Vec<(Entry, PageId)> = Vec::with_capacity(pids.len());
        for (i, (es, &pid)) in leaves.iter().zip(&pids).enumerate() {
            let link = pids.get(i + 1).copied().unwrap_or(NONE);
            pager.write(pid, |b| lay.init(b, entry::KIND_HEAD_LEAF, 0, link, es))?;
            head.entries += es.len() as u64;
            head.index_entries += es.iter().filter(|e| !e.is_fence()).count() as u64;
            level_nodes.push((es[0], pid));
        }
        let mut level = 0;
        while level_nodes.len() > 1 {
            level += 1;
            let mut upper = Vec::new();
            for group in level_nodes.chunks(lay.cap() + 1) {
                let pid = pager.alloc_page()?;
                head.pages += 1;
                let seps: Vec<Entry> = group[1..]
                    .iter()
                    .map(|(e, p)| Entry::new(e.key, *p, e.kind))
                    .collect();
                pager.write(pid, |b| {
                    lay.init(b, entry::KIND_HEAD_INTERNAL, level, group[0].1, &seps)
                })?;
                upper.push((group[0].0, pid));
            }
            level_nodes = upper;
        }
        head.root = level_nodes[0].1;
        head.height = level + 1;
        Ok(head)
    }

    /// Every page of the tree (freeing and integrity checks), with each node's level.
    pub fn pages(&self, pager: &mut Pager, lay: Layout) -> Result<Vec<PageId>> {
        let mut out = Vec::new();
        let mut stack = vec![(self.root, self.height - 1)];
        while let Some((pid, lvl)) = stack.pop() {
            out.push(pid);
            if out.len() as u64 > self.pages {
                return Err(corrupt(
                    pid,
                    format!("more pages than the {} counted", self.pages),
                ));
            }
            if lvl > 0 {
                let (_, _, leftmost, seps) = read_node(&mut *pager, pid, lay)?;
                stack.push((leftmost, lvl - 1));
                stack.extend(seps.iter().map(|s| (s.val, lvl - 1)));
            }
        }
        Ok(out)
    }

    /// Free every page (after a merge replaced this head tree).
    pub fn free(&self, pager: &mut Pager, lay: Layout) -> Result<()> {
        for pid in self.pages(pager, lay)? {
            pager.free_page(pid);
        }
        Ok(())
    }

    /// Walk the leaves of a range scan's batch from `lo`'s leaf along the chain, giving
    /// each leaf (page, entries) to `visit`, which returns whether the leaf ended the range
    /// (an entry past `hi`). An open-ended range must not decode the whole tree for every
    /// batch: after `max_leaves` leaves, once a leaf reached past `lo`, the walk stops and
    /// returns `Some(cut)`: every entry of the tree at or below `cut` was visited (the next
    /// leaf begins at or above the last key seen), so the batch must end at `cut` and the
    /// caller drop what it took above it.
    pub fn walk_range(
        &self,
        mut pager: impl PageRead,
        lay: Layout,
        lo: u64,
        max_leaves: u64,
        mut visit: impl FnMut(PageId, Vec<Entry>) -> Result<bool>,
    ) -> Result<Option<u64>> {
        let mut pid = self.leaf_for(&mut pager, lay, lo)?;
        let mut steps = 0u64;
        while pid != NONE {
            steps += 1;
            if steps > self.pages {
                return Err(corrupt(pid, "leaf chain longer than the tree".into()));
            }
            let (es, link) = Head::leaf(&mut pager, lay, pid)?;
            let last = es.last().map(|e| e.key);
            if visit(pid, es)? {
                return Ok(None);
            }
            if steps >= max_leaves && link != NONE {
                if let Some(k) = last.filter(|&k| k > lo) {
                    return Ok(Some(k - 1));
                }
            }
            pid = link;
        }
        Ok(None)
    }

    /// Remove every index entry with key in `[lo, hi]` (fences stay: they navigate the
    /// level below), leaf by leaf along the chain from `lo`'s leaf; the number removed.
    /// Used when a range tombstone enters this tree's level ([`super::tombs`]).
    pub fn remove_range(
        &mut self,
        pager: &mut Pager,
        lay: Layout,
        lo: u64,
        hi: u64,
    ) -> Result<u64> {
        let doomed = |e: &Entry| !e.is_fence() && (lo..=hi).contains(&e.key);
        // The leaves holding entries of the range (the walk holds the pager), then their
        // rewrites: at most the tree's leaves.
        let mut hit: Vec<(PageId, Vec<usize>)> = Vec::new();
        self.walk_range(&*pager, lay, lo, u64::MAX, |pid, es| {
            let slots: Vec<usize> = (0..es.len()).filter(|&i| doomed(&es[i])).collect();
            if !slots.is_empty() {
                hit.push((pid, slots));
            }
            Ok(es.last().is_some_and(|e| e.key > hi))
        })?;
        let mut removed = 0u64;
        for (pid, slots) in hit {
            pager.write(pid, |b| {
                slots.iter().rev().for_each(|&i| lay.remove_at(b, i))
            })?;
            removed += slots.len() as u64;
        }
        self.entries -= removed;
        self.index_entries -= removed;
        Ok(removed)
    }

    /// All leaf entries in order (merges and head rebuilds; at most the head-tree size).
    pub fn all_entries(&self, pager: &mut Pager, lay: Layout) -> Result<Vec<Entry>> {
        // `entries` comes from a manifest: a hint, capped, never trusted to size memory.
        let mut out = Vec::with_capacity(self.entries.min(1 << 16) as usize);
        let mut pid = self.first_leaf;
        let mut steps = 0u64;
        while pid != NONE {
            steps += 1;
            if steps > self.pages {
                return Err(corrupt(pid, "leaf chain longer than the tree".into()));
            }
            let (es, link) = Head::leaf(&*pager, lay, pid)?;
            out.extend(es);
            pid = link;
        }
        Ok(out)
    }
}

/// Used by the integrity check: a node's contents.
pub fn node(pager: &Pager, lay: Layout, pid: PageId) -> Result<(u16, u32, u64, Vec<Entry>)> {
    read_node(pager, pid, lay)
}

/// Used by the integrity check: the child of slot `s`.
pub fn child(leftmost: u64, seps: &[Entry], s: usize) -> u64 {
    child_at(leftmost, seps, s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The binary search of a head-tree page finds what a linear scan finds: the slot
        /// of an entry present, the insertion slot of one absent, and how many entries
        /// sort at or below a position.
        #[test]
        fn page_search_matches_a_linear_scan(
            items in proptest::collection::btree_map((0u64..500, 0u8..3), any::<u64>(), 0..150),
            probes in proptest::collection::vec((0u64..520, 0u8..3), 1..40),
        ) {
            let kind = |r: u8| match r { 0 => Kind::External, 1 => Kind::Internal, _ => Kind::Normal };
            let mut es: Vec<Entry> = items
                .iter()
                .map(|(&(k, r), &v)| Entry::new(k, v, kind(r)))
                .collect();
            es.sort_by_key(|e| e.pos());
            es.dedup_by_key(|e| e.pos());
            for lay in [Layout::wide(4096), Layout::packed(4096)] {
            let mut b = vec![0u8; 4096];
            lay.init(&mut b, entry::KIND_HEAD_LEAF, 0, NONE, &es);
            for &(k, r) in &probes {
                let pos = Entry::new(k, 0, kind(r)).pos();
                let linear = es.iter().position(|e| e.pos() >= pos).unwrap_or(es.len());
                let exact = es.iter().position(|e| e.pos() == pos);
                let found = lay.search(&b, es.len(), pos).unwrap();
                prop_assert_eq!(found, exact.ok_or(linear));
                let at_or_below = es.iter().take_while(|e| e.pos() <= pos).count();
                prop_assert_eq!(lay.partition(&b, es.len(), pos).unwrap(), at_or_below);
            }
            }
        }

        /// Invariant 1 (§3.2): every packed run page begins with a fence, and an internal
        /// fence carries the page id of the last external fence before it (or NONE).
        #[test]
        fn packed_pages_begin_with_fences(
            items in proptest::collection::btree_map(any::<u64>(), any::<bool>(), 0..200),
            cap in 3usize..25,
        ) {
            let es: Vec<Entry> = items
                .iter()
                .enumerate()
                .map(|(i, (&k, &fence))| if fence {
                    Entry::new(k, i as u64, Kind::External)
                } else {
                    Entry::new(k, k ^ 1, Kind::Normal)
                })
                .collect();
            let pages = Packer::pack(cap, true, &es);
            let flat: Vec<Entry> = pages.iter().flatten().filter(|e| e.kind != Kind::Internal).copied().collect();
            prop_assert_eq!(flat, es);
            let mut last = NONE;
            for page in &pages {
                prop_assert!(!page.is_empty() && page.len() <= cap);
                prop_assert!(page[0].is_fence());
                if page[0].kind == Kind::Internal {
                    prop_assert_eq!(page[0].val, last);
                    prop_assert_eq!(page[0].key, page[1].key);
                }
                for e in page {
                    if e.kind == Kind::External {
                        last = e.val;
                    }
                }
            }
        }
    }
}
