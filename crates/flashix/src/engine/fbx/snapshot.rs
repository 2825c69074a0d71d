//! The NTT snapshot a checkpoint writes to pages (module doc, Durability).
//!
//! # Format
//! A byte stream cut into pages of kind [`KIND_NTT`]:
//! ```text
//! page:   envelope (16) | u32 bytes of stream in this page | stream bytes | zeros
//! stream: u32 magic "FBXN" | u32 version 1 | u64 leaves | u64 inner nodes
//!         leaves x { u64 id | u32 exact | u32 pending | u64 acc | u8 compact | u32 n | n x u64 page }
//!         inner  x { u64 id | u64 page }
//! ```
//! The manifest names the pages in order and the stream's length. The decoder checks every
//! count against the bytes left, so a damaged header cannot make it allocate more than the
//! stream justifies.

use super::{LeafClean, LeafMeta};
use crate::error::{Error, Result};
use crate::io::PageId;
use crate::page::{self, DATA_FILE};

/// Page kind of an NTT snapshot page.
pub const KIND_NTT: u16 = 0x4e46;
const MAGIC: u32 = u32::from_le_bytes(*b"FBXN");
const VERSION: u32 = 1;
const BODY: usize = page::HEADER + 4;

/// What a snapshot holds.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Snapshot {
    pub leaves: Vec<(u64, LeafMeta, Vec<PageId>)>,
    pub inner: Vec<(u64, PageId)>,
}

/// The stream of `s`.
pub(crate) fn encode(s: &Snapshot) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&MAGIC.to_le_bytes());
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(s.leaves.len() as u64).to_le_bytes());
    out.extend_from_slice(&(s.inner.len() as u64).to_le_bytes());
    for (id, m, pages) in &s.leaves {
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&u32::from(m.exact).to_le_bytes());
        out.extend_from_slice(&u32::from(m.pending).to_le_bytes());
        out.extend_from_slice(&m.clean.state().acc.to_le_bytes());
        out.push(u8::from(m.compact));
        out.extend_from_slice(&(pages.len() as u32).to_le_bytes());
        for p in pages {
            out.extend_from_slice(&p.to_le_bytes());
        }
    }
    for (id, p) in &s.inner {
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&p.to_le_bytes());
    }
    out
}

/// Stream bytes one page carries.
pub(crate) fn per_page(page_size: usize) -> usize {
    page_size - BODY
}

/// The unsealed page holding `chunk` of the stream.
pub(crate) fn page_of(chunk: &[u8], page_size: usize) -> Vec<u8> {
    let mut buf = vec![0u8; page_size];
    page::set_kind(&mut buf, KIND_NTT);
    buf[page::HEADER..BODY].copy_from_slice(&(chunk.len() as u32).to_le_bytes());
    buf[BODY..BODY + chunk.len()].copy_from_slice(chunk);
    buf
}

/// Append the stream bytes of a verified snapshot page to `out`.
pub(crate) fn read_page(buf: &[u8], pid: PageId, out: &mut Vec<u8>) -> Result<()> {
    if page::kind(buf) != KIND_NTT {
        return Err(Error::corruption(
            DATA_FILE,
            Some(pid),
            format!(
                "page kind {:#x} is not an NTT snapshot page",
                page::kind(buf)
            ),
        ));
    }
    let n = page::read_u32(buf, page::HEADER) as usize;
    if n > buf.len() - BODY {
        return Err(Error::corruption(
            DATA_FILE,
            Some(pid),
            format!("NTT snapshot page claims {n} bytes"),
        ));
    }
    out.extend_from_slice(&buf[BODY..BODY + n]);
    Ok(())
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N]> {
        let s = self
            .b
            .get(self.at..self.at + N)
            .ok_or_else(|| bad("the NTT snapshot ends early"))?;
        self.at += N;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }
    fn u64(&mut self) -> Result<u64> {
        self.take::<8>().map(u64::from_le_bytes)
    }
    fn u32(&mut self) -> Result<u32> {
        self.take::<4>().map(u32::from_le_bytes)
    }
    fn left(&self) -> usize {
        self.b.len() - self.at
    }
}

fn bad(what: impl Into<String>) -> Error {
    Error::corruption(DATA_FILE, None, what)
}

