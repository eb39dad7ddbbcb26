//! The embedded backend: a SQLite file of runs, in WAL mode.

pub(crate) mod schema;

use std::path::Path;
use std::time::Duration;

use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension, Transaction};
use serde_json::Value;

use crate::document::Document;
use crate::error::{Error, Result};
use crate::location::Location;
use crate::owner::Owner;
use crate::row::{canonical_json, Row};
use crate::run::{Run, RunMeta, RunSummary};
use crate::stored::{machine_of, StoredRow, StoredRun, ROW_COLUMNS, RUN_COLUMNS};
use crate::BUSY_TIMEOUT;
use schema::APPLICATION_ID;

/// SQLite's clock as RFC 3339 UTC.
const NOW: &str = "strftime('%Y-%m-%dT%H:%M:%SZ', 'now')";

/// An open SQLite records file (see [`crate::Store`] for the guarantees).
#[derive(Debug)]
pub(crate) struct Sqlite {
    conn: Connection,
}

impl Sqlite {
    /// [`Sqlite::try_open`], again while another connection's setup keeps
    /// the file busy, up to [`BUSY_TIMEOUT`]: SQLite answers some of the
    /// first statements on a file that another connection is switching
    /// to write-ahead logging with `SQLITE_BUSY` at once, without waiting
    /// in the busy handler (4 threads opening a fresh file saw it under
    /// load).
    pub(crate) fn open(path: &Path, create: bool, steps: &[schema::Step]) -> Result<Sqlite> {
        if !create && !path.exists() {
            return Err(Error::NoDatabase {
                store: Location::Sqlite(path.to_path_buf()),
            });
        }
        let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
        let mut pause = Duration::from_millis(2);
        loop {
            match Sqlite::try_open(path, create, steps) {
                Err(e) if is_busy(&e) && std::time::Instant::now() < deadline => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(100));
                }
                r => return r,
            }
        }
    }

    /// Opens (creating if `create`), checks and migrates the file once.
    fn try_open(path: &Path, create: bool, steps: &[schema::Step]) -> Result<Sqlite> {
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
        Ok(Sqlite { conn })
    }

    /// Stores a finished run and its (validated) documents in one
    /// transaction; returns its ID.
    pub(crate) fn record(
        &mut self,
        meta: &RunMeta,
        docs: &[Document],
        owner: &Owner,
    ) -> Result<i64> {
        let tx = self.conn.transaction()?;
        let id = insert_run(&tx, meta, "complete", owner)?;
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

    /// Starts a run written in stages; returns its ID.
    pub(crate) fn begin(&mut self, meta: &RunMeta, owner: &Owner) -> Result<i64> {
        let tx = self.conn.transaction()?;
        let id = insert_run(&tx, meta, "running", owner)?;
        tx.commit()?;
        Ok(id)
    }

    /// Adds one finished stage's (validated) document to a running run,
    /// with its rows and samples, in one transaction.
    pub(crate) fn add_document(&mut self, run: i64, doc: &Document) -> Result<()> {
        let tx = self.conn.transaction()?;
        require_running(&tx, run)?;
        let seq: i64 = tx.query_row(
            "SELECT count(*) FROM documents WHERE run_id = ?1",
            [run],
            |r| r.get(0),
        )?;
        insert_document(&tx, run, seq, doc)?;
        tx.commit()?;
        Ok(())
    }

    /// Closes a running run with `status` (`complete`, `interrupted`).
    pub(crate) fn close(&mut self, run: i64, status: &str, missing: &[String]) -> Result<()> {
        let tx = self.conn.transaction()?;
        require_running(&tx, run)?;
        tx.execute(
            &format!("UPDATE runs SET status = ?2, missing = ?3, ended = {NOW} WHERE id = ?1"),
            params![run, status, serde_json::to_string(missing)?],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Every run, oldest first; with `machine`, those measured on the
    /// machine of that host name or machine ID.
    pub(crate) fn list(&self, machine: Option<&str>, me: &Owner) -> Result<Vec<RunSummary>> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT {RUN_COLUMNS} FROM runs
             WHERE ?1 IS NULL OR host = ?1 OR machine_id = ?1 ORDER BY id"
        ))?;
        let rows = stmt
            .query_map([machine], read_run)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        rows.into_iter()
            .map(|r| self.complete_summary(r, me))
            .collect()
    }

    /// One run with its documents, rows and samples.
    pub(crate) fn run(&self, id: i64, me: &Owner) -> Result<Run> {
        let raw = self
            .conn
            .query_row(
                &format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1"),
                [id],
                read_run,
            )
            .optional()?
            .ok_or(Error::UnknownRun(id))?;
        let summary = self.complete_summary(raw, me)?;
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
        let mut stmt = self.conn.prepare(&format!(
            "SELECT {ROW_COLUMNS} FROM results WHERE document_id = ?1 ORDER BY seq"
        ))?;
        let mut samples = self
            .conn
            .prepare("SELECT value FROM samples WHERE result_id = ?1 ORDER BY seq")?;
        let raw = stmt
            .query_map([document], |r| {
                Ok(StoredRow {
                    id: r.get(0)?,
                    name: r.get(1)?,
                    implementation: r.get(2)?,
                    params: r.get(3)?,
                    unit: r.get(4)?,
                    better: r.get(5)?,
                    median: r.get(6)?,
                    min: r.get(7)?,
                    max: r.get(8)?,
                    mean: r.get(9)?,
                    stddev: r.get(10)?,
                    ci: [r.get(11)?, r.get(12)?],
                    runs: r.get(13)?,
                    cpu_s: r.get(14)?,
                    published: r.get(15)?,
                    note: r.get(16)?,
                    detail: r.get(17)?,
                    bound: (r.get(18)?, r.get(19)?, r.get(20)?),
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let mut out = Vec::with_capacity(raw.len());
        for row in raw {
            let values = samples
                .query_map([row.id], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<f64>>>()?;
            out.push(row.into_row(values)?);
        }
        Ok(out)
    }

    /// The summary's document-derived fields, and `running` read as
    /// `abandoned` once its process is gone (or as running on its host
    /// when that is another machine, which a file cannot look at).
    fn complete_summary(&self, raw: StoredRun, me: &Owner) -> Result<RunSummary> {
        let liveness = raw.owner.liveness(me);
        let mut summary = raw.summary(liveness)?;
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

fn read_run(r: &rusqlite::Row<'_>) -> rusqlite::Result<StoredRun> {
    Ok(StoredRun {
        id: r.get(0)?,
        status: r.get(1)?,
        missing: r.get(2)?,
        started: r.get(3)?,
        ended: r.get(4)?,
        command: r.get(5)?,
        commit: r.get(6)?,
        rustc: r.get(7)?,
        profile: r.get(8)?,
        takt: r.get(9)?,
        machine: r.get(10)?,
        steal_pct: r.get(11)?,
        load: [r.get(12)?, r.get(13)?, r.get(14)?],
        owner: Owner {
            boot: r.get(15)?,
            pid: r.get(16)?,
            start: r.get(17)?,
            host: r.get(18)?,
            machine: r.get(19)?,
        },
    })
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

fn insert_run(tx: &Transaction<'_>, meta: &RunMeta, status: &str, owner: &Owner) -> Result<i64> {
    let parses: bool = tx.query_row("SELECT julianday(?1) IS NOT NULL", [&meta.started], |r| {
        r.get(0)
    })?;
    if !parses {
        return Err(Error::InvalidMeta(format!(
            "started {:?} is not an RFC 3339 time",
            meta.started
        )));
    }
    let [l1, l5, l15] = meta.load.map_or([None; 3], |l| l.map(Some));
    let (host, machine_id) = machine_of(meta);
    tx.execute(
        "INSERT INTO runs (status, started, command, commit_id, rustc, profile, takt, machine,
                           steal_pct, load1, load5, load15, owner_boot, owner_pid, owner_start,
                           owner_host, owner_machine, host, machine_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
                 ?18, ?19)",
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
            owner.host,
            owner.machine,
            host,
            machine_id,
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
        Error::Sqlite(s) | Error::Open { source: s, .. } => s,
        Error::Migration { source, .. } => match source.downcast_ref::<rusqlite::Error>() {
            Some(s) => s,
            None => return false,
        },
        _ => return false,
    };
    matches!(
        source.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}
