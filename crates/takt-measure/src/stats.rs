//! Summary statistics over independent repetitions.

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

/// Two-sided 97.5% quantiles of Student's t for 1..=30 degrees of freedom.
const T975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// The 97.5% quantile of Student's t with `df` degrees of freedom.
///
/// Exact table values up to 30; beyond, interpolated linearly in `1/df`
/// between 30 (2.042) and infinity (1.960), which is within 0.2% of the true
/// quantile.
pub fn t_quantile_975(df: usize) -> f64 {
    match df {
        0 => f64::INFINITY,
        1..=30 => T975[df - 1],
        _ => 1.960 + (2.042 - 1.960) * 30.0 / df as f64,
    }
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
    fn t_quantiles() {
        assert_eq!(t_quantile_975(4), 2.776);
        assert!((t_quantile_975(60) - 2.001).abs() < 0.005);
        assert!((t_quantile_975(10_000) - 1.960).abs() < 0.001);
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
