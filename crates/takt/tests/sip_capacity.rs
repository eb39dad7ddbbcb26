//! `takt sip capacity` end to end on a small scale: the null relay, takt
//! and Kamailio under the native generator, a result document with its
//! rows, no server left behind, and bad flags refused. Kamailio comes from
//! `scripts/setup.sh`; missing, the run fails.

use std::process::Command;

/// PIDs of the null relays running now (started by any `takt sip capacity`).
fn relay_pids() -> Vec<String> {
    pids_of(|l| l.contains("sip relay") && l.contains("--uas"))
}

/// PIDs of the servers the capacity run with process id `run` started:
/// takt proxies and Kamailio with their lab directory named after it
/// (`takt-siplab-takt-RUN-…`). Other runs on the machine are not counted —
/// the null relay of the test beside this one (running at the same time)
/// among them: a relay's command line does not name its run.
fn server_pids(run: u32) -> Vec<String> {
    let dir = |kind: &str| format!("takt-siplab-{kind}-{run}-");
    pids_of(|l| {
        (l.contains("sip proxy") && l.contains(&dir("takt")))
            || (l.contains("kamailio") && l.contains(&dir("kamailio")))
    })
}

fn pids_of(matches: impl Fn(&str) -> bool) -> Vec<String> {
    let ps = Command::new("ps")
        .args(["-eo", "pid=,args="])
        .output()
        .unwrap();
    String::from_utf8_lossy(&ps.stdout)
        .lines()
        .filter(|l| matches(l))
        .map(|l| l.split_whitespace().next().unwrap_or("").to_string())
        .collect()
}

/// A capacity row's figure: its median, or for "< L" / "≥ L" its bound's
/// value, the row then having no statistics (a bound is never a number in
/// `median`); exactly one of the two.
fn capacity_figure(cap: &serde_json::Value) -> f64 {
    match (cap["median"].as_f64(), cap["bound"]["value"].as_f64()) {
        (Some(m), None) => m,
        (None, Some(b)) => {
            for k in ["min", "max", "mean", "ci95"] {
                assert!(cap[k].is_null(), "{k} beside a bound: {cap}");
            }
            assert!(cap["bound"]["limit"].is_string(), "{cap}");
            b
        }
        _ => panic!("a capacity row has a median or a bound: {cap}"),
    }
}

#[test]
fn a_small_capacity_run_gives_a_document() {
    // Relays of other runs on the machine (a measurement beside the tests)
    // are not this run's leftovers.
    let before = relay_pids();
    let out = Command::new(env!("CARGO_BIN_EXE_takt"))
        .args(["sip", "capacity", "--target", "null-relay", "--json"])
        .args(["--start-cps", "100", "--max-cps", "200", "--window", "0.3"])
        .args(["--reps", "2", "--at", "300"])
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
    assert!(capacity_figure(cap) > 0.0, "{cap}");
    // the generator's policy as the kernel applied it, on every row:
    // real-time where permitted, else the default and a warning, once
    let notes = doc["notes"].to_string();
    let warned = notes.matches("generator at SCHED_OTHER").count();
    match cap["params"]["gen_sched"].as_str() {
        Some("fifo:prio=10") => assert_eq!(warned, 0, "{notes}"),
        // the policy it inherits: `other`, or `idle` under `chrt -i 0`
        Some(_) => {
            assert_eq!(warned, 1, "{notes}");
            assert_eq!(stderr.matches("generator at SCHED_OTHER").count(), 1);
        }
        None => panic!("no gen_sched: {cap}"),
    }
    assert!(rows
        .iter()
        .all(|r| r["params"]["gen_sched"] == cap["params"]["gen_sched"]));
    let cpu = rows
        .iter()
        .find(|r| r["name"] == "cpu_per_call" && r["params"]["rate_cps"] == 300.0)
        .unwrap_or_else(|| panic!("no fixed-rate cpu_per_call row: {doc}"));
    assert_eq!(cpu["params"]["workers"], 1);
    assert!(cpu["median"].as_f64().unwrap() > 0.0, "{cpu}");
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

/// The quick run on a reduced scale (one mode, one repetition per grid
/// point, short trials, the search capped at 8,000 cps) — still the real
/// path: both servers started as processes, the generator, the search,
/// the fixed-rate CPU per call, takt's statistics and Kamailio's shared
/// memory read after every trial.
#[test]
fn a_quick_run_against_takt_and_kamailio() {
    let plots = std::env::temp_dir().join(format!("takt-capacity-plot-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_takt"))
        .args(["sip", "capacity", "--quick", "--json"])
        .args([
            "--target", "takt", "--target", "kamailio", "--mode", "stateful",
        ])
        .args(["--reps", "1", "--window", "0.3", "--max-cps", "8000"])
        .args(["--at", "2000"])
        .arg("--plot")
        .arg(&plots)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("takt runs");
    let run = out.id();
    let out = out.wait_with_output().expect("takt runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let svg = std::fs::read_to_string(plots.join("sip_capacity_drop_rate.svg")).expect("a plot");
    assert!(svg.contains("kamailio stateful") && svg.contains("takt stateful"));
    std::fs::remove_dir_all(&plots).unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let rows = doc["results"].as_array().unwrap();
    let find = |name: &str, imp: &str| {
        rows.iter()
            .find(|r| r["name"] == name && r["impl"] == imp)
            .unwrap_or_else(|| panic!("no {name} row of {imp}: {doc}"))
    };
    for imp in ["takt", "kamailio"] {
        let cap = find("capacity", imp);
        assert_eq!(cap["params"]["mode"], "stateful", "{cap}");
        assert!(capacity_figure(cap) > 0.0, "{cap}");
        let cpu = rows
            .iter()
            .find(|r| {
                r["name"] == "cpu_per_call"
                    && r["impl"] == imp
                    && r["params"]["rate_cps"] == 2000.0
                    && r["params"]["workers"] == 1
            })
            .unwrap_or_else(|| panic!("no fixed-rate cpu_per_call of {imp}: {doc}"));
        assert!(cpu["median"].as_f64().unwrap() > 0.0, "{cpu}");
    }
    // Kamailio's shared memory was read at every point and stayed below
    // its limit
    let kam = find("capacity", "kamailio");
    let shm = kam["detail"]["shm_peak_fraction"]
        .as_f64()
        .expect("shm read");
    assert!(shm > 0.0 && shm < 0.95, "{kam}");
    assert_eq!(kam["detail"]["shm_limit_reached"], false, "{kam}");
    // takt's per-kind T_sip per point
    let t_sip = find("t_sip", "takt");
    assert_eq!(t_sip["unit"], "ns");
    assert!(t_sip["params"]["kind"].is_string(), "{t_sip}");
    assert!(rows
        .iter()
        .any(|r| r["name"] == "k_rcv" && r["impl"] == "takt"));
    let left = server_pids(run);
    assert!(left.is_empty(), "servers left behind: {left:?}");
}
