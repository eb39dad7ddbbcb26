//! What a report is made from: the run's metadata and, per stage, either
//! its result document or the reason it was not measured.
//!
//! The same input comes from a fresh run of the laboratory's plan, from a
//! report directory on disk ([`ReportInput::load_dir`]) or from the run
//! records (documents as JSON values, [`ReportInput::attach`]), so
//! rendering never depends on how the documents were obtained.

use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ReportError;

/// A stage of the laboratory, and the report's section of its result
/// document.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    /// `takt machine`: the CSE 221 suite.
    Machine,
    /// `takt bench agents --peers`.
    Agents,
    /// `takt bench sme`.
    Sme,
    /// `takt sip load`: per-message costs.
    Sip,
    /// `takt sip capacity`: the 1%-drop capacity of takt, the null relay
    /// and Kamailio.
    Capacity,
    /// `takt sip sweep`: capacity versus worker threads per scheduler
    /// profile; a long run of its own (about 30 minutes).
    Sweep,
    /// `takt sip torture`: overload and fault scenarios; a run of its own.
    Robustness,
    /// `takt bench remote`: agents in two nodes over NATS.
    Remote,
}

impl Stage {
    /// Every stage, in plan order.
    pub const ALL: [Stage; 8] = [
        Stage::Machine,
        Stage::Agents,
        Stage::Sme,
        Stage::Sip,
        Stage::Capacity,
        Stage::Sweep,
        Stage::Robustness,
        Stage::Remote,
    ];

    /// The stage whose documents have this `suite`.
    pub fn of_suite(suite: &str) -> Option<Stage> {
        Stage::ALL.into_iter().find(|s| s.suite() == suite)
    }

    /// The `--only` name, also the document's file stem (`agents.json`).
    pub fn name(self) -> &'static str {
        match self {
            Stage::Machine => "machine",
            Stage::Agents => "agents",
            Stage::Sme => "sme",
            Stage::Sip => "sip",
            Stage::Capacity => "capacity",
            Stage::Sweep => "sweep",
            Stage::Robustness => "robustness",
            Stage::Remote => "remote",
        }
    }

    /// The `suite` of the stage's result document.
    pub fn suite(self) -> &'static str {
        match self {
            Stage::Machine => "machine",
            Stage::Agents => "agents",
            Stage::Sme => "sme",
            Stage::Sip => "sip_load",
            Stage::Capacity => "sip_capacity",
            Stage::Sweep => "sip_sweep",
            Stage::Robustness => "sip_torture",
            Stage::Remote => "remote",
        }
    }

    /// The section title in the report.
    pub fn title(self) -> &'static str {
        match self {
            Stage::Machine => "The machine",
            Stage::Agents => "Agents",
            Stage::Sme => "Synchronous message exchange (SME)",
            Stage::Sip => "SIP proxy: per-message costs",
            Stage::Capacity => "SIP capacity",
            Stage::Sweep => "Scheduler study: capacity versus threads and profiles",
            Stage::Robustness => "SIP robustness: overload and faults",
            Stage::Remote => "Remote agents",
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What happened to one stage.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// The stage ran; its document is `<stage>.json` beside the report.
    Measured {
        /// The exact command that produced the document.
        command: String,
        /// Wall time of the stage, seconds.
        wall_s: f64,
        /// The result document as JSON (a `takt ... --json` document).
        document: Value,
    },
    /// The stage has no document.
    NotMeasured {
        /// Why, for the reader: "install sipp (scripts/setup.sh)",
        /// "interrupted (Ctrl-C)", "not in --only", ...
        reason: String,
        /// The command that would have measured it, if there is one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        command: Option<String>,
    },
}

/// The run as a whole.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    /// The command line of the run (`takt report --quick`).
    pub command: String,
    /// When it started (RFC 3339 UTC).
    pub started: String,
    /// Wall time of the whole run, seconds.
    pub wall_s: f64,
    /// The quick plan (reduced parameters).
    pub quick: bool,
    /// What the plan reduced below the suites' own parameters, one line each.
    #[serde(default)]
    pub reductions: Vec<String>,
    /// The stored run this report was rendered from (`--run ID`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
}

