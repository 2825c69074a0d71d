//! The durable layer under every engine (docs/design.md, Layers and contract point 3): the logical
//! redo [`wal`], the atomic [`manifest`], the [`Log`] of WAL generations with the one
//! checkpoint switch, the [`Pager`] (buffer pool + before-images) of the engines that keep
//! pages on a `Device`, and the [`Logged`] operation cycle (log → apply → checkpoint;
//! recover = replay) every engine follows.
//!
//! Nothing here knows an engine or the `Options` type: the options travel as an opaque
//! record, the engine state as JSON, and the Pager takes a [`PagerConfig`] of numbers.

pub mod background;
pub mod commit;
mod log;
mod logged;
pub mod manifest;
pub mod outside;
mod pager;
pub mod wal;

pub use commit::FlushTicket;
pub use log::Log;
pub(crate) use logged::{logged_engine_methods, pager_store_methods, Logged, Store};
pub use manifest::{Manifest, OptionsRecord, MANIFEST};
pub(crate) use pager::PageRead;
pub use pager::{NewPage, Pager, PagerConfig};
pub use wal::LogicalOp;
