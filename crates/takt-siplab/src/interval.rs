//! Confidence bounds for drop rates: Clopper–Pearson for a binomial
//! proportion and Student's t for a mean over repetitions.
//!
//! Both rest on the regularized incomplete beta function, evaluated by its
//! continued fraction (Lentz's method, as in Press et al., *Numerical
//! Recipes*, §6.4) and inverted by bisection: a few microseconds per bound,
//! exact to double precision, no tables.

/// Iterations of the continued fraction before it is declared converged.
const CF_MAX_ITER: usize = 20_000;
/// Relative precision the continued fraction stops at.
const CF_EPS: f64 = 1e-15;
/// Bisection steps when inverting a distribution function (2^-200 of the range).
const BISECT_STEPS: usize = 200;

/// The two-sided Clopper–Pearson ("exact") interval for the proportion
/// behind `k` successes in `n` trials at confidence `level` (e.g. 0.95):
/// `(lower, upper)`. With `n == 0` nothing is known: `(0, 1)`.
pub fn clopper_pearson(k: u64, n: u64, level: f64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let k = k.min(n);
    let alpha = 1.0 - level;
    let (kf, nf) = (k as f64, n as f64);
    let lower = if k == 0 {
        0.0
    } else {
        inverse(|x| inc_beta(kf, nf - kf + 1.0, x), alpha / 2.0, 0.0, 1.0)
    };
    let upper = if k == n {
        1.0
    } else {
        inverse(
            |x| inc_beta(kf + 1.0, nf - kf, x),
            1.0 - alpha / 2.0,
            0.0,
            1.0,
        )
    };
    (lower, upper)
}

/// The two-sided Student-t interval for the mean of `samples` at
/// confidence `level`: `(lower, upper)`. Fewer than two samples give no
/// spread to estimate: the interval is then the single value (or `(0, 0)`
/// for none).
pub fn student_t(samples: &[f64], level: f64) -> (f64, f64) {
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

/// The `p` quantile (p ≥ 0.5) of Student's t with `df` degrees of freedom.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    // CDF(t) = 1 - I_{df/(df+t^2)}(df/2, 1/2) / 2 for t >= 0
    let cdf = |t: f64| 1.0 - 0.5 * inc_beta(df / 2.0, 0.5, df / (df + t * t));
    inverse(cdf, p, 0.0, 1e6)
}

/// Solves `f(x) = p` for an increasing `f` on `[lo, hi]` by bisection.
fn inverse(f: impl Fn(f64) -> f64, p: f64, mut lo: f64, mut hi: f64) -> f64 {
    for _ in 0..BISECT_STEPS {
        let mid = 0.5 * (lo + hi);
        if f(mid) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The regularized incomplete beta function I_x(a, b).
pub fn inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (-x).ln_1p();
    let front = ln_front.exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(a, b, x) / a
    } else {
        1.0 - front * beta_cf(b, a, 1.0 - x) / b
    }
}

/// The continued fraction of the incomplete beta function (modified Lentz).
fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=CF_MAX_ITER {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < CF_EPS {
            break;
        }
    }
    h
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, nine coefficients: ~15 digits).
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // reflection: Γ(x)Γ(1-x) = π / sin(πx)
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut s = C[0];
    for (i, &c) in C.iter().enumerate().skip(1) {
        s += c / (x + i as f64);
    }
    let t = x + G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + s.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
    }

    #[test]
    fn gamma_matches_factorials() {
        assert!(ln_gamma(1.0).abs() < 1e-12);
        assert!(close(ln_gamma(5.0).exp(), 24.0, 1e-12));
        assert!(close(
            ln_gamma(0.5).exp(),
            std::f64::consts::PI.sqrt(),
            1e-12
        ));
    }

    #[test]
    fn incomplete_beta_known_values() {
        // I_x(1, 1) = x; I_x(a, 1) = x^a; I_x(1, b) = 1 - (1-x)^b
        assert!(close(inc_beta(1.0, 1.0, 0.3), 0.3, 1e-12));
        assert!(close(inc_beta(3.0, 1.0, 0.4), 0.064, 1e-12));
        assert!(close(inc_beta(1.0, 5.0, 0.2), 1.0 - 0.8f64.powi(5), 1e-12));
    }

    #[test]
    fn t_quantiles_match_tables() {
        // two-sided 95%: df 1, 4, 29, and large df -> 1.96
        assert!(close(t_quantile(0.975, 1.0), 12.706_204_736, 1e-6));
        assert!(close(t_quantile(0.975, 4.0), 2.776_445_105, 1e-6));
        assert!(close(t_quantile(0.975, 29.0), 2.045_229_642, 1e-6));
        assert!(close(t_quantile(0.975, 1e6), 1.959_966, 1e-4));
    }

    #[test]
    fn clopper_pearson_known_values() {
        // zero events in n: upper = 1 - 0.025^(1/n) (the "rule of three" at 97.5%)
        let (lo, hi) = clopper_pearson(0, 1000, 0.95);
        assert_eq!(lo, 0.0);
        assert!(close(hi, 1.0 - 0.025f64.powf(1.0 / 1000.0), 1e-9), "{hi}");
        // 5 of 100: R's binom.test gives [0.01643, 0.11284]
        let (lo, hi) = clopper_pearson(5, 100, 0.95);
        assert!(close(lo, 0.016_431, 1e-3), "{lo}");
        assert!(close(hi, 0.112_835, 1e-3), "{hi}");
        // large n, small k stays accurate and ordered
        let (lo, hi) = clopper_pearson(3_000, 350_000, 0.95);
        let p = 3_000.0 / 350_000.0;
        assert!(lo < p && p < hi && hi < 0.0091, "{lo} {hi}");
        assert_eq!(clopper_pearson(0, 0, 0.95), (0.0, 1.0));
        assert_eq!(clopper_pearson(7, 7, 0.95).1, 1.0);
    }

    #[test]
    fn student_t_interval() {
        let (lo, hi) = student_t(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.95);
        // mean 3, s = 1.5811, t(4) = 2.7764 -> half-width 1.9632
        assert!(close(lo, 3.0 - 1.963_243, 1e-5) && close(hi, 3.0 + 1.963_243, 1e-5));
        assert_eq!(student_t(&[2.0], 0.95), (2.0, 2.0));
        assert_eq!(student_t(&[], 0.95), (0.0, 0.0));
    }
}
