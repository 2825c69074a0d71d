//! The in-page logging kit: the core the IPL B+-tree (`engine::ipl`) and the d-IPL
//! B+-tree (`engine::dipl`) share on raw NAND flash ([`crate::sim::Nand`]).
//! The kit imports no engine: an engine gives it a [`LogPolicy`] (what the scheme decides,
//! and how the engine's own options give the kit's [`Config`]), and is the kit's
//! [`InPageBTree`] of that policy, a [`Core`] with the `Engine` methods.
//!
//! # Scheme
//! Every erase block holds nodes (data pages, `node_bytes` each) followed by a log area of
//! 512-byte log sectors; where the log area starts is the policy's
//! ([`LogPolicy::log_start`]). A buffer frame that becomes dirty gets an in-memory log
//! sector collecting physiological records of its changes; the sector (never the node) is
//! written to the log area of the node's block when the frame is evicted (Rule 1) or the
//! sector is full (Rule 2). A node read reads its base (a node image, or for a node whose
//! base is a log record — a d-IPL ghost, an IPL node written as physical records — its
//! first record) and applies its log records; how its sectors are found is the policy's
//! ([`LogPolicy::node_log`]). A block whose log area is full is **rebuilt**: every node's
//! version on flash (its base plus the block's log records, d-IPL §4.3 Algorithm 3) is
//! written to a fresh block and the old one is erased (IPL merge, d-IPL cleansing);
//! buffered frames keep their in-memory log sectors, and the one that found the log area
//! full is written to the new block's log area (Fig. 10). A full node is split by the policy ([`LogPolicy::split`]). Deletions are log
//! records; underflow is allowed and nodes are not merged; an empty node is released at
//! its block's rebuild when its parent is buffered and keeps another child (§4.4).
//!
//! # On-flash format
//! Node images, log sectors and records: [`format`]. The block table (members, log area
//! position, sectors written) and the root are in the manifest at each checkpoint, with the
//! policy's tag ([`LogPolicy::TAG`]) in the state's `flavor` field.
//!
//! # Invariants (checked by `check_integrity`, plus the policy's own)
//! 1. The NAND rules hold ([`crate::sim::Nand::check`]): erase before program, in-order
//!    pages, at most 4 partial programs per page.
//! 2. Blocks in use, pending erase and free partition the NAND; each node is a member of
//!    exactly one block; a block holds at most its `max_members`; images lie before the
//!    log area; every ghost has a log sector.
//! 3. B+-tree order: keys strictly increase in a node and lie within the fences of its
//!    parent; levels decrease by one; internal nodes have at least one child; every
//!    stored node is reachable exactly once; the entry count matches the leaves.
//! 4. Each buffered node equals its flash version (base + log sectors) plus its in-memory
//!    log sector.
//!
//! # Durability
//! Logical redo WAL with group commit on `flush`, checkpoints that make flash current and
//! switch the manifest, deferred erase of blocks the last checkpoint references, and
//! recovery that rebuilds blocks holding programs newer than the checkpoint: [`durable`].
//!
//! # Memory
//! `buffer_frames` frames of one node plus one log sector each, the block table, and the
//! node -> block and node -> parent maps (a few dozen bytes per node). Shared readers hold
//! at most one node image each outside the frames while it is read from flash (the frame
//! they reserved for it, or a node read past the buffer) and the log sectors read for it.
//!
//! # Thread safety
//! An engine on the kit is served by `kit::parallel::Parallel`: writes, checks and
//! checkpoints run on `&mut Core`, alone; point searches and range-scan batches run on
//! `&Core` ([`Core::get_shared`], [`Core::scan_shared`]), any number at once, while no
//! write runs. Under the shared lock nothing changes the tree, the block table or flash:
//! a read's only changes are to the buffer's frame table ([`core::Cache`]: the frames,
//! their LRU order, the loads in progress, the hit and read counters), which is behind a
//! mutex, and to the NAND's counters and timing model, behind the NAND's mutex (the
//! simulated NAND's reads need `&mut`, so shared readers' NAND operations run one at a
//! time; decoding a node and applying its log records run beside each other). `&mut`
//! reaches both with `get_mut`, taking no lock. A shared read of a node
//! ([`Core::with_node`]):
//! 1. *Hit*: under the table's mutex the frame becomes the most recently used, and the
//!    read's in-memory step (the child slot, the key's value, a leaf's rest) runs on it
//!    there. A dirty frame is read as it is: the node's current version, its in-memory
//!    log applied; its stale flash version is never read while it is resident.
//! 2. *Miss*: under the mutex the reader reserves a frame: while the resident and loading
//!    frames fill the buffer it evicts the least recently used frame that is clean and
//!    not pinned, then marks the node loading; it reads the node from flash (base plus
//!    log records, as [`Core::materialize`]) with the mutex released, and installs it
//!    under the mutex. Reading with the mutex released is safe because a node that is not
//!    resident has its current version on flash (Rule 1 writes a dirty frame's log sector
//!    when it is evicted) and nothing writes flash or the block table under the shared
//!    lock. A failed read frees the reservation.
//! 3. A reader that finds the node loading waits for the load and looks again (one flash
//!    read of a node however many readers want it); the wait is bounded (`LOAD_WAIT`),
//!    past which it reads the node itself, past the buffer.
//! 4. When every evictable frame is dirty or pinned, the reader reads the node past the
//!    buffer and installs nothing.
//!
//! How this departs from the serial read and why it keeps the scheme: a serial read that
//! evicts a dirty frame writes its log sector (Rule 1), a write the shared path does not
//! make; it evicts the least recently used *clean* frame instead, and the dirty frames it
//! passed over are evicted, in LRU order, by the next write that needs room (or written at
//! the next checkpoint). With every frame clean (a read-only load) the shared read evicts
//! the frame the serial one would and reads the same flash pages. A shared read does not
//! pin its path (it holds no frame between two steps of its descent) and does not learn
//! parents: the node -> parent map serves the release of an empty node at its block's
//! rebuild (§4.4), and a node becomes empty only by deletes, whose descents learn its
//! parent. The serial [`Core::get`] and [`Core::scan`] on `&mut` are kept as they were.
//! The memory budget is the serial path's: a reserved frame counts as resident, so the
//! table never holds more than the buffer's frames.

mod check;
pub(crate) mod core;
pub(crate) mod durable;
mod engine;
pub(crate) mod flash;
pub(crate) mod format;
mod ops;
pub(crate) mod policy;
#[cfg(test)]
pub(crate) mod testing;

pub(crate) use self::core::{Config, Core};
pub(crate) use durable::validate;
pub(crate) use engine::InPageBTree;
pub(crate) use policy::LogPolicy;
