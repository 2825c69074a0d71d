//! The node translation table (NTT; Wu et al., and the d-IPL paper's §2.1.1: "maps each
//! logical node ... to the pages containing any log record of the node"): for each node,
//! the list of pages holding its index units, oldest first, and for each page how many
//! lists name it. A page no list names holds nothing live and is released.
//!
//! # Memory
//! The table is kept compact because the engines charge it to their memory budget and it
//! grows with the index (one list per node):
//! - **Per node, 8 bytes** in a slot array indexed by node id. Node ids are dense (both
//!   engines number nodes from a counter and never reuse an id), so an array costs less
//!   than a map of the same nodes (no key, no hashing slack). A list of one page (a
//!   compact leaf, the usual state after a bulk load or a clean) is held in the slot
//!   itself; a longer one in a chunk of the arena.
//! - **Per list entry, 4 bytes**: page ids are kept as `u32` (a file of up to 2^32 pages;
//!   a larger page id is refused with `Error::InvalidArgument`, not truncated). A list of
//!   `n >= 2` pages lives in one chunk of a shared arena whose capacity is the smallest
//!   of a table of sizes growing by a quarter (2, 3, 4, 5, 6, 7, 8, 10, 12, ...), so a
//!   chunk wastes at most about a fifth of its entries; a list outgrowing its chunk moves
//!   to the next size and leaves its chunk on that size's free list (the free list is
//!   threaded through the free chunks, so it costs nothing). When the free chunks hold a
//!   quarter of the arena, it is rebuilt with every list in its tightest chunk.
//! - **Per page, 1 byte**: the count of lists naming each page, in an array indexed by
//!   page id (the pages of both engines' files are dense), with counts of 255 and more
//!   in a small map (a page many lists share: the FBX-tree's log pages).
//!
//! Arrays grow by an eighth (not doubling), so the capacity held, which is what
//! [`Ntt::memory_bytes`] counts, stays close to what is used. `memory_bytes` and
//! `entries` are O(1).

use crate::error::{Error, Result};
use crate::io::PageId;
use std::collections::HashMap;

/// Where a node's list lives.
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    /// `len == 1`: the page itself; `len >= 2`: the offset of its chunk in the arena.
    at: u32,
    /// Pages in the list (0: the node has none).
    len: u16,
    /// The chunk's size class ([`cap_of`]) when `len >= 2`.
    class: u8,
}

/// Chunk sizes: 2, then each about a quarter more than the last, up to the longest list.
const CLASSES: usize = 49;
const CAPS: [u32; CLASSES] = caps();

const fn caps() -> [u32; CLASSES] {
    let mut c = [0u32; CLASSES];
    c[0] = 2;
    let mut i = 1;
    while i < CLASSES {
        let q = c[i - 1] / 4;
        c[i] = c[i - 1] + if q == 0 { 1 } else { q };
        i += 1;
    }
    c
}

fn cap_of(class: u8) -> usize {
    CAPS[class as usize] as usize
}

/// The smallest class holding `len` entries (`2 <= len <= u16::MAX`).
fn class_for(len: usize) -> u8 {
    CAPS.iter()
        .position(|&c| c as usize >= len)
        .unwrap_or(CLASSES - 1) as u8
}

/// No free chunk (a free list's end).
const NIL: u32 = u32::MAX;
/// A page count at or above this lives in [`Ntt::many`].
const MANY: u8 = u8::MAX;

/// Grow `v` to hold `need` elements, by at least an eighth of its length (not doubling:
/// the capacity is what is charged).
fn grow<T>(v: &mut Vec<T>, need: usize) {
    if need > v.capacity() {
        let more = (need - v.len()).max(v.len() / 8).max(16);
        v.reserve_exact(more);
    }
}

/// A page id as the table keeps it.
fn page32(p: PageId) -> Result<u32> {
    u32::try_from(p).map_err(|_| {
        Error::InvalidArgument(format!(
            "page {p} is beyond the 2^32 pages a node translation table names (the file \
             is too large for this engine)"
        ))
    })
}

