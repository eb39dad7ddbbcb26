//! [`Parker`]: spin-then-park waiting for one consumer thread.
//!
//! The consumer calls [`Parker::park`] when it has nothing to do; any thread
//! calls [`Parker::unpark`] after making work available. A token remembers
//! an unpark that arrives while the consumer is awake, so no wake-up is lost.
//! The protocol is the one of std's futex-based thread parker (states EMPTY,
//! NOTIFIED, PARKED on one futex word), with a bounded spin in front.

use std::time::Duration;

use crate::futex::Futex;
use crate::sync::{AtomicU64, Ordering};
use crate::SpinBudget;

/// No token, consumer not sleeping.
const EMPTY: u32 = 0;
/// A token is present: the next `park` returns at once.
const NOTIFIED: u32 = 1;
/// The consumer is (about to be) asleep on the futex.
const PARKED: u32 = u32::MAX;

/// A spin-then-park wait point for a single consumer.
///
/// Only one thread may call `park`/`park_timeout` at a time (the owner);
/// `unpark` may be called from any thread.
#[derive(Debug)]
pub struct Parker {
    /// EMPTY, NOTIFIED or PARKED. Transitions:
    /// owner: EMPTY→PARKED (going to sleep), NOTIFIED→EMPTY (token taken),
    /// PARKED→EMPTY (woke without token, e.g. timeout);
    /// unparker: any→NOTIFIED (wakes the futex if it was PARKED).
    state: Futex,
    budget: SpinBudget,
    /// Times the owner actually slept on the futex (slow path only).
    sleeps: AtomicU64,
}

impl Parker {
    /// A parker that spins for `budget` before sleeping.
    pub fn new(budget: SpinBudget) -> Self {
        Parker {
            state: Futex::new(EMPTY),
            budget,
            sleeps: AtomicU64::new(0),
        }
    }

    /// The spin budget.
    pub fn budget(&self) -> SpinBudget {
        self.budget
    }

    /// How many times the owner went to sleep in the kernel.
    pub fn sleeps(&self) -> u64 {
        self.sleeps.load(Ordering::Relaxed)
    }

    /// Takes the token if present.
    #[inline]
    fn try_take(&self) -> bool {
        // Acquire pairs with the Release in `unpark`: work published before
        // the unpark is visible after this returns true.
        self.state
            .word()
            .compare_exchange(NOTIFIED, EMPTY, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Waits for a token: spins up to the budget, then sleeps.
    pub fn park(&self) {
        self.park_inner(None);
    }

    /// Like [`park`](Self::park) but gives up after `timeout`. Returns whether
    /// a token was taken.
    pub fn park_timeout(&self, timeout: Duration) -> bool {
        self.park_inner(Some(timeout))
    }

    fn park_inner(&self, timeout: Option<Duration>) -> bool {
        crate::census::join();
        let budget = match timeout {
            Some(t) => self.budget.min(SpinBudget::new(t)),
            None => self.budget,
        };
        if budget.spin_until(|| self.try_take()) {
            return true;
        }
        let word = self.state.word();
        // EMPTY→PARKED, or NOTIFIED→EMPTY if a token arrived meanwhile.
        // Acquire for the NOTIFIED case (see `try_take`).
        if word.fetch_sub(1, Ordering::Acquire) == NOTIFIED {
            return true;
        }
        // PARKED: asleep for the census until whoever moves the word out
        // of PARKED counts this thread awake again (census step 2).
        crate::census::asleep();
        self.sleeps.fetch_add(1, Ordering::Relaxed);
        let deadline = timeout.map(|t| crate::clock::monotonic_ns() + t.as_nanos() as u64);
        loop {
            let remaining = match deadline {
                Some(d) => {
                    let now = crate::clock::monotonic_ns();
                    if now >= d {
                        // Timed out: PARKED→EMPTY unless a token came, in which
                        // case take it (NOTIFIED→EMPTY).
                        if word.swap(EMPTY, Ordering::Acquire) == NOTIFIED {
                            // The unparker counted us awake.
                            return true;
                        }
                        crate::census::woken();
                        return false;
                    }
                    Some(Duration::from_nanos(d - now))
                }
                None => None,
            };
            self.state.wait(PARKED, remaining);
            if self.try_take() {
                return true;
            }
            // Spurious wake-up or timeout: still PARKED, go round.
        }
    }

    /// Makes a token available and wakes the owner if it sleeps.
    #[inline]
    pub fn unpark(&self) {
        // Release pairs with the owner's Acquire when it takes the token.
        if self.state.word().swap(NOTIFIED, Ordering::Release) == PARKED {
            // Counted awake before it runs: a woken thread waiting for a
            // CPU is one the census must see (census step 2).
            crate::census::woken();
            self.state.wake_one();
        }
    }
}

impl Default for Parker {
    fn default() -> Self {
        Parker::new(SpinBudget::DEFAULT)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    #[test]
    fn token_before_park_is_kept() {
        let p = Parker::new(SpinBudget::NONE);
        p.unpark();
        p.park();
        assert!(!p.park_timeout(Duration::from_millis(1)));
    }

    #[test]
    fn wakes_a_sleeper() {
        let p = Arc::new(Parker::new(SpinBudget::NONE));
        let flag = Arc::new(AtomicBool::new(false));
        let (p2, f2) = (p.clone(), flag.clone());
        let t = std::thread::spawn(move || {
            while !f2.load(std::sync::atomic::Ordering::Acquire) {
                p2.park();
            }
        });
        std::thread::sleep(Duration::from_millis(20));
        flag.store(true, std::sync::atomic::Ordering::Release);
        p.unpark();
        t.join().unwrap();
        assert!(p.sleeps() >= 1);
    }

    #[test]
    fn timeout_expires() {
        let p = Parker::new(SpinBudget::from_micros(5));
        let start = std::time::Instant::now();
        assert!(!p.park_timeout(Duration::from_millis(5)));
        assert!(start.elapsed() >= Duration::from_millis(5));
    }

    #[test]
    fn stress_two_threads_no_lost_wakeup() {
        for budget in [SpinBudget::NONE, SpinBudget::from_micros(2)] {
            let p = Arc::new(Parker::new(budget));
            let produced = Arc::new(std::sync::atomic::AtomicU64::new(0));
            const N: u64 = 20_000;
            let (p2, c2) = (p.clone(), produced.clone());
            let producer = std::thread::spawn(move || {
                for _ in 0..N {
                    c2.fetch_add(1, std::sync::atomic::Ordering::Release);
                    p2.unpark();
                }
            });
            let mut seen = 0;
            while seen < N {
                let now = produced.load(std::sync::atomic::Ordering::Acquire);
                if now == seen {
                    p.park();
                } else {
                    seen = now;
                }
            }
            producer.join().unwrap();
        }
    }
}
