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
    let n = checked_count(b, cap)?;
    let mut out = Vec::with_capacity(n);
    decode_into(b, n, &mut out)?;
    Ok(out)
}

/// Append the page's first `n` entries (`n` checked by the caller) to `out`: one tight
/// loop over the slots (merges and scans decode every entry they read; an iterator of
/// `Result`s collected cost ~50 ns an entry, this a few).
#[inline]
pub fn decode_into(b: &[u8], n: usize, out: &mut Vec<Entry>) -> Result<(), String> {
    out.reserve(n);
    let slots = b
        .get(ENTRIES..ENTRIES + n * ENTRY)
        .ok_or_else(|| format!("entry count {n} beyond the page"))?;
    for (i, s) in slots.chunks_exact(ENTRY).enumerate() {
        let kind =
            Kind::from_byte(s[16]).ok_or_else(|| format!("entry {i} has an invalid type"))?;
        out.push(Entry {
            key: read_u64(s, 0),
            val: read_u64(s, 8),
            kind,
        });
    }
    Ok(())
}

/// What one page of a level says about `key` (a point search's step, §3.3 Algorithm 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// The page's index entry of `key` (normal or filter), met before any fence below it.
    Entry(Entry),
    /// The page id of the nearest fence at or below `key`: the next level's page to read.
    Fence(u64),
    /// No fence at or below `key` in the page (Invariant 1 broken, or `key` below the
    /// page's first entry).
    Neither,
}

/// Point-search step inside a page's bytes, without decoding the page: a binary search on
/// the keys for the last entry at or below `index_pos(key)`, then a backward scan to the
/// first fence or the index entry of `key` (the scan stops at the first fence, so it reads
/// a few entries at most). Decodes only the entries it reads; `Err` names a bad count or
/// a bad type among them.
pub fn probe(b: &[u8], cap: usize, key: u64) -> Result<Probe, String> {
    let n = checked_count(b, cap)?;
    let end = partition(b, n, index_pos(key))?;
    for i in (0..end).rev() {
        let e = get(b, i).ok_or_else(|| format!("entry {i} has an invalid type"))?;
        if e.is_fence() {
            return Ok(Probe::Fence(e.val));
        }
        if e.key == key {
            return Ok(Probe::Entry(e));
        }
    }
    Ok(Probe::Neither)
}

/// The entry count, checked against the page's capacity.
#[inline]
pub fn checked_count(b: &[u8], cap: usize) -> Result<usize, String> {
    let n = count(b);
    if n > cap {
        return Err(format!("entry count {n} above capacity {cap}"));
    }
    Ok(n)
}

/// How many of the page's first `n` entries sort at or below `pos` (they are sorted by
/// [`Entry::pos`]): a binary search on the bytes that reads an entry's type only where its
/// key equals `pos`'s.
#[inline]
pub fn partition(b: &[u8], n: usize, pos: (u64, u8)) -> Result<usize, String> {
    bisect(b, n, pos, false)
}

/// Where `pos` is among the page's first `n` entries, as [`slice::binary_search`] says it:
/// `Ok(slot)` of the entry at exactly `pos`, or `Err(slot)` where it would be inserted. The
/// same binary search on the bytes as [`partition`].
#[inline]
pub fn search(b: &[u8], n: usize, pos: (u64, u8)) -> Result<Result<usize, usize>, String> {
    let i = bisect(b, n, pos, true)?;
    let here = i < n && read_u64(b, ENTRIES + i * ENTRY) == pos.0 && rank_at(b, i)? == pos.1;
    Ok(if here { Ok(i) } else { Err(i) })
}

/// The rank ([`Entry::pos`]'s second part) of slot `i`'s entry.
#[inline]
fn rank_at(b: &[u8], i: usize) -> Result<u8, String> {
    Kind::from_byte(b[ENTRIES + i * ENTRY + 16])
        .map(Kind::rank)
        .ok_or_else(|| format!("entry {i} has an invalid type"))
}

