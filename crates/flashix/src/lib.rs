//! flashix: flash-SSD-aware tree indexes (FD-tree, PIO B-tree, bulk index, d-IPL B+-tree,
//! FBX-tree) and their baselines on one storage layer.
//!
//! ```no_run
//! use flashix::{Db, EngineKind, Options};
//! # fn main() -> flashix::Result<()> {
//! let mut db = Db::create("/tmp/idx", Options::new(EngineKind::BTree))?;
//! db.insert(7, 700)?;
//! assert_eq!(db.get(7)?, Some(700));
//! for kv in db.range(0..=10)? {
//!     let (k, v) = kv?;
//!     println!("{k} -> {v}");
//! }
//! db.close()?;
//! # Ok(()) }
//! ```
//!
//! Layers (DESIGN.md), bottom up: [`io`] (devices, small files, fault injection, extent
//! allocator) and [`sim`] (NAND and FTL simulator); `buffer` (LRU pool); `durable` (WAL,
//! manifest, the checkpoint switch, the Pager, the log cycle); `engine` (one folder per
//! index, each owning its options and format, and the kits they share); [`Db`] on top.
//! [`cost`] is a leaf of models over numbers. Only what DESIGN.md's Public API lists is
//! public; the conformance harness (`testing`) is behind the `testing` cargo feature.

#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

mod batch;
mod buffer;
pub mod check;
pub mod cost;
mod db;
mod durable;
mod engine;
mod error;
#[cfg(test)]
mod hostile;
pub mod io;
mod kind;
mod kit;
pub mod mobject;
mod options;
mod page;
mod settings;
pub mod sim;
mod stats;
#[cfg(feature = "testing")]
pub mod testing;
mod util;

pub use batch::Batch;
pub use db::{Db, Range, DATA_FILE, NAND_FILE};
pub use error::{Error, Result};
pub use io::{DeviceStats, Storage};
pub use kind::EngineKind;
pub use options::{
    BTreeOptions, BftlOptions, BulkOptions, CleanPolicy, DiplOptions, EngineOptions, FbxOptions,
    FdTreeOptions, IplOptions, LaTreeOptions, LsmOptions, Options, PioOptions, Tuning,
    DEFAULT_PAGE_SIZE, PIO_OPQ_ENTRY_BYTES,
};
pub use settings::DeviceSpec;
/// Not part of the API. The d-IPL reproduction (`flashix repro dipl` in flashix-bench)
/// drives the IPL and d-IPL engines below [`Db`] for what `Db` does not offer: the global
/// cleansing of §5.3 and resetting the flash counters after the index is built; the bulk
/// index reproduction (`flashix repro bulk`) rewinds a bulk index to a snapshot between
/// range deletes (the thesis's "run on the same initial state", §6.3).
#[doc(hidden)]
pub mod internals {
    pub use crate::engine::bulk::{BulkIndex, BulkSnapshot, DELTA_ENTRY_MEMORY};
    pub use crate::engine::dipl::DiplBTree;
    pub use crate::engine::ipl::IplBTree;
    pub use crate::engine::{create_bulk, create_dipl, create_ipl};
    pub use crate::kit::api::Engine;

    /// Open the index in `dir` with its manifest's options changed by `adjust` (validated
    /// again): experiments that compare runtime settings on copies of one index, such as
    /// the FBX-tree's clean policies. `adjust` must change only settings the on-disk
    /// format does not depend on (the buffer pool, `FbxOptions::clean`).
    pub fn open_adjusted(
        dir: impl AsRef<std::path::Path>,
        adjust: impl FnOnce(crate::Options) -> crate::Options,
    ) -> crate::Result<crate::Db> {
        crate::Db::open_adjusted(dir.as_ref(), adjust)
    }
}
pub use stats::{BufferStats, LevelShape, Shape, Stats, WalStats};
