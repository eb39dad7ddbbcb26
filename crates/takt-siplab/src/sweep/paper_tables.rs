//! The paper's tables from a sweep's measurements — pure functions over
//! plain data, so that they are tested on fixtures.
//!
//! - **Tables I and II** ([`crossing`]): per case, the two grid rates
//!   around the 1% crossing (the capacity, the last passing rate, and the
//!   first failing one), each with the arrival rate in packets/s, T_sip,
//!   K_rcv, RCV errors, total messages and drop rate, averaged over the
//!   grid's counted repetitions.
//! - **Table III** ([`compare`]): a profile against `default` at one rate
//!   (default's first failing rate), from paired trials run alternately:
//!   drop rate and K_rcv, each as "% lower" with a 95% interval from the
//!   paired differences (Student's t on dᵢ = defaultᵢ − profileᵢ, divided
//!   by default's mean; the denominator's own uncertainty is not carried).
//!   The paired test is takt-measure's [`paired_t`], also the
//!   significance test of `takt sip tune`.

use serde::Serialize;
use takt_measure::stats::mean;
pub use takt_measure::stats::{paired_t, Paired};

use crate::search::{Capacity, Phase, SearchResult};

use super::sampled_load::PointExtra;
use crate::capacity::PointDetail;

/// One column of Table I/II: a grid rate over its repetitions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CrossingColumn {
    /// Calls per second.
    pub rate_cps: f64,
    /// Messages arriving at the server per second (mean over repetitions).
    pub arrival_pps: f64,
    /// Mean T_sip, µs, where the server timestamps its messages.
    pub t_sip_us: Option<f64>,
    /// Mean K_rcv, µs: measured where the server timestamps, else
    /// estimated by Little's law (see `k_rcv_estimated`).
    pub k_rcv_us: Option<f64>,
    /// `k_rcv_us` is a Little's-law estimate.
    pub k_rcv_estimated: bool,
    /// Server CPU per message, µs (what T_sip is estimated by for a server
    /// without timestamps; kernel work included).
    pub cpu_per_msg_us: Option<f64>,
    /// Datagrams the server's sockets dropped (the paper's `RcvErrors`),
    /// mean per repetition.
    pub rcv_errors: f64,
    /// Messages sent to the server, mean per repetition (the paper's
    /// "Total Messages").
    pub total_messages: f64,
    /// Lost ÷ sent, pooled over repetitions.
    pub drop_rate: f64,
    /// Repetitions.
    pub reps: usize,
}

/// Table I/II for one case: the columns below and above the crossing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Crossing {
    /// The capacity's rate (last passing).
    pub below: Option<CrossingColumn>,
    /// The first failing rate.
    pub above: Option<CrossingColumn>,
}

/// The column at `rate` from a search's counted grid trials with their
/// server details and extras (index-aligned with `result.trials`).
pub fn column(
    result: &SearchResult,
    points: &[PointDetail],
    extras: &[PointExtra],
    rate: f64,
) -> Option<CrossingColumn> {
    let at: Vec<usize> = result
        .trials
        .iter()
        .enumerate()
        .filter(|(_, t)| t.phase == Phase::Grid && !t.rerun && t.rate_cps == rate)
        .map(|(i, _)| i)
        .filter(|&i| i < points.len() && i < extras.len())
        .collect();
    if at.is_empty() {
        return None;
    }
    let f = |g: &dyn Fn(usize) -> Option<f64>| -> Vec<f64> {
        at.iter().filter_map(|&i| g(i)).collect()
    };
    let sent: u64 = at.iter().map(|&i| result.trials[i].outcome.sent).sum();
    let lost: u64 = at.iter().map(|&i| result.trials[i].outcome.lost).sum();
    let measured_k = f(&|i| extras[i].k_rcv_us);
    let (k_rcv_us, k_rcv_estimated) = match mean(&measured_k) {
        Some(k) => (Some(k), false),
        None => (mean(&f(&|i| extras[i].k_rcv_est_us)), true),
    };
    Some(CrossingColumn {
        rate_cps: rate,
        arrival_pps: mean(&f(&|i| Some(extras[i].arrival_pps))).unwrap_or(0.0),
        t_sip_us: mean(&f(&|i| extras[i].t_sip_us)),
        k_rcv_us,
        k_rcv_estimated,
        cpu_per_msg_us: mean(&f(&|i| {
            let s = result.trials[i].outcome.sent;
            (s > 0 && !points[i].server.threads.is_empty())
                .then(|| points[i].server.run_s * 1e6 / s as f64)
        })),
        rcv_errors: mean(&f(&|i| Some(points[i].server.socket_drops as f64))).unwrap_or(0.0),
        total_messages: sent as f64 / at.len() as f64,
        drop_rate: if sent == 0 {
            0.0
        } else {
            lost as f64 / sent as f64
        },
        reps: at.len(),
    })
}

