//! The shared backend: a PostgreSQL database that several machines write
//! their runs to at once.
//!
//! Writes are the same transactions as SQLite's; PostgreSQL's MVCC lets
//! concurrent writers proceed without waiting for each other, and a
//! writer whose connection drops mid-transaction has its transaction
//! rolled back by the server.
//!
//! A run written in stages is held open by a session-level advisory lock
//! (`pg_advisory_lock(RUN_LOCK_NS, id)`) that [`Postgres::begin`] takes
//! and closing the run releases. The server drops it when the writer's
//! session ends for any reason (the process exited, was killed, or its
//! machine's connection died: at the latest after TCP keepalive gives up),
//! so any reader, on any machine, tells a run still being written (the
//! lock is held: "running", or "running on HOST" when the writer is on
//! another machine) from one whose writer is gone ("abandoned") by looking
//! at `pg_locks`.

mod connect;
pub(crate) mod schema;

use std::cell::RefCell;
use std::collections::HashSet;

use postgres::{Client, Transaction};
use serde_json::Value;

use crate::document::Document;
use crate::error::{Error, Result};
use crate::location::Location;
use crate::owner::{Liveness, Owner};
use crate::row::{canonical_json, Row};
use crate::run::{Run, RunMeta, RunSummary};
use crate::stored::{machine_of, StoredRow, StoredRun, ROW_COLUMNS, RUN_COLUMNS};

/// The first key of a run's advisory lock (`"takt"` in ASCII); the second
/// is the run's ID.
const RUN_LOCK_NS: i32 = 0x7461_6b74;

/// The server's clock as RFC 3339 UTC, like SQLite's.
const NOW: &str = "to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')";

/// An open PostgreSQL store (see [`crate::Store`] for the guarantees).
pub(crate) struct Postgres {
    /// The client; reads need it mutably, the store's reads take `&self`.
    client: RefCell<Client>,
}

impl std::fmt::Debug for Postgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Postgres").finish_non_exhaustive()
    }
}

impl Postgres {
    /// Connects to `url` and migrates its schema (creating it if
    /// `create`).
    pub(crate) fn open(
        store: &Location,
        url: &str,
        create: bool,
        steps: &[schema::Step],
    ) -> Result<Postgres> {
        let mut client = connect::connect(store, url)?;
        schema::migrate(&mut client, steps, store, create)?;
        Ok(Postgres {
            client: RefCell::new(client),
        })
    }

    /// Stores a finished run and its (validated) documents in one
    /// transaction; returns its ID.
    pub(crate) fn record(
        &mut self,
        meta: &RunMeta,
        docs: &[Document],
        owner: &Owner,
    ) -> Result<i64> {
        let client = self.client.get_mut();
        check_started(client, meta)?;
        let mut tx = client.transaction()?;
        let id = insert_run(&mut tx, meta, "complete", owner)?;
        for (seq, d) in docs.iter().enumerate() {
            insert_document(&mut tx, id, seq as i64, d)?;
        }
        tx.execute(
            &format!("UPDATE runs SET ended = {NOW} WHERE id = $1"),
            &[&id],
        )?;
        tx.commit()?;
        Ok(id)
    }

    /// Starts a run written in stages, holding its lock; returns its ID.
    pub(crate) fn begin(&mut self, meta: &RunMeta, owner: &Owner) -> Result<i64> {
        let client = self.client.get_mut();
        check_started(client, meta)?;
        let mut tx = client.transaction()?;
        let id = insert_run(&mut tx, meta, "running", owner)?;
        // Session-level: it outlives the transaction, and is taken before
        // the run is visible to others.
        tx.execute(
            "SELECT pg_advisory_lock($1, $2)",
            &[&RUN_LOCK_NS, &lock_key(id)],
        )?;
        tx.commit()?;
        Ok(id)
    }

