//! Leaf nodes of `L` leaf segments (PIO B-tree paper §3.2.2, Figure 8): `L` contiguous
//! pages, each one segment, read as one multi-page request (package-level parallelism,
//! principle 1). A leaf is **append-only** between rewrites: records of update operations
//! are appended after the most recent one, whatever their key, so an update writes only
//! the last segment (§3.2.2 "Append-only feature").
//!
//! ```text
//! segment page (each of the L pages of a leaf)
//! offset  size  field
//! 0       16    page envelope (crate::page): crc32c, page id, kind (3 wide, 4 packed)
//! 16      4     records in this segment n
//! 20      2     segment index i (0..L)
//! 22      2     L, segments of the leaf
//! 24      4     segment 0 only: `base`, records at the start of the leaf that a rewrite
//!               left sorted (strictly increasing keys, all puts); 0 in other segments
//! 28      4     reserved (0)
//! wide (kind 3, indexes created by format 5 or older):
//! 32      17*n  records: key u64, value u64, op u8 (1 put, 2 delete)
//! packed (kind 4, format 6 on):
//! 32      B     operation bitmap, B = ceil(c/8) for the segment's capacity c: bit j
//!               (byte j/8, bit j%8) set if record j is a delete, clear if a put
//! 32+B    16*n  records: key u64, value u64
//! ```
//!
//! A 4 KiB segment holds 239 wide records or 252 packed ones; the B+-tree's leaf holds 254
//! entries, so a packed PIO leaf indexes as many keys per page as a B+-tree leaf (wide, it
//! takes more leaves and pages for the same keys). An index keeps the layout it was
//! created with ([`Layout`], in the engine state); every segment's kind must be its
//! index's.
//!
//! Records fill segment 0 first, then 1, ...: every segment before the *last segment*
//! (the one holding the newest record; 0 for an empty leaf) is full and every segment after
//! it is empty. The leaf's contents are its records replayed in order, the newest record
//! of a key deciding (a delete record cancels the puts before it: §3.2.2 "Shrink
//! operation"). The in-memory LSMap caches each leaf's last segment id.

use super::opq::{Op, OpqEntry};
use crate::durable::Pager;
use crate::error::{Error, Result};
use crate::io::PageId;
use crate::page::{self, read_u32, read_u64, write_u32, write_u64, DATA_FILE};

/// Page kind of a leaf segment of 17-byte records (the wide layout).
pub const KIND_LEAF_SEGMENT: u16 = 3;
/// Page kind of a leaf segment of 16-byte records and an operation bitmap (packed).
pub const KIND_PACKED_LEAF_SEGMENT: u16 = 4;
const COUNT: usize = page::HEADER;
const INDEX: usize = page::HEADER + 4;
const TOTAL: usize = page::HEADER + 6;
const BASE: usize = page::HEADER + 8;
const RECORDS: usize = page::HEADER + 16;

/// How a segment lays out its records (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// 17-byte records with an operation byte each (indexes of format 5 and older).
    Wide,
    /// 16-byte records after an operation bitmap.
    Packed,
}

impl Layout {
    /// The page kind of its segments.
    pub fn kind(self) -> u16 {
        match self {
            Layout::Wide => KIND_LEAF_SEGMENT,
            Layout::Packed => KIND_PACKED_LEAF_SEGMENT,
        }
    }

    /// Records that fit in one segment of `page_size` bytes.
    pub fn capacity(self, page_size: usize) -> usize {
        let room = page_size.saturating_sub(RECORDS);
        match self {
            Layout::Wide => room / 17,
            // 16 bytes and one bit a record: the most c with ceil(c/8) + 16c <= room.
            Layout::Packed => {
                let mut c = room * 8 / 129;
                while c > 0 && c.div_ceil(8) + 16 * c > room {
                    c -= 1;
                }
                c
            }
        }
    }

    /// Bytes a record takes in the record area.
    fn stride(self) -> usize {
        match self {
            Layout::Wide => 17,
            Layout::Packed => 16,
        }
    }
}

