//! The store: one API over the two backends, an embedded SQLite file
//! (the default) and a PostgreSQL database several machines share.

use serde_json::Value;

use crate::document::{validate_document, Document};
use crate::error::{Error, Result};
use crate::location::{redact, Location};
use crate::owner::Owner;
use crate::postgres::Postgres;
use crate::run::{Run, RunMeta, RunSummary};
use crate::sqlite::Sqlite;

/// The database a command uses when not told otherwise.
pub const DEFAULT_PATH: &str = "takt-results.db";

/// An open records store.
///
/// # Guarantees
/// Both backends keep them; where they differ, the backend says how.
/// - A run stored with [`Store::record`] is written in one transaction:
///   after a crash at any point (or a lost connection) the store holds the
///   whole run or none of it.
/// - A run written in stages ([`Store::begin`], [`Store::add_document`]
///   per finished stage, then [`Store::finish`] or
///   [`Store::finish_interrupted`]) is never half a document: each
///   document with its rows and samples is one transaction, and closing
///   the run (status and end time) is one statement. A run whose process
///   died before closing it reads as [`RunStatus::Abandoned`]; one that a
///   process on another machine is still writing reads as
///   [`RunStatus::RunningOn`] its host. SQLite identifies the writer by
///   machine, boot ID, pid and process start time; PostgreSQL by a session
///   lock the writer holds until it closes the run, which the server
///   drops when the writer's connection ends.
/// - Documents are validated before anything is written; an invalid one
///   writes nothing.
/// - Concurrent writers (threads, processes, machines on PostgreSQL) each
///   get whole runs; SQLite's wait for each other up to
///   [`BUSY_TIMEOUT`](crate::BUSY_TIMEOUT) in WAL mode, PostgreSQL's do
///   not wait.
/// - A schema newer than this build is refused, never downgraded; an
///   older one is migrated step by step, one transaction per step.
///
/// [`RunStatus::Abandoned`]: crate::RunStatus::Abandoned
/// [`RunStatus::RunningOn`]: crate::RunStatus::RunningOn
#[derive(Debug)]
pub struct Store {
    backend: Backend,
    location: Location,
    /// This process, as the writer of the runs it begins.
    me: Owner,
}

#[derive(Debug)]
enum Backend {
    Sqlite(Sqlite),
    /// Boxed: the client is several hundred bytes.
    Postgres(Box<Postgres>),
}

impl Store {
    /// Opens the store at `location` (a path, or a `postgres://` URL),
    /// creating it if absent, and migrates it to the current schema.
    pub fn open(location: impl Into<Location>) -> Result<Store> {
        Store::open_at(location.into(), true)
    }

    /// Opens an existing store (reading commands must not create one):
    /// [`Error::NoDatabase`] if there is no file at the path, or no
    /// records in the PostgreSQL database.
    pub fn open_existing(location: impl Into<Location>) -> Result<Store> {
        Store::open_at(location.into(), false)
    }

    fn open_at(location: Location, create: bool) -> Result<Store> {
        let backend = match &location {
            Location::Sqlite(path) => {
                if let Some(s) = path.to_str().filter(|s| looks_like_url(s)) {
                    return Err(Error::UnsupportedUrl { url: redact(s) });
                }
                Backend::Sqlite(Sqlite::open(path, create, crate::sqlite::schema::STEPS)?)
            }
            Location::Postgres(url) => Backend::Postgres(Box::new(Postgres::open(
                &location,
                url,
                create,
                crate::postgres::schema::STEPS,
            )?)),
        };
        Ok(Store {
            backend,
            location,
            me: Owner::current(),
        })
    }

    #[cfg(test)]
    pub(crate) fn open_sqlite_with(
        path: &std::path::Path,
        create: bool,
        steps: &[crate::sqlite::schema::Step],
    ) -> Result<Store> {
        Ok(Store {
            backend: Backend::Sqlite(Sqlite::open(path, create, steps)?),
            location: Location::Sqlite(path.to_path_buf()),
            me: Owner::current(),
        })
    }

