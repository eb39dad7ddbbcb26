//! SObjectizer 5.8 through takt's driver: one small case of every
//! benchmark on the real build (which must exist: CI builds it with
//! `scripts/peers.sh`), and drivers that misbehave — garbage, a crash, a
//! hang — each give their precise error and leave nothing running.

#![cfg(feature = "peers")]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use takt_bench_agents::peers::sobjectizer::{Driver, So5Bench, So5Dispatcher, So5Error};
use takt_measure::cancel::Cancel;

fn driver() -> Driver {
    Driver::locate().unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn every_benchmark_runs_on_the_real_driver() {
    let d = driver();
    let cancel = Cancel::new();
    d.check_protocol(&cancel).unwrap();
    let ring = |dispatcher| So5Bench::CustomerRing {
        agents: 40,
        tokens: 4,
        dispatcher,
    };
    let benches = [
        So5Bench::PingPong {
            messages: 1000,
            dispatcher: So5Dispatcher::OneThread,
        },
        So5Bench::PingPong {
            messages: 100,
            dispatcher: So5Dispatcher::ActiveObj,
        },
        So5Bench::PingPong {
            messages: 100,
            dispatcher: So5Dispatcher::ThreadPool,
        },
        ring(So5Dispatcher::OneThread),
        ring(So5Dispatcher::ActiveObj),
        ring(So5Dispatcher::ActiveGroup { groups: 3 }),
        So5Bench::Skynet { leaves: 100 },
        So5Bench::SendMsg { messages: 1000 },
        So5Bench::SendAndProcessMsg { messages: 1000 },
        So5Bench::InsendAndProcessMsg { messages: 1000 },
        So5Bench::ProcessStateChanges { messages: 1000 },
        So5Bench::SendAgentsMsgSelf {
            agents: 100,
            messages: 50,
        },
    ];
    for b in &benches {
        let reps = d
            .run(b, 1, 3, &cancel)
            .unwrap_or_else(|e| panic!("{b:?}: {e}"));
        assert_eq!(reps.len(), 3, "{b:?}");
        for r in &reps {
            assert_eq!(r.fields.len(), b.fields().len(), "{b:?}");
            for (k, v) in &r.fields {
                assert!(*v > 0, "{b:?}: {k} = {v}");
            }
            assert!(r.cpu_ns > 0, "{b:?}");
        }
        if let So5Bench::Skynet { leaves } = b {
            assert!(reps
                .iter()
                .all(|r| r.get("sum") == leaves * (leaves - 1) / 2));
        }
    }
}

/// The driver refuses nonsense with a failure that quotes its message.
#[test]
fn bad_sizes_are_the_drivers_error_quoted() {
    let e = driver()
        .run(&So5Bench::Skynet { leaves: 7 }, 0, 1, &Cancel::new())
        .unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, So5Error::Failed { .. }), "{msg}");
    assert!(msg.contains("power of ten"), "{msg}");
}

/// A stub driver: a shell script in a fresh directory; `pidfile` gets the
/// pid of a `sleep` it starts in the background, to check it is gone.
struct Stub {
    dir: PathBuf,
}

impl Stub {
    fn new(name: &str, body: &str) -> Stub {
        let dir = std::env::temp_dir().join(format!("takt-so5-stub-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("takt-so5-bench");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        Stub { dir }
    }
    fn driver(&self) -> Driver {
        Driver::at(self.dir.join("takt-so5-bench"))
    }
    fn pidfile(&self) -> PathBuf {
        self.dir.join("pid")
    }
}

impl Drop for Stub {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn alive(pid: i32) -> bool {
    // A zombie is gone for our purposes: it runs nothing.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

fn wait_gone(pidfile: &Path) {
    let pid: i32 = std::fs::read_to_string(pidfile)
        .expect("the stub wrote its sleeper's pid")
        .trim()
        .parse()
        .unwrap();
    let t = Instant::now();
    while alive(pid) && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(pid), "the stub's child {pid} is still running");
}

const SMALL: So5Bench = So5Bench::SendMsg { messages: 10 };

#[test]
fn garbage_is_an_error_naming_the_peer_and_the_line() {
    let s = Stub::new("garbage", "echo 'takt-so5 v1 rep=1 bench=send_msg dispatcher=one_thread messages=10 send_ns=lots cpu_ns=1'");
    let e = s.driver().run(&SMALL, 0, 1, &Cancel::new()).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, So5Error::Malformed { .. }), "{msg}");
    assert!(msg.starts_with("sobjectizer: "), "{msg}");
    assert!(msg.contains("send_ns=lots"), "{msg}");
    assert!(msg.contains("`send_ns` is not a whole number"), "{msg}");

    let s = Stub::new("protocol", "echo 'takt-so5 v0'");
    let e = s.driver().check_protocol(&Cancel::new()).unwrap_err();
    assert!(e.to_string().contains("`takt-so5 v0`"), "{e}");
}

#[test]
fn a_crash_quotes_what_the_driver_printed() {
    let s = Stub::new("crash", "echo 'so_5: something broke' >&2; kill -SEGV $$");
    let e = s.driver().run(&SMALL, 0, 1, &Cancel::new()).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, So5Error::Failed { .. }), "{msg}");
    assert!(msg.contains("something broke"), "{msg}");
    assert!(
        msg.contains("SIGSEGV") || msg.contains("signal: 11"),
        "{msg}"
    );
}

#[test]
fn a_hang_is_killed_after_three_times_its_estimate_with_its_children() {
    let s = Stub::new(
        "hang",
        &format!(
            "echo 'warming up'; sleep 1000 & echo $! > {}; wait",
            s_pidfile("hang").display()
        ),
    );
    let t = Instant::now();
    let e = s.driver().run(&SMALL, 0, 1, &Cancel::new()).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, So5Error::Timeout { .. }), "{msg}");
    assert!(msg.contains("warming up"), "{msg}");
    // the estimate of a 10-message run is 0.5 s: killed after 3 × 0.5 + 2 s
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    wait_gone(&s.pidfile());
}

#[test]
fn cancellation_kills_the_driver_and_its_children() {
    let s = Stub::new(
        "cancel",
        &format!(
            "sleep 1000 & echo $! > {}; wait",
            s_pidfile("cancel").display()
        ),
    );
    let cancel = Cancel::new();
    let c = cancel.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        c.cancel();
    });
    let e = s
        .driver()
        .run(&So5Bench::Skynet { leaves: 1_000_000 }, 1, 5, &cancel)
        .unwrap_err();
    t.join().unwrap();
    assert!(matches!(e, So5Error::Interrupted), "{e}");
    wait_gone(&s.pidfile());
}

/// The pid file of the stub named `name` (its path is known before the
/// stub is written).
fn s_pidfile(name: &str) -> PathBuf {
    std::env::temp_dir()
        .join(format!("takt-so5-stub-{}-{name}", std::process::id()))
        .join("pid")
}