/// How many records a segment of a given page size holds and where they lie, computed
/// once a call (not once a record: the packed layout's first record follows a bitmap
/// sized by the page's capacity).
#[derive(Debug, Clone, Copy)]
struct Slots {
    layout: Layout,
    /// Records a segment holds ([`Layout::capacity`]).
    cap: usize,
    /// Offset of record 0.
    first: usize,
}

impl Slots {
    fn of(layout: Layout, page_size: usize) -> Slots {
        let cap = layout.capacity(page_size);
        let first = match layout {
            Layout::Wide => RECORDS,
            Layout::Packed => RECORDS + cap.div_ceil(8),
        };
        Slots { layout, cap, first }
    }

    /// Offset of record `i`'s key.
    fn key_at(self, i: usize) -> usize {
        self.first + i * self.layout.stride()
    }

    /// The last of records `[from, to)` (of a segment's `count >= to`) whose key is `key`.
    fn newest_of(self, b: &[u8], from: usize, to: usize, key: u64) -> Option<usize> {
        let want = key.to_le_bytes();
        b[self.key_at(from)..self.key_at(to)]
            .chunks_exact(self.layout.stride())
            .rposition(|r| r[..8] == want)
            .map(|i| from + i)
    }
}

/// Records that fit in one segment of `page_size` bytes laid out as a new index lays
/// them out ([`Layout::Packed`]).
pub fn segment_capacity(page_size: usize) -> usize {
    Layout::Packed.capacity(page_size)
}

fn u16_at(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes([b[off], b[off + 1]])
}

/// One segment's header fields.
#[derive(Debug, Clone, Copy)]
pub struct SegmentHeader {
    pub count: usize,
    pub index: u16,
    pub total: u16,
    pub base: usize,
}

/// Read a segment's header, checking its kind is `layout`'s.
pub fn header(layout: Layout, pid: PageId, b: &[u8]) -> Result<SegmentHeader> {
    if page::kind(b) != layout.kind() {
        return Err(Error::corruption(
            DATA_FILE,
            Some(pid),
            format!(
                "page kind {} where a PIO leaf segment (kind {}) was expected",
                page::kind(b),
                layout.kind()
            ),
        ));
    }
    Ok(SegmentHeader {
        count: read_u32(b, COUNT) as usize,
        index: u16_at(b, INDEX),
        total: u16_at(b, TOTAL),
        base: read_u32(b, BASE) as usize,
    })
}

/// Record `i` of a segment (`None`: a wide record's bad operation byte).
fn record(s: Slots, b: &[u8], i: usize) -> Option<OpqEntry> {
    let off = s.key_at(i);
    let op = match s.layout {
        Layout::Wide => match *b.get(off + 16)? {
            1 => Op::Put,
            2 => Op::Delete,
            _ => return None,
        },
        Layout::Packed => {
            if b[RECORDS + i / 8] & (1 << (i % 8)) != 0 {
                Op::Delete
            } else {
                Op::Put
            }
        }
    };
    Some(OpqEntry {
        key: read_u64(b, off),
        value: read_u64(b, off + 8),
        op,
    })
}

fn set_record(s: Slots, b: &mut [u8], i: usize, e: &OpqEntry) {
    let off = s.key_at(i);
    write_u64(b, off, e.key);
    write_u64(b, off + 8, e.value);
    match s.layout {
        Layout::Wide => {
            b[off + 16] = match e.op {
                Op::Put => 1,
                Op::Delete => 2,
            }
        }
        Layout::Packed => {
            let bit = 1 << (i % 8);
            match e.op {
                Op::Put => b[RECORDS + i / 8] &= !bit,
                Op::Delete => b[RECORDS + i / 8] |= bit,
            }
        }
    }
}

