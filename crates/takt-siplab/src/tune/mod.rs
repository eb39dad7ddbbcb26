//! `takt sip tune`: the paper's method as one command — for one server
//! and worker count, find the scheduler setting with the best 1%-drop
//! capacity and confirm it against the default, or say that none beat it.
//!
//! # Method
//! 1. A sweep ([`crate::sweep`]) of one (target, mode, m) over
//!    [`candidates`]: `default` is measured first; from its workers' run
//!    time per voluntary switch at its capacity comes the `enhanced` slice
//!    (the paper's rule), and the slices around it (`enhanced/2`,
//!    `enhanced*2`) are searched beside `server` and `batch`.
//! 2. The candidate with the highest capacity is confirmed against
//!    `default` in an interleaved A/B: pairs of trials at default's first
//!    failing rate, back to back, the order swapped every pair (at least
//!    [`MIN_PAIRS`]). The test is the **paired Student's t-test** on the
//!    pairs' drop rates, two-sided, at [`ALPHA`] (pairing removes the
//!    host's drift, which moves both members of a pair alike).
//! 3. The verdict ([`recommend`]): recommend the candidate when its drop
//!    rate is significantly lower *and* its capacity is higher; keep the
//!    default when the default is significantly better; otherwise "no
//!    significant difference". A verdict comes only from real crossings:
//!    when the default's or the best candidate's capacity is only a bound
//!    — `≥ R (generator-bound)` above all — the tune is inconclusive
//!    ("generator-bound: …"), whatever the pairs say.

mod suite;

use serde::Serialize;
use takt_measure::table::Table;

pub use suite::{document, gain_row, TuneOptions, TuneOutput, TuneSuite, JSON_FILE};

use crate::profile::Profile;
use crate::search::{BelowLimit, Capacity, Limit};
use crate::sweep::{paper_tables::Paired, SweepOutcome};

/// Significance level of the A/B confirmation.
pub const ALPHA: f64 = 0.05;
/// Fewest A/B pairs.
pub const MIN_PAIRS: usize = 5;

/// The profiles a tune compares (`default` first).
pub fn candidates() -> Vec<Profile> {
    vec![
        Profile::Default,
        Profile::Enhanced,
        Profile::EnhancedScaled { num: 1, den: 2 },
        Profile::EnhancedScaled { num: 2, den: 1 },
        Profile::Server,
        Profile::Batch,
    ]
}

/// What the tune concluded.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Verdict {
    /// Apply this policy: it carried more calls and dropped significantly less.
    Recommend {
        /// The `--sched` string.
        sched: String,
    },
    /// The default was significantly better than the best candidate.
    KeepDefault,
    /// No candidate differed significantly from the default.
    NoSignificantDifference,
    /// The evidence is missing: the run was stopped, or the default's or
    /// the best candidate's capacity was not bracketed by two grid rates
    /// (a generator-bound lower bound above all).
    Inconclusive {
        /// Why.
        reason: String,
    },
}

/// The tune's answer for one (target, mode, m), with its evidence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recommendation {
    /// Target name.
    pub target: &'static str,
    /// Mode.
    pub mode: &'static str,
    /// Worker count.
    pub workers: usize,
    /// Every candidate's capacity: (profile label, policy, capacity).
    pub capacities: Vec<(String, String, Option<Capacity>)>,
    /// The candidate with the highest capacity (label, policy).
    pub best: Option<(String, String)>,
    /// Its capacity gain over `default`, %.
    pub gain_pct: Option<f64>,
    /// The A/B on drop rates (default = a, best = b) at `ab_rate_cps`.
    pub ab: Option<Paired>,
    /// The A/B's rate.
    pub ab_rate_cps: Option<f64>,
    /// The conclusion.
    pub verdict: Verdict,
}

impl Recommendation {
    /// The command that applies the recommendation to a running server.
    pub fn command(&self) -> Option<String> {
        let Verdict::Recommend { sched } = &self.verdict else {
            return None;
        };
        Some(match self.target {
            // every process of the server: its workers are processes
            t @ ("kamailio" | "opensips") => format!(
                "for pid in $(pgrep -x {t}); do takt sched --pid $pid --sched {sched}; done"
            ),
            _ => format!("takt sched --pid PID --sched {sched}"),
        })
    }
}

