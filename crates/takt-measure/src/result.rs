//! Result documents: what every measuring `takt` subcommand prints with
//! `--json` (the format is described in this crate's README).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::env::{utc_now_rfc3339, MachineBlock, RunEnvironment};
use crate::stats::Summary;

/// Whether larger or smaller values of a row are better.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    /// Smaller is better (latencies, ns per message).
    Lower,
    /// Larger is better (throughput, speedup).
    Higher,
}

/// One measured quantity: a benchmark, an implementation, its parameters.
///
/// A row holds either statistics over its repetitions (`summary`) or, when
/// the measurement only bounds the quantity ("< 50", "≥ 35,000"), a
/// [`Bound`] and no statistics: a bound is never a number in `median`.
/// In JSON a bound row's `median`, `min`, `max`, `mean`, `stddev` and
/// `ci95` are `null` and its `bound` field holds the bound.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(into = "RowWire", from = "RowWire")]
pub struct ResultRow {
    /// Stable benchmark name (the seed's name where it has one).
    pub name: String,
    /// `takt` or the peer measured in the same run.
    pub implementation: String,
    /// Every parameter that changes the result.
    pub params: Map<String, Value>,
    /// Explicit unit (`ns/msg`, `msg/s`, `us`, ...).
    pub unit: String,
    /// Direction of improvement.
    pub better: Better,
    /// Statistics over the repetitions; `None` for a bound (then `bound`
    /// is set) or a document whose statistics were `null`.
    pub summary: Option<Summary>,
    /// The bound the measurement found in place of a value, if it found
    /// only a bound.
    pub bound: Option<Bound>,
    /// CPU time (user + system, all threads) per repetition, in seconds.
    pub cpu_s: f64,
    /// The raw samples, in the order measured.
    pub samples: Vec<f64>,
    /// The figure the seed document published for this quantity, if any.
    pub published: Option<f64>,
    /// Free-form remarks (e.g. "cycles scaled down for --quick").
    pub note: Option<String>,
    /// Suite-specific per-row facts that are not parameters (e.g. the
    /// `machine` suite's method line, estimate and outlier bookkeeping).
    /// Absent from the JSON when empty.
    pub detail: Map<String, Value>,
}

/// Which side of the quantity a [`Bound`] is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BoundKind {
    /// The quantity is below `value` ("< 50").
    Upper,
    /// The quantity is at least `value` ("≥ 35,000").
    Lower,
}

impl BoundKind {
    /// The spelling in documents and in the records.
    pub fn as_str(self) -> &'static str {
        match self {
            BoundKind::Upper => "upper",
            BoundKind::Lower => "lower",
        }
    }

    /// Parses the spelling of [`BoundKind::as_str`].
    pub fn parse(s: &str) -> Option<BoundKind> {
        match s {
            "upper" => Some(BoundKind::Upper),
            "lower" => Some(BoundKind::Lower),
            _ => None,
        }
    }
}

/// A bound in place of a measured value: what a measurement found when
/// something stopped it short of the quantity itself.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bound {
    /// `upper` ("< value") or `lower` ("≥ value").
    pub kind: BoundKind,
    /// The bounding value, in the row's unit.
    pub value: f64,
    /// What bounded it: `generator` (the load generator's ceiling),
    /// `rate_floor` (the lowest rate the search may try failed),
    /// `unsettled` (the lowest grid point still failed when the search had
    /// re-bracketed as often as it may), `rate_ceiling` (the search's
    /// highest rate passed), ...
    pub limit: String,
}

impl Bound {
    /// A bound of `kind` at `value`, set by `limit`.
    pub fn new(kind: BoundKind, value: f64, limit: impl Into<String>) -> Self {
        Bound {
            kind,
            value,
            limit: limit.into(),
        }
    }

    /// "< 50" or "≥ 35,000": the relation and the value, without the limit.
    pub fn value_text(&self) -> String {
        let rel = match self.kind {
            BoundKind::Upper => "<",
            BoundKind::Lower => "≥",
        };
        format!("{rel} {}", grouped(self.value))
    }

    /// The limit for people: `rate_floor` → "rate floor".
    pub fn limit_text(&self) -> String {
        self.limit.replace('_', " ")
    }
}

/// "< 50 (rate floor)", "≥ 35,000 (generator)".
impl std::fmt::Display for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.value_text(), self.limit_text())
    }
}

