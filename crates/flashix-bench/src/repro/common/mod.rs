//! What every `flashix repro` module shares, the frame a paper's module fills with its
//! experiments and claims. This file holds the record of a paper's claim and the list that
//! collects them, the verdicts, the claims' and the cells' printers, the key mixer, copying
//! an index, and reading counters from `Stats`; `args.rs` the arguments every paper takes
//! ([`ReproArgs`]); `lens.rs` the lenses ([`Lens`]: this disk or a simulated SSD);
//! `frame.rs` what a run shares ([`Frame`]: OUT, the index directory, progress lines,
//! device profiles, the saved JSON).

mod args;
mod cell;
mod frame;
mod lens;

pub(crate) use args::{PaperHelp, ReproArgs, SizeArgs, SizeHelp};

pub(crate) use cell::View;
pub use cell::{lens_label, CellId, LensInfo, Measured};
pub(crate) use frame::Frame;
pub use lens::Lens;

use flashix::Stats;
use serde::{Deserialize, Serialize};

/// One claim of a paper and the run's numbers for it: a row of a paper's claim table and
/// of `flashix repro all`'s table (paper, figure, the paper's number, ours per lens, the
/// verdict, and for a verdict other than `holds` the measured reason).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ClaimCheck {
    /// The paper (`fdtree`, `pio`, `bulk`, `dipl`, `fbx`).
    pub paper: String,
    /// The paper's experiment (and the run's cells that measure it).
    pub experiment: String,
    /// The paper's words.
    pub claim: String,
    /// The paper's number (`24.2x on the Mtron, 3.3x on the Intel`); empty when the claim
    /// text is all there is.
    pub paper_value: String,
    /// What each lens measured (this disk, a simulated SSD, raw NAND, a cost model); empty
    /// for a claim judged once over the whole run (its figures are in `here`).
    pub lenses: Vec<LensFigure>,
    /// What this run measured for it, every lens and the detail.
    pub here: String,
    /// `holds`, `within 25%`, `holds, stronger here`, `weaker here`, `does not hold`,
    /// `differs`, `extension` (no claim in the paper), `not measured`, [`NOT_JUDGED`]
    /// (a `--quick` run's cells too small to judge it); per lens
    /// (`this disk: holds; simulated mtron: weaker here`) when the lenses disagree.
    pub verdict: String,
    /// Why the run differs from the paper, measured (one line); empty when it holds.
    pub reason: String,
}

/// One lens's figure for a claim.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LensFigure {
    /// `this disk`, `simulated mtron`, `raw NAND`, `OCZ model`, ...
    pub lens: String,
    /// The measured figure (`3.1x`).
    pub value: String,
    pub verdict: String,
}

impl LensFigure {
    pub fn new(lens: impl Into<String>, value: impl Into<String>, verdict: &str) -> LensFigure {
        LensFigure {
            lens: lens.into(),
            value: value.into(),
            verdict: verdict.into(),
        }
    }

    /// Whether the lens is this machine's disk (the table's `this disk` column); every
    /// other lens is simulated or modelled.
    pub fn is_disk(&self) -> bool {
        self.lens == DISK
    }
}

/// The name of this machine's disk as a lens.
pub const DISK: &str = "this disk";

/// The verdict of a claim whose cells a `--quick` run measured at sizes too small to judge
/// it: its figures are printed, its verdict is not given.
pub const NOT_JUDGED: &str = "not judged (quick sizes)";

/// The claims of a run, as the checks add them.
pub(crate) struct Checks {
    paper: &'static str,
    /// The lens of the claims [`Checks::add`] adds from here on, if any.
    lens: Option<String>,
    pub rows: Vec<ClaimCheck>,
}

impl Checks {
    pub fn new(paper: &'static str) -> Checks {
        Checks {
            paper,
            lens: None,
            rows: Vec::new(),
        }
    }

    /// The claims [`Checks::add`] adds from here on are measured on `lens` alone: each gets
    /// that lens's figure (its `here`) and verdict.
    pub fn on_lens(&mut self, lens: &str) {
        self.lens = Some(lens.into());
    }

    /// A claim judged once over the run (on the lens of [`Checks::on_lens`], if set).
    pub fn add(&mut self, e: &str, claim: &str, here: String, verdict: &str) {
        let lenses = match &self.lens {
            Some(l) if verdict != "not measured" => vec![LensFigure::new(l, &here, verdict)],
            _ => Vec::new(),
        };
        self.rows.push(ClaimCheck {
            paper: self.paper.into(),
            experiment: e.into(),
            claim: claim.into(),
            here,
            verdict: verdict.into(),
            lenses,
            ..ClaimCheck::default()
        });
    }