/// A node's list of pages, oldest first (borrowed from the table).
#[derive(Debug, Clone, Copy)]
pub struct List<'a>(&'a [u32]);

impl<'a> List<'a> {
    pub fn len(self) -> usize {
        self.0.len()
    }

    pub fn is_empty(self) -> bool {
        self.0.is_empty()
    }

    pub fn first(self) -> Option<PageId> {
        self.0.first().map(|&p| PageId::from(p))
    }

    /// The pages, oldest first.
    pub fn iter(self) -> impl Iterator<Item = PageId> + 'a {
        self.0.iter().map(|&p| PageId::from(p))
    }

    pub fn to_vec(self) -> Vec<PageId> {
        self.iter().collect()
    }
}

impl<'a> IntoIterator for List<'a> {
    type Item = PageId;
    type IntoIter = std::iter::Map<std::slice::Iter<'a, u32>, fn(&u32) -> PageId>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|&p| PageId::from(p))
    }
}

#[derive(Debug, Default, Clone)]
pub struct Ntt {
    /// Node id -> its list.
    slots: Vec<Slot>,
    /// The chunks of lists of two pages or more, and free chunks.
    arena: Vec<u32>,
    /// Per size class, the first free chunk ([`NIL`]: none); a free chunk's first entry
    /// is the next one.
    free: Vec<u32>,
    /// Entries of the arena in free chunks.
    free_entries: usize,
    /// Page id -> lists naming it ([`MANY`]: see `many`).
    refs: Vec<u8>,
    /// Counts of pages named by [`MANY`] lists or more.
    many: HashMap<u32, u32>,
    /// Nodes with a list, distinct pages named, sum of the list lengths.
    nodes: usize,
    pages: usize,
    entries: usize,
}

impl Ntt {
    /// The table of saved lists (a checkpoint's), with the page counts rebuilt. Every node
    /// id must lie below `next_id` and every page below `page_limit` (the file's allocated
    /// pages), else corruption of `file`: no saved number sizes the arrays beyond the
    /// nodes numbered and the pages allocated so far.
    pub fn from_lists(
        lists: impl IntoIterator<Item = (u64, Vec<PageId>)>,
        next_id: u64,
        page_limit: PageId,
        file: &str,
    ) -> Result<Ntt> {
        let mut t = Ntt::default();
        for (node, pages) in lists {
            if let Some(p) = pages.iter().find(|&&p| p >= page_limit) {
                return Err(Error::corruption(
                    file,
                    None,
                    format!(
                        "the NTT lists page {p} for node {node}, beyond the file's \
                         {page_limit} pages"
                    ),
                ));
            }
            if node >= next_id {
                return Err(Error::corruption(
                    file,
                    None,
                    format!("the NTT names node {node}, at or beyond the next id {next_id}"),
                ));
            }
            if !t.list(node).is_empty() {
                return Err(Error::corruption(
                    file,
                    None,
                    format!("the NTT lists node {node} twice"),
                ));
            }
            t.replace(node, pages)?;
        }
        Ok(t)
    }

    fn slot(&self, node: u64) -> Slot {
        usize::try_from(node)
            .ok()
            .and_then(|i| self.slots.get(i))
            .copied()
            .unwrap_or_default()
    }

    fn slot_mut(&mut self, node: u64) -> Result<&mut Slot> {
        let i = usize::try_from(node)
            .ok()
            .filter(|&i| i < u32::MAX as usize)
            .ok_or_else(|| Error::InvalidArgument(format!("node id {node} is too large")))?;
        if i >= self.slots.len() {
            grow(&mut self.slots, i + 1);
            self.slots.resize(i + 1, Slot::default());
        }
        Ok(&mut self.slots[i])
    }

    fn pages_of<'a>(&'a self, s: &'a Slot) -> &'a [u32] {
        match s.len {
            0 => &[],
            1 => std::slice::from_ref(&s.at),
            n => &self.arena[s.at as usize..s.at as usize + n as usize],
        }
    }

