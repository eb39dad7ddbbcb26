//! Request/reply (blocking and async), named mailboxes, tracing,
//! registration from inside a handler.

mod common;

use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use common::*;
use takt_agents::{Agent, AskError, Ctx, Definer, Pending, TraceFilter, TraceKind, Tracer};

struct Calc;
struct Slow(u64);

impl Agent for Calc {
    fn define(def: &mut Definer<Self>) {
        def.on_ask(|_: &mut Calc, _: &mut Ctx<Calc>, x: u64| x * 2)
            .on_ask(|_: &mut Calc, _: &mut Ctx<Calc>, Slow(x): Slow| {
                std::thread::sleep(Duration::from_millis(200));
                x
            })
            .on(|_: &mut Calc, ctx: &mut Ctx<Calc>, x: u32| {
                // Blocking on our own thread would deadlock: refused.
                let me = ctx.addr();
                let r = me
                    .ask::<u64, u64>(x as u64)
                    .wait_timeout(Duration::from_secs(1));
                assert_eq!(r, Err(AskError::WouldDeadlock));
            });
    }
}

/// A minimal executor: polls on this thread, parks between polls.
fn block_on<F: Future>(f: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut f = pin!(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park_timeout(Duration::from_millis(100));
    }
}

#[test]
fn ask_blocking_async_timeout_and_no_reply() {
    let rt = runtime();
    let d = rt.one_thread("d").unwrap();
    let mut coop = rt.coop("calc");
    let calc = coop.add(Calc, &d).unwrap();
    let coop = coop.register().unwrap();
    // Blocking, from a plain thread.
    assert_eq!(calc.ask::<u64, u64>(21).wait_timeout(LONG), Ok(42));
    // Async, from any executor.
    let p: Pending<u64> = calc.ask(5u64);
    assert_eq!(block_on(p), Ok(10));
    // Timeout: blocking and async.
    assert_eq!(
        calc.ask::<Slow, u64>(Slow(1))
            .wait_timeout(Duration::from_millis(10)),
        Err(AskError::Timeout)
    );
    let p = calc.ask_timeout::<Slow, u64>(Slow(2), Duration::from_millis(10));
    assert_eq!(block_on(p), Err(AskError::Timeout));
    // No handler for this query type: the reply fails at once.
    assert_eq!(
        calc.ask::<String, u64>("x".into()).wait_timeout(LONG),
        Err(AskError::NoReply)
    );
    calc.send(3u32);
    coop.deregister();
    assert!(coop.wait_timeout(LONG));
    // Finished agent: no reply.
    assert_eq!(
        calc.ask::<u64, u64>(1).wait_timeout(LONG),
        Err(AskError::NoReply)
    );
    assert!(rt.panics().is_empty(), "{:?}", rt.panics());
}

#[derive(Clone, Debug, PartialEq)]
struct Quote(u32);

struct Watcher {
    got: Arc<Mutex<Vec<(usize, u32)>>>,
    me: usize,
}

impl Agent for Watcher {
    fn define(def: &mut Definer<Self>) {
        def.on(|w: &mut Watcher, _: &mut Ctx<Watcher>, Quote(q): Quote| {
            w.got.lock().unwrap().push((w.me, q))
        });
    }
}

#[test]
fn named_mailbox_reaches_every_subscriber() {
    let rt = runtime();
    let d1 = rt.one_thread("d1").unwrap();
    let d2 = rt.thread_pool("d2", 2).unwrap();
    let got = Arc::new(Mutex::new(Vec::new()));
    let mut coop = rt.coop("watchers");
    let w0 = coop
        .add(
            Watcher {
                got: got.clone(),
                me: 0,
            },
            &d1,
        )
        .unwrap();
    let w1 = coop
        .add(
            Watcher {
                got: got.clone(),
                me: 1,
            },
            &d2,
        )
        .unwrap();
    let coop = coop.register().unwrap();
    let mbox = rt.mbox::<Quote>("quotes").unwrap();
    mbox.subscribe(&w0);
    mbox.subscribe(&w1);
    mbox.subscribe(&w1); // once only
    assert_eq!(mbox.subscribers(), 2);
    // The same name gives the same mailbox; another type is refused.
    assert_eq!(rt.mbox::<Quote>("quotes").unwrap().subscribers(), 2);
    assert!(rt.mbox::<u32>("quotes").is_err());
    for q in 0..100 {
        assert_eq!(mbox.publish(Quote(q)), 2);
    }
    assert!(eventually(|| got.lock().unwrap().len() == 200));
    for who in 0..2 {
        let mine: Vec<u32> = got
            .lock()
            .unwrap()
            .iter()
            .filter(|g| g.0 == who)
            .map(|g| g.1)
            .collect();
        assert_eq!(mine, (0..100).collect::<Vec<_>>(), "subscriber {who}");
    }
    assert!(mbox.unsubscribe(w0.id()));
    assert_eq!(mbox.publish(Quote(7)), 1);
    coop.deregister();
    assert!(coop.wait_timeout(LONG));
    assert_eq!(
        mbox.publish(Quote(8)),
        0,
        "finished subscribers are dropped"
    );
}

