//! The FTL's record in the spare (out-of-band) area of every page it programs: its length,
//! its encoding and the check of a programmed page against it (layout: the parent module
//! doc, Format).

use crate::sim::nand::NAND_SECTOR;

/// Bytes of the FTL's spare record for pages of `sectors` sectors.
pub fn spare_record_len(sectors: usize) -> usize {
    24 + 4 * sectors
}

/// The spare record of a page (module doc, Format).
pub(super) fn make_spare(len: usize, lpn: u64, seq: u64, data: &[u8]) -> Vec<u8> {
    let n = data.len() / NAND_SECTOR;
    let end = 20 + 4 * n;
    let mut s = vec![0xFFu8; len];
    s[0..8].copy_from_slice(&lpn.to_le_bytes());
    s[8..16].copy_from_slice(&seq.to_le_bytes());
    s[16..20].copy_from_slice(&crc32c::crc32c(data).to_le_bytes());
    for (i, sector) in data.chunks(NAND_SECTOR).enumerate() {
        s[20 + 4 * i..24 + 4 * i].copy_from_slice(&crc32c::crc32c(sector).to_le_bytes());
    }
    let c = crc32c::crc32c(&s[0..end]);
    s[end..end + 4].copy_from_slice(&c.to_le_bytes());
    s
}

/// What a programmed page holds (module doc, Recovery).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PageCheck {
    /// A whole version of `lpn`.
    Valid { lpn: u64, seq: u64 },
    /// Nothing: erased spare, or a torn program (every data sector new or erased).
    Torn,
    /// The record is whole but a data sector is neither its programmed bytes nor erased.
    Damaged { lpn: u64, seq: u64 },
    /// The record is neither erased nor whole.
    BadSpare,
}

pub(super) fn check_page(data: &[u8], s: &[u8]) -> PageCheck {
    let n = data.len() / NAND_SECTOR;
    let end = 20 + 4 * n;
    let u32_at = |o: usize| u32::from_le_bytes([s[o], s[o + 1], s[o + 2], s[o + 3]]);
    let u64_at = |o: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&s[o..o + 8]);
        u64::from_le_bytes(b)
    };
    if s.len() < end + 4 || s[..end + 4].iter().all(|&b| b == 0xFF) {
        return PageCheck::Torn;
    }
    if u32_at(end) != crc32c::crc32c(&s[0..end]) {
        return PageCheck::BadSpare;
    }
    let (lpn, seq) = (u64_at(0), u64_at(8));
    if u32_at(16) == crc32c::crc32c(data) {
        return PageCheck::Valid { lpn, seq };
    }
    let torn = data.chunks(NAND_SECTOR).enumerate().all(|(i, sector)| {
        u32_at(20 + 4 * i) == crc32c::crc32c(sector) || sector.iter().all(|&b| b == 0xFF)
    });
    if torn {
        PageCheck::Torn
    } else {
        PageCheck::Damaged { lpn, seq }
    }
}

/// `(lpn, seq)` of a page holding a whole version.
pub(super) fn parse_spare(data: &[u8], s: &[u8]) -> Option<(u64, u64)> {
    match check_page(data, s) {
        PageCheck::Valid { lpn, seq } => Some((lpn, seq)),
        _ => None,
    }
}

#[cfg(test)]
mod hostile_tests {
    use super::*;

    /// Hostile bytes (crate::hostile): a damaged spare record (the page's data and spare
    /// keep their sizes, fixed by the NAND) is checked and parsed without a panic, and a
    /// parsed one names a whole record.
    #[test]
    fn hostile_spare_records_are_classified() {
        let data = vec![7u8; 2 * NAND_SECTOR];
        let len = spare_record_len(2) + 8;
        let valid = make_spare(len, 42, 9, &data);
        assert_eq!(parse_spare(&data, &valid), Some((42, 9)));
        crate::hostile::fuzz_page("FTL spare record", 0, &valid, |s| {
            let _ = check_page(&data, s);
            let _ = parse_spare(&data, s);
            Ok(())
        });
    }
}
