//! The merge (§3.3 Merge, Algorithm 3) as a resumable job, so that the deamortized scheme
//! (§3.4) can advance it by a bounded number of entries per insertion; the amortized scheme
//! runs the same job to completion at once.
//!
//! Merge(L(i-1), L(i)) reads both inputs sequentially (`io_unit` pages per request) and
//! writes the new L'(i) sequentially into a fresh extent:
//! - from L(i-1) it takes the index entries only (its fences pointed into the old L(i));
//! - from L(i) it takes the index entries and the external fences (L(i+1) is unchanged, so
//!   they stay valid), dropping the internal fences (Algorithm 3, lines 3-6);
//! - a page that would begin with an index entry gets a new internal fence (lines 17-21);
//! - for entries of the same key the newer one (from L(i-1)) wins; a filter that meets its
//!   phantom removes it (lines 7-8). Under upserts a key may also have older versions in
//!   levels below L(i) that the phantom was shadowing, so the filter itself is dropped only
//!   when L'(i) is the last level (which therefore holds no filters, §3.3 Deletion);
//! - if L'(i) reaches its capacity k^i·|L0|, it is merged with L(i+1) in turn (line 28-29);
//!   if L(i) was the lowest level, L'(i) holds every entry and Merge(L'(i), nothing) would
//!   copy it unchanged, so it moves down as it is to the first level that holds it, under
//!   k or under the k re-chosen for the tree's size ([`crate::kit::sorted::tune`]);
//! - range tombstones ([`crate::kit::sorted::tombs`]): the index entries of L(i) that a
//!   tombstone of L(i-1) covers are dropped (fences stay: they navigate L(i+1)), and L'(i)
//!   keeps the union of both inputs' tombstones for the levels below, or none when it is
//!   the last level. The levels rebuilt from fences above the cascade hold none (their
//!   tombstones all went down into the merge).
//!
//! When the cascade stops at level j, the levels L(j-1)..L1 are rebuilt from the external
//! fences of the level below (Property 1, App. C.2: they hold only external fences) and the
//! head tree is rebuilt with the fences of the new L1 (§3.3: "the merge process generates
//! i + 1 new sorted runs"). The old runs are freed by the caller; nothing is published
//! before the job completes, so searches keep using the old levels meanwhile (§3.4).

use super::run::{write_fence_run, Run, RunReader, RunWriter};
use crate::durable::background::JobIo;
use crate::error::Result;
use crate::io::{Extent, PageId};
use crate::kit::sorted::entry::{Entry, Kind, Layout};
use crate::kit::sorted::job::Resumable;
use crate::kit::sorted::tombs::Tombs;
use crate::kit::sorted::tune::Retune;

/// Sizes the job needs.
#[derive(Debug, Clone, Copy)]
pub struct Params {
    /// The pages' layout, and f, the entries a page holds.
    pub lay: Layout,
    /// Pages per multi-page request.
    pub io_unit: u64,
    /// Size ratio k.
    pub k: u64,
    /// |L0| in entries.
    pub cap0: u64,
}

impl Params {
    /// The shallowest level (1-based) whose capacity is above `stored` entries: where a
    /// run holding every entry of the tree goes.
    pub fn depth_for(&self, stored: u64) -> usize {
        let mut depth = 1;
        while stored >= self.level_capacity(depth) {
            depth += 1;
        }
        depth
    }

    /// Capacity of level `i` (1-based): k^i·|L0| (§3.2).
    pub fn level_capacity(&self, i: usize) -> u64 {
        let mut c = self.cap0;
        for _ in 0..i {
            c = c.saturating_mul(self.k);
        }
        c
    }
}

/// Input entries a merge of `incoming` entries into level `from` (1-based) of `levels`
/// will process, following the cascade as it would go without cancellations (an upper
/// bound), internal fences included.
fn estimate(p: &Params, mut incoming: u64, levels: &[Run], from: usize) -> u64 {
    let mut work = 0u64;
    for i in from.. {
        let here = levels.get(i - 1).map_or(0, |r| r.entries);
        let out = incoming + here;
        work = work.saturating_add(out);
        let stored = out + out.div_ceil(p.lay.cap() as u64 - 1) + 1;
        // The lowest level moves down unchanged when it overflows (no copy).
        if stored < p.level_capacity(i) || levels.get(i).is_none() {
            break;
        }
        incoming = out;
    }
    work
}

