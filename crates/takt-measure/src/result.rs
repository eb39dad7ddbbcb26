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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResultRow {
    /// Stable benchmark name (the seed's name where it has one).
    pub name: String,
    /// `takt` or the peer measured in the same run.
    #[serde(rename = "impl")]
    pub implementation: String,
    /// Every parameter that changes the result.
    pub params: Map<String, Value>,
    /// Explicit unit (`ns/msg`, `msg/s`, `us`, ...).
    pub unit: String,
    /// Direction of improvement.
    pub better: Better,
    /// Statistics over the repetitions.
    #[serde(flatten)]
    pub summary: Summary,
    /// CPU time (user + system, all threads) per repetition, in seconds.
    pub cpu_s: f64,
    /// The raw samples, in the order measured.
    pub samples: Vec<f64>,
    /// The figure the seed document published for this quantity, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published: Option<f64>,
    /// Free-form remarks (e.g. "cycles scaled down for --quick").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Suite-specific per-row facts that are not parameters (e.g. the
    /// `machine` suite's method line, estimate and outlier bookkeeping).
    /// Absent from the JSON when empty.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub detail: Map<String, Value>,
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
            name: name.into(),
            implementation: implementation.into(),
            params,
            unit: unit.into(),
            better,
            summary: Summary::of(&samples),
            cpu_s,
            samples,
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

    /// How many times better this row is than `other` (> 1 means better),
    /// comparing medians in the row's direction.
    pub fn advantage_over(&self, other: &ResultRow) -> f64 {
        match self.better {
            Better::Lower => other.summary.median / self.summary.median,
            Better::Higher => self.summary.median / other.summary.median,
        }
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
