//! What a paper's run shares whatever the paper ([`Frame`]): where its outputs and indexes
//! go, its clock and progress lines ([`Frame::say`]), and the device profile of a lens
//! ([`Frame::profile`]), and the saving of its JSON ([`Frame::save`]).

use super::lens::Lens;
use crate::probe::sim::{run_sim_probe, SimProbeConfig};
use crate::probe::{self, DeviceProfile, ProbeConfig};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A paper's run: its name, OUT, the directory of its indexes, `--quick`, `--seed` and
/// when it started.
pub(crate) struct Frame {
    paper: &'static str,
    /// Width of the elapsed seconds in a progress line.
    width: usize,
    pub out: PathBuf,
    pub data: PathBuf,
    quick: bool,
    seed: u64,
    pub started: Instant,
}

impl Frame {
    /// The run of `paper`: creates OUT and the index directory (`dir`, default
    /// `OUT/repro-PAPER-data`).
    pub fn open(
        paper: &'static str,
        out: &Path,
        dir: Option<&PathBuf>,
        quick: bool,
        seed: u64,
    ) -> Result<Frame> {
        std::fs::create_dir_all(out)?;
        let data = dir
            .cloned()
            .unwrap_or_else(|| out.join(format!("repro-{paper}-data")));
        std::fs::create_dir_all(&data)?;
        Ok(Frame {
            paper,
            width: 6,
            out: out.to_path_buf(),
            data,
            quick,
            seed,
            started: Instant::now(),
        })
    }

    /// The same frame, its progress lines' seconds `width` wide.
    pub fn width(mut self, width: usize) -> Frame {
        self.width = width;
        self
    }

    /// Seconds since the run started.
    pub fn seconds(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// A progress line on stderr: `repro PAPER [seconds]: what`.
    pub fn say(&self, what: String) {
        eprintln!(
            "repro {} [{:>w$.1} s]: {what}",
            self.paper,
            self.seconds(),
            w = self.width
        );
    }

    /// Write `r` as OUT/`repro-PAPER.json`, and say so.
    pub fn save<T: serde::Serialize>(&self, r: &T) -> Result<()> {
        let path = self.out.join(format!("repro-{}.json", self.paper));
        std::fs::write(&path, serde_json::to_string_pretty(r)?)
            .with_context(|| format!("writing {}", path.display()))?;
        self.say(format!("wrote {}", path.display()));
        Ok(())
    }

    /// The device profile of a lens, measured once and kept in OUT: the disk's by the
    /// probe (short with --quick), a simulated SSD's by `probe --sim` on a small device.
    pub fn profile(&self, lens: Lens) -> Result<(PathBuf, DeviceProfile)> {
        let path = match lens {
            Lens::Disk => self.out.join("device-profile.json"),
            Lens::Sim(p) => self.out.join(format!("sim-profile-{}.json", p.name())),
        };
        if path.exists() {
            let p = probe::load_profile(&path)
                .with_context(|| format!("loading {}", path.display()))?;
            return Ok((path, p));
        }
        self.say(format!("{}: measuring the device profile", lens.label()));
        let quick = self.quick;
        let p = match lens {
            Lens::Disk => {
                let pcfg = ProbeConfig {
                    dir: self.data.join("probe"),
                    file_bytes: if quick { 16 << 20 } else { 256 << 20 },
                    seconds_per_test: if quick { 0.05 } else { 0.5 },
                    seed: self.seed,
                };
                let p = probe::run_probe(&pcfg, &mut |_| {})?;
                std::fs::remove_dir_all(&pcfg.dir).ok();
                p
            }
            Lens::Sim(profile) => {
                let cfg = SimProbeConfig {
                    nand_bytes: if quick { 64 << 20 } else { 128 << 20 },
                    max_ops: if quick { 500 } else { 5_000 },
                    warmup_factor: if quick { 0.1 } else { 1.0 },
                    seed: self.seed,
                    ..SimProbeConfig::new(profile)
                };
                run_sim_probe(&cfg, &mut |_| {})?
            }
        };
        probe::save_profile(&p, &path)?;
        Ok((path, p))
    }
}