enum Upper {
    /// The index entries of the (frozen) head tree.
    Head { entries: Vec<Entry>, pos: usize },
    /// A level just written by this job that reached its capacity.
    Run { reader: RunReader, temp: Run },
}

/// A merge in progress.
pub struct MergeJob {
    levels: Vec<Run>,
    /// The levels' range tombstones when the job started (parallel to `levels`).
    tombs: Vec<Tombs>,
    upper: Upper,
    /// The upper input's range tombstones: they delete the lower input's index entries.
    upper_tombs: Tombs,
    lower: Option<RunReader>,
    /// Output level (1-based).
    level: usize,
    writer: Option<RunWriter>,
    pub pages_read: u64,
    pub pages_written: u64,
    /// Estimated entries still to process (for the deamortized step size).
    pub work: u64,
    /// Re-choose `k` when the cascade overflows the lowest level ([`crate::kit::sorted::tune`]).
    retune: Option<Retune>,
    /// The index entries [`MergeJob::merge_buffered`] has merged and not yet written (at
    /// most [`MERGED_BATCH`]).
    merged: Vec<Entry>,
    /// Whether [`MergeJob::step`] takes the batched path; only tests, which compare it
    /// with the entry-at-a-time one, turn it off.
    batched: bool,
}

/// Index entries [`MergeJob::merge_buffered`] merges before it writes them, a page run at
/// a time.
const MERGED_BATCH: usize = 512;

/// The result of a completed merge.
pub struct Outcome {
    /// The new levels L1..
    pub levels: Vec<Run>,
    /// External fences of the new L1, for the new head tree.
    pub head_fences: Vec<(u64, PageId)>,
    /// Old runs replaced by the merge (to free).
    pub replaced: Vec<Run>,
    /// The new levels' range tombstones (parallel to `levels`).
    pub tombs: Vec<Tombs>,
    /// The size ratio the new levels are shaped for: the job's, or the one re-chosen when
    /// the cascade overflowed the lowest level ([`crate::kit::sorted::tune`]).
    pub k: u64,
    /// Pages the job read and wrote.
    pub pages_read: u64,
    pub pages_written: u64,
}

impl Resumable for MergeJob {
    type Params = Params;
    type Outcome = Outcome;

    /// Process up to `units` input entries; `Some` when the whole merge is complete.
    fn step(&mut self, io: &mut dyn JobIo, p: &Params, units: u64) -> Result<Option<Outcome>> {
        let mut done = 0u64;
        while done < units {
            let fast = if self.batched {
                self.merge_buffered(io, units - done)?
            } else {
                0
            };
            if fast > 0 {
                done += fast;
                self.work = self.work.saturating_sub(fast);
                continue;
            }
            let u = self.upper_peek(io, p)?;
            let l = self.lower_peek(io, p)?;
            done += 1;
            self.work = self.work.saturating_sub(1);
            match (u, l) {
                (None, None) => {
                    if let Some(out) = self.finish_level(io, p)? {
                        return Ok(Some(out));
                    }
                }
                (Some(u), None) => {
                    self.upper_advance();
                    self.emit(io, u)?;
                }
                (None, Some(l)) => {
                    let more = self.take_lower(io, l, None, units - done + 1)?;
                    done += more;
                    self.work = self.work.saturating_sub(more);
                }
                (Some(u), Some(l)) => {
                    if l.pos() < u.pos() {
                        let more = self.take_lower(io, l, Some(u.pos()), units - done + 1)?;
                        done += more;
                        self.work = self.work.saturating_sub(more);
                    } else if u.pos() < l.pos() {
                        self.upper_advance();
                        self.emit(io, u)?;
                    } else {
                        // Same key, both index entries: the newer (upper) one wins; a filter
                        // meeting its phantom discards it (Algorithm 3, lines 7-8).
                        self.upper_advance();
                        self.lower.as_mut().map(RunReader::advance);
                        self.emit(io, u)?;
                    }
                }
            }
        }
        Ok(None)
    }

