//! takt's side of every agent benchmark: one function per benchmark, each
//! one run (set-up outside the timed region, the run's own timing inside).
//!
//! The definitions match the peers' ([`peers`](crate::peers)) exactly where a peer
//! runs the same benchmark: a *message* is one delivery; a ping-pong round
//! trip is two messages; a customer_ring token injected at agent
//! `j*N/M` is done after `N` hops (so `N*M` messages); skynet's leaves
//! reply their number and parents sum.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use takt_agents::{
    Addr, Agent, Config, CoopHandle, Ctx, Definer, Dispatcher, RegError, Runtime, RuntimeHandle,
    State,
};
use takt_sched::{SpinBudget, ThreadSpec};

use crate::placement::{thread_tag, CrossingCounter, Placement};

/// Why one run of a benchmark failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The runtime refused a dispatcher, an agent or a cooperation.
    #[error(transparent)]
    Runtime(#[from] RegError),
    /// The parameters describe no run: what the benchmark needs, and what
    /// it was given.
    #[error("{bench} needs {needs}{given}")]
    Params {
        /// The benchmark.
        bench: &'static str,
        /// What it needs.
        needs: &'static str,
        /// The values given (with their separator), or nothing.
        given: String,
    },
    /// The run did not complete within its deadline.
    #[error("benchmark run did not complete within {} s", RUN_DEADLINE.as_secs())]
    Deadline,
    /// The benchmark's cooperation did not finish after deregistration.
    #[error("benchmark cooperation did not finish")]
    Unfinished,
    /// A skynet node could not create its children.
    #[error("skynet: {step} of node {node}: {source}")]
    SkynetNode {
        /// `adding a child` or `registering the children`.
        step: &'static str,
        /// The node's number.
        node: u64,
        /// The runtime's refusal.
        source: RegError,
    },
    /// The run completed with a wrong result: a lost delivery, a wrong
    /// sum.
    #[error("{bench}: {got}, expected {expected}")]
    Wrong {
        /// The benchmark.
        bench: &'static str,
        /// What the run counted.
        got: String,
        /// What it should have counted.
        expected: u64,
    },
}

/// How long one run may take.
const RUN_DEADLINE: Duration = Duration::from_secs(600);

/// How the runtime's threads are made.
#[derive(Clone, Debug)]
pub struct TaktOpts {
    /// Spin budget of idle dispatcher threads.
    pub spin: SpinBudget,
    /// Base thread spec (CPU set, policy).
    pub thread: ThreadSpec,
}

impl TaktOpts {
    fn runtime(&self) -> Runtime {
        Runtime::new(Config {
            spin: self.spin,
            thread: self.thread.clone(),
            ..Config::default()
        })
    }
}

/// One run's result: the value (ns/msg or ms/run) and, where agents are
/// registered, the registration cost.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// ns per message, or ms per run for skynet.
    pub value: f64,
    /// µs per agent for registering (and starting) the benchmark's agents.
    pub registration_us_per_agent: Option<f64>,
    /// Wake-ups of a parked dispatcher thread per message over the timed
    /// region, where the value is per message.
    pub wakeups_per_msg: Option<f64>,
    /// Deliveries whose sender ran on another thread, over all deliveries,
    /// where the benchmark counts them (customer_ring on a pool; the
    /// first hop of each token, sent by the driver, counts as crossed).
    pub crossed: Option<f64>,
}

/// A one-shot signal from the runtime's threads to the driver.
#[derive(Default)]
struct Latch {
    done: Mutex<bool>,
    cv: Condvar,
}

impl Latch {
    fn set(&self) {
        *self.done.lock().unwrap() = true;
        self.cv.notify_all();
    }
    fn wait(&self) -> Result<(), RunError> {
        let deadline = Instant::now() + RUN_DEADLINE;
        let mut d = self.done.lock().unwrap();
        while !*d {
            let now = Instant::now();
            if now >= deadline {
                return Err(RunError::Deadline);
            }
            d = self.cv.wait_timeout(d, deadline - now).unwrap().0;
        }
        *d = false;
        Ok(())
    }
}

/// Counts down; the last one sets the latch.
struct Countdown {
    left: AtomicU64,
    latch: Latch,
}

impl Countdown {
    fn new(n: u64) -> Arc<Self> {
        Arc::new(Countdown {
            left: AtomicU64::new(n),
            latch: Latch::default(),
        })
    }
    fn hit(&self) {
        if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.latch.set();
        }
    }
}

fn finish(rt: Runtime, coop: &CoopHandle) -> Result<(), RunError> {
    coop.deregister();
    if !coop.wait_timeout(Duration::from_secs(120)) {
        return Err(RunError::Unfinished);
    }
    rt.shutdown();
    Ok(())
}

// ---------------------------------------------------------------- ping_pong

/// The ball: deliveries left after this one, and the sender's thread tag.
struct Ball {
    left: u64,
    from: u32,
}
struct SetPeer<A: Agent>(Addr<A>);

