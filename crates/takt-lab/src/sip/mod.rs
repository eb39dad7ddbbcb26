//! # `takt sip load`: a call generator against the takt proxy, per-message costs
//!
//! The benchmark of the issue's target, *median T_sip per message type at
//! a fixed call rate*, measured the way the seed paper measures its proxy
//! (Krishnamurthy & Rouskas, equations (1)): real SIPp call generators on
//! loopback, `sipp -sn uac` at a fixed rate (`-r`) for a bounded number of
//! calls (`-m`) → the takt proxy → `sipp -sn uas`, every call
//! INVITE / 100 / 180 / 200 / ACK / BYE / 200.
//!
//! [`LoadPlan::generator`] puts takt's native generator
//! ([`takt_siplab::gen`], Poisson arrivals at the rate) in SIPp's place, on
//! threads of this process whose CPU time is taken out of the proxy's;
//! [`LoadPlan::transport`] runs every hop over UDP or TCP (SIPp with
//! `-t t1`).
//!
//! The proxy runs **in this process** (a [`takt_sip::transport::Server`]
//! on takt-sched threads made from the plan's [`ThreadSpec`]), so its
//! per-message HDR histograms (K_rcv, T_sip, K_snd by message kind) are
//! read directly at the end of each run, and the process's CPU time over a
//! run is the proxy's (SIPp runs in child processes).
//!
//! One *run* is independent of the others: a fresh proxy, a fresh SIPp
//! pair on free loopback ports, `calls` calls at `cps`. A case (mode ×
//! worker model × workers) is one discarded warm-up run followed by
//! `runs` measured runs, and [`run`] lets the cases take turns run by run
//! so the host's drift reaches them alike; each result row's samples are
//! the per-run medians, summarized as median / min / max / ci95 across
//! runs. After each run the same proxy code is timed on a hot core
//! ([`hot_reference`]): `t_sip_hot` and `cold_factor` (T_sip over it)
//! separate a cold core's cost from the host's speed of the moment.
//!
//! Where the work runs is part of what is measured, and every row says it:
//! `cpus` and `sched` for the proxy's threads, `sipp_cpus` for SIPp's two
//! processes ([`LoadPlan::sipp_cpus`], inherited from the spawning thread:
//! a `fork` would write-protect the in-process proxy's memory), and
//! `idle_latency` ([`LoadCase::idle_latency`]): with a limit of 0 held
//! ([`takt_sched::IdleLatency`]) idle CPUs poll instead of halting, so a
//! datagram's wake-up needs no interrupt through the hypervisor and the
//! core is not lent to the host between messages.
//!
//! ```no_run
//! use takt_lab::sip::{LoadCase, LoadPlan};
//! use takt_sip::proxy::Mode;
//! use takt_sip::transport::WorkerModel;
//!
//! let mut plan = LoadPlan::new(takt_lab::sip::find_sipp().expect("sipp installed"));
//! plan.cases = vec![LoadCase {
//!     mode: Mode::Stateful,
//!     model: WorkerModel::Shared,
//!     workers: 2,
//!     idle_latency: None,
//! }];
//! let doc = takt_lab::sip::run(&plan, &mut |line| eprintln!("{line}")).unwrap();
//! takt_lab::output::emit(&doc, true).unwrap();
//! ```
//!
//! [`render_exit_summary`] lays out `takt sip proxy`'s statistics at exit.
//!
//! Every SIPp child is killed and reaped on every path out of a run
//! (error, interruption through [`LoadPlan::stop`], panic), and its
//! scratch directory removed.

mod sipp;
mod summary;

pub use sipp::{find_sipp, free_port, parse_stat_csv, UacTotals};
pub use summary::render_exit_summary;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use takt_sched::{CpuSet, IdleLatency, SchedError, SpinBudget, ThreadSpec};
use takt_sip::proxy::build::Local;
use takt_sip::proxy::{Mode, ProxyConfig, Target, Transport};
use takt_sip::stats::Snapshot;
use takt_sip::transport::{Server, ServerConfig, WakeOrder, WorkerModel};

use crate::error::LabError;
use crate::result::{idle_latency_param, Better, Document, DocumentBuilder, ResultRow};
use sipp::{Kid, ScratchDir};
use takt_measure::suite::{RunContext, Suite};

/// One configuration of the proxy under load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadCase {
    /// Stateless or transaction-stateful.
    pub mode: Mode,
    /// Worker model.
    pub model: WorkerModel,
    /// Worker threads.
    pub workers: usize,
    /// A CPU idle-latency limit held through each run and its hot
    /// reference ([`IdleLatency`]; `Some(0)`: idle CPUs poll instead of
    /// halting); `None`: the system's idle policy.
    pub idle_latency: Option<Duration>,
}

