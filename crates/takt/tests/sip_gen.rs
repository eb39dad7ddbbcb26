//! `takt sip gen`'s scheduling policy end to end: without the right to a
//! real-time policy the generator runs at the default policy (the one it
//! inherits), says so once, and its document records the policy it got.

use std::process::Command;

/// `takt ARGS` without CAP_SYS_NICE and with RLIMIT_RTPRIO 0: as user
/// nobody when run as root (root keeps CAP_SYS_NICE whatever its limits).
fn unprivileged(args: &[&str]) -> Command {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let mut c = if root {
        let mut c = Command::new("setpriv");
        c.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
            "--",
            "prlimit",
        ]);
        c
    } else {
        Command::new("prlimit")
    };
    c.args(["--rtprio=0:0", "--", env!("CARGO_BIN_EXE_takt")]);
    c.args(args);
    c
}

#[test]
fn without_permission_the_generator_runs_at_sched_other_and_says_so_once() {
    let out = unprivileged(&[
        "sip",
        "gen",
        "--role",
        "uas",
        "--uas-listen",
        "127.0.0.1:0",
        "--duration",
        "300ms",
        "--json",
    ])
    .output()
    .expect("setpriv and prlimit (util-linux) run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        stderr.matches("generator at SCHED_OTHER").count(),
        1,
        "{stderr}"
    );
    assert!(
        stderr.contains("run as root or with CAP_SYS_NICE"),
        "{stderr}"
    );
    assert!(stderr.contains("RLIMIT_RTPRIO 0 < 10"), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let rows = doc["results"].as_array().unwrap();
    assert!(!rows.is_empty(), "{doc}");
    // the policy it got: this process's, which it inherits (`other`, or
    // `idle` under `chrt -i 0 cargo test`)
    let own = takt_sched::current_policy().unwrap().to_string();
    assert!(
        rows.iter()
            .all(|r| r["params"]["gen_sched"] == own.as_str()),
        "{doc}"
    );
    let notes = doc["notes"].to_string();
    assert_eq!(
        notes.matches("generator at SCHED_OTHER").count(),
        1,
        "{notes}"
    );
}
