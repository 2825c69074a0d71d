//! Writes beside other threads under node latches (Lehman and Yao, "Efficient locking for
//! concurrent operations on B-trees", 1981, §§4-5, with the frame latches of the buffer
//! pool as the node locks): a change of one node at a level found by moving right
//! ([`BTree::at_node_shared`]), a split that writes its new right node before the old node
//! links to it, the separator's insertion one level up after the split node's latch is
//! released ([`BTree::insert_separator_shared`]), and a root split that publishes the new
//! root and height at once ([`Top`]).
//!
//! Lock order: a thread holds at most one node's latch, besides the frames of the pages it
//! creates while it holds it (no other thread knows them yet), so no two threads wait for
//! each other's latches. A split's new pages (the right node, and the new root at the
//! root) are allocated and their frames made with no latch held
//! (`crate::durable::Pager::reserve_page_shared`), since making a frame may write dirty
//! pages back: a writer that finds under a node's latch that it must split and has fewer
//! pages in hand lets go of the latch, reserves them, and looks again, from the same node
//! (moving right) for a leaf and from a new descent for a parent. Under the latch it only
//! sets their bytes, so no reader of the node waits for that I/O. A page it reserved and
//! did not use (the node had room, or split by another thread, when it looked again) is
//! given back unlinked and unwritten: its frame leaves the pool and the allocator takes it
//! back at once. With too few frames for every thread's pins at once a split waits for
//! the exclusive lock instead ([`SHARED_SPLIT_FRAMES`]).
//!
//! Why a separator may go up after the latch is released: from the moment the old node
//! links to its new right node, every key of the new node is found by moving right from
//! the old one (the old node's high key is the separator), so the tree is a B-link tree
//! whose parents lack a separator; the separator, once in the parent, only shortens the
//! way. The parent is found by descending again for the separator to the level above
//! (the split node's range holds no separator of its parent, so the node of that level
//! whose range holds the separator is the one that points to the split node, or a node to
//! its right after the parent split too). A reader never sees a node half written: the
//! new node is written in full before the latch of the old one is released, and readers
//! look under the latches.
//!
//! The tree is a B+-tree whenever no shared write is in progress (every split's
//! separators are in place before its insert returns): that is all the exclusive paths —
//! merges, bulk loads, checkpoints, the checks — see, since they run alone.

use super::{level_error, walk_to, BTree};
use crate::durable::{LogicalOp, NewPage};
use crate::error::{Error, Result};
use crate::io::PageId;
use crate::kit::bnode::node::{self, Side};
use crate::page::DATA_FILE;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};

/// Frames the pool needs at least for splits beside other threads: a split pins its node,
/// the new right node and, at the root, the new root, so this many frames leave room for
/// every thread's pins and the readers'. A smaller pool splits under the exclusive lock.
pub(super) const SHARED_SPLIT_FRAMES: u64 = 64;

/// Bits of [`Top`] that hold the height.
const HEIGHT_BITS: u32 = 8;

/// The root and the height (levels, leaves included) in one word, so that any thread
/// reads the two of one moment: a root split publishes both at once, under the old root's
/// latch. A root page id must fit in the word's other bits (`Top::new`).
pub(super) struct Top(AtomicU64);

impl Top {
    /// `None` when the pair does not fit (a root page beyond `2^56` pages, a height of 256
    /// levels or more).
    pub(super) fn new(root: PageId, height: u32) -> Option<Top> {
        Top::pack(root, height).map(|w| Top(AtomicU64::new(w)))
    }

    fn pack(root: PageId, height: u32) -> Option<u64> {
        let fits = root < 1 << (64 - HEIGHT_BITS) && height < 1 << HEIGHT_BITS;
        fits.then_some(root << HEIGHT_BITS | u64::from(height))
    }

    /// The root and the height.
    pub(super) fn load(&self) -> (PageId, u32) {
        let w = self.0.load(Ordering::Acquire);
        (w >> HEIGHT_BITS, (w & ((1 << HEIGHT_BITS) - 1)) as u32)
    }

    /// Publish a new root and height.
    pub(super) fn store(&self, root: PageId, height: u32) -> Result<()> {
        let w = Top::pack(root, height).ok_or_else(|| {
            Error::corruption(
                DATA_FILE,
                Some(root),
                format!("B+-tree root {root} at height {height} is out of range"),
            )
        })?;
        self.0.store(w, Ordering::Release);
        Ok(())
    }
}

