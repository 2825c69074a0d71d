//! The FD-tree cost model ([`flashix::cost::fdtree`], Li et al.,
//! VLDB 2010, Appendix C) applied to a device profile written by `flashix probe`
//! (`flashix fdtree-model`, [`crate::cmd::fdtree_model`]).
//!
//! The profile becomes a [`DeviceCosts`] for the page size `B` ([`device_costs`]): the random
//! page read `B / W_rrnd(B)` is the probe's mean QD1 read latency at `B` bytes (linear
//! between the measured request sizes), and the sequential page times `B / W_rseq`,
//! `B / W_wseq` come from the 512 KiB sequential bandwidths (the FD-tree's multi-page I/O
//! unit, Appendix D). The probe measures random writes at 4 KiB only; a page of `B` bytes is
//! charged `B / 4 KiB` such writes (the FD-tree model does not use random writes).

use crate::probe::DeviceProfile;
use crate::units::format_size;
use anyhow::{Context, Result};
use flashix::cost::fdtree::{self, FdTreeChoice, FdTreeWorkload};
use flashix::cost::DeviceCosts;
use std::fmt::Write as _;

/// Request size of the probe's random-write test.
const PROBE_WRITE_BYTES: f64 = 4096.0;

/// The device costs of `profile` for pages of `page_size` bytes.
pub fn device_costs(profile: &DeviceProfile, page_size: usize) -> Result<DeviceCosts> {
    let b = page_size as f64;
    let rand_read_us = profile.read_latency_us(page_size as u64, false)?;
    let rand_write_us = 1e6 / profile.rand_write_iops_qd1 * (b / PROBE_WRITE_BYTES);
    let dev = DeviceCosts::new(
        page_size,
        rand_read_us,
        rand_write_us,
        b / profile.seq_read_mb_s,
        b / profile.seq_write_mb_s,
    )
    .context("converting the device profile into cost-model inputs")?;
    // A deamortized FD-tree or LSM-tree on this device runs its merges on a second core
    // when its requests overlap with work (a file through io_uring) and the merge thread
    // is not turned off (`FLASHIX_MERGE_THREAD=0`).
    let thread =
        profile.backend.starts_with("io_uring") && flashix::experiment::merge_thread_allowed();
    let dev = dev.with_merge_thread(thread);
    match profile.cpu {
        Some(c) => dev
            .with_cpu_costs(c.insert_us, c.merge_entry_us)
            .context("the profile's CPU costs"),
        None => Ok(dev),
    }
}

/// The report: inputs, the chosen `k` and `l` with their costs, the best `k` of each level
/// count, and the cost by `k` for the chosen level count.
pub fn render(source: &str, dev: &DeviceCosts, w: &FdTreeWorkload) -> Result<String> {
    let best = fdtree::choose(dev, w)?;
    let mut all: Vec<FdTreeChoice> = Vec::new();
    for (k, l) in fdtree::candidates(w) {
        all.push(fdtree::evaluate(dev, w, k, l)?);
    }
    let mut o = String::new();
    let b = w.page_size as u64;
    writeln!(o, "FD-tree cost model (Li et al., VLDB 2010, Appendix C)")?;
    writeln!(o, "device   {source}")?;
    writeln!(
        o,
        "         random page read  {:8.2} us  (B / W_rrnd(B), QD1)",
        dev.rand_read_page_us()
    )?;
    writeln!(
        o,
        "         seq. page read    {:8.2} us  (B / W_rseq, 512 KiB requests)",
        dev.seq_read_page_us()
    )?;
    writeln!(
        o,
        "         seq. page write   {:8.2} us  (B / W_wseq, 512 KiB requests)",
        dev.seq_write_page_us()
    )?;
    if dev.insert_cpu_us() > 0.0 || dev.merge_entry_cpu_us() > 0.0 {
        writeln!(
            o,
            "cpu      insertion {:.3} us + {:.4} us per entry merged, {} (extension: insert = max(transfers, CPU))",
            dev.insert_cpu_us(),
            dev.merge_entry_cpu_us(),
            if dev.merge_thread() {
                "merges on a second core: the larger of the two"
            } else {
                "merges on the inserting core: their sum"
            }
        )?;
    }
    writeln!(
        o,
        "workload n = {} entries, p_s = {:.3} searches, p_i = {:.3} insertions",
        w.entries, w.search_fraction, w.insert_fraction
    )?;
    writeln!(
        o,
        "tree     B = {}, f = {} entries/page, |L0| = {} entries ({} head tree), M = {} entries ({} buffer pool)",
        format_size(b),
        w.entries_per_page,
        w.head_tree_entries(),
        format_size(w.head_tree_bytes / b * b),
        w.buffer_entries(),
        format_size(w.buffer_bytes / b * b),
    )?;
    writeln!(o)?;
    writeln!(
        o,
        "chosen   k = {}, l = {} levels (head tree + {} sorted runs), k < f - 1 = {}",
        best.k,
        best.levels,
        best.levels - 1,
        w.entries_per_page - 1
    )?;
    writeln!(
        o,
        "         search   {:10.3} us  (Eq. 10, buffer pool counted)",
        best.search_cost_us
    )?;
    writeln!(
        o,
        "         insert   {:10.3} us  (t_headtree + Algorithm 5)",
        best.insert_cost_us
    )?;
    writeln!(
        o,
        "         expected {:10.3} us per operation (p_s t_search + p_i t_insert)",
        best.expected_cost_us
    )?;

    writeln!(o)?;
    writeln!(o, "best k for each number of levels")?;
    table_header(&mut o)?;
    let mut levels: Vec<u32> = all.iter().map(|c| c.levels).collect();
    levels.dedup();
    for l in levels {
        let row = all
            .iter()
            .filter(|c| c.levels == l)
            .min_by(|a, b| a.expected_cost_us.total_cmp(&b.expected_cost_us));
        if let Some(c) = row {
            table_row(&mut o, c, c == &best)?;
        }
    }

    writeln!(o)?;
    writeln!(o, "cost by k, l = {} levels", best.levels)?;
    table_header(&mut o)?;
    let same: Vec<&FdTreeChoice> = all.iter().filter(|c| c.levels == best.levels).collect();
    for c in sample(&same, best.k, 12) {
        table_row(&mut o, c, c == &best)?;
    }
    Ok(o)
}

