//! The measured phase of one workload: a fresh copy of the aged image, the warm-up, the
//! timed operation stream with its final sync, and the [`Record`] of what it did (latency
//! series, I/O per operation, write amplification, share of the device's limit).

use super::aging::Prepared;
use super::calibrate::{calibration, Calibrator};
use super::config::{BenchConfig, Subject};
use super::params::engine_params;
use super::ui::{say, Ui};
use crate::cgroup::{
    evict_from_page_cache, PageCacheBound, FOLLOW_HEADROOM, PEER_MEMORY_ALLOWANCE,
};
use crate::peers;
use crate::probe::DeviceProfile;
use crate::report::{self, Interval, Latency, MergeThreadUse, Record};
use crate::target::{process_cpu_seconds, process_io, Target};
use crate::units::format_size;
use crate::workload::{rng_for, KeyGen, Op, OpStream, Workload};
use anyhow::{bail, Context, Result};
use flashix::Db;
use std::path::Path;
use std::time::Instant;

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
progress) rather than just after the index was opened (the FD-tree's quick O-Insert phase \
otherwise spent its first 6 of 30-40 ms filling its head tree with no merge running). \
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
with read time = max(read requests per op / random-read IOPS at the engine's mean read queue \
depth in the phase (read requests / read batches, DeviceStats::read_batches; interpolated in \
log2(QD) between the profile's QD1 and QD32, clamped), read bytes per op / sequential read bandwidth) and write time = bytes \
written per op (device and WAL) / sequential write bandwidth. The limit is 1 / device time \
(ops/s); the share is the measured ops/s divided by it. A pure search workload is thus \
bounded by the random-read IOPS at its queue depth, a pure insert workload by the \
sequential write bandwidth divided by the bytes it writes per insert. Peers' I/O is counted \
from /proc/self/io (read and written bytes; requests taken as 4 KiB pages). Their queue depth cannot be observed (background threads, readahead), so their reads are charged at the profile's QD32 rate, the device's best case: a peer's share is a lower bound.";

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

/// Run workload `w` on a fresh copy of the aged image and measure it.
pub fn run_workload(
    cfg: &BenchConfig,
    ui: &Ui,
    subject: Subject,
    prep: &Prepared,
    w: Workload,
    profile: &DeviceProfile,
    calibrator: Option<&mut Calibrator>,
) -> Result<Record> {
    let run_dir = cfg.dir.join(subject.name()).join("run");
    let pb = ui.spinner(format!("{subject}: copying the aged image"));
    copy_dir(&prep.aged_dir, &run_dir)?;
    pb.finish_and_clear();
    let rec = measure(cfg, ui, subject, prep, w, &run_dir, profile, calibrator);
    let removed = std::fs::remove_dir_all(&run_dir)
        .with_context(|| format!("removing {}", run_dir.display()));
    let rec = rec?;
    removed?;
    Ok(rec)
}

/// Execute one operation; an error also when a result contradicts the stream (a live key
/// not found while the index holds entries).
fn execute(db: &mut dyn Target, op: &Op, live: bool) -> Result<()> {
    match op {
        Op::Get(k) => {
            let v = db.get(*k).context("search")?;
            if v.is_none() && live {
                bail!("the engine lost key {k:#x}: get returned nothing for a live key");
            }
        }
        Op::Insert(k, v) | Op::Update(k, v) => db.insert(*k, *v).context("insert")?,
        Op::Delete(k) => db.delete(*k).context("delete")?,
        Op::Range { start, len } => {
            let (first, _) = db.scan(*start, *len).context("range")?;
            if live && first != Some(*start) {
                bail!("the engine lost key {start:#x}: a range from it began at {first:?}");
            }
        }
        Op::GetMany(keys) => {
            let vs = db.get_many(keys).context("get_many")?;
            if live {
                if let Some(i) = vs.iter().position(Option::is_none) {
                    bail!(
                        "the engine lost key {:#x}: get_many returned nothing for a live key",
                        keys[i]
                    );
                }
            }
        }
        Op::BulkInsert(pairs) => db.bulk_insert(pairs).context("bulk_insert")?,
        Op::DeleteRange { lo, hi, keys } => {
            if *keys > 0 {
                db.delete_range(*lo, *hi).context("delete_range")?;
            }
        }
    }
    Ok(())
}

