//! Moving-object workload generators for `flashix mo-bench` and `flashix bench --workload
//! mo-*`: the objects' true movement and the stream of position reports the index sees.
//! Every generator is deterministic by seed (same seed, same reports on every subject).
//!
//! All generators share the report schedule of the Bx-tree experiments: each object reports
//! once per `Δt_mu` ticks, in a round robin (`ceil(objects / Δt_mu)` reports per tick), so the
//! index's update-interval promise holds and `n + 1` partitions are live. The round robin
//! visits the objects in a fixed random order, not by id: ids say nothing of when an object
//! reports (reports by id would put consecutive updates' directory entries in one leaf). A report carries
//! the object's true position at the report's tick and the velocity it will now follow; each
//! velocity component is within `±max_speed`.
//!
//! - **uniform** (the Bx and TPR papers' uniform data): positions uniform in the space,
//!   velocity components uniform in `±max_speed` (random direction and speed), a new velocity
//!   at every report, reflected at the borders.
//! - **gaussian** (hotspots): [`HOTSPOTS`] centres uniform in the space; every object belongs
//!   to one, starts at a normal sample around it (σ = side / [`SIGMA_DIVISOR`] per axis, clamped
//!   to the space) and at every report heads for a new normal sample around its hotspot at a
//!   random speed, so the skew persists instead of diffusing. Reflected at the borders.
//! - **network** (the shape of Brinkhoff's network-based generator): a square grid of roads,
//!   [`GRID_NODES`] × [`GRID_NODES`] nodes; every [`HIGHWAY_EVERY`]th row and column is a
//!   highway (speed class `max_speed`), the others streets (`max_speed / 3`). An object starts
//!   at a random node, travels to a random destination node along an L-shaped route (first
//!   along its row or its column, chosen at random) at its edge class's speed times a factor
//!   drawn per trip in `[0.5, 1]`, and on arrival starts a new trip. Its true position
//!   follows the route through turns; a report gives the direction and speed of the edge it
//!   is on, a linear prediction that the next report corrects (as Brinkhoff's reports are).
//!
//! [`read_brinkhoff`] reads the text trace of Brinkhoff's generator for replay.

use anyhow::{bail, Context, Result};
use flashix::mobject::Motion;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::fmt;
use std::str::FromStr;

/// Number of Gaussian hotspots.
pub const HOTSPOTS: usize = 10;
/// σ of a hotspot, as a divisor of the space's side.
pub const SIGMA_DIVISOR: f64 = 20.0;
/// Nodes per side of the road grid.
pub const GRID_NODES: u32 = 21;
/// Every this many grid lines, one is a highway.
pub const HIGHWAY_EVERY: u32 = 5;

/// Which movement the objects follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MoData {
    Uniform,
    Gaussian,
    Network,
}

impl FromStr for MoData {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<MoData> {
        Ok(match s {
            "uniform" => MoData::Uniform,
            "gaussian" => MoData::Gaussian,
            "network" => MoData::Network,
            _ => bail!("unknown moving-object data {s:?} (uniform, gaussian, network)"),
        })
    }
}

impl fmt::Display for MoData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MoData::Uniform => "uniform",
            MoData::Gaussian => "gaussian",
            MoData::Network => "network",
        })
    }
}

impl MoData {
    /// One line stating the generator's parameters, printed with the results.
    pub fn describe(self, side: f64, max_speed: f64) -> String {
        match self {
            MoData::Uniform => "uniform positions, velocity components uniform in ±max_speed, \
                                reflected at the borders"
                .to_string(),
            MoData::Gaussian => format!(
                "{HOTSPOTS} Gaussian hotspots (σ {:.0}), objects head for new points around \
                 their hotspot at every report",
                side / SIGMA_DIVISOR
            ),
            MoData::Network => format!(
                "road grid of {GRID_NODES} x {GRID_NODES} nodes (edges {:.0} long), every \
                 {HIGHWAY_EVERY}th line a highway at speed {max_speed}, streets at {:.2}; \
                 L-shaped trips between random nodes",
                side / f64::from(GRID_NODES - 1),
                max_speed / 3.0
            ),
        }
    }
}

