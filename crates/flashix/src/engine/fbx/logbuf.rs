//! The log buffer (FBX paper §4.2): `log_buffer_pages` pages of log entries in memory, a
//! log entry going to the page chosen by the first `cluster_bits` bits of its key (after
//! `cluster_skip_bits`), so that entries of neighbouring cells share a page and a range
//! query finds them together. A page is appended to the file when it is full.
//!
//! A leaf's buffered entries live in one page only: while a leaf has entries in a page,
//! its later entries go to that page too, whatever their keys (a leaf whose key range
//! straddles two clusters would otherwise have entries in two pages flushed in either
//! order). So a leaf's log list, in flush order, is the order of its entries, and a
//! rebuild applies the list's pages in order, then the buffered entries.
//!
//! Each leaf's home (the bucket holding its entries) is kept in an array indexed by leaf
//! id, 4 bytes a node: node ids are dense, and with many leaves most have an entry
//! buffered, so a map would cost several times as much.

use crate::kit::ntt::unit::{self, Unit};
use std::collections::BTreeMap;

/// No bucket (a leaf with nothing buffered).
const NO_HOME: u32 = u32::MAX;

/// One page of the buffer: log entries grouped by leaf, in arrival order per leaf.
#[derive(Debug, Default, Clone)]
pub(crate) struct Bucket {
    pub groups: BTreeMap<u64, Vec<Unit>>,
    units: usize,
}

/// The log buffer.
#[derive(Debug, Clone)]
pub(crate) struct LogBuffer {
    page_size: usize,
    buckets: Vec<Bucket>,
    /// Leaf id -> the bucket holding its entries ([`NO_HOME`]: none).
    home: Vec<u32>,
    cluster_bits: u32,
    skip_bits: u32,
    units: usize,
}

impl LogBuffer {
    pub fn new(page_size: usize, pages: u32, cluster_bits: u32, skip_bits: u32) -> LogBuffer {
        LogBuffer {
            page_size,
            buckets: vec![Bucket::default(); pages.max(1) as usize],
            home: Vec::new(),
            cluster_bits,
            skip_bits,
            units: 0,
        }
    }

    /// The bucket of `key` by its cluster bits (§4.2), spread over the pages.
    pub fn cluster_of(&self, key: u64) -> usize {
        if self.cluster_bits == 0 {
            return 0;
        }
        let shifted = key.checked_shl(self.skip_bits).unwrap_or(0);
        let c = shifted >> (64 - self.cluster_bits);
        ((c as u128 * self.buckets.len() as u128) >> self.cluster_bits) as usize
    }

    /// The bucket an entry of `leaf` with `key` goes to.
    pub fn bucket_for(&self, leaf: u64, key: u64) -> usize {
        self.home_of(leaf).unwrap_or_else(|| self.cluster_of(key))
    }

    /// True when one more entry of `leaf` fits in bucket `b`'s page.
    pub fn fits(&self, b: usize, leaf: u64) -> bool {
        let bk = &self.buckets[b];
        let groups = bk.groups.len() + usize::from(!bk.groups.contains_key(&leaf));
        unit::fits(self.page_size, groups, bk.units + 1)
    }

    /// Buffer an entry of `leaf` in bucket `b` (the caller checked [`LogBuffer::fits`]).
    pub fn push(&mut self, b: usize, leaf: u64, u: Unit) {
        self.buckets[b].groups.entry(leaf).or_default().push(u);
        self.buckets[b].units += 1;
        self.units += 1;
        self.set_home(leaf, b as u32);
    }

    fn home_of(&self, leaf: u64) -> Option<usize> {
        let h = *self.home.get(usize::try_from(leaf).ok()?)?;
        (h != NO_HOME).then_some(h as usize)
    }

    /// Set or clear (`NO_HOME`) `leaf`'s home. `leaf` is a node id below the engine's
    /// next id (its descent checks it).
    fn set_home(&mut self, leaf: u64, b: u32) {
        let i = leaf as usize;
        if i >= self.home.len() {
            if b == NO_HOME {
                return;
            }
            if i >= self.home.capacity() {
                let more = (i + 1 - self.home.len()).max(self.home.len() / 8).max(16);
                self.home.reserve_exact(more);
            }
            self.home.resize(i + 1, NO_HOME);
        }
        self.home[i] = b;
    }

