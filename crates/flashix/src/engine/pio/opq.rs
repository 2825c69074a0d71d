//! The operation queue (OPQ, PIO B-tree paper §3.1.3, Figure 7): an in-memory array of
//! update operations not yet applied to the tree. Appends go to the end (the *appended
//! region*); every `speriod` appends the appended region is sorted and merged into the
//! *sorted region* before it (`sortedOffset`), like a merge sort's last step. A lookup
//! binary-searches the sorted region and scans the appended region; the newest entry of a
//! key wins. The sorted region holds at most one entry per key (merging keeps the newer).
//!
//! # Range tombstones (flashix's extension)
//! Beside its point entries the OPQ holds **range tombstones** ([`Tombs`]: sorted,
//! disjoint, coalesced closed intervals), one per `delete_range` whatever its size, as
//! RocksDB's `DeleteRange` does; the paper's OPQ has point operations only. Invariant:
//! every point entry whose key a tombstone covers is **newer** than that tombstone. Adding
//! `[lo, hi]` therefore first removes the point entries of `[lo, hi]` from both regions,
//! then adds the interval. A lookup takes the newest point entry of the key, else a
//! covering tombstone (a delete), else nothing (the tree decides). When the OPQ is
//! flushed, every tombstone is applied to the tree first ([`super::rdelete`]), then the
//! point batches: correct because the point entries in a tombstone's range are newer.
//!
//! # The appended region's index (flashix's addition)
//! The paper scans the appended region linearly; with the default `speriod` of 5000 and a
//! large OPQ that is up to 5000 entries compared per lookup (CPU time comparable to the
//! read it may save). When the appended region can grow past [`INDEX_FROM`] entries
//! (`min(speriod, capacity)`), the OPQ keeps an open-addressing hash index of it: `u32`
//! slots holding 1 + the position of the key's newest appended entry (0 empty), linear
//! probing, at most 3/4 full. It is cleared by every sort and rebuilt after a range delete
//! drops appended entries; lookups and the answers they give are the paper's.
//!
//! Memory: at most `capacity` entries of [`super::PIO_OPQ_ENTRY_BYTES`] bytes, allocated as
//! the OPQ fills (in steps of an eighth of what it holds, at least [`GROW_ENTRIES`], never
//! past `capacity`) and released when a flush empties it ([`Opq::release`]), so that the
//! engine lends the budget the OPQ does not use to the buffer pool (`memory_bytes` is what
//! the array holds, not its capacity); a sort merges in place (no second array). The
//! index's slots (4 bytes each, [`index_bytes`]: taken from the buffer pool's share, 32 KiB
//! at the default `speriod`) are allocated up front. A tombstone takes one of the
//! `capacity` slots (16 bytes held, charged to the OPQ's `memory_bytes`), so a full OPQ
//! counts both.
//!
//! # Thread safety
//! The engine keeps the OPQ behind a readers-writer lock of its own ([`SharedOpq`]):
//! appends made beside other operations, with the sorts they start, hold it exclusive;
//! lookups hold it shared; everything else reaches the OPQ with the engine to itself.
//! Such an append never fills the OPQ past its capacity nor grows its array.

use crate::kit::sorted::tombs::Tombs;
use crate::util::sync::RwLock;
use std::collections::BTreeMap;
use std::ops::Deref;

/// The operation of an entry (§3.1.3: insert, delete, update; an update of this map is a
/// put, as an insert is: both are upserts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Put,
    Delete,
}

/// One OPQ entry: the index record and its operation flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpqEntry {
    pub key: u64,
    /// The value of a put; 0 for a delete.
    pub value: u64,
    pub op: Op,
}

/// Fewest entries the OPQ's array grows by (see the module doc: memory).
pub const GROW_ENTRIES: usize = 4096;

/// Appended regions that can hold more entries than this get a hash index; below it a
/// linear scan (at most 512 compares) is as fast.
pub const INDEX_FROM: usize = 512;

