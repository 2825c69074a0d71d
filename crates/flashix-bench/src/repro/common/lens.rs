//! Where a paper's cell runs ([`Lens`]: this machine's disk or a simulated SSD) and the
//! parsing of `--lenses`.

use crate::probe::DeviceProfile;
use anyhow::{Context, Result};
use flashix::sim::{SimSsdConfig, SsdProfile};

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

    /// A simulated SSD as a run's record names it: `name`, then its NAND's size and
    /// geometry, its FTL, over-provisioning and timings.
    pub fn describe_ssd(name: &str, c: &SimSsdConfig) -> String {
        let n = &c.nand;
        format!(
            "{name}: {} MiB of NAND ({} blocks of {} pages of {} B, {} channel(s) x {} way(s)), \
             {} FTL, {:.0}% over-provisioning, read {} us, program {} us, erase {} us, bus {} ns/B",
            (n.blocks as u64 * u64::from(n.pages_per_block) * n.page_bytes as u64) >> 20,
            n.blocks,
            n.pages_per_block,
            n.page_bytes,
            n.channels,
            n.ways,
            c.ftl,
            c.over_provisioning * 100.0,
            n.read_us,
            n.program_us,
            n.erase_us,
            n.bus_ns_per_byte
        )
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