/// `v` rounded to a whole number with thousands separated by commas
/// (`35000.4` → `35,000`); a fraction below 100 keeps three significant
/// digits.
fn grouped(v: f64) -> String {
    if !v.is_finite() || (v.abs() < 100.0 && v.fract() != 0.0) {
        return crate::table::fmt_num(v);
    }
    let digits = format!("{:.0}", v.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if v < 0.0 {
        out.insert(0, '-');
    }
    out
}

/// A row as JSON: the statistics as numbers or `null`.
#[derive(Serialize, Deserialize)]
struct RowWire {
    name: String,
    #[serde(rename = "impl")]
    implementation: String,
    params: Map<String, Value>,
    unit: String,
    better: Better,
    median: Option<f64>,
    #[serde(default)]
    min: Option<f64>,
    #[serde(default)]
    max: Option<f64>,
    #[serde(default)]
    mean: Option<f64>,
    #[serde(default)]
    stddev: Option<f64>,
    #[serde(default)]
    ci95: Option<[Option<f64>; 2]>,
    #[serde(default)]
    runs: usize,
    cpu_s: f64,
    #[serde(default)]
    samples: Vec<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    bound: Option<Bound>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    published: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    detail: Map<String, Value>,
}

impl From<ResultRow> for RowWire {
    fn from(r: ResultRow) -> Self {
        let s = r.summary.as_ref();
        RowWire {
            name: r.name,
            implementation: r.implementation,
            params: r.params,
            unit: r.unit,
            better: r.better,
            median: s.map(|s| s.median),
            min: s.map(|s| s.min),
            max: s.map(|s| s.max),
            mean: s.map(|s| s.mean),
            stddev: s.map(|s| s.stddev),
            ci95: s.map(|s| s.ci95.map(Some)),
            runs: s.map_or(0, |s| s.runs),
            cpu_s: r.cpu_s,
            samples: r.samples,
            bound: r.bound,
            published: r.published,
            note: r.note,
            detail: r.detail,
        }
    }
}

impl From<RowWire> for ResultRow {
    fn from(w: RowWire) -> Self {
        // A document's statistics are whole or absent: a `null` median
        // (a bound, or a row that measured nothing) means no summary.
        let summary = w.median.map(|median| {
            let nan = f64::NAN;
            let ci = w.ci95.unwrap_or([None, None]);
            Summary {
                median,
                min: w.min.unwrap_or(nan),
                max: w.max.unwrap_or(nan),
                mean: w.mean.unwrap_or(nan),
                stddev: w.stddev.unwrap_or(nan),
                ci95: [ci[0].unwrap_or(nan), ci[1].unwrap_or(nan)],
                runs: w.runs,
            }
        });
        ResultRow {
            name: w.name,
            implementation: w.implementation,
            params: w.params,
            unit: w.unit,
            better: w.better,
            summary,
            bound: w.bound,
            cpu_s: w.cpu_s,
            samples: w.samples,
            published: w.published,
            note: w.note,
            detail: w.detail,
        }
    }
}

impl ResultRow {
    /// A row from raw samples.
    pub fn new(
        name: impl Into<String>,
        implementation: impl Into<String>,
        params: Map<String, Value>,
        unit: impl Into<String>,
        better: Better,
        samples: Vec<f64>,
        cpu_s: f64,
    ) -> Self {
        ResultRow {
            summary: Some(Summary::of(&samples)),
            cpu_s,
            samples,
            ..Self::bare(name, implementation, params, unit, better)
        }
    }

    /// A row that found only a bound: no statistics, no samples.
    pub fn bounded(
        name: impl Into<String>,
        implementation: impl Into<String>,
        params: Map<String, Value>,
        unit: impl Into<String>,
        better: Better,
        bound: Bound,
        cpu_s: f64,
    ) -> Self {
        ResultRow {
            bound: Some(bound),
            cpu_s,
            ..Self::bare(name, implementation, params, unit, better)
        }
    }

    /// A row that has neither a value nor a bound (say why in `note`: a
    /// figure that is not comparable, a quantity that could not be
    /// measured): its statistics are `null` in JSON.
    pub fn unmeasured(
        name: impl Into<String>,
        implementation: impl Into<String>,
        params: Map<String, Value>,
        unit: impl Into<String>,
        better: Better,
        note: impl Into<String>,
    ) -> Self {
        ResultRow {
            note: Some(note.into()),
            ..Self::bare(name, implementation, params, unit, better)
        }
    }

    /// The common part of every row: no statistics, bound, samples, CPU
    /// time, published figure, note or detail.
    fn bare(
        name: impl Into<String>,
        implementation: impl Into<String>,
        params: Map<String, Value>,
        unit: impl Into<String>,
        better: Better,
    ) -> Self {
        ResultRow {
            name: name.into(),
            implementation: implementation.into(),
            params,
            unit: unit.into(),
            better,
            summary: None,
            bound: None,
            cpu_s: 0.0,
            samples: Vec::new(),
            published: None,
            note: None,
            detail: Map::new(),
        }
    }

    /// Sets the seed's published figure.
    pub fn with_published(mut self, value: f64) -> Self {
        self.published = Some(value);
        self
    }

    /// Adds a remark.
    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.note = Some(note.into());
        self
    }

    /// Sets the suite-specific detail map.
    pub fn with_detail(mut self, detail: Map<String, Value>) -> Self {
        self.detail = detail;
        self
    }

    /// The median, or `None` for a bound (or a row without statistics).
    pub fn median(&self) -> Option<f64> {
        self.summary.as_ref().map(|s| s.median)
    }

    /// The median as a table shows it: the number, the bound ("≥ 35,000
    /// (generator)"), or "–" for a row with neither.
    pub fn value_text(&self) -> String {
        match (&self.summary, &self.bound) {
            (Some(s), _) => crate::table::fmt_num(s.median),
            (None, Some(b)) => b.to_string(),
            (None, None) => "–".into(),
        }
    }

    /// How many times better this row is than `other` (> 1 means better),
    /// comparing medians in the row's direction; `None` when either is a
    /// bound (a ratio with a bound is not a number).
    pub fn advantage_over(&self, other: &ResultRow) -> Option<f64> {
        let (a, b) = (self.median()?, other.median()?);
        Some(match self.better {
            Better::Lower => b / a,
            Better::Higher => a / b,
        })
    }
}

