//! FD-tree entries and the page format shared by sorted-run pages and head-tree nodes.
//!
//! Two layouts ([`Layout`]); an index keeps the one it was created with (the FD-tree's and
//! the LSM-tree's engine state `packed`, format 7 on; absent: wide):
//!
//! ```text
//! wide (formats 1 to 6; kinds KIND_RUN, KIND_HEAD_LEAF, KIND_HEAD_INTERNAL, and the
//! LSM-tree's 0x21, 0x22):
//! offset  size  field
//! 0       16    page envelope (crate::page): crc32c, page id, kind
//! 16      4     entry count n
//! 20      4     head-tree node level (0 = leaf; 0 in run pages)
//! 24      8     head leaf: next leaf (NONE at the end); head internal: leftmost child;
//!               run page: NONE
//! 32      24*n  entries: key u64, value u64, type u8 (1 normal, 2 filter, 3 internal
//!               fence, 4 external fence), 7 zero bytes
//!
//! packed (format 7 on; each kind above with bit PACKED_KIND set):
//! 0       32    as wide
//! 32      T     types: 2 bits an entry, entry i in byte i/4 at bits 2·(i%4) (0 normal,
//!               1 filter, 2 internal fence, 3 external fence); zero past n;
//!               T = ceil(f/4) rounded up to 8 bytes
//! 32+T    16*n  entries: key u64, value u64
//! ```
//!
//! A 4 KiB page holds f = 169 wide entries or 250 packed ones (a B+-tree leaf holds 254):
//! packed, a run of the same entries takes two thirds of the pages, so merges, range scans
//! and searches of the lower levels read and write a third less.
//!
//! The type is kept outside the key (§3.2: key, rid/pid, type), so every u64 is a valid
//! user key. In head-tree internal nodes an entry is a separator: key, child page, and the
//! type of the separating entry (separators compare by key, then fences before index
//! entries, like the leaf entries they separate).

use crate::page::{self, read_u32, read_u64, write_u32, write_u64};

pub const KIND_RUN: u16 = 0x11;
pub const KIND_HEAD_LEAF: u16 = 0x12;
pub const KIND_HEAD_INTERNAL: u16 = 0x13;
/// Set in the page kind of a packed page ([`Layout::kind`]).
pub const PACKED_KIND: u16 = 0x100;
/// No page: end of the head's leaf chain, or a fence below which no lower level holds keys.
pub const NONE: u64 = u64::MAX;

