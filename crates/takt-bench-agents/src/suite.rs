//! The suite: its plan (full and `--quick`), the rows it writes and the
//! seed's published figures beside them.

use std::time::Duration;

use serde_json::{Map, Value};
use takt_sched::{SpinBudget, ThreadSpec};

use takt_measure::params;
use takt_measure::result::{Better, Document, DocumentBuilder, ResultRow};
use takt_measure::suite::{RunContext, Suite};

use crate::error::AgentsError;
use crate::placement::Placement;
use crate::runs::{self, RingDispatcher, Sample, TaktOpts};

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// The reduced set (under 90 s on a 2-core machine).
    pub quick: bool,
    /// Add the peer runtimes' rows.
    pub peers: bool,
    /// Spin budget of takt's dispatcher threads.
    pub spin: SpinBudget,
    /// Base spec of takt's dispatcher threads (`--cpus`, `--sched`).
    pub thread: ThreadSpec,
    /// Measured runs per row (at least 5); one warm-up run precedes them.
    pub runs: usize,
    /// A CPU idle-latency limit held for the whole run
    /// ([`takt_sched::IdleLatency`]; `Some(0)`: idle CPUs poll, so a parked
    /// thread's wake-up needs no interrupt). Machine-wide: the peer
    /// runtimes run under it too. `None`: the system's idle policy.
    pub idle_latency: Option<std::time::Duration>,
}

impl Options {
    fn takt(&self) -> TaktOpts {
        TaktOpts {
            spin: self.spin,
            thread: self.thread.clone(),
        }
    }
}

/// The sizes of one suite (full or quick).
#[derive(Clone, Debug)]
struct Plan {
    ping_pong: u64,
    ping_pong_cross: u64,
    ping_pong_in_flight: u64,
    ring_one: Vec<usize>,
    /// customer_ring sizes the peers run (a subset of `ring_one`).
    #[cfg_attr(not(feature = "peers"), allow(dead_code))]
    ring_peers: Vec<usize>,
    ring_ao: Vec<usize>,
    ring_ag: Vec<usize>,
    ring_pool: Vec<usize>,
    skynet: u64,
    seed_n: u64,
    agents_msg: Vec<(usize, usize)>,
}

impl Plan {
    fn of(quick: bool) -> Plan {
        if quick {
            Plan {
                ping_pong: 2_000_000,
                ping_pong_cross: 50_000,
                ping_pong_in_flight: 1_000_000,
                ring_one: vec![1000, 50_000],
                ring_peers: vec![1000],
                ring_ao: vec![100],
                ring_ag: vec![10_000],
                ring_pool: vec![10_000],
                skynet: 100_000,
                seed_n: 100_000,
                agents_msg: vec![(10_000, 5000), (100_000, 20_000)],
            }
        } else {
            Plan {
                ping_pong: 10_000_000,
                ping_pong_cross: 1_000_000,
                ping_pong_in_flight: 4_000_000,
                ring_one: vec![1000, 2000, 5000, 10_000, 20_000, 50_000, 100_000],
                ring_peers: vec![1000, 10_000, 50_000],
                ring_ao: vec![100, 200, 500, 1000],
                ring_ag: vec![1000, 2000, 5000, 10_000, 20_000, 50_000, 100_000],
                ring_pool: vec![1000, 50_000],
                skynet: 1_000_000,
                seed_n: 100_000,
                agents_msg: vec![
                    (10_000, 5000),
                    (20_000, 5000),
                    (20_000, 10_000),
                    (100_000, 5000),
                    (100_000, 10_000),
                    (100_000, 20_000),
                ],
            }
        }
    }

    /// What `--quick` leaves out, for the run's notes.
    const QUICK_NOTE: &'static str = "--quick: ping_pong 2M messages (cross-thread 50k) instead of 10M (1M), ping_pong_in_flight 1M instead of 4M; \
customer_ring one_thread N=1000,50000 (of 1000..100000; peers N=1000 of 1000,10000,50000), active_obj N=100 (of 100..1000), \
active_group N=10000 (of 1000..100000), pools N=10000; skynet 100k leaves instead of 1M; \
send_agents_msg_self (10000,5000) and (100000,20000) of the seed's six; still 1 warm-up + runs per row";
}

