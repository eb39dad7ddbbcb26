//! `takt runs list/show/diff/add`: the stored runs, printed as tables (or
//! one JSON document), and `--record` of the measuring commands.
//!
//! takt-records stores and compares; this module renders what it returns
//! with takt-measure's table model: one table per (section, unit) from
//! [`group_rows`], a column per parameter. A stored document this build's
//! types read renders exactly as its command printed it.
//!
//! Every entry point prints through [`takt_measure::output::print`] (a
//! closed stdout is not an error) and returns what went wrong otherwise.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use takt_measure::result::{Better as DocBetter, ResultRow};
use takt_measure::stats::Summary;
use takt_measure::table::{fmt_num, fmt_value, group_rows, Table};
use takt_records::{
    compare, Better, Diff, Location, Row, RowDiff, Run, RunSummary, Side, Store, Verdict,
};

use crate::orchestration_error::OrchestrationError;

/// What `takt runs diff` compares and shows.
#[derive(Clone, Debug, PartialEq)]
pub struct DiffRequest {
    /// The reference run; `None` with `b` `None`: the next-to-last run.
    pub a: Option<i64>,
    /// The run compared with it; `None` with `a` `None`: the last run.
    pub b: Option<i64>,
    /// Only rows that changed beyond noise or are in one run only.
    pub changed: bool,
    /// The smallest change of a median flagged, in percent.
    pub min_change_pct: f64,
}

/// `takt runs list`: the stored runs in `db` (a SQLite file or a
/// `postgres://` URL), oldest first (only the newest `last` with `Some`,
/// only those measured on `machine`, a host name or machine ID, with
/// `Some`), as a table or as `{"db", "runs"}` JSON.
pub fn list(
    db: &Path,
    last: Option<u64>,
    machine: Option<&str>,
    json: bool,
) -> Result<(), OrchestrationError> {
    let mut runs = Store::open_existing(db)?.list_on(machine)?;
    if let Some(n) = last {
        let keep = usize::try_from(n).unwrap_or(usize::MAX).min(runs.len());
        runs.drain(..runs.len() - keep);
    }
    print(&if json {
        to_json(&serde_json::json!({ "db": Location::from(db).to_string(), "runs": runs }))?
    } else {
        render_list(&runs)
    })
}

/// `takt runs show`: run `id` of `db` — its build, machine and conditions
/// and every row — as tables or as JSON.
pub fn show(db: &Path, id: i64, json: bool) -> Result<(), OrchestrationError> {
    let run = Store::open_existing(db)?.run(id)?;
    print(&if json {
        to_json(&run)?
    } else {
        render_run(&run)
    })
}

/// `takt runs diff`: run B beside run A (by default the last two runs of
/// `db`), as tables or as JSON.
pub fn diff(db: &Path, req: &DiffRequest, json: bool) -> Result<(), OrchestrationError> {
    let store = Store::open_existing(db)?;
    let (a, b) = match (req.a, req.b) {
        (Some(a), Some(b)) => (a, b),
        _ => {
            let runs = store.list()?;
            match runs.as_slice() {
                [.., a, b] => (a.id, b.id),
                _ => {
                    return Err(OrchestrationError::NotTwoRuns {
                        // as displayed: without a password the URL holds
                        db: Location::from(db).to_string().into(),
                        runs: runs.len(),
                    });
                }
            }
        }
    };
    let a = store.run(a)?;
    let b = store.run(b)?;
    let mut diff = compare(&a, &b, req.min_change_pct);
    if req.changed {
        diff.rows
            .retain(|r| !matches!(r.verdict, Verdict::WithinNoise));
    }
    print(&if json {
        to_json(&diff)?
    } else {
        render_diff(&diff)
    })
}

/// `takt runs add`: stores the result documents in `files` (`-`: one
/// document on stdin) as one complete run in `db` (created if absent) and
/// prints its ID.
pub fn add(db: &Path, files: &[PathBuf]) -> Result<(), OrchestrationError> {
    let docs = files
        .iter()
        .map(|f| read_document(f))
        .collect::<Result<Vec<_>, _>>()?;
    for (i, d) in docs.iter().enumerate() {
        takt_records::validate_document(i, d)?;
    }
    let meta = takt_records::RunMeta::from_documents(&docs)?;
    let id = takt_records::record(db, &meta, &docs)?;
    print(&format!("stored run {id} in {}\n", Location::from(db)))
}

