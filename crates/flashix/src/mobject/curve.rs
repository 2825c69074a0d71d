//! Space-filling curves over a `2^bits x 2^bits` grid, and the decomposition of a cell
//! rectangle into curve intervals. Part of the on-disk key format of `mobject`: the
//! conventions below are frozen by the expected-output tests.
//!
//! - **Hilbert** (the iterative `xy2d` / `d2xy` of the classic formulation): at each level
//!   from the top, the quadrant digit is `(3 * rx) ^ ry` with `rx`, `ry` the cell's bits at
//!   that level, and the lower bits are rotated (`rx = 0, ry = 0`: swap x and y; and when
//!   `rx = 1` also mirror). Cell (0, 0) has value 0 and cell `(2^bits - 1, 0)` the last; at
//!   bits = 1 the order is (0,0), (0,1), (1,1), (1,0).
//! - **Z-order** (Morton, Peano in the Bx-tree paper): bit interleaving with x in the lower
//!   bit of each pair, `d = ... y1 x1 y0 x0`.
//!
//! On both curves an aligned quadrant of side `2^j` is one contiguous run of `4^j` values,
//! which [`Curve::intervals`] uses: a quadrant inside the rectangle is one interval, found
//! without visiting its cells, so the work grows with the rectangle's perimeter, not its
//! area.

use std::fmt;
use std::str::FromStr;

/// Which curve numbers the grid cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Curve {
    /// The Hilbert curve (the Bx-tree's default: neighbouring cells stay close on it).
    Hilbert,
    /// The Z-order (Morton) curve: the cell's x and y bits interleaved.
    Z,
}

impl fmt::Display for Curve {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Curve::Hilbert => "hilbert",
            Curve::Z => "z",
        })
    }
}

impl FromStr for Curve {
    type Err = crate::Error;
    fn from_str(s: &str) -> crate::Result<Curve> {
        match s {
            "hilbert" => Ok(Curve::Hilbert),
            "z" => Ok(Curve::Z),
            _ => Err(crate::Error::InvalidArgument(format!(
                "curve {s:?}: expected hilbert or z"
            ))),
        }
    }
}

/// Sorted, disjoint, non-adjacent inclusive intervals `[lo, hi]` of curve values.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Intervals {
    /// The intervals, ascending.
    pub list: Vec<(u64, u64)>,
    /// Gaps merged to respect the cap (0 when it was not reached).
    pub merged_gaps: u64,
    /// Cells inside the merged gaps (covered by `list`, outside the rectangle).
    pub extra_cells: u64,
}

/// Spread the low 32 bits of `v` to the even bit positions.
fn spread(v: u32) -> u64 {
    let mut x = u64::from(v);
    x = (x | (x << 16)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x << 8)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x << 2)) & 0x3333_3333_3333_3333;
    (x | (x << 1)) & 0x5555_5555_5555_5555
}

/// Inverse of [`spread`].
fn gather(v: u64) -> u32 {
    let mut x = v & 0x5555_5555_5555_5555;
    x = (x | (x >> 1)) & 0x3333_3333_3333_3333;
    x = (x | (x >> 2)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x >> 4)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x >> 8)) & 0x0000_FFFF_0000_FFFF;
    ((x | (x >> 16)) & 0xFFFF_FFFF) as u32
}

impl Curve {
    /// Curve value of cell `(x, y)` on a `2^bits x 2^bits` grid (`bits` in 1..=31, the
    /// coordinates below `2^bits`; higher bits are ignored).
    pub fn encode(self, bits: u32, x: u32, y: u32) -> u64 {
        let bits = bits.clamp(1, 31);
        let mask = (1u32 << bits) - 1;
        let (mut x, mut y) = (x & mask, y & mask);
        match self {
            Curve::Z => spread(x) | (spread(y) << 1),
            Curve::Hilbert => {
                let mut d = 0u64;
                let mut s = 1u32 << (bits - 1);
                while s > 0 {
                    let rx = u32::from(x & s != 0);
                    let ry = u32::from(y & s != 0);
                    d += u64::from(s) * u64::from(s) * u64::from((3 * rx) ^ ry);
                    rotate(mask, &mut x, &mut y, rx, ry);
                    s >>= 1;
                }
                d
            }
        }
    }

    /// The cell of curve value `d` (inverse of [`Curve::encode`]).
    pub fn decode(self, bits: u32, d: u64) -> (u32, u32) {
        let bits = bits.clamp(1, 31);
        match self {
            Curve::Z => (gather(d), gather(d >> 1)),
            Curve::Hilbert => {
                let n = 1u32 << bits;
                let (mut x, mut y) = (0u32, 0u32);
                let mut t = d;
                let mut s = 1u32;
                while s < n {
                    let rx = (1 & (t / 2)) as u32;
                    let ry = (1 & (t ^ u64::from(rx))) as u32;
                    rotate(s - 1, &mut x, &mut y, rx, ry);
                    x += s * rx;
                    y += s * ry;
                    t /= 4;
                    s <<= 1;
                }
                (x, y)
            }
        }
    }