/// The seed's one_thread customer_ring: N → (ringing msg/s, registration µs/agent).
const SEED_RING_ONE: &[(usize, f64, f64)] = &[
    (1000, 165_796.9, 34.2),
    (2000, 163_670.7, 39.1),
    (5000, 154_145.2, 42.5),
    (10_000, 148_359.3, 44.4),
    (20_000, 140_784.1, 49.8),
    (50_000, 132_692.9, 55.3),
    (100_000, 128_876.3, 57.8),
];
/// The seed's active_obj customer_ring (M = 50).
const SEED_RING_AO: &[(usize, f64, f64)] = &[
    (100, 148_292.7, 248.0),
    (200, 125_581.2, 233.0),
    (500, 131_177.2, 250.0),
    (1000, 125_204.9, 299.8),
];
/// The seed's active_group customer_ring (100 groups, M = 100).
const SEED_RING_AG: &[(usize, f64, f64)] = &[
    (1000, 137_365.5, 47.0),
    (2000, 142_840.8, 93.6),
    (5000, 135_150.2, 117.5),
    (10_000, 123_553.7, 91.2),
    (20_000, 108_772.4, 87.8),
    (50_000, 99_505.5, 89.3),
    (100_000, 95_187.4, 91.1),
];
/// The seed's send_agents_msg_self: (agents, messages) → msg/s.
const SEED_AGENTS_MSG: &[(usize, usize, f64)] = &[
    (10_000, 5000, 160_282.0),
    (20_000, 5000, 107_308.2),
    (20_000, 10_000, 128_205.0),
    (100_000, 5000, 118_289.6),
    (100_000, 10_000, 109_317.84),
    (100_000, 20_000, 114_299.8),
];
const SEED_SEND_MSG: f64 = 390_376.0;
const SEED_SEND_AND_PROCESS: (f64, f64) = (242_569.8, 485_592.8);
const SEED_INSEND: f64 = 200_239.4;
const SEED_STATES: (f64, f64) = (50_743.34, 76_582.98);

fn ns_of_rate(msgs_per_s: f64) -> f64 {
    1e9 / msgs_per_s
}

fn seed_ring(table: &[(usize, f64, f64)], n: usize) -> Option<(f64, f64)> {
    table
        .iter()
        .find(|r| r.0 == n)
        .map(|r| (ns_of_rate(r.1), r.2))
}

/// Collects runs into rows.
struct Runner<'a> {
    opts: &'a Options,
    doc: DocumentBuilder,
    ctx: &'a RunContext,
    /// Build every row from fixed samples without running anything
    /// ([`synthetic_rows`]).
    synthetic: bool,
}

/// One repetition's values: the main value and an optional second one
/// (registration, or the processing phase).
type Rep = (f64, Option<f64>);

struct Series {
    main: Vec<f64>,
    second: Vec<f64>,
    cpu_s: f64,
}

impl Runner<'_> {
    fn takt_params(
        &self,
        dispatcher: &str,
        threads: usize,
        mut p: Map<String, Value>,
    ) -> Map<String, Value> {
        p.insert("threads".into(), threads.into());
        p.insert("dispatcher".into(), dispatcher.into());
        p.insert("spin".into(), self.opts.spin.to_string().into());
        p.insert(
            "idle_latency".into(),
            takt_measure::result::idle_latency_param(self.opts.idle_latency).into(),
        );
        p.insert(
            "cpus".into(),
            self.opts
                .thread
                .cpus()
                .map_or("any".to_string(), |c| c.to_string())
                .into(),
        );
        p.insert(
            "sched".into(),
            self.opts
                .thread
                .policy()
                .map_or("inherit".to_string(), |p| p.to_string())
                .into(),
        );
        p
    }

    fn repeat(
        &mut self,
        label: &str,
        mut run: impl FnMut() -> Result<Rep, AgentsError>,
    ) -> Result<Series, AgentsError> {
        if self.synthetic {
            return Ok(Series {
                main: vec![1.0; 5],
                second: vec![1.0; 5],
                cpu_s: 0.0,
            });
        }
        self.ctx.step(&format!("{label}: warm-up"));
        run()?;
        let mut s = Series {
            main: Vec::new(),
            second: Vec::new(),
            cpu_s: 0.0,
        };
        let runs = self.opts.runs.max(5);
        let mut cpu = Duration::ZERO;
        for i in 0..runs {
            if self.ctx.is_cancelled() {
                return Err(AgentsError::Interrupted);
            }
            let c0 = takt_sched::process_cpu_time();
            let (a, b) = run()?;
            cpu += takt_sched::process_cpu_time().saturating_sub(c0);
            s.main.push(a);
            if let Some(b) = b {
                s.second.push(b);
            }
            self.ctx
                .step(&format!("{label}: run {}/{runs}: {a:.3}", i + 1));
        }
        s.cpu_s = cpu.as_secs_f64() / runs as f64;
        Ok(s)
    }

    fn push(&mut self, row: ResultRow) {
        self.doc.push(row);
    }

    fn takt_row(
        &mut self,
        name: &str,
        params: Map<String, Value>,
        unit: &str,
        samples: Vec<f64>,
        cpu_s: f64,
        published: Option<f64>,
    ) {
        let mut row = ResultRow::new(name, "takt", params, unit, Better::Lower, samples, cpu_s);
        if let Some(p) = published {
            row = row.with_published(p);
        }
        self.push(row);
    }

    /// A rate row in msg/s beside an ns/msg row, where the seed used msg/s.
    fn rate_row(
        &mut self,
        name: &str,
        params: Map<String, Value>,
        ns: &[f64],
        cpu_s: f64,
        published_rate: Option<f64>,
    ) {
        let rates: Vec<f64> = ns.iter().map(|&v| 1e9 / v).collect();
        let mut row = ResultRow::new(name, "takt", params, "msg/s", Better::Higher, rates, cpu_s);
        if let Some(p) = published_rate {
            row = row.with_published(p);
        }
        self.push(row);
    }
}

