//! Point and range search (§3.3 Search, Algorithm 1).
//!
//! Point search: the head tree(s), then ONE page per level, following at each level the
//! fence found by scanning backward from the greatest entry at or below the key (Invariant
//! 1 stops the scan in that page; Invariant 2 makes the fence's page the only one of the
//! next level that can hold the key). The first index entry of the key met top-down is the
//! newest: a normal entry is the answer, a filter cancels its phantoms below. Levels are
//! read through the buffer pool from the top while the structures above them fit in it,
//! and past it below (the top levels reside in the buffer, §4 Eq. 10).
//!
//! Range tombstones ([`crate::kit::sorted::tombs`]): at every level (head trees
//! included) the level's own index entry of a key decides first (it is newer than the
//! level's tombstones); else a tombstone of the level covering the key makes it absent;
//! else the search goes down. A range scan drops a key whose deciding entry comes from a
//! level older than one whose tombstones cover it.
//!
//! Range search: at each level, the fences of the level above say exactly which contiguous
//! pages hold the range; they are fetched in ONE multi-page request per level (P3). A batch
//! covers at most `io_unit` pages of the lowest level (for an open-ended range, the pages
//! the entries still wanted span when the caller gave a limit hint, else
//! `RANGE_RAMP_PAGES` = 8 in the first batch and twice as many in each next one, so a scan
//! stopped early reads little: [`crate::kit::api::RangeCursor::ramp`]) and the pages of each level above
//! that span them (the batch's pages times the level's share of the lowest level's pages,
//! at least one; bounded memory; the head trees' leaves likewise, plus two for the range's
//! ends); when a level's pages exceed that, the batch ends just below the first key of the
//! first page left out, and the cursor resumes there. The levels' streams are merged newest first,
//! filters cancelling. A level the point search reads through the pool is read through it
//! by a batch that needs one page there (short scans keep the top levels cached).
//!
//! Many ranges (`scan_many`, a moving-object query's curve intervals): one scan per range,
//! in key order, with a [`PageMemo`] of the last page read at each level, so neighbouring
//! ranges in one page of a level read it once.

use super::run::{probe_page, read_page_cached, read_pages, Run};
use super::{FdTree, Params};
use crate::durable::{PageRead, Pager};
use crate::error::{Error, Result};
use crate::kit::api::SharedWrite;
use crate::kit::sorted::entry::{index_pos, Entry, Layout, Probe, NONE};
use crate::kit::sorted::head::Head;
use crate::kit::sorted::memo::PageMemo;
use crate::kit::sorted::newest::{merge_newest_first, Source};
use crate::kit::sorted::reads::{SortedLevels, SortedReads};
use crate::kit::sorted::shared::SharedHead;
use crate::kit::sorted::tombs::Tombs;
use crate::page::DATA_FILE;

/// What a head tree contributes to a range batch.
struct HeadRange {
    entries: Vec<Entry>,
    start: u64,
    fences: Vec<Entry>,
    /// Set when the walk stopped at its leaf budget before `hi`: the batch must end at
    /// this key (every head entry at or below it was seen).
    cut: Option<u64>,
}

/// What a search reads besides the pager ([`SortedReads::Levels`]): the fields of
/// [`FdTree`] of the same names.
pub(crate) struct Levels<'a> {
    p: &'a Params,
    head: &'a Head,
    frozen: Option<&'a Head>,
    levels: &'a [Run],
    head_tombs: &'a Tombs,
    frozen_tombs: &'a Tombs,
    level_tombs: &'a [Tombs],
}

