//! The LA-tree (`EngineKind::LaTree`; Agrawal et al., VLDB 2009; Lehtonen 2014, §4.4).
//! Being built: options only.

mod options;
pub use options::LaTreeOptions;

use crate::error::{Error, Result};
use crate::settings::Settings;

/// Check LA-tree options against the page size (dispatched by `engine::validate`).
pub fn validate(s: &Settings, o: &LaTreeOptions) -> Result<()> {
    let ps = s.page_size as u64;
    if o.node_bytes < ps || o.node_bytes % ps != 0 {
        return Err(Error::InvalidOptions(format!(
            "latree node_bytes {} must be a whole number of {ps}-byte pages",
            o.node_bytes
        )));
    }
    if o.k == 0 {
        return Err(Error::InvalidOptions("latree k must be at least 1".into()));
    }
    if o.max_buffer_pages == 0 {
        return Err(Error::InvalidOptions(
            "latree max_buffer_pages must be at least 1".into(),
        ));
    }
    Ok(())
}
