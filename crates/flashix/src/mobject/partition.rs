//! The index's small durable state, kept in meta keys of the reserved code (module doc):
//! the options, `now`, the object count, and per partition code its current label and the
//! velocity bounds of the objects indexed under it (the Bx-tree's "statistic information",
//! used to enlarge query windows).

use super::curve::Curve;
use super::layout::{Layout, SUB_META};
use super::options::{MobjectOptions, Rect};
use crate::error::{Error, Result};
use crate::{Batch, Db};

/// On-disk version of the layouts (meta key 0).
pub(crate) const MOBJECT_FORMAT: u64 = 1;

/// The last key of all, `u64::MAX`, is the last meta entry whatever the partition bits:
/// it names the format, `MAGIC << 32 | pbits << 8 | MOBJECT_FORMAT`, so that `open` finds
/// the meta sub-space before it knows the options.
const FORMAT_KEY: u64 = u64::MAX;
const MAGIC: u64 = 0x4d4f_424a; // "MOBJ"
const META_SPACE: u64 = 1; // 4 keys: x0 y0 x1 y1
const META_MAX_SPEED: u64 = 5;
const META_DT_MU: u64 = 6;
const META_PHASES: u64 = 7;
const META_GRID_BITS: u64 = 8;
const META_CURVE: u64 = 9;
const META_MAX_INTERVALS: u64 = 10;
const META_NOW: u64 = 11;
const META_OBJECTS: u64 = 12;
/// Per code `c`: `META_PARTS + 8c` the label (`u64::MAX`: none), `+1..=4` the velocity
/// bounds vx_min, vx_max, vy_min, vy_max (`f64` bits).
const META_PARTS: u64 = 16;
const NO_LABEL: u64 = u64::MAX;

/// A partition code's label and velocity bounds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Part {
    pub label: Option<u64>,
    /// vx_min, vx_max, vy_min, vy_max; empty (min > max) before the first object.
    pub v: [f64; 4],
}

impl Part {
    pub fn empty(label: Option<u64>) -> Part {
        Part {
            label,
            v: [
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::INFINITY,
                f64::NEG_INFINITY,
            ],
        }
    }

    /// The bounds grown to cover velocity `(vx, vy)`.
    pub fn grown(&self, vx: f64, vy: f64) -> Part {
        Part {
            label: self.label,
            v: [
                self.v[0].min(vx),
                self.v[1].max(vx),
                self.v[2].min(vy),
                self.v[3].max(vy),
            ],
        }
    }

    /// True when no object was indexed under the label.
    pub fn is_empty(&self) -> bool {
        self.v[0] > self.v[1]
    }
}

/// The durable state besides the entries.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct State {
    pub now: u64,
    pub objects: u64,
    pub parts: Vec<Part>,
}

fn meta_key(l: &Layout, i: u64) -> u64 {
    l.reserved_key(SUB_META, i)
}

/// The meta entries of new options and an empty state.
pub(crate) fn write_options(l: &Layout, o: &MobjectOptions, b: &mut Batch) {
    let put = |b: &mut Batch, i: u64, v: u64| {
        b.insert(meta_key(l, i), v);
    };
    b.insert(
        FORMAT_KEY,
        (MAGIC << 32) | (u64::from(l.pbits) << 8) | MOBJECT_FORMAT,
    );
    for (i, v) in [o.space.x0, o.space.y0, o.space.x1, o.space.y1]
        .iter()
        .enumerate()
    {
        put(b, META_SPACE + i as u64, v.to_bits());
    }
    put(b, META_MAX_SPEED, o.max_speed.to_bits());
    put(b, META_DT_MU, o.max_update_interval);
    put(b, META_PHASES, u64::from(o.phases));
    put(b, META_GRID_BITS, u64::from(o.grid_bits));
    put(b, META_CURVE, curve_code(o.curve));
    put(b, META_MAX_INTERVALS, u64::from(o.max_intervals));
    let st = State {
        now: 0,
        objects: 0,
        parts: vec![Part::empty(None); l.partitions as usize],
    };
    write_changes(l, None, &st, b);
}

fn curve_code(c: Curve) -> u64 {
    match c {
        Curve::Hilbert => 0,
        Curve::Z => 1,
    }
}

