//! Student's t: its quantile for any probability and degrees of freedom,
//! the t interval of a mean, and the paired t-test.
//!
//! The distribution function is `1 − I_{df/(df+t²)}(df/2, 1/2) / 2` for
//! t ≥ 0 (the regularized incomplete beta function,
//! [`inc_beta`](super::inc_beta)); quantiles invert it by bisection,
//! exact to double precision.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

use super::special::{inc_beta, inverse};

/// Upper end of the bisection bracket for a quantile: t(0.9999995, 1) is
/// about 6.4 × 10⁵.
const T_MAX: f64 = 1e6;

/// The `p` quantile of Student's t with `df` degrees of freedom (`df` > 0,
/// fractional allowed): the `t` with P(T ≤ t) = p. Symmetric about 0;
/// `p` outside (0, 1) gives ∓∞.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    if p == 0.5 {
        return 0.0;
    }
    if p < 0.5 {
        return -t_quantile(1.0 - p, df);
    }
    let cdf = |t: f64| 1.0 - 0.5 * inc_beta(df / 2.0, 0.5, df / (df + t * t));
    inverse(cdf, p, 0.0, T_MAX)
}

/// Degrees of freedom whose 97.5% quantile is kept once computed (every
/// row's 95% interval asks for one; a quantile costs tens of µs).
const CACHED_DF: usize = 256;
/// The kept quantiles' bits, 0 until computed. Relaxed: each entry is a
/// stand-alone value that any thread may compute again identically.
static T975: [AtomicU64; CACHED_DF] = [const { AtomicU64::new(0) }; CACHED_DF];

/// The 97.5% quantile of Student's t with `df` degrees of freedom (the
/// factor of a two-sided 95% interval); infinite for `df` = 0.
pub fn t_quantile_975(df: usize) -> f64 {
    match df {
        0 => f64::INFINITY,
        1..CACHED_DF => {
            let bits = T975[df].load(Ordering::Relaxed);
            if bits != 0 {
                return f64::from_bits(bits);
            }
            let q = t_quantile(0.975, df as f64);
            T975[df].store(q.to_bits(), Ordering::Relaxed);
            q
        }
        _ => t_quantile(0.975, df as f64),
    }
}

/// The two-sided p-value of a t statistic with `df` degrees of freedom.
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    inc_beta(df / 2.0, 0.5, df / (df + t * t))
}

/// The two-sided Student-t interval for the mean of `samples` at
/// confidence `level` (e.g. 0.95): `(lower, upper)`. Fewer than two
/// samples give no spread to estimate: the interval is then the single
/// value (or `(0, 0)` for none).
pub fn t_interval(samples: &[f64], level: f64) -> (f64, f64) {
    let n = samples.len();
    if n == 0 {
        return (0.0, 0.0);
    }
    let mean = samples.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return (mean, mean);
    }
    let var = samples.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let half = t_quantile(1.0 - (1.0 - level) / 2.0, (n - 1) as f64) * (var / n as f64).sqrt();
    (mean - half, mean + half)
}

/// A paired comparison: mean difference and its 95% interval, and the
/// two-sided p-value of "no difference" (paired Student's t).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Paired {
    /// Pairs.
    pub n: usize,
    /// Mean of a (the baseline).
    pub mean_a: f64,
    /// Mean of b.
    pub mean_b: f64,
    /// Mean of a − b.
    pub diff: f64,
    /// 95% interval of the mean difference.
    pub diff_ci95: [f64; 2],
    /// Two-sided p-value (1 when every difference is equal and zero).
    pub p: f64,
}

impl Paired {
    /// `100 (a − b) / a`: how much lower b is than a, %, with the
    /// interval scaled alike; `None` when a's mean is 0.
    pub fn pct_lower(&self) -> Option<(f64, [f64; 2])> {
        (self.mean_a != 0.0).then(|| {
            let s = 100.0 / self.mean_a;
            (
                self.diff * s,
                [self.diff_ci95[0] * s, self.diff_ci95[1] * s],
            )
        })
    }
}

