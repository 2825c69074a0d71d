//! Inspecting and verifying an index in place, without changing it: what `flashix stats`
//! and `flashix check` print.
//!
//! [`inspect`] reads the manifest only. [`check`] opens the index with
//! [`Db::open_read_only`] (recovery runs, in memory) and covers, in this order:
//!
//! 1. **The manifest**: magic, format version, checksum, options record (reading it).
//! 2. **Recovery**: the WAL of the manifest's generation is replayed as [`Db::open`] would
//!    (torn pages restored from before-images, logical records redone). A WAL record that
//!    fails its checksum ends the replay as a torn tail does: recovery cannot tell the two
//!    apart, so it is not reported as a problem.
//! 3. **The page sweep**: every page the manifest's extent allocator holds allocated
//!    (`[0, high_water)` less its free extents) is read as the engine sees it after
//!    recovery and checked against the page envelope (`crate::page`: crc32c and the page id
//!    it was written to). A page of zeros is an allocated page never written (an extent's
//!    unused tail): counted, not a problem, while a flipped bit in it is a checksum
//!    mismatch. Engines on raw NAND (IPL and d-IPL B+-trees) keep their own page format and
//!    no extent allocator: the sweep does not apply, and steps 4 and 5 cover their pages.
//! 4. **Structure**: [`Db::check_integrity`], the invariants each engine's module documents
//!    (it reads every node of the structure).
//! 5. **Contents**: a full ascending scan, which reads every entry, counts them and checks
//!    that keys strictly ascend.
//!
//! Every problem names its file and, where it has one, its page. The sweep reports every
//! damaged page it finds (up to [`MAX_PROBLEMS`]); a failing step 4 or 5 reports its first
//! error and ends that step. When the open itself fails (step 2), the sweep still runs, on
//! the pages as they are on disk (a page a crash tore, which recovery would have restored,
//! is then reported too), and steps 4 and 5 do not.

use crate::db::Db;
use crate::durable::{Manifest, MANIFEST};
use crate::error::{Error, Result};
use crate::io::{Device, DirVfs, Extent, OverlayDevice, Vfs};
use crate::kind::EngineKind;
use crate::options::record;
use crate::page;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Most problems a [`CheckReport`] lists; it counts the rest.
pub const MAX_PROBLEMS: usize = 100;

/// Pages the sweep reads per request.
const SWEEP_PAGES: u64 = 64;

/// What the manifest and the directory say about an index, read without opening it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexInfo {
    /// The engine.
    pub engine: EngineKind,
    /// The on-disk format version of the manifest.
    pub format_version: u32,
    /// Page size in bytes.
    pub page_size: usize,
    /// The memory budget saved with the index (its buffer pool and engine structures).
    pub buffer_pool_bytes: u64,
    /// The device the pages live on, as the options name it.
    pub device: String,
    /// The options record exactly as the manifest stores it.
    pub options: serde_json::Value,
    /// Checkpoint generation (the WAL to replay is `wal-<generation>.log`).
    pub generation: u64,
    /// Pages ever handed out by the extent allocator (the device's used length).
    pub high_water_pages: u64,
    /// Pages below the high water that are free.
    pub free_pages: u64,
    /// The free extents below the high water, sorted.
    pub free: Vec<Extent>,
    /// The engine's durable roots as the manifest stores them.
    pub engine_state: serde_json::Value,
    /// The files of the directory and their sizes in bytes, by name.
    pub files: Vec<(String, u64)>,
}

impl IndexInfo {
    /// Pages allocated at the last checkpoint: the high water less the free pages.
    pub fn allocated_pages(&self) -> u64 {
        self.high_water_pages.saturating_sub(self.free_pages)
    }

    /// The allocated extents: `[0, high_water)` less the free ones, ascending.
    pub fn allocated_extents(&self) -> Vec<Extent> {
        allocated_extents(self.high_water_pages, &self.free)
    }
}

/// Read the manifest and the directory listing of the index in `dir` (nothing is opened
/// for writing, nothing recovered).
pub fn inspect(dir: impl AsRef<Path>) -> Result<IndexInfo> {
    let dir = dir.as_ref();
    if !dir.is_dir() {
        return Err(Error::NotFound(dir.to_path_buf()));
    }
    let vfs = DirVfs::read_only(dir);
    if !vfs.exists(MANIFEST)? {
        return Err(Error::NotAnIndex(dir.to_path_buf()));
    }
    let manifest = Manifest::load(&vfs)?;
    info_of(&vfs, &manifest)
}

