//! One thread's share of a measured phase ([`Part`]): which entries its stream owns, how
//! many operations it draws, and the seed of its draws.
//!
//! The threads of a phase run on one index, each with its own stream, and a stream checks
//! what the index answers against what it drew (a live key must be found). So the streams
//! must not touch each other's keys: a key one thread deleted would be a "lost" key to the
//! next that searched it. Each part owns its own entries and draws only among them: point
//! workloads the entries `index, index + of, index + 2 of, ...` (the aged index's and the
//! new ones it inserts), `tpcc` the districts `index, index + of, ...`, range deletes one
//! contiguous slice of the keys in key order (a range delete must not cover another
//! thread's keys). Scans read across parts' keys, but check only their own start key.

use super::keys::mix;

/// Part `index` of `of` equal parts of a phase (thread `index` of `of`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    pub index: u32,
    pub of: u32,
}

/// Salt of the thread seeds ([`Part::seed`]).
const THREAD_SALT: u64 = 0x7448_5245_4144_5321;

impl Part {
    /// The whole phase: one thread, the stream of a run without `--threads`.
    pub const WHOLE: Part = Part { index: 0, of: 1 };

    /// Every part of a phase run by `threads` threads (at least one).
    pub fn all(threads: u32) -> impl Iterator<Item = Part> {
        let of = threads.max(1);
        (0..of).map(move |index| Part { index, of })
    }

    /// The seed of this part's draws from the run's `seed`: the seed itself for the whole
    /// phase (so that one thread draws exactly what the bench drew before it had
    /// threads), else a mix of it with the part, so that every thread draws a stream of
    /// its own and the same one in every run.
    pub fn seed(self, seed: u64) -> u64 {
        if self.of <= 1 {
            return seed;
        }
        let part = (u64::from(self.index) << 32) | u64::from(self.of);
        mix(seed ^ mix(THREAD_SALT ^ part))
    }

    /// This part's share of `total`: `total / of`, one more for the first `total % of`
    /// parts, so the shares add up to `total`.
    pub fn share(self, total: u64) -> u64 {
        let of = u64::from(self.of.max(1));
        total / of + u64::from(u64::from(self.index) < total % of)
    }

    /// Entries of `0..n` this part owns in a point workload: `index, index + of, ...`.
    pub fn owned_entries(self, n: u64) -> impl Iterator<Item = u64> {
        let of = u64::from(self.of.max(1));
        (u64::from(self.index)..n).step_by(of as usize)
    }

    /// The first entry index at or above `n` this part owns: where its new entries start.
    pub fn first_new_entry(self, n: u64) -> u64 {
        let of = u64::from(self.of.max(1));
        n + (u64::from(self.index) + of - n % of) % of
    }

    /// The slice `lo..hi` of `len` items (keys in key order) this part owns: the
    /// `index`-th of `of` contiguous slices of (nearly) equal size.
    pub fn slice(self, len: usize) -> std::ops::Range<usize> {
        let of = self.of.max(1) as usize;
        let at = |i: usize| (len as u128 * i as u128 / of as u128) as usize;
        at(self.index as usize)..at(self.index as usize + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up_and_parts_own_disjoint_entries() {
        for of in [1u32, 2, 3, 7] {
            let parts: Vec<Part> = Part::all(of).collect();
            assert_eq!(parts.len(), of as usize);
            for total in [0u64, 1, 5, 1000, 1001] {
                assert_eq!(parts.iter().map(|p| p.share(total)).sum::<u64>(), total);
            }
            let mut owned: Vec<u64> = parts.iter().flat_map(|p| p.owned_entries(50)).collect();
            owned.sort_unstable();
            assert_eq!(owned, (0..50).collect::<Vec<_>>());
            for p in &parts {
                let first = p.first_new_entry(50);
                assert!(first >= 50 && first < 50 + u64::from(of));
                assert_eq!(first % u64::from(of), u64::from(p.index));
            }
            let slices: Vec<_> = parts.iter().map(|p| p.slice(10)).collect();
            assert_eq!(slices[0].start, 0);
            assert_eq!(slices[slices.len() - 1].end, 10);
            assert!(slices.windows(2).all(|w| w[0].end == w[1].start));
        }
        assert_eq!(Part::WHOLE.first_new_entry(50), 50);
        assert_eq!(Part::WHOLE.seed(42), 42);
    }

    #[test]
    fn thread_seeds_are_distinct_and_fixed() {
        let seeds: Vec<u64> = Part::all(8).map(|p| p.seed(42)).collect();
        let mut distinct = seeds.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), 8);
        assert!(!seeds.contains(&42));
        assert_eq!(seeds, Part::all(8).map(|p| p.seed(42)).collect::<Vec<_>>());
        assert_ne!(Part::all(8).next().unwrap().seed(43), seeds[0]);
    }
}