struct Player {
    peer: Option<Addr<Player>>,
    done: Arc<Countdown>,
    started: Arc<Countdown>,
    crossing: CrossingCounter,
    /// Where each player adds its counter when it finishes.
    totals: Arc<Mutex<CrossingCounter>>,
}

impl Agent for Player {
    fn define(def: &mut Definer<Self>) {
        def.on(
            |me: &mut Player, _: &mut Ctx<Player>, SetPeer(p): SetPeer<Player>| me.peer = Some(p),
        )
        .on(
            |me: &mut Player, _: &mut Ctx<Player>, Ball { left, from }: Ball| {
                let here = me.crossing.delivered(from);
                if left == 0 {
                    me.done.hit();
                } else if let Some(p) = &me.peer {
                    p.send(Ball {
                        left: left - 1,
                        from: here,
                    });
                }
            },
        );
    }
    fn on_start(&mut self, _: &mut Ctx<Self>) {
        self.started.hit();
    }
    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        // The players hold each other's address: break the cycle so the
        // run's cells are freed.
        self.peer = None;
        let mut t = self.totals.lock().unwrap_or_else(|p| p.into_inner());
        *t = t.merge(self.crossing);
    }
}

/// One `ping_pong` run: ns per message, the fraction of deliveries that
/// crossed threads and the wake-ups the run needed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PingPongSample {
    /// ns per message.
    pub value: f64,
    /// Deliveries whose sender ran on another thread, over all deliveries
    /// (the first of each ball is sent by the driver thread).
    pub crossed: f64,
    /// Wake-ups of a parked dispatcher thread per message, over the timed
    /// region ([`DispatcherStats::wakeups`](takt_agents::DispatcherStats)).
    pub wakeups_per_msg: f64,
    /// µs per agent for registering and starting the two players.
    pub registration_us_per_agent: f64,
}

/// Wake-ups `disp` has sent so far.
fn wakeups(disp: &Dispatcher) -> u64 {
    disp.stats().wakeups
}

/// `messages` deliveries between two agents placed as `placement` says:
/// one_thread, active_obj (a thread per agent) or a work_stealing pool of
/// two (the pool places them), with `in_flight` balls bouncing at once.
///
/// With one ball (the classic ping-pong) every delivery finds its receiver
/// waiting for it, so across threads it measures a hand-off to an idle
/// thread. With many, each agent's queue holds about half of them and its
/// thread rarely runs dry: across threads it measures a hand-off between
/// two busy threads. Ball `i` gets `messages / in_flight` deliveries, the
/// first `messages % in_flight` balls one more.
pub fn ping_pong(
    opts: &TaktOpts,
    messages: u64,
    in_flight: u64,
    placement: Placement,
) -> Result<PingPongSample, RunError> {
    if in_flight == 0 || messages < in_flight {
        return Err(RunError::Params {
            bench: "ping_pong",
            needs: "at least one ball and a message per ball",
            given: format!(" ({messages} messages, {in_flight} in flight)"),
        });
    }
    let rt = opts.runtime();
    let disp = match placement {
        Placement::OneThread => rt.one_thread("pp"),
        Placement::ThreadPerAgent => rt.active_obj("pp"),
        Placement::TwoWorkers => rt.work_stealing("pp", 2),
    }?;
    let done = Countdown::new(in_flight);
    let started = Countdown::new(2);
    let totals = Arc::new(Mutex::new(CrossingCounter::default()));
    let t0 = Instant::now();
    let mut coop = rt.coop("ping_pong");
    let mk = || Player {
        peer: None,
        done: done.clone(),
        started: started.clone(),
        crossing: CrossingCounter::default(),
        totals: totals.clone(),
    };
    let a = coop.add(mk(), &disp)?;
    let b = coop.add(mk(), &disp)?;
    let coop = coop.register()?;
    started.latch.wait()?;
    let reg = t0.elapsed().as_secs_f64() * 1e6 / 2.0;
    a.send(SetPeer(b.clone()));
    b.send(SetPeer(a.clone()));
    // `messages` deliveries: each ball is sent its share of times in total
    // (the first from here), its last receiver sees 0. Balls start at both
    // players alternately, so both queues fill from the start.
    let (share, extra) = (messages / in_flight, messages % in_flight);
    let from = thread_tag();
    let w0 = wakeups(&disp);
    let t = Instant::now();
    for i in 0..in_flight {
        let ball = Ball {
            left: share + u64::from(i < extra) - 1,
            from,
        };
        if i % 2 == 0 {
            a.send(ball);
        } else {
            b.send(ball);
        }
    }
    done.latch.wait()?;
    let ns = t.elapsed().as_nanos() as f64 / messages as f64;
    let woken = wakeups(&disp).saturating_sub(w0);
    drop((a, b));
    finish(rt, &coop)?;
    let totals = *totals.lock().unwrap_or_else(|p| p.into_inner());
    if totals.handled != messages {
        return Err(RunError::Wrong {
            bench: "ping_pong",
            got: format!("{} deliveries handled", totals.handled),
            expected: messages,
        });
    }
    Ok(PingPongSample {
        value: ns,
        crossed: totals.fraction(),
        wakeups_per_msg: woken as f64 / messages as f64,
        registration_us_per_agent: reg,
    })
}

