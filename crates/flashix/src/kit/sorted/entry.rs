//! FD-tree entries and the page format shared by sorted-run pages and head-tree nodes.
//!
//! ```text
//! offset  size  field
//! 0       16    page envelope (crate::page): crc32c, page id, kind
//!               (KIND_RUN, KIND_HEAD_LEAF, KIND_HEAD_INTERNAL)
//! 16      4     entry count n
//! 20      4     head-tree node level (0 = leaf; 0 in run pages)
//! 24      8     head leaf: next leaf (NONE at the end); head internal: leftmost child;
//!               run page: NONE
//! 32      24*n  entries: key u64, value u64, type u8, 7 zero bytes
//! ```
//!
//! The type is kept outside the key (§3.2: key, rid/pid, type), so every u64 is a valid
//! user key. In head-tree internal nodes an entry is a separator: key, child page, and the
//! type of the separating entry (separators compare by key, then fences before index
//! entries, like the leaf entries they separate).

use crate::page::{self, read_u32, read_u64, write_u32, write_u64};

pub const KIND_RUN: u16 = 0x11;
pub const KIND_HEAD_LEAF: u16 = 0x12;
pub const KIND_HEAD_INTERNAL: u16 = 0x13;
/// No page: end of the head's leaf chain, or a fence below which no lower level holds keys.
pub const NONE: u64 = u64::MAX;

const COUNT: usize = page::HEADER;
const LEVEL: usize = page::HEADER + 4;
const LINK: usize = page::HEADER + 8;
const ENTRIES: usize = page::HEADER + 16;
const ENTRY: usize = 24;

/// The role of an entry (§3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// An index entry holding a value.
    Normal,
    /// A filter entry: the key is deleted in every older level (its phantoms).
    Filter,
    /// A fence whose key comes from the same level (first index entry of a page).
    Internal,
    /// A fence whose key is the first key of a page of the next level.
    External,
}

impl Kind {
    fn byte(self) -> u8 {
        match self {
            Kind::Normal => 1,
            Kind::Filter => 2,
            Kind::Internal => 3,
            Kind::External => 4,
        }
    }

    fn from_byte(b: u8) -> Option<Kind> {
        Some(match b {
            1 => Kind::Normal,
            2 => Kind::Filter,
            3 => Kind::Internal,
            4 => Kind::External,
            _ => return None,
        })
    }

    /// Fences (internal or external) point to a page of the next level.
    #[inline]
    pub fn is_fence(self) -> bool {
        matches!(self, Kind::Internal | Kind::External)
    }

    /// Order among entries of equal key: fences first, so that the fence at the start of a
    /// page precedes the index entry it was copied from.
    fn rank(self) -> u8 {
        u8::from(!self.is_fence())
    }
}

/// One entry: key, value (index entries) or page id (fences), and type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub key: u64,
    pub val: u64,
    pub kind: Kind,
}

impl Entry {
    #[inline]
    pub fn new(key: u64, val: u64, kind: Kind) -> Self {
        Entry { key, val, kind }
    }

    /// Sort position within a level: key, then fences before index entries.
    #[inline]
    pub fn pos(&self) -> (u64, u8) {
        (self.key, self.kind.rank())
    }

    #[inline]
    pub fn is_fence(&self) -> bool {
        self.kind.is_fence()
    }
}

/// Position of the index entry of `key` (and of anything sorting at or below it).
#[inline]
pub fn index_pos(key: u64) -> (u64, u8) {
    (key, 1)
}

/// Entries per page: f in the paper (20 for 512-byte pages, 169 for 4 KiB).
#[inline]
pub fn capacity(page_size: usize) -> usize {
    (page_size - ENTRIES) / ENTRY
}

#[inline]
pub fn count(b: &[u8]) -> usize {
    read_u32(b, COUNT) as usize
}

#[inline]
pub fn level(b: &[u8]) -> u32 {
    read_u32(b, LEVEL)
}

#[inline]
pub fn link(b: &[u8]) -> u64 {
    read_u64(b, LINK)
}

#[inline]
pub fn set_link(b: &mut [u8], v: u64) {
    write_u64(b, LINK, v)
}

/// Entry `i`; `None` if its type byte is invalid (corruption).
#[inline]
pub fn get(b: &[u8], i: usize) -> Option<Entry> {
    let off = ENTRIES + i * ENTRY;
    Some(Entry {
        key: read_u64(b, off),
        val: read_u64(b, off + 8),
        kind: Kind::from_byte(b[off + 16])?,
    })
}

#[inline]
pub fn set(b: &mut [u8], i: usize, e: Entry) {
    let off = ENTRIES + i * ENTRY;
    write_u64(b, off, e.key);
    write_u64(b, off + 8, e.val);
    b[off + 16..off + ENTRY].fill(0);
    b[off + 16] = e.kind.byte();
}

/// Decode all entries of a page checked by the caller's envelope check; `Err` names the
/// first bad slot.
#[inline]
pub fn decode(b: &[u8], cap: usize) -> Result<Vec<Entry>, String> {
    let n = count(b);
    if n > cap {
        return Err(format!("entry count {n} above capacity {cap}"));
    }
    (0..n)
        .map(|i| get(b, i).ok_or_else(|| format!("entry {i} has an invalid type")))
        .collect()
}

/// Rewrite a page from scratch.
#[inline]
pub fn init(b: &mut [u8], kind: u16, level: u32, link: u64, entries: &[Entry]) {
    b[page::HEADER..].fill(0);
    page::set_kind(b, kind);
    write_u32(b, COUNT, entries.len() as u32);
    write_u32(b, LEVEL, level);
    set_link(b, link);
    for (i, &e) in entries.iter().enumerate() {
        set(b, i, e);
    }
}

/// Insert at slot `i` (room checked by the caller).
#[inline]
pub fn insert_at(b: &mut [u8], i: usize, e: Entry) {
    let n = count(b);
    page::open_slot(b, ENTRIES, ENTRY, n, i);
    set(b, i, e);
    write_u32(b, COUNT, (n + 1) as u32);
}

/// Remove slot `i`.
#[inline]
pub fn remove_at(b: &mut [u8], i: usize) {
    let n = count(b);
    page::close_slot(b, ENTRIES, ENTRY, n, i);
    write_u32(b, COUNT, (n - 1) as u32);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn entries_round_trip_with_any_key_and_value(
            es in proptest::collection::vec((any::<u64>(), any::<u64>(), 0u8..4), 0..20)
        ) {
            let kinds = [Kind::Normal, Kind::Filter, Kind::Internal, Kind::External];
            let es: Vec<Entry> = es.iter().map(|&(k, v, t)| Entry::new(k, v, kinds[t as usize])).collect();
            let mut b = vec![0u8; 512];
            init(&mut b, KIND_RUN, 0, NONE, &es);
            prop_assert_eq!(decode(&b, capacity(512)).unwrap(), es.clone());
            if !es.is_empty() {
                remove_at(&mut b, 0);
                insert_at(&mut b, 0, es[0]);
                prop_assert_eq!(decode(&b, capacity(512)).unwrap(), es);
            }
        }
    }

    #[test]
    fn capacity_matches_the_format() {
        assert_eq!(capacity(512), 20);
        assert_eq!(capacity(4096), 169);
    }
}
