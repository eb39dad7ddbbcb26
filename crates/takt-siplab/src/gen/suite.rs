//! `takt sip gen` as a [`Suite`]: a [`GenSuite`] binds the generator,
//! shows a status line per second, runs until its calls are placed, its
//! duration is over or the run is cancelled, and returns a [`GenOutput`]
//! (the summary as text, the `sip_gen` document as JSON).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use takt_measure::result::Document;
use takt_measure::suite::{RunContext, Suite, SuiteOutput};

use std::net::SocketAddr;

use takt_sched::{CpuSet, SchedPolicy, ThreadSpec};
use takt_sip::proxy::Transport;
use takt_sip::ua::UaTimers;

use super::{Arrivals, GenConfig, GenPolicy, GenReport, Generator, Role};
use crate::error::{io, Error, Result};

/// How often the status thread looks at the clock.
const STATUS_POLL: Duration = Duration::from_millis(100);

/// What `takt sip gen` was asked for; [`GenOptions::resolve`] fills in
/// the defaults and checks the combination.
#[derive(Debug, Clone)]
pub struct GenOptions {
    /// Where the UAC sends its calls (required for roles uac and both).
    pub proxy: Option<SocketAddr>,
    /// Mean offered call rate.
    pub cps: f64,
    /// Calls to place (default 10,000 unless `duration` is given).
    pub calls: Option<u64>,
    /// How long to place calls (role uas: how long to answer).
    pub duration: Option<Duration>,
    /// Arrival process.
    pub arrivals: Arrivals,
    /// Seed of the Poisson schedule.
    pub seed: u64,
    /// Time between the ACK and the BYE.
    pub hold: Duration,
    /// UAC sockets (UDP).
    pub ports: usize,
    /// Transport of both sides.
    pub transport: Transport,
    /// UAC connections (TCP).
    pub connections: usize,
    /// Which sides run here.
    pub role: Role,
    /// Where the UAS listens (role uac: where the UAS elsewhere listens;
    /// the calls' Request-URI names it).
    pub uas_listen: SocketAddr,
    /// Preload `Route: <sip:PROXY;lr>` into the INVITEs.
    pub route_preload: bool,
    /// RFC 3261 retransmissions off.
    pub no_retrans: bool,
    /// Bounded wait after the last planned call.
    pub drain: Duration,
    /// Generator-bound when the send lag's p99 exceeds this.
    pub lag_bound: Duration,
    /// Receive buffer per generator socket, bytes.
    pub rcvbuf: usize,
    /// The generator's CPUs.
    pub cpus: Option<CpuSet>,
    /// The generator's policy (default: real-time where permitted).
    pub sched: Option<SchedPolicy>,
    /// The server's CPUs: without `cpus`, the generator runs on the others.
    pub server_cpus: Option<CpuSet>,
}

impl GenOptions {
    /// The run these options ask for. A combination that cannot run (no
    /// proxy for a UAC, no CPU left beside the server's, a setting out of
    /// range) is [`Error::Usage`]; a policy the kernel refuses is
    /// [`Error::Config`].
    pub fn resolve(self) -> Result<GenSuite> {
        // the server is elsewhere: no CPUs of its to compare with
        let policy = GenPolicy::choose(self.sched)?;
        let usage = |e: Error| Error::Usage(Box::new(e));
        let proxy = match (self.role, self.proxy) {
            (Role::Uas, p) => p.unwrap_or(self.uas_listen),
            (_, Some(p)) => p,
            (_, None) => {
                return Err(usage(Error::Config(
                    "--proxy ADDR is required for roles uac and both".into(),
                )))
            }
        };
        let mut c = GenConfig::new(proxy, self.cps);
        c.role = self.role;
        c.uas_listen = self.uas_listen;
        c.route_preload = self.route_preload;
        c.arrivals = self.arrivals;
        c.seed = self.seed;
        c.calls = match (self.calls, self.duration) {
            (None, None) if self.role != Role::Uas => Some(10_000),
            (n, _) => n,
        };
        c.duration = self.duration;
        c.hold = self.hold;
        c.ports = self.ports;
        c.transport = self.transport;
        c.connections = self.connections;
        c.timers = UaTimers {
            retransmit: !self.no_retrans,
            ..UaTimers::default()
        };
        c.drain = self.drain;
        c.lag_bound = self.lag_bound;
        c.rcvbuf = Some(self.rcvbuf);
        let spec = match &self.cpus {
            Some(cpus) => ThreadSpec::new("gen").with_cpus(cpus.clone()),
            None => ThreadSpec::new("gen"),
        };
        c.spec = policy.apply(spec);
        if let (Some(server), None) = (&self.server_cpus, &self.cpus) {
            c.avoid_cpus(server).map_err(usage)?;
        }
        GenSuite::new(c, policy).map_err(usage)
    }
}

