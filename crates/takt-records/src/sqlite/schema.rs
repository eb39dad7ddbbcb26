//! The SQLite schema and its step-by-step migration.
//!
//! The schema's version is `PRAGMA user_version`; `PRAGMA application_id`
//! marks the file as takt's records ([`APPLICATION_ID`]). Opening a
//! database runs, in order, every [`Step`] whose `to` is above the stored
//! version. Each step runs in its own `BEGIN IMMEDIATE` transaction that
//! re-reads the version first (another process may have migrated in the
//! meantime) and sets the new version before it commits, so a database is
//! always at exactly one version and a failed step leaves it at the one
//! before. A version above the newest step is refused, never downgraded.
//!
//! Version 3 (the current schema; PostgreSQL's has the same tables and
//! columns):
//!
//! | table | one row per | columns |
//! |---|---|---|
//! | `runs` | run | `id`, `status` (`running`/`complete`/`interrupted`), `missing` (JSON array), `started`, `ended`, `command`, `commit_id`, `rustc`, `profile`, `takt`, `machine` (JSON), `steal_pct`, `load1/5/15`, `owner_boot`/`owner_pid`/`owner_start`/`owner_host`/`owner_machine` (the writing process and its machine), `host`, `machine_id` (the machine measured on, from `machine`) |
//! | `documents` | result document | `id`, `run_id`, `seq`, `suite`, `started`, `takt`, `body` (the document verbatim) |
//! | `results` | row of a document | `id`, `document_id`, `seq`, `suite`, `name`, `impl`, `params` (canonical JSON), `unit`, `better`, `median`, `min`, `max`, `mean` (all four `NULL` for a bound or a row without a value), `stddev`, `ci_lo`, `ci_hi`, `runs`, `cpu_s`, `published`, `note`, `detail` (JSON), `bound_kind` (`upper`/`lower`), `bound_value`, `bound_limit` (all three set for a bound, else `NULL`) |
//! | `samples` | raw sample | `result_id`, `seq`, `value` |
//!
//! Version 1 had `median`, `min`, `max` and `mean` `NOT NULL` and no
//! bound columns; step 2 rebuilds `results` (and `samples`, whose foreign
//! key names it) with the same ids and rows, so a version-1 database reads
//! as before. Step 3 adds the machine identity (the measured machine's,
//! filled from each run's `machine` block, and the writer's, empty for
//! runs written before it).

use rusqlite::{Connection, Transaction, TransactionBehavior};

use crate::error::{Error, Result};
use crate::location::Location;

/// `PRAGMA application_id` of a takt records database: `"takt"` in ASCII.
pub const APPLICATION_ID: i32 = 0x7461_6b74;

/// One migration: from version `to - 1` to `to`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Step {
    /// The version this step produces.
    pub(crate) to: i64,
    /// The change, run inside the step's transaction.
    pub(crate) apply: fn(&Transaction<'_>) -> rusqlite::Result<()>,
}

/// Every step, in order; the last one's `to` is the current version.
pub(crate) const STEPS: &[Step] = &[
    Step { to: 1, apply: v1 },
    Step { to: 2, apply: v2 },
    Step { to: 3, apply: v3 },
];

pub(crate) use crate::SCHEMA_VERSION;

const _: () = assert!(STEPS[STEPS.len() - 1].to == SCHEMA_VERSION);

