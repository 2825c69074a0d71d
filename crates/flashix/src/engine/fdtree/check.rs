//! `check_integrity`: the invariants listed in the module doc, on the whole structure.

use super::run::{read_pages, Run};
use super::FdTree;
use crate::error::{Error, Result};
use crate::io::PageId;
use crate::kit::sorted::entry::{Entry, Kind, KIND_HEAD_INTERNAL, KIND_HEAD_LEAF, NONE};
use crate::kit::sorted::head::{self, Head};
use crate::page::DATA_FILE;
use std::collections::HashSet;

fn bad(pid: Option<PageId>, detail: String) -> Error {
    Error::corruption(
        DATA_FILE,
        pid,
        format!("FD-tree invariant violated: {detail}"),
    )
}

/// A level as the checks see it: every page's entries.
struct LevelView {
    run: Run,
    pages: Vec<Vec<Entry>>,
}

impl LevelView {
    fn first_key(&self, pid: PageId) -> u64 {
        self.pages[(pid - self.run.start) as usize][0].key
    }
}

/// A head-tree node to visit: page, level, and the bounds its entries must lie within.
type Frame = (PageId, u32, Option<(u64, u8)>, Option<(u64, u8)>);

struct HeadWalk {
    leaves: Vec<PageId>,
    entries: Vec<Entry>,
    pages: u64,
}

impl FdTree {
    /// Range tombstones ([`crate::kit::sorted::tombs`]): each set well formed, one set per
    /// level, none in the last level (a merge into it retires them), none without an older
    /// level to hide, none in the frozen head tree without a merge.
    fn check_tombs(&self) -> Result<()> {
        let sets = [
            ("head tree", &self.head_tombs),
            ("frozen head tree", &self.frozen_tombs),
        ]
        .into_iter()
        .map(|(n, t)| (n.to_string(), t))
        .chain((self.level_tombs.iter().enumerate()).map(|(i, t)| (format!("L{}", i + 1), t)));
        for (name, t) in sets {
            t.check()
                .map_err(|e| bad(None, format!("{name} range tombstones: {e}")))?;
        }
        if self.level_tombs.len() != self.levels.len() {
            return Err(bad(
                None,
                format!(
                    "{} range-tombstone sets for {} levels",
                    self.level_tombs.len(),
                    self.levels.len()
                ),
            ));
        }
        if self.level_tombs.last().is_some_and(|t| !t.is_empty()) {
            return Err(bad(
                None,
                "the last level holds range tombstones (the merge into it retires them)".into(),
            ));
        }
        if self.frozen.is_none() && !self.frozen_tombs.is_empty() {
            return Err(bad(
                None,
                "frozen range tombstones without a frozen head tree".into(),
            ));
        }
        if self.levels.is_empty() && self.frozen.is_none() && !self.head_tombs.is_empty() {
            return Err(bad(
                None,
                "head-tree range tombstones with no older level to hide".into(),
            ));
        }
        Ok(())
    }

    pub(super) fn check(&mut self) -> Result<()> {
        self.fold();
        let mut seen: HashSet<PageId> = HashSet::new();
        if self.frozen.is_some() != self.job.is_some() {
            return Err(bad(
                None,
                "frozen head tree without a merge, or the reverse".into(),
            ));
        }
        self.check_tombs()?;
        let nav = self.check_heads(&mut seen)?;
        let views = self.read_levels(&mut seen)?;
        let last = views.len();
        for (i, v) in views.iter().enumerate() {
            self.check_level(i + 1, v, last)?;
        }
        check_all_fences(&nav, &views)
    }

