//! Where a paper's cell runs ([`Lens`]: this machine's disk or a simulated SSD) and the
//! parsing of `--lenses`.

use crate::probe::DeviceProfile;
use anyhow::{Context, Result};
use flashix::sim::SsdProfile;

/// Where a cell ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lens {
    /// This machine's disk, O_DIRECT, wall time.
    Disk,
    /// A simulated SSD of a profile, the simulator's time.
    Sim(SsdProfile),
}

impl Lens {
    /// Short key of the cells (`disk` or the profile's name: `mtron`, `p300`).
    pub fn key(self) -> &'static str {
        match self {
            Lens::Disk => "disk",
            Lens::Sim(p) => p.name(),
        }
    }

    /// The name a verdict gives (`this disk`, `simulated mtron`).
    pub fn label(self) -> String {
        match self {
            Lens::Disk => super::DISK.into(),
            Lens::Sim(p) => format!("simulated {}", p.name()),
        }
    }

    /// The device of the lens for a run's record: the disk's profile path (O_DIRECT), or
    /// the simulated SSD's profile and its description.
    pub fn device(self, profile: &DeviceProfile) -> String {
        match self {
            Lens::Disk => format!("{} (O_DIRECT)", profile.path),
            Lens::Sim(p) => format!("{} ({})", p.name(), p.description()),
        }
    }

    /// The lenses `--lenses` names (`disk` or a profile's name), or `default` when it
    /// names none.
    pub fn parse_all(given: &[String], default: Vec<Lens>) -> Result<Vec<Lens>> {
        if given.is_empty() {
            return Ok(default);
        }
        given
            .iter()
            .map(|l| {
                if l.eq_ignore_ascii_case("disk") {
                    return Ok(Lens::Disk);
                }
                SsdProfile::ALL
                    .into_iter()
                    .find(|p| p.name().eq_ignore_ascii_case(l))
                    .map(Lens::Sim)
                    .with_context(|| {
                        format!("--lenses: unknown lens {l:?} (disk or a profile name)")
                    })
            })
            .collect()
    }
}