fn v1(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(
        "CREATE TABLE runs (
            id          INTEGER PRIMARY KEY,
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
            steal_pct   REAL,
            load1       REAL,
            load5       REAL,
            load15      REAL,
            owner_boot  TEXT NOT NULL,
            owner_pid   INTEGER NOT NULL,
            owner_start INTEGER NOT NULL
        );
        CREATE TABLE documents (
            id      INTEGER PRIMARY KEY,
            run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            seq     INTEGER NOT NULL,
            suite   TEXT NOT NULL,
            started TEXT NOT NULL,
            takt    TEXT NOT NULL,
            body    TEXT NOT NULL,
            UNIQUE (run_id, seq)
        );
        CREATE TABLE results (
            id          INTEGER PRIMARY KEY,
            document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            seq         INTEGER NOT NULL,
            suite       TEXT NOT NULL,
            name        TEXT NOT NULL,
            impl        TEXT NOT NULL,
            params      TEXT NOT NULL,
            unit        TEXT NOT NULL,
            better      TEXT NOT NULL CHECK (better IN ('lower', 'higher')),
            median      REAL NOT NULL,
            min         REAL NOT NULL,
            max         REAL NOT NULL,
            mean        REAL NOT NULL,
            stddev      REAL,
            ci_lo       REAL,
            ci_hi       REAL,
            runs        INTEGER NOT NULL,
            cpu_s       REAL NOT NULL,
            published   REAL,
            note        TEXT,
            detail      TEXT NOT NULL DEFAULT '{}',
            UNIQUE (document_id, seq)
        );
        CREATE INDEX results_key ON results (suite, name, impl, params);
        CREATE TABLE samples (
            result_id INTEGER NOT NULL REFERENCES results(id) ON DELETE CASCADE,
            seq       INTEGER NOT NULL,
            value     REAL NOT NULL,
            PRIMARY KEY (result_id, seq)
        ) WITHOUT ROWID;",
    )
}

/// Version 2: a row's statistics may be `NULL` (a bound, or a figure that
/// was not comparable), and a bound has its own columns. SQLite cannot
/// drop a `NOT NULL`, so `results` is rebuilt: the new tables are filled
/// with the same ids, the old ones dropped (`samples` first, so dropping
/// `results` cascades to nothing) and the new ones renamed, which points
/// `samples`' foreign key at the new `results`.
fn v2(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(
        "CREATE TABLE results_v2 (
            id          INTEGER PRIMARY KEY,
            document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            seq         INTEGER NOT NULL,
            suite       TEXT NOT NULL,
            name        TEXT NOT NULL,
            impl        TEXT NOT NULL,
            params      TEXT NOT NULL,
            unit        TEXT NOT NULL,
            better      TEXT NOT NULL CHECK (better IN ('lower', 'higher')),
            median      REAL,
            min         REAL,
            max         REAL,
            mean        REAL,
            stddev      REAL,
            ci_lo       REAL,
            ci_hi       REAL,
            runs        INTEGER NOT NULL,
            cpu_s       REAL NOT NULL,
            published   REAL,
            note        TEXT,
            detail      TEXT NOT NULL DEFAULT '{}',
            bound_kind  TEXT CHECK (bound_kind IN ('upper', 'lower')),
            bound_value REAL,
            bound_limit TEXT,
            UNIQUE (document_id, seq),
            CHECK ((bound_kind IS NULL) = (bound_value IS NULL)
                   AND (bound_kind IS NULL) = (bound_limit IS NULL)),
            CHECK (bound_kind IS NULL OR median IS NULL)
        );
        INSERT INTO results_v2 (id, document_id, seq, suite, name, impl, params, unit, better,
                                median, min, max, mean, stddev, ci_lo, ci_hi, runs, cpu_s,
                                published, note, detail)
            SELECT id, document_id, seq, suite, name, impl, params, unit, better,
                   median, min, max, mean, stddev, ci_lo, ci_hi, runs, cpu_s,
                   published, note, detail
            FROM results;
        CREATE TABLE samples_v2 (
            result_id INTEGER NOT NULL REFERENCES results_v2(id) ON DELETE CASCADE,
            seq       INTEGER NOT NULL,
            value     REAL NOT NULL,
            PRIMARY KEY (result_id, seq)
        ) WITHOUT ROWID;
        INSERT INTO samples_v2 (result_id, seq, value) SELECT result_id, seq, value FROM samples;
        DROP TABLE samples;
        DROP TABLE results;
        ALTER TABLE results_v2 RENAME TO results;
        ALTER TABLE samples_v2 RENAME TO samples;
        CREATE INDEX results_key ON results (suite, name, impl, params);",
    )
}