/// dispatcher, agents, tokens, threads, the seed's (ns/msg, µs/agent).
type RingCase = (RingDispatcher, usize, usize, usize, Option<(f64, f64)>);

/// A row's `detail`: each per-run count (`crossed_fraction`: deliveries
/// whose sender ran on another thread; `wakeups_per_msg`: wake-ups of a
/// parked dispatcher thread per message) as its median over the runs
/// given (the caller leaves the warm-up run out).
fn median_detail(counts: &[(&str, &[f64])]) -> Map<String, Value> {
    counts
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| ((*k).to_string(), takt_measure::stats::median(v).into()))
        .collect()
}

/// Balls `ping_pong_in_flight` keeps bouncing between its two agents: as
/// many as customer_ring's tokens, so each agent's queue holds about 50
/// and its thread rarely runs dry.
pub const IN_FLIGHT: u64 = 100;

fn sample_rep(s: Sample) -> Rep {
    (s.value, s.registration_us_per_agent)
}

/// A takt ping_pong row (`name`) of `messages` deliveries with `in_flight`
/// balls, its detail the median crossed fraction and wake-ups per message.
fn ping_pong_row(
    r: &mut Runner<'_>,
    t: &TaktOpts,
    name: &str,
    messages: u64,
    in_flight: u64,
    placement: Placement,
    disp: &str,
) -> Result<ResultRow, AgentsError> {
    let mut crossed = Vec::new();
    let mut woken = Vec::new();
    let s = r.repeat(&format!("{name} {placement} ({disp}) {messages}"), || {
        let s = runs::ping_pong(t, messages, in_flight, placement)?;
        crossed.push(s.crossed);
        woken.push(s.wakeups_per_msg);
        Ok((s.value, None))
    })?;
    let p = r.takt_params(
        disp,
        placement.threads(),
        params![("messages", messages), ("placement", placement.name())],
    );
    Ok(
        ResultRow::new(name, "takt", p, "ns/msg", Better::Lower, s.main, s.cpu_s).with_detail(
            median_detail(&[
                ("crossed_fraction", crossed.get(1..).unwrap_or_default()),
                ("wakeups_per_msg", woken.get(1..).unwrap_or_default()),
            ]),
        ),
    )
}

/// Rough wall time of a run with these options (announced on stderr).
pub fn expected_duration(opts: &Options) -> Duration {
    // Measured on a busy 2-core VM; a quiet one is faster.
    let base = if opts.quick { 35 } else { 180 };
    // The peers' part, SObjectizer's driver included (quick: ~25 s of
    // it, most in customer_ring over 50,000 agents; default: ~5 min).
    let peers = match (opts.peers, opts.quick) {
        (false, _) => 0,
        (true, true) => 50,
        (true, false) => 1020,
    };
    Duration::from_secs(base + peers)
}

impl Suite for Options {
    type Output = Document;
    type Error = AgentsError;

    fn name(&self) -> &str {
        "agents"
    }

    fn estimate(&self) -> Duration {
        expected_duration(self)
    }

    fn describe(&self) -> String {
        format!(
            "{}{}(spin {}, threads {})",
            if self.quick { "--quick " } else { "" },
            if self.peers { "--peers " } else { "" },
            self.spin,
            self.thread
        )
    }

    fn run(&self, ctx: &RunContext) -> Result<Document, AgentsError> {
        run(self, ctx)
    }
}

/// Runs the suite, one progress step per run; stops with
/// [`AgentsError::Interrupted`] at the next run once `ctx` is cancelled.
pub fn run(opts: &Options, ctx: &RunContext) -> Result<Document, AgentsError> {
    let _idle = opts
        .idle_latency
        .map(takt_sched::IdleLatency::hold)
        .transpose()
        .map_err(AgentsError::IdleLatency)?;
    run_rows(opts, ctx).map_err(|e| {
        if ctx.is_cancelled() {
            AgentsError::Interrupted
        } else {
            e
        }
    })
}

fn run_rows(opts: &Options, ctx: &RunContext) -> Result<Document, AgentsError> {
    rows_of(opts, ctx, false)
}

/// Every kind of row the suite can emit (takt's and, with the `peers`
/// feature, every peer's, available here or not), each from fixed samples:
/// the input of the document-shape snapshot test. Runs nothing.
#[doc(hidden)]
pub fn synthetic_rows() -> Vec<ResultRow> {
    let opts = Options {
        quick: true,
        peers: cfg!(feature = "peers"),
        spin: SpinBudget::DEFAULT,
        thread: ThreadSpec::default(),
        runs: 5,
        idle_latency: None,
    };
    rows_of(&opts, &RunContext::quiet(), true)
        .expect("synthetic rows")
        .results
}

