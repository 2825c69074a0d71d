//! A merge in progress, run either of two ways: stepped by the engine's own
//! operations, a bounded number of entries each (the FD-tree paper's deamortized merge,
//! §3.4, and the LSM-tree's rolling merge), or to its end on the merge thread
//! ([`crate::durable::background`]), its I/O on a device handle of its own where the
//! device gives one, else served by the engine's operations.
//!
//! The job is the same either way ([`Resumable`]: the FD-tree's and the LSM-tree's
//! `MergeJob`), so what it writes and the index it leaves do not depend on the way. The
//! thread is used on devices whose requests overlap with work
//! ([`crate::io::Device::overlaps`]: a file through io_uring) when the engine steps its
//! merges (deamortized): insertions into the new head tree and the merge then use the two
//! cores, where one did both. The deterministic tests on memory devices step the job, and
//! so does every engine when `FLASHIX_MERGE_THREAD=0`
//! ([`crate::durable::background::MERGE_THREAD_ENV`]). An engine keeps one merge thread
//! ([`Worker`]) for all its merges.

use crate::durable::background::{merge_thread_allowed, Background, JobIo, WorkTimes, Worker};
use crate::durable::Pager;
use crate::error::Result;
use crate::io::Extent;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A merge job that can be advanced a bounded number of input entries at a time.
pub(crate) trait Resumable: Send + 'static {
    /// What every step needs besides the storage.
    type Params: Copy + Send + 'static;
    /// The completed job's result.
    type Outcome: Send + 'static;
    /// Process up to `units` input entries; `Some` when the job is complete.
    fn step(
        &mut self,
        io: &mut dyn JobIo,
        p: &Self::Params,
        units: u64,
    ) -> Result<Option<Self::Outcome>>;
    /// Bytes the job holds (charged to the memory budget).
    fn memory_bytes(&self) -> u64;
    /// Extents the job wrote or holds that no manifest names.
    fn owned(&self) -> Vec<Extent>;
    /// Estimated input entries left (the pace of stepping).
    fn work(&self) -> u64;
}

/// A merge in progress.
pub(crate) enum Running<J: Resumable> {
    /// Advanced by the engine's operations.
    Steps(Box<J>),
    /// On the merge thread.
    Thread {
        bg: Background<J::Outcome>,
        /// The job's memory when it started ([`Resumable::memory_bytes`]).
        memory: u64,
        /// Its estimated work when it started ([`Resumable::work`]), and the part done
        /// so far (updated by the thread every [`THREAD_STEP`] entries).
        total: u64,
        done: Arc<AtomicU64>,
    },
}

/// The merge thread may lag its pace by 1/LAG of its estimated work before the
/// operations wait for it ([`Running::advance`]).
const LAG: u64 = 4;

/// Entries the merge thread processes between updates of its progress.
const THREAD_STEP: u64 = 1 << 14;

/// Where an engine's merges run: on its merge thread ([`Worker`], started with the first
/// merge) when the engine deamortizes its merges on a device whose requests overlap with
/// work and `FLASHIX_MERGE_THREAD` is not `0`; else stepped by its operations.
pub(crate) struct MergeThread {
    threaded: bool,
    worker: Option<Worker>,
    /// Merges completed on the thread since open, and their times.
    merges: u64,
    times: WorkTimes,
}

impl MergeThread {
    /// The choice for an engine over `pager` that steps its merges when `deamortize`.
    pub fn new(deamortize: bool, pager: &mut Pager) -> MergeThread {
        MergeThread {
            threaded: deamortize && pager.device().overlaps() && merge_thread_allowed(),
            worker: None,
            merges: 0,
            times: WorkTimes::default(),
        }
    }

    /// Run `job` over `pager`'s storage: on the merge thread, or stepped.
    pub fn start<J: Resumable>(
        &mut self,
        pager: &mut Pager,
        job: J,
        p: J::Params,
    ) -> Result<Running<J>> {
        if self.threaded && self.worker.is_none() {
            self.worker = Some(Worker::spawn()?);
        }
        Running::start(pager, job, p, self.worker.as_ref())
    }