impl Levels<'_> {
    /// Search the levels for `key` from page `pid` of L1: the newest index entry of `key`.
    fn search_levels(
        &self,
        mut pager: impl PageRead,
        key: u64,
        mut pid: u64,
    ) -> Result<Option<Entry>> {
        let frames = pager.pager().pool_frames();
        // Pages of the head tree(s) and the levels above the current one.
        let mut above = self.head.pages + self.frozen.map_or(0, |h| h.pages);
        for lvl in 0..self.levels.len() {
            if pid == NONE {
                return Ok(None);
            }
            let run = self.levels[lvl];
            if !run.contains(pid) {
                return Err(Error::corruption(
                    DATA_FILE,
                    Some(pid),
                    format!("FD-tree fence points outside level {}", lvl + 1),
                ));
            }
            // §4, Eq. 10: the buffer pool holds the top levels. A level is read through
            // the pool while the levels above it leave room there; the levels below are
            // read past it, so that their pages (touched once per search, k times more of
            // them than above) do not push the upper levels out of an LRU pool.
            // The step reads the page's bytes in place: a binary search and a backward
            // scan to the first fence, no decoded copy of the page.
            let step = probe_page(&mut pager, self.p.lay, pid, key, above < frames)?;
            above += run.pages;
            pid = match step {
                Probe::Entry(e) => return Ok(Some(e)),
                Probe::Fence(_) if self.level_tombs.get(lvl).is_some_and(|t| t.covers(key)) => {
                    return Ok(None)
                }
                Probe::Fence(next) => next,
                Probe::Neither => {
                    return Err(Error::corruption(
                        DATA_FILE,
                        Some(pid),
                        "FD-tree page does not begin with a fence (Invariant 1)",
                    ))
                }
            };
        }
        Ok(None)
    }

    /// The newest index entry of `key` below the active head tree: the frozen head tree
    /// (while a deamortized merge runs) and the levels. `fence` is the active head's.
    pub(super) fn find_below_head(
        &self,
        mut pager: impl PageRead,
        key: u64,
        fence: u64,
    ) -> Result<Option<Entry>> {
        let fence = match self.frozen {
            Some(fr) => {
                let f = fr.find(&mut pager, self.p.lay, key)?;
                if f.entry.is_some() || self.frozen_tombs.covers(key) {
                    return Ok(f.entry);
                }
                f.fence
            }
            None => fence,
        };
        self.search_levels(pager, key, fence)
    }

    /// The head tree's part of a range batch: at most `max_leaves` leaves once past `lo`
    /// (an open-ended range must not decode the whole head tree for every batch; the
    /// batch then ends where the walk stopped, `HeadRange::cut`). With a memo (`slot` its
    /// slot there), a range inside the head leaf read last needs no descent.
    fn head_range(
        &self,
        pager: impl PageRead,
        head: &Head,
        lo: u64,
        hi: u64,
        max_leaves: u64,
        mut memo: Option<(&mut PageMemo, usize)>,
    ) -> Result<HeadRange> {
        let lay = self.p.lay;
        let mut out = HeadRange {
            entries: Vec::new(),
            start: NONE,
            fences: Vec::new(),
            cut: None,
        };
        let kept = match memo.as_mut() {
            Some((m, slot)) => m.covering(*slot, lo, hi),
            None => None,
        };
        if let Some(es) = kept {
            // The leaf holds keys on both sides of the range: the walk below would start
            // and end in it.
            let _ = take_head_entries(&mut out, es, lo, hi);
            return Ok(out);
        }
        let mut first = true;
        let mut start_found = false;
        let cut = head.walk_range(pager, lay, lo, max_leaves, |pid, es| {
            if let Some((m, slot)) = memo.as_mut() {
                m.keep(*slot, pid, &es);
            }
            let (ended, saw_start) = take_head_entries(&mut out, es, lo, hi);
            start_found |= saw_start;
            if !ended && first && !start_found && pid != head.first_leaf {
                // Only the first leaf may lack a leading fence (module doc of head.rs).
                return Err(Error::corruption(
                    DATA_FILE,
                    Some(pid),
                    "FD-tree head leaf does not begin with a fence",
                ));
            }
            first = false;
            Ok(ended)
        })?;
        if let Some(cut) = cut {
            out.entries.retain(|e| e.key <= cut);
            out.fences.retain(|e| e.key <= cut);
            out.cut = Some(cut);
        }
        Ok(out)
    }
}

/// The engine's levels, borrowed field by field (so that its pager can be lent beside
/// them, `&mut` on the serial path).
macro_rules! levels_of {
    ($e:expr) => {
        Levels {
            p: &$e.p,
            head: &$e.head,
            frozen: $e.frozen.as_ref(),
            levels: &$e.levels,
            head_tombs: &$e.head_tombs,
            frozen_tombs: &$e.frozen_tombs,
            level_tombs: &$e.level_tombs,
        }
    };
}

/// The sorted kit's read protocol ([`crate::kit::sorted::reads`]).
impl SortedReads for FdTree {
    type Levels<'a> = Levels<'a>;

    fn levels(&self) -> (Levels<'_>, &Pager) {
        let levels = levels_of!(self);
        (levels, &self.pager)
    }

