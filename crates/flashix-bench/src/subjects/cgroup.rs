//! Bounding the memory of peers that read through the page cache (redb, fjall, LMDB).
//!
//! The flashix engines and RocksDB bypass the page cache (O_DIRECT), so their memory is
//! their buffer pool or block cache. A peer that reads through the page cache would, on a
//! machine with far more memory than the budget, serve its whole store from RAM after a
//! while, and its results would say nothing about an index larger than memory. So such
//! peers run under a memory cgroup where the machine allows.
//!
//! How: for the measured phase (open, warm-up, operations, sync, close) the bench process
//! moves itself into a child of its own cgroup-v1 memory cgroup whose
//! `memory.limit_in_bytes` is first the budget plus [`PEER_MEMORY_ALLOWANCE`] (open and
//! warm-up), then, for the operations, the budget plus the heap ("Equal memory" below),
//! then moves back and removes the child. (A limit set once to the budget plus the heap
//! at the start was tried: a peer whose heap grows afterwards, fjall with its memtables and
//! block cache, is then OOM-killed, since anonymous memory cannot be reclaimed; hence a
//! limit that follows the heap.)
//! Memory charged before the move (the bench's own key sets, the
//! op stream) stays with the parent (`move_charge_at_immigrate` is left at 0); what the
//! phase faults in — the peer's heap and every page-cache page it reads or writes — is
//! charged to the child, and the kernel reclaims the child's page cache to keep under the
//! limit. The store's files are written back and dropped from the page cache first
//! ([`evict_from_page_cache`]), so that pages cached by the copy of the aged image, which are
//! charged to the parent, do not serve the phase for free. The child's
//! `memory.max_usage_in_bytes` is reported as the peer's memory.
//!
//! Equal memory: once the peer is open and warm, just before the
//! measured operations, [`MemoryCgroup::follow_heap`] sets the limit to the budget plus the
//! anonymous memory charged to the child (the peer's heap: its own cache, memtables,
//! indexes), so that its page cache is the budget, and a watcher thread keeps it there as
//! the heap grows or shrinks. The child's OOM killer is disabled
//! (`memory.oom_control`): when the heap outgrows the limit between two looks (every
//! millisecond), the kernel first reclaims page cache and then pauses the allocating
//! thread instead of killing the process, until the watcher raises the limit. Page cache
//! that is dirty or under writeback (a writer's files: journals, flushed memtables,
//! compactions) cannot be reclaimed until the device has it, so it is added to the limit
//! like the heap: the share bounds the clean page cache, the one that serves reads. Without
//! it a long write phase of fjall failed with ENOMEM on a read (cgroup v1 fails a
//! syscall's page-cache charge that reclaim cannot satisfy, where a page fault would wait).
//! The watcher
//! allocates nothing on its loop (descriptors opened before, a fixed buffer), so a paused
//! process cannot stall it. It reports the peak page cache and heap it saw, and how often
//! the group was under OOM.
//!
//! Where there is no writable cgroup-v1 memory hierarchy (cgroup v2 only, no permission),
//! [`MemoryCgroup::enter`] fails with the reason and the bench marks the result "page
//! cache unbounded".

use anyhow::{bail, Context, Result};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Memory a confined peer may use beyond the budget while it opens and warms up: its heap
/// (cache, memtables, indexes of open files) and buffers. For the measured operations the
/// limit is the budget plus the heap instead ([`MemoryCgroup::follow_heap`]).
pub const PEER_MEMORY_ALLOWANCE: u64 = 64 << 20;

/// Room the followed limit leaves above the heap, the dirty page cache and the share, for
/// what the heap grows by between two looks of the watcher. A page fault that meets the
/// limit waits for the watcher, but a system call's charge fails at once (cgroup v1):
/// without this room, fjall's long write phases at the full scale failed to spawn a
/// flush thread (EAGAIN). Clean page cache may fill it while the heap does not, so a
/// peer's page cache is bounded by its share plus this.
pub const FOLLOW_HEADROOM: u64 = 8 << 20;

/// Root of the cgroup-v1 memory hierarchy.
const MEMORY_ROOT: &str = "/sys/fs/cgroup/memory";

/// How a phase's page cache is bounded.
pub enum PageCacheBound {
    /// By a memory cgroup the process is in until this is dropped.
    Cgroup(MemoryCgroup),
    /// Not at all: why ("page cache unbounded: no memory cgroup (...)").
    Unbounded(String),
}

impl PageCacheBound {
    /// Enter a memory cgroup of `limit` bytes, or say why not.
    pub fn confine(limit: u64, name: &str) -> PageCacheBound {
        match MemoryCgroup::enter(limit, name) {
            Ok(cg) => PageCacheBound::Cgroup(cg),
            Err(e) => {
                PageCacheBound::Unbounded(format!("page cache unbounded: no memory cgroup ({e:#})"))
            }
        }
    }
}

