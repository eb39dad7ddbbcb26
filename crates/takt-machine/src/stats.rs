//! Samples of one measurement, the outlier rule, and the row they become.
//!
//! A *sample* is one independent timing, usually the mean over a batch of
//! operations bracketed by one pair of fenced TSC reads (so the timer's own
//! cost is amortized). Samples are taken after a discarded warm-up batch,
//! until a time budget is spent, between a minimum and maximum count.
//!
//! ## Outlier rule
//! Tukey's far-out fences: a sample outside `[Q1 − 3·IQR, Q3 + 3·IQR]` is
//! removed, where the IQR is floored at 5% of the median (at the 90th
//! percentile of |x| when the median is 0) so that quantized samples (timer
//! ticks) that are nearly all equal are not discarded for differing by one
//! tick. The rule is symmetric and robust (it depends on
//! quartiles only), removes interrupted batches (a timer interrupt or a
//! hypervisor exit adds microseconds) and keeps the bulk of a skewed
//! distribution. Removed samples are kept in the row's `detail.removed`.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use takt_measure::result::{Better, Document, ResultRow};
use takt_measure::stats::quantile;
use takt_measure::table::{fmt_num, group_rows, Table};

/// The outlier rule, as printed in every document.
pub const OUTLIER_RULE: &str =
    "Tukey far-out fences: drop samples outside [Q1-3*IQR, Q3+3*IQR] (IQR floored at 5% of |median|, or the 90th percentile of |x| when the median is 0; no scale, no removal)";

/// An estimate made before measuring, from a stated model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The predicted value, in the row's unit.
    pub value: f64,
    /// The model and its inputs, e.g. "SYSCALL+SYSRET 2x35 cycles + ... at 3.2 GHz".
    pub model: String,
}

impl Estimate {
    /// An estimate of `value` by `model`.
    pub fn new(value: f64, model: impl Into<String>) -> Self {
        Estimate {
            value,
            model: model.into(),
        }
    }
}

/// Samples kept and removed by [`tukey_far_out`].
#[derive(Clone, Debug, PartialEq)]
pub struct Cleaned {
    /// Samples inside the fences, in measured order.
    pub kept: Vec<f64>,
    /// Samples outside, in measured order.
    pub removed: Vec<f64>,
}

/// Applies [`OUTLIER_RULE`]. With fewer than 4 samples nothing is removed.
pub fn tukey_far_out(samples: &[f64]) -> Cleaned {
    if samples.len() < 4 {
        return Cleaned {
            kept: samples.to_vec(),
            removed: Vec::new(),
        };
    }
    let q1 = quantile(samples, 0.25);
    let q3 = quantile(samples, 0.75);
    let med = quantile(samples, 0.5);
    let floor = if med != 0.0 {
        0.05 * med.abs()
    } else {
        // A median of zero (a cost hidden by out-of-order execution): floor
        // at the typical magnitude instead.
        let abs: Vec<f64> = samples.iter().map(|x| x.abs()).collect();
        quantile(&abs, 0.9)
    };
    let iqr = (q3 - q1).max(floor);
    if iqr <= 0.0 {
        // No scale to judge by: keep everything finite.
        let (kept, removed) = samples.iter().partition(|x| x.is_finite());
        return Cleaned { kept, removed };
    }
    let (lo, hi) = (q1 - 3.0 * iqr, q3 + 3.0 * iqr);
    let (kept, removed) = samples
        .iter()
        .partition(|&&x| (lo..=hi).contains(&x) && x.is_finite());
    Cleaned { kept, removed }
}

/// One measurement before it becomes a row.
#[derive(Clone, Debug, PartialEq)]
pub struct Sampled {
    /// Stable row name.
    pub name: String,
    /// `takt` or a reference tool.
    pub implementation: String,
    /// Parameters that change the result.
    pub params: Map<String, Value>,
    /// Unit.
    pub unit: String,
    /// Direction.
    pub better: Better,
    /// The method in one line.
    pub method: String,
    /// The estimate made before measuring.
    pub estimate: Option<Estimate>,
    /// Raw samples in measured order.
    pub samples: Vec<f64>,
    /// CPU seconds per sample (user + system, all threads).
    pub cpu_s: f64,
    /// The seed report's figure for this quantity, in this row's unit.
    pub published: Option<f64>,
    /// Extra facts for `detail` (curves, counts).
    pub extra: Map<String, Value>,
}

