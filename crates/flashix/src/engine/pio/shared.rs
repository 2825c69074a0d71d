//! The searches that run beside each other on `&self` ([`crate::kit::api::Shareable`]):
//! the point search, MPSearch (`get_many`) and the parallel range search, each the serial
//! one's algorithm ([`super::mpsearch`]) over the Pager's shared reads. The module doc of
//! the engine (Thread safety) says why this is safe and how it departs from the serial
//! path; in short:
//!
//! - the internal nodes and a point search's leaf go through the buffer pool's shared mode
//!   and stay there, as in the serial path; a leaf of several segments is read in one
//!   request from its first page the pool misses ([`Pager::read_run_pooled_shared`]);
//! - a psync group of nodes (one level of MPSearch or of a range search) is looked up in
//!   the pool page by page ([`Pager::read_if_resident_shared`]), and the nodes it lacks
//!   are read in one psync read: internal nodes into the pool
//!   ([`Pager::read_runs_pooled_shared`]); leaves into the pool while it has free frames
//!   for them, else past it ([`Pager::read_runs_past_shared`]), in place of the serial
//!   path's demotion of its leaves to the pool's LRU end.

use super::leaf::{self, LeafImage, Pages};
use super::mpsearch::{match_leaf, scan_children, scan_next, targets, Internal, Target};
use super::opq::{Appended, Op, OpqEntry};
use super::{Fenced, PioBTree};
use crate::durable::{LogicalOp, Pager, Store};
use crate::error::{Error, Result};
use crate::io::PageId;
use crate::kit::api::{RangeCursor, SharedWrite};
use crate::kit::bnode::{node, spine};
use crate::page;
use std::sync::atomic::Ordering;

/// Pages of a walk from the pool's frames alone: a page the pool lacks stops the walk
/// (`missed`) having read nothing ([`Pager::read_if_resident_shared`]).
struct Resident<'a> {
    pager: &'a Pager,
    missed: bool,
}

impl Pages for Resident<'_> {
    fn page_size(&self) -> usize {
        self.pager.page_size()
    }

    fn page<T>(&mut self, pid: PageId, f: impl FnOnce(&[u8]) -> T) -> Result<T> {
        match self.pager.read_if_resident_shared(pid, f)? {
            Some(v) => Ok(v),
            None => {
                self.missed = true;
                Err(Error::InvalidArgument(format!(
                    "page {pid} is not in the buffer pool"
                )))
            }
        }
    }
}

/// Pages of a walk from one run read past the pool, checked as the pool checks the pages
/// it loads (envelope, then the engine's page check).
struct Run<'a> {
    first: PageId,
    bytes: &'a [u8],
    page_size: usize,
}

impl Pages for Run<'_> {
    fn page_size(&self) -> usize {
        self.page_size
    }

    fn page<T>(&mut self, pid: PageId, f: impl FnOnce(&[u8]) -> T) -> Result<T> {
        let ps = self.page_size;
        let b = pid
            .checked_sub(self.first)
            .and_then(|i| usize::try_from(i).ok())
            .and_then(|i| self.bytes.get(i * ps..(i + 1) * ps))
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "page {pid} is outside the run read from page {}",
                    self.first
                ))
            })?;
        page::verify(pid, b)?;
        node::check_page(pid, b)?;
        Ok(f(b))
    }
}

/// The page reader [`Pager::read_run_pooled_shared`] hands its body.
type ReadFn<'a> = &'a mut dyn FnMut(PageId, &mut dyn FnMut(&[u8])) -> Result<()>;

/// Pages of a walk through [`Pager::read_run_pooled_shared`]'s reader.
struct Pooled<'a> {
    read: ReadFn<'a>,
    page_size: usize,
}

impl<'a> Pooled<'a> {
    fn new(read: ReadFn<'a>, page_size: usize) -> Pooled<'a> {
        Pooled { read, page_size }
    }
}

impl Pages for Pooled<'_> {
    fn page_size(&self) -> usize {
        self.page_size
    }

    fn page<T>(&mut self, pid: PageId, f: impl FnOnce(&[u8]) -> T) -> Result<T> {
        let mut f = Some(f);
        let mut out = None;
        (self.read)(pid, &mut |b| {
            if let Some(f) = f.take() {
                out = Some(f(b));
            }
        })?;
        out.ok_or_else(|| Error::InvalidArgument(format!("page {pid} was not read")))
    }
}

impl PioBTree {
    /// An insert or delete (`op`, whose OPQ entry is `e`) beside other operations, under
    /// the engine's shared lock: its WAL record is buffered and the entry appended under
    /// the OPQ's lock ([`super::opq::SharedOpq::append_shared`]), and the WAL's full
    /// buffer, if any, handed to the file after that lock is released.
    /// [`SharedWrite::Exclusive`], having done nothing, when the OPQ is full or its array
    /// would grow; [`SharedWrite::Maintain`] when the append filled the OPQ (its flush, a
    /// batch update, then runs under the exclusive lock, as the paper's §4.2 locks the
    /// whole index for an OPQ flush) or a checkpoint came due.
    pub(super) fn write_shared(&self, op: LogicalOp, e: OpqEntry) -> Result<SharedWrite> {
        let appended = self.opq.append_shared(e, || {
            let start = self.pager.wal_bytes_shared();
            self.pager.log_op_shared(&op);
            start
        });
        let filled = match appended {
            Appended::Refused => return Ok(SharedWrite::Exclusive),
            Appended::Done => false,
            Appended::Filled(start) => {
                // No other append comes before the flush (the OPQ is full), and the
                // flush waits for the exclusive lock, which waits for this shared hold.
                self.filled_at.store(start, Ordering::Relaxed);
                true
            }
        };
        self.counters.shared_writes.fetch_add(1, Ordering::Relaxed);
        self.pager.hand_off_shared()?;
        let due = self.pager.wal_bytes_shared() >= self.pager.checkpoint_wal_bytes();
        Ok(match filled || due {
            true => SharedWrite::Maintain,
            false => SharedWrite::Done,
        })
    }