/// Slots of the appended-region index of an OPQ of `capacity` entries sorted every
/// `speriod` appends: 0 when the region stays short, else a power of two at least 4/3 of
/// the region's longest (`min(speriod, capacity)`, plus the entry that triggers a sort).
fn index_slots(capacity: usize, speriod: usize) -> usize {
    let most = speriod.min(capacity) + 1;
    if most <= INDEX_FROM {
        return 0;
    }
    let slots = (most * 4).div_ceil(3).next_power_of_two();
    // At most an eighth of the entries' bytes: a small OPQ scans its short region.
    if slots.saturating_mul(4) > capacity.saturating_mul(3) {
        return 0;
    }
    slots
}

/// Bytes of the appended-region index of an OPQ of `capacity` entries sorted every
/// `speriod` appends (0 when it keeps none). They come from the buffer pool's share of the
/// budget, as the LSMap's do: the OPQ's own bytes hold `opq_bytes / 24` entries, the
/// number the cost model chose.
pub fn index_bytes(capacity: usize, speriod: usize) -> u64 {
    index_slots(capacity.max(1), speriod.max(1)) as u64 * 4
}

/// The OPQ behind a lock of its own (the engine's Thread safety; the PIO B-tree paper's
/// §4.2): a point write made beside other operations appends under it held exclusive
/// ([`SharedOpq::append_shared`]), and the periodic sort that append may start runs
/// there too, so the whole OPQ is exclusively locked for the sort; searches look it up
/// under it held shared ([`SharedOpq::read`]), and only for their in-memory step, never
/// across a page read; the paths that have the engine to themselves (batch updates,
/// range deletes, checkpoints, recovery, the checks) reach it through
/// [`SharedOpq::get_mut`], taking no lock.
pub struct SharedOpq {
    lock: RwLock<Opq>,
}

impl SharedOpq {
    pub fn new(q: Opq) -> SharedOpq {
        SharedOpq {
            lock: RwLock::new(q),
        }
    }

    /// The OPQ, to a thread that has the engine to itself. A panic under the lock (a
    /// bug) leaves it poisoned; the OPQ is used anyway, as the engine's own lock is.
    pub fn get_mut(&mut self) -> &mut Opq {
        self.lock.get_mut().unwrap_or_else(|e| e.into_inner())
    }

    /// The OPQ shared with other readers, held until the guard drops: appends wait for
    /// it, so a lookup through one guard sees one state of the OPQ.
    pub fn read(&self) -> impl Deref<Target = Opq> + '_ {
        self.lock.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Append `e` beside other threads' appends and lookups, under the lock held
    /// exclusive: first `log` (the operation's WAL record, buffered, so that the WAL holds
    /// the appends in the OPQ's order; it returns where the record starts), then the
    /// append, then the sort if a sort period has passed ([`Opq::push`]).
    pub fn append_shared(&self, e: OpqEntry, log: impl FnOnce() -> u64) -> Appended {
        let mut q = self.lock.write().unwrap_or_else(|e| e.into_inner());
        if !q.room_for_shared_append() {
            return Appended::Refused;
        }
        let start = log();
        q.push(e);
        match q.is_full() {
            true => Appended::Filled(start),
            false => Appended::Done,
        }
    }
}

/// What [`SharedOpq::append_shared`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Appended {
    /// Nothing: the OPQ is full (its flush, a batch update, changes the tree, so it waits
    /// for the engine's exclusive lock), or the append would grow the OPQ's array (whose
    /// bytes the buffer pool gives up first, under that lock: the memory budget).
    Refused,
    /// Appended.
    Done,
    /// Appended, and the OPQ is full: it is to be flushed under the engine's exclusive
    /// lock before any other append. The operation's WAL record starts at this offset.
    Filled(u64),
}

