//! The device half of the fault injector (see the module doc of `io::fault`).

#[allow(unused_imports)]
use super::*;
// ---------------------------------------------------------------------------------------
// Device

/// One wrapped device: the inner device and the pre-images of pages written since the
/// last sync.
pub(super) struct DevSlot {
    pub(super) inner: Box<dyn Device>,
    pub(super) page_size: usize,
    pub(super) pre: BTreeMap<PageId, Vec<u8>>,
}

impl DevSlot {
    /// Read and keep the durable contents of every page that `reqs` write and that has no
    /// pre-image yet.
    fn save_pre_images(&mut self, reqs: &[IoReq<'_>]) -> Result<()> {
        let ps = self.page_size;
        let mut missing: Vec<PageId> = Vec::new();
        for req in reqs.iter().filter(|r| r.is_write()) {
            let first = req.page();
            for p in first..first + (req.len() / ps) as u64 {
                if !self.pre.contains_key(&p) {
                    missing.push(p);
                }
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        missing.sort_unstable();
        missing.dedup();
        // Contiguous runs, one read request each.
        let mut runs: Vec<(PageId, u64)> = Vec::new();
        for p in missing {
            match runs.last_mut() {
                Some((start, n)) if *start + *n == p => *n += 1,
                _ => runs.push((p, 1)),
            }
        }
        let mut bufs: Vec<AlignedBuf> = runs
            .iter()
            .map(|&(_, n)| AlignedBuf::zeroed(n as usize * ps))
            .collect();
        let mut reqs: Vec<IoReq<'_>> = runs
            .iter()
            .zip(bufs.iter_mut())
            .map(|(&(page, _), buf)| IoReq::Read {
                page,
                buf: &mut buf[..],
            })
            .collect();
        self.inner.submit(&mut reqs)?;
        drop(reqs);
        for (&(start, _), buf) in runs.iter().zip(bufs.iter()) {
            for (i, chunk) in buf.chunks(ps).enumerate() {
                self.pre.insert(start + i as u64, chunk.to_vec());
            }
        }
        Ok(())
    }

    /// Rewrite the inner device to the durable image, plus the torn request if any.
    pub(super) fn restore(&mut self, torn: Option<(PageId, &[u8])>, rng: &mut Rng) -> Result<()> {
        let ps = self.page_size;
        let pre = std::mem::take(&mut self.pre);
        let bufs: Vec<(PageId, AlignedBuf)> = pre
            .iter()
            .map(|(&p, d)| {
                let mut b = AlignedBuf::zeroed(ps);
                b.copy_from_slice(d);
                (p, b)
            })
            .collect();
        if !bufs.is_empty() {
            let mut reqs: Vec<IoReq<'_>> = bufs
                .iter()
                .map(|(p, b)| IoReq::Write {
                    page: *p,
                    buf: &b[..],
                })
                .collect();
            self.inner.submit(&mut reqs)?;
        }
        if let Some((page, data)) = torn {
            let mut b = AlignedBuf::zeroed(data.len());
            for (s, chunk) in b.chunks_mut(SECTOR).enumerate() {
                let off = s * SECTOR;
                if rng.coin() {
                    chunk.copy_from_slice(&data[off..off + SECTOR]);
                } else {
                    // The durable old bytes: the pre-image (always saved before the crash
                    // write); zeros if it is somehow missing.
                    let p = page + (off / ps) as u64;
                    let within = off % ps;
                    if let Some(old) = pre.get(&p) {
                        chunk.copy_from_slice(&old[within..within + SECTOR]);
                    }
                }
            }
            self.inner.write(page, &b)?;
        }
        self.inner.sync()
    }
}

/// A [`Device`] wrapped by [`Faults`]: ticks the shared clock, keeps pre-images, fails and
/// crashes as planned.
pub struct FaultyDevice {
    pub(super) faults: Faults,
    pub(super) idx: usize,
    pub(super) page_size: usize,
    pub(super) counters: Counters,
}

impl FaultyDevice {
    /// The injector this device belongs to.
    pub fn faults(&self) -> &Faults {
        &self.faults
    }
}

enum Stop {
    Fail(i32),
    Crash,
}

impl Device for FaultyDevice {
    fn page_size(&self) -> usize {
        self.page_size
    }

    fn submit(&mut self, batch: &mut [IoReq<'_>]) -> Result<()> {
        let mut guard = self.faults.lock();
        let st = &mut *guard;
        if st.crashed {
            return Err(power_loss("submitting a device batch"));
        }
        for req in batch.iter() {
            validate(self.page_size, req.page(), req.len())?;
        }
        let mut stop = None;
        for (i, req) in batch.iter().enumerate() {
            let op = if req.is_write() {
                OpKind::DeviceWrite
            } else {
                OpKind::DeviceRead
            };
            if let Some(errno) = st.check_failure(op) {
                stop = Some((i, Stop::Fail(errno)));
                break;
            }
            if req.is_write() && st.tick() {
                stop = Some((i, Stop::Crash));
                break;
            }
        }
        let run = stop.as_ref().map_or(batch.len(), |(i, _)| *i);
        let with_crash = match stop {
            Some((i, Stop::Crash)) => i + 1,
            _ => run,
        };
        let slot = st
            .devices
            .get_mut(self.idx)
            .ok_or_else(|| lost_handle("device"))?;
        let saved = slot.save_pre_images(&batch[..with_crash]);
        if let Some((i, Stop::Crash)) = stop {
            let what = format!("writing page {}", batch[i].page());
            let op = match &batch[i] {
                IoReq::Write { page, buf } => Some(CrashOp::DeviceWrite {
                    dev: self.idx,
                    page: *page,
                    data: buf.to_vec(),
                }),
                IoReq::Read { .. } => None,
            };
            st.crash(op);
            return Err(power_loss(&what));
        }
        saved?;
        if run > 0 {
            self.counters.record_batch(self.page_size, &batch[..run])?;
            slot.inner.submit(&mut batch[..run])?;
        }
        match stop {
            Some((i, Stop::Fail(errno))) => {
                let verb = if batch[i].is_write() {
                    "writing"
                } else {
                    "reading"
                };
                Err(injected(&format!("{verb} page {}", batch[i].page()), errno))
            }
            _ => Ok(()),
        }
    }

    fn sync(&mut self) -> Result<()> {
        let mut guard = self.faults.lock();
        let st = &mut *guard;
        st.admit(OpKind::DeviceSync, || "syncing the device".into())?;
        let crash = st.tick();
        let slot = st
            .devices
            .get_mut(self.idx)
            .ok_or_else(|| lost_handle("device"))?;
        let synced = slot.inner.sync();
        if synced.is_ok() {
            slot.pre.clear();
        }
        if crash {
            st.crash(None);
            return Err(power_loss("syncing the device"));
        }
        synced
    }

    fn trim(&mut self, page: PageId, pages: u64) -> Result<()> {
        let mut guard = self.faults.lock();
        let st = &mut *guard;
        if st.crashed {
            return Err(power_loss(&format!("trimming page {page}")));
        }
        let slot = st
            .devices
            .get_mut(self.idx)
            .ok_or_else(|| lost_handle("device"))?;
        slot.inner.trim(page, pages)?;
        // Trim is durable at once: the durable contents of trimmed pages are zeros.
        for (_, old) in slot.pre.range_mut(page..page.saturating_add(pages)) {
            old.fill(0);
        }
        Ok(())
    }

    fn stats(&self) -> DeviceStats {
        let inner = {
            let st = self.faults.lock();
            st.devices.get(self.idx).map(|d| d.inner.stats())
        };
        let own = &self.counters.stats;
        let mut s = inner.unwrap_or_else(|| own.clone());
        s.reads = own.reads;
        s.read_requests = own.read_requests;
        s.read_bytes = own.read_bytes;
        s.sequential_reads = own.sequential_reads;
        s.random_reads = own.random_reads;
        s.batches = own.batches;
        s.read_batches = own.read_batches;
        s.max_queue_depth = own.max_queue_depth;
        s
    }

    fn capacity_pages(&self) -> Option<u64> {
        let st = self.faults.lock();
        st.devices
            .get(self.idx)
            .and_then(|d| d.inner.capacity_pages())
    }

    /// The inner device's: an engine decides to run its merges on the merge thread as it
    /// would on the inner device alone, so that the fault and crash histories on a file
    /// run them there (this device serves started requests at once).
    fn overlaps(&self) -> bool {
        let st = self.faults.lock();
        st.devices.get(self.idx).is_some_and(|d| d.inner.overlaps())
    }
}
