//! The engines behind [`crate::Db`]. One folder each, owning its options, format and
//! algorithms; every one implements [`Engine`]. No engine imports another: what two share
//! is a kit beside them. This module dispatches validation, creation and opening by
//! [`EngineKind`].

pub mod bftl;
pub mod btree;
pub mod dipl;
pub mod fdtree;
pub mod ipl;
pub mod lsm;
pub mod pio;

use crate::durable::Manifest;
use crate::error::{Error, Result};
use crate::io::Storage;
use crate::kind::EngineKind;
pub(crate) use crate::kit::api::Engine;
use crate::options::Options;

/// True when this build has an implementation of `kind` ([`create`] and [`open`] serve
/// it); the others fail with [`Error::Unsupported`].
pub fn is_built(kind: EngineKind) -> bool {
    !matches!(kind, EngineKind::BulkIndex | EngineKind::LaTree)
}

impl EngineKind {
    /// True when this build implements the engine: `Db::create` and `Db::open` serve it;
    /// the others fail with [`Error::Unsupported`].
    pub fn is_built(self) -> bool {
        is_built(self)
    }
}

/// Check `opts`: the settings every engine shares, then the chosen engine's own.
pub fn validate(opts: &Options) -> Result<()> {
    opts.validate_common()?;
    match opts.engine() {
        EngineKind::BTree => btree::validate(opts),
        EngineKind::FdTree => fdtree::validate(opts),
        EngineKind::Lsm => lsm::validate(opts),
        EngineKind::PioBTree => pio::validate(opts),
        EngineKind::Bftl => bftl::validate(opts),
        EngineKind::IplBTree => ipl::validate(opts),
        EngineKind::DiplBTree => dipl::validate(opts),
        EngineKind::BulkIndex | EngineKind::LaTree => Ok(()),
    }
}

/// A new engine of `opts.engine()` on `storage`.
pub fn create(storage: Storage, opts: Options) -> Result<Box<dyn Engine>> {
    match opts.engine() {
        EngineKind::BTree => Ok(Box::new(btree::BTree::create(storage, opts)?)),
        EngineKind::FdTree => Ok(Box::new(fdtree::FdTree::create(storage, opts)?)),
        EngineKind::Lsm => Ok(Box::new(lsm::Lsm::create(storage, opts)?)),
        EngineKind::PioBTree => Ok(Box::new(pio::PioBTree::create(storage, opts)?)),
        EngineKind::Bftl => Ok(Box::new(bftl::Bftl::create(storage, opts)?)),
        EngineKind::IplBTree => Ok(Box::new(ipl::IplBTree::create(storage, opts)?)),
        EngineKind::DiplBTree => Ok(Box::new(dipl::DiplBTree::create(storage, opts)?)),
        other => Err(not_built(other)),
    }
}

/// Reopen an engine from its manifest with `opts` (its options record decoded, possibly
/// with a new buffer pool size), recovering from the WAL. The manifest's record is
/// replaced by `opts`' (current format), which the next checkpoint writes.
pub fn open(storage: Storage, mut manifest: Manifest, opts: Options) -> Result<Box<dyn Engine>> {
    validate(&opts)?;
    manifest.options = crate::options::record::encode(&opts)?;
    let m = manifest;
    match opts.engine() {
        EngineKind::BTree => Ok(Box::new(btree::BTree::open(storage, m, opts)?)),
        EngineKind::FdTree => Ok(Box::new(fdtree::FdTree::open(storage, m, opts)?)),
        EngineKind::Lsm => Ok(Box::new(lsm::Lsm::open(storage, m, opts)?)),
        EngineKind::PioBTree => Ok(Box::new(pio::PioBTree::open(storage, m, opts)?)),
        EngineKind::Bftl => Ok(Box::new(bftl::Bftl::open(storage, m, opts)?)),
        EngineKind::IplBTree => Ok(Box::new(ipl::IplBTree::open(storage, m, opts)?)),
        EngineKind::DiplBTree => Ok(Box::new(dipl::DiplBTree::open(storage, m, opts)?)),
        other => Err(not_built(other)),
    }
}

fn not_built(kind: EngineKind) -> Error {
    debug_assert!(!is_built(kind));
    Error::Unsupported(format!(
        "engine {} ({kind:?}) is not built yet",
        kind.name()
    ))
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_built_says_which_kinds_create_serves() {
        for kind in EngineKind::ALL {
            let storage = Storage {
                device: Box::new(crate::io::MemDevice::new(4096)),
                vfs: std::sync::Arc::new(crate::io::MemVfs::new()),
            };
            let unsupported = matches!(
                create(storage, Options::new(kind)),
                Err(Error::Unsupported(_))
            );
            assert_eq!(is_built(kind), !unsupported, "{kind:?}");
        }
    }
}
