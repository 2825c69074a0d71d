//! The LSMap (PIO B-tree paper §3.2.2): the last leaf segment id of each leaf, in memory, so
//! that an update reads and writes only the leaf's last segment and a search reads only the
//! segments up to it.
//!
//! The paper keeps `log2(L/2)` bits per leaf in a main-memory array. Here the map is a
//! packed array indexed by **page id**, `b` bits per page with `b` the smallest of 1, 2, 4,
//! 8 such that `2^b > L` (`L` segments per leaf, at most 64): the slot of a leaf's first page
//! holds `last + 1`, and 0 means "not known" (the leaf is then read whole and its last
//! segment learned, §3.2.2). Indexing by page keeps the map free of keys and hashing: at
//! `L` = 2 it costs 2 bits per page of the index (about 85 KB for an index of 340,000 pages),
//! where a hash map of leaves took about 17 bytes per leaf.
//!
//! The map is a cache of what the leaves' headers say: losing it (a crash, a reopen)
//! loses no data, only the first reads of each leaf get longer.
//!
//! # Thread safety
//! The words are atomics, so that searches running beside each other on `&self` can
//! record what they learn ([`LsMap::learn`]: a relaxed compare-and-swap of one word,
//! which leaves the other slots of the word as other threads set them); the one thread
//! with `&mut` (a write) changes them with plain stores through `get_mut`, as before.
//! `learn` never grows the map, so the engine keeps a slot for every reachable leaf
//! ([`LsMap::cover`] at open; every leaf made since was inserted with `&mut`, and the map
//! never shrinks). A value learnt is the leaf's true last segment: readers learn only
//! while no write runs (the engine's shared lock), so every thread that learns a leaf
//! learns the same value, and the lock's release orders it before the next write.

use crate::io::PageId;
use std::sync::atomic::{AtomicU64, Ordering};

/// Packed last-segment ids by leaf first page.
#[derive(Debug)]
pub struct LsMap {
    bits: u32,
    words: Vec<AtomicU64>,
    entries: AtomicU64,
}

impl LsMap {
    /// An empty map for leaves of `segs` segments (1..=64).
    pub fn new(segs: u16) -> LsMap {
        LsMap {
            bits: LsMap::bits_for(segs),
            words: Vec::new(),
            entries: AtomicU64::new(0),
        }
    }

    /// Bits per page for leaves of `segs` segments: values `0..=segs` must fit.
    pub fn bits_for(segs: u16) -> u32 {
        [1u32, 2, 4, 8]
            .into_iter()
            .find(|b| (1u32 << b) > u32::from(segs))
            .unwrap_or(8)
    }

    /// Bytes the map takes for an index of `pages` pages.
    pub fn bytes_for(segs: u16, pages: u64) -> u64 {
        (pages * u64::from(LsMap::bits_for(segs))).div_ceil(64) * 8
    }

    fn slot(&self, pid: PageId) -> (usize, u32) {
        let per = 64 / self.bits;
        (
            (pid / u64::from(per)) as usize,
            (pid % u64::from(per)) as u32 * self.bits,
        )
    }

    fn raw(&self, pid: PageId) -> u64 {
        let (w, shift) = self.slot(pid);
        match self.words.get(w) {
            Some(word) => (word.load(Ordering::Relaxed) >> shift) & ((1u64 << self.bits) - 1),
            None => 0,
        }
    }

    fn set_raw(&mut self, pid: PageId, v: u64) {
        let (w, shift) = self.slot(pid);
        if w >= self.words.len() {
            if v == 0 {
                return;
            }
            // Grow by at least an eighth, so that appends at the end stay amortised.
            let want = (w + 1).max(self.words.len() + self.words.len() / 8);
            self.words.resize_with(want, || AtomicU64::new(0));
        }
        let mask = ((1u64 << self.bits) - 1) << shift;
        let word = self.words[w].get_mut();
        let old = (*word & mask) >> shift;
        *word = (*word & !mask) | (v << shift);
        let entries = self.entries.get_mut();
        match (old, v) {
            (0, v) if v != 0 => *entries += 1,
            (o, 0) if o != 0 => *entries -= 1,
            _ => {}
        }
    }

    /// The last segment of the leaf at `pid`, if known.
    pub fn get(&self, pid: PageId) -> Option<u16> {
        match self.raw(pid) {
            0 => None,
            v => Some(v as u16 - 1),
        }
    }

    /// Record that the leaf at `pid` ends at segment `last` (< `segs`).
    pub fn insert(&mut self, pid: PageId, last: u16) {
        self.set_raw(pid, u64::from(last) + 1);
    }

