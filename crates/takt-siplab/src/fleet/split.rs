//! Splitting one trial's Poisson load over the UAC agents.
//!
//! The sum of independent Poisson processes is a Poisson process whose
//! rate is the sum of theirs (superposition). So a trial at `λ` calls/s
//! over `n` agents gives agent `i` a Poisson stream of its own at
//! `λ·wᵢ/Σw` (equal weights: `λ/n`), seeded from the trial's seed and
//! `i` through SplitMix64 — streams that are independent and reproducible
//! — and the server sees one Poisson stream at `λ`. The test below checks
//! that claim on the generator's own schedules with a Kolmogorov–Smirnov
//! test of the merged inter-arrival gaps.

/// Each UAC agent's rate: `total` split equally over `n` agents.
pub fn shares(total: f64, n: usize) -> Vec<f64> {
    vec![total / n.max(1) as f64; n]
}

/// SplitMix64's finalizer: a bijection that scatters nearby inputs.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Agent `index`'s seed in a trial seeded `trial_seed`.
pub fn agent_seed(trial_seed: u64, index: u32) -> u64 {
    mix(trial_seed ^ mix(u64::from(index).wrapping_add(0x9e37_79b9_7f4a_7c15)))
}

/// Agent `index`'s run id in trial `trial`: the top byte marks a fleet's
/// calls, the next 16 bits the trial, the low byte the agent (a fleet has
/// at most 256 agents).
pub fn run_id(trial: u32, index: u32) -> u32 {
    0xf1 << 24 | (trial & 0xffff) << 8 | (index & 0xff)
}

/// The run id of the second stream of the agent whose run id is `run`
/// (top byte `0xf2` instead of `0xf1`).
pub fn stream_run_id(run: u32) -> u32 {
    (run & 0x00ff_ffff) | 0xf2 << 24
}

/// The trial seed of trial `trial`.
pub fn trial_seed(trial: u32) -> u64 {
    mix(0x7a6b_7400_0000_0000 | u64::from(trial))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::{Arrivals, Schedule};
    use takt_measure::stats::ks_test;

    /// The merged arrivals of several agents' Poisson streams are Poisson
    /// at the total rate: their gaps pass a KS test against the
    /// exponential at that rate.
    #[test]
    fn merged_streams_are_poisson_at_the_total_rate() {
        let total = 3_000.0;
        for agents in [2u32, 3] {
            let rates = shares(total, agents as usize);
            // 10 s of calls: 30,000 arrivals
            let end_ns = 10_000_000_000;
            let mut times: Vec<u64> = Vec::new();
            for (i, &r) in rates.iter().enumerate() {
                let seed = agent_seed(trial_seed(7), i as u32);
                times.extend(Schedule::new(
                    Arrivals::Poisson,
                    r,
                    seed,
                    None,
                    Some(end_ns),
                ));
            }
            times.sort_unstable();
            assert!(times.len() >= 10_000, "{} arrivals", times.len());
            let gaps: Vec<f64> = times
                .windows(2)
                .map(|w| (w[1] - w[0]) as f64 / 1e9)
                .collect();
            let exp = |x: f64| 1.0 - (-total * x.max(0.0)).exp();
            let r = ks_test(&gaps, exp).unwrap();
            assert!(r.p > 0.01, "{agents} agents: D = {}, p = {}", r.d, r.p);
            // and the test can tell: the same gaps against twice the rate
            let wrong = |x: f64| 1.0 - (-2.0 * total * x.max(0.0)).exp();
            assert!(ks_test(&gaps, wrong).unwrap().p < 1e-6);
        }
    }

    #[test]
    fn seeds_and_run_ids_differ_per_agent_and_trial() {
        let s: Vec<u64> = (0..4).map(|i| agent_seed(1, i)).collect();
        for (i, a) in s.iter().enumerate() {
            assert!(s[i + 1..].iter().all(|b| b != a));
        }
        assert_ne!(agent_seed(1, 0), agent_seed(2, 0));
        assert_eq!(run_id(0x1234, 3), 0xf112_3403);
        assert_eq!(stream_run_id(run_id(0x1234, 3)), 0xf212_3403);
        assert_ne!(run_id(1, 0), run_id(2, 0));
        assert_eq!(shares(3_000.0, 3), vec![1_000.0; 3]);
    }
}
