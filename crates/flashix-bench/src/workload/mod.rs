//! Workloads (FD-tree paper App. D; docs/benchmarking.md): key generation, operation
//! mixes, and the bookkeeping of which entries are live.
//!
//! Keys are 8-byte `u64`s. The key of the i-th entry ever inserted is a function of `i`
//! ([`KeyGen::key_of`]): `mix(i ^ seed)` for uniform and zipfian keys, where [`mix`] is a
//! bijection on `u64` (the splitmix64 finalizer), so keys are distinct and the keys of an
//! index can be regenerated from the entry indices alone; `i` for sequential keys. The
//! distribution decides which *existing* entry an operation touches: uniform over the live
//! entries, or Zipf(0.99) over them (rank 0 is the hottest).
//!
//! The workload's files, one concern each:
//!
//! - `keys.rs`: keys of entries ([`mix`], [`KeyGen`]), the key distributions ([`KeyDist`],
//!   [`zipf_rank`]), the live entries ([`KeySpace`]) and seeded RNGs ([`rng_for`]);
//! - `mixes.rs`: the named workloads ([`Workload`]: names, parsing, operation mixes and
//!   counts) and the kinds of operation they draw ([`OpKind`]);
//! - `tpcc.rs`: the TPC-C-like index trace of the `tpcc` workload ([`Tpcc`]);
//! - `stream.rs`: the operations of a measured phase ([`Op`], [`OpStream`]);
//! - `part.rs`: one thread's share of a phase ([`Part`]: its entries, its operations, its
//!   seed);
//! - [`mobject`]: the moving objects of `flashix mo-bench` (their movement, reports and
//!   queries), apart from the key-value workloads above.

mod keys;
mod mixes;
pub mod mobject;
mod part;
mod stream;
mod tpcc;

pub use keys::{mix, rng_for, unmix, zipf_rank, KeyDist, KeyGen, KeySpace, ZIPF_THETA};
pub use mixes::{OpKind, Workload, RANGE_ENTRIES_PER_OP};
pub use part::Part;
pub use stream::{Op, OpStream};
pub use tpcc::{Tpcc, TPCC_DISTRICTS, TPCC_RECENT, TPCC_SCAN, TPCC_WAREHOUSES};
