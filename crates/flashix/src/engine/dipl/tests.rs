//! The shared read path on this engine (`crate::kit::inpage::testing`): one-page nodes,
//! 16-page blocks, 8 buffer frames for a tree of a few dozen nodes.

use super::DiplBTree;
use crate::io::{MemDevice, MemVfs, Storage};
use crate::kit::inpage::testing;
use crate::sim::NandConfig;
use crate::{DeviceSpec, EngineKind, Options};
use std::sync::Arc;

fn engine() -> DiplBTree {
    let opts = Options::new(EngineKind::DiplBTree)
        .page_size(2048)
        .device(DeviceSpec::RawNand(NandConfig {
            page_bytes: 2048,
            pages_per_block: 16,
            blocks: 128,
            ..NandConfig::default()
        }))
        .dipl(crate::DiplOptions {
            node_bytes: 2048,
            buffer_frames: Some(8),
            nand_blocks: 128,
            pages_per_block: 16,
        });
    let storage = Storage {
        device: Box::new(MemDevice::new(2048)),
        vfs: Arc::new(MemVfs::new()),
    };
    crate::engine::create_dipl(storage, opts).unwrap()
}

#[test]
fn shared_reads_match_serial() {
    testing::shared_reads_match_serial(engine(), engine());
}

#[test]
fn readers_beside_a_writer() {
    testing::readers_beside_a_writer(engine());
}
