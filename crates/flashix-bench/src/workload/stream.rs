//! The operations of a measured phase: [`Op`], and the seeded [`OpStream`] that draws them
//! for a workload (point operations on the live entries, the `tpcc` trace, bulks, range
//! deletes over the live keys in key order).

use super::keys::{rng_for, zipf_rank, KeyDist, KeyGen, KeySpace};
use super::mixes::{OpKind, Workload};
use super::part::Part;
use super::tpcc::Tpcc;
use anyhow::{bail, Result};
use rand::rngs::StdRng;
use rand::Rng;

/// One operation of a measured phase, with its keys and values chosen: what the runner
/// executes and what the determinism test compares.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Op {
    /// `get` of a key that is live.
    Get(u64),
    /// `insert` of a new key.
    Insert(u64, u64),
    /// `insert` of a live key with a new value.
    Update(u64, u64),
    /// `delete` of a live key.
    Delete(u64),
    /// Scan of `len` entries from the live key `start`.
    Range { start: u64, len: u64 },
    /// `get_many` of live keys.
    GetMany(Vec<u64>),
    /// `bulk_insert` of new pairs, sorted by key.
    BulkInsert(Vec<(u64, u64)>),
    /// `delete_range(lo..=hi)`, which holds `keys` live keys.
    DeleteRange { lo: u64, hi: u64, keys: u64 },
}

impl Op {
    /// The point kind of the operation, for per-kind counts.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Op::Get(_) => "search",
            Op::Insert(..) => "insert",
            Op::Update(..) => "update",
            Op::Delete(_) => "delete",
            Op::Range { .. } => "range",
            Op::GetMany(_) => "get-many",
            Op::BulkInsert(_) => "bulk-insert",
            Op::DeleteRange { .. } => "range-delete",
        }
    }
}

/// The live keys in key order, for range deletes: deleted positions are marked, not
/// removed, so a delete of N keys costs O(N) (plus the marked keys it skips).
struct SortedKeys {
    keys: Vec<u64>,
    deleted: Vec<bool>,
    live: u64,
}

impl SortedKeys {
    /// `part`'s contiguous slice of `keys` in key order ([`Part::slice`]): the range
    /// deletes of one thread then cover its own keys only.
    fn new(mut keys: Vec<u64>, part: Part) -> Self {
        keys.sort_unstable();
        let own = part.slice(keys.len());
        keys.truncate(own.end);
        keys.drain(..own.start);
        let live = keys.len() as u64;
        let deleted = vec![false; keys.len()];
        SortedKeys {
            keys,
            deleted,
            live,
        }
    }

    /// Delete up to `n` live keys from the first live key at or after position `p`
    /// (wrapping to the start to find one); returns (first, last, count) of the keys
    /// deleted. Fewer than `n` when the end of the keys comes first.
    fn take_run(&mut self, p: usize, n: u64) -> Option<(u64, u64, u64)> {
        if self.live == 0 {
            return None;
        }
        let len = self.keys.len();
        let mut i = p % len;
        // Skip to a live key, wrapping once.
        let mut skipped = 0;
        while self.deleted[i] {
            i = (i + 1) % len;
            skipped += 1;
            if skipped > len {
                return None;
            }
        }
        let first = self.keys[i];
        let mut last = first;
        let mut count = 0;
        while i < len && count < n {
            if !self.deleted[i] {
                self.deleted[i] = true;
                last = self.keys[i];
                count += 1;
            }
            i += 1;
        }
        self.live -= count;
        Some((first, last, count))
    }
}

enum StreamState {
    Point(KeySpace),
    Tpcc(Tpcc),
    Sorted(SortedKeys),
}

/// The operation stream of one measured phase, or of one thread's part of it: a pure
/// function of (workload, key generator, live entries, seed, OPS, part), so two runs with
/// the same seed perform identical operations on every engine and peer.
pub struct OpStream {
    w: Workload,
    gen: KeyGen,
    rng: StdRng,
    state: StreamState,
    n: u64,
    total: u64,
    /// Keys inserted so far above each bulk's start key (`bulk-insert-N`).
    bulk_starts: std::collections::HashMap<u64, u64>,
    /// Keys inserted by clustered bulks (not in the key space's live list).
    bulk_keys: u64,
}

