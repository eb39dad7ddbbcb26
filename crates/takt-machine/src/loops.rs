//! Loop overhead (report §3.2): the cost of one iteration of an empty
//! counted loop, over loop lengths 0–50.
//!
//! Each sample times every length 0..=50 (median of 9 bracketed runs per
//! length) and fits a least-squares line: the slope is one sample of the
//! per-iteration cost, the intercept is the timer bracket plus loop set-up.
//! The loop body is `black_box(i)`, which keeps the counter in memory the
//! way the report's `-O0` loop did, but without its loads.

use std::time::Duration;

use serde_json::json;

use crate::kinds;
use crate::stats::{collect, ticks_ns, Estimate};
use crate::timer::pin_current;
use crate::Ctx;

/// Longest loop measured (the report's range).
pub(crate) const MAX_LEN: usize = 50;
/// Bracketed runs per length; their median is the length's time.
const RUNS_PER_LEN: usize = 9;

#[inline(never)]
fn empty_loop(n: usize) {
    for i in 0..n {
        std::hint::black_box(i);
    }
}

/// Least-squares fit `y = a + b x`; returns `(a, b)`.
pub(crate) fn fit_line(points: &[(f64, f64)]) -> (f64, f64) {
    let n = points.len() as f64;
    if points.len() < 2 {
        return (points.first().map_or(0.0, |p| p.1), 0.0);
    }
    let (sx, sy) = points
        .iter()
        .fold((0.0, 0.0), |(a, b), &(x, y)| (a + x, b + y));
    let (mx, my) = (sx / n, sy / n);
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for &(x, y) in points {
        sxy += (x - mx) * (y - my);
        sxx += (x - mx) * (x - mx);
    }
    let b = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    (my - b * mx, b)
}

fn one_curve() -> Vec<f64> {
    let mut curve = Vec::with_capacity(MAX_LEN + 1);
    let mut runs = [0.0f64; RUNS_PER_LEN];
    for len in 0..=MAX_LEN {
        for r in runs.iter_mut() {
            let n = std::hint::black_box(len);
            let t0 = crate::stats::start();
            empty_loop(n);
            let t1 = takt_sched::tsc_end();
            *r = ticks_ns(t0, t1);
        }
        curve.push(takt_measure::stats::median(&runs));
    }
    curve
}

pub(crate) fn run(ctx: &mut Ctx) {
    let _pin = pin_current(0);
    let ghz = ctx.core_ghz();
    let mut curves: Vec<Vec<f64>> = Vec::new();
    let mut intercepts = Vec::new();
    let (samples, cpu) = collect(3, 20, 3000, ctx.budget(Duration::from_secs(2)), || {
        let c = one_curve();
        let pts: Vec<(f64, f64)> = c.iter().enumerate().map(|(i, &y)| (i as f64, y)).collect();
        let (a, b) = fit_line(&pts);
        intercepts.push(a);
        curves.push(c);
        b
    });
    let curve: Vec<f64> = (0..=MAX_LEN)
        .map(|i| takt_measure::stats::median(&curves.iter().map(|c| c[i]).collect::<Vec<_>>()))
        .collect();
    ctx.push(
        kinds::LOOP_OVERHEAD.sampled("empty counted loop, lengths 0-50, median of 9 fenced-TSC runs per length; slope of a least-squares line",
        )
        .estimate(Estimate::new(
            1.0 / ghz,
            format!(
                "4 instructions per iteration (store, add, cmp, jcc) retire in one cycle on a 4-wide core; only the add is loop-carried (1 cycle); at {ghz:.2} GHz"
            ),
        ))
        .published(6.3)
        .extra("curve_ns", json!(curve))
        .extra(
            "intercept_ns",
            takt_measure::stats::median(&intercepts),
        )
        .with_samples(samples, cpu),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_fit_recovers_slope_and_intercept() {
        let pts: Vec<(f64, f64)> = (0..=50)
            .map(|x| (x as f64, 20.0 + 0.5 * x as f64))
            .collect();
        let (a, b) = fit_line(&pts);
        assert!((a - 20.0).abs() < 1e-9 && (b - 0.5).abs() < 1e-9, "{a} {b}");
        assert_eq!(fit_line(&[(1.0, 3.0)]), (3.0, 0.0));
    }
}
