//! Group commit: concurrent `Db::flush` calls share one WAL sync (docs/design.md, Concurrency).
//!
//! A flush has two steps. Under the engine's writer lock it hands the WAL's buffered
//! records to the file and takes a [`FlushTicket`] naming the generation and the LSN its
//! records end at ([`super::Log::prepare_flush`]). Then, with the lock released, it waits
//! on the ticket: the first waiter whose records are not yet durable becomes the *leader*
//! and syncs the file; every waiter whose records were handed to the file before that sync
//! started is covered by it and returns without a sync of its own (counted in
//! `WalStats::syncs_saved`). Writers go on appending while the leader syncs, and the next
//! leader's sync covers them.
//!
//! A checkpoint moves the log to a new generation: everything in the older WAL is then in
//! the checkpoint image, so a ticket of an older generation is satisfied, and a leader
//! whose sync failed because the checkpoint removed its file has nothing left to do.
//!
//! Thread safety: one mutex over a few words of state and a condition variable; the sync
//! itself runs with the mutex released. A leader's sync covers only the bytes handed to
//! the file before it started (`written` read under the mutex), never bytes appended
//! during it.

use super::wal::Lsn;
use crate::error::Result;
use crate::io::Vfs;
use crate::util::sync::{Condvar, Mutex, MutexGuard};
use std::sync::Arc;
use std::time::Duration;

/// Sync state of an index's WAL, shared by the log and the flushes waiting on it.
#[derive(Debug)]
pub struct GroupCommit {
    state: Mutex<CommitState>,
    done: Condvar,
}

#[derive(Debug, Default)]
struct CommitState {
    /// The current WAL generation.
    generation: u64,
    /// Bytes of the current generation's WAL handed to the file.
    written: Lsn,
    /// Bytes of the current generation's WAL known durable.
    durable: Lsn,
    /// A leader is syncing the current WAL.
    syncing: bool,
    /// Syncs made by flush leaders (outside the writer lock).
    syncs: u64,
    /// Flushes whose records another flush's sync made durable.
    saved: u64,
}

/// How long a waiter sleeps before it looks at the state again: a bound on every wait, so a
/// lost wake-up costs at most this (the leader notifies every waiter when its sync ends).
const RECHECK: Duration = Duration::from_millis(50);

