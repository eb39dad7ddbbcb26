//! The one error type of the laboratory's orchestration: `takt report`
//! ([`crate::report`]), `takt runs` ([`crate::runs`]) and `takt sched`
//! ([`crate::sched_check`]).

use std::path::PathBuf;

/// What can go wrong running the report's plan, reading or storing
/// records, or printing them.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OrchestrationError {
    /// An `--only` name that is not a stage the plan runs.
    #[error(
        "unknown stage `{0}` (machine, agents, sme, sip, capacity, sweep, robustness, remote)"
    )]
    UnknownStage(String),
    /// A stage's process could not be started.
    #[error("cannot start `{command}`: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// A stage's process could not be waited for.
    #[error("waiting for `{command}`: {source}")]
    Wait {
        /// The command line.
        command: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The running `takt` binary, whose subcommands are the stages, could
    /// not be found.
    #[error("cannot find the takt binary: {0}")]
    CurrentExe(#[source] std::io::Error),
    /// The Ctrl-C handler could not be installed.
    #[error(transparent)]
    Signal(#[from] takt_measure::error::MeasureError),
    /// Writing or reading the report directory failed.
    #[error(transparent)]
    Report(#[from] takt_report::ReportError),
    /// `--from DIR` is not a report directory.
    #[error("--from: {0}")]
    From(#[source] takt_report::ReportError),
    /// A `--with` document could not be read.
    #[error("--with {}: {source}", path.display())]
    WithRead {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A `--with` file is not JSON.
    #[error("--with {}: {source}", path.display())]
    WithJson {
        /// The file.
        path: PathBuf,
        /// The parse error.
        source: serde_json::Error,
    },
    /// A `--with` document's suite is not one of the report's sections.
    #[error("--with {}: its suite is none of the report's sections", path.display())]
    WithSuite {
        /// The file.
        path: PathBuf,
    },
    /// `--run ID` could not be read from the records.
    #[error("--run {id}: {source}")]
    StoredRun {
        /// The run asked for.
        id: i64,
        /// What the records said.
        source: takt_records::Error,
    },
    /// Storing a measured report in the records failed.
    #[error("records: {0}")]
    StoreReport(#[source] takt_records::Error),
    /// Storing a measuring command's document (`--record`) failed.
    #[error("--record: {0}")]
    Record(#[source] takt_records::Error),
    /// A document to record is not JSON.
    #[error("--record: {0}")]
    RecordJson(#[source] serde_json::Error),
    /// The records could not be opened, read or written.
    #[error(transparent)]
    Records(#[from] takt_records::Error),
    /// `takt runs diff` without IDs on a database of fewer than two runs.
    #[error(
        "{} holds {runs} run(s): `takt runs diff` without IDs compares the last two",
        db.display()
    )]
    NotTwoRuns {
        /// The database.
        db: PathBuf,
        /// How many runs it holds.
        runs: usize,
    },
    /// A document for `takt runs add` could not be read (`-`: stdin).
    #[error("reading {}: {source}", if path.as_os_str() == "-" { "stdin".into() } else { path.display().to_string() })]
    Read {
        /// The file, or `-`.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A document for `takt runs add` is not JSON.
    #[error("{}: not JSON: {source}", path.display())]
    NotJson {
        /// The file, or `-`.
        path: PathBuf,
        /// The parse error.
        source: serde_json::Error,
    },
    /// The output could not be written (a closed stdout is not an error).
    #[error("writing to stdout: {0}")]
    Output(#[source] std::io::Error),
    /// A scheduler setting could not be applied or read (`takt sched`).
    #[error(transparent)]
    Sched(takt_sched::SchedError),
    /// A policy applied to a process's threads is not what some of them
    /// report (`takt sched --pid`).
    #[error("{threads} thread(s) of pid {pid} do not report {policy} (see the table)")]
    NotApplied {
        /// How many threads differ.
        threads: usize,
        /// The process.
        pid: i32,
        /// The policy applied.
        policy: takt_sched::SchedPolicy,
    },
    /// A thread of the laboratory panicked.
    #[error("{0} thread panicked")]
    Panicked(&'static str),
}
