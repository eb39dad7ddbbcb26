//! The store end to end: round trips, staged runs, crashes, bad input.

mod common;

use common::{big_document, document, row, TempDir};
use serde_json::json;
use takt_records::{record, Error, RunMeta, RunStatus, Store};

fn two_documents() -> Vec<serde_json::Value> {
    let mut agents = document(
        "agents",
        vec![
            row(
                "ping_pong",
                "takt",
                json!({"dispatcher": "one_thread", "messages": 1000}),
                "lower",
                &[12.1, 12.3, 12.4, 12.7, 13.0],
            ),
            row(
                "ping_pong",
                "actix",
                json!({"messages": 1000}),
                "lower",
                &[30.0, 31.0, 29.5, 30.2, 30.9],
            ),
        ],
    );
    agents["results"][0]["detail"] = json!({"crossings": [1, 2]});
    agents["results"][0]["note"] = json!("quick");
    agents["results"][1]["published"] = json!(28.0);
    agents["extra_block"] = json!({"kept": true});
    let sme = document(
        "sme",
        vec![row(
            "sync_ring",
            "takt",
            json!({"threads": 2, "executor": "pool"}),
            "higher",
            &[1.9, 2.0, 2.1, 2.0, 1.95],
        )],
    );
    vec![agents, sme]
}

#[test]
fn a_run_round_trips_with_documents_rows_samples_and_metadata() {
    let dir = TempDir::new("roundtrip");
    let docs = two_documents();
    let meta = RunMeta::from_documents(&docs).unwrap();
    let id = record(dir.db(), &meta, &docs).unwrap();

    let store = Store::open_existing(dir.db()).unwrap();
    let run = store.run(id).unwrap();
    assert_eq!(run.summary.status, RunStatus::Complete);
    assert!(run.summary.ended.is_some());
    assert_eq!(run.summary.meta, meta);
    assert_eq!(run.summary.meta.commit, "a3d4636");
    assert_eq!(run.summary.meta.steal_pct, Some(0.7));
    assert_eq!(run.summary.meta.load, Some([2.5, 2.0, 1.5]));
    assert_eq!(run.summary.meta.machine["cpu"], "AMD EPYC test");
    assert!(
        !run.summary.meta.machine.contains_key("commit"),
        "run fields are not machine fields"
    );
    assert_eq!(run.summary.suites, ["agents", "sme"]);
    assert_eq!(run.summary.rows, 3);
    assert_eq!(run.documents.len(), 2);
    for (stored, given) in run.documents.iter().zip(&docs) {
        assert_eq!(&stored.body, given, "the document is kept verbatim");
        let fresh = takt_records::validate_document(0, given).unwrap();
        assert_eq!(
            stored.rows, fresh.rows,
            "rows and samples come back as written"
        );
    }
    let r = &run.documents[0].rows[0];
    assert_eq!(r.samples, [12.1, 12.3, 12.4, 12.7, 13.0]);
    assert_eq!(r.detail["crossings"], json!([1, 2]));
    assert_eq!(r.note.as_deref(), Some("quick"));
    assert_eq!(run.documents[0].rows[1].published, Some(28.0));

    let list = store.list().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0], run.summary);
}

#[test]
fn a_staged_run_keeps_finished_stages_and_says_what_is_missing() {
    let dir = TempDir::new("staged");
    let docs = two_documents();
    let mut store = Store::open(dir.db()).unwrap();
    let id = store
        .begin(&RunMeta::from_documents(&docs).unwrap())
        .unwrap();
    assert_eq!(store.run(id).unwrap().summary.status, RunStatus::Running);
    store.add_document(id, &docs[0]).unwrap();
    store
        .finish_interrupted(id, &["sme".to_string(), "sip".to_string()])
        .unwrap();
    let run = store.run(id).unwrap();
    assert_eq!(
        run.summary.status,
        RunStatus::Interrupted {
            missing: vec!["sme".into(), "sip".into()]
        }
    );
    assert_eq!(
        run.summary.status.to_string(),
        "interrupted (missing sme, sip)"
    );
    assert_eq!(run.documents.len(), 1);
    let e = store.add_document(id, &docs[1]).unwrap_err();
    assert!(matches!(e, Error::RunClosed { .. }), "{e}");
    assert!(matches!(
        store.finish(id).unwrap_err(),
        Error::RunClosed { .. }
    ));
}

