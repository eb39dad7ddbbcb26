//! Fixture documents and report inputs shared by the integration tests.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::Value;
use takt_report::input::{Outcome, ReportInput, RunMeta, Stage};

fn fixture(name: &str) -> Value {
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

/// Every stage measured from the fixtures except `remote`.
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
            (
                Stage::Remote,
                Outcome::NotMeasured {
                    reason: "takt bench remote is not part of this build yet".into(),
                    command: None,
                },
            ),
        ],
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
