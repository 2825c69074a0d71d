//! Buffer pool and page store (being written).
pub struct Pager;
