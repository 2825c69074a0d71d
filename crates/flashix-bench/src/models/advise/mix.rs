//! Workload mixes of `flashix advise` ([`Mix`]): the shares of the operation kinds, from a
//! named workload of `flashix bench` ([`Mix::from_workload`]) or from `--mix`
//! ([`Mix::parse`]).

use crate::workload::{Tpcc, Workload, TPCC_SCAN};
use anyhow::{bail, Context, Result};
use std::fmt;

/// Shares of the operation kinds (they add up to 1) and the sizes of the multi-key ones.
/// An *operation* is what `flashix bench` counts as one: a point operation, one range scan,
/// one `bulk_insert` call, one `delete_range` call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mix {
    /// Point lookups of existing keys.
    pub search: f64,
    /// Inserts of new keys.
    pub insert: f64,
    /// Deletes of existing keys.
    pub delete: f64,
    /// Inserts of existing keys with a new value.
    pub update: f64,
    /// Range scans of `range_len` entries.
    pub range: f64,
    /// Entries of one range scan.
    pub range_len: u64,
    /// `bulk_insert` calls of `bulk_keys` new consecutive keys (the bench's elementary bulks).
    pub bulk: f64,
    /// Keys of one bulk.
    pub bulk_keys: u64,
    /// `delete_range` calls over `range_delete_len` consecutive existing keys.
    pub range_delete: f64,
    /// Keys of one range delete.
    pub range_delete_len: u64,
}

impl Mix {
    /// A mix of nothing, sizes 1: the start of [`Mix::parse`].
    fn empty() -> Mix {
        Mix {
            search: 0.0,
            insert: 0.0,
            delete: 0.0,
            update: 0.0,
            range: 0.0,
            range_len: 1,
            bulk: 0.0,
            bulk_keys: 1,
            range_delete: 0.0,
            range_delete_len: 1,
        }
    }

    /// The mix of a named workload of the bench: the point mixes' percentages, `range-N`,
    /// `tpcc` (71.5% search, 23.8% insert, 3.7% scans of [`TPCC_SCAN`] entries, 1% delete;
    /// its locality is not modelled), `bulk-insert-N` and `range-delete-N`. `get-many-N`
    /// and `bulk-load-T-N` have no mix here.
    pub fn from_workload(w: Workload) -> Result<Mix> {
        let mut m = Mix::empty();
        if let Some([s, i, d, u]) = w.mix() {
            m.search = f64::from(s) / 100.0;
            m.insert = f64::from(i) / 100.0;
            m.delete = f64::from(d) / 100.0;
            m.update = f64::from(u) / 100.0;
            return Ok(m);
        }
        match w {
            Workload::Range(n) => {
                m.range = 1.0;
                m.range_len = n;
            }
            Workload::Tpcc => {
                let [s, i, r, d] = Tpcc::MIX_PERMILLE;
                m.search = f64::from(s) / 1000.0;
                m.insert = f64::from(i) / 1000.0;
                m.range = f64::from(r) / 1000.0;
                m.range_len = TPCC_SCAN;
                m.delete = f64::from(d) / 1000.0;
            }
            Workload::BulkInsert(n) => {
                m.bulk = 1.0;
                m.bulk_keys = u64::from(n);
            }
            Workload::RangeDelete(n) => {
                m.range_delete = 1.0;
                m.range_delete_len = n;
            }
            other => bail!(
                "flashix advise has no operation mix for the workload {other}: give a \
                 point-operation workload, range-N, tpcc, bulk-insert-N, range-delete-N or --mix"
            ),
        }
        Ok(m)
    }

