//! Delivery: nothing lost, FIFO per sender/receiver pair, from outside the
//! runtime, from other agents on the same and on other threads; insend.

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use takt_agents::{Addr, Agent, Ctx, Definer, Delivery};

/// (sender, sequence number).
struct Seq(u32, u64);

/// Checks per-sender FIFO and counts.
struct Checker {
    next: Vec<u64>,
    errors: Arc<Mutex<Vec<String>>>,
    done: Arc<Countdown>,
}

impl Agent for Checker {
    fn define(def: &mut Definer<Self>) {
        def.on(|me: &mut Checker, _: &mut Ctx<Checker>, Seq(s, i): Seq| {
            let s = s as usize;
            if me.next[s] != i {
                me.errors
                    .lock()
                    .unwrap()
                    .push(format!("sender {s}: got {i}, expected {}", me.next[s]));
            }
            me.next[s] = i + 1;
            me.done.hit();
        });
    }
}

/// Sends `n` numbered messages to `to` when told.
struct Pusher {
    me: u32,
    n: u64,
    to: Addr<Checker>,
}
struct Go;

impl Agent for Pusher {
    fn define(def: &mut Definer<Self>) {
        def.on(|me: &mut Pusher, _: &mut Ctx<Pusher>, _: Go| {
            for i in 0..me.n {
                me.to.send(Seq(me.me, i));
            }
        });
    }
}

fn run_fifo(cross_thread: bool) {
    const N: u64 = 20_000;
    let rt = runtime();
    let d1 = rt.one_thread("d1").unwrap();
    let d2 = rt.one_thread("d2").unwrap();
    let done = Countdown::new(N * 4);
    let errors = Arc::new(Mutex::new(Vec::new()));
    let mut coop = rt.coop("fifo");
    let checker = coop
        .add(
            Checker {
                next: vec![0; 4],
                errors: errors.clone(),
                done: done.clone(),
            },
            &d1,
        )
        .unwrap();
    // Two agent senders: on the checker's thread or on another.
    let other = if cross_thread { &d2 } else { &d1 };
    let p0 = coop
        .add(
            Pusher {
                me: 0,
                n: N,
                to: checker.clone(),
            },
            other,
        )
        .unwrap();
    let p1 = coop
        .add(
            Pusher {
                me: 1,
                n: N,
                to: checker.clone(),
            },
            &d2,
        )
        .unwrap();
    let coop = coop.register().unwrap();
    p0.send(Go);
    p1.send(Go);
    // Two plain threads.
    let threads: Vec<_> = (2..4u32)
        .map(|s| {
            let c = checker.clone();
            std::thread::spawn(move || {
                for i in 0..N {
                    c.send(Seq(s, i));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert!(done.wait(), "lost messages: {} missing", done.left());
    assert!(
        errors.lock().unwrap().is_empty(),
        "{:?}",
        errors.lock().unwrap()
    );
    let st = checker.stats();
    assert_eq!(st.handled, 4 * N);
    assert_eq!(st.unhandled, 0);
    coop.deregister();
    assert!(coop.wait_timeout(LONG));
    let report = rt.shutdown();
    assert_eq!(report.coops_timed_out, 0);
}

#[test]
fn fifo_per_pair_same_thread_and_outside() {
    run_fifo(false);
}

#[test]
fn fifo_per_pair_across_threads() {
    run_fifo(true);
}

struct Echo {
    log: Arc<Mutex<Vec<u64>>>,
}

impl Agent for Echo {
    fn define(def: &mut Definer<Self>) {
        def.on(|me: &mut Echo, _: &mut Ctx<Echo>, v: u64| me.log.lock().unwrap().push(v));
    }
}

struct InsendDriver {
    target: Addr<Echo>,
    seen: Arc<Mutex<Vec<Delivery>>>,
    log: Arc<Mutex<Vec<u64>>>,
}

impl Agent for InsendDriver {
    fn define(def: &mut Definer<Self>) {
        def.on(
            |me: &mut InsendDriver, ctx: &mut Ctx<InsendDriver>, _: Go| {
                me.target.send(1u64); // queued
                let d = me.target.insend(2u64); // runs now, before 1
                me.seen.lock().unwrap().push(d);
                // The handler ran inside insend:
                assert_eq!(*me.log.lock().unwrap(), vec![2]);
                // To itself (already running): queued.
                let me_addr = ctx.addr();
                me.seen.lock().unwrap().push(me_addr.insend(Go2));
            },
        )
        .on(|_: &mut InsendDriver, _: &mut Ctx<InsendDriver>, _: Go2| {});
    }
}
struct Go2;

#[test]
fn insend_runs_inline_only_where_allowed() {
    let rt = runtime();
    let d = rt.one_thread("d").unwrap();
    let other = rt.one_thread("other").unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut coop = rt.coop("insend");
    let echo = coop.add(Echo { log: log.clone() }, &d).unwrap();
    let far = coop.add(Echo { log: log.clone() }, &other).unwrap();
    let drv = coop
        .add(
            InsendDriver {
                target: echo.clone(),
                seen: seen.clone(),
                log: log.clone(),
            },
            &d,
        )
        .unwrap();
    let coop = coop.register().unwrap();
    drv.send(Go);
    assert!(eventually(|| log.lock().unwrap().len() == 2));
    assert_eq!(*log.lock().unwrap(), vec![2, 1]);
    assert_eq!(
        *seen.lock().unwrap(),
        vec![Delivery::Inline, Delivery::Queued]
    );
    // From outside the runtime: queued.
    assert_eq!(far.insend(3u64), Delivery::Queued);
    assert!(eventually(|| log.lock().unwrap().len() == 3));
    coop.deregister();
    assert!(coop.wait_timeout(LONG));
}

#[test]
fn finished_agents_count_undelivered() {
    let rt = runtime();
    let d = rt.one_thread("d").unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut coop = rt.coop("c");
    let echo = coop.add(Echo { log: log.clone() }, &d).unwrap();
    let coop = coop.register().unwrap();
    coop.deregister();
    assert!(coop.wait_timeout(LONG));
    assert!(!echo.is_alive());
    let before = rt.undelivered();
    for i in 0..10u64 {
        echo.send(i);
    }
    assert!(eventually(|| rt.undelivered() == before + 10));
    assert!(log.lock().unwrap().is_empty());
    assert_eq!(echo.stats().undelivered, 10);
}