    /// Bytes held: the frozen head tree's index entries and the page fences collected.
    fn memory_bytes(&self) -> u64 {
        let upper = match &self.upper {
            Upper::Head { entries, .. } => entries.capacity() * 24,
            Upper::Run { .. } => 0,
        };
        let fences = self.writer.as_ref().map_or(0, |w| w.fences.capacity() * 16);
        let merged = self.merged.capacity() * std::mem::size_of::<Entry>();
        let tombs: u64 = self.tombs.iter().map(Tombs::memory_bytes).sum();
        (upper + fences + merged) as u64 + tombs + self.upper_tombs.memory_bytes()
    }

    /// Extents this job holds that no manifest refers to (freed if the job is abandoned).
    fn owned(&self) -> Vec<Extent> {
        let mut v = Vec::new();
        if let Upper::Run { temp, .. } = &self.upper {
            v.push(temp.extent());
        }
        if let Some(w) = &self.writer {
            v.push(w.extent());
        }
        v
    }

    fn work(&self) -> u64 {
        self.work
    }
}

/// Whether a merge drops `e`, an entry of its lower input L(i): an internal fence (rebuilt
/// for the new pages, Algorithm 3 lines 5-6), a filter at the last level (nothing below it
/// to cancel), an index entry under a range tombstone of the upper, newer input. External
/// fences stay (L(i+1) is unchanged).
#[inline]
fn drops_lower(e: &Entry, last: bool, upper_tombs: &Tombs) -> bool {
    match e.kind {
        Kind::Internal => true,
        Kind::External => false,
        Kind::Filter if last => true,
        _ => !upper_tombs.is_empty() && upper_tombs.covers(e.key),
    }
}

impl MergeJob {
    /// Start merging the head tree's index entries `head` and its range tombstones
    /// `head_tombs` into `levels` (whose tombstones are `tombs`); `retune`: re-choose `k`
    /// if the cascade overflows the lowest level.
    pub fn start(
        io: &mut dyn JobIo,
        p: &Params,
        head: Vec<Entry>,
        head_tombs: Tombs,
        levels: Vec<Run>,
        tombs: Vec<Tombs>,
        retune: Option<Retune>,
    ) -> Result<MergeJob> {
        let work = estimate(p, head.len() as u64, &levels, 1);
        let max = head.len() as u64 + levels.first().map_or(0, |r| r.entries);
        let writer = RunWriter::new(io, p.lay, p.io_unit, max)?;
        let lower = levels.first().copied().map(RunReader::new);
        Ok(MergeJob {
            upper: Upper::Head {
                entries: head,
                pos: 0,
            },
            lower,
            level: 1,
            writer: Some(writer),
            levels,
            tombs,
            upper_tombs: head_tombs,
            pages_read: 0,
            pages_written: 0,
            work,
            retune,
            merged: Vec::new(),
            batched: true,
        })
    }

    fn is_last(&self) -> bool {
        self.levels.get(self.level).is_none()
    }

    fn upper_peek(&mut self, io: &mut dyn JobIo, p: &Params) -> Result<Option<Entry>> {
        match &mut self.upper {
            Upper::Head { entries, pos } => Ok(entries.get(*pos).copied()),
            Upper::Run { reader, .. } => loop {
                match reader.peek(io, p.lay, p.io_unit)? {
                    // Algorithm 3, lines 3-4: the fences of L(i-1) are not carried over.
                    Some(e) if e.is_fence() => reader.advance(),
                    other => return Ok(other),
                }
            },
        }
    }

    fn upper_advance(&mut self) {
        match &mut self.upper {
            Upper::Head { pos, .. } => *pos += 1,
            Upper::Run { reader, .. } => reader.advance(),
        }
    }

    fn lower_peek(&mut self, io: &mut dyn JobIo, p: &Params) -> Result<Option<Entry>> {
        let Some(r) = &mut self.lower else {
            return Ok(None);
        };
        loop {
            match r.peek(io, p.lay, p.io_unit)? {
                // Lines 5-6: internal fences are rebuilt for the new pages.
                Some(e) if e.kind == Kind::Internal => r.advance(),
                // An index entry under a range tombstone of the upper (newer) input.
                Some(e)
                    if !e.is_fence()
                        && !self.upper_tombs.is_empty()
                        && self.upper_tombs.covers(e.key) =>
                {
                    r.advance()
                }
                other => return Ok(other),
            }
        }
    }