// ------------------------------------------------------------ customer_ring

/// A token: hops left after this one, and (where the ring counts
/// crossings) the sender's thread tag.
struct Token {
    left: u32,
    from: u32,
}

struct Customer {
    next: Option<Addr<Customer>>,
    done: Arc<Countdown>,
    started: Arc<Countdown>,
    /// Counting crossings: on pools only, where the pool decides where each
    /// agent runs (the one-thread ring is compared with the peers, which do
    /// not count).
    count: bool,
    crossing: CrossingCounter,
    totals: Arc<Mutex<CrossingCounter>>,
}

impl Agent for Customer {
    fn define(def: &mut Definer<Self>) {
        def.on(
            |me: &mut Customer, _: &mut Ctx<Customer>, SetPeer(p): SetPeer<Customer>| {
                me.next = Some(p)
            },
        )
        .on(
            |me: &mut Customer, _: &mut Ctx<Customer>, Token { left, from }: Token| {
                let from = if me.count {
                    me.crossing.delivered(from)
                } else {
                    0
                };
                // This delivery is one hop; `left` hops remain after it.
                if left == 0 {
                    me.done.hit();
                } else if let Some(n) = &me.next {
                    n.send(Token {
                        left: left - 1,
                        from,
                    });
                }
            },
        );
    }
    fn on_start(&mut self, _: &mut Ctx<Self>) {
        self.started.hit();
    }
    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        // The ring's addresses form a cycle: break it so the cells are freed.
        self.next = None;
        if self.count {
            let mut t = self.totals.lock().unwrap_or_else(|p| p.into_inner());
            *t = t.merge(self.crossing);
        }
    }
}

/// Where the ring's agents run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingDispatcher {
    /// All on one thread.
    OneThread,
    /// A thread per agent.
    ActiveObj,
    /// Agents spread round-robin over `groups` active groups.
    ActiveGroup {
        /// Number of groups (threads).
        groups: usize,
    },
    /// A thread pool of `threads`.
    ThreadPool {
        /// Pool size.
        threads: usize,
    },
    /// A work-stealing pool of `threads`.
    WorkStealing {
        /// Pool size.
        threads: usize,
    },
}

impl RingDispatcher {
    /// Name for `params`.
    pub fn name(&self) -> &'static str {
        match self {
            RingDispatcher::OneThread => "one_thread",
            RingDispatcher::ActiveObj => "active_obj",
            RingDispatcher::ActiveGroup { .. } => "active_group",
            RingDispatcher::ThreadPool { .. } => "thread_pool",
            RingDispatcher::WorkStealing { .. } => "work_stealing",
        }
    }

    fn make(&self, rt: &RuntimeHandle) -> Result<Dispatcher, RegError> {
        match *self {
            RingDispatcher::OneThread => rt.one_thread("ring"),
            RingDispatcher::ActiveObj => rt.active_obj("ring"),
            RingDispatcher::ActiveGroup { .. } => rt.active_group("ring"),
            RingDispatcher::ThreadPool { threads } => rt.thread_pool("ring", threads),
            RingDispatcher::WorkStealing { threads } => rt.work_stealing("ring", threads),
        }
    }
}

/// `agents` in a ring, `tokens` tokens; token j starts at agent
/// `j*agents/tokens` and is done after `agents` hops.
pub fn customer_ring(
    opts: &TaktOpts,
    disp_kind: RingDispatcher,
    agents: usize,
    tokens: usize,
) -> Result<Sample, RunError> {
    if agents == 0 || tokens == 0 || agents > u32::MAX as usize {
        return Err(RunError::Params {
            bench: "customer_ring",
            needs: "1..2^32 agents and at least one token",
            given: String::new(),
        });
    }
    let rt = opts.runtime();
    let disp = disp_kind.make(&rt)?;
    let done = Countdown::new(tokens as u64);
    let started = Countdown::new(agents as u64);
    let count = matches!(
        disp_kind,
        RingDispatcher::ThreadPool { .. } | RingDispatcher::WorkStealing { .. }
    );
    let totals = Arc::new(Mutex::new(CrossingCounter::default()));
    let t0 = Instant::now();
    let mut coop = rt.coop("customer_ring");
    let mut addrs: Vec<Addr<Customer>> = Vec::with_capacity(agents);
    // Built last to first so each agent knows its successor at once.
    for i in (0..agents).rev() {
        let binding = match disp_kind {
            RingDispatcher::ActiveGroup { groups } => disp.group(format!("g{}", i % groups.max(1))),
            _ => disp.bind(),
        };
        let a = coop.add(
            Customer {
                next: addrs.last().cloned(),
                done: done.clone(),
                started: started.clone(),
                count,
                crossing: CrossingCounter::default(),
                totals: totals.clone(),
            },
            binding,
        )?;
        addrs.push(a);
    }
    let coop = coop.register()?;
    started.latch.wait()?;
    let reg = t0.elapsed().as_secs_f64() * 1e6 / agents as f64;
    addrs.reverse();
    addrs[agents - 1].send(SetPeer(addrs[0].clone()));
    let w0 = wakeups(&disp);
    let t = Instant::now();
    for j in 0..tokens {
        addrs[j * agents / tokens].send(Token {
            left: agents as u32 - 1,
            from: 0,
        });
    }
    done.latch.wait()?;
    let messages = agents as f64 * tokens as f64;
    let ns = t.elapsed().as_nanos() as f64 / messages;
    let woken = wakeups(&disp).saturating_sub(w0);
    drop(addrs);
    finish(rt, &coop)?;
    let totals = *totals.lock().unwrap_or_else(|p| p.into_inner());
    Ok(Sample {
        value: ns,
        registration_us_per_agent: Some(reg),
        wakeups_per_msg: Some(woken as f64 / messages),
        crossed: count.then(|| totals.fraction()),
    })
}