    /// The claim added last, to give it the paper's number or a reason.
    pub fn last(&mut self) -> &mut ClaimCheck {
        self.rows.last_mut().expect("a claim was added")
    }

    /// A claim judged on each lens: the verdict joins the lenses' ([`join_verdicts`]),
    /// `here` lists their figures, then `detail`.
    pub fn lensed(
        &mut self,
        e: &str,
        claim: &str,
        paper_value: &str,
        lenses: Vec<LensFigure>,
        detail: &str,
    ) -> &mut ClaimCheck {
        let vs: Vec<(&str, &str)> = lenses
            .iter()
            .map(|l| (l.lens.as_str(), l.verdict.as_str()))
            .collect();
        let verdict = join_verdicts(&vs);
        let lens = self.lens.take();
        let mut here = lenses
            .iter()
            .map(|l| format!("{}: {}", l.lens, l.value))
            .collect::<Vec<_>>()
            .join("; ");
        if !detail.is_empty() {
            if !here.is_empty() {
                here.push(' ');
            }
            here.push_str(detail);
        }
        self.add(e, claim, here, &verdict);
        self.lens = lens;
        let row = self.last();
        row.paper_value = paper_value.into();
        row.lenses = lenses;
        row
    }

    /// A claim the run did not measure, and why.
    pub fn missing(&mut self, e: &str, claim: &str, why: &str) {
        self.add(e, claim, why.into(), "not measured")
    }
}

impl ClaimCheck {
    /// The paper's number.
    pub fn paper_says(&mut self, v: &str) -> &mut ClaimCheck {
        self.paper_value = v.into();
        self
    }

    /// The measured reason a verdict is not `holds`; kept only when it is not.
    pub fn because(&mut self, why: &str) -> &mut ClaimCheck {
        if !self.holds() {
            self.reason = why.into();
        }
        self
    }

    /// At `--quick` sizes: the claim's verdict and each lens's become [`NOT_JUDGED`], its
    /// figures stay; a claim the run did not measure keeps `not measured`, and an
    /// extension (no claim to judge) stays one. The reason stays only where the figures
    /// differ from the paper's (the verdict was not `holds`), as it explains them.
    pub fn not_judged(&mut self) -> &mut ClaimCheck {
        if !matches!(self.verdict.as_str(), "not measured" | "extension") {
            if self.holds() {
                self.reason.clear();
            }
            self.verdict = NOT_JUDGED.into();
            for l in &mut self.lenses {
                l.verdict = NOT_JUDGED.into();
            }
        }
        self
    }

    /// Whether the claim was left unjudged at `--quick` sizes ([`ClaimCheck::not_judged`]).
    pub fn is_judged(&self) -> bool {
        self.verdict != NOT_JUDGED
    }

    /// Whether every lens holds the claim (`holds`, stronger or an extension).
    pub fn holds(&self) -> bool {
        matches!(
            self.verdict.as_str(),
            "holds" | "holds, stronger here" | "extension"
        )
    }

