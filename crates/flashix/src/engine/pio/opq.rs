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
//! Memory: `capacity` entries of [`crate::PIO_OPQ_ENTRY_BYTES`] bytes, allocated up front;
//! a tombstone takes one of the `capacity` slots (16 bytes held, charged to the OPQ's
//! `memory_bytes`), so a full OPQ counts both.

use crate::kit::sorted::tombs::Tombs;
use std::collections::BTreeMap;

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
    pub sorts: u64,
}

impl Opq {
    /// An empty OPQ of `capacity` entries, sorted every `speriod` appends.
    pub fn new(capacity: usize, speriod: usize) -> Opq {
        Opq {
            entries: Vec::with_capacity(capacity),
            sorted: 0,
            capacity: capacity.max(1),
            speriod: speriod.max(1),
            since_sort: 0,
            cursor: 0,
            tombs: Tombs::new(),
            sorts: 0,
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

    /// Bytes held: the entry array and the tombstones.
    pub fn memory_bytes(&self) -> u64 {
        self.entries.capacity().max(self.capacity) as u64 * crate::PIO_OPQ_ENTRY_BYTES
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
        self.tombs.add(lo, hi);
    }

    /// Remove and return the range tombstones (applied to the tree before any point batch).
    pub fn take_tombs(&mut self) -> Tombs {
        std::mem::take(&mut self.tombs)
    }

    /// Append an entry; sort when a sort period has passed.
    pub fn push(&mut self, e: OpqEntry) {
        self.entries.push(e);
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
        let mut tail: Vec<OpqEntry> = self.entries.split_off(self.sorted);
        // Stable: equal keys keep append order; keep the last of each run.
        tail.sort_by_key(|e| e.key);
        let mut newest: Vec<OpqEntry> = Vec::with_capacity(tail.len());
        for e in tail {
            match newest.last_mut() {
                Some(l) if l.key == e.key => *l = e,
                _ => newest.push(e),
            }
        }
        let head = std::mem::take(&mut self.entries);
        let mut merged = Vec::with_capacity(self.capacity.max(head.len() + newest.len()));
        let (mut i, mut j) = (0, 0);
        while i < head.len() || j < newest.len() {
            match (head.get(i), newest.get(j)) {
                (Some(a), Some(b)) if a.key == b.key => {
                    merged.push(*b);
                    i += 1;
                    j += 1;
                }
                (Some(a), Some(b)) if a.key < b.key => {
                    merged.push(*a);
                    i += 1;
                }
                (Some(_), Some(b)) | (None, Some(b)) => {
                    merged.push(*b);
                    j += 1;
                }
                (Some(a), None) => {
                    merged.push(*a);
                    i += 1;
                }
                (None, None) => break,
            }
        }
        self.sorted = merged.len();
        self.entries = merged;
    }

    /// The newest entry of `key`: a linear scan of the appended region from its end, then
    /// a binary search of the sorted region (§3.1.3); else a delete if a range tombstone
    /// covers `key`; else `None` (the tree decides).
    pub fn lookup(&self, key: u64) -> Option<OpqEntry> {
        self.point(key).or_else(|| {
            self.tombs.covers(key).then_some(OpqEntry {
                key,
                value: 0,
                op: Op::Delete,
            })
        })
    }

    /// The newest point entry of `key`.
    fn point(&self, key: u64) -> Option<OpqEntry> {
        if let Some(e) = self.entries[self.sorted..]
            .iter()
            .rev()
            .find(|e| e.key == key)
        {
            return Some(*e);
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
}
