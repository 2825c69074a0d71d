//! redb (feature `redb`): `redb`, one copy-on-write transaction per write, and
//! `redb-batched`, one per [`super::BATCH_WRITES`] writes.
//!
//! Threads: `Database` is `Sync`; reads run in parallel on read transactions (snapshots of
//! the last commit). redb has a single writer: `begin_write` waits until the open write
//! transaction is committed, so the store itself serializes the threads' write
//! transactions. A batched session keeps its thread's open transaction until
//! `BATCH_WRITES` of that thread's writes or [`Session::finish`], and reads through it
//! while it is open (a thread sees its own writes); meanwhile the other threads' writes
//! wait for it, their reads do not.

use crate::subjects::{be, from_be, Session, Target};
use anyhow::{Context, Result};
use redb::{Database, ReadableTable, TableDefinition, WriteTransaction};
use std::path::Path;

const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("index");

pub struct Redb {
    db: Database,
    /// Writes per transaction (1: one transaction per write).
    batch: u64,
}

impl Redb {
    pub fn open(dir: &Path, budget: u64, batch: u64) -> Result<Redb> {
        let path = dir.join("redb.db");
        let db = redb::Builder::new()
            .set_cache_size(budget as usize)
            .create(&path)
            .with_context(|| format!("opening redb {}", path.display()))?;
        // Make sure the table exists, so reads before any write find it.
        let tx = db.begin_write().context("redb begin_write")?;
        tx.open_table(TABLE).context("redb open_table")?;
        tx.commit().context("redb commit")?;
        Ok(Redb { db, batch })
    }
}

impl Target for Redb {
    fn session(&self) -> Result<Box<dyn Session + '_>> {
        Ok(Box::new(RedbSession {
            db: &self.db,
            batch: self.batch,
            open: None,
            pending: 0,
        }))
    }
    /// Every commit is durable already (`Durability::Immediate`, redb's default); the
    /// sessions committed what they held open when they finished.
    fn flush(&self) -> Result<()> {
        Ok(())
    }
    fn close(self: Box<Self>) -> Result<()> {
        Ok(())
    }
}

/// One thread's operations on a [`Redb`], with its open write transaction of a batch.
struct RedbSession<'a> {
    db: &'a Database,
    batch: u64,
    open: Option<WriteTransaction>,
    pending: u64,
}

impl RedbSession<'_> {
    /// Run `f` on the table inside the open write transaction (or a new one), and commit
    /// when `writes` completes a batch.
    fn write<T>(
        &mut self,
        writes: u64,
        f: impl FnOnce(&mut redb::Table<&[u8], &[u8]>) -> Result<T>,
    ) -> Result<T> {
        let tx = match self.open.take() {
            Some(tx) => tx,
            None => self.db.begin_write().context("redb begin_write")?,
        };
        let out = {
            let mut t = tx.open_table(TABLE).context("redb open_table")?;
            f(&mut t)?
        };
        self.pending += writes;
        if self.pending >= self.batch {
            tx.commit().context("redb commit")?;
            self.pending = 0;
        } else {
            self.open = Some(tx);
        }
        Ok(out)
    }

    fn commit_open(&mut self) -> Result<()> {
        if let Some(tx) = self.open.take() {
            tx.commit().context("redb commit")?;
        }
        self.pending = 0;
        Ok(())
    }
}

/// Up to `len` entries of `t` from `start`: the first key and the count.
fn scan_in(
    t: &impl ReadableTable<&'static [u8], &'static [u8]>,
    start: u64,
    len: u64,
) -> Result<(Option<u64>, u64)> {
    let k = be(start);
    let mut first = None;
    let mut n = 0;
    for kv in t
        .range(k.as_slice()..)
        .context("redb range")?
        .take(len as usize)
    {
        let (key, _) = kv.context("redb range")?;
        first.get_or_insert(from_be(key.value())?);
        n += 1;
    }
    Ok((first, n))
}

impl Session for RedbSession<'_> {
    fn get(&mut self, key: u64) -> Result<Option<u64>> {
        if let Some(tx) = &self.open {
            let t = tx.open_table(TABLE).context("redb open_table")?;
            let v = t.get(be(key).as_slice()).context("redb get")?;
            return v.map(|g| from_be(g.value())).transpose();
        }
        let tx = self.db.begin_read().context("redb begin_read")?;
        let t = tx.open_table(TABLE).context("redb open_table")?;
        let v = t.get(be(key).as_slice()).context("redb get")?;
        v.map(|g| from_be(g.value())).transpose()
    }
    fn insert(&mut self, key: u64, value: u64) -> Result<()> {
        self.write(1, |t| {
            t.insert(be(key).as_slice(), be(value).as_slice())
                .context("redb insert")?;
            Ok(())
        })
    }
    fn delete(&mut self, key: u64) -> Result<()> {
        self.write(1, |t| {
            t.remove(be(key).as_slice()).context("redb remove")?;
            Ok(())
        })
    }
    fn scan(&mut self, start: u64, len: u64) -> Result<(Option<u64>, u64)> {
        if let Some(tx) = &self.open {
            let t = tx.open_table(TABLE).context("redb open_table")?;
            return scan_in(&t, start, len);
        }
        let tx = self.db.begin_read().context("redb begin_read")?;
        let t = tx.open_table(TABLE).context("redb open_table")?;
        scan_in(&t, start, len)
    }
    fn bulk_insert(&mut self, pairs: &[(u64, u64)]) -> Result<()> {
        // One transaction for the bulk (a bulk is one write of the commit model).
        self.write(self.batch.max(1), |t| {
            for &(k, v) in pairs {
                t.insert(be(k).as_slice(), be(v).as_slice())
                    .context("redb insert")?;
            }
            Ok(())
        })
    }
    fn delete_range(&mut self, lo: u64, hi: u64) -> Result<()> {
        self.write(self.batch.max(1), |t| {
            t.retain_in(be(lo).as_slice()..=be(hi).as_slice(), |_, _| false)
                .context("redb retain_in")?;
            Ok(())
        })
    }
    fn finish(mut self: Box<Self>) -> Result<()> {
        self.commit_open()
    }
}