    /// The figures of this disk (the table's column), or `here` for a claim judged once.
    pub fn on_disk(&self) -> String {
        self.lenses
            .iter()
            .filter(|l| l.is_disk())
            .map(|l| l.value.clone())
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// The figures of every other lens, each named.
    pub fn simulated(&self) -> String {
        self.lenses
            .iter()
            .filter(|l| !l.is_disk())
            .map(|l| format!("{}: {}", l.lens, l.value))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Print a paper's claims: verdict, experiment, the paper's words and number, what the
/// run measured and, where it differs, the measured reason.
pub fn print_claims(claims: &[ClaimCheck]) {
    println!("\nThe paper's claims:");
    for c in claims {
        let paper = if c.paper_value.is_empty() {
            String::new()
        } else {
            format!(" [paper: {}]", c.paper_value)
        };
        println!(
            "  [{}] {} — {}{paper}\n      here: {}",
            c.verdict, c.experiment, c.claim, c.here
        );
        if !c.reason.is_empty() {
            println!("      why: {}", c.reason);
        }
    }
}

/// Print each experiment's cells (`experiment` names a cell's) as a table under the
/// experiment's name and description: `header`, then a `row` a cell; an experiment without
/// cells is left out.
pub(crate) fn print_tables<C>(
    experiments: &[(&str, &str)],
    cells: &[C],
    experiment: impl Fn(&C) -> &str,
    header: impl Fn(),
    row: impl Fn(&C),
) {
    for (e, what) in experiments {
        let mine: Vec<&C> = cells.iter().filter(|c| experiment(c) == *e).collect();
        if mine.is_empty() {
            continue;
        }
        println!("\n{e}: {what}");
        header();
        for c in mine {
            row(c);
        }
    }
}

/// How a measured ratio `x` stands against a claimed range `[lo, hi]` (a ratio where more
/// is better for the paper's subject): `holds` inside it, `within 25%` within 25% of it,
/// else `holds, stronger here`, `weaker here` (still above 1) or `does not hold`.
pub(crate) fn verdict(x: f64, lo: f64, hi: f64) -> &'static str {
    if x >= lo && x <= hi {
        "holds"
    } else if x >= 0.75 * lo && x <= 1.25 * hi {
        "within 25%"
    } else if x > hi {
        "holds, stronger here"
    } else if x > 1.0 {
        "weaker here"
    } else {
        "does not hold"
    }
}

/// How a measured cost ratio `x` stands against a claimed range `[lo, hi]` where less is
/// better for the paper's subject (a slowdown, extra reads): `holds` inside it, `within
/// 25%` within 25% of it, `holds, stronger here` below it, else `weaker here`.
pub(crate) fn verdict_cost(x: f64, lo: f64, hi: f64) -> &'static str {
    if x >= lo && x <= hi {
        "holds"
    } else if x >= 0.75 * lo && x <= 1.25 * hi {
        "within 25%"
    } else if x < lo {
        "holds, stronger here"
    } else {
        "weaker here"
    }
}

/// One verdict per lens (`this disk`, `OCZ model`, `simulated mtron`, ...), never the best
/// of them: the one verdict when every lens agrees, else `lens: verdict; ...`.
pub(crate) fn join_verdicts<S: AsRef<str>>(vs: &[(S, &str)]) -> String {
    let Some(first) = vs.first() else {
        return "not measured".into();
    };
    if vs.iter().all(|v| v.1 == first.1) {
        return first.1.to_string();
    }
    vs.iter()
        .map(|(name, v)| format!("{}: {v}", name.as_ref()))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Whether part `p` of a reproduction runs: `--only` is empty or names it.
pub(crate) fn runs_part(only: &[String], p: &str) -> bool {
    only.is_empty() || only.iter().any(|o| o.eq_ignore_ascii_case(p))
}

/// A bijection of u64 that scatters its input (SplitMix64's finalizer): distinct seeds and
/// counters give distinct, uniform-looking keys.
pub(crate) fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Copy the index directory `from` to `to` (replacing `to`): the bench runner's copy
/// (sparse, synced, so a measured phase does not pay for writing it back).
pub(crate) use crate::runner::copy_dir;

/// An engine counter, 0 when the engine has none of that name.
pub(crate) fn counter(s: &Stats, name: &str) -> u64 {
    s.engine_counters.get(name).copied().unwrap_or(0)
}

/// A simulated SSD's flash counter, 0 on other devices.
pub(crate) fn flash(s: &Stats, name: &str) -> u64 {
    s.device.flash.get(name).copied().unwrap_or(0)
}

/// The claim of `rows` whose text holds `fragment` (the papers' tests).
#[cfg(test)]
pub(crate) fn claim<'a>(rows: &'a [ClaimCheck], fragment: &str) -> &'a ClaimCheck {
    rows.iter()
        .find(|c| c.claim.contains(fragment))
        .unwrap_or_else(|| panic!("no claim {fragment}: {rows:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_grade_a_ratio_and_keep_every_lens() {
        assert_eq!(verdict(2.5, 2.0, 3.0), "holds");
        assert_eq!(verdict(1.6, 2.0, 3.0), "within 25%");
        assert_eq!(verdict(3.7, 2.0, 3.0), "within 25%");
        assert_eq!(verdict(4.0, 2.0, 3.0), "holds, stronger here");
        assert_eq!(verdict(1.2, 2.0, 3.0), "weaker here");
        assert_eq!(verdict(0.5, 2.0, 3.0), "does not hold");
        assert_eq!(verdict_cost(2.2, 2.0, 2.0), "within 25%");
        assert_eq!(verdict_cost(1.0, 2.0, 2.0), "holds, stronger here");
        assert_eq!(verdict_cost(6.5, 2.0, 2.0), "weaker here");
        assert_eq!(join_verdicts::<&str>(&[]), "not measured");
        assert_eq!(join_verdicts(&[("a", "holds"), ("b", "holds")]), "holds");
        assert_eq!(
            join_verdicts(&[("this disk", "does not hold"), ("OCZ model", "holds")]),
            "this disk: does not hold; OCZ model: holds"
        );
        assert!(runs_part(&[], "R1"));
        assert!(runs_part(&["r1".into()], "R1"));
        assert!(!runs_part(&["R2".into()], "R1"));
    }
}
