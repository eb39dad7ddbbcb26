//! The one switch between real and model-checked synchronization.
//!
//! Every atomic, lock and futex that takt's hand-written concurrent code uses
//! comes from here. Built with `RUSTFLAGS="--cfg loom"`, the same names
//! resolve to [loom]'s instrumented types, so the loom models beside each
//! structure explore its interleavings. Crates above takt-sched import from
//! here too, so one `--cfg loom` switches the whole workspace.
//!
//! [loom]: https://docs.rs/loom

#[cfg(loom)]
pub use loom::sync::atomic::{
    fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};
#[cfg(loom)]
pub use loom::sync::{Arc, Condvar, Mutex, MutexGuard};
#[cfg(loom)]
pub use loom::thread;

#[cfg(not(loom))]
pub use std::sync::atomic::{
    fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};
#[cfg(not(loom))]
pub use std::sync::{Arc, Condvar, Mutex, MutexGuard};
#[cfg(not(loom))]
pub use std::thread;

/// Hint that the caller is spinning. Under loom it yields to the model's
/// scheduler instead, so spin loops stay finite.
#[inline(always)]
pub fn spin_loop() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::hint::spin_loop();
}
