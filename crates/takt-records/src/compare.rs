//! Two runs side by side: which rows changed beyond their noise.
//!
//! Rows are matched by (suite, name, impl, params) and unit: the k-th row
//! with a key in run A meets the k-th row with that key in run B; rows
//! left over are then matched by key alone (a changed unit, unjudged). A matched pair
//! is flagged — a **regression** or an **improvement**, by the row's
//! `better` — only when all three hold:
//!
//! 1. the two Student-t 95% intervals of the mean (`ci95`) are disjoint,
//!    so each run's mean lies outside the other run's interval;
//! 2. when both rows carry at least two raw samples, the two-sided
//!    Mann–Whitney U test rejects "same distribution" at 5% ([`ALPHA`]);
//! 3. the median moved by at least the minimum change (default
//!    [`DEFAULT_MIN_CHANGE_PCT`] percent of A's median).
//!
//! A pair that fails 1 or 2 is **within noise**; one that passes both
//! but fails 3 is a **small** change: real within these two runs, too
//! small to call.
//!
//! Why two tests: the t interval assumes roughly normal samples, and
//! benchmark samples are skewed — one preempted repetition drags a mean
//! and widens its interval; the rank test does not care how far an
//! outlier lies, only whether one run's samples sit consistently above
//! the other's. Disjoint 95% intervals alone amount to a test at about
//! 0.6% for equal spreads, which keeps false flags rare across the
//! hundred-odd rows of a report, where the rank test alone at 5% would
//! flag about five rows of pure noise. With five samples a side the rank
//! test rejects only when at most two of the 25 cross-pairs are out of
//! order (exact p ≤ 0.032), so a flagged change is also consistent, not
//! just large. When either row has no raw samples the interval test
//! decides alone, and the pair says so (`p_value` is absent).
//!
//! Why a minimum change: both tests see only the variation *within* each
//! run. Two runs of the same build also differ by what changed between
//! them — other load, CPU frequency, placement, the host — and rows whose
//! samples are many iterations of one run (the `machine` suite's) have
//! intervals far narrower than that. On a shared 2-vCPU virtual machine
//! back-to-back runs of one build differ by a few percent with every row
//! "significant"; the threshold keeps those out of the flags, and
//! `takt runs diff --min-change` sets it (0 flags every significant
//! change).
//!
//! A pair is **unjudged** when either row is a bound ("≥ 35,000
//! (generator)": a bound is not a value, so no change or ratio is taken)
//! or has no value, has fewer than two repetitions or no finite interval,
//! or when the unit or the direction changed between the runs. Rows of
//! one run only are listed as such.

use std::collections::{HashMap, VecDeque};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::row::{Better, Row};
use crate::run::{Run, RunSummary};
use takt_measure::stats::mann_whitney_p;

/// Significance level of the rank test.
pub const ALPHA: f64 = 0.05;

/// The smallest change of the median, in percent, that is flagged unless
/// the caller says otherwise.
pub const DEFAULT_MIN_CHANGE_PCT: f64 = 5.0;

/// Steal time above which a run's conditions are called out, percent.
pub const STEAL_CAUTION_PCT: f64 = 2.0;

/// The tests, as one sentence for reports (the minimum change follows).
pub const METHOD: &str = "flagged when the two ci95 intervals of the mean are disjoint, \
     a two-sided Mann-Whitney U test over the raw samples rejects at 5% (where both rows have \
     samples), and the median moved by at least the minimum change";

/// What a matched pair (or a lone row) amounts to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// B is worse than A beyond both runs' noise.
    Regression,
    /// B is better than A beyond both runs' noise.
    Improvement,
    /// The difference lies within the runs' noise.
    WithinNoise,
    /// Beyond the runs' noise, but smaller than the minimum change.
    Small,
    /// The pair cannot be judged (see [`RowDiff::reason`]).
    Unjudged,
    /// The row is in run A only.
    OnlyInA,
    /// The row is in run B only.
    OnlyInB,
}

impl Verdict {
    /// Short label for tables.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Regression => "REGRESSION",
            Verdict::Improvement => "improvement",
            Verdict::WithinNoise => "within noise",
            Verdict::Small => "small",
            Verdict::Unjudged => "unjudged",
            Verdict::OnlyInA => "only in A",
            Verdict::OnlyInB => "only in B",
        }
    }
}

/// One side of a pair: the row's statistics.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Side {
    /// Median (`None` for a bound or a row without a value).
    pub median: Option<f64>,
    /// Mean.
    pub mean: Option<f64>,
    /// The bound the row found in place of a value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bound: Option<crate::row::Bound>,
    /// Student-t 95% interval of the mean.
    pub ci95: Option<[f64; 2]>,
    /// Repetitions.
    pub runs: u64,
    /// Raw samples stored.
    pub samples: usize,
    /// CPU seconds per repetition.
    pub cpu_s: f64,
}