fn rows_of(opts: &Options, ctx: &RunContext, synthetic: bool) -> Result<Document, AgentsError> {
    let plan = Plan::of(opts.quick);
    let t = opts.takt();
    let mut r = Runner {
        opts,
        doc: DocumentBuilder::start("agents"),
        ctx,
        synthetic,
    };
    if opts.quick {
        r.doc.note(Plan::QUICK_NOTE);
    }
    if let Some(limit) = opts.idle_latency {
        r.doc.note(format!(
            "idle latency limit {} held for the whole run, machine-wide: idle CPUs polled instead of halting, the peers' too",
            takt_measure::result::idle_latency_param(Some(limit))
        ));
    }
    r.doc.note(
        "published: the seed's SObjectizer 4.4.b3 figure (Pentium-M 1.5 GHz, 2006) converted to this row's unit",
    );

    // ping_pong: one ball (a hand-off to a waiting receiver), then a window
    // of IN_FLIGHT balls (a hand-off between two busy threads).
    for placement in Placement::ALL {
        let (n, disp) = match placement {
            Placement::OneThread => (plan.ping_pong, "one_thread"),
            Placement::ThreadPerAgent => (plan.ping_pong_cross, "active_obj"),
            Placement::TwoWorkers => (plan.ping_pong_cross, "work_stealing"),
        };
        let row = ping_pong_row(&mut r, &t, "ping_pong", n, 1, placement, disp)?;
        r.push(row);
    }
    for (placement, disp) in [
        (Placement::OneThread, "one_thread"),
        (Placement::ThreadPerAgent, "active_obj"),
    ] {
        let n = plan.ping_pong_in_flight;
        let mut row = ping_pong_row(
            &mut r,
            &t,
            "ping_pong_in_flight",
            n,
            IN_FLIGHT,
            placement,
            disp,
        )?;
        row.params.insert("in_flight".into(), IN_FLIGHT.into());
        row.detail.insert("in_flight".into(), IN_FLIGHT.into());
        r.push(row);
    }
    r.doc.note(format!(
        "ping_pong_in_flight: {IN_FLIGHT} balls bounce between the two agents at once (ping_pong has one), so across \
         threads each delivery is a hand-off between two busy threads, not a wake-up of a waiting one; \
         detail.wakeups_per_msg counts the wake-ups of parked dispatcher threads per message"
    ));

    // customer_ring on every dispatcher
    let mut rings: Vec<RingCase> = Vec::new();
    for &n in &plan.ring_one {
        rings.push((
            RingDispatcher::OneThread,
            n,
            100,
            1,
            seed_ring(SEED_RING_ONE, n),
        ));
    }
    for &n in &plan.ring_ao {
        rings.push((
            RingDispatcher::ActiveObj,
            n,
            50,
            n,
            seed_ring(SEED_RING_AO, n),
        ));
    }
    for &n in &plan.ring_ag {
        rings.push((
            RingDispatcher::ActiveGroup { groups: 100 },
            n,
            100,
            100,
            seed_ring(SEED_RING_AG, n),
        ));
    }
    for &n in &plan.ring_pool {
        rings.push((RingDispatcher::ThreadPool { threads: 2 }, n, 100, 2, None));
        rings.push((RingDispatcher::WorkStealing { threads: 2 }, n, 100, 2, None));
    }
    for (d, n, m, threads, seed) in rings {
        let (mut woken, mut crossed) = (Vec::new(), Vec::new());
        let s = r.repeat(&format!("customer_ring {} N={n} M={m}", d.name()), || {
            let s = runs::customer_ring(&t, d, n, m)?;
            woken.extend(s.wakeups_per_msg);
            crossed.extend(s.crossed);
            Ok(sample_rep(s))
        })?;
        let mut p = r.takt_params(d.name(), threads, params![("agents", n), ("tokens", m)]);
        if let RingDispatcher::ActiveGroup { groups } = d {
            p.insert("groups".into(), groups.into());
        }
        let mut row = ResultRow::new(
            "customer_ring",
            "takt",
            p.clone(),
            "ns/msg",
            Better::Lower,
            s.main.clone(),
            s.cpu_s,
        )
        .with_detail(median_detail(&[
            ("wakeups_per_msg", woken.get(1..).unwrap_or_default()),
            ("crossed_fraction", crossed.get(1..).unwrap_or_default()),
        ]));
        if let Some(x) = seed {
            row = row.with_published(x.0);
        }
        r.push(row);
        let mut rp = p;
        rp.insert("phase".into(), "registration".into());
        r.takt_row(
            "customer_ring",
            rp,
            "us/agent",
            s.second,
            s.cpu_s,
            seed.map(|x| x.1),
        );
    }

    // skynet
    {
        let n = plan.skynet;
        let s = r.repeat(&format!("skynet {n} leaves"), || {
            Ok(runs::skynet(&t, n).map(sample_rep)?)
        })?;
        let p = r.takt_params("one_thread", 1, params![("leaves", n)]);
        r.takt_row("skynet", p, "ms", s.main, s.cpu_s, None);
    }

    // The seed's single-agent benches.
    let n = plan.seed_n;
    {
        let s = r.repeat("send_msg", || Ok(runs::send_msg(&t, n).map(|v| (v, None))?))?;
        let p = r.takt_params("one_thread", 1, params![("messages", n)]);
        r.takt_row(
            "send_msg",
            p.clone(),
            "ns/msg",
            s.main.clone(),
            s.cpu_s,
            Some(ns_of_rate(SEED_SEND_MSG)),
        );
        r.rate_row("send_msg", p, &s.main, s.cpu_s, Some(SEED_SEND_MSG));
    }
    {
        let s = r.repeat("send_and_process_msg", || {
            Ok(runs::send_and_process_msg(&t, n).map(|(a, b)| (a, Some(b)))?)
        })?;
        for (phase, v, seed) in [
            ("send", &s.main, SEED_SEND_AND_PROCESS.0),
            ("process", &s.second, SEED_SEND_AND_PROCESS.1),
        ] {
            let p = r.takt_params("one_thread", 1, params![("messages", n), ("phase", phase)]);
            r.takt_row(
                "send_and_process_msg",
                p.clone(),
                "ns/msg",
                v.clone(),
                s.cpu_s,
                Some(ns_of_rate(seed)),
            );
            r.rate_row("send_and_process_msg", p, v, s.cpu_s, Some(seed));
        }
    }
    {
        let s = r.repeat("insend_and_process_msg", || {
            Ok(runs::insend_and_process_msg(&t, n).map(|v| (v, None))?)
        })?;
        let p = r.takt_params("one_thread", 1, params![("messages", n)]);
        r.takt_row(
            "insend_and_process_msg",
            p.clone(),
            "ns/msg",
            s.main.clone(),
            s.cpu_s,
            Some(ns_of_rate(SEED_INSEND)),
        );
        r.rate_row(
            "insend_and_process_msg",
            p,
            &s.main,
            s.cpu_s,
            Some(SEED_INSEND),
        );
    }
    {
        let s = r.repeat("process_state_changes", || {
            Ok(runs::process_state_changes(&t, n).map(|(a, b)| (a, Some(b)))?)
        })?;
        for (phase, v, seed) in [
            ("send", &s.main, SEED_STATES.0),
            ("process", &s.second, SEED_STATES.1),
        ] {
            let p = r.takt_params(
                "one_thread",
                1,
                params![("messages", n), ("states", 10), ("phase", phase)],
            );
            r.takt_row(
                "process_state_changes",
                p.clone(),
                "ns/msg",
                v.clone(),
                s.cpu_s,
                Some(ns_of_rate(seed)),
            );
            r.rate_row("process_state_changes", p, v, s.cpu_s, Some(seed));
        }
    }
    {
        let s = r.repeat("process_state_changes_types", || {
            Ok(runs::process_state_changes_types(&t, n).map(|(a, b)| (a, Some(b)))?)
        })?;
        for (phase, v) in [("send", &s.main), ("process", &s.second)] {
            let p = r.takt_params(
                "one_thread",
                1,
                params![("messages", n), ("states", 10), ("phase", phase)],
            );
            r.takt_row(
                "process_state_changes_types",
                p,
                "ns/msg",
                v.clone(),
                s.cpu_s,
                None,
            );
        }
    }
    r.doc.note("process_state_changes: one message type with a handler in each of the agent's ten states, as the seed defines it; process_state_changes_types: ten message types, one handled in each state");
    for &(agents, m) in &plan.agents_msg {
        let s = r.repeat(&format!("send_agents_msg_self N={agents} M={m}"), || {
            Ok(runs::send_agents_msg_self(&t, agents, m).map(|v| (v, None))?)
        })?;
        let seed = SEED_AGENTS_MSG
            .iter()
            .find(|x| x.0 == agents && x.1 == m)
            .map(|x| x.2);
        let p = r.takt_params(
            "one_thread",
            1,
            params![("agents", agents), ("messages", m)],
        );
        r.takt_row(
            "send_agents_msg_self",
            p.clone(),
            "ns/msg",
            s.main.clone(),
            s.cpu_s,
            seed.map(ns_of_rate),
        );
        r.rate_row("send_agents_msg_self", p, &s.main, s.cpu_s, seed);
    }
    for &(agents, m) in &plan.agents_msg {
        let s = r.repeat(
            &format!("send_agents_msg_self_dispatched N={agents} M={m}"),
            || Ok(runs::send_agents_msg_self_dispatched(&t, agents, m).map(|v| (v, None))?),
        )?;
        let p = r.takt_params(
            "one_thread",
            1,
            params![("agents", agents), ("messages", m)],
        );
        r.takt_row(
            "send_agents_msg_self_dispatched",
            p,
            "ns/msg",
            s.main,
            s.cpu_s,
            None,
        );
    }
    r.doc.note("send_agents_msg_self: N agents registered, M messages sent from one handler, each to a randomly chosen agent; the sends are timed, as the seed times them, divided by M; send_agents_msg_self_dispatched: M of the agents (a random sample) each send one from their own handler, timed from queuing the M sender events to the end of the last one (each send with its sender's dispatch)");

    if opts.peers {
        peer_rows::run(&mut r, &plan)?;
    }
    Ok(r.doc.finish())
}

