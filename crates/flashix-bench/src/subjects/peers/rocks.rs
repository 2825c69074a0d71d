//! RocksDB through the `rocksdb` crate (feature `rocksdb`), configured as the module doc of
//! [`crate::subjects::peers`] says.
//!
//! Threads: `DB` is `Sync` and every call used here takes `&self`, so any number of threads
//! read and write at once; RocksDB orders concurrent writers itself (its write groups, one
//! WAL append per group). A session is the shared store.

use super::memtable_bytes;
use crate::subjects::{be, from_be, Session, Target};
use anyhow::{Context, Result};
use rocksdb::{
    BlockBasedIndexType, BlockBasedOptions, Cache, Direction, IteratorMode, Options, WriteBatch,
    WriteBufferManager, DB,
};
use std::path::Path;

pub struct Rocks {
    db: DB,
}

impl Rocks {
    pub fn open(dir: &Path, budget: u64) -> Result<Rocks> {
        let mut t = BlockBasedOptions::default();
        t.set_bloom_filter(10.0, false);
        t.set_index_type(BlockBasedIndexType::TwoLevelIndexSearch);
        t.set_partition_filters(true);
        t.set_cache_index_and_filter_blocks(true);
        t.set_pin_top_level_index_and_filter(true);
        let cache = Cache::new_lru_cache(budget as usize);
        t.set_block_cache(&cache);
        let memtables = memtable_bytes(budget) as usize;
        let mut o = Options::default();
        // Memtables charged to the block cache: both under the one budget.
        o.set_write_buffer_manager(&WriteBufferManager::new_write_buffer_manager_with_cache(
            memtables, false, cache,
        ));
        o.create_if_missing(true);
        o.set_block_based_table_factory(&t);
        o.set_use_direct_reads(true);
        o.set_use_direct_io_for_flush_and_compaction(true);
        o.set_write_buffer_size(memtables / 2);
        o.set_max_write_buffer_number(2);
        let db =
            DB::open(&o, dir).with_context(|| format!("opening RocksDB in {}", dir.display()))?;
        Ok(Rocks { db })
    }
}

impl Target for Rocks {
    fn session(&self) -> Result<Box<dyn Session + '_>> {
        Ok(Box::new(self))
    }
    fn flush(&self) -> Result<()> {
        self.db.flush_wal(true).context("RocksDB FlushWAL(sync)")
    }
    fn close(self: Box<Self>) -> Result<()> {
        self.db.flush_wal(true).context("RocksDB FlushWAL(sync)")?;
        drop(self);
        Ok(())
    }
}

impl Session for &Rocks {
    fn get(&mut self, key: u64) -> Result<Option<u64>> {
        self.db
            .get(be(key))
            .context("RocksDB get")?
            .map(|v| from_be(&v))
            .transpose()
    }
    fn insert(&mut self, key: u64, value: u64) -> Result<()> {
        self.db.put(be(key), be(value)).context("RocksDB put")
    }
    fn delete(&mut self, key: u64) -> Result<()> {
        self.db.delete(be(key)).context("RocksDB delete")
    }
    fn get_many(&mut self, keys: &[u64]) -> Result<Vec<Option<u64>>> {
        self.db
            .multi_get(keys.iter().map(|&k| be(k)))
            .into_iter()
            .map(|r| {
                r.context("RocksDB multi_get")?
                    .map(|v| from_be(&v))
                    .transpose()
            })
            .collect()
    }
    fn scan(&mut self, start: u64, len: u64) -> Result<(Option<u64>, u64)> {
        let k = be(start);
        let mut first = None;
        let mut n = 0;
        for kv in self
            .db
            .iterator(IteratorMode::From(&k, Direction::Forward))
            .take(len as usize)
        {
            let (key, _) = kv.context("RocksDB iterator")?;
            first.get_or_insert(from_be(&key)?);
            n += 1;
        }
        Ok((first, n))
    }
    fn bulk_insert(&mut self, pairs: &[(u64, u64)]) -> Result<()> {
        let mut b = WriteBatch::default();
        for &(k, v) in pairs {
            b.put(be(k), be(v));
        }
        self.db.write(b).context("RocksDB write batch")
    }
    fn delete_range(&mut self, lo: u64, hi: u64) -> Result<()> {
        let mut b = WriteBatch::default();
        b.delete_range(be(lo), be(hi));
        b.delete(be(hi)); // delete_range's end is exclusive
        self.db.write(b).context("RocksDB delete_range")
    }
}
