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
    /// `bulk_insert` of this many new keys.
    BulkInsert(u32),
    /// `delete_range` over this many consecutive existing keys.
    RangeDelete(u64),
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
    /// `tpcc`: a TPC-C-like index trace (PIO B-tree §4.3): 71.5% point search, 23.8% insert,
    /// 3.7% range, 1% delete, with TPC-C's locality (see [`Tpcc`]).
    Tpcc,
    /// `bulk-insert-N`: `Db::bulk_insert` of elementary bulks of N new keys, in all one key
    /// for every 9 live entries (bulk index thesis §6.1: 50,000 keys into an index of 450,000).
    BulkInsert(u32),
    /// `range-delete-N`: `Db::delete_range` over N consecutive existing keys.
    RangeDelete(u64),
}

/// Entries a `range-N` workload scans in all, per measured operation (OPS): its scans are
/// `max(10, min(OPS, RANGE_ENTRIES_PER_OP * OPS / N))` (4M entries at 100,000 OPS).
pub const RANGE_ENTRIES_PER_OP: u64 = 40;

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

    /// The default set of `flashix bench` (the quick suite).
    pub const DEFAULT: [Workload; 11] = [
        Workload::OSearch,
        Workload::OInsert,
        Workload::ODelete,
        Workload::OUpdate,
        Workload::WSearch,
        Workload::WInsert,
        Workload::WDelete,
        Workload::Range(1000),
        Workload::Tpcc,
        Workload::BulkInsert(100),
        Workload::RangeDelete(100),
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
            Workload::Tpcc => "tpcc".into(),
            Workload::BulkInsert(n) => format!("bulk-insert-{n}"),
            Workload::RangeDelete(n) => format!("range-delete-{n}"),
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
            Workload::Tpcc => 10,
            Workload::BulkInsert(n) => mix(11 ^ u64::from(n).rotate_left(8)),
            Workload::RangeDelete(n) => mix(12 ^ n.rotate_left(8)),
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
            Workload::Range(_)
            | Workload::GetMany(_)
            | Workload::Tpcc
            | Workload::BulkInsert(_)
            | Workload::RangeDelete(_) => return None,
        })
    }

    /// Operations of the measured phase for `ops` (OPS) on an index of `live` entries:
    /// `ops` point operations (and `tpcc` operations), `ops / N` `get_many` calls of N keys
    /// (the same keys in all), `max(10, min(ops, RANGE_ENTRIES_PER_OP * ops / N))` range scans of
    /// N entries, `max(1, live / 9 / N)` bulks of N keys (thesis §6.1's 50,000 into
    /// 450,000), and `max(1, min(ops, live / 10 / N))` range deletes of N keys (at most a
    /// tenth of the index is deleted).
    pub fn operations(self, ops: u64, live: u64) -> u64 {
        match self {
            Workload::Range(n) => (RANGE_ENTRIES_PER_OP.saturating_mul(ops) / n.max(1))
                .min(ops)
                .max(10),
            Workload::GetMany(n) => (ops / u64::from(n.max(1))).max(1),
            Workload::BulkInsert(n) => (live / 9 / u64::from(n.max(1))).max(1),
            Workload::RangeDelete(n) => (live / 10 / n.max(1)).min(ops).max(1),
            _ => ops,
        }
    }

    /// Keys one operation touches: N for `range-N`, `get-many-N`, `bulk-insert-N` and
    /// `range-delete-N`, else 1.
    pub fn keys_per_op(self) -> u64 {
        match self {
            Workload::Range(n) | Workload::RangeDelete(n) => n,
            Workload::GetMany(n) | Workload::BulkInsert(n) => u64::from(n),
            _ => 1,
        }
    }

    /// True when the workload writes (so its device limit counts write bandwidth).
    pub fn writes(self) -> bool {
        !matches!(
            self,
            Workload::OSearch | Workload::Range(_) | Workload::GetMany(_)
        ) && self.mix().map_or(true, |m| m[0] < 100)
    }

    /// Draw the kind of the next operation.
    pub fn draw(self, rng: &mut impl Rng) -> OpKind {
        match self {
            Workload::Range(n) => return OpKind::Range(n),
            Workload::GetMany(n) => return OpKind::GetMany(n),
            Workload::BulkInsert(n) => return OpKind::BulkInsert(n),
            Workload::RangeDelete(n) => return OpKind::RangeDelete(n),
            Workload::Tpcc => return Tpcc::draw_kind(rng),
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
        if norm == "tpcc" {
            return Ok(Workload::Tpcc);
        }
        if let Some(rest) = norm.strip_prefix("bulk-insert-") {
            let n = num(rest, "the keys per bulk")?;
            if !(1..=10_000).contains(&n) {
                bail!("{s:?}: an elementary bulk holds 1 to 10,000 keys (thesis §6.1)");
            }
            return Ok(Workload::BulkInsert(n as u32));
        }
        if let Some(rest) = norm.strip_prefix("range-delete-") {
            let n = num(rest, "the keys per range delete")?;
            if !(1..=1 << 30).contains(&n) {
                bail!("{s:?}: a range delete covers 1 to 2^30 keys");
            }
            return Ok(Workload::RangeDelete(n));
        }
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
            "unknown workload {s:?}; expected one of {}, range-N, get-many-N, mix-S, tpcc, bulk-insert-N or range-delete-N",
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

/// One operation of a measured phase, with its keys and values chosen: what the runner
/// executes and what the determinism test compares.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Op {
    /// `get` of a key that is live.
    Get(u64),
    /// `insert` of a new key.
    Insert(u64, u64),
    /// `insert` of a live key with a new value.
    Update(u64, u64),
    /// `delete` of a live key.
    Delete(u64),
    /// Scan of `len` entries from the live key `start`.
    Range { start: u64, len: u64 },
    /// `get_many` of live keys.
    GetMany(Vec<u64>),
    /// `bulk_insert` of new pairs, sorted by key.
    BulkInsert(Vec<(u64, u64)>),
    /// `delete_range(lo..=hi)`, which holds `keys` live keys.
    DeleteRange { lo: u64, hi: u64, keys: u64 },
}

impl Op {
    /// The point kind of the operation, for per-kind counts.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Op::Get(_) => "search",
            Op::Insert(..) => "insert",
            Op::Update(..) => "update",
            Op::Delete(_) => "delete",
            Op::Range { .. } => "range",
            Op::GetMany(_) => "get-many",
            Op::BulkInsert(_) => "bulk-insert",
            Op::DeleteRange { .. } => "range-delete",
        }
    }
}