    fn emit(&mut self, io: &mut dyn JobIo, e: Entry) -> Result<()> {
        if e.kind == Kind::Filter && self.is_last() {
            return Ok(());
        }
        match &mut self.writer {
            Some(w) => w.push(io, e),
            None => Ok(()),
        }
    }

    /// Emit the lower input's decoded entries that sort before `bound` (all of them for
    /// `None`), at most `max`, filtered as [`MergeJob::lower_peek`] and
    /// [`MergeJob::emit`] filter: the common step of a merge (the lower level is about k
    /// times the upper one) without a peek and a match per entry. Returns the entries
    /// taken; at least one when `lower_peek` has just returned an entry before `bound`.
    fn copy_lower(
        &mut self,
        io: &mut dyn JobIo,
        bound: Option<(u64, u8)>,
        max: u64,
    ) -> Result<u64> {
        let last = self.is_last();
        let MergeJob {
            lower,
            writer,
            upper_tombs,
            ..
        } = self;
        let Some(r) = lower.as_mut() else {
            return Ok(0);
        };
        let buf = r.buffered();
        let mut n = 0usize;
        // Kept entries (index entries and external fences) are written a run at a time:
        // those from `run` to `n`.
        let mut run = 0usize;
        while let Some(e) = buf.get(n) {
            if n as u64 >= max || bound.is_some_and(|b| e.pos() >= b) {
                break;
            }
            if !drops_lower(e, last, upper_tombs) {
                n += 1;
                continue;
            }
            if let Some(w) = writer.as_mut() {
                w.push_run(io, &buf[run..n])?;
            }
            n += 1;
            run = n;
        }
        if let Some(w) = writer.as_mut() {
            w.push_run(io, &buf[run..n])?;
        }
        r.consume(n);
        Ok(n as u64)
    }

    /// Take `l`, the lower input's next entry (sorting before `bound`), and the decoded
    /// entries after it that also do, up to the step's `left` units; returns the units
    /// used beyond the first.
    fn take_lower(
        &mut self,
        io: &mut dyn JobIo,
        l: Entry,
        bound: Option<(u64, u8)>,
        left: u64,
    ) -> Result<u64> {
        let n = self.copy_lower(io, bound, left)?;
        if n == 0 {
            self.lower.as_mut().map(RunReader::advance);
            self.emit(io, l)?;
            return Ok(0);
        }
        Ok(n - 1)
    }

    /// Merge the entries both inputs have decoded (up to `max` of them), in one pass over
    /// the two slices, with the rules of [`MergeJob::step`], and write the kept entries a
    /// page run at a time: the common step of a merge, without a peek, a match and a
    /// packer call per entry. Stops when either input's decoded entries run out (the next
    /// request is [`MergeJob::step`]'s to start). Returns the input entries taken.
    fn merge_buffered(&mut self, io: &mut dyn JobIo, max: u64) -> Result<u64> {
        let last = self.is_last();
        let MergeJob {
            upper,
            lower,
            writer,
            upper_tombs,
            merged,
            ..
        } = self;
        let (Some(r), Some(w)) = (lower.as_mut(), writer.as_mut()) else {
            return Ok(0);
        };
        let us = match upper {
            Upper::Head { entries, pos } => entries.get(*pos..).unwrap_or(&[]),
            Upper::Run { reader, .. } => reader.buffered(),
        };
        let ls = r.buffered();
        let max = usize::try_from(max).unwrap_or(usize::MAX);
        let (mut i, mut j) = (0usize, 0usize);
        merged.clear();
        while i + j < max {
            let (Some(u), Some(l)) = (us.get(i), ls.get(j)) else {
                break;
            };
            if u.is_fence() {
                // Algorithm 3, lines 3-4: the fences of L(i-1) are not carried over.
                i += 1;
            } else if l.kind == Kind::Internal {
                // Lines 5-6: internal fences are rebuilt for the new pages.
                j += 1;
            } else if l.pos() < u.pos() {
                j += 1;
                if !drops_lower(l, last, upper_tombs) {
                    merged.push(*l);
                }
            } else {
                // Same key: the newer (upper) entry wins (lines 7-8).
                i += 1;
                j += usize::from(l.key == u.key);
                if !(u.kind == Kind::Filter && last) {
                    merged.push(*u);
                }
            }
            if merged.len() >= MERGED_BATCH {
                w.push_run(io, merged)?;
                merged.clear();
            }
        }
        w.push_run(io, merged)?;
        merged.clear();
        match upper {
            Upper::Head { pos, .. } => *pos += i,
            Upper::Run { reader, .. } => reader.consume(i),
        }
        r.consume(j);
        Ok((i + j) as u64)
    }

