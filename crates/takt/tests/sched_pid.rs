//! `takt sched --pid`: a policy applied to every thread of a running,
//! multi-threaded process (a `takt sip proxy` with three workers), read
//! back, as a table and as JSON.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Proxy(Child);

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The names of the process's threads.
fn thread_names(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| std::fs::read_to_string(e.path().join("comm")).ok())
                .map(|n| n.trim_end().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn proxy() -> Proxy {
    let child = Command::new(env!("CARGO_BIN_EXE_takt"))
        .args(["sip", "proxy", "--listen", "127.0.0.1:0", "--no-tcp"])
        .args(["--next-hop", "127.0.0.1:9", "--workers", "3"])
        .args(["--stats", "off", "--interval", "0", "--duration", "60"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("takt runs");
    let p = Proxy(child);
    let deadline = Instant::now() + Duration::from_secs(20);
    // ready once its three workers and its timer run
    loop {
        let names = thread_names(p.0.id());
        let want = ["sip-w0", "sip-w1", "sip-w2", "sip-timer"];
        if want.iter().all(|w| names.iter().any(|n| n == w)) {
            // threads of its start-up come and go: let them finish
            std::thread::sleep(Duration::from_millis(300));
            return p;
        }
        assert!(Instant::now() < deadline, "the proxy's threads: {names:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn sched(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_takt"))
        .arg("sched")
        .args(args)
        .output()
        .expect("takt runs")
}

#[test]
fn applies_to_every_thread_and_reads_back() {
    let p = proxy();
    let pid = p.0.id().to_string();
    let out = sched(&["--pid", &pid, "--sched", "other:slice=250us", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["applied"], "other:slice=250us");
    assert_eq!(v["all_match"], true);
    let ts = v["threads"].as_array().unwrap();
    assert!(ts.len() >= 4, "{v:#}");
    assert!(
        ts.iter().all(|t| t["after"]["slice_ns"] == 250_000),
        "{v:#}"
    );
    // reading only: the table shows the slice now in force
    let out = sched(&["--pid", &pid]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("pid {pid}:")), "{text}");
    // the title, the headers, the rule under them, then a row per thread
    let rows: Vec<&str> = text.lines().skip(3).collect();
    assert!(rows.len() >= 4, "{text}");
    assert!(
        rows.iter().all(|r| r.matches("250us").count() == 2),
        "{text}"
    );
    // back to the default
    let out = sched(&["--pid", &pid, "--sched", "other", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["all_match"], true, "{v:#}");
}

#[test]
fn a_missing_process_is_a_clear_error() {
    let out = sched(&["--pid", "2147483646", "--sched", "batch"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("ESRCH") && err.contains("2147483646"), "{err}");
}
