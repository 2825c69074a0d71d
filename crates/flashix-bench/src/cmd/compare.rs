//! `flashix compare`: two runs' `results.json` side by side ([`crate::output::compare`]),
//! as a table or as JSON.

use crate::output::compare;
use crate::output::report::Results;
use anyhow::{Context, Result};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct CompareArgs {
    /// The baseline run's results.json.
    a: PathBuf,
    /// The run compared with it.
    b: PathBuf,
    /// Least change in ops/s (and in pages read, or written, per operation) that is flagged,
    /// as a percentage (10%) or a fraction (0.1); a noisier cell needs more.
    #[arg(long, default_value = "10%")]
    threshold: String,
    /// Print JSON instead of the table.
    #[arg(long)]
    json: bool,
}

/// A percentage (`10%`) or a fraction (`0.1`).
pub fn parse_fraction(s: &str) -> Result<f64> {
    let t = s.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|x| x / 100.0),
        None => t.parse::<f64>(),
    }
    .with_context(|| format!("{s:?} is not a percentage or a fraction"))?;
    if !(v.is_finite() && v >= 0.0) {
        anyhow::bail!("{s:?} must be a non-negative percentage");
    }
    Ok(v)
}

/// `flashix compare A B`: load both runs, compare them, print the table (or JSON).
pub fn run(a: &CompareArgs) -> Result<()> {
    let threshold = parse_fraction(&a.threshold).context("--threshold")?;
    let ra = Results::load(&a.a)?;
    let rb = Results::load(&a.b)?;
    let c = compare::compare(&ra, &rb, threshold);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&c)?);
    } else {
        print!(
            "{}",
            compare::format(&c, &a.a.display().to_string(), &a.b.display().to_string())
        );
    }
    Ok(())
}
