//! On-flash formats shared by the IPL and d-IPL B+-trees: node images in the data area,
//! 512-byte log sectors in the log area, and the physiological log records they carry.
//!
//! # Node image (`node_pages` whole NAND pages, written by one rebuild or node creation)
//! ```text
//! 0   4  crc32c of bytes 4..node_bytes
//! 4   4  magic "IPLN"
//! 8   8  node id
//! 16  1  level (0 = leaf)
//! 17  3  reserved (0)
//! 20  4  entry count n
//! 24  8  reserved (0)
//! 32  .. entries: leaf (key u64, value u64) = 16 bytes; internal (key u64, child u32) = 12 bytes
//! ```
//! Leaf capacity `(node_bytes - 32) / 16` (510 for 8 KiB, the paper's §6.1 leaf fanout);
//! internal capacity `(node_bytes - 32) / 12` (680 for 8 KiB; the paper's 840 assumes
//! shorter keys than our full u64 keys).
//!
//! # Log sector (512 bytes, one NAND sector, written by a partial program)
//! ```text
//! 0   4  crc32c of bytes 4..512
//! 4   4  magic "IPLS"
//! 8   8  owner node id
//! 16  8  checkpoint generation when written (informational)
//! 24  2  record bytes r
//! 26  2  LLSD entries m (d-IPL: members of the block; IPL: 0)
//! 28  32 LSLM: bit i set = sector i of this block is an earlier log sector of the owner
//! 60  2m LLSD: entry j = the last log sector (index in the block) of member j after this
//!        sector, 0xFFFF for none (d-IPL §5.1, Fig. 11)
//! ..  r  records
//! ```
//! A sector index is `page * sectors_per_page + sector` inside the erase block (at most 256
//! sectors per block, so the LSLM is a 256-bit map).
//!
//! # Records
//! ```text
//! 1 Put(key u64, value u64)            upsert (internal nodes: value = child id)
//! 2 Del(key u64)                       remove
//! 3 SplitRemove(key u64)               remove every entry with key >= key (node split, §4.1)
//! 4 GhostCreate(origin u64, key u64, sector u16)
//!                                      first record of a ghost node (§3.2, §5.2): its base is
//!                                      the origin's entries >= key as of the origin's log
//!                                      sector `sector`, whose last record is the split's
//!                                      SplitRemove(key)
//! 5 Init(level u8)                     first record of a node whose base is empty (IPL: a node
//!                                      written as physical log records, §2.3.1)
//! ```

use crate::error::{Error, Result};
use crate::page::{read_u32, read_u64};

/// The file name used in corruption errors for the raw NAND medium.
pub const NAND_FILE: &str = "nand";

pub const SECTOR: usize = 512;
pub const NODE_HEADER: usize = 32;
pub const SECTOR_HEADER: usize = 60;
const NODE_MAGIC: &[u8; 4] = b"IPLN";
const SECTOR_MAGIC: &[u8; 4] = b"IPLS";
/// "No sector" in an LLSD entry.
pub const NO_SECTOR: u16 = 0xFFFF;

/// Entries of a leaf node of `node_bytes`.
pub fn leaf_capacity(node_bytes: usize) -> usize {
    (node_bytes - NODE_HEADER) / 16
}

/// Entries of an internal node of `node_bytes`.
pub fn internal_capacity(node_bytes: usize) -> usize {
    (node_bytes - NODE_HEADER) / 12
}

/// A node's contents: level and sorted entries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeImage {
    pub level: u8,
    pub entries: Vec<(u64, u64)>,
}

/// Encode a node image of `node_bytes`.
pub fn encode_node(id: u64, img: &NodeImage, node_bytes: usize) -> Vec<u8> {
    let mut b = vec![0u8; node_bytes];
    b[4..8].copy_from_slice(NODE_MAGIC);
    b[8..16].copy_from_slice(&id.to_le_bytes());
    b[16] = img.level;
    b[20..24].copy_from_slice(&(img.entries.len() as u32).to_le_bytes());
    let mut off = NODE_HEADER;
    for &(k, v) in &img.entries {
        b[off..off + 8].copy_from_slice(&k.to_le_bytes());
        if img.level == 0 {
            b[off + 8..off + 16].copy_from_slice(&v.to_le_bytes());
            off += 16;
        } else {
            b[off + 8..off + 12].copy_from_slice(&(v as u32).to_le_bytes());
            off += 12;
        }
    }
    let crc = crc32c::crc32c(&b[4..]);
    b[0..4].copy_from_slice(&crc.to_le_bytes());
    b
}

