//! The locks of the latch protocols that are model-checked: `std::sync`'s, or, in the
//! crate's own tests built with `--cfg flashix_shuttle`, `shuttle`'s, whose scheduler then
//! explores the threads' interleavings (`buffer::shared`'s model tests; `.ci/run` runs them).
//! Shuttle's timed waits never time out, so a lost wake-up shows as a deadlock there.

#[cfg(all(test, flashix_shuttle))]
pub use shuttle::sync::{Condvar, Mutex, MutexGuard};
#[cfg(not(all(test, flashix_shuttle)))]
pub use std::sync::{Condvar, Mutex, MutexGuard};