    /// The lowest value of the aligned quadrant of side `2^level` holding cell `(x, y)`.
    fn quadrant_base(self, bits: u32, x: u32, y: u32, level: u32) -> u64 {
        let d = self.encode(bits, x, y);
        d & !((1u64 << (2 * level)) - 1)
    }

    /// The curve intervals covering the cells of the inclusive rectangle
    /// `[x0, x1] x [y0, y1]` (clipped to the grid; an inverted rectangle covers nothing),
    /// at most `max_intervals` of them (0 counts as 1): beyond, the smallest gaps are merged
    /// first (ties: the lower one), and counted.
    pub fn intervals(
        self,
        bits: u32,
        x0: u32,
        y0: u32,
        x1: u32,
        y1: u32,
        max_intervals: usize,
    ) -> Intervals {
        let bits = bits.clamp(1, 31);
        let top = (1u32 << bits) - 1;
        let (x1, y1) = (x1.min(top), y1.min(top));
        if x0 > x1 || y0 > y1 {
            return Intervals::default();
        }
        let mut list: Vec<(u64, u64)> = Vec::new();
        // Aligned quadrants (x, y, level), from the whole grid down.
        let mut stack: Vec<(u32, u32, u32)> = vec![(0, 0, bits)];
        while let Some((qx, qy, level)) = stack.pop() {
            let side = 1u64 << level;
            let (qx1, qy1) = (
                (u64::from(qx) + side - 1) as u32,
                (u64::from(qy) + side - 1) as u32,
            );
            if qx1 < x0 || qx > x1 || qy1 < y0 || qy > y1 {
                continue;
            }
            if x0 <= qx && qx1 <= x1 && y0 <= qy && qy1 <= y1 {
                let base = self.quadrant_base(bits, qx, qy, level);
                list.push((base, base + side * side - 1));
                continue;
            }
            let half = 1u32 << (level - 1);
            for (dx, dy) in [(0, 0), (half, 0), (0, half), (half, half)] {
                stack.push((qx + dx, qy + dy, level - 1));
            }
        }
        list.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(list.len());
        for (lo, hi) in list {
            match merged.last_mut() {
                Some(last) if lo <= last.1 + 1 => last.1 = last.1.max(hi),
                _ => merged.push((lo, hi)),
            }
        }
        cap(merged, max_intervals.max(1))
    }
}

/// One Hilbert rotation step of the lower bits (`mask` = side - 1).
fn rotate(mask: u32, x: &mut u32, y: &mut u32, rx: u32, ry: u32) {
    if ry == 0 {
        if rx == 1 {
            *x = mask - (*x & mask);
            *y = mask - (*y & mask);
        }
        std::mem::swap(x, y);
    }
}

