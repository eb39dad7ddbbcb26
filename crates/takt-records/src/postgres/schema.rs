//! The PostgreSQL schema and its step-by-step migration.
//!
//! The same tables and columns as SQLite's (see `sqlite::schema`), in
//! PostgreSQL's types (`BIGINT` ids and counts, `DOUBLE PRECISION`
//! figures, `TEXT` for the rest, JSON kept as text as written), and the
//! same steps. The version is the one row of `takt_schema`.
//!
//! Opening runs, in order, every [`Step`] whose `to` is above the stored
//! version, each in its own transaction under a session lock
//! ([`MIGRATION_LOCK`]: concurrent openers wait for each other), taken
//! before the transaction begins so that the transaction sees the
//! catalog as the previous holder left it. The transaction creates
//! `takt_schema` if it is absent, re-reads the version (another machine
//! may have migrated meanwhile) and sets the new one before it commits;
//! the lock is released after. A database is thus always at exactly one version; a failed
//! step leaves the one before; a version above the newest step is
//! refused. Tables of the records' names without `takt_schema` are
//! another program's and are left alone.

use postgres::{Client, Transaction};

use crate::error::{Error, Result};
use crate::location::Location;

/// One migration: from version `to - 1` to `to`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Step {
    /// The version this step produces.
    pub(crate) to: i64,
    /// The change, run inside the step's transaction.
    pub(crate) apply: fn(&mut Transaction<'_>) -> std::result::Result<(), postgres::Error>,
}

/// Every step, in order; the last one's `to` is the current version.
pub(crate) const STEPS: &[Step] = &[
    Step { to: 1, apply: v1 },
    Step { to: 2, apply: v2 },
    Step { to: 3, apply: v3 },
];

const _: () = assert!(STEPS[STEPS.len() - 1].to == crate::SCHEMA_VERSION);

/// Key of the transaction lock migrations take (`"takt"`, then 1).
pub(crate) const MIGRATION_LOCK: i64 = 0x7461_6b74_0000_0001;

/// The tables whose presence without `takt_schema` marks a database as
/// another program's.
const TABLES: [&str; 4] = ["runs", "documents", "results", "samples"];

fn v1(tx: &mut Transaction<'_>) -> std::result::Result<(), postgres::Error> {
    tx.batch_execute(
        "CREATE TABLE runs (
            id          BIGSERIAL PRIMARY KEY,
            status      TEXT NOT NULL CHECK (status IN ('running', 'complete', 'interrupted')),
            missing     TEXT NOT NULL DEFAULT '[]',
            started     TEXT NOT NULL,
            ended       TEXT,
            command     TEXT NOT NULL,
            commit_id   TEXT NOT NULL,
            rustc       TEXT NOT NULL,
            profile     TEXT NOT NULL,
            takt        TEXT NOT NULL,
            machine     TEXT NOT NULL,
            steal_pct   DOUBLE PRECISION,
            load1       DOUBLE PRECISION,
            load5       DOUBLE PRECISION,
            load15      DOUBLE PRECISION,
            owner_boot  TEXT NOT NULL,
            owner_pid   BIGINT NOT NULL,
            owner_start BIGINT NOT NULL
        );
        CREATE TABLE documents (
            id      BIGSERIAL PRIMARY KEY,
            run_id  BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            seq     BIGINT NOT NULL,
            suite   TEXT NOT NULL,
            started TEXT NOT NULL,
            takt    TEXT NOT NULL,
            body    TEXT NOT NULL,
            UNIQUE (run_id, seq)
        );
        CREATE TABLE results (
            id          BIGSERIAL PRIMARY KEY,
            document_id BIGINT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            seq         BIGINT NOT NULL,
            suite       TEXT NOT NULL,
            name        TEXT NOT NULL,
            impl        TEXT NOT NULL,
            params      TEXT NOT NULL,
            unit        TEXT NOT NULL,
            better      TEXT NOT NULL CHECK (better IN ('lower', 'higher')),
            median      DOUBLE PRECISION NOT NULL,
            min         DOUBLE PRECISION NOT NULL,
            max         DOUBLE PRECISION NOT NULL,
            mean        DOUBLE PRECISION NOT NULL,
            stddev      DOUBLE PRECISION,
            ci_lo       DOUBLE PRECISION,
            ci_hi       DOUBLE PRECISION,
            runs        BIGINT NOT NULL,
            cpu_s       DOUBLE PRECISION NOT NULL,
            published   DOUBLE PRECISION,
            note        TEXT,
            detail      TEXT NOT NULL DEFAULT '{}',
            UNIQUE (document_id, seq)
        );
        CREATE INDEX results_key ON results (suite, name, impl, params);
        CREATE INDEX documents_run ON documents (run_id);
        CREATE TABLE samples (
            result_id BIGINT NOT NULL REFERENCES results(id) ON DELETE CASCADE,
            seq       BIGINT NOT NULL,
            value     DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (result_id, seq)
        );",
    )
}

