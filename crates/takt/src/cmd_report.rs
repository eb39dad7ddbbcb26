//! `takt report`: the main job — run the laboratory plan and write the
//! HTML report (see `takt_report`).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use clap::Args;
use takt_report::input::{Outcome, ReportInput, Stage};

/// `takt report` flags.
#[derive(Args, Debug)]
pub struct ReportCmd {
    /// The reduced plan: under 5 minutes on a 2-core machine.
    #[arg(long)]
    quick: bool,
    /// Only these stages: machine, agents, sme, sip, capacity, remote
    /// (comma-separated).
    #[arg(long, value_name = "STAGE,...", value_parser = parse_only)]
    only: Option<StageList>,
    /// The report directory: index.html and the JSON documents beside it.
    #[arg(long, value_name = "DIR", default_value = "takt-report")]
    out: PathBuf,
    /// Render the report of an earlier run from its directory (its
    /// run.json and documents) again, without measuring.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["quick", "only", "run"])]
    from: Option<PathBuf>,
    /// Render a stored run (see `takt runs list`) again, without measuring.
    #[arg(long, value_name = "ID", conflicts_with_all = ["quick", "only"])]
    run: Option<i64>,
    /// A result document to show beside the run's (repeatable): its suite
    /// names its section, e.g. the JSON of `takt sip sweep --json` or `takt
    /// sip torture --json`, which the plan does not run. Without it those
    /// sections show the latest such document in the records.
    #[arg(long = "with", value_name = "FILE")]
    with: Vec<PathBuf>,
    /// The records database: a measured report is stored in it, `--run`
    /// reads from it.
    #[arg(long, value_name = "PATH", default_value = takt_records::DEFAULT_PATH)]
    db: PathBuf,
}

/// A parsed `--only` list (a newtype so clap takes it as one value).
#[derive(Clone, Debug)]
struct StageList(Vec<Stage>);

fn parse_only(s: &str) -> Result<StageList, String> {
    Stage::parse_list(s)
        .map(StageList)
        .map_err(|e| e.to_string())
}

pub fn run(cmd: ReportCmd) -> Result<(), String> {
    let measured = cmd.from.is_none() && cmd.run.is_none();
    // Read before measuring: a bad file fails at once, not after the run.
    let with = cmd
        .with
        .iter()
        .map(|p| read_document(p))
        .collect::<Result<Vec<_>, _>>()?;
    let mut input = match (&cmd.from, cmd.run) {
        (Some(dir), _) => ReportInput::load_dir(dir).map_err(|e| format!("--from: {e}"))?,
        (None, Some(id)) => stored(&cmd.db, id)?,
        (None, None) => measure(&cmd)?,
    };
    for (path, doc) in with {
        if input.attach(doc, None).is_none() {
            return Err(format!(
                "--with {}: its suite is none of the report's sections",
                path.display()
            ));
        }
    }
    if measured {
        latest_recorded(&cmd.db, &mut input);
    }
    let index = takt_report::render::write(&cmd.out, &input).map_err(|e| e.to_string())?;
    if measured {
        store(&cmd.db, &input)?;
    }
    let missing: Vec<String> = input
        .stages
        .iter()
        .filter(|(s, _)| s.is_planned())
        .filter_map(|(s, o)| match o {
            Outcome::NotMeasured { reason, .. } => Some(format!("{s} ({reason})")),
            Outcome::Measured { .. } => None,
        })
        .collect();
    eprintln!("takt report: wrote {}", index.display());
    if !missing.is_empty() {
        eprintln!("takt report: not measured: {}", missing.join("; "));
    }
    println!("{}", index.display());
    // Only a run this invocation measured was cut short (a re-rendered one
    // was complete as far as this command goes).
    let interrupted = measured
        && input.stages.iter().any(|(_, o)| {
        matches!(o, Outcome::NotMeasured { reason, .. } if reason.starts_with("interrupted"))
    });
    if interrupted {
        // The report is written; the status still says the run was cut short.
        std::process::exit(130);
    }
    Ok(())
}

