//! Preparation of the aged index (AGING_RULE): the bulk load and the aging inserts of an
//! engine (until its leaf or level counters say it is aged) or a peer, into an image that
//! every workload then copies.

use super::config::BenchConfig;
use super::ui::{say, Ui};
use crate::probe::DeviceProfile;
use crate::subjects::peers::{self, PeerKind};
use crate::workload::{KeyGen, KeySpace};
use anyhow::{Context, Result};
use flashix::{Db, EngineKind, Stats};
use indicatif::ProgressBar;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Share of the bulk-loaded leaves that aging makes split (FD-tree paper, App. D).
pub const AGING_SPLIT_SHARE: f64 = 0.2;
/// Most aging inserts of an engine of stepped levels, in multiples of ENTRIES (others: 1).
pub const LEVELS_AGING_LIMIT: u64 = 4;
/// Share of `entries` inserted by aging when an engine reports no leaf counters.
pub const AGING_FALLBACK_SHARE: f64 = 0.1;
/// Pairs per `bulk_insert` call when a peer is loaded or aged.
pub const PEER_LOAD_CHUNK: usize = 100_000;
/// Aging inserts per batch for peers.
pub const PEER_AGING_BATCH: usize = 1000;

/// The preparation rule, as printed and saved in `results.json`.
pub const AGING_RULE: &str = "the index is created with the measured buffer pool (so that \
cost models tune it for that pool), then reopened with the preparation pool (PREP_POOL; \
the structure built does not depend on it). One bulk_insert of the first ENTRIES keys (so \
that the engine bulk-loads them: a B+-tree at fill factor 0.7), then new keys are inserted \
one by one, at most ENTRIES of them (4 x ENTRIES for an engine of stepped levels), until: for an engine with leaf counters (B+-tree), \
engine_counters[\"leaf_splits\"] has grown by 20% of engine_counters[\"leaves\"] measured \
right after the bulk load (FD-tree paper App. D: bulk load with load factor 0.7, then insert \
entries to make 20% of the leaves split); for an engine of stepped levels (FD-tree levels, \
LSM components; counters <level|component>_<i>_entries and _capacity), every level above \
the lowest is at least half full and a merge has reached the lowest level (it changed or a \
new lowest level appeared: one full merge cycle); the bulk index gets none (bulk index thesis §6.1: the \
initial keys in one bulk insertion, every range of size M but the last); the LA-tree and the \
PIO B-tree, whose leaves split only when a buffer or the OPQ is emptied (their splits lag \
their inserts; PIO leaves are also several pages), get the same number of the same new keys \
as a B+-tree of the same page size needs by the leaf rule (the suite's B+-tree when it was \
prepared before them, else one built aside, then removed), so that they hold the B+-tree's \
data, and their cost models are told those entries (ENTRIES plus the aging inserts) at \
creation; other engines get ENTRIES/10 inserts. Peers (RocksDB, \
fjall, redb, LMDB) get the same data: the ENTRIES keys in write batches of 100,000, then the \
same aging keys as the first flashix engine of the run (ENTRIES/10 when there is none), in \
batches of 1,000. Then close. Every workload starts from a fresh copy of the aged index, \
opened with the measured pool (peers: the same budget) and warmed with min(OPS/10, 10000) \
unmeasured searches; its measured phase ends with a sync (Db::flush, or the peer's) counted \
in its time.";

/// An aged index image of one engine or peer.
pub struct Prepared {
    pub aged_dir: PathBuf,
    /// Entries the image holds: `entries + aging_inserts`.
    pub live: u64,
    pub aging_inserts: u64,
    pub prepare_s: f64,
    /// Entries the engine's write buffer holds (`Shape::write_buffer_entries`; `None` for
    /// an engine without one, and for peers).
    pub write_buffer: Option<u64>,
}

pub(super) fn counter(s: &Stats, name: &str) -> Option<u64> {
    s.engine_counters.get(name).copied()
}

