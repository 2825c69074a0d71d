//! The import structure of `src/` (docs/design.md, Layers): no import circle, no module below
//! the engines imports the engines, the options they own, `db` or `testing`, and at folder
//! level (each engine folder, `engine`, `options`, `kit`, `durable`, ... as units, [`LAYERS`])
//! every import runs down the layers.
//!
//! The graph: one node per source file; an edge for every absolute path `crate::a::b::X`
//! (in `use` lines, inline, and `$crate::` in macros; comments and unit tests skipped), resolved to the file
//! that *defines* `X` by following `pub use` re-exports. Paths relative to a folder
//! (`super::`, `self::`, a child module's name) stay inside one folder, the unit that owns a
//! concern, and are not edges. `cargo test -p flashix --test layers -- --nocapture` prints
//! the graph's size and every file's outgoing layers.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Modules below the engines, and what they must not import.
const LOWER: [&str; 12] = [
    "io", "sim", "buffer", "durable", "cost", "util", "page", "error", "kind", "stats", "kit",
    "settings",
];
const ABOVE_LOWER: [&str; 5] = ["engine", "options", "db", "testing", "mobject"];

struct Crate {
    /// File of each module path ("" is the crate root).
    files: BTreeMap<String, PathBuf>,
    /// Source of each file, comments removed.
    code: BTreeMap<PathBuf, String>,
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn module_path(rel: &Path) -> String {
    let mut parts: Vec<String> = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts.join("::")
}

fn strip_comments(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A file's library code, comments removed: without its unit tests (a `tests.rs` file, or
/// the `#[cfg(test)] mod tests` block that ends a file), which may drive an engine through
/// the `Db` above it: they are not part of the library whose layers this checks.
fn library_code(p: &Path) -> String {
    if p.file_name().is_some_and(|n| n == "tests.rs") {
        return String::new();
    }
    let text = std::fs::read_to_string(p).unwrap();
    let live = text
        .split("#[cfg(test)]\nmod tests")
        .next()
        .unwrap_or(&text);
    strip_comments(live)
}

fn load() -> Crate {
    let mut files = BTreeMap::new();
    let mut code = BTreeMap::new();
    let mut stack = vec![src()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let rel = p.strip_prefix(src()).unwrap().to_path_buf();
                files.insert(module_path(&rel), p.clone());
                code.insert(p.clone(), library_code(&p));
            }
        }
    }
    Crate { files, code }
}

/// Expand a use tree such as `a::{b, c::{d, e}}` into full paths.
fn expand(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let t = tree.split(" as ").next().unwrap_or(tree).trim();
        return vec![t.to_string()];
    };
    let prefix = &tree[..open];
    let inner = &tree[open + 1..tree.rfind('}').unwrap()];
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, ch) in inner.char_indices() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|p| !p.trim().is_empty())
        .flat_map(|p| {
            let p = p.trim();
            if p == "self" {
                vec![prefix.trim_end_matches("::").to_string()]
            } else {
                expand(p)
                    .into_iter()
                    .map(|x| format!("{prefix}{x}"))
                    .collect()
            }
        })
        .collect()
}

/// Every `crate::` path of a file: use trees expanded, plus inline paths.
fn crate_paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let text = code.replace("$crate::", "crate::");
    // `use crate::...;` statements (possibly several lines).
    let mut rest = text.as_str();
    while let Some(i) = rest.find("use crate::") {
        let stmt_start = i + "use ".len();
        let end = rest[stmt_start..]
            .find(';')
            .map_or(rest.len(), |e| stmt_start + e);
        let stmt: String = rest[stmt_start..end]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        out.extend(expand(&stmt));
        rest = &rest[end..];
    }
    // Inline paths.
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(j) = text[i..].find("crate::") {
        let at = i + j;
        let before = at.checked_sub(1).map(|b| bytes[b]);
        let mut end = at + "crate::".len();
        while end < bytes.len()
            && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_' || bytes[end] == b':')
        {
            end += 1;
        }
        // A use tree's prefix (`crate::a::{b, c}`) is expanded above, not an item.
        let tree_prefix = bytes.get(end) == Some(&b'{');
        if !tree_prefix && !matches!(before, Some(b) if b.is_ascii_alphanumeric() || b == b'_') {
            out.push(text[at..end].trim_end_matches(':').to_string());
        }
        i = end;
    }
    out.retain(|p| p.starts_with("crate::"));
    out
}

