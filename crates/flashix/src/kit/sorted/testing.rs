//! What the unit tests of the sorted kit's engines share: a small page and an in-memory
//! pager of a few frames, so that runs, components and merges span many pages and the
//! pool's evictions at test sizes.

use crate::durable::Pager;

/// The page size of the merge tests.
pub(crate) const PAGE: usize = 512;

/// An in-memory pager of [`PAGE`]-byte pages and eight frames.
pub(crate) fn pager() -> Pager {
    Pager::in_memory(PAGE, 8)
}
