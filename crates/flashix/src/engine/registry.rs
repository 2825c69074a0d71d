//! [`Registered`]: what an engine type gives the registry (`crate::kind::engines!`, expanded
//! in `engine`): its own options type, how they are checked and resolved, and how the
//! engine is created and reopened. Each engine's registration follows; the IPL and d-IPL
//! B+-trees are one, of the in-page logging kit's engine over any log policy.

use super::{bftl, btree, bulk, fbx, fdtree, latree, lsm, pio};
use crate::durable::Manifest;
use crate::error::Result;
use crate::io::Storage;
use crate::kit::api::Shareable;
use crate::kit::inpage::{self, InPageBTree, LogPolicy};
use crate::settings::Settings;
use crate::sim::NandConfig;

/// An engine the registry serves: `Db` creates and opens it through these functions and
/// serves it to many threads (`kit::parallel::Parallel`).
pub trait Registered: Shareable + Sized + 'static {
    /// The engine's own options (its `EngineOptions` variant), owned by its folder.
    type Options: Clone;

    /// Check the engine's own options against the settings every engine shares.
    fn validate(s: &Settings, o: &Self::Options) -> Result<()>;

    /// `o` with every parameter left to a cost model decided, as the manifest saves it.
    /// By default nothing is left to one.
    fn resolve(s: &Settings, o: Self::Options) -> Result<Self::Options> {
        let _ = s;
        Ok(o)
    }

    /// A new engine on `storage`: `o` resolved ([`Registered::resolve`]) and `s.record`
    /// holding it; `given`, the options before they were resolved (what the caller left
    /// to a cost model).
    fn create(
        storage: Storage,
        s: Settings,
        o: Self::Options,
        given: &Self::Options,
    ) -> Result<Self>;

    /// Reopen the engine from its manifest and recover from its WAL.
    fn open(storage: Storage, manifest: Manifest, s: Settings, o: Self::Options) -> Result<Self>;

    /// The raw NAND (`DeviceSpec::RawNand`) the engine runs on by default, for an engine
    /// that programs and erases NAND blocks itself. `None` (the default): the engine runs
    /// on a page device, and refuses raw NAND.
    fn raw_nand(o: &Self::Options) -> Option<NandConfig> {
        let _ = o;
        None
    }
}

/// The registration of an engine whose folder gives `validate`, `create` and `open` with
/// the usual signatures (`create` taking the resolved options alone), and where it has
/// them its `resolve` and a `create` that reads the options as given.
macro_rules! register {
    ($engine:ty, $options:ty, $validate:path $(, resolve: $resolve:expr)? $(, create: $create:expr)?) => {
        impl Registered for $engine {
            type Options = $options;

            fn validate(s: &Settings, o: &$options) -> Result<()> {
                $validate(s, o)
            }

            $(
                fn resolve(s: &Settings, o: $options) -> Result<$options> {
                    $resolve(s, o)
                }
            )?

            fn create(storage: Storage, s: Settings, o: $options, given: &$options) -> Result<Self> {
                register!(@create $engine, storage, s, o, given $(, $create)?)
            }

            fn open(storage: Storage, m: Manifest, s: Settings, o: $options) -> Result<Self> {
                <$engine>::open(storage, m, s, o)
            }
        }
    };
    (@create $engine:ty, $storage:ident, $s:ident, $o:ident, $given:ident) => {{
        let _ = $given;
        <$engine>::create($storage, $s, $o)
    }};
    (@create $engine:ty, $storage:ident, $s:ident, $o:ident, $given:ident, $create:expr) => {
        ($create)($storage, $s, $o, $given)
    };
}

register!(btree::BTree, btree::BTreeOptions, btree::validate);
register!(pio::PioBTree, pio::PioOptions, pio::validate, resolve: |s, o: pio::PioOptions| o.resolved(s));
register!(bulk::BulkIndex, bulk::BulkOptions, bulk::validate, resolve: bulk::resolve);
register!(bftl::Bftl, bftl::BftlOptions, bftl::validate);
register!(latree::LaTree, latree::LaTreeOptions, latree::validate);
register!(fbx::Fbx, fbx::FbxOptions, fbx::validate);
// The FD-tree's and the LSM-tree's `k`, when left to the cost model, is re-chosen as the
// tree grows (`kit::sorted::tune`).
register!(
    fdtree::FdTree,
    fdtree::FdTreeOptions,
    fdtree::validate,
    resolve: fdtree::resolve,
    create: |storage, s, o, given: &fdtree::FdTreeOptions| {
        fdtree::FdTree::create(storage, s, o, given.k.is_none())
    }
);
register!(
    lsm::Lsm,
    lsm::LsmOptions,
    lsm::validate,
    resolve: lsm::resolve,
    create: |storage, s, o, given: &lsm::LsmOptions| lsm::Lsm::create(storage, s, o, given.k.is_none())
);

/// The IPL and d-IPL B+-trees (`engine::ipl`, `engine::dipl`): the in-page logging kit's
/// engine with the scheme's log policy, on raw NAND of the options' geometry.
impl<P: LogPolicy> Registered for InPageBTree<P>
where
    P::Options: Clone,
{
    type Options = P::Options;

    fn validate(s: &Settings, o: &P::Options) -> Result<()> {
        inpage::validate::<P>(s, &P::config(o))
    }

    fn create(storage: Storage, s: Settings, o: P::Options, _: &P::Options) -> Result<Self> {
        InPageBTree::create(storage, s, o)
    }

    fn open(storage: Storage, m: Manifest, s: Settings, o: P::Options) -> Result<Self> {
        InPageBTree::open(storage, m, s, o)
    }

    /// The default NAND with the options' blocks and pages per block.
    fn raw_nand(o: &P::Options) -> Option<NandConfig> {
        let c = P::config(o);
        Some(NandConfig {
            blocks: c.nand_blocks,
            pages_per_block: c.pages_per_block,
            ..NandConfig::default()
        })
    }
}
