//! Confidence bounds for a binomial proportion (a drop rate from `k`
//! losses in `n` messages).

use super::special::{inc_beta, inverse};

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

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
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
}