    /// Walks the head tree and, during a merge, the frozen one; returns the walk of the
    /// one that navigates to L1 (the frozen one during a merge) after checking its size.
    fn check_heads(&mut self, seen: &mut HashSet<PageId>) -> Result<HeadWalk> {
        let head = self.head.clone();
        let active = self.check_head(&head, seen, "head tree")?;
        let nav = match self.frozen.clone() {
            Some(fr) => {
                if let Some(f) = active
                    .entries
                    .iter()
                    .find(|e| e.is_fence() && e.val != NONE)
                {
                    return Err(bad(
                        None,
                        format!("new head tree has a fence to page {} during a merge", f.val),
                    ));
                }
                self.check_head(&fr, seen, "frozen head tree")?
            }
            None => active,
        };
        let nav_tombs = if self.frozen.is_some() {
            self.frozen_tombs.len()
        } else {
            self.head_tombs.len()
        };
        if (nav.entries.len() + nav_tombs) as u64 >= self.p.cap0
            && nav.entries.iter().any(|e| !e.is_fence())
            && self.job.is_none()
            && !self.shared.full_pending()
        {
            return Err(bad(
                None,
                format!(
                    "head tree holds {} entries and {nav_tombs} range tombstones, at or above \
                     its capacity {} (§3.3 Insertion)",
                    nav.entries.len(),
                    self.p.cap0
                ),
            ));
        }
        let _ = nav.leaves.len() + nav.pages as usize;
        Ok(nav)
    }

    /// Reads every level's pages after checking each is allocated and used once.
    fn read_levels(&mut self, seen: &mut HashSet<PageId>) -> Result<Vec<LevelView>> {
        let mut views = Vec::with_capacity(self.levels.len());
        for (i, &run) in self.levels.clone().iter().enumerate() {
            let lvl = i + 1;
            let alloc = self.pager.allocator();
            for pid in run.start..run.start + run.pages {
                if pid >= alloc.high_water() || alloc.is_free(pid) {
                    return Err(bad(Some(pid), format!("page of L{lvl} is not allocated")));
                }
                if !seen.insert(pid) {
                    return Err(bad(Some(pid), format!("page of L{lvl} is used twice")));
                }
            }
            let mut pages = Vec::with_capacity(run.pages as usize);
            let mut at = run.start;
            while at < run.start + run.pages {
                let n = self.p.io_unit.min(run.start + run.pages - at);
                pages.extend(read_pages(&self.pager, self.p.lay, at, n)?);
                at += n;
            }
            views.push(LevelView { run, pages });
        }
        Ok(views)
    }