/// A segment's header, checked against the segment's place in its leaf.
fn segment_header(
    layout: Layout,
    pid: PageId,
    b: &[u8],
    index: u16,
    total: u16,
    cap: usize,
) -> Result<SegmentHeader> {
    let h = header(layout, pid, b)?;
    if h.index != index || h.total != total || h.count > cap {
        return Err(Error::corruption(
            DATA_FILE,
            Some(pid),
            format!(
                "leaf segment header (index {}, of {}, {} records) where segment {index} of {total} (at most {cap} records) was expected",
                h.index, h.total, h.count
            ),
        ));
    }
    Ok(h)
}

/// Record `i` of segment `pid`; a bad operation flag is corruption.
fn checked_record(s: Slots, pid: PageId, b: &[u8], i: usize) -> Result<OpqEntry> {
    record(s, b, i).ok_or_else(|| {
        Error::corruption(
            DATA_FILE,
            Some(pid),
            format!("leaf record {i} has a bad operation flag"),
        )
    })
}

/// A leaf read back: its records in append order, `base` and its last segment.
#[derive(Debug, Clone)]
pub struct LeafImage {
    pub records: Vec<OpqEntry>,
    pub base: usize,
    pub last: u16,
}

/// Where a walk over a leaf's segments ([`load`], [`find`]) gets their bytes: the buffer
/// pool through `&mut Pager` (one thread), or a shared reader's source (the pool's shared
/// mode, or the bytes of a psync group read past it).
pub trait Pages {
    /// Page size in bytes.
    fn page_size(&self) -> usize;
    /// Run `f` on page `pid`'s bytes.
    fn page<T>(&mut self, pid: PageId, f: impl FnOnce(&[u8]) -> T) -> Result<T>;
}

impl Pages for Pager {
    fn page_size(&self) -> usize {
        Pager::page_size(self)
    }

    fn page<T>(&mut self, pid: PageId, f: impl FnOnce(&[u8]) -> T) -> Result<T> {
        self.read(pid, f)
    }
}

/// Visit the segments of the leaf at `start` (`total` segments, prefetched by a psync read
/// before) in order with their checked headers: up to `known_last` if the LSMap knows it,
/// otherwise until the first segment that is not full. Returns the leaf's `base` and its
/// last segment (the last one holding a record; 0 for an empty leaf).
fn walk<P: Pages + ?Sized>(
    slots: Slots,
    pager: &mut P,
    start: PageId,
    total: u16,
    known_last: Option<u16>,
    mut visit: impl FnMut(PageId, &[u8], &SegmentHeader) -> Result<()>,
) -> Result<(usize, u16)> {
    let (layout, cap) = (slots.layout, slots.cap);
    let (mut base, mut last) = (0, 0u16);
    for i in 0..total {
        let pid = start + u64::from(i);
        let h = pager.page(pid, |b| {
            let h = segment_header(layout, pid, b, i, total, cap)?;
            visit(pid, b, &h)?;
            Ok::<_, Error>(h)
        })??;
        if i == 0 {
            base = h.base;
        }
        if h.count > 0 {
            last = i;
        }
        let stop = match known_last {
            Some(l) => i >= l,
            None => h.count < cap,
        };
        if stop {
            break;
        }
    }
    Ok((base, last))
}

/// Read a leaf starting at `start` of `total` segments through the pool (prefetched by a
/// psync read before): segments up to `last` if the LSMap knows it, otherwise until the
/// first segment that is not full.
pub fn load<P: Pages + ?Sized>(
    layout: Layout,
    pager: &mut P,
    start: PageId,
    total: u16,
    known_last: Option<u16>,
) -> Result<LeafImage> {
    let mut records = Vec::new();
    let slots = Slots::of(layout, pager.page_size());
    let (base, last) = walk(slots, pager, start, total, known_last, |pid, b, h| {
        records.reserve(h.count);
        for i in 0..h.count {
            records.push(checked_record(slots, pid, b, i)?);
        }
        Ok(())
    })?;
    if base > records.len() {
        return Err(Error::corruption(
            DATA_FILE,
            Some(start),
            format!("leaf base {base} above its {} records", records.len()),
        ));
    }
    Ok(LeafImage {
        records,
        base,
        last,
    })
}

