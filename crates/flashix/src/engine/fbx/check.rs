//! `check_integrity` for the FBX-tree: the invariants of the module doc.

use super::read::LeafSpan;
use super::Fbx;
use crate::error::{Error, Result};
use crate::io::PageId;
use crate::kit::ntt::unit::{self, Unit};
use crate::page::DATA_FILE;
use std::collections::{BTreeMap, BTreeSet, HashSet};

fn bad(page: Option<PageId>, what: String) -> Error {
    Error::corruption(DATA_FILE, page, format!("FBX integrity: {what}"))
}

impl Fbx {
    pub(crate) fn check(&mut self) -> Result<()> {
        let (leaves, leaf_ids) = self.check_tree_shape()?;
        let refs = self.check_ntt_lists(&leaf_ids)?;
        for span in &leaves {
            self.check_leaf(span)?;
        }
        self.check_space(&refs)
    }

    /// Invariant 1, the tree's shape: walks it from the root checking inner order and
    /// fences, every node once. Returns the leaves with their fences, and their ids.
    fn check_tree_shape(&mut self) -> Result<(Vec<LeafSpan>, BTreeSet<u64>)> {
        let mut leaves: Vec<LeafSpan> = Vec::new();
        let mut seen_inner = HashSet::new();
        let mut stack = vec![(self.root, self.height - 1, 0u64, None::<u64>)];
        while let Some((id, level, lo, hi)) = stack.pop() {
            if level == 0 {
                leaves.push(LeafSpan { id, lo, hi });
                continue;
            }
            if !seen_inner.insert(id) {
                return Err(bad(None, format!("inner node {id} is reachable twice")));
            }
            let node = self.inner_node(id)?;
            let pid = self.nodes.inner(id);
            if node.level != level {
                return Err(bad(
                    pid,
                    format!("node {id} at level {} not {level}", node.level),
                ));
            }
            if node.entries.len() > self.inner_order {
                return Err(bad(
                    pid,
                    format!("inner node {id} holds {} separators", node.entries.len()),
                ));
            }
            if id == self.root && node.entries.is_empty() {
                return Err(bad(pid, "an inner root without separators".into()));
            }
            let mut prev = lo;
            for (i, &(k, _)) in node.entries.iter().enumerate() {
                if (i > 0 && k <= prev) || k < lo || hi.is_some_and(|h| k >= h) {
                    return Err(bad(pid, format!("separator {k} of node {id} out of order")));
                }
                prev = k;
            }
            for s in (0..=node.entries.len()).rev() {
                let clo = if s == 0 { lo } else { node.entries[s - 1].0 };
                let chi = node.entries.get(s).map(|e| e.0).or(hi);
                stack.push((node.child_at(s), level - 1, clo, chi));
            }
        }
        if seen_inner.len() != self.nodes.inner_len() {
            return Err(bad(
                None,
                format!(
                    "{} inner nodes have addresses, {} are reachable",
                    self.nodes.inner_len(),
                    seen_inner.len()
                ),
            ));
        }
        let leaf_ids: BTreeSet<u64> = leaves.iter().map(|l| l.id).collect();
        if leaf_ids.len() != leaves.len() || leaf_ids.len() != self.nodes.len() {
            return Err(bad(
                None,
                format!(
                    "{} leaves reachable ({} distinct), {} in the NTT",
                    leaves.len(),
                    leaf_ids.len(),
                    self.nodes.len()
                ),
            ));
        }
        Ok((leaves, leaf_ids))
    }

    /// Invariant 2, the NTT's lists: they and the buffered entries belong to reachable
    /// leaves, and each page's count equals the lists naming it. Returns those counts.
    fn check_ntt_lists(&self, leaf_ids: &BTreeSet<u64>) -> Result<BTreeMap<PageId, u32>> {
        let mut refs: BTreeMap<PageId, u32> = BTreeMap::new();
        for (id, list) in self.ntt.iter() {
            if !leaf_ids.contains(&id) {
                return Err(bad(list.first(), format!("list of unreachable node {id}")));
            }
            for p in list {
                *refs.entry(p).or_insert(0) += 1;
            }
        }
        for (&p, &n) in &refs {
            if self.ntt.refs(p) != n {
                return Err(bad(
                    Some(p),
                    format!("page count {} but {n} lists", self.ntt.refs(p)),
                ));
            }
        }
        for (leaf, _) in self.logbuf.homes() {
            if !leaf_ids.contains(&leaf) {
                return Err(bad(
                    None,
                    format!("buffered entries of unreachable leaf {leaf}"),
                ));
            }
        }
        Ok(refs)
    }