/// The TPC-C-like index trace of the `tpcc` workload (PIO B-tree §4.3 replays a TPC-C
/// index trace; this is a synthetic model of it).
///
/// The index is read as the order index of a TPC-C database of [`TPCC_WAREHOUSES`]
/// warehouses (PIO B-tree §4.2's trace used 100) of 10 districts: the live keys, sorted, are cut into
/// [`TPCC_DISTRICTS`] groups of equal size, each one district's orders, so that a
/// district's keys are contiguous (spatial locality). Each operation first picks a district
/// uniformly (the terminal's home warehouse and district), then draws its kind:
///
/// - 71.5% point search: 60% of them one of the district's 32 most recent undelivered
///   orders (order-status, stock-level: temporal locality), the rest an older order of
///   the district, uniformly;
/// - 23.8% insert (new-order): the next order number of the district, a key just above
///   the district's highest key, so new orders are appended at the end of each district's
///   key range;
/// - 3.7% range (stock-level): a scan of the district's 20 most recent orders (20 older
///   ones when it has fewer new orders);
/// - 1% delete (delivery): the district's oldest undelivered new order (an older order
///   when none is pending).
///
/// The keys need room above each district's highest key: sequential keys have none, so
/// `tpcc` refuses `--key-dist seq`; with zipf keys the layout is the uniform one (the
/// trace's own skew replaces the zipf draw).
pub struct Tpcc {
    districts: Vec<District>,
}

/// Warehouses of the `tpcc` model.
pub const TPCC_WAREHOUSES: usize = 100;
/// Districts of the `tpcc` model (10 per warehouse, as in TPC-C).
pub const TPCC_DISTRICTS: usize = TPCC_WAREHOUSES * 10;
/// Recent orders a `tpcc` search of a recent order draws from.
pub const TPCC_RECENT: usize = 32;
/// Orders a `tpcc` range scan covers (TPC-C stock-level reads the last 20 orders).
pub const TPCC_SCAN: u64 = 20;