/// What a shared insert does to its leaf.
pub(super) enum LeafPlan {
    /// Replace the value at this slot.
    Replace(usize),
    /// Insert the entry at this slot (the leaf has room).
    Add(usize),
    /// Insert the entry at this slot and split the full leaf.
    Split(usize),
}

/// What a shared insert did to its leaf.
pub(super) enum LeafDone {
    Replaced,
    Added,
    /// The leaf split: `sep` and the new right leaf go up to the parent, unless the leaf
    /// was the root (`grew`: the new root holds them).
    Split {
        sep: u64,
        right: PageId,
        grew: bool,
    },
}

impl BTree {
    /// The pages a split of node `pid` makes, under its latch: the new right node, and
    /// the new root when `pid` is the root (which stays so while its latch is held: only
    /// that latch's holder changes the root beside other threads, and a node that is not
    /// the root never becomes it).
    pub(super) fn split_pages(&self, pid: PageId) -> usize {
        1 + usize::from(self.top.load().0 == pid)
    }

    /// Whether a split may run beside other threads ([`SHARED_SPLIT_FRAMES`]).
    pub(super) fn splits_shared(&self) -> bool {
        self.pager.pool_frames() >= SHARED_SPLIT_FRAMES
    }

    /// Change the node at `level` whose range holds `k`, from `pid` or a node to its right
    /// (moving right under the latches, as a reader's `at_key` does), logging `op` (if
    /// any) with the change under the node's latch (`crate::durable::Pager::write_shared`).
    /// `decide` looks at the node (its page id and bytes) and says what to change, or
    /// `None` to change nothing; `change` makes it. `None` when `decide` said so.
    pub(super) fn at_node_shared<P, T>(
        &self,
        mut pid: PageId,
        k: u64,
        level: u32,
        op: Option<&LogicalOp>,
        decide: impl Fn(PageId, &[u8]) -> Option<P>,
        change: impl Fn(PageId, &mut [u8], P) -> T,
    ) -> Result<Option<T>> {
        let mut passed: Option<u64> = None;
        loop {
            let (right, wrong) = (Cell::new(None), Cell::new(None));
            let here = pid;
            #[cfg(test)]
            let moves_right = !self.broken_no_move_right;
            #[cfg(not(test))]
            let moves_right = true;
            let d = |b: &[u8]| {
                if !node::is_node(b) || node::level(b) != level {
                    wrong.set(Some(node::level(b)));
                    return None;
                }
                let side = node::side(b).filter(|_| moves_right);
                if let Some(s) = side.filter(|s| s.above(k)) {
                    right.set(Some(s));
                    return None;
                }
                decide(here, b)
            };
            let c = |b: &mut [u8], p: P| change(here, b, p);
            let r = match op {
                Some(op) => self.pager.write_shared(pid, op, d, c)?,
                None => self.pager.change_shared(pid, d, c)?,
            };
            if let Some(found) = wrong.get() {
                return Err(level_error(pid, found, level));
            }
            match (r, right.get()) {
                (Some(t), _) => return Ok(Some(t)),
                (None, Some(s)) if passed.is_some_and(|h| s.high <= h) => {
                    return Err(Error::corruption(
                        DATA_FILE,
                        Some(pid),
                        format!("right links: high key {} after {passed:?}", s.high),
                    ));
                }
                (None, Some(s)) => {
                    passed = Some(s.high);
                    pid = s.right;
                }
                (None, None) => return Ok(None),
            }
        }
    }

    /// Split the full leaf `pid` (its bytes `b`, under its latch) with `(k, v)` inserted
    /// at `slot`: the upper half goes to a new right leaf, written first, which takes over
    /// the leaf's place in its level; the leaf keeps the lower half and links to it.
    /// The new pages come from `pages`, reserved before the leaf's latch was taken
    /// ([`BTree::split_pages`]), so that no reader of the leaf waits for the I/O that
    /// making them may need.
    pub(super) fn split_leaf_shared(
        &self,
        pid: PageId,
        b: &mut [u8],
        slot: usize,
        (k, v): (u64, u64),
        pages: &mut Vec<NewPage<'_>>,
    ) -> Result<LeafDone> {
        let side = node::side(b).unwrap_or(Side::END);
        let mut es = node::entries(b);
        es.insert(slot, (k, v));
        let mid = es.len() / 2;
        let sep = es[mid].0;
        let init = |rb: &mut [u8]| node::init_blink(rb, 0, side.right, side, &es[mid..]);
        let right = match pages.pop() {
            Some(p) => p.fill(init),
            None => self.pager.alloc_page_shared(init)?,
        };
        node::init_blink(b, 0, right, Side::split(right, sep), &es[..mid]);
        let grew = self.grow_if_root(pid, 0, sep, right, pages)?;
        self.leaves.fetch_add(1, Ordering::Relaxed);
        self.counters.leaf_splits.fetch_add(1, Ordering::Relaxed);
        self.counters.shared_splits.fetch_add(1, Ordering::Relaxed);
        Ok(LeafDone::Split { sep, right, grew })
    }

