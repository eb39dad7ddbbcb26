//! `takt sip sweep` end to end on a small scale: takt and Kamailio, the
//! `default`, `enhanced` and a real-time profile that changes a sysctl
//! (so the generator's ceiling is measured under it and under `default`);
//! the document, the plots, the markdown table, the progress lines and
//! the record; every machine-wide value back afterwards — after a
//! finished run and after a Ctrl-C, which keeps the finished points.
//!
//! One test function: the runs change the same machine-wide file, so they
//! must not overlap.

use std::io::BufRead;
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
    assert!(
        stderr.contains("the generator's ceiling under 2 profile(s)"),
        "announces the ceilings: {stderr}"
    );
    // stderr is no terminal: a line per stage and per trial
    assert!(
        stderr.contains("takt stateful m=2 default: expected about"),
        "{stderr}"
    );
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("kamailio stateful m=2 enhanced: ") && l.contains(" left")),
        "a step line of the enhanced round: {stderr}"
    );

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
        // for Kamailio
        for k in rows
            .iter()
            .filter(|r| r["name"] == "k_rcv_all_kinds" && r["impl"] == target)
        {
            assert_eq!(k["params"]["estimate"], target == "kamailio", "{k}");
            assert_eq!(k["unit"], "us");
        }
    }
    // Table III's pairs, where there are some, have their own progress
    if rows.iter().any(|r| r["name"] == "drop_rate_lower") {
        assert!(stderr.contains("Table III pairs: "), "{stderr}");
    }
    // one name per quantity: `k_rcv` and `t_sip` are the per-kind rows (ns)
    for r in rows
        .iter()
        .filter(|r| r["name"] == "k_rcv" || r["name"] == "t_sip")
    {
        assert!(r["params"]["kind"].is_string(), "{r}");
        assert_eq!(r["unit"], "ns", "{r}");
    }
    // the generator's ceiling under the profile that changes a sysctl and
    // under default, not mistaken for a server's capacity
    for p in ["default", "rr:prio=5"] {
        let c = rows
            .iter()
            .find(|r| {
                r["name"] == "generator_ceiling"
                    && r["impl"] == "null-relay"
                    && r["params"]["profile"].as_str().unwrap().starts_with(p)
            })
            .unwrap_or_else(|| panic!("no generator ceiling under {p}: {doc:#}"));
        // the null relay's capacity: a value, or a bound ("≥ L") with no
        // statistics — never both
        let v = match (c["median"].as_f64(), c["bound"]["value"].as_f64()) {
            (Some(m), None) => m,
            (None, Some(b)) if c["ci95"].is_null() => b,
            _ => panic!("a ceiling has a median or a bound: {c}"),
        };
        assert!(v > 0.0, "{c}");
    }
    assert!(!rows
        .iter()
        .any(|r| r["name"] == "capacity" && r["impl"] == "null-relay"));
    let notes = doc["notes"].to_string();
    assert!(notes.contains("sched_rr_timeslice_ms"), "{notes}");
    assert!(notes.contains("Little's law"), "{notes}");
    assert!(notes.contains("the generator's ceiling"), "{notes}");
    let md = std::fs::read_to_string(out.join("capacity_vs_m.md")).unwrap();
    assert!(md.starts_with("| target | profile | m = 2 |"), "{md}");
    for row in ["| takt | default |", "| kamailio | enhanced |"] {
        assert!(md.contains(row), "{row} missing: {md}");
    }
    assert!(md.contains("The generator's ceiling"), "{md}");
    let svg = std::fs::read_to_string(out.join("capacity_vs_m.svg")).unwrap();
    for label in [
        "takt default",
        "kamailio enhanced",
        "generator ceiling, default",
    ] {
        assert!(svg.contains(label), "{label} missing in the plot");
    }
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

    // 2. Ctrl-C while the rr profile's time slice is in force, after a
    // finished trial of takt under it
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
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if line.contains("takt stateful m=2 rr:prio=5") && line.contains(" cps ramp ") {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("a finished trial of takt under rr");
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
    reader.join().unwrap();
    assert!(
        status.success(),
        "an interrupted sweep keeps its points: {status}"
    );
    assert_eq!(rr_timeslice(), original, "restored after Ctrl-C");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("sweep.json")).unwrap()).unwrap();
    assert!(doc["notes"].to_string().contains("interrupted"), "{doc:#}");
    // the finished points are kept: the unfinished search's single trials
    assert!(
        doc["results"].as_array().unwrap().iter().any(|r| {
            r["name"] == "drop_rate" && r["impl"] == "takt" && r["params"]["phase"] == "ramp"
        }),
        "{doc:#}"
    );
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
