//! `flashix advise` end to end on a committed device profile (`tests/data/
//! device-profile.json`, measured by `flashix probe` on the project's benchmark machine):
//! every engine is ranked with its parameters, and a search-only and an insert-only mix
//! rank the engines in the directions the structures are built for.

use std::collections::BTreeMap;
use std::process::{Command, Output};

const PROFILE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/device-profile.json"
);
const ENGINES: [&str; 10] = [
    "btree", "lsm", "fdtree", "pio", "bulk", "bftl", "latree", "fbx", "ipl", "dipl",
];

fn flashix(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flashix"))
        .args(args)
        .output()
        .unwrap()
}

/// One ranking table: engine -> (rank, parameters), in the order printed.
struct Table {
    rows: Vec<(String, usize, String)>,
}

impl Table {
    fn rank(&self, engine: &str) -> usize {
        self.rows
            .iter()
            .find(|r| r.0 == engine)
            .map(|r| r.1)
            .unwrap_or_else(|| panic!("{engine} not ranked"))
    }
}

/// The tables of an `advise` output, by workload label.
fn tables(stdout: &str) -> BTreeMap<String, Table> {
    let mut out = BTreeMap::new();
    let mut current: Option<(String, Table)> = None;
    for line in stdout.lines() {
        if let Some(rest) = line.strip_prefix("workload ") {
            if let Some((label, t)) = current.take() {
                out.insert(label, t);
            }
            let label = rest.split(':').next().unwrap().to_string();
            current = Some((label, Table { rows: Vec::new() }));
            continue;
        }
        let Some((_, t)) = current.as_mut() else {
            continue;
        };
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.len() >= 8 && words[0].parse::<usize>().is_ok() {
            // rank engine model us/op ops/s reads/op writes/op parameters...
            for w in &words[3..7] {
                let v: f64 = w.parse().unwrap_or_else(|_| panic!("{line}"));
                assert!(v.is_finite() && v >= 0.0, "{line}");
            }
            t.rows.push((
                words[1].to_string(),
                words[0].parse().unwrap(),
                words[7..].join(" "),
            ));
        }
    }
    if let Some((label, t)) = current {
        out.insert(label, t);
    }
    out
}

fn advise(extra: &[&str]) -> BTreeMap<String, Table> {
    let mut args = vec![
        "advise",
        "--profile",
        PROFILE,
        "--entries",
        "400000",
        "--budget",
        "2MiB",
    ];
    args.extend_from_slice(extra);
    let out = flashix(&args);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    tables(&stdout)
}

#[test]
fn every_quick_suite_workload_ranks_every_engine_with_parameters() {
    let t = advise(&[]);
    let labels: Vec<&str> = t.keys().map(String::as_str).collect();
    for w in [
        "o-search",
        "o-insert",
        "o-delete",
        "o-update",
        "w-search",
        "w-insert",
        "w-delete",
        "range-1000",
        "tpcc",
        "bulk-insert-100",
        "range-delete-100",
    ] {
        let table = t.get(w).unwrap_or_else(|| panic!("no {w} in {labels:?}"));
        let mut names: Vec<&str> = table.rows.iter().map(|r| r.0.as_str()).collect();
        names.sort_unstable();
        let mut want = ENGINES.to_vec();
        want.sort_unstable();
        assert_eq!(names, want, "{w}");
        let ranks: Vec<usize> = table.rows.iter().map(|r| r.1).collect();
        assert_eq!(ranks, (1..=10).collect::<Vec<_>>(), "{w}");
        for (engine, _, params) in &table.rows {
            assert!(params.contains('='), "{w} {engine}: {params:?}");
        }
    }
    // The parameters are the tuned ones: FD-tree and LSM name k, PIO its leaf and OPQ,
    // the bulk index M.
    let o = &t["o-insert"];
    let params = |e: &str| o.rows.iter().find(|r| r.0 == e).unwrap().2.clone();
    assert!(params("fdtree").starts_with("k="), "{}", params("fdtree"));
    assert!(params("lsm").starts_with("k="));
    assert!(params("pio").contains("leaf_segments=") && params("pio").contains("opq="));
    assert!(params("bulk").starts_with("m="));
}

#[test]
fn search_only_and_insert_only_rank_in_opposite_directions() {
    let search = advise(&["--mix", "search=1"]);
    let insert = advise(&["--mix", "insert=1"]);
    let (s, i) = (&search["mix"], &insert["mix"]);
    // Searches: an in-place B+-tree (or the PIO B-tree, one) reads one leaf, and so do
    // the FD-tree and the LSM-tree of two levels whose upper level is cached (with 250
    // entries a packed page, their lowest level takes fewer pages than the B+-tree's
    // leaves, so more of it is cached); the log-based B+-trees read a node and its log.
    for e in ["btree", "pio", "fdtree", "lsm"] {
        for slow in ["bftl", "ipl", "dipl"] {
            assert!(s.rank(e) < s.rank(slow), "search-only: {e} vs {slow}");
        }
    }
    // Inserts: the FD-tree and LSM-tree merge sequentially; the B+-tree writes a leaf.
    for fast in ["fdtree", "lsm"] {
        assert!(i.rank(fast) < i.rank("btree"), "insert-only: {fast}");
        // At the top for searches too (see above), so no worse on inserts.
        assert!(
            i.rank(fast) <= s.rank(fast),
            "{fast} ranks no worse on inserts than on searches"
        );
    }
    assert!(s.rank("btree") < i.rank("btree"));
}

#[test]
fn bad_input_is_refused_with_a_reason() {
    let out = flashix(&["advise", "--profile", "/nonexistent/p.json"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("flashix probe"));
    for args in [
        vec!["--mix", "search=0"],
        vec!["--mix", "scan=1"],
        vec!["--workload", "get-many-8"],
        vec!["--budget", "4KiB"],
        vec!["--entries", "0"],
    ] {
        let mut all = vec!["advise", "--profile", PROFILE];
        all.extend(args.iter().copied());
        let out = flashix(&all);
        assert!(!out.status.success(), "{args:?}");
        assert!(!out.stderr.is_empty(), "{args:?}");
    }
}