struct District {
    /// Older orders (loaded before the run), live.
    old: Vec<u64>,
    /// Undelivered orders of this run, oldest first.
    recent: std::collections::VecDeque<u64>,
    /// Key of the next new order.
    next: u64,
    /// First key of the next district (exclusive bound of new orders).
    limit: u64,
}

impl Tpcc {
    /// Shares of (search, insert, range, delete) in tenths of a percent.
    pub const MIX_PERMILLE: [u32; 4] = [715, 238, 37, 10];

    /// The districts of an index holding `keys` (any order), with room for `ops` new orders.
    pub fn new(mut keys: Vec<u64>, ops: u64) -> Result<Tpcc> {
        if keys.is_empty() {
            bail!("tpcc needs a non-empty index");
        }
        keys.sort_unstable();
        let n = keys.len();
        let d = TPCC_DISTRICTS.min(n);
        let mut districts = Vec::with_capacity(d);
        for i in 0..d {
            let (lo, hi) = (i * n / d, (i + 1) * n / d);
            let old = keys[lo..hi].to_vec();
            let next = keys[hi - 1].saturating_add(1);
            let limit = keys.get(hi).copied().unwrap_or(u64::MAX);
            if limit.saturating_sub(next) < ops {
                bail!(
                    "tpcc needs room for new orders above each district's keys; these keys \
                     are too dense (sequential?): use --key-dist uniform or zipf"
                );
            }
            districts.push(District {
                old,
                recent: Default::default(),
                next,
                limit,
            });
        }
        Ok(Tpcc { districts })
    }

    /// The kind of the next operation (the district is drawn separately).
    pub fn draw_kind(rng: &mut impl Rng) -> OpKind {
        let [s, i, r, _d] = Self::MIX_PERMILLE;
        let x = rng.gen_range(0..1000u32);
        if x < s {
            OpKind::Search
        } else if x < s + i {
            OpKind::Insert
        } else if x < s + i + r {
            OpKind::Range(TPCC_SCAN)
        } else {
            OpKind::Delete
        }
    }

    /// Live entries.
    pub fn live(&self) -> u64 {
        self.districts
            .iter()
            .map(|d| (d.old.len() + d.recent.len()) as u64)
            .sum()
    }

    fn next_op(&mut self, gen: &KeyGen, n: u64, rng: &mut impl Rng) -> Op {
        let kind = Self::draw_kind(rng);
        let nd = self.districts.len();
        let mut di = rng.gen_range(0..nd);
        // A district emptied by deletes hands the operation to the next non-empty one.
        for _ in 0..nd {
            let d = &self.districts[di];
            if !d.old.is_empty() || !d.recent.is_empty() || kind == OpKind::Insert {
                break;
            }
            di = (di + 1) % nd;
        }
        let d = &mut self.districts[di];
        let old_key = |d: &District, rng: &mut dyn rand::RngCore| -> Option<u64> {
            if d.old.is_empty() {
                None
            } else {
                Some(d.old[rng.gen_range(0..d.old.len())])
            }
        };
        let recent_key = |d: &District, rng: &mut dyn rand::RngCore| -> Option<u64> {
            let r = d.recent.len().min(TPCC_RECENT);
            if r == 0 {
                None
            } else {
                Some(d.recent[d.recent.len() - 1 - rng.gen_range(0..r)])
            }
        };
        match kind {
            OpKind::Search => {
                let recent_first = rng.gen_range(0..10) < 6;
                let k = if recent_first {
                    recent_key(d, rng).or_else(|| old_key(d, rng))
                } else {
                    old_key(d, rng).or_else(|| recent_key(d, rng))
                };
                Op::Get(k.unwrap_or(d.next))
            }
            OpKind::Insert => {
                let k = d.next.min(d.limit.saturating_sub(1));
                d.next = d.next.saturating_add(1);
                d.recent.push_back(k);
                Op::Insert(k, gen.value_of(k, n + 2))
            }
            OpKind::Range(len) => {
                let start = if d.recent.len() >= len as usize {
                    Some(d.recent[d.recent.len() - len as usize])
                } else {
                    old_key(d, rng).or_else(|| d.recent.front().copied())
                };
                Op::Range {
                    start: start.unwrap_or(d.next),
                    len,
                }
            }
            _ => {
                let k = match d.recent.pop_front() {
                    Some(k) => Some(k),
                    None if d.old.is_empty() => None,
                    None => {
                        let i = rng.gen_range(0..d.old.len());
                        Some(d.old.swap_remove(i))
                    }
                };
                Op::Delete(k.unwrap_or(d.next))
            }
        }
    }
}