/// Merge the smallest gaps of `list` until at most `max` intervals remain.
fn cap(mut list: Vec<(u64, u64)>, max: usize) -> Intervals {
    let mut out = Intervals::default();
    if list.len() > max {
        // The gaps to keep: the `max - 1` largest (ties: the higher position kept, so
        // the lower one is merged first).
        let mut gaps: Vec<(u64, usize)> = list
            .windows(2)
            .enumerate()
            .map(|(i, w)| (w[1].0 - w[0].1 - 1, i))
            .collect();
        gaps.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
        let mut keep: Vec<usize> = gaps.iter().take(max - 1).map(|&(_, i)| i).collect();
        keep.sort_unstable();
        for &(g, _) in gaps.iter().skip(max - 1) {
            out.merged_gaps += 1;
            out.extra_cells += g;
        }
        let mut merged = Vec::with_capacity(max);
        let mut start = 0;
        for &i in keep.iter().chain(std::iter::once(&(list.len() - 1))) {
            merged.push((list[start].0, list[i].1));
            start = i + 1;
        }
        list = merged;
    }
    out.list = list;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Frozen: the cell -> value tables at bits 1 and 2 (keys on disk depend on them).
    #[test]
    fn expected_values_at_small_grids() {
        let h1 = [((0, 0), 0), ((0, 1), 1), ((1, 1), 2), ((1, 0), 3)];
        for ((x, y), d) in h1 {
            assert_eq!(Curve::Hilbert.encode(1, x, y), d, "({x}, {y})");
        }
        // Hilbert at bits 2, row y = 3 first (top), as a picture of the curve.
        let h2 = [[5, 6, 9, 10], [4, 7, 8, 11], [3, 2, 13, 12], [0, 1, 14, 15]];
        for (row, vals) in h2.iter().enumerate() {
            let y = 3 - row as u32;
            for (x, &d) in vals.iter().enumerate() {
                assert_eq!(Curve::Hilbert.encode(2, x as u32, y), d, "({x}, {y})");
            }
        }
        let z2 = [[10, 11, 14, 15], [8, 9, 12, 13], [2, 3, 6, 7], [0, 1, 4, 5]];
        for (row, vals) in z2.iter().enumerate() {
            let y = 3 - row as u32;
            for (x, &d) in vals.iter().enumerate() {
                assert_eq!(Curve::Z.encode(2, x as u32, y), d, "({x}, {y})");
            }
        }
        assert_eq!(Curve::Z.encode(1, 1, 0), 1);
        assert_eq!(Curve::Z.encode(1, 0, 1), 2);
    }

    /// Frozen: a few values on the default grid (bits 10) and a finer one (cross-checked
    /// with an independent implementation of the classic xy2d and of bit interleaving).
    #[test]
    fn expected_values_at_large_grids() {
        let cases = [
            (Curve::Hilbert, 10, 1023, 0, 1_048_575),
            (Curve::Hilbert, 10, 0, 1023, 349_525),
            (Curve::Hilbert, 10, 512, 512, 524_288),
            (Curve::Hilbert, 10, 123, 456, 255_375),
            (Curve::Hilbert, 16, 40_000, 1_234, 3_955_941_636),
            (Curve::Z, 10, 1023, 1023, 1_048_575),
            (Curve::Z, 10, 123, 456, 177_605),
            (Curve::Z, 16, 40_000, 1_234, 1_097_904_648),
        ];
        for (c, bits, x, y, d) in cases {
            assert_eq!(c.encode(bits, x, y), d, "{c} bits {bits} ({x}, {y})");
            assert_eq!(c.decode(bits, d), (x, y));
        }
    }

    fn brute(c: Curve, bits: u32, x0: u32, y0: u32, x1: u32, y1: u32) -> Vec<(u64, u64)> {
        let mut v: Vec<u64> = (x0..=x1)
            .flat_map(|x| (y0..=y1).map(move |y| c.encode(bits, x, y)))
            .collect();
        v.sort_unstable();
        let mut out: Vec<(u64, u64)> = Vec::new();
        for d in v {
            match out.last_mut() {
                Some(last) if d == last.1 + 1 => last.1 = d,
                _ => out.push((d, d)),
            }
        }
        out
    }

    #[test]
    fn whole_grid_is_one_interval_at_once() {
        for c in [Curve::Hilbert, Curve::Z] {
            let iv = c.intervals(24, 0, 0, (1 << 24) - 1, (1 << 24) - 1, 4);
            assert_eq!(iv.list, vec![(0, (1u64 << 48) - 1)]);
            assert_eq!(c.intervals(5, 3, 0, 2, 9, 4), Intervals::default());
        }
    }

    proptest! {
        #[test]
        fn encode_decode_is_a_bijection(bits in 1u32..=31, x in any::<u32>(), y in any::<u32>()) {
            let m = (1u32 << bits) - 1;
            for c in [Curve::Hilbert, Curve::Z] {
                let d = c.encode(bits, x & m, y & m);
                prop_assert!(d < 1u64 << (2 * bits));
                prop_assert_eq!(c.decode(bits, d), (x & m, y & m));
            }
        }

        #[test]
        fn hilbert_neighbours_are_grid_neighbours(bits in 1u32..=31, d in any::<u64>()) {
            let n = 1u64 << (2 * bits);
            let d = d % (n - 1);
            let (a, b) = (Curve::Hilbert.decode(bits, d), Curve::Hilbert.decode(bits, d + 1));
            prop_assert_eq!(a.0.abs_diff(b.0) + a.1.abs_diff(b.1), 1);
        }

        #[test]
        fn z_is_monotone_per_axis(bits in 1u32..=31, x in any::<u32>(), y in any::<u32>()) {
            let m = (1u32 << bits) - 1;
            let (x, y) = (x & m, y & m);
            if x < m {
                prop_assert!(Curve::Z.encode(bits, x + 1, y) > Curve::Z.encode(bits, x, y));
            }
            if y < m {
                prop_assert!(Curve::Z.encode(bits, x, y + 1) > Curve::Z.encode(bits, x, y));
            }
        }

        #[test]
        fn intervals_equal_brute_force(bits in 1u32..=6, a in any::<(u32, u32, u32, u32)>(), cap in 1usize..40) {
            let m = (1u32 << bits) - 1;
            let (x0, x1) = ((a.0 & m).min(a.1 & m), (a.0 & m).max(a.1 & m));
            let (y0, y1) = ((a.2 & m).min(a.3 & m), (a.2 & m).max(a.3 & m));
            for c in [Curve::Hilbert, Curve::Z] {
                let want = brute(c, bits, x0, y0, x1, y1);
                let got = c.intervals(bits, x0, y0, x1, y1, usize::MAX);
                prop_assert_eq!(&got.list, &want);
                prop_assert_eq!(got.merged_gaps, 0);
                // Capped: covers every cell, at most `cap` intervals, extra cells counted.
                let capped = c.intervals(bits, x0, y0, x1, y1, cap);
                prop_assert!(capped.list.len() <= cap);
                prop_assert_eq!(capped.merged_gaps as usize, want.len().saturating_sub(cap));
                let covered: u64 = capped.list.iter().map(|&(lo, hi)| hi - lo + 1).sum();
                let cells = u64::from(x1 - x0 + 1) * u64::from(y1 - y0 + 1);
                prop_assert_eq!(covered, cells + capped.extra_cells);
                for &(lo, hi) in &want {
                    prop_assert!(capped.list.iter().any(|&(a, b)| a <= lo && hi <= b));
                }
            }
        }
    }
}