#[cfg(feature = "peers")]
mod peer_rows {
    use super::*;
    use crate::peers::{run_once, Peer, PeerBench};

    pub(super) fn run(r: &mut Runner<'_>, plan: &Plan) -> Result<(), AgentsError> {
        let mut benches: Vec<(PeerBench, Map<String, Value>)> = Placement::ALL
            .into_iter()
            .map(|placement| {
                let messages = match placement {
                    Placement::OneThread => plan.ping_pong,
                    _ => plan.ping_pong_cross,
                };
                (
                    PeerBench::PingPong {
                        messages,
                        placement,
                    },
                    params![
                        ("messages", messages),
                        ("placement", placement.name()),
                        ("threads", placement.threads())
                    ],
                )
            })
            .collect();
        for &n in &plan.ring_peers {
            benches.push((
                PeerBench::CustomerRing {
                    agents: n,
                    tokens: 100,
                },
                params![("agents", n), ("tokens", 100), ("threads", 1)],
            ));
        }
        benches.push((
            PeerBench::Skynet {
                leaves: plan.skynet,
            },
            params![("leaves", plan.skynet), ("threads", 1)],
        ));
        for peer in Peer::ALL {
            if let Some(reason) = peer.unavailable().filter(|_| !r.synthetic) {
                r.doc.note(format!("{peer}: {reason}"));
                continue;
            }
            for (bench, p) in &benches {
                if !peer.supports(bench) {
                    continue;
                }
                let label = format!(
                    "{} {} {}",
                    peer.name(),
                    bench.name(),
                    takt_measure::result::params_text(p)
                );
                let mut crossed = Vec::new();
                let s = r.repeat(&label, || {
                    let s = run_once(peer, bench).map_err(|source| AgentsError::Peer {
                        peer: peer.name(),
                        source,
                    })?;
                    crossed.extend(s.crossed);
                    Ok((s.value, s.registration_us_per_agent))
                })?;
                let mut row = ResultRow::new(
                    bench.name(),
                    peer.name(),
                    p.clone(),
                    bench.unit(),
                    Better::Lower,
                    s.main,
                    s.cpu_s,
                );
                if !crossed.is_empty() {
                    row = row.with_detail(median_detail(&[("crossed_fraction", &crossed[1..])]));
                }
                r.push(row);
                // Synthetic series have a second value everywhere; a peer
                // reports one (registration) for customer_ring only.
                let registers = !r.synthetic || matches!(bench, PeerBench::CustomerRing { .. });
                if !s.second.is_empty() && registers {
                    let mut rp = p.clone();
                    rp.insert("phase".into(), "registration".into());
                    r.push(ResultRow::new(
                        bench.name(),
                        peer.name(),
                        rp,
                        "us/agent",
                        Better::Lower,
                        s.second,
                        s.cpu_s,
                    ));
                }
            }
        }
        so5::rows(r, plan)?;
        r.doc.note("peers: actix, kameo and ractor on their single-thread runtime for threads=1 rows; ping_pong placement thread_per_agent = a thread per actor (takt active_obj, an actix Arbiter each, a tokio current-thread runtime each, two crossbeam threads, each CAF actor spawned detached), two_workers = both on one two-worker runtime that places them (takt work_stealing(2), tokio multi-thread with 2 workers, CAF's work-stealing scheduler with 2 threads; actix and the floor have none); caf = CAF 0.17 (C++, event-based actors, -O2) on its work-stealing scheduler with 1 thread for threads=1 rows; detail.crossed_fraction = deliveries whose sender ran on another thread; crossbeam is a plain-channel floor; `takt ×` = peer median / takt median for the same workload and placement");
        Ok(())
    }
}