/// The live keys in key order, for range deletes: deleted positions are marked, not
/// removed, so a delete of N keys costs O(N) (plus the marked keys it skips).
struct SortedKeys {
    keys: Vec<u64>,
    deleted: Vec<bool>,
    live: u64,
}

impl SortedKeys {
    fn new(mut keys: Vec<u64>) -> Self {
        keys.sort_unstable();
        let live = keys.len() as u64;
        let deleted = vec![false; keys.len()];
        SortedKeys {
            keys,
            deleted,
            live,
        }
    }

    /// Delete up to `n` live keys from the first live key at or after position `p`
    /// (wrapping to the start to find one); returns (first, last, count) of the keys
    /// deleted. Fewer than `n` when the end of the keys comes first.
    fn take_run(&mut self, p: usize, n: u64) -> Option<(u64, u64, u64)> {
        if self.live == 0 {
            return None;
        }
        let len = self.keys.len();
        let mut i = p % len;
        // Skip to a live key, wrapping once.
        let mut skipped = 0;
        while self.deleted[i] {
            i = (i + 1) % len;
            skipped += 1;
            if skipped > len {
                return None;
            }
        }
        let first = self.keys[i];
        let mut last = first;
        let mut count = 0;
        while i < len && count < n {
            if !self.deleted[i] {
                self.deleted[i] = true;
                last = self.keys[i];
                count += 1;
            }
            i += 1;
        }
        self.live -= count;
        Some((first, last, count))
    }
}

enum StreamState {
    Point(KeySpace),
    Tpcc(Tpcc),
    Sorted(SortedKeys),
}

/// The operation stream of one measured phase: a pure function of (workload, key
/// generator, live entries, seed, OPS), so two runs with the same seed perform identical
/// operations on every engine and peer.
pub struct OpStream {
    w: Workload,
    gen: KeyGen,
    rng: StdRng,
    state: StreamState,
    n: u64,
    total: u64,
    /// Keys inserted so far above each bulk's start key (`bulk-insert-N`).
    bulk_starts: std::collections::HashMap<u64, u64>,
    /// Keys inserted by clustered bulks (not in the key space's live list).
    bulk_keys: u64,
}

/// A bulk of `b` new sequential keys at the end of the key space.
fn bulk_at_end(ks: &mut KeySpace, b: u32, n: u64) -> Vec<(u64, u64)> {
    let gen = ks.gen;
    let mut pairs: Vec<(u64, u64)> = (0..b)
        .map(|_| {
            let k = ks.insert_new();
            (k, gen.value_of(k, n + 2))
        })
        .collect();
    pairs.sort_unstable();
    pairs
}

impl OpStream {
    /// The stream of `w` on an index of the entries `0..live` of `gen`.
    pub fn new(w: Workload, gen: KeyGen, live: u64, seed: u64, ops: u64) -> Result<OpStream> {
        let total = w.operations(ops, live);
        let state = match w {
            Workload::Tpcc => {
                if gen.dist == KeyDist::Seq {
                    bail!(
                        "tpcc needs room above each district's keys; sequential keys have \
                         none: use --key-dist uniform or zipf"
                    );
                }
                StreamState::Tpcc(Tpcc::new(
                    (0..live).map(|i| gen.key_of(i)).collect(),
                    total,
                )?)
            }
            Workload::RangeDelete(_) => {
                StreamState::Sorted(SortedKeys::new((0..live).map(|i| gen.key_of(i)).collect()))
            }
            _ => StreamState::Point(KeySpace::with_entries(gen, live)),
        };
        Ok(OpStream {
            w,
            gen,
            rng: rng_for(seed, 1 + w.seed_index()),
            state,
            n: 0,
            total,
            bulk_starts: Default::default(),
            bulk_keys: 0,
        })
    }