    /// The pages of `node`, oldest first (empty for a node with no committed units).
    pub fn list(&self, node: u64) -> List<'_> {
        match usize::try_from(node).ok().and_then(|i| self.slots.get(i)) {
            Some(s) => List(self.pages_of(s)),
            None => List(&[]),
        }
    }

    /// A chunk of `class`: a free one, else a new one at the end of the arena.
    fn alloc(&mut self, class: u8) -> Result<u32> {
        let c = class as usize;
        if self.free.len() < CLASSES {
            self.free.resize(CLASSES, NIL);
        }
        let head = self.free[c];
        if head != NIL {
            self.free[c] = self.arena[head as usize];
            self.free_entries -= cap_of(class);
            return Ok(head);
        }
        let at = self.arena.len();
        let end = at + cap_of(class);
        if end > u32::MAX as usize {
            return Err(Error::InvalidArgument(
                "the node translation table's lists exceed 2^32 entries".into(),
            ));
        }
        grow(&mut self.arena, end);
        self.arena.resize(end, 0);
        Ok(at as u32)
    }

    fn free_chunk(&mut self, at: u32, class: u8) {
        self.arena[at as usize] = self.free[class as usize];
        self.free[class as usize] = at;
        self.free_entries += cap_of(class);
    }

    /// Count one more list naming `p`.
    fn add_ref(&mut self, p: u32) {
        let i = p as usize;
        if i >= self.refs.len() {
            grow(&mut self.refs, i + 1);
            self.refs.resize(i + 1, 0);
        }
        match self.refs[i] {
            0 => {
                self.refs[i] = 1;
                self.pages += 1;
            }
            MANY => *self.many.entry(p).or_insert(u32::from(MANY)) += 1,
            n if n == MANY - 1 => {
                self.refs[i] = MANY;
                self.many.insert(p, u32::from(MANY));
            }
            n => self.refs[i] = n + 1,
        }
    }

    /// Count one list fewer naming `p`; true when none names it any more.
    fn drop_ref(&mut self, p: u32) -> bool {
        let i = p as usize;
        match self.refs.get(i).copied().unwrap_or(0) {
            0 => false,
            1 => {
                self.refs[i] = 0;
                self.pages -= 1;
                true
            }
            MANY => {
                let n = self.many.get_mut(&p).map_or(u32::from(MANY), |n| {
                    *n -= 1;
                    *n
                });
                if n < u32::from(MANY) {
                    self.many.remove(&p);
                    self.refs[i] = n as u8;
                }
                false
            }
            n => {
                self.refs[i] = n - 1;
                false
            }
        }
    }

    /// Add `page` at the end of `node`'s list (once: a node's units in one page are one
    /// list entry).
    pub fn append(&mut self, node: u64, page: PageId) -> Result<()> {
        let p = page32(page)?;
        let s = *self.slot_mut(node)?;
        if self.pages_of(&self.slots[node as usize]).last() == Some(&p) {
            return Ok(());
        }
        let len = s.len as usize;
        if len == u16::MAX as usize {
            return Err(Error::InvalidArgument(format!(
                "node {node}'s list would exceed {} pages",
                u16::MAX
            )));
        }
        let mut n = s;
        n.len += 1;
        match len {
            0 => n.at = p,
            1 => {
                n.class = 0;
                n.at = self.alloc(0)?;
                self.arena[n.at as usize] = s.at;
                self.arena[n.at as usize + 1] = p;
            }
            _ if len < cap_of(s.class) => self.arena[s.at as usize + len] = p,
            _ => {
                n.class = s.class + 1;
                n.at = self.alloc(n.class)?;
                self.arena
                    .copy_within(s.at as usize..s.at as usize + len, n.at as usize);
                self.arena[n.at as usize + len] = p;
                self.free_chunk(s.at, s.class);
            }
        }
        if len == 0 {
            self.nodes += 1;
        }
        self.slots[node as usize] = n;
        self.entries += 1;
        self.add_ref(p);
        self.maybe_compact_arena();
        Ok(())
    }

    /// Replace `node`'s list by `pages` (compaction, a new node); returns the pages no
    /// list names any more.
    pub fn replace(&mut self, node: u64, pages: Vec<PageId>) -> Result<Vec<PageId>> {
        let new: Vec<u32> = pages.iter().map(|&p| page32(p)).collect::<Result<_>>()?;
        if new.len() > u16::MAX as usize {
            return Err(Error::InvalidArgument(format!(
                "node {node}'s list of {} pages exceeds {}",
                new.len(),
                u16::MAX
            )));
        }
        self.slot_mut(node)?;
        // Count the new pages before the old ones are released: a page on both lists
        // stays named.
        for &p in &new {
            self.add_ref(p);
        }
        let dead = self.take(node);
        let mut s = Slot {
            at: 0,
            len: new.len() as u16,
            class: 0,
        };
        match new.len() {
            0 => {}
            1 => s.at = new[0],
            n => {
                s.class = class_for(n);
                s.at = self.alloc(s.class)?;
                self.arena[s.at as usize..s.at as usize + n].copy_from_slice(&new);
            }
        }
        if !new.is_empty() {
            self.nodes += 1;
        }
        self.entries += new.len();
        self.slots[node as usize] = s;
        self.maybe_compact_arena();
        Ok(dead)
    }

    /// Forget `node` (a removed node); returns the pages no list names any more.
    pub fn remove(&mut self, node: u64) -> Vec<PageId> {
        let dead = self.take(node);
        self.maybe_compact_arena();
        dead
    }

    /// Empty `node`'s slot, releasing its pages; returns those no list names any more.
    fn take(&mut self, node: u64) -> Vec<PageId> {
        let s = self.slot(node);
        if s.len == 0 {
            return Vec::new();
        }
        let old: Vec<u32> = self.pages_of(&self.slots[node as usize]).to_vec();
        if s.len >= 2 {
            self.free_chunk(s.at, s.class);
        }
        self.slots[node as usize] = Slot::default();
        self.nodes -= 1;
        self.entries -= old.len();
        old.into_iter()
            .filter(|&p| self.drop_ref(p))
            .map(PageId::from)
            .collect()
    }

    /// Rebuild the arena with every list in its tightest chunk once free chunks hold a
    /// quarter of it (amortised: a quarter of the arena was freed since the last rebuild).
    fn maybe_compact_arena(&mut self) {
        if self.free_entries < 1024 || self.free_entries * 4 < self.arena.len() {
            return;
        }
        let used: usize = self
            .slots
            .iter()
            .filter(|s| s.len >= 2)
            .map(|s| cap_of(class_for(s.len as usize)))
            .sum();
        let mut arena = Vec::with_capacity(used);
        for s in self.slots.iter_mut().filter(|s| s.len >= 2) {
            let (from, n) = (s.at as usize, s.len as usize);
            let class = class_for(n);
            s.at = arena.len() as u32;
            s.class = class;
            arena.extend_from_slice(&self.arena[from..from + n]);
            arena.resize(arena.len() + cap_of(class) - n, 0);
        }
        self.arena = arena;
        self.free.iter_mut().for_each(|f| *f = NIL);
        self.free_entries = 0;
    }

    /// Every node with a list, and its list, by node id.
    pub fn iter(&self) -> impl Iterator<Item = (u64, List<'_>)> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.len > 0)
            .map(|(i, s)| (i as u64, List(self.pages_of(s))))
    }

    /// Nodes with a list.
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// Distinct pages the table names (the index's live pages).
    pub fn pages(&self) -> usize {
        self.pages
    }

    /// How many lists name `page`.
    pub fn refs(&self, page: PageId) -> u32 {
        let Ok(p) = u32::try_from(page) else {
            return 0;
        };
        match self.refs.get(p as usize).copied().unwrap_or(0) {
            MANY => self.many.get(&p).copied().unwrap_or(u32::from(MANY)),
            n => u32::from(n),
        }
    }

    /// Sum of the list lengths.
    pub fn entries(&self) -> usize {
        self.entries
    }

    /// Bytes held: the capacities of the slot array, the arena, the page counts and the
    /// map of large counts (module doc, Memory).
    pub fn memory_bytes(&self) -> u64 {
        (std::mem::size_of::<Slot>() * self.slots.capacity()
            + 4 * (self.arena.capacity() + self.free.capacity())
            + self.refs.capacity()
            + 12 * self.many.capacity()) as u64
    }

    /// The lists sorted by node, for the manifest.
    pub fn sorted(&self) -> Vec<(u64, Vec<PageId>)> {
        self.iter().map(|(n, l)| (n, l.to_vec())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn a_page_is_released_when_the_last_list_naming_it_goes() {
        let mut t = Ntt::default();
        t.append(1, 10).unwrap();
        t.append(1, 10).unwrap();
        t.append(2, 10).unwrap();
        t.append(1, 11).unwrap();
        assert_eq!(t.list(1).to_vec(), vec![10, 11]);
        assert_eq!(t.refs(10), 2);
        assert_eq!(t.replace(1, vec![12]).unwrap(), vec![11]);
        assert_eq!(t.remove(2), vec![10]);
        assert_eq!(t.pages(), 1);
        assert_eq!(t.entries(), 1);
        let u = Ntt::from_lists(t.sorted(), 3, 100, "data").unwrap();
        assert_eq!(u.list(1).to_vec(), vec![12]);
        assert_eq!(u.refs(12), 1);
    }

    #[test]
    fn size_classes_grow_by_a_quarter_up_to_the_longest_list() {
        assert_eq!(&CAPS[..10], &[2, 3, 4, 5, 6, 7, 8, 10, 12, 15]);
        assert!(CAPS[CLASSES - 1] as usize >= u16::MAX as usize);
        assert!(CAPS[CLASSES - 2] < u16::MAX as u32);
        for w in CAPS.windows(2) {
            assert!(w[1] > w[0] && w[1] <= w[0] + w[0] / 4 + 1);
        }
        assert_eq!(class_for(2), 0);
        assert_eq!(class_for(9), 7);
        assert_eq!(
            cap_of(class_for(u16::MAX as usize)),
            CAPS[CLASSES - 1] as usize
        );
    }

    #[test]
    fn page_ids_beyond_u32_and_ids_beyond_next_are_refused() {
        let mut t = Ntt::default();
        let e = t.append(1, 1 << 32).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
        assert!(t.replace(1, vec![3, 1 << 40]).is_err());
        assert!(t.list(1).is_empty());
        assert_eq!(t.refs(3), 0, "a refused replace counts nothing");
        t.append(1, u32::MAX as u64).unwrap();
        assert_eq!(t.list(1).first(), Some(u32::MAX as u64));
        let e = Ntt::from_lists(vec![(9, vec![1])], 9, 100, "MANIFEST").unwrap_err();
        assert!(matches!(e, Error::Corruption { .. }), "{e}");
        assert!(Ntt::from_lists(vec![(2, vec![1]), (2, vec![3])], 9, 100, "data").is_err());
        assert!(Ntt::from_lists(vec![(2, vec![1, 100])], 9, 100, "data").is_err());
    }

    /// Counts of 255 and more go to the map and come back.
    #[test]
    fn a_page_many_lists_share_is_counted_exactly() {
        let mut t = Ntt::default();
        for n in 0..600 {
            t.append(n, 5).unwrap();
        }
        assert_eq!(t.refs(5), 600);
        for n in 0..599 {
            assert!(t.remove(n).is_empty());
            assert_eq!(t.refs(5), 599 - n as u32);
        }
        assert!(t.many.is_empty());
        assert_eq!(t.remove(599), vec![5]);
        assert_eq!((t.pages(), t.refs(5)), (0, 0));
    }

    /// The table against a model (node -> list) under random appends, replaces and
    /// removes: lists, counts, totals, and the arena's accounting (used and free chunks
    /// cover it exactly; what is charged is the capacity held).
    #[test]
    fn the_table_follows_a_model_of_lists() {
        let mut t = Ntt::default();
        let mut model: BTreeMap<u64, Vec<PageId>> = BTreeMap::new();
        let mut x = 1u64;
        for i in 0..20_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let node = (x >> 40) % 300;
            let page = (x >> 20) % 500;
            let dead = match (x >> 10) % 20 {
                0 => t.remove(node),
                1 => t.replace(node, vec![page, i % 7]).unwrap(),
                2 => t.replace(node, vec![]).unwrap(),
                _ => {
                    t.append(node, page).unwrap();
                    Vec::new()
                }
            };
            let l = model.entry(node).or_default();
            let old = match (x >> 10) % 20 {
                0 | 2 => std::mem::take(l),
                1 => std::mem::replace(l, vec![page, i % 7]),
                _ => {
                    if l.last() != Some(&page) {
                        l.push(page);
                    }
                    Vec::new()
                }
            };
            let counts = counts(&model);
            let mut want: Vec<PageId> = old
                .into_iter()
                .filter(|p| !counts.contains_key(p))
                .collect();
            want.sort_unstable();
            want.dedup();
            let mut got = dead;
            got.sort_unstable();
            assert_eq!(got, want, "step {i}: released pages");
            if i % 97 == 0 {
                check_against(&t, &model);
            }
        }
        check_against(&t, &model);
        let u = Ntt::from_lists(t.sorted(), 300, 500, "data").unwrap();
        check_against(&u, &model);
    }

    /// Lists that grew long and were compacted leave their chunks free; once a quarter of
    /// the arena is free it is rebuilt, and what is charged falls with it.
    #[test]
    fn the_arena_is_rebuilt_when_a_quarter_is_free() {
        let mut t = Ntt::default();
        let mut model: BTreeMap<u64, Vec<PageId>> = BTreeMap::new();
        for n in 0..3000u64 {
            for j in 0..12 {
                t.append(n, 100_000 + n * 12 + j).unwrap();
            }
            model.insert(n, (0..12).map(|j| 100_000 + n * 12 + j).collect());
        }
        let before = t.memory_bytes();
        let full = t.arena.len();
        for n in 0..3000u64 {
            let dead = t.replace(n, vec![n]).unwrap();
            assert_eq!(dead.len(), 12);
            model.insert(n, vec![n]);
            assert!(
                t.free_entries < 1024 || t.free_entries * 4 < t.arena.len(),
                "step {n}"
            );
        }
        assert!(t.arena.len() < full / 4, "{} of {full}", t.arena.len());
        assert!(
            t.memory_bytes() < before,
            "{} !< {before}",
            t.memory_bytes()
        );
        check_against(&t, &model);
    }

    fn counts(model: &BTreeMap<u64, Vec<PageId>>) -> BTreeMap<PageId, u32> {
        let mut c = BTreeMap::new();
        for l in model.values() {
            for &p in l {
                *c.entry(p).or_insert(0) += 1;
            }
        }
        c
    }

    fn check_against(t: &Ntt, model: &BTreeMap<u64, Vec<PageId>>) {
        for (n, l) in model {
            assert_eq!(&t.list(*n).to_vec(), l, "node {n}");
        }
        let listed: Vec<u64> = t.iter().map(|(n, _)| n).collect();
        let want: Vec<u64> = model
            .iter()
            .filter(|(_, l)| !l.is_empty())
            .map(|(&n, _)| n)
            .collect();
        assert_eq!(listed, want);
        assert_eq!(t.nodes(), want.len());
        let counts = counts(model);
        assert_eq!(t.pages(), counts.len());
        for (&p, &n) in &counts {
            assert_eq!(t.refs(p), n, "page {p}");
        }
        assert_eq!(t.entries(), model.values().map(Vec::len).sum::<usize>());
        let used: usize = t
            .slots
            .iter()
            .filter(|s| s.len >= 2)
            .map(|s| cap_of(s.class))
            .sum();
        assert_eq!(used + t.free_entries, t.arena.len());
        let bytes = 8 * t.slots.capacity()
            + 4 * (t.arena.capacity() + t.free.capacity())
            + t.refs.capacity()
            + 12 * t.many.capacity();
        assert_eq!(t.memory_bytes(), bytes as u64);
    }
}
