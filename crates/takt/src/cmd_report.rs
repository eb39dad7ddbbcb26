//! `takt report`: the main job — run the laboratory plan and write the
//! HTML report (see `takt_lab::report`).

use std::path::PathBuf;

use clap::Args;
use takt_lab::report::plan::Only;
use takt_lab::report::{Finished, Request};
use takt_lab::OrchestrationError;

/// `takt report` flags.
#[derive(Args, Debug)]
pub struct ReportCmd {
    /// The reduced plan: under 10 minutes on a 2-core machine.
    #[arg(long)]
    quick: bool,
    /// Only these stages: machine, agents, sme, sip, capacity, sweep,
    /// robustness, remote (comma-separated).
    #[arg(long, value_name = "STAGE,...")]
    only: Option<Only>,
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
    /// names its section and replaces the run's, e.g. the JSON of a full
    /// `takt sip sweep --json` or `takt sip torture --json`.
    #[arg(long = "with", value_name = "FILE")]
    with: Vec<PathBuf>,
    /// The records store (a SQLite file or a postgres:// URL): a measured report is stored in it, `--run`
    /// reads from it.
    #[arg(long, value_name = "PATH|URL", env = takt_records::ENV_VAR, default_value = takt_records::DEFAULT_PATH)]
    db: PathBuf,
}

/// Runs `takt report`; the report is written whenever this returns `Ok`,
/// also when an interrupt cut the run short.
pub fn run(cmd: ReportCmd) -> Result<Finished, OrchestrationError> {
    takt_lab::report::run(&Request {
        quick: cmd.quick,
        only: cmd.only,
        out: cmd.out,
        from: cmd.from,
        run: cmd.run,
        with: cmd.with,
        db: cmd.db,
        peers: cfg!(feature = "peers"),
        progress: takt_measure::progress::Progress::auto(),
    })
}
