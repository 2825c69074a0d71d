//! What every `flashix repro` module shares: the record of a paper's claim and the list
//! that collects them, the key mixer, copying an index, and reading counters from `Stats`.

use anyhow::Result;
use flashix::Stats;
use serde::Serialize;
use std::path::Path;

/// One claim of a paper and the run's numbers for it.
#[derive(Debug, Clone, Serialize)]
pub struct ClaimCheck {
    /// The paper's experiment (and the run's cells that measure it).
    pub experiment: String,
    /// The paper's words.
    pub claim: String,
    /// What this run measured for it.
    pub here: String,
    /// `holds`, `holds, stronger here`, `weaker here`, `does not hold`, `differs`,
    /// `extension` (no claim in the paper), `not measured`.
    pub verdict: String,
}

/// The claims of a run, as the checks add them.
pub(crate) struct Checks(pub Vec<ClaimCheck>);

impl Checks {
    pub fn add(&mut self, e: &str, claim: &str, here: String, verdict: &str) {
        self.0.push(ClaimCheck {
            experiment: e.into(),
            claim: claim.into(),
            here,
            verdict: verdict.into(),
        });
    }

    /// A claim the run did not measure, and why.
    pub fn missing(&mut self, e: &str, claim: &str, why: &str) {
        self.add(e, claim, why.into(), "not measured");
    }
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

/// Copy the index directory `from` to `to` (replacing `to`).
pub(crate) fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    if to.exists() {
        std::fs::remove_dir_all(to)?;
    }
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        std::fs::copy(e.path(), to.join(e.file_name()))?;
    }
    Ok(())
}

/// An engine counter, 0 when the engine has none of that name.
pub(crate) fn counter(s: &Stats, name: &str) -> u64 {
    s.engine_counters.get(name).copied().unwrap_or(0)
}

/// A simulated SSD's flash counter, 0 on other devices.
pub(crate) fn flash(s: &Stats, name: &str) -> u64 {
    s.device.flash.get(name).copied().unwrap_or(0)
}
