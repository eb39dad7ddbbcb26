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
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("exactly one JSON document");
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
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
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
