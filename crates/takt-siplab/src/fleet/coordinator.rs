//! The coordinator's side: finding the agents, measuring their clocks,
//! running a trial over them, and the fleet as a capacity [`Load`].
//!
//! A trial, in steps:
//! 1. Probe each agent's clock: five [`Ping`]s, the offset taken at the
//!    midpoint of the one with the shortest round trip (agent clock −
//!    coordinator clock), so the error is at most half that round trip.
//! 2. Plan one start instant (now + a lead of 200 ms plus twice the
//!    slowest round trip), translated into each agent's clock.
//! 3. Order the UAS (it binds at once and answers until stopped), then
//!    each UAC agent its share ([`super::split`]).
//! 4. Wait for every UAC's result, watching presence: an agent that goes
//!    down (missed heartbeats, a lost NATS connection) or sends no result
//!    before the deadline voids the trial — every agent is stopped, and
//!    the agent is left out of the fleet from then on.
//! 5. Stop the UAS; its result holds what it received and sent per
//!    agent; [`super::merge`] makes the one account.
//!
//! A void trial and one where an agent was generator-bound are run again
//! ([`MAX_ATTEMPTS`] in all) before the search sees them: neither is ever
//! counted as the server's loss. A trial still generator-bound after its
//! attempts reaches the search flagged as such, as the local generator's
//! would.

use std::net::SocketAddr;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use takt_remote::{Node, RemoteAgent};
use takt_sip::proxy::Transport;

use super::detail::FleetPoint;
use super::merge::{merge, Account, AgentShare};
use super::protocol::{
    AgentInfo, AgentResult, Hello, Outage, Ping, Pong, Stop, Stopped, Stream, TrialOrder,
    AGENT_EXPORT,
};
use super::split;
use crate::capacity::{Load, LoadOutcome};
use crate::error::{Error, Result};
use crate::gen::{Cancel, SaturationCause, SaturationCauses};
use crate::target::Target;

/// Attempts of one trial before a void or generator-bound one is passed on.
pub const MAX_ATTEMPTS: usize = 3;
/// Clock probes per agent per trial.
const PROBES: usize = 5;
/// The start instant's lead over the slowest round trip's two.
pub const LEAD: Duration = Duration::from_millis(200);
/// How long a query to an agent (other than a trial) may take.
const ASK: Duration = Duration::from_secs(3);

/// What the coordinator needs to know.
#[derive(Debug, Clone)]
pub struct FleetOptions {
    /// takt-remote's configuration: the NATS URL, credentials, TLS.
    pub remote: takt_remote::Config,
    /// Wait for at least this many agents.
    pub agents: usize,
    /// How long to wait for them.
    pub wait: Duration,
    /// The agent that plays the UAS (default: the first, by name, that can).
    pub uas: Option<String>,
    /// The agents that place calls (default: every agent that can).
    pub uac: Vec<String>,
}

/// One agent as the coordinator sees it.
#[derive(Debug)]
struct Member {
    info: AgentInfo,
    remote: RemoteAgent,
    /// Left out after it went silent.
    lost: bool,
}

/// A clock probe's result.
#[derive(Debug, Clone, Copy, Default)]
struct Clock {
    offset_ns: i64,
    rtt_ns: u64,
}

/// The settings of one trial.
#[derive(Debug, Clone)]
pub struct TrialSpec {
    /// The server under test.
    pub proxy: SocketAddr,
    /// Offered rate, calls/s, over all UAC agents.
    pub cps: f64,
    /// The window of calls.
    pub window: Duration,
    /// Drain after the last call.
    pub drain: Duration,
    /// Quiet time that ends the drain early.
    pub drain_quiet: Option<Duration>,
    /// UDP or TCP.
    pub transport: Transport,
    /// UAC sockets or connections per agent.
    pub ports: usize,
    /// Preload a Route to the proxy.
    pub route_preload: bool,
    /// An agent is generator-bound when its send lag's p99 exceeds this.
    pub lag_bound: Duration,
    /// A call is late when its send lag exceeds this.
    pub late_after: Duration,
    /// The server is transaction-stateful (it may absorb a 180 its call's
    /// 200 overtook: [`crate::gen::Account`]).
    pub stateful: bool,
    /// Retransmissions on (a search's trials: off).
    pub retransmit: bool,
    /// Count each UAC's completed and failed calls per interval this
    /// long from the planned start ([`Account::completed_series`]).
    pub series: Option<Duration>,
    /// Close the UAS's socket during the trial and bind it again.
    pub uas_outage: Option<Outage>,
    /// A second stream of calls beside the first, its rate over all UAC
    /// agents (split as the first's).
    pub second: Option<Stream>,
}

