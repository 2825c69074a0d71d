//! What the cells of the runner-based reproductions (the FD-tree's and the PIO B-tree's)
//! record of a measured phase ([`Measured`]) and of a lens's device ([`LensInfo`]), so that
//! the papers' cells differ only in the fields naming their experiments.

use super::lens::Lens;
use crate::output::report::Record;
use crate::probe::sim::Metric;
use crate::probe::DeviceProfile;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The cells of a run and its lenses, for a paper's checks: each paper adds the queries
/// its claims make (`impl View<'_, Cell>` in its `paper.rs`).
pub(crate) struct View<'a, C> {
    pub cells: &'a [C],
    pub lenses: &'a [LensInfo],
}

/// What names a cell: its experiment, lens, engine, variant and workload. Flattened into
/// each paper's `Cell`, so its JSON keeps these as the cell's own fields.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CellId {
    /// The paper's experiment (`fig10`, `deamort`, ...).
    pub experiment: String,
    /// `disk` or a simulated profile's name.
    pub lens: String,
    pub engine: String,
    /// The setting the experiment varies (`pool 64 KiB`, `deamortize on`), empty otherwise.
    pub variant: String,
    pub workload: String,
}

impl CellId {
    /// The cell of experiment `e` on `lens` of `engine` running `workload`, of `variant`.
    pub fn new(e: &str, lens: Lens, engine: &str, variant: &str, workload: &str) -> CellId {
        CellId {
            experiment: e.into(),
            lens: lens.key().into(),
            engine: engine.into(),
            variant: variant.into(),
            workload: workload.into(),
        }
    }

    /// Whether this is experiment `e`'s cell on `lens` of `engine` running `workload`.
    pub fn is(&self, e: &str, lens: &str, engine: &str, workload: &str) -> bool {
        self.experiment == e
            && self.lens == lens
            && self.engine == engine
            && self.workload == workload
    }
}

/// A measured phase of a runner record: sizes, the lens's time, latencies and I/O per
/// operation. Flattened into each paper's `Cell`, so its JSON keeps these as the cell's own
/// fields.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Measured {
    /// Live entries when the measured phase started (after the engine's aging).
    pub entries: u64,
    pub ops: u64,
    /// Keys a range scan covers (1 for point operations).
    pub keys_per_op: u64,
    /// The lens's seconds: wall on this disk, simulated on a simulated SSD.
    pub seconds: f64,
    /// Wall seconds of the measured phase (on a simulated SSD: the simulator's run time).
    pub wall_seconds: f64,
    /// Wall latency per operation, microseconds.
    pub mean_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    pub reads_per_op: f64,
    pub writes_per_op: f64,
    pub read_requests_per_op: f64,
    pub write_requests_per_op: f64,
    /// Deepest queue of the phase (psync groups).
    pub queue_depth: u64,
    /// Threads of the phase, each with a stream of its own on the one index (0 in cells
    /// saved before threads were recorded: one).
    pub threads: u32,
    /// The device's mean queue depth over the phase: the time its requests spent in
    /// flight over the phase's wall time (`Record::mean_queue_depth`); `None` where the
    /// device does not time its requests.
    pub mean_queue_depth: Option<f64>,
    /// Share of the phase's wall time the engine's exclusive lock was held by writes that
    /// began beside other operations (engine counter `writer_lock_held_ns`,
    /// `Record::writer_lock`); `None` for a phase of one thread.
    pub lock_held_share: Option<f64>,
}

impl Measured {
    /// The measured phase of `r`, timed by its lens (simulated seconds where it has them).
    pub fn of(r: &Record) -> Measured {
        Measured {
            entries: r.entries,
            ops: r.ops,
            keys_per_op: r.keys_per_op,
            seconds: r.sim_seconds.unwrap_or(r.elapsed_s),
            wall_seconds: r.elapsed_s,
            mean_us: r.latency_us.mean,
            p999_us: r.latency_us.p999,
            max_us: r.latency_us.max,
            reads_per_op: r.reads_per_op,
            writes_per_op: r.writes_per_op,
            read_requests_per_op: r.read_requests_per_op,
            write_requests_per_op: r.write_requests_per_op,
            queue_depth: r.queue_depth,
            threads: r.threads,
            mean_queue_depth: r.mean_queue_depth,
            lock_held_share: r.writer_lock.as_ref().map(|w| w.held_share),
        }
    }

