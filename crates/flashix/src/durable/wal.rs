//! The write-ahead log shared by all engines: a logical redo log of the `Db` operations
//! (checksummed records, group commit on `flush`), plus full-page before-images for the
//! engines that update pages in place (see [`super::Pager`]).
//!
//! One WAL file per checkpoint generation, `wal-<generation>.log`; the manifest names the
//! generation to replay. Beside it the directory may hold the next generation's WAL,
//! created empty ahead of the checkpoint that will switch to it (`super::Log::switch`).
//! Record format (little-endian):
//! ```text
//! 0  4  payload length n
//! 4  4  crc32c of (generation u64 LE, kind, payload)
//! 8  1  kind: 1 = logical operation, 2 = page image, 3 = out of space, 4 = append start
//! 9  n  payload
//! ```
//! Logical operation payloads: `1 key value` insert, `2 key` delete,
//! `3 count (key value)*` bulk insert, `4 lo hi` delete of the inclusive range,
//! `5 count op*` an atomic batch (`crate::Batch`) of kind-1, 2 and 4 operations, each in
//! its own encoding above (batches do not nest and hold no bulk insert).
//! Page image payload: `page-id` followed by the page's bytes.
//! Out-of-space payload: `lsn` u64, the offset where the logical operation that failed
//! because the device was full starts, or `u64::MAX` when the failure was the checkpoint
//! after an operation that had been applied. Reading drops that operation (it failed, so
//! no prefix needs it, and replaying it would fail again) and reports the record
//! ([`Replay::out_of_space`]): recovery then keeps the generation and takes no checkpoint,
//! which would need space the device may not have (`super::Logged::recover`).
//!
//! Append-start payload: `durable` u64, the length of the WAL's prefix known durable when
//! the append it starts was handed to the file. Every hand-off of buffered records to the
//! file (an *append*) begins with one.
//!
//! Reading stops at the first record that is cut short or fails its checksum when what
//! follows it is what a crash leaves: nothing valid, or only appends whose append-start
//! record says that, when they were written, the damaged record was not yet durable. A
//! crash can leave those: appends handed to the file but not yet synced reach the device
//! in any order, so an earlier one may be lost while a prefix of a later one survived
//! (group commit makes this common: other threads append while a flush's leader syncs).
//! None of their records were acknowledged durable, so replay stops at the damage. Any
//! other valid record after the damage — one of the damaged append itself, or one of an
//! append written after the damaged record was durable — means the damage is in durable
//! data: corruption, reported with the file name and offset. (WALs of formats before the
//! append-start record read as before: a bad record followed by a valid one is
//! corruption.)

use super::commit::{FlushTicket, GroupCommit};
use crate::error::{Error, Result};
use crate::io::{PageId, Vfs};
use crate::page::{read_u32, read_u64};
use crate::stats::WalStats;
use std::sync::Arc;

const REC_HEADER: usize = 9;
const KIND_OP: u8 = 1;
const KIND_IMAGE: u8 = 2;
const KIND_NO_SPACE: u8 = 3;
const KIND_APPEND: u8 = 4;
/// An append-start record's length: header and its `durable` payload.
const APPEND_RECORD: usize = REC_HEADER + 8;
/// The out-of-space record's `lsn` when no logical operation failed.
const NO_OP: u64 = u64::MAX;
/// Buffered bytes after which the log is written (not synced) to its file.
const WRITE_CHUNK: usize = 1 << 20;

/// A logical redo record: one `Db` operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogicalOp {
    Insert(u64, u64),
    Delete(u64),
    BulkInsert(Vec<(u64, u64)>),
    /// Inclusive range.
    DeleteRange(u64, u64),
    /// An atomic batch of `Insert`, `Delete` and `DeleteRange` operations, applied in order.
    Batch(Vec<LogicalOp>),
}