impl GroupCommit {
    /// The state of a WAL of `generation` whose first `valid_len` bytes are durable.
    pub fn new(generation: u64, valid_len: Lsn) -> Arc<GroupCommit> {
        Arc::new(GroupCommit {
            state: Mutex::new(CommitState {
                generation,
                written: valid_len,
                durable: valid_len,
                ..CommitState::default()
            }),
            done: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, CommitState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `generation` (its first `valid_len` bytes durable) is current: the checkpoint that
    /// switched to it made every older WAL's records durable, so their tickets are done.
    pub fn switched(&self, generation: u64, valid_len: Lsn) {
        let mut s = self.lock();
        s.generation = generation;
        s.written = valid_len;
        s.durable = valid_len;
        s.syncing = false;
        drop(s);
        self.done.notify_all();
    }

    /// The WAL of `generation` has `lsn` bytes handed to its file.
    pub fn written(&self, generation: u64, lsn: Lsn) {
        let mut s = self.lock();
        if s.generation == generation {
            s.written = s.written.max(lsn);
        }
    }

    /// Bytes of `generation`'s WAL known durable: all of an older generation's
    /// (`Lsn::MAX`), none of a later one's.
    pub fn durable(&self, generation: u64) -> Lsn {
        let s = self.lock();
        match generation.cmp(&s.generation) {
            std::cmp::Ordering::Less => Lsn::MAX,
            std::cmp::Ordering::Equal => s.durable,
            std::cmp::Ordering::Greater => 0,
        }
    }

    /// A sync under the writer lock made `generation`'s first `lsn` bytes durable.
    pub fn synced(&self, generation: u64, lsn: Lsn) {
        let mut s = self.lock();
        if s.generation == generation {
            s.durable = s.durable.max(lsn);
        }
        drop(s);
        self.done.notify_all();
    }

    /// (syncs made by flush leaders, flushes another flush's sync covered).
    pub fn counts(&self) -> (u64, u64) {
        let s = self.lock();
        (s.syncs, s.saved)
    }
}

/// A flush's claim: the records of `generation`'s WAL up to `lsn` must become durable
/// ([`FlushTicket::wait`]).
#[must_use = "a flush is durable only once its ticket is waited on"]
pub struct FlushTicket {
    pub(super) commit: Arc<GroupCommit>,
    pub(super) vfs: Arc<dyn Vfs>,
    pub(super) name: String,
    pub(super) generation: u64,
    pub(super) lsn: Lsn,
}

impl FlushTicket {
    /// Return once the ticket's records are durable: synced by this call as the leader, or
    /// by another flush's sync that covered them, or by a checkpoint.
    pub fn wait(self) -> Result<()> {
        let c = &*self.commit;
        let mut s = c.lock();
        let mut led = false;
        loop {
            if s.generation > self.generation || s.durable >= self.lsn {
                if !led {
                    s.saved += 1;
                }
                return Ok(());
            }
            if s.syncing {
                s = c
                    .done
                    .wait_timeout(s, RECHECK)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
                continue;
            }
            s.syncing = true;
            let covers = s.written;
            drop(s);
            let r = self.vfs.sync(&self.name);
            s = c.lock();
            if s.generation == self.generation {
                s.syncing = false;
            }
            c.done.notify_all();
            match r {
                Ok(()) => {
                    led = true;
                    s.syncs += 1;
                    if s.generation == self.generation {
                        s.durable = s.durable.max(covers);
                    }
                }
                // A checkpoint removed the file while it was synced: its records are in
                // the checkpoint image, which the loop's first test sees.
                Err(_) if s.generation > self.generation => {}
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::MemVfs;

    fn ticket(c: &Arc<GroupCommit>, vfs: &Arc<dyn Vfs>, generation: u64, lsn: Lsn) -> FlushTicket {
        FlushTicket {
            commit: Arc::clone(c),
            vfs: Arc::clone(vfs),
            name: "wal".into(),
            generation,
            lsn,
        }
    }

    /// A ticket whose records a sync already covered costs no sync (saved); one past it
    /// syncs once, covering what was written when it started; older generations are done.
    #[test]
    fn tickets_share_syncs_and_older_generations_are_done() {
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        vfs.create("wal").unwrap();
        let c = GroupCommit::new(3, 0);
        c.written(3, 100);
        ticket(&c, &vfs, 3, 60).wait().unwrap();
        assert_eq!(
            c.durable(3),
            100,
            "the sync covers every byte written before it"
        );
        assert_eq!(c.counts(), (1, 0));
        ticket(&c, &vfs, 3, 100).wait().unwrap();
        assert_eq!(c.counts(), (1, 1), "covered by the first sync");
        c.switched(4, 0);
        ticket(&c, &vfs, 3, 500).wait().unwrap();
        assert_eq!(
            c.counts(),
            (1, 2),
            "a checkpoint covers an older generation"
        );
        assert_eq!(c.durable(3), Lsn::MAX);
        assert_eq!(c.durable(5), 0);
    }

    /// Many threads flushing at once: every ticket returns, each durable, with fewer syncs
    /// than flushes whenever two of them waited together.
    #[test]
    fn concurrent_tickets_all_return_durable() {
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        vfs.create("wal").unwrap();
        let c = GroupCommit::new(1, 0);
        std::thread::scope(|s| {
            for t in 0..8u64 {
                let (c, vfs) = (Arc::clone(&c), Arc::clone(&vfs));
                s.spawn(move || {
                    for i in 1..=50u64 {
                        let lsn = (t * 50 + i) * 10;
                        c.written(1, lsn);
                        ticket(&c, &vfs, 1, lsn).wait().unwrap();
                        assert!(c.durable(1) >= lsn);
                    }
                });
            }
        });
        let (syncs, saved) = c.counts();
        assert_eq!(
            syncs + saved,
            400,
            "each flush either synced or was covered"
        );
    }

    /// A failed sync is the flush's error, unless a checkpoint superseded its generation.
    #[test]
    fn a_failed_sync_fails_its_flush_unless_superseded() {
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new()); // "wal" does not exist: sync fails
        let c = GroupCommit::new(1, 0);
        c.written(1, 10);
        assert!(ticket(&c, &vfs, 1, 10).wait().is_err());
        c.switched(2, 0);
        ticket(&c, &vfs, 1, 10).wait().unwrap();
    }
}

/// The protocol under `shuttle`'s scheduler (`util::sync`): flushes racing each other and a
/// checkpoint's switch all return, durable, in every interleaving explored (a lost wake-up
/// would be a deadlock there, as shuttle's timed waits never time out).
#[cfg(all(test, flashix_shuttle))]
mod model {
    use super::*;
    use crate::io::MemVfs;

    fn scenario() {
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        vfs.create("wal").unwrap();
        let c = GroupCommit::new(1, 0);
        let flushers: Vec<_> = (1..=3u64)
            .map(|t| {
                let (c, vfs) = (Arc::clone(&c), Arc::clone(&vfs));
                shuttle::thread::spawn(move || {
                    let lsn = t * 100;
                    c.written(1, lsn);
                    FlushTicket {
                        commit: Arc::clone(&c),
                        vfs,
                        name: "wal".into(),
                        generation: 1,
                        lsn,
                    }
                    .wait()
                    .unwrap();
                    assert!(
                        c.durable(1) >= lsn,
                        "flush of {lsn} returned before it was durable"
                    );
                })
            })
            .collect();
        let switcher = {
            let c = Arc::clone(&c);
            shuttle::thread::spawn(move || c.switched(2, 0))
        };
        for f in flushers {
            f.join().unwrap();
        }
        switcher.join().unwrap();
        let (syncs, saved) = c.counts();
        assert!(syncs + saved >= 3);
    }

    #[test]
    fn racing_flushes_and_a_switch_all_return_durable() {
        shuttle::check_random(scenario, 2000);
        shuttle::check_pct(scenario, 2000, 3);
    }
}
