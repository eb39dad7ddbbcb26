//! The store on PostgreSQL, against a server each test starts
//! (`common::pg`): round trips as on SQLite, writers in several processes
//! playing several machines, a writer killed mid-write, migration from
//! version 1, TLS with a certificate made here, clear errors.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::pg::Postgres;
use common::{big_document, diff_runs, document, row, TempDir};
use serde_json::json;
use takt_records::compare::DEFAULT_MIN_CHANGE_PCT;
use takt_records::{compare, record, Error, RunMeta, RunStatus, Store, SCHEMA_VERSION};

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
    agents["machine"]["host"] = json!("lab-a");
    agents["machine"]["machine_id"] = json!("aaaaaaaaaaaaaaaa");
    let mut capacity = document(
        "sip_capacity",
        vec![
            json!({"name": "capacity", "impl": "kamailio", "params": {}, "unit": "cps",
                    "better": "higher", "runs": 0, "cpu_s": 1.0,
                    "bound": {"kind": "lower", "value": 35000.0, "limit": "generator"}}),
        ],
    );
    capacity["machine"] = agents["machine"].clone();
    vec![agents, capacity]
}

/// The same documents read back from PostgreSQL as from SQLite, bit for
/// bit; a staged run; the diff verdicts of both stores agree; another
/// program's tables are left alone.
#[test]
fn runs_round_trip_as_on_sqlite_and_diff_alike() {
    let server = Postgres::start("roundtrip");
    let url = server.tcp_url(&server.create_db("roundtrip"));
    let dir = TempDir::new("pg-roundtrip");
    let docs = two_documents();
    let meta = RunMeta::from_documents(&docs).unwrap();
    let lite = record(dir.db(), &meta, &docs).unwrap();
    let shared = record(url.as_str(), &meta, &docs).unwrap();
    let lite = Store::open_existing(dir.db()).unwrap().run(lite).unwrap();
    let mut store = Store::open_existing(url.as_str()).unwrap();
    let pg = store.run(shared).unwrap();
    assert_eq!(pg.documents, lite.documents);
    assert_eq!(pg.summary.meta, lite.summary.meta);
    assert_eq!(pg.summary.status, RunStatus::Complete);
    assert_eq!(pg.summary.suites, ["agents", "sip_capacity"]);
    assert_eq!(pg.summary.rows, 3);
    assert!(pg.summary.ended.is_some());

    // staged: running while this store holds it, then interrupted
    let id = store.begin(&meta).unwrap();
    assert_eq!(store.run(id).unwrap().summary.status, RunStatus::Running);
    store.add_document(id, &docs[0]).unwrap();
    store
        .finish_interrupted(id, &["sip_capacity".to_string()])
        .unwrap();
    assert_eq!(
        store.run(id).unwrap().summary.status,
        RunStatus::Interrupted {
            missing: vec!["sip_capacity".into()]
        }
    );
    let e = store.add_document(id, &docs[1]).unwrap_err();
    assert!(matches!(e, Error::RunClosed { .. }), "{e}");
    let e = store.run(999).unwrap_err();
    assert!(matches!(e, Error::UnknownRun(999)), "{e}");
    // an invalid document writes nothing
    let before = store.list().unwrap().len();
    let mut bad = docs.clone();
    bad[1]["results"][0]["unit"] = json!(3);
    assert!(store.record(&meta, &bad).is_err());
    let mut late = meta.clone();
    late.started = "yesterday".into();
    let e = store.record(&late, &docs).unwrap_err();
    assert!(matches!(e, Error::InvalidMeta(_)), "{e}");
    assert_eq!(store.list().unwrap().len(), before);
    assert_eq!(store.list_on(Some("lab-a")).unwrap().len(), before);
    assert!(store.list_on(Some("lab-z")).unwrap().is_empty());

    // the same diff verdicts on both stores
    let (a, b) = diff_runs();
    let mut verdicts = Vec::new();
    for db in [takt_records::Location::from(dir.db()), url.as_str().into()] {
        let ia = record(&db, &RunMeta::from_documents(&a).unwrap(), &a).unwrap();
        let ib = record(&db, &RunMeta::from_documents(&b).unwrap(), &b).unwrap();
        let s = Store::open_existing(&db).unwrap();
        let d = compare(
            &s.run(ia).unwrap(),
            &s.run(ib).unwrap(),
            DEFAULT_MIN_CHANGE_PCT,
        );
        verdicts.push((d.counts.clone(), d.rows.clone(), d.cautions.len()));
    }
    assert_eq!(verdicts[0], verdicts[1]);
    assert!(verdicts[0].0.regressions > 0 && verdicts[0].0.within_noise > 0);

    // another program's tables: refused, not touched
    let foreign = server.create_db("foreign");
    server.psql(&foreign, "CREATE TABLE runs (x integer)");
    let e = Store::open(server.tcp_url(&foreign).as_str()).unwrap_err();
    assert!(matches!(e, Error::ForeignSchema { .. }), "{e}");
    assert_eq!(
        server.psql(&foreign, "SELECT to_regclass('takt_schema') IS NULL"),
        "t"
    );
    // a wrong password: refused, and said so
    let wrong = format!(
        "postgres://takt:not-the-password@127.0.0.1:{}/roundtrip",
        server.port
    );
    let e = Store::open_existing(wrong.as_str()).unwrap_err();
    assert!(matches!(e, Error::Connect { .. }), "{e}");
    assert!(
        e.to_string().contains("password authentication failed"),
        "{e}"
    );
    assert!(!e.to_string().contains("not-the-password"), "{e}");
    // the same store over the server's Unix socket
    let over_socket = Store::open_existing(server.socket_url("roundtrip")).unwrap();
    assert_eq!(over_socket.list().unwrap().len(), before + 2);
    // TLS required of a server without it: refused, and said so
    let plain = format!(
        "postgres://takt:{}@127.0.0.1:{}/roundtrip?sslmode=require",
        common::pg::PASSWORD,
        server.port
    );
    let e = Store::open_existing(plain.as_str()).unwrap_err();
    assert!(matches!(e, Error::Connect { .. }), "{e}");
    assert!(e.to_string().contains("TLS"), "{e}");
    // reading commands do not create records
    let empty = server.create_db("empty");
    let e = Store::open_existing(server.tcp_url(&empty).as_str()).unwrap_err();
    assert!(matches!(e, Error::NoDatabase { .. }), "{e}");
    assert!(!e.to_string().contains(common::pg::PASSWORD), "{e}");
}