/// A bulk of `b` new sequential keys at the end of the key space.
fn bulk_at_end(ks: &mut KeySpace, b: u32, n: u64) -> Vec<(u64, u64)> {
    let gen = ks.gen;
    let mut pairs: Vec<(u64, u64)> = (0..b)
        .map(|_| {
            let k = ks.insert_new();
            (k, gen.value_of(k, n + 2))
        })
        .collect();
    pairs.sort_unstable();
    pairs
}

impl OpStream {
    /// The stream of `w` on an index of the entries `0..live` of `gen`.
    pub fn new(w: Workload, gen: KeyGen, live: u64, seed: u64, ops: u64) -> Result<OpStream> {
        Self::for_part(w, gen, live, seed, ops, Part::WHOLE)
    }

    /// The stream of thread `part` of a phase of `w` run by `part.of` threads on one index
    /// of the entries `0..live` of `gen`: its share ([`Part::share`]) of the phase's
    /// operations, drawn with its own seed ([`Part::seed`]) among the entries it owns
    /// (module `part`), so the threads' streams never touch each other's keys. The whole
    /// phase ([`Part::WHOLE`]) is [`OpStream::new`]'s stream.
    pub fn for_part(
        w: Workload,
        gen: KeyGen,
        live: u64,
        seed: u64,
        ops: u64,
        part: Part,
    ) -> Result<OpStream> {
        let total = part.share(w.operations(ops, live));
        let state = match w {
            Workload::Tpcc => {
                if gen.dist == KeyDist::Seq {
                    bail!(
                        "tpcc needs room above each district's keys; sequential keys have \
                         none: use --key-dist uniform or zipf"
                    );
                }
                StreamState::Tpcc(Tpcc::for_part(
                    (0..live).map(|i| gen.key_of(i)).collect(),
                    total,
                    part,
                )?)
            }
            Workload::RangeDelete(_) => StreamState::Sorted(SortedKeys::new(
                (0..live).map(|i| gen.key_of(i)).collect(),
                part,
            )),
            // Room for every key the stream may insert (KeySpace::with_room).
            _ => StreamState::Point(KeySpace::for_part(
                gen,
                live,
                if w.writes() {
                    total.saturating_mul(w.keys_per_op())
                } else {
                    0
                },
                part,
            )),
        };
        Ok(OpStream {
            w,
            gen,
            rng: rng_for(part.seed(seed), 1 + w.seed_index()),
            state,
            n: 0,
            total,
            bulk_starts: Default::default(),
            bulk_keys: 0,
        })
    }

    /// Operations the stream yields.
    pub fn operations(&self) -> u64 {
        self.total
    }

    /// Live entries after the operations drawn so far.
    pub fn live(&self) -> u64 {
        match &self.state {
            StreamState::Point(ks) => ks.live() + self.bulk_keys,
            StreamState::Tpcc(t) => t.live(),
            StreamState::Sorted(s) => s.live,
        }
    }

    /// A live key (for warm-up searches), drawn from `rng`, not from the stream.
    pub fn pick_existing(&self, rng: &mut impl Rng) -> Option<u64> {
        match &self.state {
            StreamState::Point(ks) => ks.pick_existing(rng),
            StreamState::Tpcc(t) => {
                let d = &t.districts[rng.gen_range(0..t.districts.len())];
                (!d.old.is_empty()).then(|| d.old[rng.gen_range(0..d.old.len())])
            }
            StreamState::Sorted(s) => {
                let i = rng.gen_range(0..s.keys.len().max(1));
                s.keys.get(i).copied().filter(|_| !s.deleted[i])
            }
        }
    }

