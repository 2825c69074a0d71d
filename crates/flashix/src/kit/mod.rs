//! What the engines are built on and share, below them: no kit imports an engine. Each kit
//! is an interface, a format or a mechanism that more than one engine in `crate::engine` is
//! built on, kept beside them so that no engine imports another.
//!
//! - [`api`]: the `Engine` trait between `Db` and the engines (and the `SerialEngine`
//!   trait of an engine one thread drives, with `Shareable`, what of its reads run in
//!   parallel), the range cursor, and the bounded-batch range delete.
//! - [`parallel`]: a `SerialEngine` served to many threads: shared reads beside each
//!   other, one writer at a time, group-committed flushes.
//! - [`bnode`]: the B+-tree node page format, the internal levels ("spine") and the bulk
//!   load's grouping, shared by the B+-tree, the PIO B-tree and BFTL.
//! - [`sorted`]: the typed-entry page format, the head tree and the sequential reader of
//!   sorted pages, shared by the FD-tree and the LSM-tree.
//! - [`inpage`]: the in-page logging core on raw NAND (node slots and log sectors in erase
//!   blocks, buffer, checkpoints, recovery), shared by the IPL and d-IPL B+-trees, which
//!   differ only by their [`inpage::LogPolicy`].
//! - [`ntt`]: the node translation table, the pages of index units per node and the node
//!   they rebuild, shared by BFTL and the FBX-tree.

pub(crate) mod api;
pub mod bnode;
pub(crate) mod inpage;
pub mod ntt;
pub(crate) mod parallel;
pub mod sorted;