    /// One level `lvl` of `last`: its counts against the manifest, Invariants 1, 4 and 5.
    fn check_level(&self, lvl: usize, v: &LevelView, last: usize) -> Result<()> {
        let count: u64 = v.pages.iter().map(|p| p.len() as u64).sum();
        if count != v.run.entries {
            return Err(bad(
                Some(v.run.start),
                format!(
                    "L{lvl} holds {count} entries, the manifest says {}",
                    v.run.entries
                ),
            ));
        }
        let all: Vec<&Entry> = v.pages.iter().flatten().collect();
        let index = all.iter().filter(|e| !e.is_fence()).count() as u64;
        let filters = all.iter().filter(|e| e.kind == Kind::Filter).count() as u64;
        if index != v.run.index_entries || filters != v.run.filters {
            return Err(bad(
                Some(v.run.start),
                format!(
                    "L{lvl} holds {index} index entries ({filters} filters), the manifest says {} ({})",
                    v.run.index_entries, v.run.filters
                ),
            ));
        }
        let cap = self.p.level_capacity(lvl);
        if count > cap {
            return Err(bad(
                Some(v.run.start),
                format!("L{lvl} holds {count} entries, above its capacity {cap} (§3.2)"),
            ));
        }
        let mut prev: Option<Entry> = None;
        let mut prev_index: Option<u64> = None;
        for (p, es) in v.pages.iter().enumerate() {
            let pid = v.run.start + p as u64;
            if !es[0].is_fence() {
                return Err(bad(
                    Some(pid),
                    format!("first entry of a page of L{lvl} is not a fence (Invariant 1)"),
                ));
            }
            for e in es {
                if prev.is_some_and(|q| q.pos() > e.pos()) {
                    return Err(bad(
                        Some(pid),
                        format!("L{lvl} is not sorted at key {}", e.key),
                    ));
                }
                prev = Some(*e);
                if !e.is_fence() {
                    if prev_index.is_some_and(|k| k >= e.key) {
                        return Err(bad(Some(pid), format!("key {} twice in L{lvl}", e.key)));
                    }
                    prev_index = Some(e.key);
                    if e.kind == Kind::Filter && lvl == last {
                        return Err(bad(
                            Some(pid),
                            format!("filter entry {} in the last level (§3.3)", e.key),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// Walk a head tree: order, separators, depth, leaf chain, counts, pages.
    fn check_head(&mut self, h: &Head, seen: &mut HashSet<PageId>, what: &str) -> Result<HeadWalk> {
        let lay = self.p.lay;
        let mut w = HeadWalk {
            leaves: Vec::new(),
            entries: Vec::new(),
            pages: 0,
        };
        // (page, level, lower bound, upper bound) with positions (key, rank).
        let mut stack: Vec<Frame> = vec![(h.root, h.height - 1, None, None)];
        let mut leaf_entries: Vec<(PageId, Vec<Entry>, u64)> = Vec::new();
        while let Some((pid, lvl, lo, hi)) = stack.pop() {
            if !seen.insert(pid) {
                return Err(bad(Some(pid), format!("{what} page reachable twice")));
            }
            let alloc = self.pager.allocator();
            if pid >= alloc.high_water() || alloc.is_free(pid) {
                return Err(bad(Some(pid), format!("{what} page is not allocated")));
            }
            w.pages += 1;
            let (kind, nlvl, link, es) = head::node(&self.pager, lay, pid)?;
            let want = if lvl == 0 {
                KIND_HEAD_LEAF
            } else {
                KIND_HEAD_INTERNAL
            };
            if kind != want || nlvl != lvl {
                return Err(bad(
                    Some(pid),
                    format!("{what} node kind {kind} level {nlvl}, expected level {lvl}"),
                ));
            }
            for pair in es.windows(2) {
                if pair[0].pos() > pair[1].pos()
                    || (!pair[0].is_fence() && !pair[1].is_fence() && pair[0].key == pair[1].key)
                {
                    return Err(bad(
                        Some(pid),
                        format!("{what} node out of order at key {}", pair[1].key),
                    ));
                }
            }
            for e in &es {
                if lo.is_some_and(|l| e.pos() < l) || hi.is_some_and(|h| e.pos() > h) {
                    return Err(bad(
                        Some(pid),
                        format!("{what} key {} outside its parent's range", e.key),
                    ));
                }
            }
            if lvl == 0 {
                leaf_entries.push((pid, es, link));
                continue;
            }
            if es.is_empty() {
                return Err(bad(
                    Some(pid),
                    format!("{what} internal node without separators"),
                ));
            }
            // Push children right to left so that leaves come out in key order.
            for s in (0..=es.len()).rev() {
                let clo = if s == 0 { lo } else { Some(es[s - 1].pos()) };
                let chi = es.get(s).map(|e| e.pos()).or(hi);
                stack.push((head::child(link, &es, s), lvl - 1, clo, chi));
            }
        }
        if w.pages != h.pages {
            return Err(bad(
                Some(h.root),
                format!("{what} has {} pages, state says {}", w.pages, h.pages),
            ));
        }
        if leaf_entries.first().map(|l| l.0) != Some(h.first_leaf) {
            return Err(bad(
                Some(h.first_leaf),
                format!("{what} first leaf is wrong"),
            ));
        }
        for (i, (pid, es, link)) in leaf_entries.iter().enumerate() {
            let next = leaf_entries.get(i + 1).map_or(NONE, |l| l.0);
            if *link != next {
                return Err(bad(
                    Some(*pid),
                    format!("{what} leaf links to {link}, not {next}"),
                ));
            }
            if i > 0 && !es.first().is_some_and(|e| e.is_fence()) {
                return Err(bad(
                    Some(*pid),
                    format!("{what} leaf does not begin with a fence (Invariant 1)"),
                ));
            }
            if let (Some(a), Some(b)) = (w.entries.last(), es.first()) {
                if a.pos() > b.pos() {
                    return Err(bad(Some(*pid), format!("{what} leaves out of order")));
                }
            }
            w.leaves.push(*pid);
            w.entries.extend(es.iter().copied());
        }
        let index = w.entries.iter().filter(|e| !e.is_fence()).count() as u64;
        if w.entries.len() as u64 != h.entries || index != h.index_entries {
            return Err(bad(
                Some(h.root),
                format!(
                    "{what} holds {} entries ({index} index), state says {} ({})",
                    w.entries.len(),
                    h.entries,
                    h.index_entries
                ),
            ));
        }
        Ok(w)
    }
}

/// Invariants 2 and 3 for every pair of levels: head tree -> L1, L(i) -> L(i+1).
fn check_all_fences(nav: &HeadWalk, views: &[LevelView]) -> Result<()> {
    let nav_fences: Vec<Entry> = nav
        .entries
        .iter()
        .filter(|e| e.is_fence())
        .copied()
        .collect();
    check_fences("head tree", &nav_fences, views.first())?;
    for i in 0..views.len() {
        let fences: Vec<Entry> = views[i]
            .pages
            .iter()
            .flatten()
            .filter(|e| e.is_fence())
            .copied()
            .collect();
        check_fences(&format!("L{}", i + 1), &fences, views.get(i + 1))?;
    }
    Ok(())
}

/// Invariants 2 and 3 between a level's fences and the next level.
fn check_fences(what: &str, fences: &[Entry], next: Option<&LevelView>) -> Result<()> {
    let Some(next) = next else {
        if let Some(f) = fences
            .iter()
            .find(|f| f.kind == Kind::External || f.val != NONE)
        {
            return Err(bad(
                None,
                format!(
                    "{what} has fence {} to page {} but no next level",
                    f.key, f.val
                ),
            ));
        }
        return Ok(());
    };
    // Invariant 3: one external fence per page of the next level, with its first key.
    let ext: Vec<(u64, u64)> = fences
        .iter()
        .filter(|f| f.kind == Kind::External)
        .map(|f| (f.key, f.val))
        .collect();
    let want: Vec<(u64, u64)> = next
        .pages
        .iter()
        .enumerate()
        .map(|(i, p)| (p[0].key, next.run.start + i as u64))
        .collect();
    if ext != want {
        return Err(bad(
            Some(next.run.start),
            format!(
                "{what} holds {} external fences, not one per page of the next level's {} pages",
                ext.len(),
                want.len()
            ),
        ));
    }
    // Invariant 2.
    let end = next.run.start + next.run.pages;
    for (i, f) in fences.iter().enumerate() {
        let g = fences.get(i + 1).map(|g| g.key);
        if f.val == NONE {
            if g.is_some_and(|g| next.first_key(next.run.start) < g) || g.is_none() {
                return Err(bad(None, format!("{what} fence {} covers keys of the next level but points nowhere (Invariant 2)", f.key)));
            }
            continue;
        }
        if !next.run.contains(f.val) {
            return Err(bad(
                Some(f.val),
                format!("{what} fence {} points outside the next level", f.key),
            ));
        }
        let ok_lo = next.first_key(f.val) <= f.key;
        let ok_hi = match g {
            Some(g) => f.val + 1 == end || next.first_key(f.val + 1) >= g,
            None => f.val + 1 == end,
        };
        if !ok_lo || !ok_hi {
            return Err(bad(
                Some(f.val),
                format!(
                    "{what} fence {} to page {} breaks Invariant 2",
                    f.key, f.val
                ),
            ));
        }
    }
    Ok(())
}