    /// The next operation, or `None` after `operations()` of them.
    pub fn next_op(&mut self) -> Option<Op> {
        if self.n >= self.total {
            return None;
        }
        let n = self.n;
        self.n += 1;
        let gen = self.gen;
        let rng = &mut self.rng;
        Some(match &mut self.state {
            StreamState::Tpcc(t) => t.next_op(&gen, n, rng),
            StreamState::Sorted(s) => {
                // Start positions leave room for a whole run before the end.
                let want = self.w.keys_per_op();
                let len = (s.keys.len() as u64).saturating_sub(want - 1).max(1);
                let p = match gen.dist {
                    KeyDist::Zipf => zipf_rank(len, rng),
                    _ => rng.gen_range(0..len),
                } as usize;
                match s.take_run(p, want) {
                    Some((lo, hi, keys)) => Op::DeleteRange { lo, hi, keys },
                    None => Op::DeleteRange {
                        lo: 1,
                        hi: 0,
                        keys: 0,
                    },
                }
            }
            StreamState::Point(ks) => {
                // A missing existing key (empty index) becomes a key never inserted.
                let missing = gen.key_of(ks.next_index());
                match self.w.draw(rng) {
                    OpKind::Search => Op::Get(ks.pick_existing(rng).unwrap_or(missing)),
                    OpKind::Range(len) => Op::Range {
                        start: ks.pick_existing(rng).unwrap_or(missing),
                        len,
                    },
                    OpKind::Insert => {
                        let k = ks.insert_new();
                        Op::Insert(k, gen.value_of(k, n + 2))
                    }
                    OpKind::Delete => Op::Delete(ks.delete_existing(rng).unwrap_or(missing)),
                    OpKind::Update => {
                        let k = ks.pick_existing(rng).unwrap_or(missing);
                        Op::Update(k, gen.value_of(k, n + 2))
                    }
                    OpKind::GetMany(b) => Op::GetMany(
                        (0..b)
                            .map(|_| ks.pick_existing(rng).unwrap_or(missing))
                            .collect(),
                    ),
                    OpKind::BulkInsert(b) => {
                        let pairs = elementary_bulk(ks, &mut self.bulk_starts, &gen, rng, b, n);
                        self.bulk_keys += pairs.len() as u64;
                        Op::BulkInsert(pairs)
                    }
                    OpKind::BulkLoad(t, b) => {
                        // Thesis §6.1: one bulk of t keys in t/b elementary bulks.
                        let mut pairs = Vec::with_capacity(t as usize);
                        while (pairs.len() as u64) < t {
                            let want = (t - pairs.len() as u64).min(u64::from(b)) as u32;
                            pairs.extend(elementary_bulk(
                                ks,
                                &mut self.bulk_starts,
                                &gen,
                                rng,
                                want,
                                n,
                            ));
                        }
                        pairs.sort_unstable_by_key(|p| p.0);
                        pairs.dedup_by_key(|p| p.0);
                        self.bulk_keys += pairs.len() as u64;
                        Op::BulkInsert(pairs)
                    }
                    OpKind::RangeDelete(_) => Op::DeleteRange {
                        lo: 1,
                        hi: 0,
                        keys: 0,
                    },
                }
            }
        })
    }
}