    /// Threads of the phase (one for a cell saved without the count).
    pub fn threads(&self) -> u32 {
        self.threads.max(1)
    }

    /// Operations a second of the lens's time, over every thread of the phase.
    pub fn ops_per_sec(&self) -> f64 {
        if self.seconds <= 0.0 {
            return 0.0;
        }
        self.ops as f64 / self.seconds
    }

    /// The lens's microseconds per operation.
    pub fn us_per_op(&self) -> f64 {
        self.seconds * 1e6 / self.ops.max(1) as f64
    }

    /// Time per operation of `other` over `base`'s: `base`'s speedup, per operation as the
    /// runner stretches the write phases of engines with write buffers
    /// (`runner::BUFFER_RULE`), so the engines' phases differ in length. `None` when either
    /// phase has no device time (on a simulated SSD every write stayed in memory or the WAL).
    pub fn speedup(base: &Measured, other: &Measured) -> Option<f64> {
        if base.seconds <= 0.0 || other.seconds <= 0.0 {
            return None;
        }
        Some(other.us_per_op() / base.us_per_op())
    }

    /// The headings of [`Measured::columns`], as wide as its columns.
    pub fn headings() -> String {
        format!(
            "{:>8} {:>7} {:>10} {:>10} {:>9} {:>9} {:>7} {:>8} {:>7} {:>8} {:>4}",
            "entries",
            "ops",
            "us/op",
            "wall us/op",
            "p99.9 us",
            "max us",
            "rd/op",
            "rreq/op",
            "wr/op",
            "wreq/op",
            "qd"
        )
    }

    /// The phase as a table's columns: sizes, the lens's and the wall's time per
    /// operation, tail latencies, pages and requests per operation, the deepest queue.
    pub fn columns(&self) -> String {
        format!(
            "{:>8} {:>7} {:>10.1} {:>10.1} {:>9.0} {:>9.0} {:>7.2} {:>8.2} {:>7.2} {:>8.3} {:>4}",
            self.entries,
            self.ops,
            self.us_per_op(),
            self.wall_seconds * 1e6 / self.ops.max(1) as f64,
            self.p999_us,
            self.max_us,
            self.reads_per_op,
            self.read_requests_per_op,
            self.writes_per_op,
            self.write_requests_per_op,
            self.queue_depth,
        )
    }

    /// Pages and requests per operation, read and written (`reads 1.20 pages in 1.00
    /// requests, writes 0.10 in 0.010`), for a claim's measured reason.
    pub fn io(&self) -> String {
        format!(
            "reads {:.2} pages in {:.2} requests, writes {:.2} in {:.3}",
            self.reads_per_op,
            self.read_requests_per_op,
            self.writes_per_op,
            self.write_requests_per_op
        )
    }
}

/// A lens of the run and its device profile.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LensInfo {
    pub lens: String,
    /// The device: the disk's profile path, or the simulated SSD's geometry and FTL.
    pub device: String,
    /// Where the cost models' profile came from.
    pub profile: String,
    /// Random 4 KiB read IOPS over random 4 KiB write IOPS (QD1) of that profile.
    pub read_over_write: f64,
    /// Random 4 KiB read IOPS at QD32 over QD1: what psync groups can gain.
    #[serde(default)]
    pub read_qd32_over_qd1: f64,
}

/// The label of a lens key in claims (`this disk`, `simulated mtron`).
pub fn lens_label(key: &str) -> String {
    if key == "disk" {
        super::DISK.into()
    } else {
        format!("simulated {key}")
    }
}

impl LensInfo {
    /// The lens of `key` among `lenses`.
    pub fn find<'a>(lenses: &'a [LensInfo], key: &str) -> Option<&'a LensInfo> {
        lenses.iter().find(|l| l.lens == key)
    }

    /// `lens`, whose profile `profile` was read from (or saved to) `path`.
    pub fn of(lens: Lens, path: &Path, profile: &DeviceProfile) -> LensInfo {
        LensInfo {
            lens: lens.key().into(),
            device: lens.device(profile),
            profile: path.display().to_string(),
            read_over_write: Metric::RandReadOverRandWrite.of(profile).unwrap_or(0.0),
            read_qd32_over_qd1: profile.rand_read_iops_qd32 / profile.rand_read_iops_qd1.max(1e-9),
        }
    }
}
