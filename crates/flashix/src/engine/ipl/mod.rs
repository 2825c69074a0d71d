//! The IPL B+-tree (`EngineKind::IplBTree`; d-IPL paper §2.2, after Lee and Moon's
//! In-Page Logging, SIGMOD 2007, and Na, Moon, Lee, DASFAA 2009) on raw NAND flash
//! ([`crate::sim::Nand`]), built on the in-page logging kit
//! (`crate::kit::inpage`: formats, buffer, tree operations, durability) with the
//! `Ipl` policy (`policy.rs`).
//!
//! # Scheme
//! Every erase block holds node slots (data pages, `node_bytes` each) followed by a fixed
//! log area (`IplOptions::log_area_bytes`, 8 KiB = 16 log sectors by default). A dirty
//! frame's log sector is written to that area (Rules 1 and 2). A node read reads its data
//! pages and the whole written part of its block's log area and applies its records. A
//! block whose log area is full is **merged**: every node's version on flash (its data
//! pages plus the block's log records) is written to a fresh block and the old one is
//! erased; in-memory log sectors stay in the buffer and go to the new block's log area
//! (the sector that found the area full first).
//!
//! A node split logs `SplitRemove` in the old node. The new node goes to a free slot of the
//! old node's block, else of the current allocation block, else of a new block. If its slot
//! can still be programmed (no log sector written to that block yet) its image is written
//! there; otherwise the slot has evaporated (§2.3.2: pages before a written log sector can
//! no longer be programmed) and the node is written as **physical** log records (`Init`
//! then one `Put` per entry) in that block's log area — the frequent log overflow of §2.3.1.
//! Deletions are log records; underflow is allowed and nodes are not merged; an empty node
//! is released at its block's merge when its parent is buffered and keeps another child.
//!
//! # Invariants (checked by `check_integrity`)
//! The kit's (NAND rules; blocks partition the NAND; B+-tree order and fences; frames equal
//! flash plus their log), and: every block's log area starts at the fixed page
//! `pages_per_block - log_area_bytes / page_size`.
//!
//! # Durability and memory
//! The kit's: logical redo WAL, checkpoints switching the manifest (state tag `"Ipl"`),
//! erases of checkpointed blocks deferred to the next checkpoint, recovery by reading the
//! log area of every block and rebuilding blocks with programs newer than the checkpoint,
//! then WAL replay.
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
pub use options::IplOptions;
mod policy;
#[cfg(test)]
mod tests;
use policy::Ipl;

use crate::kit::inpage::InPageBTree;

/// The IPL B+-tree engine: the in-page logging kit's engine with the IPL policy.
/// `IplBTree::global_cleansing` merges every block that holds log sectors: the read
/// optimisation of d-IPL §5.3 applied to the IPL B+-tree, as the paper's Fig. 13 does for
/// both indexes.
pub type IplBTree = InPageBTree<Ipl>;
