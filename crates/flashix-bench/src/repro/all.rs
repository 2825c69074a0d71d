//! `flashix repro all --out DIR`: every paper's reproduction in turn, at one scale, and
//! one table of every claim, saved as `DIR/repro.json` and `DIR/repro.html`.
//!
//! Each paper runs as its own `flashix repro PAPER` would (its tables printed, its
//! `repro-PAPER.json` written to DIR), with the scale's flag:
//!
//! - `--scale quick` (the default): each paper's `--quick` sizes, seconds to a minute each
//!   (a smoke test of every experiment: the figures are too small to judge the papers by);
//! - `--scale default`: each paper's own default, the sizes its module doc and the README
//!   time (about ten minutes each here);
//! - `--scale paper`: each paper's `--paper` sizes (the papers' own where they fit; hours).
//!
//! The table has one row per claim ([`ClaimCheck`]): the paper, the figure, the paper's
//! number, ours on this disk, ours on the simulated devices (and raw NAND and cost
//! models), the verdict and, for a verdict other than `holds`, the measured reason. A
//! paper adds its rows by returning them from its `run` (its `claims`); a new paper is one
//! line of [`PAPERS`] and one arm of `run_paper`.

use super::{ClaimCheck, Repro};
use crate::output::html::esc;
use anyhow::{bail, Context, Result};
use clap::Parser;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The papers `repro all` runs, in order.
pub const PAPERS: [&str; 5] = ["fdtree", "pio", "bulk", "dipl", "fbx"];

/// Arguments of `flashix repro all`.
#[derive(clap::Args, Debug, Clone)]
pub struct AllReproArgs {
    /// Where `repro.json`, `repro.html` and every paper's `repro-PAPER.json` go.
    #[arg(long, default_value = "./bench-out")]
    pub out: PathBuf,
    /// quick (each paper's --quick), default (each paper's default sizes) or paper (each
    /// paper's --paper sizes).
    #[arg(long, default_value = "quick", conflicts_with_all = ["quick", "paper"])]
    pub scale: String,
    /// The same as `--scale quick` (the default).
    #[arg(long)]
    pub quick: bool,
    /// The same as `--scale paper`.
    #[arg(long, conflicts_with = "quick")]
    pub paper: bool,
    /// Run only these papers (fdtree, pio, bulk, dipl, fbx); default all.
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Seed of every paper's keys and workloads.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Check again the cells of a paper whose `repro-PAPER.json` is already in OUT instead
    /// of running it again (to finish a long run that stopped, to add a paper to one, or
    /// to apply this build's checks); the file is trusted to be of this scale.
    #[arg(long)]
    pub resume: bool,
}

/// One paper's part of the run.
#[derive(Debug, Clone, Serialize)]
pub struct PaperRun {
    pub paper: String,
    /// The command that reproduces this part alone.
    pub command: String,
    pub wall_seconds: f64,
    /// Claims whose every lens holds, of all claims measured and judged (a `--quick` run
    /// leaves the claims its sizes cannot judge unjudged).
    pub claims_holding: usize,
    pub claims_measured: usize,
    /// The claims were read from an earlier run's `repro-PAPER.json` (`--resume`).
    pub resumed: bool,
}

/// Everything `repro.json` holds.
#[derive(Debug, Clone, Serialize)]
pub struct AllRepro {
    pub scale: String,
    pub flashix_version: String,
    pub git_commit: String,
    pub seed: u64,
    pub wall_seconds: f64,
    pub papers: Vec<PaperRun>,
    /// Every paper's claims, in the order of `papers`.
    pub claims: Vec<ClaimCheck>,
}

/// The scale's flag of a paper's command.
fn scale_flag(scale: &str) -> Result<Option<&'static str>> {
    Ok(match scale {
        "quick" => Some("--quick"),
        "default" => None,
        "paper" => Some("--paper"),
        s => bail!("unknown scale {s:?}: quick, default or paper"),
    })
}

/// `flashix repro PAPER` as a command line of this run.
fn command(paper: &str, a: &AllReproArgs) -> Result<Vec<String>> {
    let mut c = vec![
        "repro".to_string(),
        paper.to_string(),
        "--out".into(),
        a.out.display().to_string(),
        "--seed".into(),
        a.seed.to_string(),
    ];
    if let Some(f) = scale_flag(&a.scale)? {
        c.push(f.into());
    }
    if paper == "dipl" {
        c.push("--quiet".into());
    }
    Ok(c)
}

