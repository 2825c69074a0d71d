//! Point and range search: C0, then the frozen C0 of a rolling merge in progress, then the
//! components newest first (a merge changes them only when it completes). At each level the
//! level's own entry of the key decides first (a tombstone meaning absent), then the
//! level's range tombstones (covered: absent), else the next older level decides
//! ([`crate::kit::sorted::tombs`]).

use super::component::{self, Component};
use super::{Lsm, Params};
use crate::durable::{PageRead, Pager};
use crate::error::Result;
use crate::kit::api::SharedWrite;
use crate::kit::sorted::entry::{Entry, Layout};
use crate::kit::sorted::head::Head;
use crate::kit::sorted::memo::PageMemo;
use crate::kit::sorted::newest::{merge_newest_first, Source};
use crate::kit::sorted::reads::{SortedLevels, SortedReads};
use crate::kit::sorted::shared::SharedHead;
use crate::kit::sorted::tombs::Tombs;

/// What a search reads besides the pager ([`SortedReads::Levels`]): the fields of [`Lsm`]
/// of the same names.
pub(crate) struct Levels<'a> {
    p: &'a Params,
    c0: &'a Head,
    c0_tombs: &'a Tombs,
    frozen: Option<&'a [Entry]>,
    frozen_tombs: &'a Tombs,
    components: &'a [Option<Component>],
    tombs: &'a [Tombs],
}

impl Levels<'_> {
    /// Every level's range tombstones, newest first, as [`Lsm::all_tombs`].
    fn all_tombs(&self) -> impl Iterator<Item = &Tombs> {
        [self.c0_tombs, self.frozen_tombs]
            .into_iter()
            .chain(self.tombs)
    }

    /// Whether one range tombstone of a level newer than `level` spans all of `[lo, hi]`:
    /// no key of `level` can show there, so a range batch need not read its leaves (a scan
    /// over a deleted range costs what a range delete saved).
    fn spanned_by_newer(&self, level: usize, lo: u64, hi: u64) -> bool {
        self.all_tombs().take(level).any(|t| t.spans(lo, hi))
    }

    /// C0's index entries with key in [lo, hi] (at most |C0|). With a memo (slot 0), a
    /// range inside the C0 leaf read last needs no descent.
    fn c0_range(
        &self,
        pager: impl PageRead,
        lo: u64,
        hi: u64,
        max_leaves: u64,
        mut memo: Option<&mut PageMemo>,
    ) -> Result<(Vec<Entry>, Option<u64>)> {
        if let Some(es) = memo.as_deref_mut().and_then(|m| m.covering(0, lo, hi)) {
            let es = es
                .into_iter()
                .filter(|e| e.key >= lo && e.key <= hi && !e.is_fence())
                .collect();
            return Ok((es, None));
        }
        let lay = self.p.lay;
        let mut out = Vec::new();
        // At most `max_leaves` leaves per batch (`Head::walk_range`): an open-ended range
        // must not decode all of C0 for every batch.
        let cut = self.c0.walk_range(pager, lay, lo, max_leaves, |pid, es| {
            if let Some(m) = memo.as_deref_mut() {
                m.keep(0, pid, &es);
            }
            for e in es {
                if e.key > hi {
                    return Ok(true);
                }
                if e.key >= lo && !e.is_fence() {
                    out.push(e);
                }
            }
            Ok(false)
        })?;
        if let Some(cut) = cut {
            out.retain(|e| e.key <= cut);
        }
        Ok((out, cut))
    }
}

/// The engine's levels, borrowed field by field (so that its pager can be lent beside
/// them, `&mut` on the serial path).
macro_rules! levels_of {
    ($e:expr) => {
        Levels {
            p: &$e.p,
            c0: &$e.c0,
            c0_tombs: &$e.c0_tombs,
            frozen: $e.frozen.as_deref(),
            frozen_tombs: &$e.frozen_tombs,
            components: &$e.components,
            tombs: &$e.tombs,
        }
    };
}

/// The sorted kit's read protocol ([`crate::kit::sorted::reads`]).
impl SortedReads for Lsm {
    type Levels<'a> = Levels<'a>;

