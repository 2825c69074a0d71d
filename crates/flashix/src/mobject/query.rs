//! Range and kNN queries (module doc of `mobject`; Bx-tree query processing).

use super::layout::{SUB_OVERFLOW_MOTION, SUB_OVERFLOW_TIME};
use super::options::{Hit, Motion, Neighbor, Rect};
use super::partition::Part;
use super::Inner;
use crate::error::{Error, Result};
use std::cmp::Ordering;
use std::collections::HashMap;

/// Inclusive curve-value intervals, sorted and disjoint.
type Ivs = Vec<(u64, u64)>;

impl Inner {
    /// Objects inside the closed rectangle `r` at tick `t >= now`, sorted by id, with their
    /// positions at `t`.
    pub fn range(&mut self, r: &Rect, t: u64) -> Result<Vec<Hit>> {
        check_rect(r)?;
        self.check_time(t, "query time")?;
        self.stats.range_queries += 1;
        let mut cands = Vec::new();
        let parts = self.live_parts();
        let ivs: Vec<Ivs> = parts
            .iter()
            .map(|(_, part)| self.window_intervals(part, r, t))
            .collect();
        self.scan_intervals(&parts, &ivs, &mut cands)?;
        self.scan_overflow(&mut cands)?;
        let mut hits = Vec::new();
        for (id, m) in cands {
            let (x, y) = m.at(t);
            if r.contains(x, y) {
                hits.push(Hit { id, x, y });
            } else {
                self.stats.false_hits += 1;
            }
        }
        hits.sort_by_key(|h| h.id);
        // Each id once, also with an orphaned entry (module doc of `mobject`, A wrong `old`).
        hits.dedup_by_key(|h| h.id);
        Ok(hits)
    }

    /// The `k` objects nearest to `(x, y)` at tick `t >= now`, ordered by (distance, id).
    pub fn knn(&mut self, x: f64, y: f64, k: usize, t: u64) -> Result<Vec<Neighbor>> {
        if !x.is_finite() || !y.is_finite() {
            return Err(Error::InvalidArgument(format!(
                "knn point ({x}, {y}) is not finite"
            )));
        }
        self.check_time(t, "query time")?;
        self.stats.knn_queries += 1;
        if k == 0 || self.state.objects == 0 {
            return Ok(Vec::new());
        }
        // Each id once, at its nearest entry: an orphaned entry (module doc of `mobject`, A
        // wrong `old`) takes at most the place of its object, and the stop rule counts
        // objects.
        let mut found: Vec<Neighbor> = Vec::new();
        let mut seen: HashMap<u64, usize> = HashMap::new();
        let mut cands = Vec::new();
        let keep = |cands: &mut Vec<(u64, Motion)>,
                    found: &mut Vec<Neighbor>,
                    seen: &mut HashMap<u64, usize>| {
            for (id, m) in cands.drain(..) {
                let (px, py) = m.at(t);
                let (dx, dy) = (px - x, py - y);
                let n = Neighbor {
                    id,
                    x: px,
                    y: py,
                    dist: (dx * dx + dy * dy).sqrt(),
                };
                match seen.get(&id) {
                    Some(&i) if found[i].dist <= n.dist => {}
                    Some(&i) => found[i] = n,
                    None => {
                        seen.insert(id, found.len());
                        found.push(n);
                    }
                }
            }
        };
        self.scan_overflow(&mut cands)?;
        keep(&mut cands, &mut found, &mut seen);
        // Bx-tree kNN: start at the expected k-th neighbour distance for N uniform objects
        // (Tao et al.), widen by D_k / k per round (the step doubles every 8 rounds).
        let s = self.opts.space;
        let side = (s.x1 - s.x0).max(s.y1 - s.y0);
        let share = (k as f64 / self.state.objects as f64).min(1.0);
        let dk = 2.0 / std::f64::consts::PI.sqrt() * (1.0 - (1.0 - share.sqrt()).sqrt()) * side;
        let dk = dk.max(side * 1e-9);
        let parts = self.live_parts();
        let radius0 = self.estimated_radius(x, y, k, t, &parts, dk, 2.0 * side)?;
        let mut radius = radius0.unwrap_or(dk);
        let mut step = radius / k as f64;
        let mut done: Vec<Ivs> = vec![Vec::new(); parts.len()];
        let full = self.layout.full_interval();
        for round in 1u64.. {
            self.stats.knn_rounds += 1;
            let sq = Rect {
                x0: x - radius,
                y0: y - radius,
                x1: x + radius,
                y1: y + radius,
            };
            let mut everything = true;
            let mut fresh = Vec::with_capacity(parts.len());
            for (i, (_, part)) in parts.iter().enumerate() {
                let ivs = self.window_intervals(part, &sq, t);
                everything &= ivs == [full];
                fresh.push(subtract(&ivs, &done[i]));
                done[i] = union(&done[i], &ivs);
            }
            self.scan_intervals(&parts, &fresh, &mut cands)?;
            keep(&mut cands, &mut found, &mut seen);
            let within = found.iter().filter(|n| n.dist <= radius).count();
            if within >= k || everything {
                break;
            }
            radius += step;
            if round % 8 == 0 {
                step *= 2.0;
            }
        }
        found.sort_by(|a, b| match a.dist.total_cmp(&b.dist) {
            Ordering::Equal => a.id.cmp(&b.id),
            o => o,
        });
        self.stats.false_hits += found.len().saturating_sub(k) as u64;
        found.truncate(k);
        Ok(found)
    }