impl LogicalOp {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            LogicalOp::Insert(k, v) => {
                out.push(1);
                out.extend_from_slice(&k.to_le_bytes());
                out.extend_from_slice(&v.to_le_bytes());
            }
            LogicalOp::Delete(k) => {
                out.push(2);
                out.extend_from_slice(&k.to_le_bytes());
            }
            LogicalOp::BulkInsert(pairs) => {
                out.push(3);
                out.extend_from_slice(&(pairs.len() as u64).to_le_bytes());
                for (k, v) in pairs {
                    out.extend_from_slice(&k.to_le_bytes());
                    out.extend_from_slice(&v.to_le_bytes());
                }
            }
            LogicalOp::DeleteRange(lo, hi) => {
                out.push(4);
                out.extend_from_slice(&lo.to_le_bytes());
                out.extend_from_slice(&hi.to_le_bytes());
            }
            LogicalOp::Batch(ops) => {
                out.push(5);
                out.extend_from_slice(&(ops.len() as u64).to_le_bytes());
                for op in ops {
                    op.encode(out);
                }
            }
        }
    }

    fn decode(p: &[u8]) -> Option<LogicalOp> {
        let u = |off: usize| p.get(off..off + 8).map(|_| read_u64(p, off));
        Some(match *p.first()? {
            1 if p.len() == 17 => LogicalOp::Insert(u(1)?, u(9)?),
            2 if p.len() == 9 => LogicalOp::Delete(u(1)?),
            3 => {
                // The count must be what the payload holds: computed from the length, so a
                // damaged count (2^60) can neither overflow nor size an allocation.
                let n = u(1)?;
                let pairs = (p.len() - 9) / 16;
                if (p.len() - 9) % 16 != 0 || n != pairs as u64 {
                    return None;
                }
                let n = pairs;
                LogicalOp::BulkInsert(
                    (0..n)
                        .map(|i| (read_u64(p, 9 + 16 * i), read_u64(p, 17 + 16 * i)))
                        .collect(),
                )
            }
            4 if p.len() == 17 => LogicalOp::DeleteRange(u(1)?, u(9)?),
            5 => {
                let n = u(1)?;
                // Every operation takes at least 9 bytes: a count the payload cannot hold
                // is damage, and must not size an allocation.
                if n > (p.len() as u64 - 9) / 9 {
                    return None;
                }
                let mut ops = Vec::with_capacity(n as usize);
                let mut off = 9;
                for _ in 0..n {
                    let len = match p.get(off)? {
                        1 | 4 => 17,
                        2 => 9,
                        _ => return None,
                    };
                    ops.push(LogicalOp::decode(p.get(off..off + len)?)?);
                    off += len;
                }
                if off != p.len() {
                    return None;
                }
                LogicalOp::Batch(ops)
            }
            _ => return None,
        })
    }
}

/// A record read back from a WAL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    Op(LogicalOp),
    Image(PageId, Vec<u8>),
}

/// Log sequence number: the byte offset just past a record in its WAL file.
pub type Lsn = u64;

/// The WAL writer of one generation.
pub struct Wal {
    vfs: Arc<dyn Vfs>,
    name: String,
    generation: u64,
    buf: Vec<u8>,
    /// Bytes already handed to the file.
    written: u64,
    /// What is durable, shared with the flushes waiting on it (group commit).
    commit: Arc<GroupCommit>,
    stats: WalStats,
}

impl Wal {
    /// Start a new, empty WAL file for `generation` (not yet durable: sync it or the
    /// directory before relying on it).
    #[cfg(test)]
    pub fn create(vfs: Arc<dyn Vfs>, generation: u64) -> Result<Wal> {
        Wal::create_in(vfs, generation, GroupCommit::new(generation, 0))
    }

    /// [`Wal::create`], its durable state kept in `commit` (the log's, across generations).
    pub fn create_in(vfs: Arc<dyn Vfs>, generation: u64, commit: Arc<GroupCommit>) -> Result<Wal> {
        let name = super::manifest::wal_name(generation);
        vfs.create(&name)?;
        Ok(Wal::resume_in(vfs, generation, 0, commit))
    }

