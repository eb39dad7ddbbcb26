//! `takt machine` end to end: the JSON document's shape on a few cheap
//! measurements, and cleanup of files, namespaces and processes after a
//! normal run and after SIGINT. These assert behaviour, never speed.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn takt() -> Command {
    Command::new(env!("CARGO_BIN_EXE_takt"))
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("takt-machine-test-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn netns_list() -> Vec<String> {
    Command::new("ip")
        .args(["netns", "list"])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter_map(|l| l.split_whitespace().next().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn quick_json_has_the_documented_shape() {
    let out_dir = temp_dir("shape-out");
    let scratch = temp_dir("shape-scratch");
    let out = takt()
        .args([
            "machine",
            "--quick",
            "--only",
            "timer,syscall",
            "--json",
            "--out",
        ])
        .arg(&out_dir)
        .arg("--scratch")
        .arg(&scratch)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let doc = succeeded_json(&out);
    assert_eq!(doc["suite"], "machine");
    assert_eq!(doc["mode"], "quick");
    assert!(doc["machine"]["cpus"].as_u64().unwrap() >= 1);
    assert!(doc["description"]["cpu"]["logical"].as_u64().unwrap() >= 1);
    assert!(doc["description"]["kernel"].as_str().is_some());
    let results = doc["results"].as_array().unwrap();
    let names: Vec<&str> = results
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    for want in [
        "timer_fenced",
        "timer_cpuid",
        "syscall_getpid",
        "syscall_getcwd",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    assert!(
        !names.iter().any(|n| n.starts_with("mem_")),
        "--only ignored: {names:?}"
    );
    for r in results {
        assert_eq!(r["impl"], "takt");
        assert!(r["params"].is_object());
        assert!(r["unit"].as_str().is_some());
        assert!(r["better"] == "lower" || r["better"] == "higher");
        for k in ["median", "min", "max", "mean", "stddev", "cpu_s"] {
            assert!(r[k].as_f64().is_some(), "{k} in {r}");
        }
        assert!(r["runs"].as_u64().unwrap() >= 5, "{r}");
        assert_eq!(r["ci95"].as_array().unwrap().len(), 2);
        assert_eq!(
            r["samples"].as_array().unwrap().len() as u64,
            r["runs"].as_u64().unwrap()
        );
        let d = &r["detail"];
        assert!(d["method"].as_str().is_some_and(|m| !m.is_empty()), "{r}");
        assert!(d["estimate"].as_f64().is_some(), "{r}");
        assert!(d["estimate_model"].as_str().is_some(), "{r}");
        assert!(d["p99"].as_f64().is_some());
        assert!(d["outliers_removed"].as_u64().is_some());
        assert!(d["samples_total"].as_u64().unwrap() >= r["runs"].as_u64().unwrap());
        assert!(r["min"].as_f64() <= r["median"].as_f64());
        assert!(r["median"].as_f64() <= r["max"].as_f64());
    }
    // nothing left behind but the (empty here) plot directory
    assert!(entries(&scratch).is_empty(), "{:?}", entries(&scratch));
    std::fs::remove_dir_all(out_dir).unwrap();
    std::fs::remove_dir_all(scratch).unwrap();
}

#[test]
fn human_report_and_bad_only() {
    let out_dir = temp_dir("human-out");
    let out = takt()
        .args(["machine", "--quick", "--only", "timer", "--out"])
        .arg(&out_dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("cpu:") && text.contains("timer_fenced"),
        "{text}"
    );
    assert!(text.contains("estimate"), "{text}");
    // the CSE 221 report's figure beside the measured one (timer_fenced
    // has one), with the measured value over it
    assert!(
        text.contains("CSE 221 (ns)") && text.contains("÷ CSE 221") && text.contains("36.5"),
        "{text}"
    );
    let bad = takt()
        .args(["machine", "--only", "bogus"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown measurement `bogus`"));
    std::fs::remove_dir_all(out_dir).unwrap();
}

#[test]
fn files_namespaces_and_peers_are_cleaned_up() {
    let out_dir = temp_dir("clean-out");
    let scratch = temp_dir("clean-scratch");
    let before = netns_list();
    let out = takt()
        .args([
            "machine",
            "--quick",
            "--only",
            "pagefault,net",
            "--json",
            "--out",
        ])
        .arg(&out_dir)
        .arg("--scratch")
        .arg(&scratch)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let doc = succeeded_json(&out);
    let names: Vec<&str> = doc["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"page_fault"), "{names:?}");
    assert!(names.contains(&"tcp_rtt"), "{names:?}");
    // The namespace host is measured as root, or skipped with a reason.
    let netns_measured = doc["results"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["params"]["peer"] == "netns");
    let netns_skipped = doc["skipped"]
        .as_array()
        .is_some_and(|s| s.iter().any(|k| k["name"] == "net netns"));
    assert!(netns_measured || netns_skipped, "{}", doc["skipped"]);
    assert!(
        entries(&scratch).is_empty(),
        "left behind: {:?}",
        entries(&scratch)
    );
    let after = netns_list();
    let leaked: Vec<&String> = after
        .iter()
        .filter(|n| n.starts_with("takt-m") && !before.contains(n))
        .collect();
    assert!(leaked.is_empty(), "namespaces left: {leaked:?}");
    std::fs::remove_dir_all(out_dir).unwrap();
    std::fs::remove_dir_all(scratch).unwrap();
}

#[test]
fn sigint_cleans_up_scratch_files() {
    let out_dir = temp_dir("int-out");
    let scratch = temp_dir("int-scratch");
    let mut child = takt()
        .args(["machine", "--quick", "--only", "fs", "--json", "--out"])
        .arg(&out_dir)
        .arg("--scratch")
        .arg(&scratch)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until it has created something to clean up.
    let t0 = Instant::now();
    while entries(&scratch).is_empty() && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !entries(&scratch).is_empty(),
        "the run created no scratch files"
    );
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}");
    assert!(
        entries(&scratch).is_empty(),
        "left behind: {:?}",
        entries(&scratch)
    );
    std::fs::remove_dir_all(out_dir).unwrap();
    std::fs::remove_dir_all(scratch).unwrap();
}

/// Asserts that the command succeeded (its stderr as the message) and
/// parses its stdout as the one JSON document it prints.
/// `--compare` pairs takt and the tool run for run: every comparison with
/// interleaved runs carries the median of the paired ratios, the tool's row
/// its takt runs, one per tool run. (No verdict asserted: that is speed.)
#[test]
fn compare_pairs_takt_and_perf_run_for_run() {
    let out = takt()
        .args([
            "machine",
            "--quick",
            "--only",
            "syscall,ctxsw",
            "--compare",
            "--json",
        ])
        .output()
        .unwrap();
    let doc = succeeded_json(&out);
    let cmp = doc["comparisons"].as_array().expect("comparisons");
    let names: Vec<&str> = cmp.iter().filter_map(|c| c["name"].as_str()).collect();
    assert!(
        names.iter().any(|n| n.starts_with("syscall_getppid"))
            && names.iter().any(|n| n.starts_with("ctxsw_process")),
        "{names:?}"
    );
    for c in cmp {
        assert_eq!(c["tool"], "perf-bench", "{c}");
        let r = c["ratio_interleaved"].as_f64().expect("paired ratio");
        assert!(r.is_finite() && r > 0.0, "{c}");
        assert!(c["within_15pct"].is_boolean(), "{c}");
    }
    let tool_rows: Vec<&Value> = rows(&doc)
        .iter()
        .filter(|r| r["impl"] == "perf-bench")
        .collect();
    assert_eq!(tool_rows.len(), 2);
    for r in tool_rows {
        let ours = r["detail"]["takt_interleaved"]
            .as_array()
            .expect("takt runs");
        assert_eq!(
            Some(ours.len() as u64),
            r["detail"]["samples_total"].as_u64(),
            "one takt run per tool run: {r}"
        );
        assert!(ours.len() >= 5, "{r}");
    }
}

fn succeeded_json(out: &std::process::Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("exactly one JSON document")
}

fn rows(doc: &Value) -> &Vec<Value> {
    doc["results"].as_array().unwrap()
}

/// A port free for both TCP and UDP on 127.0.0.1.
fn free_port() -> u16 {
    for _ in 0..50 {
        let t = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = t.local_addr().unwrap().port();
        if std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no port free for both TCP and UDP");
}

/// Kills the `--serve` peer even when an assertion fails.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn remote_against_a_serve_peer() {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let peer = KillOnDrop(
        takt()
            .args(["machine", "--serve", &addr])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let t0 = Instant::now();
    while std::net::TcpStream::connect(&addr).is_err() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the --serve peer never listened on {addr}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let out_dir = temp_dir("remote-out");
    let out = takt()
        .args([
            "machine", "--quick", "--only", "net", "--remote", &addr, "--json", "--out",
        ])
        .arg(&out_dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let doc = succeeded_json(&out);
    let remote: Vec<&Value> = rows(&doc)
        .iter()
        .filter(|r| r["params"]["peer"] == "remote")
        .collect();
    let names: Vec<&str> = remote.iter().map(|r| r["name"].as_str().unwrap()).collect();
    for want in [
        "tcp_rtt",
        "udp_rtt",
        "tcp_bandwidth",
        "tcp_connect",
        "tcp_teardown",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    for r in &remote {
        assert!(r["median"].as_f64().unwrap() > 0.0, "{r}");
    }
    // The remote's CPUs are not ours: only the sender is pinned.
    let bw = remote
        .iter()
        .find(|r| r["name"] == "tcp_bandwidth")
        .unwrap();
    assert_eq!(bw["params"]["placement"], "sender_pinned");
    // The peer is still serving after the run (the run does not stop it).
    assert!(std::net::TcpStream::connect(&addr).is_ok());
    drop(peer);
    std::fs::remove_dir_all(out_dir).unwrap();
}

#[test]
fn nfs_path_is_read_with_o_direct() {
    // CI cannot mount NFS (no NFS in its kernel): the --nfs code path runs
    // on a local file, which is what it reads on a real mount too.
    let scratch = temp_dir("nfs-scratch");
    let out_dir = temp_dir("nfs-out");
    let data = temp_dir("nfs-data");
    let file = data.join("remote.dat");
    std::fs::write(&file, vec![0x5au8; 8 << 20]).unwrap();
    let out = takt()
        .args([
            "machine",
            "--quick",
            "--only",
            "fs",
            "--max-file",
            "64M",
            "--json",
            "--nfs",
        ])
        .arg(&file)
        .arg("--scratch")
        .arg(&scratch)
        .arg("--out")
        .arg(&out_dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let doc = succeeded_json(&out);
    let nfs: Vec<&Value> = rows(&doc)
        .iter()
        .filter(|r| r["name"] == "disk_read" && r["params"]["location"] == "nfs")
        .collect();
    // 4 KiB sequential and random, 1 MiB into 4 KiB pages, and 1 MiB into
    // a huge page when THP grants one (a skip with the reason otherwise).
    let huge = nfs
        .iter()
        .filter(|r| r["params"]["buffer"] == "huge_page")
        .count();
    let huge_skipped = doc["skipped"].as_array().is_some_and(|s| {
        s.iter()
            .any(|k| k["name"] == "disk_read sequential_1m huge_page nfs")
    });
    assert_eq!(nfs.len() - huge, 3, "{}", doc["skipped"]);
    assert!(huge == 1 || huge_skipped, "{}", doc["skipped"]);
    for r in &nfs {
        assert!(r["median"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["detail"]["method"].as_str().unwrap().contains("O_DIRECT"));
    }
    let skipped_nfs = doc["skipped"]
        .as_array()
        .is_some_and(|s| s.iter().any(|k| k["name"] == "nfs_read"));
    assert!(!skipped_nfs, "{}", doc["skipped"]);
    // The user's file is read, never removed; our scratch files are.
    assert!(file.exists());
    assert!(entries(&scratch).is_empty(), "{:?}", entries(&scratch));
    // A bad --nfs path is a skip with the reason, not a failure.
    let bad = takt()
        .args([
            "machine",
            "--quick",
            "--only",
            "fs",
            "--max-file",
            "64M",
            "--json",
            "--nfs",
            "/nonexistent/takt-nfs",
            "--scratch",
        ])
        .arg(&scratch)
        .arg("--out")
        .arg(&out_dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(bad.status.success());
    let doc: Value = serde_json::from_slice(&bad.stdout).unwrap();
    let reason = doc["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["name"] == "nfs_read")
        .map(|k| k["reason"].as_str().unwrap().to_string())
        .unwrap();
    assert!(reason.contains("/nonexistent/takt-nfs"), "{reason}");
    for d in [scratch, out_dir, data] {
        std::fs::remove_dir_all(d).unwrap();
    }
}

#[test]
fn full_mode_with_only_and_a_small_max_file() {
    let scratch = temp_dir("full-scratch");
    let out_dir = temp_dir("full-out");
    let out = takt()
        .args([
            "machine",
            "--full",
            "--only",
            "fs",
            "--max-file",
            "64M",
            "--json",
            "--scratch",
        ])
        .arg(&scratch)
        .arg("--out")
        .arg(&out_dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let doc = succeeded_json(&out);
    assert_eq!(doc["mode"], "full");
    let rs = rows(&doc);
    // The sweep stops at --max-file: one 64 MiB point, and a lower bound.
    let sweep: Vec<u64> = rs
        .iter()
        .filter(|r| r["name"] == "file_cache_read")
        .map(|r| r["params"]["file_mib"].as_u64().unwrap())
        .collect();
    assert_eq!(sweep, [64]);
    let size = rs.iter().find(|r| r["name"] == "file_cache_size").unwrap();
    assert_eq!(size["detail"]["lower_bound"], true, "{size}");
    assert_eq!(size["median"].as_f64(), Some(64.0));
    // Full mode's contention sweep: 1..10 readers.
    let readers: Vec<u64> = rs
        .iter()
        .filter(|r| r["name"] == "fs_contention")
        .map(|r| r["params"]["readers"].as_u64().unwrap())
        .collect();
    assert_eq!(readers, (1..=10).collect::<Vec<u64>>());
    assert!(!rs.iter().any(|r| r["name"] == "tcp_rtt"), "--only ignored");
    // The contention plot is written.
    assert!(
        doc["plots"].as_array().is_some_and(
            |p| !p.is_empty() && p.iter().all(|f| Path::new(f.as_str().unwrap()).exists())
        ),
        "{}",
        doc["plots"]
    );
    assert!(entries(&scratch).is_empty(), "{:?}", entries(&scratch));
    std::fs::remove_dir_all(scratch).unwrap();
    std::fs::remove_dir_all(out_dir).unwrap();
}

#[test]
fn repeat_reports_the_spread_of_medians() {
    let out_dir = temp_dir("repeat-out");
    let out = takt()
        .args([
            "machine",
            "--quick",
            "--repeat",
            "2",
            "--only",
            "timer,call",
            "--json",
            "--out",
        ])
        .arg(&out_dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let doc = succeeded_json(&out);
    let rep = &doc["repeatability"];
    assert_eq!(rep["runs"], 2);
    assert_eq!(rep["tolerance"], 0.1);
    let rrows = rep["rows"].as_array().unwrap();
    assert_eq!(rrows.len(), rows(&doc).len());
    let mut calls = 0;
    for r in rrows {
        let m = r["medians"].as_array().unwrap();
        assert_eq!(m.len(), 2, "{r}");
        let (a, b) = (m[0].as_f64().unwrap(), m[1].as_f64().unwrap());
        let spread = r["spread"].as_f64().unwrap();
        // Every row, procedure calls included, by one rule.
        if a > 0.0 && b > 0.0 {
            assert!((spread - (a.max(b) / a.min(b) - 1.0)).abs() < 1e-9, "{r}");
            assert_eq!(r["within_10pct"], spread <= 0.1, "{r}");
        }
        if r["name"] == "procedure_call" {
            calls += 1;
            assert_eq!(r["family"], "call");
        } else {
            assert_eq!(r["family"], "timer");
        }
        assert_eq!(r["cpu_memory"], true);
    }
    assert_eq!(calls, 8);
    let within = rrows.iter().filter(|r| r["within_10pct"] == true).count();
    assert_eq!(rep["cpu_memory_within"].as_u64(), Some(within as u64));
    // The human form has the table.
    let text = takt()
        .args([
            "machine", "--quick", "--repeat", "2", "--only", "timer", "--out",
        ])
        .arg(&out_dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(text.status.success());
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("repeatability over 2 runs"), "{text}");
    // --repeat 1 is refused with a precise error.
    let bad = takt().args(["machine", "--repeat", "1"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--repeat"));
    std::fs::remove_dir_all(out_dir).unwrap();
}
