//! The one-sample Kolmogorov–Smirnov test: do samples follow a given
//! continuous distribution? The statistic is the largest distance between
//! the samples' empirical CDF and the hypothesised one; its p-value comes
//! from Kolmogorov's limiting distribution with Stephens' small-sample
//! correction, `λ = (√n + 0.12 + 0.11/√n)·D` (Numerical Recipes, 3rd ed.,
//! §14.3.3): accurate to a few percent for n ≥ 4, which is all a test
//! against a 1% level needs.

/// The statistic `d` and its p-value `p` (the probability of a distance
/// at least `d` if the samples follow the distribution).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KsResult {
    /// Largest |empirical CDF − hypothesised CDF|.
    pub d: f64,
    /// Its p-value.
    pub p: f64,
}

/// Tests `samples` against the continuous CDF `cdf`; `None` for no
/// samples or a NaN among them.
pub fn ks_test(samples: &[f64], cdf: impl Fn(f64) -> f64) -> Option<KsResult> {
    if samples.is_empty() || samples.iter().any(|x| x.is_nan()) {
        return None;
    }
    let mut x = samples.to_vec();
    x.sort_by(f64::total_cmp);
    let n = x.len() as f64;
    let mut d = 0.0f64;
    for (i, &v) in x.iter().enumerate() {
        let f = cdf(v);
        d = d.max((i as f64 + 1.0) / n - f).max(f - i as f64 / n);
    }
    let sn = n.sqrt();
    Some(KsResult {
        d,
        p: kolmogorov_q((sn + 0.12 + 0.11 / sn) * d),
    })
}

/// Kolmogorov's survival function `Q(λ) = 2 Σ (−1)^(k−1) e^(−2k²λ²)`.
fn kolmogorov_q(lambda: f64) -> f64 {
    // below 0.2 the series converges slowly and Q differs from 1 by
    // less than 1e-20
    if lambda < 0.2 {
        return 1.0;
    }
    let mut sum = 0.0;
    let mut sign = 1.0;
    for k in 1..=100 {
        let k = k as f64;
        let term = sign * (-2.0 * k * k * lambda * lambda).exp();
        sum += term;
        if term.abs() < 1e-12 {
            break;
        }
        sign = -sign;
    }
    (2.0 * sum).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kolmogorov_tail_matches_the_tables() {
        // the 5% and 1% critical values of the limiting distribution
        assert!((kolmogorov_q(1.358) - 0.05).abs() < 1e-3);
        assert!((kolmogorov_q(1.628) - 0.01).abs() < 1e-3);
        assert_eq!(kolmogorov_q(0.0), 1.0);
    }

    #[test]
    fn uniform_samples_pass_and_shifted_ones_fail() {
        let n = 10_000;
        // a low-discrepancy sequence: as uniform as samples get
        let u: Vec<f64> = (0..n).map(|i| (i as f64 + 0.5) / n as f64).collect();
        let uniform = |x: f64| x.clamp(0.0, 1.0);
        assert!(ks_test(&u, uniform).unwrap().p > 0.99);
        let shifted: Vec<f64> = u.iter().map(|x| x * 0.9).collect();
        assert!(ks_test(&shifted, uniform).unwrap().p < 1e-6);
        assert!(ks_test(&[], uniform).is_none());
    }
}
