//! flashix-bench: device probe, workloads, runner and report behind the `flashix` binary
//! (docs/benchmarking.md).
//!
//! - [`cmd`]: one module per subcommand of `flashix`, each with its arguments and its run;
//! - [`probe`]: measures the device (`flashix probe`);
//! - [`workload`]: keys, key distributions, operation mixes and the moving-object data;
//! - [`runner`]: preparation of the aged index and the measured phase (`flashix bench`);
//! - [`models`]: the cost models on a device profile: FD-tree, PIO B-tree and bulk index,
//!   and every engine's predicted cost, ranked (`flashix advise`);
//! - [`repro`]: the papers' experiments on the simulators and this machine's disk
//!   (`flashix repro`);
//! - [`output`]: result records, the terminal table, `results.json`, `report.html` and the
//!   comparison of two runs;
//! - [`subjects`]: what the workloads run against: the flashix engines and the peers
//!   behind cargo features, and the memory cgroup that bounds the peers;
//! - [`units`]: byte sizes on the command line.

pub mod cmd;
pub mod models;
pub mod output;
pub mod probe;
pub mod repro;
pub mod runner;
pub mod subjects;
pub mod units;
pub mod workload;
