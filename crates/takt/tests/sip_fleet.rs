//! `takt sip sweep`, `torture` and `capacity` with `--fleet`: a NATS
//! server nobody answers at fails the command at once with what it could
//! not reach and exit status 1, before any server starts — no process of
//! its group is left behind; every torture scenario is taken.

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// A port on 127.0.0.1 that nothing listens on.
fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Processes in process group `pgid`, from /proc.
fn group_members(pgid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // after the command name's closing parenthesis: state ppid pgrp
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        if rest.split(' ').nth(2) == Some(&pgid.to_string()) {
            out.push(pid);
        }
    }
    out
}

/// Runs `takt sip ARGS` in a process group of its own; returns its
/// output once it has ended, and checks that nothing of its group is left.
fn takt_sip(args: &[&str]) -> Output {
    let dir = std::env::temp_dir().join(format!("takt-fleet-cli-{}", std::process::id()));
    let child = Command::new(env!("CARGO_BIN_EXE_takt"))
        .arg("sip")
        .args(args)
        .env("TAKT_DB", dir.join("runs.db"))
        .current_dir(std::env::temp_dir())
        .process_group(0)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pgid = child.id();
    let t0 = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        t0.elapsed() < Duration::from_secs(20),
        "{args:?} took {:?}",
        t0.elapsed()
    );
    assert_eq!(
        group_members(pgid),
        Vec::<u32>::new(),
        "{args:?} left processes"
    );
    let _ = std::fs::remove_dir_all(&dir);
    out
}

#[test]
fn an_unreachable_fleet_fails_sweep_torture_and_capacity_at_once() {
    let url = format!("nats://127.0.0.1:{}", closed_port());
    let out_dir = std::env::temp_dir().join(format!("takt-fleet-sweep-{}", std::process::id()));
    let out_arg = out_dir.to_str().unwrap();
    for args in [
        &[
            "sweep",
            "--target",
            "takt",
            "--workers",
            "2",
            "--profile",
            "default",
            "--out",
            out_arg,
            "--fleet",
            &url,
        ][..],
        &[
            "torture",
            "--scenario",
            "soak",
            "--capacity",
            "500",
            "--fleet",
            &url,
        ],
        &["capacity", "--target", "null-relay", "--fleet", &url],
    ] {
        let o = takt_sip(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains(&format!("takt: fleet: cannot connect to {url}")),
            "{args:?}: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
fn torture_takes_every_scenario_on_a_fleet() {
    let url = format!("nats://127.0.0.1:{}", closed_port());
    // no scenario is refused: each fails at the unreachable fleet
    for scenario in [
        "overload",
        "uas-restart",
        "garbage",
        "conn-flood",
        "soak",
        "overload,uas-restart,garbage,soak,conn-flood",
    ] {
        let o = takt_sip(&[
            "torture",
            "--scenario",
            scenario,
            "--capacity",
            "500",
            "--fleet",
            &url,
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{scenario}: {err}");
        assert!(
            err.contains(&format!("takt: fleet: cannot connect to {url}")),
            "{scenario}: {err}"
        );
    }
    // the default scenarios too, their capacity searched on the fleet
    let o = takt_sip(&["torture", "--fleet", &url]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("takt: fleet: cannot connect to {url}")),
        "{err}"
    );
    // the UAS is the fleet's, on its agent's host
    let uas = ["--uas", "127.0.0.1:5070", "--fleet", &url];
    for cmd in [
        &["torture", "--scenario", "soak"][..],
        &["sweep", "--target", "takt"],
    ] {
        let o = takt_sip(&[cmd, &uas[..]].concat());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{cmd:?}: {err}");
        assert!(
            err.contains("--uas is for the local generator"),
            "{cmd:?}: {err}"
        );
    }
}
