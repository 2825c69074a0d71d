//! Page reads outside the engine's lock: a shared read that misses the buffer pool stops,
//! the page is read with the lock released, and the read runs again with those bytes at
//! hand.
//!
//! Why: `crate::kit::parallel` serves an engine to many threads behind a readers-writer
//! lock. A reader that held the lock shared across its device read (tens of microseconds)
//! would hold every writer back that long, and a waiting writer holds back every reader
//! that comes after it (the lock lets no new reader pass a waiting writer, lest writers
//! starve): each write would drain the device's queue of reads. Reading outside the lock,
//! readers hold it only for in-memory steps.
//!
//! The protocol, for one thread (the state is the thread's own):
//! 1. [`arm`] before a shared read that may run twice (it changes nothing but counters
//!    before its last page read, `crate::kit::api::Shareable::RESTARTS`).
//! 2. The Pager's shared read of a page the pool does not hold ([`crate::durable::Pager::read_shared`])
//!    then claims nothing and reads nothing: it notes a [`Miss`] — the page, the
//!    device's reader handle and the number of the last write the device was asked to
//!    make ([`crate::io::watch::WriteWatch`]) — and fails with [`Error::PageMiss`], which
//!    the engine's read passes up.
//! 3. With the lock released, [`Miss::read`] reads the page into a buffer of its own.
//! 4. Under the shared lock again, [`arm`] with that [`Stash`] and the read runs again.
//!    When it misses the same page, the pool loads it from the stash instead of the
//!    device — if no write of that page was asked of the device since the number taken
//!    in step 2; otherwise from the device, as usual.
//!
//! Why the stash holds the page's current bytes when it is used: at step 2 the page was
//! not in the pool, so the device held its latest contents (a page changes in the pool
//! and reaches the device only through a write, which the watch notes before issuing);
//! at step 4 it is again not in the pool (else the read hits it), and no write of it was
//! issued in between. Writes in flight at step 2 are not noted after the number taken,
//! so this holds only for pages that no request started earlier still writes: pages a
//! reader can reach are written by write-backs of pool frames (the page was then in the
//! pool, not missed) and by writes under the engine's exclusive lock, which finish before
//! the lock is released; an engine whose background thread writes reachable pages in
//! place does not arm. Whatever the path to the page does meanwhile (a split, a merge
//! that frees the page), the read runs again from the start under the lock, and uses the
//! stash only if it reaches the same page.
//!
//! A read stops at most once per [`arm`] with `stop` (each run after the first may stop
//! again at another page, up to the caller's bound); the last run loads under the lock.

use crate::error::{Error, Result};
use crate::io::watch::WriteWatch;
use crate::io::{AlignedBuf, PageId, SharedReader};
use std::cell::RefCell;
use std::sync::Arc;

/// The page a read stopped at, and how to read it with no lock held.
pub struct Miss {
    pid: PageId,
    page_size: usize,
    reader: Arc<dyn SharedReader>,
    watch: Arc<WriteWatch>,
    mark: u64,
}

/// A page read outside the lock, for the read's next run.
pub struct Stash {
    pid: PageId,
    bytes: AlignedBuf,
    watch: Arc<WriteWatch>,
    mark: u64,
}

enum State {
    Off,
    Armed { stop: bool, stash: Option<Stash> },
    Stopped(Miss),
}

thread_local! {
    static STATE: RefCell<State> = const { RefCell::new(State::Off) };
}

/// This thread's reads, armed until [`Armed::disarm`] or the guard is dropped.
#[must_use = "the reads stay armed until the guard is disarmed or dropped"]
pub struct Armed(());

/// Arm this thread's next shared reads: `stop` lets one miss stop them (step 2), `stash`
/// is the page read for this run (step 4).
pub fn arm(stop: bool, stash: Option<Stash>) -> Armed {
    STATE.with(|s| *s.borrow_mut() = State::Armed { stop, stash });
    Armed(())
}

impl Armed {
    /// Disarm; the miss the reads stopped at, if they did.
    pub fn disarm(self) -> Option<Miss> {
        STATE.with(
            |s| match std::mem::replace(&mut *s.borrow_mut(), State::Off) {
                State::Stopped(m) => Some(m),
                _ => None,
            },
        )
    }
}

impl Drop for Armed {
    fn drop(&mut self) {
        // After `disarm` the state is off already; after a panic in the read, it goes off.
        STATE.with(|s| *s.borrow_mut() = State::Off);
    }
}

/// Run `f` with this thread's reads loading the pages they miss under the lock instead of
/// stopping at one, then armed as before: for the part of a shared write after it changed
/// the structure (a split's separator going up), which must not run twice.
pub fn loading<T>(f: impl FnOnce() -> T) -> T {
    let was = STATE.with(|s| match &mut *s.borrow_mut() {
        State::Armed { stop, .. } => std::mem::replace(stop, false),
        _ => false,
    });
    let out = f();
    STATE.with(|s| {
        if let State::Armed { stop, .. } = &mut *s.borrow_mut() {
            *stop = was;
        }
    });
    out
}

/// What the Pager's shared read of `pid`, a page the pool may not hold, does now.
pub(super) enum Plan {
    /// Load it from the device as usual (`armed`: into a clean frame, the read running
    /// beside other threads).
    Load { armed: bool },
    /// Stop at a miss: look it up without loading.
    StopAtMiss,
    /// Load it from these bytes on a miss.
    FromStash(AlignedBuf),
}

/// The plan for a read of `pid` through the pool whose device `watch` watches (one call
/// per page read through the pool).
pub(super) fn plan(pid: PageId, watch: &Arc<WriteWatch>) -> Plan {
    STATE.with(|s| match &mut *s.borrow_mut() {
        State::Armed { stash, stop } => {
            let ours = |st: &Stash| st.pid == pid && Arc::ptr_eq(&st.watch, watch);
            if stash.as_ref().is_some_and(ours) {
                let st = stash
                    .take()
                    .map(|st| (st.watch.unwritten_since(pid, st.mark), st));
                return match st {
                    Some((true, st)) => Plan::FromStash(st.bytes),
                    _ => Plan::Load { armed: true },
                };
            }
            if *stop {
                Plan::StopAtMiss
            } else {
                Plan::Load { armed: true }
            }
        }
        _ => Plan::Load { armed: false },
    })
}

/// Note the miss that stops this thread's read (step 2) and return the error that
/// carries it up.
pub(super) fn stopped(
    pid: PageId,
    page_size: usize,
    reader: Arc<dyn SharedReader>,
    watch: Arc<WriteWatch>,
    mark: u64,
) -> Error {
    let miss = Miss {
        pid,
        page_size,
        reader,
        watch,
        mark,
    };
    STATE.with(|s| *s.borrow_mut() = State::Stopped(miss));
    Error::PageMiss
}

impl Miss {
    /// Read the page (step 3: with no lock held). Its checksum is verified when the pool
    /// loads it from the stash.
    pub fn read(self) -> Result<Stash> {
        let mut bytes = AlignedBuf::zeroed(self.page_size);
        self.reader.read(self.pid, &mut bytes)?;
        Ok(Stash {
            pid: self.pid,
            bytes,
            watch: self.watch,
            mark: self.mark,
        })
    }
}
