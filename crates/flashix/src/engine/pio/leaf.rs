//! Leaf nodes of `L` leaf segments (PIO B-tree paper §3.2.2, Figure 8): `L` contiguous
//! pages, each one segment, read as one multi-page request (package-level parallelism,
//! principle 1). A leaf is **append-only** between rewrites: records of update operations
//! are appended after the most recent one, whatever their key, so an update writes only
//! the last segment (§3.2.2 "Append-only feature").
//!
//! ```text
//! segment page (each of the L pages of a leaf)
//! offset  size  field
//! 0       16    page envelope (crate::page): crc32c, page id, kind 3 (PIO leaf segment)
//! 16      4     records in this segment n
//! 20      2     segment index i (0..L)
//! 22      2     L, segments of the leaf
//! 24      4     segment 0 only: `base`, records at the start of the leaf that a rewrite
//!               left sorted (strictly increasing keys, all puts); 0 in other segments
//! 28      4     reserved (0)
//! 32      17*n  records: key u64, value u64, op u8 (1 put, 2 delete)
//! ```
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

/// Page kind of a leaf segment.
pub const KIND_LEAF_SEGMENT: u16 = 3;
const COUNT: usize = page::HEADER;
const INDEX: usize = page::HEADER + 4;
const TOTAL: usize = page::HEADER + 6;
const BASE: usize = page::HEADER + 8;
const RECORDS: usize = page::HEADER + 16;
const RECORD: usize = 17;

/// Records that fit in one segment of `page_size` bytes.
pub fn segment_capacity(page_size: usize) -> usize {
    (page_size - RECORDS) / RECORD
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

/// Read a segment's header, checking its kind.
pub fn header(pid: PageId, b: &[u8]) -> Result<SegmentHeader> {
    if page::kind(b) != KIND_LEAF_SEGMENT {
        return Err(Error::corruption(
            DATA_FILE,
            Some(pid),
            format!(
                "page kind {} where a PIO leaf segment was expected",
                page::kind(b)
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

fn record(b: &[u8], i: usize) -> Option<OpqEntry> {
    let off = RECORDS + i * RECORD;
    let op = match *b.get(off + 16)? {
        1 => Op::Put,
        2 => Op::Delete,
        _ => return None,
    };
    Some(OpqEntry {
        key: read_u64(b, off),
        value: read_u64(b, off + 8),
        op,
    })
}

fn set_record(b: &mut [u8], i: usize, e: &OpqEntry) {
    let off = RECORDS + i * RECORD;
    write_u64(b, off, e.key);
    write_u64(b, off + 8, e.value);
    b[off + 16] = match e.op {
        Op::Put => 1,
        Op::Delete => 2,
    };
}

/// A segment's header, checked against the segment's place in its leaf.
fn segment_header(
    pid: PageId,
    b: &[u8],
    index: u16,
    total: u16,
    cap: usize,
) -> Result<SegmentHeader> {
    let h = header(pid, b)?;
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
fn checked_record(pid: PageId, b: &[u8], i: usize) -> Result<OpqEntry> {
    record(b, i).ok_or_else(|| {
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

/// Visit the segments of the leaf at `start` (`total` segments, prefetched by a psync read
/// before) in order with their checked headers: up to `known_last` if the LSMap knows it,
/// otherwise until the first segment that is not full. Returns the leaf's `base` and its
/// last segment (the last one holding a record; 0 for an empty leaf).
fn walk(
    pager: &mut Pager,
    start: PageId,
    total: u16,
    known_last: Option<u16>,
    mut visit: impl FnMut(PageId, &[u8], &SegmentHeader) -> Result<()>,
) -> Result<(usize, u16)> {
    let cap = segment_capacity(pager.page_size());
    let (mut base, mut last) = (0, 0u16);
    for i in 0..total {
        let pid = start + u64::from(i);
        let h = pager.read(pid, |b| {
            let h = segment_header(pid, b, i, total, cap)?;
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
pub fn load(
    pager: &mut Pager,
    start: PageId,
    total: u16,
    known_last: Option<u16>,
) -> Result<LeafImage> {
    let mut records = Vec::new();
    let (base, last) = walk(pager, start, total, known_last, |pid, b, h| {
        records.reserve(h.count);
        for i in 0..h.count {
            records.push(checked_record(pid, b, i)?);
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
pub fn find(
    pager: &mut Pager,
    start: PageId,
    total: u16,
    known_last: Option<u16>,
    key: u64,
) -> Result<(Option<OpqEntry>, u16)> {
    let mut newest = None;
    let (_, last) = walk(pager, start, total, known_last, |pid, b, h| {
        for i in (0..h.count).rev() {
            if read_u64(b, RECORDS + i * RECORD) == key {
                newest = Some(checked_record(pid, b, i)?);
                break;
            }
        }
        Ok(())
    })?;
    Ok((newest, last))
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
    pager: &mut Pager,
    start: PageId,
    total: u16,
    entries: &[(u64, u64)],
) -> Result<u16> {
    let cap = segment_capacity(pager.page_size());
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
            page::set_kind(b, KIND_LEAF_SEGMENT);
            write_u32(b, COUNT, chunk.len() as u32);
            b[INDEX..INDEX + 2].copy_from_slice(&i.to_le_bytes());
            b[TOTAL..TOTAL + 2].copy_from_slice(&total.to_le_bytes());
            write_u32(b, BASE, base as u32);
            for (j, &(key, value)) in chunk.iter().enumerate() {
                set_record(
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
pub fn tail(pager: &mut Pager, start: PageId, total: u16, last: u16) -> Result<usize> {
    let pid = start + u64::from(last);
    let h = pager.read(pid, |b| header(pid, b))??;
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
    pager: &mut Pager,
    start: PageId,
    total: u16,
    last: u16,
    count: usize,
    recs: &[OpqEntry],
) -> Result<u16> {
    let cap = segment_capacity(pager.page_size());
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
                set_record(b, n + j, e);
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
        assert_eq!(segment_capacity(512), 28);
        assert_eq!(segment_capacity(4096), 239);
    }

    /// Hostile bytes (crate::hostile): a damaged leaf segment gives its records or
    /// corruption; a count of `u32::MAX` is refused before it sizes a vector.
    #[test]
    fn hostile_leaf_segments_decode_or_are_corruption() {
        let cap = segment_capacity(512);
        let mut valid = vec![0u8; 512];
        page::set_kind(&mut valid, KIND_LEAF_SEGMENT);
        write_u32(&mut valid, COUNT, 2);
        valid[INDEX..INDEX + 2].copy_from_slice(&0u16.to_le_bytes());
        valid[TOTAL..TOTAL + 2].copy_from_slice(&1u16.to_le_bytes());
        set_record(&mut valid, 0, &put(4, 5));
        set_record(&mut valid, 1, &del(4));
        page::seal(12, &mut valid);
        crate::hostile::fuzz_page("PIO leaf segment", 12, &valid, |b| {
            let records = segment_header(12, b, 0, 1, cap).and_then(|h| {
                (0..h.count)
                    .map(|i| checked_record(12, b, i))
                    .collect::<Result<Vec<_>>>()
            });
            crate::error::ok_or_corruption(records)
        });
    }
}