fn info_of(vfs: &DirVfs, m: &Manifest) -> Result<IndexInfo> {
    let opts = record::decode(&m.options, m.format_version)?;
    let mut files = Vec::new();
    for name in vfs.list()? {
        let len = vfs.len(&name)?;
        files.push((name, len));
    }
    Ok(IndexInfo {
        engine: opts.engine(),
        format_version: m.format_version,
        page_size: opts.page_size,
        buffer_pool_bytes: opts.buffer_pool_bytes,
        device: format!("{:?}", opts.device),
        options: m.options.clone(),
        generation: m.generation,
        high_water_pages: m.alloc.high_water,
        free_pages: m.alloc.free.iter().map(|e| e.len).sum(),
        free: m.alloc.free.clone(),
        engine_state: m.engine.clone(),
        files,
    })
}

/// One problem [`check`] found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    /// The step that found it: `manifest`, `open`, `pages`, `structure` or `scan`.
    pub step: String,
    /// The file (`data`, `nand`, `MANIFEST`, a WAL), when the error names one.
    pub file: Option<String>,
    /// The page (or byte offset, for a small file), when the error names one.
    pub page: Option<u64>,
    /// What is wrong.
    pub detail: String,
}

impl Problem {
    fn from_error(step: &str, e: &Error) -> Problem {
        match e {
            Error::Corruption { file, page, detail } => Problem {
                step: step.to_string(),
                file: Some(file.clone()),
                page: *page,
                detail: detail.clone(),
            },
            other => Problem {
                step: step.to_string(),
                file: None,
                page: None,
                detail: other.to_string(),
            },
        }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: ", self.step)?;
        if let Some(file) = &self.file {
            write!(f, "{file}")?;
            if let Some(p) = self.page {
                write!(f, " page {p}")?;
            }
            write!(f, ": ")?;
        }
        write!(f, "{}", self.detail)
    }
}

/// What [`check`] found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckReport {
    /// The manifest's description; `None` when the manifest itself could not be read.
    pub info: Option<IndexInfo>,
    /// Entries the full scan counted (`None` when the scan did not complete).
    pub entries: Option<u64>,
    /// Whether the page sweep applies to this engine (see the module doc, step 3).
    pub page_sweep: bool,
    /// Pages whose envelope the sweep verified.
    pub pages_checked: u64,
    /// Allocated pages the sweep found never written (all zeros).
    pub pages_unwritten: u64,
    /// What was found wrong, at most [`MAX_PROBLEMS`].
    pub problems: Vec<Problem>,
    /// Problems found beyond those listed.
    pub more_problems: u64,
}

impl CheckReport {
    /// True when no step found a problem.
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty() && self.more_problems == 0
    }

    fn push(&mut self, p: Problem) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(p);
        } else {
            self.more_problems += 1;
        }
    }
}

/// Where [`check`] is: a step's name, the units done and the total when known (pages for
/// the sweep, entries for the scan).
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    /// `pages` or `scan` (the other steps report once, with `done` 0).
    pub step: &'a str,
    /// Units done so far in this step.
    pub done: u64,
    /// Units in the whole step, when known.
    pub total: Option<u64>,
}