/// Version 3: the machine a run was measured on (`host`, `machine_id`,
/// from its machine block where it has them) and the machine of the
/// process writing it (`owner_host`, `owner_machine`), so that a store
/// several machines write to can be filtered by machine and a run another
/// machine is writing is not taken for an abandoned one.
fn v3(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(
        "ALTER TABLE runs ADD COLUMN host TEXT NOT NULL DEFAULT '';
         ALTER TABLE runs ADD COLUMN machine_id TEXT NOT NULL DEFAULT '';
         ALTER TABLE runs ADD COLUMN owner_host TEXT NOT NULL DEFAULT '';
         ALTER TABLE runs ADD COLUMN owner_machine TEXT NOT NULL DEFAULT '';
         UPDATE runs SET
             host = coalesce(json_extract(machine, '$.host'), ''),
             machine_id = coalesce(json_extract(machine, '$.machine_id'), '')
         WHERE json_valid(machine);
         CREATE INDEX runs_host ON runs (host);
         CREATE INDEX runs_machine_id ON runs (machine_id);",
    )
}

/// The database's schema version.
pub(crate) fn version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
}

/// Brings the database to the last step's version, one step per
/// transaction. Returns the version found before migrating.
pub(crate) fn migrate(
    conn: &mut Connection,
    steps: &[Step],
    path: &std::path::Path,
) -> Result<i64> {
    let found = version(conn)?;
    let newest = steps.last().map_or(0, |s| s.to);
    if found > newest {
        return Err(Error::SchemaTooNew {
            store: Location::Sqlite(path.to_path_buf()),
            found,
            supported: newest,
        });
    }
    for step in steps.iter().filter(|s| s.to > found) {
        let run = |conn: &mut Connection| -> rusqlite::Result<()> {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            // Another process may have taken this step since we looked.
            if version(&tx)? >= step.to {
                return Ok(());
            }
            (step.apply)(&tx)?;
            tx.pragma_update(None, "application_id", APPLICATION_ID)?;
            tx.pragma_update(None, "user_version", step.to)?;
            tx.commit()
        };
        run(conn).map_err(|source| Error::Migration {
            to: step.to,
            source: Box::new(source),
        })?;
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use crate::SCHEMA_VERSION;

    fn temp_db(tag: &str) -> (PathGuard, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!(
            "takt-records-schema-{tag}-{}-{:?}",
            std::process::id(),
            std::time::SystemTime::now()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("r.db");
        (PathGuard(dir), db)
    }

    struct PathGuard(std::path::PathBuf);
    impl Drop for PathGuard {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A version-1 database made by hand, outside the machinery, with
    /// one complete run in it.
    fn hand_made_v1(path: &std::path::Path) {
        let mut conn = Connection::open(path).unwrap();
        let tx = conn.transaction().unwrap();
        v1(&tx).unwrap();
        tx.execute_batch(
            "INSERT INTO runs (id, status, started, ended, command, commit_id, rustc, profile,
                               takt, machine, owner_boot, owner_pid, owner_start)
             VALUES (1, 'complete', '2026-11-01T00:00:00Z', '2026-11-01T00:01:00Z',
                     'takt bench sme', 'abc1234', 'rustc 1.88.0', 'release', '0.1.0',
                     '{\"cpus\":2}', '', 0, 0);
             PRAGMA user_version = 1;",
        )
        .unwrap();
        tx.pragma_update(None, "application_id", APPLICATION_ID)
            .unwrap();
        tx.commit().unwrap();
    }

    fn next_step_adds_a_label(tx: &Transaction<'_>) -> rusqlite::Result<()> {
        tx.execute_batch(
            "ALTER TABLE runs ADD COLUMN label TEXT NOT NULL DEFAULT '';
             UPDATE runs SET label = 'from v1';",
        )
    }

    fn v2_fails_halfway(tx: &Transaction<'_>) -> rusqlite::Result<()> {
        tx.execute_batch("CREATE TABLE half (x); INSERT INTO no_such_table VALUES (1);")
    }

    #[test]
    fn an_older_schema_is_migrated_step_by_step_and_keeps_its_runs() {
        let (_dir, db) = temp_db("older");
        hand_made_v1(&db);
        let next = SCHEMA_VERSION + 1;
        let mut steps = STEPS.to_vec();
        steps.push(Step {
            to: next,
            apply: next_step_adds_a_label,
        });
        let store = Store::open_sqlite_with(&db, false, &steps).unwrap();
        let runs = store.list().unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].meta.command, "takt bench sme");
        drop(store);
        let conn = Connection::open(&db).unwrap();
        assert_eq!(version(&conn).unwrap(), next);
        let label: String = conn
            .query_row("SELECT label FROM runs WHERE id = 1", [], |r| r.get(0))
            .unwrap();
        assert_eq!(label, "from v1");
        // Opening again with the same steps changes nothing.
        drop(conn);
        Store::open_sqlite_with(&db, false, &steps).unwrap();
    }

    /// A version-1 database with a document, a row and its samples opens
    /// under version 2 with all of them as they were, and takes a bound.
    #[test]
    fn version_1_rows_and_samples_survive_the_rebuild() {
        let (_dir, db) = temp_db("v1rows");
        hand_made_v1(&db);
        let conn = Connection::open(&db).unwrap();
        conn.execute_batch(
            "INSERT INTO documents (id, run_id, seq, suite, started, takt, body)
             VALUES (1, 1, 0, 'sme', '2026-11-01T00:00:00Z', '0.1.0', '{}');
             INSERT INTO results (id, document_id, seq, suite, name, impl, params, unit, better,
                                  median, min, max, mean, stddev, ci_lo, ci_hi, runs, cpu_s)
             VALUES (7, 1, 0, 'sme', 'sync_ring', 'takt', '{}', 'ns/step', 'lower',
                     9.5, 9.0, 10.0, 9.5, 0.5, 9.0, 10.0, 2, 0.1);
             INSERT INTO samples (result_id, seq, value) VALUES (7, 0, 9.0), (7, 1, 10.0);",
        )
        .unwrap();
        drop(conn);
        let store = Store::open_existing(&db).unwrap();
        let run = store.run(1).unwrap();
        let row = &run.documents[0].rows[0];
        assert_eq!(
            (row.median, row.min, row.max),
            (Some(9.5), Some(9.0), Some(10.0))
        );
        assert_eq!(row.samples, vec![9.0, 10.0]);
        assert_eq!(row.bound, None);
        drop(store);
        let conn = Connection::open(&db).unwrap();
        assert_eq!(version(&conn).unwrap(), SCHEMA_VERSION);
        conn.pragma_update(None, "foreign_keys", true).unwrap();
        // the samples' foreign key follows the rebuilt table
        let fk: String = conn
            .query_row(
                "SELECT sql FROM sqlite_master WHERE name = 'samples'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert!(
            fk.contains("REFERENCES \"results\"") || fk.contains("REFERENCES results"),
            "{fk}"
        );
        conn.execute(
            "INSERT INTO results (document_id, seq, suite, name, impl, params, unit, better,
                                  runs, cpu_s, bound_kind, bound_value, bound_limit)
             VALUES (1, 1, 'sip_capacity', 'capacity', 'kamailio', '{}', 'cps', 'higher',
                     0, 1.0, 'lower', 35000.0, 'generator')",
            [],
        )
        .unwrap();
        // a bound beside a median is refused by the schema itself
        assert!(conn
            .execute(
                "INSERT INTO results (document_id, seq, suite, name, impl, params, unit, better,
                                      median, min, max, mean, runs, cpu_s,
                                      bound_kind, bound_value, bound_limit)
                 VALUES (1, 2, 's', 'c', 'k', '{}', 'cps', 'higher', 1, 1, 1, 1, 1, 1.0,
                         'lower', 2.0, 'generator')",
                [],
            )
            .is_err());
        // deleting the run still cascades to its samples
        conn.execute("DELETE FROM runs WHERE id = 1", []).unwrap();
        let left: i64 = conn
            .query_row("SELECT count(*) FROM samples", [], |r| r.get(0))
            .unwrap();
        assert_eq!(left, 0);
    }

    /// Step 3 takes each run's machine from its machine block; a run
    /// whose block has none (written before it was recorded) is of no
    /// known machine, and reads as before.
    #[test]
    fn version_3_fills_the_machine_identity_from_the_machine_block() {
        let (_dir, db) = temp_db("v3ident");
        hand_made_v1(&db);
        Connection::open(&db)
            .unwrap()
            .execute_batch(
                "INSERT INTO runs (id, status, started, command, commit_id, rustc, profile, takt,
                                   machine, owner_boot, owner_pid, owner_start)
                 VALUES (2, 'running', '2026-11-02T00:00:00Z', 'takt report', 'abc1234',
                         'rustc 1.88.0', 'release', '0.1.0',
                         '{\"cpus\":2,\"host\":\"lab-2\",\"machine_id\":\"00112233aabbccdd\"}',
                         'no-such-boot', 1, 1);",
            )
            .unwrap();
        let store = Store::open_existing(&db).unwrap();
        let on_lab2 = store.list_on(Some("lab-2")).unwrap();
        assert_eq!(on_lab2.iter().map(|r| r.id).collect::<Vec<_>>(), [2]);
        assert_eq!(store.list_on(Some("00112233aabbccdd")).unwrap().len(), 1);
        assert_eq!(store.list().unwrap().len(), 2);
        // its writer was of this machine's kind (no machine recorded) and
        // is gone: abandoned, as before the migration
        assert_eq!(on_lab2[0].status, crate::RunStatus::Abandoned);
        drop(store);
        let conn = Connection::open(&db).unwrap();
        // written by a process of another machine: this file cannot look at
        // it, so it reads as running there
        conn.execute(
            "UPDATE runs SET owner_host = 'lab-2', owner_machine = '00112233aabbccdd'
             WHERE id = 2",
            [],
        )
        .unwrap();
        let store = Store::open_existing(&db).unwrap();
        assert_eq!(
            store.run(2).unwrap().summary.status.to_string(),
            "running on lab-2"
        );
        drop(store);
        let (host, id): (String, String) = conn
            .query_row("SELECT host, machine_id FROM runs WHERE id = 1", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!((host.as_str(), id.as_str()), ("", ""));
    }

    #[test]
    fn a_fresh_database_runs_every_step() {
        let (_dir, db) = temp_db("fresh");
        Store::open(&db).unwrap();
        let conn = Connection::open(&db).unwrap();
        assert_eq!(version(&conn).unwrap(), SCHEMA_VERSION);
        let app: i32 = conn
            .query_row("PRAGMA application_id", [], |r| r.get(0))
            .unwrap();
        assert_eq!(app, APPLICATION_ID);
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
    }

    #[test]
    fn a_failed_step_leaves_the_previous_version_whole() {
        let (_dir, db) = temp_db("failed");
        hand_made_v1(&db);
        let steps = [
            STEPS[0],
            Step {
                to: 2,
                apply: v2_fails_halfway,
            },
        ];
        let e = Store::open_sqlite_with(&db, false, &steps).unwrap_err();
        assert!(matches!(e, Error::Migration { to: 2, .. }), "{e:?}");
        assert!(e.to_string().contains("left at 1"), "{e}");
        let conn = Connection::open(&db).unwrap();
        assert_eq!(version(&conn).unwrap(), 1);
        let half: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE name = 'half'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(half, 0, "the failed step's table was rolled back");
        drop(conn);
        // The current build still opens it.
        assert_eq!(Store::open_existing(&db).unwrap().list().unwrap().len(), 1);
    }

    #[test]
    fn a_newer_schema_is_refused_not_downgraded() {
        let (_dir, db) = temp_db("newer");
        hand_made_v1(&db);
        Connection::open(&db)
            .unwrap()
            .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .unwrap();
        let e = Store::open_existing(&db).unwrap_err();
        assert!(matches!(e, Error::SchemaTooNew { .. }), "{e:?}");
        assert!(e.to_string().contains("use a newer takt"), "{e}");
    }
}
