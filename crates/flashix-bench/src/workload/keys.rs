//! Keys: the key of each entry by index ([`mix`], a bijection, and [`KeyGen`]), the key
//! distributions ([`KeyDist`], Zipf ranks), the live entries of an index ([`KeySpace`]) and
//! the seeded RNGs of the workloads.

use super::part::Part;
use anyhow::{bail, Result};
use rand::rngs::StdRng;
use rand::Rng;
use rand_distr::{Distribution, Zipf};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Zipf exponent of the zipfian key distribution.
pub const ZIPF_THETA: f64 = 0.99;

/// The splitmix64 finalizer: a bijection on `u64` with good avalanche.
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The inverse of [`mix`].
pub fn unmix(mut z: u64) -> u64 {
    z = unxorshift(z, 31);
    z = z.wrapping_mul(0x3196_42b2_d24d_8ec3); // inverse of 0x94d049bb133111eb
    z = unxorshift(z, 27);
    z = z.wrapping_mul(0x96de_1b17_3f11_9089); // inverse of 0xbf58476d1ce4e5b9
    unxorshift(z, 30)
}

fn unxorshift(y: u64, s: u32) -> u64 {
    let mut x = y;
    let mut i = s;
    while i < 64 {
        x = y ^ (x >> s);
        i += s;
    }
    x
}

/// How keys are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyDist {
    Uniform,
    Zipf,
    Seq,
}

impl KeyDist {
    pub fn name(self) -> &'static str {
        match self {
            KeyDist::Uniform => "uniform",
            KeyDist::Zipf => "zipf",
            KeyDist::Seq => "seq",
        }
    }
}

impl fmt::Display for KeyDist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for KeyDist {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "uniform" => KeyDist::Uniform,
            "zipf" | "zipfian" => KeyDist::Zipf,
            "seq" | "sequential" => KeyDist::Seq,
            _ => bail!("unknown key distribution {s:?}; expected uniform, zipf or seq"),
        })
    }
}

/// Keys of entries by index.
#[derive(Debug, Clone, Copy)]
pub struct KeyGen {
    pub dist: KeyDist,
    pub seed: u64,
}

impl KeyGen {
    pub fn new(dist: KeyDist, seed: u64) -> Self {
        KeyGen { dist, seed }
    }

    /// Key of the `i`-th entry ever inserted.
    pub fn key_of(&self, i: u64) -> u64 {
        match self.dist {
            KeyDist::Seq => i,
            KeyDist::Uniform | KeyDist::Zipf => mix(i ^ self.seed),
        }
    }

    /// Value stored for `key` by the `counter`-th write.
    pub fn value_of(&self, key: u64, counter: u64) -> u64 {
        mix(key ^ counter.rotate_left(32) ^ self.seed.rotate_left(17))
    }
}

/// The live entries of an index, by entry index, and the next fresh index.
///
/// Existing entries are picked by position in `live`; a delete swaps the last live entry
/// into the deleted one's position, so picking stays O(1). The key space of one thread's
/// stream ([`KeySpace::for_part`]) holds that thread's entries only.
pub struct KeySpace {
    pub gen: KeyGen,
    live: Vec<u64>,
    next: u64,
    /// Between the indices of consecutive new entries: the number of threads whose
    /// streams share the index out (1 for a whole phase).
    step: u64,
}

impl KeySpace {
    /// An index holding entries `0..n`.
    pub fn with_entries(gen: KeyGen, n: u64) -> Self {
        Self::with_room(gen, n, 0)
    }

    /// An index holding entries `0..n`, with room for `inserts` more taken without a
    /// reallocation: a measured phase must not pay for the bench's own bookkeeping (growing
    /// the live list of the quick scale's keys made the first insert of a phase cost a
    /// noticeable share of a short O-Insert phase).
    pub fn with_room(gen: KeyGen, n: u64, inserts: u64) -> Self {
        Self::for_part(gen, n, inserts, Part::WHOLE)
    }

    /// The entries of `0..n` that `part` owns ([`Part::owned_entries`]), with room for
    /// `inserts` more, whose indices are the part's too: `part.of` streams of these key
    /// spaces never touch each other's keys.
    pub fn for_part(gen: KeyGen, n: u64, inserts: u64, part: Part) -> Self {
        let owned = n
            .saturating_sub(u64::from(part.index))
            .div_ceil(u64::from(part.of.max(1)));
        let mut live = Vec::with_capacity((owned + inserts) as usize);
        live.extend(part.owned_entries(n));
        KeySpace {
            gen,
            live,
            next: part.first_new_entry(n),
            step: u64::from(part.of.max(1)),
        }
    }

    /// Entries the live list holds without a reallocation.
    pub fn capacity(&self) -> u64 {
        self.live.capacity() as u64
    }