impl Side {
    fn of(r: &Row) -> Side {
        Side {
            median: r.median,
            mean: r.mean,
            bound: r.bound.clone(),
            ci95: r.ci95,
            runs: r.runs,
            samples: r.samples.len(),
            cpu_s: r.cpu_s,
        }
    }
}

/// A row of the comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RowDiff {
    /// Suite of the row.
    pub suite: String,
    /// Benchmark name.
    pub name: String,
    /// Implementation.
    #[serde(rename = "impl")]
    pub implementation: String,
    /// Parameters.
    pub params: Map<String, Value>,
    /// Unit (B's when both exist and differ).
    pub unit: String,
    /// Direction of improvement.
    pub better: Better,
    /// The row in run A.
    pub a: Option<Side>,
    /// The row in run B.
    pub b: Option<Side>,
    /// Change of the median from A to B, in percent of A's.
    pub change_pct: Option<f64>,
    /// Whether the two ci95 intervals are disjoint.
    pub intervals_disjoint: Option<bool>,
    /// Two-sided Mann–Whitney p-value over the raw samples.
    pub p_value: Option<f64>,
    /// The outcome.
    pub verdict: Verdict,
    /// Why a pair is unjudged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// How many rows got each verdict.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Regressions.
    pub regressions: usize,
    /// Improvements.
    pub improvements: usize,
    /// Pairs within noise.
    pub within_noise: usize,
    /// Pairs beyond noise but under the minimum change.
    pub small: usize,
    /// Pairs that could not be judged.
    pub unjudged: usize,
    /// Rows of A only.
    pub only_in_a: usize,
    /// Rows of B only.
    pub only_in_b: usize,
}

/// Run B compared with run A.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Diff {
    /// The earlier (reference) run.
    pub a: RunSummary,
    /// The run compared with it.
    pub b: RunSummary,
    /// The test applied ([`METHOD`]).
    pub method: &'static str,
    /// The minimum change of the median flagged, in percent.
    pub min_change_pct: f64,
    /// Conditions that make the comparison less telling: different
    /// machines or build profiles, a run beside other work (other work and
    /// steal over 5% of the CPU time, from the document's `others_pct`; for
    /// older documents, a 1-minute load above the CPU count) or one that
    /// lost more than
    /// [`STEAL_CAUTION_PCT`] of its CPU time to the hypervisor, a run that
    /// did not complete.
    pub cautions: Vec<String>,
    /// Whether the runs were measured on different machines (by machine
    /// ID where both runs have one, else by CPU, CPU count, kernel,
    /// virtualization and host): their machine descriptions are then
    /// worth reading side by side.
    pub different_machines: bool,
    /// Verdict counts.
    pub counts: Counts,
    /// A's rows in order with their partners, then B's rows that have none.
    pub rows: Vec<RowDiff>,
}

type Key = (String, String, String, String);

fn rows_of(run: &Run) -> Vec<(Key, &str, &Row)> {
    run.documents
        .iter()
        .flat_map(|d| {
            d.rows.iter().map(move |r| {
                let key = (
                    d.suite.clone(),
                    r.name.clone(),
                    r.implementation.clone(),
                    r.params_key(),
                );
                (key, d.suite.as_str(), r)
            })
        })
        .collect()
}

