//! What a run leaves behind, from its records to the pages a reader opens:
//!
//! - [`report`]: the per-cell [`report::Record`], latency percentiles, the device limit,
//!   and `results.json` ([`report::Results`]);
//! - [`table`]: the terminal table of a run's records;
//! - [`html`]: the self-contained `report.html` with inline SVG charts;
//! - [`compare`]: two runs' results side by side (`flashix compare`, and the comparison
//!   section of `flashix report A B`).

pub mod compare;
pub mod html;
pub mod report;
pub mod table;