/// The operation queue.
#[derive(Debug)]
pub struct Opq {
    entries: Vec<OpqEntry>,
    /// `sortedOffset`: entries before it are sorted by key, one per key.
    sorted: usize,
    capacity: usize,
    speriod: usize,
    /// Appends since the last sort.
    since_sort: usize,
    /// Where the next batch starts (round robin over the key space).
    cursor: u64,
    /// Range tombstones, older than every point entry they cover.
    tombs: Tombs,
    /// Hash index of the appended region (see the module doc); empty when not kept.
    index: Vec<u32>,
    pub sorts: u64,
}

impl Opq {
    /// An empty OPQ of `capacity` entries, sorted every `speriod` appends.
    pub fn new(capacity: usize, speriod: usize) -> Opq {
        Opq {
            entries: Vec::new(),
            sorted: 0,
            capacity: capacity.max(1),
            speriod: speriod.max(1),
            since_sort: 0,
            cursor: 0,
            tombs: Tombs::new(),
            index: vec![0; index_slots(capacity.max(1), speriod.max(1))],
            sorts: 0,
        }
    }

    /// Keep no appended-region index (the pool could not spare its bytes): lookups scan
    /// the appended region, as in the paper.
    pub fn without_index(mut self) -> Opq {
        self.index = Vec::new();
        self
    }

    /// The first index slot to probe for `key` (Fibonacci hashing).
    fn home(&self, key: u64) -> usize {
        let bits = self.index.len().trailing_zeros();
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
    }

    /// Record appended entry `pos` in the index (it is the newest of its key).
    fn index_insert(&mut self, pos: usize) {
        let mask = self.index.len() - 1;
        let key = self.entries[pos].key;
        let mut h = self.home(key);
        loop {
            match self.index[h] {
                0 => break,
                p if self.entries[p as usize - 1].key == key => break,
                _ => h = (h + 1) & mask,
            }
        }
        self.index[h] = pos as u32 + 1;
    }

    /// Index every entry of the appended region again (after entries moved).
    fn reindex(&mut self) {
        if self.index.is_empty() {
            return;
        }
        self.index.fill(0);
        for pos in self.sorted..self.entries.len() {
            self.index_insert(pos);
        }
    }

    /// The newest appended entry of `key`.
    fn appended(&self, key: u64) -> Option<OpqEntry> {
        if self.index.is_empty() {
            return self.entries[self.sorted..]
                .iter()
                .rev()
                .find(|e| e.key == key)
                .copied();
        }
        let mask = self.index.len() - 1;
        let mut h = self.home(key);
        loop {
            match self.index[h] {
                0 => return None,
                p if self.entries[p as usize - 1].key == key => {
                    return Some(self.entries[p as usize - 1])
                }
                _ => h = (h + 1) & mask,
            }
        }
    }

