//! `takt sip sweep` end to end on a small scale: takt and Kamailio, the
//! `default`, `enhanced` and a real-time profile that changes a sysctl;
//! the document, the plots and the record; every machine-wide value back
//! afterwards — after a finished run and after a Ctrl-C.
//!
//! One test function: the runs change the same machine-wide file, so they
//! must not overlap.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RR_TIMESLICE: &str = "/proc/sys/kernel/sched_rr_timeslice_ms";

fn rr_timeslice() -> String {
    std::fs::read_to_string(RR_TIMESLICE)
        .unwrap()
        .trim()
        .to_string()
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("takt-sweep-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn sweep(out: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_takt"));
    c.args(["sip", "sweep", "--workers", "2"])
        .args(["--start-cps", "100", "--window", "0.3"])
        .args(["--reps", "2", "--pairs", "2"])
        .arg("--out")
        .arg(out)
        .arg("--db")
        .arg(out.join("r.db"))
        .args(extra);
    c
}

#[test]
fn a_small_sweep_gives_tables_plots_records_and_restores_the_machine() {
    let original = rr_timeslice();
    // a timeslice nobody uses, so that a leftover would show
    let odd = if original == "7" { "9" } else { "7" };
    let profile = format!("default,enhanced,rr:prio=5,timeslice={odd}ms");

    // 1. a finished run
    let out = scratch("run");
    let r = sweep(
        &out,
        &[
            "--target",
            "takt",
            "--target",
            "kamailio",
            "--profile",
            &profile,
            "--json",
        ],
    )
    .output()
    .expect("takt runs");
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{stderr}");
    assert!(stderr.contains("about"), "announces its duration: {stderr}");
    assert_eq!(rr_timeslice(), original, "restored after the run");
    let doc: serde_json::Value = serde_json::from_slice(&r.stdout).expect("one JSON document");
    assert_eq!(doc["suite"], "sip_sweep");
    let rows = doc["results"].as_array().unwrap();
    for target in ["takt", "kamailio"] {
        for p in ["default", "rr:prio=5", "enhanced"] {
            let cap = rows
                .iter()
                .find(|r| {
                    r["name"] == "capacity"
                        && r["impl"] == target
                        && r["params"]["profile"].as_str().unwrap().starts_with(p)
                })
                .unwrap_or_else(|| panic!("no capacity row for {target} {p}: {doc:#}"));
            assert_eq!(cap["params"]["workers"], 2);
            assert_eq!(cap["params"]["mode"], "stateful");
            let rb = &cap["detail"]["readback"];
            assert_eq!(rb["all_match"], true, "{target} {p}: {rb}");
            assert!(rb["threads"].as_u64().unwrap() >= 2, "{rb}");
        }
        let e = rows
            .iter()
            .find(|r| r["name"] == "enhanced_slice" && r["impl"] == target)
            .unwrap_or_else(|| panic!("no enhanced slice for {target}"));
        let us = e["median"].as_f64().unwrap();
        assert!((100.0..=100_000.0).contains(&us), "{e}");
        assert_eq!(e["published"], 100.0, "the paper's value for m = 2");
        // K_rcv over all kinds: measured for takt, a Little's-law estimate
        // for Kamailio (the capacity rows' per-kind K_rcv carry `kind`)
        if let Some(k) = rows.iter().find(|r| {
            r["name"] == "k_rcv" && r["impl"] == target && r["params"].get("kind").is_none()
        }) {
            assert_eq!(k["params"]["estimate"], target == "kamailio", "{k}");
        }
    }
    let notes = doc["notes"].to_string();
    assert!(notes.contains("sched_rr_timeslice_ms"), "{notes}");
    assert!(notes.contains("Little's law"), "{notes}");
    let written = std::fs::read_to_string(out.join("sweep.json")).unwrap();
    assert!(written.contains("\"sip_sweep\""));
    let svgs = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "svg"))
        .count();
    assert!(svgs >= 2, "{svgs} plots");
    let runs = Command::new(env!("CARGO_BIN_EXE_takt"))
        .args(["runs", "list", "--db"])
        .arg(out.join("r.db"))
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&runs.stdout).contains("sip_sweep"),
        "{runs:?}"
    );
    std::fs::remove_dir_all(&out).unwrap();

    // 2. Ctrl-C while the rr profile's time slice is in force
    let out = scratch("ctrl-c");
    let profile = format!("rr:prio=5,timeslice={odd}ms");
    let mut child = sweep(
        &out,
        &[
            "--target",
            "takt",
            "--profile",
            &profile,
            "--max-cps",
            "100000",
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while rr_timeslice() != odd {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the sweep ended before its rr trials"
        );
        assert!(Instant::now() < deadline, "the rr time slice never changed");
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: kill with a valid PID of our own child and a valid signal.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "the sweep did not stop on Ctrl-C"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        status.success(),
        "an interrupted sweep keeps its points: {status}"
    );
    assert_eq!(rr_timeslice(), original, "restored after Ctrl-C");
    let doc = std::fs::read_to_string(out.join("sweep.json")).unwrap();
    assert!(doc.contains("interrupted"), "{doc}");
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn bad_flags_are_refused() {
    for (args, want) in [
        (&["--profile", "fast"][..], "not a profile"),
        (&["--target", "null-relay"], "null relay"),
        (&["--workers", "0"], "0 is not in 1..=1024"),
        (&["--quick", "--paper"], "cannot be used with"),
        (&["--gen-sched", "rr"], "needs prio"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_takt"))
            .args(["sip", "sweep"])
            .args(args)
            .args(["--out", "/nonexistent/never-written"])
            .output()
            .expect("takt runs");
        assert!(!out.status.success(), "{args:?}");
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(e.contains(want), "{args:?}: {e}");
    }
}