    /// Operations the stream yields.
    pub fn operations(&self) -> u64 {
        self.total
    }

    /// Live entries after the operations drawn so far.
    pub fn live(&self) -> u64 {
        match &self.state {
            StreamState::Point(ks) => ks.live() + self.bulk_keys,
            StreamState::Tpcc(t) => t.live(),
            StreamState::Sorted(s) => s.live,
        }
    }

    /// A live key (for warm-up searches), drawn from `rng`, not from the stream.
    pub fn pick_existing(&self, rng: &mut impl Rng) -> Option<u64> {
        match &self.state {
            StreamState::Point(ks) => ks.pick_existing(rng),
            StreamState::Tpcc(t) => {
                let d = &t.districts[rng.gen_range(0..t.districts.len())];
                (!d.old.is_empty()).then(|| d.old[rng.gen_range(0..d.old.len())])
            }
            StreamState::Sorted(s) => {
                let i = rng.gen_range(0..s.keys.len().max(1));
                s.keys.get(i).copied().filter(|_| !s.deleted[i])
            }
        }
    }

    /// The next operation, or `None` after `operations()` of them.
    pub fn next_op(&mut self) -> Option<Op> {
        if self.n >= self.total {
            return None;
        }
        let n = self.n;
        self.n += 1;
        let gen = self.gen;
        let rng = &mut self.rng;
        Some(match &mut self.state {
            StreamState::Tpcc(t) => t.next_op(&gen, n, rng),
            StreamState::Sorted(s) => {
                // Start positions leave room for a whole run before the end.
                let want = self.w.keys_per_op();
                let len = (s.keys.len() as u64).saturating_sub(want - 1).max(1);
                let p = match gen.dist {
                    KeyDist::Zipf => zipf_rank(len, rng),
                    _ => rng.gen_range(0..len),
                } as usize;
                match s.take_run(p, want) {
                    Some((lo, hi, keys)) => Op::DeleteRange { lo, hi, keys },
                    None => Op::DeleteRange {
                        lo: 1,
                        hi: 0,
                        keys: 0,
                    },
                }
            }
            StreamState::Point(ks) => {
                // A missing existing key (empty index) becomes a key never inserted.
                let missing = gen.key_of(ks.next_index());
                match self.w.draw(rng) {
                    OpKind::Search => Op::Get(ks.pick_existing(rng).unwrap_or(missing)),
                    OpKind::Range(len) => Op::Range {
                        start: ks.pick_existing(rng).unwrap_or(missing),
                        len,
                    },
                    OpKind::Insert => {
                        let k = ks.insert_new();
                        Op::Insert(k, gen.value_of(k, n + 2))
                    }
                    OpKind::Delete => Op::Delete(ks.delete_existing(rng).unwrap_or(missing)),
                    OpKind::Update => {
                        let k = ks.pick_existing(rng).unwrap_or(missing);
                        Op::Update(k, gen.value_of(k, n + 2))
                    }
                    OpKind::GetMany(b) => Op::GetMany(
                        (0..b)
                            .map(|_| ks.pick_existing(rng).unwrap_or(missing))
                            .collect(),
                    ),
                    OpKind::BulkInsert(b) => {
                        let pairs = match ks.pick_existing(rng) {
                            // Sequential keys: the bulk is appended at the end.
                            None => bulk_at_end(ks, b, n),
                            Some(_) if gen.dist == KeyDist::Seq => bulk_at_end(ks, b, n),
                            // Thesis §6.1: an elementary bulk is b keys clustered at a
                            // position chosen at random: just above a live key (the gaps
                            // between uniform keys, ~2^64/entries, leave room).
                            Some(k) => {
                                let used = self.bulk_starts.entry(k).or_insert(0);
                                let first = k.saturating_add(*used + 1);
                                *used += u64::from(b);
                                (0..u64::from(b))
                                    .map(|j| {
                                        let key = first.saturating_add(j);
                                        (key, gen.value_of(key, n + 2))
                                    })
                                    .collect()
                            }
                        };
                        self.bulk_keys += pairs.len() as u64;
                        Op::BulkInsert(pairs)
                    }
                    OpKind::RangeDelete(_) => Op::DeleteRange {
                        lo: 1,
                        hi: 0,
                        keys: 0,
                    },
                }
            }
        })
    }
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
        assert_eq!(
            Workload::parse_list("tpcc,bulk-insert-10000,range-delete-7").unwrap(),
            vec![
                Workload::Tpcc,
                Workload::BulkInsert(10_000),
                Workload::RangeDelete(7)
            ]
        );
        for w in Workload::DEFAULT {
            assert_eq!(w.name().parse::<Workload>().unwrap(), w);
        }
        for bad in [
            "range-0",
            "range-x",
            "get-many-0",
            "mix-101",
            "mix-",
            "bulk-insert-0",
            "bulk-insert-10001",
            "range-delete-0",
        ] {
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
        assert_eq!(Workload::OSearch.operations(100_000, 1), 100_000);
        assert_eq!(Workload::GetMany(64).operations(100_000, 1), 1_562);
        assert_eq!(Workload::GetMany(64).keys_per_op(), 64);
        assert_eq!(Workload::Range(1).operations(100_000, 1), 100_000);
        assert_eq!(Workload::Range(65_536).operations(100_000, 1), 61);
        assert_eq!(Workload::Range(1 << 20).operations(100_000, 1), 10);
        assert_eq!(Workload::Range(1000).operations(10_000, 1), 400);
        // Thesis §6.1: 50,000 keys into 450,000 in bulks of 100 = 500 bulks.
        assert_eq!(Workload::BulkInsert(100).operations(1, 450_000), 500);
        assert_eq!(Workload::BulkInsert(10_000).operations(1, 450_000), 5);
        assert_eq!(Workload::RangeDelete(100).operations(100_000, 450_000), 450);
        assert_eq!(Workload::RangeDelete(100).operations(10, 450_000), 10);
    }