fn table_header(o: &mut String) -> std::fmt::Result {
    writeln!(
        o,
        "  {:>5} {:>6} {:>12} {:>12} {:>12}",
        "k", "levels", "search us", "insert us", "expected us"
    )
}

fn table_row(o: &mut String, c: &FdTreeChoice, chosen: bool) -> std::fmt::Result {
    writeln!(
        o,
        "  {:>5} {:>6} {:>12.3} {:>12.3} {:>12.3}{}",
        c.k,
        c.levels,
        c.search_cost_us,
        c.insert_cost_us,
        c.expected_cost_us,
        if chosen { "  <- chosen" } else { "" }
    )
}

/// At most about `n` rows spread evenly over `rows` (sorted by `k`), always with the first,
/// the last and the one with `k == chosen`.
fn sample<'a>(rows: &[&'a FdTreeChoice], chosen: u64, n: usize) -> Vec<&'a FdTreeChoice> {
    if rows.len() <= n {
        return rows.to_vec();
    }
    let last = rows.len() - 1;
    let mut picked: Vec<usize> = (0..n).map(|i| i * last / (n - 1)).collect();
    if let Some(pos) = rows.iter().position(|c| c.k == chosen) {
        picked.push(pos);
    }
    picked.sort_unstable();
    picked.dedup();
    picked.into_iter().map(|i| rows[i]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile() -> DeviceProfile {
        crate::probe::example_profile()
    }

    #[test]
    fn profile_to_device_costs() {
        let p = profile();
        // 4 KiB: the measured 60 us; 4096 B / 2048 MB/s = 2 us; / 1024 MB/s = 4 us;
        // 1e6 / 10 000 IOPS = 100 us per 4 KiB write.
        let d = device_costs(&p, 4096).unwrap();
        assert_eq!(d.rand_read_page_us(), 60.0);
        assert_eq!(d.seq_read_page_us(), 2.0);
        assert_eq!(d.seq_write_page_us(), 4.0);
        assert_eq!(d.rand_write_page_us(), 100.0);
        // 12 KiB: halfway between 8 KiB (70 us) and 16 KiB (90 us) -> 80 us; 12288 / 2048 = 6;
        // 12288 / 1024 = 12; three 4 KiB writes = 300 us.
        let d = device_costs(&p, 12288).unwrap();
        assert_eq!(d.rand_read_page_us(), 80.0);
        assert_eq!(d.seq_read_page_us(), 6.0);
        assert_eq!(d.seq_write_page_us(), 12.0);
        assert_eq!(d.rand_write_page_us(), 300.0);
        // Outside the measured sizes: refused, not extrapolated.
        let e = device_costs(&p, 2048).unwrap_err().to_string();
        assert!(e.contains("2048"), "{e}");
        assert!(device_costs(&p, 32768).is_err());
    }

    #[test]
    fn sample_keeps_ends_and_choice() {
        let rows: Vec<FdTreeChoice> = (2..100)
            .map(|k| FdTreeChoice {
                k,
                levels: 3,
                search_cost_us: 0.0,
                insert_cost_us: 0.0,
                expected_cost_us: 0.0,
            })
            .collect();
        let refs: Vec<&FdTreeChoice> = rows.iter().collect();
        let s = sample(&refs, 37, 12);
        let ks: Vec<u64> = s.iter().map(|c| c.k).collect();
        assert_eq!(ks.first(), Some(&2));
        assert_eq!(ks.last(), Some(&99));
        assert!(ks.contains(&37));
        assert!(
            ks.len() <= 13 && ks.windows(2).all(|p| p[0] < p[1]),
            "{ks:?}"
        );
    }
}
