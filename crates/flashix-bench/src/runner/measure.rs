//! The measured phase of one cell (a subject, a workload, a thread count): how long it
//! runs (BUFFER_RULE), a fresh copy of the aged image, the warm-ups, the timed operation
//! streams of its threads with the final sync ([`super::threads`]), and the counters the
//! [`Record`] of what it did is made of (module `record`: latency series, I/O per
//! operation, write amplification, share of the device's limit).

use super::aging::Prepared;
use super::calibrate::Calibrator;
use super::config::{BenchConfig, Subject};
use super::threads::{execute, merge, run_phase, Merged, Streams, ThreadRun};
use super::ui::{say, Ui};
use crate::output::report::{Interval, Latency, Record};
use crate::probe::DeviceProfile;
use crate::subjects::cgroup::{
    evict_from_page_cache, FollowReport, HeapFollower, PageCacheBound, FOLLOW_HEADROOM,
    PEER_MEMORY_ALLOWANCE,
};
use crate::subjects::peers;
use crate::subjects::{process_cpu_seconds, process_io, Session, Target, TargetInfo};
use crate::units::format_size;
use crate::workload::{rng_for, KeyGen, Workload};
use anyhow::{Context, Result};
use flashix::Db;
use std::path::Path;

/// Times a write workload's phase turns the engine's write buffer over (BUFFER_RULE).
pub const BUFFER_TURNOVERS: f64 = 3.0;
/// Most operations a write workload's phase is stretched to, in multiples of OPS.
pub const BUFFER_MAX_OPS_FACTOR: u64 = 20;

/// How write workloads are sized for engines with write buffers, as printed and saved.
pub const BUFFER_RULE: &str = "a workload of point operations that writes (o-insert, \
o-delete, o-update, w-*, mix-*, tpcc) on an engine with a write buffer (PIO OPQ, FD-tree head \
tree, LSM C0, bulk-index delta, FBX log buffer; Shape::write_buffer_entries; the memtables of \
RocksDB and fjall, taken as their bytes / 16, the bytes of a key and a value, so at least \
their entries) runs \
max(OPS, 3 x buffer entries / write share) operations, at most 20 x OPS, so that the buffer \
turns over about 3 times inside the measured phase and the cell measures the engine's steady \
state rather than its buffer; the same operation stream, longer. Before the phase, unmeasured, \
the stream's first min(buffer entries / write share, phase / 3) operations turn the buffer \
over once, so that the phase starts as it goes on, with the buffer being emptied (a merge in \
progress) rather than just after the index was opened (a short phase would otherwise \
spend a good share of its time filling an empty buffer with no merge running). \
buffer_turnovers in results.json is keys written in the phase / buffer entries; a cell \
below 1 is marked (the buffer absorbed the phase).";

/// Operations of workload `w`'s phase: OPS, stretched for a write buffer of `buffer`
/// entries (BUFFER_RULE).
pub fn phase_ops(ops: u64, w: Workload, buffer: Option<u64>) -> u64 {
    match (w.write_share(), buffer) {
        (Some(share), Some(buf)) => {
            let want = (BUFFER_TURNOVERS * buf as f64 / share).ceil() as u64;
            want.clamp(ops, ops.saturating_mul(BUFFER_MAX_OPS_FACTOR))
        }
        _ => ops,
    }
}

/// Operations run before a phase of `phase` operations of workload `w`, unmeasured, to turn
/// a write buffer of `buffer` entries over once (BUFFER_RULE): none for workloads that do
/// not write point keys and engines without a buffer.
pub fn write_warmup_ops(phase: u64, w: Workload, buffer: Option<u64>) -> u64 {
    match (w.write_share(), buffer) {
        (Some(share), Some(buf)) => {
            let one = (buf as f64 / share).ceil() as u64;
            one.min((phase as f64 / BUFFER_TURNOVERS).ceil() as u64)
        }
        _ => 0,
    }
}

/// Points of the per-interval latency series of a measured phase.
pub const SERIES_POINTS: u64 = 100;