    /// After the split of node `pid` at `level` into it and `right` at separator `sep`,
    /// under `pid`'s latch: if `pid` is the root, a new root above the two, published with
    /// the new height; true then. (Only the holder of the root's latch changes the root
    /// beside other threads, so the root read here stays the root until it lets go.)
    /// The new root is one of `pages` when the caller reserved one, else a page made now.
    fn grow_if_root(
        &self,
        pid: PageId,
        level: u32,
        sep: u64,
        right: PageId,
        pages: &mut Vec<NewPage<'_>>,
    ) -> Result<bool> {
        let (root, height) = self.top.load();
        if root != pid {
            return Ok(false);
        }
        if height != level + 1 {
            return Err(level_error(pid, level, height - 1));
        }
        let up = level + 1;
        let init = |b: &mut [u8]| node::init_blink(b, up, pid, Side::END, &[(sep, right)]);
        let new_root = match pages.pop() {
            Some(p) => p.fill(init),
            None => self.pager.alloc_page_shared(init)?,
        };
        self.top.store(new_root, height + 1)?;
        self.counters.root_splits.fetch_add(1, Ordering::Relaxed);
        Ok(true)
    }

    /// Insert separator `sep` with its right child `child` (split at `level - 1`) into the
    /// node of `level` whose range holds it, splitting full nodes up to the root, each
    /// level's separator going up after the latch of the node below is released (module
    /// doc).
    pub(super) fn insert_separator_shared(
        &self,
        mut sep: u64,
        mut child: PageId,
        mut level: u32,
    ) -> Result<()> {
        let cap = self.inner_cap;
        // Pages for a split, reserved with no latch held, as the leaf's split
        // (`BTree::insert_shared`): what one level does not use serves the next.
        let pages: RefCell<Vec<NewPage<'_>>> = RefCell::default();
        let want = Cell::new(0);
        loop {
            let (root, height) = self.top.load();
            let start = walk_to(&mut &self.pager, root, height, sep, level)?;
            // A separator the node holds already is corruption (below).
            let decide = |pid: PageId, b: &[u8]| match node::search(b, sep) {
                Ok(_) => None,
                Err(slot) if node::count(b) < cap => Some((slot, true)),
                Err(slot) => {
                    let need = self.split_pages(pid);
                    if pages.borrow().len() < need {
                        want.set(need);
                        return None;
                    }
                    Some((slot, false))
                }
            };
            let change = |pid: PageId, b: &mut [u8], (slot, room): (usize, bool)| {
                if room {
                    node::insert_at(b, slot, sep, child);
                    return Ok(None);
                }
                let side = node::side(b).unwrap_or(Side::END);
                let link = node::link(b);
                let mut es = node::entries(b);
                es.insert(slot, (sep, child));
                // The middle separator moves up; its child becomes the new node's leftmost.
                let m = es.len() / 2;
                let (up_key, up_child) = es[m];
                let init =
                    |nb: &mut [u8]| node::init_blink(nb, level, up_child, side, &es[m + 1..]);
                let mut reserved = pages.borrow_mut();
                let new = match reserved.pop() {
                    Some(p) => p.fill(init),
                    None => self.pager.alloc_page_shared(init)?,
                };
                node::init_blink(b, level, link, Side::split(new, up_key), &es[..m]);
                self.counters
                    .internal_splits
                    .fetch_add(1, Ordering::Relaxed);
                match self.grow_if_root(pid, level, up_key, new, &mut reserved)? {
                    true => Ok(None),
                    false => Ok(Some((up_key, new))),
                }
            };
            want.set(0);
            let done = self.at_node_shared(start, sep, level, None, decide, change)?;
            match done {
                Some(Ok(None)) => return Ok(()),
                Some(Ok(Some((up_key, new)))) => {
                    (sep, child, level) = (up_key, new, level + 1);
                }
                Some(Err(e)) => return Err(e),
                None if want.get() > 0 => {
                    while pages.borrow().len() < want.get() {
                        let page = self.pager.reserve_page_shared()?;
                        pages.borrow_mut().push(page);
                    }
                }
                None => {
                    return Err(Error::corruption(
                        DATA_FILE,
                        Some(start),
                        format!("separator {sep} going up to level {level} is there already"),
                    ))
                }
            }
        }
    }
}