/// `--record` of a measuring command: stores `doc` (a result document) as
/// one complete run in `db` (created if absent), with this process's
/// command line, and returns its ID.
pub fn record(db: &Path, doc: &impl serde::Serialize) -> Result<i64, OrchestrationError> {
    let doc = serde_json::to_value(doc).map_err(OrchestrationError::RecordJson)?;
    let docs = [doc];
    let mut meta =
        takt_records::RunMeta::from_documents(&docs).map_err(OrchestrationError::Record)?;
    // This process's command line (with --repeat, the document's is a child's).
    meta.command = std::env::args().collect::<Vec<_>>().join(" ");
    takt_records::record(db, &meta, &docs).map_err(OrchestrationError::Record)
}

fn print(text: &str) -> Result<(), OrchestrationError> {
    takt_measure::output::print(text).map_err(OrchestrationError::Output)
}

fn to_json(v: &impl serde::Serialize) -> Result<String, OrchestrationError> {
    takt_measure::output::to_json(v).map_err(OrchestrationError::Output)
}

fn read_document(path: &Path) -> Result<Value, OrchestrationError> {
    let read = |source| OrchestrationError::Read {
        path: path.to_path_buf(),
        source,
    };
    let text = if path.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin()).map_err(read)?
    } else {
        std::fs::read_to_string(path).map_err(read)?
    };
    serde_json::from_str(&text).map_err(|source| OrchestrationError::NotJson {
        path: path.to_path_buf(),
        source,
    })
}

fn conditions(r: &RunSummary) -> String {
    let steal = r.meta.steal_pct.map_or("-".into(), |s| format!("{s:.1}%"));
    let load = r.meta.load.map_or("-".into(), |l| format!("{:.2}", l[0]));
    format!("steal {steal} · load {load}")
}

/// The runs as one table, or a line saying there are none.
pub fn render_list(runs: &[RunSummary]) -> String {
    if runs.is_empty() {
        return "no runs stored\n".into();
    }
    let mut t = Table::new()
        .number("id")
        .text("started")
        .text("status")
        .text("host")
        .text("suites")
        .number("rows")
        .text("commit")
        .text("profile")
        .number("steal %")
        .number("load")
        .text("command");
    for r in runs {
        t.push(vec![
            r.id.to_string(),
            r.meta.started.clone(),
            r.status.to_string(),
            host_of(&r.meta.machine),
            r.suites.join(","),
            r.rows.to_string(),
            r.meta.commit.clone(),
            r.meta.profile.clone(),
            r.meta
                .steal_pct
                .map_or(String::new(), |s| format!("{s:.1}")),
            r.meta
                .load
                .map_or(String::new(), |l| format!("{:.2}", l[0])),
            r.meta.command.clone(),
        ]);
    }
    t.render()
}

