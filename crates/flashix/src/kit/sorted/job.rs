//! A merge in progress, run either of two ways (issue 17): stepped by the engine's own
//! operations, a bounded number of entries each (the FD-tree paper's deamortized merge,
//! §3.4, and the LSM-tree's rolling merge), or to its end on the merge thread
//! ([`crate::durable::background`]), its requests served by the engine's operations.
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

use crate::durable::background::{Background, JobIo, Worker};
use crate::durable::Pager;
use crate::error::Result;
use crate::io::Extent;

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
    },
}

impl<J: Resumable> Running<J> {
    /// Run `job` on the merge thread `worker` if there is one, else step it.
    pub fn start(
        page_size: usize,
        job: J,
        p: J::Params,
        worker: Option<&Worker>,
    ) -> Result<Running<J>> {
        let Some(worker) = worker else {
            return Ok(Running::Steps(Box::new(job)));
        };
        let memory = job.memory_bytes();
        let owned = job.owned();
        let mut job = job;
        let bg = Background::spawn(worker, page_size, owned, move |io| loop {
            if let Some(out) = job.step(io, &p, u64::MAX)? {
                return Ok(out);
            }
        })?;
        Ok(Running::Thread { bg, memory })
    }

    /// Whether the job runs on the merge thread.
    pub fn on_thread(&self) -> bool {
        matches!(self, Running::Thread { .. })
    }

    /// Advance the job: step it by `units` entries, or serve the merge thread's requests
    /// (waiting for it to complete when `wait`). `Some` once it has completed.
    pub fn advance(
        &mut self,
        pager: &mut Pager,
        p: &J::Params,
        units: u64,
        wait: bool,
    ) -> Result<Option<J::Outcome>> {
        match self {
            Running::Steps(job) => job.step(pager, p, units),
            Running::Thread { bg, .. } => bg.serve(pager, wait),
        }
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