/// Paired Student's t over `a[i] − b[i]` (the first `min(len)` pairs);
/// `None` with fewer than 2 pairs.
pub fn paired_t(a: &[f64], b: &[f64]) -> Option<Paired> {
    let n = a.len().min(b.len());
    if n < 2 {
        return None;
    }
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    let m = d.iter().sum::<f64>() / n as f64;
    let var = d.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1) as f64;
    let se = (var / n as f64).sqrt();
    let df = (n - 1) as f64;
    let q = t_quantile(0.975, df);
    let p = if se == 0.0 {
        if m == 0.0 {
            1.0
        } else {
            0.0
        }
    } else {
        t_two_sided_p(m / se, df)
    };
    Some(Paired {
        n,
        mean_a: a[..n].iter().sum::<f64>() / n as f64,
        mean_b: b[..n].iter().sum::<f64>() / n as f64,
        diff: m,
        diff_ci95: [m - q * se, m + q * se],
        p,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
    }

    /// Two-sided 97.5% quantiles for 1..=30 degrees of freedom, as printed
    /// in the usual tables (three decimals).
    const T975_TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];

    #[test]
    fn quantiles_match_the_975_table() {
        for (i, &t) in T975_TABLE.iter().enumerate() {
            let q = t_quantile_975(i + 1);
            assert!((q - t).abs() <= 0.0005, "df {}: {q} vs {t}", i + 1);
            // kept: the second call returns the same value
            assert_eq!(t_quantile_975(i + 1), q);
            assert_eq!(q, t_quantile(0.975, (i + 1) as f64));
        }
        assert_eq!(t_quantile_975(0), f64::INFINITY);
        assert!((t_quantile_975(60) - 2.000).abs() < 0.0005);
        assert!((t_quantile_975(120) - 1.980).abs() < 0.0005);
        assert!((t_quantile_975(10_000) - 1.960).abs() < 0.001);
    }

    #[test]
    fn quantiles_match_tables_at_other_probabilities() {
        // p = 0.90, 0.95, 0.975, 0.99, 0.995 for df 1, 2, 5, 10, 30, ∞
        let table: [(f64, [f64; 5]); 6] = [
            (1.0, [3.078, 6.314, 12.706, 31.821, 63.657]),
            (2.0, [1.886, 2.920, 4.303, 6.965, 9.925]),
            (5.0, [1.476, 2.015, 2.571, 3.365, 4.032]),
            (10.0, [1.372, 1.812, 2.228, 2.764, 3.169]),
            (30.0, [1.310, 1.697, 2.042, 2.457, 2.750]),
            (1e7, [1.282, 1.645, 1.960, 2.326, 2.576]),
        ];
        for (df, row) in table {
            for (p, t) in [0.90, 0.95, 0.975, 0.99, 0.995].into_iter().zip(row) {
                let q = t_quantile(p, df);
                assert!((q - t).abs() <= 0.0005, "t({p}, {df}) = {q}, table {t}");
                assert!(close(t_quantile(1.0 - p, df), -q, 1e-12));
            }
        }
        // more digits where they are known
        assert!(close(t_quantile(0.975, 1.0), 12.706_204_736, 1e-6));
        assert!(close(t_quantile(0.975, 4.0), 2.776_445_105, 1e-6));
        assert!(close(t_quantile(0.975, 29.0), 2.045_229_642, 1e-6));
        assert!(close(t_quantile(0.975, 1e6), 1.959_966, 1e-4));
        assert_eq!(t_quantile(0.5, 3.0), 0.0);
        assert_eq!(t_quantile(1.0, 3.0), f64::INFINITY);
        assert_eq!(t_quantile(0.0, 3.0), f64::NEG_INFINITY);
    }

    #[test]
    fn t_interval_of_a_mean() {
        let (lo, hi) = t_interval(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.95);
        // mean 3, s = 1.5811, t(4) = 2.7764 -> half-width 1.9632
        assert!(close(lo, 3.0 - 1.963_243, 1e-5) && close(hi, 3.0 + 1.963_243, 1e-5));
        assert_eq!(t_interval(&[2.0], 0.95), (2.0, 2.0));
        assert_eq!(t_interval(&[], 0.95), (0.0, 0.0));
    }

    #[test]
    fn paired_t_known_cases() {
        // no difference: p = 1; too few pairs: none
        let same = paired_t(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]).unwrap();
        assert_eq!(same.p, 1.0);
        assert!(paired_t(&[1.0], &[2.0]).is_none());
        // d = [1, 2, 3], t = 2 / (1/sqrt 3) = 3.464, df 2 → p ≈ 0.0742
        let k = paired_t(&[2.0, 4.0, 6.0], &[1.0, 2.0, 3.0]).unwrap();
        assert!((k.p - 0.0742).abs() < 1e-3, "{}", k.p);
        assert_eq!(k.diff, 2.0);
        // half-width t(0.975, 2) * 1/sqrt(3) = 4.303 * 0.57735
        assert!(close(k.diff_ci95[1] - 2.0, 4.302_653 * 0.577_350_3, 1e-5));
        let (pct, ci) = k.pct_lower().unwrap();
        assert!(close(pct, 50.0, 1e-12) && ci[0] < pct && pct < ci[1]);
        // a constant non-zero difference: p = 0
        assert_eq!(paired_t(&[2.0, 3.0], &[1.0, 2.0]).unwrap().p, 0.0);
    }
}
