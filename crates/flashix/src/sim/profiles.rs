//! Named simulated-SSD profiles ([`SsdProfile`]): [`SimSsdConfig`]s whose simulated devices
//! behave like the devices the papers measured, for `flashix probe --sim PROFILE` and for
//! running the indexes on a simulated device of the papers' era.
//!
//! TARGETS-AND-PARAMETERS

use super::ftl::FtlKind;
use super::nand::NandConfig;
use super::ssd::SimSsdConfig;
use crate::error::{Error, Result};
use std::fmt;
use std::str::FromStr;

/// NAND bytes of a profile's default configuration ([`SsdProfile::config`]): 1 GiB, kept in
/// memory or a backing file by the simulator (the real devices held 64-80 GB).
pub const DEFAULT_NAND_BYTES: u64 = 1 << 30;

/// A named simulated-SSD profile. See the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SsdProfile {
    /// Mtron MSD-SATA3035 64 GB (FD-tree paper): SLC, block-level mapping (BAST).
    Mtron,
    /// Intel X25-M 80 GB (FD-tree paper): MLC, page-level mapping.
    IntelX25m,
    /// Fusion-io ioDrive (PIO B-tree paper): PCIe, SLC, many channels x ways, page mapping.
    Iodrive,
    /// Micron RealSSD P300 (PIO B-tree paper): SATA 6 Gb/s, SLC, 8 channels, page mapping.
    P300,
    /// OCZ 64 GB MLC SSD (FBX-tree paper, Table 1): page mapping, write-back buffer.
    Ocz,
}

impl SsdProfile {
    /// Every profile.
    pub const ALL: [SsdProfile; 5] = [
        SsdProfile::Mtron,
        SsdProfile::IntelX25m,
        SsdProfile::Iodrive,
        SsdProfile::P300,
        SsdProfile::Ocz,
    ];

    /// Short name (command line, reports).
    pub fn name(self) -> &'static str {
        match self {
            SsdProfile::Mtron => "mtron",
            SsdProfile::IntelX25m => "intel-x25m",
            SsdProfile::Iodrive => "iodrive",
            SsdProfile::P300 => "p300",
            SsdProfile::Ocz => "ocz",
        }
    }

    /// The device the profile models, and the paper that measured it.
    pub fn description(self) -> &'static str {
        match self {
            SsdProfile::Mtron => {
                "Mtron MSD-SATA3035 64 GB, SLC, block-level mapping (FD-tree paper)"
            }
            SsdProfile::IntelX25m => "Intel X25-M 80 GB, MLC, page-level mapping (FD-tree paper)",
            SsdProfile::Iodrive => {
                "Fusion-io ioDrive, PCIe, SLC, page-level mapping (PIO B-tree paper)"
            }
            SsdProfile::P300 => {
                "Micron RealSSD P300, SATA, SLC, page-level mapping (PIO B-tree paper)"
            }
            SsdProfile::Ocz => "OCZ 64 GB, MLC (FBX-tree paper, Table 1)",
        }
    }

    /// The profile with [`DEFAULT_NAND_BYTES`] of NAND.
    pub fn config(self) -> SimSsdConfig {
        self.config_sized(DEFAULT_NAND_BYTES)
    }

    /// The profile with about `nand_bytes` of NAND: the whole erase blocks that fit,
    /// rounded down to a multiple of the chips (channels x ways), and at least 64 blocks
    /// per chip (so the spare blocks of the over-provisioning exist). Everything but the
    /// block count is the profile's.
    pub fn config_sized(self, nand_bytes: u64) -> SimSsdConfig {
        let mut cfg = self.base();
        let chips = cfg.nand.channels as u64 * cfg.nand.ways as u64;
        let blocks = nand_bytes / cfg.nand.block_bytes() as u64 / chips * chips;
        cfg.nand.blocks = blocks.clamp(64 * chips, 1 << 24) as u32;
        cfg
    }

    /// The profile's parameters (module doc, Profiles), block count left to `config_sized`.
    fn base(self) -> SimSsdConfig {
        match self {
            SsdProfile::Mtron => SimSsdConfig {
                nand: NandConfig {
                    page_bytes: 2048,
                    pages_per_block: 64,
                    channels: 4,
                    ways: 2,
                    read_us: 25.0,
                    program_us: 200.0,
                    erase_us: 1500.0,
                    bus_ns_per_byte: 25.0,
                    ..NandConfig::default()
                },
                ftl: FtlKind::Bast,
                over_provisioning: 0.07,
                log_blocks: 32,
                sync_per_op: false,
                command_us: 100.0,
                write_back: false,
            },
            SsdProfile::IntelX25m => SimSsdConfig {
                nand: NandConfig {
                    page_bytes: 4096,
                    pages_per_block: 128,
                    channels: 10,
                    ways: 2,
                    read_us: 50.0,
                    program_us: 900.0,
                    erase_us: 2000.0,
                    bus_ns_per_byte: 25.0,
                    ..NandConfig::default()
                },
                ftl: FtlKind::Page,
                over_provisioning: 0.07,
                log_blocks: 0,
                sync_per_op: false,
                command_us: 50.0,
                write_back: true,
            },
            SsdProfile::Iodrive => SimSsdConfig {
                nand: NandConfig {
                    page_bytes: 4096,
                    pages_per_block: 64,
                    channels: 12,
                    ways: 4,
                    read_us: 25.0,
                    program_us: 250.0,
                    erase_us: 1500.0,
                    bus_ns_per_byte: 10.0,
                    ..NandConfig::default()
                },
                ftl: FtlKind::Page,
                over_provisioning: 0.2,
                log_blocks: 0,
                sync_per_op: false,
                command_us: 5.0,
                write_back: true,
            },
            SsdProfile::P300 => SimSsdConfig {
                nand: NandConfig {
                    page_bytes: 4096,
                    pages_per_block: 64,
                    channels: 8,
                    ways: 4,
                    read_us: 25.0,
                    program_us: 250.0,
                    erase_us: 2000.0,
                    bus_ns_per_byte: 6.0,
                    ..NandConfig::default()
                },
                ftl: FtlKind::Page,
                over_provisioning: 0.28,
                log_blocks: 0,
                sync_per_op: false,
                command_us: 5.0,
                write_back: true,
            },
            SsdProfile::Ocz => SimSsdConfig {
                nand: NandConfig {
                    page_bytes: 4096,
                    pages_per_block: 128,
                    channels: 4,
                    ways: 2,
                    read_us: 25.0,
                    program_us: 600.0,
                    erase_us: 2000.0,
                    bus_ns_per_byte: 25.0,
                    ..NandConfig::default()
                },
                ftl: FtlKind::Page,
                over_provisioning: 0.07,
                log_blocks: 0,
                sync_per_op: false,
                command_us: 20.0,
                write_back: true,
            },
        }
    }
}

impl fmt::Display for SsdProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SsdProfile {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        SsdProfile::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                let names: Vec<&str> = SsdProfile::ALL.iter().map(|p| p.name()).collect();
                Error::InvalidArgument(format!(
                    "unknown simulated SSD profile {s:?}; expected one of {}",
                    names.join(", ")
                ))
            })
    }
}
