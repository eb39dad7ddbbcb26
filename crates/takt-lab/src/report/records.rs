//! The report and the run records: a stored run as a report's input, the
//! latest recorded documents of the stages the plan does not run, a
//! measured report stored as one run, and what changed since the last
//! report run on the same machine.

use std::path::Path;

use serde_json::Value;
use takt_measure::progress::Progress;
use takt_records::{compare, Diff, Run, RunSummary, Side, Store, Verdict};
use takt_report::input::{
    ChangeCounts, ChangeSide, ChangedRow, Changes, Comparison, Outcome, ReportInput, RunMeta,
    RunRef, Stage,
};

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
        changes: None,
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
    progress.println(&format!(
        "takt report: stored run {id} in {}",
        takt_records::Location::parse(db)
    ));
    Ok(Some(id))
}

/// How the records tell a report run from the runs of single commands
/// (`takt sip sweep --record`, `takt runs add`): its command line.
pub const REPORT_COMMAND: &str = "takt report";

/// Whether a stored run is one of `takt report`'s.
pub fn is_report_run(s: &RunSummary) -> bool {
    s.meta.command == REPORT_COMMAND || s.meta.command.starts_with("takt report ")
}

/// The machine a stored run's documents name: its `machine_id` (the hash
/// of `/etc/machine-id` in the machine block), empty when they name none.
pub fn machine_id(s: &RunSummary) -> &str {
    s.meta
        .machine
        .get("machine_id")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The machine for the reader: `lab1 (machine 0035969ec53f6e7f)`.
fn machine_label(s: &RunSummary) -> String {
    let host = s
        .meta
        .machine
        .get("host")
        .and_then(Value::as_str)
        .unwrap_or("");
    if host.is_empty() {
        format!("machine {}", machine_id(s))
    } else {
        format!("{host} (machine {})", machine_id(s))
    }
}

/// The latest report run of `runs` stored before `current` whose
/// documents name the same machine, and how many earlier report runs are
/// from other machines. A run that names no machine has no earlier run.
pub fn previous_on_machine<'a>(
    runs: &'a [RunSummary],
    current: &RunSummary,
) -> (Option<&'a RunSummary>, usize) {
    let id = machine_id(current);
    let earlier = runs
        .iter()
        .filter(|r| r.id < current.id && is_report_run(r));
    let others = earlier.clone().filter(|r| machine_id(r) != id).count();
    let same = earlier
        .filter(|r| !id.is_empty() && machine_id(r) == id)
        .max_by_key(|r| r.id);
    (same, others)
}

/// What changed from the last report run on this machine to stored run
/// `id` of `db`: `takt runs diff`'s verdicts ([`takt_records::compare`],
/// its default minimum change), or why there is nothing to compare.
pub fn changes_since(db: &Path, id: i64) -> Changes {
    let not = |reason: String| Changes::NotCompared { reason };
    let store = match Store::open_existing(db) {
        Ok(s) => s,
        Err(e) => return not(format!("the records could not be read ({e})")),
    };
    let runs = match store.list() {
        Ok(r) => r,
        Err(e) => return not(format!("the records could not be read ({e})")),
    };
    let Some(current) = runs.iter().find(|r| r.id == id) else {
        return not(format!("run {id} is not in the records"));
    };
    if !is_report_run(current) {
        return not(format!(
            "run {id} is not a report run (`{}`)",
            current.meta.command
        ));
    }
    if machine_id(current).is_empty() {
        return not(
            "this run's documents do not name their machine (no machine_id in their machine block)"
                .into(),
        );
    }
    let (earlier, other_machines) = previous_on_machine(&runs, current);
    let Some(earlier) = earlier else {
        return Changes::NoEarlierRun {
            machine: machine_label(current),
            other_machines,
        };
    };
    let (a, b) = match (store.run(earlier.id), store.run(id)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => return not(format!("the records could not be read ({e})")),
    };
    let diff = compare(&a, &b, takt_records::compare::DEFAULT_MIN_CHANGE_PCT);
    Changes::Compared(Box::new(comparison(db, &diff, machine_label(current))))
}

