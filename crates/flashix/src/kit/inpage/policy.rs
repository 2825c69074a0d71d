//! [`LogPolicy`]: what an engine built on the in-page logging kit decides. The kit's
//! [`Core`] runs the buffer, the tree, the log sectors, rebuilds and durability, and asks
//! its policy at every point where the IPL and d-IPL B+-trees differ.

use super::core::{Block, Config, Core, Geometry, Layout, Sizes};
use super::format::LogSector;
use crate::error::Result;

/// The scheme-specific decisions of an in-page logging engine.
pub trait LogPolicy: Sized + Send + Sync + 'static {
    /// The manifest state's `flavor` tag. Part of the on-disk format: written and expected
    /// exactly as before the kit existed (`"Ipl"`, `"Dipl"`).
    const TAG: &'static str;
    /// Log sectors carry the LLSD of their block (d-IPL §5.1); it takes
    /// `2 * max_members` bytes of every sector.
    const LLSD: bool;
    /// A node that does not fit its origin's block goes to a current allocation block
    /// (IPL), kept across rebuilds and in the manifest.
    const ALLOC_BLOCK: bool;
    /// The stats counter name of a rebuild of a block whose log area is full
    /// (`block_merges` for IPL, `block_cleansings` for d-IPL).
    const CLEANSE_COUNTER: &'static str;

    /// The engine's own options (`IplOptions`, `DiplOptions`), which it is created and
    /// opened with ([`super::InPageBTree`]).
    type Options;

    /// The kit's numbers from the engine's options.
    fn config(o: &Self::Options) -> Config;

    /// Block layout for the sizes `s`; `Err` names what does not fit.
    fn layout(s: &Sizes) -> std::result::Result<Layout, String>;

    /// First page of the log area of a fresh block written with `nodes` regular nodes.
    fn log_start(geo: &Geometry, nodes: u32) -> u32;

    /// Split the full node `id` (buffered, pinned): move its upper half to the new node
    /// `new`, which the policy places (a block member, buffered) and whose split it logs;
    /// returns the separator (the new node's first key).
    fn split(core: &mut Core<Self>, id: u64, new: u64) -> Result<u64>;

    /// The log sectors of node `id` in block `b`, oldest first; `known` are the node's
    /// sectors (from the block table) the read must return and verify.
    fn node_log(core: &Core<Self>, b: u32, id: u64, known: &[u16]) -> Result<Vec<LogSector>>;

    /// Recovery: rebuild the members' sector lists of block `b`, whose last written log
    /// sector is `last`, from flash.
    fn recover_sectors(core: &mut Core<Self>, b: u32, last: u16) -> Result<()>;

    /// The scheme's own invariants of block `b` (`check_integrity`); `Err` describes the
    /// violation.
    fn check_block(geo: &Geometry, b: u32, blk: &Block) -> std::result::Result<(), String>;

    /// The scheme's own invariants of the whole tree; `levels` lists the nodes of every
    /// level in key order, from the root's level (index 0) down to the leaves.
    fn check_tree(core: &Core<Self>, levels: &[Vec<u64>]) -> std::result::Result<(), String>;
}
