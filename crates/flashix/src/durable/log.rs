//! [`Log`]: an index's chain of WAL generations and the one **checkpoint switch** that
//! moves it from one generation to the next (docs/design.md, contract point 3).
//!
//! Every engine's durable state is *the state a manifest describes + the logical redo
//! records of the WAL that manifest names*. A checkpoint makes the engine's structure
//! durable on its device (the caller's part: writing back pages, syncing, programming log
//! sectors) and then calls [`Log::switch`], which, in this order:
//! 1. takes the WAL of the next generation, empty, whose name is already durable: the
//!    previous switch created it (or, the first switch after open, creates it now and
//!    syncs the directory), since a manifest must never name a WAL whose creation a crash
//!    can undo (a rename may reach the disk without a directory sync, a create may not);
//! 2. creates the WAL of the generation after it, empty, for the next switch;
//! 3. writes the new manifest and switches to it atomically ([`Manifest::store`], whose
//!    directory sync also makes step 2's name durable);
//! 4. makes the new WAL current and removes the old one, which no manifest names any
//!    more (a failed removal leaves a stale file that the next [`Log::recover`] deletes).
//!
//! The switch does not sync the old WAL: once step 3 is durable no recovery reads it, and
//! a crash before then recovers the old manifest through the old WAL's durable prefix,
//! which the prefix rule allows (only `flush` promises durability). What the caller wrote
//! in place before the switch needs its before-images durable first, and the buffer pool's
//! write barrier syncs the log up to them (`super::Pager`). Not syncing it takes a sync
//! off each checkpoint, and so does the directory sync that step 1 no longer needs.
//!
//! Outside tests, a WAL file is created only here and by [`Log::create`] (generation 1 of
//! a new index). [`Log::recover`] is the first step of every engine's recovery; it removes
//! a WAL created ahead (step 2) with the other leftovers, so the first switch after an open
//! creates its WAL itself.

use super::commit::{FlushTicket, GroupCommit};
use super::manifest::{Manifest, OptionsRecord};
use super::wal::{self, LogicalOp, Lsn, Record, Wal};
use crate::error::Result;
use crate::io::alloc::AllocState;
use crate::io::{PageId, Vfs};
use crate::stats::WalStats;
use std::sync::Arc;

/// The current WAL generation of an index, the options record its manifests carry, and
/// the counters of every generation since open.
pub struct Log {
    vfs: Arc<dyn Vfs>,
    wal: Wal,
    /// The WAL of the next generation, empty, its creation durable (module doc, step 2),
    /// or `None` until the first switch since the log was created or recovered.
    next: Option<Wal>,
    /// The options record written into every manifest (opaque at this layer).
    options: OptionsRecord,
    /// Counters of the generations already switched away from.
    base: WalStats,
    /// While replaying, operations are not logged again (they are in the WAL already) and
    /// no checkpoint is due.
    replaying: bool,
    /// The WAL recovered holds an out-of-space record ([`wal::Replay::out_of_space`]).
    recovered_out_of_space: bool,
    /// What is durable, across generations, shared with waiting flushes (group commit,
    /// [`super::commit`]).
    commit: Arc<GroupCommit>,
}

impl Log {
    /// Generation 1 of a new index. The caller builds its initial state and then takes a
    /// checkpoint, whose [`Log::switch`] writes the first manifest.
    pub fn create(vfs: Arc<dyn Vfs>, options: OptionsRecord) -> Result<Log> {
        let commit = GroupCommit::new(1, 0);
        let wal = Wal::create_in(Arc::clone(&vfs), 1, Arc::clone(&commit))?;
        Ok(Log {
            vfs,
            wal,
            next: None,
            options,
            base: WalStats::default(),
            replaying: false,
            recovered_out_of_space: false,
            commit,
        })
    }

    /// Reopen the generation `manifest` names: drop the leftovers of an interrupted switch,
    /// require the named WAL, cut a torn tail, and return its valid records (page images
    /// and logical operations, in order) for the engine's recovery.
    pub fn recover(vfs: Arc<dyn Vfs>, manifest: &Manifest) -> Result<(Log, Vec<Record>)> {
        let gen = manifest.generation;
        let replay = wal::recover(&*vfs, gen)?;
        let commit = GroupCommit::new(gen, replay.valid_len);
        let wal = Wal::resume_in(Arc::clone(&vfs), gen, replay.valid_len, Arc::clone(&commit));
        let log = Log {
            vfs,
            wal,
            next: None,
            options: manifest.options.clone(),
            base: WalStats::default(),
            replaying: false,
            recovered_out_of_space: replay.out_of_space,
            commit,
        };
        Ok((log, replay.records))
    }

