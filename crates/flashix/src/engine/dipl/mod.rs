//! The d-IPL B+-tree (`EngineKind::DiplBTree`; Na, Lee, Moon, TKDE 2011, §3-§5) on raw NAND
//! flash ([`crate::sim::Nand`]), built on the in-page logging kit
//! (`crate::kit::inpage`: formats, buffer, tree operations, durability) with the
//! `Dipl` policy (`policy.rs`). It differs from the IPL B+-tree in:
//!
//! # Scheme
//! - **Dynamic log area** (§3.2): a block holds its regular nodes from page 0 and its log
//!   area right after them, to the end of the block; a block never holds more than
//!   `pages_per_block / node_pages - 1` nodes, so the log area keeps at least one node's
//!   worth of sectors.
//! - **Ghost nodes** (N.a, §3.2): a node born from a split stays in its origin's block as
//!   a ghost: its base is the record `GhostCreate(origin, key, sector)`, meaning "the
//!   origin's entries >= key as of the origin's log sector `sector`", whose last record is
//!   the origin's `SplitRemove(key)`. The two sectors are written together to the block's
//!   log area at the split (**Rule 3**); Rules 1 and 2 are the IPL ones.
//! - **Block split before node split** (B.d, §4.2, Algorithm 2): a full node in a full
//!   block first splits the block: the nodes as flash has them (base plus log records) are
//!   written to two fresh blocks, the first `d` and the remaining `d + 1` of the `2d + 1`;
//!   the old block is erased.
//! - **Block cleansing** (§4.3, Algorithm 3): a log sector that finds the log area full
//!   first rewrites the block's nodes, each its base plus the block's log records (ghosts
//!   embodied), into a fresh block, and is then written to its log area (Fig. 10);
//!   in-memory log sectors of other buffered nodes stay in the buffer; empty nodes whose
//!   parent is buffered and keeps another child are released there (§4.4: underflow
//!   allowed, no node merges), and a block left empty is released.
//! - **Blocks of siblings** (B.b): the root has a block of its own; every other block holds
//!   consecutive nodes of one level. A root split puts the new root in a new block.
//! - **LLSD and LSLM** (§5.1): every log sector carries the LLSD (the last log sector of
//!   every member of the block) and its owner's LSLM (a bitmap of its earlier sectors). A
//!   node read reads the page of its last sector, follows the LSLM and reads only the other
//!   pages holding its sectors. Recovery rebuilds each member's sector list from the LLSD of
//!   the block's last sector and the members' LSLMs.
//! - **Ghost fetch** (§5.2): a ghost's base is its origin's version as of the split,
//!   computed from the origin's base and its log sectors up to the split's sector.
//! - **Global cleansing** (§5.3): [`DiplBTree::global_cleansing`] cleanses every block that
//!   holds log sectors, so later reads need no log.
//!
//! # Invariants (checked by `check_integrity`)
//! The kit's (NAND rules; blocks partition the NAND; B+-tree order and fences; frames
//! equal flash plus their log), and: (B.b) the root's block holds only the root, and the
//! members of every block are consecutive nodes of one level in member order; a block
//! holds at most `pages_per_block / node_pages - 1` nodes; regular nodes lie before the log
//! area; every ghost has a log sector; the LSLM of each node's last sector names exactly
//! its earlier sectors (checked on every read).
//!
//! # Durability and memory
//! The kit's: logical redo WAL, checkpoints switching the manifest (state tag `"Dipl"`),
//! erases of checkpointed blocks deferred to the next checkpoint, recovery from the LLSD
//! and LSLM and by rebuilding blocks with programs newer than the checkpoint, then WAL
//! replay.
//!
//! # Thread safety
//! Served to many threads by `kit::parallel::Parallel`. Point searches (`get`, `get_many`)
//! and range-scan batches hold the engine's lock shared and run beside each other on
//! `&self`, through the in-page logging kit's shared read path (`crate::kit::inpage`,
//! Thread safety): a resident node is read from its frame (a dirty one with its in-memory
//! log applied) under the frame table's short mutex; a node that is not resident is read
//! from flash, base and log sectors, with that mutex released, into a frame reserved by
//! evicting a clean frame, and other readers wanting it wait for that one read. This is
//! safe because nothing a read does changes the tree, the block table or flash: under the
//! shared lock no write runs, and a reader never writes a log sector (a dirty frame is
//! not evicted by a reader, which takes the least recently used clean one instead; the
//! next write that needs room evicts the dirty ones in LRU order). The simulated NAND's
//! reads need `&mut`, so readers take its mutex for each NAND operation: their flash reads
//! run one at a time, their decoding and log replay beside each other. Writes, checks and
//! checkpoints hold the lock exclusive, one at a time, and see no reader: a split or a
//! block's rebuild is never seen half done. A point write that finds readers first descends to
//! its leaf on the shared path, so that its node reads run beside them. A flush takes its
//! WAL ticket under the lock and syncs outside it, so concurrent flushes share one sync
//! (group commit); a range scan's batches interleave with other threads' operations and
//! each batch descends again from the scan's next key (`crate::Db`'s guarantees).

mod options;
pub use options::DiplOptions;
mod policy;
#[cfg(test)]
mod tests;
use policy::Dipl;

use crate::kit::inpage::InPageBTree;

/// The d-IPL B+-tree engine: the in-page logging kit's engine with the d-IPL policy.
/// `DiplBTree::global_cleansing` is the global cleansing of §5.3: every block with log
/// sectors is cleansed.
pub type DiplBTree = InPageBTree<Dipl>;
