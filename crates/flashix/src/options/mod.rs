//! [`Options`]: the builder every index is created with: the settings every engine shares
//! (page size, memory budget, device, checkpoint size, tuning) and one typed sub-options
//! value owned by the chosen engine's module ([`EngineOptions`]). The options are saved in
//! the manifest as an explicit, versioned record ([`record`]), so [`crate::Db::open`]
//! needs only the directory.
//!
//! [`EngineOptions`], the validation and resolution of an engine's own options and the
//! builder's per-engine methods come from the engine registry (`crate::engine`, and
//! `crate::kind::engines!`, the one list of the engines). Engines never see this aggregate:
//! they get their own options and a [`Settings`] (`crate::settings`).

pub(crate) mod record;

pub use crate::cost::Tuning;
use crate::engine;
pub use crate::engine::bftl::BftlOptions;
pub use crate::engine::btree::BTreeOptions;
pub use crate::engine::bulk::BulkOptions;
pub use crate::engine::dipl::DiplOptions;
pub use crate::engine::fbx::{CleanPolicy, FbxOptions};
pub use crate::engine::fdtree::FdTreeOptions;
pub use crate::engine::ipl::IplOptions;
pub use crate::engine::latree::LaTreeOptions;
pub use crate::engine::lsm::LsmOptions;
pub use crate::engine::pio::{PioOptions, PIO_OPQ_ENTRY_BYTES};
pub use crate::engine::EngineOptions;
use crate::kind::EngineKind;
pub use crate::settings::DeviceSpec;
use crate::settings::Settings;

/// Options of an index: a builder, e.g.
/// `Options::new(EngineKind::BTree).page_size(4096).buffer_pool_bytes(16 << 20)`.
/// The fields are public to read (`opts.page_size`); the builder methods of the same names
/// set them.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Options {
    /// Page (node) size in bytes: a power of two, at least 512.
    pub page_size: usize,
    /// The memory budget in bytes: the buffer pool, and the engine structures that take
    /// their memory from it (see each engine's options).
    pub buffer_pool_bytes: u64,
    /// Where the pages live.
    pub device: DeviceSpec,
    /// WAL size (bytes) after which the index takes a checkpoint.
    pub checkpoint_wal_bytes: u64,
    /// What the cost models tune unset parameters for; `None`: [`Tuning::reference`].
    pub tuning: Option<Tuning>,
    /// The engine's own options; its variant is the engine.
    pub sub_options: EngineOptions,
}

/// Default page size: the SSD's 4 KiB page.
pub const DEFAULT_PAGE_SIZE: usize = 4096;

impl Options {
    /// Defaults for `engine`: 4 KiB pages, 16 MiB buffer pool, a file with `O_DIRECT`;
    /// for `IplBTree` and `DiplBTree`, raw NAND ([`DeviceSpec::RawNand`]) of the default
    /// geometry with the sub-options' 1024 blocks of 64 pages, and 2 KiB pages (the NAND
    /// page; the d-IPL paper's §6.1).
    pub fn new(engine: EngineKind) -> Self {
        let sub_options = EngineOptions::defaults(engine);
        let (page_size, device) = match engine::raw_nand(&sub_options) {
            Some(cfg) => (cfg.page_bytes, DeviceSpec::RawNand(cfg)),
            None => (DEFAULT_PAGE_SIZE, DeviceSpec::File { direct_io: true }),
        };
        Options {
            page_size,
            buffer_pool_bytes: 16 << 20,
            device,
            checkpoint_wal_bytes: 128 << 20,
            tuning: None,
            sub_options,
        }
    }

    /// The engine kind.
    pub fn engine(&self) -> EngineKind {
        self.sub_options.kind()
    }

    /// Page (node) size in bytes: a power of two, at least 512.
    pub fn page_size(mut self, bytes: usize) -> Self {
        self.page_size = bytes;
        self
    }

    /// Memory budget in bytes.
    pub fn buffer_pool_bytes(mut self, bytes: u64) -> Self {
        self.buffer_pool_bytes = bytes;
        self
    }

    /// Where the pages live.
    pub fn device(mut self, device: DeviceSpec) -> Self {
        self.device = device;
        self
    }

    /// WAL size (bytes) after which the index takes a checkpoint, bounding recovery time.
    pub fn checkpoint_wal_bytes(mut self, bytes: u64) -> Self {
        self.checkpoint_wal_bytes = bytes;
        self
    }

    /// What the cost models tune parameters left unset for (FD-tree and LSM `k`, PIO
    /// B-tree leaf and OPQ size).
    pub fn tuning(mut self, tuning: Tuning) -> Self {
        self.tuning = Some(tuning);
        self
    }

    /// The tuning in effect: the one given, else [`Tuning::reference`].
    pub fn effective_tuning(&self) -> Tuning {
        self.tuning
            .clone()
            .unwrap_or_else(|| Tuning::reference(self.page_size))
    }

    /// The FD-tree cost model's workload ([`crate::cost::fdtree::FdTreeWorkload`]) for an
    /// FD-tree or LSM-tree created with these options whose head tree (or LSM C0) has
    /// `head_tree_bytes` and whose pages hold `entries_per_page` entries (`f`: the engine's
    /// page format, [`FdTreeOptions::entries_per_page`]): [`Options::effective_tuning`]'s
    /// expected entries (at least 1) and search share, the page size and the buffer pool.
    /// The engines give their head tree a capacity of half its pages times f (a tree of
    /// half-full leaves stays within its bytes), so the model is given half the head tree's
    /// bytes: its |L_0| is then the engine's.
    pub fn fdtree_model_workload(
        &self,
        head_tree_bytes: u64,
        entries_per_page: u64,
    ) -> crate::cost::fdtree::FdTreeWorkload {
        self.settings_unrecorded()
            .fdtree_model_workload(head_tree_bytes, entries_per_page)
    }

