//! The bookkeeping of point writes made into a head tree (the FD-tree's L0, the LSM-tree's
//! C0) under the engine's shared lock ([`crate::kit::api::Shareable::insert_shared`]),
//! beside readers and other such writes.
//!
//! A shared write changes one leaf of the head tree in place under the leaf's latch and
//! logs its record there ([`super::head::Head::upsert_shared`]); what it cannot change
//! under that latch is the engine's own state, which `&mut` paths read without a lock: the
//! head tree's counts, and the pace of a merge in progress. So the counts it changes are
//! kept here, in atomics, and folded into the head tree's by the next `&mut` path
//! ([`SharedWrites::fold`]) — every `&mut` path runs under the exclusive lock, with no
//! shared write beside it — and what the engine must do under the exclusive lock (freeze a
//! full head tree, advance a merge, checkpoint a full log) is asked for with
//! [`SharedWrite::Maintain`] ([`SharedWrites::done`]). The writes themselves, an upsert or
//! a removal in a head tree's leaf and its count, are the same in both engines: each lends
//! its head tree as a [`SharedHead`] and states only what decides which write a delete is.

use super::entry::{Entry, Layout};
use super::head::Head;
use super::tombs::Tombs;
use crate::durable::{LogicalOp, Pager, Store};
use crate::error::Result;
use crate::kit::api::SharedWrite;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};

/// Shared writes between two advances of a merge in progress: a write under the shared
/// lock cannot step the merge (device I/O, the engine's `&mut` state), so every this many
/// ask for the maintenance that steps it by their share (and serves the merge thread's
/// requests). Small beside a head tree's capacity (the merge's pace stays about that of
/// one step per write), large beside one write (the exclusive lock is taken rarely).
pub(crate) const MAINTAIN_EVERY: u64 = 32;

/// What shared writes did to a head tree that its `&mut` state does not hold yet.
#[derive(Debug, Default)]
pub(crate) struct SharedWrites {
    /// Index entries added less those removed, not yet in the head tree's counts.
    added: AtomicI64,
    /// Shared writes since the last maintenance ([`SharedWrites::maintained`]).
    since: AtomicU64,
    /// Point writes made under the shared lock since open (the `shared_writes` counter).
    total: AtomicU64,
    /// A shared write filled the head tree: until the maintenance it asked for has run, the
    /// head tree may hold |L0| entries or more (one more per writer that was beside it).
    full: AtomicBool,
}

impl SharedWrites {
    /// The head tree's entries (index entries and fences) with the shared writes' counted.
    pub fn entries(&self, head: &Head) -> u64 {
        head.entries
            .saturating_add_signed(self.added.load(Ordering::Relaxed))
    }

    /// How full `head` is with the shared writes counted: its entries and its range
    /// tombstones `tombs` (what its capacity bounds).
    pub fn fill(&self, head: &Head, tombs: &Tombs) -> u64 {
        self.entries(head) + tombs.len() as u64
    }

    /// `head` with the shared writes' counts in it (what a manifest saves, what the
    /// counters report).
    pub fn counted(&self, head: &Head) -> Head {
        let d = self.added.load(Ordering::Relaxed);
        Head {
            entries: head.entries.saturating_add_signed(d),
            index_entries: head.index_entries.saturating_add_signed(d),
            ..head.clone()
        }
    }

    /// Move the shared writes' counts into `head` (on `&mut`: no shared write runs).
    pub fn fold(&mut self, head: &mut Head) {
        let d = std::mem::take(self.added.get_mut());
        head.entries = head.entries.saturating_add_signed(d);
        head.index_entries = head.index_entries.saturating_add_signed(d);
    }

    /// Count a shared write that changed the head tree by `added` index entries, and say
    /// what it needs under the exclusive lock: the maintenance when the head tree (its
    /// entries counted with `head`, plus `others`: its range tombstones) reached `cap`,
    /// when `merging` and [`MAINTAIN_EVERY`] writes came since the last one, or when the
    /// log reached its checkpoint size.
    pub fn done(
        &self,
        added: i64,
        head: &Head,
        others: u64,
        cap: u64,
        merging: bool,
        pager: &Pager,
    ) -> SharedWrite {
        let d = self.added.fetch_add(added, Ordering::Relaxed) + added;
        self.total.fetch_add(1, Ordering::Relaxed);
        let since = self.since.fetch_add(1, Ordering::Relaxed) + 1;
        let fill = head.entries.saturating_add_signed(d).saturating_add(others);
        if fill >= cap {
            self.full.store(true, Ordering::Relaxed);
            return SharedWrite::Maintain;
        }
        let wal_full = pager.wal_bytes_shared() >= pager.checkpoint_wal_bytes();
        match (merging && since >= MAINTAIN_EVERY) || wal_full {
            true => SharedWrite::Maintain,
            false => SharedWrite::Done,
        }
    }