/// How the share of the device's limit is computed, as printed and saved.
pub const DEVICE_LIMIT_RULE: &str = "device time per operation = read time + write time, \
with read time = max(read requests per op / random-read IOPS at the device's mean queue depth \
in the phase, read bytes per op / sequential read bandwidth) and write time = bytes written \
per op (device and WAL) / sequential write bandwidth. The mean queue depth is the time the \
device's requests spent in flight, summed (DeviceStats::inflight_ns), over the phase's wall \
time (Little's law); where the device does not time its requests, the engine's mean read \
queue depth stands in for it (read requests / read batches, DeviceStats::read_batches). The \
IOPS at that depth are interpolated in log2(QD) between the depths the profile measured (1, \
2, 4, 8, 16 and 32; QD1 and QD32 alone in older profiles), clamped to the lowest and the \
highest. The limit is 1 / device time (ops/s); the share is the measured ops/s divided by it. \
A pure search workload is thus bounded by the random-read IOPS at the queue depth it \
reached (with several threads, the depth their requests reached together), a pure insert \
workload by the sequential write bandwidth divided by the bytes it writes per insert. Peers' \
I/O is counted from /proc/self/io (read and written bytes; requests taken as 4 KiB pages). \
Their queue depth cannot be observed (background threads, readahead), so their reads are \
charged at the profile's QD32 rate, the device's best case: a peer's share is a lower bound.";

/// The queue depth a peer's reads are charged at (DEVICE_LIMIT_RULE): the profile's highest.
pub const PEER_CHARGED_QUEUE_DEPTH: u32 = 32;

/// Copy every file of `from` into a fresh `to`, and sync the copies.
pub fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    if to.exists() {
        std::fs::remove_dir_all(to).with_context(|| format!("removing {}", to.display()))?;
    }
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for entry in std::fs::read_dir(from).with_context(|| format!("listing {}", from.display()))? {
        let entry = entry.with_context(|| format!("listing {}", from.display()))?;
        let src = entry.path();
        let dst = to.join(entry.file_name());
        let ty = entry
            .file_type()
            .with_context(|| format!("reading {}", src.display()))?;
        if ty.is_dir() {
            copy_dir(&src, &dst)?;
        } else {
            copy_sparse(&src, &dst)
                .with_context(|| format!("copying {} to {}", src.display(), dst.display()))?;
            // Write the copy back now, so the measured phase does not pay for it.
            std::fs::File::open(&dst)
                .and_then(|f| f.sync_all())
                .with_context(|| format!("syncing {}", dst.display()))?;
        }
    }
    Ok(())
}

/// Copy file `from` to `to`, leaving every all-zero MiB of it a hole: the same bytes,
/// without writing the zeros. A simulated SSD's NAND file is mostly erased (zero) flash,
/// hundreds of MiB for the large profiles (`iodrive`: 64 blocks on each of 48 chips), and
/// a plain copy of it wrote them all, for every measured phase.
fn copy_sparse(from: &Path, to: &Path) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom, Write};
    const CHUNK: usize = 1 << 20;
    let mut r = std::fs::File::open(from)?;
    let len = r.metadata()?.len();
    let mut w = std::fs::File::create(to)?;
    let mut buf = vec![0u8; CHUNK];
    let mut at = 0u64;
    loop {
        let mut n = 0;
        while n < CHUNK {
            match r.read(&mut buf[n..])? {
                0 => break,
                k => n += k,
            }
        }
        if n == 0 {
            break;
        }
        if buf[..n].iter().any(|&b| b != 0) {
            w.seek(SeekFrom::Start(at))?;
            w.write_all(&buf[..n])?;
        }
        at += n as u64;
    }
    w.set_len(len)
}

/// Run workload `w` with `threads` threads on a fresh copy of the aged image and measure
/// it.
#[allow(clippy::too_many_arguments)]
pub fn run_workload(
    cfg: &BenchConfig,
    ui: &Ui,
    subject: Subject,
    prep: &Prepared,
    w: Workload,
    threads: u32,
    profile: &DeviceProfile,
    calibrator: Option<&mut Calibrator>,
) -> Result<Record> {
    let run_dir = cfg.dir.join(subject.name()).join("run");
    let pb = ui.spinner(format!("{subject}: copying the aged image"));
    copy_dir(&prep.aged_dir, &run_dir)?;
    pb.finish_and_clear();
    let cell = Cell {
        cfg,
        ui,
        subject,
        prep,
        w,
        threads,
    };
    let rec = cell.measure(&run_dir, profile, calibrator);
    let removed = std::fs::remove_dir_all(&run_dir)
        .with_context(|| format!("removing {}", run_dir.display()));
    let rec = rec?;
    removed?;
    Ok(rec)
}