    /// Adds one finished stage's (validated) document to a running run,
    /// in one transaction.
    pub(crate) fn add_document(&mut self, run: i64, doc: &Document) -> Result<()> {
        let mut tx = self.client.get_mut().transaction()?;
        require_running(&mut tx, run)?;
        let seq: i64 = tx
            .query_one("SELECT count(*) FROM documents WHERE run_id = $1", &[&run])?
            .get(0);
        insert_document(&mut tx, run, seq, doc)?;
        tx.commit()?;
        Ok(())
    }

    /// Closes a running run with `status`, and releases its lock.
    pub(crate) fn close(&mut self, run: i64, status: &str, missing: &[String]) -> Result<()> {
        let client = self.client.get_mut();
        let mut tx = client.transaction()?;
        require_running(&mut tx, run)?;
        tx.execute(
            &format!("UPDATE runs SET status = $2, missing = $3, ended = {NOW} WHERE id = $1"),
            &[&run, &status, &serde_json::to_string(missing)?],
        )?;
        tx.commit()?;
        client.execute(
            "SELECT pg_advisory_unlock($1, $2)",
            &[&RUN_LOCK_NS, &lock_key(run)],
        )?;
        Ok(())
    }

    /// Every run, oldest first (only those of `machine`, a host name or
    /// machine ID, with `Some`).
    pub(crate) fn list(&self, machine: Option<&str>, me: &Owner) -> Result<Vec<RunSummary>> {
        let client = &mut *self.client.borrow_mut();
        // One snapshot for the runs, their counts and the writers' locks.
        let mut tx = client
            .build_transaction()
            .isolation_level(postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()?;
        let rows = tx.query(
            &format!(
                "SELECT {RUN_COLUMNS} FROM runs
                 WHERE $1::text IS NULL OR host = $1 OR machine_id = $1 ORDER BY id"
            ),
            &[&machine],
        )?;
        let held = held_locks(&mut tx)?;
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            let raw = read_run(r)?;
            out.push(complete_summary(&mut tx, raw, &held, me)?);
        }
        tx.commit()?;
        Ok(out)
    }

