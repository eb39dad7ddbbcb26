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
    /// What changed since the last report run on this machine, as takt-lab
    /// found it in the run records; `None`: not looked for (a report made
    /// by a program, or a directory written before reports had it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<Changes>,
}

/// What changed since the last report run on this machine: `takt runs
/// diff`'s verdicts between that run and this one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Changes {
    /// This run compared with the latest earlier report run whose
    /// documents name the same machine (`machine.machine_id`).
    Compared(Box<Comparison>),
    /// The records hold no earlier report run from this machine.
    NoEarlierRun {
        /// This machine as the documents name it (`host`, `machine_id`).
        machine: String,
        /// Earlier report runs in the records from other machines (not
        /// compared: their figures say nothing about this one).
        other_machines: usize,
    },
    /// No comparison was made.
    NotCompared {
        /// Why, for the reader.
        reason: String,
    },
}

/// A stored run as the comparison names it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRef {
    /// The run's ID in the records (`takt runs show ID`).
    pub id: i64,
    /// When it started (RFC 3339 UTC).
    pub started: String,
    /// The git commit takt was built from.
    pub commit: String,
    /// The command line of the run.
    pub command: String,
}

/// The earlier run beside this one (see [`Changes::Compared`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// This machine as the documents name it.
    pub machine: String,
    /// The earlier report run.
    pub earlier: RunRef,
    /// This run, as stored.
    pub current: RunRef,
    /// The command that shows the whole comparison (`takt runs diff --db
    /// DB A B`).
    pub command: String,
    /// The test a verdict rests on, one sentence.
    pub method: String,
    /// The smallest change of a median flagged, percent.
    pub min_change_pct: f64,
    /// Conditions that make the comparison less telling.
    #[serde(default)]
    pub cautions: Vec<String>,
    /// How many rows got each verdict.
    pub counts: ChangeCounts,
    /// The rows that improved or regressed, in the comparison's order.
    #[serde(default)]
    pub changed: Vec<ChangedRow>,
}

/// Rows per verdict (`takt runs diff`'s counts).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeCounts {
    /// Better beyond both runs' noise by at least the minimum change.
    pub improved: usize,
    /// Worse beyond both runs' noise by at least the minimum change.
    pub regressed: usize,
    /// Beyond the noise but under the minimum change.
    pub small: usize,
    /// Within the runs' noise.
    pub within_noise: usize,
    /// Not judged (a bound, one repetition, a changed unit, ...).
    pub unjudged: usize,
    /// Rows of the earlier run only.
    pub only_earlier: usize,
    /// Rows of this run only.
    pub only_current: usize,
}

/// One side of a changed row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChangeSide {
    /// The median (`None` for a bound).
    pub median: Option<f64>,
    /// The Student-t 95% interval of the mean.
    #[serde(default)]
    pub ci95: Option<[f64; 2]>,
    /// The bound in place of a value ("≥ 35,000 (generator)").
    #[serde(default)]
    pub bound: Option<String>,
}

/// A row that improved or regressed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChangedRow {
    /// The document's suite.
    pub suite: String,
    /// The row's name.
    pub name: String,
    /// Its implementation.
    #[serde(rename = "impl")]
    pub implementation: String,
    /// Its parameters as `key=value` text.
    pub params: String,
    /// Its unit.
    pub unit: String,
    /// In the earlier run.
    pub earlier: ChangeSide,
    /// In this run.
    pub current: ChangeSide,
    /// Change of the median, percent of the earlier one.
    pub change_pct: Option<f64>,
    /// The rank test's two-sided p-value, where both rows kept samples.
    #[serde(default)]
    pub p_value: Option<f64>,
    /// Improved (else regressed).
    pub improved: bool,
}

/// The manifest beside the documents: the run and each stage's status.
pub const MANIFEST: &str = "run.json";

#[derive(Serialize, Deserialize)]
struct Manifest {
    meta: RunMeta,
    stages: Vec<ManifestStage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    changes: Option<Changes>,
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
            changes: self.changes.clone(),
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
            changes: manifest.changes,
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
            changes: None,
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
            changes: Some(Changes::Compared(Box::new(Comparison {
                machine: "lab1 (machine 0123456789abcdef)".into(),
                earlier: RunRef {
                    id: 3,
                    started: "2026-11-23T12:00:00Z".into(),
                    commit: "aaaa111".into(),
                    command: "takt report --quick".into(),
                },
                current: RunRef {
                    id: 5,
                    started: "2026-11-24T12:00:00Z".into(),
                    commit: "bbbb222".into(),
                    command: "takt report --quick".into(),
                },
                command: "takt runs diff --db takt-results.db 3 5".into(),
                method: "flagged when ...".into(),
                min_change_pct: 5.0,
                cautions: Vec::new(),
                counts: ChangeCounts {
                    improved: 1,
                    within_noise: 4,
                    ..ChangeCounts::default()
                },
                changed: vec![ChangedRow {
                    suite: "sme".into(),
                    name: "sync_cost".into(),
                    implementation: "takt".into(),
                    params: "threads=2".into(),
                    unit: "us/cycle".into(),
                    earlier: ChangeSide {
                        median: Some(0.8),
                        ci95: Some([0.75, 0.85]),
                        bound: None,
                    },
                    current: ChangeSide {
                        median: Some(0.6),
                        ci95: Some([0.58, 0.62]),
                        bound: None,
                    },
                    change_pct: Some(-25.0),
                    p_value: Some(0.008),
                    improved: true,
                }],
            }))),
        };
        input.save_dir(&dir).unwrap();
        assert_eq!(ReportInput::load_dir(&dir).unwrap(), input);
        // a manifest written before reports compared runs still loads
        let path = dir.join(MANIFEST);
        let mut manifest: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(manifest["changes"]["status"], "compared");
        manifest.as_object_mut().unwrap().remove("changes");
        std::fs::write(&path, manifest.to_string()).unwrap();
        let old = ReportInput::load_dir(&dir).unwrap();
        assert_eq!(old.changes, None);
        assert_eq!(old.stages, input.stages);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
