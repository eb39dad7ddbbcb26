//! Timers, limits, panics, cooperations, shutdown and idle CPU.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use takt_agents::{Addr, Agent, Config, Ctx, Definer, Limits, Overflow, PanicReaction, Runtime};
use takt_sched::SpinBudget;

#[derive(Clone)]
struct Tick(u32);

struct Clock {
    ticks: Arc<Mutex<Vec<(u32, Instant)>>>,
}

impl Agent for Clock {
    fn define(def: &mut Definer<Self>) {
        def.on(|me: &mut Clock, _: &mut Ctx<Clock>, Tick(k): Tick| {
            me.ticks.lock().unwrap().push((k, Instant::now()))
        });
    }
}

#[test]
fn delayed_periodic_and_cancelled_timers() {
    let rt = runtime();
    let d = rt.one_thread("d").unwrap();
    let ticks = Arc::new(Mutex::new(Vec::new()));
    let mut coop = rt.coop("clock");
    let clock = coop
        .add(
            Clock {
                ticks: ticks.clone(),
            },
            &d,
        )
        .unwrap();
    let coop = coop.register().unwrap();
    let t0 = Instant::now();
    let once = rt
        .send_after(&clock, Tick(1), Duration::from_millis(30))
        .unwrap();
    // Due well after it is cancelled even if this thread is descheduled
    // for a while on a loaded machine (tens of milliseconds happen).
    let cancelled = rt
        .send_after(&clock, Tick(2), Duration::from_millis(200))
        .unwrap();
    cancelled.cancel();
    let every = rt
        .send_every(
            &clock,
            Tick(3),
            Duration::from_millis(5),
            Duration::from_millis(5),
        )
        .unwrap();
    assert!(eventually(|| ticks
        .lock()
        .unwrap()
        .iter()
        .filter(|t| t.0 == 3)
        .count()
        >= 4));
    every.cancel();
    assert!(eventually(|| ticks
        .lock()
        .unwrap()
        .iter()
        .any(|t| t.0 == 1)));
    once.detach();
    // Let a cancelled periodic tick that was already due drain, then check
    // that no more come.
    std::thread::sleep(Duration::from_millis(30));
    let n3 = ticks.lock().unwrap().iter().filter(|t| t.0 == 3).count();
    std::thread::sleep(Duration::from_millis(50));
    // Past the cancelled message's due time before looking for it.
    let due = t0 + Duration::from_millis(250);
    if let Some(left) = due.checked_duration_since(Instant::now()) {
        std::thread::sleep(left);
    }
    let got = ticks.lock().unwrap().clone();
    assert_eq!(
        got.iter().filter(|t| t.0 == 3).count(),
        n3,
        "cancelled timer fired"
    );
    assert!(
        !got.iter().any(|t| t.0 == 2),
        "cancelled delayed message sent"
    );
    let one = got.iter().find(|t| t.0 == 1).unwrap();
    assert!(one.1 - t0 >= Duration::from_millis(30), "fired early");
    coop.deregister();
    assert!(coop.wait_timeout(LONG));
}

/// Blocks in its first `Block` until released; counts `Job`s.
struct Slow {
    rx: Mutex<mpsc::Receiver<()>>,
    entered: Arc<Countdown>,
    jobs: Arc<AtomicU64>,
}
struct Block;
#[derive(Debug)]
struct Job(u32);

impl Agent for Slow {
    fn define(def: &mut Definer<Self>) {
        def.on(|me: &mut Slow, _: &mut Ctx<Slow>, _: Block| {
            me.entered.hit();
            let _ = me.rx.lock().unwrap().recv();
        })
        .on(|me: &mut Slow, _: &mut Ctx<Slow>, _: Job| {
            me.jobs.fetch_add(1, Ordering::SeqCst);
        });
    }
}

struct Spill {
    got: Arc<Mutex<Vec<u32>>>,
}
impl Agent for Spill {
    fn define(def: &mut Definer<Self>) {
        def.on(|me: &mut Spill, _: &mut Ctx<Spill>, Job(k): Job| me.got.lock().unwrap().push(k))
            .on(|me: &mut Spill, _: &mut Ctx<Spill>, k: u64| me.got.lock().unwrap().push(k as u32));
    }
}