impl Sampled {
    /// A takt measurement named `name` in `unit`.
    pub fn new(name: &str, unit: &str, better: Better, method: impl Into<String>) -> Self {
        Sampled {
            name: name.into(),
            implementation: "takt".into(),
            params: Map::new(),
            unit: unit.into(),
            better,
            method: method.into(),
            estimate: None,
            samples: Vec::new(),
            cpu_s: 0.0,
            published: None,
            extra: Map::new(),
        }
    }

    /// Adds a parameter.
    pub fn param(mut self, k: &str, v: impl Into<Value>) -> Self {
        self.params.insert(k.into(), v.into());
        self
    }

    /// Sets the estimate.
    pub fn estimate(mut self, e: Estimate) -> Self {
        self.estimate = Some(e);
        self
    }

    /// Sets the seed's published figure.
    pub fn published(mut self, v: f64) -> Self {
        self.published = Some(v);
        self
    }

    /// Adds an extra detail.
    pub fn extra(mut self, k: &str, v: impl Into<Value>) -> Self {
        self.extra.insert(k.into(), v.into());
        self
    }

    /// Sets samples and CPU time per sample.
    pub fn with_samples(mut self, samples: Vec<f64>, cpu_s: f64) -> Self {
        self.samples = samples;
        self.cpu_s = cpu_s;
        self
    }

    /// The row: statistics over the samples kept by the outlier rule; the
    /// `detail` map holds `method`, `estimate`, `estimate_model`, `p99`,
    /// `samples_total`, `outliers_removed`, `outlier_rule`, `removed` and
    /// any extras.
    ///
    /// # Panics
    /// If there are no samples.
    pub fn into_row(self) -> ResultRow {
        let cleaned = tukey_far_out(&self.samples);
        let p99 = quantile(&cleaned.kept, 0.99);
        let mut detail = Map::new();
        detail.insert("method".into(), json!(self.method));
        if let Some(e) = self.estimate.as_ref().filter(|e| e.value.is_finite()) {
            detail.insert("estimate".into(), json!(e.value));
            detail.insert("estimate_model".into(), json!(e.model));
        } else if let Some(e) = &self.estimate {
            detail.insert("estimate_model".into(), json!(e.model));
        }
        detail.insert("p99".into(), json!(p99));
        detail.insert("samples_total".into(), json!(self.samples.len()));
        detail.insert("outliers_removed".into(), json!(cleaned.removed.len()));
        detail.insert("outlier_rule".into(), json!("tukey_far_out_3iqr"));
        if !cleaned.removed.is_empty() {
            detail.insert("removed".into(), json!(cleaned.removed));
        }
        detail.extend(self.extra);
        let mut row = ResultRow::new(
            self.name,
            self.implementation,
            self.params,
            self.unit,
            self.better,
            cleaned.kept,
            self.cpu_s,
        )
        .with_detail(detail);
        row.published = self.published;
        row
    }
}

/// Collects samples from `one` (which returns one sample) after `warmup`
/// discarded calls, until `budget` is spent and at least `min` samples are
/// taken, never more than `max`. Returns the samples and CPU s per sample.
pub fn collect(
    warmup: usize,
    min: usize,
    max: usize,
    budget: Duration,
    mut one: impl FnMut() -> f64,
) -> (Vec<f64>, f64) {
    for _ in 0..warmup {
        std::hint::black_box(one());
    }
    let cpu0 = takt_sched::process_cpu_time();
    let t0 = Instant::now();
    let mut out = Vec::with_capacity(min.max(16));
    while out.len() < max && (out.len() < min || t0.elapsed() < budget) {
        out.push(one());
        if crate::interrupted().is_some() {
            break;
        }
    }
    let cpu = takt_sched::process_cpu_time().saturating_sub(cpu0);
    let n = out.len().max(1) as f64;
    (out, cpu.as_secs_f64() / n)
}