/// One attempt of one trial, as the document's notes report it.
#[derive(Debug, Clone, Serialize)]
pub struct TrialRecord {
    /// The coordinator's trial number.
    pub trial: u32,
    /// The rate offered.
    pub cps: f64,
    /// Why it was void (`None`: it counted).
    pub void: Option<String>,
    /// The merged account (empty when void before the results).
    pub account: Account,
    /// Wall time of the whole attempt minus its window, s: what
    /// coordination, start lead, drain and the result exchange cost.
    pub overhead_s: f64,
    /// The planned start, ns since the Unix epoch on the coordinator's
    /// clock (what the agents' series and instants are relative to).
    pub start_unix_ns: u64,
}

fn unix_ns() -> i128 {
    i128::from(super::unix_ns())
}

/// A fleet of agents reached over NATS.
#[derive(Debug)]
pub struct Fleet {
    node: Node,
    members: Vec<Member>,
    uas: usize,
    uac: Vec<String>,
    trial: u32,
    /// Ends a running trial early ([`Fleet::with_cancel`]).
    cancel: Cancel,
    /// Every attempt so far.
    pub records: Vec<TrialRecord>,
}

impl Fleet {
    /// Connects (credentials and TLS as configured: a refusal is an
    /// error) and waits up to `opts.wait` for `opts.agents` agents.
    pub fn connect(opts: &FleetOptions) -> Result<Fleet> {
        let node = Node::start(opts.remote.clone())?;
        let deadline = Instant::now() + opts.wait;
        let mut members = Vec::new();
        loop {
            for n in node.nodes_up() {
                if n == node.name() || members.iter().any(|m: &Member| m.info.name == n) {
                    continue;
                }
                let Ok(remote) = node.remote(&n, AGENT_EXPORT) else {
                    continue;
                };
                // a node that is no agent has no responder: fails at once
                if let Ok(info) = remote.ask::<Hello, AgentInfo>(Hello, ASK).wait() {
                    members.push(Member {
                        info,
                        remote,
                        lost: false,
                    });
                }
            }
            if members.len() >= opts.agents.max(1) || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        if members.len() < opts.agents.max(1) {
            return Err(Error::Fleet(format!(
                "{} agent(s) joined {} within {:?}, {} wanted",
                members.len(),
                opts.remote.url,
                opts.wait,
                opts.agents.max(1)
            )));
        }
        members.sort_by(|a, b| a.info.name.cmp(&b.info.name));
        let uas = match &opts.uas {
            Some(n) => members.iter().position(|m| &m.info.name == n && m.info.uas),
            None => members.iter().position(|m| m.info.uas),
        }
        .ok_or_else(|| Error::Fleet("no agent of the fleet can play the UAS".into()))?;
        for n in &opts.uac {
            if !members.iter().any(|m| &m.info.name == n && m.info.uac) {
                return Err(Error::Fleet(format!("no UAC agent is named {n}")));
            }
        }
        Ok(Fleet {
            node,
            members,
            uas,
            uac: opts.uac.clone(),
            trial: 0,
            cancel: Cancel::default(),
            records: Vec::new(),
        })
    }

    /// Ends a running trial (every agent stopped, [`Error::Interrupted`])
    /// once `cancel` is raised, as a Ctrl-C does.
    pub fn with_cancel(mut self, cancel: Cancel) -> Fleet {
        self.cancel = cancel;
        self
    }

    /// The coordinator's node name.
    pub fn name(&self) -> &str {
        self.node.name()
    }

    /// The agents, in index order.
    pub fn agents(&self) -> Vec<&AgentInfo> {
        self.members.iter().map(|m| &m.info).collect()
    }

    /// Where the fleet's UAS listens.
    pub fn uas_addr(&self) -> SocketAddr {
        let m = &self.members[self.uas];
        SocketAddr::new(m.info.addr, m.info.uas_port)
    }

    /// The UAC agents still in the fleet (indices into the members).
    fn uacs(&self) -> Vec<usize> {
        (0..self.members.len())
            .filter(|&i| {
                let m = &self.members[i];
                !m.lost && m.info.uac && (self.uac.is_empty() || self.uac.contains(&m.info.name))
            })
            .collect()
    }

    fn probe(&self, i: usize) -> Result<Clock> {
        let mut best: Option<Clock> = None;
        for _ in 0..PROBES {
            let t0 = unix_ns();
            let Pong { unix_ns: at } = self.members[i]
                .remote
                .ask::<Ping, Pong>(Ping, ASK)
                .wait()
                .map_err(|e| {
                Error::Fleet(format!(
                    "{} did not answer a ping: {e}",
                    self.members[i].info.name
                ))
            })?;
            let t1 = unix_ns();
            let c = Clock {
                offset_ns: (i128::from(at) - (t0 + t1) / 2) as i64,
                rtt_ns: (t1 - t0).max(0) as u64,
            };
            if best.is_none_or(|b| c.rtt_ns < b.rtt_ns) {
                best = Some(c);
            }
        }
        Ok(best.unwrap_or_default())
    }

    fn stop_all(&self, trial: u32, who: &[usize]) {
        for &i in who {
            let _ = self.members[i]
                .remote
                .ask::<Stop, Stopped>(Stop { trial }, ASK)
                .wait();
        }
    }

    /// One attempt of a trial (see the module docs); a void attempt is
    /// an `Ok` record with its reason.
    pub fn run_trial(&mut self, spec: &TrialSpec) -> Result<TrialRecord> {
        let began = Instant::now();
        let uacs = self.uacs();
        if uacs.is_empty() {
            return Err(Error::Fleet("no UAC agent is left in the fleet".into()));
        }
        if self.members[self.uas].lost {
            return Err(Error::Fleet(format!(
                "the UAS agent {} is gone",
                self.members[self.uas].info.name
            )));
        }
        self.trial += 1;
        let trial = self.trial;
        let mut used = uacs.clone();
        if !used.contains(&self.uas) {
            used.push(self.uas);
        }
        let mut clocks = vec![Clock::default(); self.members.len()];
        for &i in &used {
            clocks[i] = self.probe(i)?;
        }
        let slowest = used.iter().map(|&i| clocks[i].rtt_ns).max().unwrap_or(0);
        let start = unix_ns() + (LEAD.as_nanos() + 2 * u128::from(slowest)) as i128;
        let budget = spec.window + spec.drain + LEAD + Duration::from_secs(5);
        let order = |i: usize, uac: bool, cps: f64| TrialOrder {
            trial,
            index: i as u32,
            uac,
            uas: !uac,
            proxy: spec.proxy,
            uas_addr: self.uas_addr(),
            tcp: spec.transport == Transport::Tcp,
            cps,
            seed: split::agent_seed(split::trial_seed(trial), i as u32),
            run_id: split::run_id(trial, i as u32),
            window_ms: spec.window.as_millis() as u64,
            drain_ms: spec.drain.as_millis() as u64,
            drain_quiet_ms: spec.drain_quiet.map_or(0, |d| d.as_millis() as u64),
            ports: spec.ports as u32,
            route_preload: spec.route_preload,
            lag_bound_us: spec.lag_bound.as_micros() as u64,
            late_after_us: spec.late_after.as_micros() as u64,
            start_unix_ns: (start + i128::from(clocks[i].offset_ns)) as u64,
            max_ms: (budget + Duration::from_secs(5)).as_millis() as u64,
            retransmit: spec.retransmit,
            series_ms: if uac {
                spec.series.map_or(0, |d| d.as_millis().max(1) as u64)
            } else {
                0
            },
            uas_outage: if uac { None } else { spec.uas_outage },
            second: spec.second.filter(|_| uac).map(|st| Stream {
                cps: st.cps / uacs.len() as f64,
                ..st
            }),
        };
        // every answer arrives on one channel: (member, uac side, result)
        let (tx, rx) = mpsc::channel::<(usize, bool, std::result::Result<AgentResult, String>)>();
        let send = |i: usize, uac: bool, cps: f64, timeout: Duration| {
            let p = self.members[i]
                .remote
                .ask::<TrialOrder, AgentResult>(order(i, uac, cps), timeout);
            let tx = tx.clone();
            std::thread::spawn(move || {
                let _ = tx.send((i, uac, p.wait().map_err(|e| e.to_string())));
            });
        };
        send(self.uas, false, 0.0, budget + Duration::from_secs(10));
        let rates = split::shares(spec.cps, uacs.len());
        for (&i, &r) in uacs.iter().zip(&rates) {
            send(i, true, r, budget);
        }
        drop(tx);
        let deadline =
            began + budget + Duration::from_secs(3) + Duration::from_nanos(slowest * PROBES as u64);
        let mut results: Vec<Option<AgentResult>> = vec![None; self.members.len()];
        let mut uas_result = None;
        let mut void = None;
        let mut got = 0;
        while got < uacs.len() && void.is_none() {
            if self.cancel.is_cancelled() {
                self.stop_all(trial, &used);
                return Err(Error::Interrupted);
            }
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok((i, true, Ok(r))) => {
                    if let Some(e) = &r.error {
                        return Err(Error::Fleet(format!("{}: {e}", self.members[i].info.name)));
                    }
                    results[i] = Some(r);
                    got += 1;
                }
                Ok((i, true, Err(e))) => {
                    void = Some(format!("{} sent no result: {e}", self.members[i].info.name));
                    self.members[i].lost = true;
                }
                Ok((_, false, r)) => {
                    let why = r.map_or_else(|e| e, |r| r.error.unwrap_or_default());
                    self.stop_all(trial, &used);
                    return Err(Error::Fleet(format!(
                        "the UAS agent {} ended early: {why}",
                        self.members[self.uas].info.name
                    )));
                }
                Err(_) => {}
            }
            for &i in &used {
                if !self.members[i].remote.is_up() && void.is_none() {
                    void = Some(format!("{} fell silent", self.members[i].info.name));
                    self.members[i].lost = true;
                }
            }
            if void.is_none() && Instant::now() > deadline {
                void = Some("an agent's result did not come in time".into());
            }
        }
        self.stop_all(
            trial,
            &used
                .iter()
                .copied()
                .filter(|&i| !self.members[i].lost)
                .collect::<Vec<_>>(),
        );
        // the UAS's answer follows its stop (its drain and report first:
        // a next order before it ends would find the agent busy)
        let uas_wait = ASK + spec.drain + Duration::from_secs(2);
        while uas_result.is_none() {
            match rx.recv_timeout(uas_wait) {
                Ok((_, false, r)) => uas_result = Some(r),
                Ok(_) => {}
                Err(_) => break,
            }
        }
        let overhead_s = (began.elapsed().as_secs_f64() - spec.window.as_secs_f64()).max(0.0);
        if let Some(v) = void {
            let rec = TrialRecord {
                trial,
                cps: spec.cps,
                void: Some(v),
                account: Account::default(),
                overhead_s,
                start_unix_ns: start as u64,
            };
            self.records.push(rec.clone());
            return Ok(rec);
        }
        let uas = match uas_result {
            Some(Ok(r)) if r.error.is_none() => r,
            Some(Ok(r)) => {
                return Err(Error::Fleet(format!(
                    "the UAS agent failed: {}",
                    r.error.unwrap_or_default()
                )))
            }
            Some(Err(e)) => return Err(Error::Fleet(format!("the UAS agent sent no result: {e}"))),
            None => return Err(Error::Fleet("the UAS agent sent no result".into())),
        };
        let shares: Vec<(AgentShare, u32, &AgentResult)> = uacs
            .iter()
            .zip(&rates)
            .filter_map(|(&i, &cps)| {
                let r = results[i].as_ref()?;
                Some((
                    AgentShare {
                        agent: self.members[i].info.name.clone(),
                        index: i as u32,
                        cps,
                        clock_offset_us: clocks[i].offset_ns as f64 / 1e3,
                        clock_rtt_us: clocks[i].rtt_ns as f64 / 1e3,
                        ..AgentShare::default()
                    },
                    split::run_id(trial, i as u32),
                    r,
                ))
            })
            .collect();
        let mut account = merge(&shares, &uas, spec.stateful);
        account.series_ms = spec.series.map_or(0, |d| d.as_millis().max(1) as u64);
        // the UAS's instants on the coordinator's clock, from the start
        let since_start = |t: Option<u64>| {
            t.map(|t| (i128::from(t) - i128::from(clocks[self.uas].offset_ns) - start) as f64 / 1e9)
        };
        account.uas_closed_s = since_start(uas.uas_closed_unix_ns);
        account.uas_rebound_s = since_start(uas.uas_rebound_unix_ns);
        let void = account
            .generator_bound
            .then(|| format!("generator-bound: {}", account.bound_reasons.join("; ")));
        let rec = TrialRecord {
            trial,
            cps: spec.cps,
            void,
            account,
            overhead_s,
            start_unix_ns: start as u64,
        };
        self.records.push(rec.clone());
        Ok(rec)
    }
}

