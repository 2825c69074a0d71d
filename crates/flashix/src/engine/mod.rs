//! The engines behind [`crate::Db`], and their registry. One folder each, owning its
//! options, format and algorithms; every one is a [`Registered`] engine type, served to
//! many threads as an [`Engine`] by `kit::parallel::Parallel`. No engine imports another:
//! what two share is a kit beside them.
//!
//! The registry is [`crate::kind::engines!`], the one list of the engines, expanded here
//! into [`EngineOptions`] (one variant per engine, holding its own options) and the
//! functions that dispatch on it: [`validate`], [`resolve`], [`raw_nand`], [`create`] and
//! [`open`]. This module knows the engines' own options and the [`Settings`] every engine
//! shares, never the `Options` builder above it.

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
mod registry;

pub use registry::Registered;

use crate::durable::Manifest;
use crate::error::Result;
use crate::io::Storage;
use crate::kind::EngineKind;
pub(crate) use crate::kit::api::Engine;
use crate::kit::parallel::Parallel;
use crate::settings::Settings;
use crate::sim::NandConfig;
use serde::{Deserialize, Serialize};

/// An engine served to many threads (`Db`'s engine).
fn serve<E: Registered>(e: E) -> Box<dyn Engine> {
    Box::new(Parallel::new(e))
}

/// [`EngineOptions`] and the registry's dispatch, from [`crate::kind::engines!`].
macro_rules! registry {
    ($($(#[$doc:meta])* $kind:ident $name:ident $acc:ident: $em:ident::$e:ident, $om:ident::$o:ident;)*) => {
        /// The chosen engine's own options: one value, whose variant is the engine kind
        /// (and the tag of the manifest's options record, `options::record`).
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[non_exhaustive]
        pub enum EngineOptions {
            $(
                #[doc = concat!("The options of [`EngineKind::", stringify!($kind), "`].")]
                $kind($om::$o),
            )*
        }

        impl EngineOptions {
            /// The paper's (or the cost model's) defaults for `kind`.
            pub fn defaults(kind: EngineKind) -> EngineOptions {
                match kind {
                    $(EngineKind::$kind => EngineOptions::$kind(Default::default()),)*
                }
            }

            /// The engine these options are for.
            pub fn kind(&self) -> EngineKind {
                match self {
                    $(EngineOptions::$kind(_) => EngineKind::$kind,)*
                }
            }
        }

        $(
            impl From<$om::$o> for EngineOptions {
                fn from(o: $om::$o) -> EngineOptions {
                    EngineOptions::$kind(o)
                }
            }
        )*

        /// Check the chosen engine's own options against the settings ([`Registered::validate`]).
        pub fn validate(s: &Settings, o: &EngineOptions) -> Result<()> {
            match o {
                $(EngineOptions::$kind(o) => <$em::$e as Registered>::validate(s, o),)*
            }
        }

        /// `o` with every parameter left to a cost model decided ([`Registered::resolve`]).
        pub fn resolve(s: &Settings, o: &EngineOptions) -> Result<EngineOptions> {
            Ok(match o {
                $(EngineOptions::$kind(o) => {
                    EngineOptions::$kind(<$em::$e as Registered>::resolve(s, o.clone())?)
                })*
            })
        }

        /// The raw NAND the chosen engine runs on by default, if it runs on raw NAND
        /// ([`Registered::raw_nand`]).
        pub fn raw_nand(o: &EngineOptions) -> Option<NandConfig> {
            match o {
                $(EngineOptions::$kind(o) => <$em::$e as Registered>::raw_nand(o),)*
            }
        }

        /// A new engine on `storage` ([`Registered::create`]): `o` resolved and `s.record`
        /// holding it; `given`, the options before [`resolve`].
        pub fn create(
            storage: Storage,
            s: Settings,
            o: EngineOptions,
            given: &EngineOptions,
        ) -> Result<Box<dyn Engine>> {
            match o {
                $(EngineOptions::$kind(o) => {
                    let given = match given {
                        EngineOptions::$kind(g) => g.clone(),
                        _ => o.clone(),
                    };
                    Ok(serve(<$em::$e as Registered>::create(storage, s, o, &given)?))
                })*
            }
        }

        /// Reopen an engine from its manifest, recovering from the WAL
        /// ([`Registered::open`]); `s.record` is the record the next checkpoint writes.
        pub fn open(
            storage: Storage,
            manifest: Manifest,
            s: Settings,
            o: EngineOptions,
        ) -> Result<Box<dyn Engine>> {
            match o {
                $(EngineOptions::$kind(o) => {
                    Ok(serve(<$em::$e as Registered>::open(storage, manifest, s, o)?))
                })*
            }
        }
    };
}
crate::kind::engines!(registry);