/// Version 2: a row's statistics may be `NULL` (a bound, or a figure that
/// was not comparable), and a bound has its own columns. PostgreSQL
/// drops a `NOT NULL` in place.
fn v2(tx: &mut Transaction<'_>) -> std::result::Result<(), postgres::Error> {
    tx.batch_execute(
        "ALTER TABLE results
            ALTER COLUMN median DROP NOT NULL,
            ALTER COLUMN min DROP NOT NULL,
            ALTER COLUMN max DROP NOT NULL,
            ALTER COLUMN mean DROP NOT NULL,
            ADD COLUMN bound_kind TEXT CHECK (bound_kind IN ('upper', 'lower')),
            ADD COLUMN bound_value DOUBLE PRECISION,
            ADD COLUMN bound_limit TEXT,
            ADD CHECK ((bound_kind IS NULL) = (bound_value IS NULL)
                       AND (bound_kind IS NULL) = (bound_limit IS NULL)),
            ADD CHECK (bound_kind IS NULL OR median IS NULL);",
    )
}

/// Version 3: the machine a run was measured on and the machine of the
/// process writing it (see `sqlite::schema`'s step 3).
fn v3(tx: &mut Transaction<'_>) -> std::result::Result<(), postgres::Error> {
    tx.batch_execute(
        "ALTER TABLE runs
            ADD COLUMN host TEXT NOT NULL DEFAULT '',
            ADD COLUMN machine_id TEXT NOT NULL DEFAULT '',
            ADD COLUMN owner_host TEXT NOT NULL DEFAULT '',
            ADD COLUMN owner_machine TEXT NOT NULL DEFAULT '';
         UPDATE runs SET
             host = coalesce(machine::jsonb ->> 'host', ''),
             machine_id = coalesce(machine::jsonb ->> 'machine_id', '');
         CREATE INDEX runs_host ON runs (host);
         CREATE INDEX runs_machine_id ON runs (machine_id);",
    )
}

/// The stored version, `None` without `takt_schema`.
pub(crate) fn version(client: &mut Client) -> std::result::Result<Option<i64>, postgres::Error> {
    let exists: bool = client
        .query_one("SELECT to_regclass('takt_schema') IS NOT NULL", &[])?
        .get(0);
    if !exists {
        return Ok(None);
    }
    Ok(client
        .query_opt("SELECT version FROM takt_schema", &[])?
        .map(|r| r.get(0)))
}

/// Brings the database to the last step's version, one step per
/// transaction. Without records there, `create` says whether to make
/// them.
pub(crate) fn migrate(
    client: &mut Client,
    steps: &[Step],
    store: &Location,
    create: bool,
) -> Result<()> {
    let newest = steps.last().map_or(0, |s| s.to);
    match version(client)? {
        None if !create => {
            return Err(Error::NoDatabase {
                store: store.clone(),
            })
        }
        Some(found) if found > newest => {
            return Err(Error::SchemaTooNew {
                store: store.clone(),
                found,
                supported: newest,
            })
        }
        Some(found) if found == newest => return Ok(()),
        _ => {}
    }
    for step in steps {
        let migration = |source: postgres::Error| Error::Migration {
            to: step.to,
            source: Box::new(source),
        };
        client
            .execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])
            .map_err(migration)?;
        let result = take_step(client, step, store, newest);
        // The session's end releases it too (a lost connection).
        let _ = client.execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK]);
        result?;
    }
    Ok(())
}

/// One step in one transaction, under the migration lock.
fn take_step(client: &mut Client, step: &Step, store: &Location, newest: i64) -> Result<()> {
    let migration = |source: postgres::Error| Error::Migration {
        to: step.to,
        source: Box::new(source),
    };
    let mut tx = client.transaction().map_err(migration)?;
    let exists: bool = tx
        .query_one(
            "SELECT count(*) > 0 FROM pg_catalog.pg_tables
             WHERE schemaname = current_schema() AND tablename = 'takt_schema'",
            &[],
        )
        .map_err(migration)?
        .get(0);
    let found: Option<i64> = if exists {
        tx.query_opt("SELECT version FROM takt_schema", &[])
            .map_err(migration)?
            .map(|r| r.get(0))
    } else {
        None
    };
    if found.is_none() {
        if let Some(table) = foreign_table(&mut tx).map_err(migration)? {
            return Err(Error::ForeignSchema {
                store: store.clone(),
                table,
            });
        }
        tx.batch_execute(
            "CREATE TABLE IF NOT EXISTS takt_schema (
                version  BIGINT NOT NULL,
                only_row BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (only_row)
             );
             INSERT INTO takt_schema (version) VALUES (0);",
        )
        .map_err(migration)?;
    }
    let found = found.unwrap_or(0);
    if found > newest {
        return Err(Error::SchemaTooNew {
            store: store.clone(),
            found,
            supported: newest,
        });
    }
    if found >= step.to {
        return Ok(());
    }
    (step.apply)(&mut tx).map_err(migration)?;
    tx.execute("UPDATE takt_schema SET version = $1", &[&step.to])
        .map_err(migration)?;
    tx.commit().map_err(migration)
}

/// A table of the records' names in the current schema, if any.
fn foreign_table(tx: &mut Transaction<'_>) -> std::result::Result<Option<String>, postgres::Error> {
    let names: Vec<String> = TABLES.iter().map(|t| t.to_string()).collect();
    Ok(tx
        .query_opt(
            "SELECT table_name::text FROM information_schema.tables
             WHERE table_schema = current_schema() AND table_name = ANY($1) LIMIT 1",
            &[&names],
        )?
        .map(|r| r.get(0)))
}