/// Decode and verify a node image read from linear NAND page `page`.
pub fn decode_node(id: u64, b: &[u8], page: u64) -> Result<NodeImage> {
    let bad = |d: String| Error::corruption(NAND_FILE, Some(page), d);
    if b.len() < NODE_HEADER || crc32c::crc32c(&b[4..]) != read_u32(b, 0) {
        let what = if b.iter().all(|&x| x == 0xFF) {
            "node image is erased (never written)"
        } else {
            "node image checksum mismatch"
        };
        return Err(bad(format!("node {id}: {what}")));
    }
    if &b[4..8] != NODE_MAGIC {
        return Err(bad(format!("node {id}: bad node magic")));
    }
    let found = read_u64(b, 8);
    if found != id {
        return Err(bad(format!("holds node {found}, expected node {id}")));
    }
    let level = b[16];
    let n = read_u32(b, 20) as usize;
    let width = if level == 0 { 16 } else { 12 };
    if NODE_HEADER + n * width > b.len() {
        return Err(bad(format!("node {id}: {n} entries do not fit")));
    }
    let mut entries = Vec::with_capacity(n);
    let mut off = NODE_HEADER;
    for _ in 0..n {
        let k = read_u64(b, off);
        let v = if level == 0 {
            read_u64(b, off + 8)
        } else {
            read_u32(b, off + 8) as u64
        };
        entries.push((k, v));
        off += width;
    }
    Ok(NodeImage { level, entries })
}

/// A physiological log record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rec {
    Put(u64, u64),
    Del(u64),
    SplitRemove(u64),
    GhostCreate { origin: u64, key: u64, sector: u16 },
    Init(u8),
}

impl Rec {
    pub fn encode(&self, out: &mut Vec<u8>) {
        match *self {
            Rec::Put(k, v) => {
                out.push(1);
                out.extend_from_slice(&k.to_le_bytes());
                out.extend_from_slice(&v.to_le_bytes());
            }
            Rec::Del(k) => {
                out.push(2);
                out.extend_from_slice(&k.to_le_bytes());
            }
            Rec::SplitRemove(k) => {
                out.push(3);
                out.extend_from_slice(&k.to_le_bytes());
            }
            Rec::GhostCreate {
                origin,
                key,
                sector,
            } => {
                out.push(4);
                out.extend_from_slice(&origin.to_le_bytes());
                out.extend_from_slice(&key.to_le_bytes());
                out.extend_from_slice(&sector.to_le_bytes());
            }
            Rec::Init(level) => {
                out.push(5);
                out.push(level);
            }
        }
    }

    /// Encoded length.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        match self {
            Rec::Put(..) => 17,
            Rec::Del(_) | Rec::SplitRemove(_) => 9,
            Rec::GhostCreate { .. } => 19,
            Rec::Init(_) => 2,
        }
    }
}

/// Decode every record of a record area.
pub fn decode_records(mut p: &[u8]) -> Option<Vec<Rec>> {
    let mut out = Vec::new();
    while let Some(&tag) = p.first() {
        let need = match tag {
            1 => 17,
            2 | 3 => 9,
            4 => 19,
            5 => 2,
            _ => return None,
        };
        if p.len() < need {
            return None;
        }
        out.push(match tag {
            1 => Rec::Put(read_u64(p, 1), read_u64(p, 9)),
            2 => Rec::Del(read_u64(p, 1)),
            3 => Rec::SplitRemove(read_u64(p, 1)),
            4 => Rec::GhostCreate {
                origin: read_u64(p, 1),
                key: read_u64(p, 9),
                sector: u16::from_le_bytes([p[17], p[18]]),
            },
            _ => Rec::Init(p[1]),
        });
        p = &p[need..];
    }
    Some(out)
}

/// Apply a record to sorted entries (`GhostCreate` and `Init` only set the base and are
/// handled by the caller).
pub fn apply(entries: &mut Vec<(u64, u64)>, r: &Rec) {
    match *r {
        Rec::Put(k, v) => match entries.binary_search_by_key(&k, |e| e.0) {
            Ok(i) => entries[i].1 = v,
            Err(i) => entries.insert(i, (k, v)),
        },
        Rec::Del(k) => {
            if let Ok(i) = entries.binary_search_by_key(&k, |e| e.0) {
                entries.remove(i);
            }
        }
        Rec::SplitRemove(k) => {
            let i = entries.partition_point(|e| e.0 < k);
            entries.truncate(i);
        }
        Rec::GhostCreate { .. } | Rec::Init(_) => {}
    }
}

/// A decoded log sector.
#[derive(Debug, Clone)]
pub struct LogSector {
    pub owner: u64,
    pub lslm: [u8; 32],
    pub llsd: Vec<u16>,
    pub records: Vec<Rec>,
}

impl LogSector {
    /// The earlier sectors of the owner that the LSLM names, ascending.
    pub fn earlier(&self) -> Vec<u16> {
        (0..256u16)
            .filter(|&i| self.lslm[i as usize / 8] & (1 << (i % 8)) != 0)
            .collect()
    }
}