/// The host a run was measured on, empty where its document did not say.
fn host_of(m: &Map<String, Value>) -> String {
    m.get("host")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn machine_text(m: &Map<String, Value>) -> String {
    let get = |k: &str| m.get(k).map(fmt_value).filter(|v| !v.is_empty());
    let mut parts = Vec::new();
    if let Some(host) = get("host") {
        match get("machine_id") {
            Some(id) => parts.push(format!("{host} ({id})")),
            None => parts.push(host),
        }
    }
    if let Some(cpu) = get("cpu") {
        parts.push(cpu);
    }
    if let Some(n) = get("cpus") {
        parts.push(format!("{n} CPUs"));
    }
    if let Some(k) = get("kernel") {
        parts.push(format!("kernel {k}"));
    }
    if m.get("virtualized") == Some(&Value::Bool(true)) {
        parts.push("virtualized".into());
    }
    parts.join(" · ")
}

/// One run: its build, machine and conditions, then each document's
/// tables.
pub fn render_run(run: &Run) -> String {
    let s = &run.summary;
    let mut out = format!(
        "run {} · {} · {} → {}\n{}\ncommit {} · {} · {} · takt {}\n{} · {}\n",
        s.id,
        s.status,
        s.meta.started,
        s.ended.as_deref().unwrap_or("-"),
        s.meta.command,
        s.meta.commit,
        s.meta.rustc,
        s.meta.profile,
        s.meta.takt,
        machine_text(&s.meta.machine),
        conditions(s),
    );
    for d in &run.documents {
        out.push_str(&format!(
            "\n== {} · started {} · {} rows\n\n",
            d.suite,
            d.started,
            d.rows.len()
        ));
        // A document this build's types read renders exactly as its
        // command printed it; any other (older, newer) from its rows.
        match serde_json::from_value::<takt_measure::result::Document>(d.body.clone()) {
            Ok(doc) => out.push_str(&takt_measure::output::render(&doc)),
            Err(_) => out.push_str(&rows_tables(&d.rows)),
        }
    }
    out
}

/// A stored row as a document row, for grouping and rendering: the
/// statistics as stored (an interval the document held as `null` is
/// NaN).
fn as_result_row(r: &Row) -> ResultRow {
    ResultRow {
        name: r.name.clone(),
        implementation: r.implementation.clone(),
        params: r.params.clone(),
        unit: r.unit.clone(),
        better: convert_better(r.better),
        // a bound (or a row without a value) has no statistics
        summary: r.median.map(|median| Summary {
            median,
            min: r.min.unwrap_or(f64::NAN),
            max: r.max.unwrap_or(f64::NAN),
            mean: r.mean.unwrap_or(f64::NAN),
            stddev: r.stddev.unwrap_or(0.0),
            ci95: r.ci95.unwrap_or([f64::NAN; 2]),
            runs: usize::try_from(r.runs).unwrap_or(usize::MAX),
        }),
        bound: r.bound.clone(),
        cpu_s: r.cpu_s,
        samples: Vec::new(),
        published: r.published,
        note: None,
        detail: Map::new(),
    }
}

/// The half-width of a row's interval, or empty without a finite one.
fn ci_half(ci95: [f64; 2]) -> String {
    if ci95.iter().all(|c| c.is_finite()) {
        fmt_num((ci95[1] - ci95[0]) / 2.0)
    } else {
        String::new()
    }
}

/// Rows of a document this build cannot read: a table per (name, unit).
fn rows_tables(rows: &[Row]) -> String {
    let rows: Vec<ResultRow> = rows.iter().map(as_result_row).collect();
    let mut out = String::new();
    for g in group_rows(&rows, |r| r.name.clone()) {
        let mut t = g
            .param_columns(Table::titled(&g.section).text("impl"))
            .number(format!("median ({})", g.unit))
            .number("± ci95")
            .number("min")
            .number("max")
            .number("runs")
            .number("cpu s/run")
            .number("published");
        for r in &g.rows {
            let mut cells = vec![r.implementation.clone()];
            cells.extend(g.param_cells(r));
            let s = r.summary.as_ref();
            let stat = |f: fn(&Summary) -> f64| s.map(|s| fmt_num(f(s))).unwrap_or_default();
            cells.extend([
                r.value_text(),
                s.map(|s| ci_half(s.ci95)).unwrap_or_default(),
                stat(|s| s.min),
                stat(|s| s.max),
                s.map_or(0, |s| s.runs).to_string(),
                fmt_num(r.cpu_s),
                r.published.map(fmt_num).unwrap_or_default(),
            ]);
            t.push(cells);
        }
        t.drop_empty_columns();
        out.push_str(&t.render());
        out.push('\n');
    }
    out
}

/// One side of a diff: "median ±half", or the bound ("≥ 35,000
/// (generator)"), never the bound as a bare number.
fn side_text(s: Option<&Side>) -> String {
    s.map_or(String::new(), |s| match (s.median, s.ci95, &s.bound) {
        (Some(m), Some(c), _) => format!("{} ±{}", fmt_num(m), fmt_num((c[1] - c[0]) / 2.0)),
        (Some(m), None, _) => fmt_num(m),
        (None, _, Some(b)) => b.to_string(),
        (None, _, None) => "–".into(),
    })
}

/// A diff row as a document row, for grouping only: its section is
/// `suite · name`, its implementation, parameters and unit its own.
fn diff_key(r: &RowDiff) -> ResultRow {
    ResultRow {
        name: format!("{} · {}", r.suite, r.name),
        implementation: r.implementation.clone(),
        params: r.params.clone(),
        unit: r.unit.clone(),
        better: convert_better(r.better),
        summary: None,
        bound: None,
        cpu_s: 0.0,
        samples: Vec::new(),
        published: None,
        note: None,
        detail: Map::new(),
    }
}

fn convert_better(b: Better) -> DocBetter {
    match b {
        Better::Lower => DocBetter::Lower,
        Better::Higher => DocBetter::Higher,
    }
}

/// The two runs' machine descriptions as one table, a row per field
/// either has (the fields that differ marked).
fn machines_side_by_side(a: &Map<String, Value>, b: &Map<String, Value>) -> String {
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    // the identity first, then the description, then the rest
    const FIRST: [&str; 6] = ["host", "machine_id", "cpu", "cpus", "kernel", "virtualized"];
    keys.sort_by_key(|k| FIRST.iter().position(|f| f == k).unwrap_or(FIRST.len()));
    let mut t = Table::titled("machines (the runs are from different machines)")
        .text("")
        .text("A")
        .text("B")
        .text("");
    let cell = |m: &Map<String, Value>, k: &str| m.get(k).map(fmt_value).unwrap_or_default();
    for k in keys {
        let (va, vb) = (cell(a, k), cell(b, k));
        let mark = if va == vb { "" } else { "differs" };
        t.push(vec![k.clone(), va, vb, mark.to_string()]);
    }
    t.render()
}

/// B beside A: the runs, the cautions, the machines side by side when
/// they differ, a table per (suite · name, unit) and the counts.
pub fn render_diff(d: &Diff) -> String {
    let mut out = format!(
        "A: run {} · {} · commit {} · {} · {}\nB: run {} · {} · commit {} · {} · {}\n",
        d.a.id,
        d.a.meta.started,
        d.a.meta.commit,
        d.a.status,
        conditions(&d.a),
        d.b.id,
        d.b.meta.started,
        d.b.meta.commit,
        d.b.status,
        conditions(&d.b),
    );
    for c in &d.cautions {
        out.push_str(&format!("caution: {c}\n"));
    }
    if d.different_machines {
        out.push('\n');
        out.push_str(&machines_side_by_side(&d.a.meta.machine, &d.b.meta.machine));
    }
    out.push('\n');
    let keys: Vec<ResultRow> = d.rows.iter().map(diff_key).collect();
    for g in group_rows(&keys, |r| r.name.clone()) {
        let mut t = g
            .param_columns(Table::titled(&g.section).text("impl"))
            .number(format!("A ({})", g.unit))
            .number(format!("B ({})", g.unit))
            .number("change")
            .number("p")
            .text("verdict");
        for key in &g.rows {
            // The diff row the key was made from: keys and rows share indices.
            let i = keys
                .iter()
                .position(|k| std::ptr::eq(k, *key))
                .expect("a group's rows are keys");
            let r = &d.rows[i];
            let verdict = match (&r.reason, r.verdict) {
                (Some(why), v) => format!("{} ({why})", v.label()),
                (None, Verdict::Small) => format!("small (< {}%)", d.min_change_pct),
                (None, v) => v.label().to_string(),
            };
            let mut cells = vec![r.implementation.clone()];
            cells.extend(g.param_cells(key));
            cells.extend([
                side_text(r.a.as_ref()),
                side_text(r.b.as_ref()),
                r.change_pct.map_or(String::new(), |c| format!("{c:+.1}%")),
                r.p_value.map_or(String::new(), |p| format!("{p:.3}")),
                verdict,
            ]);
            t.push(cells);
        }
        t.drop_empty_columns();
        out.push_str(&t.render());
        out.push('\n');
    }
    let c = &d.counts;
    out.push_str(&format!(
        "{} regressions · {} improvements · {} small · {} within noise · {} unjudged · {} only in A · {} only in B\n{} ({}%)\n",
        c.regressions,
        c.improvements,
        c.small,
        c.within_noise,
        c.unjudged,
        c.only_in_a,
        c.only_in_b,
        d.method,
        d.min_change_pct
    ));
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A stored row, as the records read it from a document.
    fn row(name: &str, implementation: &str, params: Value, unit: &str, ci95: Value) -> Row {
        let doc = json!({
            "takt": "0.1.0", "suite": "agents", "started": "2026-11-24T12:00:00Z",
            "machine": {"cpu": "Test CPU", "cpus": 2, "kernel": "6.18", "virtualized": true},
            "results": [{
                "name": name, "impl": implementation, "params": params, "unit": unit,
                "better": "lower", "median": 12.0, "min": 11.0, "max": 13.0, "mean": 12.0,
                "ci95": ci95, "runs": 5, "cpu_s": 0.25
            }]
        });
        let mut d = takt_records::validate_document(0, &doc).unwrap();
        d.rows.remove(0)
    }

    #[test]
    fn stored_rows_group_by_name_and_unit_with_a_column_per_parameter() {
        let rows = [
            row(
                "ping_pong",
                "takt",
                json!({"dispatcher": "one_thread", "messages": 1000}),
                "ns/msg",
                json!([11.5, 12.5]),
            ),
            row("skynet", "takt", json!({}), "ms", json!([11.0, 13.0])),
            row(
                "ping_pong",
                "actix",
                json!({"messages": 2000}),
                "ns/msg",
                json!([null, null]),
            ),
        ];
        let text = rows_tables(&rows);
        let tables: Vec<&str> = text.split("\n\n").filter(|t| !t.is_empty()).collect();
        assert_eq!(tables.len(), 2, "{text}");
        let ping: Vec<&str> = tables[0].lines().collect();
        assert_eq!(ping[0], "ping_pong");
        let head: Vec<&str> = ping[1].split_whitespace().collect();
        assert_eq!(
            head,
            [
                "impl",
                "dispatcher",
                "messages",
                "median",
                "(ns/msg)",
                "±",
                "ci95",
                "min",
                "max",
                "runs",
                "cpu",
                "s/run"
            ],
            "the published column stays out: no row has one"
        );
        assert!(ping[3].starts_with("takt") && ping[3].contains("one_thread"));
        assert!(ping[3].contains(" 0.500 "), "{}", ping[3]);
        // no interval: the ci95 cell is empty, the row is not dropped
        let actix: Vec<&str> = ping[4].split_whitespace().collect();
        assert_eq!(
            actix,
            ["actix", "2000", "12.0", "11.0", "13.0", "5", "0.250"]
        );
        assert!(tables[1].starts_with("skynet\n"));
        assert!(tables[1].contains("median (ms)"));
    }

    #[test]
    fn a_diff_has_a_table_per_suite_name_and_unit() {
        let dir = std::env::temp_dir().join(format!("takt-lab-runs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("takt-results.db");
        let _ = std::fs::remove_file(&db);
        let doc = |suite: &str, centre: f64| {
            let s: Vec<f64> = [-0.2, -0.1, 0.0, 0.1, 0.2]
                .iter()
                .map(|d| centre + d)
                .collect();
            json!({
                "takt": "0.1.0", "suite": suite, "started": "2026-11-24T12:00:00Z",
                "machine": {"cpu": "Test CPU", "cpus": 2, "kernel": "6.18", "virtualized": true,
                            "commit": "aaaa111", "rustc": "rustc 1.95.0", "profile": "release",
                            "command": "takt bench", "steal_pct": 0.5, "load": [1.0, 1.0, 1.0]},
                "results": [
                    {"name": "ping_pong", "impl": "takt", "params": {"messages": 1000},
                     "unit": "ns/msg", "better": "lower", "median": centre, "min": s[0], "max": s[4],
                     "mean": centre, "ci95": [centre - 0.2, centre + 0.2], "runs": 5, "cpu_s": 0.2,
                     "samples": s},
                    {"name": "ping_pong", "impl": "takt", "params": {"messages": 1000},
                     "unit": "msg/s", "better": "higher", "median": 1e9 / centre, "min": 1e9 / s[4],
                     "max": 1e9 / s[0], "mean": 1e9 / centre,
                     "ci95": [1e9 / (centre + 0.2), 1e9 / (centre - 0.2)], "runs": 5, "cpu_s": 0.2}
                ]
            })
        };
        let mut ids = Vec::new();
        for centre in [12.0, 15.0] {
            let docs = [doc("agents", centre), doc("sme", centre)];
            let meta = takt_records::RunMeta::from_documents(&docs).unwrap();
            ids.push(takt_records::record(&db, &meta, &docs).unwrap());
        }
        let store = Store::open_existing(&db).unwrap();
        let d = compare(
            &store.run(ids[0]).unwrap(),
            &store.run(ids[1]).unwrap(),
            5.0,
        );
        let text = render_diff(&d);
        let titles: Vec<&str> = text
            .split("\n\n")
            .skip(1)
            .filter(|t| t.lines().nth(1).is_some_and(|h| h.starts_with("impl")))
            .filter_map(|t| t.lines().next())
            .collect();
        assert_eq!(
            titles,
            [
                "agents · ping_pong",
                "agents · ping_pong",
                "sme · ping_pong",
                "sme · ping_pong"
            ],
            "{text}"
        );
        assert!(
            text.contains("A (ns/msg)") && text.contains("B (msg/s)"),
            "{text}"
        );
        assert!(text.contains("+25.0%"), "{text}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A diff's side that is a bound reads as the bound, and a stored
    /// bound row renders as one, never as its bare value.
    #[test]
    fn a_bound_reads_as_a_bound_in_show_and_diff() {
        let bound = takt_records::Bound::new(takt_records::BoundKind::Lower, 35_000.0, "generator");
        let side = Side {
            median: None,
            mean: None,
            bound: Some(bound.clone()),
            ci95: None,
            runs: 0,
            samples: 0,
            cpu_s: 1.0,
        };
        assert_eq!(side_text(Some(&side)), "≥ 35,000 (generator)");
        let mut r = row("capacity", "kamailio", json!({}), "cps", json!([1.0, 2.0]));
        r.median = None;
        r.min = None;
        r.max = None;
        r.mean = None;
        r.ci95 = None;
        r.bound = Some(bound);
        let text = rows_tables(&[r]);
        assert!(text.contains("≥ 35,000 (generator)"), "{text}");
        assert!(!text.contains("35000"), "{text}");
    }
}
