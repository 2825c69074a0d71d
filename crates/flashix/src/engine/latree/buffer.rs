//! Buffers: append-only chains of buffer pages of messages, attached to nodes.
//!
//! ```text
//! offset  size  field
//! 0       16    page envelope (crate::page): crc32c, page id, kind KIND_BUFFER
//! 16      4     message count n
//! 20      4     reserved (0)
//! 24      8     prev: the next older page of the chain (NONE for the oldest, the head)
//! 32      24*n  messages in append order: key u64, value u64, seq << 1 | delete
//! ```
//!
//! A chain is linked from its newest page (the tail) back to its oldest (the head); the
//! table of buffers ([`Buffer`]) keeps both ends. For every key, the chain's order (head
//! to tail, and within a page) is the order of its messages' sequence numbers, so the last
//! message of a key in the chain is its newest: a lookup scans from the tail and stops at
//! the first hit, and an emptying may process the chain oldest first, a chunk at a time.

use super::adapt::Adapt;
use crate::durable::Pager;
use crate::error::{Error, Result};
use crate::io::PageId;
use crate::kit::bnode::node::NONE;
use crate::page::{self, read_u32, read_u64, write_u32, write_u64, DATA_FILE};
use serde::{Deserialize, Serialize};

/// Page kind of a buffer page ("LA").
pub const KIND_BUFFER: u16 = 0x4c41;
const COUNT: usize = page::HEADER;
const PREV: usize = page::HEADER + 8;
const MSGS: usize = page::HEADER + 16;
const MSG: usize = 24;

/// Messages a buffer page of `page_size` bytes holds.
pub fn per_page(page_size: usize) -> usize {
    (page_size - MSGS) / MSG
}

/// A buffered update: an upsert of `val`, or a delete of `key`, with its sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Msg {
    pub key: u64,
    pub val: u64,
    pub seq: u64,
    pub delete: bool,
}

/// One buffer in the table of buffers (saved in the manifest at checkpoint). Only
/// non-empty buffers have an entry.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Buffer {
    /// Level of the node the buffer is attached to.
    pub level: u32,
    /// Oldest page.
    pub head: PageId,
    /// Newest page.
    pub tail: PageId,
    pub pages: u64,
    pub entries: u64,
    /// ADAPT's state (in memory only: a reopened index starts its registers afresh).
    #[serde(skip)]
    pub adapt: Adapt,
}

fn bad(pid: PageId, detail: impl Into<String>) -> Error {
    Error::corruption(DATA_FILE, Some(pid), detail)
}

fn check_kind(pid: PageId, b: &[u8], per: usize) -> Result<usize> {
    if page::kind(b) != KIND_BUFFER {
        return Err(bad(
            pid,
            format!(
                "page of kind {} where a buffer page was expected",
                page::kind(b)
            ),
        ));
    }
    let n = read_u32(b, COUNT) as usize;
    if n > per {
        return Err(bad(
            pid,
            format!("buffer page holds {n} messages, at most {per} fit"),
        ));
    }
    Ok(n)
}

fn msg_at(b: &[u8], i: usize) -> Msg {
    let off = MSGS + i * MSG;
    let tag = read_u64(b, off + 16);
    Msg {
        key: read_u64(b, off),
        val: read_u64(b, off + 8),
        seq: tag >> 1,
        delete: tag & 1 == 1,
    }
}

fn put_msg(b: &mut [u8], i: usize, m: &Msg) {
    let off = MSGS + i * MSG;
    write_u64(b, off, m.key);
    write_u64(b, off + 8, m.val);
    write_u64(b, off + 16, (m.seq << 1) | u64::from(m.delete));
}

/// The messages of buffer page `pid` (bytes `b`) in append order, and its `prev` link.
fn decode_page(pid: PageId, b: &[u8]) -> Result<(Vec<Msg>, PageId)> {
    let n = check_kind(pid, b, per_page(b.len()))?;
    Ok(((0..n).map(|i| msg_at(b, i)).collect(), read_u64(b, PREV)))
}

