//! `takt runs list/show/diff`: the stored runs. takt-records does the
//! work; this module parses flags and prints.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::{Map, Value};
use takt_measure::table::{fmt_num, fmt_value, Table};
use takt_records::{compare, Diff, Row, Run, RunSummary, Store, Verdict};

/// `takt runs` subcommands.
#[derive(Subcommand, Debug)]
pub enum RunsCmd {
    /// The stored runs, oldest first.
    List(ListCmd),
    /// One run: its build, machine and conditions, and every row.
    Show(ShowCmd),
    /// Run B beside run A: regressions and improvements beyond both runs'
    /// noise (disjoint ci95 intervals and, with raw samples, a
    /// Mann-Whitney U test at 5%); the rest is within noise.
    Diff(DiffCmd),
    /// Store result documents saved with `--json` (one file each, or `-`
    /// for one document on stdin) as one complete run; prints its ID.
    Add(AddCmd),
}

/// The database and the output form, shared by the subcommands.
#[derive(Args, Debug, Clone)]
pub struct RecordsArgs {
    /// The records database.
    #[arg(long, value_name = "PATH", default_value = takt_records::DEFAULT_PATH)]
    pub db: PathBuf,
    /// Print exactly one JSON document on stdout instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// `--record` and `--db` of the measuring commands.
#[derive(Args, Debug, Clone)]
pub struct RecordArgs {
    /// Also store the run in the records database (see `takt runs`).
    #[arg(long)]
    pub record: bool,
    /// The records database `--record` writes to (created if absent).
    #[arg(long, value_name = "PATH", default_value = takt_records::DEFAULT_PATH, requires = "record")]
    pub db: PathBuf,
}

impl RecordArgs {
    /// With `--record`, stores `doc` (a result document) as one complete
    /// run and says so on stderr; without it, does nothing.
    pub fn store(&self, doc: &impl serde::Serialize) -> Result<(), String> {
        if !self.record {
            return Ok(());
        }
        let doc = serde_json::to_value(doc).map_err(|e| format!("--record: {e}"))?;
        let docs = [doc];
        let mut meta =
            takt_records::RunMeta::from_documents(&docs).map_err(|e| format!("--record: {e}"))?;
        // This process's command line (with --repeat, the document's is a child's).
        meta.command = std::env::args().collect::<Vec<_>>().join(" ");
        let id =
            takt_records::record(&self.db, &meta, &docs).map_err(|e| format!("--record: {e}"))?;
        eprintln!("takt: stored run {id} in {}", self.db.display());
        Ok(())
    }
}

/// `takt runs list` flags.
#[derive(Args, Debug)]
pub struct ListCmd {
    /// Only the newest N runs.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub last: Option<u64>,
    #[command(flatten)]
    pub records: RecordsArgs,
}

/// `takt runs show` flags.
#[derive(Args, Debug)]
pub struct ShowCmd {
    /// The run's ID (see `takt runs list`).
    pub id: i64,
    #[command(flatten)]
    pub records: RecordsArgs,
}

/// `takt runs diff` flags.
#[derive(Args, Debug)]
pub struct DiffCmd {
    /// The reference run (default: the next-to-last run).
    #[arg(requires = "b")]
    pub a: Option<i64>,
    /// The run compared with it (default: the last run).
    pub b: Option<i64>,
    /// Only rows that changed beyond noise or are in one run only.
    #[arg(long)]
    pub changed: bool,
    /// The smallest change of a median flagged, in percent: smaller
    /// changes beyond the noise tests are reported as small (0 flags them
    /// all). Raise it on a busy or virtual machine, where back-to-back runs
    /// of one build differ by a few percent.
    #[arg(long, value_name = "PCT", default_value_t = takt_records::compare::DEFAULT_MIN_CHANGE_PCT, value_parser = parse_pct)]
    pub min_change: f64,
    #[command(flatten)]
    pub records: RecordsArgs,
}

/// `takt runs add` flags.
#[derive(Args, Debug)]
pub struct AddCmd {
    /// Result-document files (`-` reads stdin).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The records database (created if absent).
    #[arg(long, value_name = "PATH", default_value = takt_records::DEFAULT_PATH)]
    pub db: PathBuf,
}

pub fn run(cmd: RunsCmd) -> Result<(), String> {
    let text = match cmd {
        RunsCmd::List(c) => {
            let mut runs = open(&c.records)?.list().map_err(|e| e.to_string())?;
            if let Some(n) = c.last {
                let keep = usize::try_from(n).unwrap_or(usize::MAX).min(runs.len());
                runs.drain(..runs.len() - keep);
            }
            if c.records.json {
                json(&serde_json::json!({ "db": c.records.db, "runs": runs }))?
            } else {
                render_list(&runs)
            }
        }
        RunsCmd::Show(c) => {
            let run = open(&c.records)?.run(c.id).map_err(|e| e.to_string())?;
            if c.records.json {
                json(&run)?
            } else {
                render_run(&run)
            }
        }
        RunsCmd::Diff(c) => {
            let store = open(&c.records)?;
            let (a, b) = match (c.a, c.b) {
                (Some(a), Some(b)) => (a, b),
                _ => {
                    let runs = store.list().map_err(|e| e.to_string())?;
                    match runs.as_slice() {
                        [.., a, b] => (a.id, b.id),
                        _ => {
                            return Err(format!(
                                "{} holds {} run(s): `takt runs diff` without IDs compares the last two",
                                c.records.db.display(),
                                runs.len()
                            ))
                        }
                    }
                }
            };
            let a = store.run(a).map_err(|e| e.to_string())?;
            let b = store.run(b).map_err(|e| e.to_string())?;
            let mut diff = compare(&a, &b, c.min_change);
            if c.changed {
                diff.rows
                    .retain(|r| !matches!(r.verdict, Verdict::WithinNoise));
            }
            if c.records.json {
                json(&diff)?
            } else {
                render_diff(&diff)
            }
        }
        RunsCmd::Add(c) => {
            let docs = c
                .files
                .iter()
                .map(|f| read_document(f))
                .collect::<Result<Vec<_>, _>>()?;
            for (i, d) in docs.iter().enumerate() {
                takt_records::validate_document(i, d).map_err(|e| e.to_string())?;
            }
            let meta = takt_records::RunMeta::from_documents(&docs).map_err(|e| e.to_string())?;
            let id = takt_records::record(&c.db, &meta, &docs).map_err(|e| e.to_string())?;
            format!("stored run {id} in {}\n", c.db.display())
        }
    };
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.map_err(|e| format!("writing to stdout: {e}")),
    }
}