    /// One run with its documents, rows and samples.
    pub(crate) fn run(&self, id: i64, me: &Owner) -> Result<Run> {
        let client = &mut *self.client.borrow_mut();
        let mut tx = client
            .build_transaction()
            .isolation_level(postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()?;
        let raw = tx
            .query_opt(
                &format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = $1"),
                &[&id],
            )?
            .ok_or(Error::UnknownRun(id))?;
        let raw = read_run(&raw)?;
        let held = held_locks(&mut tx)?;
        let summary = complete_summary(&mut tx, raw, &held, me)?;
        let docs = tx.query(
            "SELECT id, suite, started, takt, body FROM documents WHERE run_id = $1 ORDER BY seq",
            &[&id],
        )?;
        let mut documents = Vec::with_capacity(docs.len());
        for d in docs {
            let body: String = d.get(4);
            documents.push(Document {
                suite: d.get(1),
                started: d.get(2),
                takt: d.get(3),
                rows: rows(&mut tx, d.get(0))?,
                body: serde_json::from_str(&body)?,
            });
        }
        tx.commit()?;
        Ok(Run { summary, documents })
    }
}

/// The second key of run `id`'s lock (run IDs stay far below 2^31).
fn lock_key(id: i64) -> i32 {
    (id & 0x7fff_ffff) as i32
}

/// The runs whose writers hold their lock now, in this database.
fn held_locks(tx: &mut Transaction<'_>) -> Result<HashSet<i64>> {
    Ok(tx
        .query(
            "SELECT objid::bigint FROM pg_locks
             WHERE locktype = 'advisory' AND granted AND objsubid = 2
               AND classid::bigint = $1
               AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
            &[&i64::from(RUN_LOCK_NS)],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect())
}

/// The summary with its suites and row count; a `running` run is alive
/// while its writer holds its lock.
fn complete_summary(
    tx: &mut Transaction<'_>,
    raw: StoredRun,
    held: &HashSet<i64>,
    me: &Owner,
) -> Result<RunSummary> {
    let liveness = if !held.contains(&i64::from(lock_key(raw.id))) {
        Liveness::Gone
    } else if !raw.owner.machine.is_empty() && raw.owner.machine != me.machine {
        Liveness::Elsewhere
    } else {
        Liveness::Alive
    };
    let id = raw.id;
    let mut summary = raw.summary(liveness)?;
    summary.suites = tx
        .query(
            "SELECT suite FROM documents WHERE run_id = $1 ORDER BY seq",
            &[&id],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let rows: i64 = tx
        .query_one(
            "SELECT count(*) FROM results JOIN documents d ON d.id = document_id
             WHERE d.run_id = $1",
            &[&id],
        )?
        .get(0);
    summary.rows = rows.max(0) as u64;
    Ok(summary)
}

fn rows(tx: &mut Transaction<'_>, document: i64) -> Result<Vec<Row>> {
    let raw = tx.query(
        &format!("SELECT {ROW_COLUMNS} FROM results WHERE document_id = $1 ORDER BY seq"),
        &[&document],
    )?;
    let mut out = Vec::with_capacity(raw.len());
    for r in raw {
        let row = StoredRow {
            id: r.try_get(0)?,
            name: r.try_get(1)?,
            implementation: r.try_get(2)?,
            params: r.try_get(3)?,
            unit: r.try_get(4)?,
            better: r.try_get(5)?,
            median: r.try_get(6)?,
            min: r.try_get(7)?,
            max: r.try_get(8)?,
            mean: r.try_get(9)?,
            stddev: r.try_get(10)?,
            ci: [r.try_get(11)?, r.try_get(12)?],
            runs: r.try_get(13)?,
            cpu_s: r.try_get(14)?,
            published: r.try_get(15)?,
            note: r.try_get(16)?,
            detail: r.try_get(17)?,
            bound: (r.try_get(18)?, r.try_get(19)?, r.try_get(20)?),
        };
        let samples: Vec<f64> = tx
            .query(
                "SELECT value FROM samples WHERE result_id = $1 ORDER BY seq",
                &[&row.id],
            )?
            .iter()
            .map(|s| s.get(0))
            .collect();
        out.push(row.into_row(samples)?);
    }
    Ok(out)
}

fn read_run(r: &postgres::Row) -> Result<StoredRun> {
    Ok(StoredRun {
        id: r.try_get(0)?,
        status: r.try_get(1)?,
        missing: r.try_get(2)?,
        started: r.try_get(3)?,
        ended: r.try_get(4)?,
        command: r.try_get(5)?,
        commit: r.try_get(6)?,
        rustc: r.try_get(7)?,
        profile: r.try_get(8)?,
        takt: r.try_get(9)?,
        machine: r.try_get(10)?,
        steal_pct: r.try_get(11)?,
        load: [r.try_get(12)?, r.try_get(13)?, r.try_get(14)?],
        owner: Owner {
            boot: r.try_get(15)?,
            pid: r.try_get(16)?,
            start: r.try_get(17)?,
            host: r.try_get(18)?,
            machine: r.try_get(19)?,
        },
    })
}

/// Refuses a start time that is not an RFC 3339 time (the server's
/// own parser also takes words such as `yesterday`, which SQLite's does
/// not), before any transaction: an error inside one would abort it.
fn check_started(client: &mut Client, meta: &RunMeta) -> Result<()> {
    let refused = || {
        Error::InvalidMeta(format!(
            "started {:?} is not an RFC 3339 time",
            meta.started
        ))
    };
    match client.query_one(
        "SELECT CASE WHEN $1::text ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9:.]+)?(Z|[+-][0-9:]+)?$'
                THEN $1::text::timestamptz IS NOT NULL ELSE false END",
        &[&meta.started],
    ) {
        Ok(r) if r.get::<_, bool>(0) => Ok(()),
        Ok(_) => Err(refused()),
        Err(e) if e.as_db_error().is_some() => Err(refused()),
        Err(e) => Err(e.into()),
    }
}

fn require_running(tx: &mut Transaction<'_>, run: i64) -> Result<()> {
    let status: String = tx
        .query_opt("SELECT status FROM runs WHERE id = $1 FOR UPDATE", &[&run])?
        .ok_or(Error::UnknownRun(run))?
        .get(0);
    if status == "running" {
        Ok(())
    } else {
        Err(Error::RunClosed { id: run, status })
    }
}

fn insert_run(
    tx: &mut Transaction<'_>,
    meta: &RunMeta,
    status: &str,
    owner: &Owner,
) -> Result<i64> {
    let [l1, l5, l15] = meta.load.map_or([None; 3], |l| l.map(Some));
    let (host, machine_id) = machine_of(meta);
    let row = tx.query_one(
        "INSERT INTO runs (status, started, command, commit_id, rustc, profile, takt, machine,
                           steal_pct, load1, load5, load15, owner_boot, owner_pid, owner_start,
                           owner_host, owner_machine, host, machine_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
                 $18, $19)
         RETURNING id",
        &[
            &status,
            &meta.started,
            &meta.command,
            &meta.commit,
            &meta.rustc,
            &meta.profile,
            &meta.takt,
            &serde_json::to_string(&meta.machine)?,
            &meta.steal_pct,
            &l1,
            &l5,
            &l15,
            &owner.boot,
            &owner.pid,
            &owner.start,
            &owner.host,
            &owner.machine,
            &host,
            &machine_id,
        ],
    )?;
    Ok(row.get(0))
}

fn insert_document(tx: &mut Transaction<'_>, run: i64, seq: i64, d: &Document) -> Result<()> {
    let doc_id: i64 = tx
        .query_one(
            "INSERT INTO documents (run_id, seq, suite, started, takt, body)
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
            &[
                &run,
                &seq,
                &d.suite,
                &d.started,
                &d.takt,
                &serde_json::to_string(&d.body)?,
            ],
        )?
        .get(0);
    let row_stmt = tx.prepare(
        "INSERT INTO results (document_id, seq, suite, name, impl, params, unit, better,
                              median, min, max, mean, stddev, ci_lo, ci_hi, runs, cpu_s,
                              published, note, detail, bound_kind, bound_value, bound_limit)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
                 $18, $19, $20, $21, $22, $23)
         RETURNING id",
    )?;
    // All of a row's samples in one statement.
    let sample_stmt = tx.prepare(
        "INSERT INTO samples (result_id, seq, value)
         SELECT $1::bigint, s.ord - 1, s.v FROM unnest($2::float8[]) WITH ORDINALITY AS s(v, ord)",
    )?;
    for (i, row) in d.rows.iter().enumerate() {
        let row_id: i64 = tx
            .query_one(
                &row_stmt,
                &[
                    &doc_id,
                    &(i as i64),
                    &d.suite,
                    &row.name,
                    &row.implementation,
                    &row.params_key(),
                    &row.unit,
                    &row.better.as_str(),
                    &row.median,
                    &row.min,
                    &row.max,
                    &row.mean,
                    &row.stddev,
                    &row.ci95.map(|c| c[0]),
                    &row.ci95.map(|c| c[1]),
                    &i64::try_from(row.runs).unwrap_or(i64::MAX),
                    &row.cpu_s,
                    &row.published,
                    &row.note,
                    &canonical_json(&Value::Object(row.detail.clone())),
                    &row.bound.as_ref().map(|b| b.kind.as_str()),
                    &row.bound.as_ref().map(|b| b.value),
                    &row.bound.as_ref().map(|b| b.limit.as_str()),
                ],
            )?
            .get(0);
        if !row.samples.is_empty() {
            tx.execute(&sample_stmt, &[&row_id, &row.samples])?;
        }
    }
    Ok(())
}