/// Bytes of an entry (8-byte key, 8-byte value), the unit of write amplification.
pub const ENTRY_BYTES: f64 = 16.0;

fn open_subject(
    cfg: &BenchConfig,
    subject: Subject,
    dir: &Path,
    profile: &DeviceProfile,
) -> Result<Box<dyn Target>> {
    Ok(match subject {
        Subject::Engine(e) => Box::new(
            Db::open_with_buffer_pool(dir, cfg.measured_pool(e, profile)?)
                .with_context(|| format!("opening {}", dir.display()))?,
        ),
        Subject::Peer(p) => peers::open(p, dir, cfg.buffer_pool_bytes, false)?,
    })
}

/// One cell of the suite: a subject, a workload and a thread count, with the suite's
/// configuration and the subject's aged image.
pub(super) struct Cell<'a> {
    pub cfg: &'a BenchConfig,
    pub ui: &'a Ui,
    pub subject: Subject,
    pub prep: &'a Prepared,
    pub w: Workload,
    pub threads: u32,
}

/// The counters a phase is measured by, read at its start and at its end.
pub(super) struct Snapshot {
    /// A flashix engine's statistics (`None` for peers).
    pub stats: Option<flashix::Stats>,
    /// The process's storage I/O, bytes read and written (`/proc/self/io`).
    pub io: (u64, u64),
    /// The process's CPU time, seconds.
    pub cpu_s: f64,
}

impl Snapshot {
    fn take(db: &dyn Target) -> Snapshot {
        Snapshot {
            stats: db.flashix_stats(),
            io: process_io(),
            cpu_s: process_cpu_seconds(),
        }
    }
}

/// What a cell's measured phase did, for its record.
pub(super) struct PhaseRun {
    pub merged: Merged,
    /// Wall time of the phase, the final sync included.
    pub elapsed_s: f64,
    pub start: Snapshot,
    pub end: Snapshot,
    /// How far the process's resident memory rose above its start (Linux).
    pub rss_growth: Option<u64>,
    /// Live entries after the phase, over all threads' streams.
    pub live: u64,
    /// Operations of the write warm-up before the phase (BUFFER_RULE).
    pub warm_writes: u64,
}