/// What places the calls of `takt sip load`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadGenerator {
    /// SIPp's built-in `uac` and `uas` scenarios in child processes, calls
    /// opened at a fixed rate on SIPp's millisecond lattice.
    Sipp,
    /// takt's native generator ([`takt_siplab::gen`]) on threads of this
    /// process: Poisson arrivals at the rate, no retransmissions lost to
    /// its own lag unnoticed.
    Takt,
}

impl LoadGenerator {
    /// `sipp` or `takt`.
    pub fn name(self) -> &'static str {
        match self {
            LoadGenerator::Sipp => "sipp",
            LoadGenerator::Takt => "takt",
        }
    }
}

/// What `takt sip load` runs.
#[derive(Debug, Clone)]
pub struct LoadPlan {
    /// The configurations, run in order.
    pub cases: Vec<LoadCase>,
    /// What places the calls.
    pub generator: LoadGenerator,
    /// The transport of every hop: the UAC to the proxy, the proxy to the
    /// UAS (TCP: the proxy listens on TCP too; SIPp runs with `-t t1`, one
    /// connection each way; takt's generator spreads its calls over 4).
    pub transport: Transport,
    /// Calls per second the UAC places (SIPp's `-r`).
    pub cps: u32,
    /// Calls per measured run (`-m`).
    pub calls: u64,
    /// Calls in the discarded warm-up run of each case (0: none).
    pub warmup_calls: u64,
    /// Measured runs per case (at least 1; result documents want 5).
    pub runs: usize,
    /// The proxy's threads are made from this spec (CPU set, policy).
    pub spec: ThreadSpec,
    /// Receive buffer per proxy socket (None: the system default).
    pub rcvbuf: Option<usize>,
    /// How long the proxy's workers poll their sockets before blocking
    /// ([`ServerConfig::spin`]; default: not at all).
    pub spin: SpinBudget,
    /// Which idle worker of the `shared` model gets a datagram
    /// ([`ServerConfig::wake`]; default: the one idle shortest).
    pub wake: WakeOrder,
    /// CPUs the generator's UAC and UAS are confined to (SIPp's processes
    /// or takt's generator threads); `None`: wherever the kernel puts
    /// them.
    pub sipp_cpus: Option<CpuSet>,
    /// The `sipp` binary (unused with [`LoadGenerator::Takt`]).
    pub sipp: PathBuf,
    /// Set from outside (Ctrl-C) to abandon the run; children are killed.
    pub stop: Arc<AtomicBool>,
}