fn limited(reaction: impl FnOnce(Addr<Spill>) -> Overflow<Job>) {
    let rt = runtime();
    let d = rt.one_thread("d").unwrap();
    let spill_disp = rt.one_thread("spill").unwrap();
    let (tx, rx) = mpsc::channel();
    let entered = Countdown::new(1);
    let jobs = Arc::new(AtomicU64::new(0));
    let got = Arc::new(Mutex::new(Vec::new()));
    let mut coop = rt.coop("limits");
    let spill = coop.add(Spill { got: got.clone() }, &spill_disp).unwrap();
    let slow = coop
        .add_limited(
            Slow {
                rx: Mutex::new(rx),
                entered: entered.clone(),
                jobs: jobs.clone(),
            },
            &d,
            Limits::new().limit::<Job>(3, reaction(spill.clone())),
        )
        .unwrap();
    let coop = coop.register().unwrap();
    slow.send(Block);
    assert!(entered.wait());
    for k in 0..10 {
        slow.send(Job(k));
    }
    tx.send(()).unwrap();
    assert!(eventually(|| jobs.load(Ordering::SeqCst) == 3));
    assert_eq!(slow.stats().overflow, 7);
    // The limit frees up as messages are handled.
    slow.send(Job(100));
    assert!(eventually(|| jobs.load(Ordering::SeqCst) == 4));
    let st = slow.stats();
    assert_eq!(st.overflow, 7);
    coop.deregister();
    assert!(coop.wait_timeout(LONG));
    let spilled = got.lock().unwrap().clone();
    match spilled.len() {
        0 => {}
        7 => assert_eq!(spilled, (3..10).collect::<Vec<_>>()),
        n => panic!("{n} spilled"),
    }
}

#[test]
fn limit_drop() {
    limited(|_| Overflow::Drop);
}

#[test]
fn limit_redirect_keeps_order() {
    let got = Arc::new(Mutex::new(0usize));
    let g = got.clone();
    limited(move |spill| {
        *g.lock().unwrap() += 1;
        Overflow::redirect(spill)
    });
    assert_eq!(*got.lock().unwrap(), 1);
}

#[test]
fn limit_transform() {
    limited(|spill| Overflow::transform(spill, |Job(k)| k as u64));
}

struct Fragile {
    handled: Arc<AtomicU64>,
}
struct Boom;
struct Fine;
struct Go;

impl Agent for Fragile {
    fn define(def: &mut Definer<Self>) {
        def.on(|_: &mut Fragile, _: &mut Ctx<Fragile>, _: Boom| panic!("boom on purpose"))
            .on(|me: &mut Fragile, _: &mut Ctx<Fragile>, _: Fine| {
                me.handled.fetch_add(1, Ordering::SeqCst);
            })
            .on(|_: &mut Fragile, ctx: &mut Ctx<Fragile>, _: Go| {
                // Queued in this order before the panic happens.
                ctx.send_self(Fine);
                ctx.send_self(Boom);
                ctx.send_self(Fine);
            });
    }
    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        panic!("finish panics too");
    }
}

fn panicking(
    reaction: PanicReaction,
) -> (
    Runtime,
    Addr<Fragile>,
    Arc<AtomicU64>,
    takt_agents::CoopHandle,
) {
    let rt = Runtime::new(Config {
        panic: reaction,
        spin: SpinBudget::from_micros(5),
        ..Config::default()
    });
    let d = rt.one_thread("d").unwrap();
    let handled = Arc::new(AtomicU64::new(0));
    let mut coop = rt.coop("fragile");
    let a = coop
        .add(
            Fragile {
                handled: handled.clone(),
            },
            &d,
        )
        .unwrap();
    let coop = coop.register().unwrap();
    a.send(Go);
    (rt, a, handled, coop)
}

#[test]
fn panic_deregisters_the_coop() {
    let (rt, a, handled, coop) = panicking(PanicReaction::DeregisterCoop);
    assert!(coop.wait_timeout(LONG), "coop not deregistered after panic");
    assert!(!a.is_alive());
    // The Fine queued before the finish event still ran.
    assert_eq!(handled.load(Ordering::SeqCst), 2);
    let p = rt.panics();
    assert_eq!(p.len(), 2, "{p:?}"); // the handler and on_finish
    assert!(p[0].message.contains("boom on purpose"));
    assert_eq!(p[0].coop, "fragile");
    assert_eq!(p[0].reaction, PanicReaction::DeregisterCoop);
    let report = rt.shutdown();
    assert_eq!(report.panics, 2);
}

#[test]
fn panic_ignored_keeps_the_agent() {
    let (rt, a, handled, coop) = panicking(PanicReaction::Ignore);
    assert!(eventually(|| handled.load(Ordering::SeqCst) == 2));
    assert!(a.is_alive());
    a.send(Fine);
    assert!(eventually(|| handled.load(Ordering::SeqCst) == 3));
    coop.deregister();
    assert!(
        coop.wait_timeout(LONG),
        "a panicking on_finish must not hang deregistration"
    );
    assert_eq!(rt.panics().len(), 2);
}

