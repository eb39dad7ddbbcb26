//! The `Abort` reactions (to a panicking handler, to a message over a
//! limit) end the process. Each case re-runs this test binary as a child
//! with `TAKT_ABORT_CASE` set and checks that the child died of SIGABRT
//! after printing its report.

mod common;

use std::os::unix::process::ExitStatusExt;
use std::process::Command;
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::Duration;

use takt_agents::{Agent, Config, Ctx, Definer, Limits, Overflow, PanicReaction, Runtime};

struct Bomb;
struct Boom;
impl Agent for Bomb {
    fn define(def: &mut Definer<Self>) {
        def.on(|_: &mut Bomb, _: &mut Ctx<Bomb>, _: Boom| panic!("boom for abort"));
    }
}

struct Stuck {
    rx: Mutex<mpsc::Receiver<()>>,
}
struct Hold;
struct Job;
impl Agent for Stuck {
    fn define(def: &mut Definer<Self>) {
        def.on(|me: &mut Stuck, _: &mut Ctx<Stuck>, _: Hold| {
            let _ = me.rx.lock().unwrap().recv();
        })
        .on(|_: &mut Stuck, _: &mut Ctx<Stuck>, _: Job| {});
    }
}

/// The child's side: does what must abort, then waits to be killed.
fn child(case: &str) {
    let rt = Runtime::new(Config {
        panic: PanicReaction::Abort,
        ..Config::default()
    });
    let d = rt.one_thread("d").unwrap();
    let mut coop = rt.coop("abort");
    match case {
        "panic" => {
            let b = coop.add(Bomb, &d).unwrap();
            coop.register().unwrap();
            b.send(Boom);
        }
        "limit" => {
            let (_tx, rx) = mpsc::channel();
            let s = coop
                .add_limited(
                    Stuck { rx: Mutex::new(rx) },
                    &d,
                    Limits::new().limit::<Job>(1, Overflow::Abort),
                )
                .unwrap();
            coop.register().unwrap();
            s.send(Hold);
            s.send(Job);
            s.send(Job); // over the limit: aborts here
        }
        other => panic!("unknown case {other}"),
    }
    std::thread::sleep(Duration::from_secs(60));
    unreachable!("should have aborted");
}

fn run_case(case: &str, expect: &str) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_entry", "--nocapture", "--test-threads=1"])
        .env("TAKT_ABORT_CASE", case)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.signal(),
        Some(libc_sigabrt()),
        "{case}: {:?}\n{stderr}",
        out.status
    );
    assert!(stderr.contains(expect), "{case}: report missing:\n{stderr}");
}

fn libc_sigabrt() -> i32 {
    6
}

#[test]
fn child_entry() {
    if let Ok(case) = std::env::var("TAKT_ABORT_CASE") {
        child(&case);
    }
}

#[test]
fn panic_abort_reaction_aborts_with_a_report() {
    run_case("panic", "boom for abort");
}

#[test]
fn limit_abort_reaction_aborts_with_a_report() {
    run_case("limit", "exceeded its limit of 1");
}