    /// FBX §4.3: the first kNN radius sized from the engine's entry counts, without reading
    /// a leaf ([`crate::Db::estimate_count`] over the square's key ranges in every live
    /// partition): from the Bx-tree's `dk`, grown by half while the estimate is below `k`
    /// (up to `max`), else shrunk by 0.7 while it still reaches `k` (at most 8 times).
    /// `None` when the engine keeps no counts. The estimate counts the enlarged window's
    /// candidates, so the rounds that follow still widen the square when it is short.
    #[allow(clippy::too_many_arguments)]
    fn estimated_radius(
        &mut self,
        x: f64,
        y: f64,
        k: usize,
        t: u64,
        parts: &[(u64, Part)],
        dk: f64,
        max: f64,
    ) -> Result<Option<f64>> {
        let estimate = |me: &mut Inner, r: f64| -> Result<Option<u64>> {
            me.stats.knn_estimates += 1;
            let sq = Rect {
                x0: x - r,
                y0: y - r,
                x1: x + r,
                y1: y + r,
            };
            let mut ranges = Vec::new();
            for &(code, part) in parts {
                for (lo, hi) in me.window_intervals(&part, &sq, t) {
                    ranges.push(me.layout.bx_range(code, lo, hi));
                }
            }
            me.db.estimate_count(&ranges)
        };
        let k = k as u64;
        let Some(mut n) = estimate(self, dk)? else {
            return Ok(None);
        };
        let mut r = dk;
        if n < k {
            while n < k && r < max {
                r *= 1.5;
                n = estimate(self, r)?.unwrap_or(k);
            }
        } else {
            for _ in 0..8 {
                let smaller = r * 0.7;
                if estimate(self, smaller)?.unwrap_or(0) < k {
                    break;
                }
                r = smaller;
            }
        }
        Ok(Some(r))
    }

    /// The partition codes that hold a label and objects, with their state.
    fn live_parts(&self) -> Vec<(u64, Part)> {
        self.state
            .parts
            .iter()
            .enumerate()
            .filter(|(_, p)| p.label.is_some() && !p.is_empty())
            .map(|(c, p)| (c as u64, *p))
            .collect()
    }

    /// The curve intervals of window `r` at `t` enlarged for partition `part`: an object
    /// of the partition at `(x, y)` at `t` with velocity `v` has `x_lab = x - v (t - t_lab)`,
    /// so the window grows by the velocity bounds times `t - t_lab` (which is negative
    /// while the label is ahead of `t`), plus a margin for rounding.
    fn window_intervals(&mut self, part: &Part, r: &Rect, t: u64) -> Ivs {
        let l = &self.layout;
        let label = part.label.unwrap_or(0);
        let d = t as f64 - label as f64;
        let grow = |lo: f64, hi: f64, vmin: f64, vmax: f64| {
            let (a, b) = (vmin * d, vmax * d);
            let eps = 1e-9 * (lo.abs() + hi.abs() + a.abs() + b.abs() + 1.0);
            (lo - a.max(b) - eps, hi - a.min(b) + eps)
        };
        let (x0, x1) = grow(r.x0, r.x1, part.v[0], part.v[1]);
        let (y0, y1) = grow(r.y0, r.y1, part.v[2], part.v[3]);
        let s = l.space;
        let iv = l.curve.intervals(
            l.grid_bits,
            l.cell(x0, s.x0, s.x1),
            l.cell(y0, s.y0, s.y1),
            l.cell(x1, s.x0, s.x1),
            l.cell(y1, s.y0, s.y1),
            self.opts.max_intervals as usize,
        );
        self.stats.merged_gaps += iv.merged_gaps;
        iv.list
    }

    /// Scan the key ranges of `ivs[i]` in partition `parts[i]`, for every `i`, into `out`
    /// (id, motion).
    fn scan_intervals(
        &mut self,
        parts: &[(u64, Part)],
        ivs: &[Ivs],
        out: &mut Vec<(u64, Motion)>,
    ) -> Result<()> {
        // One `range_many` for all of them, every partition's: engines that can read a
        // page shared by neighbouring intervals once do so (the FBX-tree's Algorithm 1
        // reads each log page once per call).
        let l = &self.layout;
        let ranges: Vec<(u64, u64)> = parts
            .iter()
            .zip(ivs)
            .flat_map(|(&(code, _), ivs)| ivs.iter().map(move |&(lo, hi)| l.bx_range(code, lo, hi)))
            .collect();
        if ranges.is_empty() {
            return Ok(());
        }
        self.stats.key_intervals += ranges.len() as u64;
        for (k, v) in self.db.range_many(&ranges)? {
            let id = self.layout.id_of(k);
            let code = self.layout.code_of(k);
            let label = parts
                .iter()
                .find(|(c, _)| *c == code)
                .and_then(|(_, p)| p.label);
            let m = label.and_then(|label| self.layout.unpack(v, Some(label)));
            let m = m.ok_or_else(|| {
                Error::corruption("mobject", None, format!("entry {k:#x} of {id} damaged"))
            })?;
            self.stats.candidates += 1;
            out.push((id, m));
        }
        Ok(())
    }

