//! [`HitIndex`]: the page table a shared reader's hit goes through without the pool's lock,
//! and the per-frame [`Latch`] it pins.
//!
//! # Thread safety
//!
//! The index is split into [`SHARDS`] shards by page id, each a readers-writer lock over a
//! map from page to [`Slot`]. A hit takes its shard's lock shared, pins the frame with an
//! atomic add on its latch and sets the latch's reference bit, and releases the shard: no
//! lock common to all pages is taken, and readers of different pages, or of one page, do
//! not exclude each other. Its unpin is one atomic subtract.
//!
//! The index holds a subset of the pool's resident pages ([`super::BufferPool`]'s own map):
//! a page is entered once it is loaded (never while a reader loads it, so a hit never sees
//! a frame being filled) and removed before its frame can change page or bytes. A frame
//! leaves the index only through [`HitIndex::remove_unpinned`], under its shard's lock taken
//! exclusive: since a pin is taken under that shard's lock shared, a frame found unpinned
//! there stays unpinned until the pool reuses it. So the pool (under its own lock, or with
//! `&mut`) evicts, releases, writes back or discards a frame only after the index gave it
//! up; a pinned frame's bytes change only under its latch held exclusive (a shared
//! writer, [`Latch::bytes`]), never while a reader holds it shared.
//!
//! Memory: one slot per resident page at most, beside the pool's own map; the budget
//! counts the frames' buffers, as before.

use crate::io::PageId;
use crate::util::sync::{Arc, AtomicBool, AtomicU32, AtomicU64, RwLock};
use rustc_hash::FxHashMap;
use std::sync::atomic::Ordering;

/// Shards of the index: enough that readers of different pages rarely meet on one lock.
pub const SHARDS: usize = 16;

/// What readers and shared writers share of a frame without the pool's lock.
#[derive(Debug, Default)]
pub struct Latch {
    /// The frame's bytes in shared mode: a reader holds it shared while it looks at them,
    /// a shared writer (`super::SharedPool::write`) exclusive while it changes them, the
    /// write-back of a dirty frame shared while it copies them.
    pub bytes: RwLock<()>,
    /// Pins taken by hits through the index (the pool's own pins are apart, under its lock).
    pub pins: AtomicU32,
    /// A hit since the frame last reached the pool's LRU end: it gets a second chance there
    /// instead of being evicted (hits set this bit instead of moving the frame, as CLOCK
    /// does, so that they take no lock).
    pub referenced: AtomicBool,
}

/// An indexed frame: its latch and its buffer.
#[derive(Clone)]
pub struct Slot {
    pub latch: Arc<Latch>,
    pub bytes: Bytes,
}

/// A frame's buffer (a heap allocation that does not move while the frame holds it).
#[derive(Clone, Copy)]
pub struct Bytes(pub *mut u8, pub usize);

// SAFETY: `Bytes` is an address; the index's protocol (module doc) decides who may
// dereference it and when: a reader, only while it holds a pin on the frame.
unsafe impl Send for Bytes {}
// SAFETY: as for `Send`.
unsafe impl Sync for Bytes {}

/// A hit's pin: unpinned by [`Hit::release`].
pub struct Hit {
    pub latch: Arc<Latch>,
    pub bytes: Bytes,
}

impl Hit {
    /// Release the pin; true when the frame is now unpinned by hits.
    pub fn release(self) -> bool {
        self.latch.pins.fetch_sub(1, Ordering::SeqCst) == 1
    }
}

/// The sharded page table of hits (module doc).
pub struct HitIndex {
    shards: Vec<RwLock<FxHashMap<PageId, Slot>>>,
    /// Hits taken through the index.
    pub hits: AtomicU64,
}

impl Default for HitIndex {
    fn default() -> Self {
        HitIndex {
            shards: (0..SHARDS)
                .map(|_| RwLock::new(FxHashMap::default()))
                .collect(),
            hits: AtomicU64::new(0),
        }
    }
}

fn shard(pid: PageId) -> usize {
    (pid.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 60) as usize % SHARDS
}

impl HitIndex {
    /// Pin `pid`'s frame if the index holds it.
    pub fn pin(&self, pid: PageId) -> Option<Hit> {
        let map = self.shards[shard(pid)]
            .read()
            .unwrap_or_else(|e| e.into_inner());
        let slot = map.get(&pid)?;
        slot.latch.pins.fetch_add(1, Ordering::Acquire);
        slot.latch.referenced.store(true, Ordering::Relaxed);
        self.hits.fetch_add(1, Ordering::Relaxed);
        Some(Hit {
            latch: Arc::clone(&slot.latch),
            bytes: slot.bytes,
        })
    }

    /// Enter a loaded, resident page (no-op if it is there).
    pub fn insert(&self, pid: PageId, slot: impl FnOnce() -> Slot) {
        let mut map = self.shards[shard(pid)]
            .write()
            .unwrap_or_else(|e| e.into_inner());
        map.entry(pid).or_insert_with(slot);
    }

    /// Remove `pid` unless a hit pins it: true when it is not in the index now (so its frame
    /// may be reused), false when a reader holds it.
    pub fn remove_unpinned(&self, pid: PageId) -> bool {
        let mut map = self.shards[shard(pid)]
            .write()
            .unwrap_or_else(|e| e.into_inner());
        match map.get(&pid) {
            Some(s) if s.latch.pins.load(Ordering::Acquire) > 0 => false,
            Some(_) => {
                map.remove(&pid);
                true
            }
            None => true,
        }
    }

    /// Remove `pid` even if a hit pins it: the broken latch of the model tests.
    #[cfg(test)]
    pub fn remove(&self, pid: PageId) {
        let mut map = self.shards[shard(pid)]
            .write()
            .unwrap_or_else(|e| e.into_inner());
        map.remove(&pid);
    }
}