/// A child memory cgroup the process has moved into; dropping it moves the process back
/// and removes the child.
pub struct MemoryCgroup {
    dir: PathBuf,
    home: PathBuf,
}

impl MemoryCgroup {
    /// Move this process into a new child of its memory cgroup limited to `limit` bytes.
    pub fn enter(limit: u64, name: &str) -> Result<MemoryCgroup> {
        let home = own_memory_cgroup()?;
        let dir = home.join(format!("flashix-bench-{}-{name}", std::process::id()));
        if dir.exists() {
            // A leftover of an interrupted run: empty, so it can go.
            let _ = std::fs::remove_dir(&dir);
        }
        std::fs::create_dir(&dir)
            .with_context(|| format!("creating the memory cgroup {}", dir.display()))?;
        let cg = MemoryCgroup { dir, home };
        write(&cg.dir.join("memory.limit_in_bytes"), &limit.to_string())?;
        write(
            &cg.dir.join("cgroup.procs"),
            &std::process::id().to_string(),
        )?;
        Ok(cg)
    }

    /// Start the peak ([`MemoryCgroup::peak_bytes`]) afresh from the current usage.
    pub fn reset_peak(&self) -> Result<()> {
        write(&self.dir.join("memory.max_usage_in_bytes"), "0")
    }

    /// Peak memory charged to the cgroup since it was made or the last
    /// [`MemoryCgroup::reset_peak`] (heap and page cache).
    pub fn peak_bytes(&self) -> Result<u64> {
        read_u64(&self.dir.join("memory.max_usage_in_bytes"))
    }

    /// Times the cgroup hit its limit and had to reclaim.
    pub fn limit_hits(&self) -> Result<u64> {
        read_u64(&self.dir.join("memory.failcnt"))
    }
}

/// What [`HeapFollower`] saw while it kept the limit at the budget plus the heap.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FollowReport {
    /// The page cache budget the limit left beside the heap.
    pub budget: u64,
    /// Largest page cache charged to the group (`cache` of `memory.stat`).
    pub peak_cache: u64,
    /// Largest memory charged to the group besides the page cache (the heap: the usage
    /// less `cache`).
    pub peak_heap: u64,
    /// Largest page cache that was dirty or under writeback (`dirty` + `writeback` of
    /// `memory.stat`), which the limit also leaves room for.
    pub peak_dirty: u64,
    /// Looks that found the group under OOM: the heap had outgrown the limit and the
    /// process waited for the watcher.
    pub under_oom: u64,
    /// Times the limit was changed.
    pub adjustments: u64,
    /// Times lowering the limit failed because the kernel could not reclaim enough at
    /// once (retried at the next look).
    pub busy: u64,
}

/// A watcher thread that keeps a cgroup's limit at `budget + heap + dirty page cache` plus
/// [`FOLLOW_HEADROOM`] (module doc); stop it
/// with [`HeapFollower::stop`] before the cgroup is left.
pub struct HeapFollower {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Result<FollowReport>>>,
}

impl HeapFollower {
    /// Stop watching; the limit stays where it was last set.
    pub fn stop(mut self) -> Result<FollowReport> {
        self.stop.store(true, Ordering::Relaxed);
        match self.handle.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => bail!("the cgroup heap watcher panicked"),
            None => bail!("the cgroup heap watcher was already stopped"),
        }
    }
}

impl Drop for HeapFollower {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// The watcher's files, opened before its loop.
struct Watch {
    stat: File,
    usage: File,
    limit: File,
    peak: File,
    oom: File,
}

impl Watch {
    /// (page cache, the rest, the page cache dirty or under writeback) charged now, and
    /// whether the group is under OOM; reads into
    /// fixed buffers (no allocation). The rest is the usage less the page cache: the heap
    /// and whatever else the kernel charges (kernel memory, where accounted), none of it
    /// reclaimable, so a limit below it would fail.
    fn look(&self, buf: &mut [u8; 8192]) -> Result<(u64, u64, u64, bool)> {
        let n = self.stat.read_at(buf, 0).context("reading memory.stat")?;
        let text = std::str::from_utf8(&buf[..n]).context("memory.stat is not UTF-8")?;
        let cache = stat_field(text, "cache").context("no cache in memory.stat")?;
        let dirty =
            stat_field(text, "dirty").unwrap_or(0) + stat_field(text, "writeback").unwrap_or(0);
        let n = self
            .usage
            .read_at(buf, 0)
            .context("reading memory.usage_in_bytes")?;
        let usage: u64 = std::str::from_utf8(&buf[..n])
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .context("memory.usage_in_bytes is not a number")?;
        let heap = usage.saturating_sub(cache);
        let n = self
            .oom
            .read_at(buf, 0)
            .context("reading memory.oom_control")?;
        let text = std::str::from_utf8(&buf[..n]).context("memory.oom_control is not UTF-8")?;
        Ok((cache, heap, dirty, stat_field(text, "under_oom") == Some(1)))
    }

