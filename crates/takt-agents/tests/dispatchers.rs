//! Every dispatcher's guarantee, with a checker that fails if one agent
//! runs on two threads at once; FIFO per sender on every dispatcher;
//! thread placement of the thread-bound dispatchers; priority order.

mod common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::ThreadId;

use common::*;
use takt_agents::{Agent, Binding, Ctx, Definer, Dispatcher, RuntimeHandle};

struct Seq(u32, u64);

struct Checked {
    /// Set while a handler of this agent runs.
    busy: AtomicBool,
    overlaps: AtomicU64,
    threads: Mutex<HashSet<ThreadId>>,
}

struct Worker {
    check: Arc<Checked>,
    next: [u64; 2],
    fifo_errors: Arc<AtomicU64>,
    done: Arc<Countdown>,
}

impl Agent for Worker {
    fn define(def: &mut Definer<Self>) {
        def.on(|me: &mut Worker, _: &mut Ctx<Worker>, Seq(s, i): Seq| {
            if me.check.busy.swap(true, Ordering::SeqCst) {
                me.check.overlaps.fetch_add(1, Ordering::SeqCst);
            }
            me.check
                .threads
                .lock()
                .unwrap()
                .insert(std::thread::current().id());
            // Widen the window a second runner would fall into.
            for _ in 0..50 {
                std::hint::spin_loop();
            }
            if me.next[s as usize] != i {
                me.fifo_errors.fetch_add(1, Ordering::SeqCst);
            }
            me.next[s as usize] = i + 1;
            me.check.busy.store(false, Ordering::SeqCst);
            me.done.hit();
        });
    }
}

/// Runs `agents` checked agents bound by `bind(i)`, fed by two threads.
fn exercise(
    rt: &RuntimeHandle,
    agents: usize,
    per_sender: u64,
    bind: impl Fn(usize) -> Binding,
) -> Vec<Arc<Checked>> {
    let done = Countdown::new(agents as u64 * per_sender * 2);
    let fifo_errors = Arc::new(AtomicU64::new(0));
    let mut coop = rt.coop("exercise");
    let mut addrs = Vec::new();
    let mut checks = Vec::new();
    for i in 0..agents {
        let check = Arc::new(Checked {
            busy: AtomicBool::new(false),
            overlaps: AtomicU64::new(0),
            threads: Mutex::new(HashSet::new()),
        });
        checks.push(check.clone());
        addrs.push(
            coop.add(
                Worker {
                    check,
                    next: [0; 2],
                    fifo_errors: fifo_errors.clone(),
                    done: done.clone(),
                },
                bind(i),
            )
            .unwrap(),
        );
    }
    let coop = coop.register().unwrap();
    let senders: Vec<_> = (0..2u32)
        .map(|s| {
            let addrs = addrs.clone();
            std::thread::spawn(move || {
                for i in 0..per_sender {
                    for a in &addrs {
                        a.send(Seq(s, i));
                    }
                }
            })
        })
        .collect();
    for s in senders {
        s.join().unwrap();
    }
    assert!(
        done.wait(),
        "{} messages not handled; dispatchers: {:?}; busy flags: {:?}",
        done.left(),
        rt.dispatcher_stats(),
        checks
            .iter()
            .map(|c| c.busy.load(Ordering::SeqCst))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        fifo_errors.load(Ordering::SeqCst),
        0,
        "FIFO per sender broken"
    );
    for (i, c) in checks.iter().enumerate() {
        assert_eq!(
            c.overlaps.load(Ordering::SeqCst),
            0,
            "agent {i} ran on two threads at once"
        );
    }
    coop.deregister();
    assert!(coop.wait_timeout(LONG));
    checks
}

fn threads_of(c: &Checked) -> HashSet<ThreadId> {
    c.threads.lock().unwrap().clone()
}

#[test]
fn one_thread_runs_everything_on_one_thread() {
    let rt = runtime();
    let d = rt.one_thread("one").unwrap();
    let checks = exercise(&rt, 6, 2000, |_| d.bind());
    let all: HashSet<_> = checks.iter().flat_map(|c| threads_of(c)).collect();
    assert_eq!(all.len(), 1);
}

#[test]
fn active_obj_gives_each_agent_its_thread() {
    let rt = runtime();
    let d = rt.active_obj("ao").unwrap();
    let checks = exercise(&rt, 4, 2000, |_| d.bind());
    let per: Vec<_> = checks.iter().map(|c| threads_of(c)).collect();
    assert!(per.iter().all(|t| t.len() == 1));
    let all: HashSet<_> = per.iter().flatten().collect();
    assert_eq!(all.len(), 4);
}

