//! [`EngineKind`]: which index structure an index is, and [`engines!`], the one list of the
//! engines. A leaf: stats, the durable layer and the engines all name it.
//!
//! The list names each engine's folder and types by their paths under `crate::engine`, as
//! plain tokens: this module imports nothing from the engines. `engine` (the registry:
//! options, validation, creation, opening) and `options` (the builder's per-engine
//! methods) expand it where those paths resolve, and this module expands it into
//! [`EngineKind`] and its short names. Adding an engine is its folder under `engine/`
//! (with its `engine::Registered` impl), its `pub mod` line in `engine/mod.rs`, and one
//! entry here.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Calls the macro `$then` with the list of engines, in the order of docs/design.md's
/// Public API. An entry: the kind's doc, then `Kind name name_options: module::Engine,
/// module::Options;` — the [`EngineKind`] variant (also the options record's tag, part of
/// the on-disk format), the short name (the command line's, and the `Options` builder
/// method), the `Options` accessor, the engine type and its options type.
macro_rules! engines {
    ($then:ident) => {
        $then! {
            /// Classic B+-tree updated in place through an LRU buffer pool (Comer 1979).
            BTree btree btree_options: btree::BTree, btree::BTreeOptions;
            /// LSM-tree of stepped B+-tree components (FD-tree paper, App. D).
            Lsm lsm lsm_options: lsm::Lsm, lsm::LsmOptions;
            /// FD-tree (Li et al., VLDB 2010).
            FdTree fdtree fdtree_options: fdtree::FdTree, fdtree::FdTreeOptions;
            /// PIO B-tree (Roh et al., VLDB 2011).
            PioBTree pio pio_options: pio::PioBTree, pio::PioOptions;
            /// Bulk index (Lehtonen 2014).
            BulkIndex bulk bulk_options: bulk::BulkIndex, bulk::BulkOptions;
            /// BFTL (Wu, Kuo, Chang).
            Bftl bftl bftl_options: bftl::Bftl, bftl::BftlOptions;
            /// LA-tree (Agrawal et al.).
            LaTree latree latree_options: latree::LaTree, latree::LaTreeOptions;
            /// FBX-tree (Luo): leaves as log lists in an append-only file.
            Fbx fbx fbx_options: fbx::Fbx, fbx::FbxOptions;
            /// IPL B+-tree (Lee and Moon).
            IplBTree ipl ipl_options: ipl::IplBTree, ipl::IplOptions;
            /// d-IPL B+-tree (Na, Lee, Moon, TKDE 2011).
            DiplBTree dipl dipl_options: dipl::DiplBTree, dipl::DiplOptions;
        }
    };
}
pub(crate) use engines;

/// [`EngineKind`], [`EngineKind::ALL`] and [`EngineKind::name`] from [`engines!`].
macro_rules! kinds {
    ($($(#[$doc:meta])* $kind:ident $name:ident $_acc:ident: $_e:path, $_o:path;)*) => {
        /// The index structures flashix provides (docs/design.md, Public API).
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
        )]
        pub enum EngineKind {
            $($(#[$doc])* $kind,)*
        }

        impl EngineKind {
            /// Every kind, in the order of docs/design.md's Public API.
            pub const ALL: [EngineKind; [$(stringify!($kind)),*].len()] =
                [$(EngineKind::$kind),*];

            /// Short name used on the command line and in reports.
            pub fn name(self) -> &'static str {
                match self {
                    $(EngineKind::$kind => stringify!($name),)*
                }
            }
        }
    };
}
engines!(kinds);

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
