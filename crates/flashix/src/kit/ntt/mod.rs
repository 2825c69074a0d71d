//! The node translation table and the pages of index units that it points into, shared by
//! BFTL (`crate::engine::bftl`) and the FBX-tree (`crate::engine::fbx`), both descendants of
//! Wu, Kuo and Chang's B-tree layer: a node is not a page but the list of pages that hold
//! its changes ("index units" in BFTL, "log entries" in the FBX paper, §4.1), oldest first.
//!
//! - [`table`]: the [`Ntt`] (node -> its pages, page -> how many lists name it).
//! - [`unit`]: the page format of index units, grouped by node, and BFTL's packing.
//! - [`node`]: a [`Node`] rebuilt by applying its units in order.

pub mod node;
pub mod table;
pub mod unit;

pub use node::{Node, NONE};
pub use table::Ntt;