// ------------------------------------------------------------------ skynet

struct Sum(u64);

struct Node {
    level: u32,
    levels: u32,
    num: u64,
    parent: Option<Addr<Node>>,
    sum: u64,
    replies: u32,
    children: Option<CoopHandle>,
    done: Option<Arc<(Arc<Countdown>, AtomicU64)>>,
    /// The first node that cannot create its children says why here and
    /// releases the driver, which would otherwise wait for a sum that
    /// never comes.
    failed: Arc<(Mutex<Option<RunError>>, Arc<Countdown>)>,
    disp: Dispatcher,
}

impl Agent for Node {
    fn define(def: &mut Definer<Self>) {
        def.on(|me: &mut Node, ctx: &mut Ctx<Node>, Sum(s): Sum| {
            me.sum += s;
            me.replies += 1;
            if me.replies == 10 {
                if let Some(c) = me.children.take() {
                    c.deregister();
                }
                me.report(ctx);
            }
        });
    }
    fn on_start(&mut self, ctx: &mut Ctx<Self>) {
        if self.level == self.levels {
            self.sum = self.num;
            self.report(ctx);
            return;
        }
        let me = ctx.addr();
        let mut coop = ctx.coop().child("skynet");
        for k in 0..10 {
            let child = Node {
                level: self.level + 1,
                levels: self.levels,
                num: self.num * 10 + k,
                parent: Some(me.clone()),
                sum: 0,
                replies: 0,
                children: None,
                done: None,
                failed: self.failed.clone(),
                disp: self.disp.clone(),
            };
            if let Err(source) = coop.add(child, &self.disp) {
                return self.fail(RunError::SkynetNode {
                    step: "adding a child",
                    node: self.num,
                    source,
                });
            }
        }
        match coop.register() {
            Ok(c) => self.children = Some(c),
            Err(source) => self.fail(RunError::SkynetNode {
                step: "registering the children",
                node: self.num,
                source,
            }),
        }
    }
}

impl Node {
    fn fail(&self, why: RunError) {
        self.failed.0.lock().unwrap().get_or_insert(why);
        self.failed.1.hit();
    }

    fn report(&mut self, _ctx: &mut Ctx<Self>) {
        match (&self.parent, &self.done) {
            (Some(p), _) => p.send(Sum(self.sum)),
            (None, Some(d)) => {
                d.1.store(self.sum, Ordering::SeqCst);
                d.0.hit();
            }
            (None, None) => {}
        }
    }
}

/// Skynet over `leaves` (a power of ten) leaf agents on a one_thread
/// dispatcher; returns ms per run and the check sum.
pub fn skynet(opts: &TaktOpts, leaves: u64) -> Result<Sample, RunError> {
    let levels = (leaves as f64).log10().round() as u32;
    if 10u64.pow(levels) != leaves || levels == 0 {
        return Err(RunError::Params {
            bench: "skynet",
            needs: "a power of ten leaves",
            given: format!(", got {leaves}"),
        });
    }
    let rt = opts.runtime();
    let disp = rt.one_thread("skynet")?;
    let done = Arc::new((Countdown::new(1), AtomicU64::new(0)));
    let failed = Arc::new((Mutex::new(None), done.0.clone()));
    let t = Instant::now();
    let mut coop = rt.coop("skynet-root");
    coop.add(
        Node {
            level: 0,
            levels,
            num: 0,
            parent: None,
            sum: 0,
            replies: 0,
            children: None,
            done: Some(done.clone()),
            failed: failed.clone(),
            disp: disp.clone(),
        },
        &disp,
    )?;
    let root = coop.register()?;
    done.0.latch.wait()?;
    let ms = t.elapsed().as_secs_f64() * 1e3;
    if let Some(why) = failed.0.lock().unwrap().take() {
        finish(rt, &root)?;
        return Err(why);
    }
    let sum = done.1.load(Ordering::SeqCst);
    let expect = leaves * (leaves - 1) / 2;
    if sum != expect {
        return Err(RunError::Wrong {
            bench: "skynet",
            got: format!("sum {sum}"),
            expected: expect,
        });
    }
    finish(rt, &root)?;
    Ok(Sample {
        value: ms,
        registration_us_per_agent: None,
        wakeups_per_msg: None,
        crossed: None,
    })
}

