//! [`NandConfig`]: the geometry and timing of a simulated NAND, their validation, the
//! layout numbers derived from them, and their encoding in the medium's header page (the
//! parent module doc, Medium).

use super::{FILE, NAND_SECTOR};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

const MAGIC: &[u8; 8] = b"FLXNAND1";
const VERSION: u32 = 1;
/// Bytes of the header before its checksum.
const HEADER_BYTES: usize = 8 + 4 + 7 * 4 + 4 * 8;

/// Geometry and timing of a simulated NAND flash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NandConfig {
    /// Data bytes of a page (a power of two, 512 to 16384).
    pub page_bytes: usize,
    /// Spare bytes per 512-byte sector (16: 64 B per 2 KiB page).
    pub spare_bytes_per_sector: usize,
    /// Pages per erase block.
    pub pages_per_block: u32,
    /// Erase blocks.
    pub blocks: u32,
    /// Channels (independent buses).
    pub channels: u32,
    /// Ways (chips) per channel.
    pub ways: u32,
    /// Microseconds to read a page from the cells into the chip's register.
    pub read_us: f64,
    /// Microseconds to program a page from the register.
    pub program_us: f64,
    /// Microseconds to erase a block.
    pub erase_us: f64,
    /// Nanoseconds per byte moved between register and controller (25: 40 MB/s).
    pub bus_ns_per_byte: f64,
    /// Program operations allowed per page between erases (NOP).
    pub max_partial_programs: u32,
}

impl Default for NandConfig {
    fn default() -> Self {
        NandConfig {
            page_bytes: 2048,
            spare_bytes_per_sector: 16,
            pages_per_block: 64,
            blocks: 4096,
            channels: 1,
            ways: 1,
            read_us: 25.0,
            program_us: 200.0,
            erase_us: 1500.0,
            bus_ns_per_byte: 25.0,
            max_partial_programs: 4,
        }
    }
}

impl NandConfig {
    /// Sectors per page.
    pub fn sectors_per_page(&self) -> usize {
        self.page_bytes / NAND_SECTOR
    }

    /// Data bytes of an erase block.
    pub fn block_bytes(&self) -> usize {
        self.page_bytes * self.pages_per_block as usize
    }

    /// Spare bytes of a page.
    pub fn spare_bytes_per_page(&self) -> usize {
        self.sectors_per_page() * self.spare_bytes_per_sector
    }

    /// Data pages of the whole device.
    pub fn total_pages(&self) -> u64 {
        self.blocks as u64 * self.pages_per_block as u64
    }

    /// Check the geometry and timing.
    pub fn validate(&self) -> Result<()> {
        let bad = |what: String| Err(Error::InvalidOptions(format!("NAND config: {what}")));
        if !self.page_bytes.is_power_of_two() || !(NAND_SECTOR..=16384).contains(&self.page_bytes) {
            return bad(format!(
                "page_bytes {} must be a power of two from 512 to 16384",
                self.page_bytes
            ));
        }
        if self.spare_bytes_per_sector > NAND_SECTOR {
            return bad(format!(
                "spare_bytes_per_sector {} is above 512",
                self.spare_bytes_per_sector
            ));
        }
        if self.pages_per_block == 0 || self.pages_per_block > 1 << 16 {
            return bad(format!(
                "pages_per_block {} must be 1 to 65536",
                self.pages_per_block
            ));
        }
        if self.blocks == 0 || self.blocks > 1 << 24 {
            return bad(format!("blocks {} must be 1 to 16777216", self.blocks));
        }
        if self.channels == 0 || self.ways == 0 || self.channels > 1024 || self.ways > 1024 {
            return bad(format!(
                "channels {} and ways {} must be 1 to 1024",
                self.channels, self.ways
            ));
        }
        if self.max_partial_programs == 0 {
            return bad("max_partial_programs must be at least 1".into());
        }
        for (name, v) in [
            ("read_us", self.read_us),
            ("program_us", self.program_us),
            ("erase_us", self.erase_us),
            ("bus_ns_per_byte", self.bus_ns_per_byte),
        ] {
            if !v.is_finite() || v < 0.0 {
                return bad(format!("{name} {v} must be a finite number >= 0"));
            }
        }
        Ok(())
    }