    /// Set the limit; formats into a stack buffer (no allocation). A lower limit than the
    /// usage makes the kernel reclaim page cache first; if it cannot (EBUSY) the old limit
    /// stays, which is reported as `false`.
    fn set(&self, limit: u64) -> bool {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        let mut v = limit;
        loop {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        self.limit.write_at(&digits[i..], 0).is_ok()
    }
}

impl MemoryCgroup {
    /// From now on keep the limit at `budget` plus the heap charged to the group (module
    /// doc), with the group's OOM killer disabled, until the returned watcher is stopped.
    pub fn follow_heap(&mut self, budget: u64) -> Result<HeapFollower> {
        write(&self.dir.join("memory.oom_control"), "1")?;
        let open = |name: &str, w: bool| {
            let path = self.dir.join(name);
            std::fs::OpenOptions::new()
                .read(!w)
                .write(w)
                .open(&path)
                .with_context(|| format!("opening {}", path.display()))
        };
        let watch = Watch {
            stat: open("memory.stat", false)?,
            usage: open("memory.usage_in_bytes", false)?,
            limit: open("memory.limit_in_bytes", true)?,
            peak: open("memory.max_usage_in_bytes", true)?,
            oom: open("memory.oom_control", false)?,
        };
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("cgroup-heap-watcher".into())
            .spawn(move || -> Result<FollowReport> {
                let mut buf = [0u8; 8192];
                let mut r = FollowReport {
                    budget,
                    ..FollowReport::default()
                };
                // The limit the group entered with (budget + allowance) stands until the
                // first set succeeds.
                let mut limit = u64::MAX;
                // Re-set when the heap moved by more than this (the kernel's charge batch
                // is 32 pages a CPU; smaller moves are noise).
                const STEP: u64 = 256 << 10;
                while !flag.load(Ordering::Relaxed) {
                    let (cache, heap, dirty, oom) = watch.look(&mut buf)?;
                    // Peaks count from the first limit set: before it, the page cache of
                    // the warm-up is still there.
                    if limit != u64::MAX {
                        r.peak_cache = r.peak_cache.max(cache);
                        r.peak_heap = r.peak_heap.max(heap);
                        r.peak_dirty = r.peak_dirty.max(dirty);
                    }
                    r.under_oom += oom as u64;
                    let want = budget + heap + dirty + FOLLOW_HEADROOM;
                    if want > limit || want + STEP < limit {
                        // Lowering fails (EBUSY) when the kernel cannot reclaim enough
                        // page cache at once (dirty pages under writeback): try again at
                        // the next look.
                        if watch.set(want) {
                            if limit == u64::MAX {
                                // The group's peak (`MemoryCgroup::peak_bytes`) starts
                                // here too.
                                let _ = watch.peak.write_at(b"0", 0);
                            }
                            limit = want;
                            r.adjustments += 1;
                        } else {
                            r.busy += 1;
                        }
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                Ok(r)
            })
            .context("starting the cgroup heap watcher")?;
        Ok(HeapFollower {
            stop,
            handle: Some(handle),
        })
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        // Moving back cannot fail for a process that could move in; removing the child
        // reparents its remaining page-cache charges. Errors are reported, not fatal: a
        // leftover empty cgroup is harmless.
        if let Err(e) = write(
            &self.home.join("cgroup.procs"),
            &std::process::id().to_string(),
        ) {
            eprintln!("warning: leaving the memory cgroup: {e:#}");
            return;
        }
        if let Err(e) = std::fs::remove_dir(&self.dir) {
            eprintln!(
                "warning: removing the memory cgroup {}: {e}",
                self.dir.display()
            );
        }
    }
}

/// The directory of this process's cgroup-v1 memory cgroup.
fn own_memory_cgroup() -> Result<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/cgroup").context("reading /proc/self/cgroup")?;
    let rel = text
        .lines()
        .filter_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            controllers
                .split(',')
                .any(|c| c == "memory")
                .then_some(path)
        })
        .next()
        .context("no cgroup-v1 memory controller in /proc/self/cgroup")?;
    let dir = Path::new(MEMORY_ROOT).join(rel.trim_start_matches('/'));
    if !dir.join("memory.limit_in_bytes").exists() {
        bail!("{} has no memory.limit_in_bytes", dir.display());
    }
    Ok(dir)
}

/// The value of `name` in a `memory.stat` text (lines of `name value`).
fn stat_field(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (n, v) = line.split_once(' ')?;
        if n == name {
            v.trim().parse().ok()
        } else {
            None
        }
    })
}