#[test]
fn active_group_shares_a_thread_per_group() {
    let rt = runtime();
    let d = rt.active_group("ag").unwrap();
    let checks = exercise(&rt, 6, 2000, |i| d.group(format!("g{}", i % 2)));
    let per: Vec<_> = checks.iter().map(|c| threads_of(c)).collect();
    assert!(per.iter().all(|t| t.len() == 1));
    assert_eq!(per[0], per[2]);
    assert_eq!(per[1], per[3]);
    assert_ne!(per[0], per[1]);
}

fn pool_case(d: &Dispatcher, rt: &RuntimeHandle) {
    let checks = exercise(rt, 8, 3000, |_| d.bind());
    let all: HashSet<_> = checks.iter().flat_map(|c| threads_of(c)).collect();
    assert!(!all.is_empty() && all.len() <= 2);
    let st = d.stats();
    assert_eq!(st.threads, 2);
    assert!(st.events >= 8 * 3000 * 2);
}

#[test]
fn thread_pool_never_runs_an_agent_twice_at_once() {
    let rt = runtime();
    let d = rt.thread_pool("tp", 2).unwrap();
    pool_case(&d, &rt);
}

#[test]
fn work_stealing_never_runs_an_agent_twice_at_once() {
    let rt = runtime();
    let d = rt.work_stealing("ws", 2).unwrap();
    pool_case(&d, &rt);
}

#[test]
fn priority_dispatcher_keeps_agents_exclusive() {
    let rt = runtime();
    let d = rt.priority("prio").unwrap();
    exercise(&rt, 4, 2000, |i| d.priority((i % 8) as u8));
}

/// Blocks its thread until released.
struct Gate {
    rx: Mutex<mpsc::Receiver<()>>,
    entered: Arc<Countdown>,
}
struct Hold;

impl Agent for Gate {
    fn define(def: &mut Definer<Self>) {
        def.on(|me: &mut Gate, _: &mut Ctx<Gate>, _: Hold| {
            me.entered.hit();
            let _ = me.rx.lock().unwrap().recv();
        });
    }
}

struct Recorder {
    prio: u8,
    order: Arc<Mutex<Vec<u8>>>,
}
struct Ping;

impl Agent for Recorder {
    fn define(def: &mut Definer<Self>) {
        def.on(|me: &mut Recorder, _: &mut Ctx<Recorder>, _: Ping| {
            me.order.lock().unwrap().push(me.prio)
        });
    }
}

#[test]
fn priority_dispatcher_runs_higher_priorities_first() {
    let rt = runtime();
    let d = rt.priority("prio").unwrap();
    let (tx, rx) = mpsc::channel();
    let entered = Countdown::new(1);
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut coop = rt.coop("prio");
    let gate = coop
        .add(
            Gate {
                rx: Mutex::new(rx),
                entered: entered.clone(),
            },
            d.priority(7),
        )
        .unwrap();
    let recs: Vec<_> = (0..8u8)
        .map(|p| {
            coop.add(
                Recorder {
                    prio: p,
                    order: order.clone(),
                },
                d.priority(p),
            )
            .unwrap()
        })
        .collect();
    let coop = coop.register().unwrap();
    gate.send(Hold);
    assert!(entered.wait());
    // The thread is held: queue work at every priority, low ones first.
    let mut sent = 0;
    for round in 0..5 {
        for (p, r) in recs.iter().enumerate() {
            if (p + round) % 2 == 0 || round > 2 {
                r.send(Ping);
                sent += 1;
            }
        }
    }
    tx.send(()).unwrap();
    assert!(eventually(|| order.lock().unwrap().len() == sent));
    let got = order.lock().unwrap().clone();
    assert!(
        got.windows(2).all(|w| w[0] >= w[1]),
        "not by priority: {got:?}"
    );
    // Priorities above 7, and priorities on other dispatchers, are refused.
    let mut bad = rt.coop("bad");
    let rec = || Recorder {
        prio: 0,
        order: order.clone(),
    };
    assert!(bad.add(rec(), d.priority(8)).is_err());
    let one = rt.one_thread("one").unwrap();
    assert!(bad.add(rec(), one.priority(1)).is_err());
    assert!(bad.add(rec(), one.group("g")).is_err());
    let ag = rt.active_group("ag").unwrap();
    assert!(bad.add(rec(), &ag).is_err());
    coop.deregister();
    assert!(coop.wait_timeout(LONG));
}