// ----------------------------------------------------- the seed's benches

struct Flood {
    n: u64,
    mode: FloodMode,
    processed: u64,
    /// (ns sending, ns processing after the sends).
    times: Arc<(AtomicU64, AtomicU64)>,
    done: Arc<Countdown>,
    t_sent: Option<Instant>,
    peer: Option<Addr<Sink>>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum FloodMode {
    /// Send messages nobody handles.
    SendOnly,
    /// Send to self, then process them.
    SendAndProcess,
    /// Insend to a peer on the same thread: each runs inside the send.
    Insend,
}

struct Item(u64);

/// The insend target.
struct Sink {
    seen: u64,
}

impl Agent for Sink {
    fn define(def: &mut Definer<Self>) {
        def.on(|me: &mut Sink, _: &mut Ctx<Sink>, Item(k): Item| me.seen += k);
    }
}

impl Agent for Flood {
    fn define(def: &mut Definer<Self>) {
        def.on(|me: &mut Flood, _: &mut Ctx<Flood>, Item(_): Item| {
            me.processed += 1;
            if me.processed == me.n {
                let t = me.t_sent.take().expect("set before sending");
                me.times
                    .1
                    .store(t.elapsed().as_nanos() as u64, Ordering::SeqCst);
                me.done.hit();
            }
        })
        .on(|me: &mut Flood, ctx: &mut Ctx<Flood>, _: Go| {
            let t = Instant::now();
            match me.mode {
                FloodMode::SendOnly => {
                    for i in 0..me.n {
                        ctx.send_self(Unwanted(i));
                    }
                }
                FloodMode::SendAndProcess => {
                    for i in 0..me.n {
                        ctx.send_self(Item(i));
                    }
                }
                FloodMode::Insend => {
                    let p = me.peer.as_ref().expect("insend peer");
                    for i in 0..me.n {
                        p.insend(Item(i));
                    }
                }
            }
            let el = t.elapsed();
            me.times.0.store(el.as_nanos() as u64, Ordering::SeqCst);
            me.t_sent = Some(Instant::now());
            if me.mode != FloodMode::SendAndProcess {
                me.done.hit();
            }
        });
    }
}

struct Go;
struct Unwanted(#[allow(dead_code)] u64);

/// The seed's `send_msg`: one agent sends `n` messages nobody handles;
/// ns per send.
pub fn send_msg(opts: &TaktOpts, n: u64) -> Result<f64, RunError> {
    flood(opts, n, FloodMode::SendOnly).map(|(s, _)| s)
}

/// The seed's `send_and_process_msg`: one agent sends `n` messages to
/// itself, then handles them; (ns per send, ns per processed message).
pub fn send_and_process_msg(opts: &TaktOpts, n: u64) -> Result<(f64, f64), RunError> {
    flood(opts, n, FloodMode::SendAndProcess).map(|(s, p)| (s, p.unwrap_or(f64::NAN)))
}

/// The seed's `insend_and_process_msg`: `n` insend events, each handled
/// inside its send; ns per message (send and process).
pub fn insend_and_process_msg(opts: &TaktOpts, n: u64) -> Result<f64, RunError> {
    flood(opts, n, FloodMode::Insend).map(|(s, _)| s)
}

fn flood(opts: &TaktOpts, n: u64, mode: FloodMode) -> Result<(f64, Option<f64>), RunError> {
    let rt = opts.runtime();
    let disp = rt.one_thread("flood")?;
    let times = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
    let done = Countdown::new(1);
    let mut coop = rt.coop("flood");
    let peer = coop.add(Sink { seen: 0 }, &disp)?;
    let a = coop.add(
        Flood {
            n,
            mode,
            processed: 0,
            times: times.clone(),
            done: done.clone(),
            t_sent: None,
            peer: Some(peer),
        },
        &disp,
    )?;
    let coop = coop.register()?;
    a.send(Go);
    done.latch.wait()?;
    let send = times.0.load(Ordering::SeqCst) as f64 / n as f64;
    let process = (mode == FloodMode::SendAndProcess)
        .then(|| times.1.load(Ordering::SeqCst) as f64 / n as f64);
    finish(rt, &coop)?;
    Ok((send, process))
}

// ------------------------------------------------- process_state_changes

/// Event `I` of the 10-state agent of [`process_state_changes_types`].
struct Ev<const I: usize>;

/// The one message type of [`process_state_changes`], handled in each of
/// the ten states.
struct Tick;

struct Stately {
    n: u64,
    processed: u64,
    done: Arc<Countdown>,
    times: Arc<(AtomicU64, AtomicU64)>,
    t_sent: Option<Instant>,
    /// Send one [`Tick`] type (the seed's way) or ten [`Ev`] types.
    one_type: bool,
}

const STATES: usize = 10;

impl Stately {
    /// Handled one more message after changing state: the last one
    /// records the processing time.
    fn handled(&mut self) {
        self.processed += 1;
        if self.processed == self.n {
            let t = self.t_sent.take().expect("set after sending");
            self.times
                .1
                .store(t.elapsed().as_nanos() as u64, Ordering::SeqCst);
            self.done.hit();
        }
    }
}

fn on_ev<const I: usize>(me: &mut Stately, ctx: &mut Ctx<Stately>, _: Ev<I>) {
    ctx.change_state(State::new(((I + 1) % STATES) as u16));
    me.handled();
}

fn on_tick<const I: usize>(me: &mut Stately, ctx: &mut Ctx<Stately>, _: Tick) {
    ctx.change_state(State::new(((I + 1) % STATES) as u16));
    me.handled();
}

fn send_ev<const I: usize>(ctx: &Ctx<Stately>) {
    ctx.send_self(Ev::<I>);
}

impl Agent for Stately {
    fn define(def: &mut Definer<Self>) {
        def.state(State::new(0)).on(on_ev::<0>).on(on_tick::<0>);
        def.state(State::new(1)).on(on_ev::<1>).on(on_tick::<1>);
        def.state(State::new(2)).on(on_ev::<2>).on(on_tick::<2>);
        def.state(State::new(3)).on(on_ev::<3>).on(on_tick::<3>);
        def.state(State::new(4)).on(on_ev::<4>).on(on_tick::<4>);
        def.state(State::new(5)).on(on_ev::<5>).on(on_tick::<5>);
        def.state(State::new(6)).on(on_ev::<6>).on(on_tick::<6>);
        def.state(State::new(7)).on(on_ev::<7>).on(on_tick::<7>);
        def.state(State::new(8)).on(on_ev::<8>).on(on_tick::<8>);
        def.state(State::new(9)).on(on_ev::<9>).on(on_tick::<9>);
        def.on(|me: &mut Stately, ctx: &mut Ctx<Stately>, _: Go| {
            let t = Instant::now();
            if me.one_type {
                for _ in 0..me.n {
                    ctx.send_self(Tick);
                }
            } else {
                let senders: [fn(&Ctx<Stately>); STATES] = [
                    send_ev::<0>,
                    send_ev::<1>,
                    send_ev::<2>,
                    send_ev::<3>,
                    send_ev::<4>,
                    send_ev::<5>,
                    send_ev::<6>,
                    send_ev::<7>,
                    send_ev::<8>,
                    send_ev::<9>,
                ];
                for i in 0..me.n {
                    senders[(i % STATES as u64) as usize](ctx);
                }
            }
            me.times
                .0
                .store(t.elapsed().as_nanos() as u64, Ordering::SeqCst);
            me.t_sent = Some(Instant::now());
        });
    }
}

/// The seed's `process_state_changes`: an agent with 10 states sends
/// itself `n` messages of one type, which has a handler in each state
/// (the message is the incident of ten events, as the seed puts it), then
/// handles them, each handler moving it to the next state; (ns per send,
/// ns per processed message).
pub fn process_state_changes(opts: &TaktOpts, n: u64) -> Result<(f64, f64), RunError> {
    states_run(opts, n, true)
}

/// A variant of [`process_state_changes`] with ten message types, one
/// handled in each state (the `i`-th message sent is of type `i % 10`);
/// (ns per send, ns per processed message).
pub fn process_state_changes_types(opts: &TaktOpts, n: u64) -> Result<(f64, f64), RunError> {
    states_run(opts, n, false)
}

fn states_run(opts: &TaktOpts, n: u64, one_type: bool) -> Result<(f64, f64), RunError> {
    let rt = opts.runtime();
    let disp = rt.one_thread("states")?;
    let done = Countdown::new(1);
    let times = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
    let mut coop = rt.coop("states");
    let a = coop.add(
        Stately {
            n,
            processed: 0,
            done: done.clone(),
            times: times.clone(),
            t_sent: None,
            one_type,
        },
        &disp,
    )?;
    let coop = coop.register()?;
    a.send(Go);
    done.latch.wait()?;
    let send = times.0.load(Ordering::SeqCst) as f64 / n as f64;
    let process = times.1.load(Ordering::SeqCst) as f64 / n as f64;
    finish(rt, &coop)?;
    Ok((send, process))
}

// ------------------------------------------------- send_agents_msg_self

/// What the agents of one `send_agents_msg_self` run share.
struct SelfShared {
    /// Every agent's address, set once after registration.
    addrs: std::sync::OnceLock<Vec<Addr<Member>>>,
    /// Sender events still to run; the last one records the end time.
    senders_left: AtomicU64,
    /// Messages still to be delivered (the run ends at 0).
    items_left: AtomicU64,
    start: Mutex<Option<Instant>>,
    elapsed_ns: AtomicU64,
    done: Arc<Countdown>,
}

/// One of the N registered agents. Those chosen as senders get one `Fire`
/// and send one `Item` to the agent `pick` names.
struct Member {
    /// Dropped in `on_finish`: the shared block holds every address, so
    /// keeping it would make a reference cycle.
    shared: Option<Arc<SelfShared>>,
    pick: u32,
}

/// Queued by the starter: this agent is one of the M senders.
struct Fire;

impl Agent for Member {
    fn define(def: &mut Definer<Self>) {
        def.on(|me: &mut Member, _: &mut Ctx<Member>, _: Fire| {
            let Some(sh) = &me.shared else { return };
            if let Some(addrs) = sh.addrs.get() {
                addrs[me.pick as usize].send(Item(0));
            }
            if sh.senders_left.fetch_sub(1, Ordering::Relaxed) == 1 {
                let start = sh.start.lock().unwrap().take();
                if let Some(t) = start {
                    sh.elapsed_ns
                        .store(t.elapsed().as_nanos() as u64, Ordering::SeqCst);
                }
            }
        })
        .on(|me: &mut Member, _: &mut Ctx<Member>, Item(_): Item| {
            let Some(sh) = &me.shared else { return };
            if sh.items_left.fetch_sub(1, Ordering::Relaxed) == 1 {
                sh.done.hit();
            }
        });
    }
    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        self.shared = None;
    }
}

/// How `send_agents_msg_self` times its M sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SendTiming {
    /// The seed's way: one handler sends the M messages, each to a
    /// randomly chosen agent; the loop of sends is timed.
    Sends,
    /// Each of M agents sends one from its own handler; the M sender
    /// events are timed, each send with its sender's dispatch around it.
    Dispatched,
}

