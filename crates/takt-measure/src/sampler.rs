//! Repetition: warm-up, independent runs, and the CPU price of each.

use std::time::Duration;

/// How many times to run a measurement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repetitions {
    /// Runs discarded before measuring (first touch, caches, frequency).
    pub warmup: usize,
    /// Measured runs; result documents want at least 5 (see the README).
    pub runs: usize,
}

impl Repetitions {
    /// The default: 1 warm-up, 5 measured runs.
    pub const DEFAULT: Repetitions = Repetitions { warmup: 1, runs: 5 };
}

impl Default for Repetitions {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Samples of one measurement and the CPU time each run cost.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// One value per measured run.
    pub samples: Vec<f64>,
    /// Mean process CPU time (user + system, all threads) per measured run, seconds.
    pub cpu_s: f64,
    /// Mean wall time per measured run.
    pub wall: Duration,
}

/// Runs `run` `warmup + runs` times; each call returns its own sample (e.g.
/// ns per message, computed from the run's own timing so set-up outside the
/// timed region is excluded).
pub fn measure(reps: Repetitions, mut run: impl FnMut() -> f64) -> Measured {
    for _ in 0..reps.warmup {
        std::hint::black_box(run());
    }
    let mut samples = Vec::with_capacity(reps.runs);
    let cpu0 = takt_sched::process_cpu_time();
    let t0 = std::time::Instant::now();
    for _ in 0..reps.runs.max(1) {
        samples.push(run());
    }
    let n = samples.len() as u32;
    let cpu = takt_sched::process_cpu_time().saturating_sub(cpu0);
    Measured {
        samples,
        cpu_s: cpu.as_secs_f64() / n as f64,
        wall: t0.elapsed() / n,
    }
}