/// The messages of buffer page `pid` in append order, and its `prev` link.
pub fn read_page(pager: &Pager, pid: PageId) -> Result<(Vec<Msg>, PageId)> {
    pager.read_shared(pid, |b| decode_page(pid, b))?
}

/// Append `msgs` (in order) to `buf` (`None`: an empty buffer of a node at `level`).
pub fn append(
    pager: &mut Pager,
    mut buf: Option<Buffer>,
    level: u32,
    msgs: &[Msg],
) -> Result<Option<Buffer>> {
    let per = per_page(pager.page_size());
    let mut rest = msgs;
    while !rest.is_empty() {
        let room = match &buf {
            Some(b) => {
                let tail = b.tail;
                per - pager.read(tail, |p| check_kind(tail, p, per))??
            }
            None => 0,
        };
        if let (Some(b), true) = (buf.as_mut(), room > 0) {
            let take = room.min(rest.len());
            let part = &rest[..take];
            pager.write(b.tail, |p| {
                let n = read_u32(p, COUNT) as usize;
                for (i, m) in part.iter().enumerate() {
                    put_msg(p, n + i, m);
                }
                write_u32(p, COUNT, (n + take) as u32);
            })?;
            b.entries += take as u64;
            rest = &rest[take..];
            continue;
        }
        let take = per.min(rest.len());
        let part = &rest[..take];
        let prev = buf.as_ref().map_or(NONE, |b| b.tail);
        let pid = pager.alloc_page()?;
        pager.write(pid, |p| {
            p[page::HEADER..].fill(0);
            page::set_kind(p, KIND_BUFFER);
            write_u32(p, COUNT, take as u32);
            write_u64(p, PREV, prev);
            for (i, m) in part.iter().enumerate() {
                put_msg(p, i, m);
            }
        })?;
        match buf.as_mut() {
            Some(b) => {
                b.tail = pid;
                b.pages += 1;
                b.entries += take as u64;
            }
            None => {
                buf = Some(Buffer {
                    level,
                    head: pid,
                    tail: pid,
                    pages: 1,
                    entries: take as u64,
                    adapt: Adapt::default(),
                })
            }
        }
        rest = &rest[take..];
    }
    Ok(buf)
}

/// The pages of `buf`, oldest first, checking the chain against the table.
pub fn pages_oldest_first(pager: &Pager, buf: &Buffer) -> Result<Vec<PageId>> {
    let per = per_page(pager.page_size());
    let mut out = Vec::new();
    let mut pid = buf.tail;
    while pid != NONE {
        if out.len() as u64 >= buf.pages {
            return Err(bad(
                pid,
                format!("buffer chain longer than its {} pages", buf.pages),
            ));
        }
        out.push(pid);
        pid = pager.read_shared(pid, |b| check_kind(pid, b, per).map(|_| read_u64(b, PREV)))??;
    }
    if out.len() as u64 != buf.pages || out.last() != Some(&buf.head) {
        return Err(bad(
            buf.tail,
            format!(
                "buffer chain of {} pages ending at {:?}, the table says {} pages from head {}",
                out.len(),
                out.last(),
                buf.pages,
                buf.head
            ),
        ));
    }
    out.reverse();
    Ok(out)
}

/// The newest message for `key` in `buf`, scanning newest first, and the pages scanned.
pub fn lookup(pager: &Pager, buf: &Buffer, key: u64) -> Result<(Option<Msg>, u64)> {
    let per = per_page(pager.page_size());
    let mut pid = buf.tail;
    let mut scanned = 0;
    while pid != NONE {
        if scanned >= buf.pages {
            return Err(bad(
                pid,
                format!("buffer chain longer than its {} pages", buf.pages),
            ));
        }
        scanned += 1;
        let (hit, prev) = pager.read_shared(pid, |b| {
            let n = check_kind(pid, b, per)?;
            let hit = (0..n).rev().map(|i| msg_at(b, i)).find(|m| m.key == key);
            Ok::<_, Error>((hit, read_u64(b, PREV)))
        })??;
        if hit.is_some() {
            return Ok((hit, scanned));
        }
        pid = prev;
    }
    Ok((None, scanned))
}

