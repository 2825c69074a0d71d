//! Read-only storage by copy-on-write overlay: [`OverlayDevice`] and [`OverlayVfs`].
//!
//! `Db::open_read_only` opens an index on these so that nothing on disk changes while every
//! engine's own open and recovery path runs unchanged: recovery may write restored pages,
//! replay the WAL, checkpoint and switch the manifest, and all of that lands in memory.
//!
//! * Reads see the overlay first, then the files underneath. Writes, trims, truncations,
//!   creations, renames and removals change only the overlay; `sync` and `sync_dir` do
//!   nothing. The files underneath are opened read-only ([`super::FileDevice::open_read_only`],
//!   [`super::DirVfs::read_only`]), so a write that slipped past the overlay would fail
//!   instead of reaching the disk.
//! * [`OverlayDevice`] keeps whole pages: a written page is held until the device is
//!   dropped, so memory grows with what the index writes while it is open read-only (a
//!   WAL replay's pages, a closing checkpoint). [`OverlayVfs`] keeps whole files: the first
//!   change of a file copies it into memory.
//! * Clones of an `OverlayDevice` share the overlay and the device underneath (with their
//!   own counters), so a caller can read what the index sees after its recovery, while the
//!   index has it open.

use super::{Counters, Device, DeviceStats, IoReq, PageId, Vfs};
use crate::error::{Error, Result};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

struct Shared {
    base: Box<dyn Device>,
    /// Pages written (or trimmed: zeros) since the overlay was made.
    pages: HashMap<PageId, Box<[u8]>>,
}

/// A [`Device`] that reads through to `base` and keeps every write in memory.
#[derive(Clone)]
pub struct OverlayDevice {
    page_size: usize,
    shared: Arc<Mutex<Shared>>,
    counters: Counters,
}

impl OverlayDevice {
    /// An overlay over `base`, which only ever receives reads.
    pub fn new(base: Box<dyn Device>) -> Self {
        let page_size = base.page_size();
        let backend = format!("overlay+{}", base.stats().backend);
        OverlayDevice {
            page_size,
            shared: Arc::new(Mutex::new(Shared {
                base,
                pages: HashMap::new(),
            })),
            counters: Counters::new(backend),
        }
    }

    /// Pages the overlay holds (written or trimmed since it was made).
    pub fn overlay_pages(&self) -> u64 {
        self.lock().pages.len() as u64
    }