/// An elementary bulk of `b` new keys (thesis §6.1): `b` keys clustered at a position
/// chosen at random, just above a live key (the gaps between uniform keys, ~2^64/entries,
/// leave room); for sequential keys (or an empty index) appended at the end.
fn elementary_bulk(
    ks: &mut KeySpace,
    bulk_starts: &mut std::collections::HashMap<u64, u64>,
    gen: &KeyGen,
    rng: &mut impl Rng,
    b: u32,
    n: u64,
) -> Vec<(u64, u64)> {
    match ks.pick_existing(rng) {
        None => bulk_at_end(ks, b, n),
        Some(_) if gen.dist == KeyDist::Seq => bulk_at_end(ks, b, n),
        Some(k) => {
            let used = bulk_starts.entry(k).or_insert(0);
            let first = k.saturating_add(*used + 1);
            *used += u64::from(b);
            (0..u64::from(b))
                .map(|j| {
                    let key = first.saturating_add(j);
                    (key, gen.value_of(key, n + 2))
                })
                .collect()
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use std::collections::HashSet;

    pub(in crate::workload) fn stream_of(
        w: Workload,
        dist: KeyDist,
        seed: u64,
        live: u64,
        ops: u64,
    ) -> Vec<Op> {
        let mut s = OpStream::new(w, KeyGen::new(dist, seed), live, seed, ops).unwrap();
        let mut out = Vec::new();
        while let Some(op) = s.next_op() {
            out.push(op);
        }
        assert_eq!(out.len() as u64, s.operations());
        out
    }

    /// The live list has room for every key a point stream inserts: drawing the measured
    /// operations never grows it (the bench's bookkeeping stays out of the timed phase).
    #[test]
    fn a_point_stream_never_grows_its_key_space() {
        for w in [
            Workload::ALL.to_vec(),
            vec![Workload::BulkInsert(100), Workload::Mix(70)],
        ]
        .concat()
        {
            if matches!(w, Workload::Tpcc | Workload::RangeDelete(_)) {
                continue;
            }
            let mut s = OpStream::new(w, KeyGen::new(KeyDist::Uniform, 3), 4000, 3, 3000).unwrap();
            let room = |s: &OpStream| match &s.state {
                StreamState::Point(ks) => ks.capacity(),
                _ => unreachable!(),
            };
            let before = room(&s);
            let mut inserted = false;
            while let Some(op) = s.next_op() {
                inserted |= matches!(op, Op::Insert(..) | Op::BulkInsert(_));
            }
            assert_eq!(room(&s), before, "{w}");
            assert!(
                !w.writes() || !inserted || s.live() > 4000 || before > 4000,
                "{w}"
            );
        }
    }

    #[test]
    fn same_seed_same_stream_for_every_workload() {
        let mut all = Workload::ALL.to_vec();
        all.extend([
            Workload::Range(100),
            Workload::GetMany(8),
            Workload::Mix(70),
            Workload::Tpcc,
            Workload::BulkInsert(10),
            Workload::RangeDelete(10),
        ]);
        for w in all {
            for dist in [KeyDist::Uniform, KeyDist::Zipf, KeyDist::Seq] {
                if w == Workload::Tpcc && dist == KeyDist::Seq {
                    assert!(OpStream::new(w, KeyGen::new(dist, 1), 5000, 1, 100).is_err());
                    continue;
                }
                let a = stream_of(w, dist, 7, 5000, 3000);
                let b = stream_of(w, dist, 7, 5000, 3000);
                assert_eq!(a, b, "{w} {dist}");
                assert!(!a.is_empty());
                let c = stream_of(w, dist, 8, 5000, 3000);
                assert_ne!(a, c, "{w} {dist}: another seed gives the same stream");
            }
        }
    }

    /// Every kind of workload, for the tests of many streams.
    fn every_workload() -> Vec<Workload> {
        let mut all = Workload::ALL.to_vec();
        all.extend([
            Workload::Range(100),
            Workload::GetMany(8),
            Workload::Mix(70),
            Workload::Tpcc,
            Workload::BulkInsert(10),
            Workload::RangeDelete(10),
        ]);
        all
    }

    fn part_stream(w: Workload, dist: KeyDist, part: Part) -> (Vec<Op>, Vec<bool>) {
        let mut s = OpStream::for_part(w, KeyGen::new(dist, 7), 5000, 7, 3000, part).unwrap();
        let (mut ops, mut live) = (Vec::new(), Vec::new());
        while let Some(op) = s.next_op() {
            live.push(s.live() > 0);
            ops.push(op);
        }
        (ops, live)
    }

    /// The streams of a phase's threads: the same in every run, each thread's its own,
    /// their shares adding up to the phase's operations.
    #[test]
    fn thread_streams_are_distinct_and_reproducible() {
        for w in every_workload() {
            for dist in [KeyDist::Uniform, KeyDist::Zipf, KeyDist::Seq] {
                if w == Workload::Tpcc && dist == KeyDist::Seq {
                    continue;
                }
                let whole = stream_of(w, dist, 7, 5000, 3000);
                assert_eq!(part_stream(w, dist, Part::WHOLE).0, whole, "{w} {dist}");
                let parts: Vec<Vec<Op>> = Part::all(4).map(|p| part_stream(w, dist, p).0).collect();
                let again: Vec<Vec<Op>> = Part::all(4).map(|p| part_stream(w, dist, p).0).collect();
                assert_eq!(parts, again, "{w} {dist}: not reproducible");
                let total: usize = parts.iter().map(Vec::len).sum();
                assert_eq!(total, whole.len(), "{w} {dist}");
                for i in 0..parts.len() {
                    for j in 0..i {
                        if !parts[i].is_empty() {
                            assert_ne!(parts[i], parts[j], "{w} {dist}: threads {i} and {j}");
                        }
                    }
                }
            }
        }
    }

    /// The threads' streams never touch each other's keys: replayed in turns on one map
    /// (any interleaving is alike, as no key is shared), every key a stream takes as live
    /// is there, every key it inserts is new, and a range delete covers exactly the keys
    /// it drew.
    #[test]
    fn thread_streams_keep_to_their_own_keys() {
        for w in every_workload() {
            for dist in [KeyDist::Uniform, KeyDist::Seq] {
                if w == Workload::Tpcc && dist == KeyDist::Seq {
                    continue;
                }
                let gen = KeyGen::new(dist, 7);
                let mut map: std::collections::BTreeSet<u64> =
                    (0..5000).map(|i| gen.key_of(i)).collect();
                let streams: Vec<(Vec<Op>, Vec<bool>)> =
                    Part::all(3).map(|p| part_stream(w, dist, p)).collect();
                let longest = streams.iter().map(|s| s.0.len()).max().unwrap_or(0);
                for n in 0..longest {
                    for (ops, live) in &streams {
                        if let Some(op) = ops.get(n) {
                            replay(&mut map, op, live[n], w);
                        }
                    }
                }
            }
        }
    }

    /// Apply `op` to `map`, checking what the stream assumed of it (`live`: it had live
    /// entries after drawing the operation).
    fn replay(map: &mut std::collections::BTreeSet<u64>, op: &Op, live: bool, w: Workload) {
        match op {
            Op::Get(k) | Op::Range { start: k, .. } => assert!(!live || map.contains(k), "{w}"),
            Op::GetMany(keys) => assert!(!live || keys.iter().all(|k| map.contains(k)), "{w}"),
            Op::Insert(k, _) => assert!(map.insert(*k), "{w}: {k} is not new"),
            Op::Update(k, _) => assert!(!live || map.contains(k), "{w}"),
            Op::Delete(k) => assert!(map.remove(k) || !live, "{w}: {k} was not live"),
            Op::BulkInsert(pairs) => {
                for (k, _) in pairs {
                    assert!(map.insert(*k), "{w}: {k} is not new");
                }
            }
            Op::DeleteRange { lo, hi, keys } => {
                if *keys > 0 {
                    let inside: Vec<u64> = map.range(lo..=hi).copied().collect();
                    assert_eq!(inside.len() as u64, *keys, "{w}: another thread's keys");
                    for k in inside {
                        map.remove(&k);
                    }
                }
            }
        }
    }

    #[test]
    fn bulk_inserts_are_clustered_new_keys() {
        let gen = KeyGen::new(KeyDist::Uniform, 5);
        let live = 45_000u64;
        let old: HashSet<u64> = (0..live).map(|i| gen.key_of(i)).collect();
        let ops = stream_of(Workload::BulkInsert(50), KeyDist::Uniform, 5, live, 1000);
        // 5,000 keys (one per 9 live entries) in bulks of 50.
        assert_eq!(ops.len(), 100);
        let mut seen = HashSet::new();
        for op in &ops {
            let Op::BulkInsert(pairs) = op else {
                panic!("{op:?}")
            };
            assert_eq!(pairs.len(), 50);
            assert!(
                pairs.windows(2).all(|p| p[1].0 == p[0].0 + 1),
                "not clustered"
            );
            for (k, _) in pairs {
                assert!(!old.contains(k) && seen.insert(*k), "key {k} not new");
            }
        }
        let seq = stream_of(Workload::BulkInsert(50), KeyDist::Seq, 5, live, 1000);
        let Op::BulkInsert(first) = &seq[0] else {
            panic!()
        };
        assert_eq!(first[0].0, live);
    }

    #[test]
    fn range_deletes_cover_n_live_keys() {
        let gen = KeyGen::new(KeyDist::Uniform, 9);
        let live = 20_000u64;
        let mut keys: Vec<u64> = (0..live).map(|i| gen.key_of(i)).collect();
        keys.sort_unstable();
        let mut alive: std::collections::BTreeSet<u64> = keys.iter().copied().collect();
        let ops = stream_of(Workload::RangeDelete(25), KeyDist::Uniform, 9, live, 500);
        assert_eq!(ops.len() as u64, live / 10 / 25);
        for op in &ops {
            let Op::DeleteRange { lo, hi, keys } = *op else {
                panic!("{op:?}")
            };
            let inside: Vec<u64> = alive.range(lo..=hi).copied().collect();
            assert_eq!(inside.len() as u64, keys);
            assert_eq!(keys, 25);
            assert_eq!((inside[0], inside[inside.len() - 1]), (lo, hi));
            for k in inside {
                alive.remove(&k);
            }
        }
    }
}