    fn levels(&self) -> (Levels<'_>, &Pager) {
        let levels = levels_of!(self);
        (levels, &self.pager)
    }

    fn levels_mut(&mut self) -> (Levels<'_>, &mut Pager) {
        let levels = levels_of!(self);
        (levels, &mut self.pager)
    }

    /// A write changes C0 only (blind: no component is read): its path and leaf.
    fn warm_write(&self, key: u64) {
        let _ = self.c0.find(&self.pager, self.p.lay, key);
    }

    fn shared_head(&self) -> SharedHead<'_> {
        SharedHead {
            head: &self.c0,
            tombs: &self.c0_tombs,
            cap: self.p.cap0,
            merging: self.job.is_some(),
            lay: self.p.lay,
            pager: &self.pager,
            writes: &self.shared,
        }
    }

    fn head_delete_shared(&self, key: u64) -> Result<SharedWrite> {
        self.delete_shared(key)
    }

    fn head_maintain(&mut self) -> Result<()> {
        self.maintain()
    }
}

/// The searches, over either page source ([`SortedLevels`]).
impl SortedLevels for Levels<'_> {
    /// One batch of a range scan: C0's entries of the range and at most `io_unit` leaves
    /// of each component (from a descent to `lo`; only the leaves that may hold keys up to
    /// `hi`; past the pool, except one leaf of a component the pool holds; an open-ended
    /// range `lo..` reads the leaves the entries still wanted span when the caller gave a
    /// limit hint, else RANGE_RAMP_PAGES first, then twice as many per batch, as the
    /// caller may stop early: [`crate::kit::api::RangeCursor::ramp`]; C0's leaves and the frozen C0's
    /// entries likewise), cut at the smallest last key read of a source that was not read
    /// to the end of the range, so that every source is complete up to the cut. Sources
    /// are numbered as [`Lsm::all_tombs`]: 0 C0, 1 the frozen C0, 2 + i component i; memo
    /// slots likewise (the frozen C0, in memory, needs none).
    fn range_batch(
        &self,
        mut pager: impl PageRead,
        lo: u64,
        hi: u64,
        unit: u64,
        out: &mut Vec<(u64, u64)>,
        memo: Option<&mut PageMemo>,
    ) -> Result<u64> {
        let lay = self.p.lay;
        let mut b = Batch {
            lo,
            hi,
            unit,
            batch_hi: hi,
            memo,
            largest: self.components.iter().flatten().map(|c| c.leaves).max(),
        };
        let (c0, c0_cut) = self.c0_range(
            &mut pager,
            lo,
            hi,
            b.leaves_of(self.c0.pages),
            b.memo.as_deref_mut(),
        )?;
        if let Some(cut) = c0_cut {
            b.batch_hi = b.batch_hi.min(cut);
        }
        let mut sources = vec![Source {
            level: 0,
            entries: c0,
        }];
        if let Some(fr) = self.frozen {
            sources.push(b.frozen_source(fr, self.p.lay.cap() as u64));
        }
        // The point lookup's rule (Eq. 10): a component the pool holds is read through it
        // when the batch needs one leaf there, so short scans (the many small key
        // intervals of a moving-object query) find its leaves cached; longer spans go past
        // the pool in one request.
        let frames = pager.pager().pool_frames();
        let mut above = self.c0.pages;
        let mut comps = Vec::new();
        for (i, c) in self.components.iter().enumerate() {
            let Some(c) = *c else { continue };
            comps.push((i + 2, c, above < frames));
            above += c.pages;
        }
        // The largest (oldest) component first: its `unit` leaves decide where the batch
        // ends, and the smaller ones then read only up to there (their `unit` leaves span
        // far more keys). The sources are put back newest first below.
        for &(slot, c, cached) in comps.iter().rev() {
            if self.spanned_by_newer(slot, lo, hi) {
                continue;
            }
            sources.push(b.component_source(&mut pager, lay, slot, &c, cached)?);
        }
        // Newest first: the first source holding a key decides it.
        sources.sort_by_key(|s| s.level);
        let tombs: Vec<&Tombs> = self.all_tombs().collect();
        merge_newest_first(&sources, &tombs, lo, b.batch_hi, out);
        Ok(b.batch_hi)
    }

    /// The newest entry of `key`: C0 through the pool, the frozen C0's entries in memory,
    /// then one descent per component, stopping at the first level whose entry or range
    /// tombstones decide.
    fn newest(&self, mut pager: impl PageRead, key: u64) -> Result<Option<Entry>> {
        let f = self.c0.find(&mut pager, self.p.lay, key)?;
        let mut found = f.entry;
        let mut decided = found.is_some() || self.c0_tombs.covers(key);
        if let (false, Some(fr)) = (decided, self.frozen) {
            found = fr
                .binary_search_by_key(&key, |e| e.key)
                .ok()
                .and_then(|i| fr.get(i).copied());
            decided = found.is_some() || self.frozen_tombs.covers(key);
        }
        if !decided {
            // As the FD-tree's levels (§4 Eq. 10): a component's leaves are read through
            // the pool while C0 and the newer components leave room there, past it below.
            let frames = pager.pager().pool_frames();
            let mut above = self.c0.pages;
            for (i, c) in self.components.iter().enumerate() {
                if let Some(c) = c {
                    found = component::find(&mut pager, self.p.lay, c, key, above < frames)?;
                    if found.is_some() {
                        break;
                    }
                    above += c.pages;
                }
                if self.tombs[i].covers(key) {
                    break;
                }
            }
        }
        Ok(found)
    }

    fn batch_limits(&self) -> (u64, u64) {
        (self.p.io_unit, self.p.lay.cap() as u64)
    }
}