/// Builds a `params` map: `params![("threads", 2), ("dispatcher", "one_thread")]`.
#[macro_export]
macro_rules! params {
    ($(($k:expr, $v:expr)),* $(,)?) => {{
        #[allow(unused_mut)]
        let mut m = $crate::__serde_json::Map::new();
        $( m.insert(($k).to_string(), $crate::__serde_json::json!($v)); )*
        m
    }};
}

/// A whole result document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Document {
    /// takt version.
    pub takt: String,
    /// Suite name (`agents`, `sme`, `machine`, ...).
    pub suite: String,
    /// When the run started (RFC 3339 UTC).
    pub started: String,
    /// Machine and run conditions.
    pub machine: MachineBlock,
    /// The rows.
    pub results: Vec<ResultRow>,
    /// Remarks that apply to the whole run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Collects rows during a run and closes them into a [`Document`].
#[derive(Debug)]
pub struct DocumentBuilder {
    suite: String,
    started: String,
    env: RunEnvironment,
    results: Vec<ResultRow>,
    notes: Vec<String>,
}

impl DocumentBuilder {
    /// Starts a run of `suite` now.
    pub fn start(suite: impl Into<String>) -> Self {
        DocumentBuilder {
            suite: suite.into(),
            started: utc_now_rfc3339(),
            env: RunEnvironment::start(),
            results: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Adds a row.
    pub fn push(&mut self, row: ResultRow) {
        self.results.push(row);
    }

    /// Adds a run-wide remark.
    pub fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }

    /// The rows so far.
    pub fn rows(&self) -> &[ResultRow] {
        &self.results
    }

    /// Closes the run.
    pub fn finish(self) -> Document {
        Document {
            takt: env!("CARGO_PKG_VERSION").to_string(),
            suite: self.suite,
            started: self.started,
            machine: self.env.finish(),
            results: self.results,
            notes: self.notes,
        }
    }
}

impl Document {
    /// The row of `implementation` with the same name and unit as `row`
    /// whose params include all of `row`'s (a peer row records only the
    /// workload; the takt row adds its dispatcher, spin budget, ...).
    pub fn peer_of<'a>(&'a self, row: &ResultRow, implementation: &str) -> Option<&'a ResultRow> {
        self.results.iter().find(|r| {
            r.implementation == implementation
                && r.name == row.name
                && r.unit == row.unit
                && row.params.iter().all(|(k, v)| r.params.get(k) == Some(v))
        })
    }
}