    fn levels_mut(&mut self) -> (Levels<'_>, &mut Pager) {
        let levels = levels_of!(self);
        (levels, &mut self.pager)
    }

    /// An insert changes the head tree only: its path and leaf. (A delete searches the
    /// levels first, Algorithm 4: under the shared lock when it runs there, else under
    /// the exclusive one.)
    fn warm_write(&self, key: u64) {
        let _ = self.head.find(&self.pager, self.p.lay, key);
    }

    fn shared_head(&self) -> SharedHead<'_> {
        SharedHead {
            head: &self.head,
            tombs: &self.head_tombs,
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
    /// One batch of a range scan (see the module doc). With a memo (`scan_many`): slots 0
    /// and 1 keep the active and the frozen head's last leaf, slot 2 + i level i's last
    /// page.
    fn range_batch(
        &self,
        mut pager: impl PageRead,
        lo: u64,
        hi: u64,
        unit: u64,
        out: &mut Vec<(u64, u64)>,
        mut memo: Option<&mut PageMemo>,
    ) -> Result<u64> {
        let mut batch_hi = hi;
        let lowest = self.levels.last().map_or(1, |r| r.pages);
        // A bounded range reads what the fences say, up to `io_unit` pages of the lowest
        // level per batch (`unit`). An open-ended one (`lo..`, its end decided by the
        // caller) grows from RANGE_RAMP_PAGES by 2x per batch up to `io_unit`, so a scan
        // stopped early does not read a whole `io_unit` (the cursor's hint holds the next
        // batch's size; `SortedReads::scan_batch` asks it).
        // A head tree's leaves span the levels' pages as a level's pages do (see `budget`
        // in `LevelWalk::span`); with no level, the head tree is all there is.
        let no_levels = self.levels.is_empty();
        let leaves = |h: &Head| match no_levels {
            true => u64::MAX,
            false => (unit.saturating_mul(h.pages))
                .div_ceil(lowest.max(1))
                .saturating_add(2),
        };
        // Sources newest first: active head, frozen head, L1, L2, ...
        let mut sources: Vec<Vec<Entry>> = Vec::new();
        let active = self.head_range(
            &mut pager,
            self.head,
            lo,
            hi,
            leaves(self.head),
            memo.as_deref_mut().map(|m| (m, 0)),
        )?;
        let mut cut = active.cut;
        sources.push(active.entries);
        let nav = match self.frozen {
            Some(fr) => {
                let f = self.head_range(
                    &mut pager,
                    fr,
                    lo,
                    hi,
                    leaves(fr),
                    memo.as_deref_mut().map(|m| (m, 1)),
                )?;
                cut = match (cut, f.cut) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                sources.push(f.entries);
                (f.start, f.fences)
            }
            None => (active.start, active.fences),
        };
        if let Some(c) = cut {
            batch_hi = batch_hi.min(c);
        }
        let (start, fences) = nav;
        let mut walk = LevelWalk {
            lo,
            unit,
            lowest,
            batch_hi,
            start,
            fences,
            memo,
        };
        let frames = pager.pager().pool_frames();
        let mut above = self.head.pages + self.frozen.map_or(0, |h| h.pages);
        for (lvl, &run) in self.levels.iter().enumerate() {
            let Some(entries) = walk.level(&mut pager, self.p.lay, lvl, run, above < frames)?
            else {
                break;
            };
            above += run.pages;
            sources.push(entries);
        }
        let batch_hi = walk.batch_hi;
        // Each source's range tombstones, in the same order: the head trees', the levels'.
        let tombs: Vec<&Tombs> = [self.head_tombs]
            .into_iter()
            .chain(self.frozen.map(|_| self.frozen_tombs))
            .chain(self.level_tombs)
            .take(sources.len())
            .collect();
        let sources: Vec<Source> = (sources.into_iter().enumerate())
            .map(|(level, entries)| Source { level, entries })
            .collect();
        merge_newest_first(&sources, &tombs, lo, batch_hi, out);
        Ok(batch_hi)
    }

    /// Point search: the newest index entry of `key` (a filter cancels older ones).
    fn newest(&self, mut pager: impl PageRead, key: u64) -> Result<Option<Entry>> {
        let f = self.head.find(&mut pager, self.p.lay, key)?;
        match f.entry {
            Some(e) => Ok(Some(e)),
            None if self.head_tombs.covers(key) => Ok(None),
            None => self.find_below_head(pager, key, f.fence),
        }
    }

    fn batch_limits(&self) -> (u64, u64) {
        (self.p.io_unit, self.p.lay.cap() as u64)
    }
}

/// A range batch's walk down the levels (below the head trees): where the next level's
/// pages start and the fences that navigate it, the cut so far, and the caller's memo.
struct LevelWalk<'m> {
    lo: u64,
    /// Pages of the lowest level per batch.
    unit: u64,
    /// The lowest level's pages.
    lowest: u64,
    /// Every source read so far is complete up to here.
    batch_hi: u64,
    /// The page the fence at or below `lo` points to ([`NONE`]: none).
    start: u64,
    /// The fences above `lo` of the level above.
    fences: Vec<Entry>,
    memo: Option<&'m mut PageMemo>,
}

