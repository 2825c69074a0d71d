//! LMDB through heed (feature `lmdb`): `lmdb`, one write transaction per write, and
//! `lmdb-batched`, one per [`super::BATCH_WRITES`] writes.
//!
//! Threads: `Env` is `Sync`; reads run in parallel, each on a read transaction of its
//! thread. LMDB has a single writer: `mdb_txn_begin` of a write transaction waits for the
//! writer mutex, which the beginning thread owns until the commit, so the store itself
//! serializes the threads' write transactions, and a write transaction must end on its own
//! thread. So a batched session keeps its thread's open transaction (the session never
//! leaves the thread that made it) until `BATCH_WRITES` of that thread's writes or
//! [`Session::finish`], and reads through it while it is open (a thread sees its own
//! writes); meanwhile the other threads' writes wait for it, their reads do not.

use crate::subjects::{be, from_be, Session, Target};
use anyhow::{Context, Result};
use heed::types::Bytes;
use heed::{Database, Env, EnvOpenOptions, RwTxn};
use std::ops::Bound;
use std::path::Path;

/// Map size: address space, not memory (the file grows as needed).
const MAP_BYTES: usize = 1 << 40;

/// Reader slots of the environment: one per thread with a read transaction open (LMDB's
/// default, 126, is below the thread counts `--threads` accepts).
const MAX_READERS: u32 = 1024;

pub struct Lmdb {
    env: Env,
    db: Database<Bytes, Bytes>,
    /// Writes per transaction (1: one transaction per write).
    batch: u64,
}

impl Lmdb {
    pub fn open(dir: &Path, batch: u64) -> Result<Lmdb> {
        // SAFETY: heed requires that the environment is not opened twice in one process
        // and that the file is not modified from outside; the bench opens each run
        // directory once, alone.
        let env = unsafe {
            EnvOpenOptions::new()
                .map_size(MAP_BYTES)
                .max_dbs(1)
                .max_readers(MAX_READERS)
                .flags(heed::EnvFlags::NO_READ_AHEAD)
                .open(dir)
                .with_context(|| format!("opening LMDB in {}", dir.display()))?
        };
        let mut wtxn = env.write_txn().context("LMDB write_txn")?;
        let db: Database<Bytes, Bytes> = env
            .create_database(&mut wtxn, Some("index"))
            .context("LMDB create_database")?;
        wtxn.commit().context("LMDB commit")?;
        Ok(Lmdb { env, db, batch })
    }
}

impl Target for Lmdb {
    fn session(&self) -> Result<Box<dyn Session + '_>> {
        Ok(Box::new(LmdbSession {
            lmdb: self,
            open: None,
            pending: 0,
        }))
    }
    fn flush(&self) -> Result<()> {
        self.env.force_sync().context("LMDB sync")
    }
    fn close(self: Box<Self>) -> Result<()> {
        self.env.force_sync().context("LMDB sync")
    }
}

/// One thread's operations on an [`Lmdb`], with its open write transaction of a batch.
struct LmdbSession<'a> {
    lmdb: &'a Lmdb,
    open: Option<RwTxn<'a>>,
    pending: u64,
}

impl<'a> LmdbSession<'a> {
    /// Run `f` inside the open write transaction (or a new one), and commit when `writes`
    /// completes a batch.
    fn write<T>(
        &mut self,
        writes: u64,
        f: impl FnOnce(&Database<Bytes, Bytes>, &mut RwTxn<'a>) -> Result<T>,
    ) -> Result<T> {
        let mut tx = match self.open.take() {
            Some(tx) => tx,
            None => self.lmdb.env.write_txn().context("LMDB write_txn")?,
        };
        let out = f(&self.lmdb.db, &mut tx)?;
        self.pending += writes;
        if self.pending >= self.lmdb.batch {
            tx.commit().context("LMDB commit")?;
            self.pending = 0;
        } else {
            self.open = Some(tx);
        }
        Ok(out)
    }

    fn scan_in(
        db: &Database<Bytes, Bytes>,
        tx: &heed::RoTxn,
        start: u64,
        len: u64,
    ) -> Result<(Option<u64>, u64)> {
        let k = be(start);
        let range = (Bound::Included(&k[..]), Bound::Unbounded);
        let mut first = None;
        let mut n = 0;
        for kv in db
            .range(tx, &range)
            .context("LMDB range")?
            .take(len as usize)
        {
            let (key, _) = kv.context("LMDB range")?;
            first.get_or_insert(from_be(key)?);
            n += 1;
        }
        Ok((first, n))
    }
}

impl Session for LmdbSession<'_> {
    fn get(&mut self, key: u64) -> Result<Option<u64>> {
        let k = be(key);
        let db = &self.lmdb.db;
        if let Some(tx) = &self.open {
            let v = db.get(tx, &k[..]).context("LMDB get")?;
            return v.map(from_be).transpose();
        }
        let tx = self.lmdb.env.read_txn().context("LMDB read_txn")?;
        let v = db.get(&tx, &k[..]).context("LMDB get")?;
        v.map(from_be).transpose()
    }
    fn insert(&mut self, key: u64, value: u64) -> Result<()> {
        self.write(1, |db, tx| {
            db.put(tx, &be(key)[..], &be(value)[..])
                .context("LMDB put")?;
            Ok(())
        })
    }
    fn delete(&mut self, key: u64) -> Result<()> {
        self.write(1, |db, tx| {
            db.delete(tx, &be(key)[..]).context("LMDB delete")?;
            Ok(())
        })
    }
    fn scan(&mut self, start: u64, len: u64) -> Result<(Option<u64>, u64)> {
        if let Some(tx) = &self.open {
            return Self::scan_in(&self.lmdb.db, tx, start, len);
        }
        let tx = self.lmdb.env.read_txn().context("LMDB read_txn")?;
        Self::scan_in(&self.lmdb.db, &tx, start, len)
    }
    fn bulk_insert(&mut self, pairs: &[(u64, u64)]) -> Result<()> {
        self.write(self.lmdb.batch.max(1), |db, tx| {
            for &(k, v) in pairs {
                db.put(tx, &be(k)[..], &be(v)[..]).context("LMDB put")?;
            }
            Ok(())
        })
    }
    fn delete_range(&mut self, lo: u64, hi: u64) -> Result<()> {
        self.write(self.lmdb.batch.max(1), |db, tx| {
            let (l, h) = (be(lo), be(hi));
            let range = (Bound::Included(&l[..]), Bound::Included(&h[..]));
            db.delete_range(tx, &range).context("LMDB delete_range")?;
            Ok(())
        })
    }
    fn finish(mut self: Box<Self>) -> Result<()> {
        if let Some(tx) = self.open.take() {
            tx.commit().context("LMDB commit")?;
        }
        self.pending = 0;
        Ok(())
    }
}
