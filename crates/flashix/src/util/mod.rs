//! Small utilities every layer may use: the seeded `Rng` of fault plans, simulators and
//! tests (built only for tests and the `testing` feature), and the [`sync`] locks of the
//! model-checked latch protocols.

#[cfg(any(test, feature = "testing"))]
mod rng;
pub mod sync;

#[cfg(any(test, feature = "testing"))]
pub use rng::Rng;
