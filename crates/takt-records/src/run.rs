//! A run: what was measured, with what build, on which machine, under
//! what load, and whether it finished.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::document::Document;
use crate::error::{Error, Result};

/// Machine-block fields that describe the build and the run rather than
/// the machine; [`RunMeta`] keeps them in their own fields.
const RUN_FIELDS: [&str; 6] = ["commit", "rustc", "profile", "command", "steal_pct", "load"];

/// What a run records besides its documents.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunMeta {
    /// The command line that made the run.
    pub command: String,
    /// When the run started (RFC 3339).
    pub started: String,
    /// Git commit takt was built from (`-dirty` for a changed tree).
    pub commit: String,
    /// Compiler version.
    pub rustc: String,
    /// Build profile (`release`, `debug`).
    pub profile: String,
    /// takt version.
    pub takt: String,
    /// The machine description (CPU model, CPU count, kernel,
    /// virtualization, ...), as the documents' `machine` block has it
    /// less the run fields.
    pub machine: Map<String, Value>,
    /// Percentage of CPU time the hypervisor stole during the run.
    pub steal_pct: Option<f64>,
    /// Load averages (1, 5, 15 min) seen.
    pub load: Option<[f64; 3]>,
}

impl RunMeta {
    /// The metadata of a run that produced `documents` (at least one):
    /// build and machine from the first document's `machine` block, the
    /// earliest `started`, and the worst conditions any document saw (the
    /// largest steal percentage, the largest load averages).
    pub fn from_documents(documents: &[Value]) -> Result<RunMeta> {
        let first = documents
            .first()
            .ok_or_else(|| Error::InvalidMeta("a run needs at least one document".into()))?;
        let block = |d: &Value| -> Result<Map<String, Value>> {
            d.get("machine")
                .and_then(Value::as_object)
                .cloned()
                .ok_or_else(|| Error::InvalidMeta("document without a machine block".into()))
        };
        let text = |m: &Map<String, Value>, key: &str| -> Result<String> {
            m.get(key)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| Error::InvalidMeta(format!("machine block lacks {key:?}")))
        };
        let top = |d: &Value, key: &str| -> Result<String> {
            d.get(key)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| Error::InvalidMeta(format!("document lacks {key:?}")))
        };
        let m = block(first)?;
        let mut meta = RunMeta {
            command: text(&m, "command")?,
            started: top(first, "started")?,
            commit: text(&m, "commit")?,
            rustc: text(&m, "rustc")?,
            profile: text(&m, "profile")?,
            takt: top(first, "takt")?,
            machine: m
                .iter()
                .filter(|(k, _)| !RUN_FIELDS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            steal_pct: None,
            load: None,
        };
        for d in documents {
            let m = block(d)?;
            let started = top(d, "started")?;
            // RFC 3339 UTC timestamps of one format order as strings.
            if started < meta.started {
                meta.started = started;
            }
            if let Some(s) = m.get("steal_pct").and_then(Value::as_f64) {
                meta.steal_pct = Some(meta.steal_pct.map_or(s, |t| t.max(s)));
            }
            if let Some([a, b, c]) = m.get("load").and_then(Value::as_array).map(Vec::as_slice) {
                if let (Some(a), Some(b), Some(c)) = (a.as_f64(), b.as_f64(), c.as_f64()) {
                    let l = meta.load.get_or_insert([a, b, c]);
                    *l = [l[0].max(a), l[1].max(b), l[2].max(c)];
                }
            }
        }
        Ok(meta)
    }
}

/// Where a run stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum RunStatus {
    /// Its process is still writing it.
    Running,
    /// A process on another machine (`host`) is writing it: from here a
    /// shared store can tell that the writer is still connected, and a
    /// SQLite file cannot tell more than that it has not finished.
    #[serde(rename = "running_on")]
    RunningOn {
        /// The writer's host name.
        host: String,
    },
    /// Finished with everything it set out to measure.
    Complete,
    /// Finished early (e.g. Ctrl-C); `missing` says what was not measured.
    Interrupted {
        /// The parts not measured.
        missing: Vec<String>,
    },
    /// Begun by a process that ended without finishing it (killed, or the
    /// machine rebooted): its stored documents are whole, the rest unknown.
    Abandoned,
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunStatus::Running => f.write_str("running"),
            RunStatus::RunningOn { host } => write!(f, "running on {host}"),
            RunStatus::Complete => f.write_str("complete"),
            RunStatus::Interrupted { missing } if missing.is_empty() => f.write_str("interrupted"),
            RunStatus::Interrupted { missing } => {
                write!(f, "interrupted (missing {})", missing.join(", "))
            }
            RunStatus::Abandoned => f.write_str("abandoned"),
        }
    }
}

/// A stored run without its documents: what `takt runs list` shows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunSummary {
    /// The run's ID in this database.
    pub id: i64,
    /// Where it stands.
    #[serde(flatten)]
    pub status: RunStatus,
    /// When it finished (`None` while running or abandoned).
    pub ended: Option<String>,
    /// Its metadata.
    #[serde(flatten)]
    pub meta: RunMeta,
    /// The suites of its documents, in order.
    pub suites: Vec<String>,
    /// Rows over all its documents.
    pub rows: u64,
}

/// A stored run with its documents: what `takt runs show` shows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Run {
    /// The run.
    #[serde(flatten)]
    pub summary: RunSummary,
    /// Its documents, in the order stored, each with its rows and samples.
    pub documents: Vec<Document>,
}
