//! Operating an index from the shell: `flashix check`, `stats`, `dump` and `load`.
//!
//! `check`, `stats` and `dump` open the index with `Db::open_read_only`: nothing in its
//! directory changes, even when it was not closed cleanly (recovery runs in memory).
//! `load` creates a new index and refuses a directory that holds anything.
//!
//! # Dump formats
//!
//! **Text** (the default): one `key value` line per entry, both decimal u64, separated by
//! one space, in ascending key order. `load` also accepts any run of spaces or tabs
//! between the two and skips empty lines.
//!
//! **Binary** (`--binary`), little-endian throughout:
//! ```text
//! offset  size   field
//! 0       8      magic "FLASHIXD"
//! 8       4      format version (1)
//! 12      4      reserved (0)
//! 16      16*n   n entries: key u64, value u64, ascending by key
//! 16+16n  8      n (entry count)
//! 24+16n  4      crc32c of the 16*n entry bytes
//! ```
//! `load` detects the form by the magic; with `--binary` it insists on it.
//!
//! # Load
//!
//! Entries go in by `Db::bulk_insert` in batches of [`LOAD_BATCH`] while the input's keys
//! strictly ascend (as a dump's do): every engine then builds its structure from sorted
//! runs. From the first key that does not ascend the rest go in one `insert` at a time (an
//! upsert: for a key given twice the last value wins, as with `bulk_insert`). Malformed
//! input stops the load with the line number (text) or byte offset (binary), and the new
//! index is removed: a load leaves a whole index or none.

