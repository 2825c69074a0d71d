//! `flashix check DIR`: verify an index without changing it ([`flashix::check::check`]):
//! it is opened read-only (an index that was not closed cleanly is recovered in memory),
//! every allocated page's checksum and page id, the engine's invariants and a full scan are
//! checked, and the exit status is 0 only when all of them are clean.

use super::progress;
use anyhow::{Context, Result};
use flashix::check::{self, CheckReport};
use flashix::EngineKind;
use indicatif::ProgressBar;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

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
pub fn run(a: &CheckArgs) -> Result<ExitCode> {
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
