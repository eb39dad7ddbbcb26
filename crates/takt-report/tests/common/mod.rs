//! Fixture documents and report inputs shared by the integration tests.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::Value;
use takt_report::input::{Outcome, ReportInput, RunMeta, Stage};

pub fn fixture(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn measured(stage: Stage, command: &str) -> (Stage, Outcome) {
    (
        stage,
        Outcome::Measured {
            command: command.into(),
            wall_s: 30.0,
            document: fixture(stage.name()),
        },
    )
}

/// Every planned stage measured from the fixtures; sweep and robustness
/// not measured.
pub fn full_input() -> ReportInput {
    ReportInput {
        meta: RunMeta {
            command: "takt report --quick".into(),
            started: "2026-11-24T12:00:00Z".into(),
            wall_s: 240.0,
            quick: true,
            reductions: vec![
                "machine: takt machine --quick without the net and fs families".into(),
            ],
            run_id: None,
        },
        stages: vec![
            measured(Stage::Machine, "takt machine --json --quick"),
            measured(Stage::Agents, "takt bench agents --quick --json --peers"),
            measured(Stage::Sme, "takt bench sme --quick --json"),
            measured(Stage::Sip, "takt sip load --json --quick"),
            measured(Stage::Capacity, "takt sip capacity --json --quick"),
            (
                Stage::Sweep,
                Outcome::NotMeasured {
                    reason: "takt report does not run it".into(),
                    command: Some("takt sip sweep --json".into()),
                },
            ),
            (
                Stage::Robustness,
                Outcome::NotMeasured {
                    reason: "takt report does not run it".into(),
                    command: Some("takt sip torture --json".into()),
                },
            ),
            measured(Stage::Remote, "takt bench remote --json --quick"),
        ],
        changes: None,
    }
}

/// A fresh directory under the system's temporary directory.
pub fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "takt-report-{tag}-{}-{:x}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A document of `suite` made from the capacity fixture: its machine
/// block and started time, with `rows` as its results.
pub fn document(suite: &str, rows: Vec<Value>) -> Value {
    let mut d = fixture("capacity");
    d["suite"] = Value::from(suite);
    d["results"] = Value::Array(rows);
    d
}

/// A result row with five samples around `median`.
pub fn row(name: &str, target: &str, params: Value, unit: &str, median: f64) -> Value {
    let samples: Vec<f64> = [0.98, 0.99, 1.0, 1.01, 1.02]
        .iter()
        .map(|f| f * median)
        .collect();
    serde_json::json!({
        "name": name, "impl": target, "params": params, "unit": unit, "better": "higher",
        "median": median, "stddev": 0.014 * median, "min": samples[0], "max": samples[4], "mean": median,
        "ci95": [0.98 * median, 1.02 * median], "runs": 5, "cpu_s": 0.5, "samples": samples
    })
}
