//! B+-tree baseline (being written).
use crate::engine::{Engine, RangeCursor};
use crate::error::{Error, Result};
use crate::manifest::Manifest;
use crate::options::Options;
use crate::stats::Stats;
use crate::Storage;

pub struct BTree;

impl BTree {
    pub fn create(_s: Storage, _o: Options) -> Result<Self> {
        Err(Error::Unsupported("btree".into()))
    }
    pub fn open(_s: Storage, _m: Manifest) -> Result<Self> {
        Err(Error::Unsupported("btree".into()))
    }
}

impl Engine for BTree {
    fn insert(&mut self, _k: u64, _v: u64) -> Result<()> {
        todo!()
    }
    fn delete(&mut self, _k: u64) -> Result<()> {
        todo!()
    }
    fn get(&mut self, _k: u64) -> Result<Option<u64>> {
        todo!()
    }
    fn scan(&mut self, _c: &mut RangeCursor, _o: &mut Vec<(u64, u64)>) -> Result<()> {
        todo!()
    }
    fn bulk_insert(&mut self, _s: &[(u64, u64)]) -> Result<()> {
        todo!()
    }
    fn delete_range(&mut self, _l: u64, _h: u64) -> Result<()> {
        todo!()
    }
    fn flush(&mut self) -> Result<()> {
        todo!()
    }
    fn close(&mut self) -> Result<()> {
        todo!()
    }
    fn stats(&self) -> Stats {
        todo!()
    }
    fn check_integrity(&mut self) -> Result<()> {
        todo!()
    }
}
