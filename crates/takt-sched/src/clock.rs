//! A cheap monotonic clock: the invariant TSC, calibrated against
//! `CLOCK_MONOTONIC`, or `CLOCK_MONOTONIC` itself where the TSC cannot be
//! trusted.
//!
//! On the machines takt is developed on the TSC ticks at ~2445 MHz while the
//! cores run at ~3.2 GHz: ticks are *not* core cycles, so always convert with
//! [`Clock::ticks_to_ns`] (`takt sched` prints the calibrated frequency).
//! Reading it costs ~10 ns (`rdtsc`) against ~40 ns for `Instant::now()`
//! (`takt machine --only timer`: `timer_rdtsc`, `timer_instant`).
//!
//! The TSC is used only when `/proc/cpuinfo` reports both `constant_tsc` and
//! `nonstop_tsc` (an invariant TSC); `TAKT_CLOCK=monotonic` forces the
//! fallback.

use std::sync::OnceLock;
use std::time::Duration;

/// Where a [`Clock`]'s ticks come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockSource {
    /// The invariant time-stamp counter (`rdtsc`).
    Tsc,
    /// `CLOCK_MONOTONIC` in nanoseconds.
    Monotonic,
}

/// A calibrated tick source. Obtain the process-wide one with [`clock`].
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    source: ClockSource,
    hz: f64,
    /// Nanoseconds per tick as a 32.32 fixed-point number.
    ns_per_tick_q32: u64,
}

/// Measured calibration window; 10 ms gives better than 10 ppm given the
/// ~100 ns bracketing error of each paired read.
const CALIBRATION_WINDOW: Duration = Duration::from_millis(10);
/// Paired reads per calibration point; the tightest bracket wins.
const PAIRED_READS: usize = 7;

static CLOCK: OnceLock<Clock> = OnceLock::new();

/// The process-wide clock, calibrated on first use (~10 ms, once).
pub fn clock() -> &'static Clock {
    CLOCK.get_or_init(Clock::calibrate)
}

/// Nanoseconds of `CLOCK_MONOTONIC`.
pub fn monotonic_ns() -> u64 {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }
    #[cfg(not(unix))]
    {
        static START: OnceLock<std::time::Instant> = OnceLock::new();
        START
            .get_or_init(std::time::Instant::now)
            .elapsed()
            .as_nanos() as u64
    }
}

/// Reads the TSC after all earlier instructions completed, before any later
/// one starts (`lfence; rdtsc; lfence`): the opening timestamp of a timed
/// region.
#[inline(always)]
pub fn tsc_start() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: lfence and rdtsc have no memory effects; x86_64 always has both.
    unsafe {
        core::arch::x86_64::_mm_lfence();
        let t = core::arch::x86_64::_rdtsc();
        core::arch::x86_64::_mm_lfence();
        t
    }
    #[cfg(not(target_arch = "x86_64"))]
    monotonic_ns()
}

/// Reads the TSC after all earlier instructions completed, and keeps later
/// ones from starting early (`rdtscp; lfence`): the closing timestamp.
#[inline(always)]
pub fn tsc_end() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: rdtscp writes only `aux`, a local; lfence has no memory effects.
    unsafe {
        let mut aux = 0u32;
        let t = core::arch::x86_64::__rdtscp(&mut aux);
        core::arch::x86_64::_mm_lfence();
        t
    }
    #[cfg(not(target_arch = "x86_64"))]
    monotonic_ns()
}

/// Whether `/proc/cpuinfo` reports an invariant TSC.
pub fn tsc_is_invariant() -> bool {
    if !cfg!(target_arch = "x86_64") {
        return false;
    }
    let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") else {
        return false;
    };
    info.lines()
        .find(|l| l.starts_with("flags"))
        .is_some_and(|flags| {
            let has = |f: &str| flags.split_whitespace().any(|w| w == f);
            has("constant_tsc") && has("nonstop_tsc")
        })
}

