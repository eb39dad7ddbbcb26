//! `takt sip load --json` end to end, tiny and slow (so it passes on a
//! loaded 2-core machine): real SIPp against the in-process proxy, one
//! result document on stdout, every call succeeded.
//!
//! Needs `sipp` (Debian package `sip-tester`, installed by
//! scripts/setup.sh): fails when it is missing and `CI` is set, and is
//! skipped with a message otherwise.

use std::process::Command;

use serde_json::Value;

/// Whether SIPp tests can run here: not under valgrind (SIPp's timers need
/// a native-speed proxy), and only with SIPp installed.
fn can_run_sipp() -> bool {
    if std::env::var_os("TAKT_UNDER_VALGRIND").is_some() {
        eprintln!("skipping under valgrind (SIPp's timers need a native-speed proxy)");
        return false;
    }
    if takt_siplab::load::find_sipp().is_some() {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!("sipp is not installed (Debian package sip-tester); scripts/setup.sh installs it");
    }
    eprintln!("skipping: sipp is not installed (apt-get install sip-tester)");
    false
}

#[test]
fn load_json_document() {
    if !can_run_sipp() {
        return;
    }
    const CALLS: u64 = 20;
    let out = Command::new(env!("CARGO_BIN_EXE_takt"))
        .args(["sip", "load", "--json", "--quick", "--mode", "stateful"])
        .args(["--model", "shared,batched", "--cps", "40", "--runs", "5"])
        .args(["--calls", &CALLS.to_string(), "--warmup-calls", "0"])
        .output()
        .expect("takt runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "takt sip load failed:\n{stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is one JSON document ({e}):\n{stderr}"));
    assert_eq!(doc["suite"], "sip_load");
    assert!(doc["machine"]["cpus"].as_u64().unwrap() >= 1);
    let rows = doc["results"].as_array().unwrap();
    let find = |name: &str, model: &str, message: Option<&str>| -> &Value {
        rows.iter()
            .find(|r| {
                r["name"] == name
                    && r["params"]["model"] == model
                    && message.is_none_or(|m| r["params"]["message"] == m)
            })
            .unwrap_or_else(|| panic!("no row {name} {model} {message:?}"))
    };
    for model in ["shared", "batched"] {
        for msg in ["invite", "ack", "bye", "1xx", "2xx"] {
            let r = find("t_sip", model, Some(msg));
            assert_eq!(r["impl"], "takt");
            assert_eq!(r["unit"], "us");
            assert_eq!(r["better"], "lower");
            assert_eq!(r["runs"], 5, "{r}");
            assert_eq!(r["samples"].as_array().unwrap().len(), 5);
            let med = r["median"].as_f64().unwrap();
            assert!(med > 0.0 && med.is_finite(), "{r}");
            assert!(r["min"].as_f64().unwrap() <= med && med <= r["max"].as_f64().unwrap());
            assert!(r["ci95"].as_array().unwrap().len() == 2);
            assert!(r["cpu_s"].as_f64().unwrap() > 0.0, "{r}");
            assert_eq!(r["params"]["mode"], "stateful");
            assert_eq!(r["params"]["workers"], 2);
            assert_eq!(r["params"]["cps"], 40);
            assert!(r["params"]["cpus"].is_string() && r["params"]["sched"].is_string());
            // the paper's Table I figure for 2 threads
            assert_eq!(r["published"], 76.9);
            find("k_rcv", model, Some(msg));
            // the same code on a hot core after each run, and the ratio
            let hot = find("t_sip_hot", model, Some(msg));
            assert_eq!(hot["samples"].as_array().unwrap().len(), 5, "{hot}");
            assert!(hot["min"].as_f64().unwrap() > 0.0, "{hot}");
            let cold = find("cold_factor", model, Some(msg));
            assert_eq!(cold["unit"], "ratio");
            assert!(cold["min"].as_f64().unwrap() > 0.0, "{cold}");
            // what T_sip owes to another worker or a locked shard
            for frac in ["overlapped", "lock_contended"] {
                let f = find(frac, model, Some(msg));
                assert_eq!(f["unit"], "fraction");
                let (lo, hi) = (f["min"].as_f64().unwrap(), f["max"].as_f64().unwrap());
                assert!(
                    (0.0..=1.0).contains(&lo) && (0.0..=1.0).contains(&hi),
                    "{f}"
                );
            }
            if find("overlapped", model, Some(msg))["min"].as_f64() < Some(1.0) {
                find("t_sip_alone", model, Some(msg));
            }
        }
        find("k_snd", model, Some("invite"));
        let ok = find("calls_succeeded", model, None);
        assert_eq!(
            ok["min"].as_f64(),
            Some(CALLS as f64),
            "every call of every run succeeded: {ok}"
        );
        assert_eq!(find("calls_failed", model, None)["max"].as_f64(), Some(0.0));
        assert_eq!(
            find("calls_attempted", model, None)["median"].as_f64(),
            Some(CALLS as f64)
        );
        find("drops", model, None);
        find("cpu_per_call", model, None);
        // 1/2 (even) ..= 1 (one worker took all)
        let share = find("busiest_worker_share", model, None);
        let (lo, hi) = (
            share["min"].as_f64().unwrap(),
            share["max"].as_f64().unwrap(),
        );
        assert!(0.5 <= lo && hi <= 1.0, "{share}");
        // the wake order is a parameter of the shared model's rows only
        let wake = &find("t_sip", model, Some("bye"))["params"]["wake"];
        match model {
            "shared" => assert_eq!(wake, "lifo"),
            _ => assert!(wake.is_null(), "{wake}"),
        }
    }
    // The configurations take turns run by run (progress lines read
    // `[  1.2s] sip load: stateful shared x2: run 1/5 ...`).
    let order: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains(": run "))
        .map(|l| l.split(": run ").next().unwrap())
        .map(|l| l.rsplit(": ").next().unwrap())
        .collect();
    let expected: Vec<&str> = (0..5)
        .flat_map(|_| ["stateful shared x2", "stateful batched x2"])
        .collect();
    assert_eq!(order, expected, "{stderr}");
}

#[test]
fn idle_latency_cases_and_sipp_placement() {
    if !can_run_sipp() {
        return;
    }
    let bad = Command::new(env!("CARGO_BIN_EXE_takt"))
        .args(["sip", "load", "--idle-latency", "soon"])
        .output()
        .expect("takt runs");
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("bad idle latency \"soon\""));

    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let limit = || takt_sched::idle_latency_limit().expect("root reads the QoS device");
    let before = root.then(limit);
    const CALLS: u64 = 10;
    let out = Command::new(env!("CARGO_BIN_EXE_takt"))
        .args(["sip", "load", "--json", "--quick", "--mode", "stateless"])
        .args(["--model", "reuseport", "--cps", "40", "--runs", "1"])
        .args(["--calls", &CALLS.to_string(), "--warmup-calls", "0"])
        .args([
            "--idle-latency",
            "none,0",
            "--sipp-cpus",
            "0",
            "--cpus",
            "0",
        ])
        .output()
        .expect("takt runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !root {
        assert!(!out.status.success());
        assert!(
            stderr.contains("idle-latency=0us") && stderr.contains("EACCES"),
            "{stderr}"
        );
        return;
    }
    assert!(out.status.success(), "takt sip load failed:\n{stderr}");
    // the hold ended with the run
    assert_eq!(Some(limit()), before);
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let rows = doc["results"].as_array().unwrap();
    for idle in ["none", "0us"] {
        let t = rows
            .iter()
            .find(|r| {
                r["name"] == "t_sip"
                    && r["params"]["message"] == "invite"
                    && r["params"]["idle_latency"] == idle
            })
            .unwrap_or_else(|| panic!("no t_sip row with idle_latency {idle}"));
        assert_eq!(t["params"]["sipp_cpus"], "0", "{t}");
        assert_eq!(t["params"]["cpus"], "0", "{t}");
        let ok = rows
            .iter()
            .find(|r| r["name"] == "calls_succeeded" && r["params"]["idle_latency"] == idle)
            .unwrap();
        assert_eq!(ok["min"].as_f64(), Some(CALLS as f64), "{ok}");
    }
    assert!(
        stderr.contains("stateless reuseport x2 idle-latency 0us: run 1/1"),
        "{stderr}"
    );
}

