//! Small utilities every layer may use: the seeded [`Rng`] of fault plans, simulators and
//! tests.

mod rng;

pub use rng::Rng;
