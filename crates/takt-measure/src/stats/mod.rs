//! All of takt's statistics: summaries of repetitions, Student's t
//! (quantiles, intervals, the paired test), binomial bounds and the
//! Mann–Whitney rank test.
//!
//! | question | function |
//! |---|---|
//! | median, spread, 95% interval of a row's runs | [`Summary::of`] |
//! | a quantile of samples | [`quantile`], [`median`] |
//! | Student's t quantile, any p and df | [`t_quantile`] ([`t_quantile_975`] for 95% intervals) |
//! | interval of a mean at any confidence | [`t_interval`] |
//! | did b change from a, run for run? | [`paired_t`] → [`Paired`] |
//! | do two sets of runs differ (no pairing, no normality)? | [`mann_whitney_p`] |
//! | bounds of a drop rate from k of n | [`clopper_pearson`] |
//! | do samples follow a given distribution? | [`ks_test`] (Kolmogorov–Smirnov) |
//!
//! The distributions rest on the regularized incomplete beta function
//! ([`inc_beta`]), evaluated by its continued fraction and inverted by
//! bisection: exact to double precision, no tables. The tests check them
//! against the printed tables.
//!
//! ```
//! use takt_measure::stats::{paired_t, t_quantile, Summary};
//!
//! assert!((t_quantile(0.975, 4.0) - 2.776).abs() < 5e-4);
//! let s = Summary::of(&[12.1, 12.4, 12.3, 13.0, 12.2]);
//! assert!(s.ci95[0] < s.mean && s.mean < s.ci95[1]);
//! let before = [10.0, 11.0, 10.5, 10.8];
//! let after = [9.0, 10.1, 9.4, 9.9];
//! let p = paired_t(&before, &after).unwrap();
//! assert!(p.diff > 0.0 && p.p < 0.05);
//! ```

mod binomial;
mod ks;
mod mann_whitney;
mod special;
mod student_t;

pub use binomial::clopper_pearson;
pub use ks::{ks_test, KsResult};
pub use mann_whitney::mann_whitney_p;
pub use special::{inc_beta, ln_gamma};
pub use student_t::{paired_t, t_interval, t_quantile, t_quantile_975, t_two_sided_p, Paired};

use serde::{Deserialize, Serialize};

/// Median, spread and the Student-t 95% confidence interval of the mean.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Middle value (mean of the two middle values for an even count).
    pub median: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (n − 1); 0 for one sample.
    pub stddev: f64,
    /// Student-t 95% confidence interval of the mean.
    pub ci95: [f64; 2],
    /// Number of samples.
    pub runs: usize,
}

/// The median of `samples` (which need not be sorted); `NaN` when empty.
pub fn median(samples: &[f64]) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The arithmetic mean of `samples`, or `None` when there are none.
pub fn mean(samples: &[f64]) -> Option<f64> {
    (!samples.is_empty()).then(|| samples.iter().sum::<f64>() / samples.len() as f64)
}

/// The `p`-quantile (0..=1) by nearest rank: the smallest sample with at
/// least a fraction `p` of the samples at or below it (always a sample
/// itself, never interpolated), or `None` when there are none.
pub fn nearest_rank(samples: &[f64], p: f64) -> Option<f64> {
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let i = ((p * v.len() as f64).ceil() as usize).clamp(1, v.len().max(1)) - 1;
    v.get(i).copied()
}

/// The `q`-quantile (0..=1) by linear interpolation between order statistics.
pub fn quantile(samples: &[f64], q: f64) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let pos = q.clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
}

impl Summary {
    /// Summarizes `samples`.
    ///
    /// # Panics
    /// If `samples` is empty.
    pub fn of(samples: &[f64]) -> Summary {
        assert!(!samples.is_empty(), "no samples to summarize");
        let n = samples.len();
        let mean = samples.iter().sum::<f64>() / n as f64;
        let var = if n > 1 {
            samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        let stddev = var.sqrt();
        let half = if n > 1 {
            t_quantile_975(n - 1) * stddev / (n as f64).sqrt()
        } else {
            0.0
        };
        Summary {
            median: median(samples),
            min: samples.iter().copied().fold(f64::INFINITY, f64::min),
            max: samples.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            mean,
            stddev,
            ci95: [mean - half, mean + half],
            runs: n,
        }
    }

    /// Half-width of the confidence interval relative to the mean.
    pub fn relative_ci(&self) -> f64 {
        (self.ci95[1] - self.ci95[0]) / 2.0 / self.mean.abs()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_nearest_rank_of_known_samples() {
        assert_eq!(mean(&[]), None);
        assert_eq!(mean(&[1.0, 2.0, 6.0]), Some(3.0));
        let v = [5.0, 1.0, 4.0, 2.0, 3.0];
        assert_eq!(nearest_rank(&v, 0.5), Some(3.0));
        assert_eq!(nearest_rank(&v, 0.0), Some(1.0));
        assert_eq!(nearest_rank(&v, 0.99), Some(5.0));
        assert_eq!(nearest_rank(&v, 0.2), Some(1.0));
        assert_eq!(nearest_rank(&[], 0.5), None);
    }

    #[test]
    fn summary_of_known_samples() {
        let s = Summary::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!(s.median, 4.5);
        assert_eq!(s.mean, 5.0);
        assert_eq!((s.min, s.max), (2.0, 9.0));
        assert!((s.stddev - 2.138).abs() < 1e-3);
        // t(7) = 2.365; half-width = 2.365 * 2.138 / sqrt(8) = 1.788
        assert!((s.ci95[0] - 3.212).abs() < 1e-2, "{:?}", s.ci95);
        assert!((s.ci95[1] - 6.788).abs() < 1e-2, "{:?}", s.ci95);
    }

    #[test]
    fn single_sample_has_zero_width() {
        let s = Summary::of(&[3.0]);
        assert_eq!(s.ci95, [3.0, 3.0]);
        assert_eq!(s.stddev, 0.0);
    }

    #[test]
    fn quantiles_interpolate() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(quantile(&v, 0.5), 3.0);
        assert_eq!(quantile(&v, 0.0), 1.0);
        assert_eq!(quantile(&v, 1.0), 5.0);
        assert_eq!(quantile(&v, 0.25), 2.0);
        assert!(median(&[]).is_nan());
    }
}