/// Records `(priority, sequence)` tags in the order its handler sees them.
struct Tagged {
    order: Arc<Mutex<Vec<(u8, u32)>>>,
    started: Arc<Mutex<bool>>,
}
struct Tag(u8, u32);
/// Asks the agent to send itself `Tag`s at every priority, from its own
/// thread (the local queue).
struct Burst;

impl Agent for Tagged {
    fn define(def: &mut Definer<Self>) {
        def.on(|me: &mut Tagged, _: &mut Ctx<Tagged>, Tag(p, n): Tag| {
            assert!(*me.started.lock().unwrap(), "a message ran before on_start");
            me.order.lock().unwrap().push((p, n))
        })
        .on(|_: &mut Tagged, ctx: &mut Ctx<Tagged>, _: Burst| {
            let me = ctx.addr();
            for n in 0..24u32 {
                let p = (n * 5 % 8) as u8;
                me.send_with_priority(Tag(p, n), p);
            }
        });
    }
    fn on_start(&mut self, _: &mut Ctx<Self>) {
        *self.started.lock().unwrap() = true;
    }
}

/// Strictly by priority (higher first), FIFO within one priority.
fn by_message_priority(got: &[(u8, u32)]) -> bool {
    got.windows(2)
        .all(|w| w[0].0 > w[1].0 || (w[0].0 == w[1].0 && w[0].1 < w[1].1))
}

#[test]
fn priority_dispatcher_orders_by_message_priority() {
    let rt = runtime();
    let d = rt.priority("prio").unwrap();
    let (tx, rx) = mpsc::channel();
    let entered = Countdown::new(1);
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut coop = rt.coop("prio");
    let gate = coop
        .add(
            Gate {
                rx: Mutex::new(rx),
                entered: entered.clone(),
            },
            d.priority(7),
        )
        .unwrap();
    // One agent, default binding priority 0: the order comes from the
    // messages alone.
    let t = coop
        .add(
            Tagged {
                order: order.clone(),
                started: Arc::new(Mutex::new(false)),
            },
            &d,
        )
        .unwrap();
    let _coop = coop.register().unwrap();
    gate.send(Hold);
    assert!(entered.wait());
    // The thread is held: queue messages of mixed priorities from outside
    // (the remote queue), plus default-priority ones via `send`.
    for n in 0..40u32 {
        match n % 5 {
            0 => t.send(Tag(0, n)),
            _ => {
                let p = (n * 3 % 8) as u8;
                t.send_with_priority(Tag(p, n), p);
            }
        }
    }
    tx.send(()).unwrap();
    assert!(eventually(|| order.lock().unwrap().len() == 40));
    let got = std::mem::take(&mut *order.lock().unwrap());
    assert!(by_message_priority(&got), "remote: {got:?}");
    // The same from the agent's own thread (the local queues).
    t.send(Burst);
    assert!(eventually(|| order.lock().unwrap().len() == 24));
    let got = order.lock().unwrap().clone();
    assert!(by_message_priority(&got), "local: {got:?}");
    rt.shutdown();
}

#[test]
fn message_priority_is_ignored_by_fifo_dispatchers() {
    let rt = runtime();
    let d = rt.one_thread("fifo").unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut coop = rt.coop("fifo");
    let t = coop
        .add(
            Tagged {
                order: order.clone(),
                started: Arc::new(Mutex::new(false)),
            },
            &d,
        )
        .unwrap();
    let _coop = coop.register().unwrap();
    for n in 0..16u32 {
        t.send_with_priority(Tag((n % 8) as u8, n), (n % 8) as u8);
    }
    assert!(eventually(|| order.lock().unwrap().len() == 16));
    let got: Vec<u32> = order.lock().unwrap().iter().map(|&(_, n)| n).collect();
    assert_eq!(got, (0..16).collect::<Vec<_>>());
    rt.shutdown();
}

/// A ping-pong player that records, per delivery, whether the sender ran on
/// another thread, and stops the exchange after `last` deliveries.
struct Rally {
    peer: Option<takt_agents::Addr<Rally>>,
    handled: Arc<AtomicU64>,
    crossed: Arc<AtomicU64>,
    last: u64,
    /// Set to stop an endless rally (`last == u64::MAX`).
    stop: Arc<AtomicBool>,
    done: Arc<Countdown>,
}
struct Link(takt_agents::Addr<Rally>);
struct Shot(u64, ThreadId);

