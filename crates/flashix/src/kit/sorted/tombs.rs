//! Range tombstones of one level of a log-structured index (the FD-tree's runs and head
//! tree, the LSM-tree's components and C0): the FD-tree paper's filter entries (§3.3
//! Deletion) generalised from one key to a key range, as RocksDB's `DeleteRange` does.
//!
//! # Semantics
//! A level's tombstones delete keys in the levels **older** than it, never in its own: an
//! index entry and a tombstone of the same level always have the entry newer. Adding a
//! tombstone to the newest level (the head tree, C0) therefore first removes that level's
//! own entries in the range; a merge of a newer level into an older one drops the older
//! input's entries that a newer tombstone covers and keeps the union of both inputs'
//! tombstones for the levels below (both still cover only those), or none when the output
//! is the last level (nothing older is left to hide). A search takes a level's index entry
//! of the key first, then that level's tombstones, then goes down.
//!
//! # Format and memory
//! Closed intervals `[lo, hi]`, sorted, pairwise disjoint and not adjacent (touching
//! intervals are coalesced), serialised in the manifest's engine state as a list of
//! `[lo, hi]` pairs. Held in memory: 16 bytes an interval, charged to
//! `Stats::memory_bytes`. A range delete costs one interval whatever its size; the
//! intervals of a level are coalesced at every merge and retired at the last level.

use serde::{Deserialize, Serialize};

/// The range tombstones of one level (see the module doc).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Tombs(Vec<(u64, u64)>);

impl Tombs {
    /// No tombstones.
    pub fn new() -> Tombs {
        Tombs(Vec::new())
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Disjoint intervals held.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The intervals, in key order.
    #[cfg(test)]
    pub fn intervals(&self) -> &[(u64, u64)] {
        &self.0
    }

    /// The intervals, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.0.iter().copied()
    }

    /// Bytes held (16 an interval).
    pub fn memory_bytes(&self) -> u64 {
        self.0.capacity() as u64 * 16
    }

    /// Add `[lo, hi]` (`lo <= hi`), coalescing it with every interval it overlaps or
    /// touches.
    pub fn add(&mut self, lo: u64, hi: u64) {
        debug_assert!(lo <= hi);
        // The first interval that ends at or after lo - 1 (could touch or overlap).
        let a = self.0.partition_point(|&(_, h)| h.saturating_add(1) < lo);
        // The intervals from `a` that begin at or before hi + 1.
        let b = a + self.0[a..].partition_point(|&(l, _)| l <= hi.saturating_add(1));
        let (mut nlo, mut nhi) = (lo, hi);
        if a < b {
            nlo = nlo.min(self.0[a].0);
            nhi = nhi.max(self.0[b - 1].1);
        }
        self.0.splice(a..b, [(nlo, nhi)]);
    }

    /// Add every interval of `other`: one merge of the two sorted lists, coalescing as it
    /// goes (a merge of levels unions their sets, which may both be large).
    pub fn union(&mut self, other: &Tombs) {
        if other.0.is_empty() {
            return;
        }
        if self.0.is_empty() {
            self.0.clone_from(&other.0);
            return;
        }
        let (a, b) = (std::mem::take(&mut self.0), &other.0);
        let mut out: Vec<(u64, u64)> = Vec::with_capacity(a.len() + b.len());
        let (mut i, mut j) = (0, 0);
        while i < a.len() || j < b.len() {
            let next = match (a.get(i), b.get(j)) {
                (Some(&x), Some(&y)) if x.0 <= y.0 => {
                    i += 1;
                    x
                }
                (_, Some(&y)) => {
                    j += 1;
                    y
                }
                (Some(&x), None) => {
                    i += 1;
                    x
                }
                (None, None) => break,
            };
            match out.last_mut() {
                Some(last) if last.1.saturating_add(1) >= next.0 => last.1 = last.1.max(next.1),
                _ => out.push(next),
            }
        }
        self.0 = out;
    }

    /// Whether a tombstone covers `key`.
    pub fn covers(&self, key: u64) -> bool {
        let i = self.0.partition_point(|&(_, h)| h < key);
        self.0.get(i).is_some_and(|&(l, _)| l <= key)
    }

    /// Whether one tombstone covers all of `[lo, hi]` (a range scan need not read an
    /// older level there).
    pub fn spans(&self, lo: u64, hi: u64) -> bool {
        let i = self.0.partition_point(|&(_, h)| h < lo);
        self.0.get(i).is_some_and(|&(l, h)| l <= lo && hi <= h)
    }

