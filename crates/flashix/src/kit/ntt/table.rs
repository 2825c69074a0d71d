//! The node translation table (NTT; Wu et al., and the d-IPL paper's §2.1.1: "maps each
//! logical node ... to the pages containing any log record of the node"): for each node,
//! the list of pages holding its index units, oldest first, and for each page how many
//! lists name it. A page no list names holds nothing live and is released.

use crate::io::PageId;
use std::collections::HashMap;

#[derive(Debug, Default, Clone)]
pub struct Ntt {
    lists: HashMap<u64, Vec<PageId>>,
    refs: HashMap<PageId, u32>,
    /// Sum of the lists' capacities and lengths, kept as they change so that
    /// [`Ntt::memory_bytes`] and [`Ntt::entries`] cost O(1) (engines charge the table to
    /// their budget after every change).
    capacity: usize,
    entries: usize,
}

impl Ntt {
    /// The table of saved lists (a checkpoint's), with the page counts rebuilt.
    pub fn from_lists(lists: impl IntoIterator<Item = (u64, Vec<PageId>)>) -> Ntt {
        let mut t = Ntt::default();
        for (node, pages) in lists {
            for &p in &pages {
                *t.refs.entry(p).or_insert(0) += 1;
            }
            t.capacity += pages.capacity();
            t.entries += pages.len();
            t.lists.insert(node, pages);
        }
        t
    }

    /// The pages of `node`, oldest first (empty for a node with no committed units).
    pub fn list(&self, node: u64) -> &[PageId] {
        self.lists.get(&node).map_or(&[], |l| l.as_slice())
    }

    /// Add `page` at the end of `node`'s list (once: a node's units in one page are one
    /// list entry).
    pub fn append(&mut self, node: u64, page: PageId) {
        let l = self.lists.entry(node).or_default();
        if l.last() != Some(&page) {
            let before = l.capacity();
            l.push(page);
            self.capacity += l.capacity() - before;
            self.entries += 1;
            *self.refs.entry(page).or_insert(0) += 1;
        }
    }

    /// Replace `node`'s list by `pages` (compaction, a new node); returns the pages no
    /// list names any more.
    pub fn replace(&mut self, node: u64, pages: Vec<PageId>) -> Vec<PageId> {
        for &p in &pages {
            *self.refs.entry(p).or_insert(0) += 1;
        }
        self.capacity += pages.capacity();
        self.entries += pages.len();
        let old = self.lists.insert(node, pages).unwrap_or_default();
        self.release(old)
    }

    /// Forget `node` (a removed node); returns the pages no list names any more.
    pub fn remove(&mut self, node: u64) -> Vec<PageId> {
        let old = self.lists.remove(&node).unwrap_or_default();
        self.release(old)
    }

    fn release(&mut self, pages: Vec<PageId>) -> Vec<PageId> {
        self.capacity -= pages.capacity();
        self.entries -= pages.len();
        let mut dead = Vec::new();
        for p in pages {
            if let Some(r) = self.refs.get_mut(&p) {
                *r -= 1;
                if *r == 0 {
                    self.refs.remove(&p);
                    dead.push(p);
                }
            }
        }
        dead
    }

    /// Every node with a list, and its list.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &[PageId])> {
        self.lists.iter().map(|(&n, l)| (n, l.as_slice()))
    }

    /// Nodes with a list.
    pub fn nodes(&self) -> usize {
        self.lists.len()
    }

    /// Distinct pages the table names (the index's live pages).
    pub fn pages(&self) -> usize {
        self.refs.len()
    }

    /// How many lists name `page`.
    pub fn refs(&self, page: PageId) -> u32 {
        self.refs.get(&page).copied().unwrap_or(0)
    }

    /// Sum of the list lengths.
    pub fn entries(&self) -> usize {
        self.entries
    }

    /// Bytes held (approximate: map entries and list storage).
    pub fn memory_bytes(&self) -> u64 {
        (8 * self.capacity + 48 * self.lists.len() + 16 * self.refs.capacity()) as u64
    }

    /// The lists sorted by node, for the manifest.
    pub fn sorted(&self) -> Vec<(u64, Vec<PageId>)> {
        let mut v: Vec<(u64, Vec<PageId>)> =
            self.lists.iter().map(|(&n, l)| (n, l.clone())).collect();
        v.sort_unstable_by_key(|x| x.0);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_is_released_when_the_last_list_naming_it_goes() {
        let mut t = Ntt::default();
        t.append(1, 10);
        t.append(1, 10);
        t.append(2, 10);
        t.append(1, 11);
        assert_eq!(t.list(1), &[10, 11]);
        assert_eq!(t.refs(10), 2);
        assert_eq!(t.replace(1, vec![12]), vec![11]);
        assert_eq!(t.remove(2), vec![10]);
        assert_eq!(t.pages(), 1);
        assert_eq!(t.entries(), 1);
        let u = Ntt::from_lists(t.sorted());
        assert_eq!(u.list(1), &[12]);
        assert_eq!(u.refs(12), 1);
    }

    /// The running sums behind `entries` and `memory_bytes` match a recount after every
    /// kind of change.
    #[test]
    fn entries_and_memory_are_kept_as_the_lists_change() {
        let recount = |t: &Ntt| {
            let lists: usize = t.lists.values().map(|l| 8 * l.capacity() + 48).sum();
            let entries: usize = t.lists.values().map(Vec::len).sum();
            ((lists + 16 * t.refs.capacity()) as u64, entries)
        };
        let mut t = Ntt::default();
        let mut x = 1u64;
        for i in 0..2000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let node = (x >> 40) % 50;
            match (x >> 20) % 10 {
                0 => drop(t.remove(node)),
                1 => drop(t.replace(node, vec![i, i + 1])),
                _ => t.append(node, i / 3),
            }
            assert_eq!((t.memory_bytes(), t.entries()), recount(&t), "step {i}");
        }
        let u = Ntt::from_lists(t.sorted());
        assert_eq!((u.memory_bytes(), u.entries()), recount(&u));
    }
}
