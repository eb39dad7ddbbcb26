//! What both backends read out of their tables, as plain values, and how
//! it becomes a [`RunSummary`] or a [`Row`]: the columns and their
//! meaning are the same in SQLite and in PostgreSQL, so only the reading
//! of a column differs between them.

use serde_json::Map;

use crate::error::{Error, Result};
use crate::owner::{Liveness, Owner};
use crate::row::{Better, Bound, BoundKind, Row};
use crate::run::{RunMeta, RunStatus, RunSummary};

/// Columns of `runs` that [`StoredRun`] holds, in its order.
pub(crate) const RUN_COLUMNS: &str = "id, status, missing, started, ended, command, commit_id, \
    rustc, profile, takt, machine, steal_pct, load1, load5, load15, owner_boot, owner_pid, \
    owner_start, owner_host, owner_machine";

/// Columns of `results` that [`StoredRow`] holds, in its order.
pub(crate) const ROW_COLUMNS: &str = "id, name, impl, params, unit, better, median, min, max, \
    mean, stddev, ci_lo, ci_hi, runs, cpu_s, published, note, detail, bound_kind, bound_value, \
    bound_limit";

/// A `runs` row as stored.
#[derive(Debug)]
pub(crate) struct StoredRun {
    pub(crate) id: i64,
    pub(crate) status: String,
    pub(crate) missing: String,
    pub(crate) started: String,
    pub(crate) ended: Option<String>,
    pub(crate) command: String,
    pub(crate) commit: String,
    pub(crate) rustc: String,
    pub(crate) profile: String,
    pub(crate) takt: String,
    pub(crate) machine: String,
    pub(crate) steal_pct: Option<f64>,
    pub(crate) load: [Option<f64>; 3],
    pub(crate) owner: Owner,
}

impl StoredRun {
    /// The summary, with `suites` and `rows` left empty, and a `running`
    /// status resolved by `liveness` (what the backend knows of the
    /// writer).
    pub(crate) fn summary(self, liveness: Liveness) -> Result<RunSummary> {
        let status = match self.status.as_str() {
            "running" => match liveness {
                Liveness::Alive => RunStatus::Running,
                Liveness::Gone => RunStatus::Abandoned,
                Liveness::Elsewhere => RunStatus::RunningOn {
                    host: if self.owner.host.is_empty() {
                        format!("machine {}", self.owner.machine)
                    } else {
                        self.owner.host.clone()
                    },
                },
            },
            "complete" => RunStatus::Complete,
            "interrupted" => RunStatus::Interrupted {
                missing: serde_json::from_str(&self.missing)?,
            },
            other => {
                return Err(Error::Damaged(format!("run {}: status {other:?}", self.id)));
            }
        };
        let load = match self.load {
            [Some(a), Some(b), Some(c)] => Some([a, b, c]),
            _ => None,
        };
        Ok(RunSummary {
            id: self.id,
            status,
            ended: self.ended,
            meta: RunMeta {
                started: self.started,
                command: self.command,
                commit: self.commit,
                rustc: self.rustc,
                profile: self.profile,
                takt: self.takt,
                machine: serde_json::from_str(&self.machine)?,
                steal_pct: self.steal_pct,
                load,
            },
            suites: Vec::new(),
            rows: 0,
        })
    }
}

/// A `results` row as stored.
#[derive(Debug)]
pub(crate) struct StoredRow {
    pub(crate) id: i64,
    pub(crate) name: String,
    pub(crate) implementation: String,
    pub(crate) params: String,
    pub(crate) unit: String,
    pub(crate) better: String,
    pub(crate) median: Option<f64>,
    pub(crate) min: Option<f64>,
    pub(crate) max: Option<f64>,
    pub(crate) mean: Option<f64>,
    pub(crate) stddev: Option<f64>,
    pub(crate) ci: [Option<f64>; 2],
    pub(crate) runs: i64,
    pub(crate) cpu_s: f64,
    pub(crate) published: Option<f64>,
    pub(crate) note: Option<String>,
    pub(crate) detail: String,
    pub(crate) bound: (Option<String>, Option<f64>, Option<String>),
}

impl StoredRow {
    /// The row with its `samples`.
    pub(crate) fn into_row(self, samples: Vec<f64>) -> Result<Row> {
        let id = self.id;
        let bound = match self.bound {
            (Some(kind), Some(value), Some(limit)) => Some(Bound::new(
                BoundKind::parse(&kind)
                    .ok_or_else(|| Error::Damaged(format!("result {id}: bound_kind = {kind:?}")))?,
                value,
                limit,
            )),
            (None, None, None) => None,
            _ => return Err(Error::Damaged(format!("result {id}: a partial bound"))),
        };
        let better = Better::parse(&self.better)
            .ok_or_else(|| Error::Damaged(format!("result {id}: better = {:?}", self.better)))?;
        Ok(Row {
            name: self.name,
            implementation: self.implementation,
            params: serde_json::from_str(&self.params)?,
            unit: self.unit,
            better,
            median: self.median,
            min: self.min,
            max: self.max,
            mean: self.mean,
            stddev: self.stddev,
            ci95: match self.ci {
                [Some(lo), Some(hi)] => Some([lo, hi]),
                _ => None,
            },
            runs: self.runs.max(0) as u64,
            cpu_s: self.cpu_s,
            samples,
            bound,
            published: self.published,
            note: self.note,
            detail: serde_json::from_str::<Map<_, _>>(&self.detail)?,
        })
    }
}

/// The machine a run was measured on, from its machine block: (host,
/// machine ID), empty where the block has none (documents written before
/// they were recorded).
pub(crate) fn machine_of(meta: &RunMeta) -> (String, String) {
    let get = |k: &str| {
        meta.machine
            .get(k)
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    (get("host"), get("machine_id"))
}
