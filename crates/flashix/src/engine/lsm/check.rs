//! `check_integrity`: the invariants of the module doc, numbered as there.

use super::component::{
    self, corrupt, Component, Node, KIND_LSM_INTERNAL, KIND_LSM_LEAF, TOMBSTONE,
};
use super::Lsm;
use crate::error::Result;
use crate::io::PageId;
use crate::kit::sorted::entry::{Kind, NONE};
use crate::kit::sorted::job::Running;
use std::collections::HashSet;

impl Lsm {
    pub(super) fn check(&mut self) -> Result<()> {
        self.fold();
        let mut seen: HashSet<PageId> = HashSet::new();
        self.check_tombs()?;
        self.check_c0(&mut seen)?;
        if self.frozen.is_some() != self.job.is_some() {
            return Err(corrupt(
                None,
                "a frozen C0 without a merge in progress, or the reverse",
            ));
        }
        if let Some(fr) = &self.frozen {
            // Invariant 4: the frozen C0's entries are its index entries, sorted by key.
            if let Some(w) = fr.windows(2).find(|w| w[0].key >= w[1].key) {
                return Err(corrupt(
                    None,
                    format!("frozen C0 entries out of order at key {}", w[1].key),
                ));
            }
            if fr.iter().any(|e| e.is_fence()) {
                return Err(corrupt(None, "frozen C0 holds a fence"));
            }
        }
        // The extents the merge in progress writes: allocated, shared with nothing.
        let owned = self.job.as_ref().map(Running::owned).unwrap_or_default();
        for e in owned {
            for pid in e.start..e.start + e.len {
                self.claim(pid, "merge output", &mut seen)?;
            }
        }
        let last = self.components.iter().rposition(Option::is_some);
        for (i, c) in self.components.clone().iter().enumerate() {
            let level = i + 1;
            let capacity = self.p.capacity(level);
            let fill = self.fill(i);
            if fill > capacity {
                return Err(corrupt(
                    c.map(|c| c.start),
                    format!(
                        "C{level} holds {fill} entries and range tombstones, above \
                         |C{level}| = {capacity} (Invariant 2)"
                    ),
                ));
            }
            let Some(c) = c else { continue };
            if Some(i) == last && c.tombstones > 0 {
                return Err(corrupt(
                    Some(c.start),
                    format!(
                        "last component C{level} holds {} tombstones (Invariant 3)",
                        c.tombstones
                    ),
                ));
            }
            self.check_component(level, c, &mut seen)?;
        }
        Ok(())
    }