    /// The `k` an FD-tree or LSM-tree created with these options gets when its `k` is unset:
    /// the cost model's choice (FD-tree paper, App. C.3; [`crate::cost::fdtree::choose`])
    /// for [`Options::fdtree_model_workload`] on the tuning's device. The LSM-tree takes the
    /// FD-tree's rule with its C0 as the head tree (App. D: "the same as the k value in
    /// FD-tree").
    pub fn fdtree_model_k(
        &self,
        head_tree_bytes: u64,
        entries_per_page: u64,
    ) -> crate::error::Result<u32> {
        self.settings_unrecorded()
            .fdtree_model_k(head_tree_bytes, entries_per_page)
    }

    /// These options with every parameter left to a cost model decided, as `Db::create`
    /// decides and saves them: the FD-tree's and LSM-tree's `k`, the PIO B-tree's leaf
    /// and OPQ size.
    pub fn resolved(&self) -> crate::error::Result<Options> {
        let s = self.settings_unrecorded();
        let mut o = self.clone();
        o.sub_options = engine::resolve(&s, &self.sub_options)?;
        Ok(o)
    }

    /// The settings every engine gets, with the manifest's options record of these options.
    pub(crate) fn settings(&self) -> crate::error::Result<Settings> {
        let mut s = self.settings_unrecorded();
        s.record = record::encode(self)?;
        Ok(s)
    }

    /// [`Options::settings`] without the record (validation, cost models).
    fn settings_unrecorded(&self) -> Settings {
        Settings {
            page_size: self.page_size,
            buffer_pool_bytes: self.buffer_pool_bytes,
            device: self.device.clone(),
            checkpoint_wal_bytes: self.checkpoint_wal_bytes,
            tuning: self.effective_tuning(),
            engine: self.engine(),
            record: serde_json::Value::Null,
        }
    }

    /// Replace the engine's own options when they are for this engine; options for another
    /// engine are ignored (so that one builder chain can carry every engine's settings, as
    /// `flashix bench` does).
    fn sub(mut self, sub: EngineOptions) -> Self {
        if sub.kind() == self.engine() {
            self.sub_options = sub;
        }
        self
    }

    /// Check these options: the settings every engine shares, then the chosen engine's own.
    pub(crate) fn validate(&self) -> crate::error::Result<()> {
        self.validate_common()?;
        engine::validate(&self.settings()?, &self.sub_options)
    }

    /// Check what does not depend on the engine: page size, checkpoint size, device.
    pub(crate) fn validate_common(&self) -> crate::error::Result<()> {
        use crate::error::Error;
        crate::io::check_page_size(self.page_size)?;
        if self.checkpoint_wal_bytes < self.page_size as u64 * 4 {
            return Err(Error::InvalidOptions(format!(
                "checkpoint_wal_bytes {} is below four pages",
                self.checkpoint_wal_bytes
            )));
        }
        match &self.device {
            DeviceSpec::SimulatedSsd(cfg) => cfg.validate(self.page_size)?,
            DeviceSpec::RawNand(cfg) => {
                cfg.validate()?;
                if engine::raw_nand(&self.sub_options).is_none() {
                    return Err(Error::InvalidOptions(format!(
                        "device RawNand is for the IPL and d-IPL B+-trees, not {} (use \
                         SimulatedSsd for an FTL over simulated NAND)",
                        self.engine().name()
                    )));
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// The builder's per-engine methods, from [`crate::kind::engines!`]: `Options::NAME(o)`
/// sets the engine's own options, `Options::NAME_options()` reads them.
macro_rules! per_engine {
    ($($(#[$doc:meta])* $kind:ident $name:ident $acc:ident: $em:ident::$e:ident, $om:ident::$o:ident;)*) => {
        impl Options {
            $(
                #[doc = concat!(
                    "Options of [`EngineKind::", stringify!($kind), "`] (ignored for other engines)."
                )]
                pub fn $name(self, o: crate::engine::$om::$o) -> Self {
                    self.sub(EngineOptions::$kind(o))
                }

                #[doc = concat!(
                    "The options of an [`EngineKind::", stringify!($kind), "`] index, else the defaults."
                )]
                pub fn $acc(&self) -> crate::engine::$om::$o {
                    match &self.sub_options {
                        EngineOptions::$kind(o) => o.clone(),
                        _ => Default::default(),
                    }
                }
            )*
        }
    };
}
crate::kind::engines!(per_engine);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lsm_defaults_equal_the_fdtree_defaults() {
        // FD-tree paper, App. D: the LSM-tree's k and smallest component are the FD-tree's.
        let (f, l) = (FdTreeOptions::default(), LsmOptions::default());
        assert_eq!(
            (l.k, l.c0_bytes, l.io_unit_bytes),
            (f.k, f.head_tree_bytes, f.io_unit_bytes)
        );
    }

    #[test]
    fn sub_options_of_another_engine_are_ignored() {
        let o = Options::new(EngineKind::BTree).fdtree(FdTreeOptions {
            k: Some(3),
            ..FdTreeOptions::default()
        });
        assert_eq!(o.sub_options, EngineOptions::BTree(BTreeOptions::default()));
        let o = Options::new(EngineKind::FdTree).fdtree(FdTreeOptions {
            k: Some(3),
            ..FdTreeOptions::default()
        });
        assert_eq!(o.fdtree_options().k, Some(3));
    }
}
