//! `takt runs list/show/diff/add`: the stored runs (see `takt_lab::runs`),
//! and the `--record` flags of the measuring commands.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use takt_lab::runs::DiffRequest;
use takt_lab::OrchestrationError;

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
    /// The records store: a SQLite file, or a PostgreSQL database that
    /// several machines share (postgres://USER@HOST:PORT/DB?sslmode=require;
    /// the password from PGPASSWORD or ~/.pgpass).
    #[arg(long, value_name = "PATH|URL", env = takt_records::ENV_VAR, default_value = takt_records::DEFAULT_PATH)]
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
    /// The records store `--record` writes to (created if absent): a
    /// SQLite file or a postgres:// URL (see `takt runs list --help`);
    /// default: $TAKT_DB, else takt-results.db.
    #[arg(long, value_name = "PATH|URL", requires = "record")]
    pub db: Option<PathBuf>,
}

impl RecordArgs {
    /// With `--record`, stores `doc` (a result document) as one complete
    /// run and says so on stderr; without it, does nothing.
    pub fn store(&self, doc: &impl serde::Serialize) -> Result<(), OrchestrationError> {
        if !self.record {
            return Ok(());
        }
        // Not clap's `env`: a set TAKT_DB would count as a given --db,
        // which requires --record.
        let db = self
            .db
            .clone()
            .or_else(|| {
                std::env::var_os(takt_records::ENV_VAR)
                    .filter(|v| !v.is_empty())
                    .map(PathBuf::from)
            })
            .unwrap_or_else(|| takt_records::DEFAULT_PATH.into());
        let id = takt_lab::runs::record(&db, doc)?;
        eprintln!(
            "takt: stored run {id} in {}",
            takt_records::Location::from(&db)
        );
        Ok(())
    }
}

/// `takt runs list` flags.
#[derive(Args, Debug)]
pub struct ListCmd {
    /// Only the newest N runs.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub last: Option<u64>,
    /// Only the runs measured on this machine (its host name or machine
    /// ID, as `takt runs show` prints them).
    #[arg(long, value_name = "HOST|ID")]
    pub machine: Option<String>,
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
    /// The records store (created if absent): a SQLite file or a
    /// postgres:// URL.
    #[arg(long, value_name = "PATH|URL", env = takt_records::ENV_VAR, default_value = takt_records::DEFAULT_PATH)]
    pub db: PathBuf,
}

pub fn run(cmd: RunsCmd) -> Result<(), OrchestrationError> {
    match cmd {
        RunsCmd::List(c) => {
            takt_lab::runs::list(&c.records.db, c.last, c.machine.as_deref(), c.records.json)
        }
        RunsCmd::Show(c) => takt_lab::runs::show(&c.records.db, c.id, c.records.json),
        RunsCmd::Diff(c) => {
            let req = DiffRequest {
                a: c.a,
                b: c.b,
                changed: c.changed,
                min_change_pct: c.min_change,
            };
            takt_lab::runs::diff(&c.records.db, &req, c.records.json)
        }
        RunsCmd::Add(c) => takt_lab::runs::add(&c.db, &c.files),
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