    /// The output level is complete: cascade or finish.
    fn finish_level(&mut self, io: &mut dyn JobIo, p: &Params) -> Result<Option<Outcome>> {
        let Some(w) = self.writer.take() else {
            return Ok(None);
        };
        self.pages_written += w.pages();
        self.pages_read += self.lower.as_ref().map_or(0, |r| r.pages_read());
        let (run, fences) = w.finish(io)?;
        if let Upper::Run { reader, temp } = &self.upper {
            self.pages_read += reader.pages_read();
            // The intermediate L'(i-1) is consumed; it was never published.
            io.free_extent(temp.extent());
        }
        let i = self.level;
        // L'(i)'s tombstones: both inputs', for the levels below; none at the last level.
        let mut run_tombs = std::mem::take(&mut self.upper_tombs);
        if self.is_last() {
            run_tombs = Tombs::new();
        } else if let Some(t) = self.tombs.get(i - 1) {
            run_tombs.union(t);
        }
        let mut k = p.k;
        let mut depth = i;
        if let Some(run) = run {
            if run.entries >= p.level_capacity(i) && !self.is_last() {
                // L'(i) reached its capacity: Merge(L'(i), L(i+1)).
                self.work = self.work.max(estimate(p, run.entries, &self.levels, i + 1));
                self.level = i + 1;
                let lower = self.levels.get(i).copied();
                let max = run.entries + lower.map_or(0, |r| r.entries);
                self.writer = Some(RunWriter::new(io, p.lay, p.io_unit, max)?);
                self.lower = lower.map(RunReader::new);
                self.upper = Upper::Run {
                    reader: RunReader::new(run),
                    temp: run,
                };
                self.upper_tombs = run_tombs;
                return Ok(None);
            }
            if run.entries >= p.level_capacity(i) {
                // The lowest level overflowed, and L'(i) holds every entry of the tree.
                // Merge(L'(i), L(i+1)) with no L(i+1) would copy it unchanged (it has no
                // filters and no external fences), so it moves down as it is, to the
                // level that holds it under k, or under the k the model re-chooses for
                // the tree's new size (`crate::kit::sorted::tune`).
                if let Some(r) = &self.retune {
                    k = r.k_for(run.entries, k);
                }
                depth = Params { k, ..*p }.depth_for(run.entries);
            }
        }
        // The cascade stops at level i (placed at `depth`): rebuild the levels above it
        // from external fences.
        let mut new: Vec<Option<Run>> = vec![None; depth];
        new[depth - 1] = run;
        let mut fences = fences;
        for lvl in (1..depth).rev() {
            let (r, f) = write_fence_run(io, p.lay, p.io_unit, &fences)?;
            self.pages_written += r.map_or(0, |r| r.pages);
            new[lvl - 1] = r;
            fences = f;
        }
        let replaced: Vec<Run> = self.levels.iter().take(i).copied().collect();
        // An empty level means every level below it is empty too.
        // (With `depth != i`, L'(i) was the last level: nothing below it to keep.)
        let levels: Vec<Run> = new
            .into_iter()
            .chain(self.levels.iter().skip(i).copied().map(Some))
            .map_while(|r| r)
            .collect();
        if levels.is_empty() {
            fences.clear();
        }
        // Levels above i hold fences only (no tombstones); i holds the merge's; the levels
        // below keep theirs.
        let mut tombs = vec![Tombs::new(); depth];
        tombs[depth - 1] = run_tombs;
        tombs.extend(self.tombs.iter().skip(i).cloned());
        tombs.truncate(levels.len());
        Ok(Some(Outcome {
            levels,
            head_fences: fences,
            replaced,
            tombs,
            k,
            pages_read: self.pages_read,
            pages_written: self.pages_written,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kit::sorted::job::Resumable;
    use proptest::prelude::*;

    use crate::durable::Pager;
    use crate::kit::sorted::testing::{pager, PAGE};

    /// Sorted, deduplicated entries: `kinds` 0 normal, 1 filter, 2 external fence.
    fn entries(items: &[(u64, u8, u64)]) -> Vec<Entry> {
        let mut es: Vec<Entry> = items
            .iter()
            .map(|&(k, r, v)| {
                let kind = match r {
                    0 => Kind::Normal,
                    1 => Kind::Filter,
                    _ => Kind::External,
                };
                Entry::new(k, v, kind)
            })
            .collect();
        es.sort_by_key(|e| e.pos());
        es.dedup_by_key(|e| e.pos());
        es
    }

    fn write_run(pager: &mut Pager, p: &Params, es: &[Entry]) -> Option<Run> {
        let mut w = RunWriter::new(pager, p.lay, p.io_unit, es.len() as u64).unwrap();
        for &e in es {
            w.push(pager, e).unwrap();
        }
        w.finish(pager).unwrap().0
    }

    /// What a finished merge left, with page numbers made relative to each run's start:
    /// every level's pages, decoded, and the head tree's fences.
    type Image = (Vec<(Run, Vec<Vec<Entry>>)>, Vec<u64>, Vec<Tombs>);

    #[allow(clippy::too_many_arguments)]
    fn merge(
        batched: bool,
        p: &Params,
        head: &[Entry],
        head_tombs: &Tombs,
        l1: &[Entry],
        l2: &[Entry],
        steps: &[u64],
    ) -> Image {
        let mut pager = pager();
        let levels: Vec<Run> = [l1, l2]
            .iter()
            .map_while(|es| write_run(&mut pager, p, es))
            .collect();
        let tombs = vec![Tombs::new(); levels.len()];
        let mut job = MergeJob::start(
            &mut pager,
            p,
            head.to_vec(),
            head_tombs.clone(),
            levels,
            tombs,
            None,
        )
        .unwrap();
        job.batched = batched;
        let out = (0..)
            .find_map(|i| job.step(&mut pager, p, steps[i % steps.len()]).unwrap())
            .unwrap();
        let levels = out
            .levels
            .iter()
            .map(|r| {
                let pages = super::super::run::read_pages(&pager, p.lay, r.start, r.pages).unwrap();
                (Run { start: 0, ..*r }, pages)
            })
            .collect();
        let fences = out.head_fences.iter().map(|f| f.0).collect();
        (levels, fences, out.tombs)
    }

    proptest! {
        /// The batched merge writes exactly the levels the entry-at-a-time merge writes:
        /// the same pages (fences, filters, tombstones and the cascade included), at any
        /// step sizes.
        #[test]
        fn the_batched_merge_writes_what_the_entry_at_a_time_merge_writes(
            head in proptest::collection::vec((0u64..3000, 0u8..2, any::<u64>()), 0..300),
            l1 in proptest::collection::vec((0u64..3000, 0u8..3, 0u64..1000), 0..600),
            l2 in proptest::collection::vec((0u64..3000, 0u8..2, any::<u64>()), 0..400),
            tomb in proptest::option::of((0u64..3000, 0u64..300)),
            cap0 in 20u64..400,
            packed in any::<bool>(),
            steps in proptest::collection::vec(1u64..200, 1..5),
        ) {
            let p = Params {
                lay: Layout::of(packed, PAGE),
                io_unit: 3,
                k: 3,
                cap0,
            };
            let head: Vec<Entry> = entries(&head).into_iter().filter(|e| !e.is_fence()).collect();
            let mut head_tombs = Tombs::new();
            if let Some((lo, len)) = tomb {
                head_tombs.add(lo, lo + len);
            }
            let (l1, l2) = (entries(&l1), entries(&l2));
            let want = merge(false, &p, &head, &head_tombs, &l1, &l2, &steps);
            let got = merge(true, &p, &head, &head_tombs, &l1, &l2, &steps);
            prop_assert_eq!(got, want);
        }
    }
}