/// Encode a log sector.
pub fn encode_sector(
    owner: u64,
    generation: u64,
    earlier: &[u16],
    llsd: &[u16],
    records: &[u8],
) -> [u8; SECTOR] {
    let mut b = [0u8; SECTOR];
    b[4..8].copy_from_slice(SECTOR_MAGIC);
    b[8..16].copy_from_slice(&owner.to_le_bytes());
    b[16..24].copy_from_slice(&generation.to_le_bytes());
    b[24..26].copy_from_slice(&(records.len() as u16).to_le_bytes());
    b[26..28].copy_from_slice(&(llsd.len() as u16).to_le_bytes());
    for &s in earlier {
        b[28 + s as usize / 8] |= 1 << (s % 8);
    }
    let mut off = SECTOR_HEADER;
    for &s in llsd {
        b[off..off + 2].copy_from_slice(&s.to_le_bytes());
        off += 2;
    }
    b[off..off + records.len()].copy_from_slice(records);
    let crc = crc32c::crc32c(&b[4..]);
    b[0..4].copy_from_slice(&crc.to_le_bytes());
    b
}

/// Decode and verify a log sector read from linear NAND page `page`.
pub fn decode_sector(b: &[u8], page: u64, index: u16) -> Result<LogSector> {
    let bad = |d: &str| {
        Error::corruption(
            NAND_FILE,
            Some(page),
            format!("log sector {index} of the block: {d}"),
        )
    };
    if b.len() != SECTOR || crc32c::crc32c(&b[4..]) != read_u32(b, 0) {
        return Err(bad("checksum mismatch"));
    }
    if &b[4..8] != SECTOR_MAGIC {
        return Err(bad("bad magic"));
    }
    let r = u16::from_le_bytes([b[24], b[25]]) as usize;
    let m = u16::from_le_bytes([b[26], b[27]]) as usize;
    let start = SECTOR_HEADER + 2 * m;
    if start + r > SECTOR {
        return Err(bad("lengths exceed the sector"));
    }
    let mut lslm = [0u8; 32];
    lslm.copy_from_slice(&b[28..60]);
    let llsd = (0..m)
        .map(|j| u16::from_le_bytes([b[SECTOR_HEADER + 2 * j], b[SECTOR_HEADER + 2 * j + 1]]))
        .collect();
    let records = decode_records(&b[start..start + r]).ok_or_else(|| bad("bad record"))?;
    Ok(LogSector {
        owner: read_u64(b, 8),
        lslm,
        llsd,
        records,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_and_sector_round_trip_and_flips_are_detected() {
        let img = NodeImage {
            level: 1,
            entries: vec![(0, 7), (u64::MAX, 9)],
        };
        let b = encode_node(3, &img, 1024);
        assert_eq!(decode_node(3, &b, 0).unwrap(), img);
        assert!(decode_node(4, &b, 0).is_err());
        let mut recs = Vec::new();
        for r in [
            Rec::Put(1, u64::MAX),
            Rec::Del(0),
            Rec::SplitRemove(5),
            Rec::GhostCreate {
                origin: 9,
                key: 5,
                sector: 255,
            },
            Rec::Init(2),
        ] {
            r.encode(&mut recs);
        }
        let s = encode_sector(9, 1, &[0, 200, 255], &[3, NO_SECTOR], &recs);
        let d = decode_sector(&s, 0, 4).unwrap();
        assert_eq!(d.owner, 9);
        assert_eq!(d.earlier(), vec![0, 200, 255]);
        assert_eq!(d.llsd, vec![3, NO_SECTOR]);
        assert_eq!(d.records.len(), 5);
        for bit in (0..SECTOR * 8).step_by(13) {
            let mut c = s;
            c[bit / 8] ^= 1 << (bit % 8);
            assert!(decode_sector(&c, 0, 4).is_err(), "flip {bit}");
        }
    }

    /// Hostile bytes (crate::hostile): node images, log sectors and record areas decode
    /// or are corruption (`None` for a record area), never panic.
    #[test]
    fn hostile_node_images_and_log_sectors_decode_or_are_refused() {
        let img = NodeImage {
            level: 0,
            entries: vec![(0, 7), (3, 4), (u64::MAX, 9)],
        };
        let node = encode_node(3, &img, 1024);
        let reseal = |b: &mut [u8]| {
            let crc = crc32c::crc32c(&b[4..]);
            b[0..4].copy_from_slice(&crc.to_le_bytes());
        };
        crate::hostile::fuzz_stream("in-page node image", &node, |b| {
            let mut b = b.to_vec();
            if b.len() >= 4 && b.len() % 2 == 0 {
                reseal(&mut b);
            }
            crate::error::ok_or_corruption(decode_node(3, &b, 0))
        });
        let mut recs = Vec::new();
        for r in [
            Rec::Put(1, u64::MAX),
            Rec::Del(0),
            Rec::GhostCreate {
                origin: 4,
                key: 8,
                sector: 2,
            },
            Rec::Init(1),
        ] {
            r.encode(&mut recs);
        }
        crate::hostile::fuzz_stream("in-page records", &recs, |b| {
            let _ = decode_records(b);
            Ok(())
        });
        let sector = encode_sector(3, 1, &[0, 200], &[3, NO_SECTOR], &recs);
        crate::hostile::fuzz_page("in-page log sector", 0, &sector, |b| {
            let mut b = b.to_vec();
            if b[5] % 2 == 0 {
                reseal(&mut b);
            }
            crate::error::ok_or_corruption(decode_sector(&b, 0, 1))
        });
    }
}
