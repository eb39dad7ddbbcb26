//! `takt sip tune` on a short budget: the candidates searched, the run
//! stopped when its budget is spent, a verdict with its evidence, the
//! document and the record; bad flags refused.

use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn a_tune_stops_at_its_budget_with_a_verdict() {
    let out = std::env::temp_dir().join(format!("takt-tune-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let t0 = Instant::now();
    let r = Command::new(env!("CARGO_BIN_EXE_takt"))
        .args(["sip", "tune", "--target", "takt", "--workers", "2"])
        .args([
            "--start-cps",
            "100",
            "--max-cps",
            "100000",
            "--window",
            "0.3",
        ])
        .args(["--reps", "2", "--budget", "0.25", "--json", "--out"])
        .arg(&out)
        .arg("--db")
        .arg(out.join("r.db"))
        .output()
        .expect("takt runs");
    let took = t0.elapsed();
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{stderr}");
    assert!(stderr.contains("budget"), "{stderr}");
    // 15 s of budget, one trial to finish, the servers to stop
    assert!(took < Duration::from_secs(60), "{took:?}");
    let doc: serde_json::Value = serde_json::from_slice(&r.stdout).expect("one JSON document");
    assert_eq!(doc["suite"], "sip_tune");
    let text = doc.to_string();
    // stopped by its budget: no recommendation, and it says why
    assert!(text.contains("inconclusive"), "{text}");
    assert!(text.contains("interrupted"), "{text}");
    assert!(out.join("tune.json").is_file());
    assert!(out.join("r.db").is_file());
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn bad_flags_are_refused() {
    for (args, want) in [
        (
            &["--target", "takt", "--workers", "2", "--pairs", "4"][..],
            "4 is not in 5..",
        ),
        (&["--target", "null-relay", "--workers", "2"], "null relay"),
        (&["--target", "takt"], "--workers"),
        (
            &["--target", "takt", "--workers", "2", "--budget", "0"],
            "budget",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_takt"))
            .args(["sip", "tune"])
            .args(args)
            .args(["--out", "/nonexistent/never-written"])
            .output()
            .expect("takt runs");
        assert!(!out.status.success(), "{args:?}");
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(e.contains(want), "{args:?}: {e}");
    }
}
