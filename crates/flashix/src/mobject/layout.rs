//! The key and value layouts of the moving-object index (module doc of `mobject` for the
//! tables): the Bx-tree linearisation (labels, partitions, cells) and the fixed point of
//! stored motions.

use super::curve::Curve;
use super::options::{MobjectOptions, Motion, Rect};
use crate::error::{Error, Result};

/// Sub-spaces of the reserved partition code.
pub(crate) const SUB_DIRECTORY: u64 = 0;
pub(crate) const SUB_OVERFLOW_MOTION: u64 = 1;
pub(crate) const SUB_OVERFLOW_TIME: u64 = 2;
pub(crate) const SUB_META: u64 = 3;

/// Bits and constants derived from the options.
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    pub space: Rect,
    pub max_speed: f64,
    pub curve: Curve,
    /// `P = Δt_mu / n`, the phase length in ticks.
    pub phase: u64,
    /// `n + 1`, the rolling partitions.
    pub partitions: u64,
    pub grid_bits: u32,
    pub pbits: u32,
    pub id_bits: u32,
    pub tbits: u32,
    pub pos_bits: u32,
    pub vel_bits: u32,
}

/// Bits needed to hold `v`.
fn bits_for(v: u64) -> u32 {
    64 - v.leading_zeros()
}

impl Layout {
    pub fn new(o: &MobjectOptions) -> Result<Layout> {
        let n = u64::from(o.phases.max(1));
        let phase = (o.max_update_interval / n).max(1);
        // Codes 0..=n are rolling partitions; the all-ones code is reserved.
        let pbits = bits_for(n + 1);
        let k = o.grid_bits;
        let bad = |what: String| Err(Error::InvalidOptions(format!("mobject: {what}")));
        if !(1..=24).contains(&k) {
            return bad(format!("grid_bits {k} must be in 1..=24"));
        }
        let used = pbits + 2 * k;
        if used + 16 > 64 {
            return bad(format!(
                "{pbits} partition bits and a 2^{k} x 2^{k} grid leave {} bits for object ids \
                 (at least 16 needed): use fewer grid_bits or phases",
                64 - used
            ));
        }
        let tbits = bits_for(phase - 1);
        let rem = 64 - tbits;
        let pos_bits = rem * 3 / 10;
        let vel_bits = (rem - 2 * pos_bits) / 2;
        if pos_bits < 12 || vel_bits < 8 {
            return bad(format!(
                "a phase of {phase} ticks (max_update_interval / phases) leaves {pos_bits} bits \
                 per coordinate and {vel_bits} per velocity: too coarse; use more phases"
            ));
        }
        Ok(Layout {
            space: o.space,
            max_speed: o.max_speed,
            curve: o.curve,
            phase,
            partitions: n + 1,
            grid_bits: k,
            pbits,
            id_bits: 64 - used,
            tbits,
            pos_bits,
            vel_bits,
        })
    }

    /// Largest object id + 1.
    pub fn id_limit(&self) -> u64 {
        1u64 << self.id_bits
    }

    /// The reserved partition code.
    fn reserved(&self) -> u64 {
        (1u64 << self.pbits) - 1
    }

    // --- Bx-tree linearisation (bx-tree.md; notes §2.1) ---

    /// The label timestamp of an update at `t`: the end of the phase after the one
    /// holding `t`, `ceil((t + P) / P) * P` (so `t_lab - t` is in `[P, 2P)`).
    pub fn label(&self, t: u64) -> u64 {
        (t / self.phase + 1 + u64::from(t % self.phase != 0)) * self.phase
    }

    /// The partition code of a label: `(t_lab / P - 1) mod (n + 1)`.
    pub fn code(&self, label: u64) -> u64 {
        (label / self.phase - 1) % self.partitions
    }

    /// The grid cell of a coordinate along one axis (clamped into the grid: a position
    /// projected outside the space goes to the border cell; clamping is monotone, so the
    /// enlarged query windows, clamped the same way, still cover it).
    pub fn cell(&self, u: f64, lo: f64, hi: f64) -> u32 {
        let cells = (1u64 << self.grid_bits) as f64;
        let c = ((u - lo) / (hi - lo) * cells).floor();
        if c.is_nan() || c < 0.0 {
            0
        } else if c >= cells {
            (cells as u32).saturating_sub(1)
        } else {
            c as u32
        }
    }

    /// The curve value of the cell of `(x, y)`.
    pub fn curve_value(&self, x: f64, y: f64) -> u64 {
        let s = self.space;
        self.curve.encode(
            self.grid_bits,
            self.cell(x, s.x0, s.x1),
            self.cell(y, s.y0, s.y1),
        )
    }