    /// Continue the WAL of `generation` after its first `valid_len` bytes (what [`read`]
    /// found valid; any torn tail after it must already be cut off), its durable state kept
    /// in `commit`.
    pub fn resume_in(
        vfs: Arc<dyn Vfs>,
        generation: u64,
        valid_len: u64,
        commit: Arc<GroupCommit>,
    ) -> Wal {
        Wal {
            name: super::manifest::wal_name(generation),
            vfs,
            generation,
            buf: Vec::new(),
            written: valid_len,
            commit,
            stats: WalStats::default(),
        }
    }

    /// The file name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The generation.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// LSN after the last appended record.
    pub fn end(&self) -> Lsn {
        self.written + self.buf.len() as u64
    }

    /// Counters.
    pub fn stats(&self) -> WalStats {
        self.stats.clone()
    }

    fn append(&mut self, kind: u8, payload_writer: impl FnOnce(&mut Vec<u8>)) -> Result<Lsn> {
        let lsn = self.append_held(kind, payload_writer);
        self.hand_off_if_full()?;
        Ok(lsn)
    }

    /// Buffer a record and write nothing, however full the buffer: for a caller that holds
    /// a latch other threads wait on, which hands a full buffer to the file after it lets
    /// go of the latch ([`Wal::hand_off_if_full`]).
    fn append_held(&mut self, kind: u8, payload_writer: impl FnOnce(&mut Vec<u8>)) -> Lsn {
        if self.buf.is_empty() {
            // The append's start record, its `durable` filled in when it is handed to the
            // file (`write_out`).
            self.push_record(KIND_APPEND, |b| b.extend_from_slice(&0u64.to_le_bytes()));
        }
        self.push_record(kind, payload_writer);
        self.end()
    }

    /// Hand the buffered records to the file once they fill a write chunk.
    pub fn hand_off_if_full(&mut self) -> Result<()> {
        match self.buf.len() >= WRITE_CHUNK {
            true => self.write_out(),
            false => Ok(()),
        }
    }

    /// Add one record to the buffer.
    fn push_record(&mut self, kind: u8, payload_writer: impl FnOnce(&mut Vec<u8>)) {
        let start = self.buf.len();
        self.buf.extend_from_slice(&[0u8; REC_HEADER]);
        self.buf[start + 8] = kind;
        payload_writer(&mut self.buf);
        let len = self.buf.len() - start - REC_HEADER;
        self.buf[start..start + 4].copy_from_slice(&(len as u32).to_le_bytes());
        self.seal(start);
        self.stats.bytes += (len + REC_HEADER) as u64;
    }

    /// Checksum the buffered record at `start` (its length already written).
    fn seal(&mut self, start: usize) {
        let len = read_u32(&self.buf, start) as usize;
        let body = &self.buf[start + 8..start + REC_HEADER + len];
        let h = crc32c::crc32c_append(crc32c::crc32c(&self.generation.to_le_bytes()), body);
        self.buf[start + 4..start + 8].copy_from_slice(&h.to_le_bytes());
    }

    /// Append a logical operation.
    pub fn log_op(&mut self, op: &LogicalOp) -> Result<Lsn> {
        self.stats.records += 1;
        self.append(KIND_OP, |b| op.encode(b))
    }

    /// Append a page's before-image.
    pub fn log_image(&mut self, page: PageId, bytes: &[u8]) -> Result<Lsn> {
        let lsn = self.log_image_held(page, bytes);
        self.hand_off_if_full()?;
        Ok(lsn)
    }

    /// [`Wal::log_op`] that writes nothing ([`Wal::append_held`]).
    pub fn log_op_held(&mut self, op: &LogicalOp) -> Lsn {
        self.stats.records += 1;
        self.append_held(KIND_OP, |b| op.encode(b))
    }

    /// [`Wal::log_image`] that writes nothing ([`Wal::append_held`]).
    pub fn log_image_held(&mut self, page: PageId, bytes: &[u8]) -> Lsn {
        self.stats.page_images += 1;
        self.append_held(KIND_IMAGE, |b| {
            b.extend_from_slice(&page.to_le_bytes());
            b.extend_from_slice(bytes);
        })
    }

