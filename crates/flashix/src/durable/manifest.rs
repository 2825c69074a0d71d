//! The manifest: the one small file that says what an index is and where its durable state
//! starts. It is switched atomically (write `MANIFEST.tmp`, sync it, rename over `MANIFEST`,
//! sync the directory), so a crash leaves either the old or the new one.
//!
//! Format (little-endian):
//! ```text
//! 0   8  magic "FLASHIXM"
//! 8   4  format version (FORMAT_VERSION)
//! 12  4  body length n
//! 16  4  crc32c of bytes 8..16 and the body (formats 3 to 8; 1 and 2: of the body)
//! 20  n  body: JSON of `Manifest`
//! ```
//! The body names the engine and its options (an explicit options record, opaque at this
//! layer: `crate::options` writes and reads it), the checkpoint generation (the WAL file
//! `wal-<generation>.log` that holds everything since), the extent allocator's state and
//! the engine's own durable roots.
//!
//! Versions: 1 (the builds before the options record) stored the `Options` struct as
//! serde wrote it; 2 stores the versioned options record of `crate::options::record`; 3 (the options
//! record of 2) adds the range tombstones of the FD-tree's and the LSM-tree's levels to
//! their engine state (`crate::kit::sorted::tombs`): a build that reads 2 at most must
//! refuse such an index rather than ignore them and show deleted keys again. 4 (the
//! manifest of 3) changes what the files around it may hold, which a build that reads 3 at
//! most would misread: the page envelope keeps the page id in 48 bits and a generation
//! stamp in the rest (`crate::page`; the Pager's before-image rule reads it), the WAL may
//! hold out-of-space records (kind 3, `super::wal`), and the PIO B-tree's engine state
//! says whether its leaves' record counts are exact or upper bounds after a range delete
//! (`leaf_records_bound`). Indexes of 1 to 3 open unchanged (their pages read as stamp 0)
//! and are written as 4 from their next checkpoint. 5 (the manifest, pages and WAL of 4)
//! adds to the FD-tree's and the LSM-tree's engine state the `k` in effect and, when the
//! cost model chose it, the pool it re-chooses it for (`crate::kit::sorted::tune`): a build
//! that reads 4 at most would size the levels with the options' `k` and misread a tree
//! whose `k` was re-chosen. Indexes of 1 to 4 open with the options' `k`, fixed. 6 (the
//! manifest, WAL and other pages of 5) lets a new PIO B-tree pack its leaf segments: 16-byte
//! records after an operation bitmap, page kind 4 (`crate::engine::pio::leaf`), with
//! `packed` in its engine state; a build that reads 5 at most would take those pages for
//! corruption. PIO B-trees of 1 to 5 keep their wide segments (kind 3). 7 (the manifest, WAL
//! and other pages of 6) lets a new FD-tree or LSM-tree pack its sorted pages: 16-byte
//! entries after an array of 2-bit types, page kinds with bit 0x100 set
//! (`crate::kit::sorted::entry`), with `packed` in its engine state; a build that reads 6
//! at most would take those pages for corruption. FD-trees and LSM-trees of 1 to 6 keep
//! their 24-byte entries. 8 (the manifest, WAL and pages of 7) adds the LSM-tree's
//! `deamortize` option (rolling merges run a step per mutation) to the options record,
//! which a build that reads 7 at most would refuse as an unknown field; records of 1 to 7
//! read as `deamortize` on. 9 (the manifest, options record and pages of 8) begins every
//! WAL append with an append-start record (kind 4, `super::wal`), by which recovery tells
//! an unsynced append lost in a crash from damage to durable records; a build that reads 8
//! at most would take it for corruption. WALs of 1 to 8 read as before. This build reads 1
//! to 9 and writes 9; anything else is [`Error::UnsupportedVersion`]. From format 3 the checksum covers the
//! version and the length too, so a flipped bit that turns a 3 into a readable 2 or 1 is
//! caught (it fails the older formats' body-only checksum).

use crate::error::{Error, Result};
use crate::io::alloc::AllocState;
use crate::io::Vfs;
use serde::{Deserialize, Serialize};

/// The options of an index as its manifest stores them: JSON written and read by
/// `crate::options` (whose shape depends on [`Manifest::format_version`]).
pub type OptionsRecord = serde_json::Value;

/// The manifest's file name.
pub const MANIFEST: &str = "MANIFEST";
const TMP: &str = "MANIFEST.tmp";
const MAGIC: &[u8; 8] = b"FLASHIXM";
/// On-disk format version this build writes.
pub const FORMAT_VERSION: u32 = 10;
/// The oldest format version this build reads.
pub const OLDEST_READABLE_VERSION: u32 = 1;

/// The durable description of an index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The format version of the header it was read with (not in the body).
    #[serde(skip, default = "current_version")]
    pub format_version: u32,
    /// The index's options record.
    pub options: OptionsRecord,
    /// Checkpoint generation: the WAL to replay is `wal_name(generation)`.
    pub generation: u64,
    pub alloc: AllocState,
    /// Engine-specific roots (root page, height, levels, ...).
    pub engine: serde_json::Value,
}

fn current_version() -> u32 {
    FORMAT_VERSION
}

/// The WAL file of a generation.
pub fn wal_name(generation: u64) -> String {
    format!("wal-{generation:06}.log")
}

