//! Result documents taken as JSON and checked against the conventions'
//! shape, so the store keeps working while the suites' document types
//! grow extra fields.
//!
//! A document is an object with `takt`, `suite`, `started` (strings),
//! `machine` (an object) and `results` (an array of rows). A row has
//! `name`, `impl`, `unit` (strings), `params` (an object), `better`
//! (`"lower"` or `"higher"`), `median`, `min`, `max`, `mean`, `cpu_s`
//! (numbers), `ci95` (two numbers, or `null`s for an unbounded interval)
//! and `runs` (a positive integer); `samples` (numbers), `stddev`,
//! `published`, `note` and `detail` (an object) are optional. A row that
//! found only a bound has `null` for `median`, `min`, `max`, `mean` and
//! `ci95` and a `bound` (`{"kind": "upper"|"lower", "value": number,
//! "limit": string}`); a row with neither a value nor a bound has the same
//! `null`s and a `note` saying why. Any other field is kept in the
//! verbatim copy and otherwise ignored.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::row::{Better, Row};

/// A validated result document: the fields the store indexes, its rows,
/// and the whole document verbatim.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Document {
    /// Suite name (`agents`, `sme`, `machine`, `sip`, ...).
    pub suite: String,
    /// When the suite's run started (RFC 3339).
    pub started: String,
    /// takt version that wrote it.
    pub takt: String,
    /// The rows, in document order.
    pub rows: Vec<Row>,
    /// The document as given.
    pub body: Value,
}

/// Checks that `doc` is a result document and extracts its rows.
/// `index` is the document's position in the caller's batch and is only
/// used in the error.
pub fn validate_document(index: usize, doc: &Value) -> Result<Document> {
    let bad = |at: String, reason: &str| Error::InvalidDocument {
        index,
        at,
        reason: reason.to_string(),
    };
    let top = doc
        .as_object()
        .ok_or_else(|| bad("(top level)".into(), "not a JSON object"))?;
    let string = |m: &Map<String, Value>, key: &str, at: &str| -> Result<String> {
        match m.get(key) {
            Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
            Some(Value::String(_)) => Err(bad(join(at, key), "empty string")),
            Some(_) => Err(bad(join(at, key), "not a string")),
            None => Err(bad(join(at, key), "missing")),
        }
    };
    let takt = string(top, "takt", "")?;
    let suite = string(top, "suite", "")?;
    let started = string(top, "started", "")?;
    if !top.get("machine").is_some_and(Value::is_object) {
        return Err(bad("machine".into(), "missing or not an object"));
    }
    let results = top
        .get("results")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("results".into(), "missing or not an array"))?;
    let mut rows = Vec::with_capacity(results.len());
    for (i, r) in results.iter().enumerate() {
        let at = format!("results[{i}]");
        let m = r
            .as_object()
            .ok_or_else(|| bad(at.clone(), "not an object"))?;
        let number = |key: &str| -> Result<f64> {
            m.get(key)
                .and_then(Value::as_f64)
                .ok_or_else(|| bad(join(&at, key), "missing or not a number"))
        };
        let opt_number = |key: &str| -> Result<Option<f64>> {
            match m.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => v
                    .as_f64()
                    .map(Some)
                    .ok_or_else(|| bad(join(&at, key), "not a number")),
            }
        };
        let object = |key: &str, required: bool| -> Result<Map<String, Value>> {
            match m.get(key) {
                Some(Value::Object(o)) => Ok(o.clone()),
                None if !required => Ok(Map::new()),
                _ => Err(bad(join(&at, key), "missing or not an object")),
            }
        };
        let better = m
            .get("better")
            .and_then(Value::as_str)
            .and_then(Better::parse)
            .ok_or_else(|| bad(join(&at, "better"), "missing or not \"lower\"/\"higher\""))?;
        let measured = !matches!(m.get("median"), None | Some(Value::Null));
        let bound = match m.get("bound") {
            None | Some(Value::Null) => None,
            Some(b) => Some(
                serde_json::from_value::<crate::row::Bound>(b.clone())
                    .map_err(|e| bad(join(&at, "bound"), &e.to_string()))?,
            ),
        };
        if measured && bound.is_some() {
            return Err(bad(at, "both a median and a bound"));
        }
        if !measured {
            for key in ["min", "max", "mean"] {
                if !matches!(m.get(key), None | Some(Value::Null)) {
                    return Err(bad(join(&at, key), "a number beside a null median"));
                }
            }
            if bound.is_none() && !m.get("note").is_some_and(Value::is_string) {
                return Err(bad(
                    join(&at, "median"),
                    "null without a bound or a note saying why",
                ));
            }
        }
        let ci95 = match m.get("ci95").and_then(Value::as_array).map(Vec::as_slice) {
            _ if !measured => None,
            Some([Value::Null, Value::Null]) => None,
            Some([lo, hi]) => match (lo.as_f64(), hi.as_f64()) {
                (Some(lo), Some(hi)) if lo <= hi => Some([lo, hi]),
                (Some(_), Some(_)) => {
                    return Err(bad(join(&at, "ci95"), "lower bound above upper"))
                }
                _ => return Err(bad(join(&at, "ci95"), "bounds are not numbers")),
            },
            _ => return Err(bad(join(&at, "ci95"), "missing or not a pair")),
        };
        let runs = m
            .get("runs")
            .and_then(Value::as_u64)
            .filter(|&n| n >= 1 || !measured)
            .ok_or_else(|| bad(join(&at, "runs"), "missing or not a positive integer"))?;
        let samples = match m.get("samples") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .enumerate()
                .map(|(j, s)| {
                    s.as_f64()
                        .ok_or_else(|| bad(format!("{at}.samples[{j}]"), "not a number"))
                })
                .collect::<Result<Vec<f64>>>()?,
            Some(_) => return Err(bad(join(&at, "samples"), "not an array")),
        };
        let note = match m.get("note") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(bad(join(&at, "note"), "not a string")),
        };
        let row = Row {
            name: string(m, "name", &at)?,
            implementation: string(m, "impl", &at)?,
            params: object("params", true)?,
            unit: string(m, "unit", &at)?,
            better,
            median: measured.then(|| number("median")).transpose()?,
            min: measured.then(|| number("min")).transpose()?,
            max: measured.then(|| number("max")).transpose()?,
            mean: measured.then(|| number("mean")).transpose()?,
            stddev: opt_number("stddev")?,
            ci95,
            runs,
            cpu_s: number("cpu_s")?,
            samples,
            bound,
            published: opt_number("published")?,
            note,
            detail: object("detail", false)?,
        };
        if let (Some(median), Some(min), Some(max), Some(mean)) =
            (row.median, row.min, row.max, row.mean)
        {
            if !(min <= median && median <= max) {
                return Err(bad(at, "median outside [min, max]"));
            }
            if !(min <= mean && mean <= max) {
                return Err(bad(at, "mean outside [min, max]"));
            }
        }
        rows.push(row);
    }
    Ok(Document {
        suite,
        started,
        takt,
        rows,
        body: doc.clone(),
    })
}