fn write(path: &Path, value: &str) -> Result<()> {
    std::fs::write(path, value).with_context(|| format!("writing {value} to {}", path.display()))
}

fn read_u64(path: &Path) -> Result<u64> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    text.trim()
        .parse()
        .with_context(|| format!("parsing {} ({text:?})", path.display()))
}

/// Write back every file under `dir` and drop its pages from the page cache
/// (`fdatasync`, then `posix_fadvise(POSIX_FADV_DONTNEED)`), so that a measured phase
/// starts with none of the store cached.
pub fn evict_from_page_cache(dir: &Path) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let entry = entry.with_context(|| format!("listing {}", dir.display()))?;
        let path = entry.path();
        let ty = entry
            .file_type()
            .with_context(|| format!("reading {}", path.display()))?;
        if ty.is_dir() {
            evict_from_page_cache(&path)?;
        } else if ty.is_file() {
            // fdatasync and fadvise need only a descriptor, not write access.
            let f = std::fs::File::open(&path)
                .with_context(|| format!("opening {}", path.display()))?;
            f.sync_data()
                .with_context(|| format!("syncing {}", path.display()))?;
            // SAFETY: a plain syscall on a file descriptor `f` owns for the call's length.
            let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
            if rc != 0 {
                bail!(
                    "posix_fadvise(DONTNEED) on {}: {}",
                    path.display(),
                    std::io::Error::from_raw_os_error(rc)
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn stat_fields_are_found_by_exact_name() {
        let text = "cache 4096\nrss 12288\nrss_huge 0\ntotal_rss 16384\n";
        assert_eq!(stat_field(text, "rss"), Some(12288));
        assert_eq!(stat_field(text, "total_rss"), Some(16384));
        assert_eq!(stat_field(text, "swap"), None);
    }

    #[test]
    fn eviction_keeps_the_data() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/f"), b"kept").unwrap();
        evict_from_page_cache(dir.path()).unwrap();
        let mut s = String::new();
        std::fs::File::open(dir.path().join("sub/f"))
            .unwrap()
            .read_to_string(&mut s)
            .unwrap();
        assert_eq!(s, "kept");
    }

    /// Where the machine has a writable memory cgroup, the limit is set and the process
    /// comes back out; elsewhere `enter` says why (both are outcomes, so the test checks
    /// the one that applies).
    #[test]
    fn enter_sets_the_limit_and_leaving_restores_the_home_cgroup() {
        // Generous: the whole test process moves, with the tests running beside this one.
        const LIMIT: u64 = 8 << 30;
        let before = std::fs::read_to_string("/proc/self/cgroup").unwrap();
        match MemoryCgroup::enter(LIMIT, "test") {
            Ok(mut cg) => {
                let dir = cg.dir.clone();
                assert_eq!(read_u64(&dir.join("memory.limit_in_bytes")).unwrap(), LIMIT);
                let inside = std::fs::read_to_string("/proc/self/cgroup").unwrap();
                assert!(inside.contains("flashix-bench-"), "{inside}");
                // black_box: an optimised build may drop an allocation nothing reads.
                let heap = std::hint::black_box(vec![1u8; 32 << 20]);
                cg.reset_peak().unwrap();
                assert!(cg.peak_bytes().unwrap() <= LIMIT);
                // Following the heap: the limit becomes the budget plus the heap, and
                // rises when the heap does (polled: the watcher looks every millisecond).
                let budget = LIMIT / 2;
                let follower = cg.follow_heap(budget).unwrap();
                let limit_now = || read_u64(&dir.join("memory.limit_in_bytes")).unwrap();
                let more = std::hint::black_box(vec![2u8; 64 << 20]);
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
                while limit_now() < budget + (64 << 20) && std::time::Instant::now() < deadline {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                assert!(limit_now() >= budget + (64 << 20), "{}", limit_now());
                // Dirty page cache (a file written, not synced) is seen and left room for.
                let scratch = tempfile::tempdir().unwrap();
                let chunk = vec![3u8; 4 << 20];
                let mut f = File::create(scratch.path().join("dirty")).unwrap();
                for _ in 0..12 {
                    std::io::Write::write_all(&mut f, &chunk).unwrap();
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
                let r = follower.stop().unwrap();
                assert!(r.peak_dirty > 0, "{r:?}");
                assert!(r.peak_heap >= 64 << 20, "{r:?}");
                assert!(r.adjustments >= 1 && r.budget == budget, "{r:?}");
                drop(more);
                drop(heap);
                drop(cg);
                assert!(!dir.exists());
                assert_eq!(
                    std::fs::read_to_string("/proc/self/cgroup").unwrap(),
                    before
                );
            }
            Err(e) => assert!(format!("{e:#}").contains("cgroup"), "{e:#}"),
        }
    }
}
