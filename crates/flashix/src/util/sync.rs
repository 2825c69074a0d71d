//! The locks of the latch protocols that are model-checked: `std::sync`'s, or, in the
//! crate's own tests built with `--cfg flashix_shuttle`, `shuttle`'s, whose scheduler then
//! explores the threads' interleavings (`buffer::shared`'s model tests; `.ci/run` runs them).
//! Shuttle's timed waits never time out, so a lost wake-up shows as a deadlock there.

#[cfg(all(test, flashix_shuttle))]
pub use shuttle::sync::{
    atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize},
    Arc, Condvar, Mutex, MutexGuard, RwLock,
};
#[cfg(not(all(test, flashix_shuttle)))]
pub use std::sync::{
    atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize},
    Arc, Condvar, Mutex, MutexGuard, RwLock,
};

/// Run `f` in `random` random interleavings and then, if none failed, in `pct`
/// interleavings of PCT's (priority changes at up to `depth` points), both schedulers
/// seeded: a model test of a deliberately broken protocol explores the same schedules in
/// every run, so that it catches the break in every run or in none (and a change that
/// hides the break from these schedules shows at once, not in one CI run of many).
#[cfg(all(test, flashix_shuttle))]
pub fn check_seeded<F>(f: F, random: usize, pct: usize, depth: usize)
where
    F: Fn() + Send + Sync + 'static,
{
    use shuttle::scheduler::{PctScheduler, RandomScheduler};
    use shuttle::{Config, Runner};
    let f = std::sync::Arc::new(f);
    let g = f.clone();
    Runner::new(
        RandomScheduler::new_from_seed(0x5eed, random),
        Config::default(),
    )
    .run(move || g());
    Runner::new(
        PctScheduler::new_from_seed(0x5eed, depth, pct),
        Config::default(),
    )
    .run(move || f());
}

/// A value reachable only through `&mut` (or by value), so that it may be `Sync` whatever
/// `T` is: a shared reference to an `Exclusive` gives no access to its value. For the parts
/// of an engine that only its writer touches (a merge thread's channel) inside an engine
/// that its readers share.
pub struct Exclusive<T>(T);

// SAFETY: no method reaches the value through `&Exclusive<T>`; through `&mut` only one
// thread holds it at a time, and moving it between threads needs `T: Send`.
unsafe impl<T: Send> Sync for Exclusive<T> {}

impl<T> Exclusive<T> {
    /// Wrap `value`.
    pub fn new(value: T) -> Exclusive<T> {
        Exclusive(value)
    }

    /// The value, for the one thread that holds `&mut`.
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.0
    }
}
