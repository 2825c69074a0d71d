//! `flashix report`: render `report.html` again from a `results.json` (e.g. one written by
//! an older build), and with a second run, a section comparing the two.

use super::compare::parse_fraction;
use crate::output::report::Results;
use crate::output::{compare, html};
use anyhow::{Context, Result};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct ReportArgs {
    /// The results of a `flashix bench` run; given two (A B), the page shows B with a
    /// section comparing it with A (as `flashix compare A B`).
    #[arg(num_args = 1..=2, required = true, value_name = "RESULTS")]
    results: Vec<PathBuf>,
    /// Where to write the page [default: report.html beside the (last) RESULTS].
    #[arg(long)]
    out: Option<PathBuf>,
    /// With two runs: the threshold of `flashix compare`.
    #[arg(long, default_value = "10%")]
    threshold: String,
}

/// `flashix report RESULTS [RESULTS]`: write the page and say where.
pub fn run(a: ReportArgs) -> Result<()> {
    let (base, run) = match a.results.as_slice() {
        [run] => (None, run),
        [base, run] => (Some(base), run),
        _ => anyhow::bail!("report: give one or two results.json"),
    };
    let res = Results::load(run)?;
    let out = a.out.unwrap_or_else(|| run.with_file_name("report.html"));
    match base {
        Some(base) => {
            let threshold = parse_fraction(&a.threshold).context("--threshold")?;
            let base_res = Results::load(base)?;
            let c = compare::compare(&base_res, &res, threshold);
            let names = (base.display().to_string(), run.display().to_string());
            html::save_compared(&res, &c, &names, &out)?;
        }
        None => html::save(&res, &out)?,
    }
    println!("report: {}", out.display());
    Ok(())
}