    /// The checkpoint switch (module doc, steps 1-4): the engine's state is durable on its
    /// device; publish it in a new manifest over a fresh WAL generation.
    pub fn switch(&mut self, alloc: AllocState, engine_state: serde_json::Value) -> Result<()> {
        let gen = self.wal.generation() + 1;
        let mut next = match self.next.take() {
            Some(wal) if wal.generation() == gen => wal,
            _ => {
                let wal = Wal::create_in(Arc::clone(&self.vfs), gen, Arc::clone(&self.commit))?;
                self.vfs.sync_dir()?;
                wal
            }
        };
        let after = Wal::create_in(Arc::clone(&self.vfs), gen + 1, Arc::clone(&self.commit))?;
        let manifest = Manifest {
            format_version: super::manifest::FORMAT_VERSION,
            options: self.options.clone(),
            generation: gen,
            alloc,
            engine: engine_state,
        };
        manifest.store(&*self.vfs)?;
        std::mem::swap(&mut self.wal, &mut next);
        // The new manifest is durable: every record of the old WAL is in its image.
        self.commit.switched(gen, 0);
        self.next = Some(after);
        add_wal_stats(&mut self.base, &next.stats());
        self.base.checkpoints += 1;
        let _ = self.vfs.remove(next.name());
        Ok(())
    }

    /// Append a logical redo record, unless replaying.
    pub fn log_op(&mut self, op: &LogicalOp) -> Result<()> {
        if !self.replaying {
            self.wal.log_op(op)?;
        }
        Ok(())
    }

    /// Record that the operation logged at `op_start` (or, `None`, the checkpoint after
    /// an applied operation) failed because the device was full ([`Wal::log_no_space`]).
    pub fn log_no_space(&mut self, op_start: Option<Lsn>) -> Result<()> {
        self.wal.log_no_space(op_start)
    }

    /// True when the WAL this log recovered holds an out-of-space record: recovery keeps
    /// this generation rather than taking a checkpoint.
    pub fn recovered_out_of_space(&self) -> bool {
        self.recovered_out_of_space
    }

    /// [`Log::log_op`] for a caller that holds a latch other threads wait on: it writes
    /// nothing, however full the buffer; the caller calls [`Log::hand_off_if_full`] after
    /// it lets go of the latch, so that no thread waits on the latch for the WAL's write.
    pub fn log_op_held(&mut self, op: &LogicalOp) {
        if !self.replaying {
            self.wal.log_op_held(op);
        }
    }

    /// [`Log::log_image`] that writes nothing (as [`Log::log_op_held`]); returns its LSN.
    pub fn log_image_held(&mut self, page: PageId, bytes: &[u8]) -> Lsn {
        self.wal.log_image_held(page, bytes)
    }

    /// Hand the buffered records to the file once they fill a write chunk (after
    /// [`Log::log_op_held`]).
    pub fn hand_off_if_full(&mut self) -> Result<()> {
        self.wal.hand_off_if_full()
    }

    /// Append a page's before-image (in-place engines); returns its LSN.
    pub fn log_image(&mut self, page: PageId, bytes: &[u8]) -> Result<Lsn> {
        self.wal.log_image(page, bytes)
    }

    /// Make the WAL durable up to `lsn` (the buffer pool's write barrier).
    pub fn ensure_durable(&mut self, lsn: Lsn) -> Result<()> {
        self.wal.ensure_durable(lsn)
    }

    /// [`Log::ensure_durable`] in two steps, for a thread beside others: the records up to
    /// `lsn` are handed to the file here, under the log's lock, and the ticket returned
    /// (`None`: durable already) is waited on with the lock released, so that the shared
    /// writers appending meanwhile do not wait for the sync (group commit,
    /// [`super::commit`]).
    pub fn durable_ticket(&mut self, lsn: Lsn) -> Result<Option<FlushTicket>> {
        match lsn > self.commit.durable(self.wal.generation()) {
            true => self.wal.prepare_flush(),
            false => Ok(None),
        }
    }

    /// The first step of a group-committed flush: every logged operation is handed to the
    /// file; the ticket returned (`None`: all durable already) is waited on with the writer
    /// lock released ([`super::commit`]).
    pub fn prepare_flush(&mut self) -> Result<Option<FlushTicket>> {
        self.wal.prepare_flush()
    }

    /// Bytes in the current WAL.
    pub fn bytes(&self) -> u64 {
        self.wal.end()
    }

    /// The current generation.
    pub fn generation(&self) -> u64 {
        self.wal.generation()
    }

    /// Replay mode on or off ([`Log::log_op`] skips, no checkpoint is due).
    pub fn set_replaying(&mut self, on: bool) {
        self.replaying = on;
    }

    /// True while replaying the WAL.
    pub fn replaying(&self) -> bool {
        self.replaying
    }

    /// WAL counters over all generations since open.
    pub fn stats(&self) -> WalStats {
        let mut s = self.base.clone();
        add_wal_stats(&mut s, &self.wal.stats());
        let (syncs, saved) = self.commit.counts();
        s.syncs += syncs;
        s.syncs_saved += saved;
        s
    }
}

fn add_wal_stats(into: &mut WalStats, s: &WalStats) {
    into.records += s.records;
    into.page_images += s.page_images;
    into.bytes += s.bytes;
    into.syncs += s.syncs;
    into.checkpoints += s.checkpoints;
}
