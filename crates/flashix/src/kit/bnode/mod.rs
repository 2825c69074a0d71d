//! B+-tree nodes: the slotted node page format ([`node`]), the internal levels above the
//! leaves ([`spine`], Comer 1979) and the bulk load's grouping ([`group_sizes`]). Shared by
//! the B+-tree, the PIO B-tree (whose internal nodes are this format) and BFTL (bulk
//! loading).

pub(crate) mod bulk;
pub(crate) mod check;
pub(crate) mod leaves;
pub(crate) use bulk::group_sizes;
pub mod node;
pub(crate) mod spine;
