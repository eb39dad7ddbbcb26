//! The Mann–Whitney U test (Wilcoxon rank-sum), two-sided.
//!
//! Without ties and with both samples of at most [`EXACT_LIMIT`] values,
//! the p-value is exact: the null distribution of U is counted by the
//! recurrence `c(m, n, u) = c(m-1, n, u-n) + c(m, n-1, u)` (Mann and
//! Whitney, 1947). Otherwise it is the normal approximation with the tie
//! correction of the variance and a continuity correction, as R's
//! `wilcox.test` computes it.

/// Largest sample size for which the exact distribution is counted.
pub(crate) const EXACT_LIMIT: usize = 50;

/// The two-sided p-value of the hypothesis that `x` and `y` come from the
/// same distribution; `None` if either is empty or a value is not finite.
pub fn mann_whitney_p(x: &[f64], y: &[f64]) -> Option<f64> {
    let (m, n) = (x.len(), y.len());
    if m == 0 || n == 0 || x.iter().chain(y).any(|v| !v.is_finite()) {
        return None;
    }
    // Midranks of the pooled sample.
    let mut pooled: Vec<(f64, bool)> = x
        .iter()
        .map(|&v| (v, true))
        .chain(y.iter().map(|&v| (v, false)))
        .collect();
    pooled.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total = m + n;
    let mut rank_sum_x = 0.0;
    let mut tie_term = 0.0; // sum of t^3 - t over tie groups
    let mut i = 0;
    while i < total {
        let mut j = i;
        while j + 1 < total && pooled[j + 1].0 == pooled[i].0 {
            j += 1;
        }
        let t = (j - i + 1) as f64;
        let midrank = (i + j) as f64 / 2.0 + 1.0;
        rank_sum_x += midrank * pooled[i..=j].iter().filter(|p| p.1).count() as f64;
        tie_term += t * t * t - t;
        i = j + 1;
    }
    let u = rank_sum_x - (m * (m + 1)) as f64 / 2.0;
    let (mf, nf) = (m as f64, n as f64);
    if tie_term == 0.0 && m <= EXACT_LIMIT && n <= EXACT_LIMIT {
        return Some(exact_two_sided(m, n, u.round() as usize));
    }
    let mean = mf * nf / 2.0;
    let var =
        mf * nf / 12.0 * ((total + 1) as f64 - tie_term / (total as f64 * (total as f64 - 1.0)));
    if var <= 0.0 {
        // Every value equal: no evidence of a difference.
        return Some(1.0);
    }
    let d = u - mean;
    let z = (d.abs() - 0.5).max(0.0) / var.sqrt();
    Some((2.0 * normal_upper_tail(z)).min(1.0))
}

/// Exact two-sided p-value of U = `u` for sample sizes `m`, `n`: twice the
/// smaller tail, capped at 1.
fn exact_two_sided(m: usize, n: usize, u: usize) -> f64 {
    let max_u = m * n;
    // c(a, b, v): orderings of a x-values and b y-values with U = v, where
    // c(a, b, v) = c(a-1, b, v-b) + c(a, b-1, v). `prev` holds b-1, `cur`
    // holds b; f64 counts C(100, 50) ~ 1e29 without overflow.
    let mut prev = vec![vec![0.0f64; max_u + 1]; m + 1];
    for plane in prev.iter_mut() {
        plane[0] = 1.0; // b = 0: one ordering, U = 0
    }
    let mut cur = prev.clone();
    for b in 1..=n {
        for a in 0..=m {
            for v in 0..=max_u {
                let with_x_last = if a > 0 && v >= b {
                    cur[a - 1][v - b]
                } else {
                    0.0
                };
                cur[a][v] = with_x_last + prev[a][v];
            }
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    let dist = &prev[m];
    let u = u.min(max_u);
    let all: f64 = dist.iter().sum();
    let lower: f64 = dist[..=u].iter().sum::<f64>() / all;
    let upper: f64 = dist[u..].iter().sum::<f64>() / all;
    (2.0 * lower.min(upper)).min(1.0)
}

/// P(Z > z) for a standard normal Z (Abramowitz–Stegun 7.1.26 for erfc,
/// absolute error below 1.5e-7).
fn normal_upper_tail(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erfc = poly * (-x * x).exp();
    let erfc = if x >= 0.0 { erfc } else { 2.0 - erfc };
    erfc / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn exact_values_match_the_tables() {
        // 5 vs 5 fully separated: U = 0, p = 2 / C(10, 5) = 2/252.
        let p = mann_whitney_p(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]).unwrap();
        assert!(close(p, 2.0 / 252.0, 1e-12), "{p}");
        // One overlap: U = 1, p = 2 * 2/252.
        let p = mann_whitney_p(&[1.0, 2.0, 3.0, 4.0, 6.5], &[6.0, 7.0, 8.0, 9.0, 10.0]).unwrap();
        assert!(close(p, 4.0 / 252.0, 1e-12), "{p}");
        // 9 vs 9, checked by enumerating all C(18, 9) orderings: p = 0.135911.
        let x = [1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30];
        let y = [0.878, 0.647, 0.598, 2.05, 1.061, 1.29, 1.06, 3.15, 1.291];
        let p = mann_whitney_p(&x, &y).unwrap();
        assert!(close(p, 0.135_911, 1e-6), "{p}");
        // Symmetric in its arguments.
        assert!(close(mann_whitney_p(&y, &x).unwrap(), p, 1e-12));
    }

    #[test]
    fn interleaved_samples_are_not_significant() {
        let p = mann_whitney_p(&[1.0, 3.0, 5.0, 7.0, 9.0], &[2.0, 4.0, 6.0, 8.0, 10.0]).unwrap();
        assert!(p > 0.5, "{p}");
    }

    #[test]
    fn ties_use_the_corrected_normal_approximation() {
        // U = 1.5, tie-corrected variance, continuity correction: p = 0.008733.
        let p = mann_whitney_p(
            &[1.0, 2.0, 2.0, 3.0, 3.0, 3.0],
            &[3.0, 4.0, 4.0, 5.0, 5.0, 6.0],
        )
        .unwrap();
        assert!(close(p, 0.008_733, 1e-5), "{p}");
        assert_eq!(mann_whitney_p(&[2.0, 2.0], &[2.0, 2.0]), Some(1.0));
        assert_eq!(mann_whitney_p(&[], &[1.0]), None);
        assert_eq!(mann_whitney_p(&[f64::NAN], &[1.0]), None);
    }
}
