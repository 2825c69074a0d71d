//! The terminal: the suite's progress bars ([`Ui`]) and its messages.

use super::config::BenchConfig;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

pub(super) fn say(cfg: &BenchConfig, ui: &Ui, msg: &str) {
    if cfg.verbose {
        ui.println(msg);
    }
}

/// The terminal's progress bars: one for the whole suite (cells done, ETA) and one per
/// phase below it.
pub struct Ui {
    mp: MultiProgress,
    pub(super) suite: ProgressBar,
    verbose: bool,
}

impl Ui {
    pub(super) fn new(cfg: &BenchConfig, cells: u64) -> Ui {
        let mp = MultiProgress::with_draw_target(if cfg.verbose {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        });
        let suite = mp.add(ProgressBar::new(cells));
        if let Ok(style) = ProgressStyle::with_template(
            "{msg:<28} [{bar:30}] {pos}/{len} cells, {elapsed} elapsed, eta {eta}",
        ) {
            suite.set_style(style.progress_chars("=> "));
        }
        suite.set_message("suite");
        Ui {
            mp,
            suite,
            verbose: cfg.verbose,
        }
    }

    /// A message above the bars (on stderr without them, e.g. when it is not a terminal).
    fn println(&self, msg: &str) {
        if !self.verbose {
            return;
        }
        if self.mp.is_hidden() {
            eprintln!("{msg}");
        } else {
            let _ = self.mp.println(msg);
        }
    }

    pub(super) fn bar(&self, len: u64, msg: String) -> ProgressBar {
        self.styled_bar(
            len,
            msg,
            "{msg:<28} [{bar:30}] {pos}/{len} {per_sec} eta {eta}",
        )
    }

    pub(super) fn styled_bar(&self, len: u64, msg: String, template: &str) -> ProgressBar {
        let pb = self.mp.add(ProgressBar::new(len));
        if let Ok(style) = ProgressStyle::with_template(template) {
            pb.set_style(style.progress_chars("=> "));
        }
        pb.set_message(msg);
        pb
    }

    /// A spinner for a step of unknown length (one bulk_insert call, copying an image).
    pub(super) fn spinner(&self, msg: String) -> ProgressBar {
        let pb = self.mp.add(ProgressBar::new_spinner());
        if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} {elapsed}") {
            pb.set_style(style);
        }
        pb.set_message(msg);
        pb.enable_steady_tick(std::time::Duration::from_millis(200));
        pb
    }
}

pub(super) fn say_plain(cfg: &BenchConfig, msg: &str) {
    if cfg.verbose {
        eprintln!("{msg}");
    }
}