impl LevelWalk<'_> {
    /// Level `lvl` (`run`, read through the pool for a single page if `cached`): its
    /// entries of the batch, after which `start` and `fences` navigate the next level.
    /// `None` when the fences above name no page of it.
    #[inline]
    fn level<P: PageRead>(
        &mut self,
        pager: &mut P,
        lay: Layout,
        lvl: usize,
        run: Run,
        cached: bool,
    ) -> Result<Option<Vec<Entry>>> {
        let Some((first, last)) = self.span(lvl, run)? else {
            return Ok(None);
        };
        let pages = self.read(pager, lay, lvl, first, last, cached)?;
        Ok(Some(self.take_entries(pages)))
    }

    /// The pages of level `lvl` the fences above name, at most its share of `unit`; when
    /// they are more, the batch is cut below the first page left out.
    fn span(&mut self, lvl: usize, run: Run) -> Result<Option<(u64, u64)>> {
        let batch_hi = self.batch_hi;
        self.fences.retain(|f| f.key <= batch_hi);
        let first = if self.start != NONE {
            self.start
        } else {
            match self.fences.iter().find(|f| f.val != NONE) {
                Some(f) => f.val,
                None => return Ok(None),
            }
        };
        let mut last = self
            .fences
            .iter()
            .rev()
            .find(|f| f.val != NONE)
            .map_or(first, |f| f.val);
        if !run.contains(first) || !run.contains(last) || last < first {
            return Err(Error::corruption(
                DATA_FILE,
                Some(first),
                format!("FD-tree fences point outside level {}", lvl + 1),
            ));
        }
        // A page of this level spans about `lowest / run.pages` pages of the lowest
        // level, so a batch reads here only what the lowest level's `unit` pages span:
        // an open-ended range (`hi` unknown to the fences above) must not read a whole
        // `io_unit` of every level for each batch of the lowest. No margin for the
        // range's ends: a batch whose span here crosses a page boundary is cut there
        // (the next batch goes on), and one that needs a single page of a level the
        // pool holds finds it there (below) rather than reading past the pool.
        let budget = (self.unit.saturating_mul(run.pages))
            .div_ceil(self.lowest.max(1))
            .clamp(1, self.unit);
        if last - first + 1 > budget {
            last = first + budget - 1;
            // The first page left out begins with the external fence of the level above.
            let cut = self
                .fences
                .iter()
                .filter(|f| f.val != NONE && f.val > last)
                .map(|f| f.key)
                .min()
                .unwrap_or(self.batch_hi.saturating_add(1));
            self.batch_hi = self.batch_hi.min(cut.saturating_sub(1)).max(self.lo);
        }
        Ok(Some((first, last)))
    }

    /// Pages `first..=last` of level `lvl`, the memo's page first if it holds it.
    fn read<P: PageRead>(
        &mut self,
        pager: &mut P,
        lay: Layout,
        lvl: usize,
        first: u64,
        last: u64,
        cached: bool,
    ) -> Result<Vec<Vec<Entry>>> {
        // A level the pool holds (the point search's rule, Eq. 10) is read through it
        // when the batch needs one page there: short scans, such as the many small
        // key intervals of a moving-object query, then find the upper levels cached
        // as point searches do. Longer spans go past the pool in one request (P3).
        // Within one `scan_many`, a page the previous range ended in is not read again.
        let kept = self.memo.as_deref_mut().and_then(|m| m.get(2 + lvl, first));
        let pages = match kept {
            Some(es) if first == last => vec![es],
            Some(es) => {
                let mut v = vec![es];
                v.extend(read_pages(&mut *pager, lay, first + 1, last - first)?);
                v
            }
            None if first == last && cached => vec![read_page_cached(&mut *pager, lay, first)?],
            None => read_pages(&mut *pager, lay, first, last - first + 1)?,
        };
        if let (Some(m), Some(es)) = (self.memo.as_deref_mut(), pages.last()) {
            m.keep(2 + lvl, last, es);
        }
        Ok(pages)
    }

    /// A level's entries of the batch from its `pages`; its fences set `start` (the one
    /// at or below `lo`) and `fences` (the later ones) for the next level.
    fn take_entries(&mut self, pages: Vec<Vec<Entry>>) -> Vec<Entry> {
        let mut entries = Vec::new();
        let mut next_fences = Vec::new();
        let mut next_start = NONE;
        for e in pages.into_iter().flatten() {
            if e.key > self.batch_hi {
                break;
            }
            if e.pos() <= index_pos(self.lo) {
                if e.is_fence() {
                    next_start = e.val;
                } else if e.key == self.lo {
                    entries.push(e);
                }
            } else if e.is_fence() {
                next_fences.push(e);
            } else {
                entries.push(e);
            }
        }
        self.start = next_start;
        self.fences = next_fences;
        entries
    }
}

