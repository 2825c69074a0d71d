//! `flashix stats DIR`: an index's engine, options, sizes, space use, memory budget and
//! counters, from its manifest ([`flashix::check::inspect`]) and a read-only open and scan
//! that change nothing in its directory.

use super::progress;
use anyhow::{Context, Result};
use flashix::check::{self, IndexInfo};
use flashix::{Db, EngineKind, Stats};
use serde::Serialize;
use std::path::{Path, PathBuf};

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
pub fn run(a: &StatsArgs) -> Result<()> {
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