/// The newest record of `key` in the leaf at `start` (read as [`load`] reads it), found
/// inside the segment bytes without decoding the leaf: a point search's leaf step
/// (§3.2.2: the records replayed in append order, the newest of a key deciding). Returns
/// it and the leaf's last segment.
///
/// The leaf's first `base` records are sorted puts, one per key (a rewrite's output);
/// only the records appended after them are scanned, newest first, and the sorted prefix
/// is binary-searched if none of them is the key's: a search of a freshly rewritten leaf
/// costs `log2(records)` comparisons, not one per record.
pub fn find<P: Pages + ?Sized>(
    layout: Layout,
    pager: &mut P,
    start: PageId,
    total: u16,
    known_last: Option<u16>,
    key: u64,
) -> Result<(Option<OpqEntry>, u16)> {
    let mut appended = None;
    let mut sorted = None;
    let mut base = 0;
    let slots = Slots::of(layout, pager.page_size());
    let (_, last) = walk(slots, pager, start, total, known_last, |pid, b, h| {
        if h.index == 0 {
            base = h.base;
        }
        // This segment's records of the sorted prefix: `[0, in_base)`.
        let first = usize::from(h.index) * slots.cap;
        let in_base = base.saturating_sub(first).min(h.count);
        // A later segment's appended record is newer than an earlier one's.
        if let Some(i) = slots.newest_of(b, in_base, h.count, key) {
            appended = Some(checked_record(slots, pid, b, i)?);
        } else if sorted.is_none() && in_base > 0 {
            if let Some(i) = binary_search(slots, b, in_base, key) {
                sorted = Some(checked_record(slots, pid, b, i)?);
            }
        }
        Ok(())
    })?;
    Ok((appended.or(sorted), last))
}

/// The index of `key` among the segment's first `n` records, sorted by key.
fn binary_search(s: Slots, b: &[u8], n: usize, key: u64) -> Option<usize> {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match read_u64(b, s.key_at(mid)).cmp(&key) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => return Some(mid),
        }
    }
    None
}

/// The live entries of a sequence of records in append order: for each key its newest
/// record, kept if it is a put; sorted by key.
pub fn live(records: impl IntoIterator<Item = OpqEntry>) -> Vec<(u64, u64)> {
    let mut recs: Vec<(usize, OpqEntry)> = records.into_iter().enumerate().collect();
    // Stable by key: equal keys stay in append order, so the last of a run is the newest.
    recs.sort_by_key(|(_, e)| e.key);
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(recs.len());
    let mut i = 0;
    while i < recs.len() {
        let mut j = i;
        while j + 1 < recs.len() && recs[j + 1].1.key == recs[i].1.key {
            j += 1;
        }
        let newest = recs[j].1;
        if newest.op == Op::Put {
            out.push((newest.key, newest.value));
        }
        i = j + 1;
    }
    out
}

/// Rewrite the whole leaf with sorted live entries (they become its `base`); every
/// segment is written, the ones past the entries empty. Returns the new last segment.
pub fn rewrite(
    layout: Layout,
    pager: &mut Pager,
    start: PageId,
    total: u16,
    entries: &[(u64, u64)],
) -> Result<u16> {
    let slots = Slots::of(layout, pager.page_size());
    let cap = slots.cap;
    let mut last = 0;
    for i in 0..total {
        let from = (usize::from(i) * cap).min(entries.len());
        let to = (from + cap).min(entries.len());
        let chunk = &entries[from..to];
        if !chunk.is_empty() {
            last = i;
        }
        let base = if i == 0 { entries.len() } else { 0 };
        pager.write(start + u64::from(i), |b| {
            b[page::HEADER..].fill(0);
            page::set_kind(b, layout.kind());
            write_u32(b, COUNT, chunk.len() as u32);
            b[INDEX..INDEX + 2].copy_from_slice(&i.to_le_bytes());
            b[TOTAL..TOTAL + 2].copy_from_slice(&total.to_le_bytes());
            write_u32(b, BASE, base as u32);
            for (j, &(key, value)) in chunk.iter().enumerate() {
                set_record(
                    slots,
                    b,
                    j,
                    &OpqEntry {
                        key,
                        value,
                        op: Op::Put,
                    },
                );
            }
        })?;
    }
    Ok(last)
}

