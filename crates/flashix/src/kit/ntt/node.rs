//! [`Node`]: a B+-tree node as the index units of its log pages build it (BFTL's "a node
//! read gathers its units ... and applies them in order"; the FBX-tree's leaf rebuild).

use super::unit::Unit;

/// No node (a leaf's link).
pub const NONE: u64 = u64::MAX;

/// A node as its units build it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Node {
    pub level: u32,
    /// Internal: the leftmost child (keys below the first separator). Leaf: [`NONE`].
    pub link: u64,
    /// Leaf: (key, value); internal: (separator, child holding keys >= separator).
    pub entries: Vec<(u64, u64)>,
}

impl Node {
    pub fn apply(&mut self, u: Unit) {
        match u {
            // Units of a compacted node come in key order: append.
            Unit::Insert(k, v) if self.entries.last().map_or(true, |e| e.0 < k) => {
                self.entries.push((k, v))
            }
            Unit::Insert(k, v) => match self.search(k) {
                Ok(i) => self.entries[i].1 = v,
                Err(i) => self.entries.insert(i, (k, v)),
            },
            Unit::Delete(k) => {
                if let Ok(i) = self.search(k) {
                    self.entries.remove(i);
                }
            }
            Unit::Reset { level, link } => {
                self.level = level;
                self.link = link;
                self.entries.clear();
            }
            Unit::Truncate(k) => {
                let i = self.entries.partition_point(|e| e.0 < k);
                self.entries.truncate(i);
            }
            Unit::SetLink(l) => self.link = l,
        }
    }

    pub fn search(&self, k: u64) -> std::result::Result<usize, usize> {
        self.entries.binary_search_by_key(&k, |e| e.0)
    }

    /// The child slot for `k`: 0 is `link`, `s >= 1` the child of entry `s - 1`.
    pub fn child_slot(&self, k: u64) -> usize {
        self.entries.partition_point(|e| e.0 <= k)
    }

    pub fn child_at(&self, s: usize) -> u64 {
        if s == 0 {
            self.link
        } else {
            self.entries[s - 1].1
        }
    }

    /// The units that write this node from scratch: `Reset`, then its entries.
    pub fn units(&self) -> Vec<Unit> {
        let mut u = Vec::with_capacity(self.entries.len() + 1);
        u.push(Unit::Reset {
            level: self.level,
            link: self.link,
        });
        u.extend(self.entries.iter().map(|&(k, v)| Unit::Insert(k, v)));
        u
    }
}
