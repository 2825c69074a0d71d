//! Cost models that pick engine parameters for a device and a workload (docs/design.md, Layers:
//! "cost (FD-tree k, PIO node size and OPQ size, bulk M), fed by a device profile").
//!
//! This module is a leaf: it takes numbers and a device profile, and imports neither the
//! options nor any engine. The models take a [`DeviceCosts`] (the few per-page times they
//! need, in the papers' terms) and a workload of plain numbers, including the capacities of
//! the engine's pages (FD-tree entries per page, PIO B-tree leaf-segment records and
//! internal-node entries, OPQ entry bytes), which the caller reads from the engine's page
//! format. The engines apply the models to their options when an index is created
//! (`Options::fdtree_model_k` for the FD-tree's and LSM-tree's `k`,
//! `PioOptions::resolved` for the PIO B-tree's leaf and OPQ sizes). The library does not
//! read device profiles itself; `flashix-bench` converts the `DeviceProfile` written by
//! `flashix probe` into a `DeviceCosts`.
//!
//! - [`fdtree`]: FD-tree size ratio `k` and number of levels `l` (Li et al., VLDB 2010,
//!   §4 and Appendix C).
//! - [`bulk`]: the bulk index's range size M (Lehtonen 2014, §5.5: Theorems 5.1-5.4).
//! - [`logclean`]: the FBX-tree's log-clean policies (Luo, §4.4: naive threshold,
//!   Longer-Than-Next, Accumulate-and-Clean), their abstract cost model and the offline
//!   optimum that measures their competitive ratios.
//! - [`pio`]: PIO B-tree leaf size in segments and OPQ size (Roh et al., VLDB 2011, §3.2.1,
//!   §3.5–3.6 and the Appendix), from a [`pio::PioDeviceCosts`] (latency by request size,
//!   throughput at the psync queue depth).
//!
//! All times are in microseconds (`_us`), all sizes in bytes unless a name says entries.

pub mod bulk;
pub mod fdtree;
pub mod logclean;
pub mod pio;

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// What a cost model needs to know about a device, for one page size `B`.
///
/// The FD-tree paper writes these as bandwidths (`W_rrnd(B)`, `W_rseq`, `W_wseq`, in bytes
/// per second) and divides a byte count by them; here they are kept as the time to move one
/// page of `B` bytes, so that `B / W_rrnd(B)` is [`DeviceCosts::rand_read_page_us`] and
/// `B / W_rseq` is [`DeviceCosts::seq_read_page_us`].
///
/// It may also carry the machine's CPU costs of the sorted-run engines' insertions
/// ([`DeviceCosts::with_cpu_costs`]; zero unless given): the paper's model counts I/O only,
/// which on its 2010 SSDs (100-250 MB/s sequential) was the whole cost, while on a device
/// of several GB/s the merge's CPU is as large as its transfers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DeviceCosts {
    page_size: usize,
    rand_read_page_us: f64,
    rand_write_page_us: f64,
    seq_read_page_us: f64,
    seq_write_page_us: f64,
    /// CPU time of one insertion besides its merges (absent in records written before
    /// it existed: 0).
    #[serde(default)]
    insert_cpu_us: f64,
    /// CPU time per entry a merge reads or writes (absent: 0).
    #[serde(default)]
    merge_entry_cpu_us: f64,
    /// The merges run on a second core, beside the insertions (absent: false).
    #[serde(default)]
    merge_thread: bool,
}