/// What the sources of one range batch ([`SortedLevels::range_batch`]) share: the range,
/// the leaves per component, the cut so far and the caller's leaf memo.
struct Batch<'m> {
    lo: u64,
    hi: u64,
    /// Leaves per component and batch.
    unit: u64,
    /// Every source read so far is complete up to here.
    batch_hi: u64,
    memo: Option<&'m mut PageMemo>,
    /// The leaves of the largest component, if there is one.
    largest: Option<u64>,
}

impl Batch<'_> {
    /// C0's leaves span the components' leaves as a component's leaves do: a batch walks
    /// C0's share of the largest component's `unit` leaves, plus two for the ends.
    #[inline]
    fn leaves_of(&self, pages: u64) -> u64 {
        self.largest.map_or(u64::MAX, |l| {
            (self.unit.saturating_mul(pages))
                .div_ceil(l.max(1))
                .saturating_add(2)
        })
    }

    /// The frozen C0's entries (`cap` per page): as many as C0's leaves would give, from
    /// the first at or above `lo`.
    fn frozen_source(&mut self, fr: &[Entry], cap: u64) -> Source {
        let (lo, hi) = (self.lo, self.hi);
        let most = self
            .leaves_of(fr.len() as u64 / cap.max(1) + 1)
            .saturating_mul(cap);
        let from = fr.partition_point(|e| e.key < lo);
        let upto = fr.partition_point(|e| e.key <= hi);
        let to = upto.min(from.saturating_add(usize::try_from(most).unwrap_or(usize::MAX)));
        let es = fr.get(from..to).unwrap_or(&[]).to_vec();
        if to < upto {
            if let Some(last) = es.last() {
                self.batch_hi = self.batch_hi.min(last.key);
            }
        }
        Source {
            level: 1,
            entries: es,
        }
    }

    /// Component `c`'s entries in memo slot `slot`: at most `unit` leaves from a descent
    /// to `lo`, up to the cut; `cached` reads a single leaf through the pool.
    fn component_source<P: PageRead>(
        &mut self,
        pager: &mut P,
        lay: Layout,
        slot: usize,
        c: &Component,
        cached: bool,
    ) -> Result<Source> {
        let (lo, hi, unit) = (self.lo, self.hi, self.unit);
        // A range inside the leaf this component's last range ended in: no descent.
        if let Some(es) = self
            .memo
            .as_deref_mut()
            .and_then(|m| m.covering(slot, lo, hi))
        {
            return Ok(Source {
                level: slot,
                entries: es
                    .into_iter()
                    .filter(|e| e.key >= lo && e.key <= hi)
                    .collect(),
            });
        }
        let (mut first, last) = component::leaf_span(&mut *pager, lay, c, lo, self.batch_hi)?;
        loop {
            let n = unit.min(last - first + 1);
            // Within one `scan_many`, a leaf the previous range ended in is not read again.
            let kept = self.memo.as_deref_mut().and_then(|m| m.get(slot, first));
            let pages = match kept {
                Some(es) if n == 1 => vec![es],
                Some(es) => {
                    let mut v = vec![es];
                    v.extend(component::read_leaves(
                        &mut *pager,
                        lay,
                        c,
                        first + 1,
                        n - 1,
                    )?);
                    v
                }
                None if n == 1 && cached => {
                    vec![component::read_leaf_cached(&mut *pager, lay, c, first)?]
                }
                None => component::read_leaves(&mut *pager, lay, c, first, n)?,
            };
            if let (Some(m), Some(es)) = (self.memo.as_deref_mut(), pages.last()) {
                m.keep(slot, first + n - 1, es);
            }
            let last_key = pages.last().and_then(|p| p.last()).map_or(lo, |e| e.key);
            let more = first + n <= last;
            if last_key < lo && more {
                // The range begins after these leaves: read on.
                first += n;
                continue;
            }
            if more && last_key < self.batch_hi {
                self.batch_hi = last_key;
            }
            return Ok(Source {
                level: slot,
                entries: pages
                    .into_iter()
                    .flatten()
                    .filter(|e| e.key >= lo && e.key <= hi)
                    .collect(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::kind::EngineKind;
    use crate::options::{EngineOptions, Options};

    /// An LSM-tree of 512-byte pages over memory: C0 of 8 pages, k = 3, merges inline
    /// (the same structure each time), a pool of `frames`.
    fn lsm(frames: u64) -> super::Lsm {
        lsm_with(frames, false, false)
    }

    /// [`lsm`] with rolling merges (`deamortize`) and a search before each delete as
    /// asked.
    fn lsm_with(frames: u64, deamortize: bool, search_before_delete: bool) -> super::Lsm {
        use crate::io::{MemDevice, MemVfs, Storage};
        let opts = Options::new(EngineKind::Lsm)
            .page_size(512)
            .buffer_pool_bytes(frames * 512)
            .lsm(super::super::LsmOptions {
                k: Some(3),
                c0_bytes: 8 * 512,
                io_unit_bytes: 4 * 512,
                search_before_delete,
                deamortize,
            })
            .resolved()
            .unwrap();
        let storage = Storage {
            device: Box::new(MemDevice::new(512)),
            vfs: std::sync::Arc::new(MemVfs::new()),
        };
        let EngineOptions::Lsm(o) = opts.sub_options.clone() else {
            unreachable!("LSM options")
        };
        super::Lsm::create(storage, opts.settings().unwrap(), o, false).unwrap()
    }

    #[test]
    fn serial_reads_answer_and_read_as_the_shared_ones() {
        use crate::kit::sorted::reads::testing::serial_reads_answer_as_the_shared;
        serial_reads_answer_as_the_shared(|| lsm(8192), true);
        for frames in [16, 40] {
            serial_reads_answer_as_the_shared(|| lsm(frames), false);
        }
    }

    #[test]
    fn shared_writes_agree_with_a_model() {
        use crate::kit::sorted::shared::testing::shared_writes_match_a_model;
        for (seed, deamortize, search) in [(1, false, false), (2, true, false), (3, true, true)] {
            for frames in [16, 4096] {
                shared_writes_match_a_model(lsm_with(frames, deamortize, search), seed);
            }
        }
    }

    #[test]
    fn threads_write_into_c0_beside_each_other_and_a_scan() {
        use crate::kit::sorted::shared::testing::threads_write_beside_each_other;
        for (deamortize, search) in [(false, false), (true, false), (true, true)] {
            threads_write_beside_each_other(lsm_with(64, deamortize, search));
        }
    }
}