struct Spawner {
    done: Arc<Countdown>,
}
struct Child {
    done: Arc<Countdown>,
}
impl Agent for Child {
    fn define(_: &mut Definer<Self>) {}
    fn on_start(&mut self, _: &mut Ctx<Self>) {
        self.done.hit();
    }
}
impl Agent for Spawner {
    fn define(def: &mut Definer<Self>) {
        def.on(|me: &mut Spawner, ctx: &mut Ctx<Spawner>, n: u32| {
            let rt = ctx.runtime();
            let d = rt.one_thread("kids").unwrap();
            let mut c = ctx.coop().child("kids");
            for _ in 0..n {
                c.add(
                    Child {
                        done: me.done.clone(),
                    },
                    &d,
                )
                .unwrap();
            }
            c.register().unwrap();
        });
    }
}

#[test]
fn agents_register_agents_and_traces_see_them() {
    let rt = runtime();
    let d = rt.one_thread("d").unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let ev = events.clone();
    rt.set_tracer(Some(Tracer::new(
        TraceFilter::default()
            .message_type("u32")
            .kinds(&[TraceKind::Send, TraceKind::Deliver]),
        move |e| ev.lock().unwrap().push(e.clone()),
    )));
    let done = Countdown::new(50);
    let mut coop = rt.coop("spawner");
    let s = coop.add(Spawner { done: done.clone() }, &d).unwrap();
    let coop = coop.register().unwrap();
    s.send(50u32);
    assert!(done.wait());
    rt.set_tracer(None);
    s.send(1u32); // not traced any more
    let ev = events.lock().unwrap().clone();
    assert_eq!(ev.len(), 2, "{ev:?}");
    assert_eq!(ev[0].kind, TraceKind::Send);
    assert_eq!(ev[0].from, None);
    assert_eq!(ev[0].to, s.id());
    assert_eq!(ev[1].kind, TraceKind::Deliver);
    coop.deregister();
    assert!(coop.wait_timeout(LONG));
    let stats = rt.dispatcher_stats();
    assert!(stats.iter().any(|s| s.name == "kids" && s.events >= 50));
}

#[test]
fn typed_handles_hide_the_agent_type() {
    use takt_agents::{pending, Recipient, Requester};
    let rt = runtime();
    let d = rt.one_thread("d").unwrap();
    let got = Arc::new(Mutex::new(Vec::new()));
    let mut coop = rt.coop("handles");
    let w = coop
        .add(
            Watcher {
                got: got.clone(),
                me: 0,
            },
            &d,
        )
        .unwrap();
    let calc = coop.add(Calc, &d).unwrap();
    let coop = coop.register().unwrap();
    // An agent and a mailbox behind the same handle type.
    let mbox = rt.mbox::<Quote>("handle-quotes").unwrap();
    mbox.subscribe(&w);
    let targets: Vec<Recipient<Quote>> = vec![w.recipient(), mbox.recipient()];
    for (i, t) in targets.iter().enumerate() {
        assert!(t.is_open());
        t.send(Quote(i as u32));
    }
    assert!(eventually(|| got.lock().unwrap().len() == 2));
    assert_eq!(*got.lock().unwrap(), vec![(0, 0), (0, 1)]);
    // Asking through a requester: blocking, async, with a timeout.
    let ask: Requester<u64, u64> = calc.requester();
    assert_eq!(ask.ask(4).wait_timeout(LONG), Ok(8));
    assert_eq!(block_on(ask.ask_timeout(5, LONG)), Ok(10));
    let slow: Requester<Slow, u64> = calc.requester();
    assert_eq!(
        block_on(slow.ask_timeout(Slow(1), Duration::from_millis(10))),
        Err(AskError::Timeout)
    );
    // A reply slot completed from outside the runtime.
    let (promise, p) = pending::<u32>();
    assert!(!promise.is_abandoned());
    std::thread::spawn(move || promise.fulfil(7));
    assert_eq!(block_on(p), Ok(7));
    let (promise, p) = pending::<u32>();
    promise.fail(AskError::Unreachable);
    assert_eq!(p.wait(), Err(AskError::Unreachable));
    let (promise, p) = pending::<u32>();
    drop(p);
    assert!(promise.is_abandoned());
    drop(promise);
    let (promise, p) = pending::<u32>();
    drop(promise);
    assert_eq!(p.wait(), Err(AskError::NoReply));
    coop.deregister();
    assert!(coop.wait_timeout(LONG));
    assert!(!w.recipient::<Quote>().is_open());
}