    /// A cursor answering [`Cover::covers`] for keys asked in nondecreasing order in
    /// amortised O(1) (merges and range scans walk keys in order).
    pub fn cursor(&self) -> Cover<'_> {
        self.cursor_at(0)
    }

    /// A cursor resumed where [`Cover::position`] left one over the same set (a merge
    /// that runs a step at a time keeps the position between steps).
    pub fn cursor_at(&self, position: usize) -> Cover<'_> {
        Cover {
            t: &self.0,
            i: position,
        }
    }

    /// Check the format's invariants: every `lo <= hi`, sorted, disjoint, not adjacent.
    pub fn check(&self) -> Result<(), String> {
        for (i, &(lo, hi)) in self.0.iter().enumerate() {
            if lo > hi {
                return Err(format!("range tombstone {i} is [{lo}, {hi}], empty"));
            }
            if let Some(&(_, ph)) = i.checked_sub(1).and_then(|p| self.0.get(p)) {
                if ph.saturating_add(1) >= lo {
                    return Err(format!(
                        "range tombstone {i} [{lo}, {hi}] overlaps or touches the one before, \
                         which ends at {ph}"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// A forward-only cursor over a level's tombstones (see [`Tombs::cursor`]).
#[derive(Debug, Clone)]
pub struct Cover<'a> {
    t: &'a [(u64, u64)],
    i: usize,
}

impl Cover<'_> {
    /// Whether a tombstone covers `key`; keys must come in nondecreasing order.
    #[inline]
    pub fn covers(&mut self, key: u64) -> bool {
        while self.t.get(self.i).is_some_and(|&(_, h)| h < key) {
            self.i += 1;
        }
        self.t.get(self.i).is_some_and(|&(l, _)| l <= key)
    }

    /// Where the cursor stands, for [`Tombs::cursor_at`].
    pub fn position(&self) -> usize {
        self.i
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    proptest! {
        /// Adding intervals in any order equals the set of keys they cover, and the
        /// intervals stay sorted, disjoint and coalesced; the cursor agrees with `covers`.
        #[test]
        fn add_keeps_the_covered_set_and_the_invariants(
            adds in proptest::collection::vec((0u64..120, 0u64..20), 0..30),
        ) {
            let mut t = Tombs::new();
            let mut model = BTreeSet::new();
            for &(lo, len) in &adds {
                t.add(lo, lo + len);
                model.extend(lo..=lo + len);
                prop_assert!(t.check().is_ok(), "{:?}", t);
            }
            let mut cur = t.cursor();
            for k in 0..150 {
                prop_assert_eq!(t.covers(k), model.contains(&k), "key {}", k);
                prop_assert_eq!(cur.covers(k), model.contains(&k), "cursor at key {}", k);
            }
            let mut u = Tombs::new();
            u.add(200, 210);
            u.union(&t);
            prop_assert!(u.check().is_ok());
            prop_assert_eq!(u.len(), t.len() + 1);
        }
    }

    proptest! {
        /// The union of two sets covers exactly the keys either covers, in one well-formed
        /// set, equal to adding the intervals one by one.
        #[test]
        fn union_covers_what_either_covers(
            xs in proptest::collection::vec((0u64..120, 0u64..20), 0..15),
            ys in proptest::collection::vec((0u64..120, 0u64..20), 0..15),
        ) {
            let mut a = Tombs::new();
            let mut b = Tombs::new();
            xs.iter().for_each(|&(lo, len)| a.add(lo, lo + len));
            ys.iter().for_each(|&(lo, len)| b.add(lo, lo + len));
            let mut one_by_one = a.clone();
            ys.iter().for_each(|&(lo, len)| one_by_one.add(lo, lo + len));
            let mut u = a.clone();
            u.union(&b);
            prop_assert!(u.check().is_ok(), "{:?}", u);
            for k in 0..150 {
                prop_assert_eq!(u.covers(k), a.covers(k) || b.covers(k), "key {}", k);
            }
            prop_assert_eq!(u, one_by_one);
        }
    }

    #[test]
    fn union_merges_at_the_key_space_ends() {
        let mut a = Tombs::new();
        a.add(0, 5);
        a.add(u64::MAX - 3, u64::MAX);
        let mut b = Tombs::new();
        b.add(6, 9);
        b.add(u64::MAX, u64::MAX);
        a.union(&b);
        assert_eq!(a.intervals(), &[(0, 9), (u64::MAX - 3, u64::MAX)]);
    }

    #[test]
    fn add_coalesces_touching_intervals_and_handles_the_key_space_ends() {
        let mut t = Tombs::new();
        t.add(10, 19);
        t.add(30, 39);
        t.add(20, 29);
        assert_eq!(t.intervals(), &[(10, 39)]);
        t.add(u64::MAX - 1, u64::MAX);
        t.add(0, 0);
        assert_eq!(t.intervals(), &[(0, 0), (10, 39), (u64::MAX - 1, u64::MAX)]);
        assert!(t.covers(u64::MAX) && t.covers(0) && !t.covers(1) && !t.covers(40));
        assert!(t.spans(10, 39) && t.spans(12, 12) && !t.spans(9, 12) && !t.spans(30, 40));
        t.add(0, u64::MAX);
        assert_eq!(t.intervals(), &[(0, u64::MAX)]);
    }

    #[test]
    fn check_names_an_empty_or_overlapping_interval() {
        assert!(Tombs(vec![(5, 4)]).check().unwrap_err().contains("empty"));
        assert!(Tombs(vec![(1, 5), (6, 9)])
            .check()
            .unwrap_err()
            .contains("touches"));
        assert!(Tombs(vec![(1, 5), (7, 9)]).check().is_ok());
    }

    #[test]
    fn serialised_as_a_list_of_pairs() {
        let mut t = Tombs::new();
        t.add(1, 2);
        t.add(u64::MAX, u64::MAX);
        let s = serde_json::to_string(&t).unwrap();
        assert_eq!(s, "[[1,2],[18446744073709551615,18446744073709551615]]");
        assert_eq!(serde_json::from_str::<Tombs>(&s).unwrap(), t);
    }
}
