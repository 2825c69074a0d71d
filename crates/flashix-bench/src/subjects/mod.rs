//! What a workload runs against (a *subject*): two small traits that the flashix [`Db`]
//! ([`engines`]) and every peer engine (behind cargo features, [`peers`]) implement, so
//! that all of them go through the same workload code with the same 8-byte keys. Peers
//! store a key as its 8 big-endian bytes (so byte order is key order) and a value as 8
//! big-endian bytes; [`cgroup`] bounds the memory of the peers that read through the page
//! cache. Beside them, the process's own counters (storage I/O, CPU time, resident memory)
//! that measure a peer where it has no counters of its own.
//!
//! A [`Target`] is the index, shared by every thread of a measured phase (`&self`,
//! `Sync`); each thread runs its operations through a [`Session`] of its own, made on that
//! thread. The split is there for the stores whose write transactions belong to the thread
//! that began them (LMDB's writer lock is a mutex the beginning thread owns): a batched
//! peer keeps its open transaction in the session, and the session commits it when the
//! thread is done. For the flashix engines, RocksDB and fjall a session is the shared
//! index itself.

pub mod cgroup;
pub mod engines;
pub mod peers;

use anyhow::{Context, Result};
#[cfg(doc)]
use flashix::Db;
use flashix::Stats;

/// How a target bounds its memory, whether its I/O bypasses the page cache, and when its
/// writes become durable: stated in every result (docs/benchmarking.md, Peers at equal memory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetInfo {
    pub memory_bound: String,
    pub page_cache_bypassed: bool,
    pub commit_model: String,
}

/// An index under test, shared by the threads of a measured phase.
pub trait Target: Sync {
    /// A handle for one thread's operations, to be used on the thread that made it and
    /// ended with [`Session::finish`] before [`Target::flush`].
    fn session(&self) -> Result<Box<dyn Session + '_>>;
    /// Make every write of the finished sessions durable (the `sync` at the end of a
    /// measured phase).
    fn flush(&self) -> Result<()>;
    /// flashix statistics, for flashix engines; `None` for peers (the runner then counts
    /// the process's storage I/O from `/proc/self/io`).
    fn flashix_stats(&self) -> Option<Stats> {
        None
    }
    /// Memory the target holds, where it can say.
    fn memory_bytes(&self) -> Option<u64> {
        None
    }
    fn close(self: Box<Self>) -> Result<()>;
}

/// One thread's operations on a [`Target`].
pub trait Session {
    fn get(&mut self, key: u64) -> Result<Option<u64>>;
    fn insert(&mut self, key: u64, value: u64) -> Result<()>;
    fn delete(&mut self, key: u64) -> Result<()>;
    fn get_many(&mut self, keys: &[u64]) -> Result<Vec<Option<u64>>> {
        keys.iter().map(|&k| self.get(k)).collect()
    }
    /// Scan up to `len` entries from `start`; returns the first key seen and the count.
    fn scan(&mut self, start: u64, len: u64) -> Result<(Option<u64>, u64)>;
    /// Insert pairs sorted by key.
    fn bulk_insert(&mut self, pairs: &[(u64, u64)]) -> Result<()>;
    /// Delete every key in `lo..=hi`.
    fn delete_range(&mut self, lo: u64, hi: u64) -> Result<()>;
    /// End the session: commit what it holds open (a batched peer's write transaction).
    /// A session dropped without it leaves its open writes uncommitted.
    fn finish(self: Box<Self>) -> Result<()> {
        Ok(())
    }
}

/// Bytes this process has read from and written to storage (`/proc/self/io` `read_bytes`
/// and `write_bytes`: direct and buffered I/O that reached the block layer); zeros where
/// the file is missing.
pub fn process_io() -> (u64, u64) {
    let Ok(text) = std::fs::read_to_string("/proc/self/io") else {
        return (0, 0);
    };
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    (field("read_bytes:"), field("write_bytes:"))
}

/// CPU time of this process so far, user and system, all threads (`getrusage`), seconds.
pub fn process_cpu_seconds() -> f64 {
    // SAFETY: getrusage writes one `rusage` into the zeroed value we pass.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return 0.0;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    secs(u.ru_utime) + secs(u.ru_stime)
}

/// Resident memory of this process: (current, peak since the last [`reset_peak_rss`])
/// in bytes, from `/proc/self/status` (`VmRSS`, `VmHWM`); `None` where it is not there.
pub fn process_rss() -> Option<(u64, u64)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        let kib: u64 = line[name.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        Some(kib * 1024)
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// Reset the process's peak resident memory to its current one (`/proc/self/clear_refs`,
/// value 5: Linux 4.0+); false where that is not possible.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The big-endian bytes of a key or value (peers: byte order = key order).
pub fn be(x: u64) -> [u8; 8] {
    x.to_be_bytes()
}

/// A key or value from at most 8 big-endian bytes.
pub fn from_be(b: &[u8]) -> Result<u64> {
    let a: [u8; 8] = b
        .try_into()
        .with_context(|| format!("a stored key or value of {} bytes, not 8", b.len()))?;
    Ok(u64::from_be_bytes(a))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn be_round_trip_keeps_order() {
        let xs = [0u64, 1, 255, 256, 1 << 40, u64::MAX];
        for w in xs.windows(2) {
            assert!(be(w[0]) < be(w[1]));
        }
        for x in xs {
            assert_eq!(from_be(&be(x)).unwrap(), x);
        }
        assert!(from_be(&[1, 2, 3]).is_err());
    }
}