/// One measurement of a [`collect_turns`] set: `warmup` discarded calls,
/// then at least `min` and at most `max` samples of `one`.
pub(crate) struct Turn<'a> {
    /// Discarded calls before the first sample.
    pub(crate) warmup: usize,
    /// Samples taken whatever the budget.
    pub(crate) min: usize,
    /// Samples never exceeded.
    pub(crate) max: usize,
    /// Takes one sample.
    pub(crate) one: Box<dyn FnMut() -> f64 + 'a>,
}

impl<'a> Turn<'a> {
    /// A turn of `one` with these bounds.
    pub(crate) fn new(
        warmup: usize,
        min: usize,
        max: usize,
        one: impl FnMut() -> f64 + 'a,
    ) -> Self {
        Turn {
            warmup,
            min,
            max,
            one: Box::new(one),
        }
    }
}

/// [`collect`] for several measurements taking turns: each round takes one
/// sample of every measurement that has fewer than its `max`, until
/// `budget` (for the whole set) is spent and each has its `min`. Returns,
/// per measurement in order, its samples and CPU s per sample.
///
/// Why turns: a slow spell of the host (a neighbour on the SMT sibling, a
/// vCPU descheduled) lasting a second would otherwise fall on every sample
/// of whichever measurement ran then and move its median; taking turns
/// spreads it over all of them, a minority of each one's samples, which
/// the medians ride out.
pub(crate) fn collect_turns(budget: Duration, mut turns: Vec<Turn<'_>>) -> Vec<(Vec<f64>, f64)> {
    for t in turns.iter_mut() {
        for _ in 0..t.warmup {
            std::hint::black_box((t.one)());
        }
    }
    // CPU time is read once for the set and shared out by each
    // measurement's part of the wall time (one clock read per sample, no
    // system call between samples).
    let clock = takt_sched::clock();
    let mut out: Vec<(Vec<f64>, u64)> = turns
        .iter()
        .map(|t| (Vec::with_capacity(t.min.max(16)), 0))
        .collect();
    let cpu0 = takt_sched::thread_cpu_time();
    let t0 = Instant::now();
    loop {
        let short = turns.iter().zip(&out).any(|(t, (s, _))| s.len() < t.min);
        let open = turns.iter().zip(&out).any(|(t, (s, _))| s.len() < t.max);
        if !open || (!short && t0.elapsed() >= budget) {
            break;
        }
        for (t, (samples, ticks)) in turns.iter_mut().zip(out.iter_mut()) {
            if samples.len() >= t.max {
                continue;
            }
            let w0 = clock.now();
            samples.push((t.one)());
            *ticks += clock.now().saturating_sub(w0);
        }
        if crate::interrupted().is_some() {
            break;
        }
    }
    let cpu = takt_sched::thread_cpu_time()
        .saturating_sub(cpu0)
        .as_secs_f64();
    let all = out.iter().map(|(_, w)| *w).sum::<u64>().max(1) as f64;
    out.into_iter()
        .map(|(s, ticks)| {
            let n = s.len().max(1) as f64;
            (s, cpu * ticks as f64 / all / n)
        })
        .collect()
}

/// The opening timestamp of a timed region: `lfence; rdtsc; lfence`
/// ([`takt_sched::tsc_start`]), so neither earlier nor later instructions
/// overlap the counter read.
#[inline(always)]
pub fn start() -> u64 {
    takt_sched::tsc_start()
}

/// Nanoseconds between two TSC readings.
#[inline]
pub fn ticks_ns(t0: u64, t1: u64) -> f64 {
    let c = takt_sched::clock();
    c.ticks_to_ns(t1.saturating_sub(t0)) as f64
}

/// The measured median over the CSE 221 report's published figure (both in
/// the row's unit: [`Sampled::published`] is converted to it), when the row
/// has both and the figure is not zero.
pub fn published_ratio(r: &ResultRow) -> Option<f64> {
    let p = r.published.filter(|p| *p != 0.0 && p.is_finite())?;
    Some(r.median()? / p)
}