/// Table I/II's two columns of a finished search.
pub fn crossing(result: &SearchResult, points: &[PointDetail], extras: &[PointExtra]) -> Crossing {
    let (below, above) = match result.capacity {
        Some(Capacity::Measured {
            cps,
            first_failing_cps,
        }) => (Some(cps), Some(first_failing_cps)),
        Some(Capacity::AtLeast { cps, .. }) => (Some(cps), None),
        Some(Capacity::Below { cps, .. }) => (None, Some(cps)),
        None => (None, None),
    };
    Crossing {
        below: below.and_then(|r| column(result, points, extras, r)),
        above: above.and_then(|r| column(result, points, extras, r)),
    }
}

/// The workers' mean run time per voluntary switch at `rate`, µs: over
/// the trials at that rate (re-runs of generator-bound trials left out;
/// a capacity bounded by the search's ceiling has only a ramp trial
/// there), the `workers` threads that ran
/// longest in each (a server's helper threads — timers, control — run
/// little), total run time ÷ total voluntary switches.
pub fn run_per_switch_us(
    result: &SearchResult,
    points: &[PointDetail],
    rate: f64,
    workers: usize,
) -> Option<f64> {
    let (mut run, mut switches) = (0.0, 0u64);
    for (t, p) in result.trials.iter().zip(points) {
        if t.rerun || t.rate_cps != rate {
            continue;
        }
        let mut th: Vec<_> = p.server.threads.iter().collect();
        th.sort_by(|a, b| b.run_s.total_cmp(&a.run_s));
        for w in th.into_iter().take(workers) {
            run += w.run_s;
            switches += w.voluntary_switches;
        }
    }
    (switches > 0).then(|| run * 1e6 / switches as f64)
}

/// The rate the `enhanced` slice is measured at: the capacity (the last
/// passing grid rate, or the bound a search ceiling or the generator set),
/// else — when even the lowest rate was generator-bound — the highest
/// rate tried whose drop rate stayed at or below `threshold` (the server's
/// work per wake-up does not depend on whether the generator kept up),
/// and when no rate passed at all (a loaded host), the lowest rate tried:
/// the least overloaded point there is (its rate is in
/// [`EnhancedSlice::at_cps`](crate::profile::EnhancedSlice::at_cps)).
pub fn enhanced_rate(result: &SearchResult, threshold: f64) -> Option<f64> {
    let tried = || {
        result
            .trials
            .iter()
            .filter(|t| !t.rerun && t.outcome.sent > 0)
    };
    match result.capacity {
        Some(Capacity::Measured { cps, .. } | Capacity::AtLeast { cps, .. }) => Some(cps),
        _ => tried()
            .filter(|t| t.outcome.drop_rate() <= threshold)
            .map(|t| t.rate_cps)
            .max_by(f64::total_cmp)
            .or_else(|| tried().map(|t| t.rate_cps).min_by(f64::total_cmp)),
    }
}

/// One Table III row: a profile against `default` at one rate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// The rate, calls/s.
    pub rate_cps: f64,
    /// Drop rates: default vs the profile.
    pub drop: Option<Paired>,
    /// K_rcv, µs: default vs the profile.
    pub k_rcv: Option<Paired>,
    /// K_rcv is a Little's-law estimate.
    pub k_rcv_estimated: bool,
}

