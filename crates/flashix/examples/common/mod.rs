//! Shared by the examples: a scratch directory under `std::env::temp_dir()` that is removed
//! when it goes out of scope (also when the example fails).

use std::path::{Path, PathBuf};

/// A unique, not yet existing directory path under the system temp dir, removed on drop.
pub struct Scratch(PathBuf);

impl Scratch {
    /// `name` makes the directory recognisable; the process id and the time make it unique.
    pub fn new(name: &str) -> Scratch {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir = std::env::temp_dir().join(format!(
            "flashix-example-{name}-{}-{nanos}",
            std::process::id()
        ));
        Scratch(dir)
    }

    /// Where the example keeps its index (created by `Db::create`).
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