#[cfg(not(feature = "peers"))]
mod peer_rows {
    use super::*;

    pub(super) fn run(_r: &mut Runner<'_>, _plan: &Plan) -> Result<(), AgentsError> {
        Err(AgentsError::NoPeers)
    }
}

/// SObjectizer 5.8's rows: takt's SObjectizer driver run as a child, one
/// child per benchmark (warm-up and repetitions inside it), each row with
/// the name, parameters and unit of the takt row doing the same work.
#[cfg(feature = "peers")]
mod so5 {
    use super::*;
    use crate::peers::sobjectizer::{Driver, So5Bench, So5Dispatcher, So5Error, So5Rep};

    /// The peer's name in rows and notes.
    const IMPL: &str = "sobjectizer";

    /// Warm-up repetitions before the timed ones, as every row has.
    const WARMUP: u32 = 1;

    /// One benchmark of the run: what to ask the driver, the row's
    /// parameters, and how a repetition becomes the row's values.
    struct Case {
        bench: So5Bench,
        params: Map<String, Value>,
        /// Rows: (extra params, unit, value of a repetition).
        rows: Vec<RowOf>,
    }

    /// One row of a case: its extra parameters, its unit, and the value
    /// of a repetition.
    type RowOf = (Map<String, Value>, &'static str, RepValue);
    /// A repetition's value in the row's unit.
    type RepValue = fn(&So5Bench, &So5Rep) -> f64;

    fn per_msg(field: &'static str) -> RepValue {
        match field {
            "ns" => |b, r| r.get("ns") as f64 / messages(b),
            "send_ns" => |b, r| r.get("send_ns") as f64 / messages(b),
            _ => |b, r| r.get("process_ns") as f64 / messages(b),
        }
    }

    /// The messages one repetition of `b` delivers (or sends).
    fn messages(b: &So5Bench) -> f64 {
        match *b {
            So5Bench::PingPong { messages, .. }
            | So5Bench::SendMsg { messages }
            | So5Bench::SendAndProcessMsg { messages }
            | So5Bench::InsendAndProcessMsg { messages }
            | So5Bench::ProcessStateChanges { messages }
            | So5Bench::SendAgentsMsgSelf { messages, .. } => messages as f64,
            So5Bench::CustomerRing { agents, tokens, .. } => agents as f64 * tokens as f64,
            So5Bench::Skynet { .. } => 1.0,
        }
    }

    fn reg_us(b: &So5Bench, r: &So5Rep) -> f64 {
        match *b {
            So5Bench::CustomerRing { agents, .. } => r.get("reg_ns") as f64 / 1e3 / agents as f64,
            _ => f64::NAN,
        }
    }

    fn ms(_: &So5Bench, r: &So5Rep) -> f64 {
        r.get("ns") as f64 / 1e6
    }

    fn phase(p: &str) -> Map<String, Value> {
        params![("phase", p)]
    }

    fn one_thread(mut p: Map<String, Value>) -> Map<String, Value> {
        p.insert("threads".into(), 1.into());
        p.insert("dispatcher".into(), "one_thread".into());
        p
    }

    /// Every case of this plan, in the order takt's rows come.
    fn cases(plan: &Plan) -> Vec<Case> {
        let mut v = Vec::new();
        for placement in Placement::ALL {
            let (messages, dispatcher) = match placement {
                Placement::OneThread => (plan.ping_pong, So5Dispatcher::OneThread),
                Placement::ThreadPerAgent => (plan.ping_pong_cross, So5Dispatcher::ActiveObj),
                Placement::TwoWorkers => (plan.ping_pong_cross, So5Dispatcher::ThreadPool),
            };
            v.push(Case {
                bench: So5Bench::PingPong {
                    messages,
                    dispatcher,
                },
                params: params![
                    ("messages", messages),
                    ("placement", placement.name()),
                    ("threads", placement.threads())
                ],
                rows: vec![(Map::new(), "ns/msg", per_msg("ns"))],
            });
        }
        let ring = |agents: usize, tokens: usize, d: So5Dispatcher, threads: usize| {
            let mut p = params![
                ("agents", agents),
                ("tokens", tokens),
                ("threads", threads),
                ("dispatcher", d.name())
            ];
            if let So5Dispatcher::ActiveGroup { groups } = d {
                p.insert("groups".into(), groups.into());
            }
            Case {
                bench: So5Bench::CustomerRing {
                    agents: agents as u64,
                    tokens: tokens as u64,
                    dispatcher: d,
                },
                params: p,
                rows: vec![
                    (Map::new(), "ns/msg", per_msg("ns")),
                    (phase("registration"), "us/agent", reg_us),
                ],
            }
        };
        for &n in &plan.ring_one {
            v.push(ring(n, 100, So5Dispatcher::OneThread, 1));
        }
        for &n in &plan.ring_ao {
            v.push(ring(n, 50, So5Dispatcher::ActiveObj, n));
        }
        for &n in &plan.ring_ag {
            v.push(ring(
                n,
                100,
                So5Dispatcher::ActiveGroup { groups: 100 },
                100,
            ));
        }
        v.push(Case {
            bench: So5Bench::Skynet {
                leaves: plan.skynet,
            },
            params: params![("leaves", plan.skynet), ("threads", 1)],
            rows: vec![(Map::new(), "ms", ms)],
        });
        let n = plan.seed_n;
        let m = params![("messages", n)];
        v.push(Case {
            bench: So5Bench::SendMsg { messages: n },
            params: one_thread(m.clone()),
            rows: vec![(Map::new(), "ns/msg", per_msg("send_ns"))],
        });
        let phases = vec![
            (phase("send"), "ns/msg", per_msg("send_ns")),
            (phase("process"), "ns/msg", per_msg("process_ns")),
        ];
        v.push(Case {
            bench: So5Bench::SendAndProcessMsg { messages: n },
            params: one_thread(m.clone()),
            rows: phases.clone(),
        });
        v.push(Case {
            bench: So5Bench::InsendAndProcessMsg { messages: n },
            params: one_thread(m),
            rows: vec![(Map::new(), "ns/msg", per_msg("ns"))],
        });
        v.push(Case {
            bench: So5Bench::ProcessStateChanges { messages: n },
            params: one_thread(params![("messages", n), ("states", 10)]),
            rows: phases,
        });
        for &(agents, messages) in &plan.agents_msg {
            v.push(Case {
                bench: So5Bench::SendAgentsMsgSelf {
                    agents: agents as u64,
                    messages: messages as u64,
                },
                params: one_thread(params![("agents", agents), ("messages", messages)]),
                rows: vec![(Map::new(), "ns/msg", per_msg("send_ns"))],
            });
        }
        v
    }

    pub(super) fn rows(r: &mut Runner<'_>, plan: &Plan) -> Result<(), AgentsError> {
        rows_from(r, plan, Driver::locate)
    }

    /// [`rows`] with the driver from `locate`.
    fn rows_from(
        r: &mut Runner<'_>,
        plan: &Plan,
        locate: impl FnOnce() -> Result<Driver, So5Error>,
    ) -> Result<(), AgentsError> {
        let runs = r.opts.runs.max(5) as u32;
        let driver = if r.synthetic {
            None
        } else {
            match locate() {
                Ok(d) => Some(d),
                Err(So5Error::NotBuilt(why)) => {
                    r.doc.note(format!("{IMPL}: {why}"));
                    return Ok(());
                }
                Err(e) => return Err(e.into()),
            }
        };
        if let Some(d) = &driver {
            d.check_protocol(r.ctx.cancel())?;
        }
        for case in cases(plan) {
            let reps = match &driver {
                Some(d) => {
                    r.ctx.step(&format!(
                        "{IMPL} {} {}: warm-up + {runs} runs",
                        case.bench.name(),
                        case.bench.echo()
                    ));
                    if r.ctx.is_cancelled() {
                        return Err(AgentsError::Interrupted);
                    }
                    d.run(&case.bench, WARMUP, runs, r.ctx.cancel())
                        .map_err(|e| match e {
                            So5Error::Interrupted => AgentsError::Interrupted,
                            e => e.into(),
                        })?
                }
                None => synthetic(&case.bench),
            };
            let cpu_s = reps.iter().map(|x| x.cpu_ns as f64 / 1e9).sum::<f64>() / reps.len() as f64;
            for (extra, unit, value) in &case.rows {
                let mut p = case.params.clone();
                p.extend(extra.clone());
                let samples = reps.iter().map(|x| value(&case.bench, x)).collect();
                r.push(
                    ResultRow::new(
                        case.bench.name(),
                        IMPL,
                        p,
                        *unit,
                        Better::Lower,
                        samples,
                        cpu_s,
                    )
                    .with_detail(params![("so5_dispatcher", case.bench.dispatcher().name())]),
                );
            }
        }
        r.doc.note(format!("{IMPL}: SObjectizer {} (C++, g++ -O2, static library) through takt's driver, a child process per benchmark (one warm-up, then the runs); agents address each other by their direct mboxes; ping_pong one_thread / thread_per_agent / two_workers = SObjectizer's one_thread, active_obj, thread_pool(2, fifo individual); customer_ring on one_thread, active_obj and active_group (agent i in group i mod 100) as the seed ran it; the seed's six on one_thread, timed as the seed times them; insend_and_process_msg: SObjectizer 5 has no insend events, so the receiver's event queue runs each demand inside the send", crate::peers::sobjectizer::VERSION));
        Ok(())
    }

    /// Fixed repetitions for the document-shape snapshot.
    fn synthetic(b: &So5Bench) -> Vec<So5Rep> {
        let rep = So5Rep {
            fields: b.fields().iter().map(|&k| (k, 1000)).collect(),
            cpu_ns: 0,
        };
        vec![rep; 5]
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        /// Without the build the document says "not measured" and why,
        /// and has no SObjectizer row: never a silent gap.
        #[test]
        fn a_missing_driver_is_a_not_measured_note() {
            let opts = Options {
                quick: true,
                peers: true,
                spin: SpinBudget::DEFAULT,
                thread: ThreadSpec::default(),
                runs: 5,
                idle_latency: None,
            };
            let ctx = RunContext::quiet();
            let mut r = Runner {
                opts: &opts,
                doc: DocumentBuilder::start("agents"),
                ctx: &ctx,
                synthetic: false,
            };
            let empty =
                std::env::temp_dir().join(format!("takt-so5-absent-{}", std::process::id()));
            rows_from(&mut r, &Plan::of(true), || Driver::locate_in(&empty)).unwrap();
            let doc = r.doc.finish();
            assert!(doc.results.is_empty());
            let note = doc
                .notes
                .iter()
                .find(|n| n.starts_with("sobjectizer: not measured: "))
                .unwrap_or_else(|| panic!("{:?}", doc.notes));
            assert!(
                note.ends_with("run `bash scripts/peers.sh sobjectizer so5-driver`"),
                "{note}"
            );
            assert!(takt_measure::output::render(&doc).contains(note.as_str()));
        }
    }
}
