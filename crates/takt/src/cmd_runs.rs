//! `takt runs list/show/diff`: the stored runs. takt-records does the
//! work; this module parses flags and prints.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::PathBuf;

use clap::{Args, Subcommand};
use comfy_table::{CellAlignment, LineStyle, Table, TableStyle};
use serde_json::{Map, Value};
use takt_records::{compare, Diff, Row, RowDiff, Run, RunSummary, Store, Verdict};

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
    /// The reference run.
    pub a: i64,
    /// The run compared with it.
    pub b: i64,
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
            let a = store.run(c.a).map_err(|e| e.to_string())?;
            let b = store.run(c.b).map_err(|e| e.to_string())?;
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

/// A borderless table: a dashed rule under the header, two spaces
/// between columns, the given columns right-aligned.
fn table(header: Vec<String>, right: impl Fn(usize) -> bool) -> Table {
    let mut t = Table::new();
    t.load_style(TableStyle::new().header_separator(LineStyle::none().fill('-').junction(' ')));
    let n = header.len();
    t.set_header(header);
    for i in 0..n {
        if right(i) {
            if let Some(c) = t.column_mut(i) {
                c.set_cell_alignment(CellAlignment::Right);
            }
        }
    }
    t
}

/// A value with 3-4 significant digits, plainly.
fn num(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() {
        format!("{v}")
    } else if a >= 1e6 {
        format!("{v:.3e}")
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
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
    let header = [
        "id", "started", "status", "suites", "rows", "commit", "profile", "steal", "load",
        "command",
    ];
    let mut t = table(header.map(String::from).to_vec(), |i| {
        matches!(i, 0 | 4 | 7 | 8)
    });
    for r in runs {
        t.add_row(vec![
            r.id.to_string(),
            r.meta.started.clone(),
            r.status.to_string(),
            r.suites.join(","),
            r.rows.to_string(),
            r.meta.commit.clone(),
            r.meta.profile.clone(),
            r.meta.steal_pct.map_or("-".into(), |s| format!("{s:.1}%")),
            r.meta.load.map_or("-".into(), |l| format!("{:.2}", l[0])),
            r.meta.command.clone(),
        ]);
    }
    format!("{}\n", t.trim_fmt())
}

fn machine_text(m: &Map<String, Value>) -> String {
    let get = |k: &str| m.get(k).map(value_text);
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
            "\n{} · started {} · {} rows\n",
            d.suite,
            d.started,
            d.rows.len()
        ));
        out.push_str(&rows_table(&d.rows));
    }
    out
}

/// The parameters of `rows` as columns: every key any row has, sorted.
fn param_keys<'a>(params: impl Iterator<Item = &'a Map<String, Value>>) -> Vec<String> {
    params
        .flat_map(|p| p.keys().cloned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

fn rows_table(rows: &[Row]) -> String {
    let keys = param_keys(rows.iter().map(|r| &r.params));
    let mut header = vec!["benchmark".to_string(), "impl".to_string()];
    header.extend(keys.iter().cloned());
    let first_num = header.len();
    header.extend(["median", "ci95 ±", "min..max", "unit", "runs", "cpu s"].map(String::from));
    let mut t = table(header, |i| i >= first_num && i != first_num + 3);
    for r in rows {
        let mut cells = vec![r.name.clone(), r.implementation.clone()];
        cells.extend(
            keys.iter()
                .map(|k| r.params.get(k).map(value_text).unwrap_or_default()),
        );
        cells.extend([
            num(r.median),
            r.ci95.map_or("-".into(), |c| num((c[1] - c[0]) / 2.0)),
            format!("{}..{}", num(r.min), num(r.max)),
            r.unit.clone(),
            r.runs.to_string(),
            num(r.cpu_s),
        ]);
        t.add_row(cells);
    }
    format!("{}\n", t.trim_fmt())
}

fn side_text(s: Option<&takt_records::Side>) -> String {
    s.map_or("-".into(), |s| match s.ci95 {
        Some(c) => format!("{} ±{}", num(s.median), num((c[1] - c[0]) / 2.0)),
        None => num(s.median),
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
    if d.a.meta.machine != d.b.meta.machine {
        out.push_str(&format!(
            "note: different machines: A {} / B {}\n",
            machine_text(&d.a.meta.machine),
            machine_text(&d.b.meta.machine)
        ));
    }
    let suites: BTreeSet<&str> = d.rows.iter().map(|r| r.suite.as_str()).collect();
    for suite in suites {
        let rows: Vec<&RowDiff> = d.rows.iter().filter(|r| r.suite == suite).collect();
        let keys = param_keys(rows.iter().map(|r| &r.params));
        let mut header = vec!["benchmark".to_string(), "impl".to_string()];
        header.extend(keys.iter().cloned());
        let first_num = header.len();
        header.extend(["A median", "B median", "change", "p", "unit", "verdict"].map(String::from));
        let mut t = table(header, |i| (first_num..first_num + 4).contains(&i));
        for r in rows {
            let mut cells = vec![r.name.clone(), r.implementation.clone()];
            cells.extend(
                keys.iter()
                    .map(|k| r.params.get(k).map(value_text).unwrap_or_default()),
            );
            let verdict = match (&r.reason, r.verdict) {
                (Some(why), v) => format!("{} ({why})", v.label()),
                (None, Verdict::Small) => format!("small (< {}%)", d.min_change_pct),
                (None, v) => v.label().to_string(),
            };
            cells.extend([
                side_text(r.a.as_ref()),
                side_text(r.b.as_ref()),
                r.change_pct.map_or("-".into(), |c| format!("{c:+.1}%")),
                r.p_value.map_or("-".into(), |p| format!("{p:.3}")),
                r.unit.clone(),
                verdict,
            ]);
            t.add_row(cells);
        }
        out.push_str(&format!("\n{suite}\n{}\n", t.trim_fmt()));
    }
    let c = &d.counts;
    out.push_str(&format!(
        "\n{} regressions · {} improvements · {} small · {} within noise · {} unjudged · {} only in A · {} only in B\n{} ({}%)\n",
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