impl Crate {
    /// The file defining the item at `path` (`crate::a::b::X`), following `pub use`.
    fn resolve(&self, path: &str, depth: usize) -> Option<PathBuf> {
        let segs: Vec<&str> = path.trim_start_matches("crate::").split("::").collect();
        // The longest prefix that is a module file.
        let mut n = segs.len();
        while n > 0 && !self.files.contains_key(&segs[..n].join("::")) {
            n -= 1;
        }
        let module = segs[..n].join("::");
        let file = self.files.get(&module)?.clone();
        let Some(&item) = segs.get(n) else {
            return Some(file);
        };
        if depth > 8 {
            return Some(file);
        }
        // A re-export of `item` in that file: follow it.
        let code = &self.code[&file];
        for line_start in code.match_indices("pub use ").map(|(i, _)| i) {
            let end = code[line_start..]
                .find(';')
                .map_or(code.len(), |e| line_start + e);
            let stmt: String = code[line_start + "pub use ".len()..end]
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            for target in expand(&stmt) {
                if target.rsplit("::").next() == Some(item) {
                    let full = if target.starts_with("crate::") {
                        target
                    } else {
                        let base = if module.is_empty() {
                            String::new()
                        } else {
                            format!("{module}::")
                        };
                        format!("crate::{base}{target}")
                    };
                    return self.resolve(&full, depth + 1).or(Some(file));
                }
            }
        }
        Some(file)
    }

    fn graph(&self) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
        let mut g = BTreeMap::new();
        for (file, code) in &self.code {
            let deps: BTreeSet<PathBuf> = crate_paths(code)
                .iter()
                .filter_map(|p| self.resolve(p, 0))
                .filter(|d| d != file && !d.ends_with("lib.rs"))
                .collect();
            g.insert(file.clone(), deps);
        }
        g
    }
}

fn rel(p: &Path) -> String {
    p.strip_prefix(src()).unwrap().display().to_string()
}

fn top(p: &Path) -> String {
    let r = rel(p);
    r.split('/')
        .next()
        .unwrap()
        .trim_end_matches(".rs")
        .to_string()
}