impl Clock {
    /// Measures the TSC frequency against `CLOCK_MONOTONIC`, or returns the
    /// monotonic fallback when the TSC is not invariant (or `TAKT_CLOCK=monotonic`).
    pub fn calibrate() -> Clock {
        let forced = std::env::var("TAKT_CLOCK").is_ok_and(|v| v == "monotonic");
        if forced || !tsc_is_invariant() {
            return Clock::monotonic();
        }
        let (t0, m0) = paired_read();
        std::thread::sleep(CALIBRATION_WINDOW);
        let (t1, m1) = paired_read();
        let hz = (t1.wrapping_sub(t0)) as f64 * 1e9 / (m1 - m0) as f64;
        if !(1e8..=1e10).contains(&hz) {
            return Clock::monotonic();
        }
        Clock::with_frequency(ClockSource::Tsc, hz)
    }

    /// The `CLOCK_MONOTONIC` clock (one tick per nanosecond).
    pub fn monotonic() -> Clock {
        Clock::with_frequency(ClockSource::Monotonic, 1e9)
    }

    fn with_frequency(source: ClockSource, hz: f64) -> Clock {
        Clock {
            source,
            hz,
            ns_per_tick_q32: (1e9 / hz * 4_294_967_296.0).round() as u64,
        }
    }

    /// The current tick count.
    #[inline(always)]
    pub fn now(&self) -> u64 {
        match self.source {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: rdtsc has no preconditions on x86_64.
            ClockSource::Tsc => unsafe { core::arch::x86_64::_rdtsc() },
            _ => monotonic_ns(),
        }
    }

    /// Converts a tick count (or difference) to nanoseconds.
    #[inline(always)]
    pub fn ticks_to_ns(&self, ticks: u64) -> u64 {
        ((ticks as u128 * self.ns_per_tick_q32 as u128) >> 32) as u64
    }

    /// Converts nanoseconds to ticks.
    #[inline]
    pub fn ns_to_ticks(&self, ns: u64) -> u64 {
        (ns as f64 * self.hz / 1e9) as u64
    }

    /// Nanoseconds since `start` (a value of [`Clock::now`]).
    #[inline(always)]
    pub fn elapsed_ns(&self, start: u64) -> u64 {
        self.ticks_to_ns(self.now().saturating_sub(start))
    }

    /// Ticks per second.
    pub fn frequency_hz(&self) -> f64 {
        self.hz
    }

    /// Where the ticks come from.
    pub fn source(&self) -> ClockSource {
        self.source
    }
}

/// A (tsc, monotonic ns) pair read as close together as possible: of several
/// tries, the one whose two TSC reads bracket the monotonic read most tightly.
fn paired_read() -> (u64, u64) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..PAIRED_READS {
        let a = tsc_start();
        let m = monotonic_ns();
        let b = tsc_end();
        let width = b.wrapping_sub(a);
        if width < best.0 {
            best = (width, a + width / 2, m);
        }
    }
    (best.1, best.2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_agrees_with_monotonic() {
        let c = clock();
        let (t0, m0) = (c.now(), monotonic_ns());
        std::thread::sleep(Duration::from_millis(30));
        let (t1, m1) = (c.now(), monotonic_ns());
        let by_clock = c.ticks_to_ns(t1 - t0) as f64;
        let by_mono = (m1 - m0) as f64;
        assert!(
            (by_clock / by_mono - 1.0).abs() < 0.01,
            "clock {by_clock} ns vs monotonic {by_mono} ns"
        );
    }

    #[test]
    fn conversions_round_trip() {
        let c = Clock::with_frequency(ClockSource::Tsc, 2.445e9);
        let ticks = c.ns_to_ticks(1_000_000);
        assert_eq!(ticks, 2_445_000);
        let back = c.ticks_to_ns(ticks);
        assert!((999_999..=1_000_001).contains(&back), "{back}");
        let m = Clock::monotonic();
        assert_eq!(m.ticks_to_ns(12345), 12345);
    }
}