impl DeviceCosts {
    /// Per-page times for pages of `page_size` bytes:
    /// - `rand_read_page_us`: one random read of one page (`B / W_rrnd(B)`), queue depth 1;
    /// - `rand_write_page_us`: one random write of one page (`B / W_wrnd(B)`), queue depth 1;
    /// - `seq_read_page_us`, `seq_write_page_us`: the share of one page in a large sequential
    ///   transfer (`B / W_rseq`, `B / W_wseq`; multi-page I/O, FD-tree §3.3).
    ///
    /// Every time must be finite and positive, and the page size non-zero.
    pub fn new(
        page_size: usize,
        rand_read_page_us: f64,
        rand_write_page_us: f64,
        seq_read_page_us: f64,
        seq_write_page_us: f64,
    ) -> Result<Self> {
        if page_size == 0 {
            return Err(Error::InvalidArgument(
                "device costs: the page size must be positive".into(),
            ));
        }
        for (name, v) in [
            ("random page read time", rand_read_page_us),
            ("random page write time", rand_write_page_us),
            ("sequential page read time", seq_read_page_us),
            ("sequential page write time", seq_write_page_us),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(Error::InvalidArgument(format!(
                    "device costs: the {name} must be a positive number of microseconds, not {v}"
                )));
            }
        }
        Ok(DeviceCosts {
            page_size,
            rand_read_page_us,
            rand_write_page_us,
            seq_read_page_us,
            seq_write_page_us,
            insert_cpu_us: 0.0,
            merge_entry_cpu_us: 0.0,
            merge_thread: false,
        })
    }

    /// These costs with the CPU costs of a sorted-run engine's insertion on the machine:
    /// `insert_cpu_us` per insertion besides its merges (the head tree's search and
    /// update, the log record), and `merge_entry_cpu_us` per entry a merge reads or
    /// writes (decoding, comparing, building and checksumming pages, submitting the
    /// requests). `flashix probe` measures both ([`fdtree::insert_cost`] adds them).
    /// Both must be finite and non-negative.
    pub fn with_cpu_costs(mut self, insert_cpu_us: f64, merge_entry_cpu_us: f64) -> Result<Self> {
        for (name, v) in [
            ("insertion CPU time", insert_cpu_us),
            ("merge CPU time per entry", merge_entry_cpu_us),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(Error::InvalidArgument(format!(
                    "device costs: the {name} must be a non-negative number of microseconds, not {v}"
                )));
            }
        }
        self.insert_cpu_us = insert_cpu_us;
        self.merge_entry_cpu_us = merge_entry_cpu_us;
        Ok(self)
    }

    /// These costs for an engine whose merges run on a second core while the insertions
    /// go on (`on`): a deamortized FD-tree or LSM-tree on a file through io_uring
    /// (`kit::sorted::job`). The two CPU costs then overlap instead of adding up
    /// ([`fdtree::insert_cost`]).
    pub fn with_merge_thread(mut self, on: bool) -> Self {
        self.merge_thread = on;
        self
    }

    /// Whether the merges run on a second core ([`DeviceCosts::with_merge_thread`]).
    pub fn merge_thread(&self) -> bool {
        self.merge_thread
    }

    /// From rates: random reads and writes of one page per second (IOPS at queue depth 1,
    /// with requests of `page_size` bytes) and sequential bandwidths in MB/s (10^6 bytes
    /// per second, i.e. bytes per microsecond).
    pub fn from_rates(
        page_size: usize,
        rand_read_iops: f64,
        rand_write_iops: f64,
        seq_read_mb_s: f64,
        seq_write_mb_s: f64,
    ) -> Result<Self> {
        let b = page_size as f64;
        DeviceCosts::new(
            page_size,
            1e6 / rand_read_iops,
            1e6 / rand_write_iops,
            b / seq_read_mb_s,
            b / seq_write_mb_s,
        )
    }

    /// A reference SSD for pages of `page_size` bytes (at least 1): `flashix probe`
    /// figures of a virtio SSD — 66.8 us per 4 KiB random read and 67.3 us per random
    /// write at queue depth 1, growing by 0.5 us per KiB above 4 KiB; 1,813 MB/s
    /// sequential reads and 2,679 MB/s writes in 512 KiB requests. Used when an index is
    /// created without a [`crate::Tuning`].
    pub fn reference(page_size: usize) -> Self {
        let b = page_size.max(1);
        let extra_us = b.saturating_sub(4096) as f64 / 1024.0 * 0.5;
        DeviceCosts {
            page_size: b,
            rand_read_page_us: 66.8 + extra_us,
            rand_write_page_us: 67.3 + extra_us,
            seq_read_page_us: b as f64 / 1813.0,
            seq_write_page_us: b as f64 / 2679.0,
            insert_cpu_us: 0.0,
            merge_entry_cpu_us: 0.0,
            merge_thread: false,
        }
    }

    /// Page size `B` in bytes the times are for.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Time of one random page read, `B / W_rrnd(B)`, in microseconds.
    pub fn rand_read_page_us(&self) -> f64 {
        self.rand_read_page_us
    }

    /// Time of one random page write, `B / W_wrnd(B)`, in microseconds.
    pub fn rand_write_page_us(&self) -> f64 {
        self.rand_write_page_us
    }

    /// Time per page of a sequential read, `B / W_rseq`, in microseconds.
    pub fn seq_read_page_us(&self) -> f64 {
        self.seq_read_page_us
    }

    /// Time per page of a sequential write, `B / W_wseq`, in microseconds.
    pub fn seq_write_page_us(&self) -> f64 {
        self.seq_write_page_us
    }

    /// CPU time of one insertion besides its merges, in microseconds (0 unless given).
    pub fn insert_cpu_us(&self) -> f64 {
        self.insert_cpu_us
    }

    /// CPU time per entry a merge reads or writes, in microseconds (0 unless given).
    pub fn merge_entry_cpu_us(&self) -> f64 {
        self.merge_entry_cpu_us
    }
}

