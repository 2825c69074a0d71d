//! The subcommands of `flashix`, one module each with its arguments and its run; the
//! binary (`main.rs`) parses a [`Cli`] and hands it to [`run`].
//!
//! - [`probe`]: measure the device, or a simulated SSD (`flashix probe`);
//! - [`bench`](mod@bench): workloads against engines and peers on aged indexes (`flashix bench`);
//! - [`fdtree_model`], [`pio_model`], [`bulk_model`]: one engine's cost model for a device
//!   profile (`flashix fdtree-model`, `pio-model`, `bulk-model`);
//! - [`advise`]: every engine's predicted cost, ranked, and `--verify` (`flashix advise`);
//! - [`mo_bench`]: moving-object workloads (`flashix mo-bench`, and `flashix bench
//!   --workload mo-*`);
//! - [`sim`]: random writes on a simulated SSD with each FTL (`flashix sim`);
//! - [`report`]: `report.html` again from a `results.json` (`flashix report`);
//! - [`compare`]: two runs side by side (`flashix compare`);
//! - [`check`], [`stats`], [`dump`], [`load`]: operating an index (`flashix check`,
//!   `stats`, `dump`, `load`); none of the first three changes anything in its directory.
//!
//! `flashix repro` takes its subcommands from [`crate::repro::Repro`], one per paper with
//! the paper's arguments beside its experiments, since `flashix repro all` runs the others
//! through the same enum.

pub mod advise;
pub mod bench;
pub mod bulk_model;
pub mod check;
pub mod compare;
pub mod dump;
pub mod fdtree_model;
pub mod load;
pub mod mo_bench;
pub mod pio_model;
pub mod probe;
pub mod report;
pub mod sim;
pub mod stats;

use anyhow::Result;
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "flashix",
    version,
    about = "flashix device probe and benchmarks, and tools to operate an index",
    after_help = OPS_HELP
)]
pub struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
pub enum Cmd {
    /// Measure the device (or, with --sim, a simulated SSD of a named profile): random 4 KiB
    /// read IOPS at queue depths 1, 2, 4, 8, 16 and 32, random 4 KiB write IOPS at QD1/QD32,
    /// sequential bandwidth and 4 KiB IOPS, latency by size.
    Probe(probe::ProbeArgs),
    /// Run workloads against engines and peers on aged indexes; writes a table,
    /// OUT/results.json and OUT/report.html.
    #[command(after_long_help = bench::BENCH_HELP)]
    Bench(Box<bench::BenchArgs>),
    /// FD-tree cost model: choose k and the number of levels for a device profile and a mix.
    FdtreeModel(fdtree_model::FdTreeModelArgs),
    /// PIO B-tree cost model: choose the leaf size in segments and the OPQ size.
    PioModel(pio_model::PioModelArgs),
    /// Bulk index cost model (thesis §5.5): choose the range size M, with predicted costs.
    BulkModel(bulk_model::BulkModelArgs),
    /// Every engine's predicted cost per operation for a device profile, entries, a memory
    /// budget and a workload, ranked with the parameters each would use; --verify measures
    /// the top three.
    Advise(advise::AdviseArgs),
    /// Moving objects: the Bx-tree (`bx`) and the mobject front end over other engines.
    MoBench(mo_bench::MoBenchArgs),
    /// Random page writes on a simulated SSD with each FTL: write amplification, erases, copies.
    Sim(sim::SimArgs),
    /// Reproduce a paper's experiments: `flashix repro PAPER --out DIR`, where PAPER is
    /// dipl, bulk, fbx, fdtree, pio or all.
    #[command(subcommand)]
    Repro(crate::repro::Repro),
    /// Render report.html again from a results.json (e.g. one written by an older build);
    /// given a second results.json, add a section comparing the two (`flashix compare`).
    Report(report::ReportArgs),
    /// Two runs' results.json side by side: per cell ops/s, B/A, pages read and written per
    /// operation and the --repeat noise of each; flags the cells that changed beyond the
    /// noise or the threshold.
    Compare(compare::CompareArgs),
    /// Verify an index without changing it: recovery (in memory), the checksum and page id
    /// of every allocated page, the engine's invariants, a full scan. Exit status 0 only
    /// when clean.
    Check(check::CheckArgs),
    /// An index's engine, options, sizes, space use, memory budget and counters (read-only).
    Stats(stats::StatsArgs),
    /// Every entry, ascending, to standard output: `key value` lines, or --binary.
    Dump(dump::DumpArgs),
    /// Standard input (a dump, text or binary) into a NEW index of any engine.
    #[command(after_long_help = load::LOAD_HELP)]
    Load(load::LoadArgs),
}

/// The closing help of `flashix`: the commands that operate an index.
const OPS_HELP: &str = "\
OPERATING AN INDEX (none of check, stats, dump changes anything in DIR; an index that
was not closed cleanly is recovered in memory)
  flashix check DIR            verify; exit 0 only when clean
  flashix stats DIR [--json]   engine, options, entries, pages live/allocated, memory
  flashix dump DIR [--binary] > FILE
  flashix load NEW --engine NAME [--binary] [engine options] < FILE
  flashix dump OLD | flashix load NEW --engine lsm     (migrate between engines)
  flashix compare A/results.json B/results.json [--threshold 10%]";

/// Run the parsed command; `flashix check` decides the exit status itself (0 only when
/// the index is clean), every other command succeeds unless it returns an error.
pub fn run(cli: Cli) -> Result<ExitCode> {
    match cli.cmd {
        Cmd::Check(a) => check::run(&a),
        cmd => run_other(cmd).map(|()| ExitCode::SUCCESS),
    }
}

fn run_other(cmd: Cmd) -> Result<()> {
    match cmd {
        Cmd::Check(_) => Ok(()),
        Cmd::Stats(a) => stats::run(&a),
        Cmd::Dump(a) => dump::run(&a),
        Cmd::Load(a) => load::run(&a),
        Cmd::Compare(a) => compare::run(&a),
        Cmd::Probe(a) => probe::run(&a),
        Cmd::Bench(a) => bench::run(&a),
        Cmd::FdtreeModel(a) => fdtree_model::run(&a),
        Cmd::PioModel(a) => pio_model::run(&a),
        Cmd::BulkModel(a) => bulk_model::run(&a),
        Cmd::Advise(a) => advise::run(&a),
        Cmd::MoBench(a) => mo_bench::run(&a),
        Cmd::Sim(a) => sim::run(&a).map(|_| ()),
        Cmd::Repro(r) => crate::repro::run(&r),
        Cmd::Report(a) => report::run(a),
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// The long help of `flashix SUB [SUB2]`.
    fn help(path: &[&str]) -> String {
        let mut cmd = Cli::command();
        for name in path {
            cmd = cmd.find_subcommand(name).unwrap().clone();
        }
        cmd.render_long_help().to_string()
    }

    #[test]
    fn bench_help_lists_every_engine() {
        let h = help(&["bench"]);
        // The option's own text: from `--engines` to the next option.
        let engines = h.split("--engines").nth(1).unwrap();
        let engines = engines.split("--workload").next().unwrap();
        for kind in flashix::EngineKind::ALL {
            assert!(engines.contains(kind.name()), "{kind}: {engines}");
        }
    }

    #[test]
    fn repro_help_lists_every_paper() {
        let top = help(&[]);
        let h = help(&["repro"]);
        for paper in crate::repro::all::PAPERS {
            assert!(h.contains(&format!("  {paper} ")), "{paper}: {h}");
            assert!(top.contains(paper), "{paper}: {top}");
        }
    }
}
