//! flashix-bench: device probe, workloads, runner and report behind the `flashix` binary
//! (docs/benchmarking.md).
//!
//! - [`probe`]: measures the device (`flashix probe`);
//! - [`workload`]: keys, key distributions and operation mixes;
//! - [`runner`]: preparation of the aged index and the measured phase (`flashix bench`);
//! - [`advise`]: every engine's predicted cost for a device, a size, a budget and a
//!   workload, ranked (`flashix advise`);
//! - [`model`]: the FD-tree cost model on a device profile (`flashix fdtree-model`);
//! - [`pio_model`]: the PIO B-tree leaf-size and OPQ model (`flashix pio-model`);
//! - [`sim_cmd`]: random writes on a simulated SSD with each FTL (`flashix sim`);
//! - [`repro`]: the d-IPL paper's experiments on the NAND simulator (`flashix repro dipl`);
//! - [`report`]: result records, percentiles, device limits, the terminal table and
//!   `results.json`;
//! - [`compare`]: two runs' results side by side (`flashix compare`);
//! - [`ops`]: operating an index: `flashix check`, `stats`, `dump` and `load`;
//! - [`html`]: the self-contained `report.html` with inline SVG charts;
//! - [`target`]: the trait every engine and peer runs the workloads through;
//! - [`peers`]: RocksDB, fjall, redb and LMDB behind cargo features;
//! - [`units`]: byte sizes on the command line.

pub mod advise;
pub mod bulk_model;
pub mod cgroup;
pub mod compare;
pub mod html;
pub mod mobench;
pub mod mobject_workload;
pub mod model;
pub mod ops;
pub mod peers;
pub mod pio_model;
pub mod probe;
pub mod report;
pub mod repro;
pub mod runner;
pub mod sim_cmd;
pub mod target;
pub mod units;
pub mod workload;
