//! `check_integrity`: the invariants listed in the module doc, checked on the whole tree.

use super::BTree;
use crate::error::{Error, Result};
use crate::io::PageId;
use crate::kit::bnode::{check, node};
use crate::page::DATA_FILE;
use std::collections::HashSet;

struct Walk {
    seen: HashSet<PageId>,
    /// (leaf, its link) in key order.
    leaves: Vec<(PageId, u64)>,
    entries: u64,
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
        if w.entries != self.entries {
            return Err(bad(
                self.root,
                format!(
                    "tree holds {} entries, header says {}",
                    w.entries, self.entries
                ),
            ));
        }
        if w.leaves.len() as u64 != self.leaves {
            return Err(bad(
                self.root,
                format!(
                    "tree has {} leaves, header says {}",
                    w.leaves.len(),
                    self.leaves
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

#[cfg(test)]
mod tests {
    use super::super::BTreeOptions;
    use super::BTree;
    use crate::cost::Tuning;
    use crate::error::Error;
    use crate::io::{MemDevice, MemVfs, Storage};
    use crate::kind::EngineKind;
    use crate::settings::{DeviceSpec, Settings};
    use std::sync::Arc;

    /// A tree of 4 KiB pages (254 entries) holding `keys`, inserted in order.
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
        // 300 ascending keys in 254-entry leaves: one split, leaves of 127 and 173.
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
        assert_eq!(t.height, 2);
        t.inner_cap = 20;
        let d = violation(&mut t);
        assert!(
            d.contains("internal node of 22 entries, above its order 20"),
            "{d}"
        );
    }
}
