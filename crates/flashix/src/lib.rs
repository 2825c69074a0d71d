//! flashix: flash-SSD-aware tree indexes (FD-tree, PIO B-tree, bulk index, d-IPL B+-tree,
//! FBX-tree) and their baselines on one storage layer.
//!
//! ```no_run
//! use flashix::{Db, EngineKind, Options};
//! # fn main() -> flashix::Result<()> {
//! let db = Db::create("/tmp/idx", Options::new(EngineKind::BTree))?;
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
//! A [`Db`] is `Send + Sync` and every method takes `&self`: one index serves any number of
//! threads (share it with `Arc` or scoped threads). Its thread-safety section states the
//! guarantees; each engine's module doc says what runs in parallel with what.
//!
//! # Which index for which workload
//!
//! Every engine implements the same [`Db`] API and contract; they differ in what an
//! operation costs in device pages and CPU. Measure them on your own device with
//! `flashix bench` (`cargo run --release -p flashix-bench -- bench`; `--engines` and
//! `--workload` choose the cells, `flashix bench --help` lists them); the method is in
//! `docs/benchmarking.md`.
//!
//! | engine ([`EngineKind`]) | use it when | trade-off |
//! |---|---|---|
//! | [`BTree`](EngineKind::BTree) (`btree`) | range scans of a few pages, reads and in-place writes in balance | a search reads about one page past the cached inner nodes; every insert, delete or update changes its leaf in place, written back when the pool evicts it |
//! | [`FdTree`](EngineKind::FdTree) (`fdtree`) | searches, scans and inserts together | inserts go to a head tree and reach the device in sequential merges; a search reads one page per level below the head; a delete searches first; scans read runs in multi-page requests |
//! | [`Lsm`](EngineKind::Lsm) (`lsm`) | writes of every kind dominate (inserts, deletes, updates, range deletes), and mixes | writes are blind (no read), merged in the background; a search reads the components newest first; a range delete reads and writes nothing |
//! | [`PioBTree`](EngineKind::PioBTree) (`pio`) | mixed searches and writes, batched lookups ([`Db::get_many`]), TPC-C-like traces | writes batched in the operation queue and flushed with parallel I/O; batched searches read a level's pages in one psync batch; leaves of several pages where the device rewards larger requests |
//! | [`BulkIndex`](EngineKind::BulkIndex) (`bulk`) | ingest in bulks of consecutive keys with range-delete retention (time series, logs) | an inner range is dropped by a range delete with no I/O, a search reads one range; `flashix repro bulk` measures it |
//! | [`LaTree`](EngineKind::LaTree) (`latree`) | write-heavy with lookups that can wait for buffered messages | writes are messages in cascaded buffers (no read), lookups search the buffers |
//! | [`Fbx`](EngineKind::Fbx) (`fbx`) | frequent updates of small records, moving objects ([`mobject`] over it is the FBX-tree) | every write an append, leaves rebuilt from their logs on read; `flashix repro fbx` and `flashix mo-bench` measure it |
//! | [`Bftl`](EngineKind::Bftl) (`bftl`) | a baseline: B+-tree node changes packed into pages over an FTL | `flashix repro dipl` compares it over FTLs (the d-IPL paper's Table 6) |
//! | [`IplBTree`](EngineKind::IplBTree), [`DiplBTree`](EngineKind::DiplBTree) (`ipl`, `dipl`) | raw NAND flash without an FTL ([`DeviceSpec::RawNand`]) | node changes logged inside the node's erase block; `flashix repro dipl` measures them on the NAND simulator |
//!
//! Examples (`crates/flashix/examples/`, `cargo run -p flashix --example NAME`): `basic`,
//! `bulk_retention` (the bulk index's workload), `moving_objects` ([`mobject`] range and
//! kNN queries) and `simulated_ssd` (an engine on [`DeviceSpec::SimulatedSsd`], its erase
//! counts and write amplification from [`Stats`]).
//!
//! # Layers
//!
//! Layers (docs/design.md), bottom up: [`io`] (devices, small files; fault injection, the
//! extent allocator and psync behind the `testing` feature) and [`sim`] (NAND and FTL
//! simulator); `buffer` (LRU pool); `durable` (WAL, manifest, the checkpoint switch, the
//! Pager, the log cycle); `engine` (one folder per index, each owning its options and
//! format, and the kits they share); [`Db`] on top. [`cost`] is a leaf of models over
//! numbers. Only what the Public API of docs/design.md lists is public; the conformance
//! harness (`testing`) and the test tools of [`io`] (the fault injector, the extent
//! allocator, psync) are behind the `testing` cargo feature.

#![deny(missing_docs)]
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
pub mod experiment;
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
pub use stats::{BufferStats, LevelShape, Shape, Stats, WalStats};

/// What [`Stats::memory_bytes`] may exceed the budget ([`Options::buffer_pool_bytes`]) by
/// between operations, for every engine: nothing. Each engine charges its own structures
/// (OPQ, LSMap, node tables, range tombstones, merge buffers, log buffers, block tables)
/// to the budget after every operation and gives its buffer pool the rest
/// (`Pager::charge`; the IPL kit's frames likewise); the Pager keeps nothing per page
/// besides its frames (format 4's generation stamps). `tests/memory_budget.rs` checks it
/// for every engine.
///
/// Not covered: (1) an index whose tables alone outgrow the budget — the pool then keeps
/// the engine's minimum of frames, and memory is the tables plus those frames; (2) memory
/// held only during one operation (merge and scan I/O buffers, batch sort space), which
/// each engine's module doc bounds under "Memory"; (3) the bookkeeping of the pool's
/// frames (page map and LRU, about 64 bytes a frame), which is not counted; (4) the IPL
/// and d-IPL trees with a fixed `buffer_frames`, whose frames are the caller's choice.
pub const MEMORY_SLACK_BYTES: u64 = 0;