    /// Append and sync an out-of-space record (module doc): the logical operation whose
    /// record starts at `op_start` failed because the device was full, or (`None`) the
    /// checkpoint after an applied operation did.
    pub fn log_no_space(&mut self, op_start: Option<Lsn>) -> Result<()> {
        let lsn = op_start.unwrap_or(NO_OP);
        self.append(KIND_NO_SPACE, |b| b.extend_from_slice(&lsn.to_le_bytes()))?;
        self.sync()
    }

    /// Hand buffered records to the file (not durable yet).
    pub fn write_out(&mut self) -> Result<()> {
        if !self.buf.is_empty() {
            let durable = self.commit.durable(self.generation).min(self.written);
            self.buf[REC_HEADER..APPEND_RECORD].copy_from_slice(&durable.to_le_bytes());
            self.seal(0);
            self.vfs.append(&self.name, &self.buf)?;
            self.written += self.buf.len() as u64;
            self.buf.clear();
            self.commit.written(self.generation, self.written);
        }
        Ok(())
    }

    /// Make every appended record durable now (the caller holds the writer lock).
    pub fn sync(&mut self) -> Result<()> {
        if self.commit.durable(self.generation) >= self.end() {
            return Ok(());
        }
        self.write_out()?;
        self.vfs.sync(&self.name)?;
        self.stats.syncs += 1;
        self.commit.synced(self.generation, self.written);
        Ok(())
    }

    /// Hand every appended record to the file and return the ticket a flush waits on to
    /// make them durable (group commit, [`FlushTicket::wait`]), or `None` when they are
    /// durable already.
    pub fn prepare_flush(&mut self) -> Result<Option<FlushTicket>> {
        if self.commit.durable(self.generation) >= self.end() {
            return Ok(None);
        }
        self.write_out()?;
        Ok(Some(FlushTicket {
            commit: Arc::clone(&self.commit),
            vfs: Arc::clone(&self.vfs),
            name: self.name.clone(),
            generation: self.generation,
            lsn: self.written,
        }))
    }

    /// Make the log durable at least up to `lsn`.
    pub fn ensure_durable(&mut self, lsn: Lsn) -> Result<()> {
        if lsn > self.commit.durable(self.generation) {
            self.sync()?;
        }
        Ok(())
    }
}

/// The records of a WAL file and the length of its valid prefix.
pub struct Replay {
    /// Page images and logical operations, in order, without the operations an
    /// out-of-space record cancelled.
    pub records: Vec<Record>,
    pub valid_len: u64,
    /// The WAL holds an out-of-space record: the device was full when it was written.
    pub out_of_space: bool,
}

/// One parsed record: a [`Record`], or an out-of-space record naming the operation.
enum Parsed {
    Rec(Record),
    NoSpace(u64),
    /// An append-start record: the WAL's durable length when the append was written.
    Append(u64),
}

/// Parse one record at `off`; `None` if cut short or failing its checksum.
fn parse_at(data: &[u8], off: usize, generation: u64) -> Option<(Parsed, usize)> {
    let header = data.get(off..off + REC_HEADER)?;
    let len = read_u32(header, 0) as usize;
    let crc = read_u32(header, 4);
    let body = data.get(off + 8..off + REC_HEADER + len)?;
    let h = crc32c::crc32c_append(crc32c::crc32c(&generation.to_le_bytes()), body);
    if h != crc {
        return None;
    }
    let payload = &body[1..];
    let rec = match body[0] {
        KIND_OP => Parsed::Rec(Record::Op(LogicalOp::decode(payload)?)),
        KIND_IMAGE if payload.len() >= 8 => {
            Parsed::Rec(Record::Image(read_u64(payload, 0), payload[8..].to_vec()))
        }
        KIND_NO_SPACE if payload.len() == 8 => Parsed::NoSpace(read_u64(payload, 0)),
        KIND_APPEND if payload.len() == 8 => Parsed::Append(read_u64(payload, 0)),
        _ => return None,
    };
    Some((rec, off + REC_HEADER + len))
}