    /// Invariants 1 and 2 for one leaf as its list rebuilds it: a compact leaf is one page
    /// beginning with `Reset`; its entries are bounded, in order and within its fences.
    fn check_leaf(&mut self, span: &LeafSpan) -> Result<()> {
        let meta = self
            .nodes
            .get(span.id)
            .cloned()
            .ok_or_else(|| bad(None, format!("leaf {} has no NTT entry", span.id)))?;
        let list = self.ntt.list(span.id).to_vec();
        if meta.compact {
            let mut units = Vec::new();
            let first = list.first().copied();
            if let Some(p) = first {
                self.pager
                    .read(p, |b| unit::collect(b, p, span.id, &mut units))??;
            }
            if list.len() != 1 || !matches!(units.first(), Some(Unit::Reset { .. })) {
                return Err(bad(
                    first,
                    format!("compact leaf {} is not one page", span.id),
                ));
            }
        }
        let node = self.rebuild(span.id)?;
        let n = node.entries.len();
        if n > self.leaf_order || n as u64 > meta.bound() {
            return Err(bad(
                list.first().copied(),
                format!(
                    "leaf {} holds {n} entries (order {}, exact {} + pending {})",
                    span.id, self.leaf_order, meta.exact, meta.pending
                ),
            ));
        }
        for w in node.entries.windows(2) {
            if w[0].0 >= w[1].0 {
                return Err(bad(None, format!("leaf {} out of order", span.id)));
            }
        }
        if let (Some(f), Some(l)) = (node.entries.first(), node.entries.last()) {
            if f.0 < span.lo || span.hi.is_some_and(|h| l.0 >= h) {
                return Err(bad(
                    list.first().copied(),
                    format!("leaf {} holds keys outside its fences", span.id),
                ));
            }
        }
        Ok(())
    }

    /// Invariant 3, space: each segment's live pages are exactly the pages named by the NTT
    /// (`refs`), the inner nodes, the snapshot and the retired list; the head is a segment.
    fn check_space(&self, refs: &BTreeMap<PageId, u32>) -> Result<()> {
        let mut named: BTreeSet<PageId> = refs.keys().copied().collect();
        named.extend(self.nodes.inner_iter().map(|(_, p)| p));
        named.extend(self.snapshot.iter().copied());
        named.extend(self.retired.iter().copied());
        let seg = self.space.seg_pages();
        let mut want: BTreeMap<PageId, u64> = BTreeMap::new();
        let segs = self.space.live_by_segment().clone();
        for &p in &named {
            let s = segs
                .range(..=p)
                .next_back()
                .map(|(&s, _)| s)
                .filter(|&s| p < s + seg)
                .ok_or_else(|| bad(Some(p), "a named page lies in no segment".into()))?;
            *want.entry(s).or_insert(0) += 1;
        }
        for (&s, &live) in &segs {
            let w = want.get(&s).copied().unwrap_or(0);
            if live == 0 && self.space.head().map(|h| h.0) != Some(s) {
                return Err(bad(
                    Some(s),
                    format!(
                        "segment at {s} holds no live page and is not the head, yet is not freed"
                    ),
                ));
            }
            if w != live {
                return Err(bad(
                    Some(s),
                    format!("segment at {s} counts {live} live pages, {w} are named"),
                ));
            }
        }
        if let Some((h, off)) = self.space.head() {
            if !segs.contains_key(&h) || off > seg {
                return Err(bad(Some(h), "the head is not in a segment".into()));
            }
        }
        Ok(())
    }
}
