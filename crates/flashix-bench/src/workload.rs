//! Workloads (FD-tree paper App. D; DESIGN.md, Benchmarks): key generation, operation
//! mixes, and the bookkeeping of which entries are live.
//!
//! Keys are 8-byte `u64`s. The key of the i-th entry ever inserted is a function of `i`
//! ([`KeyGen::key_of`]): `mix(i ^ seed)` for uniform and zipfian keys, where [`mix`] is a
//! bijection on `u64` (the splitmix64 finalizer), so keys are distinct and the keys of an
//! index can be regenerated from the entry indices alone; `i` for sequential keys. The
//! distribution decides which *existing* entry an operation touches: uniform over the live
//! entries, or Zipf(0.99) over them (rank 0 is the hottest).

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

/// One operation of a workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpKind {
    /// Point lookup of an existing key.
    Search,
    /// Insert of a new key.
    Insert,
    /// Delete of an existing key.
    Delete,
    /// Insert of an existing key with a new value.
    Update,
    /// Range scan of this many entries from an existing key.
    Range(u64),
    /// `get_many` of this many existing keys.
    GetMany(u32),
}

/// The named workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Workload {
    OSearch,
    OInsert,
    ODelete,
    OUpdate,
    WSearch,
    WInsert,
    WDelete,
    /// `range-N`: range scans of N entries, each from a random existing key (FD-tree §5.5
    /// Fig. 11, PIO B-tree §4.2.2 by selectivity).
    Range(u64),
    /// `get-many-N`: `get_many` calls of N random existing keys (PIO B-tree MPSearch).
    GetMany(u32),
    /// `mix-S`: S% point searches, the rest inserts (PIO B-tree §4.3's insert/search mixes).
    Mix(u32),
}

/// Entries a `range-N` workload scans in all (its scans: `max(10, min(OPS, this / N))`).
pub const RANGE_BUDGET_ENTRIES: u64 = 4_000_000;

impl Workload {
    /// The fixed-mix workloads.
    pub const ALL: [Workload; 7] = [
        Workload::OSearch,
        Workload::OInsert,
        Workload::ODelete,
        Workload::OUpdate,
        Workload::WSearch,
        Workload::WInsert,
        Workload::WDelete,
    ];

    /// The default set of `flashix bench`.
    pub const DEFAULT: [Workload; 5] = [
        Workload::OSearch,
        Workload::OInsert,
        Workload::WSearch,
        Workload::WInsert,
        Workload::WDelete,
    ];

    pub fn name(self) -> String {
        match self {
            Workload::OSearch => "o-search".into(),
            Workload::OInsert => "o-insert".into(),
            Workload::ODelete => "o-delete".into(),
            Workload::OUpdate => "o-update".into(),
            Workload::WSearch => "w-search".into(),
            Workload::WInsert => "w-insert".into(),
            Workload::WDelete => "w-delete".into(),
            Workload::Range(n) => format!("range-{n}"),
            Workload::GetMany(n) => format!("get-many-{n}"),
            Workload::Mix(s) => format!("mix-{s}"),
        }
    }

    /// A number distinguishing workloads, for seeding their operation draws.
    pub fn seed_index(self) -> u64 {
        match self {
            Workload::OSearch => 0,
            Workload::OInsert => 1,
            Workload::ODelete => 2,
            Workload::OUpdate => 3,
            Workload::WSearch => 4,
            Workload::WInsert => 5,
            Workload::WDelete => 6,
            Workload::Range(n) => mix(7 ^ n.rotate_left(8)),
            Workload::GetMany(n) => mix(8 ^ u64::from(n).rotate_left(8)),
            Workload::Mix(s) => mix(9 ^ u64::from(s).rotate_left(8)),
        }
    }

    /// Percentages of (search, insert, delete, update) of a point-operation workload;
    /// they add up to 100. `None` for range and `get_many` workloads.
    pub fn mix(self) -> Option<[u32; 4]> {
        Some(match self {
            Workload::OSearch => [100, 0, 0, 0],
            Workload::OInsert => [0, 100, 0, 0],
            Workload::ODelete => [0, 0, 100, 0],
            Workload::OUpdate => [0, 0, 0, 100],
            Workload::WSearch => [80, 10, 5, 5],
            Workload::WInsert => [20, 50, 20, 10],
            Workload::WDelete => [20, 20, 50, 10],
            Workload::Mix(s) => [s, 100 - s, 0, 0],
            Workload::Range(_) | Workload::GetMany(_) => return None,
        })
    }

    /// Operations of the measured phase for `ops` (OPS): `ops` point operations, `ops / N`
    /// `get_many` calls of N keys (the same keys in all), and
    /// `max(10, min(ops, RANGE_BUDGET_ENTRIES / N))` range scans of N entries.
    pub fn operations(self, ops: u64) -> u64 {
        match self {
            Workload::Range(n) => (RANGE_BUDGET_ENTRIES / n.max(1)).min(ops).max(10),
            Workload::GetMany(n) => (ops / u64::from(n.max(1))).max(1),
            _ => ops,
        }
    }

    /// Keys one operation touches: N for `range-N` and `get-many-N`, else 1.
    pub fn keys_per_op(self) -> u64 {
        match self {
            Workload::Range(n) => n,
            Workload::GetMany(n) => u64::from(n),
            _ => 1,
        }
    }

