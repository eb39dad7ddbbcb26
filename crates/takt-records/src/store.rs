//! The store: a SQLite database of runs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension, Transaction};
use serde_json::{Map, Value};

use crate::document::{validate_document, Document};
use crate::error::{Error, Result};
use crate::owner::Owner;
use crate::row::{canonical_json, Better, Bound, BoundKind, Row};
use crate::run::{Run, RunMeta, RunStatus, RunSummary};
use crate::schema::{self, APPLICATION_ID, STEPS};

/// The database a command uses when not told otherwise.
pub const DEFAULT_PATH: &str = "takt-results.db";

/// How long a writer waits for another process's write to finish.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// SQLite's clock as RFC 3339 UTC.
const NOW: &str = "strftime('%Y-%m-%dT%H:%M:%SZ', 'now')";

/// An open records database.
///
/// # Guarantees
/// - A run stored with [`Store::record`] is written in one transaction:
///   after a crash at any point the database holds the whole run or none
///   of it.
/// - A run written in stages ([`Store::begin`], [`Store::add_document`]
///   per finished stage, then [`Store::finish`] or
///   [`Store::finish_interrupted`]) is never half a document: each
///   document with its rows and samples is one transaction, and closing
///   the run (status and end time) is one statement. A run whose process
///   died before closing it reads as [`RunStatus::Abandoned`].
/// - Documents are validated before anything is written; an invalid one
///   writes nothing.
/// - The database is in WAL mode: readers do not block the writer, and
///   concurrent writers wait for each other (up to [`BUSY_TIMEOUT`]).
#[derive(Debug)]
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Opens the database at `path`, creating it if absent, and migrates
    /// it to the current schema.
    pub fn open(path: impl AsRef<Path>) -> Result<Store> {
        Store::open_with(path.as_ref(), true, STEPS)
    }

    /// Opens an existing database (reading commands must not create one):
    /// [`Error::NoDatabase`] if there is no file at `path`.
    pub fn open_existing(path: impl AsRef<Path>) -> Result<Store> {
        let path = path.as_ref();
        if !path.exists() {
            return Err(Error::NoDatabase {
                path: path.to_path_buf(),
            });
        }
        Store::open_with(path, false, STEPS)
    }

    /// [`Store::try_open`], again while another connection's setup keeps
    /// the file busy, up to [`BUSY_TIMEOUT`]: SQLite answers some of the
    /// first statements on a file that another connection is switching
    /// to write-ahead logging with `SQLITE_BUSY` at once, without waiting
    /// in the busy handler (4 threads opening a fresh file saw it under
    /// load).
    pub(crate) fn open_with(path: &Path, create: bool, steps: &[schema::Step]) -> Result<Store> {
        let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
        let mut pause = Duration::from_millis(2);
        loop {
            match Store::try_open(path, create, steps) {
                Err(e) if is_busy(&e) && std::time::Instant::now() < deadline => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(100));
                }
                r => return r,
            }
        }
    }

    /// Opens (creating if `create`), checks and migrates the file once.
    fn try_open(path: &Path, create: bool, steps: &[schema::Step]) -> Result<Store> {
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if create {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        let not_db = |e: rusqlite::Error| match e.sqlite_error_code() {
            Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => Error::NotADatabase {
                path: path.to_path_buf(),
                reason: e.to_string(),
            },
            _ => Error::Sqlite(e),
        };
        let mut conn = Connection::open_with_flags(path, flags).map_err(|source| Error::Open {
            path: path.to_path_buf(),
            source,
        })?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(not_db)?;
        // The first read of the file: a non-SQLite file fails here. One
        // read transaction, so both values come from the same snapshot
        // (another process may be creating the schema meanwhile).
        let (app, tables) = {
            let tx = conn.transaction().map_err(not_db)?;
            let app: i32 = tx
                .query_row("PRAGMA application_id", [], |r| r.get(0))
                .map_err(not_db)?;
            let tables: i64 = tx
                .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
                .map_err(not_db)?;
            tx.commit().map_err(not_db)?;
            (app, tables)
        };
        if app != APPLICATION_ID && (app != 0 || tables > 0) {
            return Err(Error::ForeignDatabase {
                path: path.to_path_buf(),
                application_id: app,
            });
        }
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(not_db)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(Error::NotADatabase {
                path: path.to_path_buf(),
                reason: format!("cannot use write-ahead logging (journal mode {mode})"),
            });
        }
        conn.pragma_update(None, "foreign_keys", true)?;
        schema::migrate(&mut conn, steps, path)?;
        Ok(Store {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stores a finished run and its documents in one transaction;
    /// returns its ID. Nothing is written if a document is invalid.
    pub fn record(&mut self, meta: &RunMeta, documents: &[Value]) -> Result<i64> {
        let docs = validate_all(documents)?;
        let tx = self.conn.transaction()?;
        let id = insert_run(&tx, meta, "complete")?;
        for (seq, d) in docs.iter().enumerate() {
            insert_document(&tx, id, seq as i64, d)?;
        }
        tx.execute(
            &format!("UPDATE runs SET ended = {NOW} WHERE id = ?1"),
            [id],
        )?;
        tx.commit()?;
        Ok(id)
    }

    /// Starts a run written in stages; returns its ID. It reads as
    /// running until [`Store::finish`] or [`Store::finish_interrupted`],
    /// or as abandoned if this process ends first.
    pub fn begin(&mut self, meta: &RunMeta) -> Result<i64> {
        let tx = self.conn.transaction()?;
        let id = insert_run(&tx, meta, "running")?;
        tx.commit()?;
        Ok(id)
    }

    /// Adds one finished stage's document to a running run, with its rows
    /// and samples, in one transaction.
    pub fn add_document(&mut self, run: i64, document: &Value) -> Result<()> {
        let doc = validate_document(0, document)?;
        let tx = self.conn.transaction()?;
        require_running(&tx, run)?;
        let seq: i64 = tx.query_row(
            "SELECT count(*) FROM documents WHERE run_id = ?1",
            [run],
            |r| r.get(0),
        )?;
        insert_document(&tx, run, seq, &doc)?;
        tx.commit()?;
        Ok(())
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
        let tx = self.conn.transaction()?;
        require_running(&tx, run)?;
        tx.execute(
            &format!("UPDATE runs SET status = ?2, missing = ?3, ended = {NOW} WHERE id = ?1"),
            params![run, status, serde_json::to_string(missing)?],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Every run, oldest first.
    pub fn list(&self) -> Result<Vec<RunSummary>> {
        let mut stmt = self
            .conn
            .prepare(&format!("SELECT {RUN_COLUMNS} FROM runs ORDER BY id"))?;
        let rows = stmt.query_map([], read_run)?;
        let mut out = Vec::new();
        for r in rows {
            out.push(self.complete_summary(r?)?);
        }
        Ok(out)
    }

    /// One run with its documents, rows and samples.
    pub fn run(&self, id: i64) -> Result<Run> {
        let raw = self
            .conn
            .query_row(
                &format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1"),
                [id],
                read_run,
            )
            .optional()?
            .ok_or(Error::UnknownRun(id))?;
        let summary = self.complete_summary(raw)?;
        let mut stmt = self.conn.prepare(
            "SELECT id, suite, started, takt, body FROM documents WHERE run_id = ?1 ORDER BY seq",
        )?;
        let docs = stmt
            .query_map([id], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let mut documents = Vec::with_capacity(docs.len());
        for (doc_id, suite, started, takt, body) in docs {
            documents.push(Document {
                suite,
                started,
                takt,
                rows: self.rows(doc_id)?,
                body: serde_json::from_str(&body)?,
            });
        }
        Ok(Run { summary, documents })
    }

    fn rows(&self, document: i64) -> Result<Vec<Row>> {
        let mut stmt = self.conn.prepare(
            "SELECT id, name, impl, params, unit, better, median, min, max, mean, stddev,
                    ci_lo, ci_hi, runs, cpu_s, published, note, detail,
                    bound_kind, bound_value, bound_limit
             FROM results WHERE document_id = ?1 ORDER BY seq",
        )?;
        let mut samples = self
            .conn
            .prepare("SELECT value FROM samples WHERE result_id = ?1 ORDER BY seq")?;
        let raw = stmt
            .query_map([document], |r| {
                let id: i64 = r.get(0)?;
                let params: String = r.get(3)?;
                let better: String = r.get(5)?;
                let detail: String = r.get(17)?;
                let bound: (Option<String>, Option<f64>, Option<String>) =
                    (r.get(18)?, r.get(19)?, r.get(20)?);
                let ci = match (r.get::<_, Option<f64>>(11)?, r.get::<_, Option<f64>>(12)?) {
                    (Some(lo), Some(hi)) => Some([lo, hi]),
                    _ => None,
                };
                let row = Row {
                    name: r.get(1)?,
                    implementation: r.get(2)?,
                    params: Map::new(),
                    unit: r.get(4)?,
                    better: Better::Lower,
                    median: r.get(6)?,
                    min: r.get(7)?,
                    max: r.get(8)?,
                    mean: r.get(9)?,
                    stddev: r.get(10)?,
                    ci95: ci,
                    runs: r.get::<_, i64>(13)?.max(0) as u64,
                    cpu_s: r.get(14)?,
                    samples: Vec::new(),
                    bound: None,
                    published: r.get(15)?,
                    note: r.get(16)?,
                    detail: Map::new(),
                };
                Ok((id, row, params, better, detail, bound))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let mut out = Vec::with_capacity(raw.len());
        for (id, mut row, params, better, detail, bound) in raw {
            row.bound = match bound {
                (Some(kind), Some(value), Some(limit)) => Some(Bound::new(
                    BoundKind::parse(&kind).ok_or_else(|| {
                        Error::Damaged(format!("result {id}: bound_kind = {kind:?}"))
                    })?,
                    value,
                    limit,
                )),
                (None, None, None) => None,
                _ => return Err(Error::Damaged(format!("result {id}: a partial bound"))),
            };
            row.params = serde_json::from_str(&params)?;
            row.detail = serde_json::from_str(&detail)?;
            row.better = Better::parse(&better)
                .ok_or_else(|| Error::Damaged(format!("result {id}: better = {better:?}")))?;
            row.samples = samples
                .query_map([id], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<f64>>>()?;
            out.push(row);
        }
        Ok(out)
    }

    /// The summary's document-derived fields, and `running` read as
    /// `abandoned` once its process is gone.
    fn complete_summary(&self, raw: RawRun) -> Result<RunSummary> {
        let RawRun { mut summary, owner } = raw;
        if summary.status == RunStatus::Running && !owner.is_alive() {
            summary.status = RunStatus::Abandoned;
        }
        let mut stmt = self
            .conn
            .prepare("SELECT suite FROM documents WHERE run_id = ?1 ORDER BY seq")?;
        summary.suites = stmt
            .query_map([summary.id], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<String>>>()?;
        summary.rows = self.conn.query_row(
            "SELECT count(*) FROM results JOIN documents d ON d.id = document_id WHERE d.run_id = ?1",
            [summary.id],
            |r| r.get::<_, i64>(0),
        )? as u64;
        Ok(summary)
    }
}

/// Columns [`read_run`] reads, in its order.
const RUN_COLUMNS: &str = "id, status, missing, started, ended, command, commit_id, rustc, \
    profile, takt, machine, steal_pct, load1, load5, load15, owner_boot, owner_pid, owner_start";

struct RawRun {
    summary: RunSummary,
    owner: Owner,
}

fn read_run(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawRun> {
    let json_err = |i: usize, e: serde_json::Error| {
        rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, Box::new(e))
    };
    let status: String = r.get(1)?;
    let missing: String = r.get(2)?;
    let status = match status.as_str() {
        "running" => RunStatus::Running,
        "complete" => RunStatus::Complete,
        _ => RunStatus::Interrupted {
            missing: serde_json::from_str(&missing).map_err(|e| json_err(2, e))?,
        },
    };
    let machine: String = r.get(10)?;
    let load = match (r.get(12)?, r.get(13)?, r.get(14)?) {
        (Some(a), Some(b), Some(c)) => Some([a, b, c]),
        _ => None,
    };
    Ok(RawRun {
        summary: RunSummary {
            id: r.get(0)?,
            status,
            ended: r.get(4)?,
            meta: RunMeta {
                started: r.get(3)?,
                command: r.get(5)?,
                commit: r.get(6)?,
                rustc: r.get(7)?,
                profile: r.get(8)?,
                takt: r.get(9)?,
                machine: serde_json::from_str(&machine).map_err(|e| json_err(10, e))?,
                steal_pct: r.get(11)?,
                load,
            },
            suites: Vec::new(),
            rows: 0,
        },
        owner: Owner {
            boot: r.get(15)?,
            pid: r.get(16)?,
            start: r.get(17)?,
        },
    })
}

fn validate_all(documents: &[Value]) -> Result<Vec<Document>> {
    documents
        .iter()
        .enumerate()
        .map(|(i, d)| validate_document(i, d))
        .collect()
}

fn require_running(tx: &Transaction<'_>, run: i64) -> Result<()> {
    let status: String = tx
        .query_row("SELECT status FROM runs WHERE id = ?1", [run], |r| r.get(0))
        .optional()?
        .ok_or(Error::UnknownRun(run))?;
    if status == "running" {
        Ok(())
    } else {
        Err(Error::RunClosed { id: run, status })
    }
}

fn insert_run(tx: &Transaction<'_>, meta: &RunMeta, status: &str) -> Result<i64> {
    let parses: bool = tx.query_row("SELECT julianday(?1) IS NOT NULL", [&meta.started], |r| {
        r.get(0)
    })?;
    if !parses {
        return Err(Error::InvalidMeta(format!(
            "started {:?} is not an RFC 3339 time",
            meta.started
        )));
    }
    let owner = Owner::current();
    let [l1, l5, l15] = meta.load.map_or([None; 3], |l| l.map(Some));
    tx.execute(
        "INSERT INTO runs (status, started, command, commit_id, rustc, profile, takt, machine,
                           steal_pct, load1, load5, load15, owner_boot, owner_pid, owner_start)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
        params![
            status,
            meta.started,
            meta.command,
            meta.commit,
            meta.rustc,
            meta.profile,
            meta.takt,
            serde_json::to_string(&meta.machine)?,
            meta.steal_pct,
            l1,
            l5,
            l15,
            owner.boot,
            owner.pid,
            owner.start,
        ],
    )?;
    Ok(tx.last_insert_rowid())
}

fn insert_document(tx: &Transaction<'_>, run: i64, seq: i64, d: &Document) -> Result<()> {
    tx.execute(
        "INSERT INTO documents (run_id, seq, suite, started, takt, body)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            run,
            seq,
            d.suite,
            d.started,
            d.takt,
            serde_json::to_string(&d.body)?
        ],
    )?;
    let doc_id = tx.last_insert_rowid();
    let mut row_stmt = tx.prepare(
        "INSERT INTO results (document_id, seq, suite, name, impl, params, unit, better,
                              median, min, max, mean, stddev, ci_lo, ci_hi, runs, cpu_s,
                              published, note, detail, bound_kind, bound_value, bound_limit)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
                 ?18, ?19, ?20, ?21, ?22, ?23)",
    )?;
    let mut sample_stmt =
        tx.prepare("INSERT INTO samples (result_id, seq, value) VALUES (?1, ?2, ?3)")?;
    for (i, row) in d.rows.iter().enumerate() {
        row_stmt.execute(params![
            doc_id,
            i as i64,
            d.suite,
            row.name,
            row.implementation,
            row.params_key(),
            row.unit,
            row.better.as_str(),
            row.median,
            row.min,
            row.max,
            row.mean,
            row.stddev,
            row.ci95.map(|c| c[0]),
            row.ci95.map(|c| c[1]),
            i64::try_from(row.runs).unwrap_or(i64::MAX),
            row.cpu_s,
            row.published,
            row.note,
            canonical_json(&Value::Object(row.detail.clone())),
            row.bound.as_ref().map(|b| b.kind.as_str()),
            row.bound.as_ref().map(|b| b.value),
            row.bound.as_ref().map(|b| b.limit.as_str()),
        ])?;
        let row_id = tx.last_insert_rowid();
        for (j, v) in row.samples.iter().enumerate() {
            sample_stmt.execute(params![row_id, j as i64, v])?;
        }
    }
    Ok(())
}

/// Whether `e` is SQLite's "database is busy" (or locked), from any step of
/// opening a store.
fn is_busy(e: &Error) -> bool {
    let source = match e {
        Error::Sqlite(s) | Error::Open { source: s, .. } | Error::Migration { source: s, .. } => s,
        _ => return false,
    };
    matches!(
        source.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}