impl Agent for Rally {
    fn define(def: &mut Definer<Self>) {
        def.on(|me: &mut Rally, _: &mut Ctx<Rally>, Link(p): Link| me.peer = Some(p))
            .on(|me: &mut Rally, _: &mut Ctx<Rally>, Shot(n, from): Shot| {
                let here = std::thread::current().id();
                me.handled.fetch_add(1, Ordering::Relaxed);
                if from != here {
                    me.crossed.fetch_add(1, Ordering::Relaxed);
                }
                if n >= me.last || me.stop.load(Ordering::Relaxed) {
                    me.done.hit();
                } else if let Some(p) = &me.peer {
                    p.send(Shot(n + 1, here));
                }
            });
    }
    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        self.peer = None;
    }
}

/// A registered rally: the first player and the shared counters.
struct RallyRun {
    coop: takt_agents::CoopHandle,
    a: takt_agents::Addr<Rally>,
    handled: Arc<AtomicU64>,
    crossed: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    done: Arc<Countdown>,
}

/// Two linked players on `d`.
fn rally(rt: &RuntimeHandle, d: &Dispatcher, last: u64) -> RallyRun {
    let handled = Arc::new(AtomicU64::new(0));
    let crossed = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let done = Countdown::new(1);
    let mut coop = rt.coop("rally");
    let mk = || Rally {
        peer: None,
        handled: handled.clone(),
        crossed: crossed.clone(),
        last,
        stop: stop.clone(),
        done: done.clone(),
    };
    let a = coop.add(mk(), d).unwrap();
    let b = coop.add(mk(), d).unwrap();
    let coop = coop.register().unwrap();
    a.send(Link(b.clone()));
    b.send(Link(a.clone()));
    RallyRun {
        coop,
        a,
        handled,
        crossed,
        stop,
        done,
    }
}

#[test]
fn work_stealing_keeps_an_exchange_on_one_worker() {
    // The agent a worker wakes runs next on that worker (its next slot),
    // out of other workers' reach; only every NEXT_STREAK-th run goes
    // through the stealable deque. So at most a small share of deliveries
    // may cross threads — with a plain deque the idle worker steals often.
    let rt = runtime();
    let d = rt.work_stealing("ws", 2).unwrap();
    const N: u64 = 20_000;
    let RallyRun {
        coop,
        a,
        handled,
        crossed,
        done,
        ..
    } = rally(&rt, &d, N);
    let me = std::thread::current().id();
    a.send(Shot(1, me));
    assert!(done.wait());
    assert_eq!(handled.load(Ordering::Relaxed), N);
    let crossed = crossed.load(Ordering::Relaxed);
    assert!(
        crossed <= N / 16,
        "{crossed} of {N} deliveries crossed threads"
    );
    drop(a);
    coop.deregister();
    rt.shutdown();
}

/// Counts its deliveries.
struct Bystander(Arc<Countdown>);

impl Agent for Bystander {
    fn define(def: &mut Definer<Self>) {
        def.on(|me: &mut Bystander, _: &mut Ctx<Bystander>, _: Ping| me.0.hit());
    }
}

#[test]
fn work_stealing_next_slot_does_not_starve_queued_agents() {
    // One worker: an endless exchange always has its next agent in the
    // slot. An agent woken meanwhile must still run (the streak limit
    // sends the exchange through the deque now and then).
    let rt = runtime();
    let d = rt.work_stealing("ws1", 1).unwrap();
    let RallyRun {
        coop,
        a,
        stop,
        done,
        ..
    } = rally(&rt, &d, u64::MAX);
    let ran = Countdown::new(1);
    let mut c2 = rt.coop("bystander");
    let by = c2.add(Bystander(ran.clone()), &d).unwrap();
    let c2 = c2.register().unwrap();
    a.send(Shot(1, std::thread::current().id()));
    by.send(Ping);
    let ok = ran.wait();
    stop.store(true, Ordering::Relaxed);
    assert!(done.wait(), "the rally did not stop");
    assert!(ok, "an agent queued behind an endless exchange never ran");
    drop((a, by));
    coop.deregister();
    c2.deregister();
    rt.shutdown();
}