    /// The Bx key of object `id` in partition `code` with curve value `cv`.
    pub fn bx_key(&self, code: u64, cv: u64, id: u64) -> u64 {
        (code << (64 - self.pbits)) | (cv << self.id_bits) | id
    }

    /// Every curve value of the grid, `[0, 4^k - 1]`.
    pub fn full_interval(&self) -> (u64, u64) {
        (0, (1u64 << (2 * self.grid_bits)) - 1)
    }

    /// The inclusive key range of curve values `[lo, hi]` in partition `code`.
    pub fn bx_range(&self, code: u64, lo: u64, hi: u64) -> (u64, u64) {
        (
            self.bx_key(code, lo, 0),
            self.bx_key(code, hi, self.id_limit() - 1),
        )
    }

    /// The partition code of a key (the reserved code for directory and meta keys).
    pub fn code_of(&self, key: u64) -> u64 {
        key >> (64 - self.pbits)
    }

    /// The object id of a Bx key.
    pub fn id_of(&self, key: u64) -> u64 {
        key & (self.id_limit() - 1)
    }

    /// A key of the reserved code's sub-space `sub`.
    pub fn reserved_key(&self, sub: u64, rest: u64) -> u64 {
        (self.reserved() << (64 - self.pbits)) | (sub << (62 - self.pbits)) | rest
    }

    /// The inclusive key range of the reserved sub-space `sub`.
    pub fn reserved_range(&self, sub: u64) -> (u64, u64) {
        let rest = (1u64 << (62 - self.pbits)) - 1;
        (self.reserved_key(sub, 0), self.reserved_key(sub, rest))
    }

    /// True for a key of the reserved code.
    pub fn is_reserved(&self, key: u64) -> bool {
        self.code_of(key) == self.reserved()
    }

    /// The rest of a reserved key (an object id, or a meta index).
    pub fn rest_of(&self, key: u64) -> u64 {
        key & ((1u64 << (62 - self.pbits)) - 1)
    }

    /// The sub-space of a reserved key.
    pub fn sub_of(&self, key: u64) -> u64 {
        (key >> (62 - self.pbits)) & 3
    }

    // --- fixed point ---

    fn pos_max(&self) -> u64 {
        (1u64 << self.pos_bits) - 1
    }

    fn vel_half(&self) -> i64 {
        (1i64 << (self.vel_bits - 1)) - 1
    }

    fn q_pos(&self, u: f64, lo: f64, hi: f64) -> u64 {
        let n = self.pos_max() as f64;
        let q = ((u - lo) / (hi - lo) * n).round();
        if q.is_nan() || q <= 0.0 {
            0
        } else if q >= n {
            self.pos_max()
        } else {
            q as u64
        }
    }

    fn dq_pos(&self, q: u64, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * (q as f64 / self.pos_max() as f64)
    }

    fn q_vel(&self, v: f64) -> i64 {
        let h = self.vel_half() as f64;
        let q = (v / self.max_speed * h).round();
        if q.is_nan() {
            0
        } else {
            q.clamp(-h, h) as i64
        }
    }

    fn dq_vel(&self, q: i64) -> f64 {
        self.max_speed * (q as f64 / self.vel_half() as f64)
    }

    /// [`MobjectOptions::quantize`].
    pub fn quantize(&self, m: Motion) -> Motion {
        let s = self.space;
        Motion {
            x: self.dq_pos(self.q_pos(m.x, s.x0, s.x1), s.x0, s.x1),
            y: self.dq_pos(self.q_pos(m.y, s.y0, s.y1), s.y0, s.y1),
            vx: self.dq_vel(self.q_vel(m.vx)),
            vy: self.dq_vel(self.q_vel(m.vy)),
            t: m.t,
        }
    }

    /// The value of a motion stored under `label` (`offset = label - P - t`, in `[0, P)`;
    /// 0 for the overflow sub-space, whose time is stored apart).
    pub fn pack(&self, m: &Motion, offset: u64) -> u64 {
        let s = self.space;
        let (pb, vb) = (self.pos_bits, self.vel_bits);
        let h = self.vel_half();
        let qvx = (self.q_vel(m.vx) + h) as u64;
        let qvy = (self.q_vel(m.vy) + h) as u64;
        let low = (self.q_pos(m.x, s.x0, s.x1) << (pb + 2 * vb))
            | (self.q_pos(m.y, s.y0, s.y1) << (2 * vb))
            | (qvx << vb)
            | qvy;
        if self.tbits == 0 {
            low
        } else {
            (offset << (64 - self.tbits)) | low
        }
    }