/// Verify the index in `dir` without changing anything on disk (the module doc lists what
/// is covered). Problems in the index are in the report; `Err` is kept for a directory
/// that is absent or holds no index, and for I/O errors on files that are there.
pub fn check(dir: impl AsRef<Path>, progress: &mut dyn FnMut(Progress<'_>)) -> Result<CheckReport> {
    let dir = dir.as_ref();
    let mut report = CheckReport {
        info: None,
        entries: None,
        page_sweep: false,
        pages_checked: 0,
        pages_unwritten: 0,
        problems: Vec::new(),
        more_problems: 0,
    };
    if !dir.is_dir() {
        return Err(Error::NotFound(dir.to_path_buf()));
    }
    let vfs = DirVfs::read_only(dir);
    if !vfs.exists(MANIFEST)? {
        return Err(Error::NotAnIndex(dir.to_path_buf()));
    }
    progress(Progress {
        step: "manifest",
        done: 0,
        total: None,
    });
    let manifest = match Manifest::load(&vfs).and_then(|m| info_of(&vfs, &m).map(|i| (m, i))) {
        Ok((m, info)) => {
            report.info = Some(info);
            m
        }
        Err(e) => {
            report.push(Problem::from_error("manifest", &e));
            return Ok(report);
        }
    };
    progress(Progress {
        step: "open",
        done: 0,
        total: None,
    });
    let (mut db, view) = match Db::open_read_only_view(dir) {
        Ok(x) => x,
        Err(e @ Error::Io { .. }) => return Err(e),
        Err(e) => {
            // The pages as they are on disk (recovery did not run), so that the report
            // still lists every damaged page.
            report.push(Problem::from_error("open", &e));
            let opts = record::decode(&manifest.options, manifest.format_version)?;
            if let Ok((_, Some(mut dev))) = crate::db::read_only_device(dir, &opts) {
                report.page_sweep = true;
                sweep(&mut dev, &manifest, &mut report, progress)?;
            }
            return Ok(report);
        }
    };
    if let Some(mut dev) = view {
        report.page_sweep = true;
        sweep(&mut dev, &manifest, &mut report, progress)?;
    }
    progress(Progress {
        step: "structure",
        done: 0,
        total: None,
    });
    if let Err(e) = db.check_integrity() {
        report.push(Problem::from_error("structure", &e));
        // A failed check poisons the Db; the scan needs a fresh one.
        match Db::open_read_only(dir) {
            Ok(fresh) => db = fresh,
            Err(e) => {
                report.push(Problem::from_error("open", &e));
                return Ok(report);
            }
        }
    }
    scan(&mut db, &mut report, progress);
    Ok(report)
}

/// Step 3: verify every allocated page's envelope as the engine sees it after recovery.
fn sweep(
    dev: &mut OverlayDevice,
    m: &Manifest,
    report: &mut CheckReport,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<()> {
    let ps = dev.page_size();
    let allocated = allocated_extents(m.alloc.high_water, &m.alloc.free);
    let total: u64 = allocated.iter().map(|e| e.len).sum();
    let mut done = 0u64;
    let mut buf = vec![0u8; ps * SWEEP_PAGES as usize];
    for e in allocated {
        let mut at = e.start;
        while at < e.end() {
            let n = (e.end() - at).min(SWEEP_PAGES);
            let bytes = &mut buf[..ps * n as usize];
            if let Err(err) = dev.read(at, bytes) {
                match err {
                    Error::Io { .. } => return Err(err),
                    other => report.push(Problem::from_error("pages", &other)),
                }
            } else {
                for (i, p) in bytes.chunks(ps).enumerate() {
                    let id = at + i as u64;
                    if p.iter().all(|&b| b == 0) {
                        report.pages_unwritten += 1;
                    } else if let Err(err) = page::verify(id, p) {
                        report.push(Problem::from_error("pages", &err));
                    } else {
                        report.pages_checked += 1;
                    }
                }
            }
            at += n;
            done += n;
            progress(Progress {
                step: "pages",
                done,
                total: Some(total),
            });
        }
    }
    Ok(())
}

/// `[0, high_water)` less the free extents (sorted and disjoint, as the manifest keeps them).
fn allocated_extents(high_water: u64, free: &[Extent]) -> Vec<Extent> {
    let mut free = free.to_vec();
    free.sort();
    let mut out = Vec::new();
    let mut at = 0;
    for f in free {
        let start = f.start.min(high_water);
        if start > at {
            out.push(Extent {
                start: at,
                len: start - at,
            });
        }
        at = at.max(f.end().min(high_water));
    }
    if high_water > at {
        out.push(Extent {
            start: at,
            len: high_water - at,
        });
    }
    out
}

/// Step 5: read every entry, count them, check that keys strictly ascend.
fn scan(db: &mut Db, report: &mut CheckReport, progress: &mut dyn FnMut(Progress<'_>)) {
    let mut count = 0u64;
    let mut prev: Option<u64> = None;
    let range = match db.range(..) {
        Ok(r) => r,
        Err(e) => {
            report.push(Problem::from_error("scan", &e));
            return;
        }
    };
    for kv in range {
        match kv {
            Ok((k, _)) => {
                if prev.is_some_and(|p| p >= k) {
                    report.push(Problem {
                        step: "scan".to_string(),
                        file: None,
                        page: None,
                        detail: format!(
                            "key {k} follows key {} (keys must strictly ascend)",
                            prev.unwrap_or_default()
                        ),
                    });
                    return;
                }
                prev = Some(k);
                count += 1;
                if count % 65_536 == 0 {
                    progress(Progress {
                        step: "scan",
                        done: count,
                        total: None,
                    });
                }
            }
            Err(e) => {
                report.push(Problem::from_error("scan", &e));
                return;
            }
        }
    }
    report.entries = Some(count);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocated_extents_are_the_complement_of_the_free_list() {
        let e = |start, len| Extent { start, len };
        assert_eq!(allocated_extents(10, &[]), vec![e(0, 10)]);
        assert_eq!(
            allocated_extents(10, &[e(0, 2), e(5, 1), e(8, 2)]),
            vec![e(2, 3), e(6, 2)]
        );
        assert_eq!(allocated_extents(4, &[e(0, 4)]), vec![]);
        assert_eq!(allocated_extents(0, &[]), vec![]);
    }
}