    /// `--mix`: comma-separated `kind=share`, kinds `search`, `insert`, `delete`, `update`,
    /// `range=SHARE:LEN`, `bulk=SHARE:KEYS`, `range-delete=SHARE:LEN` (sizes default to
    /// 1000, 100 and 100). Shares are normalised to add up to 1.
    pub fn parse(s: &str) -> Result<Mix> {
        let mut m = Mix {
            range_len: 1000,
            bulk_keys: 100,
            range_delete_len: 100,
            ..Mix::empty()
        };
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (kind, value) = part
                .split_once('=')
                .with_context(|| format!("--mix: {part:?} is not kind=share"))?;
            let (share, size) = match value.split_once(':') {
                Some((a, b)) => (a, Some(b)),
                None => (value, None),
            };
            let share: f64 = share
                .trim()
                .parse()
                .with_context(|| format!("--mix: the share of {kind} must be a number"))?;
            if !(share.is_finite() && share >= 0.0) {
                bail!("--mix: the share of {kind} must be a non-negative number");
            }
            let size = size
                .map(|n| {
                    n.trim()
                        .parse::<u64>()
                        .ok()
                        .filter(|&n| n >= 1)
                        .with_context(|| format!("--mix: the size of {kind} must be at least 1"))
                })
                .transpose()?;
            let kind = kind.trim().to_ascii_lowercase().replace('_', "-");
            if size.is_some() && !matches!(kind.as_str(), "range" | "bulk" | "range-delete") {
                bail!("--mix: {kind} takes no size");
            }
            match kind.as_str() {
                "search" => m.search += share,
                "insert" => m.insert += share,
                "delete" => m.delete += share,
                "update" => m.update += share,
                "range" => {
                    m.range += share;
                    m.range_len = size.unwrap_or(m.range_len);
                }
                "bulk" => {
                    m.bulk += share;
                    m.bulk_keys = size.unwrap_or(m.bulk_keys);
                }
                "range-delete" => {
                    m.range_delete += share;
                    m.range_delete_len = size.unwrap_or(m.range_delete_len);
                }
                other => bail!(
                    "--mix: unknown kind {other:?}; expected search, insert, delete, update, \
                     range=S:LEN, bulk=S:KEYS or range-delete=S:LEN"
                ),
            }
        }
        let total = m.total();
        if total <= 0.0 {
            bail!("--mix: the shares add up to zero");
        }
        for v in [
            &mut m.search,
            &mut m.insert,
            &mut m.delete,
            &mut m.update,
            &mut m.range,
            &mut m.bulk,
            &mut m.range_delete,
        ] {
            *v /= total;
        }
        Ok(m)
    }

    fn total(&self) -> f64 {
        self.search
            + self.insert
            + self.delete
            + self.update
            + self.range
            + self.bulk
            + self.range_delete
    }

    /// The search share the engines are tuned for (`Tuning::search_fraction`, what
    /// `flashix bench --search-fraction` sets): point searches and range scans; every
    /// other kind writes.
    pub fn search_fraction(&self) -> f64 {
        (self.search + self.range).clamp(0.0, 1.0)
    }
}

impl fmt::Display for Mix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        for (name, share) in [
            ("search", self.search),
            ("insert", self.insert),
            ("delete", self.delete),
            ("update", self.update),
        ] {
            if share > 0.0 {
                parts.push(format!("{name} {share:.3}"));
            }
        }
        if self.range > 0.0 {
            parts.push(format!("range {:.3} of {}", self.range, self.range_len));
        }
        if self.bulk > 0.0 {
            parts.push(format!("bulk {:.3} of {} keys", self.bulk, self.bulk_keys));
        }
        if self.range_delete > 0.0 {
            parts.push(format!(
                "range-delete {:.3} of {}",
                self.range_delete, self.range_delete_len
            ));
        }
        f.write_str(&parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_workloads_become_mixes() {
        let m = Mix::from_workload(Workload::WSearch).unwrap();
        assert_eq!(
            (m.search, m.insert, m.delete, m.update),
            (0.8, 0.1, 0.05, 0.05)
        );
        let m = Mix::from_workload(Workload::Tpcc).unwrap();
        assert_eq!(
            (m.search, m.insert, m.range, m.delete),
            (0.715, 0.238, 0.037, 0.01)
        );
        assert_eq!(m.range_len, TPCC_SCAN);
        let m = Mix::from_workload(Workload::BulkInsert(100)).unwrap();
        assert_eq!((m.bulk, m.bulk_keys), (1.0, 100));
        let m = Mix::from_workload(Workload::RangeDelete(7)).unwrap();
        assert_eq!((m.range_delete, m.range_delete_len), (1.0, 7));
        let m = Mix::from_workload(Workload::Range(1000)).unwrap();
        assert_eq!(
            (m.range, m.range_len, m.search_fraction()),
            (1.0, 1000, 1.0)
        );
        assert!(Mix::from_workload(Workload::GetMany(8)).is_err());
        for w in Workload::DEFAULT {
            let m = Mix::from_workload(w).unwrap();
            assert!((m.total() - 1.0).abs() < 1e-9, "{w}: {m}");
        }
    }

    #[test]
    fn mix_strings_are_normalised() {
        let m = Mix::parse("search=2, insert=1,range=1:500,bulk=0:10").unwrap();
        assert_eq!((m.search, m.insert, m.range), (0.5, 0.25, 0.25));
        assert_eq!(
            (m.range_len, m.bulk_keys, m.range_delete_len),
            (500, 10, 100)
        );
        assert_eq!(m.search_fraction(), 0.75);
        assert_eq!(
            m.to_string(),
            "search 0.500, insert 0.250, range 0.250 of 500"
        );
        for bad in [
            "",
            "search",
            "search=x",
            "search=-1",
            "nothing=1",
            "search=0",
            "insert=1:5",
            "range=1:0",
        ] {
            assert!(Mix::parse(bad).is_err(), "{bad}");
        }
    }
}