/// [`SendTiming::Sends`]: sends one `Item` to each of `to`, timed.
/// [`SendTiming::Dispatched`]: queues one `Fire` to each of `to` (the
/// senders) from the agents' own thread, then starts the clock: the
/// timed region is exactly the M sender events.
struct Starter {
    to: Vec<Addr<Member>>,
    timing: SendTiming,
    shared: Arc<SelfShared>,
}

impl Agent for Starter {
    fn define(def: &mut Definer<Self>) {
        def.on(
            |me: &mut Starter, _: &mut Ctx<Starter>, _: Go| match me.timing {
                SendTiming::Sends => {
                    let t = Instant::now();
                    for s in &me.to {
                        s.send(Item(0));
                    }
                    me.shared
                        .elapsed_ns
                        .store(t.elapsed().as_nanos() as u64, Ordering::SeqCst);
                }
                SendTiming::Dispatched => {
                    for s in &me.to {
                        s.send(Fire);
                    }
                    *me.shared.start.lock().unwrap() = Some(Instant::now());
                }
            },
        );
    }
}

/// The seed's `send_agents_msg_self`: `agents` agents are registered and
/// `messages` messages are sent, each to a randomly chosen agent; the
/// sends are timed, as the seed times them (one handler sends them all;
/// the deliveries run after the timed region); ns per send.
pub fn send_agents_msg_self(
    opts: &TaktOpts,
    agents: usize,
    messages: usize,
) -> Result<f64, RunError> {
    agents_msg(opts, agents, messages, SendTiming::Sends)
}