impl Cell<'_> {
    /// Measure the cell on its copy of the aged image in `run_dir`: the calibration reads
    /// before, the subject opened (a peer reading through the page cache in a memory
    /// cgroup), the warm-ups and the phase, the close, the calibration reads after.
    fn measure(
        &self,
        run_dir: &Path,
        profile: &DeviceProfile,
        mut calibrator: Option<&mut Calibrator>,
    ) -> Result<Record> {
        let (cfg, subject, w) = (self.cfg, self.subject, self.w);
        // The device's QD1 reads just before the phase (CALIBRATION_RULE), before anything
        // of the phase is in memory.
        let calibrated_before = calibrator
            .as_deref_mut()
            .map(Calibrator::qd1_iops)
            .transpose()?;
        let gen = KeyGen::new(cfg.key_dist, cfg.seed);
        let phase = phase_ops(cfg.ops, w, self.prep.write_buffer);
        let warm_writes = write_warmup_ops(phase, w, self.prep.write_buffer);
        let streams = Streams::new(
            w,
            gen,
            self.prep.live,
            cfg.seed,
            (warm_writes, phase),
            self.threads,
        )?;
        // The latency buffers are touched now, so that a memory cgroup entered below is not
        // charged for them.
        let runs: Vec<ThreadRun> = streams
            .streams
            .iter()
            .zip(&streams.warm)
            .map(|(s, &warm)| ThreadRun::with_room(s.operations() - warm))
            .collect();
        let info = subject.info(cfg);
        let mut page_cache = self.confine(&info, run_dir)?;
        let db = open_subject(cfg, subject, run_dir, profile)?;
        let (run, follower) = self.run(db.as_ref(), streams, runs, &mut page_cache)?;
        let memory = db.memory_bytes().unwrap_or(cfg.buffer_pool_bytes);
        db.close().context("closing the index")?;
        let followed = follower.map(|f| f.stop()).transpose()?;
        let (memory, memory_bound) = memory_bound(&page_cache, followed, memory, &info)?;
        // Leave the cgroup.
        drop(page_cache);
        // ... and just after it, the index closed.
        let calibrated_after = calibrator.map(Calibrator::qd1_iops).transpose()?;
        let calibrated = calibrated_before.zip(calibrated_after);
        let mut rec = self.record(run, profile, calibrated)?;
        rec.memory_bytes = memory;
        rec.memory_bound = memory_bound;
        Ok(rec)
    }

    /// A peer reading through the page cache runs its phase in a memory cgroup (module
    /// crate::subjects::cgroup), from a store none of which is cached; `None` for the others.
    fn confine(&self, info: &TargetInfo, run_dir: &Path) -> Result<Option<PageCacheBound>> {
        let (cfg, subject) = (self.cfg, self.subject);
        Ok(match subject {
            Subject::Peer(_) if !info.page_cache_bypassed => {
                evict_from_page_cache(run_dir)?;
                let bound = PageCacheBound::confine(
                    cfg.buffer_pool_bytes + PEER_MEMORY_ALLOWANCE,
                    subject.name(),
                );
                if let PageCacheBound::Unbounded(why) = &bound {
                    say(cfg, self.ui, &format!("{subject}: {why}"));
                }
                Some(bound)
            }
            _ => None,
        })
    }

    /// The cache warm-up, the write warm-up (both on this thread, unmeasured), then the
    /// measured phase on every thread and the final sync. Returns what the phase did and
    /// the peer's heap follower, to be stopped once the store is closed.
    fn run(
        &self,
        db: &dyn Target,
        mut streams: Streams,
        runs: Vec<ThreadRun>,
        page_cache: &mut Option<PageCacheBound>,
    ) -> Result<(PhaseRun, Option<HeapFollower>)> {
        let (cfg, subject, w) = (self.cfg, self.subject, self.w);
        let mut session = db.session()?;
        warm_cache(cfg, w, &streams, session.as_mut())?;
        // Equal memory from here on: the page cache gets the budget beside the peer's heap
        // (crate::subjects::cgroup, "Equal memory").
        let follower = match (page_cache, subject) {
            (Some(PageCacheBound::Cgroup(cg)), Subject::Peer(p)) => {
                Some(cg.follow_heap(p.page_cache_share(cfg.buffer_pool_bytes))?)
            }
            _ => None,
        };
        let warm_writes = self.warm_writes(&mut streams, session.as_mut())?;
        let pb = self.ui.bar(streams.ops, self.phase_label());
        let start = Snapshot::take(db);
        let rss0 = crate::subjects::reset_peak_rss()
            .then(crate::subjects::process_rss)
            .flatten();
        let live_streams = std::mem::take(&mut streams.streams);
        let (runs, t0) = run_phase(db, session, live_streams, runs, &pb)?;
        db.flush()
            .context("sync (flush) at the end of the measured phase")?;
        let elapsed_s = t0.elapsed().as_secs_f64();
        let cpu_s = process_cpu_seconds();
        let rss_growth = rss0
            .zip(crate::subjects::process_rss())
            .map(|((start, _), (_, peak))| peak.saturating_sub(start));
        pb.finish_and_clear();
        let mut end = Snapshot::take(db);
        end.cpu_s = cpu_s;
        let live = runs.iter().map(|r| r.live).sum();
        let merged = merge(runs, elapsed_s);
        Ok((
            PhaseRun {
                merged,
                elapsed_s,
                start,
                end,
                rss_growth,
                live,
                warm_writes,
            },
            follower,
        ))
    }

    /// Turn the write buffer over once, unmeasured (BUFFER_RULE): the phase starts with it
    /// being emptied, as it goes on. Each stream's share of the warm-up runs in turn, on
    /// this thread. (A peer's at the full scale is long.)
    fn warm_writes(&self, streams: &mut Streams, session: &mut dyn Session) -> Result<u64> {
        let total: u64 = streams.warm.iter().sum();
        if total == 0 {
            return Ok(0);
        }
        let pb = self
            .ui
            .bar(total, format!("{}: {}, warm-up", self.subject, self.w));
        let mut n = 0u64;
        for (stream, &warm) in streams.streams.iter_mut().zip(&streams.warm) {
            for _ in 0..warm {
                let live = stream.live() > 0;
                let Some(op) = stream.next_op() else { break };
                execute(session, &op, live).context("write warm-up")?;
                n += 1;
                if n % 64 == 0 {
                    pb.set_position(n);
                }
            }
        }
        pb.finish_and_clear();
        Ok(total)
    }

    /// The label of the phase's progress bar: the subject and workload, and the threads
    /// when there are several.
    fn phase_label(&self) -> String {
        match self.threads {
            1 => format!("{}: {}", self.subject, self.w),
            t => format!("{}: {}, {t} threads", self.subject, self.w),
        }
    }
}

