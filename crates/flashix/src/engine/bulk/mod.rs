//! The bulk index (`EngineKind::BulkIndex`; Lehtonen, "Bulk Indexing on Flash Devices",
//! 2014, §5). Being built: options only.

mod options;
pub use options::BulkOptions;

use crate::error::{Error, Result};
use crate::settings::Settings;

/// Check bulk index options against the page size (dispatched by `engine::validate`).
pub fn validate(s: &Settings, o: &BulkOptions) -> Result<()> {
    let ps = s.page_size as u64;
    if o.m == Some(0) {
        return Err(Error::InvalidOptions("bulk m must be at least 1".into()));
    }
    if o.io_unit_bytes < ps || o.io_unit_bytes % ps != 0 || o.io_unit_bytes > 64 << 20 {
        return Err(Error::InvalidOptions(format!(
            "bulk io_unit_bytes {} must be a whole number of {ps}-byte pages, at most 64 MiB",
            o.io_unit_bytes
        )));
    }
    Ok(())
}