    /// The buffered entries of `leaf`, in arrival order.
    pub fn units(&self, leaf: u64) -> &[Unit] {
        match self.home_of(leaf) {
            Some(b) => self.buckets[b].groups.get(&leaf).map_or(&[], |v| v),
            None => &[],
        }
    }

    /// True when `leaf` has buffered entries.
    pub fn holds(&self, leaf: u64) -> bool {
        self.home_of(leaf).is_some()
    }

    /// Drop `leaf`'s buffered entries (folded into a page written whole).
    pub fn remove(&mut self, leaf: u64) {
        if let Some(b) = self.home_of(leaf) {
            self.set_home(leaf, NO_HOME);
            if let Some(v) = self.buckets[b].groups.remove(&leaf) {
                self.buckets[b].units -= v.len();
                self.units -= v.len();
            }
        }
    }

    /// Empty bucket `b`, returning its groups (leaf, entries), by leaf.
    pub fn take(&mut self, b: usize) -> Vec<(u64, Vec<Unit>)> {
        let bk = std::mem::take(&mut self.buckets[b]);
        self.units -= bk.units;
        for &leaf in bk.groups.keys() {
            self.set_home(leaf, NO_HOME);
        }
        bk.groups.into_iter().collect()
    }

    /// Buckets holding entries.
    pub fn non_empty(&self) -> Vec<usize> {
        (0..self.buckets.len())
            .filter(|&b| self.buckets[b].units > 0)
            .collect()
    }

    /// Entries buffered.
    pub fn len(&self) -> usize {
        self.units
    }

    /// Leaves with buffered entries, and the bucket of each.
    pub fn homes(&self) -> impl Iterator<Item = (u64, usize)> + '_ {
        self.home
            .iter()
            .enumerate()
            .filter(|(_, &b)| b != NO_HOME)
            .map(|(l, &b)| (l as u64, b as usize))
    }

    /// Bytes held: the pages of the buffer (its reserved share of the budget) and the map
    /// of homes.
    pub fn memory_bytes(&self) -> u64 {
        (self.buckets.len() * self.page_size + 4 * self.home.capacity()) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_cluster_bits_choose_the_page() {
        let b = LogBuffer::new(4096, 256, 8, 0);
        assert_eq!(b.cluster_of(0), 0);
        assert_eq!(b.cluster_of(0x01ff_ffff_ffff_ffff), 1);
        assert_eq!(b.cluster_of(u64::MAX), 255);
        // Fig. 4: 4 pages, the first two bits.
        let b = LogBuffer::new(4096, 4, 2, 0);
        assert_eq!(b.cluster_of(0b10 << 62), 2);
        // Skipped partition bits.
        let b = LogBuffer::new(4096, 4, 2, 2);
        assert_eq!(b.cluster_of(0b1101 << 60), 1);
        // Fewer pages than clusters: clusters spread evenly.
        let b = LogBuffer::new(4096, 3, 8, 0);
        assert_eq!(b.cluster_of(u64::MAX), 2);
        assert_eq!(LogBuffer::new(4096, 16, 0, 0).cluster_of(u64::MAX), 0);
    }

    #[test]
    fn a_leaf_keeps_one_bucket_until_it_is_flushed_or_removed() {
        let mut b = LogBuffer::new(512, 4, 2, 0);
        let hi = u64::MAX;
        assert_eq!(b.bucket_for(7, 0), 0);
        b.push(0, 7, Unit::Insert(0, 1));
        // A key of another cluster still goes to the leaf's bucket.
        assert_eq!(b.bucket_for(7, hi), 0);
        b.push(0, 7, Unit::Delete(hi));
        assert_eq!(b.units(7), &[Unit::Insert(0, 1), Unit::Delete(hi)]);
        assert_eq!(b.take(0).len(), 1);
        assert_eq!(b.bucket_for(7, hi), 3);
        assert_eq!(b.len(), 0);
        b.push(3, 7, Unit::Insert(hi, 2));
        b.remove(7);
        assert!(!b.holds(7));
        assert_eq!(b.len(), 0);
        // A page fills: 512-byte pages hold 28 units of one group.
        for i in 0..28 {
            assert!(b.fits(1, 9), "{i}");
            b.push(1, 9, Unit::Insert(i, i));
        }
        assert!(!b.fits(1, 9));
    }
}