/// Warm the cache (not measured) with point searches of live keys, with draws of its own
/// so the measured streams do not depend on the warm-up (nor on how far BUFFER_RULE
/// stretches them); the keys come from the threads' streams in turn.
fn warm_cache(
    cfg: &BenchConfig,
    w: Workload,
    streams: &Streams,
    session: &mut dyn Session,
) -> Result<()> {
    let warm = (cfg.ops / 10).min(10_000);
    let mut wrng = rng_for(cfg.seed, 0x5741_524d ^ w.seed_index());
    let n = streams.streams.len().max(1) as u64;
    for i in 0..warm {
        let stream = &streams.streams[(i % n) as usize];
        if let Some(k) = stream.pick_existing(&mut wrng) {
            session.get(k).context("warm-up search")?;
        }
    }
    Ok(())
}

/// How memory was bounded in the phase, and the memory reported: a peer's cgroup peak and
/// the heap follower's report, or the subject's own figure.
fn memory_bound(
    page_cache: &Option<PageCacheBound>,
    followed: Option<FollowReport>,
    memory: u64,
    info: &TargetInfo,
) -> Result<(u64, String)> {
    Ok(match (page_cache, followed) {
        (Some(PageCacheBound::Cgroup(cg)), Some(f)) => {
            let peak = cg.peak_bytes()?;
            let bound = format!(
                "memory cgroup: page cache limited to {} beside the heap (the budget less \
                 the peer's own cache), the limit following the heap (open and warm-up \
                 under budget + {}; dirty page cache, writeback and {} of headroom on \
                 top); peak {} (page cache {}, of it dirty {}, heap {}), limit hit {} \
                 times, under OOM in {} looks, lowering refused (EBUSY) in {}; {}",
                format_size(f.budget),
                format_size(PEER_MEMORY_ALLOWANCE),
                format_size(FOLLOW_HEADROOM),
                format_size(peak),
                format_size(f.peak_cache),
                format_size(f.peak_dirty),
                format_size(f.peak_heap),
                cg.limit_hits()?,
                f.under_oom,
                f.busy,
                info.memory_bound
            );
            (peak, bound)
        }
        (Some(PageCacheBound::Unbounded(why)), _) => {
            (memory, format!("{why}; {}", info.memory_bound))
        }
        _ => (memory, info.memory_bound.clone()),
    })
}