/// The child half of the multi-process tests: what it does is in
/// `TAKT_RECORDS_PG_CHILD`; nothing unless the parent set it.
#[test]
fn pg_child() {
    let Ok(what) = std::env::var("TAKT_RECORDS_PG_CHILD") else {
        return;
    };
    let url = std::env::var("TAKT_RECORDS_PG_URL").unwrap();
    let parts: Vec<&str> = what.split(':').collect();
    let host = parts[1];
    let mut store = Store::open(url.as_str())
        .unwrap()
        .impersonate(host, &format!("{:0>16}", host.replace('-', "")));
    let mut docs = two_documents();
    for d in &mut docs {
        d["machine"]["host"] = json!(host);
    }
    let meta = RunMeta::from_documents(&docs).unwrap();
    match parts[0] {
        "record" => {
            for _ in 0..parts[2].parse::<usize>().unwrap() {
                store.record(&meta, &docs).unwrap();
            }
        }
        "stage" => {
            let id = store.begin(&meta).unwrap();
            store.add_document(id, &docs[0]).unwrap();
            println!("begun {id}");
            std::thread::sleep(Duration::from_secs(60));
        }
        "bulk" => {
            let mut big = [
                big_document("agents", 150, 40),
                big_document("sme", 150, 40),
            ];
            for d in &mut big {
                d["machine"]["host"] = json!(host);
            }
            let meta = RunMeta::from_documents(&big).unwrap();
            loop {
                store.record(&meta, &big).unwrap();
            }
        }
        other => panic!("unknown child {other}"),
    }
}