/// The fleet as a capacity [`Load`]: each trial of the search is a fleet
/// trial (see the module docs), re-run while void.
#[derive(Debug, Clone)]
pub struct FleetLoad {
    fleet: Arc<Mutex<Fleet>>,
    uas: SocketAddr,
    base: TrialSpec,
    cancel: Cancel,
    reached: bool,
    /// The last run's point, until taken ([`Load::fleet_point`]).
    point: Option<FleetPoint>,
}

impl FleetLoad {
    /// A load over `fleet` with `base`'s settings (proxy and rate are set
    /// per trial).
    pub fn new(fleet: Arc<Mutex<Fleet>>, base: TrialSpec, cancel: Cancel) -> FleetLoad {
        let uas = fleet.lock().unwrap_or_else(|e| e.into_inner()).uas_addr();
        FleetLoad {
            fleet,
            uas,
            base,
            cancel,
            reached: false,
            point: None,
        }
    }
}

fn causes(reasons: &[String]) -> SaturationCauses {
    let mut c = SaturationCauses::NONE;
    for r in reasons {
        let cause = if r.contains("send lag") {
            SaturationCause::SendLag
        } else if r.contains("late") {
            SaturationCause::LateCalls
        } else if r.contains("dropped") {
            SaturationCause::SocketDrops
        } else {
            SaturationCause::NoIdle
        };
        c.insert(cause);
    }
    c
}

