//! One result row: a measured quantity with its statistics and raw samples.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
pub use takt_measure::result::{Bound, BoundKind};

/// Whether larger or smaller values of a row are better.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    /// Smaller is better (latencies, ns per message).
    Lower,
    /// Larger is better (throughput, speedup).
    Higher,
}

impl Better {
    /// The spelling in documents and in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Better::Lower => "lower",
            Better::Higher => "higher",
        }
    }

    /// Parses the spelling of [`Better::as_str`].
    pub fn parse(s: &str) -> Option<Better> {
        match s {
            "lower" => Some(Better::Lower),
            "higher" => Some(Better::Higher),
            _ => None,
        }
    }
}

/// A row of a result document, as validated on the way in and as stored.
///
/// Invariants (checked by [`crate::validate_document`]): a measured row has
/// `median`, `min`, `max` and `mean` with `min <= median <= max`, `min <=
/// mean <= max`, `runs >= 1`, every number finite, and the interval's
/// bounds ordered; a row that found only a bound ("< 50", "≥ 35,000") has
/// none of the four and its `bound` set, and a row with neither (a figure
/// that was not comparable) has none of them and says why in `note`.
/// `ci95` is `None` when the document holds `null` bounds (a non-finite
/// interval serializes as `null`) or none.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Stable benchmark name.
    pub name: String,
    /// `takt` or the peer measured in the same run.
    #[serde(rename = "impl")]
    pub implementation: String,
    /// Every parameter that changes the result.
    pub params: Map<String, Value>,
    /// Explicit unit.
    pub unit: String,
    /// Direction of improvement.
    pub better: Better,
    /// Median of the samples (`None` for a bound or a row without a value).
    pub median: Option<f64>,
    /// Smallest sample.
    pub min: Option<f64>,
    /// Largest sample.
    pub max: Option<f64>,
    /// Mean of the samples.
    pub mean: Option<f64>,
    /// Sample standard deviation, when the document has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stddev: Option<f64>,
    /// Student-t 95% confidence interval of the mean.
    pub ci95: Option<[f64; 2]>,
    /// Number of repetitions the statistics are over (0 for a bound).
    pub runs: u64,
    /// CPU time (user + system, all threads) per repetition, seconds.
    pub cpu_s: f64,
    /// The raw samples in the order measured (empty when the document
    /// carried none).
    #[serde(default)]
    pub samples: Vec<f64>,
    /// The bound the row found in place of a value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<Bound>,
    /// The seed's published figure, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published: Option<f64>,
    /// A remark on the row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Suite-specific facts that are not parameters.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub detail: Map<String, Value>,
}

impl Row {
    /// The median as a table shows it: the number, the bound ("≥ 35,000
    /// (generator)"), or "–".
    pub fn value_text(&self) -> String {
        match (self.median, &self.bound) {
            (Some(m), _) => takt_measure::table::fmt_num(m),
            (None, Some(b)) => b.to_string(),
            (None, None) => "–".into(),
        }
    }

    /// The parameters as canonical JSON (keys sorted at every level): the
    /// form rows are matched by across runs.
    pub fn params_key(&self) -> String {
        canonical_json(&Value::Object(self.params.clone()))
    }

    /// `key=value` pairs of the parameters, keys sorted.
    pub fn params_text(&self) -> String {
        let mut keys: Vec<&String> = self.params.keys().collect();
        keys.sort();
        keys.iter()
            .map(|k| match &self.params[*k] {
                Value::String(s) => format!("{k}={s}"),
                other => format!("{k}={other}"),
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// `v` as JSON text with object keys sorted at every level, whatever map
/// order serde_json was built with.
pub(crate) fn canonical_json(v: &Value) -> String {
    fn write(v: &Value, out: &mut String) {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                out.push('{');
                for (i, k) in keys.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String((*k).clone()).to_string());
                    out.push(':');
                    write(&m[*k], out);
                }
                out.push('}');
            }
            Value::Array(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(x, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    write(v, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_json_sorts_keys_at_every_level() {
        let v = json!({"b": 1, "a": {"y": [2, {"q": 1, "p": 0}], "x": "s"}});
        assert_eq!(
            canonical_json(&v),
            r#"{"a":{"x":"s","y":[2,{"p":0,"q":1}]},"b":1}"#
        );
    }
}