    fn stream_of(w: Workload, dist: KeyDist, seed: u64, live: u64, ops: u64) -> Vec<Op> {
        let mut s = OpStream::new(w, KeyGen::new(dist, seed), live, seed, ops).unwrap();
        let mut out = Vec::new();
        while let Some(op) = s.next_op() {
            out.push(op);
        }
        assert_eq!(out.len() as u64, s.operations());
        out
    }

    #[test]
    fn same_seed_same_stream_for_every_workload() {
        let mut all = Workload::ALL.to_vec();
        all.extend([
            Workload::Range(100),
            Workload::GetMany(8),
            Workload::Mix(70),
            Workload::Tpcc,
            Workload::BulkInsert(10),
            Workload::RangeDelete(10),
        ]);
        for w in all {
            for dist in [KeyDist::Uniform, KeyDist::Zipf, KeyDist::Seq] {
                if w == Workload::Tpcc && dist == KeyDist::Seq {
                    assert!(OpStream::new(w, KeyGen::new(dist, 1), 5000, 1, 100).is_err());
                    continue;
                }
                let a = stream_of(w, dist, 7, 5000, 3000);
                let b = stream_of(w, dist, 7, 5000, 3000);
                assert_eq!(a, b, "{w} {dist}");
                assert!(!a.is_empty());
                let c = stream_of(w, dist, 8, 5000, 3000);
                assert_ne!(a, c, "{w} {dist}: another seed gives the same stream");
            }
        }
    }