/// How many of the first `n` entries sort below `pos` (`strict`) or at or below it.
#[inline]
fn bisect(b: &[u8], n: usize, pos: (u64, u8), strict: bool) -> Result<usize, String> {
    let (mut lo, mut hi) = (0usize, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let key = read_u64(b, ENTRIES + mid * ENTRY);
        let before = if key != pos.0 {
            key < pos.0
        } else {
            let rank = rank_at(b, mid)?;
            if strict {
                rank < pos.1
            } else {
                rank <= pos.1
            }
        };
        if before {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    Ok(lo)
}

/// The value (page) of the last fence among the page's first `end` entries, if any.
pub fn fence_before(b: &[u8], end: usize) -> Result<Option<u64>, String> {
    for i in (0..end).rev() {
        let e = get(b, i).ok_or_else(|| format!("entry {i} has an invalid type"))?;
        if e.is_fence() {
            return Ok(Some(e.val));
        }
    }
    Ok(None)
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

/// Complete a page whose first `n` slots were written with [`set`]: the header, and zeros
/// after the entries (the same bytes as [`init`] with those entries).
#[inline]
pub fn finish_page(b: &mut [u8], kind: u16, level: u32, link: u64, n: usize) {
    b[ENTRIES + n * ENTRY..].fill(0);
    b[page::HEADER..ENTRIES].fill(0);
    page::set_kind(b, kind);
    write_u32(b, COUNT, n as u32);
    write_u32(b, LEVEL, level);
    set_link(b, link);
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

    /// A page built slot by slot in a buffer holding stale bytes (a merge's reused chunk)
    /// and completed by `finish_page` has exactly the bytes `init` writes.
    #[test]
    fn a_page_built_in_place_has_the_bytes_init_writes() {
        let es: Vec<Entry> = (0..7u64)
            .map(|i| {
                Entry::new(
                    i * 3,
                    i ^ 5,
                    if i % 3 == 0 {
                        Kind::External
                    } else {
                        Kind::Normal
                    },
                )
            })
            .collect();
        let mut want = vec![0u8; 512];
        init(&mut want, KIND_RUN, 2, 99, &es);
        let mut got = vec![0xABu8; 512];
        for (i, &e) in es.iter().enumerate() {
            set(&mut got, i, e);
        }
        finish_page(&mut got, KIND_RUN, 2, 99, es.len());
        // The kind and the payload (the envelope's other bytes are the pager's and seal's).
        assert_eq!(got[12..14], want[12..14]);
        assert_eq!(got[page::HEADER..], want[page::HEADER..]);
        assert_eq!(decode(&got, capacity(512)).unwrap(), es);
    }

    /// The point-search step as the decoded page gives it: the greatest entry at or below
    /// `index_pos(key)`, then back to the first fence or `key`'s index entry.
    fn probe_by_decoding(es: &[Entry], key: u64) -> Probe {
        let end = es.partition_point(|e| e.pos() <= index_pos(key));
        for e in es[..end].iter().rev() {
            if e.is_fence() {
                return Probe::Fence(e.val);
            }
            if e.key == key {
                return Probe::Entry(*e);
            }
        }
        Probe::Neither
    }

    proptest! {
        /// `probe` on the bytes equals the step on the decoded page, for sorted pages of
        /// fences and index entries (a level's order: key, fences first; one index entry
        /// a key) and any probed key, including keys of the page and its neighbours.
        #[test]
        fn probe_in_place_equals_the_decoded_step(
            raw in proptest::collection::vec((0u64..200, 0u8..4), 0..20),
            probes in proptest::collection::vec(0u64..210, 1..30),
        ) {
            let kinds = [Kind::Normal, Kind::Filter, Kind::Internal, Kind::External];
            let mut es: Vec<Entry> =
                raw.iter().map(|&(k, t)| Entry::new(k, k * 7 + u64::from(t), kinds[t as usize])).collect();
            es.sort_by_key(|e| e.pos());
            es.dedup_by_key(|e| e.pos());
            let mut b = vec![0u8; 512];
            init(&mut b, KIND_RUN, 0, NONE, &es);
            for key in probes {
                prop_assert_eq!(probe(&b, capacity(512), key).unwrap(), probe_by_decoding(&es, key));
            }
        }
    }

    #[test]
    fn probe_reports_a_bad_count_and_a_bad_type_it_reads() {
        let es = [
            Entry::new(5, 1, Kind::External),
            Entry::new(9, 2, Kind::Normal),
        ];
        let mut b = vec![0u8; 512];
        init(&mut b, KIND_RUN, 0, NONE, &es);
        assert_eq!(probe(&b, capacity(512), 9).unwrap(), Probe::Entry(es[1]));
        assert_eq!(probe(&b, capacity(512), 7).unwrap(), Probe::Fence(1));
        assert_eq!(probe(&b, capacity(512), 4).unwrap(), Probe::Neither);
        b[ENTRIES + ENTRY + 16] = 9;
        assert!(probe(&b, capacity(512), 9).unwrap_err().contains("entry 1"));
        write_u32(&mut b, COUNT, 1000);
        assert!(probe(&b, capacity(512), 9)
            .unwrap_err()
            .contains("count 1000"));
    }

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

    /// Hostile bytes (crate::hostile): a damaged sorted-entry page decodes, or the decoder
    /// and the in-page probe name what is wrong; neither panics.
    #[test]
    fn hostile_entry_pages_decode_or_are_refused() {
        let es = [
            Entry::new(5, 1, Kind::External),
            Entry::new(9, 2, Kind::Normal),
            Entry::new(u64::MAX, 3, Kind::Normal),
        ];
        let mut valid = vec![0u8; 512];
        init(&mut valid, KIND_RUN, 0, NONE, &es);
        crate::hostile::fuzz_page("sorted entries", 4, &valid, |b| {
            let _ = decode(b, capacity(512));
            for key in [0, 5, 9, u64::MAX] {
                let _ = probe(b, capacity(512), key);
            }
            Ok(())
        });
    }
}
