//! [`EngineKind`]: which index structure an index is. A leaf: stats, the durable layer and
//! the engines all name it.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The index structures flashix provides (docs/design.md, Public API).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum EngineKind {
    /// Classic B+-tree updated in place through an LRU buffer pool (Comer 1979).
    BTree,
    /// LSM-tree of stepped B+-tree components (FD-tree paper, App. D).
    Lsm,
    /// FD-tree (Li et al., VLDB 2010).
    FdTree,
    /// PIO B-tree (Roh et al., VLDB 2011).
    PioBTree,
    /// Bulk index (Lehtonen 2014).
    BulkIndex,
    /// BFTL (Wu, Kuo, Chang).
    Bftl,
    /// LA-tree (Agrawal et al.).
    LaTree,
    /// FBX-tree (Luo): leaves as log lists in an append-only file.
    Fbx,
    /// IPL B+-tree (Lee and Moon).
    IplBTree,
    /// d-IPL B+-tree (Na, Lee, Moon, TKDE 2011).
    DiplBTree,
}

impl EngineKind {
    /// Every kind, in the order of docs/design.md's Public API.
    pub const ALL: [EngineKind; 10] = [
        EngineKind::BTree,
        EngineKind::Lsm,
        EngineKind::FdTree,
        EngineKind::PioBTree,
        EngineKind::BulkIndex,
        EngineKind::Bftl,
        EngineKind::LaTree,
        EngineKind::Fbx,
        EngineKind::IplBTree,
        EngineKind::DiplBTree,
    ];

    /// Short name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::BTree => "btree",
            EngineKind::Lsm => "lsm",
            EngineKind::FdTree => "fdtree",
            EngineKind::PioBTree => "pio",
            EngineKind::BulkIndex => "bulk",
            EngineKind::Bftl => "bftl",
            EngineKind::LaTree => "latree",
            EngineKind::Fbx => "fbx",
            EngineKind::IplBTree => "ipl",
            EngineKind::DiplBTree => "dipl",
        }
    }
}

impl fmt::Display for EngineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for EngineKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        EngineKind::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(s) || format!("{k:?}").eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                let names: Vec<_> = EngineKind::ALL.iter().map(|k| k.name()).collect();
                Error::InvalidArgument(format!(
                    "unknown engine {s:?}; expected one of {}",
                    names.join(", ")
                ))
            })
    }
}