/// Recovery's first step for an index whose manifest names WAL `generation`: remove the
/// leftovers of an interrupted checkpoint or manifest switch (other WALs, `MANIFEST.tmp`),
/// require the named WAL, read its valid records and cut a torn tail off the file so that
/// appends resume after the last valid record.
pub fn recover(vfs: &dyn Vfs, generation: u64) -> Result<Replay> {
    let name = super::manifest::wal_name(generation);
    for f in vfs.list()? {
        if (f.starts_with("wal-") && f != name) || f == "MANIFEST.tmp" {
            vfs.remove(&f)?;
        }
    }
    if !vfs.exists(&name)? {
        return Err(Error::corruption(
            &name,
            None,
            "the WAL named by the manifest is missing",
        ));
    }
    let replay = read(vfs, generation)?;
    if vfs.len(&name)? > replay.valid_len {
        vfs.truncate(&name, replay.valid_len)?;
        vfs.sync(&name)?;
    }
    Ok(replay)
}

/// Read the WAL of `generation`: every valid record, and where the valid prefix ends.
pub fn read(vfs: &dyn Vfs, generation: u64) -> Result<Replay> {
    let name = super::manifest::wal_name(generation);
    let data = vfs.read(&name)?;
    let mut records = Vec::new();
    // Where each logical operation of `records` starts, to find the one an out-of-space
    // record names.
    let mut op_starts: Vec<(u64, usize)> = Vec::new();
    let mut out_of_space = false;
    let mut off = 0usize;
    while off < data.len() {
        match parse_at(&data, off, generation) {
            Some((Parsed::Rec(rec), next)) => {
                if matches!(rec, Record::Op(_)) {
                    op_starts.push((off as u64, records.len()));
                }
                records.push(rec);
                off = next;
            }
            Some((Parsed::NoSpace(lsn), next)) => {
                out_of_space = true;
                if let Some(i) = op_starts.iter().position(|&(s, _)| s == lsn) {
                    let (_, at) = op_starts.remove(i);
                    records.remove(at);
                    for (_, later) in &mut op_starts[i..] {
                        *later -= 1;
                    }
                }
                off = next;
            }
            Some((Parsed::Append(_), next)) => off = next,
            None => {
                if !crash_left(&data, off, generation) {
                    return Err(Error::corruption(
                        name,
                        Some(off as u64),
                        "damaged WAL record followed by valid records",
                    ));
                }
                break;
            }
        }
    }
    Ok(Replay {
        records,
        valid_len: off as u64,
        out_of_space,
    })
}

