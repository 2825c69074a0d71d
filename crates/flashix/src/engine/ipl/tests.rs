//! The shared read path on this engine (`crate::kit::inpage::testing`): one-page nodes,
//! 16-page blocks with a log area of 2 pages, 8 buffer frames for a tree of a few dozen nodes.

use super::{IplBTree, IplOptions};
use crate::kit::inpage::testing::{self, shared_read_tests, BLOCKS, FRAMES, PAGE, PAGES_PER_BLOCK};

fn engine() -> IplBTree {
    testing::engine(
        crate::kind::EngineKind::IplBTree,
        IplOptions {
            node_bytes: PAGE as u64,
            buffer_frames: Some(FRAMES),
            log_area_bytes: 2 * PAGE as u64,
            nand_blocks: BLOCKS,
            pages_per_block: PAGES_PER_BLOCK,
        },
    )
}

shared_read_tests!(engine);
