//! `MovingIndex::check_integrity`: the invariants of the module doc, over every entry.

use super::layout::{SUB_DIRECTORY, SUB_META, SUB_OVERFLOW_MOTION, SUB_OVERFLOW_TIME};
use super::Inner;
use crate::error::{Error, Result};
use std::collections::HashMap;

impl Inner {
    /// Check the engine's invariants, then the moving-object index's (module doc,
    /// Invariants 1-3), reading every entry.
    pub fn check_integrity(&mut self) -> Result<()> {
        self.db.check_integrity()?;
        let bad = |what: String| Err(Error::corruption("mobject", None, what));
        let l = self.layout.clone();
        let all: Vec<(u64, u64)> = self.db.range(..)?.collect::<Result<_>>()?;
        let mut directory: HashMap<u64, u64> = HashMap::new();
        // Every object entry, (id, key).
        let mut entries: Vec<(u64, u64)> = Vec::new();
        let mut overflow_times: HashMap<u64, u64> = HashMap::new();
        let mut overflow_motions: Vec<(u64, u64, u64)> = Vec::new();
        for &(k, v) in &all {
            if l.is_reserved(k) {
                let id = l.rest_of(k);
                match l.sub_of(k) {
                    SUB_DIRECTORY => {
                        directory.insert(id, v);
                    }
                    SUB_OVERFLOW_MOTION => overflow_motions.push((id, k, v)),
                    SUB_OVERFLOW_TIME => {
                        overflow_times.insert(id, v);
                    }
                    SUB_META => {}
                    _ => return bad(format!("key {k:#x} in no sub-space")),
                }
                continue;
            }
            let code = l.code_of(k);
            let id = l.id_of(k);
            let Some(part) = self.state.parts.get(code as usize).copied() else {
                return bad(format!("key {k:#x} has partition code {code}"));
            };
            let Some(label) = part.label else {
                return bad(format!(
                    "key {k:#x} is in partition {code}, which has no label"
                ));
            };
            let Some(m) = l.unpack(v, Some(label)) else {
                return bad(format!("entry {k:#x} does not decode under label {label}"));
            };
            let (xl, yl) = m.at(label);
            let want = l.bx_key(code, l.curve_value(xl, yl), id);
            if want != k {
                return bad(format!(
                    "entry {k:#x} of {id}: its motion gives key {want:#x}"
                ));
            }
            if m.t > self.state.now {
                return bad(format!(
                    "entry of {id} updated at {} after now {}",
                    m.t, self.state.now
                ));
            }
            let v = part.v;
            if !(v[0] <= m.vx && m.vx <= v[1] && v[2] <= m.vy && m.vy <= v[3]) {
                return bad(format!(
                    "entry of {id}: velocity ({}, {}) outside partition {code}'s bounds {v:?}",
                    m.vx, m.vy
                ));
            }
            entries.push((id, k));
        }
        if overflow_motions.len() != overflow_times.len() {
            return bad(format!(
                "{} overflow motions, {} overflow times",
                overflow_motions.len(),
                overflow_times.len()
            ));
        }
        for (id, k, v) in overflow_motions {
            match (l.unpack(v, None), overflow_times.get(&id)) {
                (Some(_), Some(&t)) if t <= self.state.now => {}
                _ => return bad(format!("overflow entries of {id} damaged")),
            }
            entries.push((id, k));
        }
        for &(id, k) in &entries {
            if directory.get(&id) != Some(&k) {
                return bad(format!(
                    "entry {k:#x} of object {id} is orphaned: the directory names {:?} (an \
                     update_from with an old motion other than the last one reported leaves \
                     one)",
                    directory.get(&id)
                ));
            }
        }
        // Each entry is named by its id's directory entry, so ids and entries are one to one.
        if directory.len() != entries.len() {
            return bad(format!(
                "{} directory entries for {} object entries",
                directory.len(),
                entries.len()
            ));
        }
        if entries.len() as u64 != self.state.objects {
            return bad(format!(
                "{} objects, the count says {}",
                entries.len(),
                self.state.objects
            ));
        }
        Ok(())
    }
}
