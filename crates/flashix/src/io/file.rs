//! [`FileDevice`]: one large file treated as a linear array of pages (FD-tree paper, App. D).
//! (Being written: O_DIRECT, io_uring batches, synchronous fallback.)

use super::{Counters, Device, DeviceStats, IoReq, PageId};
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// A [`Device`] on a file.
pub struct FileDevice {
    page_size: usize,
    path: PathBuf,
    counters: Counters,
}

impl FileDevice {
    /// Open (creating if absent) the file at `path` with pages of `page_size` bytes.
    /// `direct_io` asks for `O_DIRECT`; if the file system refuses it the device falls back
    /// to buffered I/O and says so in [`DeviceStats::backend`].
    pub fn open(path: &Path, page_size: usize, direct_io: bool) -> Result<Self> {
        let _ = direct_io;
        Err(Error::Unsupported(format!(
            "FileDevice at {} is not built yet",
            path.display()
        )))
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Device for FileDevice {
    fn page_size(&self) -> usize {
        self.page_size
    }
    fn submit(&mut self, _batch: &mut [IoReq<'_>]) -> Result<()> {
        Err(Error::Unsupported("FileDevice".into()))
    }
    fn sync(&mut self) -> Result<()> {
        Err(Error::Unsupported("FileDevice".into()))
    }
    fn trim(&mut self, _page: PageId, _pages: u64) -> Result<()> {
        Ok(())
    }
    fn stats(&self) -> DeviceStats {
        self.counters.stats.clone()
    }
}