    /// The motion of a packed value whose time is `t` (None when the time offset field
    /// does not fit the phase: damage).
    pub fn unpack(&self, v: u64, label: Option<u64>) -> Option<Motion> {
        let s = self.space;
        let (pb, vb) = (self.pos_bits, self.vel_bits);
        let field = |shift: u32, bits: u32| (v >> shift) & ((1u64 << bits) - 1);
        let offset = if self.tbits == 0 {
            0
        } else {
            v >> (64 - self.tbits)
        };
        let t = match label {
            Some(l) if offset < self.phase => l.checked_sub(self.phase + offset)?,
            Some(_) => return None,
            None => 0,
        };
        let h = self.vel_half();
        let qvx = field(vb, vb) as i64 - h;
        let qvy = field(0, vb) as i64 - h;
        if qvx.abs() > h || qvy.abs() > h {
            return None;
        }
        Some(Motion {
            x: self.dq_pos(field(pb + 2 * vb, pb), s.x0, s.x1),
            y: self.dq_pos(field(2 * vb, pb), s.y0, s.y1),
            vx: self.dq_vel(qvx),
            vy: self.dq_vel(qvy),
            t,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EngineKind, Options};

    fn layout() -> Layout {
        Layout::new(&MobjectOptions::new(Options::new(EngineKind::BTree))).unwrap()
    }

    /// The label and partition table of the notes (§4.4): n = 2, Δt_mu = 120.
    #[test]
    fn labels_and_partitions_follow_the_bx_tree() {
        let l = layout();
        let table = [
            (0, 60, 0),
            (1, 120, 1),
            (60, 120, 1),
            (61, 180, 2),
            (120, 180, 2),
            (121, 240, 0),
            (180, 240, 0),
            (181, 300, 1),
        ];
        for (t, label, code) in table {
            assert_eq!((l.label(t), l.code(l.label(t))), (label, code), "t = {t}");
            let d = l.label(t) - t;
            assert!((l.phase..2 * l.phase).contains(&d), "t = {t}");
        }
    }

    /// The default layout: 2 partition bits, 20 curve bits, 42 id bits; a phase of 60
    /// ticks takes 6 bits of the value, 17 per coordinate and 12 per velocity.
    #[test]
    fn default_layout_bits() {
        let l = layout();
        assert_eq!(
            (l.pbits, l.id_bits, l.tbits, l.pos_bits, l.vel_bits),
            (2, 42, 6, 17, 12)
        );
        assert_eq!(l.bx_key(2, 5, 7), (2 << 62) | (5 << 42) | 7);
        assert_eq!(l.reserved_key(SUB_META, 3), (3 << 62) | (3 << 60) | 3);
        assert!(l.is_reserved(l.reserved_key(SUB_DIRECTORY, 9)));
        assert!(!l.is_reserved(l.bx_key(2, (1 << 20) - 1, (1 << 42) - 1)));
    }

    /// pack/unpack returns quantize(m) exactly, and quantize is idempotent.
    #[test]
    fn packing_round_trips_the_quantised_motion() {
        let l = layout();
        let mut rng = crate::util::Rng::new(5);
        for _ in 0..10_000 {
            let f = |r: &mut crate::util::Rng| r.below(1 << 30) as f64 / (1u64 << 30) as f64;
            let t = rng.below(10_000);
            let m = Motion {
                x: f(&mut rng) * 1000.0,
                y: f(&mut rng) * 1000.0,
                vx: (f(&mut rng) * 2.0 - 1.0) * 3.0,
                vy: (f(&mut rng) * 2.0 - 1.0) * 3.0,
                t,
            };
            let q = l.quantize(m);
            assert_eq!(l.quantize(q), q);
            let label = l.label(t);
            let v = l.pack(&m, label - l.phase - t);
            assert_eq!(l.unpack(v, Some(label)), Some(q));
            assert!((q.x - m.x).abs() <= 1000.0 / l.pos_max() as f64);
            assert!((q.vx - m.vx).abs() <= 3.0 / l.vel_half() as f64);
        }
        let zero = l.quantize(Motion {
            x: 0.0,
            y: 1000.0,
            vx: 0.0,
            vy: -3.0,
            t: 0,
        });
        assert_eq!((zero.x, zero.y, zero.vx, zero.vy), (0.0, 1000.0, 0.0, -3.0));
    }
}
