//! The extent allocator (docs/design.md, Layers): contiguous page runs (sorted runs, components,
//! ranges) and single pages (tree nodes) on one [`super::Device`].
//!
//! Shadow-paging rule: an extent freed now goes to a *pending* list and is handed out again
//! only after [`ExtentAllocator::commit`], which the owner calls once a manifest that no
//! longer refers to the extent is durable. So a crash never finds live data overwritten.
//! The state saved with a manifest ([`AllocState`]) counts pending extents as free, because
//! that manifest is exactly the one that stops referring to them.
//!
//! A device of fixed size ([`super::Device::capacity_pages`]) sets a limit
//! ([`ExtentAllocator::set_limit`]): an allocation that would reach past it is
//! [`Error::no_space`], the error a full disk gives, and changes nothing. So a full device
//! is met at allocation, before the operation that needs the pages writes any of them, and
//! at the same operation when recovery replays the log (the allocator's decisions depend
//! only on the operations and the manifest, not on which pages the buffer pool wrote).

use super::PageId;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A run of `len` pages starting at `start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Extent {
    /// The first page.
    pub start: PageId,
    /// Pages in the run.
    pub len: u64,
}

impl Extent {
    /// One past the last page.
    pub fn end(&self) -> PageId {
        self.start + self.len
    }
}

/// The allocator's durable state, saved in the manifest.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllocState {
    /// Pages at or above this were never handed out.
    pub high_water: PageId,
    /// Free extents, sorted and coalesced.
    pub free: Vec<Extent>,
}

/// First-fit extent allocator over a page space that grows at its end.
#[derive(Debug, Clone, Default)]
pub struct ExtentAllocator {
    high_water: PageId,
    /// start -> len, coalesced.
    free: BTreeMap<PageId, u64>,
    /// Freed since the last commit; not reusable yet.
    pending: Vec<Extent>,
    /// Pages at or past this are never handed out (the device's capacity).
    limit: Option<PageId>,
}

impl ExtentAllocator {
    /// An allocator whose first page is `first` (pages below it are reserved).
    pub fn new(first: PageId) -> Self {
        ExtentAllocator {
            high_water: first,
            ..Self::default()
        }
    }

    /// Rebuild from a manifest's state, checking it.
    pub fn from_state(state: &AllocState) -> Result<Self> {
        let mut a = ExtentAllocator {
            high_water: state.high_water,
            ..Self::default()
        };
        let mut prev_end = 0;
        for e in &state.free {
            if e.len == 0 || e.start < prev_end || e.end() > state.high_water {
                return Err(Error::corruption(
                    "MANIFEST",
                    None,
                    format!("allocator free list is inconsistent at extent {e:?}"),
                ));
            }
            prev_end = e.end();
            a.insert_free(*e);
        }
        Ok(a)
    }

    /// The state to save with the next manifest (pending extents count as free).
    pub fn state(&self) -> AllocState {
        let mut all = self.clone();
        all.commit();
        AllocState {
            high_water: all.high_water,
            free: all
                .free
                .iter()
                .map(|(&start, &len)| Extent { start, len })
                .collect(),
        }
    }

    /// Make pending frees reusable: call after the manifest that dropped them is durable.
    pub fn commit(&mut self) {
        for e in std::mem::take(&mut self.pending) {
            self.insert_free(e);
        }
    }

    /// Whether the device has a fixed size ([`ExtentAllocator::set_limit`]).
    pub fn is_limited(&self) -> bool {
        self.limit.is_some()
    }

    /// Hand out no page at or past `limit` (`None`: no limit).
    pub fn set_limit(&mut self, limit: Option<PageId>) {
        self.limit = limit;
    }

    /// A run of `len` contiguous pages; [`Error::no_space`] when it would reach past the
    /// limit (nothing changes then).
    pub fn alloc(&mut self, len: u64) -> Result<Extent> {
        debug_assert!(len > 0);
        let found = self
            .free
            .iter()
            .find(|(_, &l)| l >= len)
            .map(|(&s, &l)| (s, l));
        if let Some((start, have)) = found {
            self.free.remove(&start);
            if have > len {
                self.free.insert(start + len, have - len);
            }
            return Ok(Extent { start, len });
        }
        // Grow at the end; a free extent touching the end is absorbed first.
        let mut start = self.high_water;
        let mut absorbed = None;
        if let Some((&s, &l)) = self.free.iter().next_back() {
            if s + l == self.high_water {
                absorbed = Some(s);
                start = s;
            }
        }
        let end = start.checked_add(len);
        // The page envelope keeps 48 bits of a page id (MAX_PAGES).
        let limit = self
            .limit
            .map_or(super::MAX_PAGES, |l| l.min(super::MAX_PAGES));
        if end.map_or(true, |e| e > limit) {
            return Err(Error::no_space(format!(
                "allocating {len} pages at page {start}: the device holds {limit} pages"
            )));
        }
        if let Some(s) = absorbed {
            self.free.remove(&s);
        }
        self.high_water = start + len;
        Ok(Extent { start, len })
    }

    /// One page.
    pub fn alloc_page(&mut self) -> Result<PageId> {
        Ok(self.alloc(1)?.start)
    }

    /// Free an extent; it becomes reusable after the next [`commit`](Self::commit).
    pub fn free(&mut self, e: Extent) {
        if e.len > 0 {
            self.pending.push(e);
        }
    }

    /// Take back an extent [`ExtentAllocator::alloc`] handed out that nothing refers to and
    /// nothing wrote (a shared writer's page reserved for a split that turned out not to
    /// be needed): it is free at once, without waiting for a commit, since no manifest,
    /// durable or to come, and no page on the device names it; an extent at the end lowers
    /// the end again. Allocations from the state it leaves are those from the state before
    /// the `alloc`, when no other allocation came between.
    pub(crate) fn unalloc(&mut self, e: Extent) {
        if e.len == 0 {
            return;
        }
        if e.end() == self.high_water {
            self.high_water = e.start;
        } else {
            self.insert_free(e);
        }
    }

    /// Pages ever handed out (the device's used length).
    pub fn high_water(&self) -> PageId {
        self.high_water
    }

    /// Pages freed since the last [`ExtentAllocator::commit`] (not yet reusable).
    pub fn pending_pages(&self) -> u64 {
        self.pending.iter().map(|e| e.len).sum()
    }

    /// Free pages, committed and pending.
    pub fn free_pages(&self) -> u64 {
        self.free.values().sum::<u64>() + self.pending.iter().map(|e| e.len).sum::<u64>()
    }

    /// True if `page` is free or pending (integrity checks).
    pub fn is_free(&self, page: PageId) -> bool {
        let in_free = self
            .free
            .range(..=page)
            .next_back()
            .is_some_and(|(&s, &l)| page < s + l);
        in_free
            || self
                .pending
                .iter()
                .any(|e| e.start <= page && page < e.end())
    }

    fn insert_free(&mut self, e: Extent) {
        let mut start = e.start;
        let mut len = e.len;
        if let Some((&ps, &pl)) = self.free.range(..start).next_back() {
            if ps + pl == start {
                self.free.remove(&ps);
                start = ps;
                len += pl;
            }
        }
        if let Some(&nl) = self.free.get(&(start + len)) {
            self.free.remove(&(start + len));
            len += nl;
        }
        self.free.insert(start, len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_extent_taken_back_is_free_at_once_as_before_its_alloc() {
        let mut a = ExtentAllocator::new(1);
        let x = a.alloc(6).unwrap();
        a.free(Extent { start: 2, len: 2 });
        a.commit();
        // From the free list, and from the end.
        for len in [1, 2, 3] {
            let before = a.state();
            let e = a.alloc(len).unwrap();
            a.unalloc(e);
            assert_eq!(a.state(), before, "alloc({len}) taken back");
            assert_eq!(a.alloc(len).unwrap(), e, "alloc({len}) again");
            a.unalloc(e);
        }
        assert_eq!(a.pending_pages(), 0);
        assert!(!a.is_free(x.start));
    }

    #[test]
    fn freed_extents_wait_for_commit() {
        let mut a = ExtentAllocator::new(1);
        let x = a.alloc(4).unwrap();
        assert_eq!(x, Extent { start: 1, len: 4 });
        a.free(x);
        assert_eq!(
            a.alloc(2).unwrap().start,
            5,
            "pending extent must not be reused"
        );
        a.commit();
        assert_eq!(a.alloc(2).unwrap().start, 1);
        assert_eq!(a.alloc(2).unwrap().start, 3);
    }

    #[test]
    fn state_round_trips_and_coalesces() {
        let mut a = ExtentAllocator::new(0);
        let e1 = a.alloc(3).unwrap();
        let e2 = a.alloc(3).unwrap();
        let _e3 = a.alloc(1).unwrap();
        a.free(e1);
        a.free(e2);
        let s = a.state();
        assert_eq!(s.free, vec![Extent { start: 0, len: 6 }]);
        let mut b = ExtentAllocator::from_state(&s).unwrap();
        assert_eq!(b.alloc(6).unwrap().start, 0);
        assert!(!b.is_free(0));
    }

    #[test]
    fn tail_free_extent_is_absorbed_when_growing() {
        let mut a = ExtentAllocator::new(0);
        let _ = a.alloc(2).unwrap();
        let t = a.alloc(2).unwrap();
        a.free(t);
        a.commit();
        let big = a.alloc(5).unwrap();
        assert_eq!(big, Extent { start: 2, len: 5 });
        assert_eq!(a.high_water(), 7);
    }

    #[test]
    fn inconsistent_state_is_corruption() {
        let s = AllocState {
            high_water: 4,
            free: vec![Extent { start: 2, len: 5 }],
        };
        assert!(matches!(
            ExtentAllocator::from_state(&s),
            Err(Error::Corruption { .. })
        ));
    }

    #[test]
    fn a_limit_makes_growth_past_it_no_space_and_changes_nothing() {
        let mut a = ExtentAllocator::new(0);
        a.set_limit(Some(10));
        let x = a.alloc(6).unwrap();
        let e = a.alloc(5).unwrap_err();
        assert!(e.is_no_space(), "{e}");
        assert_eq!(a.high_water(), 6);
        assert_eq!(
            a.alloc(4).unwrap().start,
            6,
            "the free space below the limit is used"
        );
        assert!(a.alloc_page().unwrap_err().is_no_space());
        // Freed and committed pages below the limit are reused.
        a.free(x);
        a.commit();
        assert_eq!(a.alloc(6).unwrap(), x);
        // No limit: u64 overflow is no space too, never a wrap.
        let mut b = ExtentAllocator::new(u64::MAX - 1);
        assert!(b.alloc(2).unwrap_err().is_no_space());
    }
}
