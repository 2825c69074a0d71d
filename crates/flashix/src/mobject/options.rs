//! The moving-object model ([`Motion`], [`Rect`], [`Hit`], [`Neighbor`]) and
//! [`MobjectOptions`], whose [`MobjectOptions::quantize`] is the motion exactly as the index
//! stores it.

use super::curve::Curve;
use super::layout::Layout;
use crate::error::{Error, Result};
use crate::{EngineKind, Options};

/// A moving object's report: position `(x, y)` and velocity `(vx, vy)` (units per tick) at
/// tick `t`. Its position at any tick is linear in time ([`Motion::at`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Motion {
    /// Position on the x axis at tick `t`.
    pub x: f64,
    /// Position on the y axis at tick `t`.
    pub y: f64,
    /// Velocity along x, units per tick (at most `max_speed` in magnitude).
    pub vx: f64,
    /// Velocity along y, units per tick (at most `max_speed` in magnitude).
    pub vy: f64,
    /// The tick the position was taken at.
    pub t: u64,
}

impl Motion {
    /// The position at tick `t`: `x + vx * (t - self.t)`, computed in `f64` exactly so
    /// (range and kNN answers are defined by this expression).
    pub fn at(&self, t: u64) -> (f64, f64) {
        let dt = t as f64 - self.t as f64;
        (self.x + self.vx * dt, self.y + self.vy * dt)
    }
}

/// A closed axis-aligned rectangle `[x0, x1] x [y0, y1]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rect {
    /// Lower x bound (inclusive).
    pub x0: f64,
    /// Lower y bound (inclusive).
    pub y0: f64,
    /// Upper x bound (inclusive).
    pub x1: f64,
    /// Upper y bound (inclusive).
    pub y1: f64,
}

impl Rect {
    /// True if `(x, y)` lies in the closed rectangle.
    pub fn contains(&self, x: f64, y: f64) -> bool {
        self.x0 <= x && x <= self.x1 && self.y0 <= y && y <= self.y1
    }
}

/// An object of a range query's answer: its id and position at the query's time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hit {
    /// The object's id.
    pub id: u64,
    /// Its x position at the query's tick.
    pub x: f64,
    /// Its y position at the query's tick.
    pub y: f64,
}

/// An object of a kNN answer: its id, position at the query's time, and distance
/// `sqrt(dx * dx + dy * dy)` from the query point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Neighbor {
    /// The object's id.
    pub id: u64,
    /// Its x position at the query's tick.
    pub x: f64,
    /// Its y position at the query's tick.
    pub y: f64,
    /// Euclidean distance from the query point at the query's tick.
    pub dist: f64,
}

/// Options of a [`super::MovingIndex`]: the key-value index under it and the Bx-tree's
/// parameters (defaults: the literature's, `bx-tree.md`). Saved in the index; `open`
/// needs only the directory.
#[derive(Clone, Debug)]
pub struct MobjectOptions {
    pub(crate) index: Options,
    pub(crate) space: Rect,
    pub(crate) max_speed: f64,
    pub(crate) max_update_interval: u64,
    pub(crate) phases: u32,
    pub(crate) grid_bits: u32,
    pub(crate) curve: Curve,
    pub(crate) max_intervals: u32,
}

impl MobjectOptions {
    /// Defaults over `index`: space 1000 x 1000, max speed 3 units per tick per axis,
    /// `Δt_mu` 120 ticks in `n` = 2 phases, a 1024 x 1024 Hilbert grid, at most 256 key
    /// intervals per partition and query.
    pub fn new(index: Options) -> MobjectOptions {
        MobjectOptions {
            index,
            space: Rect {
                x0: 0.0,
                y0: 0.0,
                x1: 1000.0,
                y1: 1000.0,
            },
            max_speed: 3.0,
            max_update_interval: 120,
            phases: 2,
            grid_bits: 10,
            curve: Curve::Hilbert,
            max_intervals: 256,
        }
    }

    /// The space every reported position lies in.
    pub fn space(mut self, r: Rect) -> Self {
        self.space = r;
        self
    }

    /// The largest speed per axis, units per tick.
    pub fn max_speed(mut self, v: f64) -> Self {
        self.max_speed = v;
        self
    }

    /// `Δt_mu`: every object is updated at least once in this many ticks (a promise the
    /// index relies on for its partitions; one broken is handled, see the module doc).
    pub fn max_update_interval(mut self, ticks: u64) -> Self {
        self.max_update_interval = ticks;
        self
    }

    /// `n`: the phases `Δt_mu` is divided into (`n + 1` partitions are live).
    pub fn phases(mut self, n: u32) -> Self {
        self.phases = n;
        self
    }

    /// The grid has `2^bits x 2^bits` cells.
    pub fn grid_bits(mut self, bits: u32) -> Self {
        self.grid_bits = bits;
        self
    }

    /// The space-filling curve that numbers the cells.
    pub fn curve(mut self, c: Curve) -> Self {
        self.curve = c;
        self
    }

    /// Key intervals per partition and query, at most (gaps merged beyond, counted).
    pub fn max_intervals(mut self, n: u32) -> Self {
        self.max_intervals = n;
        self
    }

    /// The engine under the index.
    pub fn engine(&self) -> EngineKind {
        self.index.engine()
    }

    /// The motion exactly as the index stores it (and `get` returns): position and
    /// velocity rounded to the value layout's fixed point (positions clamped into the
    /// space, velocities into `±max_speed`), the time unchanged. `range` and `knn` answer
    /// what a brute-force scan of these motions with [`Motion::at`] answers.
    pub fn quantize(&self, m: Motion) -> Motion {
        match Layout::new(self) {
            Ok(l) => l.quantize(m),
            Err(_) => m,
        }
    }

    /// Refuse options the key and value layouts cannot honour.
    pub(crate) fn validate(&self) -> Result<()> {
        let s = self.space;
        let bad = |what: String| Err(Error::InvalidOptions(format!("mobject: {what}")));
        if ![s.x0, s.y0, s.x1, s.y1].iter().all(|v| v.is_finite()) || s.x0 >= s.x1 || s.y0 >= s.y1 {
            return bad(format!(
                "space {s:?} must be finite with x0 < x1 and y0 < y1"
            ));
        }
        if !(self.max_speed.is_finite() && self.max_speed > 0.0) {
            return bad(format!(
                "max_speed {} must be finite and positive",
                self.max_speed
            ));
        }
        if self.phases == 0 || self.phases > 254 {
            return bad(format!("phases {} must be in 1..=254", self.phases));
        }
        let n = u64::from(self.phases);
        if self.max_update_interval < n || self.max_update_interval % n != 0 {
            return bad(format!(
                "max_update_interval {} must be a positive multiple of phases {}",
                self.max_update_interval, self.phases
            ));
        }
        if self.max_intervals == 0 {
            return bad("max_intervals must be at least 1".into());
        }
        Layout::new(self).map(|_| ())
    }
}