/// `--generator takt|sipp` with `--transport tcp|udp`: every call through
/// the in-process proxy completes, and the rows name the generator and the
/// transport.
#[test]
fn generators_and_transports() {
    let sipp = can_run_sipp();
    const CALLS: u64 = 30;
    let mut cases = vec![("takt", "tcp"), ("takt", "udp")];
    if sipp {
        cases.push(("sipp", "tcp"));
    }
    for (generator, transport) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_takt"))
            .args(["sip", "load", "--json", "--mode", "stateful,stateless"])
            .args(["--model", "shared", "--cps", "60", "--runs", "1"])
            .args(["--generator", generator, "--transport", transport])
            .args(["--calls", &CALLS.to_string(), "--warmup-calls", "0"])
            .output()
            .expect("takt runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "{generator} over {transport}:\n{stderr}"
        );
        let doc: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("stdout is one JSON document ({e}):\n{stderr}"));
        let rows = doc["results"].as_array().unwrap();
        for mode in ["stateful", "stateless"] {
            let row = |name: &str, message: Option<&str>| -> &Value {
                rows.iter()
                    .find(|r| {
                        r["name"] == name
                            && r["params"]["mode"] == mode
                            && message.is_none_or(|m| r["params"]["message"] == m)
                    })
                    .unwrap_or_else(|| panic!("no row {name} {mode} {message:?}"))
            };
            let ok = row("calls_succeeded", None);
            assert_eq!(
                ok["median"].as_f64(),
                Some(CALLS as f64),
                "{generator} over {transport}, {mode}: {ok}\n{stderr}"
            );
            assert_eq!(row("calls_failed", None)["median"].as_f64(), Some(0.0));
            for msg in ["invite", "ack", "bye", "2xx"] {
                let t = row("t_sip", Some(msg));
                assert_eq!(t["params"]["generator"], generator, "{t}");
                assert_eq!(t["params"]["transport"], transport, "{t}");
                assert!(t["median"].as_f64().unwrap() > 0.0, "{t}");
            }
            // the generator's threads are not the proxy's CPU time
            let cpu = row("cpu_per_call", None)["median"].as_f64().unwrap();
            assert!(cpu > 0.0 && cpu.is_finite(), "{cpu}");
        }
        let note = doc["notes"][0].as_str().unwrap();
        assert!(
            note.contains(&format!("over {}", transport.to_uppercase())),
            "{note}"
        );
    }
    let bad = Command::new(env!("CARGO_BIN_EXE_takt"))
        .args(["sip", "load", "--generator", "kamailio"])
        .output()
        .expect("takt runs");
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown generator"));
}
