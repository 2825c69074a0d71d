//! Fault injection over a [`Device`] and a [`Vfs`] with one clock (being written).

use super::{Device, DeviceStats, IoReq, PageId, Vfs};
use crate::error::Result;
use std::sync::{Arc, Mutex};

/// What to inject.
#[derive(Debug, Clone, Default)]
pub struct FaultPlan {}

/// The shared fault clock and crash state.
#[derive(Clone, Default)]
pub struct Faults {
    _state: Arc<Mutex<FaultPlan>>,
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
    _inner: Arc<dyn Vfs>,
}