    /// The maintenance shared writes asked for is running (on `&mut`): the writes since
    /// the last one, which it accounts for as that many mutations.
    pub fn maintained(&mut self) -> u64 {
        *self.full.get_mut() = false;
        std::mem::take(self.since.get_mut())
    }

    /// A shared write filled the head tree and its maintenance has not run yet.
    pub fn full_pending(&self) -> bool {
        self.full.load(Ordering::Relaxed)
    }

    /// Point writes made under the shared lock since open.
    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }
}

/// An engine's head tree as a shared write sees it, borrowed under the engine's shared
/// lock: the tree, its range tombstones, its capacity, whether a merge is in progress, and
/// the counts of [`SharedWrites`]. None of these change while the shared lock is held
/// (only the exclusive path freezes the head tree, takes in a range delete or starts and
/// ends a merge), so each write reads them once.
pub(crate) struct SharedHead<'a> {
    /// The active head tree (the FD-tree's L0, the LSM-tree's C0).
    pub head: &'a Head,
    /// Its range tombstones, which count towards its fill.
    pub tombs: &'a Tombs,
    /// Its capacity (|L0|, |C0|).
    pub cap: u64,
    /// A merge is in progress (shared writes step it by their share).
    pub merging: bool,
    /// The page layout of its entries.
    pub lay: Layout,
    /// The engine's pager, on its shared path.
    pub pager: &'a Pager,
    /// The counts of the shared writes not yet in the head tree's.
    pub writes: &'a SharedWrites,
}

impl SharedHead<'_> {
    /// `e` into the head tree under its leaf's latch, `op` logged there
    /// ([`Head::upsert_shared`]); [`SharedWrite::Exclusive`], with nothing done, when the
    /// head tree is full already or the leaf must split.
    pub fn upsert(&self, e: Entry, op: &LogicalOp) -> Result<SharedWrite> {
        // A full head tree is frozen on the exclusive path (the shared writes that filled
        // it asked for that): at most one entry more per writer beside the one that
        // filled it.
        if self.writes.fill(self.head, self.tombs) >= self.cap {
            return Ok(SharedWrite::Exclusive);
        }
        match self.head.upsert_shared(self.pager, self.lay, e, op)? {
            None => Ok(SharedWrite::Exclusive),
            Some(added) => Ok(self.done(i64::from(added))),
        }
    }

    /// The index entry of `key` out of the head tree under its leaf's latch, `op` logged
    /// there ([`Head::remove_shared`]); [`SharedWrite::Exclusive`] when the leaf does not
    /// decode (the exclusive path meets the error).
    pub fn remove(&self, key: u64, op: &LogicalOp) -> Result<SharedWrite> {
        match self.head.remove_shared(self.pager, self.lay, key, op)? {
            None => Ok(SharedWrite::Exclusive),
            Some(removed) => Ok(self.done(-i64::from(removed))),
        }
    }

    /// Count a shared write that changed the head tree by `added` index entries
    /// ([`SharedWrites::done`]).
    fn done(&self, added: i64) -> SharedWrite {
        let tombs = self.tombs.len() as u64;
        self.writes
            .done(added, self.head, tombs, self.cap, self.merging, self.pager)
    }
}