    /// Count `job`, just completed, and its times if it ran on the thread.
    pub fn completed<J: Resumable>(&mut self, job: &Running<J>) {
        if let Running::Thread { bg, .. } = job {
            self.merges += 1;
            if let Some(t) = bg.times() {
                self.times.add(t);
            }
        }
    }

    /// The engine counters of the merges completed on the thread since open:
    /// `thread_merges` (how many), `merge_thread_us` (their time on it),
    /// `merge_thread_cpu_us` (its CPU time, user and system) and `merge_thread_io_wait_us`
    /// (their waits for their requests).
    pub fn counters(&self) -> [(&'static str, u64); 4] {
        [
            ("thread_merges", self.merges),
            ("merge_thread_us", self.times.wall_us),
            ("merge_thread_cpu_us", self.times.cpu_us),
            ("merge_thread_io_wait_us", self.times.io_wait_us),
        ]
    }
}

impl<J: Resumable> Running<J> {
    /// Run `job` on the merge thread `worker` if there is one, else step it; `pager` is
    /// the index's storage.
    fn start(
        pager: &mut Pager,
        job: J,
        p: J::Params,
        worker: Option<&Worker>,
    ) -> Result<Running<J>> {
        let Some(worker) = worker else {
            return Ok(Running::Steps(Box::new(job)));
        };
        let memory = job.memory_bytes();
        let owned = job.owned();
        let total = job.work();
        let done = Arc::new(AtomicU64::new(0));
        let progress = Arc::clone(&done);
        let mut job = job;
        let bg = Background::spawn(worker, pager, owned, move |io| loop {
            if let Some(out) = job.step(io, &p, THREAD_STEP)? {
                return Ok(out);
            }
            progress.store(total.saturating_sub(job.work()), Ordering::Relaxed);
        })?;
        Ok(Running::Thread {
            bg,
            memory,
            total,
            done,
        })
    }

    /// Whether the job runs on the merge thread.
    pub fn on_thread(&self) -> bool {
        matches!(self, Running::Thread { .. })
    }

    /// Advance the job: step it by `units` entries; on the merge thread, serve its
    /// requests, and wait while it is behind the pace that completes it as the new write
    /// buffer fills (`fill` of `cap` entries taken: at least that share of its estimated
    /// work done), or for its completion when `units` is `u64::MAX`. This keeps §3.4's
    /// bound on an operation's share of a merge when the merge runs beside the
    /// operations: without it a cascade into a large level made the operation that
    /// filled the buffer wait for the whole rest of it, far longer than any operation's
    /// own I/O.
    /// `Some` once the job has completed.
    pub fn advance(
        &mut self,
        pager: &mut Pager,
        p: &J::Params,
        units: u64,
        (fill, cap): (u64, u64),
    ) -> Result<Option<J::Outcome>> {
        let (bg, total, done) = match self {
            Running::Steps(job) => return job.step(pager, p, units),
            Running::Thread {
                bg, total, done, ..
            } => (bg, *total, done),
        };
        let need = if units == u64::MAX || fill >= cap {
            u64::MAX
        } else {
            // The share of the work due at this fill, less a lag of a quarter of it: the
            // operations wait in few, short stretches rather than at every step.
            let due = u128::from(total) * u128::from(fill) / u128::from(cap.max(1));
            (due as u64).saturating_sub(total / LAG)
        };
        let far_enough = || done.load(Ordering::Relaxed) >= need;
        bg.serve(pager, !far_enough(), &far_enough)
    }

    pub fn owned(&self) -> Vec<Extent> {
        match self {
            Running::Steps(j) => j.owned(),
            Running::Thread { bg, .. } => bg.owned(),
        }
    }

    pub fn memory_bytes(&self) -> u64 {
        match self {
            Running::Steps(j) => j.memory_bytes(),
            Running::Thread { memory, .. } => *memory,
        }
    }

    /// Work left to step (none on the thread: the engine does not pace it).
    pub fn work(&self) -> u64 {
        match self {
            Running::Steps(j) => j.work(),
            Running::Thread { .. } => 0,
        }
    }
}
