//! The NTT besides the log lists ([`NodeTable`]): per leaf the bound on its entries and
//! its clean-policy state, per inner node the page of its latest copy, in one array
//! indexed by node id (module doc, Memory).

use crate::cost::logclean::{CleanPolicy, CleanState};
use crate::error::{Error, Result};
use crate::io::PageId;
use crate::page::DATA_FILE;
use std::sync::atomic::{AtomicU32, Ordering};

/// What the NTT keeps per leaf besides its log list: 12 bytes.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct LeafMeta {
    /// The clean policy's state (§4.4's `acc`; §5's "read count").
    pub clean: LeafClean,
    /// Entries at the last rebuild (a leaf holds at most `leaf_order` entries, which a
    /// page of at most 1 MiB bounds below 2^16).
    pub exact: u16,
    /// Log entries appended since (inserts and tombstones; at most `leaf_order + 1`
    /// before the insert that passes the order reorganises the leaf).
    pub pending: u16,
    /// The list is one compact page (nothing to clean).
    pub compact: bool,
}

impl LeafMeta {
    /// `exact + pending`: what bounds the leaf's entries without reading it.
    pub fn bound(&self) -> u64 {
        u64::from(self.exact) + u64::from(self.pending)
    }
}

/// The flag of [`LeafClean`]: a clean waits in `Fbx::deferred`.
pub(crate) const CLEAN_DUE: u32 = 1 << 31;

/// A leaf's clean-policy state ([`CleanState::acc`]) in a form that shared reads update
/// (compare-and-swap: each read applies the policy to the state the previous one left),
/// and one flag, set when a shared read's policy decision asked for a clean that waits for
/// the next write in `Fbx::deferred` (module doc, Thread safety). The accumulator of
/// every policy stays far below the flag (list lengths, read counts and thresholds of a
/// few hundred); a larger one is cut to fit.
#[derive(Debug, Default)]
pub(crate) struct LeafClean(pub AtomicU32);

/// `acc` cut to what a [`LeafClean`] holds.
pub(crate) fn fit(acc: u64) -> u32 {
    acc.min(u64::from(CLEAN_DUE - 1)) as u32
}

impl LeafClean {
    pub fn new(st: CleanState) -> LeafClean {
        LeafClean(AtomicU32::new(fit(st.acc)))
    }

    /// The policy's state (a deferred clean's post-clean state when one waits).
    pub fn state(&self) -> CleanState {
        CleanState {
            acc: u64::from(self.0.load(Ordering::Relaxed) & !CLEAN_DUE),
        }
    }

    /// True when a clean of the leaf waits in `Fbx::deferred`.
    pub fn due(&self) -> bool {
        self.0.load(Ordering::Relaxed) & CLEAN_DUE != 0
    }

    /// Set the state, with no clean waiting (a write's, under `&mut`).
    pub fn set(&mut self, st: CleanState) {
        *self.0.get_mut() = fit(st.acc);
    }

    /// A new node's state ([`CleanPolicy::reset`]), with no clean waiting.
    pub fn reset(&mut self) {
        let mut st = self.state();
        CleanPolicy::reset(&mut st);
        self.set(st);
    }
}

impl Clone for LeafClean {
    fn clone(&self) -> LeafClean {
        LeafClean(AtomicU32::new(self.0.load(Ordering::Relaxed)))
    }
}

impl PartialEq for LeafClean {
    fn eq(&self, other: &LeafClean) -> bool {
        self.0.load(Ordering::Relaxed) == other.0.load(Ordering::Relaxed)
    }
}

impl Eq for LeafClean {}

/// A node's slot in the [`NodeTable`].
#[derive(Debug, Default, Clone, PartialEq, Eq)]
enum Slot {
    /// No node (an id not numbered yet, or a removed leaf).
    #[default]
    Free,
    Leaf(LeafMeta),
    /// An inner node: the page of its latest copy.
    Inner(u32),
}

