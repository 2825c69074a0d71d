//! `check_integrity`: the invariants listed in the module doc, checked on the whole tree.

use super::BTree;
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
    /// The last node met at each level (the walk meets a level's nodes in key order) and
    /// its right link.
    last: HashMap<u32, (PageId, u64)>,
}

fn bad(pid: PageId, detail: String) -> Error {
    Error::corruption(
        DATA_FILE,
        Some(pid),
        format!("B+-tree invariant violated: {detail}"),
    )
}

impl BTree {
    pub(super) fn check(&mut self) -> Result<()> {
        let mut w = Walk {
            seen: HashSet::new(),
            leaves: Vec::new(),
            entries: 0,
            last: HashMap::new(),
        };
        let (root, height) = self.top.load();
        self.check_node(root, height - 1, None, None, true, &mut w)?;
        for (level, &(pid, right)) in &w.last {
            if right != node::NONE {
                return Err(bad(
                    pid,
                    format!("last node of level {level} has a right link to {right}"),
                ));
            }
        }
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
        if w.entries != self.entries() {
            return Err(bad(
                root,
                format!(
                    "tree holds {} entries, header says {}",
                    w.entries,
                    self.entries()
                ),
            ));
        }
        if w.leaves.len() as u64 != self.leaves() {
            return Err(bad(
                root,
                format!(
                    "tree has {} leaves, header says {}",
                    w.leaves.len(),
                    self.leaves()
                ),
            ));
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
        let n = check::read_node(&mut self.pager, pid, level, (lo, hi), bad)?;
        check_side(pid, level, &n, hi, w)?;
        let (leaf, es) = (level == 0, &n.entries);
        // Invariant 2 and the node orders: each kind has its own cap and minimum.
        let (kind, cap, min) = if leaf {
            ("leaf", self.leaf_cap, self.leaf_min())
        } else {
            ("internal node", self.inner_cap, self.inner_min())
        };
        if !is_root && es.len() < min {
            return Err(bad(
                pid,
                format!("{kind} of {} entries, below the minimum {min}", es.len()),
            ));
        }
        if is_root && level > 0 && es.is_empty() {
            return Err(bad(pid, "internal root without separators".into()));
        }
        if es.len() > cap {
            return Err(bad(
                pid,
                format!("{kind} of {} entries, above its order {cap}", es.len()),
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

/// Invariant 7: the node is a B-link node whose high key is its parent's upper bound for
/// it (none, with no right link, at the right end of its level) and whose left neighbour
/// at its level links to it; a leaf's link is its right link.
fn check_side(
    pid: PageId,
    level: u32,
    n: &check::Checked,
    hi: Option<u64>,
    w: &mut Walk,
) -> Result<()> {
    let Some(side) = n.side else {
        return Err(bad(pid, "node is not a B-link node".into()));
    };
    let has_high = side.right != node::NONE;
    if has_high != hi.is_some() || (has_high && Some(side.high) != hi) {
        let high = has_high.then_some(side.high);
        return Err(bad(
            pid,
            format!(
                "high key {high:?} (right link {}), the parent bounds it by {hi:?}",
                side.right
            ),
        ));
    }
    if level == 0 && n.link != side.right {
        return Err(bad(
            pid,
            format!("leaf link {} but right link {}", n.link, side.right),
        ));
    }
    if let Some((prev, right)) = w.last.insert(level, (pid, side.right)) {
        if right != pid {
            return Err(bad(
                prev,
                format!("right link to {right}, but the next node of level {level} is {pid}"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::BTreeOptions;
    use super::BTree;
    use crate::cost::Tuning;
    use crate::error::Error;
    use crate::io::{MemDevice, MemVfs, Storage};
    use crate::kind::EngineKind;
    use crate::kit::api::{SerialEngine, Shareable};
    use crate::kit::bnode::{leaves, node};
    use crate::settings::{DeviceSpec, Settings};
    use std::sync::Arc;

    /// A tree of 4 KiB pages (253 entries) holding `keys`, inserted in order.
    fn tree(keys: impl Iterator<Item = u64>) -> BTree {
        // Settings, not the `Options` aggregate: engines sit below `options` (tests/layers.rs).
        let s = Settings {
            page_size: 4096,
            buffer_pool_bytes: 64 * 4096,
            device: DeviceSpec::Memory,
            checkpoint_wal_bytes: 64 << 20,
            tuning: Tuning::reference(4096),
            engine: EngineKind::BTree,
            record: serde_json::Value::Null,
        };
        let storage = Storage {
            device: Box::new(MemDevice::new(4096)),
            vfs: Arc::new(MemVfs::new()),
        };
        let mut t = BTree::create(storage, s, BTreeOptions::default()).unwrap();
        for k in keys {
            t.insert_unlogged(k, k).unwrap();
        }
        t
    }

    fn violation(t: &mut BTree) -> String {
        match t.check() {
            Err(Error::Corruption { detail, .. }) => detail,
            other => panic!("expected an invariant violation, got {other:?}"),
        }
    }

    /// Invariant 2 with node orders: a leaf or an internal node above its kind's order is
    /// a violation, whatever a page could hold.
    #[test]
    fn a_node_above_its_order_is_a_violation() {
        // 300 ascending keys in 253-entry leaves: one split, leaves of 127 and 173.
        let mut t = tree(0..300);
        t.check().unwrap();
        t.leaf_cap = 150;
        let d = violation(&mut t);
        assert!(
            d.contains("leaf of 173 entries, above its order 150"),
            "{d}"
        );

        // 3,000 ascending keys: 23 leaves under a root of 22 separators.
        let mut t = tree(0..3000);
        t.check().unwrap();
        assert_eq!(t.top.load().1, 2);
        t.inner_cap = 20;
        let d = violation(&mut t);
        assert!(
            d.contains("internal node of 22 entries, above its order 20"),
            "{d}"
        );
    }

    /// A leaf split whose separator has not reached the parent yet (the state a split
    /// leaves between its two steps, which a reader beside it may meet): the keys that
    /// moved to the new leaf are found through the old leaf's right link by both read
    /// paths, and the check reports the bound the parent does not give yet.
    #[test]
    fn a_search_moves_right_past_a_split_the_parent_does_not_know() {
        let mut t = tree(0..600);
        t.check().unwrap();
        let (_, leaf) = t.descend(599).unwrap();
        let (es, link, side) = t
            .pager
            .read(leaf, |b| (node::entries(b), node::link(b), node::side(b)))
            .unwrap();
        let (sep, right) = leaves::split(&mut t.pager, leaf, link, side, &es).unwrap();
        assert!(sep < 599);
        assert_eq!(
            t.walk_down(599, None).unwrap(),
            leaf,
            "the parent still names the old leaf"
        );
        for k in (0..600).step_by(7).chain([sep, 599]) {
            assert_eq!(t.get_shared(k).unwrap(), Some(k), "key {k}");
            assert_eq!(SerialEngine::get(&mut t, k).unwrap(), Some(k), "key {k}");
        }
        assert_eq!(t.get_shared(600).unwrap(), None);
        let d = violation(&mut t);
        assert!(
            d.contains(&format!("high key Some({sep}) (right link {right})")),
            "{d}"
        );
    }
}