/// A variant of [`send_agents_msg_self`] in which `messages` of the agents
/// (chosen at random, each at most once) each send one message to a
/// randomly chosen agent, from their own handler; ns per send. The clock
/// runs from the moment the M sender events are queued (behind nothing)
/// to the end of the last one, so each send is measured with its sender's
/// dispatch around it, as an agent's send happens in practice; the
/// deliveries run after the timed region (FIFO: they are queued behind
/// the sender events).
pub fn send_agents_msg_self_dispatched(
    opts: &TaktOpts,
    agents: usize,
    messages: usize,
) -> Result<f64, RunError> {
    agents_msg(opts, agents, messages, SendTiming::Dispatched)
}

fn agents_msg(
    opts: &TaktOpts,
    agents: usize,
    messages: usize,
    timing: SendTiming,
) -> Result<f64, RunError> {
    if agents == 0 || messages == 0 || messages > agents {
        return Err(RunError::Params {
            bench: "send_agents_msg_self",
            needs: "1 <= M <= N",
            given: format!(" (N={agents} agents, M={messages} senders)"),
        });
    }
    let rt = opts.runtime();
    let disp = rt.one_thread("agents")?;
    // xorshift: a fixed, reproducible random choice.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move |n: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n as u64) as usize
    };
    let done = Countdown::new(1);
    let shared = Arc::new(SelfShared {
        addrs: std::sync::OnceLock::new(),
        senders_left: AtomicU64::new(match timing {
            SendTiming::Sends => 0,
            SendTiming::Dispatched => messages as u64,
        }),
        items_left: AtomicU64::new(messages as u64),
        start: Mutex::new(None),
        elapsed_ns: AtomicU64::new(0),
        done: done.clone(),
    });
    let mut coop = rt.coop("agents");
    let mut addrs = Vec::with_capacity(agents);
    for _ in 0..agents {
        let m = Member {
            shared: Some(shared.clone()),
            pick: next(agents) as u32,
        };
        addrs.push(coop.add(m, &disp)?);
    }
    let to = match timing {
        // M receivers chosen at random, with the SObjectizer driver's
        // sequence (a generator of their own, from the same seed).
        SendTiming::Sends => {
            let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
            (0..messages)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    addrs[(x % agents as u64) as usize].clone()
                })
                .collect()
        }
        // The M senders: a random sample without repetition (partial
        // Fisher–Yates over the agents' indices).
        SendTiming::Dispatched => {
            let mut idx: Vec<usize> = (0..agents).collect();
            for i in 0..messages {
                let j = i + next(agents - i);
                idx.swap(i, j);
            }
            idx[..messages].iter().map(|&i| addrs[i].clone()).collect()
        }
    };
    let _ = shared.addrs.set(addrs);
    let starter = coop.add(
        Starter {
            to,
            timing,
            shared: shared.clone(),
        },
        &disp,
    )?;
    let coop = coop.register()?;
    starter.send(Go);
    done.latch.wait()?;
    let ns = shared.elapsed_ns.load(Ordering::SeqCst) as f64 / messages as f64;
    drop(starter);
    // The agents let go of the shared block in `on_finish`; ours, dropped
    // at the end, is then the last, and with it every address.
    finish(rt, &coop)?;
    Ok(ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> TaktOpts {
        TaktOpts {
            spin: SpinBudget::from_micros(5),
            thread: ThreadSpec::default(),
        }
    }

    #[test]
    fn ping_pong_runs_in_every_placement_and_counts_crossings() {
        for placement in Placement::ALL {
            let s = ping_pong(&opts(), 1000, 1, placement).unwrap();
            assert!(s.value.is_finite() && s.value > 0.0, "{s:?}");
            assert!(s.registration_us_per_agent > 0.0, "{s:?}");
            assert!(
                s.wakeups_per_msg >= 0.0 && s.wakeups_per_msg <= 1.0,
                "{s:?}"
            );
            match placement {
                // Only the first delivery (sent by this thread) crossed.
                Placement::OneThread => assert_eq!(s.crossed, 1.0 / 1000.0),
                Placement::ThreadPerAgent => assert_eq!(s.crossed, 1.0),
                Placement::TwoWorkers => assert!((0.0..=1.0).contains(&s.crossed), "{s:?}"),
            }
        }
    }

    /// Many balls: every delivery is counted once (1003 over 10 balls: the
    /// first three get one more), and across a thread per agent every one
    /// crosses; nonsense windows are refused.
    #[test]
    fn ping_pong_keeps_a_window_of_balls_in_flight() {
        let s = ping_pong(&opts(), 1003, 10, Placement::ThreadPerAgent).unwrap();
        assert_eq!(s.crossed, 1.0, "{s:?}");
        let s = ping_pong(&opts(), 1003, 10, Placement::OneThread).unwrap();
        // the ten first deliveries come from this thread
        assert_eq!(s.crossed, 10.0 / 1003.0, "{s:?}");
        // the driver's first sends may wake the thread, nothing else does
        assert!(s.wakeups_per_msg * 1003.0 <= 10.0, "{s:?}");
        assert!(ping_pong(&opts(), 9, 10, Placement::OneThread).is_err());
        assert!(ping_pong(&opts(), 9, 0, Placement::OneThread).is_err());
    }

    /// Pools count the ring's crossings; the one-thread ring (the one the
    /// peers run too) does not.
    #[test]
    fn customer_ring_counts_crossings_on_pools_only() {
        let one = customer_ring(&opts(), RingDispatcher::OneThread, 100, 10).unwrap();
        assert_eq!(one.crossed, None);
        assert!(one.wakeups_per_msg.is_some_and(|u| u <= 0.1), "{one:?}");
        let pool =
            customer_ring(&opts(), RingDispatcher::ThreadPool { threads: 2 }, 100, 10).unwrap();
        // at least the ten hops the driver sent crossed
        assert!(
            pool.crossed.is_some_and(|c| (0.01..=1.0).contains(&c)),
            "{pool:?}"
        );
    }

    /// Completes only when every one of the M senders' messages has been
    /// delivered (the done latch), and refuses M > N.
    #[test]
    fn send_agents_msg_self_has_m_senders_of_n_agents() {
        for run in [send_agents_msg_self, send_agents_msg_self_dispatched] {
            let ns = run(&opts(), 200, 150).unwrap();
            assert!(ns.is_finite() && ns > 0.0);
            let ns = run(&opts(), 50, 50).unwrap();
            assert!(ns.is_finite() && ns > 0.0);
            assert!(run(&opts(), 10, 11).is_err());
            assert!(run(&opts(), 0, 0).is_err());
        }
    }

    /// One message type handled in each of ten states, and ten types one
    /// per state: both process every message they sent.
    #[test]
    fn process_state_changes_both_ways_handle_every_message() {
        for run in [process_state_changes, process_state_changes_types] {
            let (send, process) = run(&opts(), 1003).unwrap();
            assert!(send.is_finite() && send > 0.0);
            assert!(process.is_finite() && process > 0.0);
        }
    }
}
