//! `takt sip capacity` end to end on a small scale: the null relay under
//! the native generator, a result document with its rows, no server left
//! behind, and bad flags refused.

use std::process::Command;

/// PIDs of the null relays running now (started by any `takt sip capacity`).
fn relay_pids() -> Vec<String> {
    let ps = Command::new("ps")
        .args(["-eo", "pid=,args="])
        .output()
        .unwrap();
    String::from_utf8_lossy(&ps.stdout)
        .lines()
        .filter(|l| l.contains("sip relay") && l.contains("--uas"))
        .map(|l| l.split_whitespace().next().unwrap_or("").to_string())
        .collect()
}

#[test]
fn a_small_capacity_run_gives_a_document() {
    // Relays of other runs on the machine (a measurement beside the tests)
    // are not this run's leftovers.
    let before = relay_pids();
    let out = Command::new(env!("CARGO_BIN_EXE_takt"))
        .args(["sip", "capacity", "--target", "null-relay", "--json"])
        .args(["--start-cps", "100", "--max-cps", "200", "--window", "0.3"])
        .args(["--reps", "2"])
        .output()
        .expect("takt runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(doc["suite"], "sip_capacity");
    let rows = doc["results"].as_array().unwrap();
    let cap = rows
        .iter()
        .find(|r| r["name"] == "capacity")
        .unwrap_or_else(|| panic!("no capacity row: {doc}"));
    assert_eq!(cap["impl"], "null-relay");
    assert_eq!(cap["unit"], "cps");
    assert_eq!(cap["params"]["net"], "loopback");
    assert!(cap["detail"]["capacity"].is_string(), "{cap}");
    // the relay it started is gone
    let left: Vec<String> = relay_pids()
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect();
    assert!(left.is_empty(), "relays left behind: {left:?}");
}

#[test]
fn bad_flags_are_refused() {
    for args in [
        &["--net", "wifi"][..],
        &["--mode", "sometimes"],
        &["--target", "nothing"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_takt"))
            .args(["sip", "capacity"])
            .args(args)
            .output()
            .expect("takt runs");
        assert!(!out.status.success(), "{args:?}");
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(e.contains("unknown"), "{args:?}: {e}");
    }
}
