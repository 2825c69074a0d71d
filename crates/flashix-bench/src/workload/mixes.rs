//! The named workloads of `--workload` ([`Workload`]): their names and parsing, operation
//! mixes, operation counts, and the draw of each operation's kind ([`OpKind`]).

use super::keys::mix;
use super::tpcc::Tpcc;
use anyhow::{bail, Result};
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

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
    /// One `bulk_insert` of T new keys made of elementary bulks of N.
    BulkLoad(u64, u32),
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
    /// `bulk-load-T-N`: ONE `Db::bulk_insert` of T new keys made of T/N elementary bulks of
    /// N consecutive keys at random positions (bulk index thesis §6.1: one bulk of 50,000
    /// keys; `bulk-insert-N` makes one call per elementary bulk instead).
    BulkLoad(u64, u32),
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
            Workload::BulkLoad(t, n) => format!("bulk-load-{t}-{n}"),
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
            Workload::BulkLoad(t, n) => mix(13 ^ t.rotate_left(8) ^ u64::from(n).rotate_left(40)),
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
            | Workload::BulkLoad(..)
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
            Workload::BulkLoad(..) => 1,
            _ => ops,
        }
    }

    /// Keys one operation touches: N for `range-N`, `get-many-N`, `bulk-insert-N` and
    /// `range-delete-N`, else 1.
    pub fn keys_per_op(self) -> u64 {
        match self {
            Workload::Range(n) | Workload::RangeDelete(n) => n,
            Workload::GetMany(n) | Workload::BulkInsert(n) => u64::from(n),
            Workload::BulkLoad(t, _) => t,
            _ => 1,
        }
    }

    /// Share of its operations that write one key (inserts, deletes, updates) for a
    /// workload of point operations (and `tpcc`: 24.8%); `None` for the others, whose
    /// operation counts follow their own rules ([`Workload::operations`]).
    pub fn write_share(self) -> Option<f64> {
        match self {
            Workload::Tpcc => Some(0.248),
            _ => self
                .mix()
                .map(|m| f64::from(100 - m[0]) / 100.0)
                .filter(|&s| s > 0.0),
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
            Workload::BulkLoad(t, n) => return OpKind::BulkLoad(t, n),
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
        if let Some(rest) = norm.strip_prefix("bulk-load-") {
            let (t, n) = rest.split_once('-').ok_or_else(|| {
                anyhow::anyhow!("{s:?}: expected bulk-load-T-N (T keys in bulks of N)")
            })?;
            let (t, n) = (
                num(t, "the keys of the load")?,
                num(n, "the keys per bulk")?,
            );
            if !(1..=10_000).contains(&n) || !(n..=1 << 30).contains(&t) {
                bail!("{s:?}: T from N to 2^30 keys, in elementary bulks of N of 1 to 10,000");
            }
            return Ok(Workload::BulkLoad(t, n as u32));
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
            "unknown workload {s:?}; expected one of {}, range-N, get-many-N, mix-S, tpcc, bulk-insert-N, bulk-load-T-N or range-delete-N",
            names.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::rng_for;

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
        assert_eq!(Workload::BulkLoad(50_000, 100).operations(10, 450_000), 1);
        assert_eq!(
            "bulk-load-50000-100".parse::<Workload>().unwrap(),
            Workload::BulkLoad(50_000, 100)
        );
        assert_eq!(
            Workload::BulkLoad(50_000, 100).name(),
            "bulk-load-50000-100"
        );
        assert!("bulk-load-5-100".parse::<Workload>().is_err());
        assert!("bulk-load-100".parse::<Workload>().is_err());
    }
}
