//! Bounded spinning: how long a waiter burns CPU before it sleeps.
//!
//! On the machines takt targets a futex wake across cores costs ~11 µs while
//! a spin hand-off costs ~150 ns. A waiter that spins for about as long as a
//! sleep-and-wake would cost loses at most 2× against an oracle (the classic
//! competitive-spinning bound) and wins ~70× when the event comes in time.
//! The price is CPU time, which every takt benchmark reports beside latency.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::sync::spin_loop;
use crate::SchedError;

/// Spin iterations between clock reads; ~40 `pause`s on Zen 3 is well under
/// a microsecond, so the budget is overrun by at most two batches (the first
/// batch runs before the clock is read).
#[cfg(not(loom))]
const SPIN_BATCH: u32 = 32;

/// How long to spin before parking. `0` parks at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SpinBudget(Duration);

impl SpinBudget {
    /// Never spin: sleep at once (lowest CPU, highest wake-up latency).
    pub const NONE: SpinBudget = SpinBudget(Duration::ZERO);
    /// The default: about twice a cross-core futex wake-up here.
    pub const DEFAULT: SpinBudget = SpinBudget(Duration::from_micros(20));

    /// A budget of `d`.
    pub const fn new(d: Duration) -> Self {
        SpinBudget(d)
    }

    /// A budget of `us` microseconds.
    pub const fn from_micros(us: u64) -> Self {
        SpinBudget(Duration::from_micros(us))
    }

    /// The budget as a duration.
    pub const fn duration(self) -> Duration {
        self.0
    }

    /// Spins until `ready()` returns true or the budget is spent. Returns
    /// whether `ready()` became true. `ready` is checked at least once.
    ///
    /// While the [spin census](crate::spin_census) counts more awake
    /// threads than CPUs it does not spin, and a spin under way stops at
    /// its next clock read once it does: the caller parks at once instead
    /// of holding a CPU that a thread with work waits for.
    #[inline]
    pub fn spin_until(self, mut ready: impl FnMut() -> bool) -> bool {
        if ready() {
            return true;
        }
        if self.0.is_zero() || crate::census::crowded() {
            return false;
        }
        #[cfg(loom)]
        {
            spin_loop();
            ready()
        }
        #[cfg(not(loom))]
        {
            // The first batch runs before the clock is read: a wait that
            // ends within it (a hand-off between spinning threads) costs no
            // clock read at all. The budget then counts from the end of
            // that batch, so it may be overrun by one batch more.
            for _ in 0..SPIN_BATCH {
                spin_loop();
                if ready() {
                    return true;
                }
            }
            let clock = crate::clock::clock();
            let deadline = clock.now() + clock.ns_to_ticks(self.0.as_nanos() as u64);
            loop {
                for _ in 0..SPIN_BATCH {
                    spin_loop();
                    if ready() {
                        return true;
                    }
                }
                if clock.now() >= deadline || crate::census::crowded() {
                    return false;
                }
            }
        }
    }
}

impl Default for SpinBudget {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl fmt::Display for SpinBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::policy::format_duration(self.0))
    }
}

impl FromStr for SpinBudget {
    type Err = SchedError;

    /// `0`, `20us`, `1ms`, ...
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.trim() == "0" {
            return Ok(SpinBudget::NONE);
        }
        crate::policy::parse_duration(s)
            .map(SpinBudget)
            .ok_or_else(|| SchedError::Parse {
                input: s.to_string(),
                reason: "spin budget is a duration such as 0, 20us or 1ms".into(),
            })
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn spins_for_about_the_budget() {
        let start = std::time::Instant::now();
        assert!(!SpinBudget::from_micros(200).spin_until(|| false));
        let took = start.elapsed();
        assert!(took >= Duration::from_micros(200), "{took:?}");
        assert!(SpinBudget::NONE.spin_until(|| true));
        assert!(!SpinBudget::NONE.spin_until(|| false));
    }

    #[test]
    fn parses_and_prints() {
        assert_eq!("0".parse::<SpinBudget>().unwrap(), SpinBudget::NONE);
        assert_eq!("20us".parse::<SpinBudget>().unwrap(), SpinBudget::DEFAULT);
        assert_eq!(SpinBudget::DEFAULT.to_string(), "20us");
        assert!("fast".parse::<SpinBudget>().is_err());
    }
}