impl Load for FleetLoad {
    fn uas(&self) -> SocketAddr {
        self.uas
    }

    fn request_uri(&self) -> String {
        let t = if self.base.transport == Transport::Tcp {
            ";transport=tcp"
        } else {
            ""
        };
        format!("sip:service@{}{t}", self.uas)
    }

    fn route(&self, target: SocketAddr) -> Option<String> {
        self.base
            .route_preload
            .then(|| format!("<sip:{target};lr>"))
    }

    fn run(&mut self, target: &Target, rate_cps: f64) -> Result<LoadOutcome> {
        let spec = TrialSpec {
            proxy: target.listen(),
            cps: rate_cps,
            stateful: target.stateful(),
            ..self.base.clone()
        };
        let mut fleet = self.fleet.lock().unwrap_or_else(|e| e.into_inner());
        self.point = None;
        let mut attempts: Vec<TrialRecord> = Vec::new();
        for _ in 0..MAX_ATTEMPTS {
            if self.cancel.is_cancelled() {
                return Err(Error::Interrupted);
            }
            let rec = fleet.run_trial(&spec)?;
            let counted = rec.void.is_none();
            attempts.push(rec);
            if counted {
                break;
            }
        }
        let rec = attempts.pop().expect("at least one attempt");
        if rec.account.agents.is_empty() {
            return Err(Error::Fleet(format!(
                "{MAX_ATTEMPTS} attempts at {rate_cps:.0} cps were void: {}",
                rec.void.unwrap_or_default()
            )));
        }
        self.point = Some(FleetPoint::of(&rec, &attempts));
        let a = &rec.account;
        if !self.reached {
            if a.kinds.get("invite").is_none_or(|&(_, rx)| rx == 0) {
                return Err(Error::Fleet(format!(
                    "no INVITE reached the fleet's UAS at {} (does the server forward there?)",
                    self.uas
                )));
            }
            self.reached = true;
        }
        Ok(LoadOutcome {
            achieved_cps: a.achieved_cps,
            sent_to_server: a.sent,
            lost: a.lost,
            completed_calls: a.completed,
            failed_calls: a.failed,
            generator_bound: a.generator_bound,
            generator_causes: causes(&a.bound_reasons),
        })
    }

    fn fleet_point(&mut self) -> Option<FleetPoint> {
        self.point.take()
    }
}
