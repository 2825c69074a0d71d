//! The buffer layer: the LRU [`BufferPool`] (a budget in bytes, pinning, a write barrier
//! for the WAL rule). The `Pager` that in-place engines use sits above it, in `durable`.

mod pool;

pub use pool::{BufferPool, PageCheck, WriteBarrier};
