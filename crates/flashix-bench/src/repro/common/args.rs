//! The arguments every paper with parts takes ([`ReproArgs`]: `--out`, `--dir`, `--quick`,
//! `--paper`, `--only`, `--seed`), flattened into its own (`#[command(flatten)]`), with the
//! `--only` logic ([`ReproArgs::runs`]). A paper gives the help texts ([`PaperHelp`]).

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
