//! The shared read path on this engine (`crate::kit::inpage::testing`): one-page nodes,
//! 16-page blocks, 8 buffer frames for a tree of a few dozen nodes.

use super::{DiplBTree, DiplOptions};
use crate::kit::inpage::testing::{self, shared_read_tests, BLOCKS, FRAMES, PAGE, PAGES_PER_BLOCK};
use crate::{EngineKind, Options};

fn engine() -> DiplBTree {
    let (storage, device) = testing::nand();
    let o = DiplOptions {
        node_bytes: PAGE as u64,
        buffer_frames: Some(FRAMES),
        nand_blocks: BLOCKS,
        pages_per_block: PAGES_PER_BLOCK,
    };
    let opts = Options::new(EngineKind::DiplBTree)
        .page_size(PAGE)
        .device(device);
    crate::engine::create_dipl(storage, opts.dipl(o)).unwrap()
}

shared_read_tests!(engine);