/// Where an object on the road grid is going.
#[derive(Debug, Clone, Copy)]
struct Trip {
    /// The turn of the L-shaped route, then the destination.
    corner: (f64, f64),
    dest: (f64, f64),
    /// Still heading for the corner.
    to_corner: bool,
    /// The trip's factor on edge-class speeds, in [0.5, 1].
    factor: f64,
}

/// One object's true state.
#[derive(Debug, Clone, Copy)]
struct Object {
    /// The last report: the position at `motion.t` and the velocity followed since
    /// (uniform, gaussian), or the position at `motion.t` (network, which follows `trip`).
    motion: Motion,
    /// Gaussian: the hotspot. Unused otherwise.
    home: usize,
    /// Network: the route being travelled.
    trip: Option<Trip>,
}

/// The objects' true motions and the round robin of their reports.
pub struct World {
    data: MoData,
    rng: StdRng,
    objs: Vec<Object>,
    hotspots: Vec<(f64, f64)>,
    /// The round robin's order of the objects.
    order: Vec<u64>,
    side: f64,
    vmax: f64,
    per_tick: u64,
    cursor: u64,
    now: u64,
    in_tick: u64,
}

impl World {
    /// `n` objects in a `side` × `side` space at tick 0, reporting once per `dt_mu` ticks.
    pub fn new(data: MoData, n: u64, side: f64, vmax: f64, dt_mu: u64, seed: u64) -> World {
        let mut rng = StdRng::seed_from_u64(seed);
        let hotspots: Vec<(f64, f64)> = (0..HOTSPOTS)
            .map(|_| (rng.gen_range(0.0..=side), rng.gen_range(0.0..=side)))
            .collect();
        let mut order: Vec<u64> = (0..n).collect();
        order.shuffle(&mut rng);
        let mut w = World {
            data,
            rng,
            objs: Vec::with_capacity(n as usize),
            hotspots,
            order,
            side,
            vmax,
            per_tick: n.div_ceil(dt_mu.max(1)).max(1),
            cursor: 0,
            now: 0,
            in_tick: 0,
        };
        for _ in 0..n {
            let home = w.rng.gen_range(0..HOTSPOTS);
            let (x, y) = match data {
                MoData::Uniform => (w.rng.gen_range(0.0..=side), w.rng.gen_range(0.0..=side)),
                MoData::Gaussian => w.near_hotspot(home),
                MoData::Network => w.random_node(),
            };
            let mut o = Object {
                motion: Motion {
                    x,
                    y,
                    vx: 0.0,
                    vy: 0.0,
                    t: 0,
                },
                home,
                trip: None,
            };
            w.steer(&mut o);
            w.objs.push(o);
        }
        w
    }

    /// Object `id`'s first report, at tick 0.
    pub fn initial(&self, id: u64) -> Motion {
        self.objs[id as usize].motion
    }

    /// The next report: the next object of the round robin, its previous report, and the
    /// new one: its true position now, with the velocity it follows from now on.
    pub fn next_report(&mut self) -> (u64, Motion, Motion) {
        if self.in_tick == self.per_tick {
            self.in_tick = 0;
            self.now += 1;
        }
        self.in_tick += 1;
        let id = self.order[self.cursor as usize];
        self.cursor = (self.cursor + 1) % self.objs.len() as u64;
        let mut o = self.objs[id as usize];
        let old = o.motion;
        let (x, y) = match self.data {
            MoData::Uniform | MoData::Gaussian => {
                let (x, y) = o.motion.at(self.now);
                (reflect(x, self.side), reflect(y, self.side))
            }
            MoData::Network => {
                let dt = self.now - o.motion.t;
                self.travel(&mut o, dt)
            }
        };
        o.motion = Motion {
            x,
            y,
            vx: 0.0,
            vy: 0.0,
            t: self.now,
        };
        self.steer(&mut o);
        self.objs[id as usize] = o;
        (id, old, o.motion)
    }