/// The header's checksum for a manifest of `version`: from format 3 over the version and
/// length fields (`fields`, bytes 8..16) and the body, before over the body alone.
fn checksum(version: u32, fields: &[u8], body: &[u8]) -> u32 {
    if version >= 3 {
        crc32c::crc32c_append(crc32c::crc32c(fields), body)
    } else {
        crc32c::crc32c(body)
    }
}

impl Manifest {
    /// The engine's state (`engine`) as its type; a state that does not decode is
    /// corruption of the manifest (`bad <what> state: ...`).
    pub fn engine_state<T: serde::de::DeserializeOwned>(&self, what: &str) -> Result<T> {
        serde_json::from_value(self.engine.clone())
            .map_err(|e| Error::corruption("MANIFEST", None, format!("bad {what} state: {e}")))
    }

    /// Encode with header and checksum, as [`FORMAT_VERSION`] (the options record must be
    /// of the current shape).
    pub fn encode(&self) -> Result<Vec<u8>> {
        let body = serde_json::to_vec(self)
            .map_err(|e| Error::InvalidArgument(format!("cannot encode manifest: {e}")))?;
        let mut out = Vec::with_capacity(body.len() + 20);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&(body.len() as u32).to_le_bytes());
        let crc = checksum(FORMAT_VERSION, &out[8..16], &body);
        out.extend_from_slice(&crc.to_le_bytes());
        out.extend_from_slice(&body);
        Ok(out)
    }

    /// Decode, checking magic, version and checksum.
    pub fn decode(bytes: &[u8]) -> Result<Manifest> {
        let bad = |detail: String| Error::corruption(MANIFEST, None, detail);
        if bytes.len() < 20 || &bytes[0..8] != MAGIC {
            return Err(bad("not a flashix manifest (bad magic)".into()));
        }
        let version = crate::page::read_u32(bytes, 8);
        if !(OLDEST_READABLE_VERSION..=FORMAT_VERSION).contains(&version) {
            return Err(Error::UnsupportedVersion {
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        let len = crate::page::read_u32(bytes, 12) as usize;
        let crc = crate::page::read_u32(bytes, 16);
        let body = bytes
            .get(20..20 + len)
            .ok_or_else(|| bad(format!("body of {len} bytes is cut short")))?;
        if bytes.len() != 20 + len {
            return Err(bad("trailing bytes after the body".into()));
        }
        if checksum(version, &bytes[8..16], body) != crc {
            return Err(bad("checksum mismatch".into()));
        }
        let mut m: Manifest =
            serde_json::from_slice(body).map_err(|e| bad(format!("undecodable body: {e}")))?;
        m.format_version = version;
        Ok(m)
    }

    /// Read the current manifest.
    pub fn load(vfs: &dyn Vfs) -> Result<Manifest> {
        Manifest::decode(&vfs.read(MANIFEST)?)
    }

    /// Switch to this manifest atomically.
    pub fn store(&self, vfs: &dyn Vfs) -> Result<()> {
        let bytes = self.encode()?;
        vfs.create(TMP)?;
        vfs.append(TMP, &bytes)?;
        vfs.sync(TMP)?;
        vfs.rename(TMP, MANIFEST)?;
        vfs.sync_dir()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::MemVfs;

    fn sample() -> Manifest {
        Manifest {
            format_version: FORMAT_VERSION,
            options: serde_json::json!({"engine": "BTree", "page_size": 4096}),
            generation: 3,
            alloc: AllocState::default(),
            engine: serde_json::json!({"root": 5}),
        }
    }

    #[test]
    fn round_trip_and_every_bit_flip_is_detected() {
        let m = sample();
        let bytes = m.encode().unwrap();
        assert_eq!(Manifest::decode(&bytes).unwrap(), m);
        for bit in 0..bytes.len() * 8 {
            let mut b = bytes.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            assert!(
                Manifest::decode(&b).is_err(),
                "flip of bit {bit} went unnoticed"
            );
        }
    }

    #[test]
    fn store_replaces_atomically() {
        let vfs = MemVfs::new();
        let mut m = sample();
        m.store(&vfs).unwrap();
        m.generation = 4;
        m.store(&vfs).unwrap();
        assert_eq!(Manifest::load(&vfs).unwrap().generation, 4);
        assert!(!vfs.exists(TMP).unwrap());
    }

    #[test]
    fn other_version_is_refused() {
        let mut bytes = sample().encode().unwrap();
        let newer = FORMAT_VERSION + 1;
        bytes[8..12].copy_from_slice(&newer.to_le_bytes());
        assert!(matches!(
            Manifest::decode(&bytes),
            Err(Error::UnsupportedVersion { found, .. }) if found == newer
        ));
    }

    /// Hostile bytes (crate::hostile): a damaged manifest decodes, is corruption, or (its
    /// version field damaged) names the version; never a panic.
    #[test]
    fn hostile_manifests_decode_or_are_refused() {
        let bytes = sample().encode().unwrap();
        crate::hostile::fuzz_stream("manifest", &bytes, |b| match Manifest::decode(b) {
            Err(Error::UnsupportedVersion { .. }) => Ok(()),
            r => crate::error::ok_or_corruption(r),
        });
    }
}
