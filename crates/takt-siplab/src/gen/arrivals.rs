//! Open-loop call arrivals: the planned start of every call.
//!
//! A [`Schedule`] yields planned start times (ns after the run's start)
//! of a Poisson process (exponential inter-arrival times at the mean
//! rate, from a seeded generator: the same seed gives the same schedule)
//! or of a constant rate (call `i` at exactly `i / rate`). The generator
//! places each call at its planned time or, if it is behind, as soon as
//! it can, recording the lag; it never skips a planned call.

/// How calls arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrivals {
    /// Exponential inter-arrival times (a Poisson process).
    Poisson,
    /// Equal inter-arrival times.
    Constant,
}

impl std::str::FromStr for Arrivals {
    type Err = crate::Error;
    fn from_str(s: &str) -> Result<Self, crate::Error> {
        match s {
            "poisson" => Ok(Arrivals::Poisson),
            "constant" => Ok(Arrivals::Constant),
            _ => Err(crate::error::unknown("arrivals", s, "poisson, constant")),
        }
    }
}

impl Arrivals {
    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Arrivals::Poisson => "poisson",
            Arrivals::Constant => "constant",
        }
    }
}

/// SplitMix64 (Steele, Lea & Flood 2014): small, fast, and passes
/// BigCrush; ample for inter-arrival times.
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1]: never 0, so `ln` is finite.
    fn next_open01(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// Planned call start times, ns after the run's start, non-decreasing.
#[derive(Debug, Clone)]
pub struct Schedule {
    arrivals: Arrivals,
    /// Mean inter-arrival time, ns.
    mean_ns: f64,
    rng: SplitMix64,
    /// Poisson: the last planned time, ns (kept in f64 so rounding does
    /// not accumulate).
    t: f64,
    /// Calls planned so far.
    n: u64,
    /// Stop after this many calls.
    max_calls: Option<u64>,
    /// Stop at the first planned time at or beyond this, ns.
    end_ns: Option<u64>,
    /// Set when the schedule ends: the end of its planned window.
    window_end: Option<u64>,
}

impl Schedule {
    /// `rate` calls per second (must be positive and finite), at most
    /// `max_calls` calls, none planned at or after `end_ns`.
    pub fn new(
        arrivals: Arrivals,
        rate: f64,
        seed: u64,
        max_calls: Option<u64>,
        end_ns: Option<u64>,
    ) -> Schedule {
        assert!(rate.is_finite() && rate > 0.0, "rate must be positive");
        Schedule {
            arrivals,
            mean_ns: 1e9 / rate,
            rng: SplitMix64(seed),
            t: 0.0,
            n: 0,
            max_calls,
            end_ns,
            window_end: None,
        }
    }

    /// The end of the planned window (ns after the run's start), once the
    /// schedule has ended (`None` before): the first time the process
    /// drew that is not a call — the arrival after the last call, or the
    /// end of the duration if that comes first. The window `[0, end)`
    /// holds every planned call and one inter-arrival gap per call (the
    /// first call is one gap after 0), so `calls / end` estimates the rate
    /// without bias: exactly `rate` for constant arrivals, and for a
    /// Poisson process `N / S(N+1)` with `E = rate` and a relative
    /// standard deviation of `1/√N`.
    pub fn window_end(&self) -> Option<u64> {
        self.window_end
    }
}

/// The rate at which calls were actually started, calls/s, and the
/// window it is taken over, s.
///
/// `started` calls were placed, the last of them `last_start_ns` after
/// the plan's origin; the plan's window is `[0, planned_end_ns)`
/// ([`Schedule::window_end`], or the time of a cancel). The window runs
/// from the plan's origin, not from the first send, and reaches at least
/// to the last actual start:
///
/// - a generator that stalled and then sent what fell due in a burst did
///   start every call inside the window, so its achieved rate is the
///   offered one (the stall shows in the send lag, not here). Dividing by
///   the span of the actual sends instead would shrink the window by the
///   stall and read up to 2× the offered rate when half the window was
///   lost;
/// - a generator still behind at the end started its last calls after
///   the planned window: the window stretches to the last start, and the
///   achieved rate falls below the offered one by the lag;
/// - it can exceed the offered rate only by the schedule's own sampling
///   noise (none for constant arrivals, `1/√N` relative for Poisson).
pub fn achieved_rate(started: u64, planned_end_ns: u64, last_start_ns: u64) -> (f64, f64) {
    let window_ns = planned_end_ns.max(last_start_ns);
    if started == 0 || window_ns == 0 {
        return (window_ns as f64 / 1e9, 0.0);
    }
    let s = window_ns as f64 / 1e9;
    (s, started as f64 / s)
}

impl Iterator for Schedule {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        if self.window_end.is_some() {
            return None;
        }
        let t = match self.arrivals {
            Arrivals::Constant => (self.n as f64 * self.mean_ns).round() as u64,
            Arrivals::Poisson => {
                self.t += -self.rng.next_open01().ln() * self.mean_ns;
                self.t.round() as u64
            }
        };
        if self.max_calls.is_some_and(|m| self.n >= m) || self.end_ns.is_some_and(|e| t >= e) {
            self.window_end = Some(self.end_ns.map_or(t, |e| t.min(e)));
            return None;
        }
        self.n += 1;
        Some(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kolmogorov–Smirnov statistic of `xs` against F(x) = 1 − e^(−x/mean).
    fn ks_exponential(mut xs: Vec<f64>, mean: f64) -> f64 {
        xs.sort_by(f64::total_cmp);
        let n = xs.len() as f64;
        xs.iter()
            .enumerate()
            .map(|(i, &x)| {
                let f = 1.0 - (-x / mean).exp();
                (f - i as f64 / n).abs().max(((i + 1) as f64 / n - f).abs())
            })
            .fold(0.0, f64::max)
    }

    #[test]
    fn poisson_inter_arrivals_pass_kolmogorov_smirnov_at_the_configured_rate() {
        // critical value at α = 0.01: 1.628 / √n
        let n = 20_000;
        let crit = 1.628 / (n as f64).sqrt();
        for (rate, seed) in [(5_000.0, 1), (20_000.0, 2), (137.5, 3)] {
            let s: Vec<u64> =
                Schedule::new(Arrivals::Poisson, rate, seed, Some(n + 1), None).collect();
            assert_eq!(s.len() as u64, n + 1);
            let gaps: Vec<f64> = s.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
            let d = ks_exponential(gaps.clone(), 1e9 / rate);
            assert!(d < crit, "rate {rate}: D = {d:.4} ≥ {crit:.4}");
            // the wrong rate is rejected: the test has power
            let d_wrong = ks_exponential(gaps, 1e9 / (rate * 1.1));
            assert!(d_wrong > crit, "rate {rate}: D at 1.1× = {d_wrong:.4}");
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_schedule() {
        let a: Vec<u64> = Schedule::new(Arrivals::Poisson, 1000.0, 9, Some(100), None).collect();
        let b: Vec<u64> = Schedule::new(Arrivals::Poisson, 1000.0, 9, Some(100), None).collect();
        let c: Vec<u64> = Schedule::new(Arrivals::Poisson, 1000.0, 10, Some(100), None).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn the_constant_schedule_is_exact() {
        let s: Vec<u64> = Schedule::new(Arrivals::Constant, 3000.0, 0, Some(3001), None).collect();
        for (i, &t) in s.iter().enumerate() {
            assert_eq!(t, (i as f64 * 1e9 / 3000.0).round() as u64);
        }
        assert_eq!(s[3000], 1_000_000_000);
        // a duration bound ends it before the first time at or past it
        let mut d = Schedule::new(Arrivals::Constant, 1000.0, 0, None, Some(10_000_000));
        assert_eq!(d.window_end(), None);
        let times: Vec<u64> = d.by_ref().collect();
        assert_eq!(times, (0..10).map(|i| i * 1_000_000).collect::<Vec<_>>());
        assert_eq!(d.window_end(), Some(10_000_000));
        assert_eq!(d.next(), None, "an ended schedule stays ended");
    }

    #[test]
    fn the_planned_window_holds_one_gap_per_call() {
        // constant: N calls at i/rate, the window ends at N/rate
        let mut c = Schedule::new(Arrivals::Constant, 2000.0, 0, Some(500), None);
        assert_eq!(c.by_ref().count(), 500);
        assert_eq!(c.window_end(), Some(250_000_000));
        // a duration that ends before the calls do bounds the window
        let mut d = Schedule::new(Arrivals::Constant, 2000.0, 0, Some(500), Some(100_000_000));
        assert_eq!(d.by_ref().count(), 200);
        assert_eq!(d.window_end(), Some(100_000_000));
        // Poisson: N / window is within a few 1/√N of the rate
        let n = 20_000u64;
        let mut p = Schedule::new(Arrivals::Poisson, 5000.0, 4, Some(n), None);
        let last = p.by_ref().last().unwrap();
        let end = p.window_end().unwrap();
        assert!(end > last);
        let (_, r) = achieved_rate(n, end, last);
        assert!((r / 5000.0 - 1.0).abs() < 3.0 / (n as f64).sqrt(), "{r}");
    }

    #[test]
    fn the_achieved_rate_is_not_inflated_by_a_burst_after_a_stall() {
        // 1,000 calls planned over 1 s; the sender stalled for the first
        // half and sent the due calls in a burst at 0.5 s: every call
        // still started inside the planned window
        let (w, r) = achieved_rate(1000, 1_000_000_000, 999_000_000);
        assert_eq!((w, r), (1.0, 1000.0));
        // behind at the end: the last call left 0.2 s after the window
        let (w, r) = achieved_rate(1000, 1_000_000_000, 1_200_000_000);
        assert!((w - 1.2).abs() < 1e-12 && r < 1000.0, "{w} {r}");
        assert_eq!(achieved_rate(0, 1_000, 0).1, 0.0);
        assert_eq!(achieved_rate(5, 0, 0).1, 0.0);
    }
}