    /// One psync read (as the serial path counts them) that read `pages` pages.
    fn count_psync(&self, pages: u64) {
        if pages > 0 {
            self.counters.psync_reads.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// [`PioBTree::search_one`] on `&self`: the OPQ first, then one page per level
    /// through the pool's shared mode and the leaf's segments up to the last one the
    /// LSMap knows (all of them when it knows none), read in one request from the first
    /// the pool misses; the leaf stays in the pool, as in the serial path.
    pub(super) fn search_one_shared(&self, key: u64) -> Result<Option<u64>> {
        // The OPQ's lock is held for the lookup alone, not across the page reads: the
        // tree does not change under the engine's shared lock, so the answer is the key's
        // at the lookup's instant.
        let queued = self.opq.read().lookup(key);
        if let Some(e) = queued {
            self.counters.opq_hits.fetch_add(1, Ordering::Relaxed);
            return Ok((e.op == Op::Put).then_some(e.value));
        }
        self.counters.mpsearches.fetch_add(1, Ordering::Relaxed);
        let ps = self.pager.page_size();
        let mut pid = self.root;
        for level in (1..self.height).rev() {
            let (child, requests) = self.pager.read_run_pooled_shared(pid, 1, |read| {
                Pooled::new(read, ps).page(pid, |b| spine::child_in(b, pid, level, key))?
            })?;
            self.count_psync(requests);
            pid = child;
        }
        let (first, len) = self.search_run(pid);
        let known = self.lsmap.get(pid);
        let ((found, last), requests) = self.pager.read_run_pooled_shared(first, len, |read| {
            leaf::find(
                self.layout,
                &mut Pooled::new(read, ps),
                pid,
                self.segs,
                known,
                key,
            )
        })?;
        self.count_psync(requests);
        self.lsmap.learn(pid, last);
        Ok(found.and_then(|r| (r.op == Op::Put).then_some(r.value)))
    }

    /// [`PioBTree::search_many`] on `&self`: the OPQ first, then MPSearch
    /// ([`PioBTree::mpsearch_shared`]) for the rest.
    pub(super) fn search_many_shared(&self, keys: &[u64]) -> Result<Vec<Option<u64>>> {
        let mut out = vec![None; keys.len()];
        let mut pending: Vec<(u64, usize)> = Vec::new();
        let mut hits = 0;
        {
            // Every key looked up under one hold of the OPQ's lock, released before the
            // page reads.
            let q = self.opq.read();
            for (i, &k) in keys.iter().enumerate() {
                match q.lookup(k) {
                    Some(e) => {
                        hits += 1;
                        out[i] = (e.op == Op::Put).then_some(e.value);
                    }
                    None => pending.push((k, i)),
                }
            }
        }
        if hits > 0 {
            self.counters.opq_hits.fetch_add(hits, Ordering::Relaxed);
        }
        pending.sort_unstable();
        let mut ks: Vec<u64> = pending.iter().map(|p| p.0).collect();
        ks.dedup();
        let mut found: Vec<Option<u64>> = vec![None; ks.len()];
        let wanted = &ks;
        self.mpsearch_shared(&ks, &mut |t: &PioBTree, leaves: &[Target]| {
            let pids: Vec<PageId> = leaves.iter().map(|l| l.at.pid).collect();
            let imgs = t.leaves_shared(&pids)?;
            for (l, img) in leaves.iter().zip(&imgs) {
                match_leaf(img, l, wanted, &mut found);
            }
            Ok(())
        })?;
        for (k, i) in pending {
            if let Ok(j) = ks.binary_search(&k) {
                out[i] = found[j];
            }
        }
        Ok(out)
    }

    /// [`PioBTree::mpsearch`] on `&self`: `visit` gets the leaves that hold the sorted,
    /// distinct `keys`, in key order, in groups of at most `pio_max`; each level's group
    /// of nodes is read with at most one psync read ([`PioBTree::internals_shared`]).
    fn mpsearch_shared(
        &self,
        keys: &[u64],
        visit: &mut dyn FnMut(&PioBTree, &[Target]) -> Result<()>,
    ) -> Result<()> {
        if keys.is_empty() {
            return Ok(());
        }
        self.counters.mpsearches.fetch_add(1, Ordering::Relaxed);
        let root = Target {
            at: Fenced {
                pid: self.root,
                lo: 0,
                hi: None,
            },
            from: 0,
            to: keys.len(),
        };
        if self.height == 1 {
            return visit(self, &[root]);
        }
        self.descend_shared(self.height - 1, &[root], keys, visit)
    }

    /// Algorithm 1 for one group of nodes at `level` (≥ 1), on `&self`.
    fn descend_shared(
        &self,
        level: u32,
        nodes: &[Target],
        keys: &[u64],
        visit: &mut dyn FnMut(&PioBTree, &[Target]) -> Result<()>,
    ) -> Result<()> {
        let pids: Vec<PageId> = nodes.iter().map(|t| t.at.pid).collect();
        let per_node = self.internals_shared(&pids, level, |i, n| {
            let mut children = Vec::new();
            targets(n, &nodes[i], keys, &mut children);
            children
        })?;
        let children: Vec<Target> = per_node.into_iter().flatten().collect();
        if level == 1 {
            let g = self.group(u64::from(self.segs));
            for chunk in children.chunks(g) {
                visit(self, chunk)?;
            }
        } else {
            let g = self.group(1);
            for chunk in children.chunks(g) {
                self.descend_shared(level - 1, chunk, keys, visit)?;
            }
        }
        Ok(())
    }

    /// `f(i, node)` for each internal node `pids[i]` of `level`, in order: those in the
    /// pool from there, the others read with one psync read into the pool (the serial
    /// path's prefetch of a group).
    fn internals_shared<R>(
        &self,
        pids: &[PageId],
        level: u32,
        mut f: impl FnMut(usize, &Internal) -> R,
    ) -> Result<Vec<R>> {
        if let [pid] = *pids {
            // A group of one node (the root): read as a point search reads it, with no
            // lookup first.
            let ps = self.pager.page_size();
            let (r, requests) = self.pager.read_run_pooled_shared(pid, 1, |read| {
                Pooled::new(read, ps)
                    .page(pid, |b| spine::internal_in(b, pid, level).map(|n| f(0, &n)))?
            })?;
            self.count_psync(requests);
            return Ok(vec![r]);
        }
        let mut out: Vec<Option<R>> = Vec::with_capacity(pids.len());
        let mut missed: Vec<usize> = Vec::new();
        for (i, &pid) in pids.iter().enumerate() {
            let got = self.pager.read_if_resident_shared(pid, |b| {
                spine::internal_in(b, pid, level).map(|n| f(i, &n))
            })?;
            match got {
                Some(r) => out.push(Some(r?)),
                None => {
                    out.push(None);
                    missed.push(i);
                }
            }
        }
        if !missed.is_empty() {
            let runs: Vec<(PageId, u64)> = missed.iter().map(|&i| (pids[i], 1)).collect();
            let mut next = missed.iter();
            let pages = self
                .pager
                .read_runs_pooled_shared(&runs, self.pio_max, |pid, b| {
                    let n = spine::internal_in(b, pid, level)?;
                    if let Some(&i) = next.next() {
                        out[i] = Some(f(i, &n));
                    }
                    Ok(())
                })?;
            self.count_psync(pages);
        }
        out.into_iter()
            .zip(pids)
            .map(|(r, &pid)| {
                r.ok_or_else(|| Error::InvalidArgument(format!("internal node {pid} was not read")))
            })
            .collect()
    }

    /// The leaf at `pid` read up to its last segment (all of them when the LSMap knows
    /// none, which it then learns) from the pool's frames, or `None` when the pool lacks
    /// a page of it ([`Pager::read_if_resident_shared`]).
    fn leaf_in_pool(&self, pid: PageId) -> Result<Option<LeafImage>> {
        let known = self.lsmap.get(pid);
        let mut pages = Resident {
            pager: &self.pager,
            missed: false,
        };
        match leaf::load(self.layout, &mut pages, pid, self.segs, known) {
            Ok(img) => {
                self.lsmap.learn(pid, img.last);
                Ok(Some(img))
            }
            Err(_) if pages.missed => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The leaves starting at `pids`, in order, each read up to its last segment: those
    /// whose pages are all in the pool from there, the others with one psync read (each
    /// leaf one request, as in the serial path). While the pool has free frames for them
    /// they are loaded into it, as the serial path loads them; in a full pool they are
    /// read past it, where the serial path loads them and moves them to its LRU end, so
    /// that they take no frame the pool's other pages keep.
    fn leaves_shared(&self, pids: &[PageId]) -> Result<Vec<LeafImage>> {
        let mut out: Vec<Option<LeafImage>> = Vec::with_capacity(pids.len());
        let mut missed: Vec<usize> = Vec::new();
        for (i, &pid) in pids.iter().enumerate() {
            let img = self.leaf_in_pool(pid)?;
            if img.is_none() {
                missed.push(i);
            }
            out.push(img);
        }
        if missed.is_empty() {
            return collect_leaves(out, pids);
        }
        let runs: Vec<(PageId, u64)> = missed.iter().map(|&i| self.search_run(pids[i])).collect();
        let pages: u64 = runs.iter().map(|r| r.1).sum();
        let pool = self.pager.buffer_stats();
        if pool.frames.saturating_sub(pool.resident) >= pages {
            let read = self
                .pager
                .read_runs_pooled_shared(&runs, self.pio_max, |_, _| Ok(()))?;
            self.count_psync(read);
            // Read from the pool now, but for a leaf other readers' loads pushed out
            // meanwhile: that one is read past the pool below.
            let mut gone = Vec::new();
            for &i in &missed {
                match self.leaf_in_pool(pids[i])? {
                    Some(img) => out[i] = Some(img),
                    None => gone.push(i),
                }
            }
            missed = gone;
        }
        if !missed.is_empty() {
            let runs: Vec<(PageId, u64)> =
                missed.iter().map(|&i| self.search_run(pids[i])).collect();
            let bufs = self.pager.read_runs_past_shared(&runs, self.pio_max)?;
            self.count_psync(runs.iter().map(|r| r.1).sum());
            let page_size = self.pager.page_size();
            for ((&i, &(first, _)), buf) in missed.iter().zip(&runs).zip(&bufs) {
                let pid = pids[i];
                let mut pages = Run {
                    first,
                    bytes: buf,
                    page_size,
                };
                let known = self.lsmap.get(pid);
                let img = leaf::load(self.layout, &mut pages, pid, self.segs, known)?;
                self.lsmap.learn(pid, img.last);
                out[i] = Some(img);
            }
        }
        collect_leaves(out, pids)
    }

    /// [`PioBTree::prange`] on `&self`: the internal nodes over the range level by level
    /// and then up to one psync group of leaves, merged with the OPQ's entries of the
    /// range they cover.
    pub(super) fn prange_shared(
        &self,
        cur: &mut RangeCursor,
        out: &mut Vec<(u64, u64)>,
    ) -> Result<()> {
        let Some((next, hi)) = cur.remaining() else {
            return Ok(());
        };
        let ramp = self.scan_ramp(cur);
        let mut nodes = vec![Fenced {
            pid: self.root,
            lo: 0,
            hi: None,
        }];
        for level in (1..self.height).rev() {
            let g = self.scan_group(level, ramp);
            let pids: Vec<PageId> = nodes.iter().map(|n| n.pid).collect();
            // Every node's children that meet the range (at most a group of them), then
            // in key order up to a group, as the serial path takes them.
            let per_node = self.internals_shared(&pids, level, |i, n| {
                let mut children = Vec::new();
                scan_children(n, nodes[i], next, hi, g, &mut children);
                children
            })?;
            nodes = per_node.into_iter().flatten().take(g).collect();
        }
        let (covered, end) = self.scan_leaves(&mut nodes, next, hi);
        let pids: Vec<PageId> = nodes.iter().map(|n| n.pid).collect();
        let imgs = self.leaves_shared(&pids)?;
        self.scan_merge(imgs, next, end, out);
        cur.next = scan_next(covered, next, hi);
        Ok(())
    }
}

/// Every leaf of `pids` read: the images in order.
fn collect_leaves(out: Vec<Option<LeafImage>>, pids: &[PageId]) -> Result<Vec<LeafImage>> {
    out.into_iter()
        .zip(pids)
        .map(|(img, &pid)| {
            img.ok_or_else(|| Error::InvalidArgument(format!("leaf {pid} was not read")))
        })
        .collect()
}

/// Model checks of the OPQ's lock protocol (the engine's Thread safety) under `shuttle`,
/// which runs the threads in many interleavings: `RUSTFLAGS="--cfg flashix_shuttle" cargo
/// test -p flashix --lib engine::pio::shared::model`. The real [`SharedOpq`] inside a
/// model engine behind the readers-writer lock `Parallel` holds: two writers append to
/// one shared key and one private key each through
/// [`SharedOpq::append_shared`], logging to a model WAL; an OPQ of four entries sorted
/// every second append fills, and its flush (a batch into the model tree) runs under the
/// engine's exclusive lock, made by the writer whose append filled it or by one that
/// found it full; a reader looks up a writer's private key under the shared lock. Every
/// read must see at least the last append that returned before it began, and at the end
/// the WAL's last record of each key must be the key's value in the OPQ and tree (the
/// order recovery replays). The broken variants, which log outside the OPQ's lock or
/// look up the sorted region and the appended region under two holds of it (a sort
/// between them moves the entry), must be caught.
///
/// [`SharedOpq`]: super::opq::SharedOpq
/// [`SharedOpq::append_shared`]: super::opq::SharedOpq::append_shared
#[cfg(all(test, flashix_shuttle))]
mod model {
    use super::super::opq::{Appended, Op, Opq, OpqEntry, SharedOpq};
    use shuttle::sync::atomic::{AtomicU64, Ordering};
    use shuttle::sync::{Arc, Mutex, RwLock};
    use std::collections::BTreeMap;

    /// Which part of the protocol the scenario breaks.
    #[derive(Clone, Copy, PartialEq)]
    enum Broken {
        Nothing,
        /// A writer logs its record before it takes the OPQ's lock to append.
        LogOutsideTheLock,
        /// A reader looks up the sorted region, releases the OPQ's lock, then looks up
        /// the appended region.
        SplitLookup,
    }

    /// The engine as `Parallel` serves it: the OPQ with its lock, the tree the flushes
    /// write (changed only under the exclusive lock), the WAL.
    struct Engine {
        opq: SharedOpq,
        tree: BTreeMap<u64, u64>,
        wal: Mutex<Vec<OpqEntry>>,
    }

    /// Batches of this many entries flush a full OPQ.
    const BCNT: usize = 2;

    impl Engine {
        /// Flush a full OPQ into the tree (the engine's `settle` and `flush_if_full`).
        fn settle(&mut self) {
            while self.opq.get_mut().is_full() {
                for e in self.opq.get_mut().take_batch(BCNT) {
                    match e.op {
                        Op::Put => self.tree.insert(e.key, e.value),
                        Op::Delete => self.tree.remove(&e.key),
                    };
                }
            }
        }

        /// The serial write, under the exclusive lock: settle, log, append, flush.
        fn serial(&mut self, e: OpqEntry) {
            self.settle();
            self.wal.lock().unwrap().push(e);
            self.opq.get_mut().push(e);
            self.settle();
        }

        /// The key's value: the OPQ, then the tree.
        fn lookup(&self, key: u64, broken: Broken) -> Option<u64> {
            let queued = match broken {
                Broken::SplitLookup => {
                    let sorted = self.opq.read().halves(key).0;
                    let appended = self.opq.read().halves(key).1;
                    appended.or(sorted)
                }
                _ => self.opq.read().lookup(key),
            };
            match queued {
                Some(e) => (e.op == Op::Put).then_some(e.value),
                None => self.tree.get(&key).copied(),
            }
        }
    }

    /// The key both writers write, and writer `t`'s own.
    const SHARED: u64 = 1;
    fn private(t: u64) -> u64 {
        10 + t
    }

    fn scenario(broken: Broken) {
        let engine = Arc::new(RwLock::new(Engine {
            opq: SharedOpq::new(Opq::new(4, 2)),
            tree: BTreeMap::new(),
            wal: Mutex::new(Vec::new()),
        }));
        // The last value of writer 0's private key whose append returned.
        let returned = Arc::new(AtomicU64::new(0));
        let writers: Vec<_> = (0..2u64)
            .map(|t| {
                let (engine, returned) = (Arc::clone(&engine), Arc::clone(&returned));
                shuttle::thread::spawn(move || {
                    for i in 1..=3u64 {
                        for key in [SHARED, private(t)] {
                            let e = OpqEntry {
                                key,
                                value: t * 100 + i,
                                op: Op::Put,
                            };
                            let appended = {
                                let en = engine.read().unwrap();
                                let wal = &en.wal;
                                match broken {
                                    Broken::LogOutsideTheLock => {
                                        wal.lock().unwrap().push(e);
                                        shuttle::thread::yield_now();
                                        en.opq.append_shared(e, || 0)
                                    }
                                    _ => en.opq.append_shared(e, || {
                                        wal.lock().unwrap().push(e);
                                        0
                                    }),
                                }
                            };
                            match appended {
                                Appended::Done => {}
                                Appended::Filled(_) => engine.write().unwrap().settle(),
                                Appended::Refused => {
                                    // Refused by the broken writer too: its record is
                                    // logged again by the serial write, as the last.
                                    engine.write().unwrap().serial(e)
                                }
                            }
                            if key == private(0) {
                                returned.store(e.value, Ordering::SeqCst);
                            }
                        }
                    }
                })
            })
            .collect();
        let reader = {
            let (engine, returned) = (Arc::clone(&engine), Arc::clone(&returned));
            shuttle::thread::spawn(move || {
                for _ in 0..4 {
                    let before = returned.load(Ordering::SeqCst);
                    let seen = engine.read().unwrap().lookup(private(0), broken);
                    assert!(
                        seen.unwrap_or(0) >= before,
                        "a read saw {seen:?}, older than the append of {before} that \
                         returned before it began"
                    );
                }
            })
        };
        for t in writers.into_iter().chain([reader]) {
            t.join().unwrap();
        }
        let mut en = engine.write().unwrap();
        let mut last = BTreeMap::new();
        for e in en.wal.lock().unwrap().iter() {
            last.insert(e.key, e.value);
        }
        for (&key, &v) in &last {
            let live = en.lookup(key, Broken::Nothing);
            assert_eq!(
                live,
                Some(v),
                "key {key}: the WAL's order differs from the OPQ's"
            );
        }
        let q = en.opq.get_mut();
        assert!(q.used() < q.capacity(), "a full OPQ was left unflushed");
    }

    #[test]
    fn appends_lookups_sorts_and_flushes_keep_the_wal_order_and_linearizability() {
        shuttle::check_random(|| scenario(Broken::Nothing), 2000);
        shuttle::check_pct(|| scenario(Broken::Nothing), 2000, 3);
    }

    #[test]
    #[should_panic(expected = "the WAL's order differs from the OPQ's")]
    fn an_append_that_logs_outside_the_opq_lock_is_caught() {
        crate::util::sync::check_seeded(|| scenario(Broken::LogOutsideTheLock), 2000, 2000, 3);
    }

    #[test]
    #[should_panic(expected = "that returned before it began")]
    fn a_lookup_that_lets_the_lock_go_between_the_regions_is_caught() {
        // The window is one scheduling point wide: random schedules, then PCT's, whose
        // priority changes find a preemption at a chosen point.
        crate::util::sync::check_seeded(|| scenario(Broken::SplitLookup), 2000, 20000, 3);
    }
}

#[cfg(test)]
mod tests {
    use crate::{Db, DeviceSpec, EngineKind, Options, PioOptions, PIO_OPQ_ENTRY_BYTES};
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// Keys `0..2 * KEYS`, the even ones bulk-loaded. The writer changes only keys from
    /// `KEYS` on and odd keys: the even keys below `KEYS` every read must see exactly.
    const KEYS: u64 = 3000;

    /// A value of `k`: a read proves it saw a value written to `k`.
    fn value(k: u64, version: u64) -> u64 {
        k * 1000 + version
    }

    fn stable(k: u64) -> bool {
        k % 2 == 0 && k < KEYS
    }

    /// Reads that may run beside the writer, checked against what they can know: the
    /// stable keys exactly, the others as values written to them; scans in order.
    fn check_reads(db: &Db, k: u64) {
        let even = (k % KEYS) & !1;
        assert_eq!(db.get(even).unwrap(), Some(value(even, 0)), "get({even})");
        if let Some(v) = db.get(k).unwrap() {
            assert_eq!(v / 1000, k, "get({k}) = {v}");
        }
        let keys: Vec<u64> = (0..40).map(|i| (k + i * 97) % (2 * KEYS)).collect();
        for (&key, v) in keys.iter().zip(db.get_many(&keys).unwrap()) {
            if stable(key) {
                assert_eq!(v, Some(value(key, 0)), "get_many: {key}");
            } else if let Some(v) = v {
                assert_eq!(v / 1000, key, "get_many: {key} -> {v}");
            }
        }
        let (lo, hi) = (k, k + 300);
        let mut want = (lo..hi).filter(|&k| stable(k)).peekable();
        let mut last = None;
        for kv in db.range(lo..hi).unwrap() {
            let (key, v) = kv.unwrap();
            assert!(last < Some(key), "scan out of order: {key} after {last:?}");
            last = Some(key);
            assert_eq!(v / 1000, key, "scan: {key} -> {v}");
            if stable(key) {
                assert_eq!(want.next(), Some(key), "scan skipped a key before {key}");
                assert_eq!(v, value(key, 0));
            }
        }
        let missing: Vec<u64> = want.collect();
        assert!(missing.is_empty(), "scan of {lo}..{hi} missed {missing:?}");
    }

    /// Four threads run the shared searches (point, MPSearch, range) beside a writer
    /// whose updates fill the OPQ again and again (batch updates that split and shrink
    /// leaves of two segments, range deletes), on a pool far smaller than the index; then
    /// every answer equals a `BTreeMap` model's and the tree passes its checks.
    fn readers_beside_a_writer(device: DeviceSpec) {
        let dir = tempfile::tempdir().unwrap();
        let pio = PioOptions {
            leaf_segments: Some(2),
            opq_bytes: Some(96 * PIO_OPQ_ENTRY_BYTES),
            pio_max: 16,
            speriod: 7,
            bcnt: 48,
        };
        let opts = Options::new(EngineKind::PioBTree)
            .page_size(512)
            .buffer_pool_bytes(48 * 512 + 96 * PIO_OPQ_ENTRY_BYTES)
            .pio(pio)
            .device(device);
        let db = Db::create(dir.path().join("ix"), opts).unwrap();
        let mut model: BTreeMap<u64, u64> = (0..KEYS).map(|k| (2 * k, value(2 * k, 0))).collect();
        let pairs: Vec<(u64, u64)> = model.iter().map(|(&k, &v)| (k, v)).collect();
        db.bulk_insert(&pairs).unwrap();
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            let (db, done) = (&db, &done);
            let writer = s.spawn(|| {
                let mut model = BTreeMap::new();
                let mut deleted = Vec::new();
                for round in 1..=4u64 {
                    for k in (1..2 * KEYS).step_by(2 + round as usize) {
                        if k % 2 == 1 || k >= KEYS {
                            db.insert(k, value(k, round)).unwrap();
                            model.insert(k, value(k, round));
                        }
                    }
                    for k in (KEYS..2 * KEYS).step_by(7) {
                        db.delete(k).unwrap();
                        model.remove(&k);
                        deleted.push(k);
                    }
                    // Range tombstones over the keys the writer owns.
                    let lo = KEYS + 500 * round;
                    db.delete_range(lo..lo + 150).unwrap();
                    model.retain(|&k, _| !(lo..lo + 150).contains(&k));
                    deleted.extend(lo..lo + 150);
                    db.flush().unwrap();
                }
                done.store(true, Ordering::Release);
                (model, deleted)
            });
            for t in 0..4u64 {
                s.spawn(move || {
                    let mut x = t + 1;
                    // Bounded: the writer's rounds end, or the readers stop on their own.
                    for _ in 0..20_000 {
                        if done.load(Ordering::Acquire) {
                            break;
                        }
                        x = x
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        check_reads(db, (x >> 33) % (2 * KEYS));
                    }
                });
            }
            let (written, deleted) = writer.join().unwrap();
            for k in deleted {
                model.remove(&k);
            }
            model.extend(written);
        });
        // After the writer: exactly the model, through every shared search.
        for k in 0..2 * KEYS + 2 {
            assert_eq!(db.get(k).unwrap(), model.get(&k).copied(), "key {k}");
        }
        let keys: Vec<u64> = (0..2 * KEYS + 2).rev().collect();
        let want: Vec<Option<u64>> = keys.iter().map(|k| model.get(k).copied()).collect();
        assert_eq!(db.get_many(&keys).unwrap(), want);
        let all: Vec<(u64, u64)> = db.range(..).unwrap().map(|kv| kv.unwrap()).collect();
        assert_eq!(all, model.into_iter().collect::<Vec<_>>());
        let c = &db.stats().engine_counters;
        assert!(c["mpsearches"] > 0 && c["psync_reads"] > 0 && c["opq_hits"] > 0);
        db.check_integrity().unwrap();
        db.close().unwrap();
    }

    /// Two engines built alike, one driven through the serial searches (`&mut`), the
    /// other through the shared ones (`&self`), on the same operations.
    fn twins(frames: u64) -> (super::PioBTree, super::PioBTree) {
        use crate::io::{MemDevice, MemVfs, Storage};
        use crate::options::EngineOptions;
        let opq = 64 * PIO_OPQ_ENTRY_BYTES;
        let opts = Options::new(EngineKind::PioBTree)
            .page_size(512)
            .buffer_pool_bytes(frames * 512 + opq)
            .pio(PioOptions {
                leaf_segments: Some(3),
                opq_bytes: Some(opq),
                pio_max: 16,
                speriod: 7,
                bcnt: 32,
            })
            .resolved()
            .unwrap();
        let one = || {
            let storage = Storage {
                device: Box::new(MemDevice::new(512)),
                vfs: std::sync::Arc::new(MemVfs::new()),
            };
            let EngineOptions::PioBTree(o) = opts.sub_options.clone() else {
                unreachable!("PIO B-tree options")
            };
            super::PioBTree::create(storage, opts.settings().unwrap(), o).unwrap()
        };
        (one(), one())
    }

    /// The shared searches answer as the serial ones and, at one thread, read no more
    /// pages from the device, in as many requests, counting the same psync reads,
    /// MPSearches and OPQ hits: exactly the same reads while the pool has room for
    /// what they read, at most the serial path's in a full pool (whose leaves the
    /// shared MPSearch and range search read past it).
    #[test]
    fn shared_searches_answer_and_read_as_the_serial_ones() {
        use crate::kit::api::{RangeCursor, SerialEngine, Shareable};
        use crate::testing::Rng;
        for (frames, roomy) in [(4096u64, true), (40, false), (120, false), (250, false)] {
            let (mut serial, mut shared) = twins(frames);
            let pairs: Vec<(u64, u64)> = (0..6000u64).map(|k| (k * 3, k)).collect();
            for e in [&mut serial, &mut shared] {
                e.bulk_insert(&pairs).unwrap();
                // A cold pool: shrunk to its least, then given its budget again.
                e.pager.set_pool_bytes(0).unwrap();
                crate::durable::Logged::charge_memory(e).unwrap();
            }
            let mut rng = Rng::new(frames);
            let (mut reads, mut requests) = ([0u64; 2], [0u64; 2]);
            for round in 0..600 {
                let k = rng.below(18_100);
                if round % 5 == 0 {
                    // Writes between the reads: OPQ hits, batch updates, a range delete.
                    for e in [&mut serial, &mut shared] {
                        e.insert(k, round).unwrap();
                        if round % 50 == 0 {
                            e.delete_range(k, k + 40).unwrap();
                        }
                    }
                }
                let keys: Vec<u64> = (0..1 + rng.below(40)).map(|_| rng.below(18_100)).collect();
                let before = [serial.pager.device_stats(), shared.pager.device_stats()];
                let want = match round % 3 {
                    0 => vec![serial.get(k).unwrap()],
                    1 => serial.get_many(&keys).unwrap(),
                    _ => {
                        let mut cur = RangeCursor::bounded(k, k + 700);
                        let mut out = Vec::new();
                        while cur.next.is_some() {
                            serial.scan(&mut cur, &mut out).unwrap();
                        }
                        out.into_iter().map(|(k, v)| Some(k ^ v)).collect()
                    }
                };
                let got = match round % 3 {
                    0 => vec![shared.get_shared(k).unwrap()],
                    1 => shared.get_many_shared(&keys).unwrap(),
                    _ => {
                        let mut cur = RangeCursor::bounded(k, k + 700);
                        let mut out = Vec::new();
                        while cur.next.is_some() {
                            shared.scan_shared(&mut cur, &mut out).unwrap();
                        }
                        out.into_iter().map(|(k, v)| Some(k ^ v)).collect()
                    }
                };
                assert_eq!(got, want, "round {round}");
                for (i, e) in [&serial, &shared].into_iter().enumerate() {
                    let after = e.pager.device_stats();
                    reads[i] += after.reads - before[i].reads;
                    requests[i] += after.read_requests - before[i].read_requests;
                }
                if roomy {
                    assert_eq!(reads[1], reads[0], "round {round}: pages read");
                    assert_eq!(requests[1], requests[0], "round {round}: requests");
                }
                let (a, b) = (
                    serial.stats().engine_counters,
                    shared.stats().engine_counters,
                );
                for c in ["mpsearches", "opq_hits", "lsmap_entries"] {
                    assert_eq!(b[c], a[c], "round {round}: {c}");
                }
                if roomy {
                    assert_eq!(b["psync_reads"], a["psync_reads"], "round {round}");
                }
            }
            assert!(
                reads[1] <= reads[0],
                "{frames} frames: {reads:?} pages read"
            );
            assert!(reads[0] > 0, "the pool of {frames} frames was never missed");
            shared.check_integrity().unwrap();
        }
    }

    /// Point writes through the shared path (`insert_shared`, `delete_shared`; the
    /// maintenance they ask for run at once or left to the next exclusive write, as when
    /// another thread's write takes the exclusive lock first; the serial write where they
    /// refuse) take the OPQ and the tree through the serial path's states, operation by
    /// operation: the same OPQ, batch updates and pages written as a twin driven through
    /// the serial writes (so also as recovery's serial replay of the WAL), and every
    /// shared and serial search answers as a `BTreeMap` model.
    #[test]
    fn shared_appends_take_the_serial_paths_states() {
        use crate::kit::api::{RangeCursor, SerialEngine, Shareable, SharedWrite};
        use crate::testing::Rng;
        let (mut serial, mut shared) = twins(40);
        let pairs: Vec<(u64, u64)> = (0..2000u64).map(|k| (k * 3, k)).collect();
        for e in [&mut serial, &mut shared] {
            e.bulk_insert(&pairs).unwrap();
        }
        let mut model: BTreeMap<u64, u64> = pairs.iter().copied().collect();
        let mut rng = Rng::new(11);
        let (mut made, mut refused, mut filled, mut late) = (0u64, 0u64, 0u64, 0u64);
        for i in 0..6000u64 {
            let k = rng.below(6500);
            let r = match rng.below(10) {
                0..=2 => {
                    serial.delete(k).unwrap();
                    model.remove(&k);
                    Some(shared.delete_shared(k).unwrap())
                }
                3 if i % 50 == 3 => {
                    // A range delete takes the exclusive lock.
                    serial.delete_range(k, k + 30).unwrap();
                    model.retain(|&x, _| !(k..=k + 30).contains(&x));
                    shared.delete_range(k, k + 30).unwrap();
                    None
                }
                _ => {
                    serial.insert(k, i).unwrap();
                    model.insert(k, i);
                    Some(shared.insert_shared(k, i).unwrap())
                }
            };
            match r {
                None => {}
                Some(SharedWrite::Done) => made += 1,
                Some(SharedWrite::Maintain) => {
                    made += 1;
                    if shared.opq.get_mut().is_full() {
                        filled += 1;
                    }
                    // Half the time another thread's exclusive write comes first.
                    match rng.below(2) {
                        0 => shared.maintain().unwrap(),
                        _ => late += 1,
                    }
                }
                Some(SharedWrite::Exclusive) => {
                    refused += 1;
                    // Refused, it changed nothing: the write is made the serial way.
                    match model.get(&k) {
                        Some(&v) => shared.insert(k, v).unwrap(),
                        None => shared.delete(k).unwrap(),
                    }
                }
            }
            // Reads meet a full OPQ whose flush waits, as reads beside it do.
            let probe = rng.below(6500);
            let want = model.get(&probe).copied();
            assert_eq!(
                shared.get_shared(probe).unwrap(),
                want,
                "op {i}: get {probe}"
            );
            if i % 97 == 0 {
                let mut cur = RangeCursor::bounded(probe, probe + 200);
                let mut out = Vec::new();
                while cur.next.is_some() {
                    shared.scan_shared(&mut cur, &mut out).unwrap();
                }
                let want: Vec<(u64, u64)> = model
                    .range(probe..=probe + 200)
                    .map(|(&k, &v)| (k, v))
                    .collect();
                assert_eq!(out, want, "op {i}: scan from {probe}");
            }
            // The flush a full OPQ waits for is the next exclusive step's first one: only
            // then do the twins' states meet.
            if shared.opq.get_mut().is_full() {
                continue;
            }
            let (a, b) = (serial.opq.get_mut(), shared.opq.get_mut());
            assert_eq!(
                a.sorted_region(),
                b.sorted_region(),
                "op {i}: sorted region"
            );
            assert_eq!((a.len(), a.used()), (b.len(), b.used()), "op {i}: OPQ size");
            let (a, b) = (serial.stats(), shared.stats());
            for c in [
                "bupdates",
                "bupdate_entries",
                "leaf_splits",
                "shrinks",
                "leaves",
            ] {
                assert_eq!(a.engine_counters[c], b.engine_counters[c], "op {i}: {c}");
            }
            assert_eq!(
                serial.pager.device_stats().writes,
                shared.pager.device_stats().writes,
                "op {i}: pages written"
            );
            assert_eq!(a.memory_bytes, b.memory_bytes, "op {i}: memory");
        }
        assert!(made > 1000 && refused > 0 && filled > 10 && late > 5);
        assert_eq!(
            shared.stats().engine_counters["shared_writes"],
            made,
            "every shared append counted"
        );
        assert_eq!(serial.stats().engine_counters["shared_writes"], 0);
        shared.close().unwrap();
        for e in [&mut serial, &mut shared] {
            e.check_integrity().unwrap();
            let mut cur = RangeCursor::bounded(0, u64::MAX);
            let mut out = Vec::new();
            while cur.next.is_some() {
                e.scan(&mut cur, &mut out).unwrap();
            }
            assert_eq!(out, model.iter().map(|(&k, &v)| (k, v)).collect::<Vec<_>>());
        }
    }

    /// Threads insert and delete the same few keys beside readers (their writes appended
    /// under the OPQ's lock, the OPQ filling and flushing again and again); after a
    /// flush the index, dropped without a close and reopened, replays its WAL into the
    /// state the threads left: the WAL holds every key's writes in the order of the OPQ.
    #[test]
    fn shared_appends_replay_to_the_state_they_left() {
        let pio = PioOptions {
            leaf_segments: Some(2),
            opq_bytes: Some(200 * PIO_OPQ_ENTRY_BYTES),
            pio_max: 16,
            speriod: 7,
            bcnt: 40,
        };
        let opts = Options::new(EngineKind::PioBTree)
            .page_size(512)
            .buffer_pool_bytes(64 * 512 + 200 * PIO_OPQ_ENTRY_BYTES)
            .checkpoint_wal_bytes(64 << 20)
            .pio(pio);
        let (db, dev, vfs) = crate::testing::mem_db(opts).unwrap();
        let pairs: Vec<(u64, u64)> = (0..3000u64).map(|k| (k * 2, 1)).collect();
        db.bulk_insert(&pairs).unwrap();
        // Keys below WRITTEN are the writers'; the even ones above stay as loaded.
        const WRITTEN: u64 = 600;
        // Whether the threads' calls overlap is the scheduler's: rounds, a bounded number,
        // until some write was appended beside another operation.
        let shared_writes = |db: &crate::Db| db.stats().engine_counters["shared_writes"];
        for round in 0..10u64 {
            if round > 0 && shared_writes(&db) > 0 {
                break;
            }
            let start = std::sync::Barrier::new(5);
            std::thread::scope(|s| {
                let (db, start) = (&db, &start);
                for t in 0..4u64 {
                    s.spawn(move || {
                        start.wait();
                        let mut x = t + 7 + round * 101;
                        for i in 0..4000u64 {
                            x = x
                                .wrapping_mul(6364136223846793005)
                                .wrapping_add(1442695040888963407);
                            // Few keys, so that the threads' writes of a key interleave; more
                            // than the OPQ holds, so that it fills and is flushed.
                            let k = (x >> 33) % WRITTEN;
                            match (x >> 20) % 4 {
                                0 => db.delete(k).unwrap(),
                                _ => db.insert(k, (t << 32) | i).unwrap(),
                            }
                        }
                    });
                }
                s.spawn(move || {
                    start.wait();
                    let mut x = 3u64;
                    for _ in 0..3000 {
                        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                        let k = (x >> 33) % 6000;
                        if k >= WRITTEN && k % 2 == 0 {
                            assert_eq!(db.get(k).unwrap(), Some(1), "get({k})");
                        }
                        let keys: Vec<u64> = (0..20).map(|i| (k + i * 31) % 6000).collect();
                        for (&key, v) in keys.iter().zip(db.get_many(&keys).unwrap()) {
                            if key >= WRITTEN && key % 2 == 0 {
                                assert_eq!(v, Some(1), "get_many: {key}");
                            }
                        }
                    }
                });
            });
        }
        let live: Vec<(u64, u64)> = db.range(..).unwrap().map(|kv| kv.unwrap()).collect();
        let c = db.stats().engine_counters;
        assert!(c["shared_writes"] > 0, "no write appended beside another");
        assert!(
            c["bupdates"] > 10,
            "the OPQ was not flushed again and again"
        );
        db.flush().unwrap();
        drop(db);
        let db = crate::testing::reopen_mem(&dev, &vfs).unwrap();
        let replayed: Vec<(u64, u64)> = db.range(..).unwrap().map(|kv| kv.unwrap()).collect();
        assert_eq!(replayed.len(), live.len());
        for (a, b) in live.iter().zip(&replayed) {
            assert_eq!(a, b, "the replay differs from the live index");
        }
        db.check_integrity().unwrap();
    }

    #[test]
    fn shared_searches_beside_a_writer_in_memory() {
        readers_beside_a_writer(DeviceSpec::Memory);
    }

    /// On a file the readers' misses go through the device's reader handles.
    #[test]
    fn shared_searches_beside_a_writer_on_a_file() {
        readers_beside_a_writer(DeviceSpec::File { direct_io: false });
    }
}
