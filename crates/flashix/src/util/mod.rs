//! Small utilities every layer may use: the seeded [`Rng`] of fault plans, simulators and
//! tests, and the [`sync`] locks of the model-checked latch protocols.

mod rng;
pub mod sync;

pub use rng::Rng;
