//! [`BTreeOptions`]: the B+-tree's own options.
//!
//! The serde field names are part of the on-disk format (the manifest's options record,
//! `crate::options::record`): renaming one is a format change, caught by the frozen record
//! test and the fixtures.

use serde::{Deserialize, Serialize};

/// B+-tree sub-options.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BTreeOptions {
    /// Fill factor of bulk loading (FD-tree paper, App. D: 0.7).
    pub bulk_fill: f64,
}

impl Default for BTreeOptions {
    fn default() -> Self {
        BTreeOptions { bulk_fill: 0.7 }
    }
}
