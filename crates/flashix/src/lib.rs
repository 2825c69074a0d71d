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
//! Layers (DESIGN.md): [`io`] (devices, files, fault injection, extent allocator),
//! [`buffer`] (LRU buffer pool and the page store of in-place engines), [`wal`] (logical
//! redo log) and [`manifest`], the engines under `engine/`, and [`Db`] on top.

pub mod buffer;
pub mod cost;
mod db;
pub mod engine;
mod error;
pub mod io;
pub mod manifest;
mod options;
pub mod page;
pub mod sim;
mod stats;
pub mod testing;
pub mod wal;

pub use db::{Db, Range, Storage};
pub use error::{Error, Result};
pub use io::DeviceStats;
pub use options::{
    BTreeOptions, BftlOptions, DeviceSpec, DiplOptions, EngineKind, FdTreeOptions, IplOptions,
    LsmOptions, Options, PioOptions, Tuning, DEFAULT_PAGE_SIZE, PIO_OPQ_ENTRY_BYTES,
};
pub use stats::{BufferStats, Stats, WalStats};