    /// Backing pages of spare (and erase count) per block.
    pub(super) fn spare_pages(&self) -> u64 {
        let bytes = self.pages_per_block as usize * self.spare_bytes_per_page() + 8;
        bytes.div_ceil(self.page_bytes) as u64
    }

    pub(super) fn encode(&self) -> Vec<u8> {
        let mut h = Vec::with_capacity(HEADER_BYTES + 4);
        h.extend_from_slice(MAGIC);
        h.extend_from_slice(&VERSION.to_le_bytes());
        for v in [
            self.page_bytes as u32,
            self.spare_bytes_per_sector as u32,
            self.pages_per_block,
            self.blocks,
            self.channels,
            self.ways,
            self.max_partial_programs,
        ] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        for v in [
            self.read_us,
            self.program_us,
            self.erase_us,
            self.bus_ns_per_byte,
        ] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        let crc = crc32c::crc32c(&h);
        h.extend_from_slice(&crc.to_le_bytes());
        h
    }

    pub(super) fn decode(h: &[u8]) -> Result<NandConfig> {
        if h.len() < HEADER_BYTES + 4 {
            return Err(Error::corruption(FILE, Some(0), "header page is too short"));
        }
        if &h[..8] != MAGIC {
            let detail = if h[..8].iter().all(|&b| b == 0) {
                "no NAND header (the medium was never created)"
            } else {
                "bad magic: not a flashix NAND medium"
            };
            return Err(Error::corruption(FILE, Some(0), detail));
        }
        let u32_at = |o: usize| u32::from_le_bytes([h[o], h[o + 1], h[o + 2], h[o + 3]]);
        let f64_at = |o: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&h[o..o + 8]);
            f64::from_le_bytes(b)
        };
        if u32_at(HEADER_BYTES) != crc32c::crc32c(&h[..HEADER_BYTES]) {
            return Err(Error::corruption(FILE, Some(0), "header checksum mismatch"));
        }
        let version = u32_at(8);
        if version != VERSION {
            return Err(Error::UnsupportedVersion {
                found: version,
                supported: VERSION,
            });
        }
        let cfg = NandConfig {
            page_bytes: u32_at(12) as usize,
            spare_bytes_per_sector: u32_at(16) as usize,
            pages_per_block: u32_at(20),
            blocks: u32_at(24),
            channels: u32_at(28),
            ways: u32_at(32),
            max_partial_programs: u32_at(36),
            read_us: f64_at(40),
            program_us: f64_at(48),
            erase_us: f64_at(56),
            bus_ns_per_byte: f64_at(64),
        };
        // A geometry no NAND can have, behind a valid checksum, is a damaged (or forged)
        // medium, not a caller's bad option.
        cfg.validate().map_err(|e| {
            Error::corruption(
                FILE,
                Some(0),
                format!("header holds an impossible geometry: {e}"),
            )
        })?;
        Ok(cfg)
    }
}

#[cfg(test)]
mod hostile_tests {
    use super::*;

    /// Hostile bytes (crate::hostile): a damaged NAND header decodes, is corruption, or
    /// (its version field damaged) names the version; one that decodes describes a
    /// geometry `validate` then judges.
    #[test]
    fn hostile_nand_headers_decode_or_are_corruption() {
        let valid = NandConfig::default().encode();
        crate::hostile::fuzz_stream("NAND header", &valid, |b| {
            let mut b = b.to_vec();
            // Forge the checksum half of the time, so the fields behind it are tested.
            if b.len() >= HEADER_BYTES + 4 && b[9] % 2 == 0 {
                let crc = crc32c::crc32c(&b[..HEADER_BYTES]);
                b[HEADER_BYTES..HEADER_BYTES + 4].copy_from_slice(&crc.to_le_bytes());
            }
            let r = NandConfig::decode(&b);
            if let Ok(c) = &r {
                let _ = c.validate();
            }
            match r {
                Err(Error::UnsupportedVersion { .. }) => Ok(()),
                r => crate::error::ok_or_corruption(r),
            }
        });
    }
}
