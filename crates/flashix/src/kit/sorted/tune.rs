//! `k` re-chosen as a tree of stepped levels grows ([`Retune`]): the FD-tree's levels and
//! the LSM-tree's components, whose `k` the FD-tree cost model chooses (§4, App. C.3).
//!
//! The model chooses `k` for the `n` entries the index is expected to hold. An index that
//! outgrows that `n` would otherwise keep the `k` of a smaller index and add a level when
//! its lowest level overflows (§3.3). The new level is then far from the shape the model
//! would give an index of that size: a tree tuned for two levels that grows to a few times
//! its expected entries gets a third level, its L1 no longer fits the buffer pool, and
//! point searches read far more pages than a B+-tree of the same entries.
//!
//! So when `k` was left to the model, the engine asks the model again whenever all of its
//! entries are in one run (component) that has reached its level's capacity: at a bulk
//! load into an empty tree, and when a merge cascade reaches the lowest level and
//! overflows it (the cascade has then merged every level into that run). The run is placed
//! at the level that holds it under the new `k` (the FD-tree rebuilds the levels above
//! from its fences, as after any merge, §3.3), so no entry is rewritten for the change; a
//! larger index gets the `k` and the number of levels the model gives it (App. C.1, C.3).
//! Capacities change only at such moments, when no level above the run holds an entry, so
//! the capacity invariant (|Li| ≤ k^i·|L0|) holds throughout.
//!
//! The model's inputs are the ones the index was created with (the options record's
//! tuning: device costs and search share; the page size, f and |L0|), and the buffer pool
//! at creation, which the engine saves in its state with the `k` in effect: reopening
//! with another pool (as `flashix bench` does for its preparation) does not change what
//! the model is asked.

use crate::cost::fdtree::{choose, FdTreeWorkload};
use crate::cost::DeviceCosts;
use crate::settings::Settings;

/// The model's inputs for re-choosing `k` (all but the entries).
#[derive(Debug, Clone)]
pub struct Retune {
    dev: DeviceCosts,
    w: FdTreeWorkload,
}

impl Retune {
    /// Re-choose with `dev` and the workload `w` (whose `entries` is replaced at each ask).
    pub fn new(dev: DeviceCosts, w: FdTreeWorkload) -> Retune {
        Retune { dev, w }
    }

    /// The model's inputs of an index created with `s` whose pages hold `f` entries and
    /// whose head tree (LSM: C0) has `head_tree_bytes`, asked about a buffer pool of
    /// `pool_bytes`.
    pub fn from_settings(s: &Settings, f: usize, head_tree_bytes: u64, pool_bytes: u64) -> Retune {
        let mut w = s.fdtree_model_workload(head_tree_bytes, f as u64);
        w.buffer_bytes = pool_bytes;
        Retune::new(s.tuning.device, w)
    }

    /// The buffer pool the model is asked about, saved in the engine state.
    pub fn pool_bytes(&self) -> u64 {
        self.w.buffer_bytes
    }

    /// The model's `k` for a tree whose one run stores `stored` entries (the FD-tree's
    /// fences included), or `current` when the model has no answer for that size. The model is asked for
    /// one entry more than `stored`: it sizes the lowest level to at least its `n`, and a
    /// level overflows when it reaches its capacity.
    pub fn k_for(&self, stored: u64, current: u64) -> u64 {
        let mut w = self.w.clone();
        w.entries = stored.saturating_add(1);
        choose(&self.dev, &w).map_or(current, |c| c.k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_larger_tree_gets_the_models_k_for_its_size() {
        let dev = DeviceCosts::from_rates(4096, 20_000.0, 20_000.0, 1300.0, 3300.0).unwrap();
        let mut w = FdTreeWorkload::new(400_000, 0.5, 4096, 169);
        w.head_tree_bytes = 256 << 10;
        w.buffer_bytes = 2 << 20;
        let r = Retune::new(dev, w.clone());
        for n in [400_000u64, 1_000_000, 5_000_000] {
            let mut want = w.clone();
            want.entries = n + 1;
            assert_eq!(r.k_for(n, 7), choose(&dev, &want).unwrap().k, "n = {n}");
        }
        // Two levels while they can hold the tree: k grows with n.
        assert!(r.k_for(1_000_000, 7) > r.k_for(400_000, 7));
        assert_eq!(r.pool_bytes(), 2 << 20);
    }
}