/// Where appends to a leaf go: its last segment and that segment's record count.
pub fn tail(
    layout: Layout,
    pager: &mut Pager,
    start: PageId,
    total: u16,
    last: u16,
) -> Result<usize> {
    let pid = start + u64::from(last);
    let h = pager.read(pid, |b| header(layout, pid, b))??;
    if h.index != last || h.total != total {
        return Err(Error::corruption(
            DATA_FILE,
            Some(pid),
            format!(
                "segment {} of {} where segment {last} of {total} was expected",
                h.index, h.total
            ),
        ));
    }
    Ok(h.count)
}

/// Append `recs` after the newest record of the leaf whose last segment `last` holds
/// `count` records (the caller checked they fit). Only the last segment and the ones the
/// records spill into are written (§3.2.2). Returns the new last segment.
pub fn append(
    layout: Layout,
    pager: &mut Pager,
    start: PageId,
    total: u16,
    last: u16,
    count: usize,
    recs: &[OpqEntry],
) -> Result<u16> {
    let slots = Slots::of(layout, pager.page_size());
    let cap = slots.cap;
    let (mut seg, mut n) = (last, count);
    let mut rest = recs;
    while !rest.is_empty() {
        if n >= cap {
            seg += 1;
            n = 0;
        }
        if seg >= total {
            return Err(Error::corruption(
                DATA_FILE,
                Some(start),
                format!("append past the last of the leaf's {total} segments"),
            ));
        }
        let take = (cap - n).min(rest.len());
        let (now, later) = rest.split_at(take);
        pager.write(start + u64::from(seg), |b| {
            for (j, e) in now.iter().enumerate() {
                set_record(slots, b, n + j, e);
            }
            write_u32(b, COUNT, (n + take) as u32);
        })?;
        n += take;
        rest = later;
    }
    Ok(seg)
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
    fn del(key: u64) -> OpqEntry {
        OpqEntry {
            key,
            value: 0,
            op: Op::Delete,
        }
    }

    #[test]
    fn the_newest_record_of_a_key_decides() {
        let recs = vec![
            put(5, 1),
            put(3, 1),
            del(5),
            put(3, 2),
            put(9, 0),
            del(7),
            put(5, 4),
            del(9),
        ];
        assert_eq!(live(recs), vec![(3, 2), (5, 4)]);
        assert_eq!(
            live(vec![put(u64::MAX, 0), put(0, u64::MAX)]),
            vec![(0, u64::MAX), (u64::MAX, 0)]
        );
    }

    #[test]
    fn capacity() {
        assert_eq!(Layout::Wide.capacity(512), 28);
        assert_eq!(Layout::Wide.capacity(4096), 239);
        assert_eq!(Layout::Packed.capacity(512), 29);
        assert_eq!(Layout::Packed.capacity(4096), 252);
        assert_eq!(segment_capacity(4096), 252);
        // The last packed record ends inside the page, after the bitmap of them all.
        for ps in [512, 1024, 4096, 8192, 16384] {
            let c = Layout::Packed.capacity(ps);
            assert!(
                Slots::of(Layout::Packed, ps).key_at(c - 1) + 16 <= ps,
                "{ps}"
            );
            assert!(RECORDS + (c + 1).div_ceil(8) + 16 * (c + 1) > ps, "{ps}");
        }
    }

    /// Both layouts read back what they wrote, operation flags included; the packed
    /// bitmap bit of a record changes with its operation and touches no other record.
    #[test]
    fn records_round_trip_in_both_layouts() {
        for layout in [Layout::Wide, Layout::Packed] {
            let cap = layout.capacity(512);
            let slots = Slots::of(layout, 512);
            let mut b = vec![0u8; 512];
            let recs: Vec<OpqEntry> = (0..cap as u64)
                .map(|i| if i % 3 == 0 { del(i) } else { put(i, !i) })
                .collect();
            for (i, e) in recs.iter().enumerate() {
                set_record(slots, &mut b, i, e);
            }
            for (i, e) in recs.iter().enumerate() {
                assert_eq!(record(slots, &b, i), Some(*e), "{layout:?} {i}");
            }
            set_record(slots, &mut b, 3, &put(3, 7));
            assert_eq!(record(slots, &b, 3), Some(put(3, 7)));
            assert_eq!(record(slots, &b, 0), Some(del(0)));
            assert_eq!(record(slots, &b, 6), Some(del(6)));
        }
    }

    proptest::proptest! {
        /// `find` (binary search of the sorted base, newest-first scan of the appended
        /// records) answers as replaying the whole leaf in append order does, in both
        /// layouts: for keys of the base, keys appended over them (puts and deletes, in
        /// the base's segments and after it) and keys the leaf never held.
        #[test]
        fn find_answers_as_the_replayed_leaf_does(
            base_len in 0usize..88,
            appends in proptest::collection::vec((0u64..120, 0u64..4), 0..60),
            wide in proptest::bool::ANY,
        ) {
            let layout = if wide { Layout::Wide } else { Layout::Packed };
            let total = 4u16;
            let cap = layout.capacity(512);
            let mut pager = Pager::in_memory(512, 16);
            let start = pager.alloc_run(u64::from(total)).unwrap().start;
            // Even keys 0, 2, ... form the base; appends hit base keys and odd keys.
            let base: Vec<(u64, u64)> = (0..base_len as u64).map(|i| (2 * i, 1000 + i)).collect();
            let mut last = rewrite(layout, &mut pager, start, total, &base).unwrap();
            let room = usize::from(total) * cap - base_len;
            let recs: Vec<OpqEntry> = appends
                .iter()
                .take(room)
                .map(|&(k, v)| if v == 0 { del(k) } else { put(k, v) })
                .collect();
            for chunk in recs.chunks(7) {
                let count = tail(layout, &mut pager, start, total, last).unwrap();
                last = append(layout, &mut pager, start, total, last, count, chunk).unwrap();
            }
            let img = load(layout, &mut pager, start, total, None).unwrap();
            proptest::prop_assert_eq!(img.base, base_len);
            for key in 0..200u64 {
                let want = img.records.iter().rev().find(|r| r.key == key).copied();
                for known in [None, Some(last)] {
                    let (got, got_last) = find(layout, &mut pager, start, total, known, key).unwrap();
                    proptest::prop_assert_eq!(got, want, "key {}", key);
                    proptest::prop_assert_eq!(got_last, last);
                }
            }
        }
    }

    /// Hostile bytes (crate::hostile): a damaged leaf segment of either layout gives its
    /// records or corruption; a count of `u32::MAX` is refused before it sizes a vector.
    #[test]
    fn hostile_leaf_segments_decode_or_are_corruption() {
        for layout in [Layout::Wide, Layout::Packed] {
            let cap = layout.capacity(512);
            let slots = Slots::of(layout, 512);
            let mut valid = vec![0u8; 512];
            page::set_kind(&mut valid, layout.kind());
            write_u32(&mut valid, COUNT, 2);
            valid[INDEX..INDEX + 2].copy_from_slice(&0u16.to_le_bytes());
            valid[TOTAL..TOTAL + 2].copy_from_slice(&1u16.to_le_bytes());
            set_record(slots, &mut valid, 0, &put(4, 5));
            set_record(slots, &mut valid, 1, &del(4));
            page::seal(12, &mut valid);
            crate::hostile::fuzz_page("PIO leaf segment", 12, &valid, |b| {
                let records = segment_header(layout, 12, b, 0, 1, cap).and_then(|h| {
                    (0..h.count)
                        .map(|i| checked_record(slots, 12, b, i))
                        .collect::<Result<Vec<_>>>()
                });
                crate::error::ok_or_corruption(records)
            });
        }
    }
}