impl LoadPlan {
    /// The documented default: both modes × the three worker models with
    /// 2 workers, 1,000 cps, 5 measured runs of 5,000 calls after a
    /// 1,000-call warm-up.
    pub fn new(sipp: PathBuf) -> LoadPlan {
        let mut cases = Vec::new();
        for mode in [Mode::Stateless, Mode::Stateful] {
            for model in [
                WorkerModel::Shared,
                WorkerModel::Reuseport,
                WorkerModel::Batched,
            ] {
                cases.push(LoadCase {
                    mode,
                    model,
                    workers: 2,
                    idle_latency: None,
                });
            }
        }
        LoadPlan {
            cases,
            generator: LoadGenerator::Sipp,
            transport: Transport::Udp,
            cps: 1000,
            calls: 5000,
            warmup_calls: 1000,
            runs: 5,
            spec: ThreadSpec::new("sip"),
            rcvbuf: None,
            spin: SpinBudget::NONE,
            wake: WakeOrder::Lifo,
            sipp_cpus: None,
            sipp,
            stop: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The `--quick` reduction: the same cases, 1,000 calls per run
    /// (1 s at 1,000 cps) after a 300-call warm-up.
    pub fn quick(mut self) -> LoadPlan {
        self.calls = 1000;
        self.warmup_calls = 300;
        self
    }

    /// Rough wall time of the whole plan (SIPp start and drain included).
    pub fn expected(&self) -> Duration {
        let per_call = 1.0 / f64::from(self.cps.max(1));
        let run = |calls: u64| calls as f64 * per_call + 0.6;
        let warm = if self.warmup_calls > 0 {
            run(self.warmup_calls)
        } else {
            0.0
        };
        let case = warm + self.runs.max(1) as f64 * run(self.calls);
        Duration::from_secs_f64(case * self.cases.len() as f64)
    }

    fn check_stop(&self) -> Result<(), LoadError> {
        // Acquire pairs with the Release store of whoever interrupts.
        if self.stop.load(Ordering::Acquire) {
            Err(LoadError::Interrupted)
        } else {
            Ok(())
        }
    }
}

/// Why a load run failed.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The proxy or a socket could not be set up.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        source: std::io::Error,
    },
    /// SIPp misbehaved (fatal exit, no statistics, hung).
    #[error("sipp: {0}")]
    Sipp(String),
    /// SIPp could not bind its port (taken between choosing and binding
    /// it, e.g. by another program's ephemeral socket); the run is retried
    /// on other ports.
    #[error("sipp: {0}")]
    Bind(String),
    /// A scheduling setting of the plan was refused (e.g. an idle-latency
    /// limit without root).
    #[error(transparent)]
    Sched(#[from] SchedError),
    /// takt's native generator failed.
    #[error("takt sip gen: {0}")]
    Gen(#[from] takt_siplab::Error),
    /// [`LoadPlan::stop`] was set.
    #[error("interrupted")]
    Interrupted,
}

/// Holds the case's idle-latency limit, if it has one, until dropped.
fn hold_idle(case: LoadCase) -> Result<Option<IdleLatency>, LoadError> {
    Ok(case.idle_latency.map(IdleLatency::hold).transpose()?)
}

fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> LoadError {
    let context = context.into();
    move |source| LoadError::Io { context, source }
}

/// Medians of one message kind in one run, microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KindRun {
    /// Messages of this kind the proxy handled.
    pub count: u64,
    /// Median T_sip.
    pub t_sip_us: f64,
    /// Median K_rcv (None: no kernel timestamps).
    pub k_rcv_us: Option<f64>,
    /// Median K_snd (None: this kind caused no send).
    pub k_snd_us: Option<f64>,
    /// Median T_sip of the messages no other worker was handling at
    /// their start or end (None: every one overlapped).
    pub t_sip_alone_us: Option<f64>,
    /// Fraction of the messages another worker was handling at their
    /// start or end.
    pub overlapped: f64,
    /// Stateful: fraction of the messages that found their shard of the
    /// transaction table locked by another thread.
    pub lock_contended: f64,
    /// Median cost of this kind on a hot core right after the run
    /// of a measured run ([`hot_reference`]), µs (None: not measured).
    pub t_sip_hot_us: Option<f64>,
}

/// The fraction of all UDP messages the busiest worker handled (1 / m:
/// spread evenly over m workers; 1: one worker took everything).
fn busiest_share(snap: &Snapshot) -> f64 {
    let udp = snap.workers.iter().filter(|w| w.name.starts_with("sip-w"));
    let (max, sum) = udp.fold((0, 0), |(m, s), w| (m.max(w.messages), s + w.messages));
    if sum == 0 {
        0.0
    } else {
        max as f64 / sum as f64
    }
}

/// What one run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct RunResult {
    /// By message kind (`invite`, `ack`, `bye`, `1xx`, `2xx`, ...).
    pub kinds: BTreeMap<String, KindRun>,
    /// The UAC's call totals.
    pub uac: UacTotals,
    /// SIPp UAC exit code (0: every call succeeded).
    pub uac_exit: Option<i32>,
    /// Datagrams the proxy's sockets dropped (`SO_RXQ_OVFL`).
    pub socket_drops: u64,
    /// Provisional responses the stateless proxy did not forward because a
    /// final response of their transaction that arrived later had gone
    /// (`takt_sip::proxy::order`; what the `shared` model's workers would
    /// otherwise invert).
    pub reordered_dropped: u64,
    /// Host-wide UDP receive-buffer errors during the run (SIPp's sockets too).
    pub host_rcvbuf_errors: u64,
    /// The fraction of the messages the busiest UDP worker handled.
    pub busiest_worker_share: f64,
    /// Process CPU time (the proxy's threads) from the UAC's start to its exit, s.
    pub cpu_s: f64,
    /// Wall time from the UAC's start to its exit, s.
    pub wall_s: f64,
}

impl RunResult {
    fn from_snapshot(
        snap: &Snapshot,
        uac: UacTotals,
        exit: Option<i32>,
        cpu: f64,
        wall: f64,
    ) -> Self {
        let us = |ns: u64| ns as f64 / 1000.0;
        let kinds = snap
            .kinds
            .iter()
            .filter(|(_, k)| k.count > 0 && k.t_sip.count > 0)
            .map(|(name, k)| {
                (
                    name.clone(),
                    KindRun {
                        count: k.count,
                        t_sip_us: us(k.t_sip.p50),
                        k_rcv_us: (k.k_rcv.count > 0).then(|| us(k.k_rcv.p50)),
                        k_snd_us: (k.k_snd.count > 0).then(|| us(k.k_snd.p50)),
                        t_sip_alone_us: (k.t_sip_alone.count > 0).then(|| us(k.t_sip_alone.p50)),
                        overlapped: k.overlapped as f64 / k.count as f64,
                        lock_contended: k.lock_contended as f64 / k.count as f64,
                        t_sip_hot_us: None,
                    },
                )
            })
            .collect();
        RunResult {
            kinds,
            uac,
            uac_exit: exit,
            socket_drops: snap.socket_drops,
            reordered_dropped: snap
                .kinds
                .values()
                .filter_map(|k| k.outcomes.get("dropped_reordered"))
                .sum(),
            host_rcvbuf_errors: snap.host_udp.rcvbuf_errors,
            busiest_worker_share: busiest_share(snap),
            cpu_s: cpu,
            wall_s: wall,
        }
    }
}

/// SIPp's exit status for a socket it could not bind (-2).
const SIPP_EXIT_BIND: i32 = 254;

