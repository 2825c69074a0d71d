//! The page envelope every page of a [`crate::io::Device`] carries, so that a torn or
//! flipped page is detected (contract point 4 of docs/design.md) and a misdirected write is caught.
//!
//! ```text
//! offset  size  field
//! 0       4     crc32c of bytes 4..page_size (little-endian)
//! 4       6     page id the page was written to (little-endian, < 2^48 = MAX_PAGES)
//! 10      2     generation stamp, high half (little-endian)
//! 12      2     page kind (engine-defined, 0 = never written)
//! 14      2     generation stamp, low half (little-endian)
//! 16      ...   engine payload
//! ```
//!
//! The **generation stamp** ([`stamp`], [`set_stamp`]) is the durability layer's, not the
//! engine's: the [`crate::durable::Pager`] writes the WAL generation ([`stamp_of`]) in which
//! it took a page's before-image (or allocated the page) into the page, so that it needs
//! no in-memory set of imaged pages (contract point 3 of docs/design.md; format version 4). 0 means "never
//! stamped"; pages written past the pool (runs, components, range pages) keep 0. Format
//! version 3 had the page id in all 8 bytes 4..12 and 14..16 reserved as 0: its pages read
//! as page ids below 2^48 with stamp 0.

use crate::error::{Error, Result};
use crate::io::PageId;

/// Bytes of the envelope at the start of every page.
pub const HEADER: usize = 16;

pub use crate::io::MAX_PAGES;

/// The file name used in corruption errors for pages of the data device.
pub const DATA_FILE: &str = "data";

/// Fill in checksum and page id before the page is written (the generation stamp is
/// kept).
pub fn seal(page: PageId, buf: &mut [u8]) {
    debug_assert!(page < MAX_PAGES);
    buf[4..10].copy_from_slice(&page.to_le_bytes()[..6]);
    let crc = crc32c::crc32c(&buf[4..]);
    buf[0..4].copy_from_slice(&crc.to_le_bytes());
}

/// Check a page read from `page`: checksum, then page id.
pub fn verify(page: PageId, buf: &[u8]) -> Result<()> {
    let stored = u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]);
    if stored != crc32c::crc32c(&buf[4..]) {
        let detail = if buf.iter().all(|&b| b == 0) {
            "page was never written (all zeros)"
        } else {
            "checksum mismatch"
        };
        return Err(Error::corruption(DATA_FILE, Some(page), detail));
    }
    let id = read_u64(buf, 4) & (MAX_PAGES - 1);
    if id != page {
        return Err(Error::corruption(
            DATA_FILE,
            Some(page),
            format!("page holds the contents of page {id} (misdirected write)"),
        ));
    }
    Ok(())
}

/// The generation stamp (see the module doc); 0 when never stamped.
pub fn stamp(buf: &[u8]) -> u32 {
    u32::from(u16::from_le_bytes([buf[10], buf[11]])) << 16
        | u32::from(u16::from_le_bytes([buf[14], buf[15]]))
}

/// Set the generation stamp (the checksum is filled in by the next [`seal`]).
pub fn set_stamp(buf: &mut [u8], stamp: u32) {
    buf[10..12].copy_from_slice(&((stamp >> 16) as u16).to_le_bytes());
    buf[14..16].copy_from_slice(&(stamp as u16).to_le_bytes());
}

/// The stamp of WAL generation `generation` (>= 1): never 0, and distinct for any
/// 2^32 - 1 consecutive generations.
pub fn stamp_of(generation: u64) -> u32 {
    (generation.wrapping_sub(1) % u64::from(u32::MAX)) as u32 + 1
}

/// The page kind field.
pub fn kind(buf: &[u8]) -> u16 {
    u16::from_le_bytes([buf[12], buf[13]])
}

/// Set the page kind field.
pub fn set_kind(buf: &mut [u8], kind: u16) {
    buf[12..14].copy_from_slice(&kind.to_le_bytes());
}

/// Little-endian u64 at `off`.
#[inline]
pub fn read_u64(buf: &[u8], off: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&buf[off..off + 8]);
    u64::from_le_bytes(b)
}