fn parse_pct(s: &str) -> Result<f64, String> {
    match s.trim_end_matches('%').parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!(
            "bad percentage {s:?} (a number >= 0, e.g. 5 or 2.5)"
        )),
    }
}

fn read_document(path: &std::path::Path) -> Result<Value, String> {
    let text = if path.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin()).map_err(|e| format!("reading stdin: {e}"))?
    } else {
        std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?
    };
    serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", path.display()))
}

fn open(args: &RecordsArgs) -> Result<Store, String> {
    Store::open_existing(&args.db).map_err(|e| e.to_string())
}

fn json(v: &impl serde::Serialize) -> Result<String, String> {
    let mut s = serde_json::to_string_pretty(v).map_err(|e| e.to_string())?;
    s.push('\n');
    Ok(s)
}

fn conditions(r: &RunSummary) -> String {
    let steal = r.meta.steal_pct.map_or("-".into(), |s| format!("{s:.1}%"));
    let load = r.meta.load.map_or("-".into(), |l| format!("{:.2}", l[0]));
    format!("steal {steal} · load {load}")
}

fn render_list(runs: &[RunSummary]) -> String {
    if runs.is_empty() {
        return "no runs stored\n".into();
    }
    let mut t = Table::new()
        .number("id")
        .text("started")
        .text("status")
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

fn machine_text(m: &Map<String, Value>) -> String {
    let get = |k: &str| m.get(k).map(fmt_value);
    let mut parts = Vec::new();
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

fn render_run(run: &Run) -> String {
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

/// Rows grouped by (benchmark, unit), in first-seen order, each group
/// with the union of its rows' parameter names.
fn groups<'a, T>(
    items: &'a [T],
    key: impl Fn(&T) -> (String, String),
    params: impl Fn(&T) -> &Map<String, Value>,
) -> Vec<(String, String, Vec<String>, Vec<&'a T>)> {
    let mut out: Vec<(String, String, Vec<String>, Vec<&'a T>)> = Vec::new();
    for it in items {
        let (section, unit) = key(it);
        let i = match out.iter().position(|g| g.0 == section && g.1 == unit) {
            Some(i) => i,
            None => {
                out.push((section, unit, Vec::new(), Vec::new()));
                out.len() - 1
            }
        };
        let g = &mut out[i];
        for k in params(it).keys() {
            if !g.2.contains(k) {
                g.2.push(k.clone());
            }
        }
        g.3.push(it);
    }
    out
}

/// Adds a column per parameter: numbers right, text left.
fn param_columns<'a>(
    mut t: Table,
    keys: &[String],
    params: impl Iterator<Item = &'a Map<String, Value>> + Clone,
) -> Table {
    for k in keys {
        let numeric = params
            .clone()
            .all(|p| p.get(k).is_none_or(Value::is_number));
        t = if numeric {
            t.number(k.clone())
        } else {
            t.text(k.clone())
        };
    }
    t
}

fn param_cells(keys: &[String], p: &Map<String, Value>) -> Vec<String> {
    keys.iter()
        .map(|k| p.get(k).map(fmt_value).unwrap_or_default())
        .collect()
}

fn rows_tables(rows: &[Row]) -> String {
    let mut out = String::new();
    for (name, unit, keys, rows) in
        groups(rows, |r| (r.name.clone(), r.unit.clone()), |r| &r.params)
    {
        let mut t = param_columns(
            Table::titled(&name).text("impl"),
            &keys,
            rows.iter().map(|r| &r.params),
        )
        .number(format!("median ({unit})"))
        .number("± ci95")
        .number("min")
        .number("max")
        .number("runs")
        .number("cpu s/run")
        .number("published");
        for r in rows {
            let mut cells = vec![r.implementation.clone()];
            cells.extend(param_cells(&keys, &r.params));
            cells.extend([
                fmt_num(r.median),
                r.ci95
                    .map_or(String::new(), |c| fmt_num((c[1] - c[0]) / 2.0)),
                fmt_num(r.min),
                fmt_num(r.max),
                r.runs.to_string(),
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

fn side_text(s: Option<&takt_records::Side>) -> String {
    s.map_or(String::new(), |s| match s.ci95 {
        Some(c) => format!("{} ±{}", fmt_num(s.median), fmt_num((c[1] - c[0]) / 2.0)),
        None => fmt_num(s.median),
    })
}

fn render_diff(d: &Diff) -> String {
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
    out.push('\n');
    let grouped = groups(
        &d.rows,
        |r| (format!("{} · {}", r.suite, r.name), r.unit.clone()),
        |r| &r.params,
    );
    for (section, unit, keys, rows) in grouped {
        let mut t = param_columns(
            Table::titled(&section).text("impl"),
            &keys,
            rows.iter().map(|r| &r.params),
        )
        .number(format!("A ({unit})"))
        .number(format!("B ({unit})"))
        .number("change")
        .number("p")
        .text("verdict");
        for r in rows {
            let verdict = match (&r.reason, r.verdict) {
                (Some(why), v) => format!("{} ({why})", v.label()),
                (None, Verdict::Small) => format!("small (< {}%)", d.min_change_pct),
                (None, v) => v.label().to_string(),
            };
            let mut cells = vec![r.implementation.clone()];
            cells.extend(param_cells(&keys, &r.params));
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