/// One chain of `older`'s messages followed by `newer`'s (each may be absent), attached to
/// a node at `level`: the newer chain's head is linked to the older chain's tail.
pub fn concat(
    pager: &mut Pager,
    older: Option<Buffer>,
    newer: Option<Buffer>,
    level: u32,
) -> Result<Option<Buffer>> {
    let (a, b) = match (older, newer) {
        (Some(a), Some(b)) => (a, b),
        (one, None) | (None, one) => {
            return Ok(one.map(|mut b| {
                b.level = level;
                b
            }))
        }
    };
    let per = per_page(pager.page_size());
    let head = b.head;
    pager.read(head, |p| check_kind(head, p, per))??;
    pager.write(head, |p| write_u64(p, PREV, a.tail))?;
    Ok(Some(Buffer {
        level,
        head: a.head,
        tail: b.tail,
        pages: a.pages + b.pages,
        entries: a.entries + b.entries,
        adapt: Adapt::default(),
    }))
}

/// Split `buf` by key: messages below `sep` and at or above it, as two new chains in the
/// same order (one page in memory at a time); the old pages are freed.
pub fn split(
    pager: &mut Pager,
    buf: Buffer,
    sep: u64,
    level: u32,
) -> Result<(Option<Buffer>, Option<Buffer>)> {
    let (mut left, mut right) = (None, None);
    for pid in pages_oldest_first(pager, &buf)? {
        let (msgs, _) = read_page(pager, pid)?;
        pager.free_page(pid);
        let (lo, hi): (Vec<Msg>, Vec<Msg>) = msgs.into_iter().partition(|m| m.key < sep);
        left = append(pager, left, level, &lo)?;
        right = append(pager, right, level, &hi)?;
    }
    Ok((left, right))
}

/// For each key the newest of `msgs` (given oldest first): sorted by key.
pub fn newest_per_key(mut msgs: Vec<Msg>) -> Vec<Msg> {
    msgs.sort_by_key(|m| m.key);
    let mut out: Vec<Msg> = Vec::with_capacity(msgs.len());
    for m in msgs {
        match out.last_mut() {
            Some(l) if l.key == m.key => *l = m,
            _ => out.push(m),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newest_wins_and_keys_come_sorted() {
        let m = |key, seq, delete| Msg {
            key,
            val: seq * 10,
            seq,
            delete,
        };
        let got = newest_per_key(vec![
            m(5, 1, false),
            m(3, 2, false),
            m(5, 3, true),
            m(3, 4, false),
        ]);
        assert_eq!(got, vec![m(3, 4, false), m(5, 3, true)]);
    }

    #[test]
    fn messages_round_trip_through_a_page() {
        let mut b = vec![0u8; 512];
        let m = Msg {
            key: u64::MAX,
            val: 0,
            seq: (1 << 62) + 5,
            delete: true,
        };
        put_msg(&mut b, 3, &m);
        assert_eq!(msg_at(&b, 3), m);
        assert_eq!(per_page(512), 20);
    }

    /// Hostile bytes (crate::hostile): a damaged buffer page decodes (at most a page's
    /// messages) or is corruption naming the page.
    #[test]
    fn hostile_buffer_pages_decode_or_are_corruption() {
        let mut valid = vec![0u8; 512];
        page::set_kind(&mut valid, KIND_BUFFER);
        for i in 0..per_page(512) {
            let m = Msg {
                key: i as u64 * 7,
                val: i as u64,
                seq: i as u64 + 1,
                delete: i % 3 == 0,
            };
            put_msg(&mut valid, i, &m);
        }
        write_u32(&mut valid, COUNT, per_page(512) as u32);
        write_u64(&mut valid, PREV, 12);
        page::seal(9, &mut valid);
        crate::hostile::fuzz_page("la-tree buffer", 9, &valid, |b| {
            let r = page::verify(9, b).and_then(|_| decode_page(9, b));
            if let Ok((msgs, _)) = &r {
                if msgs.len() > per_page(b.len()) {
                    return Err(format!("{} messages in a page", msgs.len()));
                }
            }
            crate::error::ok_or_corruption(r)
        });
    }
}