/// Strongly connected components with more than one file (Tarjan).
fn cycles(g: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    struct T<'a> {
        g: &'a BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: BTreeMap<&'a PathBuf, usize>,
        low: BTreeMap<&'a PathBuf, usize>,
        on: BTreeSet<&'a PathBuf>,
        stack: Vec<&'a PathBuf>,
        next: usize,
        out: Vec<Vec<PathBuf>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a PathBuf) {
        t.index.insert(v, t.next);
        t.low.insert(v, t.next);
        t.next += 1;
        t.stack.push(v);
        t.on.insert(v);
        for w in &t.g[v] {
            if !t.g.contains_key(w) {
                continue;
            }
            let w = t.g.get_key_value(w).unwrap().0;
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                comp.push(w.clone());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        on: BTreeSet::new(),
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in g.keys() {
        if !t.index.contains_key(v) {
            visit(&mut t, v);
        }
    }
    t.out
}

#[test]
fn no_import_circles() {
    let c = load();
    let g = c.graph();
    let edges: usize = g.values().map(BTreeSet::len).sum();
    println!("{} files, {edges} import edges", g.len());
    let found = cycles(&g);
    let shown: Vec<Vec<String>> = found
        .iter()
        .map(|comp| comp.iter().map(|p| rel(p)).collect())
        .collect();
    assert!(shown.is_empty(), "import circles: {shown:#?}");
}

/// The unit of a file at folder granularity: its top-level module, or `engine/<name>` for
/// an engine's folder.
fn unit(p: &Path) -> String {
    let r = rel(p);
    let parts: Vec<&str> = r.split('/').collect();
    match parts.as_slice() {
        ["engine", name, _, ..] => format!("engine/{name}"),
        _ => top(p),
    }
}

/// No circle between modules either: folding files into their module (and each engine's
/// folder into one unit), the graph has no cycle. In particular the engines do not import
/// the `Options` aggregate that names their options types (they get `Settings`).
#[test]
fn no_import_circles_between_modules() {
    let c = load();
    let mut g: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for (file, deps) in c.graph() {
        let from = PathBuf::from(unit(&file));
        let entry = g.entry(from.clone()).or_default();
        for d in deps {
            let to = PathBuf::from(unit(&d));
            if to != from {
                entry.insert(to);
            }
        }
    }
    for deps in g.clone().values() {
        for d in deps {
            g.entry(d.clone()).or_default();
        }
    }
    let found = cycles(&g);
    assert!(found.is_empty(), "module circles: {found:#?}");
}

#[test]
fn nothing_below_the_engines_imports_them() {
    let c = load();
    let mut bad = Vec::new();
    for (file, deps) in c.graph() {
        if !LOWER.contains(&top(&file).as_str()) {
            continue;
        }
        for d in deps {
            if ABOVE_LOWER.contains(&top(&d).as_str()) {
                bad.push(format!("{} -> {}", rel(&file), rel(&d)));
            }
        }
    }
    assert!(bad.is_empty(), "upward imports: {bad:#?}");
}

/// The folder-level layers, bottom up (docs/design.md, Layers). A unit is a top-level
/// module, `engine/<name>` for an engine's folder (`engine/*` here), `engine` for the
/// registry beside the folders (`engine/mod.rs`, `engine/registry.rs`), or `lib` for what
/// the crate root re-exports (the public face). A unit imports only from units of lower
/// layers: none from its own layer (engine folders never import each other) and none
/// from above.
const LAYERS: &[&[&str]] = &[
    &["error", "util", "hostile"],
    &["io", "cost", "kind"],
    &["sim", "page", "stats"],
    &["buffer"],
    &["durable"],
    &["settings", "batch"],
    &["kit"],
    &["engine/*"],
    &["engine"],
    &["options"],
    &["db"],
    &["lib"],
    &["check", "experiment", "mobject"],
    &["testing"],
];

fn layer(unit: &str) -> Option<usize> {
    let key = if unit.starts_with("engine/") {
        "engine/*"
    } else {
        unit
    };
    LAYERS.iter().position(|l| l.contains(&key))
}

impl Crate {
    /// The unit a `crate::` path imports from: the unit of the file defining the item, or
    /// `lib` for an item named through the crate root's re-exports (`crate::Options`,
    /// not `crate::options::Options`). A macro exported at the root is its defining file's.
    fn target_unit(&self, path: &str) -> Option<String> {
        let first = path.trim_start_matches("crate::").split("::").next()?;
        if self.files.contains_key(first) {
            return self.resolve(path, 0).map(|f| unit(&f));
        }
        let def = format!("macro_rules! {first}");
        match self.code.iter().find(|(_, code)| code.contains(&def)) {
            Some((file, _)) => Some(unit(file)),
            None => Some("lib".to_string()),
        }
    }

    /// Every unit's imports of other units, with one file that makes each.
    fn unit_edges(&self) -> BTreeMap<(String, String), PathBuf> {
        let mut edges = BTreeMap::new();
        for (file, code) in &self.code {
            let from = unit(file);
            for p in crate_paths(code) {
                let Some(to) = self.target_unit(&p) else {
                    continue;
                };
                if to != from {
                    edges
                        .entry((from.clone(), to))
                        .or_insert_with(|| file.clone());
                }
            }
        }
        edges
    }

    /// The edges of the folder-level graph that do not run down the [`LAYERS`], and the
    /// units that have no layer.
    fn back_edges(&self) -> Vec<String> {
        let mut bad = Vec::new();
        for ((from, to), file) in self.unit_edges() {
            match (layer(&from), layer(&to)) {
                (Some(f), Some(t)) if t < f => {}
                (Some(_), Some(_)) => bad.push(format!("{from} -> {to} ({})", rel(&file))),
                _ => bad.push(format!("{from} -> {to}: a unit without a layer in LAYERS")),
            }
        }
        bad
    }
}

/// The folder-level graph runs down the layers: no engine folder imports `engine` (the
/// registry), `options`, `db` or another engine; `engine` does not import `options`; no
/// module below the public face imports through the crate root.
#[test]
fn folder_graph_runs_down_the_layers() {
    let c = load();
    let edges = c.unit_edges();
    println!("{} folder-level edges", edges.len());
    for ((from, to), file) in &edges {
        println!("{from} -> {to} ({})", rel(file));
    }
    let bad = c.back_edges();
    assert!(bad.is_empty(), "edges running back up the layers: {bad:#?}");
}

/// The folder-level check sees a back edge into `options`, between two engines, from a
/// kit into an engine and through the crate root.
#[test]
fn the_folder_check_sees_back_edges() {
    let edits = [
        (
            "engine",
            "use crate::options::Options;",
            "engine -> options",
        ),
        (
            "engine::lsm",
            "use crate::engine::btree::BTree;",
            "engine/lsm -> engine/btree",
        ),
        (
            "kit::inpage",
            "use crate::engine::ipl::IplBTree;",
            "kit -> engine/ipl",
        ),
        (
            "engine::pio::opq",
            "let _ = crate::PIO_OPQ_ENTRY_BYTES;",
            "engine/pio -> lib",
        ),
    ];
    for (module, line, want) in edits {
        let mut c = load();
        let file = c.files[module].clone();
        c.code
            .get_mut(&file)
            .unwrap()
            .push_str(&format!("\n{line}\n"));
        let bad = c.back_edges();
        assert!(
            bad.iter().any(|b| b.starts_with(want)),
            "{want} not found in {bad:#?}"
        );
    }
}

/// The checker itself finds a circle and an upward edge when there is one.
#[test]
fn the_checker_sees_circles_and_upward_edges() {
    let mut c = load();
    let io = c.files["io"].clone();
    let db = c.files["db"].clone();
    c.code
        .get_mut(&io)
        .unwrap()
        .push_str("\nuse crate::db::Db;\n");
    let g = c.graph();
    assert!(g[&io].contains(&db));
    assert!(!cycles(&g).is_empty(), "io -> db -> io is a circle");
    assert_eq!(
        expand("crate::a::{b, c::{d, e as f}, self}"),
        [
            "crate::a::b",
            "crate::a::c::d",
            "crate::a::c::e",
            "crate::a"
        ]
    );
}

/// The checkpoint switch exists once: outside tests, a WAL file is created only in
/// `durable/log.rs` (by `Log::switch`, which creates the next generation's WAL when no
/// earlier switch created it ahead, and the one after it; and by `Log::create` for
/// generation 1 of a new index), and a manifest is stored only there too.
#[test]
fn wal_files_and_manifests_are_created_only_by_the_log() {
    let c = load();
    for (file, code) in &c.code {
        let r = rel(file);
        if r.ends_with("tests.rs") {
            continue;
        }
        // Code before the file's unit tests.
        let live = code.split("#[cfg(test)]\nmod tests").next().unwrap_or(code);
        let creates =
            live.matches("Wal::create(").count() + live.matches("Wal::create_in(").count();
        let stores = live.matches(".store(").count();
        match r.as_str() {
            "durable/log.rs" => {
                assert_eq!(creates, 3, "Log::create and Log::switch (twice)");
                assert_eq!(stores, 1, "Log::switch");
            }
            "durable/wal.rs" | "durable/manifest.rs" => {}
            _ => {
                assert_eq!(creates, 0, "{r} creates a WAL");
                assert!(
                    !live.contains("Manifest {") || !live.contains(".store("),
                    "{r} stores a manifest"
                );
            }
        }
    }
}
