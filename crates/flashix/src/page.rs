//! The page envelope every page of a [`crate::io::Device`] carries, so that a torn or
//! flipped page is detected (Contract 4) and a misdirected write is caught.
//!
//! ```text
//! offset  size  field
//! 0       4     crc32c of bytes 4..page_size (little-endian)
//! 4       8     page id the page was written to (little-endian)
//! 12      2     page kind (engine-defined, 0 = never written)
//! 14      2     reserved (0)
//! 16      ...   engine payload
//! ```

use crate::error::{Error, Result};
use crate::io::PageId;

/// Bytes of the envelope at the start of every page.
pub const HEADER: usize = 16;

/// The file name used in corruption errors for pages of the data device.
pub const DATA_FILE: &str = "data";

/// Fill in checksum and page id before the page is written.
pub fn seal(page: PageId, buf: &mut [u8]) {
    buf[4..12].copy_from_slice(&page.to_le_bytes());
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
    let id = read_u64(buf, 4);
    if id != page {
        return Err(Error::corruption(
            DATA_FILE,
            Some(page),
            format!("page holds the contents of page {id} (misdirected write)"),
        ));
    }
    Ok(())
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