/// How aging decides it is done (AGING_RULE), from the counters after the bulk load.
enum AgingGoal {
    /// Until `leaf_splits` has grown by `target` from `splits0`.
    LeafSplits { target: u64, splits0: u64 },
    /// Until every level above the lowest is at least half full.
    Levels,
    /// A fixed number of inserts.
    Inserts(u64),
    /// None: the bulk load is the preparation (the bulk index, thesis §6.1).
    BulkLoadOnly,
    /// The inserts the leaf rule gives a B+-tree of the same keys (the LA-tree).
    AsBTree(u64),
}

/// Engines whose leaf splits lag their inserts, and which therefore get the B+-tree's
/// aging inserts (AGING_RULE):
///
/// - the LA-tree's inserts wait in buffers and reach the leaves when a buffer is emptied,
///   so its split count passes the leaf rule's target long after a B+-tree would (many
///   more inserts than the B+-tree's, and several times the splits wanted);
/// - the PIO B-tree's inserts wait in its OPQ (thousands of entries at the quick scale)
///   and reach the leaves at a flush, and its leaves are the cost model's number of pages,
///   so "20% of the leaves split" is another amount of data for every leaf size: by its
///   own counters it takes more inserts than the B+-tree, so its searches would be
///   compared with the B+-tree's over more entries; the PIO paper compares the two on the
///   same records.
fn splits_lag(engine: EngineKind) -> bool {
    matches!(engine, EngineKind::LaTree | EngineKind::PioBTree)
}

/// The aging inserts of a B+-tree prepared by the leaf rule in a scratch directory beside
/// `cfg.dir` (removed after).
fn btree_aging_inserts(cfg: &BenchConfig, ui: &Ui, profile: &DeviceProfile) -> Result<u64> {
    let scratch = BenchConfig {
        dir: cfg.dir.join("btree-aging-rule"),
        // Its lines would read as the run's B+-tree; the LA-tree's line says the count.
        verbose: false,
        ..cfg.clone()
    };
    let p = prepare(&scratch, ui, EngineKind::BTree, profile, None)?;
    std::fs::remove_dir_all(&scratch.dir).ok();
    Ok(p.aging_inserts)
}

/// (level, entries, capacity) of an engine of stepped levels ([`flashix::Shape::levels`]),
/// by level.
pub fn level_fill(s: &Stats) -> Vec<(u64, u64, u64)> {
    let mut out: Vec<(u64, u64, u64)> = (s.shape.levels.iter())
        .map(|l| (l.level, l.entries, l.capacity))
        .collect();
    out.sort_unstable();
    out
}

/// True when every level above the lowest is at least half full (an index of one level
/// or none counts as aged).
pub fn levels_half_full(levels: &[(u64, u64, u64)]) -> bool {
    match levels.split_last() {
        None => true,
        Some((_, upper)) => upper.iter().all(|&(_, e, cap)| e.saturating_mul(2) >= cap),
    }
}

/// True when a merge has reached the lowest level since `before` (the levels after the
/// bulk load): a new lowest level exists, or the lowest level's entries changed. Until
/// then a write workload would measure levels that have never been merged down (after
/// its bulk load the LSM can meet the half-full rule with no insert at all).
pub fn lowest_merged(before: &[(u64, u64, u64)], now: &[(u64, u64, u64)]) -> bool {
    match (before.last(), now.last()) {
        (_, None) => false,
        (None, Some(_)) => true,
        (Some(&(l0, e0, _)), Some(&(l1, e1, _))) => l1 > l0 || e1 != e0,
    }
}

