//! The crate's one error type.

use std::path::PathBuf;

/// Everything that can go wrong opening, writing or reading the records.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading commands do not create a database.
    #[error("no records at {path}: store a run first (a measuring command with --record)")]
    NoDatabase {
        /// The path looked at.
        path: PathBuf,
    },
    /// SQLite could not open the file (a missing directory, no permission).
    #[error("cannot open the records database {path}: {source}")]
    Open {
        /// The file.
        path: PathBuf,
        /// What SQLite said.
        source: rusqlite::Error,
    },
    /// The file exists but is not a SQLite database (or is damaged).
    #[error("{path} is not a takt records database: {reason}")]
    NotADatabase {
        /// The file.
        path: PathBuf,
        /// What SQLite or the check said.
        reason: String,
    },
    /// A SQLite database some other program made.
    #[error(
        "{path} is a SQLite database of another program (application_id {application_id:#010x}), \
         not takt's records"
    )]
    ForeignDatabase {
        /// The file.
        path: PathBuf,
        /// The `PRAGMA application_id` found.
        application_id: i32,
    },
    /// The schema is newer than this build understands.
    #[error(
        "{path} has records schema version {found}; this takt understands up to {supported}: \
         use a newer takt"
    )]
    SchemaTooNew {
        /// The file.
        path: PathBuf,
        /// `PRAGMA user_version` found.
        found: i64,
        /// The newest version this build migrates to.
        supported: i64,
    },
    /// A migration step failed; its transaction was rolled back, so the
    /// database is still at version `to - 1`.
    #[error("migrating the records schema to version {to} failed (left at {}): {source}", to - 1)]
    Migration {
        /// The version the failed step was to reach.
        to: i64,
        /// What SQLite said.
        source: rusqlite::Error,
    },
    /// A JSON value that is not a result document.
    #[error("document {index} is not a result document: {at}: {reason}")]
    InvalidDocument {
        /// Position of the document in the batch given (0-based).
        index: usize,
        /// Where in the document, e.g. `results[3].median`.
        at: String,
        /// What is wrong there.
        reason: String,
    },
    /// Run metadata that cannot be stored.
    #[error("run metadata: {0}")]
    InvalidMeta(String),
    /// No run with this ID.
    #[error("no run {0} in the records (see `takt runs list`)")]
    UnknownRun(i64),
    /// The run is not open for more documents.
    #[error("run {id} is {status}: it takes no more documents")]
    RunClosed {
        /// The run.
        id: i64,
        /// Its status.
        status: String,
    },
    /// SQLite failed.
    #[error("records database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A stored value outside what the schema admits (a damaged record).
    #[error("damaged record: {0}")]
    Damaged(String),
    /// A stored JSON column did not parse (a damaged record).
    #[error("damaged record: {0}")]
    Json(#[from] serde_json::Error),
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
