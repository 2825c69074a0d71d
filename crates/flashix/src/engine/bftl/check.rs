//! `check_integrity` for BFTL: the invariants of the module doc (B+-tree order and
//! occupancy, NTT consistent with the pages and the tree, reservation buffer).

use super::{Bftl, NONE};
use crate::error::{Error, Result};
use crate::page::DATA_FILE;
use std::collections::{HashMap, HashSet};

fn broken(what: String) -> Error {
    Error::corruption(DATA_FILE, None, format!("BFTL integrity: {what}"))
}

impl Bftl {
    pub(super) fn check(&mut self) -> Result<()> {
        // 1. The tree, from the root, with fences [lo, hi).
        let mut seen = HashSet::new();
        let mut leaf_entries = 0u64;
        let mut stack = vec![(self.root, self.height - 1, 0u64, None::<u64>)];
        while let Some((id, level, lo, hi)) = stack.pop() {
            if !seen.insert(id) {
                return Err(broken(format!("node {id} is reachable twice")));
            }
            // Reading the node checks each listed page's envelope, that it holds units of
            // the node, and that the units start with a Reset.
            let n = self.load(id)?;
            let is_root = id == self.root;
            if n.level != level {
                return Err(broken(format!(
                    "node {id} at level {}, expected {level}",
                    n.level
                )));
            }
            if n.entries.len() > self.cap {
                return Err(broken(format!(
                    "node {id} holds {} entries, more than {}",
                    n.entries.len(),
                    self.cap
                )));
            }
            if let Some(w) = n.entries.windows(2).find(|w| w[0].0 >= w[1].0) {
                return Err(broken(format!(
                    "node {id}: keys {} and {} out of order",
                    w[0].0, w[1].0
                )));
            }
            if let (Some(first), Some(last)) = (n.entries.first(), n.entries.last()) {
                if first.0 < lo || hi.is_some_and(|h| last.0 >= h) {
                    return Err(broken(format!(
                        "node {id}: keys {}..={} outside its fences [{lo}, {hi:?})",
                        first.0, last.0
                    )));
                }
            }
            if level == 0 {
                if n.link != NONE {
                    return Err(broken(format!("leaf {id} has link {}", n.link)));
                }
                if n.entries.is_empty() && !is_root {
                    return Err(broken(format!("non-root leaf {id} is empty")));
                }
                leaf_entries += n.entries.len() as u64;
                continue;
            }
            if is_root && n.entries.is_empty() {
                return Err(broken(format!("internal root {id} has no separator")));
            }
            let first_hi = n.entries.first().map(|e| e.0).or(hi);
            stack.push((n.link, level - 1, lo, first_hi));
            for (i, &(k, child)) in n.entries.iter().enumerate() {
                let h = n.entries.get(i + 1).map(|e| e.0).or(hi);
                stack.push((child, level - 1, k, h));
            }
        }
        if leaf_entries != self.entries {
            return Err(broken(format!(
                "the leaves hold {leaf_entries} entries, the tree counts {}",
                self.entries
            )));
        }
        // 2. The NTT against the tree and the allocator.
        let mut refs: HashMap<u64, u32> = HashMap::new();
        for (node, list) in self.ntt.iter() {
            if !seen.contains(&node) {
                return Err(broken(format!("the NTT lists unreachable node {node}")));
            }
            if list.is_empty() || list.len() > self.c {
                return Err(broken(format!(
                    "node {node} has {} pages in its NTT list (c = {})",
                    list.len(),
                    self.c
                )));
            }
            let mut own = HashSet::new();
            for &p in list {
                if !own.insert(p) {
                    return Err(broken(format!("node {node} lists page {p} twice")));
                }
                *refs.entry(p).or_insert(0) += 1;
            }
        }
        for (&p, &r) in &refs {
            if self.ntt.refs(p) != r {
                return Err(broken(format!(
                    "page {p} is counted {} times, named by {r} lists",
                    self.ntt.refs(p)
                )));
            }
            if self.pager.allocator().is_free(p) || self.recycled.contains(&p) {
                return Err(broken(format!("page {p} is listed but free")));
            }
            if p >= self.pager.allocator().high_water() {
                return Err(broken(format!("page {p} was never allocated")));
            }
        }
        if refs.len() != self.ntt.pages() {
            return Err(broken(format!(
                "{} pages are counted, {} are listed",
                self.ntt.pages(),
                refs.len()
            )));
        }
        // 3. The reservation buffer.
        let mut buffered = 0;
        for (node, n) in self.res.nodes() {
            if !seen.contains(&node) {
                return Err(broken(format!(
                    "the reservation buffer holds units of unreachable node {node}"
                )));
            }
            buffered += n;
        }
        if buffered != self.res.len() {
            return Err(broken(format!(
                "the reservation buffer counts {} units and holds {buffered}",
                self.res.len()
            )));
        }
        for &id in &seen {
            if self.ntt.list(id).is_empty() && self.res.get(id).is_empty() {
                return Err(broken(format!("node {id} has neither pages nor units")));
            }
        }
        Ok(())
    }
}
