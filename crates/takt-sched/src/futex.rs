//! A 32-bit word threads can sleep on: the Linux futex, or a faithful
//! mutex-and-condvar emulation under loom and on other platforms.
//!
//! Contract (the futex contract): [`Futex::wait`] sleeps only if the word
//! still equals `expected` at the moment it goes to sleep, checked atomically
//! with going to sleep; it may return spuriously. A waker changes the word
//! *before* calling [`Futex::wake_one`]/[`Futex::wake_all`], so a waiter
//! either sees the new value or is woken.

use std::time::Duration;

use crate::sync::{AtomicU32, Ordering};

/// A futex word.
#[derive(Debug, Default)]
pub struct Futex {
    word: AtomicU32,
    #[cfg(any(loom, not(target_os = "linux")))]
    emu: emulated::Emulation,
}

impl Futex {
    /// A futex holding `value`.
    #[cfg(not(loom))]
    pub const fn new(value: u32) -> Self {
        Futex {
            word: AtomicU32::new(value),
            #[cfg(not(target_os = "linux"))]
            emu: emulated::Emulation::new(),
        }
    }

    /// A futex holding `value`.
    #[cfg(loom)]
    pub fn new(value: u32) -> Self {
        Futex {
            word: AtomicU32::new(value),
            emu: emulated::Emulation::new(),
        }
    }

    /// The word itself, for the atomic protocol built on top.
    #[inline(always)]
    pub fn word(&self) -> &AtomicU32 {
        &self.word
    }

    /// Sleeps while the word equals `expected`, at most `timeout` if given.
    /// May return early or spuriously; callers re-check their condition.
    pub fn wait(&self, expected: u32, timeout: Option<Duration>) {
        #[cfg(all(target_os = "linux", not(loom)))]
        linux::wait(&self.word, expected, timeout);
        #[cfg(any(loom, not(target_os = "linux")))]
        self.emu.wait(&self.word, expected, timeout);
    }

    /// Wakes one sleeper.
    pub fn wake_one(&self) {
        #[cfg(all(target_os = "linux", not(loom)))]
        linux::wake(&self.word, 1);
        #[cfg(any(loom, not(target_os = "linux")))]
        self.emu.wake();
    }

    /// Wakes every sleeper.
    pub fn wake_all(&self) {
        #[cfg(all(target_os = "linux", not(loom)))]
        linux::wake(&self.word, i32::MAX);
        #[cfg(any(loom, not(target_os = "linux")))]
        self.emu.wake();
    }

    /// Loads the word.
    #[inline(always)]
    pub fn load(&self, order: Ordering) -> u32 {
        self.word.load(order)
    }
}

#[cfg(all(target_os = "linux", not(loom)))]
mod linux {
    use super::*;

    pub(super) fn wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
        let ts = timeout.map(|d| libc::timespec {
            tv_sec: d.as_secs().min(i64::MAX as u64) as libc::time_t,
            tv_nsec: d.subsec_nanos() as libc::c_long,
        });
        let ts_ptr = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: `word` is a valid, aligned u32 that outlives the call;
        // FUTEX_WAIT only reads it; `ts_ptr` is null or points to a live
        // timespec. Errors (EAGAIN when the value changed, EINTR, ETIMEDOUT)
        // are all "return and re-check", as the contract allows.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                expected,
                ts_ptr,
            );
        }
    }

    pub(super) fn wake(word: &AtomicU32, n: i32) {
        // SAFETY: `word` is a valid futex word; FUTEX_WAKE does not access
        // memory beyond using its address as a key.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                n,
            );
        }
    }
}

#[cfg(any(loom, not(target_os = "linux")))]
mod emulated {
    use super::*;
    use crate::sync::{Condvar, Mutex};

    /// The futex contract from a mutex and a condvar: the value check and
    /// the sleep happen under `lock`, and wakers take `lock` after changing
    /// the word, so a wake-up cannot fall between check and sleep.
    #[derive(Debug, Default)]
    pub(super) struct Emulation {
        lock: Mutex<()>,
        cv: Condvar,
    }

    impl Emulation {
        #[cfg(not(loom))]
        pub(super) const fn new() -> Self {
            Emulation {
                lock: Mutex::new(()),
                cv: Condvar::new(),
            }
        }

        #[cfg(loom)]
        pub(super) fn new() -> Self {
            Emulation {
                lock: Mutex::new(()),
                cv: Condvar::new(),
            }
        }

        pub(super) fn wait(&self, word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
            let guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            if word.load(Ordering::SeqCst) != expected {
                return;
            }
            #[cfg(loom)]
            {
                // loom has no timed waits; a timed wait in a model just returns
                // (a spurious wake-up, which the contract allows).
                if timeout.is_none() {
                    drop(self.cv.wait(guard));
                }
            }
            #[cfg(not(loom))]
            match timeout {
                Some(t) => drop(self.cv.wait_timeout(guard, t)),
                None => drop(self.cv.wait(guard)),
            }
        }

        pub(super) fn wake(&self) {
            drop(self.lock.lock().unwrap_or_else(|e| e.into_inner()));
            self.cv.notify_all();
        }
    }
}