/// Everything a report is rendered from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReportInput {
    /// The run.
    pub meta: RunMeta,
    /// Every stage of [`Stage::ALL`] that the run knows about, in plan order.
    pub stages: Vec<(Stage, Outcome)>,
}

/// The manifest beside the documents: the run and each stage's status.
pub const MANIFEST: &str = "run.json";

#[derive(Serialize, Deserialize)]
struct Manifest {
    meta: RunMeta,
    stages: Vec<ManifestStage>,
}

#[derive(Serialize, Deserialize)]
struct ManifestStage {
    stage: Stage,
    #[serde(flatten)]
    status: ManifestStatus,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
enum ManifestStatus {
    Measured {
        command: String,
        wall_s: f64,
        document: String,
    },
    NotMeasured {
        reason: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        command: Option<String>,
    },
}

impl ReportInput {
    /// The outcome of `stage`; a stage the run does not list was not
    /// planned.
    pub fn outcome(&self, stage: Stage) -> Option<&Outcome> {
        self.stages
            .iter()
            .find(|(s, _)| *s == stage)
            .map(|(_, o)| o)
    }

    /// The document of `stage`, if it was measured.
    pub fn document(&self, stage: Stage) -> Option<&Value> {
        match self.outcome(stage) {
            Some(Outcome::Measured { document, .. }) => Some(document),
            _ => None,
        }
    }

    /// Puts `document` in as the measured outcome of the stage its
    /// `suite` names, replacing what the run had for it; `command` is the
    /// one the document records (`machine.command`) unless given. Returns
    /// the stage, or `None` (and changes nothing) for a document of no
    /// stage's suite.
    pub fn attach(&mut self, document: Value, command: Option<String>) -> Option<Stage> {
        let stage = Stage::of_suite(document.get("suite").and_then(Value::as_str)?)?;
        let command = command.unwrap_or_else(|| recorded_command(&document));
        let outcome = Outcome::Measured {
            command,
            wall_s: 0.0,
            document,
        };
        match self.stages.iter_mut().find(|(s, _)| *s == stage) {
            Some((_, o)) => *o = outcome,
            None => {
                self.stages.push((stage, outcome));
                self.stages.sort_by_key(|(s, _)| *s);
            }
        }
        Some(stage)
    }

    /// Writes `<stage>.json` for every measured stage and the manifest
    /// [`MANIFEST`] into `dir` (created if missing).
    pub fn save_dir(&self, dir: &Path) -> Result<(), ReportError> {
        std::fs::create_dir_all(dir).map_err(|e| ReportError::io(dir, e))?;
        let mut stages = Vec::new();
        for (stage, outcome) in &self.stages {
            let status = match outcome {
                Outcome::Measured {
                    command,
                    wall_s,
                    document,
                } => {
                    let file = format!("{}.json", stage.name());
                    write_json(&dir.join(&file), document)?;
                    ManifestStatus::Measured {
                        command: command.clone(),
                        wall_s: *wall_s,
                        document: file,
                    }
                }
                Outcome::NotMeasured { reason, command } => ManifestStatus::NotMeasured {
                    reason: reason.clone(),
                    command: command.clone(),
                },
            };
            stages.push(ManifestStage {
                stage: *stage,
                status,
            });
        }
        let manifest = Manifest {
            meta: self.meta.clone(),
            stages,
        };
        let value = serde_json::to_value(&manifest).map_err(|e| ReportError::json(dir, e))?;
        write_json(&dir.join(MANIFEST), &value)
    }

