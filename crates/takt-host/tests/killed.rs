//! A run killed outright (SIGKILL: nothing of it runs again) leaves its
//! machine-wide changes in place; the next start repairs them from the one
//! journal. The killed run is this test binary again, started with
//! `TAKT_HOST_KILLED_CHILD` naming its scratch folder and
//! `TAKT_STATE_DIR` a journal folder of its own: it makes one change of
//! every kind it can (namespaces, veth pairs with RPS masks and cgroups
//! only as root), says so in a file, and waits to be killed. The same
//! child with signal handling installed shows that a second SIGINT undoes
//! everything before the process ends (the registry's one hook).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use takt_host::cleanup::{self, Item};
use takt_host::netns::{is_root, Veth, VethSpec};
use takt_host::settings::SystemSettings;

/// Names the child's scratch folder; set only in the child.
const CHILD_VAR: &str = "TAKT_HOST_KILLED_CHILD";
/// Set in a child that installs signal handling first.
const SIGNALS_VAR: &str = "TAKT_HOST_CHILD_SIGNALS";
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
        // a /30 of its own in 10.216.0.0/16
        root_ip: std::net::Ipv4Addr::from(0x0AD8_0000 + (pid % 16_384) * 4 + 1),
        ns_ip: std::net::Ipv4Addr::from(0x0AD8_0000 + (pid % 16_384) * 4 + 2),
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
    if std::env::var_os(SIGNALS_VAR).is_some() {
        takt_measure::cancel::install().unwrap();
    }
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

/// A started child that has made its changes.
struct Child {
    dir: PathBuf,
    state: PathBuf,
    process: std::process::Child,
    /// What it made: (kind, what).
    made: Vec<(String, String)>,
}

fn start_child(tag: &str, signals: bool) -> Child {
    let dir = std::env::temp_dir().join(format!("takt-host-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let state = dir.join("state");
    std::fs::write(dir.join("knob"), "100").unwrap();
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "child_makes_changes_and_waits", "--nocapture"])
        .env(CHILD_VAR, &dir)
        .env(cleanup::STATE_DIR_VAR, &state)
        .stdin(Stdio::null());
    if signals {
        cmd.env(SIGNALS_VAR, "1");
    }
    let mut process = cmd.spawn().unwrap();
    let started = Instant::now();
    while !ready_file(&dir).exists() {
        if started.elapsed() > READY_WITHIN || process.try_wait().unwrap().is_some() {
            let _ = process.kill();
            let _ = process.wait();
            panic!("the child did not get ready");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let made = std::fs::read_to_string(ready_file(&dir))
        .unwrap()
        .lines()
        .map(|l| {
            let (k, w) = l.split_once(' ').unwrap();
            (k.to_string(), w.to_string())
        })
        .collect();
    Child {
        dir,
        state,
        process,
        made,
    }
}

/// Whether the change `kind what` is in place (`true`) or undone.
fn in_place(kind: &str, what: &str) -> bool {
    match kind {
        "netns" => ip(&["netns", "list"]).unwrap_or_default().contains(what),
        "link" => ip(&["-o", "link", "show"])
            .unwrap_or_default()
            .contains(what),
        "write" => std::fs::read_to_string(what).unwrap() == "5",
        _ => Path::new(what).exists(),
    }
}

#[test]
fn a_killed_runs_changes_are_repaired_at_the_next_start() {
    if std::env::var_os(CHILD_VAR).is_some() {
        return;
    }
    let Child {
        dir,
        state,
        mut process,
        made,
    } = start_child("killed", false);
    process.kill().unwrap(); // SIGKILL
    process.wait().unwrap();
    // everything is still there, named by the dead run's journal
    let journal = state.join(format!("cleanup-{}.json", process.id()));
    assert!(journal.exists(), "no journal {}", journal.display());
    for (kind, what) in &made {
        assert!(
            in_place(kind, what),
            "{kind} {what} is gone before the repair"
        );
    }
    // the next start repairs it
    let undone = cleanup::repair(&state).unwrap();
    assert!(!journal.exists());
    for (kind, what) in &made {
        assert!(
            !in_place(kind, what),
            "{kind} {what} is still there after the repair"
        );
    }
    let kinds: Vec<&str> = made.iter().map(|(k, _)| k.as_str()).collect();
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

#[test]
fn a_second_signal_undoes_everything_before_the_process_ends() {
    if std::env::var_os(CHILD_VAR).is_some() {
        return;
    }
    let Child {
        dir,
        state,
        mut process,
        made,
    } = start_child("signalled", true);
    let pid = process.id() as i32;
    // SAFETY: kill on our own child's pid, which has not been reaped.
    unsafe { libc::kill(pid, libc::SIGINT) };
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        process.try_wait().unwrap().is_none(),
        "the first signal only cancels"
    );
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGINT) };
    let status = process.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGINT), "{status:?}");
    // undone by the hook, with nothing left to repair
    for (kind, what) in &made {
        assert!(
            !in_place(kind, what),
            "{kind} {what} is still there after the second signal"
        );
    }
    let journal = state.join(format!("cleanup-{}.json", process.id()));
    assert!(!journal.exists(), "the journal outlived the undo");
    std::fs::remove_dir_all(&dir).unwrap();
}