struct Member {
    name: &'static str,
    log: Arc<Mutex<Vec<String>>>,
}
impl Agent for Member {
    fn define(_: &mut Definer<Self>) {}
    fn on_start(&mut self, _: &mut Ctx<Self>) {
        self.log
            .lock()
            .unwrap()
            .push(format!("start {}", self.name));
    }
    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        self.log
            .lock()
            .unwrap()
            .push(format!("finish {}", self.name));
    }
}

#[test]
fn child_coops_finish_with_their_parent() {
    let rt = runtime();
    let d = rt.one_thread("d").unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let m = |name| Member {
        name,
        log: log.clone(),
    };
    let mut parent = rt.coop("parent");
    parent.add(m("p"), &d).unwrap();
    let parent = parent.register().unwrap();
    let mut child = parent.child("child");
    child.add(m("c1"), &d).unwrap();
    child.add(m("c2"), &d).unwrap();
    let child = child.register().unwrap();
    assert!(eventually(|| log.lock().unwrap().len() == 3));
    parent.deregister();
    assert!(parent.wait_timeout(LONG));
    assert!(child.is_done());
    let l = log.lock().unwrap().clone();
    // Children are deregistered first: their finish events are queued first.
    assert_eq!(l[3..], ["finish c1", "finish c2", "finish p"]);
    // A child of a deregistered parent is refused.
    let mut late = parent.child("late");
    late.add(m("x"), &d).unwrap();
    assert!(late.register().is_err());
}

/// Registers a child cooperation from its start event and reports how
/// that went.
struct EarlyParent {
    done: mpsc::Sender<Result<takt_agents::CoopHandle, takt_agents::RegError>>,
    log: Arc<Mutex<Vec<String>>>,
}

impl Agent for EarlyParent {
    fn define(_: &mut Definer<Self>) {}
    fn on_start(&mut self, ctx: &mut Ctx<Self>) {
        let d = ctx.runtime().one_thread("kid").unwrap();
        let mut child = ctx.coop().child("kid");
        let r = child
            .add(
                Member {
                    name: "kid",
                    log: self.log.clone(),
                },
                &d,
            )
            .and_then(|_| child.register());
        self.done.send(r).unwrap();
    }
}

#[test]
fn an_agent_registers_children_before_its_own_coop_is_registered() {
    // Start events are queued when an agent is added, so an agent can run
    // (and register children) while its cooperation is still being built.
    // This once failed with "the parent cooperation is deregistering" and
    // left skynet waiting for children that never came.
    let rt = runtime();
    let d = rt.one_thread("d").unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let (tx, rx) = mpsc::channel();
    for registered in [true, false] {
        let mut parent = rt.coop("parent");
        parent
            .add(
                EarlyParent {
                    done: tx.clone(),
                    log: log.clone(),
                },
                &d,
            )
            .unwrap();
        // the child is registered before the parent is
        let child = rx.recv_timeout(LONG).unwrap().unwrap();
        if registered {
            let parent = parent.register().unwrap();
            assert!(!child.is_done());
            parent.deregister();
            assert!(parent.wait_timeout(LONG));
        } else {
            // a parent dropped unregistered takes its children with it
            drop(parent);
        }
        assert!(child.wait_timeout(LONG), "registered parent: {registered}");
    }
    let l = log.lock().unwrap().clone();
    assert_eq!(l.iter().filter(|e| *e == "finish kid").count(), 2, "{l:?}");
}

/// Sets its flag when the agent value is dropped.
struct DropFlag {
    dropped: Arc<std::sync::atomic::AtomicBool>,
    seen: Arc<std::sync::atomic::AtomicU64>,
}

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.dropped
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Agent for DropFlag {
    fn define(def: &mut Definer<Self>) {
        def.on(|me: &mut DropFlag, _: &mut Ctx<DropFlag>, _: u32| {
            me.seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        });
    }
}

/// A worker defers releasing the references that cross-thread envelopes
/// carry: the agent must still be freed once everything is done — when
/// its worker goes to sleep, without waiting for shutdown.
#[test]
fn agents_reached_from_other_threads_are_freed_when_idle() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
    let rt = runtime();
    let d = rt.one_thread("d").unwrap();
    let dropped = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(AtomicU64::new(0));
    let mut coop = rt.coop("c");
    let a = coop
        .add(
            DropFlag {
                dropped: dropped.clone(),
                seen: seen.clone(),
            },
            &d,
        )
        .unwrap();
    let coop = coop.register().unwrap();
    for i in 0..5000u32 {
        a.send(i);
    }
    assert!(eventually(|| seen.load(SeqCst) == 5000));
    drop(a);
    coop.deregister();
    assert!(coop.wait_timeout(LONG));
    assert!(
        eventually(|| dropped.load(SeqCst)),
        "the agent was never freed while the runtime idles"
    );
    rt.shutdown();
}