    /// [`Store::open`] of a PostgreSQL store with the migration steps
    /// up to version `upto` only: makes the older schemas the migration
    /// tests start from.
    #[doc(hidden)]
    pub fn open_postgres_at_version(url: &str, upto: i64) -> Result<Store> {
        let location = Location::Postgres(url.to_string());
        let steps: Vec<_> = crate::postgres::schema::STEPS
            .iter()
            .copied()
            .filter(|s| s.to <= upto)
            .collect();
        Ok(Store {
            backend: Backend::Postgres(Box::new(Postgres::open(&location, url, true, &steps)?)),
            location,
            me: Owner::current(),
        })
    }

    /// Writes as if this process ran on machine `machine_id` named
    /// `host`: lets a test play a second machine.
    #[doc(hidden)]
    pub fn impersonate(mut self, host: &str, machine_id: &str) -> Store {
        self.me.host = host.to_string();
        self.me.machine = machine_id.to_string();
        self
    }

    /// Where the store is.
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// Stores a finished run and its documents in one transaction;
    /// returns its ID. Nothing is written if a document is invalid.
    pub fn record(&mut self, meta: &RunMeta, documents: &[Value]) -> Result<i64> {
        let docs = documents
            .iter()
            .enumerate()
            .map(|(i, d)| validate_document(i, d))
            .collect::<Result<Vec<Document>>>()?;
        match &mut self.backend {
            Backend::Sqlite(b) => b.record(meta, &docs, &self.me),
            Backend::Postgres(b) => b.record(meta, &docs, &self.me),
        }
    }

    /// Starts a run written in stages; returns its ID. It reads as
    /// running until [`Store::finish`] or [`Store::finish_interrupted`],
    /// or as abandoned if this process ends first (on PostgreSQL: if this
    /// store is dropped first, which ends its connection).
    pub fn begin(&mut self, meta: &RunMeta) -> Result<i64> {
        match &mut self.backend {
            Backend::Sqlite(b) => b.begin(meta, &self.me),
            Backend::Postgres(b) => b.begin(meta, &self.me),
        }
    }

    /// Adds one finished stage's document to a running run, with its rows
    /// and samples, in one transaction.
    pub fn add_document(&mut self, run: i64, document: &Value) -> Result<()> {
        let doc = validate_document(0, document)?;
        match &mut self.backend {
            Backend::Sqlite(b) => b.add_document(run, &doc),
            Backend::Postgres(b) => b.add_document(run, &doc),
        }
    }

    /// Closes a running run as complete.
    pub fn finish(&mut self, run: i64) -> Result<()> {
        self.close(run, "complete", &[])
    }

    /// Closes a running run as interrupted, naming what it did not
    /// measure.
    pub fn finish_interrupted(&mut self, run: i64, missing: &[String]) -> Result<()> {
        self.close(run, "interrupted", missing)
    }

    fn close(&mut self, run: i64, status: &str, missing: &[String]) -> Result<()> {
        match &mut self.backend {
            Backend::Sqlite(b) => b.close(run, status, missing),
            Backend::Postgres(b) => b.close(run, status, missing),
        }
    }

    /// Every run, oldest first.
    pub fn list(&self) -> Result<Vec<RunSummary>> {
        self.list_on(None)
    }

    /// Every run, oldest first; with `Some(machine)`, only those measured
    /// on the machine of that host name or machine ID (the machine block's
    /// `host` or `machine_id`).
    pub fn list_on(&self, machine: Option<&str>) -> Result<Vec<RunSummary>> {
        match &self.backend {
            Backend::Sqlite(b) => b.list(machine, &self.me),
            Backend::Postgres(b) => b.list(machine, &self.me),
        }
    }

    /// One run with its documents, rows and samples.
    pub fn run(&self, id: i64) -> Result<Run> {
        match &self.backend {
            Backend::Sqlite(b) => b.run(id, &self.me),
            Backend::Postgres(b) => b.run(id, &self.me),
        }
    }
}

/// Whether `s` starts like a URL (`scheme://`), which a file path given
/// on purpose does not.
fn looks_like_url(s: &str) -> bool {
    s.split_once("://").is_some_and(|(scheme, _)| {
        !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    })
}
