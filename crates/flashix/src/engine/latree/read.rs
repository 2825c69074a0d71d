//! Lookups and range scans through the buffers.
//!
//! A lookup descends from the root and scans, newest first, the buffer of every node on the
//! path until a message for the key decides (a delete: absent), else searches the leaf.
//! Each buffer it scanned records an ADAPT register ([`super::adapt`]); buffers whose
//! registers fire are emptied after the lookup, or, for a lookup on the shared path, by
//! the next write (`super`'s module doc, Thread safety).
//!
//! A range scan step descends to the level-1 node whose span holds the next key, collects
//! the messages in that span from the buffers on the path (every buffer whose subtree
//! meets the span lies on it), and merges them over the entries of up to `SCAN_LEAVES` of
//! its leaves (walked by the leaf chain), the newest message of a key winning.

use super::buffer::{self, Msg};
use super::empty::Cause;
use super::tree::level_error;
use super::LaTree;
use crate::error::{Error, Result};
use crate::io::PageId;
use crate::kit::api::RangeCursor;
use crate::kit::bnode::node;
use crate::page;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

/// Leaves a range step merges at most (with the buffered messages of their span).
const SCAN_LEAVES: usize = 8;

impl LaTree {
    /// A lookup on `&mut`: its answer, then the emptying of the buffers whose ADAPT
    /// registers fired, at once (the paper's order).
    pub(super) fn lookup(&mut self, key: u64) -> Result<Option<u64>> {
        let (out, fired) = self.search(key)?;
        if !fired.is_empty() {
            for p in fired {
                self.empty(p, Cause::Adapt)?;
            }
            self.settle()?;
        }
        Ok(out)
    }

    /// A lookup on `&self`: its answer, with the emptyings its ADAPT registers decided
    /// noted for the next write (module doc, Thread safety).
    pub(super) fn lookup_shared(&self, key: u64) -> Result<Option<u64>> {
        let (out, fired) = self.search(key)?;
        if !fired.is_empty() {
            self.deferred
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .extend(fired);
        }
        Ok(out)
    }

    /// The search of a lookup, changing nothing but atomics: the answer for `key` and the
    /// buffers on its path (root first) whose ADAPT registers fired.
    fn search(&self, key: u64) -> Result<(Option<u64>, Vec<PageId>)> {
        let mut pid = self.root;
        let mut level = self.height - 1;
        let mut fired: Vec<PageId> = Vec::new();
        let mut decided: Option<Option<u64>> = None;
        loop {
            let (kind, found, count, child) = self.pager.read_shared(pid, |b| {
                let child =
                    (node::level(b) > 0).then(|| node::child_at(b, node::child_slot(b, key)));
                (page::kind(b), node::level(b), node::count(b), child)
            })?;
            let want_kind = if level == 0 {
                node::KIND_LEAF
            } else {
                node::KIND_INTERNAL
            };
            if kind != want_kind || found != level {
                return Err(level_error(pid, found, level));
            }
            if let Some(b) = self.buffers.get(&pid) {
                let (hit, scanned) = buffer::lookup(&self.pager, b, key)?;
                self.scanned.fetch_add(scanned, Ordering::Relaxed);
                if self.adapt {
                    // emptyCost: read the buffer, then a read and a write of each subtree
                    // it reaches (at most one per message, at most one per child).
                    let reach = b.entries.min(count as u64 + 1);
                    let empty_cost = b.pages.saturating_add(reach.saturating_mul(2));
                    if b.adapt.lookup(scanned, empty_cost) {
                        fired.push(pid);
                    }
                }
                if let Some(m) = hit {
                    decided = Some((!m.delete).then_some(m.val));
                    break;
                }
            }
            match child {
                Some(c) => {
                    pid = c;
                    level -= 1;
                }
                None => break,
            }
        }
        let out = match decided {
            Some(v) => v,
            None => self
                .pager
                .read_shared(pid, |b| node::search(b, key).ok().map(|i| node::val(b, i)))?,
        };
        Ok((out, fired))
    }