fn child(url: &str, what: &str) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "pg_child", "--nocapture", "--test-threads", "1"])
        .env("TAKT_RECORDS_PG_CHILD", what)
        .env("TAKT_RECORDS_PG_URL", url)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Kills and reaps a child (the kill is the test's point, not cleanup).
fn kill(c: &mut std::process::Child) {
    // SAFETY: kill(2) on our own child's pid has no memory effects.
    assert_eq!(
        unsafe { libc::kill(c.id() as libc::pid_t, libc::SIGKILL) },
        0
    );
    c.wait().unwrap();
}

/// Three processes playing three machines create, migrate and fill one
/// fresh database at once; a fourth writes large runs until it is killed
/// mid-transaction; a fifth begins a run and stays. Every complete run is
/// whole; the killed writer left no part of a run; the staged run reads
/// "running on" its host while its writer lives and "abandoned" after.
#[test]
fn writers_in_several_processes_share_one_store() {
    let server = Postgres::start("writers");
    let url = server.tcp_url(&server.create_db("shared"));
    let hosts = ["lab-a", "lab-b", "lab-c"];
    let writers: Vec<_> = hosts
        .iter()
        .map(|h| child(&url, &format!("record:{h}:5")))
        .collect();
    let mut bulk = child(&url, "bulk:lab-d");
    let mut stage = child(&url, "stage:lab-e");
    for mut w in writers {
        assert!(w.wait().unwrap().success(), "a writer failed");
    }
    let staged: i64 =
        std::io::BufRead::lines(std::io::BufReader::new(stage.stdout.as_mut().unwrap()))
            // libtest prints "test pg_child ... " before the test's own output
            .find_map(|l| {
                l.unwrap()
                    .split_once("begun ")
                    .map(|(_, id)| id.trim().parse().unwrap())
            })
            .expect("the staged writer began no run");
    // let the bulk writer finish a run or two, then kill it mid-write
    let store = Store::open_existing(url.as_str()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while store.list_on(Some("lab-d")).unwrap().is_empty() {
        assert!(Instant::now() < deadline, "the bulk writer is too slow");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    kill(&mut bulk);

    let runs = store.list().unwrap();
    for h in hosts {
        let mine = store.list_on(Some(h)).unwrap();
        assert_eq!(mine.len(), 5, "{h}");
        assert!(mine
            .iter()
            .all(|r| r.status == RunStatus::Complete && r.rows == 3));
    }
    for r in runs.iter().filter(|r| r.id != staged && r.rows > 3) {
        assert_eq!(r.status, RunStatus::Complete);
        let run = store.run(r.id).unwrap();
        assert_eq!(run.documents.len(), 2, "no half-written run is visible");
        for d in &run.documents {
            assert_eq!(d.rows.len(), 150);
            assert!(d.rows.iter().all(|row| row.samples.len() == 40));
        }
    }
    // nothing orphaned by the killed transaction
    let orphans = server.psql(
        "shared",
        "SELECT (SELECT count(*) FROM documents WHERE run_id NOT IN (SELECT id FROM runs))
              + (SELECT count(*) FROM results WHERE document_id NOT IN (SELECT id FROM documents))",
    );
    assert_eq!(orphans, "0");

    // the staged run: another machine's, still being written
    let status = store.run(staged).unwrap().summary.status;
    assert_eq!(
        status,
        RunStatus::RunningOn {
            host: "lab-e".into()
        }
    );
    assert_eq!(status.to_string(), "running on lab-e");
    kill(&mut stage);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let s = store.run(staged).unwrap().summary.status;
        if s == RunStatus::Abandoned {
            break;
        }
        assert!(Instant::now() < deadline, "still {s} after its writer died");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(store.run(staged).unwrap().documents.len(), 1);
}

/// A database at version 1 (made with the first step only, rows written
/// by hand in version 1's columns) migrates to the current version with
/// its rows as they were; a version above this build's is refused.
#[test]
fn version_1_migrates_and_a_newer_version_is_refused() {
    let server = Postgres::start("migrate");
    let db = server.create_db("old");
    let url = server.tcp_url(&db);
    drop(Store::open_postgres_at_version(&url, 1).unwrap());
    assert_eq!(server.psql(&db, "SELECT version FROM takt_schema"), "1");
    server.psql(
        &db,
        r#"INSERT INTO runs (id, status, started, ended, command, commit_id, rustc, profile,
                             takt, machine, owner_boot, owner_pid, owner_start)
           VALUES (1, 'complete', '2026-11-01T00:00:00Z', '2026-11-01T00:01:00Z',
                   'takt bench sme', 'abc1234', 'rustc 1.88.0', 'release', '0.1.0',
                   '{"cpus":2,"host":"lab-old","machine_id":"0123456789abcdef"}', '', 0, 0);
           INSERT INTO documents (id, run_id, seq, suite, started, takt, body)
           VALUES (1, 1, 0, 'sme', '2026-11-01T00:00:00Z', '0.1.0', '{}');
           INSERT INTO results (id, document_id, seq, suite, name, impl, params, unit, better,
                                median, min, max, mean, stddev, ci_lo, ci_hi, runs, cpu_s)
           VALUES (7, 1, 0, 'sme', 'sync_ring', 'takt', '{}', 'ns/step', 'lower',
                   9.5, 9.0, 10.0, 9.5, 0.5, 9.0, 10.0, 2, 0.1);
           INSERT INTO samples (result_id, seq, value) VALUES (7, 0, 9.0), (7, 1, 10.0);
           SELECT setval('runs_id_seq', 1); SELECT setval('documents_id_seq', 1);
           SELECT setval('results_id_seq', 7);"#,
    );
    let mut store = Store::open(url.as_str()).unwrap();
    assert_eq!(
        server.psql(&db, "SELECT version FROM takt_schema"),
        SCHEMA_VERSION.to_string()
    );
    let run = store.run(1).unwrap();
    let row = &run.documents[0].rows[0];
    assert_eq!(
        (row.median, row.min, row.max),
        (Some(9.5), Some(9.0), Some(10.0))
    );
    assert_eq!(row.samples, vec![9.0, 10.0]);
    assert_eq!(store.list_on(Some("lab-old")).unwrap().len(), 1);
    // and takes new runs, bounds included
    let docs = two_documents();
    let id = store
        .record(&RunMeta::from_documents(&docs).unwrap(), &docs)
        .unwrap();
    assert_eq!(id, 2);
    assert!(store.run(id).unwrap().documents[1].rows[0].bound.is_some());
    drop(store);

    server.psql(&db, "UPDATE takt_schema SET version = 99");
    let e = Store::open_existing(url.as_str()).unwrap_err();
    assert!(matches!(e, Error::SchemaTooNew { found: 99, .. }), "{e}");
    assert!(e.to_string().contains("use a newer takt"), "{e}");
    assert_eq!(server.psql(&db, "SELECT version FROM takt_schema"), "99");
}

/// TLS with a CA and a server certificate made here: `sslmode=require`
/// encrypts (the server sees an SSL session), `verify-full` with the CA
/// connects, `verify-full` with another CA is refused.
#[test]
fn tls_with_a_certificate_made_by_the_test() {
    let ca = make_ca("takt test CA");
    let other_ca = make_ca("another CA");
    let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    params
        .subject_alt_names
        .push(rcgen::SanType::IpAddress("127.0.0.1".parse().unwrap()));
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &ca).unwrap();
    let server = Postgres::start_with("tls", Some((&cert.pem(), &key.serialize_pem())));
    let db = server.create_db("secure");
    let ca_file = server.dir().join("client-ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    let other_file = server.dir().join("other-ca.pem");
    std::fs::write(&other_file, other_ca.pem()).unwrap();
    let base = format!(
        "postgres://takt:{}@127.0.0.1:{}/{db}",
        common::pg::PASSWORD,
        server.port
    );

    let docs = two_documents();
    let meta = RunMeta::from_documents(&docs).unwrap();
    let mut store = Store::open(format!("{base}?sslmode=require")).unwrap();
    let id = store.record(&meta, &docs).unwrap();
    let ssl = server.psql(
        &db,
        "SELECT bool_and(s.ssl) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
         WHERE a.client_addr = '127.0.0.1' AND a.usename = 'takt'",
    );
    assert_eq!(ssl, "t", "the store's session is not encrypted");
    drop(store);
    let full = format!(
        "{base}?sslmode=verify-full&sslrootcert={}",
        ca_file.display()
    );
    assert_eq!(
        Store::open_existing(full.as_str())
            .unwrap()
            .run(id)
            .unwrap()
            .documents
            .len(),
        2
    );
    let wrong = format!(
        "{base}?sslmode=verify-full&sslrootcert={}",
        other_file.display()
    );
    let e = Store::open_existing(wrong.as_str()).unwrap_err();
    assert!(matches!(e, Error::Connect { .. }), "{e}");
    assert!(e.to_string().contains("certificate"), "{e}");
    assert!(!e.to_string().contains(common::pg::PASSWORD), "{e}");
}

fn make_ca(name: &str) -> rcgen::CertifiedIssuer<'static, rcgen::KeyPair> {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
    ];
    rcgen::CertifiedIssuer::self_signed(params, rcgen::KeyPair::generate().unwrap()).unwrap()
}

/// No server, a wrong password, a URL of another database kind: each a
/// clear error that names the store and never shows the password.
#[test]
fn refused_connections_are_clear_errors() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://takt:hunter2@127.0.0.1:{port}/takt");
    let e = Store::open(url.as_str()).unwrap_err();
    assert!(matches!(e, Error::Connect { .. }), "{e}");
    let text = e.to_string();
    assert!(
        text.starts_with(&format!(
            "cannot connect to the records store postgres://takt:***@127.0.0.1:{port}/takt: "
        )),
        "{text}"
    );
    assert!(text.contains("refused"), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
    let e = Store::open("mysql://takt@127.0.0.1/takt").unwrap_err();
    assert!(matches!(e, Error::UnsupportedUrl { .. }), "{e}");
    let e = Store::open("postgres://takt@127.0.0.1/takt?sslmode=sometimes").unwrap_err();
    assert!(matches!(e, Error::Config { .. }), "{e}");
}