    /// Gives `o` the velocity it follows from its current report on.
    fn steer(&mut self, o: &mut Object) {
        let v = self.vmax;
        let (vx, vy) = match self.data {
            MoData::Uniform => (self.rng.gen_range(-v..=v), self.rng.gen_range(-v..=v)),
            MoData::Gaussian => {
                let (tx, ty) = self.near_hotspot(o.home);
                let (dx, dy) = (tx - o.motion.x, ty - o.motion.y);
                let len = dx.abs().max(dy.abs());
                let speed = self.rng.gen_range(0.0..=v);
                if len == 0.0 {
                    (0.0, 0.0)
                } else {
                    (dx / len * speed, dy / len * speed)
                }
            }
            MoData::Network => {
                if o.trip.is_none() {
                    o.trip = Some(self.new_trip(o.motion.x, o.motion.y));
                }
                let (x, y) = (o.motion.x, o.motion.y);
                let Some(mut trip) = o.trip else {
                    return;
                };
                // At a turn or at the destination already: move on to the next leg first.
                loop {
                    let target = if trip.to_corner {
                        trip.corner
                    } else {
                        trip.dest
                    };
                    if target != (x, y) {
                        break;
                    }
                    if trip.to_corner {
                        trip.to_corner = false;
                    } else {
                        trip = self.new_trip(x, y);
                    }
                }
                o.trip = Some(trip);
                let target = if trip.to_corner {
                    trip.corner
                } else {
                    trip.dest
                };
                let speed = self.edge_speed(x, y, target) * trip.factor;
                let (dx, dy) = (target.0 - x, target.1 - y);
                let along = |d: f64| if d == 0.0 { 0.0 } else { d.signum() * speed };
                (along(dx), along(dy))
            }
        };
        o.motion.vx = vx.clamp(-v, v);
        o.motion.vy = vy.clamp(-v, v);
    }

    /// Moves a network object along its route for `dt` ticks; returns its position.
    fn travel(&mut self, o: &mut Object, dt: u64) -> (f64, f64) {
        let (mut x, mut y) = (o.motion.x, o.motion.y);
        let mut left = dt as f64;
        let mut trip = match o.trip {
            Some(t) => t,
            None => self.new_trip(x, y),
        };
        // Bounded: each pass either uses up the time or finishes a leg of positive length.
        while left > 0.0 {
            let target = if trip.to_corner {
                trip.corner
            } else {
                trip.dest
            };
            let dist = (target.0 - x).abs() + (target.1 - y).abs();
            if dist == 0.0 {
                if trip.to_corner {
                    trip.to_corner = false;
                } else {
                    trip = self.new_trip(x, y);
                }
                continue;
            }
            let speed = self.edge_speed(x, y, target) * trip.factor;
            let need = dist / speed;
            if need > left {
                let f = left * speed / dist;
                x += (target.0 - x) * f;
                y += (target.1 - y) * f;
                left = 0.0;
            } else {
                (x, y) = target;
                left -= need;
            }
        }
        o.trip = Some(trip);
        (x.clamp(0.0, self.side), y.clamp(0.0, self.side))
    }

    /// A trip from a point on the grid to a random node other than the point.
    fn new_trip(&mut self, x: f64, y: f64) -> Trip {
        let dest = loop {
            let d = self.random_node();
            if d != (x, y) {
                break d;
            }
        };
        // The first leg runs along the grid line the object is on. An object on a node may
        // go either way; one mid-edge (after a clamp, never in practice) goes along its edge.
        let on_row = self.on_line(y);
        let on_col = self.on_line(x);
        let row_first = match (on_row, on_col) {
            (true, true) => self.rng.gen_bool(0.5),
            (true, false) => true,
            _ => false,
        };
        Trip {
            corner: if row_first { (dest.0, y) } else { (x, dest.1) },
            dest,
            to_corner: true,
            factor: self.rng.gen_range(0.5..=1.0),
        }
    }

    /// The speed class of the edge from `(x, y)` towards `target` (same row or column).
    fn edge_speed(&self, x: f64, y: f64, target: (f64, f64)) -> f64 {
        let line = if target.1 == y { y } else { x };
        let spacing = self.side / f64::from(GRID_NODES - 1);
        let idx = (line / spacing).round() as u64;
        if idx % u64::from(HIGHWAY_EVERY) == 0 {
            self.vmax
        } else {
            self.vmax / 3.0
        }
    }

