//! The TPC-C-like index trace of the `tpcc` workload ([`Tpcc`]): districts of contiguous
//! keys, new orders appended above each district's keys, searches and scans of recent
//! orders, deliveries of the oldest.

use super::keys::KeyGen;
use super::mixes::OpKind;
use super::part::Part;
use super::stream::Op;
use anyhow::{bail, Result};
use rand::Rng;

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
    pub(super) districts: Vec<District>,
}

/// Warehouses of the `tpcc` model.
pub const TPCC_WAREHOUSES: usize = 100;
/// Districts of the `tpcc` model (10 per warehouse, as in TPC-C).
pub const TPCC_DISTRICTS: usize = TPCC_WAREHOUSES * 10;
/// Recent orders a `tpcc` search of a recent order draws from.
pub const TPCC_RECENT: usize = 32;
/// Orders a `tpcc` range scan covers (TPC-C stock-level reads the last 20 orders).
pub const TPCC_SCAN: u64 = 20;

pub(super) struct District {
    /// Older orders (loaded before the run), live.
    pub(super) old: Vec<u64>,
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

    /// The districts of `part` ([`Part`]: `index`, `index + of`, ...) of the trace
    /// [`Tpcc::new`] makes of `keys`: one thread's share, whose keys no other thread's
    /// share touches.
    pub fn for_part(keys: Vec<u64>, ops: u64, part: Part) -> Result<Tpcc> {
        let mut t = Tpcc::new(keys, ops)?;
        let (of, index) = (part.of.max(1) as usize, part.index as usize);
        if t.districts.len() < of {
            bail!(
                "tpcc: {of} threads need as many districts, and an index of {} entries has {}",
                t.live(),
                t.districts.len()
            );
        }
        let mut i = 0;
        t.districts.retain(|_| {
            i += 1;
            (i - 1) % of == index
        });
        Ok(t)
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

    pub(super) fn next_op(&mut self, gen: &KeyGen, n: u64, rng: &mut impl Rng) -> Op {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::stream::tests::stream_of;
    use crate::workload::{KeyDist, Workload};
    use std::collections::HashSet;

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
}
