//! Calibration of the simulated-SSD profiles (`flashix::sim::profiles`) against the papers'
//! device figures: `flashix probe --sim` on each profile, in simulated time (deterministic),
//! every figure a paper gives held to its bound (within 25%, or at least a lower bound).
//!
//! Sizes (debug builds run this in CI): 64 MiB of NAND per profile (the default is 1 GiB;
//! the figures differ by a few percent, see the module doc of `flashix::sim::profiles`),
//! at most 2,000 requests or 1 simulated second per measurement, the documented warm-up.

use flashix::sim::SsdProfile;
use flashix_bench::probe::sim::{compare, run_sim_probe, Bound, SimProbeConfig};

fn calibrate(profile: SsdProfile) {
    let cfg = SimProbeConfig {
        nand_bytes: 64 << 20,
        seconds_per_test: 1.0,
        max_ops: 2_000,
        ..SimProbeConfig::new(profile)
    };
    let p = run_sim_probe(&cfg, &mut |_| {}).unwrap();
    assert_eq!(p.backend, "simulated");
    let rows = compare(profile, &p);
    assert!(!rows.is_empty(), "{profile}: no paper figures");
    for r in &rows {
        eprintln!(
            "{profile:<11} {:<34} paper {:>8} simulated {:>10.1} error {:>6.1}%",
            r.figure.metric.name(),
            r.figure.target,
            r.measured,
            r.error_percent
        );
    }
    for r in rows {
        assert!(
            r.ok,
            "{profile}: {} is {:.1}, the paper's figure ({}) is {}{} : error {:.1}% (bound {:?})",
            r.figure.metric.name(),
            r.measured,
            r.figure.source,
            if r.figure.bound == Bound::AtLeast {
                ">= "
            } else {
                ""
            },
            r.figure.target,
            r.error_percent,
            r.figure.bound
        );
    }
}

#[test]
fn mtron_matches_the_fd_tree_paper() {
    calibrate(SsdProfile::Mtron);
}

#[test]
fn intel_x25m_matches_the_fd_tree_paper() {
    calibrate(SsdProfile::IntelX25m);
}

#[test]
fn iodrive_matches_the_pio_btree_paper() {
    calibrate(SsdProfile::Iodrive);
}

#[test]
fn p300_matches_the_pio_btree_paper() {
    calibrate(SsdProfile::P300);
}

#[test]
fn ocz_matches_the_fbx_tree_paper() {
    calibrate(SsdProfile::Ocz);
}
