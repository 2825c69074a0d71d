//! Moving objects (`flashix::mobject`): the Bx-tree front end over a flashix index. Objects
//! report a position and a velocity; range and k-nearest-neighbour queries are answered for
//! a time at or after the latest update. Over `EngineKind::BTree` this is the Bx-tree
//! (Jensen et al., VLDB 2004), over `EngineKind::Fbx` the FBX-tree.
//!
//! `cargo run -p flashix --example moving_objects`

mod common;

use flashix::mobject::{MobjectOptions, Motion, MovingIndex, Rect};
use flashix::{EngineKind, Options};
use std::collections::BTreeMap;

const OBJECTS: u64 = 300;

/// A small deterministic generator (xorshift), so the example needs no dependency.
struct Gen(u64);

impl Gen {
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn main() -> flashix::Result<()> {
    let scratch = common::Scratch::new("moving-objects");
    let opts = MobjectOptions::new(Options::new(EngineKind::BTree).buffer_pool_bytes(1 << 20))
        .space(Rect {
            x0: 0.0,
            y0: 0.0,
            x1: 1000.0,
            y1: 1000.0,
        })
        .max_speed(3.0) // units per tick, per axis
        .max_update_interval(120); // every object reports at least every 120 ticks
    let mi = MovingIndex::create(scratch.path(), opts.clone())?;

    // What the index should hold: the last motion of each object, as the index stores it
    // (opts.quantize rounds to the stored fixed point).
    let mut model: BTreeMap<u64, Motion> = BTreeMap::new();
    let mut gen = Gen(0x9e37_79b9_7f4a_7c15);
    let motion = |gen: &mut Gen, t: u64| Motion {
        x: 100.0 + 800.0 * gen.unit(),
        y: 100.0 + 800.0 * gen.unit(),
        vx: 6.0 * gen.unit() - 3.0,
        vy: 6.0 * gen.unit() - 3.0,
        t,
    };

    // Tick 0: every object reports. Tick 30: a third of them report again (an update
    // replaces the object's previous motion; `update_from` is told the motion reported
    // before, so it writes without reading). Object 13 leaves.
    for id in 0..OBJECTS {
        let m = motion(&mut gen, 0);
        mi.update(id, m)?;
        model.insert(id, opts.quantize(m));
    }
    for id in (0..OBJECTS).step_by(3) {
        let m = motion(&mut gen, 30);
        mi.update_from(id, model[&id], m)?;
        model.insert(id, opts.quantize(m));
    }
    assert!(mi.remove(13)?);
    model.remove(&13);
    assert_eq!(mi.get(3)?, model.get(&3).copied());
    assert_eq!(mi.len(), OBJECTS - 1);

    // Who is inside this window at tick 40? Hits are sorted by id, positions at tick 40.
    let t = 40;
    let window = Rect {
        x0: 300.0,
        y0: 300.0,
        x1: 600.0,
        y1: 600.0,
    };
    let hits = mi.range(&window, t)?;
    let expected: Vec<u64> = model
        .iter()
        .filter(|(_, m)| {
            let (x, y) = m.at(t);
            window.contains(x, y)
        })
        .map(|(&id, _)| id)
        .collect();
    assert_eq!(hits.iter().map(|h| h.id).collect::<Vec<_>>(), expected);
    assert!(!hits.is_empty());
    println!("{} objects in {window:?} at tick {t}:", hits.len());
    for h in hits.iter().take(5) {
        println!("  id {:3} at ({:7.2}, {:7.2})", h.id, h.x, h.y);
    }

    // The 5 objects nearest to the centre at tick 40, by (distance, id).
    let (cx, cy, k) = (500.0, 500.0, 5);
    let near = mi.knn(cx, cy, k, t)?;
    let mut by_dist: Vec<(f64, u64)> = model
        .iter()
        .map(|(&id, m)| {
            let (x, y) = m.at(t);
            (((x - cx) * (x - cx) + (y - cy) * (y - cy)).sqrt(), id)
        })
        .collect();
    by_dist.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let expected: Vec<u64> = by_dist.iter().take(k).map(|&(_, id)| id).collect();
    assert_eq!(near.iter().map(|n| n.id).collect::<Vec<_>>(), expected);
    println!("{k} nearest to ({cx}, {cy}) at tick {t}:");
    for n in &near {
        println!("  id {:3} at distance {:6.2}", n.id, n.dist);
    }

    // Close and reopen: the options and the objects come back from the directory.
    mi.close()?;
    let mi = MovingIndex::open(scratch.path())?;
    assert_eq!(mi.len(), OBJECTS - 1);
    assert_eq!(mi.get(13)?, None);
    assert_eq!(mi.knn(cx, cy, k, t)?, near);
    mi.close()
}