/// A run as the report names it.
fn run_ref(s: &RunSummary) -> RunRef {
    RunRef {
        id: s.id,
        started: s.meta.started.clone(),
        commit: s.meta.commit.clone(),
        command: s.meta.command.clone(),
    }
}

fn change_side(s: Option<&Side>) -> ChangeSide {
    ChangeSide {
        median: s.and_then(|s| s.median),
        ci95: s.and_then(|s| s.ci95),
        bound: s.and_then(|s| s.bound.as_ref()).map(ToString::to_string),
    }
}

/// The report's view of a diff: the counts, and the rows that improved
/// or regressed.
fn comparison(db: &Path, d: &Diff, machine: String) -> Comparison {
    let c = &d.counts;
    Comparison {
        machine,
        earlier: run_ref(&d.a),
        current: run_ref(&d.b),
        command: format!(
            "takt runs diff --db {} {} {}",
            takt_records::Location::parse(db),
            d.a.id,
            d.b.id
        ),
        method: d.method.to_string(),
        min_change_pct: d.min_change_pct,
        cautions: d.cautions.clone(),
        counts: ChangeCounts {
            improved: c.improvements,
            regressed: c.regressions,
            small: c.small,
            within_noise: c.within_noise,
            unjudged: c.unjudged,
            only_earlier: c.only_in_a,
            only_current: c.only_in_b,
        },
        changed: d
            .rows
            .iter()
            .filter(|r| matches!(r.verdict, Verdict::Improvement | Verdict::Regression))
            .map(|r| ChangedRow {
                suite: r.suite.clone(),
                name: r.name.clone(),
                implementation: r.implementation.clone(),
                params: takt_measure::result::params_text(&r.params),
                unit: r.unit.clone(),
                earlier: change_side(r.a.as_ref()),
                current: change_side(r.b.as_ref()),
                change_pct: r.change_pct,
                p_value: r.p_value,
                improved: r.verdict == Verdict::Improvement,
            })
            .collect(),
    }
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

    /// A result document from `machine` (its `machine_id`; empty: none)
    /// with one row whose five samples centre on `centre`.
    fn doc(suite: &str, machine: &str, centre: f64) -> Value {
        let s: Vec<f64> = [-0.2, -0.1, 0.0, 0.1, 0.2]
            .iter()
            .map(|d| centre + d)
            .collect();
        let mut m = serde_json::json!({
            "cpu": "Test CPU", "cpus": 2, "kernel": "6.18", "virtualized": true,
            "commit": "aaaa111", "rustc": "rustc 1.95.0", "profile": "release",
            "command": "takt bench sme --json", "steal_pct": 0.5, "load": [1.0, 1.0, 1.0],
            "host": "lab", "machine_id": machine, "others_pct": centre / 10.0
        });
        if machine.is_empty() {
            m.as_object_mut().unwrap().remove("machine_id");
        }
        serde_json::json!({
            "takt": "0.1.0", "suite": suite, "started": "2026-11-24T12:00:00Z", "machine": m,
            "results": [
                {"name": "sync_cost", "impl": "takt", "params": {"threads": 2},
                 "unit": "us/cycle", "better": "lower", "median": centre, "min": s[0], "max": s[4],
                 "mean": centre, "ci95": [centre - 0.2, centre + 0.2], "runs": 5, "cpu_s": 0.2,
                 "samples": s},
                {"name": "ping_pong", "impl": "takt", "params": {"messages": 1000},
                 "unit": "ns/msg", "better": "lower", "median": 12.0, "min": 11.8, "max": 12.2,
                 "mean": 12.0, "ci95": [11.8, 12.2], "runs": 5, "cpu_s": 0.2,
                 "samples": [11.8, 11.9, 12.0, 12.1, 12.2]}
            ]
        })
    }

    /// Stores `docs` as one run made by `command`; returns its ID.
    fn store(db: &Path, command: &str, docs: &[Value]) -> i64 {
        let mut meta = takt_records::RunMeta::from_documents(docs).unwrap();
        meta.command = command.into();
        takt_records::record(db, &meta, docs).unwrap()
    }

    fn temp_db(tag: &str) -> (std::path::PathBuf, std::path::PathBuf) {
        let dir =
            std::env::temp_dir().join(format!("takt-lab-changes-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("takt-results.db");
        (dir, db)
    }

    #[test]
    fn the_previous_report_run_is_the_last_one_on_the_same_machine() {
        let (dir, db) = temp_db("prev");
        let here = "0123456789abcdef";
        let there = "fedcba9876543210";
        let first = store(&db, "takt report --quick", &[doc("sme", here, 12.0)]);
        // not report runs, or not this machine: never the previous one
        let sweep = store(
            &db,
            "takt sip sweep --quick --record",
            &[doc("sme", here, 9.0)],
        );
        let elsewhere = store(&db, "takt report", &[doc("sme", there, 9.0)]);
        let latest = store(&db, "takt report --quick", &[doc("sme", here, 15.0)]);

        // the first run here has nothing to compare with
        assert_eq!(
            changes_since(&db, first),
            Changes::NoEarlierRun {
                machine: format!("lab (machine {here})"),
                other_machines: 0
            }
        );
        // the other machine's run: one earlier report run, not its own
        assert_eq!(
            changes_since(&db, elsewhere),
            Changes::NoEarlierRun {
                machine: format!("lab (machine {there})"),
                other_machines: 1
            }
        );
        let Changes::Compared(c) = changes_since(&db, latest) else {
            panic!("{:?}", changes_since(&db, latest))
        };
        assert_eq!(c.earlier.id, first, "not the sweep, not the other machine");
        assert_eq!(c.current.id, latest);
        assert_eq!(c.machine, format!("lab (machine {here})"));
        assert_eq!(
            c.command,
            format!(
                "takt runs diff --db {} {first} {latest}",
                takt_records::Location::parse(&db)
            )
        );
        // sync_cost went from 12 to 15 µs (lower is better): regressed;
        // ping_pong did not move
        assert_eq!(c.counts.regressed, 1, "{:?}", c.counts);
        assert_eq!(c.counts.improved, 0);
        assert_eq!(c.counts.within_noise, 1);
        assert_eq!(c.changed.len(), 1);
        // the same machine by its id, whatever else ran beside each run
        assert!(c.cautions.is_empty(), "{:?}", c.cautions);
        let r = &c.changed[0];
        assert_eq!((r.name.as_str(), r.improved), ("sync_cost", false));
        assert_eq!(r.params, "threads=2");
        assert_eq!(r.change_pct, Some(25.0));
        assert_eq!(r.earlier.median, Some(12.0));
        assert_eq!(r.current.median, Some(15.0));
        // a run that is not a report's is not compared
        assert!(matches!(
            changes_since(&db, sweep),
            Changes::NotCompared { reason } if reason.contains("not a report run")
        ));
        assert!(matches!(
            changes_since(&db, 99),
            Changes::NotCompared { reason } if reason.contains("not in the records")
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_run_without_a_machine_identity_is_not_compared() {
        let (dir, db) = temp_db("anon");
        store(&db, "takt report", &[doc("sme", "", 12.0)]);
        let id = store(&db, "takt report", &[doc("sme", "", 12.0)]);
        assert!(matches!(
            changes_since(&db, id),
            Changes::NotCompared { reason } if reason.contains("machine_id")
        ));
        // same documents, same machine: compared, nothing changed
        let a = store(&db, "takt report", &[doc("sme", "0123456789abcdef", 12.0)]);
        let b = store(&db, "takt report", &[doc("sme", "0123456789abcdef", 12.0)]);
        let Changes::Compared(c) = changes_since(&db, b) else {
            panic!("same machine")
        };
        assert_eq!(c.earlier.id, a);
        assert_eq!((c.counts.improved, c.counts.regressed), (0, 0));
        assert_eq!(c.counts.within_noise, 2);
        assert!(c.changed.is_empty());
        // a missing database says so
        assert!(matches!(
            changes_since(&dir.join("none.db"), 1),
            Changes::NotCompared { reason } if reason.contains("could not be read")
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
