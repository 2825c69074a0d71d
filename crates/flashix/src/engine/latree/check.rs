//! `check_integrity`: the invariants listed in the module doc, checked on the whole tree
//! and every buffer.

use super::buffer::{self, per_page};
use super::LaTree;
use crate::error::{Error, Result};
use crate::io::PageId;
use crate::kit::bnode::{check, node};
use crate::page::DATA_FILE;
use std::collections::{HashMap, HashSet};

struct Walk {
    seen: HashSet<PageId>,
    /// (leaf, its link) in key order.
    leaves: Vec<(PageId, u64)>,
    entries: u64,
    /// Every node: (level, lo, hi) of its key span.
    spans: HashMap<PageId, (u32, Option<u64>, Option<u64>)>,
}

fn bad(pid: PageId, detail: String) -> Error {
    Error::corruption(
        DATA_FILE,
        Some(pid),
        format!("LA-tree invariant violated: {detail}"),
    )
}

impl LaTree {
    pub(super) fn check(&mut self) -> Result<()> {
        let mut w = Walk {
            seen: HashSet::new(),
            leaves: Vec::new(),
            entries: 0,
            spans: HashMap::new(),
        };
        self.check_node(self.root, self.height - 1, None, None, true, &mut w)?;
        for pair in w.leaves.windows(2) {
            if pair[0].1 != pair[1].0 {
                return Err(bad(
                    pair[0].0,
                    format!("leaf links to {} instead of {}", pair[0].1, pair[1].0),
                ));
            }
        }
        if let Some(&(last, link)) = w.leaves.last() {
            if link != node::NONE {
                return Err(bad(last, format!("last leaf links to {link}")));
            }
        }
        if w.entries != self.entries || w.leaves.len() as u64 != self.leaves {
            return Err(bad(
                self.root,
                format!(
                    "leaves hold {} entries in {} leaves, the header says {} in {}",
                    w.entries,
                    w.leaves.len(),
                    self.entries,
                    self.leaves
                ),
            ));
        }
        self.check_buffers(&mut w)
    }

    fn check_buffers(&mut self, w: &mut Walk) -> Result<()> {
        let per = per_page(self.pager.page_size());
        let table: Vec<(PageId, buffer::Buffer)> =
            self.buffers.iter().map(|(&p, b)| (p, b.clone())).collect();
        // Every message as (key, level, position in its chain, seq, page): the buffers
        // holding a key lie on one root-to-leaf path, so sorted by key, level and position
        // the sequence numbers of a key must increase (invariant 3).
        let mut all: Vec<(u64, u32, u64, u64, PageId)> = Vec::new();
        for (pid, b) in table {
            let Some(&(level, lo, hi)) = w.spans.get(&pid) else {
                return Err(bad(
                    pid,
                    "buffer attached to a page that is not a node".into(),
                ));
            };
            if level != b.level {
                return Err(bad(
                    pid,
                    format!("buffer of a level-{level} node says level {}", b.level),
                ));
            }
            if pid != self.root && !self.is_buffered_level(level) {
                return Err(bad(pid, format!("buffer on unbuffered level {level}")));
            }
            if b.entries == 0 || b.pages > self.max_buffer_pages {
                return Err(bad(
                    pid,
                    format!(
                        "buffer of {} entries in {} pages (at most {} pages, none empty)",
                        b.entries, b.pages, self.max_buffer_pages
                    ),
                ));
            }
            let pages = buffer::pages_oldest_first(&self.pager, &b)?;
            let mut entries = 0u64;
            let mut pos = 0u64;
            for p in pages {
                if !w.seen.insert(p) {
                    return Err(bad(p, "buffer page reachable twice".into()));
                }
                let alloc = self.pager.allocator();
                if p >= alloc.high_water() || alloc.is_free(p) {
                    return Err(bad(p, "reachable buffer page is not allocated".into()));
                }
                let (msgs, _) = buffer::read_page(&self.pager, p)?;
                if msgs.is_empty() || msgs.len() > per {
                    return Err(bad(p, format!("buffer page of {} messages", msgs.len())));
                }
                for m in &msgs {
                    if lo.is_some_and(|l| m.key < l) || hi.is_some_and(|h| m.key >= h) {
                        return Err(bad(
                            p,
                            format!(
                                "message for key {} outside its node's span {lo:?}..{hi:?}",
                                m.key
                            ),
                        ));
                    }
                    if m.seq > self.seq {
                        return Err(bad(
                            p,
                            format!("message seq {} above the last {}", m.seq, self.seq),
                        ));
                    }
                    all.push((m.key, b.level, pos, m.seq, p));
                    pos += 1;
                }
                entries += msgs.len() as u64;
            }
            if entries != b.entries {
                return Err(bad(
                    pid,
                    format!(
                        "buffer holds {entries} messages, the table says {}",
                        b.entries
                    ),
                ));
            }
        }
        all.sort_unstable_by_key(|&(k, level, pos, _, _)| (k, level, pos));
        for w in all.windows(2) {
            let ((k0, _, _, s0, _), (k1, _, _, s1, p1)) = (w[0], w[1]);
            if k0 == k1 && s0 >= s1 {
                return Err(bad(
                    p1,
                    format!("key {k1}: message seq {s1} at or after a newer one (seq {s0})"),
                ));
            }
        }
        Ok(())
    }

    /// Check the subtree at `pid`, whose keys must lie in `[lo, hi)`.
    fn check_node(
        &mut self,
        pid: PageId,
        level: u32,
        lo: Option<u64>,
        hi: Option<u64>,
        is_root: bool,
        w: &mut Walk,
    ) -> Result<()> {
        if !w.seen.insert(pid) {
            return Err(bad(pid, "page reachable twice".into()));
        }
        w.spans.insert(pid, (level, lo, hi));
        let n = check::read_node(&mut self.pager, pid, level, (lo, hi), bad)?;
        let es = &n.entries;
        let min = self.cap / 2;
        if !is_root && es.len() < min {
            return Err(bad(
                pid,
                format!("{} entries, below the minimum {min}", es.len()),
            ));
        }
        if is_root && level > 0 && es.is_empty() {
            return Err(bad(pid, "internal root without separators".into()));
        }
        if es.len() > self.cap {
            return Err(bad(
                pid,
                format!("{} entries above capacity {}", es.len(), self.cap),
            ));
        }
        if level == 0 {
            w.entries += es.len() as u64;
            w.leaves.push((pid, n.link));
            return Ok(());
        }
        for (child, lo, hi) in check::child_ranges(&n, lo, hi) {
            self.check_node(child, level - 1, lo, hi, false, w)?;
        }
        Ok(())
    }
}