/// What the cost models tune an index for when its sub-options leave a parameter to them
/// (docs/design.md: sub-options default "to the cost model's answer for the device profile").
/// `flashix bench` fills it from the `flashix probe` profile and the benchmark's size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tuning {
    /// The device's per-page costs, for the index's page size.
    pub device: DeviceCosts,
    /// Entries the index is expected to hold.
    pub expected_entries: u64,
    /// Share of operations that are searches (the rest are updates), 0..=1.
    pub search_fraction: f64,
    /// The PIO B-tree model's device inputs (latency by request size, psync throughput);
    /// `None`: derived from `device` with the reference SSD's queue-depth-32 throughput
    /// ([`pio::PioDeviceCosts::derived`]).
    #[serde(default)]
    pub pio_device: Option<pio::PioDeviceCosts>,
    /// The bulk index model's inputs (bulk sizes, device); `None`: its defaults.
    #[serde(default)]
    pub bulk: Option<bulk::BulkTuning>,
}

impl Tuning {
    /// [`DeviceCosts::reference`], 10 million entries, half searches.
    pub fn reference(page_size: usize) -> Tuning {
        Tuning {
            device: DeviceCosts::reference(page_size),
            expected_entries: 10_000_000,
            search_fraction: 0.5,
            pio_device: None,
            bulk: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_become_page_times() {
        // 20 000 IOPS -> 50 us; 10 000 IOPS -> 100 us; 4096 B at 2048 MB/s (2048 B/us) -> 2 us;
        // at 1024 MB/s -> 4 us.
        let d = DeviceCosts::from_rates(4096, 20_000.0, 10_000.0, 2048.0, 1024.0).unwrap();
        assert_eq!(d.page_size(), 4096);
        assert_eq!(d.rand_read_page_us(), 50.0);
        assert_eq!(d.rand_write_page_us(), 100.0);
        assert_eq!(d.seq_read_page_us(), 2.0);
        assert_eq!(d.seq_write_page_us(), 4.0);
    }

    #[test]
    fn bad_numbers_are_refused() {
        assert!(DeviceCosts::new(0, 1.0, 1.0, 1.0, 1.0).is_err());
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(DeviceCosts::new(4096, bad, 1.0, 1.0, 1.0).is_err());
            assert!(DeviceCosts::new(4096, 1.0, bad, 1.0, 1.0).is_err());
            assert!(DeviceCosts::new(4096, 1.0, 1.0, bad, 1.0).is_err());
            assert!(DeviceCosts::new(4096, 1.0, 1.0, 1.0, bad).is_err());
        }
        assert!(DeviceCosts::from_rates(4096, 0.0, 1.0, 1.0, 1.0).is_err());
    }
}
