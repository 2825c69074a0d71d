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
}

impl Ntt {
    /// The table of saved lists (a checkpoint's), with the page counts rebuilt.
    pub fn from_lists(lists: impl IntoIterator<Item = (u64, Vec<PageId>)>) -> Ntt {
        let mut t = Ntt::default();
        for (node, pages) in lists {
            for &p in &pages {
                *t.refs.entry(p).or_insert(0) += 1;
            }
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
            l.push(page);
            *self.refs.entry(page).or_insert(0) += 1;
        }
    }

    /// Replace `node`'s list by `pages` (compaction, a new node); returns the pages no
    /// list names any more.
    pub fn replace(&mut self, node: u64, pages: Vec<PageId>) -> Vec<PageId> {
        for &p in &pages {
            *self.refs.entry(p).or_insert(0) += 1;
        }
        let old = self.lists.insert(node, pages).unwrap_or_default();
        self.release(old)
    }

    /// Forget `node` (a removed node); returns the pages no list names any more.
    pub fn remove(&mut self, node: u64) -> Vec<PageId> {
        let old = self.lists.remove(&node).unwrap_or_default();
        self.release(old)
    }

    fn release(&mut self, pages: Vec<PageId>) -> Vec<PageId> {
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
        self.lists.values().map(Vec::len).sum()
    }

    /// Bytes held (approximate: map entries and list storage).
    pub fn memory_bytes(&self) -> u64 {
        let lists: usize = self.lists.values().map(|l| 8 * l.capacity() + 48).sum();
        (lists + 16 * self.refs.capacity()) as u64
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
}