/// The command line parsed as `flashix` parses it, so that every paper's own defaults
/// apply.
#[derive(Parser)]
#[command(name = "flashix")]
struct Cli {
    #[command(subcommand)]
    repro: ReproCmd,
}

#[derive(clap::Subcommand)]
enum ReproCmd {
    #[command(subcommand)]
    Repro(Repro),
}

/// Run one paper's reproduction and print its tables; its claims.
fn run_paper(args: &[String]) -> Result<Vec<ClaimCheck>> {
    let cli =
        Cli::try_parse_from(std::iter::once("flashix".to_string()).chain(args.iter().cloned()))
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    let ReproCmd::Repro(r) = cli.repro;
    Ok(match &r {
        Repro::Dipl(a) => super::dipl::run(a).map(|r| {
            super::dipl::print(&r);
            r.claims
        })?,
        Repro::Bulk(a) => super::bulk::run(a).map(|r| {
            super::bulk::print(&r);
            r.claims
        })?,
        Repro::Fbx(a) => super::fbx::run(a).map(|r| {
            super::fbx::print(&r);
            r.claims
        })?,
        Repro::Fdtree(a) => super::fdtree::run(a).map(|r| {
            super::fdtree::print(&r);
            r.claims
        })?,
        Repro::Pio(a) => super::pio::run(a).map(|r| {
            super::pio::print(&r);
            r.claims
        })?,
        Repro::All(_) => bail!("repro all does not run itself"),
    })
}

/// Run every paper (or `--only` some), print the table of claims, write `repro.json` and
/// `repro.html`.
pub fn run(a: &AllReproArgs) -> Result<AllRepro> {
    let started = Instant::now();
    let mut a = a.clone();
    if a.paper {
        a.scale = "paper".into();
    }
    let a = &a;
    scale_flag(&a.scale)?;
    for p in &a.only {
        if !PAPERS.contains(&p.as_str()) {
            bail!("unknown paper {p:?}: {}", PAPERS.join(", "));
        }
    }
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let mut all = AllRepro {
        scale: a.scale.clone(),
        flashix_version: env!("CARGO_PKG_VERSION").into(),
        git_commit: crate::output::report::git_commit(),
        seed: a.seed,
        wall_seconds: 0.0,
        papers: Vec::new(),
        claims: Vec::new(),
    };
    for paper in PAPERS {
        if !super::common::runs_part(&a.only, paper) {
            continue;
        }
        let cmd = command(paper, a)?;
        eprintln!(
            "repro all [{:>7.1} s]: flashix {}",
            started.elapsed().as_secs_f64(),
            cmd.join(" ")
        );
        let t = Instant::now();
        let earlier = a.out.join(format!("repro-{paper}.json"));
        let resumed = a.resume && earlier.exists();
        let claims = if resumed {
            read_claims(paper, &earlier)?
        } else {
            run_paper(&cmd).with_context(|| format!("repro {paper}"))?
        };
        let measured: Vec<&ClaimCheck> = claims
            .iter()
            .filter(|c| c.verdict != "not measured" && c.is_judged())
            .collect();
        all.papers.push(PaperRun {
            paper: paper.into(),
            command: format!("flashix {}", cmd.join(" ")),
            wall_seconds: t.elapsed().as_secs_f64(),
            claims_holding: measured.iter().filter(|c| c.holds()).count(),
            claims_measured: measured.len(),
            resumed,
        });
        all.claims.extend(claims);
    }
    all.wall_seconds = started.elapsed().as_secs_f64();
    save(&all, &a.out)?;
    Ok(all)
}

/// The claims of an earlier run of `paper`, checked again by this build.
fn read_claims(paper: &str, path: &Path) -> Result<Vec<ClaimCheck>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let check = match paper {
        "fdtree" => super::fdtree::recheck,
        "pio" => super::pio::recheck,
        "bulk" => super::bulk::recheck,
        "dipl" => super::dipl::recheck,
        "fbx" => super::fbx::recheck,
        p => bail!("unknown paper {p:?}"),
    };
    check(&text).with_context(|| format!("the cells of {}", path.display()))
}