/// The verdict per (target, mode, m) of a tune's sweep (see the module docs).
pub fn recommend(s: &SweepOutcome) -> Vec<Recommendation> {
    let mut groups: Vec<(&'static str, &'static str, usize)> = Vec::new();
    for c in s.cases.iter().filter(|c| !c.key.is_ceiling()) {
        let g = (c.key.target, c.key.mode, c.key.workers);
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    groups
        .into_iter()
        .map(|(target, mode, workers)| {
            let cases: Vec<_> = s
                .cases
                .iter()
                .filter(|c| (c.key.target, c.key.mode, c.key.workers) == (target, mode, workers))
                .collect();
            let capacities = cases
                .iter()
                .map(|c| (c.label.clone(), c.policy.clone(), c.result.capacity))
                .collect();
            let default = cases
                .iter()
                .find(|c| c.key.profile == "default")
                .and_then(|c| c.result.capacity);
            let cmp = s.comparisons.iter().find(|c| {
                (c.key.target, c.key.mode, c.key.workers) == (target, mode, workers)
            });
            let best_case = cmp.and_then(|c| cases.iter().find(|k| k.key == c.key));
            let best = best_case.map(|c| (c.label.clone(), c.policy.clone()));
            let best_cap = best_case.and_then(|c| c.result.capacity);
            // a gain only between two measured capacities: a bound is not
            // a value to take a ratio with
            let gain_pct = match (default, best_cap) {
                (
                    Some(Capacity::Measured { cps: d, .. }),
                    Some(Capacity::Measured { cps: b, .. }),
                ) if d > 0.0 => Some(100.0 * (b - d) / d),
                _ => None,
            };
            let ab = cmp.and_then(|c| c.comparison.drop);
            // a verdict only from real crossings: a capacity that is only
            // a bound (the generator's limit, the search's ceiling) or
            // below every rate tried compares nothing
            let bound = [("default", default), ("the best candidate", best_cap)]
                .into_iter()
                .find_map(|(side, c)| match c {
                    Some(c @ Capacity::AtLeast { limit: Limit::Generator, .. })
                    | Some(c @ Capacity::Below { limit: BelowLimit::Generator, .. }) => {
                        Some(format!("generator-bound: {side}'s capacity is {c}, only a bound set by the generator, not a crossing of the server's"))
                    }
                    Some(c @ (Capacity::AtLeast { .. } | Capacity::Below { .. })) => Some(format!(
                        "{side}'s capacity is {c}, a bound, not a crossing between two grid rates"
                    )),
                    _ => None,
                });
            let verdict = match (&best, ab) {
                (_, _) if s.interrupted => Verdict::Inconclusive {
                    reason: "the run was stopped (budget or Ctrl-C) before the A/B finished".into(),
                },
                (Some(_), _) if bound.is_some() => Verdict::Inconclusive {
                    reason: bound.clone().unwrap_or_default(),
                },
                (None, _) | (_, None) => Verdict::Inconclusive {
                    reason: match default {
                        Some(c @ Capacity::Measured { .. }) => format!(
                            "no A/B: default's capacity {c} was measured but fewer than 2 pairs finished"
                        ),
                        Some(c) => format!(
                            "no A/B: default's capacity is {c}, not a crossing between two grid rates to compare at"
                        ),
                        None => "no A/B: default's search did not finish".into(),
                    },
                },
                (Some((_, policy)), Some(p)) => {
                    if p.p < ALPHA && p.diff > 0.0 && gain_pct.is_some_and(|g| g > 0.0) {
                        Verdict::Recommend {
                            sched: policy.clone(),
                        }
                    } else if p.p < ALPHA && p.diff < 0.0 {
                        Verdict::KeepDefault
                    } else {
                        Verdict::NoSignificantDifference
                    }
                }
            };
            Recommendation {
                target,
                mode,
                workers,
                capacities,
                best,
                gain_pct,
                ab,
                ab_rate_cps: cmp.map(|c| c.comparison.rate_cps),
                verdict,
            }
        })
        .collect()
}

/// The recommendation as text.
pub fn render(r: &Recommendation) -> String {
    let mut o = format!(
        "takt sip tune: {} {} with {} workers\n",
        r.target, r.mode, r.workers
    );
    let mut settings = Table::new()
        .text("setting")
        .text("policy")
        .text("capacity (calls/s)");
    for (label, policy, cap) in &r.capacities {
        settings.push(vec![
            label.clone(),
            policy.clone(),
            cap.map_or("unfinished".into(), |c| c.to_string()),
        ]);
    }
    o += &settings.render();
    if let (Some((label, _)), Some(p), Some(rate)) = (&r.best, r.ab, r.ab_rate_cps) {
        o += &format!(
            "  A/B at {rate:.0} cps, {} pairs (order swapped every pair): drop rate default {:.4} vs {label} {:.4}; difference {:.4} [95% {:.4}, {:.4}], paired t-test p = {:.3}\n",
            p.n, p.mean_a, p.mean_b, p.diff, p.diff_ci95[0], p.diff_ci95[1], p.p
        );
    }
    if let Some(g) = r.gain_pct {
        o += &format!("  capacity gain of the best over default: {g:+.1}%\n");
    }
    o += &match &r.verdict {
        Verdict::Recommend { sched } => format!(
            "  recommendation: --sched {sched}\n  apply to a running server: {}\n",
            r.command().unwrap_or_default()
        ),
        Verdict::KeepDefault => {
            "  recommendation: keep the default (it was significantly better)\n".into()
        }
        Verdict::NoSignificantDifference => {
            format!("  no setting beat the default significantly (paired t-test, alpha {ALPHA})\n")
        }
        Verdict::Inconclusive { reason } => format!("  inconclusive: {reason}\n"),
    };
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::sweep::fixture::outcome;

    /// Pairs of (default, candidate) drop rates whose difference is
    /// significant at 5%.
    const SIGNIFICANT_GAIN: [(f64, f64); 5] = [
        (0.020, 0.010),
        (0.022, 0.013),
        (0.019, 0.009),
        (0.021, 0.012),
        (0.020, 0.011),
    ];

    #[test]
    fn a_significant_gain_is_recommended_with_its_command() {
        let drops = SIGNIFICANT_GAIN;
        let r = &recommend(&outcome(&drops, 2_200.0))[0];
        assert_eq!(
            r.verdict,
            Verdict::Recommend {
                sched: "other:slice=300us".into()
            }
        );
        assert!((r.gain_pct.unwrap() - 10.0).abs() < 1e-9);
        assert!(r.command().unwrap().contains("pgrep -x kamailio"));
        assert!(render(r).contains("--sched other:slice=300us"));
    }

    #[test]
    fn noise_is_no_significant_difference() {
        let drops = [
            (0.020, 0.021),
            (0.022, 0.019),
            (0.019, 0.020),
            (0.021, 0.022),
            (0.020, 0.019),
        ];
        let r = &recommend(&outcome(&drops, 2_060.0))[0];
        assert_eq!(r.verdict, Verdict::NoSignificantDifference);
        assert!(r.command().is_none());
        assert!(render(r).contains("no setting beat the default"));
        // a worse candidate, significantly: keep the default
        let worse = [
            (0.010, 0.020),
            (0.012, 0.021),
            (0.011, 0.019),
            (0.010, 0.022),
            (0.011, 0.020),
        ];
        assert_eq!(
            recommend(&outcome(&worse, 2_060.0))[0].verdict,
            Verdict::KeepDefault
        );
        // a stopped run decides nothing
        let mut s = outcome(&worse, 2_060.0);
        s.interrupted = true;
        assert!(matches!(
            recommend(&s)[0].verdict,
            Verdict::Inconclusive { .. }
        ));
    }

    #[test]
    fn a_capacity_that_is_only_a_bound_gives_no_verdict() {
        // a significant gain on the pairs, but the best side's capacity is
        // the generator's lower bound
        let drops = SIGNIFICANT_GAIN;
        let mut s = outcome(&drops, 2_200.0);
        s.cases[1].result.capacity = Some(Capacity::AtLeast {
            cps: 2_200.0,
            limit: Limit::Generator,
        });
        let r = &recommend(&s)[0];
        let Verdict::Inconclusive { reason } = &r.verdict else {
            panic!("{:?}", r.verdict);
        };
        assert!(reason.starts_with("generator-bound"), "{reason}");
        assert!(render(r).contains("inconclusive: generator-bound"));
        assert!(r.command().is_none());
        // no gain is taken against a bound, so no tune_gain row
        assert_eq!(r.gain_pct, None);
        assert!(suite::gain_row(r).is_none());
        // the default's side too, and a search ceiling is no crossing either
        let mut s = outcome(&drops, 2_200.0);
        s.cases[0].result.capacity = Some(Capacity::Below {
            cps: 1_000.0,
            limit: BelowLimit::Generator,
        });
        assert!(matches!(
            &recommend(&s)[0].verdict,
            Verdict::Inconclusive { reason } if reason.starts_with("generator-bound")
        ));
        let mut s = outcome(&drops, 2_200.0);
        s.cases[1].result.capacity = Some(Capacity::AtLeast {
            cps: 200_000.0,
            limit: Limit::SearchCeiling,
        });
        assert!(matches!(
            &recommend(&s)[0].verdict,
            Verdict::Inconclusive { reason } if reason.contains("search ceiling")
        ));
    }

    #[test]
    fn a_stopped_run_decides_nothing() {
        let worse = [(0.010, 0.020); 5];
        let mut s = outcome(&worse, 2_060.0);
        s.interrupted = true;
        assert!(matches!(
            recommend(&s)[0].verdict,
            Verdict::Inconclusive { .. }
        ));
    }
}
