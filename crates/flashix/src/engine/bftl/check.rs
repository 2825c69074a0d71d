//! `check_integrity` for BFTL: the invariants of the module doc (B+-tree order and
//! occupancy, NTT consistent with the pages and the tree, reservation buffer).

use super::{Bftl, Node, NONE};
use crate::error::{Error, Result};
use crate::page::DATA_FILE;
use std::collections::{HashMap, HashSet};

fn broken(what: String) -> Error {
    Error::corruption(DATA_FILE, None, format!("BFTL integrity: {what}"))
}

impl Bftl {
    pub(super) fn check(&mut self) -> Result<()> {
        let seen = self.check_tree()?;
        self.check_ntt(&seen)?;
        self.check_reservation(&seen)
    }

    /// 1. The tree, from the root, with fences [lo, hi). Returns the reachable nodes.
    fn check_tree(&self) -> Result<HashSet<u64>> {
        let mut seen = HashSet::new();
        let mut leaf_entries = 0u64;
        let mut stack = vec![Visit {
            id: self.root,
            level: self.height - 1,
            lo: 0,
            hi: None,
        }];
        while let Some(v) = stack.pop() {
            if !seen.insert(v.id) {
                return Err(broken(format!("node {} is reachable twice", v.id)));
            }
            let n = self.check_node(&v)?;
            if v.level == 0 {
                self.check_leaf(v.id, &n)?;
                leaf_entries += n.entries.len() as u64;
                continue;
            }
            if v.id == self.root && n.entries.is_empty() {
                return Err(broken(format!("internal root {} has no separator", v.id)));
            }
            push_children(&mut stack, &v, &n);
        }
        if leaf_entries != self.entries {
            return Err(broken(format!(
                "the leaves hold {leaf_entries} entries, the tree counts {}",
                self.entries
            )));
        }
        Ok(seen)
    }

    /// Any node of the tree: its level, its occupancy, its keys in order and within its fences.
    fn check_node(&self, v: &Visit) -> Result<Node> {
        let Visit { id, level, lo, hi } = *v;
        // Reading the node checks each listed page's envelope, that it holds units of
        // the node, and that the units start with a Reset.
        let n = self.load(id)?;
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
        Ok(n)
    }

    /// A leaf has no link, and only the root leaf may be empty.
    fn check_leaf(&self, id: u64, n: &Node) -> Result<()> {
        if n.link != NONE {
            return Err(broken(format!("leaf {id} has link {}", n.link)));
        }
        if n.entries.is_empty() && id != self.root {
            return Err(broken(format!("non-root leaf {id} is empty")));
        }
        Ok(())
    }

    /// 2. The NTT against the tree and the allocator.
    fn check_ntt(&self, seen: &HashSet<u64>) -> Result<()> {
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
            for p in list {
                if !own.insert(p) {
                    return Err(broken(format!("node {node} lists page {p} twice")));
                }
                *refs.entry(p).or_insert(0) += 1;
            }
        }
        for (&p, &r) in &refs {
            self.check_listed_page(p, r)?;
        }
        if refs.len() != self.ntt.pages() {
            return Err(broken(format!(
                "{} pages are counted, {} are listed",
                self.ntt.pages(),
                refs.len()
            )));
        }
        Ok(())
    }

    /// A page named by `r` NTT lists: counted `r` times, allocated and not free.
    fn check_listed_page(&self, p: u64, r: u32) -> Result<()> {
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
        Ok(())
    }

    /// 3. The reservation buffer; and every reachable node is stored somewhere.
    fn check_reservation(&self, seen: &HashSet<u64>) -> Result<()> {
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
        for &id in seen {
            if self.ntt.list(id).is_empty() && self.res.get(id).is_empty() {
                return Err(broken(format!("node {id} has neither pages nor units")));
            }
        }
        Ok(())
    }
}

/// A node still to be checked: its id, the level it must be at, and its fences [lo, hi).
#[derive(Clone, Copy)]
struct Visit {
    id: u64,
    level: u32,
    lo: u64,
    hi: Option<u64>,
}

/// Pushes the children of internal node `n` at `v`: its link (left of the first separator)
/// first, then one child per separator, each with the fences its separators give it.
fn push_children(stack: &mut Vec<Visit>, v: &Visit, n: &Node) {
    let first_hi = n.entries.first().map(|e| e.0).or(v.hi);
    stack.push(Visit {
        id: n.link,
        level: v.level - 1,
        lo: v.lo,
        hi: first_hi,
    });
    for (i, &(k, child)) in n.entries.iter().enumerate() {
        let h = n.entries.get(i + 1).map(|e| e.0).or(v.hi);
        stack.push(Visit {
            id: child,
            level: v.level - 1,
            lo: k,
            hi: h,
        });
    }
}