    /// Reads a directory written by [`ReportInput::save_dir`].
    pub fn load_dir(dir: &Path) -> Result<ReportInput, ReportError> {
        let path = dir.join(MANIFEST);
        let manifest: Manifest = read_json(&path)
            .and_then(|v| serde_json::from_value(v).map_err(|e| ReportError::json(&path, e)))?;
        let mut stages = Vec::new();
        for s in manifest.stages {
            let outcome = match s.status {
                ManifestStatus::Measured {
                    command,
                    wall_s,
                    document,
                } => {
                    // Only plain file names: a manifest cannot point outside
                    // its directory.
                    if document.contains('/') || document.contains("..") {
                        return Err(ReportError::BadManifest {
                            path,
                            reason: format!("document `{document}` is not a file name"),
                        });
                    }
                    Outcome::Measured {
                        command,
                        wall_s,
                        document: read_json(&dir.join(document))?,
                    }
                }
                ManifestStatus::NotMeasured { reason, command } => {
                    Outcome::NotMeasured { reason, command }
                }
            };
            stages.push((s.stage, outcome));
        }
        Ok(ReportInput {
            meta: manifest.meta,
            stages,
        })
    }
}

/// The command a document records having been made by, or empty.
fn recorded_command(d: &Value) -> String {
    d.pointer("/machine/command")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

fn write_json(path: &Path, value: &Value) -> Result<(), ReportError> {
    let mut text = serde_json::to_string_pretty(value).map_err(|e| ReportError::json(path, e))?;
    text.push('\n');
    std::fs::write(path, text).map_err(|e| ReportError::io(path, e))
}

fn read_json(path: &Path) -> Result<Value, ReportError> {
    let text = std::fs::read_to_string(path).map_err(|e| ReportError::io(path, e))?;
    serde_json::from_str(&text).map_err(|e| ReportError::json(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_find_their_stage_by_suite() {
        assert_eq!(Stage::of_suite("sip_torture"), Some(Stage::Robustness));
        assert_eq!(Stage::of_suite("sip_load"), Some(Stage::Sip));
        assert_eq!(Stage::of_suite("gpu"), None);
    }

    #[test]
    fn a_document_given_on_its_own_replaces_its_stage() {
        let mut input = ReportInput {
            meta: RunMeta {
                command: "takt report --run 3".into(),
                started: "2026-11-24T12:00:00Z".into(),
                wall_s: 0.0,
                quick: false,
                reductions: Vec::new(),
                run_id: Some("3".into()),
            },
            stages: Stage::ALL
                .into_iter()
                .map(|s| {
                    let o = Outcome::NotMeasured {
                        reason: "not in the stored run".into(),
                        command: None,
                    };
                    (s, o)
                })
                .collect(),
        };
        let sme =
            serde_json::json!({"suite": "sme", "machine": {"command": "takt bench sme --json"}});
        assert_eq!(input.attach(sme, None), Some(Stage::Sme));
        assert!(matches!(
            input.outcome(Stage::Sme),
            Some(Outcome::Measured { command, .. }) if command == "takt bench sme --json"
        ));
        assert!(input.document(Stage::Agents).is_none());
        let torture = serde_json::json!({"suite": "sip_torture", "machine": {"command": "takt sip torture --json"}});
        assert_eq!(input.attach(torture, None), Some(Stage::Robustness));
        assert!(matches!(
            input.outcome(Stage::Robustness),
            Some(Outcome::Measured { command, .. }) if command == "takt sip torture --json"
        ));
        assert_eq!(
            input.attach(serde_json::json!({"suite": "gpu"}), None),
            None
        );
        assert_eq!(input.stages.len(), Stage::ALL.len());
    }

    #[test]
    fn a_directory_round_trips() {
        let dir = std::env::temp_dir().join(format!("takt-report-rt-{}", std::process::id()));
        let input = ReportInput {
            meta: RunMeta {
                command: "takt report --quick".into(),
                started: "2026-11-24T12:00:00Z".into(),
                wall_s: 1.5,
                quick: true,
                reductions: vec!["machine: --only timer".into()],
                run_id: None,
            },
            stages: vec![
                (
                    Stage::Sme,
                    Outcome::Measured {
                        command: "takt bench sme --quick --json".into(),
                        wall_s: 1.0,
                        document: serde_json::json!({"suite": "sme", "results": []}),
                    },
                ),
                (
                    Stage::Sip,
                    Outcome::NotMeasured {
                        reason: "install sipp".into(),
                        command: None,
                    },
                ),
            ],
        };
        input.save_dir(&dir).unwrap();
        assert_eq!(ReportInput::load_dir(&dir).unwrap(), input);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
