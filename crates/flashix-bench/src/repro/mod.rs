//! `flashix repro PAPER`: a paper's experiments reproduced on the simulators, printed
//! beside the paper's numbers and saved as JSON. One module per paper, one subcommand
//! ([`Repro`]) each:
//!
//! - [`dipl`]: the d-IPL paper (Na, Lee, Moon, TKDE 2011, §6.2), `flashix repro dipl`.
//! - [`bulk`]: the bulk index thesis (Lehtonen 2014, Chapter 6), `flashix repro bulk`.
//! - [`fbx`]: the FBX-tree paper (Luo, §3.1 and §5), `flashix repro fbx`.
//! - [`fdtree`]: the FD-tree paper (Li et al., VLDB 2010, §5), `flashix repro fdtree`.
//! - [`pio`]: the PIO B-tree paper (Roh et al., VLDB 2011, §4), `flashix repro pio`.
//! - [`all`]: every paper at one scale and one table of their claims, `flashix repro all`.
//!
//! Another paper gets a module beside [`dipl`] (its arguments, its experiments, the
//! paper's claims checked into [`ClaimCheck`] rows and the printing of its tables), a
//! variant of [`Repro`], an arm of [`run`] and a line of [`all::PAPERS`]. Every paper's
//! arguments take `--out`, `--quick`, `--paper` and `--seed`.

pub mod all;
pub mod bulk;
mod common;
pub mod dipl;
pub mod fbx;
pub mod fdtree;
pub mod pio;

pub use common::{ClaimCheck, LensFigure, NOT_JUDGED};

use anyhow::Result;

/// The papers of `flashix repro`, one subcommand each.
#[derive(clap::Subcommand)]
pub enum Repro {
    /// The d-IPL paper (Na, Lee, Moon, TKDE 2011), §6.2: IPL vs d-IPL on raw NAND.
    Dipl(dipl::DiplReproArgs),
    /// The bulk index thesis (Lehtonen 2014), Chapter 6: bulk index vs LA-tree on this
    /// machine's disk.
    Bulk(bulk::BulkReproArgs),
    /// The FBX-tree paper (Luo), §3.1 and §5: FBX-tree vs B+-tree on this machine's disk and
    /// the simulated SSD, and Bx-tree vs FBX-tree on moving objects.
    Fbx(fbx::FbxReproArgs),
    /// The FD-tree paper (Li et al., VLDB 2010), §5: FD-tree vs B+-tree, LSM-tree and BFTL
    /// on this machine's disk and on simulated Mtron and Intel X25-M SSDs.
    Fdtree(fdtree::FdtreeReproArgs),
    /// The PIO B-tree paper (Roh et al., VLDB 2011), §4 (Figs. 9-13, Fig. 13(b) by
    /// threads): PIO B-tree vs B+-tree (the B-link tree with threads), FD-tree and BFTL on
    /// this machine's disk and on simulated ioDrive and P300 SSDs.
    Pio(pio::PioReproArgs),
    /// Every paper's reproduction at one scale (`--scale quick|default|paper`), and one
    /// table of every claim: `repro.json` and `repro.html`.
    All(all::AllReproArgs),
}

/// Run a `flashix repro` subcommand: the paper's experiments, then its tables.
pub fn run(cmd: &Repro) -> Result<()> {
    match cmd {
        Repro::Dipl(a) => dipl::run(a).map(|r| dipl::print(&r)),
        Repro::Bulk(a) => bulk::run(a).map(|r| bulk::print(&r)),
        Repro::Fbx(a) => fbx::run(a).map(|r| fbx::print(&r)),
        Repro::Fdtree(a) => fdtree::run(a).map(|r| fdtree::print(&r)),
        Repro::Pio(a) => pio::run(a).map(|r| pio::print(&r)),
        Repro::All(a) => all::run(a).map(|r| all::print(&r)),
    }
}
