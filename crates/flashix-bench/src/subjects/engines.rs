//! The flashix engines as subjects: a [`Db`] of any engine is a [`Target`], and `&Db` the
//! [`Session`] of every thread, since one index serves any number of threads through
//! shared references (docs/design.md, Concurrency).

use super::{Session, Target};
use anyhow::{Context, Result};
use flashix::{Db, Stats};

impl Target for Db {
    fn session(&self) -> Result<Box<dyn Session + '_>> {
        Ok(Box::new(self))
    }
    fn flush(&self) -> Result<()> {
        Ok(Db::flush(self)?)
    }
    fn flashix_stats(&self) -> Option<Stats> {
        Some(self.stats())
    }
    fn memory_bytes(&self) -> Option<u64> {
        Some(self.stats().memory_bytes)
    }
    fn close(self: Box<Self>) -> Result<()> {
        Ok(Db::close(*self)?)
    }
}

/// A flashix index serves any number of threads through `&Db` (docs/design.md, Concurrency).
impl Session for &Db {
    fn get(&mut self, key: u64) -> Result<Option<u64>> {
        Ok(Db::get(self, key)?)
    }
    fn insert(&mut self, key: u64, value: u64) -> Result<()> {
        Ok(Db::insert(self, key, value)?)
    }
    fn delete(&mut self, key: u64) -> Result<()> {
        Ok(Db::delete(self, key)?)
    }
    fn get_many(&mut self, keys: &[u64]) -> Result<Vec<Option<u64>>> {
        Ok(Db::get_many(self, keys)?)
    }
    fn scan(&mut self, start: u64, len: u64) -> Result<(Option<u64>, u64)> {
        let mut first = None;
        let mut n = 0;
        for kv in self
            .range(start..)
            .context("range")?
            .limit_hint(len)
            .take(len as usize)
        {
            let (k, _) = kv.context("range scan")?;
            first.get_or_insert(k);
            n += 1;
        }
        Ok((first, n))
    }
    fn bulk_insert(&mut self, pairs: &[(u64, u64)]) -> Result<()> {
        Ok(Db::bulk_insert(self, pairs)?)
    }
    fn delete_range(&mut self, lo: u64, hi: u64) -> Result<()> {
        Ok(Db::delete_range(self, lo..=hi)?)
    }
}