    #[test]
    fn tpcc_mix_and_locality() {
        let gen = KeyGen::new(KeyDist::Uniform, 3);
        let live = 50_000u64;
        let mut keys: Vec<u64> = (0..live).map(|i| gen.key_of(i)).collect();
        keys.sort_unstable();
        let ops = stream_of(Workload::Tpcc, KeyDist::Uniform, 3, live, 100_000);
        let mut counts = [0u32; 4];
        let mut live_set: HashSet<u64> = keys.iter().copied().collect();
        let mut inserted: Vec<u64> = Vec::new();
        for op in &ops {
            match op {
                Op::Get(k) => {
                    counts[0] += 1;
                    assert!(live_set.contains(k), "search of a dead key");
                }
                Op::Insert(k, _) => {
                    counts[1] += 1;
                    assert!(live_set.insert(*k), "insert of a live key");
                    inserted.push(*k);
                }
                Op::Range { start, len } => {
                    counts[2] += 1;
                    assert_eq!(*len, TPCC_SCAN);
                    assert!(live_set.contains(start));
                }
                Op::Delete(k) => {
                    counts[3] += 1;
                    assert!(live_set.remove(k), "delete of a dead key");
                }
                other => panic!("tpcc drew {other:?}"),
            }
        }
        for (c, p) in counts.iter().zip(Tpcc::MIX_PERMILLE) {
            let share = f64::from(*c) / ops.len() as f64 * 1000.0;
            assert!((share - f64::from(p)).abs() < 5.0, "{counts:?}");
        }
        // Spatial locality: each new order lands right above its district's highest key,
        // inside the district's range: below the next district's first key, and above
        // every old key of the district.
        let per = keys.len() / TPCC_DISTRICTS;
        let firsts: Vec<u64> = (0..TPCC_DISTRICTS).map(|d| keys[d * per]).collect();
        let mut by_district: Vec<Vec<u64>> = vec![Vec::new(); TPCC_DISTRICTS];
        for k in &inserted {
            let d = firsts.partition_point(|f| f <= k) - 1;
            let last_old = keys[(d + 1) * per - 1];
            assert!(
                *k > last_old && *k - last_old < 100_000,
                "order key far from its district"
            );
            by_district[d].push(*k);
        }
        // New orders of a district are appended in ascending order.
        for v in &by_district {
            assert!(v.windows(2).all(|p| p[0] < p[1]));
        }
        // Temporal locality: a search hits a key inserted by this run far more often than
        // the new keys' share of the index would give.
        let new: HashSet<u64> = inserted.iter().copied().collect();
        let recent_hits = ops
            .iter()
            .filter(|op| matches!(op, Op::Get(k) if new.contains(k)))
            .count() as f64;
        assert!(recent_hits / f64::from(counts[0]) > 0.4, "{recent_hits}");
    }

    #[test]
    fn bulk_inserts_are_clustered_new_keys() {
        let gen = KeyGen::new(KeyDist::Uniform, 5);
        let live = 45_000u64;
        let old: HashSet<u64> = (0..live).map(|i| gen.key_of(i)).collect();
        let ops = stream_of(Workload::BulkInsert(50), KeyDist::Uniform, 5, live, 1000);
        // 5,000 keys (one per 9 live entries) in bulks of 50.
        assert_eq!(ops.len(), 100);
        let mut seen = HashSet::new();
        for op in &ops {
            let Op::BulkInsert(pairs) = op else {
                panic!("{op:?}")
            };
            assert_eq!(pairs.len(), 50);
            assert!(
                pairs.windows(2).all(|p| p[1].0 == p[0].0 + 1),
                "not clustered"
            );
            for (k, _) in pairs {
                assert!(!old.contains(k) && seen.insert(*k), "key {k} not new");
            }
        }
        let seq = stream_of(Workload::BulkInsert(50), KeyDist::Seq, 5, live, 1000);
        let Op::BulkInsert(first) = &seq[0] else {
            panic!()
        };
        assert_eq!(first[0].0, live);
    }

    #[test]
    fn range_deletes_cover_n_live_keys() {
        let gen = KeyGen::new(KeyDist::Uniform, 9);
        let live = 20_000u64;
        let mut keys: Vec<u64> = (0..live).map(|i| gen.key_of(i)).collect();
        keys.sort_unstable();
        let mut alive: std::collections::BTreeSet<u64> = keys.iter().copied().collect();
        let ops = stream_of(Workload::RangeDelete(25), KeyDist::Uniform, 9, live, 500);
        assert_eq!(ops.len() as u64, live / 10 / 25);
        for op in &ops {
            let Op::DeleteRange { lo, hi, keys } = *op else {
                panic!("{op:?}")
            };
            let inside: Vec<u64> = alive.range(lo..=hi).copied().collect();
            assert_eq!(inside.len() as u64, keys);
            assert_eq!(keys, 25);
            assert_eq!((inside[0], inside[inside.len() - 1]), (lo, hi));
            for k in inside {
                alive.remove(&k);
            }
        }
    }
}
