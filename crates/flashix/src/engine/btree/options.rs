//! [`BTreeOptions`]: the B+-tree's own options.
//!
//! The serde field names are part of the on-disk format (the manifest's options record,
//! `crate::options::record`): renaming one is a format change, caught by the frozen record
//! test and the fixtures. The node orders are left out of the record when unset, so that
//! the record of a tree without them is the one earlier builds wrote.

use serde::{Deserialize, Serialize};

/// B+-tree sub-options.
///
/// **Node orders.** `leaf_order` and `inner_order` cap the entries a leaf and an internal
/// node hold, below what a page holds (`(page_size - 48) / 16` 16-byte entries, 253 for
/// 4 KiB pages), so that the baseline can be run with another paper's orders (the
/// FBX-tree paper, §5: leaf order 100, inner order 500). An internal node's entries are
/// its separators: with `inner_order` n it has at most n + 1 children. A node is split
/// when an insert would take it past its order, and a non-root node below half its
/// order (`order / 2`) borrows or merges. Each order is within
/// [`BTreeOptions::MIN_ORDER`]`..=` the page's capacity: an inner order of 500 needs pages
/// of 8 KiB or more. The orders are saved in the manifest and cannot change after
/// creation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BTreeOptions {
    /// Fill factor of bulk loading (FD-tree paper, App. D: 0.7): the share of the leaf
    /// order a bulk-loaded leaf gets, and of the inner order an internal node.
    pub bulk_fill: f64,
    /// Most entries a leaf holds. `None` (the default): what a page holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leaf_order: Option<u32>,
    /// Most entries (separators) an internal node holds; it has one child more. `None`
    /// (the default): what a page holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inner_order: Option<u32>,
}

impl BTreeOptions {
    /// The smallest node order accepted. At order 4 a non-root node keeps at least two
    /// entries (an internal one at least three children), so the tree stays a
    /// multi-way tree through splits, borrows and merges; smaller orders would be a
    /// binary or unary tree, which no paper compares against and the tests do not cover.
    pub const MIN_ORDER: u32 = 4;

    /// The default options with a leaf order of `leaf` entries and an inner order of
    /// `inner` separators (the FBX-tree paper's baseline: `orders(100, 500)`).
    pub fn orders(leaf: u32, inner: u32) -> Self {
        BTreeOptions {
            leaf_order: Some(leaf),
            inner_order: Some(inner),
            ..BTreeOptions::default()
        }
    }
}

impl Default for BTreeOptions {
    fn default() -> Self {
        BTreeOptions {
            bulk_fill: 0.7,
            leaf_order: None,
            inner_order: None,
        }
    }
}
