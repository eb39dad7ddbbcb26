//! takt's run records: result documents kept in an embedded SQLite file
//! (the default) or in a PostgreSQL database that several machines share,
//! and the comparison of two stored runs.
//!
//! A **run** is one invocation of a measuring command (or of the report):
//! the git commit, compiler and build profile, the machine description,
//! the steal time and load seen, the command line, start and end time,
//! its status ([`RunStatus`]: complete, interrupted with what is missing,
//! or abandoned by a process that died), and every result document it
//! produced — verbatim, and as rows with their raw samples.
//!
//! Documents come in as JSON ([`serde_json::Value`]) in the shape of the
//! result-document conventions and are validated on the way in
//! ([`validate_document`]), so the store does not depend on the suites'
//! Rust types and keeps working as they grow fields.
//!
//! - [`Store`] opens (and migrates, see [`SCHEMA_VERSION`]) a store at a
//!   [`Location`] — a file path, or a `postgres://` URL — and writes runs
//!   transactionally; see its guarantees. Both backends have the same
//!   tables and the same API.
//! - [`record`] is the one call a measuring command needs.
//! - [`compare()`] puts two runs side by side and flags regressions and
//!   improvements only beyond both runs' noise; the [`compare`](mod@compare)
//!   module states the tests.
//!
//! The crate README describes the schema and the `takt runs` commands.
//!
//! ```
//! # fn main() -> Result<(), takt_records::Error> {
//! # let dir = std::env::temp_dir().join(format!("takt-records-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir).unwrap();
//! # let db = dir.join("takt-results.db");
//! let doc = serde_json::json!({
//!     "takt": "0.1.0", "suite": "agents", "started": "2026-11-22T10:00:00Z",
//!     "machine": {"cpu": "EPYC", "cpus": 2, "kernel": "6.18", "virtualized": true,
//!                 "commit": "a3d4636", "rustc": "rustc 1.95.0", "profile": "release",
//!                 "command": "takt bench agents --quick", "steal_pct": 0.4,
//!                 "load": [1.9, 2.0, 2.1]},
//!     "results": [{"name": "ping_pong", "impl": "takt", "params": {"messages": 1000},
//!                  "unit": "ns/msg", "better": "lower", "median": 12.4, "min": 12.1,
//!                  "max": 13.0, "mean": 12.5, "ci95": [12.2, 12.8], "runs": 5,
//!                  "cpu_s": 0.41, "samples": [12.1, 12.3, 12.4, 12.7, 13.0]}]
//! });
//! let id = takt_records::record(&db, &takt_records::RunMeta::from_documents(&[doc.clone()])?, &[doc])?;
//! let store = takt_records::Store::open_existing(&db)?;
//! let run = store.run(id)?;
//! assert_eq!(run.documents[0].rows[0].samples.len(), 5);
//! let same = takt_records::compare(&run, &run, takt_records::compare::DEFAULT_MIN_CHANGE_PCT);
//! assert_eq!(same.counts.within_noise, 1);
//! # std::fs::remove_dir_all(&dir).unwrap();
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

pub mod compare;
mod document;
mod error;
mod location;
mod owner;
mod postgres;
mod row;
mod run;
mod sqlite;
mod store;
mod stored;

use std::time::Duration;

use serde_json::Value;

pub use compare::{compare, Counts, Diff, RowDiff, Side, Verdict};
pub use document::{validate_document, Document};
pub use error::{Error, Result};
pub use location::{Location, ENV_VAR};
pub use row::{Better, Bound, BoundKind, Row};
pub use run::{Run, RunMeta, RunStatus, RunSummary};
pub use sqlite::schema::APPLICATION_ID;
pub use store::{Store, DEFAULT_PATH};
pub use takt_measure::stats::mann_whitney_p;

/// The schema version this build writes (SQLite's `PRAGMA user_version`,
/// PostgreSQL's `takt_schema` table).
pub const SCHEMA_VERSION: i64 = 3;

/// How long a SQLite writer waits for another process's write to finish.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Stores a finished run of `documents` in the store at `db` (a path or a
/// `postgres://` URL; created if absent) in one transaction, and returns
/// its ID.
pub fn record(db: impl Into<Location>, meta: &RunMeta, documents: &[Value]) -> Result<i64> {
    Store::open(db)?.record(meta, documents)
}
