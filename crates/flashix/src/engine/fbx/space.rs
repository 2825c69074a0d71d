//! The FBX-tree's file space: segments written from start to end, live-page counts, and
//! the release of dead segments (module doc, Space).
//!
//! Every page the engine writes goes to the *head*: the next page of the current segment.
//! A segment is `segment_pages` contiguous pages from the extent allocator; when the head
//! segment is full the next one is taken (first fit: the lowest free segment, else the end
//! of the file). Within a segment pages are written in address order, so the device sees
//! one sequential stream that jumps once per segment.
//!
//! A page is *live* while something names it: a leaf's log list (the NTT's page counts),
//! an inner node's address, or the last checkpoint's NTT snapshot. A segment whose pages
//! are all dead (and that is not the head) is freed: its extent goes to the allocator's
//! pending list, reusable after the next checkpoint (shadow paging), and it is trimmed
//! right after that checkpoint.

use crate::durable::Pager;
use crate::error::{Error, Result};
use crate::io::{Extent, PageId};
use crate::page::DATA_FILE;
use std::collections::BTreeMap;

/// Segments, the head, and live pages per segment.
#[derive(Debug, Clone)]
pub(crate) struct Space {
    seg_pages: u64,
    /// Segment start -> live pages in it.
    segs: BTreeMap<PageId, u64>,
    /// The head: segment start and the offset of the next page to write.
    head: Option<(PageId, u64)>,
    /// Segments freed since the last checkpoint: trimmed after the next one.
    freed: Vec<Extent>,
    /// Segments taken since the space was opened.
    pub opened: u64,
    /// Segments freed since the space was opened.
    pub released: u64,
    /// A segment was taken and the file may be over its space limit: the engine runs
    /// its cleaner at the end of the operation.
    pub check_due: bool,
}

impl Space {
    /// An empty space of segments of `seg_pages` pages.
    pub fn new(seg_pages: u64) -> Space {
        Space {
            seg_pages,
            segs: BTreeMap::new(),
            head: None,
            freed: Vec::new(),
            opened: 0,
            released: 0,
            check_due: false,
        }
    }

    /// The space a checkpoint saved: its segments and head (live counts are rebuilt by
    /// [`Space::mark_live`]).
    pub fn restore(seg_pages: u64, segs: &[PageId], head: Option<(PageId, u64)>) -> Result<Space> {
        let mut s = Space::new(seg_pages);
        for &start in segs {
            if s.segs.insert(start, 0).is_some() {
                return Err(Error::corruption(
                    "MANIFEST",
                    None,
                    format!("FBX segment {start} listed twice"),
                ));
            }
        }
        if let Some((start, off)) = head {
            if !s.segs.contains_key(&start) || off > seg_pages {
                return Err(Error::corruption(
                    "MANIFEST",
                    None,
                    format!("FBX head ({start}, {off}) is not in a segment"),
                ));
            }
        }
        s.head = head;
        Ok(s)
    }

    /// The segments, for the manifest.
    pub fn segments(&self) -> Vec<PageId> {
        self.segs.keys().copied().collect()
    }

    /// The head, for the manifest.
    pub fn head(&self) -> Option<(PageId, u64)> {
        self.head
    }

    /// The segment holding `pid`.
    fn seg_of(&self, pid: PageId) -> Option<PageId> {
        self.segs
            .range(..=pid)
            .next_back()
            .filter(|(&s, _)| pid < s + self.seg_pages)
            .map(|(&s, _)| s)
    }

    /// Count a page named again at open (its segment must exist).
    pub fn mark_live(&mut self, pid: PageId) -> Result<()> {
        let s = self.seg_of(pid).ok_or_else(|| {
            Error::corruption(
                DATA_FILE,
                Some(pid),
                "page named by the NTT lies in no segment",
            )
        })?;
        *self.segs.entry(s).or_insert(0) += 1;
        Ok(())
    }