/// Whether what follows the damaged record at `damage` is what a crash leaves (module doc):
/// nothing valid, or only appends written while the damaged record was not yet durable,
/// each starting with its append-start record (an append reaches the device as a prefix:
/// valid records of the damaged append after the damage mean the damage is not a crash's).
fn crash_left(data: &[u8], damage: usize, generation: u64) -> bool {
    let mut hole = damage;
    loop {
        let Some(mut at) =
            (hole + 1..data.len()).find(|&o| parse_at(data, o, generation).is_some())
        else {
            return true;
        };
        let mut first = true;
        loop {
            match parse_at(data, at, generation) {
                Some((Parsed::Append(durable), next)) => {
                    if durable > damage as u64 {
                        return false;
                    }
                    at = next;
                }
                Some((_, _)) if first => return false,
                Some((_, next)) => at = next,
                None => break,
            }
            first = false;
        }
        if at >= data.len() {
            return true;
        }
        hole = at;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::MemVfs;

    fn sample(vfs: &Arc<dyn Vfs>) -> Vec<u8> {
        let mut w = Wal::create(Arc::clone(vfs), 7).unwrap();
        w.log_op(&LogicalOp::Insert(0, u64::MAX)).unwrap();
        w.log_image(3, &[9u8; 64]).unwrap();
        w.log_op(&LogicalOp::BulkInsert(vec![(1, 2), (3, 4)]))
            .unwrap();
        w.log_op(&LogicalOp::DeleteRange(5, 6)).unwrap();
        w.log_op(&LogicalOp::Delete(u64::MAX)).unwrap();
        w.sync().unwrap();
        vfs.read(w.name()).unwrap()
    }

    /// Kind 5: a batch round-trips; damage in its count or its operations is refused
    /// (never a huge allocation), and batches do not nest.
    #[test]
    fn batches_round_trip_and_bad_ones_are_refused() {
        let batch = LogicalOp::Batch(vec![
            LogicalOp::Insert(0, u64::MAX),
            LogicalOp::Delete(7),
            LogicalOp::DeleteRange(3, 9),
        ]);
        let mut b = Vec::new();
        batch.encode(&mut b);
        assert_eq!(b.len(), 1 + 8 + 17 + 9 + 17);
        assert_eq!(LogicalOp::decode(&b), Some(batch));
        let mut empty = Vec::new();
        LogicalOp::Batch(Vec::new()).encode(&mut empty);
        assert_eq!(
            LogicalOp::decode(&empty),
            Some(LogicalOp::Batch(Vec::new()))
        );
        for cut in 0..b.len() {
            assert_eq!(LogicalOp::decode(&b[..cut]), None, "cut at {cut}");
        }
        let mut huge = b.clone();
        huge[1..9].copy_from_slice(&(1u64 << 60).to_le_bytes());
        assert_eq!(LogicalOp::decode(&huge), None);
        let mut long = b.clone();
        long.push(0);
        assert_eq!(LogicalOp::decode(&long), None);
        for inner in [
            LogicalOp::Batch(vec![LogicalOp::Delete(1)]),
            LogicalOp::BulkInsert(vec![(1, 2)]),
        ] {
            let mut n = Vec::new();
            LogicalOp::Batch(vec![inner]).encode(&mut n);
            assert_eq!(LogicalOp::decode(&n), None);
        }
    }

    #[test]
    fn records_round_trip() {
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        let bytes = sample(&vfs);
        let r = read(&*vfs, 7).unwrap();
        assert_eq!(r.valid_len, bytes.len() as u64);
        assert_eq!(r.records.len(), 5);
        assert_eq!(r.records[0], Record::Op(LogicalOp::Insert(0, u64::MAX)));
        assert_eq!(r.records[1], Record::Image(3, vec![9u8; 64]));
        assert_eq!(r.records[4], Record::Op(LogicalOp::Delete(u64::MAX)));
    }

    /// An out-of-space record drops the operation it names (keeping the page images
    /// logged after it) and is reported; one naming no operation drops nothing.
    #[test]
    fn an_out_of_space_record_drops_its_operation() {
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        let mut w = Wal::create(Arc::clone(&vfs), 3).unwrap();
        w.log_op(&LogicalOp::Insert(1, 1)).unwrap();
        let failed = w.end();
        w.log_op(&LogicalOp::Insert(2, 2)).unwrap();
        w.log_image(5, &[7u8; 16]).unwrap();
        w.log_no_space(Some(failed)).unwrap();
        let r = read(&*vfs, 3).unwrap();
        assert!(r.out_of_space);
        assert_eq!(
            r.records,
            vec![
                Record::Op(LogicalOp::Insert(1, 1)),
                Record::Image(5, vec![7u8; 16])
            ]
        );
        // Appends after it (a reopen that went on in the same generation) are replayed.
        w.log_op(&LogicalOp::Delete(1)).unwrap();
        w.log_no_space(None).unwrap();
        w.sync().unwrap();
        let r = read(&*vfs, 3).unwrap();
        assert_eq!(r.records.len(), 3);
        assert_eq!(r.records[2], Record::Op(LogicalOp::Delete(1)));
        // A WAL without one says so.
        let plain: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        sample(&plain);
        assert!(!read(&*plain, 7).unwrap().out_of_space);
    }

    #[test]
    fn torn_tail_is_cut_and_middle_damage_is_corruption() {
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        let bytes = sample(&vfs);
        let name = crate::durable::manifest::wal_name(7);
        for cut in 0..bytes.len() {
            vfs.truncate(&name, cut as u64).unwrap();
            let r = read(&*vfs, 7).unwrap();
            assert!(r.valid_len <= cut as u64);
            vfs.create(&name).unwrap();
            vfs.append(&name, &bytes).unwrap();
        }
        // A flip in the first record, with valid records after it.
        let mut b = bytes.clone();
        b[12] ^= 1;
        vfs.create(&name).unwrap();
        vfs.append(&name, &b).unwrap();
        assert!(matches!(read(&*vfs, 7), Err(Error::Corruption { .. })));
        // Another generation's file does not parse as this one.
        assert!(read(&*vfs, 8).is_err());
    }

    /// Appends handed to the file but not synced reach the device in any order: a crash
    /// may lose one and keep a prefix of a later one. That reads as a torn tail (none of
    /// them was durable); the same damage once a later append records the damaged one
    /// durable is corruption.
    #[test]
    fn a_lost_unsynced_append_before_a_later_one_is_a_torn_tail() {
        for synced_between in [false, true] {
            let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
            let mut w = Wal::create(Arc::clone(&vfs), 7).unwrap();
            w.log_op(&LogicalOp::Insert(1, 1)).unwrap();
            w.sync().unwrap();
            let durable = w.end() as usize;
            w.log_op(&LogicalOp::Insert(2, 2)).unwrap();
            w.write_out().unwrap();
            let lost = w.end() as usize;
            if synced_between {
                w.sync().unwrap();
            }
            w.log_op(&LogicalOp::Insert(3, 3)).unwrap();
            w.write_out().unwrap();
            let mut bytes = vfs.read(w.name()).unwrap();
            bytes[durable..lost].fill(0);
            // The later append's prefix survived: its first record and part of the next.
            bytes.truncate(lost + APPEND_RECORD + 5);
            vfs.create(w.name()).unwrap();
            vfs.append(w.name(), &bytes).unwrap();
            match (read(&*vfs, 7), synced_between) {
                (Ok(r), false) => {
                    assert_eq!(r.records, vec![Record::Op(LogicalOp::Insert(1, 1))]);
                    assert_eq!(r.valid_len, durable as u64);
                }
                (Err(Error::Corruption { page, .. }), true) => {
                    assert_eq!(page, Some(durable as u64));
                }
                (r, _) => panic!(
                    "synced between: {synced_between}: {:?}",
                    r.map(|r| r.valid_len)
                ),
            }
        }
    }

    /// Hostile bytes (crate::hostile): a damaged WAL reads as a valid prefix or is
    /// corruption; a damaged logical record decodes or is refused.
    #[test]
    fn hostile_wals_read_a_prefix_or_are_corruption() {
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        let bytes = sample(&vfs);
        let name = crate::durable::manifest::wal_name(7);
        crate::hostile::fuzz_stream("WAL", &bytes, |b| {
            vfs.create(&name).map_err(|e| e.to_string())?;
            vfs.append(&name, b).map_err(|e| e.to_string())?;
            let r = read(&*vfs, 7);
            if let Ok(r) = &r {
                if r.valid_len > b.len() as u64 {
                    return Err(format!("valid prefix {} of {} bytes", r.valid_len, b.len()));
                }
            }
            crate::error::ok_or_corruption(r)
        });
        let mut batch = Vec::new();
        LogicalOp::Batch(vec![LogicalOp::Insert(1, 2), LogicalOp::DeleteRange(3, 4)])
            .encode(&mut batch);
        let mut bulk = Vec::new();
        LogicalOp::BulkInsert(vec![(1, 2), (3, 4)]).encode(&mut bulk);
        for valid in [batch, bulk] {
            crate::hostile::fuzz_stream("WAL logical record", &valid, |b| {
                let _ = LogicalOp::decode(b);
                Ok(())
            });
        }
    }

    /// Regression (hostile bytes): a bulk-insert record whose count is 2^60 overflowed
    /// `9 + 16 * n` (a panic in debug builds) instead of being refused.
    #[test]
    fn a_bulk_record_claiming_2_pow_60_pairs_is_refused() {
        let mut b = Vec::new();
        LogicalOp::BulkInsert(vec![(1, 2)]).encode(&mut b);
        for n in [1u64 << 60, u64::MAX, u64::MAX / 16 + 1] {
            b[1..9].copy_from_slice(&n.to_le_bytes());
            assert_eq!(LogicalOp::decode(&b), None, "count {n}");
        }
    }
}