/// The `idle_latency` row parameter: `none` (the system's idle policy), or
/// the held limit in whole µs, the kernel's granularity (`0us`: idle CPUs
/// Parameters as `key=value` text, keys sorted, strings without quotes
/// (`messages=2000000 placement=one_thread`): progress lines, tables and
/// diffs show parameters this way.
pub fn params_text(params: &Map<String, Value>) -> String {
    let mut keys: Vec<&String> = params.keys().collect();
    keys.sort();
    keys.iter()
        .map(|k| match &params[*k] {
            Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// poll). See [`takt_sched::IdleLatency`].
pub fn idle_latency_param(limit: Option<std::time::Duration>) -> String {
    limit.map_or_else(|| "none".into(), |d| format!("{}us", d.as_micros()))
}

#[cfg(test)]
mod idle_param_tests {
    use super::idle_latency_param;
    use std::time::Duration;

    #[test]
    fn idle_latency_param_names_the_kernel_granularity() {
        assert_eq!(idle_latency_param(None), "none");
        assert_eq!(idle_latency_param(Some(Duration::ZERO)), "0us");
        // the device takes whole microseconds: 900 ns is a 0 µs limit
        assert_eq!(idle_latency_param(Some(Duration::from_nanos(900))), "0us");
        assert_eq!(idle_latency_param(Some(Duration::from_micros(20))), "20us");
    }
}

#[cfg(test)]
mod bound_tests {
    use super::*;
    use serde_json::json;

    fn capacity_bound() -> ResultRow {
        ResultRow::bounded(
            "capacity",
            "kamailio",
            crate::params![("mode", "stateless")],
            "cps",
            Better::Higher,
            Bound::new(BoundKind::Lower, 35_000.0, "generator"),
            1.5,
        )
    }

    #[test]
    fn a_bound_serializes_with_null_statistics_and_the_bound() {
        let v = serde_json::to_value(capacity_bound()).unwrap();
        for k in ["median", "min", "max", "mean", "stddev", "ci95"] {
            assert_eq!(v[k], Value::Null, "{k} of {v}");
        }
        assert_eq!(
            v["bound"],
            json!({"kind": "lower", "value": 35000.0, "limit": "generator"})
        );
        assert_eq!(v["runs"], json!(0));
        assert_eq!(v["samples"], json!([]));
        let back: ResultRow = serde_json::from_value(v).unwrap();
        assert_eq!(back, capacity_bound());
        assert_eq!(back.median(), None);
    }

    #[test]
    fn a_measured_row_keeps_its_numbers_and_has_no_bound_field() {
        let r = ResultRow::new(
            "x",
            "takt",
            Map::new(),
            "ns",
            Better::Lower,
            vec![1.0, 2.0, 3.0],
            0.1,
        );
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["median"], json!(2.0));
        assert_eq!(v["ci95"].as_array().unwrap().len(), 2);
        assert!(v.get("bound").is_none(), "{v}");
        let back: ResultRow = serde_json::from_value(v).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn an_old_document_without_bound_still_parses() {
        let old = json!({
            "name": "ping_pong", "impl": "takt", "params": {"threads": 1},
            "unit": "ns/msg", "better": "lower",
            "median": 12.4, "min": 12.1, "max": 13.0, "mean": 12.5,
            "stddev": 0.3, "ci95": [12.2, 12.8], "runs": 5, "cpu_s": 0.41,
            "samples": [12.4, 12.1, 13.0, 12.6, 12.3]
        });
        let r: ResultRow = serde_json::from_value(old).unwrap();
        assert_eq!(r.bound, None);
        let s = r.summary.unwrap();
        assert_eq!((s.median, s.min, s.max, s.runs), (12.4, 12.1, 13.0, 5));
        assert_eq!(s.ci95, [12.2, 12.8]);
    }

    #[test]
    fn bounds_read_as_relations_and_ratios_with_them_are_not_numbers() {
        let b = capacity_bound();
        assert_eq!(b.value_text(), "≥ 35,000 (generator)");
        let below = Bound::new(BoundKind::Upper, 50.0, "rate_floor");
        assert_eq!(below.to_string(), "< 50 (rate floor)");
        let m = ResultRow::new(
            "capacity",
            "takt",
            Map::new(),
            "cps",
            Better::Higher,
            vec![9_000.0],
            1.0,
        );
        assert_eq!(m.advantage_over(&b), None);
        assert_eq!(b.advantage_over(&m), None);
        assert_eq!(m.advantage_over(&m), Some(1.0));
    }
}

#[cfg(test)]
mod params_text_tests {
    use super::*;

    #[test]
    fn params_read_as_key_value() {
        let p = crate::params![
            ("placement", "one_thread"),
            ("messages", 2_000_000),
            ("spin", true)
        ];
        assert_eq!(
            params_text(&p),
            "messages=2000000 placement=one_thread spin=true"
        );
    }
}