#[test]
fn bad_input_gets_a_clear_error_and_writes_nothing() {
    let dir = TempDir::new("bad");
    let docs = two_documents();
    let meta = RunMeta::from_documents(&docs).unwrap();

    // Not a document: nothing of the batch is written.
    let not_doc = json!({"hello": "world"});
    let e = record(dir.db(), &meta, &[docs[0].clone(), not_doc]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "document 1 is not a result document: takt: missing"
    );
    let store = Store::open_existing(dir.db()).unwrap();
    assert!(store.list().unwrap().is_empty());

    // An unknown run.
    let e = store.run(42).unwrap_err();
    assert!(matches!(e, Error::UnknownRun(42)));
    assert!(e.to_string().contains("no run 42"), "{e}");

    // Bad metadata.
    let mut bad_meta = meta.clone();
    bad_meta.started = "yesterday".into();
    let e = record(dir.db(), &bad_meta, &docs).unwrap_err();
    assert!(e.to_string().contains("not an RFC 3339 time"), "{e}");
    assert!(RunMeta::from_documents(&[]).is_err());

    // No file, for reading commands.
    let missing = dir.path().join("absent.db");
    let e = Store::open_existing(&missing).unwrap_err();
    assert!(matches!(e, Error::NoDatabase { .. }), "{e}");
    assert!(!missing.exists(), "a reading open creates nothing");

    // A directory that does not exist.
    let e = Store::open(dir.path().join("no/such/dir/r.db")).unwrap_err();
    assert!(matches!(e, Error::Open { .. }), "{e:?}");
    assert!(e.to_string().contains("no/such/dir/r.db"), "{e}");

    // A file that is not SQLite.
    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, b"this is not a database\n".repeat(300)).unwrap();
    for e in [
        Store::open(&junk).unwrap_err(),
        Store::open_existing(&junk).unwrap_err(),
    ] {
        assert!(matches!(e, Error::NotADatabase { .. }), "{e:?}");
        assert!(
            e.to_string().contains("is not a takt records database"),
            "{e}"
        );
    }

    // Some other program's SQLite database.
    let foreign = dir.path().join("foreign.db");
    rusqlite::Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
        .unwrap();
    let e = Store::open(&foreign).unwrap_err();
    assert!(matches!(e, Error::ForeignDatabase { .. }), "{e:?}");
}

/// The child half of the crash test: writes runs until it is killed.
/// Does nothing unless the parent set the variable.
#[test]
fn crash_child_writer() {
    let Some(db) = std::env::var_os("TAKT_RECORDS_CRASH_DB") else {
        return;
    };
    let mut store = Store::open(&db).unwrap();
    let staged = big_document("agents", 10, 10);
    let meta = RunMeta::from_documents(std::slice::from_ref(&staged)).unwrap();
    let id = store.begin(&meta).unwrap();
    store.add_document(id, &staged).unwrap();
    let docs = [
        big_document("agents", 150, 40),
        big_document("sme", 150, 40),
    ];
    let meta = RunMeta::from_documents(&docs).unwrap();
    loop {
        store.record(&meta, &docs).unwrap();
    }
}

#[test]
fn a_writer_killed_mid_write_leaves_a_consistent_readable_database() {
    let dir = TempDir::new("crash");
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "crash_child_writer",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("TAKT_RECORDS_CRASH_DB", dir.db())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until a few whole runs are in, then kill it where it stands:
    // about 97% of its loop is inside a write transaction (a debug build
    // spends ~310 of the ~320 ms per run between BEGIN and COMMIT).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(40);
    loop {
        let complete = Store::open_existing(dir.db())
            .and_then(|s| s.list())
            .map(|l| l.iter().filter(|r| r.status == RunStatus::Complete).count())
            .unwrap_or(0);
        if complete >= 3 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the child wrote too slowly"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the child writer exited"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(37));
    // SAFETY: kill(2) on our own child's pid has no memory effects.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGKILL) },
        0
    );
    child.wait().unwrap();

    let conn = rusqlite::Connection::open(dir.db()).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let orphans: i64 = conn
        .query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(orphans, 0);
    drop(conn);

    let mut store = Store::open(dir.db()).unwrap();
    let runs = store.list().unwrap();
    assert_eq!(runs[0].status, RunStatus::Abandoned, "its process is gone");
    assert_eq!(store.run(runs[0].id).unwrap().documents.len(), 1);
    let complete: Vec<_> = runs[1..].iter().collect();
    assert!(complete.len() >= 3);
    for r in complete {
        assert_eq!(
            r.status,
            RunStatus::Complete,
            "no half-written run is visible"
        );
        let run = store.run(r.id).unwrap();
        assert_eq!(run.documents.len(), 2);
        for d in &run.documents {
            assert_eq!(d.rows.len(), 150);
            assert!(d.rows.iter().all(|row| row.samples.len() == 40));
        }
    }
    // And it takes new runs.
    let docs = two_documents();
    store
        .record(&RunMeta::from_documents(&docs).unwrap(), &docs)
        .unwrap();
}

#[test]
fn concurrent_writers_on_a_fresh_database_all_succeed() {
    let dir = TempDir::new("concurrent");
    let docs = two_documents();
    let meta = RunMeta::from_documents(&docs).unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                // Each writer opens (and maybe creates and migrates) on its own.
                let mut store = Store::open(dir.db()).unwrap();
                for _ in 0..5 {
                    store.record(&meta, &docs).unwrap();
                }
            });
        }
    });
    let store = Store::open_existing(dir.db()).unwrap();
    let runs = store.list().unwrap();
    assert_eq!(runs.len(), 20);
    assert!(runs
        .iter()
        .all(|r| r.status == RunStatus::Complete && r.rows == 3));
}