/// The shared write path against a model, for each engine's tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::super::reads::SortedReads;
    use crate::kit::api::{Engine, RangeCursor, Shareable, SharedWrite};
    use crate::kit::parallel::Parallel;
    use crate::testing::Rng;
    use std::collections::{BTreeMap, HashMap};

    /// `e`'s entries in `[lo, hi]` by its shared scan, batch after batch.
    fn scan_shared<E: Shareable>(e: &E, lo: u64, hi: u64) -> Vec<(u64, u64)> {
        let mut cur = RangeCursor::bounded(lo, hi);
        let mut out = Vec::new();
        while cur.next.is_some() {
            e.scan_shared(&mut cur, &mut out).unwrap();
        }
        out
    }

    /// Inserts and deletes made by `insert_shared` and `delete_shared` (the exclusive
    /// write where they decline, the maintenance where they ask for it, as `Parallel`
    /// does), with serial writes and range deletes between, agree with a `BTreeMap` after
    /// every step: point searches and scans on the shared path, and at the end the serial
    /// reads and the engine's invariants. Every kind of answer comes up: done, declined
    /// (a leaf split, a full head tree), maintenance (a full head tree, a merge's step).
    pub(crate) fn shared_writes_match_a_model<E: SortedReads>(mut e: E, seed: u64) {
        const KEYS: u64 = 3000;
        let mut model = BTreeMap::new();
        let mut rng = Rng::new(seed);
        let mut seen: HashMap<&'static str, u64> = HashMap::new();
        for i in 0..12_000u64 {
            let k = rng.below(KEYS);
            let r = match rng.below(20) {
                0..=12 => {
                    model.insert(k, i);
                    let r = e.insert_shared(k, i).unwrap();
                    if r == SharedWrite::Exclusive {
                        e.insert(k, i).unwrap();
                    }
                    r
                }
                13..=17 => {
                    model.remove(&k);
                    let r = e.delete_shared(k).unwrap();
                    if r == SharedWrite::Exclusive {
                        e.delete(k).unwrap();
                    }
                    r
                }
                18 => {
                    model.insert(k, i);
                    e.insert(k, i).unwrap();
                    SharedWrite::Done
                }
                _ => {
                    let hi = k + rng.below(40);
                    model.retain(|&x, _| x < k || x > hi);
                    e.delete_range(k, hi).unwrap();
                    SharedWrite::Done
                }
            };
            let what = match r {
                SharedWrite::Done => "done",
                SharedWrite::Maintain => "maintain",
                SharedWrite::Exclusive => "exclusive",
            };
            *seen.entry(what).or_default() += 1;
            if r == SharedWrite::Maintain {
                e.maintain().unwrap();
            }
            let q = rng.below(KEYS);
            assert_eq!(
                e.get_shared(q).unwrap(),
                model.get(&q).copied(),
                "step {i} key {q}"
            );
            assert_eq!(
                e.get_shared(k).unwrap(),
                model.get(&k).copied(),
                "step {i} key {k}"
            );
            if i % 61 == 0 {
                let hi = q + rng.below(300);
                let want: Vec<(u64, u64)> = model.range(q..=hi).map(|(&a, &b)| (a, b)).collect();
                assert_eq!(scan_shared(&e, q, hi), want, "step {i}: [{q}, {hi}]");
            }
            if i % 2000 == 0 {
                e.check_integrity().unwrap();
            }
        }
        for what in ["done", "maintain", "exclusive"] {
            assert!(
                seen.get(what).is_some_and(|&n| n > 0),
                "no shared write said {what}: {seen:?}"
            );
        }
        let st = e.stats();
        let merges = st.engine_counters.get("merges").copied().unwrap_or(0);
        assert!(
            merges > 2,
            "{merges} merges: the head tree never filled often"
        );
        assert!(st
            .engine_counters
            .get("shared_writes")
            .is_some_and(|&n| n > 1000));
        e.check_integrity().unwrap();
        let want: Vec<(u64, u64)> = model.iter().map(|(&a, &b)| (a, b)).collect();
        assert_eq!(scan_shared(&e, 0, u64::MAX), want);
        for k in 0..KEYS {
            assert_eq!(e.get(k).unwrap(), model.get(&k).copied(), "serial get {k}");
        }
    }

    /// What a thread wrote last to each key it wrote: a value, or `None` for a delete.
    type LastWrites = BTreeMap<u64, Option<u64>>;

    /// `e` served to several threads by `Parallel`: writers on keys of their own (each
    /// thread's reads see its writes, and the end holds what each wrote last) and on keys
    /// they share (the end holds what one of them wrote last), a scanner beside them
    /// (keys in order, every key no one writes returned with its value in every scan),
    /// and point writes made under the shared lock among them.
    pub(crate) fn threads_write_beside_each_other<E: SortedReads>(e: E) {
        const THREADS: u64 = 3;
        const OPS: u64 = 3000;
        const SPACE: u64 = 4000;
        const SHARED: u64 = 8;
        // Stable keys (even, below SPACE) are never written: every scan must return them.
        let stable: Vec<(u64, u64)> = (0..SPACE).step_by(2).map(|k| (k, k + 7)).collect();
        let db = Parallel::new(e);
        db.bulk_insert(&stable).unwrap();
        // Thread t owns the odd keys k with (k / 2) % THREADS == t; shared keys lie above.
        let shared_key = |j: u64| SPACE + 2 * j + 1;
        // All start together, so that their calls overlap; and however the scheduler runs
        // them, every call takes the path it takes beside others.
        let start = std::sync::Barrier::new(THREADS as usize + 1);
        let beside = db.in_progress();
        let lasts: Vec<(LastWrites, LastWrites)> = std::thread::scope(|s| {
            let (db, start) = (&db, &start);
            let scanner = s.spawn(move || {
                start.wait();
                let mut rng = Rng::new(99);
                for _ in 0..150 {
                    let lo = rng.below(SPACE);
                    let hi = lo + rng.below(600);
                    let mut cur = RangeCursor::bounded(lo, hi);
                    let mut out = Vec::new();
                    let mut batches = 0;
                    while cur.next.is_some() {
                        db.scan(&mut cur, &mut out).unwrap();
                        batches += 1;
                        assert!(batches < 100_000, "a scan never ends");
                    }
                    assert!(out.windows(2).all(|w| w[0].0 < w[1].0), "out of order");
                    let got: BTreeMap<u64, u64> = out.into_iter().collect();
                    for k in (lo..=hi.min(SPACE - 1)).filter(|k| k % 2 == 0) {
                        assert_eq!(
                            got.get(&k),
                            Some(&(k + 7)),
                            "stable key {k} in [{lo}, {hi}]"
                        );
                    }
                }
            });
            let writers: Vec<_> = (0..THREADS)
                .map(|t| {
                    s.spawn(move || {
                        start.wait();
                        let mut rng = Rng::new(1000 + t);
                        let mut own = BTreeMap::new();
                        let mut shared = BTreeMap::new();
                        for i in 0..OPS {
                            let v = (t << 32) | i;
                            if i % 5 == 0 {
                                let k = shared_key(rng.below(SHARED));
                                let w = if rng.below(4) == 0 {
                                    db.delete(k).unwrap();
                                    None
                                } else {
                                    db.insert(k, v).unwrap();
                                    Some(v)
                                };
                                shared.insert(k, w);
                                continue;
                            }
                            let k = (rng.below(SPACE / 2 / THREADS) * THREADS + t) * 2 + 1;
                            let w = if rng.below(3) == 0 {
                                db.delete(k).unwrap();
                                None
                            } else {
                                db.insert(k, v).unwrap();
                                Some(v)
                            };
                            own.insert(k, w);
                            assert_eq!(db.get(k).unwrap(), w, "thread {t} reads its write of {k}");
                        }
                        (own, shared)
                    })
                })
                .collect();
            let lasts = writers.into_iter().map(|w| w.join().unwrap()).collect();
            scanner.join().unwrap();
            lasts
        });
        drop(beside);
        db.check_integrity().unwrap();
        for (own, _) in &lasts {
            for (&k, &w) in own {
                assert_eq!(db.get(k).unwrap(), w, "private key {k}");
            }
        }
        for j in 0..SHARED {
            let k = shared_key(j);
            let got = db.get(k).unwrap();
            let candidates: Vec<Option<u64>> = lasts
                .iter()
                .filter_map(|(_, sh)| sh.get(&k).copied())
                .collect();
            assert!(
                candidates.contains(&got),
                "shared key {k}: {got:?} not among {candidates:?}"
            );
        }
        for &(k, v) in &stable {
            assert_eq!(db.get(k).unwrap(), Some(v));
        }
        let n = db
            .stats()
            .engine_counters
            .get("shared_writes")
            .copied()
            .unwrap_or(0);
        assert!(n > 0, "no point write ran under the shared lock");
    }
}