/// Attempts at a run whose SIPp could not bind its port.
const BIND_ATTEMPTS: usize = 3;

/// [`run_once`], retried on other ports when SIPp could not bind.
fn run_fresh_ports(plan: &LoadPlan, case: LoadCase, calls: u64) -> Result<RunResult, LoadError> {
    let mut attempt = 1;
    loop {
        match run_once(plan, case, calls) {
            Err(LoadError::Bind(_)) if attempt < BIND_ATTEMPTS => attempt += 1,
            other => return other,
        }
    }
}

/// The in-process proxy of one run, forwarding to `uas` over the plan's
/// transport (and listening on TCP too when that is TCP).
fn start_proxy(plan: &LoadPlan, case: LoadCase, uas: SocketAddr) -> Result<Server, LoadError> {
    let mut pc = ProxyConfig::new(
        case.mode,
        Local {
            host: "127.0.0.1".into(),
            port: 0,
        },
    );
    pc.next_hop = Some(Target {
        addr: uas,
        transport: plan.transport,
        conn: None,
    });
    let mut sc = ServerConfig::new(SocketAddr::from(([127, 0, 0, 1], 0)));
    sc.model = case.model;
    sc.workers = case.workers;
    sc.rcvbuf = plan.rcvbuf;
    sc.tcp = plan.transport == Transport::Tcp;
    sc.spec = plan.spec.clone();
    sc.spin = plan.spin;
    sc.wake = plan.wake;
    Server::start(pc, sc).map_err(io("starting the proxy"))
}

/// One run: a fresh proxy and generator (a SIPp pair, or takt's
/// generator), `calls` calls at the plan's rate.
pub fn run_once(plan: &LoadPlan, case: LoadCase, calls: u64) -> Result<RunResult, LoadError> {
    plan.check_stop()?;
    match plan.generator {
        LoadGenerator::Sipp => run_sipp(plan, case, calls),
        LoadGenerator::Takt => run_native(plan, case, calls),
    }
}