/// Keys an operation writes (inserts, updates, deletes).
fn written_keys(op: &Op) -> u64 {
    match op {
        Op::Insert(..) | Op::Update(..) | Op::Delete(_) => 1,
        Op::BulkInsert(p) => p.len() as u64,
        Op::DeleteRange { keys, .. } => *keys,
        Op::Get(_) | Op::Range { .. } | Op::GetMany(_) => 0,
    }
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

#[allow(clippy::too_many_arguments)]
fn measure(
    cfg: &BenchConfig,
    ui: &Ui,
    subject: Subject,
    prep: &Prepared,
    w: Workload,
    run_dir: &Path,
    profile: &DeviceProfile,
    mut calibrator: Option<&mut Calibrator>,
) -> Result<Record> {
    // The device's QD1 reads just before the phase (CALIBRATION_RULE), before anything of
    // the phase is in memory.
    let calibrated_before = calibrator
        .as_deref_mut()
        .map(Calibrator::qd1_iops)
        .transpose()?;
    let gen = KeyGen::new(cfg.key_dist, cfg.seed);
    let phase = phase_ops(cfg.ops, w, prep.write_buffer);
    let warm_writes = write_warmup_ops(phase, w, prep.write_buffer);
    let mut stream = OpStream::new(w, gen, prep.live, cfg.seed, warm_writes + phase)?;
    let nops = stream.operations().saturating_sub(warm_writes);
    let mut lat: Vec<u64> = Vec::with_capacity(nops as usize);
    // Touch the latency buffer now, so that a memory cgroup entered below is not charged
    // for it.
    lat.resize(nops as usize, 1);
    lat.clear();
    let info = subject.info(cfg);
    // A peer reading through the page cache runs its phase in a memory cgroup (module
    // crate::cgroup), from a store none of which is cached.
    let mut page_cache = match subject {
        Subject::Peer(_) if !info.page_cache_bypassed => {
            evict_from_page_cache(run_dir)?;
            let bound = PageCacheBound::confine(
                cfg.buffer_pool_bytes + PEER_MEMORY_ALLOWANCE,
                subject.name(),
            );
            if let PageCacheBound::Unbounded(why) = &bound {
                say(cfg, ui, &format!("{subject}: {why}"));
            }
            Some(bound)
        }
        _ => None,
    };
    let mut db = open_subject(cfg, subject, run_dir, profile)?;

    // Warm the cache (not measured), with draws of its own so the measured stream does not
    // depend on the warm-up (nor on how far BUFFER_RULE stretches it).
    let warm = (cfg.ops / 10).min(10_000);
    let mut wrng = rng_for(cfg.seed, 0x5741_524d ^ w.seed_index());
    for _ in 0..warm {
        if let Some(k) = stream.pick_existing(&mut wrng) {
            db.get(k).context("warm-up search")?;
        }
    }

    // Equal memory from here on: the page cache gets the budget beside the peer's heap
    // (crate::cgroup, "Equal memory").
    let follower = match (&mut page_cache, subject) {
        (Some(PageCacheBound::Cgroup(cg)), Subject::Peer(p)) => {
            Some(cg.follow_heap(p.page_cache_share(cfg.buffer_pool_bytes))?)
        }
        _ => None,
    };

    // Turn the write buffer over once, unmeasured (BUFFER_RULE): the phase starts with it
    // being emptied, as it goes on. (A peer's at the full scale takes a minute or more.)
    if warm_writes > 0 {
        let pb = ui.bar(warm_writes, format!("{subject}: {w}, warm-up"));
        for n in 1..=warm_writes {
            let live = stream.live() > 0;
            let Some(op) = stream.next_op() else { break };
            execute(db.as_mut(), &op, live).context("write warm-up")?;
            if n % 64 == 0 {
                pb.set_position(n);
            }
        }
        pb.finish_and_clear();
    }

    let pb = ui.bar(nops, format!("{subject}: {w}"));
    let interval = nops.div_ceil(SERIES_POINTS).max(1);
    let mut interval_ends: Vec<f64> = Vec::with_capacity(SERIES_POINTS as usize + 1);
    let mut write_keys = 0u64;
    let s0 = db.flashix_stats();
    let io0 = process_io();
    let cpu0 = process_cpu_seconds();
    let rss0 = crate::target::reset_peak_rss()
        .then(crate::target::process_rss)
        .flatten();
    let t0 = Instant::now();
    let mut n = 0u64;
    while let Some(op) = stream.next_op() {
        let live = stream.live() > 0;
        write_keys += written_keys(&op);
        let start = Instant::now();
        execute(db.as_mut(), &op, live)?;
        lat.push(start.elapsed().as_nanos() as u64);
        n += 1;
        if n % interval == 0 {
            interval_ends.push(t0.elapsed().as_secs_f64());
        }
        if n % 64 == 0 {
            pb.set_position(n);
        }
    }
    db.flush()
        .context("sync (flush) at the end of the measured phase")?;
    let elapsed = t0.elapsed().as_secs_f64();
    if n % interval != 0 {
        interval_ends.push(elapsed);
    } else if let Some(last) = interval_ends.last_mut() {
        // The last interval includes the final sync.
        *last = elapsed;
    }
    let cpu1 = process_cpu_seconds();
    let rss_growth = rss0
        .zip(crate::target::process_rss())
        .map(|((start, _), (_, peak))| peak.saturating_sub(start));
    pb.finish_and_clear();
    let io1 = process_io();
    let s1 = db.flashix_stats();
    let memory = db.memory_bytes().unwrap_or(cfg.buffer_pool_bytes);
    db.close().context("closing the index")?;
    let followed = follower.map(|f| f.stop()).transpose()?;
    let (memory, memory_bound) = match (&page_cache, followed) {
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
    };
    // Leave the cgroup.
    drop(page_cache);
    // ... and just after it, the index closed.
    let calibrated_after = calibrator.map(Calibrator::qd1_iops).transpose()?;
    let calibrated = calibrated_before.zip(calibrated_after);

    let series = interval_series(&lat, interval, &interval_ends);
    let ops = nops as f64;
    let per_op = |a: u64, b: u64| b.saturating_sub(a) as f64 / ops;
    let (engine_params, model) = match (subject, &s1) {
        (Subject::Engine(e), Some(s)) => engine_params(cfg, e, s, stream.live(), profile)?,
        _ => (String::new(), None),
    };
    let mut rec = Record {
        engine: subject.name().to_string(),
        workload: w.name(),
        entries: prep.live,
        ops: nops,
        keys_per_op: w.keys_per_op(),
        ops_per_sec: ops / elapsed.max(1e-9),
        latency_us: Latency::from_nanos(&mut lat),
        reads_per_op: 0.0,
        writes_per_op: 0.0,
        read_requests_per_op: 0.0,
        write_requests_per_op: 0.0,
        bytes_written_per_op: 0.0,
        wal_bytes_per_op: 0.0,
        memory_bytes: memory,
        rss_growth_bytes: rss_growth,
        buffer_hit_ratio: 0.0,
        elapsed_s: elapsed,
        prepare_s: prep.prepare_s,
        aging_inserts: prep.aging_inserts,
        key_dist: cfg.key_dist.to_string(),
        engine_params,
        model,
        kind: match subject {
            Subject::Engine(_) => "flashix".into(),
            Subject::Peer(_) => "peer".into(),
        },
        memory_bound,
        page_cache_bypassed: info.page_cache_bypassed,
        commit_model: info.commit_model,
        io_counted_by: String::new(),
        queue_depth: 1,
        write_keys_per_op: write_keys as f64 / ops,
        buffer_turnovers: prep
            .write_buffer
            .filter(|_| w.writes())
            .map(|b| write_keys as f64 / b as f64),
        warm_up_write_ops: warm_writes,
        write_amplification: None,
        device_limit: None,
        calibration: None,
        series,
        repeat: None,
        sim_seconds: None,
        cpu_us_per_op: Some((cpu1 - cpu0) * 1e6 / ops),
        merge_thread: None,
    };
    let read_bytes_per_op;
    let read_queue_depth;
    match (s0, s1) {
        (Some(s0), Some(s1)) => {
            let (d0, d1) = (&s0.device, &s1.device);
            rec.reads_per_op = per_op(d0.reads, d1.reads);
            rec.writes_per_op = per_op(d0.writes, d1.writes);
            rec.read_requests_per_op = per_op(d0.read_requests, d1.read_requests);
            rec.write_requests_per_op = per_op(d0.write_requests, d1.write_requests);
            rec.bytes_written_per_op = per_op(d0.write_bytes, d1.write_bytes);
            rec.wal_bytes_per_op = per_op(s0.wal.bytes, s1.wal.bytes);
            read_bytes_per_op = per_op(d0.read_bytes, d1.read_bytes);
            let hits = s1.buffer.hits.saturating_sub(s0.buffer.hits);
            let misses = s1.buffer.misses.saturating_sub(s0.buffer.misses);
            rec.buffer_hit_ratio = if hits + misses == 0 {
                0.0
            } else {
                hits as f64 / (hits + misses) as f64
            };
            rec.queue_depth = d1.max_queue_depth.max(1);
            let read_batches = d1.read_batches.saturating_sub(d0.read_batches);
            read_queue_depth = if read_batches == 0 {
                1.0
            } else {
                d1.read_requests.saturating_sub(d0.read_requests) as f64 / read_batches as f64
            };
            rec.io_counted_by = "flashix device and WAL counters".into();
            rec.merge_thread = merge_thread_use(&s0, &s1, ops);
            let sim_us = |s: &flashix::Stats| s.device.flash.get("sim_time_us").copied();
            if let (Some(a), Some(b)) = (sim_us(&s0), sim_us(&s1)) {
                rec.sim_seconds = Some(b.saturating_sub(a) as f64 / 1e6);
            }
        }
        _ => {
            // Peers: the process's storage I/O, in 4 KiB pages.
            read_bytes_per_op = per_op(io0.0, io1.0);
            rec.bytes_written_per_op = per_op(io0.1, io1.1);
            rec.reads_per_op = read_bytes_per_op / 4096.0;
            rec.writes_per_op = rec.bytes_written_per_op / 4096.0;
            rec.read_requests_per_op = rec.reads_per_op;
            rec.write_requests_per_op = rec.writes_per_op;
            read_queue_depth = PEER_CHARGED_QUEUE_DEPTH as f64;
            rec.io_counted_by = "/proc/self/io (bytes; requests taken as 4 KiB pages, charged \
                                 at QD32)"
                .into();
        }
    }
    let written = rec.bytes_written_per_op + rec.wal_bytes_per_op;
    if rec.write_keys_per_op > 0.0 {
        rec.write_amplification = Some(written / (rec.write_keys_per_op * ENTRY_BYTES));
    }
    let limit_of = |p: &DeviceProfile| {
        report::device_limit(
            p,
            read_queue_depth,
            rec.read_requests_per_op,
            read_bytes_per_op,
            written,
            rec.ops_per_sec,
        )
    };
    let device_limit = limit_of(profile);
    let calibration =
        calibrated.and_then(|(before, after)| calibration(profile, before, after, limit_of));
    rec.device_limit = device_limit;
    rec.calibration = calibration;
    Ok(rec)
}

/// The merge thread's use between the engine's counters `s0` and `s1`, per operation of
/// the `ops` between them; `None` when no merge completed on it.
fn merge_thread_use(s0: &flashix::Stats, s1: &flashix::Stats, ops: f64) -> Option<MergeThreadUse> {
    let delta = |n: &str| {
        let c = |s: &flashix::Stats| s.engine_counters.get(n).copied().unwrap_or(0);
        c(s1).saturating_sub(c(s0))
    };
    let merges = delta("thread_merges");
    (merges > 0).then(|| MergeThreadUse {
        merges,
        wall_us_per_op: delta("merge_thread_us") as f64 / ops,
        cpu_us_per_op: delta("merge_thread_cpu_us") as f64 / ops,
        io_wait_us_per_op: delta("merge_thread_io_wait_us") as f64 / ops,
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
        use crate::peers::PeerKind;
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
