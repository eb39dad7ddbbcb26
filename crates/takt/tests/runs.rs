//! `takt runs list/show/diff` end to end on a database made here.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::{json, Value};

fn takt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_takt"))
        .args(args)
        .output()
        .unwrap()
}

struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("takt-runs-test-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
    fn file(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A document with one `ping_pong` row of mean `centre` (spread ±0.2).
fn doc(commit: &str, centre: f64) -> Value {
    let s: Vec<f64> = [-0.2, -0.1, 0.0, 0.1, 0.2]
        .iter()
        .map(|d| centre + d)
        .collect();
    let half = 2.776 * 0.158_113_883 / 5f64.sqrt();
    json!({
        "takt": "0.1.0", "suite": "agents", "started": "2026-11-24T12:00:00Z",
        "machine": {"cpu": "Test CPU", "cpus": 2, "kernel": "6.18", "virtualized": true,
                    "commit": commit, "rustc": "rustc 1.95.0", "profile": "release",
                    "command": "takt bench agents --quick", "steal_pct": 0.5, "load": [1.0, 1.0, 1.0]},
        "results": [
            {"name": "ping_pong", "impl": "takt", "params": {"dispatcher": "one_thread", "messages": 1000},
             "unit": "ns/msg", "better": "lower", "median": centre, "min": s[0], "max": s[4],
             "mean": centre, "ci95": [centre - half, centre + half], "runs": 5, "cpu_s": 0.2,
             "samples": s},
            {"name": "skynet", "impl": "takt", "params": {"dispatcher": "pool"},
             "unit": "ms", "better": "lower", "median": 50.0, "min": 49.0, "max": 51.0,
             "mean": 50.0, "ci95": [49.0, 51.0], "runs": 5, "cpu_s": 0.9,
             "samples": [49.0, 49.5, 50.0, 50.5, 51.0]}
        ]
    })
}

fn store(dir: &Dir) -> String {
    let db = dir.file("takt-results.db");
    for (commit, centre) in [("aaaa111", 12.0), ("bbbb222", 15.0)] {
        let d = doc(commit, centre);
        let meta = takt_records::RunMeta::from_documents(std::slice::from_ref(&d)).unwrap();
        takt_records::record(&db, &meta, &[d]).unwrap();
    }
    db
}

fn stdout(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout.clone()).unwrap()
}

#[test]
fn list_show_and_diff_print_tables_and_json() {
    let dir = Dir::new("ok");
    let db = store(&dir);

    let list = stdout(&takt(&["runs", "list", "--db", &db]));
    assert!(
        list.contains("aaaa111") && list.contains("bbbb222"),
        "{list}"
    );
    assert!(list.contains("complete"), "{list}");
    let v: Value =
        serde_json::from_str(&stdout(&takt(&["runs", "list", "--db", &db, "--json"]))).unwrap();
    assert_eq!(v["runs"].as_array().unwrap().len(), 2);
    let v: Value = serde_json::from_str(&stdout(&takt(&[
        "runs", "list", "--db", &db, "--json", "--last", "1",
    ])))
    .unwrap();
    assert_eq!(v["runs"][0]["commit"], "bbbb222");

    let show = stdout(&takt(&["runs", "show", "1", "--db", &db]));
    assert!(
        show.contains("dispatcher") && show.contains("one_thread"),
        "params as columns: {show}"
    );
    assert!(show.contains("Test CPU · 2 CPUs"), "{show}");
    let v: Value = serde_json::from_str(&stdout(&takt(&[
        "runs", "show", "1", "--db", &db, "--json",
    ])))
    .unwrap();
    assert_eq!(
        v["documents"][0]["body"]["results"][0]["samples"]
            .as_array()
            .unwrap()
            .len(),
        5
    );

    let diff = stdout(&takt(&["runs", "diff", "1", "2", "--db", &db]));
    let last_two = stdout(&takt(&["runs", "diff", "--db", &db]));
    assert_eq!(diff, last_two, "without IDs: the last two runs");
    assert!(diff.contains("REGRESSION"), "{diff}");
    assert!(diff.contains("within noise"), "{diff}");
    assert!(diff.contains("+25.0%"), "{diff}");
    let v: Value = serde_json::from_str(&stdout(&takt(&[
        "runs", "diff", "1", "2", "--db", &db, "--json",
    ])))
    .unwrap();
    assert_eq!(v["counts"]["regressions"], 1);
    assert_eq!(v["counts"]["within_noise"], 1);
    let v: Value = serde_json::from_str(&stdout(&takt(&[
        "runs",
        "diff",
        "1",
        "2",
        "--db",
        &db,
        "--json",
        "--changed",
    ])))
    .unwrap();
    assert_eq!(v["rows"].as_array().unwrap().len(), 1);
}

#[test]
fn bad_ids_and_files_fail_with_a_clear_message() {
    let dir = Dir::new("bad");
    let db = store(&dir);
    let fails = |args: &[&str], msg: &str| {
        let o = takt(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert!(o.stdout.is_empty(), "nothing on stdout for {args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(msg), "{args:?}: {err}");
    };
    fails(
        &["runs", "show", "9", "--db", &db],
        "no run 9 in the records",
    );
    fails(&["runs", "diff", "1", "7", "--db", &db], "no run 7");
    let absent = dir.file("absent.db");
    fails(&["runs", "list", "--db", &absent], "no records at");
    assert!(!std::path::Path::new(&absent).exists());
    let junk = dir.file("junk.db");
    std::fs::write(&junk, "not sqlite at all\n".repeat(400)).unwrap();
    fails(
        &["runs", "list", "--db", &junk],
        "is not a takt records database",
    );
    let not_doc = dir.file("not_doc.json");
    std::fs::write(&not_doc, r#"{"suite": "agents"}"#).unwrap();
    fails(
        &["runs", "add", &not_doc, "--db", &db],
        "document 0 is not a result document: takt: missing",
    );
    fails(
        &["runs", "add", &dir.file("nope.json"), "--db", &db],
        "reading",
    );
}

#[test]
fn add_stores_saved_documents_as_one_run() {
    let dir = Dir::new("add");
    let db = dir.file("takt-results.db");
    let (a, b) = (dir.file("a.json"), dir.file("b.json"));
    std::fs::write(&a, doc("cccc333", 12.0).to_string()).unwrap();
    let mut sme = doc("cccc333", 12.0);
    sme["suite"] = json!("sme");
    std::fs::write(&b, sme.to_string()).unwrap();
    let out = stdout(&takt(&["runs", "add", &a, &b, "--db", &db]));
    assert!(out.starts_with("stored run 1 in "), "{out}");
    let v: Value = serde_json::from_str(&stdout(&takt(&[
        "runs", "show", "1", "--db", &db, "--json",
    ])))
    .unwrap();
    assert_eq!(v["suites"], json!(["agents", "sme"]));
    assert_eq!(v["status"], "complete");
    assert_eq!(v["commit"], "cccc333");
    let o = takt(&["runs", "diff", "--db", &db]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("holds 1 run(s)"), "{err}");
}

#[test]
fn a_measuring_command_records_its_run_once_even_when_repeated() {
    let dir = Dir::new("record");
    let db = dir.file("takt-results.db");
    let plots = dir.file("plots");
    let o = takt(&[
        "machine", "--quick", "--only", "timer", "--repeat", "2", "--json", "--record", "--db",
        &db, "--out", &plots,
    ]);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("stored run 1 in"));
    let v: Value = serde_json::from_str(&stdout(&takt(&[
        "runs", "show", "1", "--db", &db, "--json",
    ])))
    .unwrap();
    assert_eq!(
        v["suites"],
        json!(["machine"]),
        "the --repeat children did not record"
    );
    assert!(
        v["command"].as_str().unwrap().contains("--repeat 2"),
        "{}",
        v["command"]
    );
    assert_eq!(
        v["documents"][0]["body"], doc,
        "the stored document is the one printed"
    );
    let list: Value =
        serde_json::from_str(&stdout(&takt(&["runs", "list", "--db", &db, "--json"]))).unwrap();
    assert_eq!(list["runs"].as_array().unwrap().len(), 1);
    // A document of this build's shape shows as its command printed it.
    let show = stdout(&takt(&["runs", "show", "1", "--db", &db]));
    assert!(
        show.contains("timer_rdtsc") && show.contains("median (ns)"),
        "{show}"
    );
}

#[path = "../../takt-records/tests/common/pg.rs"]
mod pg;

/// `takt` with the password of the fixture's server in the environment
/// (never in the URL or the command line) and `env` set.
fn takt_pg(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_takt"))
        .args(args)
        .env("PGPASSWORD", pg::PASSWORD)
        .env_remove("TAKT_DB")
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

/// A PostgreSQL store two machines wrote to: `--db URL` and `TAKT_DB`,
/// `runs list --machine`, a diff across machines that says so with the
/// machines side by side and the same verdicts as on SQLite, `report
/// --run` from it, and a refused password as a clear error.
#[test]
fn a_shared_store_holds_the_runs_of_several_machines() {
    let server = pg::Postgres::start("cli");
    let url = server.tcp_url_no_password(&server.create_db("lab"));
    let dir = Dir::new("pg");
    let mut files = Vec::new();
    for (commit, centre, host) in [("aaaa111", 12.0, "lab-a"), ("bbbb222", 15.0, "lab-b")] {
        let mut d = doc(commit, centre);
        d["machine"]["host"] = json!(host);
        d["machine"]["machine_id"] = json!(format!("{:0>16}", host.replace('-', "")));
        let f = dir.file(&format!("{host}.json"));
        std::fs::write(&f, d.to_string()).unwrap();
        files.push(f);
    }
    let added = stdout(&takt_pg(&["runs", "add", "--db", &url, &files[0]], &[]));
    assert_eq!(added, format!("stored run 1 in {url}\n"));
    stdout(&takt_pg(&["runs", "add", &files[1]], &[("TAKT_DB", &url)]));

    let env = [("TAKT_DB", url.as_str())];
    let list = stdout(&takt_pg(&["runs", "list", "--machine", "lab-a"], &env));
    assert!(
        list.contains("aaaa111") && !list.contains("bbbb222"),
        "{list}"
    );
    assert!(list.contains("lab-a"), "the host column: {list}");
    let v: Value = serde_json::from_str(&stdout(&takt_pg(
        &["runs", "list", "--json", "--machine", "lab-b"],
        &env,
    )))
    .unwrap();
    assert_eq!(v["runs"].as_array().unwrap().len(), 1);
    assert_eq!(v["db"], url.as_str());

    let diff = stdout(&takt_pg(&["runs", "diff", "1", "2"], &env));
    assert!(
        diff.contains("caution: the runs are from different machines: A (lab-a), B (lab-b)"),
        "{diff}"
    );
    let side = diff
        .lines()
        .find(|l| l.trim_start().starts_with("host"))
        .expect("the machines side by side");
    let cells: Vec<&str> = side.split_whitespace().collect();
    assert_eq!(cells, ["host", "lab-a", "lab-b", "differs"], "{diff}");
    assert!(diff.contains("REGRESSION"), "{diff}");
    // the same verdicts as the same runs in a SQLite file
    let lite = dir.file("lite.db");
    for f in &files {
        stdout(&takt_pg(&["runs", "add", "--db", &lite, f], &[]));
    }
    let json = |db: &str| -> Value {
        let mut v: Value = serde_json::from_str(&stdout(&takt_pg(
            &["runs", "diff", "1", "2", "--json", "--db", db],
            &[],
        )))
        .unwrap();
        v.as_object_mut().unwrap().remove("a");
        v.as_object_mut().unwrap().remove("b");
        v
    };
    assert_eq!(json(&url), json(&lite));

    // report --run renders a run of the shared store
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../takt-report/tests/fixtures/sme.json");
    stdout(&takt_pg(&["runs", "add", fixtures.to_str().unwrap()], &env));
    let out = dir.file("report");
    stdout(&takt_pg(&["report", "--run", "3", "--out", &out], &env));
    let html = std::fs::read_to_string(format!("{out}/index.html")).unwrap();
    assert!(
        html.contains("<dt>stored run</dt><dd>3 ("),
        "stored run line"
    );

    // a refused password: a clear error, nothing shown of it
    let o = takt_pg(
        &["runs", "list"],
        &[("TAKT_DB", &url), ("PGPASSWORD", "not-it")],
    );
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("cannot connect to the records store")
            && err.contains("password authentication failed"),
        "{err}"
    );
    assert!(!err.contains("not-it"), "{err}");
}