fn measure(cmd: &ReportCmd) -> Result<ReportInput, String> {
    let interrupt = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&interrupt);
    // Release pairs with the Acquire loads of the plan runner.
    ctrlc::set_handler(move || flag.store(true, Ordering::Release))
        .map_err(|e| format!("installing the Ctrl-C handler: {e}"))?;
    let opts = takt_report::plan::Options {
        quick: cmd.quick,
        only: cmd.only.as_ref().map_or_else(
            || Stage::ALL.into_iter().filter(|s| s.is_planned()).collect(),
            |l| l.0.clone(),
        ),
        takt: std::env::current_exe().map_err(|e| format!("cannot find the takt binary: {e}"))?,
        peers: cfg!(feature = "peers"),
        out: cmd.out.clone(),
        command: command_line(),
        progress: takt_measure::progress::Progress::auto(),
    };
    takt_report::plan::run(&opts, &interrupt).map_err(|e| e.to_string())
}

/// Reads a `--with` document (checked for a `suite` by `attach`).
fn read_document(path: &std::path::Path) -> Result<(PathBuf, serde_json::Value), String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("--with {}: {e}", path.display()))?;
    let doc = serde_json::from_str(&text).map_err(|e| format!("--with {}: {e}", path.display()))?;
    Ok((path.to_path_buf(), doc))
}

/// Fills the sections the plan does not run (sweep, robustness) that are
/// still empty with the latest document of their suite in the records,
/// if the database has one; a database that cannot be read leaves them
/// as they are (the section says how to measure them).
fn latest_recorded(db: &std::path::Path, input: &mut ReportInput) {
    let Ok(store) = takt_records::Store::open_existing(db) else {
        return;
    };
    let Ok(runs) = store.list() else {
        return;
    };
    for stage in Stage::ALL.into_iter().filter(|s| !s.is_planned()) {
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
            eprintln!("takt report: {stage}: the latest recorded document (run {id})");
        }
    }
}

/// The command line as a user would type it again: `takt` and the
/// arguments (not the path the binary was started by).
fn command_line() -> String {
    std::iter::once("takt".to_string())
        .chain(std::env::args().skip(1))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The report input of stored run `id`.
fn stored(db: &std::path::Path, id: i64) -> Result<ReportInput, String> {
    let store = takt_records::Store::open_existing(db).map_err(|e| format!("--run {id}: {e}"))?;
    let run = store.run(id).map_err(|e| format!("--run {id}: {e}"))?;
    let docs: Vec<serde_json::Value> = run.documents.into_iter().map(|d| d.body).collect();
    let meta = takt_report::input::RunMeta {
        command: command_line(),
        started: run.summary.meta.started.clone(),
        wall_s: 0.0,
        quick: run.summary.meta.command.contains("--quick"),
        reductions: Vec::new(),
        run_id: Some(format!("{id} ({})", run.summary.meta.command)),
    };
    Ok(ReportInput::from_documents(meta, &docs))
}

/// Stores the measured documents of a report run as one run in the records.
fn store(db: &std::path::Path, input: &ReportInput) -> Result<(), String> {
    // Documents this run measured; those it was given (--with, the
    // records) are stored already or are the user's files.
    let docs: Vec<serde_json::Value> = input
        .stages
        .iter()
        .filter(|(s, _)| s.is_planned())
        .filter_map(|(_, o)| match o {
            Outcome::Measured { document, .. } => Some(document.clone()),
            Outcome::NotMeasured { .. } => None,
        })
        .collect();
    if docs.is_empty() {
        return Ok(());
    }
    let mut meta =
        takt_records::RunMeta::from_documents(&docs).map_err(|e| format!("records: {e}"))?;
    meta.command = input.meta.command.clone();
    let id = takt_records::record(db, &meta, &docs).map_err(|e| format!("records: {e}"))?;
    eprintln!("takt report: stored run {id} in {}", db.display());
    Ok(())
}
