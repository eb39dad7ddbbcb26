//! The crate's one error type.

use std::path::PathBuf;

use crate::location::Location;

/// Everything that can go wrong opening, writing or reading the records.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading commands do not create a database.
    #[error("no records at {store}: store a run first (a measuring command with --record)")]
    NoDatabase {
        /// The store looked at.
        store: Location,
    },
    /// A URL of a kind of database the records cannot be kept in.
    #[error(
        "{url:?} is not a records store: give a file path or a postgres:// URL \
         (postgres://USER@HOST:PORT/DATABASE?sslmode=require)"
    )]
    UnsupportedUrl {
        /// What was given (without its password).
        url: String,
    },
    /// A PostgreSQL URL or setting that cannot be used.
    #[error("records store {store}: {reason}")]
    Config {
        /// The store.
        store: Location,
        /// What is wrong.
        reason: String,
    },
    /// The PostgreSQL server could not be reached or refused the session
    /// (no server, wrong credentials, TLS refused).
    #[error("cannot connect to the records store {store}: {reason}")]
    Connect {
        /// The store.
        store: Location,
        /// What the connection attempt said, with its causes.
        reason: String,
    },
    /// A PostgreSQL database that holds tables of the records' names but
    /// no records version: another program's.
    #[error(
        "{store} has a table {table:?} but no takt records version (table takt_schema): \
         another program's tables, not takt's records; use another database or schema"
    )]
    ForeignSchema {
        /// The store.
        store: Location,
        /// The table found.
        table: String,
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
        "{store} has records schema version {found}; this takt understands up to {supported}: \
         use a newer takt"
    )]
    SchemaTooNew {
        /// The store.
        store: Location,
        /// The version found (`PRAGMA user_version`, or PostgreSQL's
        /// `takt_schema` table).
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
        /// What the database said (a `rusqlite::Error` or a
        /// `postgres::Error`).
        source: Box<dyn std::error::Error + Send + Sync>,
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
    /// PostgreSQL failed after connecting.
    #[error("records database (PostgreSQL): {message}")]
    Postgres {
        /// The error with its causes (the server's message and detail).
        message: String,
        /// The client's error.
        source: postgres::Error,
    },
    /// A stored value outside what the schema admits (a damaged record).
    #[error("damaged record: {0}")]
    Damaged(String),
    /// A stored JSON column did not parse (a damaged record).
    #[error("damaged record: {0}")]
    Json(#[from] serde_json::Error),
}

impl From<postgres::Error> for Error {
    fn from(source: postgres::Error) -> Error {
        Error::Postgres {
            message: chain(&source),
            source,
        }
    }
}

/// `e` and its causes, joined by `: ` (the PostgreSQL client's own text
/// is only the kind, "db error", with the server's message as its cause).
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cause = c.source();
    }
    out
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
