//! The flash simulator (docs/design.md, Layers): raw NAND flash ([`Nand`]) with the
//! papers' rules and a timing model, the flash translation layers that turn it into a
//! logical block device (`ftl`), and `SimSsd`, an FTL over `Nand` that is an
//! [`crate::io::Device`] so every engine runs on a simulated SSD, and named profiles of
//! the papers' devices (`profiles`: [`SsdProfile`]).
//!
//! The simulated flash keeps its medium in a plain backing [`crate::io::Device`] (a
//! `MemDevice` in tests, a `FileDevice` on the file `nand` of an index directory), so it
//! persists across close/open and the fault injector's crash images apply to it unchanged.

pub mod ftl;
pub mod nand;
pub mod profiles;
pub mod ssd;

pub use ftl::{Ftl, FtlConfig, FtlKind, FtlStats};
pub use nand::{HostTiming, Nand, NandConfig, NandOp, NandStats, PageAddr, NAND_SECTOR};
pub use profiles::{SsdProfile, DEFAULT_NAND_BYTES};
pub use ssd::{SimSsd, SimSsdConfig, SimStats};