    /// Invariant 3 for range tombstones (tombs.rs): every level's are well formed, one set
    /// per component level, and none is held by a level with nothing older than it (the
    /// last component, whose merge retired them; C0 with no component and no frozen C0,
    /// where a range delete only removes from C0); the frozen C0's only during a merge.
    fn check_tombs(&self) -> Result<()> {
        if self.tombs.len() != self.components.len() {
            return Err(corrupt(
                None,
                format!(
                    "{} range tombstone sets for {} levels",
                    self.tombs.len(),
                    self.components.len()
                ),
            ));
        }
        if self.frozen.is_none() && !self.frozen_tombs.is_empty() {
            return Err(corrupt(
                None,
                "range tombstones of a frozen C0 without a merge in progress",
            ));
        }
        let older_component = |i: usize| self.components.iter().skip(i).any(Option::is_some);
        let mut levels = vec![
            ("C0".to_string(), &self.c0_tombs, self.holds_older()),
            (
                "frozen C0".to_string(),
                &self.frozen_tombs,
                older_component(0),
            ),
        ];
        for (i, t) in self.tombs.iter().enumerate() {
            levels.push((format!("C{}", i + 1), t, older_component(i + 1)));
        }
        for (name, t, older) in levels {
            t.check()
                .map_err(|e| corrupt(None, format!("{name}: {e}")))?;
            if !older && !t.is_empty() {
                return Err(corrupt(
                    None,
                    format!(
                        "{name} holds {} range tombstones with no component older than it \
                         (Invariant 3)",
                        t.len()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Invariant 5 for one page: owned by one structure, allocated.
    fn claim(&self, pid: PageId, what: &str, seen: &mut HashSet<PageId>) -> Result<()> {
        let alloc = self.pager.allocator();
        if pid >= alloc.high_water() || alloc.is_free(pid) {
            return Err(corrupt(
                Some(pid),
                format!("{what} page is free (Invariant 5)"),
            ));
        }
        if !seen.insert(pid) {
            return Err(corrupt(
                Some(pid),
                format!("{what} page is shared (Invariant 5)"),
            ));
        }
        Ok(())
    }

    /// Invariant 4: C0's pages, order, counts, and that a descent finds every entry.
    fn check_c0(&mut self, seen: &mut HashSet<PageId>) -> Result<()> {
        let lay = self.p.lay;
        let c0 = self.c0.clone();
        // A C0 that shared writes filled waits for the maintenance they asked for, which
        // runs right after them under the exclusive lock: a check between them and it sees
        // it full (module doc, Thread safety).
        if self.c0_full() && !self.shared.full_pending() {
            return Err(corrupt(
                Some(c0.root),
                format!(
                    "C0 holds {} entries and {} range tombstones, |C0| = {} (Invariant 2)",
                    c0.entries,
                    self.c0_tombs.len(),
                    self.p.cap0
                ),
            ));
        }
        let pages = c0.pages(&mut self.pager, lay)?;
        if pages.len() as u64 != c0.pages {
            return Err(corrupt(
                Some(c0.root),
                format!("C0 has {} pages, {} counted", pages.len(), c0.pages),
            ));
        }
        for &pid in &pages {
            self.claim(pid, "C0", seen)?;
        }
        let all = c0.all_entries(&mut self.pager, lay)?;
        if all.windows(2).any(|w| w[0].pos() >= w[1].pos()) {
            return Err(corrupt(Some(c0.root), "C0 leaf entries out of order"));
        }
        let index: Vec<_> = all.iter().filter(|e| !e.is_fence()).copied().collect();
        if all.len() as u64 != c0.entries || index.len() as u64 != c0.index_entries {
            return Err(corrupt(
                Some(c0.root),
                format!(
                    "C0 holds {} entries ({} index), {} ({}) counted",
                    all.len(),
                    index.len(),
                    c0.entries,
                    c0.index_entries
                ),
            ));
        }
        for e in index {
            if c0.find(&self.pager, lay, e.key)?.entry != Some(e) {
                return Err(corrupt(
                    Some(c0.root),
                    format!("C0 descent does not find key {}", e.key),
                ));
            }
        }
        Ok(())
    }

    /// Invariants 1 and 5 for one component, and its counts.
    fn check_component(
        &mut self,
        level: usize,
        c: &Component,
        seen: &mut HashSet<PageId>,
    ) -> Result<()> {
        let what = format!("C{level}");
        if c.pages == 0 || c.leaves == 0 || c.leaves > c.pages || c.root != c.start + c.pages - 1 {
            return Err(corrupt(
                Some(c.start),
                format!("{what} has a bad shape: {c:?}"),
            ));
        }
        for pid in c.start..c.start + c.pages {
            self.claim(pid, &what, seen)?;
        }
        let mut nodes: Vec<Node> = Vec::with_capacity(c.pages as usize);
        let mut at = 0;
        while at < c.pages {
            let n = self.p.io_unit.min(c.pages - at);
            nodes.extend(component::read_nodes(
                &self.pager,
                self.p.lay,
                c.start + at,
                n,
            )?);
            at += n;
        }
        // Leaves: contiguous, non-empty, keys strictly increasing, typed entries.
        let (mut entries, mut tombstones) = (0u64, 0u64);
        let mut prev: Option<u64> = None;
        for (i, nd) in nodes.iter().enumerate() {
            let pid = c.start + i as u64;
            let leaf = (i as u64) < c.leaves;
            let ok = if leaf {
                nd.kind == KIND_LSM_LEAF && nd.level == 0 && !nd.entries.is_empty()
            } else {
                nd.kind == KIND_LSM_INTERNAL && nd.level >= 1
            };
            if !ok {
                return Err(corrupt(
                    Some(pid),
                    format!(
                        "{what}: page kind {} level {} misplaced (Invariant 1)",
                        nd.kind, nd.level
                    ),
                ));
            }
            if !leaf {
                if nd.entries.iter().any(|e| e.kind != Kind::Internal) {
                    return Err(corrupt(Some(pid), format!("{what}: bad separator type")));
                }
                continue;
            }
            for e in &nd.entries {
                if e.kind != Kind::Normal && e.kind != TOMBSTONE {
                    return Err(corrupt(Some(pid), format!("{what}: leaf holds a fence")));
                }
                if prev.is_some_and(|p| p >= e.key) {
                    return Err(corrupt(
                        Some(pid),
                        format!("{what}: key {} out of order (Invariant 1)", e.key),
                    ));
                }
                prev = Some(e.key);
                entries += 1;
                tombstones += u64::from(e.kind == TOMBSTONE);
            }
        }
        if entries != c.entries || tombstones != c.tombstones {
            return Err(corrupt(
                Some(c.start),
                format!(
                    "{what} holds {entries} entries ({tombstones} tombstones), {} ({}) counted",
                    c.entries, c.tombstones
                ),
            ));
        }
        // The tree: a walk from the root reaches every page once, leaves left to right.
        let mut visited = 0u64;
        let mut next_leaf = c.start;
        let root_level = nodes[(c.root - c.start) as usize].level;
        if root_level + 1 != c.height {
            return Err(corrupt(
                Some(c.root),
                format!("{what}: root at level {root_level}, height {}", c.height),
            ));
        }
        walk(
            c,
            &nodes,
            c.root,
            root_level,
            &mut visited,
            &mut next_leaf,
            &what,
        )?;
        if visited != c.pages || next_leaf != c.start + c.leaves {
            return Err(corrupt(
                Some(c.start),
                format!(
                    "{what}: the tree reaches {visited} of {} pages (Invariant 1)",
                    c.pages
                ),
            ));
        }
        Ok(())
    }
}

/// Check the subtree of `pid` at `level`; returns its first key.
fn walk(
    c: &Component,
    nodes: &[Node],
    pid: PageId,
    level: u32,
    visited: &mut u64,
    next_leaf: &mut PageId,
    what: &str,
) -> Result<u64> {
    if !c.contains(pid) || pid == NONE {
        return Err(corrupt(
            Some(pid),
            format!("{what}: child outside the extent"),
        ));
    }
    *visited += 1;
    if *visited > c.pages {
        return Err(corrupt(
            Some(pid),
            format!("{what}: a page is reached twice"),
        ));
    }
    let nd = &nodes[(pid - c.start) as usize];
    if nd.level != level {
        return Err(corrupt(
            Some(pid),
            format!("{what}: node at level {}, expected {level}", nd.level),
        ));
    }
    if level == 0 {
        if pid != *next_leaf {
            return Err(corrupt(Some(pid), format!("{what}: leaves out of order")));
        }
        *next_leaf += 1;
        return Ok(nd.entries[0].key);
    }
    let first = walk(c, nodes, nd.link, level - 1, visited, next_leaf, what)?;
    for s in &nd.entries {
        let k = walk(c, nodes, s.val, level - 1, visited, next_leaf, what)?;
        if k != s.key {
            return Err(corrupt(
                Some(pid),
                format!("{what}: separator {} but child begins at {k}", s.key),
            ));
        }
    }
    Ok(first)
}
