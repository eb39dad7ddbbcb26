//! The process's signal handling, end to end: a first SIGTERM raises the
//! watched token with the signal; a second ends the process of that
//! signal after the forced-exit hooks ran. Each case runs in a child
//! process (this test binary re-run with an environment variable), so no
//! signal reaches the test harness.

use std::os::unix::process::ExitStatusExt;
use std::process::Command;
use std::time::{Duration, Instant};

use takt_measure::cancel::{self, Cancel, Signal};

const CHILD: &str = "TAKT_MEASURE_SIGNAL_CHILD";

fn send_self(sig: i32) {
    // SAFETY: kill on our own pid with a signal whose handling is installed.
    unsafe { libc::kill(libc::getpid(), sig) };
}

fn wait_for(what: impl Fn() -> bool) -> bool {
    let t0 = Instant::now();
    while !what() {
        if t0.elapsed() > Duration::from_secs(10) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

static HOOK_FILE: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

fn hook() {
    if let Some(p) = HOOK_FILE.get() {
        let _ = std::fs::write(p, "ran");
    }
}

/// Runs in the child: one or two SIGTERMs to itself.
fn child(mode: &str) {
    let c = Cancel::new();
    cancel::watch(&c).unwrap();
    assert_eq!(cancel::received(), None);
    if let Ok(p) = std::env::var("TAKT_MEASURE_HOOK_FILE") {
        HOOK_FILE.set(p.into()).unwrap();
        cancel::at_forced_exit(hook);
    }
    send_self(libc::SIGTERM);
    assert!(
        wait_for(|| c.is_cancelled()),
        "the first signal raised nothing"
    );
    assert_eq!(c.signal(), Some(Signal::Terminate));
    assert_eq!(cancel::received(), Some(Signal::Terminate));
    // a token watched later is raised at once
    let late = Cancel::new();
    late.on_signals().unwrap();
    assert_eq!(late.signal(), Some(Signal::Terminate));
    if mode == "twice" {
        send_self(libc::SIGTERM);
        std::thread::sleep(Duration::from_secs(10));
        panic!("still alive after the second signal");
    }
}

fn run_child(test: &str, mode: &str, hook: Option<&std::path::Path>) -> std::process::ExitStatus {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", test, "--nocapture", "--test-threads", "1"])
        .stdout(std::process::Stdio::null())
        .env(CHILD, mode);
    if let Some(h) = hook {
        cmd.env("TAKT_MEASURE_HOOK_FILE", h);
    }
    cmd.status().unwrap()
}

#[test]
fn first_signal_raises_watched_tokens() {
    if let Ok(mode) = std::env::var(CHILD) {
        return child(&mode);
    }
    let status = run_child("first_signal_raises_watched_tokens", "once", None);
    assert!(status.success(), "{status:?}");
}

#[test]
fn second_signal_ends_the_process_after_the_hooks() {
    if let Ok(mode) = std::env::var(CHILD) {
        return child(&mode);
    }
    let hook_file = std::env::temp_dir().join(format!("takt-measure-hook-{}", std::process::id()));
    let _ = std::fs::remove_file(&hook_file);
    let status = run_child(
        "second_signal_ends_the_process_after_the_hooks",
        "twice",
        Some(&hook_file),
    );
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
    assert_eq!(std::fs::read_to_string(&hook_file).unwrap(), "ran");
    std::fs::remove_file(&hook_file).unwrap();
}
