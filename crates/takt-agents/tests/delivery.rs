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

/// Insends to pool-bound agents: inline from a worker of the same pool
/// when the target is idle; queued from itself (it holds its own token),
/// from another pool's worker and from outside the runtime.
struct PoolDriver {
    target: Addr<Echo>,
    other_pool: Addr<Echo>,
    seen: Arc<Mutex<Vec<Delivery>>>,
    log: Arc<Mutex<Vec<u64>>>,
}

impl Agent for PoolDriver {
    fn define(def: &mut Definer<Self>) {
        def.on(|me: &mut PoolDriver, ctx: &mut Ctx<PoolDriver>, _: Go| {
            let d = me.target.insend(2u64);
            me.seen.lock().unwrap().push(d);
            // The handler ran inside insend, on this thread.
            assert_eq!(*me.log.lock().unwrap(), vec![0, 2]);
            me.seen.lock().unwrap().push(ctx.addr().insend(Go2));
            me.seen.lock().unwrap().push(me.other_pool.insend(9u64));
        })
        .on(|_: &mut PoolDriver, _: &mut Ctx<PoolDriver>, _: Go2| {});
    }
}

#[test]
fn insend_to_pool_agents_runs_inline_when_idle() {
    let rt = runtime();
    let pool = rt.thread_pool("pool", 2).unwrap();
    let other = rt.work_stealing("other", 1).unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let far_log = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut coop = rt.coop("pool-insend");
    let echo = coop.add(Echo { log: log.clone() }, &pool).unwrap();
    let far = coop
        .add(
            Echo {
                log: far_log.clone(),
            },
            &other,
        )
        .unwrap();
    let drv = coop
        .add(
            PoolDriver {
                target: echo.clone(),
                other_pool: far.clone(),
                seen: seen.clone(),
                log: log.clone(),
            },
            &pool,
        )
        .unwrap();
    let coop = coop.register().unwrap();
    // Let the echo agent start and go idle.
    echo.send(0u64);
    assert!(eventually(
        || log.lock().unwrap().len() == 1 && echo.stats().queued == 0
    ));
    drv.send(Go);
    assert!(eventually(|| seen.lock().unwrap().len() == 3));
    assert_eq!(
        *seen.lock().unwrap(),
        vec![Delivery::Inline, Delivery::Queued, Delivery::Queued]
    );
    assert!(eventually(|| far_log.lock().unwrap().len() == 1));
    // From outside the runtime: queued.
    assert_eq!(echo.insend(3u64), Delivery::Queued);
    assert!(eventually(|| log.lock().unwrap().len() == 3));
    coop.deregister();
    assert!(coop.wait_timeout(LONG));
}

/// Fails if two threads are inside its handler at once; counts events.
struct Exclusive {
    inside: Arc<std::sync::atomic::AtomicBool>,
    overlaps: Arc<std::sync::atomic::AtomicU64>,
    handled: Arc<std::sync::atomic::AtomicU64>,
}

impl Agent for Exclusive {
    fn define(def: &mut Definer<Self>) {
        use std::sync::atomic::Ordering::SeqCst;
        def.on(|me: &mut Exclusive, _: &mut Ctx<Exclusive>, _: u64| {
            if me.inside.swap(true, SeqCst) {
                me.overlaps.fetch_add(1, SeqCst);
            }
            for _ in 0..50 {
                std::hint::spin_loop();
            }
            me.inside.store(false, SeqCst);
            me.handled.fetch_add(1, SeqCst);
        });
    }
}

/// Sends and insends to one shared target from agents spread over a pool.
struct Hammer {
    target: Addr<Exclusive>,
    inline: Arc<std::sync::atomic::AtomicU64>,
}
struct Round(u32);

impl Agent for Hammer {
    fn define(def: &mut Definer<Self>) {
        def.on(|me: &mut Hammer, ctx: &mut Ctx<Hammer>, Round(n): Round| {
            if me.target.insend(1u64) == Delivery::Inline {
                me.inline.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            me.target.send(2u64);
            if n > 0 {
                ctx.send_self(Round(n - 1));
            }
        });
    }
}

#[test]
fn pool_insend_keeps_the_agent_on_one_thread_at_a_time() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
    const HAMMERS: u64 = 4;
    const ROUNDS: u32 = 500;
    let rt = runtime();
    let pool = rt.thread_pool("pool", 2).unwrap();
    let overlaps = Arc::new(AtomicU64::new(0));
    let handled = Arc::new(AtomicU64::new(0));
    let inline = Arc::new(AtomicU64::new(0));
    let mut coop = rt.coop("hammer");
    let target = coop
        .add(
            Exclusive {
                inside: Arc::new(AtomicBool::new(false)),
                overlaps: overlaps.clone(),
                handled: handled.clone(),
            },
            &pool,
        )
        .unwrap();
    let hammers: Vec<_> = (0..HAMMERS)
        .map(|_| {
            coop.add(
                Hammer {
                    target: target.clone(),
                    inline: inline.clone(),
                },
                &pool,
            )
            .unwrap()
        })
        .collect();
    let coop = coop.register().unwrap();
    for h in &hammers {
        h.send(Round(ROUNDS - 1));
    }
    let total = HAMMERS * u64::from(ROUNDS) * 2;
    assert!(eventually(|| handled.load(SeqCst) == total));
    eprintln!(
        "{} of {} insends ran inline",
        inline.load(SeqCst),
        total / 2
    );
    assert_eq!(
        overlaps.load(SeqCst),
        0,
        "the target ran on two threads at once"
    );
    assert_eq!(target.stats().handled, total);
    coop.deregister();
    assert!(coop.wait_timeout(LONG));
}
