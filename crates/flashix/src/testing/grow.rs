//! [`grow_with_model_k`]: the growth history the FD-tree's and the LSM-tree's tests of a
//! re-chosen `k` share ([`crate::kit::sorted::tune`]).

use crate::cost::{fdtree, DeviceCosts};
use crate::util::Rng;
use crate::{Db, DeviceSpec, Error, FdTreeOptions, Options, Tuning};
use std::collections::BTreeMap;
use std::path::Path;

/// What [`grow_with_model_k`] saw.
pub struct ModelKGrowth {
    /// `k` at creation (the model's for the expected entries).
    pub k0: u64,
    /// `k` after the bulk load and after each insertion that changed it.
    pub ks: Vec<u64>,
    /// `k` before and after the reopen with another pool.
    pub reopened: (u64, u64),
    /// The tree whose `k` is the model's, after the growth.
    pub db: Db,
    /// The tree with `k0` fixed, after the same operations.
    pub fixed: Db,
    /// What both must hold.
    pub model: BTreeMap<u64, u64>,
}

impl ModelKGrowth {
    /// What every such growth must show: both trees pass `check_integrity` and hold the
    /// model; the bulk load changed `k` and it changed at least twice more, once to a
    /// smaller `k` (past two levels' reach the model takes a level more); the reopen kept
    /// `k`; the fixed tree kept `k0`. The error says which failed.
    pub fn verify(&mut self) -> Result<(), String> {
        let ks = &self.ks;
        let fail = |what: &str| Err(format!("{what}: k went {} then {ks:?}", self.k0));
        if ks.first() == Some(&self.k0) {
            return fail("the bulk load of many times the expected entries kept k");
        }
        if ks.len() < 3 {
            return fail("k did not follow the growth");
        }
        if !ks.windows(2).any(|w| w[1] < w[0]) {
            return fail("k never fell");
        }
        if self.reopened.0 != self.reopened.1 {
            return fail(&format!("the reopen changed k: {:?}", self.reopened));
        }
        if k_of(&self.fixed) != self.k0 {
            return fail("the fixed tree's k changed");
        }
        for db in [&mut self.db, &mut self.fixed] {
            db.check_integrity().map_err(|e| e.to_string())?;
            let got: Result<BTreeMap<u64, u64>, Error> =
                db.range(..).map_err(|e| e.to_string())?.collect();
            if got.map_err(|e| e.to_string())? != self.model {
                return Err("a tree lost or changed entries".into());
            }
        }
        Ok(())
    }
}

/// The tuning of the growth tests: a device like a virtio SSD (48.6 µs per random page
/// read, 3.2 and 1.23 µs per page read and written sequentially, 4 KiB pages), 2,000
/// expected entries, half searches.
pub fn growth_tuning() -> Result<Tuning, Error> {
    Ok(Tuning {
        device: DeviceCosts::new(4096, 48.6, 100.0, 3.2, 1.23)?,
        expected_entries: 2_000,
        search_fraction: 0.5,
        pio_device: None,
        bulk: None,
    })
}

/// The cost model's `k` for a tree of `o` (its tuning, page size and pool) whose head tree
/// (the LSM's C0) has `head_bytes`, with `stored` entries in one run: asked for one entry
/// more, as the engines ask (`kit::sorted::tune`).
pub fn model_k_for(o: &Options, head_bytes: u64, stored: u64) -> Result<u64, Error> {
    let f = FdTreeOptions::entries_per_page(o.page_size);
    let mut w = o.fdtree_model_workload(head_bytes, f);
    w.entries = stored + 1;
    let dev = o
        .tuning
        .clone()
        .unwrap_or_else(|| Tuning::reference(o.page_size))
        .device;
    Ok(fdtree::choose(&dev, &w)?.k)
}

fn k_of(db: &Db) -> u64 {
    db.stats().engine_counters.get("k").copied().unwrap_or(0)
}

/// Grow an index of `o`, whose `k` is left to the cost model, in `dir` (a file device, so
/// that it can be reopened with another pool), beside the same index in memory with `k`
/// fixed at its first value (`fix(k0)`): a bulk load of `load` random keys, then
/// `inserts` random insertions, with a reopen of the first with a pool of `reopen_pool`
/// bytes half way. `on_change` sees the first index after the bulk load and after every
/// insertion that changed its `k`.
pub fn grow_with_model_k(
    o: Options,
    fix: impl Fn(u64) -> Options,
    dir: &Path,
    load: u64,
    inserts: u64,
    reopen_pool: u64,
    on_change: impl Fn(&Db),
) -> Result<ModelKGrowth, Error> {
    let path = dir.join("db");
    let mut db = Db::create(&path, o.device(DeviceSpec::File { direct_io: false }))?;
    let k0 = k_of(&db);
    let (fixed, _, _) = super::mem_db(fix(k0))?;
    let mut rng = Rng::new(k0 ^ load);
    let mut model: BTreeMap<u64, u64> = (0..load).map(|_| (rng.next_u64(), 1)).collect();
    let pairs: Vec<(u64, u64)> = model.iter().map(|(&k, &v)| (k, v)).collect();
    db.bulk_insert(&pairs)?;
    fixed.bulk_insert(&pairs)?;
    on_change(&db);
    let mut ks = vec![k_of(&db)];
    let mut reopened = (0, 0);
    for i in 0..inserts {
        let key = rng.next_u64();
        db.insert(key, i)?;
        fixed.insert(key, i)?;
        model.insert(key, i);
        let k = k_of(&db);
        if ks.last() != Some(&k) {
            on_change(&db);
            ks.push(k);
        }
        if i == inserts / 2 {
            db.close()?;
            db = Db::open_with_buffer_pool(&path, reopen_pool)?;
            reopened = (k, k_of(&db));
        }
    }
    Ok(ModelKGrowth {
        k0,
        ks,
        reopened,
        db,
        fixed,
        model,
    })
}