/// Take a head leaf's entries for the range `[lo, hi]` into `out`: the fence at or below
/// `lo` sets where the level below starts, later fences navigate it, index entries in the
/// range are the head's own. Returns whether an entry past `hi` ended the walk, and
/// whether a fence at or below `lo` was seen.
fn take_head_entries(out: &mut HeadRange, es: Vec<Entry>, lo: u64, hi: u64) -> (bool, bool) {
    let mut saw_start = false;
    for e in es {
        if e.key > hi {
            return (true, saw_start);
        }
        if e.pos() <= index_pos(lo) {
            if e.is_fence() {
                out.start = e.val;
                saw_start = true;
            } else if e.key == lo {
                out.entries.push(e);
            }
        } else if e.is_fence() {
            out.fences.push(e);
        } else {
            out.entries.push(e);
        }
    }
    (false, saw_start)
}

#[cfg(test)]
mod tests {
    use crate::kind::EngineKind;
    use crate::options::{EngineOptions, Options};

    /// An FD-tree of 512-byte pages over memory: a head tree of 8 pages, k = 3, merges
    /// inline (the same structure each time), a pool of `frames`.
    fn fdtree(frames: u64) -> super::FdTree {
        fdtree_with(frames, false)
    }

    /// [`fdtree`] with deamortized merges as asked.
    fn fdtree_with(frames: u64, deamortize: bool) -> super::FdTree {
        use crate::io::{MemDevice, MemVfs, Storage};
        let opts = Options::new(EngineKind::FdTree)
            .page_size(512)
            .buffer_pool_bytes(frames * 512)
            .fdtree(super::super::FdTreeOptions {
                k: Some(3),
                head_tree_bytes: 8 * 512,
                deamortize,
                io_unit_bytes: 4 * 512,
            })
            .resolved()
            .unwrap();
        let storage = Storage {
            device: Box::new(MemDevice::new(512)),
            vfs: std::sync::Arc::new(MemVfs::new()),
        };
        let EngineOptions::FdTree(o) = opts.sub_options.clone() else {
            unreachable!("FD-tree options")
        };
        super::FdTree::create(storage, opts.settings().unwrap(), o, false).unwrap()
    }

    #[test]
    fn serial_reads_answer_and_read_as_the_shared_ones() {
        use crate::kit::sorted::reads::testing::serial_reads_answer_as_the_shared;
        serial_reads_answer_as_the_shared(|| fdtree(8192), true);
        for frames in [16, 40] {
            serial_reads_answer_as_the_shared(|| fdtree(frames), false);
        }
    }

    #[test]
    fn shared_writes_agree_with_a_model() {
        use crate::kit::sorted::shared::testing::shared_writes_match_a_model;
        for (seed, deamortize) in [(1, false), (2, true)] {
            for frames in [16, 4096] {
                shared_writes_match_a_model(fdtree_with(frames, deamortize), seed);
            }
        }
    }

    #[test]
    fn threads_write_into_the_head_tree_beside_each_other_and_a_scan() {
        use crate::kit::sorted::shared::testing::threads_write_beside_each_other;
        for deamortize in [false, true] {
            threads_write_beside_each_other(fdtree_with(64, deamortize));
        }
    }
}