fn describe_levels(levels: &[(u64, u64, u64)]) -> String {
    levels
        .iter()
        .map(|&(i, e, cap)| format!("L{i} {:.0}%", 100.0 * e as f64 / cap.max(1) as f64))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Build the aged index of `engine` in `dir/<engine>/aged` (AGING_RULE). `btree_aging`:
/// the aging inserts of a B+-tree prepared with the same `cfg` (the suite's own), which
/// an engine whose splits lag takes instead of building one aside.
pub fn prepare(
    cfg: &BenchConfig,
    ui: &Ui,
    engine: EngineKind,
    profile: &DeviceProfile,
    btree_aging: Option<u64>,
) -> Result<Prepared> {
    let engine_dir = cfg.dir.join(engine.name());
    if engine_dir.exists() {
        std::fs::remove_dir_all(&engine_dir)
            .with_context(|| format!("removing the old {}", engine_dir.display()))?;
    }
    let aged_dir = engine_dir.join("aged");
    let t0 = Instant::now();
    // An engine that takes the B+-tree's aging inserts knows the entries it will hold when
    // measured, and its cost model is told them (AGING_RULE): the PIO B-tree's OPQ and leaf
    // size are fixed at creation, where the FD-tree and the LSM re-choose k as they grow.
    let as_btree = match (splits_lag(engine), btree_aging) {
        (false, _) => None,
        (true, Some(n)) => Some(n),
        (true, None) => Some(btree_aging_inserts(cfg, ui, profile)?),
    };
    let db = create_and_load(cfg, ui, engine, profile, as_btree, &aged_dir)?;
    let gen = KeyGen::new(cfg.key_dist, cfg.seed);

    // Age.
    let s0 = db.stats();
    let mut ks = KeySpace::with_entries(gen, cfg.entries);
    let goal = AgingGoal::choose(cfg, engine, &s0, as_btree);
    let limit = goal.insert_limit(cfg.entries);
    let pb = goal.bar(ui, engine, limit);
    let mut inserts = 0u64;
    loop {
        if inserts % 256 == 0 && goal.reached(&db, &s0, inserts, &pb) {
            break;
        }
        if inserts >= limit {
            break;
        }
        let k = ks.insert_new();
        db.insert(k, gen.value_of(k, 1)).context("aging insert")?;
        inserts += 1;
    }
    pb.finish_and_clear();
    db.flush().context("flush after aging")?;
    let s1 = db.stats();
    let summary = goal.summary(&s0, &s1);
    say(
        cfg,
        ui,
        &format!("{engine}: aged with {inserts} inserts ({summary})"),
    );
    let write_buffer = s1.shape.write_buffer_entries;
    db.close().context("closing the aged index")?;
    let prepare_s = t0.elapsed().as_secs_f64();
    say(cfg, ui, &format!("{engine}: prepared in {prepare_s:.1} s"));
    Ok(Prepared {
        aged_dir,
        live: ks.live(),
        aging_inserts: inserts,
        prepare_s,
        write_buffer,
    })
}

/// Create `engine`'s index in `aged_dir` with the measured pool's options, reopen it with
/// the preparation pool, and bulk-load the first ENTRIES keys (AGING_RULE). `as_btree`:
/// the aging inserts it will take from the B+-tree's rule, which its cost model is told.
fn create_and_load(
    cfg: &BenchConfig,
    ui: &Ui,
    engine: EngineKind,
    profile: &DeviceProfile,
    as_btree: Option<u64>,
    aged_dir: &Path,
) -> Result<Db> {
    let mut options = cfg.options(engine, profile)?;
    if let (Some(n), Some(t)) = (as_btree, options.tuning.as_mut()) {
        t.expected_entries = cfg.entries.saturating_add(n);
    }
    Db::create(aged_dir, options)
        .with_context(|| format!("creating a {engine} index in {}", aged_dir.display()))?
        .close()
        .context("closing the new index")?;
    let db = Db::open_with_buffer_pool(aged_dir, cfg.prep_buffer_pool_bytes)
        .with_context(|| format!("opening {} with the preparation pool", aged_dir.display()))?;
    let gen = KeyGen::new(cfg.key_dist, cfg.seed);
    // One call, so that the engine builds the index bottom-up (a chunked load would
    // bulk-load only the first chunk and insert the rest one by one at the right edge,
    // leaving half-full leaves).
    let pb = ui.spinner(format!("{engine}: bulk load of {} entries", cfg.entries));
    let pairs: Vec<(u64, u64)> = (0..cfg.entries)
        .map(|i| {
            let k = gen.key_of(i);
            (k, gen.value_of(k, 0))
        })
        .collect();
    db.bulk_insert(&pairs).context("bulk_insert")?;
    pb.finish_and_clear();
    Ok(db)
}

impl AgingGoal {
    /// The goal of `engine` by its counters `s0` after the bulk load (AGING_RULE).
    fn choose(cfg: &BenchConfig, engine: EngineKind, s0: &Stats, as_btree: Option<u64>) -> Self {
        match (s0.shape.leaves, s0.shape.leaf_splits, as_btree) {
            _ if engine == EngineKind::BulkIndex => AgingGoal::BulkLoadOnly,
            (_, _, Some(n)) => AgingGoal::AsBTree(n),
            (Some(leaves), Some(splits0), None) => AgingGoal::LeafSplits {
                target: (leaves as f64 * AGING_SPLIT_SHARE).ceil() as u64,
                splits0,
            },
            _ if !level_fill(s0).is_empty() => AgingGoal::Levels,
            _ => AgingGoal::Inserts(
                ((cfg.entries as f64 * AGING_FALLBACK_SHARE).round() as u64).min(cfg.entries),
            ),
        }
    }

    /// Most aging inserts. A stepped engine may need more than ENTRIES before a merge
    /// reaches its lowest level (with a fixed k, a bulk load can land in a lowest level 3%
    /// full whose level above takes ENTRIES inserts to fill).
    fn insert_limit(&self, entries: u64) -> u64 {
        match self {
            AgingGoal::Levels => LEVELS_AGING_LIMIT * entries,
            _ => entries,
        }
    }

    /// The progress bar of aging. Leaf splits come late (leaves fill from the bulk fill
    /// factor first), so the leaf rule's bar shows splits and inserts, and its ETA is
    /// rough; the level rule shows inserts.
    fn bar(&self, ui: &Ui, engine: EngineKind, limit: u64) -> ProgressBar {
        match *self {
            AgingGoal::LeafSplits { target, .. } => ui.styled_bar(
                target,
                format!("{engine}: aging"),
                "{msg:<28} [{bar:30}] {pos}/{len} leaf splits, {prefix} inserts, {elapsed}, eta {eta}",
            ),
            AgingGoal::Levels => ui.bar(limit, format!("{engine}: aging (levels)")),
            AgingGoal::Inserts(n) => ui.bar(n, format!("{engine}: aging (inserts)")),
            AgingGoal::BulkLoadOnly => ui.bar(0, format!("{engine}: no aging")),
            AgingGoal::AsBTree(n) => ui.bar(n, format!("{engine}: aging (B+-tree's inserts)")),
        }
    }

    /// Whether aging is done after `inserts` (`s0`: the counters after the bulk load);
    /// moves `pb` along.
    fn reached(&self, db: &Db, s0: &Stats, inserts: u64, pb: &ProgressBar) -> bool {
        match *self {
            AgingGoal::LeafSplits { target, splits0 } => {
                let g = splits_since(&db.stats(), splits0);
                pb.set_position(g.min(target));
                pb.set_prefix(inserts.to_string());
                g >= target
            }
            AgingGoal::Levels => {
                pb.set_position(inserts);
                levels_aged(&level_fill(s0), &level_fill(&db.stats()))
            }
            AgingGoal::Inserts(n) | AgingGoal::AsBTree(n) => {
                pb.set_position(inserts);
                inserts >= n
            }
            AgingGoal::BulkLoadOnly => true,
        }
    }

    /// What aging reached, for the line that reports it (`s0`: after the bulk load, `s1`:
    /// after aging).
    fn summary(&self, s0: &Stats, s1: &Stats) -> String {
        match *self {
            AgingGoal::LeafSplits { target, splits0 } => format!(
                "{} leaf splits of {target} wanted, {} leaves after bulk load",
                splits_since(s1, splits0),
                s0.shape.leaves.unwrap_or(0)
            ),
            AgingGoal::Levels => {
                let levels = level_fill(s1);
                format!(
                    "levels {}{}",
                    describe_levels(&levels),
                    if levels_aged(&level_fill(s0), &levels) {
                        ", the lowest merged into"
                    } else {
                        " (insert limit reached first)"
                    }
                )
            }
            AgingGoal::Inserts(_) => "no leaf or level counters".to_string(),
            AgingGoal::BulkLoadOnly => {
                "the bulk load is the preparation: every range of size M but the last, thesis §6.1"
                    .to_string()
            }
            AgingGoal::AsBTree(_) => format!(
                "the B+-tree's leaf rule on the same keys; its own leaves split late: {} leaf \
                 splits, {} leaves after bulk load",
                splits_since(s1, s0.shape.leaf_splits.unwrap_or(0)),
                s0.shape.leaves.unwrap_or(0)
            ),
        }
    }
}

/// Leaf splits in `s` since there were `splits0`.
fn splits_since(s: &Stats, splits0: u64) -> u64 {
    s.shape
        .leaf_splits
        .unwrap_or(splits0)
        .saturating_sub(splits0)
}

/// The level rule of AGING_RULE: every level above the lowest at least half full, and a
/// merge has reached the lowest level since the bulk load (`bulk`).
fn levels_aged(bulk: &[(u64, u64, u64)], now: &[(u64, u64, u64)]) -> bool {
    levels_half_full(now) && lowest_merged(bulk, now)
}

/// Build the aged store of a peer in `dir/<peer>/aged`: the same ENTRIES keys in write
/// batches, then `aging` more keys (the next entry indices, as for the flashix engines) in
/// batches (AGING_RULE).
pub fn prepare_peer(cfg: &BenchConfig, ui: &Ui, peer: PeerKind, aging: u64) -> Result<Prepared> {
    let dir = cfg.dir.join(peer.name());
    if dir.exists() {
        std::fs::remove_dir_all(&dir)
            .with_context(|| format!("removing the old {}", dir.display()))?;
    }
    let aged_dir = dir.join("aged");
    let t0 = Instant::now();
    let db = peers::open(peer, &aged_dir, cfg.prep_buffer_pool_bytes, true)?;
    let mut session = db.session()?;
    let gen = KeyGen::new(cfg.key_dist, cfg.seed);
    let total = cfg.entries + aging;
    let pb = ui.bar(total, format!("{peer}: load and age"));
    let mut chunk = Vec::with_capacity(PEER_LOAD_CHUNK);
    let mut i = 0;
    while i < total {
        let size = if i < cfg.entries {
            PEER_LOAD_CHUNK.min((cfg.entries - i) as usize)
        } else {
            PEER_AGING_BATCH.min((total - i) as usize)
        };
        chunk.clear();
        chunk.extend((i..i + size as u64).map(|j| {
            let k = gen.key_of(j);
            (k, gen.value_of(k, u64::from(j >= cfg.entries)))
        }));
        chunk.sort_unstable();
        session.bulk_insert(&chunk).context("loading the peer")?;
        i += size as u64;
        pb.set_position(i);
    }
    pb.finish_and_clear();
    session.finish().context("committing the load")?;
    db.flush().context("flush after loading")?;
    db.close().context("closing the aged store")?;
    let prepare_s = t0.elapsed().as_secs_f64();
    say(
        cfg,
        ui,
        &format!(
            "{peer}: loaded {} entries and aged with {aging} inserts in {prepare_s:.1} s",
            cfg.entries
        ),
    );
    Ok(Prepared {
        aged_dir,
        live: total,
        aging_inserts: aging,
        prepare_s,
        write_buffer: peer.write_buffer_entries(cfg.buffer_pool_bytes),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The levels of an FD-tree and an LSM index come from their typed shape, in level
    /// order, agreeing with the display counters; a B+-tree has none.
    #[test]
    fn levels_are_read_from_the_typed_shape() {
        use flashix::io::{MemDevice, MemVfs};
        use flashix::{Db, EngineKind, FdTreeOptions, LsmOptions, Options, Storage};
        for kind in [EngineKind::FdTree, EngineKind::Lsm, EngineKind::BTree] {
            let opts = Options::new(kind)
                .page_size(512)
                .buffer_pool_bytes(64 << 10)
                .fdtree(FdTreeOptions {
                    k: Some(3),
                    head_tree_bytes: 1024,
                    deamortize: false,
                    io_unit_bytes: 2048,
                })
                .lsm(LsmOptions {
                    k: Some(3),
                    c0_bytes: 1024,
                    io_unit_bytes: 2048,
                    search_before_delete: false,
                    deamortize: true,
                });
            let storage = Storage {
                device: Box::new(MemDevice::new(512)),
                vfs: std::sync::Arc::new(MemVfs::new()),
            };
            let db = Db::create_on(storage, opts).unwrap();
            for k in 0..3_000u64 {
                db.insert(k.wrapping_mul(0x9E37_79B9_7F4A_7C15), k).unwrap();
            }
            let s = db.stats();
            let levels = level_fill(&s);
            if kind == EngineKind::BTree {
                assert!(levels.is_empty());
                continue;
            }
            assert!(levels.len() >= 2, "{kind}: {levels:?}");
            let family = if kind == EngineKind::FdTree {
                "level"
            } else {
                "component"
            };
            for (i, &(level, entries, cap)) in levels.iter().enumerate() {
                assert_eq!(level, i as u64 + 1);
                let c = |what: &str| s.engine_counters[&format!("{family}_{level}_{what}")];
                assert_eq!((entries, cap), (c("entries"), c("capacity")), "{kind}");
            }
        }
    }

    #[test]
    fn half_full_ignores_the_lowest_level() {
        assert!(levels_half_full(&[]));
        assert!(levels_half_full(&[(1, 0, 100)]));
        assert!(levels_half_full(&[(1, 5, 10), (2, 0, 100)]));
        assert!(!levels_half_full(&[(1, 4, 10), (2, 100, 100)]));
        assert!(!levels_half_full(&[(1, 5, 10), (2, 49, 100), (3, 1, 1000)]));
        assert!(levels_half_full(&[(1, 9, 10), (2, 50, 100), (3, 1, 1000)]));
    }

    #[test]
    fn the_lowest_level_is_merged_into_when_it_changes_or_a_new_one_appears() {
        let bulk = [(1, 0, 100), (2, 300, 10_000)];
        assert!(!lowest_merged(&bulk, &bulk));
        assert!(!lowest_merged(&bulk, &[(1, 99, 100), (2, 300, 10_000)]));
        assert!(lowest_merged(&bulk, &[(1, 0, 100), (2, 400, 10_000)]));
        assert!(lowest_merged(
            &bulk,
            &[(1, 0, 100), (2, 0, 10_000), (3, 500, 100_000)]
        ));
        assert!(lowest_merged(&[], &[(1, 10, 100)]));
        assert!(!lowest_merged(&[], &[]));
    }

    /// Every buffering engine reports its write buffer in its shape, and a B+-tree has
    /// none.
    #[test]
    fn write_buffers_are_read_from_the_shape() {
        use flashix::io::{MemDevice, MemVfs};
        use flashix::{Db, EngineKind, Options, Storage};
        for kind in [
            EngineKind::FdTree,
            EngineKind::Lsm,
            EngineKind::PioBTree,
            EngineKind::BulkIndex,
            EngineKind::Fbx,
            EngineKind::BTree,
        ] {
            let storage = Storage {
                device: Box::new(MemDevice::new(4096)),
                vfs: std::sync::Arc::new(MemVfs::new()),
            };
            let opts = Options::new(kind).buffer_pool_bytes(2 << 20);
            let db = Db::create_on(storage, opts).unwrap();
            let buf = db.stats().shape.write_buffer_entries;
            if kind == EngineKind::BTree {
                assert_eq!(buf, None);
            } else {
                assert!(buf.is_some_and(|b| b >= 16), "{kind}: {buf:?}");
            }
        }
    }
}