/// One run with takt's generator on threads of this process; their CPU
/// time is taken out of the process's, so `cpu_s` stays the proxy's.
fn run_native(plan: &LoadPlan, case: LoadCase, calls: u64) -> Result<RunResult, LoadError> {
    let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
    let mut gc = takt_siplab::gen::GenConfig::new(loopback, f64::from(plan.cps));
    gc.uas_listen = loopback;
    gc.calls = Some(calls);
    gc.transport = plan.transport;
    gc.drain = Duration::from_secs(2);
    gc.spec = match &plan.sipp_cpus {
        Some(c) => ThreadSpec::new("gen").with_cpus(c.clone()),
        None => ThreadSpec::new("gen"),
    };
    let mut g = takt_siplab::gen::Generator::bind(&gc)?;
    let uas = g.uas_addr().ok_or_else(|| {
        LoadError::Gen(takt_siplab::Error::Config(
            "the generator bound no UAS".into(),
        ))
    })?;
    let server = start_proxy(plan, case, uas)?;
    g.set_proxy(server.local_addr())?;
    let cancel = takt_siplab::gen::Cancel::default();
    let cpu0 = takt_sched::process_cpu_time();
    let t0 = Instant::now();
    let report = std::thread::scope(|scope| {
        let run = scope.spawn(|| g.run(&cancel));
        while !run.is_finished() {
            // Acquire pairs with the Release store of whoever interrupts.
            if plan.stop.load(Ordering::Acquire) {
                cancel.cancel();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        run.join()
    });
    let wall = t0.elapsed().as_secs_f64();
    let cpu = takt_sched::process_cpu_time().saturating_sub(cpu0);
    let snap = server.stop();
    let report = report.map_err(|_| {
        LoadError::Gen(takt_siplab::Error::Thread(
            "the generator's thread panicked".into(),
        ))
    })??;
    plan.check_stop()?;
    let (Some(uac), Some(uas)) = (&report.uac, &report.uas) else {
        return Err(LoadError::Gen(takt_siplab::Error::Thread(
            "the generator ran without both sides".into(),
        )));
    };
    let totals = UacTotals {
        attempted: uac.attempted,
        succeeded: uac.completed,
        failed: uac.failed + uac.unfinished,
        retransmissions: uac.retransmitted.values().sum(),
    };
    let gen_cpu = uac.thread.cpu_s + uas.thread.cpu_s;
    let proxy_cpu = (cpu.as_secs_f64() - gen_cpu).max(0.0);
    Ok(RunResult::from_snapshot(
        &snap, totals, None, proxy_cpu, wall,
    ))
}

/// One run with a SIPp pair in child processes.
fn run_sipp(plan: &LoadPlan, case: LoadCase, calls: u64) -> Result<RunResult, LoadError> {
    let dir = ScratchDir::new().map_err(io("creating a scratch directory for sipp"))?;
    let uas_port = free_port().map_err(io("finding a port for the UAS"))?;
    let uac_port = loop {
        let p = free_port().map_err(io("finding a port for the UAC"))?;
        if p != uas_port {
            break p;
        }
    };

    let server = start_proxy(plan, case, SocketAddr::from(([127, 0, 0, 1], uas_port)))?;
    let proxy = server.local_addr();

    let cpus = plan.sipp_cpus.as_ref();
    let mut uas = Kid::spawn(
        sipp::uas(&plan.sipp, uas_port, plan.transport, dir.path()),
        cpus,
        "uas",
    )
    .map_err(io("starting sipp"))?;
    sipp::wait_bound(&mut uas, uas_port, plan.transport, Duration::from_secs(10)).map_err(|e| {
        if e.kind() == std::io::ErrorKind::TimedOut {
            LoadError::Sipp(e.to_string())
        } else {
            LoadError::Bind(e.to_string())
        }
    })?;

    let nominal = Duration::from_secs_f64(calls as f64 / f64::from(plan.cps.max(1)));
    let sipp_timeout = nominal + Duration::from_secs(30);
    let cpu0 = takt_sched::process_cpu_time();
    let t0 = Instant::now();
    let mut uac = Kid::spawn(
        sipp::uac(
            &plan.sipp,
            uac_port,
            proxy,
            plan.transport,
            plan.cps,
            calls,
            sipp_timeout,
            dir.path(),
        ),
        cpus,
        "uac",
    )
    .map_err(io("starting sipp"))?;
    let deadline = t0 + sipp_timeout + Duration::from_secs(10);
    let status = loop {
        plan.check_stop()?;
        let step = (Instant::now() + Duration::from_millis(100)).min(deadline);
        if let Some(st) = uac.wait_until(step).map_err(io("waiting for sipp uac"))? {
            break st;
        }
        if Instant::now() >= deadline {
            return Err(LoadError::Sipp(format!(
                "uac did not finish {calls} calls within {} s",
                (deadline - t0).as_secs()
            )));
        }
    };
    let wall = t0.elapsed().as_secs_f64();
    let cpu = takt_sched::process_cpu_time()
        .saturating_sub(cpu0)
        .as_secs_f64();
    let snap = server.stop();
    drop(uas);
    let stat = std::fs::read_to_string(dir.path().join("uac.csv")).map_err(|e| {
        LoadError::Sipp(format!(
            "uac exited ({status}) without a statistics file: {e}"
        ))
    })?;
    let totals = parse_stat_csv(&stat).map_err(LoadError::Sipp)?;
    let code = status.code();
    if code == Some(SIPP_EXIT_BIND) && totals.attempted == 0 {
        return Err(LoadError::Bind(format!(
            "uac could not bind 127.0.0.1:{uac_port} ({status})"
        )));
    }
    if !matches!(code, Some(0) | Some(1)) && totals.attempted == 0 {
        return Err(LoadError::Sipp(format!(
            "uac failed before placing a call ({status})"
        )));
    }
    Ok(RunResult::from_snapshot(&snap, totals, code, cpu, wall))
}

/// Calls in the hot reference pass after each run.
const HOT_CALLS: u64 = 1000;

/// The same proxy code on a hot core, measured right after a run: each
/// kind's median cost, µs, over 1,000 SIPp-shaped calls pushed
/// through a fresh proxy back to back without sockets
/// ([`takt_sip::ua::synth::hot_costs`]), on a thread made from the plan's
/// spec like the workers. Next to the run's T_sip it tells a cold core's
/// cost (the ratio) from the host's speed at that moment (this value).
pub fn hot_reference(plan: &LoadPlan, mode: Mode) -> Result<Vec<(&'static str, f64)>, LoadError> {
    let t = plan
        .spec
        .renamed("sip-hot")
        .spawn(move || takt_sip::ua::synth::hot_costs(mode, HOT_CALLS))
        .map_err(|e| io("starting the hot reference thread")(std::io::Error::other(e)))?;
    let costs = t
        .join()
        .map_err(|_| io("the hot reference thread")(std::io::Error::other("it panicked")))?;
    Ok(costs.into_iter().map(|(k, ns)| (k, ns / 1000.0)).collect())
}

/// The discarded warm-up run of `case` (none when `warmup_calls` is 0).
fn warm_up(
    plan: &LoadPlan,
    case: LoadCase,
    progress: &mut dyn FnMut(&str),
) -> Result<(), LoadError> {
    if plan.warmup_calls > 0 {
        progress(&format!(
            "{}: warm-up, {} calls",
            case_label(case),
            plan.warmup_calls
        ));
        let _idle = hold_idle(case)?;
        run_fresh_ports(plan, case, plan.warmup_calls)?;
    }
    Ok(())
}

/// Measured run `i` of `case`, reported to `progress`.
fn measured_run(
    plan: &LoadPlan,
    case: LoadCase,
    i: usize,
    progress: &mut dyn FnMut(&str),
) -> Result<RunResult, LoadError> {
    let idle = hold_idle(case)?;
    let mut r = run_fresh_ports(plan, case, plan.calls)?;
    // right after the run, so both see the host in the same state (not
    // after warm-ups, whose results are discarded)
    for (kind, us) in hot_reference(plan, case.mode)? {
        if let Some(k) = r.kinds.get_mut(kind) {
            k.t_sip_hot_us = Some(us);
        }
    }
    drop(idle);
    let t = |k: &str| {
        r.kinds
            .get(k)
            .map(|x| format!("{:.2}", x.t_sip_us))
            .unwrap_or_else(|| "-".into())
    };
    progress(&format!(
        "{}: run {}/{}: {}/{} calls ok, {} failed, T_sip µs invite {} ack {} bye {} 1xx {} 2xx {}, cpu {:.2} s",
        case_label(case),
        i + 1,
        plan.runs.max(1),
        r.uac.succeeded,
        r.uac.attempted,
        r.uac.failed,
        t("invite"),
        t("ack"),
        t("bye"),
        t("1xx"),
        t("2xx"),
        r.cpu_s
    ));
    Ok(r)
}

/// One case alone: its warm-up, then its `runs` measured runs.
pub fn run_case(
    plan: &LoadPlan,
    case: LoadCase,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<RunResult>, LoadError> {
    warm_up(plan, case, progress)?;
    (0..plan.runs.max(1))
        .map(|i| measured_run(plan, case, i, progress))
        .collect()
}

fn transport_name(t: Transport) -> &'static str {
    match t {
        Transport::Udp => "udp",
        Transport::Tcp => "tcp",
    }
}

fn mode_name(m: Mode) -> &'static str {
    match m {
        Mode::Stateless => "stateless",
        Mode::Stateful => "stateful",
    }
}

fn case_label(c: LoadCase) -> String {
    let idle = match c.idle_latency {
        Some(d) => format!(" idle-latency {}", idle_latency_param(Some(d))),
        None => String::new(),
    };
    format!(
        "{} {} x{}{idle}",
        mode_name(c.mode),
        c.model.name(),
        c.workers
    )
}

/// The paper's Table I (OpenSIPS, baseline "server" mode): T_sip and
/// K_rcv in µs by server threads, at the lower of the two loads it gives
/// (mean over all message types; the paper does not split by type).
fn published(workers: usize) -> Option<(f64, f64, u32)> {
    match workers {
        2 => Some((76.9, 1309.16, 2200)),
        4 => Some((130.81, 1473.32, 2000)),
        6 => Some((167.97, 1042.66, 1800)),
        8 => Some((213.47, 893.26, 1600)),
        16 => Some((303.00, 809.76, 1200)),
        _ => None,
    }
}

/// The result rows of one case.
pub fn rows(plan: &LoadPlan, case: LoadCase, runs: &[RunResult]) -> Vec<ResultRow> {
    let mut base = Map::new();
    base.insert("mode".into(), mode_name(case.mode).into());
    base.insert("model".into(), case.model.name().into());
    base.insert("workers".into(), case.workers.into());
    base.insert("cps".into(), plan.cps.into());
    base.insert("calls".into(), plan.calls.into());
    base.insert("generator".into(), plan.generator.name().into());
    base.insert("transport".into(), transport_name(plan.transport).into());
    let cpus = plan
        .spec
        .cpus()
        .map(|c| c.to_string())
        .unwrap_or_else(|| "any".into());
    let sched = plan
        .spec
        .policy()
        .map(|p| p.to_string())
        .unwrap_or_else(|| "other".into());
    base.insert("cpus".into(), cpus.into());
    base.insert("sched".into(), sched.into());
    base.insert("spin".into(), plan.spin.to_string().into());
    base.insert(
        "idle_latency".into(),
        idle_latency_param(case.idle_latency).into(),
    );
    let sipp_cpus = plan
        .sipp_cpus
        .as_ref()
        .map_or_else(|| "any".into(), |c| c.to_string());
    base.insert("sipp_cpus".into(), sipp_cpus.into());
    if case.model == WorkerModel::Shared {
        base.insert("wake".into(), plan.wake.name().into());
    }
    let cpu_s = runs.iter().map(|r| r.cpu_s).sum::<f64>() / runs.len().max(1) as f64;
    let load_note = format!(
        "cpu_s: the proxy's CPU time per run of {} calls at {} cps",
        plan.calls, plan.cps
    );
    let row = |name: &str, extra: Option<&str>, unit: &str, better, samples: Vec<f64>| {
        let mut p = base.clone();
        if let Some(k) = extra {
            p.insert("message".into(), Value::from(k));
        }
        ResultRow::new(name, "takt", p, unit, better, samples, cpu_s)
    };
    let mut out = Vec::new();
    let mut kinds: Vec<&String> = runs.iter().flat_map(|r| r.kinds.keys()).collect();
    kinds.sort_by_key(|k| {
        takt_sip::proxy::MsgKind::ALL
            .iter()
            .position(|m| m.name() == k.as_str())
            .unwrap_or(usize::MAX)
    });
    kinds.dedup();
    let paper = published(case.workers);
    for kind in kinds {
        let of = |f: &dyn Fn(&KindRun) -> Option<f64>| -> Vec<f64> {
            runs.iter()
                .filter_map(|r| r.kinds.get(kind).and_then(f))
                .collect()
        };
        let t = of(&|k| Some(k.t_sip_us));
        if !t.is_empty() {
            let mut r =
                row("t_sip", Some(kind), "us", Better::Lower, t).with_note(load_note.clone());
            if let Some((t_sip, _, at)) = paper {
                r = r.with_published(t_sip).with_note(format!(
                    "{load_note}; published: the paper's Table I, OpenSIPS with {} threads at {at} cps, mean over all messages",
                    case.workers
                ));
            }
            out.push(r);
        }
        let k = of(&|k| k.k_rcv_us);
        if !k.is_empty() {
            let mut r = row("k_rcv", Some(kind), "us", Better::Lower, k);
            if let Some((_, k_rcv, at)) = paper {
                r = r.with_published(k_rcv).with_note(format!(
                    "published: the paper's Table I, OpenSIPS with {} threads at {at} cps (near its 1% drop point), mean over all messages",
                    case.workers
                ));
            }
            out.push(r);
        }
        let s = of(&|k| k.k_snd_us);
        if !s.is_empty() {
            out.push(row("k_snd", Some(kind), "us", Better::Lower, s));
        }
        // the same code on a hot core right after each run, and what a
        // cold core multiplies it by
        let h = of(&|k| k.t_sip_hot_us);
        if !h.is_empty() {
            out.push(row("t_sip_hot", Some(kind), "us", Better::Lower, h).with_note(
                "median cost of this kind on a hot core right after each run: SIPp-shaped calls through a fresh proxy without sockets (takt_sip::ua::synth)",
            ));
            let ratio = of(&|k| k.t_sip_hot_us.map(|h| k.t_sip_us / h));
            out.push(row("cold_factor", Some(kind), "ratio", Better::Lower, ratio).with_note(
                "T_sip over t_sip_hot, run by run: what a cold core costs, with the host's speed of the moment divided out",
            ));
        }
        // what the T_sip of a message owes to another worker running at
        // the same time (see `takt_sip::stats::KindStats::t_sip_alone`)
        let a = of(&|k| k.t_sip_alone_us);
        if !a.is_empty() {
            out.push(row("t_sip_alone", Some(kind), "us", Better::Lower, a));
        }
        out.push(row(
            "overlapped",
            Some(kind),
            "fraction",
            Better::Lower,
            of(&|k| Some(k.overlapped)),
        ));
        if case.mode == Mode::Stateful {
            out.push(row(
                "lock_contended",
                Some(kind),
                "fraction",
                Better::Lower,
                of(&|k| Some(k.lock_contended)),
            ));
        }
    }
    let per = |f: &dyn Fn(&RunResult) -> f64| -> Vec<f64> { runs.iter().map(f).collect() };
    out.push(row(
        "calls_attempted",
        None,
        "calls",
        Better::Higher,
        per(&|r| r.uac.attempted as f64),
    ));
    out.push(row(
        "calls_succeeded",
        None,
        "calls",
        Better::Higher,
        per(&|r| r.uac.succeeded as f64),
    ));
    out.push(row(
        "calls_failed",
        None,
        "calls",
        Better::Lower,
        per(&|r| r.uac.failed as f64),
    ));
    out.push(
        row(
            "drops",
            None,
            "datagrams",
            Better::Lower,
            per(&|r| r.socket_drops as f64),
        )
        .with_note("datagrams the proxy's sockets dropped (SO_RXQ_OVFL) per run"),
    );
    out.push(
        row(
            "reordered_dropped",
            None,
            "messages",
            Better::Lower,
            per(&|r| r.reordered_dropped as f64),
        )
        .with_note(
            "stateless: provisional responses not forwarded because a final response of their \
             transaction that arrived later was already sent (two workers of one socket would \
             otherwise send them out of order) per run",
        ),
    );
    out.push(
        row(
            "host_udp_rcvbuf_errors",
            None,
            "datagrams",
            Better::Lower,
            per(&|r| r.host_rcvbuf_errors as f64),
        )
        .with_note("host-wide UDP RcvbufErrors per run (SIPp's sockets included)"),
    );
    out.push(
        row(
            "busiest_worker_share",
            None,
            "fraction",
            Better::Higher,
            per(&|r| r.busiest_worker_share),
        )
        .with_note(format!(
            "the fraction of the messages the busiest of the {} UDP workers handled per run \
             (1/{}: evenly spread; 1: one worker, kept warm, took all)",
            case.workers, case.workers
        )),
    );
    out.push(
        row(
            "cpu_per_call",
            None,
            "us",
            Better::Lower,
            per(&|r| r.cpu_s * 1e6 / r.uac.attempted.max(1) as f64),
        )
        .with_note(format!(
            "the proxy's CPU time per call at {} cps (per-wake-up costs dominate at low load)",
            plan.cps
        )),
    );
    out
}

impl Suite for LoadPlan {
    type Output = Document;
    type Error = LabError;

    fn name(&self) -> &str {
        "sip load"
    }

    fn estimate(&self) -> Duration {
        self.expected()
    }

    fn describe(&self) -> String {
        format!(
            "{} configuration(s) x ({} runs of {} calls at {} cps)",
            self.cases.len(),
            self.runs,
            self.calls,
            self.cps
        )
    }

    /// Runs the plan with its stop flag raised by `ctx`'s cancellation.
    fn run(&self, ctx: &RunContext) -> Result<Document, LabError> {
        let plan = LoadPlan {
            stop: ctx.cancel().flag(),
            ..self.clone()
        };
        run(&plan, &mut |line| ctx.step(line)).map_err(|e| match e {
            LoadError::Interrupted => LabError::Interrupted("sip load"),
            e => LabError::Load(e),
        })
    }
}

/// Runs every case of the plan and closes the document (suite `sip_load`).
pub fn run(plan: &LoadPlan, progress: &mut dyn FnMut(&str)) -> Result<Document, LoadError> {
    let mut doc = DocumentBuilder::start("sip_load");
    // Round by round: run i of every case before run i + 1 of any, each
    // case warmed up just before its first run. The host's load drifts
    // over minutes on a shared machine; taking turns makes every case see
    // the same mix of it, so the cases compare fairly.
    // A limit the kernel refuses fails here, before any run.
    for &case in &plan.cases {
        hold_idle(case)?;
    }
    let n = plan.runs.max(1);
    let mut runs: Vec<Vec<RunResult>> = plan.cases.iter().map(|_| Vec::with_capacity(n)).collect();
    for i in 0..n {
        for (&case, out) in plan.cases.iter().zip(runs.iter_mut()) {
            if i == 0 {
                warm_up(plan, case, progress)?;
            }
            out.push(measured_run(plan, case, i, progress)?);
        }
    }
    for (&case, runs) in plan.cases.iter().zip(&runs) {
        for r in rows(plan, case, runs) {
            doc.push(r);
        }
    }
    let (uac, uas, pair) = match plan.generator {
        LoadGenerator::Sipp => ("sipp -sn uac", "sipp -sn uas", "SIPp pair"),
        LoadGenerator::Takt => (
            "takt's generator (UAC, Poisson arrivals)",
            "its UAS (both on threads of this process, their CPU time taken out of cpu_s)",
            "generator",
        ),
    };
    doc.note(format!(
        "{uac} -> takt proxy (in-process) -> {uas} on 127.0.0.1 over {}, {} cps, {} calls per run, {} runs after a {}-call warm-up, a fresh proxy and {pair} per run, the configurations taking turns run by run; samples are per-run medians",
        transport_name(plan.transport).to_uppercase(),
        plan.cps,
        plan.calls,
        plan.runs.max(1),
        plan.warmup_calls
    ));
    doc.note("T_sip: SIP-layer processing from the bytes in user space until the message is handled, excluding time inside send calls; K_rcv: kernel receive timestamp to user space; K_snd: time inside send calls (batched model: each sendmmsg split over its batch by datagrams queued)");
    Ok(doc.finish())
}

/// Every kind of row [`rows`] can emit, from fixed synthetic runs (every
/// mode × worker model, every message kind with every optional figure):
/// the input of the document-shape snapshot test. Measures nothing.
#[doc(hidden)]
pub fn synthetic_rows() -> Vec<ResultRow> {
    let plan = LoadPlan::new(PathBuf::from("sipp"));
    let kind = KindRun {
        count: 10,
        t_sip_us: 2.0,
        k_rcv_us: Some(3.0),
        k_snd_us: Some(4.0),
        t_sip_alone_us: Some(1.5),
        overlapped: 0.1,
        lock_contended: 0.01,
        t_sip_hot_us: Some(1.0),
    };
    let run = RunResult {
        kinds: takt_sip::proxy::MsgKind::ALL
            .iter()
            .map(|m| (m.name().to_string(), kind))
            .collect(),
        uac: UacTotals {
            attempted: 100,
            succeeded: 99,
            failed: 1,
            retransmissions: 0,
        },
        uac_exit: Some(0),
        socket_drops: 0,
        reordered_dropped: 0,
        host_rcvbuf_errors: 0,
        busiest_worker_share: 0.5,
        cpu_s: 0.1,
        wall_s: 1.0,
    };
    let runs = [run.clone(), run];
    plan.cases
        .iter()
        .flat_map(|&case| rows(&plan, case, &runs))
        .collect()
}