/// Per-interval points from per-operation latencies (ns, in operation order), `interval`
/// operations each, and the elapsed time at the end of each interval.
pub fn interval_series(lat: &[u64], interval: u64, ends: &[f64]) -> Vec<Interval> {
    let mut out = Vec::with_capacity(ends.len());
    let mut prev_end = 0.0;
    for (chunk, &end) in lat.chunks(interval.max(1) as usize).zip(ends) {
        let mut v = chunk.to_vec();
        let l = Latency::from_nanos(&mut v);
        let dt = (end - prev_end).max(1e-9);
        out.push(Interval {
            end_s: end,
            ops: chunk.len() as u64,
            ops_per_sec: chunk.len() as f64 / dt,
            mean_us: l.mean,
            p50_us: l.p50,
            p99_us: l.p99,
            max_us: l.max,
        });
        prev_end = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_split_the_run() {
        // 10 ops of 1..=10 us in intervals of 4: 4, 4 and 2 ops.
        let lat: Vec<u64> = (1..=10).map(|x| x * 1000).collect();
        let s = interval_series(&lat, 4, &[1.0, 3.0, 3.5]);
        assert_eq!(s.iter().map(|p| p.ops).collect::<Vec<_>>(), vec![4, 4, 2]);
        assert_eq!(s[0].ops_per_sec, 4.0);
        assert_eq!(s[1].ops_per_sec, 2.0);
        assert_eq!(s[2].ops_per_sec, 4.0);
        assert_eq!((s[1].p50_us, s[1].max_us), (6.0, 8.0));
        assert_eq!(s[2].mean_us, 9.5);
    }

    /// A write workload runs long enough to turn the buffer over BUFFER_TURNOVERS times,
    /// within [OPS, 20 x OPS]; read-only workloads, workloads with their own counts and
    /// engines without a buffer keep OPS.
    #[test]
    fn write_phases_stretch_to_turn_the_buffer_over() {
        assert_eq!(phase_ops(10_000, Workload::OInsert, Some(10_000)), 30_000);
        assert_eq!(phase_ops(10_000, Workload::WSearch, Some(10_000)), 150_000);
        assert_eq!(phase_ops(10_000, Workload::WSearch, Some(100_000)), 200_000);
        assert_eq!(phase_ops(10_000, Workload::OInsert, Some(1_000)), 10_000);
        assert_eq!(phase_ops(10_000, Workload::OSearch, Some(10_000)), 10_000);
        assert_eq!(
            phase_ops(10_000, Workload::Range(1000), Some(10_000)),
            10_000
        );
        assert_eq!(
            phase_ops(10_000, Workload::RangeDelete(100), Some(10_000)),
            10_000
        );
        assert_eq!(phase_ops(10_000, Workload::OInsert, None), 10_000);
        assert_eq!(phase_ops(10_000, Workload::Tpcc, Some(10_000)), 120_968);
    }

    /// The write warm-up turns the buffer over once, at most a third of the phase (which
    /// turns it over about 3 times, or fewer when capped at 20 x OPS); none without a
    /// buffer or for workloads that write no point keys.
    #[test]
    fn the_write_warm_up_turns_the_buffer_over_once() {
        let w = |ops, wl, buf| write_warmup_ops(phase_ops(ops, wl, buf), wl, buf);
        assert_eq!(w(10_000, Workload::OInsert, Some(10_000)), 10_000);
        assert_eq!(w(100_000, Workload::OInsert, Some(10_000)), 10_000);
        assert_eq!(w(10_000, Workload::WSearch, Some(10_000)), 50_000);
        // Capped phase (200,000 of the 1.5M wanted): a third of it.
        assert_eq!(w(10_000, Workload::WSearch, Some(100_000)), 66_667);
        // A buffer the phase does not fill even once: a third of the phase.
        assert_eq!(w(10_000, Workload::OInsert, Some(1_000_000)), 66_667);
        assert_eq!(w(10_000, Workload::OInsert, None), 0);
        assert_eq!(w(10_000, Workload::OSearch, Some(10_000)), 0);
        assert_eq!(w(10_000, Workload::Range(1000), Some(10_000)), 0);
        assert_eq!(w(10_000, Workload::RangeDelete(100), Some(10_000)), 0);
    }

    /// RocksDB's and fjall's memtables count as write buffers (4 MiB of a 16 MiB budget:
    /// 262,144 entries of 16 bytes), so their insert phases turn them over as the
    /// engines' do; LMDB and redb keep OPS.
    #[test]
    fn memtable_peers_write_phases_turn_their_memtables_over() {
        use crate::subjects::peers::PeerKind;
        let budget = 16 << 20;
        assert_eq!(
            PeerKind::RocksDb.write_buffer_entries(budget),
            Some(262_144)
        );
        assert_eq!(PeerKind::Fjall.write_buffer_entries(budget), Some(262_144));
        for p in [
            PeerKind::Lmdb,
            PeerKind::LmdbBatched,
            PeerKind::Redb,
            PeerKind::RedbBatched,
        ] {
            assert_eq!(p.write_buffer_entries(budget), None);
        }
        let buf = PeerKind::Fjall.write_buffer_entries(budget);
        assert_eq!(phase_ops(100_000, Workload::OInsert, buf), 786_432);
        assert_eq!(phase_ops(100_000, Workload::OSearch, buf), 100_000);
    }
}