    /// The ADAPT emptyings lookups on the shared path decided, done by the next write
    /// (under `&mut`): root first, as one lookup empties the buffers of its path, and only
    /// of buffers still due (a buffer emptied, split or merged since restarted its
    /// registers).
    pub(super) fn empty_deferred(&mut self) -> Result<()> {
        let due = std::mem::take(self.deferred.get_mut().unwrap_or_else(|e| e.into_inner()));
        if due.is_empty() {
            return Ok(());
        }
        let mut due: Vec<(u32, PageId)> = due
            .into_iter()
            .filter_map(|p| self.buffers.get(&p).map(|b| (b.level, p)))
            .collect();
        due.sort_unstable_by(|a, b| b.cmp(a));
        for (_, p) in due {
            if self.buffers.get(&p).is_some_and(|b| b.adapt.due()) {
                self.empty(p, Cause::Adapt)?;
            }
        }
        self.settle()
    }

    pub(super) fn scan_step(&self, cur: &mut RangeCursor, out: &mut Vec<(u64, u64)>) -> Result<()> {
        let before = out.len();
        while out.len() == before {
            let Some((lo, hi)) = cur.remaining() else {
                return Ok(());
            };
            // The leaves under one level-1 node share every buffer on their paths: collect
            // the messages of that node's span once and merge them with up to
            // SCAN_LEAVES of its leaves.
            let (nodes, first_leaf, span_hi) = if self.height == 1 {
                (vec![self.root], self.root, None)
            } else {
                let d = self.descend(lo, 1)?;
                let p = d.node;
                let leaf = self
                    .pager
                    .read_shared(p, |b| node::child_at(b, node::child_slot(b, lo)))?;
                let mut nodes: Vec<PageId> = d.path.iter().map(|&(n, _)| n).collect();
                nodes.push(p);
                (nodes, leaf, d.hi)
            };
            let end = match span_hi {
                Some(h) if h > lo => hi.min(h - 1),
                Some(_) => {
                    return Err(Error::corruption(
                        page::DATA_FILE,
                        Some(first_leaf),
                        format!("descent for key {lo} reached a node whose span ends below it"),
                    ))
                }
                None => hi,
            };
            // Newest first: the root's buffer down to the level-1 node's, each from its tail.
            let mut got: BTreeMap<u64, Option<u64>> = BTreeMap::new();
            for p in nodes {
                let Some(b) = self.buffers.get(&p) else {
                    continue;
                };
                let mut pages = buffer::pages_oldest_first(&self.pager, b)?;
                pages.reverse();
                for bp in pages {
                    let (msgs, _) = buffer::read_page(&self.pager, bp)?;
                    self.scanned.fetch_add(1, Ordering::Relaxed);
                    for m in msgs
                        .iter()
                        .rev()
                        .filter(|m: &&Msg| (lo..=end).contains(&m.key))
                    {
                        got.entry(m.key).or_insert((!m.delete).then_some(m.val));
                    }
                }
            }
            // The leaves from `lo` to `end`, at most SCAN_LEAVES of them; `stop` is the last
            // key covered.
            let mut stop = end;
            let mut leaf = first_leaf;
            let mut read = 0;
            loop {
                let (link, es) = self.pager.read_shared(leaf, |b| {
                    if !node::is_leaf(b) {
                        return Err(level_error(leaf, node::level(b), 0));
                    }
                    let start = node::search(b, lo).unwrap_or_else(|i| i);
                    let es = (start..node::count(b))
                        .map(|i| (node::key(b, i), node::val(b, i)))
                        .take_while(|&(k, _)| k <= end)
                        .collect::<Vec<_>>();
                    Ok((node::link(b), es))
                })??;
                for (k, v) in es {
                    got.entry(k).or_insert(Some(v));
                }
                read += 1;
                if link == node::NONE {
                    break;
                }
                let first = self.pager.read_shared(link, |b| {
                    (node::is_leaf(b) && node::count(b) > 0).then(|| node::key(b, 0))
                })?;
                let Some(first) = first else {
                    return Err(Error::corruption(
                        page::DATA_FILE,
                        Some(link),
                        "leaf chain reaches an empty leaf or a non-leaf",
                    ));
                };
                if first > end {
                    break;
                }
                if read >= SCAN_LEAVES {
                    stop = first - 1;
                    break;
                }
                leaf = link;
            }
            out.extend(got.range(..=stop).filter_map(|(&k, &v)| v.map(|v| (k, v))));
            cur.next = if stop < hi { Some(stop + 1) } else { None };
        }
        Ok(())
    }
}
