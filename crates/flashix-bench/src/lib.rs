//! flashix-bench: device probe, workloads, runner and report behind the `flashix` binary.

pub mod probe;
