//! The engines behind [`crate::Db`]. One folder each, owning its options, format and
//! algorithms; every one implements [`Engine`]. No engine imports another: what two share
//! is a kit beside them. This module dispatches validation, creation and opening by
//! [`crate::EngineKind`].

pub mod bftl;
pub mod btree;
pub mod bulk;
pub mod dipl;
pub mod fbx;
pub mod fdtree;
pub mod ipl;
pub mod latree;
pub mod lsm;
pub mod pio;

use crate::durable::Manifest;
use crate::error::Result;
use crate::io::Storage;
pub(crate) use crate::kit::api::Engine;
use crate::kit::parallel::Parallel;
use crate::options::{EngineOptions, Options};

/// Check `opts`: the settings every engine shares, then the chosen engine's own.
pub fn validate(opts: &Options) -> Result<()> {
    opts.validate_common()?;
    let s = opts.settings()?;
    match &opts.sub_options {
        EngineOptions::BTree(o) => btree::validate(&s, o),
        EngineOptions::FdTree(o) => fdtree::validate(&s, o),
        EngineOptions::Lsm(o) => lsm::validate(&s, o),
        EngineOptions::PioBTree(o) => pio::validate(&s, o),
        EngineOptions::Bftl(o) => bftl::validate(&s, o),
        EngineOptions::IplBTree(o) => ipl::validate(&s, o),
        EngineOptions::DiplBTree(o) => dipl::validate(&s, o),
        EngineOptions::BulkIndex(o) => bulk::validate(&s, o),
        EngineOptions::LaTree(o) => latree::validate(&s, o),
        EngineOptions::Fbx(o) => fbx::validate(&s, o),
    }
}

/// A new engine of `opts.engine()` on `storage`, with every parameter left to a cost model
/// decided first ([`Options::resolved`]), so that the manifest saves the choice.
pub fn create(storage: Storage, opts: Options) -> Result<Box<dyn Engine>> {
    // A `k` left to the cost model is re-chosen as the tree grows (`kit::sorted::tune`).
    let model_k = match &opts.sub_options {
        EngineOptions::FdTree(o) => o.k.is_none(),
        EngineOptions::Lsm(o) => o.k.is_none(),
        _ => false,
    };
    let opts = opts.resolved()?;
    let s = opts.settings()?;
    match opts.sub_options {
        EngineOptions::BTree(o) => Ok(Box::new(Parallel::new(btree::BTree::create(
            storage, s, o,
        )?))),
        EngineOptions::FdTree(o) => Ok(Box::new(Parallel::new(fdtree::FdTree::create(
            storage, s, o, model_k,
        )?))),
        EngineOptions::Lsm(o) => Ok(Box::new(Parallel::new(lsm::Lsm::create(
            storage, s, o, model_k,
        )?))),
        EngineOptions::PioBTree(o) => Ok(Box::new(Parallel::new(pio::PioBTree::create(
            storage, s, o,
        )?))),
        EngineOptions::Bftl(o) => Ok(Box::new(Parallel::new(bftl::Bftl::create(storage, s, o)?))),
        EngineOptions::BulkIndex(o) => Ok(Box::new(Parallel::new(bulk::BulkIndex::create(
            storage, s, o,
        )?))),
        EngineOptions::IplBTree(o) => Ok(Box::new(Parallel::new(ipl::IplBTree::create(
            storage, s, o,
        )?))),
        EngineOptions::DiplBTree(o) => Ok(Box::new(Parallel::new(dipl::DiplBTree::create(
            storage, s, o,
        )?))),
        EngineOptions::LaTree(o) => Ok(Box::new(Parallel::new(latree::LaTree::create(
            storage, s, o,
        )?))),
        EngineOptions::Fbx(o) => Ok(Box::new(Parallel::new(fbx::Fbx::create(storage, s, o)?))),
    }
}

/// Reopen an engine from its manifest with `opts` (its options record decoded, possibly
/// with a new buffer pool size), recovering from the WAL. The manifest's record is
/// replaced by `opts`' (current format), which the next checkpoint writes.
pub fn open(storage: Storage, mut manifest: Manifest, opts: Options) -> Result<Box<dyn Engine>> {
    validate(&opts)?;
    let s = opts.settings()?;
    manifest.options = s.record.clone();
    let m = manifest;
    match opts.sub_options {
        EngineOptions::BTree(o) => Ok(Box::new(Parallel::new(btree::BTree::open(
            storage, m, s, o,
        )?))),
        EngineOptions::FdTree(o) => Ok(Box::new(Parallel::new(fdtree::FdTree::open(
            storage, m, s, o,
        )?))),
        EngineOptions::Lsm(o) => Ok(Box::new(Parallel::new(lsm::Lsm::open(storage, m, s, o)?))),
        EngineOptions::PioBTree(o) => Ok(Box::new(Parallel::new(pio::PioBTree::open(
            storage, m, s, o,
        )?))),
        EngineOptions::Bftl(o) => Ok(Box::new(Parallel::new(bftl::Bftl::open(storage, m, s, o)?))),
        EngineOptions::BulkIndex(o) => Ok(Box::new(Parallel::new(bulk::BulkIndex::open(
            storage, m, s, o,
        )?))),
        EngineOptions::IplBTree(o) => Ok(Box::new(Parallel::new(ipl::IplBTree::open(
            storage, m, s, o,
        )?))),
        EngineOptions::DiplBTree(o) => Ok(Box::new(Parallel::new(dipl::DiplBTree::open(
            storage, m, s, o,
        )?))),
        EngineOptions::LaTree(o) => Ok(Box::new(Parallel::new(latree::LaTree::open(
            storage, m, s, o,
        )?))),
        EngineOptions::Fbx(o) => Ok(Box::new(Parallel::new(fbx::Fbx::open(storage, m, s, o)?))),
    }
}

/// An IPL B+-tree engine itself, not boxed (the d-IPL reproduction drives it below `Db`).
pub fn create_ipl(storage: Storage, opts: Options) -> Result<ipl::IplBTree> {
    validate(&opts)?;
    let s = opts.settings()?;
    ipl::IplBTree::create(storage, s, opts.ipl_options())
}

/// A bulk index engine itself, not boxed (the bulk index reproduction rewinds it to a
/// snapshot between range deletes, below `Db`).
pub fn create_bulk(storage: Storage, opts: Options) -> Result<bulk::BulkIndex> {
    let opts = opts.resolved()?;
    validate(&opts)?;
    let s = opts.settings()?;
    bulk::BulkIndex::create(storage, s, opts.bulk_options())
}

/// A d-IPL B+-tree engine itself, not boxed (the d-IPL reproduction drives it below `Db`).
pub fn create_dipl(storage: Storage, opts: Options) -> Result<dipl::DiplBTree> {
    validate(&opts)?;
    let s = opts.settings()?;
    dipl::DiplBTree::create(storage, s, opts.dipl_options())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::EngineKind;

    #[test]
    fn every_kind_is_served() {
        for kind in EngineKind::ALL {
            let storage = Storage {
                device: Box::new(crate::io::MemDevice::new(4096)),
                vfs: std::sync::Arc::new(crate::io::MemVfs::new()),
            };
            // (It may refuse the storage, as IPL refuses a device that is not its NAND's.)
            let r = create(storage, Options::new(kind));
            assert!(
                !matches!(r, Err(crate::Error::Unsupported(_))),
                "{kind:?}: {:?}",
                r.err()
            );
        }
    }
}
