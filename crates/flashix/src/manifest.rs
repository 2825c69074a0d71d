//! The manifest: the one small file that says what an index is and where its durable state
//! starts. It is switched atomically (write `MANIFEST.tmp`, sync it, rename over `MANIFEST`,
//! sync the directory), so a crash leaves either the old or the new one.
//!
//! Format (little-endian):
//! ```text
//! 0   8  magic "FLASHIXM"
//! 8   4  format version (FORMAT_VERSION)
//! 12  4  body length n
//! 16  4  crc32c of the body
//! 20  n  body: JSON of `Manifest`
//! ```
//! The body names the engine and its options, the checkpoint generation (the WAL file
//! `wal-<generation>.log` that holds everything since), the extent allocator's state and
//! the engine's own durable roots.

use crate::error::{Error, Result};
use crate::io::alloc::AllocState;
use crate::io::Vfs;
use crate::options::Options;
use serde::{Deserialize, Serialize};

/// The manifest's file name.
pub const MANIFEST: &str = "MANIFEST";
const TMP: &str = "MANIFEST.tmp";
const MAGIC: &[u8; 8] = b"FLASHIXM";
/// On-disk format version this build reads and writes.
pub const FORMAT_VERSION: u32 = 1;

/// The durable description of an index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub options: Options,
    /// Checkpoint generation: the WAL to replay is `wal_name(generation)`.
    pub generation: u64,
    pub alloc: AllocState,
    /// Engine-specific roots (root page, height, levels, ...).
    pub engine: serde_json::Value,
}

/// The WAL file of a generation.
pub fn wal_name(generation: u64) -> String {
    format!("wal-{generation:06}.log")
}

impl Manifest {
    /// Encode with header and checksum.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let body = serde_json::to_vec(self)
            .map_err(|e| Error::InvalidArgument(format!("cannot encode manifest: {e}")))?;
        let mut out = Vec::with_capacity(body.len() + 20);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&(body.len() as u32).to_le_bytes());
        out.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
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
        if version != FORMAT_VERSION {
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
        if crc32c::crc32c(body) != crc {
            return Err(bad("checksum mismatch".into()));
        }
        serde_json::from_slice(body).map_err(|e| bad(format!("undecodable body: {e}")))
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
    use crate::options::EngineKind;

    fn sample() -> Manifest {
        Manifest {
            options: Options::new(EngineKind::BTree),
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
        bytes[8] = 9;
        assert!(matches!(
            Manifest::decode(&bytes),
            Err(Error::UnsupportedVersion { found: 9, .. })
        ));
    }
}