/// Compares run `b` with run `a`, flagging changes of the median of at
/// least `min_change_pct` percent that pass both noise tests.
pub fn compare(a: &Run, b: &Run, min_change_pct: f64) -> Diff {
    let rows_a = rows_of(a);
    let rows_b = rows_of(b);
    // Pass 1 pairs rows of the same unit (one benchmark may report one
    // quantity in several units, e.g. ns/step, cycles/s and speedup);
    // pass 2 pairs what is left by key alone, as a changed unit.
    let mut partner: Vec<Option<usize>> = vec![None; rows_a.len()];
    let mut matched_b = vec![false; rows_b.len()];
    for with_unit in [true, false] {
        let mut by_key: HashMap<(&Key, Option<&str>), VecDeque<usize>> = HashMap::new();
        for (j, (k, _, rb)) in rows_b.iter().enumerate() {
            if !matched_b[j] {
                let unit = with_unit.then_some(rb.unit.as_str());
                by_key.entry((k, unit)).or_default().push_back(j);
            }
        }
        for (i, (k, _, ra)) in rows_a.iter().enumerate() {
            if partner[i].is_none() {
                let unit = with_unit.then_some(ra.unit.as_str());
                if let Some(j) = by_key.get_mut(&(k, unit)).and_then(VecDeque::pop_front) {
                    partner[i] = Some(j);
                    matched_b[j] = true;
                }
            }
        }
    }
    let mut rows = Vec::with_capacity(rows_a.len().max(rows_b.len()));
    for ((_, suite, ra), p) in rows_a.iter().zip(&partner) {
        rows.push(match p {
            Some(j) => judge(suite, ra, rows_b[*j].2, min_change_pct),
            None => lone(suite, ra, Verdict::OnlyInA),
        });
    }
    for (j, (_, suite, rb)) in rows_b.iter().enumerate() {
        if !matched_b[j] {
            rows.push(lone(suite, rb, Verdict::OnlyInB));
        }
    }
    let mut counts = Counts::default();
    for r in &rows {
        *match r.verdict {
            Verdict::Regression => &mut counts.regressions,
            Verdict::Improvement => &mut counts.improvements,
            Verdict::WithinNoise => &mut counts.within_noise,
            Verdict::Small => &mut counts.small,
            Verdict::Unjudged => &mut counts.unjudged,
            Verdict::OnlyInA => &mut counts.only_in_a,
            Verdict::OnlyInB => &mut counts.only_in_b,
        } += 1;
    }
    Diff {
        a: a.summary.clone(),
        b: b.summary.clone(),
        method: METHOD,
        min_change_pct,
        cautions: cautions(&a.summary, &b.summary),
        different_machines: different_machines(&a.summary, &b.summary),
        counts,
        rows,
    }
}

/// The machine-block fields that describe the machine (the rest, such as
/// `others_pct`, describe the run's conditions).
const MACHINE_FIELDS: [&str; 5] = ["host", "cpu", "cpus", "kernel", "virtualized"];