    /// [`LsMap::insert`] from one of many reading threads at once (module doc, Thread
    /// safety): record that the leaf at `pid` ends at segment `last`, which a reader just
    /// read. A leaf without a slot (none is reachable: [`LsMap::cover`]) stays unknown.
    pub fn learn(&self, pid: PageId, last: u16) {
        let (w, shift) = self.slot(pid);
        let Some(word) = self.words.get(w) else {
            return;
        };
        let v = u64::from(last) + 1;
        let mask = ((1u64 << self.bits) - 1) << shift;
        let set = word.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |x| {
            ((x & mask) >> shift != v).then_some((x & !mask) | (v << shift))
        });
        if let Ok(old) = set {
            if old & mask == 0 {
                self.entries.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Give every page below `pages` a slot now (unknown), so that [`LsMap::learn`] can
    /// record any leaf there: at open, for the pages the index had.
    pub fn cover(&mut self, pages: u64) {
        let per = u64::from(64 / self.bits);
        let words = usize::try_from(pages.div_ceil(per)).unwrap_or(usize::MAX);
        if words > self.words.len() {
            self.words.reserve_exact(words - self.words.len());
            self.words.resize_with(words, || AtomicU64::new(0));
        }
    }

    /// Whether the leaf at `pid` has a slot ([`LsMap::cover`]).
    pub fn covers(&self, pid: PageId) -> bool {
        self.slot(pid).0 < self.words.len()
    }

    /// Forget the leaf at `pid`.
    pub fn remove(&mut self, pid: PageId) {
        self.set_raw(pid, 0);
    }

    /// Leaves known.
    pub fn len(&self) -> u64 {
        self.entries.load(Ordering::Relaxed)
    }

    /// Bytes of memory the map holds.
    pub fn memory_bytes(&self) -> u64 {
        self.words.capacity() as u64 * 8
    }

    /// Make room for an index of `pages` pages now, so that growth does not reallocate.
    pub fn reserve_pages(&mut self, pages: u64) {
        let per = u64::from(64 / self.bits);
        let words = pages.div_ceil(per) as usize;
        if words > self.words.len() {
            self.words.reserve_exact(words - self.words.len());
        }
    }

    /// Every known leaf and its last segment, by page.
    pub fn iter(&self) -> impl Iterator<Item = (PageId, u16)> + '_ {
        let per = 64 / self.bits;
        let mask = (1u64 << self.bits) - 1;
        self.words
            .iter()
            .map(|w| w.load(Ordering::Relaxed))
            .enumerate()
            .filter(|&(_, w)| w != 0)
            .flat_map(move |(i, w)| {
                (0..per).filter_map(move |j| {
                    let v = (w >> (j * self.bits)) & mask;
                    (v != 0).then(|| (i as u64 * u64::from(per) + u64::from(j), v as u16 - 1))
                })
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn bits_fit_every_last_segment_and_unknown() {
        assert_eq!(LsMap::bits_for(1), 1);
        assert_eq!(LsMap::bits_for(2), 2);
        assert_eq!(LsMap::bits_for(3), 2);
        assert_eq!(LsMap::bits_for(4), 4);
        assert_eq!(LsMap::bits_for(15), 4);
        assert_eq!(LsMap::bits_for(16), 8);
        assert_eq!(LsMap::bits_for(64), 8);
        // 340,000 pages at 2 bits: 85,000 bytes.
        assert_eq!(LsMap::bytes_for(2, 340_000), 85_000);
    }

    #[test]
    fn matches_a_map_under_random_updates() {
        for segs in [1u16, 2, 3, 5, 16, 64] {
            let mut m = LsMap::new(segs);
            let mut model: BTreeMap<u64, u16> = BTreeMap::new();
            let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ u64::from(segs);
            for _ in 0..5000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let pid = x % 3000;
                if x % 5 == 0 {
                    m.remove(pid);
                    model.remove(&pid);
                } else {
                    let last = ((x >> 20) % u64::from(segs)) as u16;
                    m.insert(pid, last);
                    model.insert(pid, last);
                }
            }
            assert_eq!(m.len(), model.len() as u64, "segs {segs}");
            for pid in 0..3100 {
                assert_eq!(
                    m.get(pid),
                    model.get(&pid).copied(),
                    "segs {segs} pid {pid}"
                );
            }
            let listed: Vec<(u64, u16)> = m.iter().collect();
            let want: Vec<(u64, u16)> = model.into_iter().collect();
            assert_eq!(listed, want, "segs {segs}");
        }
    }

    /// Threads learning leaves beside each other (each slot of a word by another thread)
    /// leave the map the one thread's inserts would, with an exact entry count; a page
    /// without a slot stays unknown.
    #[test]
    fn learning_from_many_threads_matches_inserts() {
        for segs in [1u16, 3, 16] {
            let mut m = LsMap::new(segs);
            m.cover(4000);
            let last = |pid: u64| (pid * 7 % u64::from(segs)) as u16;
            std::thread::scope(|s| {
                for t in 0..4u64 {
                    let m = &m;
                    s.spawn(move || {
                        // Every thread learns every third page, overlapping the others.
                        for pid in (t..4000).step_by(3) {
                            m.learn(pid, last(pid));
                        }
                    });
                }
            });
            m.learn(1 << 40, 0);
            assert!(!m.covers(1 << 40));
            assert_eq!(m.len(), 4000, "segs {segs}");
            for pid in 0..4000 {
                assert_eq!(m.get(pid), Some(last(pid)), "segs {segs} pid {pid}");
            }
            assert_eq!(m.get(1 << 40), None);
            let mut want = LsMap::new(segs);
            for pid in 0..4000 {
                want.insert(pid, last(pid));
            }
            assert!(m.iter().eq(want.iter()));
        }
    }
}