const COUNT: usize = page::HEADER;
const LEVEL: usize = page::HEADER + 4;
const LINK: usize = page::HEADER + 8;
/// Where the wide layout's entries and the packed layout's types begin.
const BODY: usize = page::HEADER + 16;
const WIDE: usize = 24;
const PACKED: usize = 16;

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
    const ALL: [Kind; 4] = [Kind::Normal, Kind::Filter, Kind::Internal, Kind::External];

    /// The wide layout's type byte.
    fn byte(self) -> u8 {
        self.bits() + 1
    }

    fn from_byte(b: u8) -> Option<Kind> {
        Kind::ALL.get(usize::from(b).checked_sub(1)?).copied()
    }

    /// The packed layout's two bits.
    fn bits(self) -> u8 {
        match self {
            Kind::Normal => 0,
            Kind::Filter => 1,
            Kind::Internal => 2,
            Kind::External => 3,
        }
    }

    #[inline]
    fn from_bits(b: u8) -> Kind {
        Kind::ALL[usize::from(b & 3)]
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

/// Entries per page of `page_size` bytes in the layout new indexes get (packed): f in the
/// paper (29 for 512-byte pages, 250 for 4 KiB).
#[inline]
pub fn capacity(page_size: usize) -> usize {
    Layout::packed(page_size).cap()
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

/// How an index's sorted pages of one size lay out their entries (see the module doc):
/// the capacity and the offsets, computed once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    packed: bool,
    /// Entries a page holds: f.
    cap: usize,
    /// Offset of slot 0.
    slots: usize,
    /// Bytes a slot.
    width: usize,
}

impl Layout {
    /// 24-byte entries with their type byte (formats 1 to 6).
    pub fn wide(page_size: usize) -> Layout {
        Layout {
            packed: false,
            cap: page_size.saturating_sub(BODY) / WIDE,
            slots: BODY,
            width: WIDE,
        }
    }

    /// 16-byte entries after an array of 2-bit types (format 7 on).
    pub fn packed(page_size: usize) -> Layout {
        let room = page_size.saturating_sub(BODY);
        // Each entry takes 16 bytes and a quarter byte; the type array is whole words.
        let mut cap = room * 4 / (4 * PACKED + 1);
        while cap > 0 && types_bytes(cap) + cap * PACKED > room {
            cap -= 1;
        }
        Layout {
            packed: true,
            cap,
            slots: BODY + types_bytes(cap),
            width: PACKED,
        }
    }

    /// [`Layout::packed`] or [`Layout::wide`].
    pub fn of(packed: bool, page_size: usize) -> Layout {
        if packed {
            Layout::packed(page_size)
        } else {
            Layout::wide(page_size)
        }
    }

    pub fn is_packed(self) -> bool {
        self.packed
    }

    /// Entries a page holds: f in the paper.
    #[inline]
    pub fn cap(self) -> usize {
        self.cap
    }

    /// The page kind of a page of this layout whose wide kind is `base`.
    #[inline]
    pub fn kind(self, base: u16) -> u16 {
        if self.packed {
            base | PACKED_KIND
        } else {
            base
        }
    }

    /// The wide kind of page `b`, or `None` if the page is not of this layout (a packed
    /// page in a wide index, or the reverse).
    #[inline]
    pub fn base_kind(self, b: &[u8]) -> Option<u16> {
        let kind = page::kind(b);
        (self.packed == (kind & PACKED_KIND != 0)).then_some(kind & !PACKED_KIND)
    }

    /// [`Layout::base_kind`], or the error that names the page's kind.
    #[inline]
    pub fn checked_kind(self, b: &[u8]) -> Result<u16, String> {
        self.base_kind(b).ok_or_else(|| {
            let packed = if self.packed { "packed" } else { "wide" };
            format!(
                "page kind {:#x} in an index of {packed} pages",
                page::kind(b)
            )
        })
    }

    #[inline]
    fn key_at(self, b: &[u8], i: usize) -> u64 {
        read_u64(b, self.slots + i * self.width)
    }

    #[inline]
    fn kind_at(self, b: &[u8], i: usize) -> Option<Kind> {
        if self.packed {
            Some(packed_kind(&b[BODY..], i))
        } else {
            Kind::from_byte(b[self.slots + i * WIDE + 16])
        }
    }

    #[inline]
    fn set_kind_at(self, b: &mut [u8], i: usize, kind: Kind) {
        if self.packed {
            let (byte, shift) = (BODY + i / 4, 2 * (i % 4));
            b[byte] = (b[byte] & !(3 << shift)) | (kind.bits() << shift);
        } else {
            let off = self.slots + i * WIDE + 16;
            b[off..off + 8].fill(0);
            b[off] = kind.byte();
        }
    }

    /// Entry `i`; `None` if its type byte is invalid (corruption; wide pages only).
    #[inline]
    pub fn get(self, b: &[u8], i: usize) -> Option<Entry> {
        let off = self.slots + i * self.width;
        Some(Entry {
            key: read_u64(b, off),
            val: read_u64(b, off + 8),
            kind: self.kind_at(b, i)?,
        })
    }

    #[inline]
    pub fn set(self, b: &mut [u8], i: usize, e: Entry) {
        let off = self.slots + i * self.width;
        write_u64(b, off, e.key);
        write_u64(b, off + 8, e.val);
        self.set_kind_at(b, i, e.kind);
    }

    /// [`Layout::set`] of `es` at slots `at..at + es.len()` (room checked by the caller),
    /// with a packed page's types written four at a time (a merge's output, page by page).
    #[inline]
    pub fn set_run(self, b: &mut [u8], at: usize, es: &[Entry]) {
        if !self.packed {
            for (i, &e) in es.iter().enumerate() {
                self.set(b, at + i, e);
            }
            return;
        }
        let start = self.slots + at * PACKED;
        let slots = &mut b[start..start + es.len() * PACKED];
        for (s, e) in slots.chunks_exact_mut(PACKED).zip(es) {
            s[..8].copy_from_slice(&e.key.to_le_bytes());
            s[8..].copy_from_slice(&e.val.to_le_bytes());
        }
        // The types: slot by slot up to a byte boundary, then whole bytes, then the rest.
        let head = ((4 - at % 4) % 4).min(es.len());
        for (i, e) in es[..head].iter().enumerate() {
            self.set_kind_at(b, at + i, e.kind);
        }
        let body = &es[head..];
        let whole = body.len() / 4 * 4;
        let first_byte = BODY + (at + head) / 4;
        for (byte, four) in b[first_byte..first_byte + whole / 4]
            .iter_mut()
            .zip(body.chunks_exact(4))
        {
            *byte = four[0].kind.bits()
                | four[1].kind.bits() << 2
                | four[2].kind.bits() << 4
                | four[3].kind.bits() << 6;
        }
        for (i, e) in body[whole..].iter().enumerate() {
            self.set_kind_at(b, at + head + whole + i, e.kind);
        }
    }

    /// Decode all entries of a page checked by the caller's envelope check; `Err` names the
    /// first bad slot.
    #[inline]
    pub fn decode(self, b: &[u8]) -> Result<Vec<Entry>, String> {
        let n = self.checked_count(b)?;
        let mut out = Vec::with_capacity(n);
        self.decode_into(b, n, &mut out)?;
        Ok(out)
    }

    /// Append the page's first `n` entries (`n` checked by the caller) to `out`: one tight
    /// loop over the slots (merges and scans decode every entry they read; an iterator of
    /// `Result`s collected cost many times as much an entry).
    #[inline]
    pub fn decode_into(self, b: &[u8], n: usize, out: &mut Vec<Entry>) -> Result<(), String> {
        out.reserve(n);
        let slots = b
            .get(self.slots..self.slots + n * self.width)
            .ok_or_else(|| format!("entry count {n} beyond the page"))?;
        if self.packed {
            // `extend` of an iterator of known length: one capacity check, not one a push
            // (the pushes were a fifth of an LSM merge thread's time).
            let types = &b[BODY..BODY + n.div_ceil(4)];
            out.extend(slots.chunks_exact(PACKED).enumerate().map(|(i, s)| Entry {
                key: read_u64(s, 0),
                val: read_u64(s, 8),
                kind: packed_kind(types, i),
            }));
            return Ok(());
        }
        for (i, s) in slots.chunks_exact(WIDE).enumerate() {
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

    /// Point-search step inside a page's bytes, without decoding the page: a binary search
    /// on the keys for the last entry at or below `index_pos(key)`, then a backward scan to
    /// the first fence or the index entry of `key` (the scan stops at the first fence, so it
    /// reads a few entries at most). Decodes only the entries it reads; `Err` names a bad
    /// count or a bad type among them.
    pub fn probe(self, b: &[u8], key: u64) -> Result<Probe, String> {
        let n = self.checked_count(b)?;
        let end = self.partition(b, n, index_pos(key))?;
        for i in (0..end).rev() {
            let e = self.entry(b, i)?;
            if e.is_fence() {
                return Ok(Probe::Fence(e.val));
            }
            if e.key == key {
                return Ok(Probe::Entry(e));
            }
        }
        Ok(Probe::Neither)
    }

    /// Entry `i`, or the error that names its bad type.
    #[inline]
    pub fn entry(self, b: &[u8], i: usize) -> Result<Entry, String> {
        self.get(b, i)
            .ok_or_else(|| format!("entry {i} has an invalid type"))
    }

    /// The entry count, checked against the page's capacity.
    #[inline]
    pub fn checked_count(self, b: &[u8]) -> Result<usize, String> {
        let n = count(b);
        if n > self.cap {
            return Err(format!("entry count {n} above capacity {}", self.cap));
        }
        Ok(n)
    }

    /// How many of the page's first `n` entries sort at or below `pos` (they are sorted by
    /// [`Entry::pos`]): a binary search on the bytes that reads an entry's type only where
    /// its key equals `pos`'s.
    #[inline]
    pub fn partition(self, b: &[u8], n: usize, pos: (u64, u8)) -> Result<usize, String> {
        self.bisect(b, n, pos, false)
    }

    /// Where `pos` is among the page's first `n` entries, as [`slice::binary_search`] says
    /// it: `Ok(slot)` of the entry at exactly `pos`, or `Err(slot)` where it would be
    /// inserted. The same binary search on the bytes as [`Layout::partition`].
    #[inline]
    pub fn search(
        self,
        b: &[u8],
        n: usize,
        pos: (u64, u8),
    ) -> Result<Result<usize, usize>, String> {
        let i = self.bisect(b, n, pos, true)?;
        let here = i < n && self.key_at(b, i) == pos.0 && self.rank_at(b, i)? == pos.1;
        Ok(if here { Ok(i) } else { Err(i) })
    }

    /// The rank ([`Entry::pos`]'s second part) of slot `i`'s entry.
    #[inline]
    fn rank_at(self, b: &[u8], i: usize) -> Result<u8, String> {
        self.kind_at(b, i)
            .map(Kind::rank)
            .ok_or_else(|| format!("entry {i} has an invalid type"))
    }

    /// How many of the first `n` entries sort below `pos` (`strict`) or at or below it:
    /// a binary search on the keys alone, whose halving step picks its half without a
    /// branch (the comparison is random, so a branch would mispredict about every other
    /// step; a head-tree insert searches a page per level), then a step over the few
    /// entries of `pos`'s key (a fence and an index entry) by their rank.
    #[inline]
    fn bisect(self, b: &[u8], n: usize, pos: (u64, u8), strict: bool) -> Result<usize, String> {
        let mut lo = 0usize;
        if n > 0 {
            // Invariant: the keys below `base` are below `pos.0`, those from `base + size`
            // on are not.
            let (mut base, mut size) = (0usize, n);
            while size > 1 {
                let half = size / 2;
                let mid = base + half;
                base = if self.key_at(b, mid) < pos.0 {
                    mid
                } else {
                    base
                };
                size -= half;
            }
            lo = base + usize::from(self.key_at(b, base) < pos.0);
        }
        while lo < n && self.key_at(b, lo) == pos.0 {
            let rank = self.rank_at(b, lo)?;
            let before = if strict { rank < pos.1 } else { rank <= pos.1 };
            if !before {
                break;
            }
            lo += 1;
        }
        Ok(lo)
    }

    /// The value (page) of the last fence among the page's first `end` entries, if any.
    pub fn fence_before(self, b: &[u8], end: usize) -> Result<Option<u64>, String> {
        for i in (0..end).rev() {
            let e = self.entry(b, i)?;
            if e.is_fence() {
                return Ok(Some(e.val));
            }
        }
        Ok(None)
    }

    /// Rewrite a page from scratch; `kind` is the wide kind ([`Layout::kind`]).
    #[inline]
    pub fn init(self, b: &mut [u8], kind: u16, level: u32, link: u64, entries: &[Entry]) {
        b[page::HEADER..].fill(0);
        page::set_kind(b, self.kind(kind));
        write_u32(b, COUNT, entries.len() as u32);
        write_u32(b, LEVEL, level);
        set_link(b, link);
        for (i, &e) in entries.iter().enumerate() {
            self.set(b, i, e);
        }
    }

    /// Complete a page whose first `n` slots were written with [`Layout::set`]: the header,
    /// and zeros after the entries (the same bytes as [`Layout::init`] with those entries).
    #[inline]
    pub fn finish_page(self, b: &mut [u8], kind: u16, level: u32, link: u64, n: usize) {
        b[self.slots + n * self.width..].fill(0);
        if self.packed {
            // The types past n: the rest of entry n's byte, then whole bytes.
            let byte = BODY + n / 4;
            if n % 4 != 0 {
                b[byte] &= (1u8 << (2 * (n % 4))) - 1;
            }
            b[byte + usize::from(n % 4 != 0)..self.slots].fill(0);
        }
        b[page::HEADER..BODY].fill(0);
        page::set_kind(b, self.kind(kind));
        write_u32(b, COUNT, n as u32);
        write_u32(b, LEVEL, level);
        set_link(b, link);
    }

    /// Insert at slot `i` (room checked by the caller).
    #[inline]
    pub fn insert_at(self, b: &mut [u8], i: usize, e: Entry) {
        let n = count(b);
        page::open_slot(b, self.slots, self.width, n, i);
        if self.packed {
            // Slots i..n's types move up one: slot j + 1 takes slot j's.
            shift_types(b, i + 1, n, |w, lower, _| (w << 2) | (lower >> 62));
        }
        self.set(b, i, e);
        write_u32(b, COUNT, (n + 1) as u32);
    }

    /// Remove slot `i`.
    #[inline]
    pub fn remove_at(self, b: &mut [u8], i: usize) {
        let n = count(b);
        page::close_slot(b, self.slots, self.width, n, i);
        if self.packed {
            // Slots i + 1..n's types move down one: slot j takes slot j + 1's.
            shift_types(b, i, n - 1, |w, _, upper| (w >> 2) | (upper << 62));
            self.set_kind_at(b, n - 1, Kind::Normal);
        }
        write_u32(b, COUNT, (n - 1) as u32);
    }
}

/// Rewrite the 2-bit types of slots `lo..=hi` of a packed page `b`, a 64-bit word (32
/// slots) at a time: each word covering them becomes `shifted(word, the word below, the
/// word above)` (0 beyond the array) in those slots, and keeps its other slots. Insertion
/// and removal move the types this way, where a loop over the slots cost a few
/// nanoseconds a slot (a head-tree insert shifts ~100 of them).
#[inline]
fn shift_types(b: &mut [u8], lo: usize, hi: usize, shifted: impl Fn(u64, u64, u64) -> u64) {
    if lo > hi {
        return;
    }
    let (first, last) = (lo / 32, hi / 32);
    let word = |b: &[u8], w: usize| read_u64(b, BODY + w * 8);
    // The word below the one being rewritten, as it was.
    let mut below = if first > 0 { word(b, first - 1) } else { 0 };
    for w in first..=last {
        let old = word(b, w);
        let above = if w < last {
            word(b, w + 1)
        } else {
            // Past the last word of the range: the next word of the array, if any; the
            // shifted bits it brings in are masked off beyond `hi` anyway.
            0
        };
        let from = lo.max(w * 32) - w * 32;
        let to = hi.min(w * 32 + 31) - w * 32;
        let mask = (u64::MAX >> (62 - 2 * to)) & (u64::MAX << (2 * from));
        write_u64(
            b,
            BODY + w * 8,
            (old & !mask) | (shifted(old, below, above) & mask),
        );
        below = old;
    }
}

/// Entry `i`'s type in a packed page's type array `types` (2 bits an entry, low bits first).
#[inline]
fn packed_kind(types: &[u8], i: usize) -> Kind {
    Kind::from_bits(types[i / 4] >> (2 * (i % 4)))
}

/// Bytes of the packed layout's type array for `cap` entries: 2 bits each, whole words.
fn types_bytes(cap: usize) -> usize {
    cap.div_ceil(4).div_ceil(8) * 8
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const KINDS: [Kind; 4] = [Kind::Normal, Kind::Filter, Kind::Internal, Kind::External];

    fn layouts(page_size: usize) -> [Layout; 2] {
        [Layout::wide(page_size), Layout::packed(page_size)]
    }

    /// A page built slot by slot in a buffer holding stale bytes (a merge's reused chunk)
    /// and completed by `finish_page` has exactly the bytes `init` writes, in both layouts
    /// and for every count up to a full page.
    #[test]
    fn a_page_built_in_place_has_the_bytes_init_writes() {
        for lay in layouts(512) {
            for n in 0..=lay.cap() as u64 {
                let es: Vec<Entry> = (0..n)
                    .map(|i| {
                        let kind = if i % 3 == 0 {
                            Kind::External
                        } else {
                            KINDS[i as usize % 2]
                        };
                        Entry::new(i * 3, i ^ 5, kind)
                    })
                    .collect();
                let mut want = vec![0u8; 512];
                lay.init(&mut want, KIND_RUN, 2, 99, &es);
                let mut got = vec![0xABu8; 512];
                for (i, &e) in es.iter().enumerate() {
                    lay.set(&mut got, i, e);
                }
                lay.finish_page(&mut got, KIND_RUN, 2, 99, es.len());
                // The kind and the payload (the envelope's other bytes are the pager's and seal's).
                assert_eq!(got[12..14], want[12..14], "{lay:?} n = {n}");
                assert_eq!(got[page::HEADER..], want[page::HEADER..], "{lay:?} n = {n}");
                assert_eq!(lay.decode(&got).unwrap(), es);
            }
        }
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
            let mut es: Vec<Entry> =
                raw.iter().map(|&(k, t)| Entry::new(k, k * 7 + u64::from(t), KINDS[t as usize])).collect();
            es.sort_by_key(|e| e.pos());
            es.dedup_by_key(|e| e.pos());
            for lay in layouts(512) {
                let mut b = vec![0u8; 512];
                lay.init(&mut b, KIND_RUN, 0, NONE, &es);
                for &key in &probes {
                    prop_assert_eq!(lay.probe(&b, key).unwrap(), probe_by_decoding(&es, key));
                }
            }
        }
    }

    #[test]
    fn probe_reports_a_bad_count_and_a_bad_type_it_reads() {
        let es = [
            Entry::new(5, 1, Kind::External),
            Entry::new(9, 2, Kind::Normal),
        ];
        for lay in layouts(512) {
            let mut b = vec![0u8; 512];
            lay.init(&mut b, KIND_RUN, 0, NONE, &es);
            assert_eq!(lay.probe(&b, 9).unwrap(), Probe::Entry(es[1]));
            assert_eq!(lay.probe(&b, 7).unwrap(), Probe::Fence(1));
            assert_eq!(lay.probe(&b, 4).unwrap(), Probe::Neither);
            if !lay.is_packed() {
                // Every 2-bit type is a valid one; a wide type byte can be bad.
                b[BODY + WIDE + 16] = 9;
                assert!(lay.probe(&b, 9).unwrap_err().contains("entry 1"));
            }
            write_u32(&mut b, COUNT, 1000);
            assert!(lay.probe(&b, 9).unwrap_err().contains("count 1000"));
        }
    }

    proptest! {
        /// Any entries round-trip, and removing then re-inserting at any slot (shifting
        /// the slots and, packed, the 2-bit types) gives back the same bytes.
        #[test]
        fn entries_round_trip_with_any_key_and_value(
            es in proptest::collection::vec((any::<u64>(), any::<u64>(), 0u8..4), 0..29),
            at in any::<prop::sample::Index>(),
        ) {
            let es: Vec<Entry> = es.iter().map(|&(k, v, t)| Entry::new(k, v, KINDS[t as usize])).collect();
            for lay in layouts(512) {
                let es = &es[..es.len().min(lay.cap())];
                let mut b = vec![0u8; 512];
                lay.init(&mut b, KIND_RUN, 0, NONE, es);
                prop_assert_eq!(lay.decode(&b).unwrap(), es.to_vec());
                if !es.is_empty() {
                    let want = b.clone();
                    let i = at.index(es.len());
                    lay.remove_at(&mut b, i);
                    let mut fewer = es.to_vec();
                    fewer.remove(i);
                    prop_assert_eq!(lay.decode(&b).unwrap(), fewer);
                    lay.insert_at(&mut b, i, es[i]);
                    prop_assert_eq!(lay.decode(&b).unwrap(), es.to_vec());
                    prop_assert_eq!(&b, &want);
                }
            }
        }
    }

    /// Insertion and removal as they were written first, a slot's type at a time: the
    /// reference for the word-at-a-time [`shift_types`].
    fn insert_by_slots(lay: Layout, b: &mut [u8], i: usize, e: Entry) {
        let n = count(b);
        page::open_slot(b, lay.slots, lay.width, n, i);
        for j in (i + 1..=n).rev() {
            lay.set_kind_at(b, j, packed_kind(&b[BODY..], j - 1));
        }
        lay.set(b, i, e);
        write_u32(b, COUNT, (n + 1) as u32);
    }

    fn remove_by_slots(lay: Layout, b: &mut [u8], i: usize) {
        let n = count(b);
        page::close_slot(b, lay.slots, lay.width, n, i);
        for j in i..n - 1 {
            lay.set_kind_at(b, j, packed_kind(&b[BODY..], j + 1));
        }
        lay.set_kind_at(b, n - 1, Kind::Normal);
        write_u32(b, COUNT, (n - 1) as u32);
    }

    /// A 4 KiB page of arbitrary bytes (stale types past the count included) holding `n`
    /// entries.
    fn junk_page(seed: u64, n: usize) -> Vec<u8> {
        let mut x = seed | 1;
        let mut b: Vec<u8> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        write_u32(&mut b, COUNT, n as u32);
        b
    }

    proptest! {
        /// On 4 KiB packed pages (8 words of types, so shifts carry across words), insert
        /// and remove at any slot of any count give the bytes the slot-by-slot reference
        /// gives, whatever the page holds past its entries.
        #[test]
        fn word_shifts_of_the_types_equal_the_slot_by_slot_reference(
            seed in any::<u64>(),
            n in 0usize..250,
            at in any::<prop::sample::Index>(),
            kind in 0usize..4,
        ) {
            let lay = Layout::packed(4096);
            let e = Entry::new(7, 9, KINDS[kind]);
            let i = at.index(n + 1);
            let (mut got, mut want) = (junk_page(seed, n), junk_page(seed, n));
            lay.insert_at(&mut got, i, e);
            insert_by_slots(lay, &mut want, i, e);
            prop_assert_eq!(&got, &want, "insert at {} of {}", i, n);
            if n > 0 {
                let i = at.index(n);
                let (mut got, mut want) = (junk_page(seed, n), junk_page(seed, n));
                lay.remove_at(&mut got, i);
                remove_by_slots(lay, &mut want, i);
                prop_assert_eq!(&got, &want, "remove at {} of {}", i, n);
            }
        }

        /// `set_run` writes the bytes that `set` of each entry writes, at any slot and for
        /// any number of entries, over stale bytes, in both layouts.
        #[test]
        fn set_run_equals_setting_each_entry(
            seed in any::<u64>(),
            at in 0usize..250,
            kinds in proptest::collection::vec(0usize..4, 0..250),
        ) {
            for lay in layouts(4096) {
                let at = at.min(lay.cap());
                let len = kinds.len().min(lay.cap() - at);
                let es: Vec<Entry> = kinds[..len]
                    .iter()
                    .enumerate()
                    .map(|(i, &k)| Entry::new(seed ^ i as u64, i as u64, KINDS[k]))
                    .collect();
                let (mut got, mut want) = (junk_page(seed, 0), junk_page(seed, 0));
                lay.set_run(&mut got, at, &es);
                for (i, &e) in es.iter().enumerate() {
                    lay.set(&mut want, at + i, e);
                }
                prop_assert_eq!(&got, &want, "{:?} at {} len {}", lay, at, len);
            }
        }
    }

    /// The formats, frozen: capacities, where the slots begin, and the bytes of a packed
    /// page's first entries and types.
    #[test]
    fn capacity_matches_the_format() {
        assert_eq!(Layout::wide(512).cap(), 20);
        assert_eq!(Layout::wide(4096).cap(), 169);
        assert_eq!(Layout::packed(512).cap(), 29);
        assert_eq!(Layout::packed(4096).cap(), 250);
        assert_eq!(capacity(4096), 250);
        for ps in [512, 1024, 2048, 4096, 8192, 16384, 65536] {
            let p = Layout::packed(ps);
            assert!(p.slots + p.cap * PACKED <= ps, "{ps}");
            assert!(BODY + p.cap.div_ceil(4) <= p.slots, "{ps}");
            // No room for one more entry.
            assert!(
                BODY + types_bytes(p.cap + 1) + (p.cap + 1) * PACKED > ps,
                "{ps}"
            );
        }
        assert_eq!(Layout::packed(4096).slots, 96);
        let es = [
            Entry::new(0x0102, 7, Kind::External),
            Entry::new(0x0304, 8, Kind::Normal),
            Entry::new(0x0304, 9, Kind::Filter),
            Entry::new(0x0506, 10, Kind::Internal),
            Entry::new(0x0708, 11, Kind::Filter),
        ];
        let lay = Layout::packed(4096);
        let mut b = vec![0u8; 4096];
        lay.init(&mut b, KIND_RUN, 0, NONE, &es);
        assert_eq!(page::kind(&b), 0x111);
        // Types 3, 0, 1, 2 in the first byte (low bits first), 1 in the second.
        assert_eq!(b[32..35], [0b1001_0011, 0b01, 0]);
        assert_eq!(b[96..112], [2, 1, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(b[112 + 8], 8);
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
        for lay in layouts(512) {
            let mut valid = vec![0u8; 512];
            lay.init(&mut valid, KIND_RUN, 0, NONE, &es);
            crate::hostile::fuzz_page("sorted entries", 4, &valid, |b| {
                let _ = lay.decode(b);
                for key in [0, 5, 9, u64::MAX] {
                    let _ = lay.probe(b, key);
                }
                Ok(())
            });
        }
    }
}