fn different_machines(a: &RunSummary, b: &RunSummary) -> bool {
    let (ma, mb) = (&a.meta.machine, &b.meta.machine);
    let id = |m: &Map<String, Value>| {
        m.get("machine_id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    match (id(ma), id(mb)) {
        (Some(x), Some(y)) => x != y,
        _ => MACHINE_FIELDS.iter().any(|k| ma.get(*k) != mb.get(*k)),
    }
}

fn cautions(a: &RunSummary, b: &RunSummary) -> Vec<String> {
    let mut out = Vec::new();
    if different_machines(a, b) {
        let name = |r: &RunSummary| {
            r.meta
                .machine
                .get("host")
                .and_then(Value::as_str)
                .filter(|h| !h.is_empty())
                .map_or(String::new(), |h| format!(" ({h})"))
        };
        out.push(format!(
            "the runs are from different machines: A{}, B{}",
            name(a),
            name(b)
        ));
    } else if a.meta.machine.get("kernel") != b.meta.machine.get("kernel") {
        out.push("the machine's kernel changed between the runs".to_string());
    }
    if a.meta.profile != b.meta.profile {
        out.push(format!(
            "different build profiles: A {}, B {}",
            a.meta.profile, b.meta.profile
        ));
    }
    for (tag, r) in [("A", a), ("B", b)] {
        let cpus = r.meta.machine.get("cpus").and_then(Value::as_f64);
        // Work that was not the run's own, where the document measured it
        // (others_pct); the load average, which counts the run's own
        // threads too, only for documents that predate it.
        let others = r.meta.machine.get("others_pct").and_then(Value::as_f64);
        if let Some(others) = others {
            let steal = r.meta.steal_pct.unwrap_or(0.0);
            if others + steal > takt_measure::env::DISTURBED_PCT {
                out.push(format!(
                    "run {tag} (#{}): other work took {others:.1}% of the CPU time (steal {steal:.1}%)",
                    r.id
                ));
            }
        } else if let (Some(cpus), Some(load)) = (cpus, r.meta.load) {
            if load[0] > cpus {
                out.push(format!(
                    "run {tag} (#{}) saw load {:.1} on {cpus} CPUs: other work competed for them",
                    r.id, load[0]
                ));
            }
        }
        if let Some(steal) = r.meta.steal_pct.filter(|&s| s > STEAL_CAUTION_PCT) {
            out.push(format!(
                "run {tag} (#{}) lost {steal:.1}% of its CPU time to the hypervisor",
                r.id
            ));
        }
        if r.status != crate::run::RunStatus::Complete {
            out.push(format!("run {tag} (#{}) is {}", r.id, r.status));
        }
    }
    out
}

fn lone(suite: &str, r: &Row, verdict: Verdict) -> RowDiff {
    let side = Some(Side::of(r));
    let (a, b) = if verdict == Verdict::OnlyInA {
        (side, None)
    } else {
        (None, side)
    };
    RowDiff {
        suite: suite.to_string(),
        name: r.name.clone(),
        implementation: r.implementation.clone(),
        params: r.params.clone(),
        unit: r.unit.clone(),
        better: r.better,
        a,
        b,
        change_pct: None,
        intervals_disjoint: None,
        p_value: None,
        verdict,
        reason: None,
    }
}

fn judge(suite: &str, ra: &Row, rb: &Row, min_change_pct: f64) -> RowDiff {
    let change_pct = match (ra.median, rb.median) {
        (Some(a), Some(b)) if a != 0.0 => Some((b - a) / a.abs() * 100.0),
        _ => None,
    };
    let intervals_disjoint = match (ra.ci95, rb.ci95) {
        (Some([alo, ahi]), Some([blo, bhi])) => Some(ahi < blo || bhi < alo),
        _ => None,
    };
    let p_value = (ra.samples.len() >= 2 && rb.samples.len() >= 2)
        .then(|| mann_whitney_p(&ra.samples, &rb.samples))
        .flatten();
    let mut reason = None;
    let verdict = if ra.unit != rb.unit {
        reason = Some(format!("unit changed: {} -> {}", ra.unit, rb.unit));
        Verdict::Unjudged
    } else if ra.better != rb.better {
        reason = Some("direction of improvement changed".to_string());
        Verdict::Unjudged
    } else if ra.median.is_none() || rb.median.is_none() {
        let what = |r: &Row| match &r.bound {
            Some(b) => format!("a bound ({b})"),
            None => "no value".to_string(),
        };
        reason = Some(match (ra.median, rb.median) {
            (None, None) => format!(
                "A is {} and B is {}: no change is taken",
                what(ra),
                what(rb)
            ),
            (None, _) => format!("A is {}, not a value: no change is taken", what(ra)),
            _ => format!("B is {}, not a value: no change is taken", what(rb)),
        });
        Verdict::Unjudged
    } else if ra.runs < 2 || rb.runs < 2 {
        reason = Some("fewer than 2 repetitions".to_string());
        Verdict::Unjudged
    } else if intervals_disjoint.is_none() {
        reason = Some("no finite ci95 interval".to_string());
        Verdict::Unjudged
    } else if intervals_disjoint == Some(true) && p_value.is_none_or(|p| p < ALPHA) {
        if change_pct.is_some_and(|c| c.abs() < min_change_pct) {
            Verdict::Small
        } else {
            // The median's direction (the thresholded change); the mean's
            // (ordered: the intervals are disjoint) when the median did not
            // move or A's is 0.
            let b_higher = match change_pct {
                Some(c) if c != 0.0 => c > 0.0,
                _ => rb.mean > ra.mean,
            };
            if b_higher == (rb.better == Better::Higher) {
                Verdict::Improvement
            } else {
                Verdict::Regression
            }
        }
    } else {
        Verdict::WithinNoise
    };
    RowDiff {
        suite: suite.to_string(),
        name: rb.name.clone(),
        implementation: rb.implementation.clone(),
        params: rb.params.clone(),
        unit: rb.unit.clone(),
        better: rb.better,
        a: Some(Side::of(ra)),
        b: Some(Side::of(rb)),
        change_pct,
        intervals_disjoint,
        p_value,
        verdict,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(median: f64, mean: f64, ci: [f64; 2], samples: &[f64]) -> Row {
        Row {
            name: "r".into(),
            implementation: "takt".into(),
            params: Map::new(),
            unit: "ns".into(),
            better: Better::Lower,
            median: Some(median),
            min: Some(samples.iter().copied().fold(f64::INFINITY, f64::min)),
            max: Some(samples.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
            mean: Some(mean),
            stddev: None,
            ci95: Some(ci),
            runs: samples.len() as u64,
            cpu_s: 0.0,
            samples: samples.to_vec(),
            bound: None,
            published: None,
            note: None,
            detail: Map::new(),
        }
    }

    #[test]
    fn an_unmoved_median_takes_the_means_direction() {
        // Same median, B's mean (and interval) clearly above A's.
        let a = row(10.0, 10.0, [9.9, 10.1], &[9.9, 10.0, 10.0, 10.0, 10.1]);
        let b = row(10.0, 12.0, [11.0, 13.0], &[10.0, 10.0, 10.0, 15.0, 15.0]);
        let d = judge("s", &a, &b, 0.0);
        assert_eq!(d.change_pct, Some(0.0));
        assert_eq!(d.intervals_disjoint, Some(true));
        // The rank test does not see a consistent shift: within noise.
        assert_eq!(d.verdict, Verdict::WithinNoise, "{:?}", d.p_value);
        // Without samples, the intervals decide.
        let b = Row {
            samples: Vec::new(),
            ..b
        };
        assert_eq!(judge("s", &a, &b, 0.0).verdict, Verdict::Regression);
        assert_eq!(judge("s", &a, &b, 5.0).verdict, Verdict::Small);
    }
}
