//! The buffer layer: the LRU [`BufferPool`] (a budget in bytes, pinning, a write barrier
//! for the WAL rule), and [`SharedPool`], which serves it to one writer or many readers. The `Pager` that in-place engines use sits above it, in `durable`.

mod latch;
mod pool;
mod shared;

pub use pool::{BufferPool, PageCheck, WriteBarrier};
pub use shared::{Miss, NewFrame, SharedIo, SharedPool};