/// One paired trial's numbers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PairSide {
    /// Drop rate.
    pub drop_rate: f64,
    /// K_rcv, µs (measured or estimated).
    pub k_rcv_us: Option<f64>,
    /// Whether `k_rcv_us` is an estimate.
    pub estimated: bool,
}

impl PairSide {
    /// From a trial's outcome and extra.
    pub fn of(drop_rate: f64, e: &PointExtra) -> PairSide {
        match e.k_rcv_us {
            Some(k) => PairSide {
                drop_rate,
                k_rcv_us: Some(k),
                estimated: false,
            },
            None => PairSide {
                drop_rate,
                k_rcv_us: e.k_rcv_est_us,
                estimated: true,
            },
        }
    }
}

/// Table III's row from paired trials (default first in each pair).
pub fn compare(rate_cps: f64, pairs: &[(PairSide, PairSide)]) -> Comparison {
    let da: Vec<f64> = pairs.iter().map(|p| p.0.drop_rate).collect();
    let db: Vec<f64> = pairs.iter().map(|p| p.1.drop_rate).collect();
    let both: Vec<(f64, f64)> = pairs
        .iter()
        .filter_map(|(a, b)| Some((a.k_rcv_us?, b.k_rcv_us?)))
        .collect();
    let ka: Vec<f64> = both.iter().map(|p| p.0).collect();
    let kb: Vec<f64> = both.iter().map(|p| p.1).collect();
    Comparison {
        rate_cps,
        drop: paired_t(&da, &db),
        k_rcv: paired_t(&ka, &kb),
        k_rcv_estimated: pairs.iter().any(|p| p.0.estimated || p.1.estimated),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::LoadOutcome;
    use crate::search::{BelowLimit, TrialOutcome, TrialRecord, Verdict};
    use crate::server_stats::{ServerWindow, ThreadWindow};
    use takt_sip::stats::snmp::UdpCounters;

    fn window(drops: u64, threads: &[(f64, u64)]) -> ServerWindow {
        ServerWindow {
            secs: 1.0,
            socket_drops: drops,
            host: UdpCounters::default(),
            cpu_s: 0.0,
            run_s: threads.iter().map(|t| t.0).sum(),
            threads: threads
                .iter()
                .enumerate()
                .map(|(i, &(run_s, vol))| ThreadWindow {
                    pid: 1,
                    tid: i as i32,
                    name: format!("w{i}"),
                    run_s,
                    wait_s: 0.0,
                    voluntary_switches: vol,
                    involuntary_switches: 0,
                    run_per_wakeup_us: None,
                })
                .collect(),
        }
    }

    /// A search that measured 1,000 cps (passing) and 1,100 cps
    /// (failing) twice each on the grid, after one ramp trial.
    fn fixture() -> (SearchResult, Vec<PointDetail>, Vec<PointExtra>) {
        let trial = |phase, rate: f64, lost| TrialRecord {
            phase,
            rate_cps: rate,
            outcome: TrialOutcome {
                offered_cps: rate,
                achieved_cps: rate,
                sent: 6_000,
                lost,
                ..TrialOutcome::default()
            },
            rerun: false,
        };
        let trials = vec![
            trial(Phase::Ramp, 2_000.0, 900),
            trial(Phase::Grid, 1_000.0, 30),
            trial(Phase::Grid, 1_100.0, 120),
            trial(Phase::Grid, 1_100.0, 90),
            trial(Phase::Grid, 1_000.0, 0),
        ];
        let points = trials
            .iter()
            .map(|t| PointDetail {
                rate_cps: t.rate_cps,
                load: LoadOutcome::default(),
                server: window(t.outcome.lost, &[(0.5, 1_000), (0.3, 1_000), (0.001, 10)]),
                cpu_per_call_us: None,
                shm: None,
                takt_kinds: None,
                stats_error: None,
                fleet: None,
            })
            .collect();
        let extras = trials
            .iter()
            .map(|t| PointExtra {
                t_sip_us: None,
                k_rcv_us: None,
                k_rcv_est_us: Some(t.rate_cps / 10.0),
                arrival_pps: t.rate_cps * 6.0,
                ..PointExtra::default()
            })
            .collect();
        let result = SearchResult {
            capacity: Some(Capacity::Measured {
                cps: 1_000.0,
                first_failing_cps: 1_100.0,
            }),
            zero_failure_cps: None,
            grid: Vec::new(),
            non_monotone_cps: Vec::new(),
            trials,
            complete: true,
        };
        (result, points, extras)
    }

    #[test]
    fn tables_one_and_two_from_the_grid() {
        let (r, p, e) = fixture();
        let c = crossing(&r, &p, &e);
        let below = c.below.unwrap();
        assert_eq!((below.rate_cps, below.reps), (1_000.0, 2));
        assert_eq!(below.arrival_pps, 6_000.0);
        assert_eq!(below.total_messages, 6_000.0);
        assert!((below.drop_rate - 30.0 / 12_000.0).abs() < 1e-12);
        assert_eq!(below.rcv_errors, 15.0);
        assert_eq!(below.k_rcv_us, Some(100.0));
        assert!(below.k_rcv_estimated && below.t_sip_us.is_none());
        let above = c.above.unwrap();
        assert_eq!(above.rate_cps, 1_100.0);
        assert!((above.drop_rate - 210.0 / 12_000.0).abs() < 1e-12);
        let _ = Verdict::Pass;
    }

    #[test]
    fn enhanced_slice_from_the_busiest_workers() {
        let (r, p, _) = fixture();
        // two workers ran 0.8 s over 2,000 switches per trial: 400 µs
        // (the ramp trial at 2,000 cps counts there, not here)
        let us = run_per_switch_us(&r, &p, 1_000.0, 2).unwrap();
        assert!((us - 400.0).abs() < 1e-9, "{us}");
        assert!(run_per_switch_us(&r, &p, 1_234.0, 2).is_none());
        assert_eq!(enhanced_rate(&r, 0.01), Some(1_000.0));
        let mut below = r.clone();
        below.capacity = Some(Capacity::Below {
            cps: 1_000.0,
            limit: BelowLimit::Generator,
        });
        // the highest rate that stayed under 1%: 1,000 cps's second trial
        assert_eq!(enhanced_rate(&below, 0.01), Some(1_000.0));
        // nothing under 0.1%: the lowest rate tried
        below.trials.truncate(2);
        assert_eq!(enhanced_rate(&below, 0.001), Some(1_000.0));
        below.trials.clear();
        assert_eq!(enhanced_rate(&below, 0.001), None);
    }

    #[test]
    fn paired_comparison_and_table_three() {
        let side = |d, k| PairSide {
            drop_rate: d,
            k_rcv_us: Some(k),
            estimated: false,
        };
        let pairs = [
            (side(0.020, 1_000.0), side(0.010, 800.0)),
            (side(0.022, 1_100.0), side(0.012, 850.0)),
            (side(0.018, 900.0), side(0.011, 700.0)),
        ];
        let c = compare(1_100.0, &pairs);
        let d = c.drop.unwrap();
        let (pct, ci) = d.pct_lower().unwrap();
        assert!((pct - 100.0 * (0.02 - 0.011) / 0.02).abs() < 1e-9, "{pct}");
        assert!(ci[0] < pct && pct < ci[1] && ci[0] > 0.0, "{ci:?}");
        assert!(d.p < 0.05, "{d:?}");
        let k = c.k_rcv.unwrap();
        assert!((k.diff - (1_000.0 - 800.0 + 250.0 + 200.0) / 3.0).abs() < 1e-9);
        assert!(!c.k_rcv_estimated);
        // no difference: p = 1; too few pairs: none
        let same = paired_t(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]).unwrap();
        assert_eq!(same.p, 1.0);
        assert!(paired_t(&[1.0], &[2.0]).is_none());
        // a known case: d = [1, 2, 3], t = 2 / (1/sqrt 3) = 3.464, df 2 → p ≈ 0.0742
        let k = paired_t(&[2.0, 4.0, 6.0], &[1.0, 2.0, 3.0]).unwrap();
        assert!((k.p - 0.0742).abs() < 1e-3, "{}", k.p);
    }
}