    pub fn live(&self) -> u64 {
        self.live.len() as u64
    }

    /// Index the next new entry will get.
    pub fn next_index(&self) -> u64 {
        self.next
    }

    /// Take a fresh entry: returns its key.
    pub fn insert_new(&mut self) -> u64 {
        let i = self.next;
        self.next += self.step;
        self.live.push(i);
        self.gen.key_of(i)
    }

    /// Position (in the live list) of an existing entry drawn by the key distribution.
    fn pick_pos(&self, rng: &mut impl Rng) -> Option<usize> {
        let n = self.live.len();
        if n == 0 {
            return None;
        }
        Some(match self.gen.dist {
            KeyDist::Uniform | KeyDist::Seq => rng.gen_range(0..n),
            KeyDist::Zipf => zipf_rank(n as u64, rng) as usize,
        })
    }

    /// Key of an existing entry, or `None` when the index is empty.
    pub fn pick_existing(&self, rng: &mut impl Rng) -> Option<u64> {
        self.pick_pos(rng).map(|p| self.gen.key_of(self.live[p]))
    }

    /// Remove an existing entry from the live set; returns its key.
    pub fn delete_existing(&mut self, rng: &mut impl Rng) -> Option<u64> {
        let p = self.pick_pos(rng)?;
        let i = self.live.swap_remove(p);
        Some(self.gen.key_of(i))
    }
}

/// A rank in `[0, n)` drawn from Zipf(`ZIPF_THETA`); rank 0 is the most frequent.
pub fn zipf_rank(n: u64, rng: &mut impl Rng) -> u64 {
    match Zipf::new(n.max(1), ZIPF_THETA) {
        Ok(z) => {
            let x: f64 = z.sample(rng);
            (x as u64).saturating_sub(1).min(n.saturating_sub(1))
        }
        Err(_) => 0,
    }
}

/// A seeded RNG for workload `w` (different streams per workload).
pub fn rng_for(seed: u64, salt: u64) -> StdRng {
    use rand::SeedableRng;
    StdRng::seed_from_u64(mix(seed ^ mix(salt)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn mix_is_a_bijection_on_a_sample() {
        let mut seen = HashSet::new();
        let mut r = rng_for(1, 2);
        for i in 0..100_000u64 {
            let x = if i % 2 == 0 { i } else { r.gen() };
            assert_eq!(unmix(mix(x)), x);
            seen.insert(mix(x));
        }
        assert_eq!(seen.len(), 100_000);
        for x in [0, 1, u64::MAX, 1 << 63] {
            assert_eq!(unmix(mix(x)), x);
        }
    }

    #[test]
    fn keys_distinct_and_seq_in_range() {
        let g = KeyGen::new(KeyDist::Uniform, 42);
        let keys: HashSet<u64> = (0..50_000).map(|i| g.key_of(i)).collect();
        assert_eq!(keys.len(), 50_000);
        let s = KeyGen::new(KeyDist::Seq, 42);
        for i in 0..1000 {
            assert_eq!(s.key_of(i), i);
        }
        let mut ks = KeySpace::with_entries(s, 1000);
        let mut r = rng_for(3, 4);
        for _ in 0..10_000 {
            assert!(ks.pick_existing(&mut r).unwrap() < 1000);
        }
        assert_eq!(ks.insert_new(), 1000);
    }

    #[test]
    fn zipf_in_range_and_skewed() {
        let mut r = rng_for(5, 6);
        let n = 10_000;
        let mut hits0 = 0;
        for _ in 0..100_000 {
            let k = zipf_rank(n, &mut r);
            assert!(k < n);
            if k == 0 {
                hits0 += 1;
            }
        }
        // P(rank 0) for theta 0.99 and n = 10^4 is about 10%.
        assert!(hits0 > 5_000, "rank 0 drawn {hits0} times");
        assert_eq!(zipf_rank(1, &mut r), 0);
        let g = KeyGen::new(KeyDist::Zipf, 7);
        let ks = KeySpace::with_entries(g, 500);
        let valid: HashSet<u64> = (0..500).map(|i| g.key_of(i)).collect();
        for _ in 0..10_000 {
            assert!(valid.contains(&ks.pick_existing(&mut r).unwrap()));
        }
    }

    #[test]
    fn delete_removes_from_live() {
        let g = KeyGen::new(KeyDist::Uniform, 1);
        let mut ks = KeySpace::with_entries(g, 100);
        let mut r = rng_for(1, 1);
        let mut deleted = HashSet::new();
        for _ in 0..100 {
            assert!(deleted.insert(ks.delete_existing(&mut r).unwrap()));
        }
        assert_eq!(ks.live(), 0);
        assert!(ks.pick_existing(&mut r).is_none());
    }
}
