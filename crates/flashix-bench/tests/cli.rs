//! End-to-end tests of `flashix bench`: the library entry point on a small aged B+-tree, and
//! the binary's handling of bad arguments.

use flashix::EngineKind;
use flashix_bench::probe::{run_probe, save_profile, DeviceProfile, ProbeConfig};
use flashix_bench::report::Results;
use flashix_bench::runner::{run_bench, BenchConfig};
use flashix_bench::workload::{KeyDist, Workload};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A real (short) device profile, measured in `tmp` and saved in `out`.
fn short_profile(tmp: &Path, out: &Path) -> (DeviceProfile, PathBuf) {
    let path = out.join("device-profile.json");
    let pcfg = ProbeConfig {
        dir: tmp.join("probe"),
        file_bytes: 16 << 20,
        seconds_per_test: 0.05,
        seed: 1,
    };
    let profile = run_probe(&pcfg, &mut |_| {}).unwrap();
    save_profile(&profile, &path).unwrap();
    (profile, path)
}

#[test]
fn bench_writes_one_sane_record() {
    // Under the target directory, not /tmp: O_DIRECT needs a real file system.
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let out = tmp.path().join("out");
    std::fs::create_dir_all(&out).unwrap();

    let (profile, profile_path) = short_profile(tmp.path(), &out);

    let cfg = BenchConfig {
        engines: vec![EngineKind::BTree],
        workloads: vec![Workload::WInsert],
        entries: 20_000,
        ops: 2_000,
        buffer_pool_bytes: 1 << 20,
        prep_buffer_pool_bytes: 4 << 20,
        page_size: 4096,
        k: None,
        deamortize: true,
        search_fraction: 0.5,
        lsm_search_before_delete: false,
        pio_opq_bytes: None,
        pio_leaf_segments: None,
        key_dist: KeyDist::Uniform,
        seed: 7,
        dir: tmp.path().join("data"),
        out: out.clone(),
        profile: Some(profile_path),
        direct_io: true,
        verbose: false,
    };
    let returned = run_bench(&cfg).unwrap();

    let saved = Results::load(&out.join("results.json")).unwrap();
    // (Floats may differ in the last bit after a JSON round trip.)
    assert_eq!(saved.options, returned.options);
    assert_eq!(saved.git_commit, returned.git_commit);
    assert_eq!(saved.results.len(), returned.results.len());
    assert_eq!(saved.device_profile.backend, profile.backend);
    assert_eq!(saved.device_profile.measured_at, profile.measured_at);
    assert_eq!(saved.options.entries, 20_000);
    assert_eq!(saved.options.ops, 2_000);
    assert_eq!(saved.options.page_size, 4096);
    assert_eq!(saved.options.buffer_pool_bytes, 1 << 20);
    assert!(!saved.aging_rule.is_empty());
    assert!(!saved.git_commit.is_empty());
    assert_eq!(saved.results.len(), 1);

    // The raw JSON has every field of a record.
    let raw: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    for key in [
        "flashix_version",
        "git_commit",
        "device_profile",
        "options",
        "aging_rule",
    ] {
        assert!(raw.get(key).is_some(), "results.json lacks {key}");
    }
    let rec = &raw["results"][0];
    for key in [
        "engine",
        "workload",
        "entries",
        "ops",
        "ops_per_sec",
        "latency_us",
        "reads_per_op",
        "writes_per_op",
        "read_requests_per_op",
        "write_requests_per_op",
        "bytes_written_per_op",
        "wal_bytes_per_op",
        "memory_bytes",
        "buffer_hit_ratio",
        "elapsed_s",
        "prepare_s",
        "aging_inserts",
        "key_dist",
    ] {
        assert!(rec.get(key).is_some(), "record lacks {key}");
    }
    for key in ["p50", "p99", "p999", "max"] {
        assert!(rec["latency_us"].get(key).is_some(), "latency lacks {key}");
    }

    let r = &saved.results[0];
    assert_eq!(r.engine, "btree");
    assert_eq!(r.workload, "w-insert");
    assert_eq!(r.ops, 2_000);
    assert_eq!(r.key_dist, "uniform");
    assert!(r.ops_per_sec > 0.0 && r.ops_per_sec.is_finite());
    assert!(r.elapsed_s > 0.0 && r.prepare_s > 0.0);
    assert!(r.reads_per_op >= 0.0 && r.writes_per_op >= 0.0);
    // Half the operations insert and the run ends with a flush: something was written
    // (to the WAL at least; this small index fits in the buffer pool).
    assert!(r.bytes_written_per_op >= 0.0);
    assert!(r.wal_bytes_per_op > 0.0);
    assert!(r.read_requests_per_op <= r.reads_per_op + 1e-9);
    assert!(r.latency_us.p50 <= r.latency_us.p99);
    assert!(r.latency_us.p99 <= r.latency_us.p999);
    assert!(r.latency_us.p999 <= r.latency_us.max);
    assert!(r.latency_us.max > 0.0);
    assert!((0.0..=1.0).contains(&r.buffer_hit_ratio));
    assert!(r.memory_bytes > 0);
    assert!(r.aging_inserts > 0 && r.aging_inserts <= 20_000);

    // Run directories are removed afterwards.
    assert!(!tmp.path().join("data").join("btree").exists());
}

#[test]
fn bad_arguments_give_a_message_and_a_failure_code() {
    let bin = env!("CARGO_BIN_EXE_flashix");
    for args in [
        &["bench", "--buffer-pool", "lots"][..],
        &["bench", "--engines", "nosuch"][..],
        &["bench", "--workload", "o-nothing"][..],
        &["bench", "--key-dist", "gauss"][..],
        &["bench", "--entries", "many"][..],
    ] {
        let out = Command::new(bin).args(args).output().unwrap();
        assert!(!out.status.success(), "{args:?} succeeded");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("error"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

/// `flashix bench` runs the FD-tree, the LSM-tree and the PIO B-tree on every workload;
/// FD-tree and LSM k come from the cost model.
#[test]
fn bench_runs_fdtree_lsm_and_pio_on_every_workload() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let out = tmp.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let (_, profile_path) = short_profile(tmp.path(), &out);
    let mut workloads = Workload::ALL.to_vec();
    workloads.extend([
        Workload::Range(1000),
        Workload::GetMany(16),
        Workload::Mix(50),
    ]);
    let cfg = BenchConfig {
        engines: vec![EngineKind::FdTree, EngineKind::Lsm, EngineKind::PioBTree],
        workloads: workloads.clone(),
        entries: 30_000,
        ops: 500,
        buffer_pool_bytes: 2 << 20,
        profile: Some(profile_path),
        dir: tmp.path().join("data"),
        out,
        verbose: false,
        ..BenchConfig::new()
    };
    let res = run_bench(&cfg).unwrap();
    assert_eq!(res.results.len(), 3 * workloads.len());
    for r in &res.results {
        assert!(r.ops_per_sec > 0.0);
        let want_keys = match r.workload.as_str() {
            "range-1000" => 1000,
            "get-many-16" => 16,
            _ => 1,
        };
        assert_eq!(r.keys_per_op, want_keys, "{r:?}");
        if r.engine == "pio" {
            assert!(r.engine_params.starts_with("leaf_segments="), "{r:?}");
            continue;
        }
        assert!(r.engine_params.starts_with("k="), "{r:?}");
        if r.engine == "fdtree" {
            assert!(r.engine_params.contains("deamortize=on"), "{r:?}");
        }
    }
}
