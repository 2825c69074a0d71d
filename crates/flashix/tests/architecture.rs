//! Architecture rules read from the source tree: no engine imports another engine. What two
//! engines share lives in a kit (`src/kit/`, below the engines), which imports no engine.

use std::fs;
use std::path::{Path, PathBuf};

/// The engines under `src/engine/`, one folder each.
const ENGINES: [&str; 10] = [
    "bftl", "btree", "bulk", "dipl", "fbx", "fdtree", "ipl", "latree", "lsm", "pio",
];

/// (engine, other engine) pairs allowed: none (the IPL and d-IPL B+-trees share the
/// `kit::inpage` core).
const ALLOWED: [(&str, &str); 0] = [];

/// (engine, other engine) pairs allowed in comments only (doc links): none.
const ALLOWED_IN_COMMENTS: [(&str, &str); 0] = [];

fn engine_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/engine")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// True if `line` names module `name` right after `prefix` (`crate::engine::` + `btree` in
/// `use crate::engine::btree::node;`), not a longer name that starts with it.
fn names(line: &str, prefix: &str, name: &str) -> bool {
    let pat = format!("{prefix}{name}");
    line.match_indices(&pat).any(|(i, _)| {
        let after = line[i + pat.len()..].chars().next();
        !after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// Every `(file, line number, other engine)` where a file under `dir` names `other` as a
/// `crate::engine::` (or `super::super::`) path, unless allowed for `(from, other)`.
fn cross_references(from: &str, dir: &Path) -> Vec<(PathBuf, usize, String)> {
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    let mut found = Vec::new();
    for file in files {
        let text = fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let comment = line.trim_start().starts_with("//");
            for &other in ENGINES.iter().filter(|&&o| o != from) {
                if ALLOWED.contains(&(from, other))
                    || (comment && ALLOWED_IN_COMMENTS.contains(&(from, other)))
                {
                    continue;
                }
                if names(line, "crate::engine::", other) || names(line, "super::super::", other) {
                    found.push((file.clone(), n + 1, other.to_string()));
                }
            }
        }
    }
    found
}

#[test]
fn every_engine_folder_is_listed() {
    let mut on_disk: Vec<String> = fs::read_dir(engine_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    assert_eq!(on_disk, ENGINES, "src/engine/ folders and ENGINES differ");
}

#[test]
fn no_engine_imports_another_engine() {
    let mut found = Vec::new();
    for engine in ENGINES {
        found.extend(cross_references(engine, &engine_dir().join(engine)));
    }
    let report: Vec<String> = found
        .iter()
        .map(|(file, line, other)| format!("{}:{line}: names engine {other}", file.display()))
        .collect();
    assert!(
        report.is_empty(),
        "engines naming other engines (move what they share into src/kit/):\n{}",
        report.join("\n")
    );
}

#[test]
fn no_kit_imports_an_engine() {
    let mut files = Vec::new();
    rust_files(&engine_dir().with_file_name("kit"), &mut files);
    assert!(!files.is_empty(), "no kit found");
    let mut report = Vec::new();
    for file in files {
        let text = fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if code.contains("crate::engine") {
                report.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        report.is_empty(),
        "kits naming engines:\n{}",
        report.join("\n")
    );
}

#[test]
fn the_check_sees_an_import() {
    assert!(names(
        "use crate::engine::btree::node;",
        "crate::engine::",
        "btree"
    ));
    assert!(names(
        "crate::engine::btree::group_sizes(",
        "crate::engine::",
        "btree"
    ));
    assert!(names(
        "pub(super) use super::super::ipl::Core;",
        "super::super::",
        "ipl"
    ));
    assert!(!names(
        "use crate::kit::bnode::node;",
        "crate::engine::",
        "btree"
    ));
    assert!(!names(
        "use crate::engine::dipl::X;",
        "crate::engine::",
        "ipl"
    ));
    assert!(!names(
        "use crate::engine::iplx::X;",
        "crate::engine::",
        "ipl"
    ));
}