/// Node id -> a leaf's [`LeafMeta`] or an inner node's page: every node of the tree and
/// nothing else. Node ids are dense (numbered from `next_id`, never reused), so the
/// table is an array indexed by id, 12 bytes a node; it grows by an eighth at a time, so
/// the capacity it holds, which is what is charged, stays close to the ids numbered.
#[derive(Debug, Default, Clone)]
pub(crate) struct NodeTable {
    slots: Vec<Slot>,
    leaves: usize,
    inner: usize,
}

impl NodeTable {
    fn slot(&self, id: u64) -> Option<&Slot> {
        usize::try_from(id).ok().and_then(|i| self.slots.get(i))
    }

    /// Node `id`'s slot, the array grown to hold it. `id` is a node id below the
    /// engine's `next_id` (the callers' descent checks it).
    fn slot_mut(&mut self, id: u64) -> &mut Slot {
        let i = id as usize;
        if i >= self.slots.len() {
            if i >= self.slots.capacity() {
                let more = (i + 1 - self.slots.len()).max(self.slots.len() / 8).max(16);
                self.slots.reserve_exact(more);
            }
            self.slots.resize(i + 1, Slot::Free);
        }
        &mut self.slots[i]
    }

    /// Put `new` in `id`'s slot, keeping the counts.
    fn put(&mut self, id: u64, new: Slot) -> Slot {
        let kind = |s: &Slot| match s {
            Slot::Free => (0, 0),
            Slot::Leaf(_) => (1, 0),
            Slot::Inner(_) => (0, 1),
        };
        let (add_leaf, add_inner) = kind(&new);
        let old = std::mem::replace(self.slot_mut(id), new);
        let (sub_leaf, sub_inner) = kind(&old);
        self.leaves = self.leaves + add_leaf - sub_leaf;
        self.inner = self.inner + add_inner - sub_inner;
        old
    }

    pub fn get(&self, id: u64) -> Option<&LeafMeta> {
        match self.slot(id) {
            Some(Slot::Leaf(m)) => Some(m),
            _ => None,
        }
    }

    pub fn get_mut(&mut self, id: u64) -> Option<&mut LeafMeta> {
        match usize::try_from(id).ok().and_then(|i| self.slots.get_mut(i)) {
            Some(Slot::Leaf(m)) => Some(m),
            _ => None,
        }
    }

    /// Leaf `id`'s metadata, a new leaf's when it has none (`id` below `next_id`).
    pub fn get_or_default(&mut self, id: u64) -> &mut LeafMeta {
        if self.get(id).is_none() {
            self.put(id, Slot::Leaf(LeafMeta::default()));
        }
        match self.slot_mut(id) {
            Slot::Leaf(m) => m,
            _ => unreachable!("the slot was just made a leaf's"),
        }
    }

    /// Set leaf `id`'s metadata (`id` below `next_id`).
    pub fn insert(&mut self, id: u64, m: LeafMeta) {
        self.put(id, Slot::Leaf(m));
    }

    /// Forget leaf `id`.
    pub fn remove(&mut self, id: u64) {
        if self.get(id).is_some() {
            self.put(id, Slot::Free);
        }
    }

    /// Refuse an id a snapshot names twice or at or beyond `next_id`.
    fn check_new(&self, id: u64, next_id: u64) -> Result<()> {
        if id >= next_id || !matches!(self.slot(id), None | Some(Slot::Free)) {
            return Err(Error::corruption(
                DATA_FILE,
                None,
                format!(
                    "NTT snapshot: node {id} is listed twice or not below the next id {next_id}"
                ),
            ));
        }
        Ok(())
    }

    /// A leaf of a snapshot.
    pub fn load(&mut self, id: u64, m: LeafMeta, next_id: u64) -> Result<()> {
        self.check_new(id, next_id)?;
        self.insert(id, m);
        Ok(())
    }