fn join(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_string()
    } else {
        format!("{at}.{key}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    pub(crate) fn doc() -> Value {
        json!({
            "takt": "0.1.0", "suite": "agents", "started": "2026-11-22T10:00:00Z",
            "machine": {"cpu": "x", "cpus": 2},
            "results": [{
                "name": "ping_pong", "impl": "takt", "params": {"messages": 10},
                "unit": "ns/msg", "better": "lower",
                "median": 12.4, "min": 12.1, "max": 13.0, "mean": 12.5,
                "stddev": 0.3, "ci95": [12.2, 12.8], "runs": 5, "cpu_s": 0.41,
                "samples": [12.1, 12.3, 12.4, 12.7, 13.0],
                "detail": {"method": "x"}, "extra": true
            }]
        })
    }

    #[test]
    fn a_conventions_document_validates() {
        let d = validate_document(0, &doc()).unwrap();
        assert_eq!(d.suite, "agents");
        assert_eq!(d.rows.len(), 1);
        assert_eq!(d.rows[0].samples.len(), 5);
        assert_eq!(d.rows[0].ci95, Some([12.2, 12.8]));
        assert_eq!(d.rows[0].detail["method"], "x");
    }

    #[test]
    fn null_interval_is_unbounded() {
        let mut v = doc();
        v["results"][0]["ci95"] = json!([null, null]);
        assert_eq!(validate_document(0, &v).unwrap().rows[0].ci95, None);
    }

    #[test]
    fn each_defect_is_named_with_its_place() {
        type Mutation = Box<dyn Fn(&mut Value)>;
        let cases: Vec<(Mutation, &str)> = vec![
            (
                Box::new(|v| *v = json!([1, 2])),
                "(top level): not a JSON object",
            ),
            (
                Box::new(|v| drop(v.as_object_mut().unwrap().remove("suite"))),
                "suite: missing",
            ),
            (
                Box::new(|v| v["machine"] = json!(3)),
                "machine: missing or not an object",
            ),
            (
                Box::new(|v| v["results"] = json!({})),
                "results: missing or not an array",
            ),
            (
                Box::new(|v| v["results"][0]["median"] = json!("fast")),
                "results[0].median",
            ),
            (
                Box::new(|v| v["results"][0]["better"] = json!("up")),
                "results[0].better",
            ),
            (
                Box::new(|v| v["results"][0]["runs"] = json!(0)),
                "results[0].runs",
            ),
            (
                Box::new(|v| v["results"][0]["ci95"] = json!([2, 1])),
                "lower bound above upper",
            ),
            (
                Box::new(|v| v["results"][0]["samples"][2] = json!(null)),
                "results[0].samples[2]",
            ),
            (
                Box::new(|v| v["results"][0]["median"] = json!(99)),
                "median outside [min, max]",
            ),
            (
                Box::new(|v| v["results"][0]["params"] = json!("a=1")),
                "results[0].params",
            ),
        ];
        for (mutate, expect) in cases {
            let mut v = doc();
            mutate(&mut v);
            let e = validate_document(3, &v).unwrap_err().to_string();
            assert!(e.starts_with("document 3 is not a result document"), "{e}");
            assert!(e.contains(expect), "{e} lacks {expect:?}");
        }
    }
}