    /// The next page to write, at the head; takes a new segment when the head is full.
    /// The page counts as live.
    pub fn next_page(&mut self, pager: &mut Pager) -> Result<PageId> {
        let (start, off) = match self.head {
            Some((s, off)) if off < self.seg_pages => (s, off),
            full => {
                if let Some((old, _)) = full {
                    self.head = None;
                    self.free_if_dead(pager, old);
                }
                let e = pager.alloc_extent(self.seg_pages)?;
                self.segs.insert(e.start, 0);
                self.opened += 1;
                self.check_due = true;
                (e.start, 0)
            }
        };
        self.head = Some((start, off + 1));
        *self.segs.entry(start).or_insert(0) += 1;
        Ok(start + off)
    }

    /// A page nothing names any more.
    pub fn dead(&mut self, pager: &mut Pager, pid: PageId) {
        pager.discard(pid);
        if let Some(s) = self.seg_of(pid) {
            if let Some(n) = self.segs.get_mut(&s) {
                *n = n.saturating_sub(1);
            }
            self.free_if_dead(pager, s);
        }
    }

    /// Free every segment, other than the head, that no named page lies in (at open,
    /// once [`Space::mark_live`] has counted what the checkpoint names). A checkpoint's
    /// manifest lists the segment of the snapshot it replaces, whose pages die right after
    /// it (`Fbx::after_checkpoint`): reopened after a crash, such a segment holds nothing
    /// live, and left in the table it would never be freed (its pages never die again) and
    /// would be the cleaner's pick for ever, a segment of the file lost per crash.
    pub fn free_dead_segments(&mut self, pager: &mut Pager) {
        let dead: Vec<PageId> = self
            .segs
            .iter()
            .filter(|(_, &n)| n == 0)
            .map(|(&s, _)| s)
            .collect();
        for s in dead {
            self.free_if_dead(pager, s);
        }
    }

    fn free_if_dead(&mut self, pager: &mut Pager, s: PageId) {
        let is_head = self.head.is_some_and(|(h, _)| h == s);
        if is_head || self.segs.get(&s) != Some(&0) {
            return;
        }
        self.segs.remove(&s);
        let e = Extent {
            start: s,
            len: self.seg_pages,
        };
        pager.free_extent(e);
        self.freed.push(e);
        self.released += 1;
    }

    /// Segments freed before the checkpoint just taken: no durable state names their
    /// pages now, so they may be trimmed.
    pub fn take_freed(&mut self) -> Vec<Extent> {
        std::mem::take(&mut self.freed)
    }

    /// Pages of the segments freed since the last checkpoint: not reusable before the next
    /// one, so the file grows past them until it is taken (`Fbx::checkpoint_due`).
    pub fn freed_pages(&self) -> u64 {
        self.freed.iter().map(|e| e.len).sum()
    }

    /// Pages of all segments (the file's footprint in the allocator).
    pub fn file_pages(&self) -> u64 {
        self.segs.len() as u64 * self.seg_pages
    }

    /// Live pages.
    pub fn live_pages(&self) -> u64 {
        self.segs.values().sum()
    }

    /// Segments held.
    pub fn segment_count(&self) -> usize {
        self.segs.len()
    }

    /// The segment with the fewest live pages, other than the head and the segments of
    /// `pinned` (pages the cleaner cannot move), and its live count.
    pub fn emptiest(&self, pinned: &[PageId]) -> Option<(PageId, u64)> {
        let head = self.head.map(|(h, _)| h);
        let pinned: Vec<PageId> = pinned.iter().filter_map(|&p| self.seg_of(p)).collect();
        self.segs
            .iter()
            .filter(|(&s, _)| Some(s) != head && !pinned.contains(&s))
            .min_by_key(|(&s, &n)| (n, s))
            .map(|(&s, &n)| (s, n))
    }

    /// Segment size in pages.
    pub fn seg_pages(&self) -> u64 {
        self.seg_pages
    }

    /// Live pages per segment (integrity checks).
    pub fn live_by_segment(&self) -> &BTreeMap<PageId, u64> {
        &self.segs
    }

    /// Bytes held.
    pub fn memory_bytes(&self) -> u64 {
        48 * self.segs.len() as u64 + 16 * self.freed.capacity() as u64
    }
}
