//! The buffer layer: the LRU [`BufferPool`] and the [`Pager`] that in-place engines
//! (B+-tree, PIO B-tree, BFTL, ...) use to read, change, allocate and free pages with
//! crash safety.

mod pager;
mod pool;

pub use pager::Pager;
pub use pool::{BufferPool, FrameId, NoBarrier, WriteBarrier};
