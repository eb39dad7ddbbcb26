//! The report and the run records: a stored run as a report's input, the
//! latest recorded documents of the stages the plan does not run, and a
//! measured report stored as one run.

use std::path::Path;

use serde_json::Value;
use takt_measure::progress::Progress;
use takt_records::{Run, Store};
use takt_report::input::{Outcome, ReportInput, RunMeta, Stage};

use super::plan::is_planned;
use crate::orchestration_error::OrchestrationError;

/// Why a stage has no section in the report of a stored run.
pub const NOT_STORED: &str = "not in the stored run";

/// The report input of stored run `id` in `db`, rendered by `command`.
pub fn stored_input(
    db: &Path,
    id: i64,
    command: String,
) -> Result<ReportInput, OrchestrationError> {
    let read = |source| OrchestrationError::StoredRun { id, source };
    let store = Store::open_existing(db).map_err(read)?;
    let run = store.run(id).map_err(read)?;
    Ok(input_of_run(&run, command))
}

/// The input of a stored run: its documents assigned to stages by their
/// `suite`; each stage's command is the one its document records. A stage
/// without a document is [`NOT_STORED`]; a document of another suite is
/// left out.
pub fn input_of_run(run: &Run, command: String) -> ReportInput {
    let id = run.summary.id;
    let meta = RunMeta {
        command,
        started: run.summary.meta.started.clone(),
        wall_s: 0.0,
        quick: run.summary.meta.command.contains("--quick"),
        reductions: Vec::new(),
        run_id: Some(format!("{id} ({})", run.summary.meta.command)),
    };
    let documents: Vec<Value> = run.documents.iter().map(|d| d.body.clone()).collect();
    from_documents(meta, &documents)
}

/// The input of `documents` as the run records keep them (each a `takt
/// ... --json` document), assigned to stages by their `suite`.
pub fn from_documents(meta: RunMeta, documents: &[Value]) -> ReportInput {
    let mut input = ReportInput {
        meta,
        stages: Stage::ALL
            .into_iter()
            .map(|stage| {
                let outcome = Outcome::NotMeasured {
                    reason: NOT_STORED.into(),
                    command: None,
                };
                (stage, outcome)
            })
            .collect(),
    };
    for stage in Stage::ALL {
        // The first document of each stage's suite.
        if let Some(d) = documents
            .iter()
            .find(|d| d.get("suite").and_then(Value::as_str) == Some(stage.suite()))
        {
            input.attach(d.clone(), None);
        }
    }
    input
}

/// Fills the sections the plan does not run (sweep, robustness) that are
/// still empty with the latest document of their suite in the records,
/// if the database has one, and says so on `progress`; a database that
/// cannot be read leaves them as they are (the section says how to
/// measure them).
pub fn attach_latest(db: &Path, input: &mut ReportInput, progress: &Progress) {
    let Ok(store) = Store::open_existing(db) else {
        return;
    };
    let Ok(runs) = store.list() else {
        return;
    };
    for stage in Stage::ALL.into_iter().filter(|s| !is_planned(*s)) {
        if input.document(stage).is_some() {
            continue;
        }
        let Some(id) = runs
            .iter()
            .rev()
            .find(|r| r.suites.iter().any(|s| s == stage.suite()))
            .map(|r| r.id)
        else {
            continue;
        };
        let Ok(run) = store.run(id) else {
            continue;
        };
        if let Some(d) = run.documents.into_iter().find(|d| d.suite == stage.suite()) {
            input.attach(d.body, None);
            progress.println(&format!(
                "takt report: {stage}: the latest recorded document (run {id})"
            ));
        }
    }
}

/// Stores the documents `input`'s run measured as one run in `db`, and
/// says so on `progress`; the documents it was given (`--with`, the
/// records) are stored already or are the user's files. Returns the run's
/// ID, or `None` when nothing was measured.
pub fn store_measured(
    db: &Path,
    input: &ReportInput,
    progress: &Progress,
) -> Result<Option<i64>, OrchestrationError> {
    let docs: Vec<Value> = input
        .stages
        .iter()
        .filter(|(s, _)| is_planned(*s))
        .filter_map(|(_, o)| match o {
            Outcome::Measured { document, .. } => Some(document.clone()),
            Outcome::NotMeasured { .. } => None,
        })
        .collect();
    if docs.is_empty() {
        return Ok(None);
    }
    let mut meta =
        takt_records::RunMeta::from_documents(&docs).map_err(OrchestrationError::StoreReport)?;
    meta.command = input.meta.command.clone();
    let id = takt_records::record(db, &meta, &docs).map_err(OrchestrationError::StoreReport)?;
    progress.println(&format!("takt report: stored run {id} in {}", db.display()));
    Ok(Some(id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_documents_find_their_stages() {
        let meta = RunMeta {
            command: "takt report --run 3".into(),
            started: "2026-11-24T12:00:00Z".into(),
            wall_s: 0.0,
            quick: false,
            reductions: Vec::new(),
            run_id: Some("3".into()),
        };
        let docs = [
            serde_json::json!({"suite": "sme", "machine": {"command": "takt bench sme --json"}}),
            serde_json::json!({"suite": "gpu"}),
        ];
        let input = from_documents(meta, &docs);
        assert_eq!(input.stages.len(), Stage::ALL.len());
        assert!(matches!(
            input.outcome(Stage::Sme),
            Some(Outcome::Measured { command, .. }) if command == "takt bench sme --json"
        ));
        assert!(input.document(Stage::Agents).is_none());
        assert!(matches!(
            input.outcome(Stage::Machine),
            Some(Outcome::NotMeasured { reason, .. }) if reason == NOT_STORED
        ));
        let order: Vec<Stage> = input.stages.iter().map(|(s, _)| *s).collect();
        assert_eq!(order, Stage::ALL);
    }
}
