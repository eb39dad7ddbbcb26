//! `takt report` end to end: Ctrl-C during a stage keeps the report, which
//! says what is missing; `--from` renders the directory again.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// Starts `takt report --quick --only ONLY` into a fresh directory named
/// after `tag`, sends `signal` to it alone 3 s in (as a supervisor would:
/// the runner forwards it to the stage's child), and waits up to 60 s for
/// it to stop. Returns the report directory and the exit status.
fn interrupted_report(tag: &str, only: &str, signal: i32) -> (PathBuf, ExitStatus) {
    let dir = std::env::temp_dir().join(format!("takt-report-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut child = Command::new(env!("CARGO_BIN_EXE_takt"))
        .args(["report", "--quick", "--only", only, "--out"])
        .arg(&dir)
        .arg("--db")
        .arg(dir.with_extension("db"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Let the first stage start (its child is running).
    std::thread::sleep(Duration::from_secs(3));
    // SAFETY: kill(2) on the pid of a child we spawned and have not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "takt report did not stop"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    (dir, status)
}

#[test]
fn an_interrupted_report_is_written_and_says_what_is_missing() {
    let (dir, status) = interrupted_report("int", "sme,remote", libc::SIGINT);
    assert_eq!(status.code(), Some(130), "{status}");
    let html = std::fs::read_to_string(dir.join("index.html")).expect("no report written");
    assert!(
        html.contains("Not measured:</strong> interrupted (Ctrl-C)"),
        "sme section"
    );
    assert!(
        html.contains("Not measured:</strong> not in --only"),
        "machine section"
    );
    assert!(
        html.contains("interrupted (Ctrl-C) before it started"),
        "remote section"
    );
    assert!(!dir.join("sme.json").exists());

    // The directory renders again without measuring.
    let again = dir.join("again");
    let out = Command::new(env!("CARGO_BIN_EXE_takt"))
        .args(["report", "--from"])
        .arg(&dir)
        .arg("--out")
        .arg(&again)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_file(dir.with_extension("db"));
    assert!(std::fs::read_to_string(again.join("index.html"))
        .unwrap()
        .contains("interrupted (Ctrl-C)"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_report_ended_by_sigterm_is_written_and_exits_143() {
    let (dir, status) = interrupted_report("term", "sme", libc::SIGTERM);
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{status}");
    let html = std::fs::read_to_string(dir.join("index.html")).expect("no report written");
    assert!(
        html.contains("Not measured:</strong> interrupted"),
        "sme section"
    );
    let _ = std::fs::remove_file(dir.with_extension("db"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `takt report --run 1 --db DB --out OUT [--with FILE]`: renders the
/// stored run 1 (or `run`) again.
fn render_run(db: &Path, run: &str, out: &Path, with: Option<&Path>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_takt"));
    cmd.args(["report", "--run", run, "--db"])
        .arg(db)
        .arg("--out")
        .arg(out);
    if let Some(file) = with {
        cmd.arg("--with").arg(file);
    }
    cmd.output().unwrap()
}

#[test]
fn a_stored_run_renders_again() {
    let dir = std::env::temp_dir().join(format!("takt-report-run-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("records.db");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../takt-report/tests/fixtures");
    let add = Command::new(env!("CARGO_BIN_EXE_takt"))
        .args(["runs", "add", "--db"])
        .arg(&db)
        .arg(fixtures.join("sme.json"))
        .arg(fixtures.join("agents.json"))
        .output()
        .unwrap();
    assert!(
        add.status.success(),
        "{}",
        String::from_utf8_lossy(&add.stderr)
    );
    let out = render_run(&db, "1", &dir.join("r"), None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(dir.join("r/index.html")).unwrap();
    assert!(
        html.contains("<dt>stored run</dt><dd>1 ("),
        "stored run line"
    );
    let sme = &html[html.find("<section id=\"sme\">").unwrap()..];
    assert!(
        sme[..sme.find("</section>").unwrap()].contains("<svg"),
        "sme section"
    );
    assert!(
        html.contains("Not measured:</strong> not in the stored run"),
        "machine section"
    );
    // An unknown run is an error that names it.
    let bad = render_run(&db, "99", &dir.join("r2"), None);
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--run 99"));
    // --with adds a document the run lacks; its suite names the section.
    let with = render_run(
        &db,
        "1",
        &dir.join("r3"),
        Some(&fixtures.join("capacity.json")),
    );
    assert!(
        with.status.success(),
        "{}",
        String::from_utf8_lossy(&with.stderr)
    );
    let html = std::fs::read_to_string(dir.join("r3/index.html")).unwrap();
    let cap = &html[html.find("<section id=\"capacity\">").unwrap()..];
    assert!(cap[..cap.find("</section>").unwrap()].contains("capacity (cps)"));
    // a document of no section, or no document at all, is an error
    for (file, says) in [
        (fixtures.join("../report.rs"), "expected"),
        (dir.join("missing.json"), "missing.json"),
    ] {
        let bad = render_run(&db, "1", &dir.join("r4"), Some(&file));
        assert_eq!(bad.status.code(), Some(1), "{}", file.display());
        let err = String::from_utf8_lossy(&bad.stderr);
        assert!(err.contains("--with") && err.contains(says), "{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
