//! The cost models of the bench on a device profile written by `flashix probe`: each turns
//! the profile into the inputs of a model of `flashix::cost` (or of its own) and answers
//! with parameters and predicted costs. Nothing here does I/O beyond reading the profile.
//!
//! - [`fdtree`]: the FD-tree model's device costs, its choice of `k` and levels and its
//!   report (`flashix fdtree-model`; also the FD-tree's and LSM-tree's `k` in `flashix bench`);
//! - [`pio`]: the PIO B-tree model's device costs (`flashix pio-model`; the PIO B-tree's leaf
//!   size and OPQ in `flashix bench`);
//! - [`bulk`]: the bulk index thesis's device model (`flashix bulk-model`; the bulk index's
//!   range size in `flashix bench`);
//! - [`advise`]: every engine's predicted cost per operation for a profile, a size, a budget
//!   and a workload mix, ranked (`flashix advise`), with one model per engine in
//!   [`advise::engines`].

pub mod advise;
pub mod bulk;
pub mod fdtree;
pub mod pio;