    /// Draw the kind of the next operation.
    pub fn draw(self, rng: &mut impl Rng) -> OpKind {
        match self {
            Workload::Range(n) => return OpKind::Range(n),
            Workload::GetMany(n) => return OpKind::GetMany(n),
            _ => {}
        }
        let [s, i, d, _u] = self.mix().unwrap_or([100, 0, 0, 0]);
        let x = rng.gen_range(0..100u32);
        if x < s {
            OpKind::Search
        } else if x < s + i {
            OpKind::Insert
        } else if x < s + i + d {
            OpKind::Delete
        } else {
            OpKind::Update
        }
    }

    /// Parse a comma-separated list, e.g. `o-search,w-insert,range-1000`.
    pub fn parse_list(s: &str) -> Result<Vec<Workload>> {
        let mut out = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let w: Workload = part.parse()?;
            if !out.contains(&w) {
                out.push(w);
            }
        }
        if out.is_empty() {
            bail!("no workload given");
        }
        Ok(out)
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl FromStr for Workload {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        let norm = s.to_ascii_lowercase().replace('_', "-");
        if let Some(w) = Workload::ALL
            .into_iter()
            .find(|w| w.name() == norm || w.name().replace('-', "") == norm)
        {
            return Ok(w);
        }
        let num = |rest: &str, what: &str| -> Result<u64> {
            rest.parse::<u64>()
                .map_err(|_| anyhow::anyhow!("{s:?}: {what} must be a whole number"))
        };
        if let Some(rest) = norm.strip_prefix("range-") {
            let n = num(rest, "the entries per scan")?;
            if !(1..=1 << 30).contains(&n) {
                bail!("{s:?}: a range scan covers 1 to 2^30 entries");
            }
            return Ok(Workload::Range(n));
        }
        if let Some(rest) = norm.strip_prefix("get-many-") {
            let n = num(rest, "the keys per call")?;
            if !(1..=1 << 20).contains(&n) {
                bail!("{s:?}: a get_many call takes 1 to 2^20 keys");
            }
            return Ok(Workload::GetMany(n as u32));
        }
        if let Some(rest) = norm.strip_prefix("mix-") {
            let n = num(rest, "the search percentage")?;
            if n > 100 {
                bail!("{s:?}: the search percentage is 0 to 100");
            }
            return Ok(Workload::Mix(n as u32));
        }
        let names: Vec<_> = Workload::ALL.iter().map(|w| w.name()).collect();
        bail!(
            "unknown workload {s:?}; expected one of {}, range-N, get-many-N or mix-S",
            names.join(", ")
        )
    }
}

/// The live entries of an index, by entry index, and the next fresh index.
///
/// Existing entries are picked by position in `live`; a delete swaps the last live entry
/// into the deleted one's position, so picking stays O(1).
pub struct KeySpace {
    pub gen: KeyGen,
    live: Vec<u64>,
    next: u64,
}

impl KeySpace {
    /// An index holding entries `0..n`.
    pub fn with_entries(gen: KeyGen, n: u64) -> Self {
        KeySpace {
            gen,
            live: (0..n).collect(),
            next: n,
        }
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
        self.next += 1;
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
    fn mix_proportions() {
        let point = Workload::ALL
            .into_iter()
            .chain([Workload::Mix(30), Workload::Mix(100)]);
        for w in point {
            let mix = w.mix().unwrap();
            assert_eq!(mix.iter().sum::<u32>(), 100, "{w}");
            let mut r = rng_for(9, w.seed_index());
            let n = 200_000;
            let mut counts = [0u32; 4];
            for _ in 0..n {
                let i = match w.draw(&mut r) {
                    OpKind::Search => 0,
                    OpKind::Insert => 1,
                    OpKind::Delete => 2,
                    OpKind::Update => 3,
                    other => panic!("{w} drew {other:?}"),
                };
                counts[i] += 1;
            }
            for (c, p) in counts.iter().zip(mix) {
                let share = *c as f64 / n as f64 * 100.0;
                assert!((share - p as f64).abs() < 0.5, "{w}: {counts:?}");
            }
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

    #[test]
    fn parse_workloads() {
        let l = Workload::parse_list("o-search, w-insert,o-search").unwrap();
        assert_eq!(l, vec![Workload::OSearch, Workload::WInsert]);
        assert!(Workload::parse_list("x-search").is_err());
        assert!(Workload::parse_list("").is_err());
        assert_eq!("ODELETE".parse::<Workload>().unwrap(), Workload::ODelete);
        let l = Workload::parse_list("range-65536,get-many-64,mix-80").unwrap();
        assert_eq!(
            l,
            vec![
                Workload::Range(65536),
                Workload::GetMany(64),
                Workload::Mix(80)
            ]
        );
        for bad in ["range-0", "range-x", "get-many-0", "mix-101", "mix-"] {
            assert!(bad.parse::<Workload>().is_err(), "{bad}");
        }
        assert_eq!(Workload::Range(65536).name(), "range-65536");
        assert_eq!(
            Workload::Range(65536).draw(&mut rng_for(1, 1)),
            OpKind::Range(65536)
        );
        assert_eq!(
            Workload::GetMany(8).draw(&mut rng_for(1, 1)),
            OpKind::GetMany(8)
        );
    }

    #[test]
    fn operation_counts_keep_the_keys_comparable() {
        assert_eq!(Workload::OSearch.operations(100_000), 100_000);
        assert_eq!(Workload::GetMany(64).operations(100_000), 1_562);
        assert_eq!(Workload::GetMany(64).keys_per_op(), 64);
        assert_eq!(Workload::Range(1).operations(100_000), 100_000);
        assert_eq!(Workload::Range(65_536).operations(100_000), 61);
        assert_eq!(Workload::Range(1 << 20).operations(100_000), 10);
    }
}