/// Decode a stream.
pub(crate) fn decode(b: &[u8]) -> Result<Snapshot> {
    let mut r = Reader { b, at: 0 };
    if r.u32()? != MAGIC {
        return Err(bad("NTT snapshot: bad magic"));
    }
    let v = r.u32()?;
    if v != VERSION {
        return Err(bad(format!("NTT snapshot version {v}")));
    }
    let leaves = r.u64()?;
    let inner = r.u64()?;
    // A leaf takes at least 29 bytes, an inner node 16: no count beyond what the bytes hold.
    if leaves
        .saturating_mul(29)
        .saturating_add(inner.saturating_mul(16))
        > r.left() as u64
    {
        return Err(bad(format!(
            "NTT snapshot claims {leaves} leaves and {inner} inner nodes in {} bytes",
            r.left()
        )));
    }
    let mut s = Snapshot {
        leaves: Vec::with_capacity(leaves as usize),
        inner: Vec::with_capacity(inner as usize),
    };
    for _ in 0..leaves {
        let id = r.u64()?;
        let exact = r.u32()?;
        let pending = r.u32()?;
        let acc = r.u64()?;
        let compact = r.take::<1>()?[0] != 0;
        let n = r.u32()? as usize;
        if n.saturating_mul(8) > r.left() {
            return Err(bad(format!("NTT snapshot: leaf {id} claims {n} pages")));
        }
        let mut pages = Vec::with_capacity(n);
        for _ in 0..n {
            pages.push(r.u64()?);
        }
        let meta = LeafMeta {
            // A leaf holds fewer than 2^16 entries (`LeafMeta`): a larger count is cut.
            exact: u16::try_from(exact).unwrap_or(u16::MAX),
            pending: u16::try_from(pending).unwrap_or(u16::MAX),
            clean: LeafClean::new(crate::cost::logclean::CleanState { acc }),
            compact,
        };
        s.leaves.push((id, meta, pages));
    }
    for _ in 0..inner {
        s.inner.push((r.u64()?, r.u64()?));
    }
    if r.left() != 0 {
        return Err(bad(format!(
            "NTT snapshot: {} bytes after its end",
            r.left()
        )));
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> Snapshot {
        Snapshot {
            leaves: vec![
                (
                    1,
                    LeafMeta {
                        exact: 3,
                        pending: 2,
                        clean: LeafClean::new(crate::cost::logclean::CleanState { acc: 9 }),
                        compact: false,
                    },
                    vec![10, 12],
                ),
                (5, LeafMeta::default(), vec![]),
            ],
            inner: vec![(2, 11)],
        }
    }

    #[test]
    fn a_snapshot_round_trips_through_pages() {
        let s = sample();
        let stream = encode(&s);
        let mut back = Vec::new();
        for (i, chunk) in stream.chunks(per_page(512)).enumerate() {
            let mut p = page_of(chunk, 512);
            page::seal(i as u64, &mut p);
            page::verify(i as u64, &p).unwrap();
            read_page(&p, i as u64, &mut back).unwrap();
        }
        assert_eq!(decode(&back).unwrap(), s);
    }

    proptest! {
        /// Mutated or random streams decode to an error or a value, never a panic.
        #[test]
        fn damaged_streams_never_panic(
            at in 0usize..200, byte in any::<u8>(), cut in 0usize..200,
            junk in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let mut s = encode(&sample());
            if at < s.len() { s[at] = byte; }
            let _ = decode(&s);
            s.truncate(cut.min(s.len()));
            let _ = decode(&s);
            let _ = decode(&junk);
        }
    }

    /// The format, frozen: a change here is a format change (bump `VERSION`).
    #[test]
    fn the_stream_format_is_frozen() {
        let hex: String = encode(&sample())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            hex,
            concat!(
                "4642584e",
                "01000000",
                "0200000000000000",
                "0100000000000000",
                // leaf 1: exact 3, pending 2, acc 9, not compact, pages 10 and 12
                "0100000000000000",
                "03000000",
                "02000000",
                "0900000000000000",
                "00",
                "02000000",
                "0a00000000000000",
                "0c00000000000000",
                // leaf 5: empty
                "0500000000000000",
                "00000000",
                "00000000",
                "0000000000000000",
                "00",
                "00000000",
                // inner node 2 at page 11
                "0200000000000000",
                "0b00000000000000",
            )
        );
    }

    #[test]
    fn a_header_claiming_huge_counts_is_refused_before_allocating() {
        let mut s = encode(&Snapshot::default());
        s[8..16].copy_from_slice(&(1u64 << 60).to_le_bytes());
        assert!(decode(&s).is_err());
    }

    /// Hostile bytes (crate::hostile): a damaged NTT snapshot stream decodes or is
    /// corruption; counts it cannot hold (2^60 leaves) are refused before they size a
    /// vector.
    #[test]
    fn hostile_snapshot_streams_decode_or_are_corruption() {
        let stream = encode(&sample());
        crate::hostile::fuzz_stream("NTT snapshot", &stream, |b| {
            crate::error::ok_or_corruption(decode(b))
        });
    }
}