/// Renders rows as the `takt machine` tables: one per family and unit,
/// with a column per parameter and the estimate, median, the CSE 221
/// report's published figure and the median over it (where the report has
/// one), mean, stddev, min, p99, sample count and outliers removed; then
/// every row's method and estimate model.
pub fn render_rows(doc: &Document) -> String {
    let get = |r: &ResultRow, k: &str| r.detail.get(k).and_then(Value::as_f64);
    let stat = |r: &ResultRow, f: fn(&takt_measure::stats::Summary) -> f64| {
        r.summary
            .as_ref()
            .map(|s| fmt_num(f(s)))
            .unwrap_or_default()
    };
    let section = |r: &ResultRow| {
        r.detail
            .get("family")
            .and_then(Value::as_str)
            .map_or_else(|| r.name.clone(), str::to_string)
    };
    let mut out = String::new();
    for mut g in group_rows(&doc.results, section) {
        let lifted = g.lift_constants();
        let u = g.unit.clone();
        let title = if lifted.is_empty() {
            format!("{} ({u})", g.section)
        } else {
            format!("{} ({u}; {})", g.section, lifted.join(", "))
        };
        let mut t = g.param_columns(Table::titled(title).text("measurement").text("impl"));
        t = t
            .number(format!("estimate ({u})"))
            .number(format!("median ({u})"))
            .number(format!("CSE 221 ({u})"))
            .number("÷ CSE 221")
            .number("mean")
            .number("stddev")
            .number("min")
            .number("p99")
            .number("n")
            .number("outliers");
        for r in &g.rows {
            let mut cells = vec![r.name.clone(), r.implementation.clone()];
            cells.extend(g.param_cells(r));
            cells.extend([
                get(r, "estimate").map(fmt_num).unwrap_or_default(),
                r.value_text(),
                r.published.map(fmt_num).unwrap_or_default(),
                published_ratio(r)
                    .map(|x| format!("{x:.2}"))
                    .unwrap_or_default(),
                stat(r, |s| s.mean),
                stat(r, |s| s.stddev),
                stat(r, |s| s.min),
                get(r, "p99").map(fmt_num).unwrap_or_default(),
                r.summary.as_ref().map_or(0, |s| s.runs).to_string(),
                r.detail
                    .get("outliers_removed")
                    .and_then(Value::as_u64)
                    .map(|n| n.to_string())
                    .unwrap_or_default(),
            ]);
            t.push(cells);
        }
        t.drop_empty_columns();
        out.push_str(&t.render());
        out.push('\n');
    }
    out.push_str("methods:\n");
    let mut seen = std::collections::BTreeSet::new();
    for r in &doc.results {
        if let Some(m) = r.detail.get("method").and_then(Value::as_str) {
            if seen.insert((r.name.clone(), r.implementation.clone())) {
                let model = r
                    .detail
                    .get("estimate_model")
                    .and_then(Value::as_str)
                    .map(|m| format!("\n      estimate: {m}"))
                    .unwrap_or_default();
                out.push_str(&format!(
                    "  {} [{}]: {m}{model}\n",
                    r.name, r.implementation
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn far_out_samples_are_removed() {
        let mut s: Vec<f64> = (0..50).map(|i| 100.0 + (i % 5) as f64).collect();
        s.push(1000.0); // an interrupted batch
        s.push(10.0); // a batch that lost its work (impossible, but symmetric)
        let c = tukey_far_out(&s);
        assert_eq!(c.removed, vec![1000.0, 10.0]);
        assert_eq!(c.kept.len(), 50);
    }

    #[test]
    fn skewed_but_plausible_samples_stay() {
        // A right tail within 3 IQR of Q3 is kept.
        let s = [10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 25.0];
        assert!(tukey_far_out(&s).removed.is_empty());
    }

    #[test]
    fn quantized_equal_samples_are_all_kept() {
        // 90% at 25 ticks, some at 26 and 27: IQR is 0, floored at 5%.
        let mut s = vec![25.0; 90];
        s.extend([26.0; 8]);
        s.extend([27.0; 2]);
        let c = tukey_far_out(&s);
        assert!(c.removed.is_empty(), "{:?}", c.removed);
        s.push(2500.0);
        assert_eq!(tukey_far_out(&s).removed, vec![2500.0]);
    }

    #[test]
    fn zero_median_keeps_small_noise() {
        let mut s = vec![0.0; 60];
        s.extend([0.01, -0.01, 0.02, 0.01, 0.0, -0.02]);
        let c = tukey_far_out(&s);
        assert!(c.removed.is_empty(), "{:?}", c.removed);
    }

    #[test]
    fn few_samples_are_kept() {
        assert_eq!(tukey_far_out(&[1.0, 100.0, 1e6]).kept.len(), 3);
    }

    #[test]
    fn row_carries_detail() {
        let mut s: Vec<f64> = (0..20).map(|i| 50.0 + i as f64 * 0.1).collect();
        s.push(5000.0);
        let row = Sampled::new("syscall_getpid", "ns", Better::Lower, "raw syscall")
            .param("cpu", 0)
            .estimate(Estimate::new(60.0, "model"))
            .with_samples(s, 0.01)
            .into_row();
        assert_eq!(row.summary.as_ref().unwrap().runs, 20);
        assert_eq!(row.detail["outliers_removed"], 1);
        assert_eq!(row.detail["samples_total"], 21);
        assert_eq!(row.detail["estimate"], 60.0);
        assert!(row.detail["p99"].as_f64().unwrap() < 52.0);
        let v = serde_json::to_value(&row).unwrap();
        assert_eq!(v["detail"]["method"], "raw syscall");
    }

    #[test]
    fn collect_respects_min_and_max() {
        let (s, _) = collect(1, 5, 7, Duration::ZERO, || 1.0);
        assert_eq!(s.len(), 5);
        let (s, _) = collect(0, 1, 7, Duration::from_secs(60), || 1.0);
        assert_eq!(s.len(), 7);
    }

    #[test]
    fn turns_alternate_and_respect_each_bound() {
        let log = std::cell::RefCell::new(Vec::new());
        let turn = |id: u8, warmup, min, max| {
            let log = &log;
            Turn::new(warmup, min, max, move || {
                log.borrow_mut().push(id);
                f64::from(id)
            })
        };
        // No budget: every turn stops at its min; warm-ups come first and
        // are not samples; the rounds alternate.
        let sets = collect_turns(
            Duration::ZERO,
            vec![turn(1, 2, 3, 9), turn(2, 0, 1, 9), turn(3, 0, 2, 9)],
        );
        let lens: Vec<usize> = sets.iter().map(|(s, _)| s.len()).collect();
        assert_eq!(lens, [3, 3, 3], "a round samples every open turn");
        assert!(sets[1].0.iter().all(|&v| v == 2.0));
        assert_eq!(*log.borrow(), [1, 1, 1, 2, 3, 1, 2, 3, 1, 2, 3]);
        // A long budget: each stops at its max, the others go on.
        log.borrow_mut().clear();
        let sets = collect_turns(
            Duration::from_secs(60),
            vec![turn(1, 0, 1, 2), turn(2, 0, 1, 4)],
        );
        let lens: Vec<usize> = sets.iter().map(|(s, _)| s.len()).collect();
        assert_eq!(lens, [2, 4]);
        assert_eq!(*log.borrow(), [1, 2, 1, 2, 2, 2]);
    }

    #[test]
    fn the_table_shows_the_published_figure_and_the_ratio() {
        let mut doc = takt_measure::result::DocumentBuilder::start("machine");
        doc.push(
            Sampled::new("syscall_getpid", "ns", Better::Lower, "raw syscall")
                .with_samples(vec![110.0, 110.0, 110.0], 0.0)
                .published(55.0)
                .into_row(),
        );
        doc.push(
            Sampled::new("clock_read", "ns", Better::Lower, "rdtsc")
                .with_samples(vec![20.0, 20.0, 20.0], 0.0)
                .into_row(),
        );
        let doc = doc.finish();
        assert_eq!(published_ratio(&doc.results[0]), Some(2.0));
        assert_eq!(published_ratio(&doc.results[1]), None);
        let text = render_rows(&doc);
        assert!(
            text.contains("CSE 221 (ns)") && text.contains("÷ CSE 221"),
            "{text}"
        );
        let line = text
            .lines()
            .find(|l| l.contains("55.0"))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(line.contains("110") && line.contains("2.00"), "{line}");
    }
}
