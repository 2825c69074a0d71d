//! The arguments every paper with parts takes ([`ReproArgs`]: `--out`, `--dir`, `--quick`,
//! `--paper`, `--only`, `--seed`), flattened into its own (`#[command(flatten)]`), with the
//! `--only` logic ([`ReproArgs::runs`]). A paper gives the help texts ([`PaperHelp`]). The
//! papers measured by the bench runner also take its sizes and lenses ([`SizeArgs`]:
//! `--entries`, `--ops`, `--budget`, `--lenses`; help texts from [`SizeHelp`]).

use std::marker::PhantomData;
use std::path::PathBuf;

/// Where `--only` stands in `--help`: after the paper's own arguments (numbered from 0 in
/// their order) and before `--help` (999).
pub(crate) const ONLY_ORDER: usize = 997;
/// Where `--seed` (and a paper's `--lenses`) stand: after `--only`, before `--help`; ties
/// go by name.
pub(crate) const SEED_ORDER: usize = 998;

/// The help texts of a paper's shared arguments (its sizes, its parts, its outputs).
pub trait PaperHelp: Clone + std::fmt::Debug + Send + Sync + 'static {
    /// `--out`: the paper's JSON file (and what else goes there).
    const OUT: &'static str;
    /// `--dir`: where the indexes are built by default.
    const DIR: &'static str;
    /// `--quick`: the test sizes.
    const QUICK: &'static str;
    /// `--paper`: the paper's sizes.
    const PAPER: &'static str;
    /// `--only`: the parts.
    const ONLY: &'static str;
    /// `--seed`: what it seeds.
    const SEED: &'static str;
}

/// The arguments every paper with parts takes; the help texts are `H`'s.
#[derive(clap::Args, Debug, Clone)]
pub struct ReproArgs<H: PaperHelp> {
    #[arg(long, default_value = "./bench-out", help = H::OUT)]
    pub out: PathBuf,
    #[arg(long, help = H::DIR)]
    pub dir: Option<PathBuf>,
    #[arg(long, conflicts_with = "paper", help = H::QUICK)]
    pub quick: bool,
    #[arg(long, help = H::PAPER)]
    pub paper: bool,
    #[arg(long, value_delimiter = ',', display_order = ONLY_ORDER, help = H::ONLY)]
    pub only: Vec<String>,
    #[arg(long, default_value_t = 42, display_order = SEED_ORDER, help = H::SEED)]
    pub seed: u64,
    #[arg(skip)]
    help: PhantomData<H>,
}

impl<H: PaperHelp> ReproArgs<H> {
    /// The paper's [`super::frame::Frame`] over these arguments' OUT, index directory,
    /// scale and seed.
    pub(crate) fn frame(&self, paper: &'static str) -> anyhow::Result<super::frame::Frame> {
        super::frame::Frame::open(paper, &self.out, self.dir.as_ref(), self.quick, self.seed)
    }

    /// Whether part `p` runs: `--only` is empty or names it.
    pub fn runs(&self, p: &str) -> bool {
        super::runs_part(&self.only, p)
    }
}

/// The help texts of a runner-based paper's sizes and lenses.
pub trait SizeHelp: Clone + std::fmt::Debug + Send + Sync + 'static {
    /// `--entries`: which index it sizes.
    const ENTRIES: &'static str;
    /// `--budget`: its defaults.
    const BUDGET: &'static str;
    /// `--lenses`: the lenses and their defaults.
    const LENSES: &'static str;
}

/// The sizes and lenses of a paper measured by the bench runner; the help texts are `H`'s.
#[derive(clap::Args, Debug, Clone)]
pub struct SizeArgs<H: SizeHelp> {
    #[arg(long, help = H::ENTRIES)]
    pub entries: Option<u64>,
    /// Measured operations a workload.
    #[arg(long)]
    pub ops: Option<u64>,
    #[arg(long, help = H::BUDGET)]
    pub budget: Option<String>,
    #[arg(long, value_delimiter = ',', display_order = SEED_ORDER, help = H::LENSES)]
    pub lenses: Vec<String>,
    #[arg(skip)]
    help: PhantomData<H>,
}

impl<H: SizeHelp> SizeArgs<H> {
    /// The run's entries, operations and budget: the scale's defaults where not given, and
    /// at least 4,000 entries, 10 operations and `min_budget` bytes where given.
    pub fn sizes(
        &self,
        entries: u64,
        ops: u64,
        budget: u64,
        min_budget: u64,
    ) -> anyhow::Result<(u64, u64, u64)> {
        let budget = match &self.budget {
            Some(b) => crate::units::parse_size(b)?.max(min_budget),
            None => budget,
        };
        Ok((
            self.entries.map_or(entries, |n| n.max(4000)),
            self.ops.map_or(ops, |n| n.max(10)),
            budget,
        ))
    }
}
