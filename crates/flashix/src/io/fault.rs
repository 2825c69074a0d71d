//! Fault injection over a [`Device`] and a [`Vfs`] with one clock (being written: for now
//! a pass-through).

use super::{Device, DeviceStats, IoReq, PageId, Vfs};
use crate::error::Result;
use std::sync::Arc;

/// What to inject.
#[derive(Debug, Clone, Default)]
pub struct FaultPlan {}

/// The shared fault clock and crash state.
#[derive(Clone, Default)]
pub struct Faults {}

impl Faults {
    pub fn new(_seed: u64) -> Faults {
        Faults {}
    }
    pub fn wrap_device(&self, inner: Box<dyn Device>) -> FaultyDevice {
        FaultyDevice { inner }
    }
    pub fn wrap_vfs(&self, inner: Arc<dyn Vfs>) -> FaultyVfs {
        FaultyVfs { inner }
    }
}

/// A [`Device`] wrapped by [`Faults`].
pub struct FaultyDevice {
    inner: Box<dyn Device>,
}

impl Device for FaultyDevice {
    fn page_size(&self) -> usize {
        self.inner.page_size()
    }
    fn submit(&mut self, batch: &mut [IoReq<'_>]) -> Result<()> {
        self.inner.submit(batch)
    }
    fn sync(&mut self) -> Result<()> {
        self.inner.sync()
    }
    fn trim(&mut self, page: PageId, pages: u64) -> Result<()> {
        self.inner.trim(page, pages)
    }
    fn stats(&self) -> DeviceStats {
        self.inner.stats()
    }
}

/// A [`Vfs`] wrapped by [`Faults`].
pub struct FaultyVfs {
    inner: Arc<dyn Vfs>,
}

impl Vfs for FaultyVfs {
    fn create(&self, name: &str) -> Result<()> {
        self.inner.create(name)
    }
    fn append(&self, name: &str, data: &[u8]) -> Result<()> {
        self.inner.append(name, data)
    }
    fn read(&self, name: &str) -> Result<Vec<u8>> {
        self.inner.read(name)
    }
    fn len(&self, name: &str) -> Result<u64> {
        self.inner.len(name)
    }
    fn truncate(&self, name: &str, len: u64) -> Result<()> {
        self.inner.truncate(name, len)
    }
    fn sync(&self, name: &str) -> Result<()> {
        self.inner.sync(name)
    }
    fn rename(&self, from: &str, to: &str) -> Result<()> {
        self.inner.rename(from, to)
    }
    fn remove(&self, name: &str) -> Result<()> {
        self.inner.remove(name)
    }
    fn exists(&self, name: &str) -> Result<bool> {
        self.inner.exists(name)
    }
    fn list(&self) -> Result<Vec<String>> {
        self.inner.list()
    }
    fn sync_dir(&self) -> Result<()> {
        self.inner.sync_dir()
    }
}