/// One `takt sip gen` run: a validated configuration and the policy its
/// threads got.
#[derive(Debug, Clone)]
pub struct GenSuite {
    /// The run's settings ([`GenConfig::validate`]d by [`GenSuite::new`]).
    pub cfg: GenConfig,
    /// The generator's policy and what the document must say about it.
    pub policy: GenPolicy,
}

impl GenSuite {
    /// A run of `cfg` under `policy`; an invalid configuration is an error.
    pub fn new(cfg: GenConfig, policy: GenPolicy) -> Result<GenSuite> {
        cfg.validate()?;
        Ok(GenSuite { cfg, policy })
    }
}

/// A finished `takt sip gen` run.
#[derive(Debug, Clone)]
pub struct GenOutput {
    /// What the generator saw.
    pub report: GenReport,
    /// The `sip_gen` document, the policy stamped.
    pub doc: Document,
}

impl Serialize for GenOutput {
    /// The result document.
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.doc.serialize(s)
    }
}

impl SuiteOutput for GenOutput {
    fn document(&self) -> &Document {
        &self.doc
    }
    fn render(&self) -> String {
        self.report.summary()
    }
}

impl Suite for GenSuite {
    type Output = GenOutput;
    type Error = Error;

    fn name(&self) -> &str {
        "sip gen"
    }

    /// The duration, or the calls at the rate, plus the drain (nothing
    /// for a UAS that answers until stopped).
    fn estimate(&self) -> Duration {
        let placing = match (self.cfg.duration, self.cfg.calls) {
            (Some(d), _) => d,
            (None, Some(n)) if self.cfg.role.has_uac() => {
                Duration::from_secs_f64(n as f64 / self.cfg.cps)
            }
            _ => return Duration::ZERO,
        };
        placing + self.cfg.drain
    }

    fn describe(&self) -> String {
        match self.cfg.role {
            Role::Uas => format!("uas on {}", self.cfg.uas_listen),
            role => format!(
                "{} at {} cps to {}",
                role.name(),
                self.cfg.cps,
                self.cfg.proxy
            ),
        }
    }

    /// Binds, runs with a status line per second, and stops early when
    /// `ctx` is cancelled (the report covers what ran).
    fn run(&self, ctx: &RunContext) -> Result<GenOutput> {
        let shown = ctx.progress();
        for n in self.policy.notes() {
            shown.println(&n);
        }
        let cfg = &self.cfg;
        if cfg.role == Role::Uas && cfg.duration.is_none() {
            shown.println(&format!(
                "takt sip gen: answering on {} until Ctrl-C",
                cfg.uas_listen
            ));
        }
        let g = Generator::bind(cfg)?;
        // where the UAS listens and what the calls name: a proxy at
        // `proxy` must route the Request-URI (or forward) there
        shown.println(&g.uas_line());
        let live = g.live();
        let done = Arc::new(AtomicBool::new(false));
        let status = {
            let (done, shown) = (Arc::clone(&done), shown.clone());
            std::thread::Builder::new()
                .name("gen-status".into())
                .spawn(move || {
                    let start = Instant::now();
                    let mut last = 0u64;
                    // Acquire pairs with the Release store after the run.
                    while !done.load(Ordering::Acquire) {
                        std::thread::sleep(STATUS_POLL);
                        let secs = start.elapsed().as_secs();
                        if secs <= last {
                            continue;
                        }
                        last = secs;
                        // Relaxed: counters for display, read independently.
                        let l = |v: &AtomicU64| v.load(Ordering::Relaxed);
                        shown.println(&format!(
                            "{secs:>4}s  placed {:>9}  completed {:>9}  failed {:>7}  retrans {:>7}  max lag {:>7} µs  answered {:>9}",
                            l(&live.attempted),
                            l(&live.completed),
                            l(&live.failed),
                            l(&live.retransmitted),
                            l(&live.max_lag_us),
                            l(&live.answered)
                        ));
                    }
                })
                .map_err(io("starting the status thread"))?
        };
        let report = g.run(ctx.cancel());
        // Release pairs with the status thread's Acquire load.
        done.store(true, Ordering::Release);
        let _ = status.join();
        let report = report?;
        let mut doc = report.to_document();
        self.policy.stamp(&mut doc);
        Ok(GenOutput { report, doc })
    }
}
