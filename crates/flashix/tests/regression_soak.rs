//! Histories the soak (`tests/soak.rs`) failed on, replayed up to just past
//! the step that failed. Each names the bug and the fix; the engine's own test file has the
//! focused test.

use flashix::sim::FtlKind;
use flashix::testing::{run, DeviceKind, History};
use flashix::EngineKind;

fn replay(engine: EngineKind, device: DeviceKind, seed: u64, ops: usize) {
    let h = History {
        engine,
        device,
        seed,
        ops,
        crashes: true,
        faults: true,
    };
    if let Err(e) = run(&h) {
        panic!("{h:?}: {e}");
    }
}

/// FBX: a reopened index kept the segment of the snapshot its last checkpoint replaced,
/// holding no live page, for ever; the cleaner picked it again and again while the file
/// grew by a segment per close or crash until the simulated SSD was full (ENOSPC at step
/// 805; with FBX's invariant 3 extended, `check_integrity` fails at step 187). Open now frees
/// dead segments (`fbx::space::Space::free_dead_segments`); focused test:
/// `tests/fbx.rs::closing_and_reopening_does_not_leak_segments`.
#[test]
fn fbx_frees_the_dead_segments_a_checkpoint_left_on_the_block_ftl() {
    replay(
        EngineKind::Fbx,
        DeviceKind::SimSsd(FtlKind::Block),
        20_000_097,
        200,
    );
}

/// The same bug on the page-mapping FTL: ENOSPC at step 2,300 of the soak's history, a
/// dead segment after a clean close and reopen at step 665.
#[test]
fn fbx_frees_the_dead_segments_a_checkpoint_left_on_the_page_ftl() {
    replay(
        EngineKind::Fbx,
        DeviceKind::SimSsd(FtlKind::Page),
        10_000_044,
        700,
    );
}

/// Harness sizing, not an engine bug: FBX with a leaf order of 3 on 512-byte pages keeps
/// about a page per 1.6 live keys, and its file may reach twice that plus the segments
/// freed since the last checkpoint; 2,300 live keys filled the 4,016-page simulated SSD
/// (a correct ENOSPC at step 2,943). `testing::run` now gives FBX room in proportion to
/// the history's length.
#[test]
fn fbx_histories_get_a_device_their_space_policy_fits_in() {
    replay(
        EngineKind::Fbx,
        DeviceKind::SimSsd(FtlKind::Page),
        30_000_044,
        2_950,
    );
}