    /// Point entries held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Neither point entries nor range tombstones.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.tombs.is_empty()
    }

    /// Slots in use: point entries and range tombstones.
    pub fn used(&self) -> usize {
        self.entries.len() + self.tombs.len()
    }

    /// The range tombstones.
    pub fn tombs(&self) -> &Tombs {
        &self.tombs
    }

    /// Bytes held: the entry array as allocated, its index and the tombstones.
    pub fn memory_bytes(&self) -> u64 {
        self.entries.capacity() as u64 * super::PIO_OPQ_ENTRY_BYTES
            + self.index.len() as u64 * 4
            + self.tombs.memory_bytes()
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Entries of the sorted region.
    #[cfg(test)]
    pub fn sorted_len(&self) -> usize {
        self.sorted
    }

    /// Point entries and tombstones fill the capacity.
    pub fn is_full(&self) -> bool {
        self.used() >= self.capacity
    }

    /// The OPQ is not full and one more point entry does not grow its array
    /// ([`SharedOpq::append_shared`]).
    fn room_for_shared_append(&self) -> bool {
        !self.is_full() && self.entries.len() < self.entries.capacity()
    }

    /// Delete `[lo, hi]` (`lo <= hi`): drop the point entries of the range from both
    /// regions (older than the new tombstone), then add the interval.
    pub fn delete_range(&mut self, lo: u64, hi: u64) {
        let from = self.entries[..self.sorted].partition_point(|e| e.key < lo);
        let to = from + self.entries[from..self.sorted].partition_point(|e| e.key <= hi);
        self.entries.drain(from..to);
        self.sorted -= to - from;
        let (sorted, mut i) = (self.sorted, 0);
        self.entries.retain(|e| {
            i += 1;
            i <= sorted || !(lo..=hi).contains(&e.key)
        });
        self.reindex();
        self.tombs.add(lo, hi);
    }

    /// Remove and return the range tombstones (applied to the tree before any point batch).
    pub fn take_tombs(&mut self) -> Tombs {
        std::mem::take(&mut self.tombs)
    }

    /// Free the entry array of an empty OPQ (after a flush): its bytes go back to the
    /// pool's share of the budget. The batch cursor starts again at the smallest keys, as
    /// in an OPQ just opened: a checkpoint ends with this flush, so the run after it and a
    /// recovery's replay of the same operations take the same batches, and so split the
    /// same leaves and allocate the same pages. (With the cursor left where the flush
    /// left it, the replay took other batches and could meet a full device where the run
    /// had not: an index that filled its device then failed to open.)
    pub fn release(&mut self) {
        if self.is_empty() {
            self.entries = Vec::new();
            self.cursor = 0;
        }
    }

    /// Append an entry; sort when a sort period has passed.
    pub fn push(&mut self, e: OpqEntry) {
        let len = self.entries.len();
        if len == self.entries.capacity() {
            let step = (len / 8).max(GROW_ENTRIES);
            self.entries
                .reserve_exact(step.min(self.capacity.saturating_sub(len)).max(1));
        }
        self.entries.push(e);
        if !self.index.is_empty() {
            self.index_insert(self.entries.len() - 1);
        }
        self.since_sort += 1;
        if self.since_sort >= self.speriod {
            self.sort();
        }
    }

    /// Sort the appended region and merge it into the sorted region (§3.1.3). Within the
    /// appended region the newest entry of a key is kept; on equal keys the appended entry
    /// (newer) replaces the sorted one.
    pub fn sort(&mut self) {
        self.since_sort = 0;
        if self.sorted == self.entries.len() {
            return;
        }
        self.sorts += 1;
        self.index.fill(0);
        // The appended region, sorted, newest entry per key; then merged into the sorted
        // region from the back, in the array's own room (it held the appended region).
        let mut newest: Vec<OpqEntry> = self.entries.drain(self.sorted..).collect();
        // Stable: equal keys keep append order; keep the last of each run (the kept first
        // slot takes each later entry's value).
        newest.sort_by_key(|e| e.key);
        newest.dedup_by(|later, kept| {
            let same = later.key == kept.key;
            if same {
                *kept = *later;
            }
            same
        });
        let (h, t) = (self.entries.len(), newest.len());
        let filler = OpqEntry {
            key: 0,
            value: 0,
            op: Op::Put,
        };
        self.entries.resize(h + t, filler);
        let e = &mut self.entries;
        // Invariant: e[..i] is the sorted region not yet merged, newest[..j] the appended
        // entries not yet merged, e[w..] the merged tail; w >= i + j.
        let (mut i, mut j, mut w) = (h, t, h + t);
        while j > 0 {
            let b = newest[j - 1];
            w -= 1;
            match i.checked_sub(1).map(|a| e[a].key) {
                Some(k) if k > b.key => {
                    e[w] = e[i - 1];
                    i -= 1;
                }
                Some(k) if k == b.key => {
                    // The appended (newer) entry replaces the sorted one.
                    e[w] = b;
                    i -= 1;
                    j -= 1;
                }
                _ => {
                    e[w] = b;
                    j -= 1;
                }
            }
        }
        // e[..i] stays where it is; keys that met in both regions left a gap e[i..w).
        e.drain(i..w);
        self.sorted = self.entries.len();
    }

    /// The newest entry of `key`: the appended region (its index, or a scan from its end
    /// as in §3.1.3), then a binary search of the sorted region; else a delete if a range
    /// tombstone covers `key`; else `None` (the tree decides).
    pub fn lookup(&self, key: u64) -> Option<OpqEntry> {
        self.point(key).or_else(|| {
            self.tombs.covers(key).then_some(OpqEntry {
                key,
                value: 0,
                op: Op::Delete,
            })
        })
    }

    /// The newest entry of `key` in the sorted region alone, and in the appended region
    /// alone: the two halves of a lookup, for the model check of a broken one.
    #[cfg(all(test, flashix_shuttle))]
    pub fn halves(&self, key: u64) -> (Option<OpqEntry>, Option<OpqEntry>) {
        let head = &self.entries[..self.sorted];
        let sorted = head
            .binary_search_by_key(&key, |e| e.key)
            .ok()
            .map(|i| head[i]);
        (sorted, self.appended(key))
    }

    /// The newest point entry of `key`.
    fn point(&self, key: u64) -> Option<OpqEntry> {
        if let Some(e) = self.appended(key) {
            return Some(e);
        }
        let head = &self.entries[..self.sorted];
        head.binary_search_by_key(&key, |e| e.key)
            .ok()
            .map(|i| head[i])
    }

    /// The newest point entry of every key in `[lo, hi]` (the tombstones: [`Opq::tombs`]).
    pub fn range(&self, lo: u64, hi: u64) -> BTreeMap<u64, OpqEntry> {
        let head = &self.entries[..self.sorted];
        let from = head.partition_point(|e| e.key < lo);
        let mut out: BTreeMap<u64, OpqEntry> = head[from..]
            .iter()
            .take_while(|e| e.key <= hi)
            .map(|e| (e.key, *e))
            .collect();
        for e in &self.entries[self.sorted..] {
            if (lo..=hi).contains(&e.key) {
                out.insert(e.key, *e);
            }
        }
        out
    }

    /// Remove and return up to `bcnt` entries, one per key, sorted by key: a contiguous
    /// key range starting at the round-robin cursor (wrapping to the smallest keys), so
    /// that every key range is flushed in turn (§3.1.3 "batch count").
    pub fn take_batch(&mut self, bcnt: usize) -> Vec<OpqEntry> {
        self.sort();
        let n = self.entries.len();
        let mut from = self.entries.partition_point(|e| e.key < self.cursor);
        if from >= n {
            from = 0;
        }
        let want = bcnt.max(1);
        let to = (from + want).min(n);
        let mut batch: Vec<OpqEntry> = self.entries.drain(from..to).collect();
        let mut last = batch.last().map(|e| e.key);
        // Short of bcnt at the top of the key space: wrap around to the smallest keys.
        let more = (want - batch.len()).min(from);
        if more > 0 {
            let low: Vec<OpqEntry> = self.entries.drain(..more).collect();
            last = low.last().map(|e| e.key);
            batch.splice(0..0, low);
        }
        self.sorted = self.entries.len();
        self.cursor = last.and_then(|k| k.checked_add(1)).unwrap_or(0);
        batch
    }

    /// Every entry of `lo..=hi` in memory order (for integrity checks).
    pub fn sorted_region(&self) -> &[OpqEntry] {
        &self.entries[..self.sorted]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(key: u64, value: u64) -> OpqEntry {
        OpqEntry {
            key,
            value,
            op: Op::Put,
        }
    }

    /// The in-place sort against a map of the newest entry per key, over many sorts with
    /// keys repeated in and across both regions; the array grows with the entries (never
    /// past the capacity) and a drained OPQ releases it.
    #[test]
    fn in_place_sorts_keep_the_newest_entry_and_memory_follows_the_entries() {
        let cap = 20_000;
        let mut q = Opq::new(cap, 7);
        assert_eq!(q.memory_bytes(), 0);
        let mut model = std::collections::BTreeMap::new();
        let mut x = 12345u64;
        for i in 0..15_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let e = put(x % 3_000, i);
            q.push(e);
            model.insert(e.key, e);
            assert!(q.len() <= q.entries.capacity() && q.entries.capacity() <= cap);
        }
        q.sort();
        let got: Vec<OpqEntry> = q.sorted_region().to_vec();
        let want: Vec<OpqEntry> = model.values().copied().collect();
        assert_eq!(got, want);
        assert!(q.memory_bytes() >= got.len() as u64 * crate::engine::pio::PIO_OPQ_ENTRY_BYTES);
        assert!(q.memory_bytes() < cap as u64 * crate::engine::pio::PIO_OPQ_ENTRY_BYTES);
        while !q.is_empty() {
            q.take_batch(1000);
        }
        q.release();
        assert_eq!(q.memory_bytes(), q.index.len() as u64 * 4);
    }

    #[test]
    fn newest_wins_across_regions_and_sorts() {
        let mut q = Opq::new(100, 3);
        q.push(put(5, 1));
        q.push(put(2, 1));
        q.push(put(5, 2)); // third append: sorted now
        assert_eq!(q.sorted_len(), 2);
        assert_eq!(q.lookup(5), Some(put(5, 2)));
        q.push(OpqEntry {
            key: 2,
            value: 0,
            op: Op::Delete,
        });
        assert_eq!(q.lookup(2).map(|e| e.op), Some(Op::Delete));
        assert_eq!(q.sorted_len(), 2);
        q.push(put(u64::MAX, 7));
        q.push(put(0, 8));
        assert_eq!(q.sorted_len(), 4);
        let r = q.range(0, 5);
        assert_eq!(r.keys().copied().collect::<Vec<_>>(), vec![0, 2, 5]);
        assert_eq!(q.lookup(3), None);
    }

    #[test]
    fn batches_rotate_over_the_key_space() {
        let mut q = Opq::new(100, 1000);
        for k in [9u64, 1, 5, 3, 7] {
            q.push(put(k, k));
        }
        let b: Vec<u64> = q.take_batch(2).iter().map(|e| e.key).collect();
        assert_eq!(b, vec![1, 3]);
        let b: Vec<u64> = q.take_batch(2).iter().map(|e| e.key).collect();
        assert_eq!(b, vec![5, 7]);
        q.push(put(2, 2));
        // 9 is the last key: the batch wraps around to 2, and is still sorted.
        let b: Vec<u64> = q.take_batch(2).iter().map(|e| e.key).collect();
        assert_eq!(b, vec![2, 9]);
        assert!(q.is_empty());
        for k in [4u64, 8, 1] {
            q.push(put(k, k));
        }
        // The cursor is past 2: 4 and 8 first, then 1.
        let b: Vec<u64> = q.take_batch(5).iter().map(|e| e.key).collect();
        assert_eq!(b, vec![1, 4, 8]);
    }

    #[test]
    fn a_range_delete_drops_the_older_entries_and_takes_a_slot() {
        let mut q = Opq::new(10, 3);
        for k in [1u64, 5, 9] {
            q.push(put(k, k)); // sorted after the third
        }
        q.push(put(6, 60)); // appended region
        q.push(put(20, 20));
        assert_eq!((q.sorted_len(), q.len()), (3, 5));
        q.delete_range(5, 10);
        // 5 and 9 (sorted region) and 6 (appended region) are older: gone.
        assert_eq!((q.sorted_len(), q.len(), q.used()), (1, 2, 3));
        assert_eq!(q.lookup(6).map(|e| e.op), Some(Op::Delete));
        assert_eq!(q.lookup(10).map(|e| e.op), Some(Op::Delete));
        assert_eq!(q.lookup(11), None);
        assert_eq!(q.lookup(1), Some(put(1, 1)));
        // A newer put inside the tombstone wins over it.
        q.push(put(7, 70));
        assert_eq!(q.lookup(7), Some(put(7, 70)));
        assert_eq!(
            q.range(0, 100).keys().copied().collect::<Vec<_>>(),
            vec![1, 7, 20]
        );
        q.delete_range(11, 12); // coalesces with [5, 10]: still one slot
        assert_eq!(q.tombs().len(), 1);
        q.delete_range(30, 30);
        assert_eq!(q.used(), 3 + 2);
        for k in 40..45 {
            q.push(put(k, k));
        }
        assert!(q.is_full());
        let t = q.take_tombs();
        assert_eq!(t.iter().collect::<Vec<_>>(), vec![(5, 12), (30, 30)]);
        assert!(!q.is_full() && !q.is_empty());
    }

    /// The appended region's hash index answers as the paper's linear scan does: a model of
    /// the newest point entry per key and the tombstones, through pushes, sorts, range
    /// deletes and batches, on an OPQ large enough to keep the index.
    #[test]
    fn the_appended_index_answers_as_the_scan() {
        let mut q = Opq::new(3_000, 1_000);
        assert!(!q.index.is_empty());
        let mut rng = crate::util::Rng::new(5);
        let mut model: BTreeMap<u64, OpqEntry> = BTreeMap::new();
        let mut tombs = Tombs::new();
        for step in 0..40_000u64 {
            let k = rng.below(2_500);
            match rng.below(100) {
                0 => {
                    let hi = k + rng.below(40);
                    q.delete_range(k, hi);
                    model.retain(|&key, _| !(k..=hi).contains(&key));
                    tombs.add(k, hi);
                }
                1..=3 => {
                    for e in q.take_batch(1 + rng.below(500) as usize) {
                        assert_eq!(model.remove(&e.key), Some(e));
                    }
                }
                4 => {
                    q.take_tombs();
                    tombs = Tombs::new();
                }
                5..=30 => {
                    let e = OpqEntry {
                        key: k,
                        value: 0,
                        op: Op::Delete,
                    };
                    q.push(e);
                    model.insert(k, e);
                }
                _ => {
                    q.push(put(k, step));
                    model.insert(k, put(k, step));
                }
            }
            if q.is_full() {
                for e in q.take_batch(1_000) {
                    assert_eq!(model.remove(&e.key), Some(e));
                }
            }
            let probe = rng.below(2_600);
            let want = model.get(&probe).copied().or_else(|| {
                tombs.covers(probe).then_some(OpqEntry {
                    key: probe,
                    value: 0,
                    op: Op::Delete,
                })
            });
            assert_eq!(q.lookup(probe), want, "key {probe} at step {step}");
        }
        assert!(q.sorts > 10);
    }

    #[test]
    fn the_index_is_kept_only_for_long_appended_regions() {
        // A short appended region has no index.
        assert_eq!(Opq::new(170, 5000).index.len(), 0);
        assert_eq!(index_bytes(100_000, 100), 0);
        assert_eq!(index_bytes(511, 5000), 0);
        // 4/3 of the longest region (speriod + 1), a power of two: 8192 slots at 5000.
        assert_eq!(Opq::new(21_845, 5000).index.len(), 8192);
        assert_eq!(index_bytes(21_845, 5000), 8192 * 4);
        // At most an eighth of the entries' bytes: 1,000 entries would need 2048 slots.
        assert_eq!(index_bytes(1_000, 5000), 0);
        assert_eq!(index_bytes(3_000, 1_000), 2048 * 4);
        // The entries are allocated as they come, GROW_ENTRIES at first; the index at once.
        let mut q = Opq::new(21_845, 5000);
        assert_eq!(q.memory_bytes(), 8192 * 4);
        q.push(OpqEntry {
            key: 1,
            value: 1,
            op: Op::Put,
        });
        assert_eq!(q.memory_bytes(), GROW_ENTRIES as u64 * 24 + 8192 * 4);
    }
}
