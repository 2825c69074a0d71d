//! Calibration of the simulated-SSD profiles (`flashix::sim::profiles`) against the papers'
//! device figures: `flashix probe --sim` on each profile, in simulated time (deterministic),
//! every figure a paper gives held to its bound (within 25%, or at least a lower bound).
//!
//! Sizes (debug builds run this in CI): 64 MiB of NAND per profile (the default is 1 GiB;
//! the figures differ by a few percent, see the module doc of `flashix::sim::profiles`),
//! at most 1,000 requests or 1 simulated second per measurement, the documented warm-up.

use flashix::sim::SsdProfile;
use flashix_bench::probe::sim::{compare, run_sim_probe, Bound, SimProbeConfig};

fn calibrate(profile: SsdProfile) {
    let cfg = SimProbeConfig {
        nand_bytes: 64 << 20,
        seconds_per_test: 1.0,
        max_ops: 1_000,
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

/// `flashix probe --sim` prints the table with the simulated backend and the comparison
/// with the paper, saves the profile only when `--out` is given, and refuses an unknown
/// profile; `flashix probe --dir` is unchanged (tests/cli.rs and the probe's unit tests).
#[test]
fn the_cli_probes_a_simulated_ssd() {
    let bin = env!("CARGO_BIN_EXE_flashix");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("sim.json");
    let run = std::process::Command::new(bin)
        .args([
            "probe",
            "--sim",
            "mtron",
            "--file-mb",
            "32",
            "--max-ops",
            "100",
        ])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(stdout.contains("device profile of sim:mtron"), "{stdout}");
    assert!(stdout.contains("backend        simulated"), "{stdout}");
    assert!(stdout.contains("paper figures for mtron"), "{stdout}");
    assert!(
        stdout.contains("random read / random write, QD1"),
        "{stdout}"
    );
    let p = flashix_bench::probe::load_profile(&out).unwrap();
    assert_eq!(p.backend, "simulated");
    assert!(p.seq_write_iops_qd1.is_some_and(|v| v > 0.0));

    let bad = std::process::Command::new(bin)
        .args(["probe", "--sim", "samsung"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("--sim") && err.contains("samsung") && err.contains("ocz"),
        "{err}"
    );
}
