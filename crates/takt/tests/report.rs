//! `takt report` end to end: Ctrl-C during a stage keeps the report, which
//! says what is missing; `--from` renders the directory again.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn an_interrupted_report_is_written_and_says_what_is_missing() {
    let dir = std::env::temp_dir().join(format!("takt-report-int-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut child = Command::new(env!("CARGO_BIN_EXE_takt"))
        .args(["report", "--quick", "--only", "sme,remote", "--out"])
        .arg(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Let the SME stage start (its child is running), then interrupt us
    // alone, as a SIGTERM from a supervisor would: the runner forwards it.
    std::thread::sleep(Duration::from_secs(3));
    // SAFETY: kill(2) on the pid of a child we spawned and have not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
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
    assert!(std::fs::read_to_string(again.join("index.html"))
        .unwrap()
        .contains("interrupted (Ctrl-C)"));
    let _ = std::fs::remove_dir_all(&dir);
}