fn save(r: &AllRepro, dir: &Path) -> Result<()> {
    let p = dir.join("repro.json");
    std::fs::write(&p, serde_json::to_string_pretty(r)?)
        .with_context(|| format!("writing {}", p.display()))?;
    let p = dir.join("repro.html");
    std::fs::write(&p, render(r)).with_context(|| format!("writing {}", p.display()))?;
    Ok(())
}

/// Print the papers' summary and the table of claims (markdown, for notes and issues).
pub fn print(r: &AllRepro) {
    println!(
        "\n# flashix repro all --scale {} ({:.0} s)\n",
        r.scale, r.wall_seconds
    );
    for p in &r.papers {
        println!(
            "- {}: {} of {} claims hold on every lens ({}; `{}`)",
            p.paper,
            p.claims_holding,
            p.claims_measured,
            if p.resumed {
                "read from an earlier run".to_string()
            } else {
                format!("{:.0} s", p.wall_seconds)
            },
            p.command
        );
    }
    println!(
        "\n| paper | figure | claim | paper's number | this disk | simulated | verdict | why |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let cell = |s: &str| s.replace('|', "/");
    for c in &r.claims {
        // A claim judged once over the run has no lens figures: its `here` spans both.
        let (disk, sim) = if c.lenses.is_empty() {
            (c.here.clone(), String::new())
        } else {
            (c.on_disk(), c.simulated())
        };
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            c.paper,
            cell(&c.experiment),
            cell(&c.claim),
            cell(&c.paper_value),
            cell(&disk),
            cell(&sim),
            cell(&c.verdict),
            cell(&c.reason)
        );
    }
}

/// `repro.html`: the summary and the table, self-contained.
pub fn render(r: &AllRepro) -> String {
    let mut h = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>flashix repro all</title><style>\
         body{font-family:sans-serif;margin:20px}\
         table{border-collapse:collapse;font-size:12px}\
         td,th{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}\
         td.holds{background:#e3f4e1}td.near{background:#fdf6d8}td.differs{background:#fbe3e1}\
         </style></head><body>\n",
    );
    let _ = writeln!(
        h,
        "<h1>flashix repro all</h1><p>flashix {} at commit <code>{}</code>, scale <b>{}</b>, \
         seed {}, {:.0} s.</p><ul>",
        esc(&r.flashix_version),
        esc(&r.git_commit),
        esc(&r.scale),
        r.seed,
        r.wall_seconds
    );
    for p in &r.papers {
        let _ = writeln!(
            h,
            "<li>{}: {} of {} claims hold on every lens ({:.0} s; <code>{}</code>)</li>",
            esc(&p.paper),
            p.claims_holding,
            p.claims_measured,
            p.wall_seconds,
            esc(&p.command)
        );
    }
    h.push_str(
        "</ul><table><tr><th>paper</th><th>figure</th><th>claim</th><th>paper's number</th>\
         <th>this disk</th><th>simulated</th><th>verdict</th><th>why</th></tr>\n",
    );
    for c in &r.claims {
        let (disk, sim) = if c.lenses.is_empty() {
            (c.here.clone(), String::new())
        } else {
            (c.on_disk(), c.simulated())
        };
        let class = if c.holds() {
            "holds"
        } else if c.verdict.contains("within 25%") && !c.verdict.contains("not hold") {
            "near"
        } else {
            "differs"
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td class=\"{class}\">{}</td><td>{}</td></tr>",
            esc(&c.paper),
            esc(&c.experiment),
            esc(&c.claim),
            esc(&c.paper_value),
            esc(&disk),
            esc(&sim),
            esc(&c.verdict),
            esc(&c.reason)
        );
    }
    h.push_str("</table></body></html>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_paper_parses_at_every_scale() {
        for scale in ["quick", "default", "paper"] {
            let a = AllReproArgs {
                out: "/tmp/x".into(),
                scale: scale.into(),
                only: Vec::new(),
                seed: 7,
                resume: false,
                quick: false,
                paper: false,
            };
            for p in PAPERS {
                let args = command(p, &a).unwrap();
                let cli = Cli::try_parse_from(
                    std::iter::once("flashix".to_string()).chain(args.iter().cloned()),
                );
                assert!(cli.is_ok(), "{p} {scale}: {:?}", cli.err());
            }
        }
        let bad = AllReproArgs {
            out: "/tmp/x".into(),
            scale: "huge".into(),
            only: Vec::new(),
            seed: 7,
            resume: false,
            quick: false,
            paper: false,
        };
        assert!(command("fdtree", &bad).is_err());
    }
}