    /// An inner node of a snapshot.
    pub fn load_inner(&mut self, id: u64, page: PageId, next_id: u64) -> Result<()> {
        self.check_new(id, next_id)?;
        self.set_inner(id, page).map(drop)
    }

    /// Leaves.
    pub fn len(&self) -> usize {
        self.leaves
    }

    /// Every leaf and its metadata, by id.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &LeafMeta)> {
        self.slots.iter().enumerate().filter_map(|(i, s)| match s {
            Slot::Leaf(m) => Some((i as u64, m)),
            _ => None,
        })
    }

    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut LeafMeta> {
        self.slots.iter_mut().filter_map(|s| match s {
            Slot::Leaf(m) => Some(m),
            _ => None,
        })
    }

    /// The page of inner node `id`'s latest copy.
    pub fn inner(&self, id: u64) -> Option<PageId> {
        match self.slot(id) {
            Some(&Slot::Inner(p)) => Some(PageId::from(p)),
            _ => None,
        }
    }

    /// Point inner node `id` (below `next_id`) at `page`; returns its previous page.
    pub fn set_inner(&mut self, id: u64, page: PageId) -> Result<Option<PageId>> {
        let p = u32::try_from(page).map_err(|_| {
            Error::InvalidArgument(format!(
                "page {page} is beyond the 2^32 pages the FBX-tree's node table names"
            ))
        })?;
        Ok(match self.put(id, Slot::Inner(p)) {
            Slot::Inner(old) => Some(PageId::from(old)),
            _ => None,
        })
    }

    /// Inner nodes.
    pub fn inner_len(&self) -> usize {
        self.inner
    }

    /// Every inner node and its page, by id.
    pub fn inner_iter(&self) -> impl Iterator<Item = (u64, PageId)> + '_ {
        self.slots.iter().enumerate().filter_map(|(i, s)| match s {
            &Slot::Inner(p) => Some((i as u64, PageId::from(p))),
            _ => None,
        })
    }

    /// Bytes held: the capacity of the array.
    pub fn memory_bytes(&self) -> u64 {
        (std::mem::size_of::<Slot>() * self.slots.capacity()) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_costs_twelve_bytes_and_the_table_counts_its_capacity() {
        assert_eq!(std::mem::size_of::<Slot>(), 12);
        let mut t = NodeTable::default();
        t.get_or_default(5).exact = 3;
        t.insert(2, LeafMeta::default());
        assert_eq!(t.set_inner(3, 40).unwrap(), None);
        assert_eq!(t.set_inner(3, 41).unwrap(), Some(40));
        assert!(t.set_inner(4, 1 << 32).is_err());
        assert_eq!((t.len(), t.inner_len()), (2, 1));
        assert_eq!(t.iter().map(|(i, _)| i).collect::<Vec<_>>(), vec![2, 5]);
        assert_eq!(t.inner_iter().collect::<Vec<_>>(), vec![(3, 41)]);
        assert_eq!((t.inner(3), t.inner(5), t.get(3)), (Some(41), None, None));
        t.remove(5);
        t.remove(5);
        t.remove(3);
        t.remove(1 << 40);
        assert_eq!((t.len(), t.inner_len()), (1, 1));
        assert!(t.get(5).is_none() && t.get(1 << 40).is_none());
        assert_eq!(t.memory_bytes(), 12 * t.slots.capacity() as u64);
        assert!(t.load(9, LeafMeta::default(), 9).is_err());
        assert!(t.load(2, LeafMeta::default(), 9).is_err());
        assert!(t.load_inner(3, 7, 9).is_err());
        t.load(7, LeafMeta::default(), 9).unwrap();
        t.load_inner(8, 7, 9).unwrap();
        assert_eq!((t.len(), t.inner_len()), (2, 2));
    }

    #[test]
    fn the_clean_state_is_cut_below_the_flag() {
        let c = LeafClean::new(CleanState { acc: u64::MAX });
        assert!(!c.due());
        assert_eq!(c.state().acc, u64::from(CLEAN_DUE - 1));
    }
}
