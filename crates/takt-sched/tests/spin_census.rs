//! The spin census decides whether a waiter spins (its own test binary: the
//! census is process-wide, so no other test may park meanwhile).
#![cfg(not(loom))]

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use takt_sched::{spin_census, Parker, SpinBudget};

/// The tests share the census: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// A budget far longer than the test waits before unparking: a waiter that
/// spins does not sleep before it is unparked.
const LONG: SpinBudget = SpinBudget::from_micros(10_000_000);

/// Starts a thread that parks until unparked (with a spin budget of
/// `LONG`) and reports how many times it slept; returns its parker and the
/// report.
fn waiter() -> (Arc<Parker>, thread::JoinHandle<u64>) {
    let p = Arc::new(Parker::new(LONG));
    let p2 = p.clone();
    let t = thread::spawn(move || {
        p2.park();
        p2.sleeps()
    });
    (p, t)
}

/// `n` threads that joined the census (each parked once, on a token) and
/// then block outside any parker, so the census counts them awake; they
/// leave when the sender is dropped.
fn awake_members(n: usize) -> (mpsc::Sender<()>, Vec<thread::JoinHandle<()>>) {
    let (tx, rx) = mpsc::channel::<()>();
    let rx = Arc::new(std::sync::Mutex::new(rx));
    let ts = (0..n)
        .map(|_| {
            let rx = rx.clone();
            thread::spawn(move || {
                let p = Parker::new(SpinBudget::NONE);
                p.unpark();
                p.park(); // a token is there: joins, does not sleep
                let _ = rx.lock().unwrap().recv();
            })
        })
        .collect();
    (tx, ts)
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < Duration::from_secs(5), "{what}");
        thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn waiters_spin_only_while_no_more_threads_are_awake_than_cpus() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let cpus = spin_census().cpus;
    assert!(cpus >= 1);
    assert_eq!(spin_census().awake, 0, "{:?}", spin_census());

    // A lone waiter has a CPU to itself: it spins until unparked, never
    // sleeps, and declines nothing.
    let (p, t) = waiter();
    thread::sleep(Duration::from_millis(50));
    p.unpark();
    assert_eq!(t.join().unwrap(), 0, "a lone waiter spins");
    assert_eq!(spin_census().declined, 0);
    // It left the census when it exited.
    wait_for("the waiter leaves the census", || spin_census().awake == 0);

    // `cpus` members awake (blocked elsewhere, as threads with work would
    // be running): one more waiter would make them more than the CPUs, so
    // it sleeps at once instead of spinning its 10 s.
    let (stop, members) = awake_members(cpus);
    wait_for("the members join", || spin_census().awake == cpus);
    let (p, t) = waiter();
    wait_for("the waiter sleeps at once", || p.sleeps() == 1);
    assert_eq!(spin_census().awake, cpus, "asleep, it is not counted");
    assert!(spin_census().declined >= 1);
    p.unpark();
    assert_eq!(t.join().unwrap(), 1, "it slept rather than spun");

    // Once the members leave, waiting spins again.
    drop(stop);
    for m in members {
        m.join().unwrap();
    }
    wait_for("the members leave", || spin_census().awake == 0);
    let declined = spin_census().declined;
    let (p, t) = waiter();
    thread::sleep(Duration::from_millis(50));
    p.unpark();
    assert_eq!(t.join().unwrap(), 0, "alone again, the waiter spins");
    assert_eq!(spin_census().declined, declined);
}

/// A sleeper woken by its timeout counts itself awake again; one woken by
/// an unpark is counted by the unparker: either way the census comes back
/// to the threads actually awake.
#[test]
fn sleeps_and_wakes_balance() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let p = Arc::new(Parker::new(SpinBudget::NONE));
    let p2 = p.clone();
    let t = thread::spawn(move || {
        assert!(!p2.park_timeout(Duration::from_millis(5)));
        let awake_after_timeout = spin_census().awake;
        p2.park();
        (awake_after_timeout, spin_census().awake)
    });
    wait_for("the thread sleeps again", || p.sleeps() == 2);
    p.unpark();
    let (after_timeout, after_unpark) = t.join().unwrap();
    assert!(after_timeout >= 1 && after_unpark >= 1);
    wait_for("the thread leaves the census", || spin_census().awake == 0);
}