/// Store a little-endian u64 at `off`.
#[inline]
pub fn write_u64(buf: &mut [u8], off: usize, v: u64) {
    buf[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

/// Little-endian u32 at `off`.
#[inline]
pub fn read_u32(buf: &[u8], off: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&buf[off..off + 4]);
    u32::from_le_bytes(b)
}

/// Store a little-endian u32 at `off`.
#[inline]
pub fn write_u32(buf: &mut [u8], off: usize, v: u32) {
    buf[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

/// Open a gap for one entry at slot `i` of an array of `n` fixed-width entries that
/// starts at byte `base` (slotted pages of fixed-length records; the caller checked room).
pub fn open_slot(buf: &mut [u8], base: usize, width: usize, n: usize, i: usize) {
    let start = base + i * width;
    buf.copy_within(start..base + n * width, start + width);
}

/// Close the gap of slot `i` in an array of `n` fixed-width entries at `base`, zeroing the
/// freed last slot.
pub fn close_slot(buf: &mut [u8], base: usize, width: usize, n: usize, i: usize) {
    let start = base + i * width;
    buf.copy_within(start + width..base + n * width, start);
    buf[base + (n - 1) * width..base + n * width].fill(0);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn sealed_pages_verify_and_any_flip_is_caught(
            body in proptest::collection::vec(any::<u8>(), 512 - HEADER),
            page in 0u64..1 << 40,
            flip in 0usize..512 * 8,
        ) {
            let mut buf = vec![0u8; 512];
            buf[HEADER..].copy_from_slice(&body);
            seal(page, &mut buf);
            prop_assert!(verify(page, &buf).is_ok());
            prop_assert!(verify(page + 1, &buf).is_err());
            buf[flip / 8] ^= 1 << (flip % 8);
            let is_corruption = matches!(verify(page, &buf), Err(Error::Corruption { page: Some(p), .. }) if p == page);
            prop_assert!(is_corruption);
        }
    }

    /// The envelope's bytes are frozen (format version 4): page id in 4..10, stamp halves
    /// in 10..12 and 14..16, kind in 12..14; a version-3 page (8-byte id, reserved 0)
    /// reads as stamp 0.
    #[test]
    fn envelope_layout_is_frozen() {
        let mut buf = vec![0u8; 64];
        set_kind(&mut buf, 0x0203);
        set_stamp(&mut buf, 0x0A0B_0C0D);
        seal(0x0000_1122_3344_5566, &mut buf);
        assert_eq!(
            &buf[4..16],
            &[0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0x0B, 0x0A, 0x03, 0x02, 0x0D, 0x0C]
        );
        assert_eq!(stamp(&buf), 0x0A0B_0C0D);
        assert!(verify(0x0000_1122_3344_5566, &buf).is_ok());
        // Only the stamp changed: the same id, another stamp, still verifies once sealed.
        set_stamp(&mut buf, 7);
        seal(0x0000_1122_3344_5566, &mut buf);
        assert!(verify(0x0000_1122_3344_5566, &buf).is_ok());
        let mut v3 = vec![0u8; 64];
        v3[4..12].copy_from_slice(&77u64.to_le_bytes());
        let crc = crc32c::crc32c(&v3[4..]);
        v3[0..4].copy_from_slice(&crc.to_le_bytes());
        assert!(verify(77, &v3).is_ok());
        assert_eq!(stamp(&v3), 0);
    }

    #[test]
    fn stamps_are_never_zero_and_follow_the_generation() {
        assert_eq!(stamp_of(1), 1);
        assert_eq!(stamp_of(2), 2);
        assert_eq!(stamp_of(u64::from(u32::MAX)), u32::MAX);
        assert_eq!(stamp_of(u64::from(u32::MAX) + 1), 1);
        assert_ne!(stamp_of(0), 0);
    }

    /// Hostile bytes (crate::hostile): any page, damaged or random, verifies or is
    /// corruption naming the page.
    #[test]
    fn hostile_pages_verify_or_are_corruption() {
        let mut valid = vec![3u8; 512];
        set_kind(&mut valid, 1);
        seal(9, &mut valid);
        crate::hostile::fuzz_page("page envelope", 9, &valid, |b| {
            crate::error::ok_or_corruption(verify(9, b))
        });
    }
}
