//! fjall (feature `fjall`), configured as the module doc of [`crate::subjects::peers`] says.
//!
//! Threads: `Keyspace` and `PartitionHandle` are shared handles (`Sync`, `&self` calls), so
//! any number of threads read and write at once; fjall orders concurrent writers at its
//! journal. A session is the shared store.

use super::memtable_bytes;
use crate::subjects::{be, from_be, Session, Target};
use anyhow::{Context, Result};
use fjall::{Config, Keyspace, PartitionCreateOptions, PartitionHandle, PersistMode};
use std::path::Path;

pub struct Fjall {
    ks: Keyspace,
    part: PartitionHandle,
}

impl Fjall {
    pub fn open(dir: &Path, budget: u64) -> Result<Fjall> {
        let memtables = memtable_bytes(budget);
        let ks = Config::new(dir)
            .cache_size(budget - memtables)
            .max_write_buffer_size(memtables)
            .open()
            .with_context(|| format!("opening fjall in {}", dir.display()))?;
        let part = ks
            .open_partition(
                "index",
                PartitionCreateOptions::default()
                    .max_memtable_size(u32::try_from(memtables / 2).unwrap_or(u32::MAX)),
            )
            .context("opening the fjall partition")?;
        Ok(Fjall { ks, part })
    }
}

impl Target for Fjall {
    fn session(&self) -> Result<Box<dyn Session + '_>> {
        Ok(Box::new(self))
    }
    fn flush(&self) -> Result<()> {
        self.ks
            .persist(PersistMode::SyncAll)
            .context("fjall persist")
    }
    fn close(self: Box<Self>) -> Result<()> {
        self.ks
            .persist(PersistMode::SyncAll)
            .context("fjall persist")?;
        Ok(())
    }
}

impl Session for &Fjall {
    fn get(&mut self, key: u64) -> Result<Option<u64>> {
        self.part
            .get(be(key))
            .context("fjall get")?
            .map(|v| from_be(&v))
            .transpose()
    }
    fn insert(&mut self, key: u64, value: u64) -> Result<()> {
        self.part.insert(be(key), be(value)).context("fjall insert")
    }
    fn delete(&mut self, key: u64) -> Result<()> {
        self.part.remove(be(key)).context("fjall remove")
    }
    fn scan(&mut self, start: u64, len: u64) -> Result<(Option<u64>, u64)> {
        let mut first = None;
        let mut n = 0;
        for kv in self.part.range(be(start)..).take(len as usize) {
            let (key, _) = kv.context("fjall range")?;
            first.get_or_insert(from_be(&key)?);
            n += 1;
        }
        Ok((first, n))
    }
    fn bulk_insert(&mut self, pairs: &[(u64, u64)]) -> Result<()> {
        let mut b = self.ks.batch();
        for &(k, v) in pairs {
            b.insert(&self.part, be(k), be(v));
        }
        b.commit().context("fjall batch commit")
    }
    fn delete_range(&mut self, lo: u64, hi: u64) -> Result<()> {
        let mut keys = Vec::new();
        for kv in self.part.range(be(lo)..=be(hi)) {
            let (key, _) = kv.context("fjall range")?;
            keys.push(key);
        }
        let mut b = self.ks.batch();
        for k in keys {
            b.remove(&self.part, k);
        }
        b.commit().context("fjall batch commit")
    }
}