    /// Every overflow object (module doc) into `out`: none while every object keeps the
    /// `Δt_mu` promise.
    pub(super) fn scan_overflow(&mut self, out: &mut Vec<(u64, Motion)>) -> Result<()> {
        let l = &self.layout;
        let (a, b) = l.reserved_range(SUB_OVERFLOW_MOTION);
        let (ta, tb) = l.reserved_range(SUB_OVERFLOW_TIME);
        self.stats.key_intervals += 1;
        let motions: Vec<(u64, u64)> = self.db.range(a..=b)?.collect::<Result<_>>()?;
        if motions.is_empty() {
            return Ok(());
        }
        self.stats.key_intervals += 1;
        let times: Vec<(u64, u64)> = self.db.range(ta..=tb)?.collect::<Result<_>>()?;
        let l = &self.layout;
        if motions.len() != times.len() {
            return Err(Error::corruption(
                "mobject",
                None,
                format!(
                    "{} overflow motions but {} overflow times",
                    motions.len(),
                    times.len()
                ),
            ));
        }
        for (&(mk, mv), &(tk, tv)) in motions.iter().zip(&times) {
            let id = l.rest_of(mk);
            let m = l.unpack(mv, None).filter(|_| l.rest_of(tk) == id);
            let Some(m) = m else {
                return Err(Error::corruption(
                    "mobject",
                    None,
                    format!("overflow entries of {id} damaged"),
                ));
            };
            self.stats.candidates += 1;
            out.push((id, Motion { t: tv, ..m }));
        }
        Ok(())
    }
}

fn check_rect(r: &Rect) -> Result<()> {
    for (name, v) in [("x0", r.x0), ("y0", r.y0), ("x1", r.x1), ("y1", r.y1)] {
        if !v.is_finite() {
            return Err(Error::InvalidArgument(format!(
                "rect.{name} is {v}: not a finite number"
            )));
        }
    }
    if r.x0 > r.x1 || r.y0 > r.y1 {
        return Err(Error::InvalidArgument(format!(
            "rect {r:?} is inverted (x0 > x1 or y0 > y1)"
        )));
    }
    Ok(())
}

/// The parts of `new` not covered by `done` (both sorted and disjoint).
fn subtract(new: &[(u64, u64)], done: &[(u64, u64)]) -> Ivs {
    let mut out = Vec::new();
    let mut j = 0;
    for &(lo, hi) in new {
        let mut lo = Some(lo);
        while j < done.len() && done[j].1 < lo.unwrap_or(u64::MAX) {
            j += 1;
        }
        let mut i = j;
        while let Some(a) = lo {
            if a > hi {
                break;
            }
            match done.get(i) {
                Some(&(dlo, dhi)) if dlo <= hi => {
                    if a < dlo {
                        out.push((a, dlo - 1));
                    }
                    lo = dhi.checked_add(1);
                    i += 1;
                }
                _ => {
                    out.push((a, hi));
                    break;
                }
            }
        }
    }
    out
}

/// The union of two sorted disjoint interval lists, merged where they touch.
fn union(a: &[(u64, u64)], b: &[(u64, u64)]) -> Ivs {
    let mut all: Ivs = a.iter().chain(b).copied().collect();
    all.sort_unstable();
    let mut out: Ivs = Vec::with_capacity(all.len());
    for (lo, hi) in all {
        match out.last_mut() {
            Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subtract_and_union_match_brute_force() {
        let mut rng = crate::util::Rng::new(3);
        let gen = |rng: &mut crate::util::Rng| -> Ivs {
            let mut v = Vec::new();
            let mut at = rng.below(5);
            for _ in 0..rng.below(6) {
                let hi = at + rng.below(6);
                v.push((at, hi));
                at = hi + 2 + rng.below(4);
            }
            v
        };
        let set = |ivs: &Ivs| -> std::collections::BTreeSet<u64> {
            ivs.iter().flat_map(|&(a, b)| a..=b).collect()
        };
        for _ in 0..5_000 {
            let (a, b) = (gen(&mut rng), gen(&mut rng));
            let sub = subtract(&a, &b);
            let want: std::collections::BTreeSet<u64> =
                set(&a).difference(&set(&b)).copied().collect();
            assert_eq!(set(&sub), want, "{a:?} - {b:?} = {sub:?}");
            assert!(sub.windows(2).all(|w| w[0].1 < w[1].0));
            let u = union(&a, &b);
            let want: std::collections::BTreeSet<u64> = set(&a).union(&set(&b)).copied().collect();
            assert_eq!(set(&u), want);
            assert!(u.windows(2).all(|w| w[0].1 + 1 < w[1].0), "{u:?}");
        }
    }
}