    /// A node of the road grid, uniformly.
    fn random_node(&mut self) -> (f64, f64) {
        let n = GRID_NODES - 1;
        let (i, j) = (self.rng.gen_range(0..=n), self.rng.gen_range(0..=n));
        (self.grid(i), self.grid(j))
    }

    /// Coordinate of grid line `i`.
    fn grid(&self, i: u32) -> f64 {
        self.side * f64::from(i) / f64::from(GRID_NODES - 1)
    }

    /// True when `u` lies on a grid line.
    fn on_line(&self, u: f64) -> bool {
        let spacing = self.side / f64::from(GRID_NODES - 1);
        let i = (u / spacing).round();
        i >= 0.0 && i <= f64::from(GRID_NODES - 1) && self.grid(i as u32) == u
    }

    /// A normal sample around hotspot `h`, clamped to the space.
    fn near_hotspot(&mut self, h: usize) -> (f64, f64) {
        let (cx, cy) = self.hotspots[h];
        let sigma = self.side / SIGMA_DIVISOR;
        let (gx, gy) = self.normal_pair();
        (
            (cx + gx * sigma).clamp(0.0, self.side),
            (cy + gy * sigma).clamp(0.0, self.side),
        )
    }

    /// Two independent standard normal samples (Box–Muller).
    fn normal_pair(&mut self) -> (f64, f64) {
        let u1: f64 = self.rng.gen_range(f64::EPSILON..1.0);
        let u2: f64 = self.rng.gen_range(0.0..1.0);
        let r = (-2.0 * u1.ln()).sqrt();
        let a = std::f64::consts::TAU * u2;
        (r * a.cos(), r * a.sin())
    }
}

/// `u` folded back into `[0, side]` (reflection at the borders).
pub fn reflect(u: f64, side: f64) -> f64 {
    let p = u.rem_euclid(2.0 * side);
    (if p > side { 2.0 * side - p } else { p }).clamp(0.0, side)
}

/// One line of a Brinkhoff trace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TraceEvent {
    /// `newpoint` or `point`: the object's report.
    Report { id: u64, motion: Motion },
    /// `disappearpoint`: the object leaves.
    Disappear { id: u64, t: u64 },
}

/// A Brinkhoff trace scaled into a `side` × `side` space, with the largest speed component
/// seen (the index's `max_speed` must be at least this).
#[derive(Debug, Clone)]
pub struct Trace {
    pub events: Vec<TraceEvent>,
    pub max_speed: f64,
}

