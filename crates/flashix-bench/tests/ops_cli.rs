//! The commands that operate an index and compare runs, through the `flashix` binary:
//! `check` (clean, then a flipped bit), `stats`, `dump | load` into another engine (text and
//! binary), `load`'s refusals, and `compare` / `report A B` on two small results.json.

use flashix::{check, Db, DeviceSpec, EngineKind, Options};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn flashix(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flashix"))
        .args(args)
        .output()
        .unwrap()
}

/// `flashix ARGS < input`.
fn flashix_with_input(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_flashix"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // A command that fails before reading its input closes the pipe: not an error here.
    if let Err(e) = stdin.write_all(input) {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    }
    drop(stdin);
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// A small closed index of `kind` with a few thousand entries, the edges of u64 included.
fn make_index(dir: &Path, kind: EngineKind) -> BTreeMap<u64, u64> {
    let opts = Options::new(kind)
        .buffer_pool_bytes(512 << 10)
        .device(DeviceSpec::File { direct_io: false });
    let db = Db::create(dir, opts).unwrap();
    let mut model = BTreeMap::new();
    for i in 0..3000u64 {
        let k = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        db.insert(k, i).unwrap();
        model.insert(k, i);
    }
    for (k, v) in [(0, u64::MAX), (u64::MAX, 0)] {
        db.insert(k, v).unwrap();
        model.insert(k, v);
    }
    for k in model.keys().copied().step_by(7).collect::<Vec<_>>() {
        db.delete(k).unwrap();
        model.remove(&k);
    }
    db.close().unwrap();
    model
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

#[test]
fn check_and_stats_report_a_clean_index_and_check_names_a_flipped_bit() {
    let t = tmp();
    let dir = t.path().join("idx");
    let model = make_index(&dir, EngineKind::FdTree);
    let n = model.len();

    let out = flashix(&["check", p(&dir)]);
    let s = text(&out.stdout);
    assert!(out.status.success(), "{s}{}", text(&out.stderr));
    assert!(s.contains("engine: fdtree"), "{s}");
    assert!(s.contains(&format!("entries: {n}\n")), "{s}");
    assert!(s.contains("status: clean"), "{s}");

    let out = flashix(&["stats", p(&dir)]);
    let s = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(s.contains("engine: fdtree"), "{s}");
    assert!(s.contains(&format!("entries: {n}\n")), "{s}");
    assert!(
        s.contains(" live (allocated at the last checkpoint)"),
        "{s}"
    );
    assert!(s.contains("memory: budget 0.5 MiB"), "{s}");
    let out = flashix(&["stats", "--json", p(&dir)]);
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["entries"], n as u64);
    assert_eq!(j["info"]["engine"], "FdTree");

    // One bit of a page that holds data, among the pages in use.
    let info = check::inspect(&dir).unwrap();
    let data = dir.join(flashix::DATA_FILE);
    let mut bytes = std::fs::read(&data).unwrap();
    let ps = info.page_size;
    let page = info
        .allocated_extents()
        .iter()
        .flat_map(|e| e.start as usize..e.end() as usize)
        .find(|&pg| bytes[pg * ps..(pg + 1) * ps].iter().any(|&b| b != 0))
        .unwrap();
    bytes[page * ps + 1000] ^= 0x04;
    std::fs::write(&data, &bytes).unwrap();
    let out = flashix(&["check", p(&dir)]);
    let s = text(&out.stdout);
    assert!(!out.status.success(), "a flipped bit went unnoticed: {s}");
    assert!(s.contains(&format!("data page {page}")), "{s}");
    assert!(s.contains("checksum mismatch"), "{s}");
    assert!(s.contains("status: CORRUPT"), "{s}");
}

/// `dump | load --engine OTHER` gives an index of the other engine with the same entries,
/// in text and in binary; the dumps of both are identical.
#[test]
fn dump_and_load_move_an_index_to_another_engine() {
    let t = tmp();
    let src = t.path().join("src");
    let model = make_index(&src, EngineKind::Lsm);
    let want: String = model.iter().map(|(k, v)| format!("{k} {v}\n")).collect();

    let dump = flashix(&["dump", p(&src)]);
    assert!(dump.status.success(), "{}", text(&dump.stderr));
    assert_eq!(text(&dump.stdout), want);
    // stderr is not a terminal here: no progress bar is drawn on it.
    assert_eq!(text(&dump.stderr), "");

    for (binary, engine) in [(false, "btree"), (true, "pio")] {
        let input = if binary {
            let d = flashix(&["dump", "--binary", p(&src)]);
            assert!(d.status.success(), "{}", text(&d.stderr));
            assert!(d.stdout.starts_with(b"FLASHIXD"));
            assert_eq!(d.stdout.len(), 16 + 16 * model.len() + 12);
            d.stdout
        } else {
            dump.stdout.clone()
        };
        let dst: PathBuf = t.path().join(format!("dst-{engine}"));
        let out = flashix_with_input(
            &[
                "load",
                p(&dst),
                "--engine",
                engine,
                "--no-direct-io",
                "--buffer-pool",
                "1MiB",
            ],
            &input,
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
        let again = flashix(&["dump", p(&dst)]);
        assert_eq!(text(&again.stdout), want, "{engine}");
        assert_eq!(check::inspect(&dst).unwrap().engine.to_string(), engine);
    }
}

#[test]
fn load_refuses_an_existing_index_and_malformed_input() {
    let t = tmp();
    let dir = t.path().join("idx");
    make_index(&dir, EngineKind::BTree);
    let before = std::fs::read(dir.join("MANIFEST")).unwrap();
    let out = flashix_with_input(&["load", p(&dir), "--engine", "lsm"], b"1 2\n");
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("already exists"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(std::fs::read(dir.join("MANIFEST")).unwrap(), before);

    let new = t.path().join("new");
    let out = flashix_with_input(
        &["load", p(&new), "--engine", "btree", "--no-direct-io"],
        b"1 10\n2 20\n3 x\n",
    );
    assert!(!out.status.success());
    let e = text(&out.stderr);
    assert!(e.contains("line 3"), "{e}");
    assert!(!new.exists(), "a failed load left {}", new.display());

    // Keys that do not ascend: the rest goes in one insert at a time, the last value of a
    // repeated key wins.
    let out = flashix_with_input(
        &["load", p(&new), "--engine", "fdtree", "--no-direct-io"],
        b"5 50\n9 90\n2 20\n5 51\n\n7 70\n",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("does not ascend"));
    let d = flashix(&["dump", p(&new)]);
    assert_eq!(text(&d.stdout), "2 20\n5 51\n7 70\n9 90\n");
}

/// A results.json of `cells` (engine, workload, ops/s, reads per op).
fn results_json(cells: &[(&str, &str, f64, f64)]) -> String {
    let records: Vec<serde_json::Value> = cells
        .iter()
        .map(|&(engine, workload, ops, reads)| {
            serde_json::json!({
                "engine": engine, "workload": workload, "entries": 1000, "ops": 100,
                "ops_per_sec": ops,
                "latency_us": {"p50": 1.0, "p99": 2.0, "p999": 3.0, "max": 4.0},
                "reads_per_op": reads, "writes_per_op": 0.5,
                "read_requests_per_op": reads, "write_requests_per_op": 0.5,
                "bytes_written_per_op": 2048.0, "wal_bytes_per_op": 16.0,
                "memory_bytes": 1, "buffer_hit_ratio": 0.5, "elapsed_s": 1.0,
                "prepare_s": 1.0, "aging_inserts": 0, "key_dist": "uniform"
            })
        })
        .collect();
    serde_json::json!({
        "flashix_version": "0.1.0", "git_commit": "test",
        "device_profile": {
            "path": "/x", "backend": "test", "file_bytes": 1,
            "rand_read_iops_qd1": 1.0, "rand_read_iops_qd32": 1.0,
            "rand_write_iops_qd1": 1.0, "rand_write_iops_qd32": 1.0,
            "seq_read_mb_s": 1.0, "seq_write_mb_s": 1.0,
            "read_latency_us_by_size": [], "measured_at": "2026-01-01T00:00:00Z"
        },
        "options": {
            "page_size": 4096, "buffer_pool_bytes": 1, "direct_io": true, "entries": 1000,
            "ops": 100, "key_dist": "uniform", "seed": 1
        },
        "aging_rule": "test",
        "results": records
    })
    .to_string()
}

#[test]
fn compare_flags_the_cell_that_changed() {
    let t = tmp();
    let a = t.path().join("a.json");
    let b = t.path().join("b.json");
    std::fs::write(
        &a,
        results_json(&[
            ("btree", "o-search", 10_000.0, 1.0),
            ("lsm", "o-insert", 50_000.0, 0.2),
        ]),
    )
    .unwrap();
    std::fs::write(
        &b,
        results_json(&[
            ("btree", "o-search", 10_200.0, 1.0),
            ("lsm", "o-insert", 30_000.0, 0.2),
        ]),
    )
    .unwrap();
    let out = flashix(&["compare", p(&a), p(&b)]);
    let s = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let line = |cell: &str| {
        s.lines()
            .find(|l| l.starts_with(cell))
            .unwrap_or_else(|| panic!("no {cell} in {s}"))
            .to_string()
    };
    assert!(line("lsm ").contains("SLOWER"), "{s}");
    assert!(line("lsm ").contains("-40.0%"), "{s}");
    assert!(!line("btree ").contains("SLOWER"), "{s}");
    assert!(line("btree ").contains("n/a"), "{s}");
    assert!(s.contains("1 of 2 cells changed"), "{s}");
    // A higher threshold lets the -40% pass.
    let out = flashix(&["compare", "--threshold", "50%", p(&a), p(&b)]);
    assert!(text(&out.stdout).contains("0 of 2 cells changed"));

    let html = t.path().join("r.html");
    let out = flashix(&["report", p(&a), p(&b), "--out", p(&html)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("Compared with a baseline"));
    assert!(page.contains("SLOWER"));
}
