//! The spin census: how many takt threads want a CPU, so that a waiter does
//! not spin where spinning takes a CPU from a thread with work.
//!
//! Spinning pays when the waiter has a CPU to itself. When more threads
//! want to run than there are CPUs — a hundred `active_obj` agents on two
//! vCPUs — a spinner holds a CPU that a runnable thread waits for, and the
//! event it spins for cannot come until that thread runs. So
//! [`SpinBudget::spin_until`](crate::SpinBudget::spin_until) spins only while
//! the census counts at most as many awake threads as the process has CPUs,
//! and gives up (the caller parks) as soon as it counts more.
//!
//! ## What is counted
//! A thread joins the census the first time it calls [`Parker::park`]
//! (`park_timeout` too) and leaves it when it exits. `awake` is the number
//! of members not asleep in a parker: running, spinning, or woken and
//! waiting for a CPU. Threads that never park in a [`Parker`] (a SIP worker
//! blocked in `recv`, a `SpinBarrier`'s threads) are not counted, and a
//! process with no members never crowds.
//!
//! 1. A member going to sleep (its parker moves EMPTY→PARKED) subtracts
//!    one.
//! 2. The transition out of PARKED happens once per sleep and whoever makes
//!    it adds the one back: the unparker that swaps PARKED→NOTIFIED (before
//!    the futex wake, so a woken thread that waits for a CPU is counted
//!    awake), or the sleeper itself when its timeout swaps PARKED→EMPTY.
//! 3. A thread's first park adds one (it joins); its exit subtracts one.
//!
//! Steps 1 and 2 pair on the parker's state word, so each sleep subtracts
//! and adds exactly once; step 3 is balanced by the thread-local's
//! destructor. A thread that parks while its thread-locals are being
//! destroyed does not join (1 and 2 still balance), so the count can only
//! be low by such threads, never leak upwards.
//!
//! `cpus` is the number of CPUs the process's main thread may run on,
//! read once (all online CPUs where that cannot be read).
//!
//! Under loom the census is off (every waiter may spin): it changes only
//! how long a waiter spins, never whether a wake-up is delivered, and the
//! parker's models check the latter.

/// What the spin census counts (see the module docs), for tests and
/// reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpinCensus {
    /// Threads that joined the census and are not asleep in a parker.
    pub awake: usize,
    /// CPUs the process may run on.
    pub cpus: usize,
    /// Waits that did not spin, or stopped spinning before their budget,
    /// because more threads were awake than there are CPUs.
    pub declined: u64,
}

/// The census now.
pub fn spin_census() -> SpinCensus {
    imp::census()
}

#[cfg(not(loom))]
mod imp {
    use std::sync::OnceLock;

    use super::SpinCensus;
    use crate::sync::{AtomicU64, AtomicUsize, Ordering};

    // All Relaxed: the census is a heuristic that decides how long to
    // spin; no memory is published through it.
    /// Members not asleep in a parker, as a wrapping count (a sleep of a
    /// thread that could not join subtracts before it adds back).
    static AWAKE: AtomicUsize = AtomicUsize::new(0);
    /// Waits cut short by a crowd.
    static DECLINED: AtomicU64 = AtomicU64::new(0);
    static CPUS: OnceLock<usize> = OnceLock::new();

    /// A thread's membership: joined on its first park, left on exit.
    struct Member {
        joined: std::cell::Cell<bool>,
    }

    impl Drop for Member {
        fn drop(&mut self) {
            if self.joined.get() {
                AWAKE.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }

    thread_local! {
        static MEMBER: Member = const { Member { joined: std::cell::Cell::new(false) } };
    }

    fn cpus() -> usize {
        *CPUS.get_or_init(|| {
            main_thread_cpus().unwrap_or_else(|| crate::CpuSet::online().len().max(1))
        })
    }

    #[cfg(target_os = "linux")]
    fn main_thread_cpus() -> Option<usize> {
        let mut words = [0u64; crate::cpuset::MAX_CPUS / 64];
        // SAFETY: the kernel writes at most `size_of_val(&words)` bytes
        // into `words`; the main thread's id is the process id.
        let r = unsafe {
            libc::syscall(
                libc::SYS_sched_getaffinity,
                libc::getpid() as libc::c_long,
                std::mem::size_of_val(&words),
                words.as_mut_ptr(),
            )
        };
        let n: u32 = words.iter().map(|w| w.count_ones()).sum();
        (r >= 0 && n > 0).then_some(n as usize)
    }

    #[cfg(not(target_os = "linux"))]
    fn main_thread_cpus() -> Option<usize> {
        None
    }

    /// Step 3: the calling thread joins (once).
    #[inline]
    pub(crate) fn join() {
        let _ = MEMBER.try_with(|m| {
            if !m.joined.get() {
                m.joined.set(true);
                AWAKE.fetch_add(1, Ordering::Relaxed);
            }
        });
    }

    /// Step 1.
    #[inline]
    pub(crate) fn asleep() {
        AWAKE.fetch_sub(1, Ordering::Relaxed);
    }

    /// Step 2.
    #[inline]
    pub(crate) fn woken() {
        AWAKE.fetch_add(1, Ordering::Relaxed);
    }

    /// More members awake than CPUs: a spinner would take a CPU from one
    /// of them. Counted as a declined spin when true.
    #[inline]
    pub(crate) fn crowded() -> bool {
        let awake = AWAKE.load(Ordering::Relaxed);
        // A wrapped (transiently negative) count is not a crowd.
        if awake <= cpus() || awake > isize::MAX as usize {
            return false;
        }
        DECLINED.fetch_add(1, Ordering::Relaxed);
        true
    }

    pub(super) fn census() -> SpinCensus {
        let awake = AWAKE.load(Ordering::Relaxed);
        SpinCensus {
            awake: if awake > isize::MAX as usize {
                0
            } else {
                awake
            },
            cpus: cpus(),
            declined: DECLINED.load(Ordering::Relaxed),
        }
    }
}

#[cfg(loom)]
mod imp {
    use super::SpinCensus;

    pub(crate) fn join() {}
    pub(crate) fn asleep() {}
    pub(crate) fn woken() {}
    pub(crate) fn crowded() -> bool {
        false
    }
    pub(super) fn census() -> SpinCensus {
        SpinCensus {
            awake: 0,
            cpus: 1,
            declined: 0,
        }
    }
}

pub(crate) use imp::{asleep, crowded, join, woken};