/// Upserts of the meta entries that differ between `old` (None: all) and `new`.
pub(crate) fn write_changes(l: &Layout, old: Option<&State>, new: &State, b: &mut Batch) {
    let mut put = |i: u64, v: u64| {
        b.insert(meta_key(l, i), v);
    };
    if old.map(|o| o.now) != Some(new.now) {
        put(META_NOW, new.now);
    }
    if old.map(|o| o.objects) != Some(new.objects) {
        put(META_OBJECTS, new.objects);
    }
    for (c, p) in new.parts.iter().enumerate() {
        if old.and_then(|o| o.parts.get(c)) == Some(p) {
            continue;
        }
        let base = META_PARTS + 8 * c as u64;
        put(base, p.label.unwrap_or(NO_LABEL));
        for (j, v) in p.v.iter().enumerate() {
            put(base + 1 + j as u64, v.to_bits());
        }
    }
}

/// Read the options (over the index `index`) and the state back from the meta entries.
pub(crate) fn read(db: &Db) -> Result<(MobjectOptions, Layout, State)> {
    let not = || {
        Error::Unsupported(
            "the directory holds a key-value index without moving-object metadata (not \
             created by MovingIndex, or its creation did not complete)"
                .into(),
        )
    };
    let Some(format) = db.get(FORMAT_KEY)? else {
        return Err(not());
    };
    if format >> 32 != MAGIC {
        return Err(not());
    }
    if format & 0xff != MOBJECT_FORMAT {
        return Err(Error::Unsupported(format!(
            "moving-object format version {} (this build reads {MOBJECT_FORMAT})",
            format & 0xff
        )));
    }
    let pbits = ((format >> 8) & 0xff) as u32;
    if !(1..=8).contains(&pbits) {
        return Err(Error::corruption(
            "mobject meta",
            None,
            format!("format entry {format:#x}"),
        ));
    }
    {
        let base = (((1u64 << pbits) - 1) << (64 - pbits)) | (SUB_META << (62 - pbits));
        let get = |i: u64| -> Result<u64> {
            db.get(base + i)?.ok_or_else(|| {
                Error::corruption("mobject meta", None, format!("meta entry {i} missing"))
            })
        };
        let f = |v: u64| f64::from_bits(v);
        let space = Rect {
            x0: f(get(META_SPACE)?),
            y0: f(get(META_SPACE + 1)?),
            x1: f(get(META_SPACE + 2)?),
            y1: f(get(META_SPACE + 3)?),
        };
        let narrow = |v: u64, what: &str| {
            u32::try_from(v)
                .map_err(|_| Error::corruption("mobject meta", None, format!("{what} {v}")))
        };
        // The index options are the Db's (its manifest); these carry the engine only.
        let mut o = MobjectOptions::new(crate::Options::new(crate::EngineKind::BTree))
            .space(space)
            .max_speed(f(get(META_MAX_SPEED)?))
            .max_update_interval(get(META_DT_MU)?)
            .phases(narrow(get(META_PHASES)?, "phases")?)
            .grid_bits(narrow(get(META_GRID_BITS)?, "grid_bits")?)
            .max_intervals(narrow(get(META_MAX_INTERVALS)?, "max_intervals")?);
        o.curve = match get(META_CURVE)? {
            0 => Curve::Hilbert,
            1 => Curve::Z,
            c => {
                return Err(Error::corruption(
                    "mobject meta",
                    None,
                    format!("curve code {c}"),
                ))
            }
        };
        o.validate().map_err(|e| {
            Error::corruption("mobject meta", None, format!("saved options refused: {e}"))
        })?;
        let l = Layout::new(&o)?;
        if l.pbits != pbits {
            return Err(Error::corruption(
                "mobject meta",
                None,
                format!("{pbits} partition bits saved, the options give {}", l.pbits),
            ));
        }
        let now = get(META_NOW)?;
        let objects = get(META_OBJECTS)?;
        let mut parts = Vec::with_capacity(l.partitions as usize);
        for c in 0..l.partitions {
            let b = META_PARTS + 8 * c;
            let label = get(b)?;
            let mut p = Part::empty((label != NO_LABEL).then_some(label));
            for j in 0..4 {
                p.v[j] = f(get(b + 1 + j as u64)?);
            }
            parts.push(p);
        }
        Ok((
            o,
            l,
            State {
                now,
                objects,
                parts,
            },
        ))
    }
}
