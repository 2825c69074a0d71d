//! The per-leaf part of the NTT besides the log lists ([`LeafTable`]): the bound on a
//! leaf's entries and its clean-policy state, in an array indexed by node id (module doc,
//! Memory).

use crate::cost::logclean::{CleanPolicy, CleanState};
use crate::error::{Error, Result};
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

/// Leaf id -> its [`LeafMeta`], every leaf of the tree and nothing else. Node ids are
/// dense (numbered from `next_id`, never reused), so the table is an array indexed by id
/// (an inner node's slot is empty); it grows by an eighth at a time, so the capacity it
/// holds, which is what is charged, stays close to the ids numbered.
#[derive(Debug, Default, Clone)]
pub(crate) struct LeafTable {
    slots: Vec<Option<LeafMeta>>,
    len: usize,
}

impl LeafTable {
    pub fn get(&self, id: u64) -> Option<&LeafMeta> {
        usize::try_from(id)
            .ok()
            .and_then(|i| self.slots.get(i))
            .and_then(Option::as_ref)
    }

    pub fn get_mut(&mut self, id: u64) -> Option<&mut LeafMeta> {
        usize::try_from(id)
            .ok()
            .and_then(|i| self.slots.get_mut(i))
            .and_then(Option::as_mut)
    }

    /// Leaf `id`'s metadata, a new leaf's when it has none. `id` is a node id below
    /// the engine's `next_id` (the callers' descent checks it).
    pub fn get_or_default(&mut self, id: u64) -> &mut LeafMeta {
        let i = id as usize;
        if i >= self.slots.len() {
            if i >= self.slots.capacity() {
                let more = (i + 1 - self.slots.len()).max(self.slots.len() / 8).max(16);
                self.slots.reserve_exact(more);
            }
            self.slots.resize(i + 1, None);
        }
        let s = &mut self.slots[i];
        if s.is_none() {
            self.len += 1;
        }
        s.get_or_insert_with(LeafMeta::default)
    }

    /// Set leaf `id`'s metadata (`id` below `next_id`, as for
    /// [`LeafTable::get_or_default`]).
    pub fn insert(&mut self, id: u64, m: LeafMeta) {
        *self.get_or_default(id) = m;
    }

    /// Forget leaf `id`.
    pub fn remove(&mut self, id: u64) {
        if let Some(s) = usize::try_from(id).ok().and_then(|i| self.slots.get_mut(i)) {
            if s.take().is_some() {
                self.len -= 1;
            }
        }
    }

    /// The leaves of a snapshot (`id` below `next_id`, each once).
    pub fn load(&mut self, id: u64, m: LeafMeta, next_id: u64) -> Result<()> {
        if id >= next_id || self.get(id).is_some() {
            return Err(Error::corruption(
                DATA_FILE,
                None,
                format!(
                    "NTT snapshot: leaf {id} is listed twice or not below the next id {next_id}"
                ),
            ));
        }
        self.insert(id, m);
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Every leaf and its metadata, by id.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &LeafMeta)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.as_ref().map(|m| (i as u64, m)))
    }

    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut LeafMeta> {
        self.slots.iter_mut().filter_map(Option::as_mut)
    }

    /// Bytes held: the capacity of the array.
    pub fn memory_bytes(&self) -> u64 {
        (std::mem::size_of::<Option<LeafMeta>>() * self.slots.capacity()) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leaf_costs_twelve_bytes_and_the_table_counts_its_capacity() {
        assert_eq!(std::mem::size_of::<Option<LeafMeta>>(), 12);
        let mut t = LeafTable::default();
        t.get_or_default(5).exact = 3;
        t.insert(2, LeafMeta::default());
        assert_eq!(t.len(), 2);
        assert_eq!(t.iter().map(|(i, _)| i).collect::<Vec<_>>(), vec![2, 5]);
        t.remove(5);
        t.remove(5);
        t.remove(1 << 40);
        assert_eq!(t.len(), 1);
        assert!(t.get(5).is_none() && t.get(1 << 40).is_none());
        assert_eq!(t.memory_bytes(), 12 * t.slots.capacity() as u64);
        assert!(t.load(9, LeafMeta::default(), 9).is_err());
        assert!(t.load(2, LeafMeta::default(), 9).is_err());
        t.load(7, LeafMeta::default(), 9).unwrap();
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn the_clean_state_is_cut_below_the_flag() {
        let c = LeafClean::new(CleanState { acc: u64::MAX });
        assert!(!c.due());
        assert_eq!(c.state().acc, u64::from(CLEAN_DUE - 1));
    }
}