/// Model checks of the split and move-right protocol (module doc) under `shuttle`, which
/// runs the threads in many interleavings: `RUSTFLAGS="--cfg flashix_shuttle" cargo test
/// -p flashix --lib latched::model`. Three writers insert into a tree of order-4 nodes
/// whose leaves are full, so that they split the same leaves and their parent and grow the
/// root beside each other, while a reader looks up keys that were there from the start;
/// afterwards the tree must hold its invariants and every key. The broken variant, whose
/// writers change the node their descent reached without moving right past a split that
/// came in between, must be caught.
#[cfg(all(test, flashix_shuttle))]
mod model {
    use super::*;
    use crate::cost::Tuning;
    use crate::engine::btree::BTreeOptions;
    use crate::io::{MemDevice, MemVfs, Storage};
    use crate::kind::EngineKind;
    use crate::kit::api::{Shareable, SharedWrite};
    use crate::settings::{DeviceSpec, Settings};
    use shuttle::sync::Arc;

    const PAGE: usize = 512;
    /// Keys there from the start: every leaf full.
    const START: [u64; 8] = [0, 10, 20, 30, 40, 50, 60, 70];

    fn tree(broken: bool) -> BTree {
        let s = Settings {
            page_size: PAGE,
            buffer_pool_bytes: SHARED_SPLIT_FRAMES * PAGE as u64,
            device: DeviceSpec::Memory,
            checkpoint_wal_bytes: 64 << 20,
            tuning: Tuning::reference(PAGE),
            engine: EngineKind::BTree,
            record: serde_json::Value::Null,
        };
        let storage = Storage {
            device: Box::new(MemDevice::new(PAGE)),
            vfs: std::sync::Arc::new(MemVfs::new()),
        };
        let mut t = BTree::create(storage, s, BTreeOptions::orders(4, 4)).unwrap();
        for k in START {
            t.insert_unlogged(k, k).unwrap();
        }
        t.broken_no_move_right = broken;
        t
    }

    fn scenario(broken: bool) {
        let t = Arc::new(tree(broken));
        let writers: Vec<_> = [[5u64, 15, 25], [35, 45, 55], [6, 36, 65]]
            .into_iter()
            .map(|keys| {
                let t = Arc::clone(&t);
                shuttle::thread::spawn(move || {
                    for k in keys {
                        let w = t.insert_shared(k, k).unwrap();
                        assert!(
                            !matches!(w, SharedWrite::Exclusive),
                            "insert {k} not shared"
                        );
                    }
                })
            })
            .collect();
        let reader = {
            let t = Arc::clone(&t);
            shuttle::thread::spawn(move || {
                for k in START {
                    assert_eq!(
                        t.get_shared(k).unwrap(),
                        Some(k),
                        "B-link tree broken: key {k}"
                    );
                }
            })
        };
        for w in writers {
            w.join().unwrap();
        }
        reader.join().unwrap();
        let mut t = Arc::try_unwrap(t).ok().unwrap();
        if let Err(e) = t.check() {
            panic!("B-link tree broken: {e}");
        }
        let all = START.iter().chain(&[5, 15, 25, 35, 45, 55, 6, 36, 65]);
        for &k in all {
            assert_eq!(
                t.get_shared(k).unwrap(),
                Some(k),
                "B-link tree broken: key {k}"
            );
        }
    }

    #[test]
    fn splits_beside_each_other_keep_every_key_and_the_invariants() {
        shuttle::check_random(|| scenario(false), 1000);
        shuttle::check_pct(|| scenario(false), 1000, 3);
    }

    #[test]
    #[should_panic(expected = "B-link tree broken")]
    fn a_writer_that_does_not_move_right_past_a_split_is_caught() {
        crate::util::sync::check_seeded(|| scenario(true), 1000, 1000, 3);
    }
}
