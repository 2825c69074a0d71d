//! [`MemDevice`]: pages in memory, for fast tests. Clones share the same pages, so a test
//! can close an index and open it again on the same contents.

use super::{Counters, Device, DeviceStats, IoReq, PageId};
use crate::error::Result;
use std::sync::{Arc, Mutex, MutexGuard};

/// An in-memory [`Device`]. Pages never written read as zeros.
#[derive(Clone)]
pub struct MemDevice {
    page_size: usize,
    data: Arc<Mutex<Vec<u8>>>,
    counters: Counters,
}

impl MemDevice {
    /// An empty device of `page_size`-byte pages.
    pub fn new(page_size: usize) -> Self {
        MemDevice {
            page_size,
            data: Arc::new(Mutex::new(Vec::new())),
            counters: Counters::new("memory"),
        }
    }

    /// Another handle on the same pages with fresh counters (a "reopen").
    pub fn reopen(&self) -> Self {
        MemDevice {
            page_size: self.page_size,
            data: Arc::clone(&self.data),
            counters: Counters::new("memory"),
        }
    }

    /// Current length in bytes (highest page written).
    pub fn len_bytes(&self) -> u64 {
        self.lock().len() as u64
    }

    fn lock(&self) -> MutexGuard<'_, Vec<u8>> {
        // A poisoned lock only means another test thread panicked; the bytes are intact.
        self.data.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Flip one bit (tests of corruption detection).
    pub fn flip_bit(&self, byte: u64, bit: u8) {
        let mut d = self.lock();
        if let Some(b) = d.get_mut(byte as usize) {
            *b ^= 1 << (bit % 8);
        }
    }
}

impl Device for MemDevice {
    fn page_size(&self) -> usize {
        self.page_size
    }

    fn submit(&mut self, batch: &mut [IoReq<'_>]) -> Result<()> {
        self.counters.record_batch(self.page_size, batch)?;
        let mut data = self.data.lock().unwrap_or_else(|e| e.into_inner());
        for req in batch.iter_mut() {
            let off = (req.page() * self.page_size as u64) as usize;
            match req {
                IoReq::Read { buf, .. } => {
                    let end = (off + buf.len()).min(data.len());
                    let have = end.saturating_sub(off);
                    if have > 0 {
                        buf[..have].copy_from_slice(&data[off..end]);
                    }
                    buf[have..].fill(0);
                }
                IoReq::Write { buf, .. } => {
                    if data.len() < off + buf.len() {
                        data.resize(off + buf.len(), 0);
                    }
                    data[off..off + buf.len()].copy_from_slice(buf);
                }
            }
        }
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        self.counters.stats.syncs += 1;
        Ok(())
    }

    fn trim(&mut self, page: PageId, pages: u64) -> Result<()> {
        self.counters.stats.trims += pages;
        let mut data = self.lock();
        let ps = self.page_size as u64;
        let start = (page * ps) as usize;
        let end = (((page + pages) * ps) as usize).min(data.len());
        if start < end {
            data[start..end].fill(0);
        }
        Ok(())
    }

    fn stats(&self) -> DeviceStats {
        self.counters.stats.clone()
    }
}
