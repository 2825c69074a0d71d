//! The shared read path on this engine (`crate::kit::inpage::testing`): one-page nodes,
//! 16-page blocks, 8 buffer frames for a tree of a few dozen nodes.

use super::{DiplBTree, DiplOptions};
use crate::kit::inpage::testing::{self, shared_read_tests, BLOCKS, FRAMES, PAGE, PAGES_PER_BLOCK};

fn engine() -> DiplBTree {
    testing::engine(
        crate::kind::EngineKind::DiplBTree,
        DiplOptions {
            node_bytes: PAGE as u64,
            buffer_frames: Some(FRAMES),
            nand_blocks: BLOCKS,
            pages_per_block: PAGES_PER_BLOCK,
        },
    )
}

shared_read_tests!(engine);