use crate::units::parse_size;
use anyhow::{bail, Context, Result};
use flashix::check::{self, CheckReport, IndexInfo};
use flashix::{Db, DeviceSpec, EngineKind, FdTreeOptions, LsmOptions, Options, PioOptions, Stats};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;
use std::io::{BufRead, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Magic of the binary dump.
pub const DUMP_MAGIC: &[u8; 8] = b"FLASHIXD";
/// Version of the binary dump this build writes and reads.
pub const DUMP_VERSION: u32 = 1;
/// Entries per `bulk_insert` call of a load.
pub const LOAD_BATCH: usize = 65_536;

const HEADER: usize = 16;
const TRAILER: usize = 12;

/// A progress bar on stderr, hidden when stderr is not a terminal. `len` 0: a counter
/// without a total.
pub fn progress(len: u64, msg: &str, unit: &str) -> ProgressBar {
    let target = if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let (pb, template) = if len == 0 {
        (
            ProgressBar::new_spinner(),
            format!("{{spinner}} {{msg}} {{pos}} {unit} {{per_sec}} {{elapsed}}"),
        )
    } else {
        (
            ProgressBar::new(len),
            format!("{{msg:<10}} [{{bar:30}}] {{pos}}/{{len}} {unit} {{per_sec}} eta {{eta}}"),
        )
    };
    pb.set_draw_target(target);
    if let Ok(style) = ProgressStyle::with_template(&template) {
        pb.set_style(style.progress_chars("=> "));
    }
    pb.set_message(msg.to_string());
    pb
}

// ---------------------------------------------------------------------------------------
// check

/// `flashix check DIR`.
#[derive(clap::Args)]
pub struct CheckArgs {
    /// The index directory.
    pub dir: PathBuf,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Run `flashix check`: exit 0 when clean, 1 when a problem was found.
pub fn check_cmd(a: &CheckArgs) -> Result<ExitCode> {
    let mut pages: Option<ProgressBar> = None;
    let mut scan: Option<ProgressBar> = None;
    let report = check::check(&a.dir, &mut |p| match p.step {
        "pages" => {
            let pb = pages.get_or_insert_with(|| progress(p.total.unwrap_or(0), "pages", "pages"));
            pb.set_position(p.done);
        }
        "scan" => {
            let pb = scan.get_or_insert_with(|| progress(0, "scan", "entries"));
            pb.set_position(p.done);
        }
        _ => {}
    })
    .with_context(|| format!("checking {}", a.dir.display()))?;
    for pb in pages.iter().chain(scan.iter()) {
        pb.finish_and_clear();
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", format_check(&a.dir, &report));
    }
    Ok(if report.is_clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The text report of `flashix check`.
pub fn format_check(dir: &Path, r: &CheckReport) -> String {
    let mut s = format!("index: {}\n", dir.display());
    if let Some(i) = &r.info {
        s += &format!(
            "engine: {}\nformat version: {}\npage size: {} B\n",
            i.engine, i.format_version, i.page_size
        );
    }
    s += &format!(
        "entries: {}\n",
        r.entries
            .map_or("unknown (the scan did not complete)".into(), |n| n
                .to_string())
    );
    if r.page_sweep {
        s += &format!(
            "pages checked: {} (checksum and page id of every allocated page; {} allocated \
             pages never written)\n",
            r.pages_checked, r.pages_unwritten
        );
    } else if r
        .info
        .as_ref()
        .is_some_and(|i| matches!(i.engine, EngineKind::IplBTree | EngineKind::DiplBTree))
    {
        s += "pages checked: none by the page sweep (an engine on raw NAND keeps its own page \
              format; its pages are covered by the structure check and the scan)\n";
    } else {
        s += "pages checked: none (the check stopped before the page sweep)\n";
    }
    if r.is_clean() {
        s += "problems: none\nstatus: clean\n";
    } else {
        s += &format!("problems: {}\n", r.problems.len() as u64 + r.more_problems);
        for p in &r.problems {
            s += &format!("  {p}\n");
        }
        if r.more_problems > 0 {
            s += &format!("  ... and {} more\n", r.more_problems);
        }
        s += "status: CORRUPT\n";
    }
    s
}

// ---------------------------------------------------------------------------------------
// stats

/// `flashix stats DIR`.
#[derive(clap::Args)]
pub struct StatsArgs {
    /// The index directory.
    pub dir: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// What `flashix stats` prints.
#[derive(Debug, Serialize)]
pub struct IndexStats {
    /// The manifest and the files.
    pub info: IndexInfo,
    /// Entries (a full scan).
    pub entries: u64,
    /// Pages allocated at the last checkpoint (live) and below the high water mark.
    pub live_pages: u64,
    pub allocated_pages: u64,
    /// Bytes of entries (16 per entry) over bytes of live pages.
    pub fill: Option<f64>,
    /// The index's counters after the read-only open and the scan.
    pub stats: Stats,
}

/// Run `flashix stats`.
pub fn stats_cmd(a: &StatsArgs) -> Result<()> {
    let info = check::inspect(&a.dir).with_context(|| format!("reading {}", a.dir.display()))?;
    let db = Db::open_read_only(&a.dir).with_context(|| format!("opening {}", a.dir.display()))?;
    let pb = progress(0, "counting", "entries");
    let mut entries = 0u64;
    for kv in db.range(..)? {
        kv?;
        entries += 1;
        if entries % 65_536 == 0 {
            pb.set_position(entries);
        }
    }
    pb.finish_and_clear();
    let live = info.allocated_pages();
    let out = IndexStats {
        entries,
        live_pages: live,
        allocated_pages: info.high_water_pages,
        fill: (live > 0).then(|| (entries * 16) as f64 / (live * info.page_size as u64) as f64),
        stats: db.stats(),
        info,
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print!("{}", format_stats(&a.dir, &out));
    }
    Ok(())
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

/// The text of `flashix stats`.
pub fn format_stats(dir: &Path, x: &IndexStats) -> String {
    let i = &x.info;
    let s = &x.stats;
    let mut o = format!("index: {}\n", dir.display());
    o += &format!("engine: {}\n", i.engine);
    o += &format!("format version: {}\n", i.format_version);
    o += &format!("page size: {} B\n", i.page_size);
    o += &format!("device: {}\n", i.device);
    o += &format!("options: {}\n", i.options);
    o += &format!("entries: {}\n", x.entries);
    if matches!(i.engine, EngineKind::IplBTree | EngineKind::DiplBTree) {
        o += "pages: erase blocks of the raw NAND, not an extent allocator's pages (see \
              blocks_in_use in the engine counters)\n";
    } else {
        o += &format!(
            "pages: {} live (allocated at the last checkpoint), {} below the high water mark, \
             {} free ({} live)\n",
            x.live_pages,
            x.allocated_pages,
            i.free_pages,
            mib(x.live_pages * i.page_size as u64)
        );
    }
    if let Some(f) = x.fill {
        o += &format!(
            "fill: {:.1}% (entry bytes, 16 per entry, over live page bytes)\n",
            f * 100.0
        );
    }
    let files: Vec<String> = i.files.iter().map(|(n, l)| format!("{n} {l} B")).collect();
    o += &format!("files: {}\n", files.join(", "));
    o += &format!(
        "memory: budget {} ({} B); held after open {} ({} B); buffer pool {} frames\n",
        mib(i.buffer_pool_bytes),
        i.buffer_pool_bytes,
        mib(s.memory_bytes),
        s.memory_bytes,
        s.buffer.frames
    );
    let sh = &s.shape;
    if !sh.levels.is_empty() {
        let levels: Vec<String> = sh
            .levels
            .iter()
            .map(|l| format!("L{} {}/{}", l.level, l.entries, l.capacity))
            .collect();
        o += &format!("levels (entries/capacity): {}\n", levels.join(", "));
    }
    if let Some(n) = sh.leaves {
        o += &format!("leaves: {n}\n");
    }
    if let Some(n) = sh.write_buffer_entries {
        o += &format!("write buffer: {n} entries\n");
    }
    let counters: Vec<String> = s
        .engine_counters
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    o += &format!("engine counters: {}\n", counters.join(" "));
    o += &format!(
        "this open and scan: {} pages read in {} requests, buffer hits {} misses {}, WAL \
         records replayed into memory {}\n",
        s.device.reads, s.device.read_requests, s.buffer.hits, s.buffer.misses, s.wal.records
    );
    o
}

// ---------------------------------------------------------------------------------------
// dump

/// `flashix dump DIR`.
#[derive(clap::Args)]
pub struct DumpArgs {
    /// The index directory.
    pub dir: PathBuf,
    /// Write the binary form (see `flashix load --help`) instead of text.
    #[arg(long)]
    pub binary: bool,
}

/// Run `flashix dump`: every entry to standard output, ascending.
pub fn dump_cmd(a: &DumpArgs) -> Result<()> {
    let mut db =
        Db::open_read_only(&a.dir).with_context(|| format!("opening {}", a.dir.display()))?;
    let pb = progress(0, "dump", "entries");
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let r = dump_to(&mut db, &mut out, a.binary, &pb).and_then(|()| Ok(out.flush()?));
    pb.finish_and_clear();
    match r {
        // A reader that stopped early (`| head`) is not an error.
        Err(e)
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) =>
        {
            Ok(())
        }
        r => r,
    }
}

/// Write every entry of `db` to `out`, as text or in the binary form.
pub fn dump_to(db: &mut Db, out: &mut dyn Write, binary: bool, pb: &ProgressBar) -> Result<()> {
    let mut n = 0u64;
    let mut crc = 0u32;
    if binary {
        out.write_all(DUMP_MAGIC)?;
        out.write_all(&DUMP_VERSION.to_le_bytes())?;
        out.write_all(&0u32.to_le_bytes())?;
    }
    for kv in db.range(..)? {
        let (k, v) = kv?;
        if binary {
            let mut e = [0u8; 16];
            e[..8].copy_from_slice(&k.to_le_bytes());
            e[8..].copy_from_slice(&v.to_le_bytes());
            crc = crc32c::crc32c_append(crc, &e);
            out.write_all(&e)?;
        } else {
            writeln!(out, "{k} {v}")?;
        }
        n += 1;
        if n % 65_536 == 0 {
            pb.set_position(n);
        }
    }
    if binary {
        out.write_all(&n.to_le_bytes())?;
        out.write_all(&crc.to_le_bytes())?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// load

/// The long help of `flashix load`: the input forms.
pub const LOAD_HELP: &str = "\
INPUT
  text    one `key value` line per entry, decimal u64 (what `flashix dump` writes);
          blank lines are skipped; a malformed line stops the load with its number
  binary  \"FLASHIXD\", u32 version 1, u32 0, then key,value u64 pairs, then u64 count
          and u32 crc32c of the pairs; all little-endian (`flashix dump --binary`)
  The form is detected by the magic. Input whose keys ascend (a dump's) goes in by
  bulk_insert in batches of 65,536; from the first key that does not, one insert at a
  time (the last value of a repeated key wins). On any error the new index is removed.";

/// `flashix load DIR --engine NAME`.
#[derive(clap::Args)]
pub struct LoadArgs {
    /// The new index's directory (absent or empty).
    pub dir: PathBuf,
    /// The engine: btree, lsm, fdtree, pio, bulk, bftl, latree, fbx, ipl, dipl.
    #[arg(long)]
    pub engine: String,
    /// Read the binary form; without it the form is detected by its magic.
    #[arg(long)]
    pub binary: bool,
    /// Memory budget of the index (its buffer pool), bytes or with a unit [default: the
    /// library's, 16 MiB].
    #[arg(long = "buffer-pool")]
    pub buffer_pool: Option<String>,
    /// Page (node) size in bytes [default: the engine's: 4096, 2048 for ipl and dipl].
    #[arg(long = "page-size")]
    pub page_size: Option<String>,
    /// FD-tree and LSM size ratio k [default: the cost model's].
    #[arg(long)]
    pub k: Option<u32>,
    /// Turn off the FD-tree's deamortized merges and the LSM-tree's rolling ones.
    #[arg(long = "no-deamortize")]
    pub no_deamortize: bool,
    /// PIO B-tree OPQ size [default: the cost model's].
    #[arg(long = "pio-opq")]
    pub pio_opq: Option<String>,
    /// PIO B-tree leaf size in segments [default: the cost model's].
    #[arg(long = "pio-leaf-segments")]
    pub pio_leaf_segments: Option<u32>,
    /// Use buffered I/O instead of O_DIRECT (engines on a file).
    #[arg(long = "no-direct-io")]
    pub no_direct_io: bool,
}

impl LoadArgs {
    /// The new index's options.
    pub fn options(&self) -> Result<Options> {
        let kind: EngineKind = self.engine.parse().context("--engine")?;
        let mut o = Options::new(kind);
        if !matches!(kind, EngineKind::IplBTree | EngineKind::DiplBTree) {
            o = o.device(DeviceSpec::File {
                direct_io: !self.no_direct_io,
            });
        }
        if let Some(b) = &self.buffer_pool {
            o = o.buffer_pool_bytes(parse_size(b).context("--buffer-pool")?);
        }
        if let Some(p) = &self.page_size {
            let p = parse_size(p).context("--page-size")?;
            o = o.page_size(usize::try_from(p).context("--page-size: too large")?);
        }
        Ok(o.fdtree(FdTreeOptions {
            k: self.k,
            deamortize: !self.no_deamortize,
            ..FdTreeOptions::default()
        })
        .lsm(LsmOptions {
            k: self.k,
            deamortize: !self.no_deamortize,
            ..LsmOptions::default()
        })
        .pio(PioOptions {
            leaf_segments: self.pio_leaf_segments,
            opq_bytes: self
                .pio_opq
                .as_deref()
                .map(parse_size)
                .transpose()
                .context("--pio-opq")?,
            ..PioOptions::default()
        }))
    }
}

/// Run `flashix load`: standard input into a new index.
pub fn load_cmd(a: &LoadArgs) -> Result<()> {
    let opts = a.options()?;
    let stdin = std::io::stdin();
    let n = load_from(&a.dir, opts, &mut stdin.lock(), a.binary)?;
    eprintln!("loaded {n} entries into {}", a.dir.display());
    Ok(())
}

/// Load `input` into a new index in `dir`; on any error the new index is removed. Returns
/// the number of entries read.
pub fn load_from(dir: &Path, opts: Options, input: &mut dyn BufRead, binary: bool) -> Result<u64> {
    let existed = dir.exists();
    let db = Db::create(dir, opts).with_context(|| {
        format!(
            "creating the index in {} (load makes a new index; it must be absent or empty)",
            dir.display()
        )
    })?;
    let mut loader = Loader::new(db);
    let pb = progress(0, "load", "entries");
    let r = read_input(input, binary, &mut |k, v| {
        loader.push(k, v)?;
        if loader.count % 65_536 == 0 {
            pb.set_position(loader.count);
        }
        Ok(())
    })
    .and_then(|()| loader.finish());
    pb.finish_and_clear();
    match r {
        Ok(n) => Ok(n),
        Err(e) => {
            // Remove what this load created (the directory was absent or empty).
            if existed {
                if let Ok(entries) = std::fs::read_dir(dir) {
                    for e in entries.flatten() {
                        let _ = std::fs::remove_file(e.path());
                    }
                }
            } else {
                let _ = std::fs::remove_dir_all(dir);
            }
            Err(e.context(format!(
                "loading {} (nothing was kept: the new index was removed)",
                dir.display()
            )))
        }
    }
}

/// Batches sorted input into `bulk_insert`; inserts one by one once it is not sorted.
struct Loader {
    db: Option<Db>,
    batch: Vec<(u64, u64)>,
    last: Option<u64>,
    sorted: bool,
    count: u64,
}

impl Loader {
    fn new(db: Db) -> Loader {
        Loader {
            db: Some(db),
            batch: Vec::with_capacity(LOAD_BATCH),
            last: None,
            sorted: true,
            count: 0,
        }
    }

    fn db(&mut self) -> Result<&mut Db> {
        self.db.as_mut().context("the index was closed")
    }

    fn push(&mut self, k: u64, v: u64) -> Result<()> {
        self.count += 1;
        if self.sorted && self.last.is_some_and(|l| k <= l) {
            self.sorted = false;
            eprintln!(
                "entry {}: key {k} does not ascend; the rest is inserted one entry at a time",
                self.count
            );
            self.flush_batch()?;
        }
        self.last = Some(k);
        if self.sorted {
            self.batch.push((k, v));
            if self.batch.len() >= LOAD_BATCH {
                self.flush_batch()?;
            }
        } else {
            self.db()?.insert(k, v)?;
        }
        Ok(())
    }

    fn flush_batch(&mut self) -> Result<()> {
        if !self.batch.is_empty() {
            let batch = std::mem::take(&mut self.batch);
            self.db()?.bulk_insert(&batch)?;
            self.batch = batch;
            self.batch.clear();
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<u64> {
        self.flush_batch()?;
        if let Some(db) = self.db.take() {
            db.close()?;
        }
        Ok(self.count)
    }
}

/// Parse `input` (text or binary, see the module doc) and hand every entry to `f`.
pub fn read_input(
    input: &mut dyn BufRead,
    binary: bool,
    f: &mut dyn FnMut(u64, u64) -> Result<()>,
) -> Result<()> {
    let head = input.fill_buf().context("reading standard input")?;
    let is_binary = head.len() >= DUMP_MAGIC.len() && &head[..DUMP_MAGIC.len()] == DUMP_MAGIC;
    if binary && !is_binary {
        bail!("--binary: the input does not start with the dump magic \"FLASHIXD\"");
    }
    if is_binary {
        read_binary(input, f)
    } else {
        read_text(input, f)
    }
}

fn read_text(input: &mut dyn BufRead, f: &mut dyn FnMut(u64, u64) -> Result<()>) -> Result<()> {
    let mut line = String::new();
    let mut no = 0u64;
    loop {
        line.clear();
        no += 1;
        let n = input
            .read_line(&mut line)
            .with_context(|| format!("line {no}: reading standard input"))?;
        if n == 0 {
            return Ok(());
        }
        let t = line.trim_end_matches(['\n', '\r']);
        if t.trim().is_empty() {
            continue;
        }
        let mut parts = t.split([' ', '\t']).filter(|p| !p.is_empty());
        let (Some(k), Some(v), None) = (parts.next(), parts.next(), parts.next()) else {
            bail!("line {no}: expected `key value` (two decimal numbers), found {t:?}");
        };
        let k: u64 = k
            .parse()
            .with_context(|| format!("line {no}: key {k:?} is not a decimal u64"))?;
        let v: u64 = v
            .parse()
            .with_context(|| format!("line {no}: value {v:?} is not a decimal u64"))?;
        f(k, v)?;
    }
}

fn read_binary(input: &mut dyn BufRead, f: &mut dyn FnMut(u64, u64) -> Result<()>) -> Result<()> {
    let mut header = [0u8; HEADER];
    input
        .read_exact(&mut header)
        .context("binary dump: the header is cut short")?;
    let version = u32::from_le_bytes([header[8], header[9], header[10], header[11]]);
    if version != DUMP_VERSION {
        bail!("binary dump: format version {version}, this build reads {DUMP_VERSION}");
    }
    // Entries are consumed while more than a trailer's worth of bytes follows them.
    let mut pending: Vec<u8> = Vec::with_capacity(1 << 17);
    let mut chunk = vec![0u8; 1 << 16];
    let mut count = 0u64;
    let mut crc = 0u32;
    loop {
        let n = input
            .read(&mut chunk)
            .context("binary dump: reading standard input")?;
        pending.extend_from_slice(&chunk[..n]);
        let usable = pending.len().saturating_sub(TRAILER) / 16 * 16;
        for e in pending[..usable].chunks_exact(16) {
            let k = u64::from_le_bytes(e[..8].try_into()?);
            let v = u64::from_le_bytes(e[8..].try_into()?);
            crc = crc32c::crc32c_append(crc, e);
            count += 1;
            f(k, v)?;
        }
        pending.drain(..usable);
        if n == 0 {
            break;
        }
    }
    if pending.len() != TRAILER {
        bail!(
            "binary dump: {} bytes after {count} entries at byte {}; expected the {TRAILER}-byte \
             trailer (count, crc32c): the dump is cut short or damaged",
            pending.len(),
            HEADER as u64 + count * 16
        );
    }
    let n = u64::from_le_bytes(pending[..8].try_into()?);
    let c = u32::from_le_bytes(pending[8..].try_into()?);
    if n != count {
        bail!("binary dump: the trailer says {n} entries, the dump holds {count}");
    }
    if c != crc {
        bail!("binary dump: checksum mismatch (trailer {c:08x}, entries {crc:08x})");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(bytes: &[u8], binary: bool) -> Result<Vec<(u64, u64)>> {
        let mut out = Vec::new();
        read_input(&mut &bytes[..], binary, &mut |k, v| {
            out.push((k, v));
            Ok(())
        })?;
        Ok(out)
    }

    fn binary(pairs: &[(u64, u64)]) -> Vec<u8> {
        let mut b = DUMP_MAGIC.to_vec();
        b.extend_from_slice(&DUMP_VERSION.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        let mut crc = 0;
        for &(k, v) in pairs {
            let mut e = k.to_le_bytes().to_vec();
            e.extend_from_slice(&v.to_le_bytes());
            crc = crc32c::crc32c_append(crc, &e);
            b.extend_from_slice(&e);
        }
        b.extend_from_slice(&(pairs.len() as u64).to_le_bytes());
        b.extend_from_slice(&u32::to_le_bytes(crc));
        b
    }

    #[test]
    fn text_input_parses_and_names_the_bad_line() {
        let ok = parse(b"1 10\n\n2\t20\r\n18446744073709551615 0\n", false).unwrap();
        assert_eq!(ok, vec![(1, 10), (2, 20), (u64::MAX, 0)]);
        for (bad, line) in [
            (&b"1 10\n2\n"[..], "line 2"),
            (b"1 10\n2 3 4\n", "line 2"),
            (b"1 10\n\nx 1\n", "line 3"),
            (b"18446744073709551616 1\n", "line 1"),
        ] {
            let e = format!("{:#}", parse(bad, false).unwrap_err());
            assert!(e.contains(line), "{e}");
        }
    }

    #[test]
    fn binary_input_round_trips_and_damage_is_caught() {
        let pairs: Vec<(u64, u64)> = (0..10_000u64).map(|i| (i * 7, u64::MAX - i)).collect();
        let b = binary(&pairs);
        assert_eq!(parse(&b, false).unwrap(), pairs, "detected by its magic");
        assert_eq!(parse(&b, true).unwrap(), pairs);
        assert_eq!(parse(&binary(&[]), true).unwrap(), vec![]);
        assert!(
            parse(b"1 2\n", true).is_err(),
            "--binary insists on the magic"
        );
        let mut flipped = b.clone();
        flipped[HEADER + 100] ^= 1;
        let e = format!("{:#}", parse(&flipped, true).unwrap_err());
        assert!(e.contains("checksum"), "{e}");
        let cut = &b[..b.len() - 20];
        let e = format!("{:#}", parse(cut, true).unwrap_err());
        assert!(e.contains("cut short"), "{e}");
    }
}