    fn lock(&self) -> MutexGuard<'_, Shared> {
        // A poisoned lock means a thread panicked mid-copy of whole pages; the map is intact.
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Device for OverlayDevice {
    fn page_size(&self) -> usize {
        self.page_size
    }

    fn submit(&mut self, batch: &mut [IoReq<'_>]) -> Result<()> {
        self.counters.record_batch(self.page_size, batch)?;
        let ps = self.page_size;
        let mut guard = self.lock();
        let shared = &mut *guard;
        // The reads that no overlay page touches go to the base as one batch (psync I/O
        // stays a batch); the others are read page by page.
        let mut through: Vec<IoReq<'_>> = Vec::new();
        let mut patched: Vec<(PageId, &mut [u8])> = Vec::new();
        for req in batch.iter_mut() {
            match req {
                IoReq::Write { page, buf } => {
                    for (i, chunk) in buf.chunks(ps).enumerate() {
                        shared.pages.insert(*page + i as u64, chunk.into());
                    }
                }
                IoReq::Read { page, buf } => {
                    let n = (buf.len() / ps) as u64;
                    if (0..n).any(|i| shared.pages.contains_key(&(*page + i))) {
                        patched.push((*page, &mut **buf));
                    } else {
                        through.push(IoReq::Read { page: *page, buf });
                    }
                }
            }
        }
        if !through.is_empty() {
            shared.base.submit(&mut through)?;
        }
        for (first, buf) in patched {
            for (i, chunk) in buf.chunks_mut(ps).enumerate() {
                let p = first + i as u64;
                match shared.pages.get(&p) {
                    Some(held) => chunk.copy_from_slice(held),
                    None => shared.base.read(p, chunk)?,
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
        let zeros: Box<[u8]> = vec![0u8; self.page_size].into();
        let mut shared = self.lock();
        for p in page..page.saturating_add(pages) {
            shared.pages.insert(p, zeros.clone());
        }
        Ok(())
    }

    fn stats(&self) -> DeviceStats {
        self.counters.stats.clone()
    }
}

/// A [`Vfs`] that reads through to `base` and keeps every change in memory.
pub struct OverlayVfs {
    base: Arc<dyn Vfs>,
    /// Files changed since the overlay was made: `None` marks one removed (or renamed away).
    files: Mutex<BTreeMap<String, Option<Vec<u8>>>>,
}

fn missing(name: &str) -> Error {
    Error::io(
        format!("opening {name}"),
        std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
    )
}

impl OverlayVfs {
    /// An overlay over `base`, which only ever receives reads.
    pub fn new(base: Arc<dyn Vfs>) -> Self {
        OverlayVfs {
            base,
            files: Mutex::new(BTreeMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Option<Vec<u8>>>> {
        self.files.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Apply `f` to the overlay's copy of `name`, copying it from the base first.
    fn change<T>(&self, name: &str, f: impl FnOnce(&mut Vec<u8>) -> T) -> Result<T> {
        let mut files = self.lock();
        if !files.contains_key(name) {
            let data = self.base.read(name)?;
            files.insert(name.to_string(), Some(data));
        }
        match files.get_mut(name) {
            Some(Some(data)) => Ok(f(data)),
            _ => Err(missing(name)),
        }
    }
}

impl Vfs for OverlayVfs {
    fn create(&self, name: &str) -> Result<()> {
        self.lock().insert(name.to_string(), Some(Vec::new()));
        Ok(())
    }
    fn append(&self, name: &str, data: &[u8]) -> Result<()> {
        self.change(name, |f| f.extend_from_slice(data))
    }
    fn read(&self, name: &str) -> Result<Vec<u8>> {
        match self.lock().get(name) {
            Some(Some(data)) => return Ok(data.clone()),
            Some(None) => return Err(missing(name)),
            None => {}
        }
        self.base.read(name)
    }
    fn len(&self, name: &str) -> Result<u64> {
        match self.lock().get(name) {
            Some(Some(data)) => return Ok(data.len() as u64),
            Some(None) => return Err(missing(name)),
            None => {}
        }
        self.base.len(name)
    }
    fn truncate(&self, name: &str, len: u64) -> Result<()> {
        let len = usize::try_from(len)
            .map_err(|_| Error::InvalidArgument(format!("truncating {name} to {len} bytes")))?;
        self.change(name, |f| f.resize(len, 0))
    }
    fn sync(&self, name: &str) -> Result<()> {
        if self.exists(name)? {
            Ok(())
        } else {
            Err(missing(name))
        }
    }
    fn rename(&self, from: &str, to: &str) -> Result<()> {
        let data = self.read(from)?;
        let mut files = self.lock();
        files.insert(from.to_string(), None);
        files.insert(to.to_string(), Some(data));
        Ok(())
    }
    fn remove(&self, name: &str) -> Result<()> {
        if !self.exists(name)? {
            return Err(missing(name));
        }
        self.lock().insert(name.to_string(), None);
        Ok(())
    }
    fn exists(&self, name: &str) -> Result<bool> {
        match self.lock().get(name) {
            Some(f) => Ok(f.is_some()),
            None => self.base.exists(name),
        }
    }
    fn list(&self) -> Result<Vec<String>> {
        let files = self.lock();
        let mut names: Vec<String> = self
            .base
            .list()?
            .into_iter()
            .filter(|n| !files.contains_key(n))
            .collect();
        names.extend(
            files
                .iter()
                .filter(|(_, f)| f.is_some())
                .map(|(n, _)| n.clone()),
        );
        names.sort();
        Ok(names)
    }
    fn sync_dir(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{MemDevice, MemVfs};

    /// Writes and trims land in the overlay: the overlay reads them back (also inside a
    /// multi-page read that spans held and base pages), the base never sees them, and a
    /// clone shares them.
    #[test]
    fn device_overlay_keeps_writes_from_the_base() {
        let base = MemDevice::new(512);
        let mut seed = base.reopen();
        seed.write(0, &[1u8; 512 * 4]).unwrap();
        let mut ov = OverlayDevice::new(Box::new(base.reopen()));
        ov.write(1, &[9u8; 512]).unwrap();
        ov.trim(2, 1).unwrap();
        ov.write(6, &[7u8; 512]).unwrap();
        let mut buf = vec![0u8; 512 * 4];
        ov.read(0, &mut buf).unwrap();
        assert!(buf[..512].iter().all(|&b| b == 1));
        assert!(buf[512..1024].iter().all(|&b| b == 9));
        assert!(buf[1024..1536].iter().all(|&b| b == 0));
        assert!(buf[1536..].iter().all(|&b| b == 1));
        let mut other = ov.clone();
        let mut one = vec![0u8; 512];
        other.read(6, &mut one).unwrap();
        assert!(one.iter().all(|&b| b == 7));
        // The base is as it was.
        let mut check = base.reopen();
        check.read(0, &mut buf).unwrap();
        assert!(buf.iter().all(|&b| b == 1));
        assert_eq!(base.len_bytes(), 512 * 4);
        assert_eq!(ov.overlay_pages(), 3);
    }

    /// Every kind of change stays in the overlay; the base's files are untouched.
    #[test]
    fn vfs_overlay_keeps_changes_from_the_base() {
        let base = MemVfs::new();
        base.put("a", b"hello".to_vec());
        base.put("b", b"bee".to_vec());
        let ov = OverlayVfs::new(Arc::new(base.clone()));
        ov.append("a", b" world").unwrap();
        assert_eq!(ov.read("a").unwrap(), b"hello world");
        ov.create("c").unwrap();
        ov.append("c", b"new").unwrap();
        ov.rename("c", "b").unwrap();
        assert_eq!(ov.read("b").unwrap(), b"new");
        assert!(!ov.exists("c").unwrap());
        ov.truncate("a", 2).unwrap();
        assert_eq!(ov.len("a").unwrap(), 2);
        ov.remove("a").unwrap();
        assert!(ov.read("a").is_err());
        assert!(ov.remove("a").is_err());
        assert_eq!(ov.list().unwrap(), vec!["b".to_string()]);
        // The base is unchanged.
        assert_eq!(base.read("a").unwrap(), b"hello");
        assert_eq!(base.read("b").unwrap(), b"bee");
        assert!(!base.exists("c").unwrap());
    }
}