/// Reads the text output of Brinkhoff's network-based generator: tab- (or space-) separated
/// lines `action id repNum objClass time x y speed nextNodeX nextNodeY`, action one of
/// `newpoint`, `point`, `disappearpoint`. The velocity is `speed × unit(nextNode − pos)`.
/// Coordinates are mapped from the trace's bounding box into `[0, side]` by one scale factor
/// for both axes (speeds scaled alike); times must not decrease.
pub fn read_brinkhoff(text: &str, side: f64) -> Result<Trace> {
    struct Raw {
        disappear: bool,
        id: u64,
        t: u64,
        x: f64,
        y: f64,
        vx: f64,
        vy: f64,
    }
    let mut raw = Vec::new();
    let mut last_t = 0;
    for (no, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        let at = || format!("line {}", no + 1);
        if f.len() < 10 {
            bail!("{}: {} fields, expected 10", at(), f.len());
        }
        let num = |i: usize, name: &str| -> Result<f64> {
            let v: f64 = f[i]
                .parse()
                .with_context(|| format!("{}: {name} {:?}", at(), f[i]))?;
            if !v.is_finite() {
                bail!("{}: {name} is not finite", at());
            }
            Ok(v)
        };
        let disappear = match f[0] {
            "newpoint" | "point" => false,
            "disappearpoint" => true,
            a => bail!("{}: unknown action {a:?}", at()),
        };
        let id: u64 = f[1].parse().with_context(|| format!("{}: id", at()))?;
        let t = num(4, "time")?;
        if t < 0.0 || t.fract() != 0.0 {
            bail!("{}: time {t} is not a whole tick", at());
        }
        let t = t as u64;
        if t < last_t {
            bail!("{}: time goes back from {last_t} to {t}", at());
        }
        last_t = t;
        let (x, y, speed) = (num(5, "x")?, num(6, "y")?, num(7, "speed")?);
        let (nx, ny) = (num(8, "nextNodeX")?, num(9, "nextNodeY")?);
        let len = ((nx - x).powi(2) + (ny - y).powi(2)).sqrt();
        let (vx, vy) = if len == 0.0 {
            (0.0, 0.0)
        } else {
            (speed * (nx - x) / len, speed * (ny - y) / len)
        };
        raw.push(Raw {
            disappear,
            id,
            t,
            x,
            y,
            vx,
            vy,
        });
    }
    let (mut x0, mut y0, mut x1, mut y1) = (f64::MAX, f64::MAX, f64::MIN, f64::MIN);
    for r in &raw {
        x0 = x0.min(r.x);
        y0 = y0.min(r.y);
        x1 = x1.max(r.x);
        y1 = y1.max(r.y);
    }
    let extent = (x1 - x0).max(y1 - y0);
    let scale = if extent > 0.0 { side / extent } else { 1.0 };
    let mut max_speed: f64 = 0.0;
    let events = raw
        .iter()
        .map(|r| {
            if r.disappear {
                return TraceEvent::Disappear { id: r.id, t: r.t };
            }
            let (vx, vy) = (r.vx * scale, r.vy * scale);
            max_speed = max_speed.max(vx.abs()).max(vy.abs());
            TraceEvent::Report {
                id: r.id,
                motion: Motion {
                    x: ((r.x - x0) * scale).clamp(0.0, side),
                    y: ((r.y - y0) * scale).clamp(0.0, side),
                    vx,
                    vy,
                    t: r.t,
                },
            }
        })
        .collect();
    Ok(Trace { events, max_speed })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn in_space(m: &Motion) -> bool {
        (0.0..=1000.0).contains(&m.x) && (0.0..=1000.0).contains(&m.y)
    }

    #[test]
    fn every_generator_keeps_the_promises_the_index_checks() {
        for data in [MoData::Uniform, MoData::Gaussian, MoData::Network] {
            let mut w = World::new(data, 1000, 1000.0, 3.0, 120, 7);
            let mut last = vec![0u64; 1000];
            for id in 0..1000 {
                assert!(in_space(&w.initial(id)), "{data}");
            }
            for _ in 0..5000 {
                let (id, _, m) = w.next_report();
                assert!(in_space(&m), "{data}: {m:?}");
                assert!(m.vx.abs() <= 3.0 && m.vy.abs() <= 3.0, "{data}: {m:?}");
                assert!(
                    m.t - last[id as usize] <= 120,
                    "{data}: {id} waited too long"
                );
                last[id as usize] = m.t;
            }
            assert!(w.now > 4 * 120, "{data}: time moves on");
            let mut o = w.order.clone();
            assert_ne!(o[..10], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], "{data}: not by id");
            o.sort_unstable();
            assert_eq!(
                o,
                (0..1000).collect::<Vec<u64>>(),
                "{data}: every object reports"
            );
        }
        assert_eq!(reflect(1010.0, 1000.0), 990.0);
        assert_eq!(reflect(-5.0, 1000.0), 5.0);
    }

    #[test]
    fn generators_are_deterministic_by_seed() {
        for data in [MoData::Uniform, MoData::Gaussian, MoData::Network] {
            let mut a = World::new(data, 300, 1000.0, 3.0, 120, 9);
            let mut b = World::new(data, 300, 1000.0, 3.0, 120, 9);
            for _ in 0..2000 {
                assert_eq!(a.next_report(), b.next_report(), "{data}");
            }
        }
    }

    #[test]
    fn network_objects_stay_on_roads_and_move_along_one_axis() {
        let mut w = World::new(MoData::Network, 500, 1000.0, 3.0, 120, 3);
        let mut moved = 0;
        for _ in 0..5000 {
            let (_, _, m) = w.next_report();
            assert!(w.on_line(m.x) || w.on_line(m.y), "off the roads: {m:?}");
            assert!(m.vx == 0.0 || m.vy == 0.0, "diagonal: {m:?}");
            // Going along a row means being on it.
            if m.vx != 0.0 {
                assert!(w.on_line(m.y), "{m:?}");
            }
            if m.vy != 0.0 {
                assert!(w.on_line(m.x), "{m:?}");
            }
            let speed = m.vx.abs().max(m.vy.abs());
            assert!(speed <= 3.0 && (speed == 0.0 || speed >= 0.5), "{m:?}");
            moved += u32::from(speed > 0.0);
        }
        assert!(moved > 4900, "nearly every object is on a trip: {moved}");
    }

    #[test]
    fn gaussian_objects_crowd_around_hotspots() {
        let w = World::new(MoData::Gaussian, 5000, 1000.0, 3.0, 120, 5);
        let near = (0..5000)
            .filter(|&id| {
                let m = w.initial(id);
                w.hotspots.iter().any(|&(cx, cy)| {
                    ((m.x - cx).powi(2) + (m.y - cy).powi(2)).sqrt() <= 3.0 * 1000.0 / 20.0
                })
            })
            .count();
        // Within 3σ of a hotspot: ~99% of the objects; ten such disks cover under 30% of
        // the space, so uniform data would give well under half.
        assert!(near > 4800, "{near}");
        let u = World::new(MoData::Uniform, 5000, 1000.0, 3.0, 120, 5);
        let near_u = (0..5000)
            .filter(|&id| {
                let m = u.initial(id);
                w.hotspots
                    .iter()
                    .any(|&(cx, cy)| ((m.x - cx).powi(2) + (m.y - cy).powi(2)).sqrt() <= 150.0)
            })
            .count();
        assert!(near_u < 2500, "{near_u}");
    }

    #[test]
    fn brinkhoff_traces_are_read_scaled_and_checked() {
        let text = "newpoint\t0\t0\t0\t0\t100.0\t200.0\t10.0\t100.0\t300.0\n\
                    newpoint\t1\t0\t0\t0\t300.0\t400.0\t5.0\t400.0\t400.0\n\
                    point\t0\t1\t0\t1\t100.0\t210.0\t10.0\t100.0\t300.0\n\
                    disappearpoint\t1\t1\t0\t2\t305.0\t400.0\t5.0\t400.0\t400.0\n";
        let tr = read_brinkhoff(text, 1000.0).unwrap();
        assert_eq!(tr.events.len(), 4);
        // Bounding box 100..305 x 200..400: extent 205, scale 1000/205.
        let s = 1000.0 / 205.0;
        match tr.events[0] {
            TraceEvent::Report { id, motion } => {
                assert_eq!(id, 0);
                assert_eq!((motion.x, motion.y, motion.t), (0.0, 0.0, 0));
                assert_eq!(motion.vx, 0.0);
                assert!((motion.vy - 10.0 * s).abs() < 1e-9);
            }
            e => panic!("{e:?}"),
        }
        match tr.events[1] {
            TraceEvent::Report { motion, .. } => {
                assert!((motion.x - 200.0 * s).abs() < 1e-9);
                assert!((motion.vx - 5.0 * s).abs() < 1e-9);
            }
            e => panic!("{e:?}"),
        }
        assert_eq!(tr.events[3], TraceEvent::Disappear { id: 1, t: 2 });
        assert!((tr.max_speed - 10.0 * s).abs() < 1e-9);
        for (bad, why) in [
            ("point\t0\t0\t0\t0\t1\t2\t3\t4\n", "fields"),
            ("walk\t0\t0\t0\t0\t1\t2\t3\t4\t5\n", "action"),
            ("point\t0\t0\t0\t0.5\t1\t2\t3\t4\t5\n", "whole tick"),
            (
                "point\t0\t0\t0\t5\t1\t2\t3\t4\t5\npoint\t0\t0\t0\t4\t1\t2\t3\t4\t5\n",
                "back",
            ),
            ("point\t0\t0\t0\t1\tNaN\t2\t3\t4\t5\n", "finite"),
        ] {
            let e = read_brinkhoff(bad, 1000.0).unwrap_err();
            assert!(format!("{e:#}").contains(why), "{bad}: {e:#}");
        }
    }
}
