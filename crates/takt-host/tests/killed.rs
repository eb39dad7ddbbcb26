//! A run killed outright (SIGKILL: nothing of it runs again) leaves its
//! machine-wide changes in place; the next start repairs them from the one
//! journal. The killed run is this test binary again, started with
//! `TAKT_HOST_KILLED_CHILD` naming its scratch folder and
//! `TAKT_STATE_DIR` a journal folder of its own: it makes one change of
//! every kind it can (namespaces, veth pairs with RPS masks and cgroups
//! only as root), says so in a file, and waits to be killed.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use takt_host::cleanup::{self, Item};
use takt_host::netns::{is_root, Veth, VethSpec};
use takt_host::settings::SystemSettings;

/// Names the child's scratch folder; set only in the child.
const CHILD_VAR: &str = "TAKT_HOST_KILLED_CHILD";
/// How long the parent waits for the child to be ready.
const READY_WITHIN: Duration = Duration::from_secs(60);

/// What the child made, one `kind value` line each (written last).
fn ready_file(dir: &Path) -> PathBuf {
    dir.join("ready")
}

fn veth_spec(pid: u32) -> VethSpec {
    VethSpec {
        namespace: format!("takt-killtest-{pid}"),
        root_dev: format!("tkkt{:x}a", pid % 0x100000),
        ns_dev: format!("tkkt{:x}b", pid % 0x100000),
        root_ip: "10.216.0.1".parse().unwrap(),
        ns_ip: "10.216.0.2".parse().unwrap(),
        sudo: false,
    }
}

fn ip(args: &[&str]) -> Option<String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A cgroup hierarchy this process can make groups in (v2, or v1's cpu).
fn cgroup_root() -> Option<&'static Path> {
    ["/sys/fs/cgroup", "/sys/fs/cgroup/cpu"]
        .into_iter()
        .map(Path::new)
        .find(|r| r.join("cgroup.procs").is_file())
}

/// The killed run: not a test of its own (returns at once unless started
/// by `a_killed_runs_changes_are_repaired_at_the_next_start`).
#[test]
fn child_makes_changes_and_waits() {
    let Some(dir) = std::env::var_os(CHILD_VAR).map(PathBuf::from) else {
        return;
    };
    let mut made = Vec::new();
    // a scratch directory and a file
    let (scratch, g) = cleanup::scratch_dir(&dir, "scratch").unwrap();
    std::mem::forget(g);
    made.push(format!("dir {}", scratch.display()));
    let file = dir.join("file");
    std::fs::write(&file, "x").unwrap();
    std::mem::forget(cleanup::register(Item::File(file.clone())));
    made.push(format!("file {}", file.display()));
    // a command that undoes something
    let marker = dir.join("marker");
    std::fs::write(&marker, "x").unwrap();
    std::mem::forget(cleanup::register(Item::Command(vec![
        "rm".into(),
        "-f".into(),
        marker.display().to_string(),
    ])));
    made.push(format!("command {}", marker.display()));
    // a setting (a file standing in for a sysctl or debugfs knob)
    let knob = dir.join("knob");
    let mut sys = SystemSettings::new().unwrap();
    sys.set(&knob, "5").unwrap();
    made.push(format!("write {}", knob.display()));
    // an idle-latency hold (not journaled: the kernel drops it at exit)
    if let Ok(g) = cleanup::hold_idle(Duration::from_micros(50)) {
        std::mem::forget(g);
    }
    if is_root() {
        // a cgroup holding this process
        if let Some(root) = cgroup_root() {
            let group = root.join(format!("takt-killtest-{}", std::process::id()));
            if std::fs::create_dir(&group).is_ok() {
                std::mem::forget(cleanup::register(Item::Cgroup {
                    dir: group.clone(),
                    parent: root.to_path_buf(),
                }));
                let _ = std::fs::write(group.join("cgroup.procs"), std::process::id().to_string());
                made.push(format!("cgroup {}", group.display()));
            }
        }
        // a namespace behind a veth pair, with an RPS mask on the root side
        if ip(&["netns", "list"]).is_some() {
            let spec = veth_spec(std::process::id());
            if let Ok(mut v) = Veth::create(spec.clone()) {
                let cpus = "0".parse().unwrap();
                v.set_rps(&cpus, &cpus).unwrap();
                std::mem::forget(v);
                made.push(format!("netns {}", spec.namespace));
                made.push(format!("link {}", spec.root_dev));
            }
        }
    }
    std::mem::forget(sys);
    let ready = ready_file(&dir);
    std::fs::write(ready.with_extension("tmp"), made.join("\n")).unwrap();
    std::fs::rename(ready.with_extension("tmp"), &ready).unwrap();
    std::thread::sleep(Duration::from_secs(120));
}

#[test]
fn a_killed_runs_changes_are_repaired_at_the_next_start() {
    if std::env::var_os(CHILD_VAR).is_some() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("takt-host-killed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let state = dir.join("state");
    std::fs::write(dir.join("knob"), "100").unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_makes_changes_and_waits", "--nocapture"])
        .env(CHILD_VAR, &dir)
        .env(cleanup::STATE_DIR_VAR, &state)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !ready_file(&dir).exists() {
        if started.elapsed() > READY_WITHIN || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the child did not get ready");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let made = std::fs::read_to_string(ready_file(&dir)).unwrap();
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let made: Vec<(&str, &str)> = made.lines().map(|l| l.split_once(' ').unwrap()).collect();
    // everything is still there, named by the dead run's journal
    let journal = state.join(format!("cleanup-{}.json", child.id()));
    assert!(journal.exists(), "no journal {}", journal.display());
    let namespaces = || ip(&["netns", "list"]).unwrap_or_default();
    let links = || ip(&["-o", "link", "show"]).unwrap_or_default();
    for (kind, what) in &made {
        let there = match *kind {
            "netns" => namespaces().contains(what),
            "link" => links().contains(what),
            "write" => std::fs::read_to_string(what).unwrap() == "5",
            _ => Path::new(what).exists(),
        };
        assert!(there, "{kind} {what} is gone before the repair");
    }
    // the next start repairs it
    let undone = cleanup::repair(&state).unwrap();
    assert!(!journal.exists());
    for (kind, what) in &made {
        let gone = match *kind {
            "netns" => !namespaces().contains(what),
            "link" => !links().contains(what),
            "write" => std::fs::read_to_string(what).unwrap() == "100",
            _ => !Path::new(what).exists(),
        };
        assert!(gone, "{kind} {what} is still there after the repair");
    }
    let kinds: Vec<&str> = made.iter().map(|(k, _)| *k).collect();
    eprintln!("repaired {kinds:?}: {undone:?}");
    if is_root() {
        assert!(
            undone.iter().any(|i| matches!(i, Item::Write { path, .. }
                if path.ends_with("rps_cpus")))
                == kinds.contains(&"link"),
            "the root side's RPS mask is a journal item: {undone:?}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
