//! The native SIP load generator: open-loop calls through a proxy.
//!
//! A UAC places calls at planned times (Poisson or constant arrivals,
//! [`arrivals`]) and a UAS answers them: INVITE, (100), 180, 200, ACK,
//! optional hold, BYE, 200 — takt-sip's sans-I/O [`takt_sip::ua`] cores
//! on UDP sockets or TCP connections ([`GenConfig::transport`]). [`run`]
//! measures one trial and returns a [`GenReport`]:
//! outcomes by class, messages and retransmissions by kind on each side,
//! INVITE→180/200 times, how late each call left behind its plan, the
//! generator's own socket drops and CPU time, and whether the generator
//! itself was the bottleneck ([`Saturation`]).
//!
//! ```no_run
//! use takt_siplab::gen::{run, Cancel, GenConfig, Role};
//! let mut cfg = GenConfig::new("127.0.0.1:5060".parse().unwrap(), 5000.0);
//! cfg.calls = Some(50_000);
//! cfg.role = Role::Both; // the proxy's next hop is cfg.uas_listen
//! let report = run(&cfg, &Cancel::default()).unwrap();
//! assert!(!report.saturation.generator_bound);
//! ```
//!
//! ## Thread layout
//! One thread per side, each owning its UA core and all of its sockets:
//! `gen-uac` (the arrivals, the UAC, `--ports` sockets) and `gen-uas`
//! (the UAS, one socket). Why not more:
//! - The UA cores are single-owner state machines; sharding calls over
//!   threads would need a lock or a hand-off per message, which costs more
//!   than the message itself (a few µs of kernel work per datagram).
//! - The arrival clock and the UAC belong together: the thread that knows
//!   the next planned time is the one that sends the INVITE, so the send
//!   lag measures that thread alone, and a late call is never hidden
//!   behind a queue.
//! - On the two-CPU machines this laboratory targets, the server gets one
//!   CPU and the generator the other; two generator threads on that CPU
//!   already share it. The saturation criteria, not the layout, decide
//!   whether it kept up: a run that says `generator_bound` is discarded,
//!   and the ceiling is measured against a null relay.
//!
//! ## Transports
//! Both sides run the same loop over a small socket layer (`io`): UDP
//! sockets, or TCP (`tcp`): the UAC's `connections` to the proxy (calls
//! spread over them; Via `SIP/2.0/TCP`, Contact and Request-URI with
//! `;transport=tcp`) and the UAS's listener with the connections the
//! proxy makes to it, framed by Content-Length. Over TCP the UAC never
//! retransmits (RFC 3261's Timers A and E are for unreliable transports;
//! B and F still end calls), the UAS still resends its 200 until the ACK,
//! a server's drops show as shed calls and timeouts (the socket drop
//! counters read n/a), and a connection the proxy closes is counted, its
//! calls failing or left unfinished — never a hang.
//!
//! Each thread waits in `ppoll` on one epoll instance over its sockets
//! (nanosecond timeouts), receives with `recvmmsg` and sends with
//! `sendmmsg` per socket. The UAC sleeps until [`SPIN_MARGIN`] before the
//! next planned call (a sleep wakes ~70 µs late on a VM) and spins the
//! rest, yielding the CPU on each turn so that a UAS sharing its CPU is
//! not starved by the spin; sleeping and spinning both count as idle
//! time (the spin alone is reported as `spin_s`). Under a real-time
//! policy — the laboratory commands' default where permitted, see
//! [`policy`] for why — the UAC does not spin: above ~10,000 cps the gaps
//! are shorter than the margin, a spinning real-time thread would use its
//! CPU whole, and the kernel's real-time throttling
//! (`sched_rt_runtime_us`, 95%) would then stop it for 50 ms every second
//! — calls placed tens of ms late. A real-time thread sleeps with no
//! timer slack, so `ppoll` alone wakes it close to the planned time. No
//! other loop of either thread spins either: both block in `ppoll`
//! whenever nothing is due, and a TCP listener that stays readable after
//! a failed `accept` (no descriptors left) is unwatched for a while
//! instead of waking the UAS in a loop. While placing a call the UAC also
//! handles responses that arrived meanwhile, one `recvmmsg` batch at a
//! time, and checks the schedule between batches: the arrivals come
//! first.
//!
//! ## A trial
//! 1. Bind the sockets ([`Generator::bind`]; the UAS address is known
//!    before the proxy under test starts).
//! 2. Place every planned call (`calls` or `duration`); a call that falls
//!    due while the UAC is behind is placed late, never skipped.
//! 3. Drain: after the last planned call, wait up to `drain` for calls in
//!    progress; those still unfinished are reported as such.
//! 4. Stop the UAS, and report.
//!
//! [`Cancel`] ends a run early from another thread (the report covers
//! what ran).

pub mod account;
pub mod arrivals;
mod document;
mod io;
pub mod policy;
mod report;
mod socket;
mod suite;
mod tcp;
#[cfg(test)]
mod tests;
mod uac_side;
mod uas_side;

use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use takt_sched::{CpuSet, ThreadSpec};
use takt_sip::proxy::Transport;
use takt_sip::ua::{UaTimers, UacConfig};

pub use account::{Account, Counts};
pub use arrivals::{achieved_rate, Arrivals, Schedule};
pub use policy::{GenPolicy, PolicySource, OTHER_NOTE, REALTIME};
pub use suite::{GenOptions, GenOutput, GenSuite};
/// Ends a run early when set, from any thread; cloning shares it (the
/// laboratory's one cancellation token).
pub use takt_measure::cancel::Cancel;
pub use tcp::MAX_BACKLOG;

pub use report::{
    ByKind, GenReport, Percentiles, RunCounts, Saturation, SaturationCause, SaturationCauses,
    SocketReport, ThreadReport, UacHistograms, UacReport, UasReport,
};

use crate::Error;

/// How far ahead of a planned call the UAC stops sleeping and spins.
pub const SPIN_MARGIN: Duration = Duration::from_micros(100);

/// Which sides of the call flow this process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Only the UAC: calls go to `proxy`, whose next hop is a UAS elsewhere.
    Uac,
    /// Only the UAS, on `uas_listen`, until cancelled or `duration` ends.
    Uas,
    /// Both, in one process: the proxy's next hop must be `uas_listen`.
    Both,
}

impl Role {
    /// Whether the UAC runs.
    pub fn has_uac(self) -> bool {
        self != Role::Uas
    }

    /// Whether the UAS runs.
    pub fn has_uas(self) -> bool {
        self != Role::Uac
    }

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Role::Uac => "uac",
            Role::Uas => "uas",
            Role::Both => "both",
        }
    }
}

impl std::str::FromStr for Role {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "uac" => Ok(Role::Uac),
            "uas" => Ok(Role::Uas),
            "both" => Ok(Role::Both),
            _ => Err(crate::error::unknown("role", s, "uac, uas, both")),
        }
    }
}

/// Settings of a generator run.
#[derive(Debug, Clone)]
pub struct GenConfig {
    /// Which sides run.
    pub role: Role,
    /// Where the UAC sends (the proxy under test).
    pub proxy: SocketAddr,
    /// Where the UAS listens (role `uac`: where the UAS elsewhere
    /// listens). Port 0 picks one; [`Generator::uas_addr`] tells which.
    /// The calls' Request-URI names it ([`GenConfig::request_uri`]), and
    /// the requests go to `proxy` as an outbound proxy: a proxy that
    /// routes on the Request-URI forwards them here, as does one whose
    /// fixed next hop this is.
    pub uas_listen: SocketAddr,
    /// Preload `Route: <sip:PROXY;lr>` into every INVITE (and the ACK of a
    /// failure), for a proxy that forwards only requests routed through
    /// it.
    pub route_preload: bool,
    /// Mean offered call rate, calls/s.
    pub cps: f64,
    /// Arrival process.
    pub arrivals: Arrivals,
    /// Seed of the Poisson schedule.
    pub seed: u64,
    /// Calls to place; with `duration` too, whichever ends first.
    pub calls: Option<u64>,
    /// How long to place calls (role `uas`: how long to run).
    pub duration: Option<Duration>,
    /// Time between the ACK and the BYE.
    pub hold: Duration,
    /// UDP or TCP, for both sides.
    pub transport: Transport,
    /// UAC sockets the calls are spread over (round robin), over UDP.
    pub ports: usize,
    /// TCP connections from the UAC to the proxy the calls are spread
    /// over (round robin), over TCP.
    pub connections: usize,
    /// UA timers; `retransmit: false` turns retransmissions off.
    pub timers: UaTimers,
    /// Bounded wait after the last planned call for calls in progress.
    pub drain: Duration,
    /// Ends the drain early once neither side has received a message for
    /// this long: the server has nothing left to deliver, and what is
    /// missing is lost. Only without retransmissions and hold time (both
    /// keep a call silent for longer); `None`: the whole drain.
    pub drain_quiet: Option<Duration>,
    /// Generator-bound when the send lag's p99 exceeds this.
    pub lag_bound: Duration,
    /// A call is late when its send lag exceeds this.
    pub late_after: Duration,
    /// Generator-bound when more than this fraction of calls is late.
    pub late_tolerance: f64,
    /// Generator-bound when a thread was idle less than this fraction of
    /// its wall time.
    pub min_idle: f64,
    /// Calls in progress at most (the UAC's table); default: enough for
    /// the rate over hold time plus Timer B, at most 2^21.
    pub max_calls: Option<usize>,
    /// Dialogs awaiting their ACK at most (the UAS's table).
    pub max_dialogs: usize,
    /// Datagrams per `recvmmsg`.
    pub batch: usize,
    /// Receive buffer per socket, bytes (None: the system default).
    pub rcvbuf: Option<usize>,
    /// The generator threads' placement and policy: `gen-uac` runs on the
    /// first CPU of the set, `gen-uas` on the second (wrapping).
    pub spec: ThreadSpec,
    /// The run id written into the UAC's Call-IDs (`None`: one drawn from
    /// the seed, the clock and the process id). A fleet gives each agent
    /// its own, so that the UAS can tell whose calls it answers.
    pub run_id: Option<u32>,
    /// Start the run (its time 0) at this wall-clock instant rather than
    /// at once: the agents of a fleet start together.
    pub start_at: Option<std::time::SystemTime>,
    /// The UAS counts what it receives and sends per run id of the calls'
    /// Call-IDs ([`UasReport::by_run`]): one account across hosts.
    pub count_by_run: bool,
}

impl GenConfig {
    /// Defaults: both roles, UAS on 127.0.0.1:5070, Poisson arrivals
    /// (seed 1), 10,000 calls, no hold, UDP on 16 ports (TCP: 4
    /// connections), RFC 3261 timers, a 3 s
    /// drain, generator-bound beyond 1 ms lag p99 or 0.1% of calls more
    /// than 10 ms late or under 2% idle.
    pub fn new(proxy: SocketAddr, cps: f64) -> GenConfig {
        GenConfig {
            role: Role::Both,
            proxy,
            uas_listen: SocketAddr::from(([127, 0, 0, 1], 5070)),
            route_preload: false,
            cps,
            arrivals: Arrivals::Poisson,
            seed: 1,
            calls: Some(10_000),
            duration: None,
            hold: Duration::ZERO,
            transport: Transport::Udp,
            ports: 16,
            connections: 4,
            timers: UaTimers::default(),
            drain: Duration::from_secs(3),
            drain_quiet: None,
            lag_bound: Duration::from_millis(1),
            late_after: Duration::from_millis(10),
            late_tolerance: 0.001,
            min_idle: 0.02,
            max_calls: None,
            max_dialogs: 1 << 16,
            batch: 32,
            rcvbuf: Some(4 << 20),
            spec: ThreadSpec::new("gen"),
            run_id: None,
            start_at: None,
            count_by_run: false,
        }
    }

    /// Checks the settings; the error says which one is wrong.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |m: String| Err(Error::Config(m));
        if !(self.cps.is_finite() && self.cps > 0.0 && self.cps <= 10_000_000.0) {
            return bad(format!(
                "call rate {} is not in (0, 10^7] calls/s",
                self.cps
            ));
        }
        if self.role.has_uac() && self.calls.is_none() && self.duration.is_none() {
            return bad("give a number of calls or a duration".into());
        }
        if self.calls == Some(0) {
            return bad("the number of calls must be at least 1".into());
        }
        if self.duration == Some(Duration::ZERO) {
            return bad("the duration must be positive".into());
        }
        if !(1..=4096).contains(&self.ports) {
            return bad(format!("ports {} is not in 1..=4096", self.ports));
        }
        if !(1..=1024).contains(&self.connections) {
            return bad(format!(
                "connections {} is not in 1..=1024",
                self.connections
            ));
        }
        if !(1..=1024).contains(&self.batch) {
            return bad(format!("batch {} is not in 1..=1024", self.batch));
        }
        if self.timers.t1_ns == 0 || self.timers.t2_ns < self.timers.t1_ns {
            return bad("timers need 0 < T1 <= T2".into());
        }
        if !(0.0..=1.0).contains(&self.late_tolerance) || !(0.0..=1.0).contains(&self.min_idle) {
            return bad("late tolerance and minimum idle are fractions in [0, 1]".into());
        }
        if self.drain_quiet.is_some() && (self.timers.retransmit || !self.hold.is_zero()) {
            return bad(
                "a quiet-ended drain needs retransmissions off and no hold time (both keep calls silent)"
                    .into(),
            );
        }
        if self.max_calls == Some(0) || self.max_dialogs == 0 || self.max_dialogs > 1 << 31 {
            return bad("the call and dialog tables need at least one slot".into());
        }
        Ok(())
    }

    /// Places the generator threads on the online CPUs outside `server`
    /// (the CPUs of the server under test), keeping the policy of
    /// [`spec`](Self::spec). An error if that leaves no CPU.
    pub fn avoid_cpus(&mut self, server: &CpuSet) -> Result<(), Error> {
        let mut rest = CpuSet::default();
        for c in CpuSet::online().iter().filter(|&c| !server.contains(c)) {
            rest.insert(c);
        }
        if rest.is_empty() {
            return Err(Error::Config(format!(
                "no online CPU is left for the generator outside the server's {server}"
            )));
        }
        self.spec = self.spec.clone().with_cpus(rest);
        Ok(())
    }

    /// The Request-URI of calls to a UAS at `uas` (`sip:service@UAS`,
    /// with `;transport=tcp` over TCP): see [`UacConfig::with_uas`].
    pub fn request_uri(&self, uas: SocketAddr) -> String {
        self.uac_config(uas).request_uri
    }

    /// The preloaded Route's value, if [`GenConfig::route_preload`].
    pub fn route(&self) -> Option<String> {
        self.uac_config(self.uas_listen).route
    }

    /// The UAC's settings besides its sockets, for calls to `uas`.
    fn uac_config(&self, uas: SocketAddr) -> UacConfig {
        let c = UacConfig::new(uas, self.proxy)
            .with_transport(self.transport)
            .with_uas(uas);
        if self.route_preload {
            c.with_route_preload()
        } else {
            c
        }
    }

    /// The UAC's table size: the given one, or calls in progress at the
    /// offered rate over hold time + Timer B + 1 s (no more than the
    /// calls planned), within 1,024..=2^21.
    pub fn call_table(&self) -> usize {
        if let Some(n) = self.max_calls {
            return n.min(1 << 31);
        }
        let life = self.hold.as_secs_f64() + 64.0 * self.timers.t1_ns as f64 / 1e9 + 1.0;
        let mut n = (self.cps * life).ceil() as u64;
        if let Some(c) = self.calls {
            n = n.min(c);
        }
        n.clamp(1024, 1 << 21) as usize
    }
}

/// Counters a run updates as it goes, for a status line; read them from
/// any thread while [`Generator::run`] runs.
#[derive(Debug, Default)]
pub struct Live {
    /// Calls placed.
    pub attempted: AtomicU64,
    /// Calls completed.
    pub completed: AtomicU64,
    /// Calls failed.
    pub failed: AtomicU64,
    /// Retransmissions sent by the UAC.
    pub retransmitted: AtomicU64,
    /// Largest send lag so far, µs.
    pub max_lag_us: AtomicU64,
    /// Calls answered by the UAS.
    pub answered: AtomicU64,
    /// Messages the UAS received.
    pub uas_received: AtomicU64,
}

/// The UAS's bound socket.
#[derive(Debug)]
enum UasSock {
    Udp(UdpSocket),
    Tcp(TcpListener),
}

impl UasSock {
    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        match self {
            UasSock::Udp(s) => s.local_addr(),
            UasSock::Tcp(l) => l.local_addr(),
        }
    }
}

/// How long each of the UAC's TCP connects may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// A generator with its sockets bound, ready to [`run`](Generator::run).
/// Over TCP the UAS listens from here on, and the UAC connects to the
/// proxy when the run starts (the proxy may start after the bind).
#[derive(Debug)]
pub struct Generator {
    cfg: GenConfig,
    /// The UAC's UDP sockets (none over TCP).
    uac_socks: Vec<UdpSocket>,
    uas_sock: Option<UasSock>,
    live: Arc<Live>,
    /// Holds the UAC's send loop over this span of the run (tests).
    #[cfg(test)]
    stall: Option<(Duration, Duration)>,
}

impl Generator {
    /// Checks `cfg` and binds the sockets: the UAS on `uas_listen` (a
    /// UDP socket, or a TCP listener), over UDP the UAC's `ports` sockets
    /// on ephemeral ports of the address the system routes to the proxy
    /// from.
    pub fn bind(cfg: &GenConfig) -> Result<Generator, Error> {
        cfg.validate()?;
        let io = |what: String| move |source| Error::Io { what, source };
        let uas_sock = if cfg.role.has_uas() {
            let what = format!("binding the UAS to {}", cfg.uas_listen);
            Some(match cfg.transport {
                Transport::Udp => {
                    UasSock::Udp(socket::open(cfg.uas_listen, cfg.rcvbuf).map_err(io(what))?)
                }
                Transport::Tcp => UasSock::Tcp(tcp::listen(cfg.uas_listen).map_err(io(what))?),
            })
        } else {
            None
        };
        let mut uac_socks = Vec::new();
        if cfg.role.has_uac() && cfg.transport == Transport::Udp {
            let local = local_ip_towards(cfg.proxy)
                .map_err(io(format!("finding a route to {}", cfg.proxy)))?;
            for _ in 0..cfg.ports {
                uac_socks.push(
                    socket::open(SocketAddr::new(local, 0), cfg.rcvbuf)
                        .map_err(io(format!("binding a UAC socket on {local}")))?,
                );
            }
        }
        Ok(Generator {
            cfg: cfg.clone(),
            uac_socks,
            uas_sock,
            live: Arc::new(Live::default()),
            #[cfg(test)]
            stall: None,
        })
    }

    /// Points the UAC at `proxy` instead of the configured address: for a
    /// proxy started after [`Generator::bind`], with [`uas_addr`] as its
    /// next hop. The UAC's sockets stay bound where they are, so `proxy`
    /// must be reachable from them.
    ///
    /// [`uas_addr`]: Generator::uas_addr
    pub fn set_proxy(&mut self, proxy: SocketAddr) -> Result<(), Error> {
        if let Some(s) = self.uac_socks.first() {
            let local = s.local_addr().map_err(|source| Error::Io {
                what: "reading a UAC socket's address".into(),
                source,
            })?;
            if local.is_ipv4() != proxy.is_ipv4() {
                return Err(Error::Config(format!(
                    "the UAC's sockets are bound on {}, which cannot reach {proxy}",
                    local.ip()
                )));
            }
        }
        self.cfg.proxy = proxy;
        Ok(())
    }

    /// The UAS's bound address (roles `uas` and `both`).
    pub fn uas_addr(&self) -> Option<SocketAddr> {
        self.uas_sock.as_ref().and_then(|s| s.local_addr().ok())
    }

    /// The UAS's address as the calls' Request-URI names it: the bound
    /// address, an unspecified IP (`0.0.0.0`) replaced by the one the
    /// system reaches the proxy from.
    pub fn uas_target(&self) -> SocketAddr {
        let mut a = self.uas_addr().unwrap_or(self.cfg.uas_listen);
        if a.ip().is_unspecified() {
            if let Ok(ip) = local_ip_towards(self.cfg.proxy) {
                a.set_ip(ip);
            }
        }
        a
    }

    /// The calls' Request-URI.
    pub fn request_uri(&self) -> String {
        self.cfg.request_uri(self.uas_target())
    }

    /// The line every command prints before its calls: where the UAS
    /// listens and what the calls' Request-URI is (`key=value`).
    pub fn uas_line(&self) -> String {
        let uas = self.uas_addr().unwrap_or(self.cfg.uas_listen);
        let mut l = format!("uas={uas} request_uri={}", self.request_uri());
        if let Some(r) = self.cfg.route() {
            l.push_str(&format!(" route={r}"));
        }
        l
    }

    /// The UAC's bound addresses (over TCP none: its connections open
    /// when the run starts).
    pub fn uac_addrs(&self) -> Vec<SocketAddr> {
        self.uac_socks
            .iter()
            .filter_map(|s| s.local_addr().ok())
            .collect()
    }

    /// The counters the run updates as it goes.
    pub fn live(&self) -> Arc<Live> {
        Arc::clone(&self.live)
    }

    /// Runs the trial on takt-sched threads; returns when it ends (the
    /// last call finished or the drain ran out, `duration` ended for a
    /// lone UAS, or `cancel` was set).
    pub fn run(self, cancel: &Cancel) -> Result<GenReport, Error> {
        let uas_addr = self.uas_addr().unwrap_or(self.cfg.uas_listen);
        // the calls name the UAS where the proxy can reach it
        let uas_target = self.uas_target();
        let cfg = GenConfig {
            uas_listen: uas_target,
            ..self.cfg
        };
        let clock = takt_sched::clock();
        if let Some(at) = cfg.start_at {
            // a planned start already past begins at once
            if let Ok(wait) = at.duration_since(std::time::SystemTime::now()) {
                std::thread::sleep(wait);
            }
        }
        let t0 = clock.now();
        let uac_done = Arc::new(AtomicBool::new(false));
        let mut uas_thread = None;

        // over TCP, connect first: a proxy that refuses is an error
        // before any thread starts
        let uac_net = if !cfg.role.has_uac() {
            None
        } else if cfg.transport == Transport::Tcp {
            let conns =
                tcp::connect(cfg.proxy, cfg.connections, CONNECT_TIMEOUT).map_err(|source| {
                    Error::Io {
                        what: format!("connecting to the proxy at {} over TCP", cfg.proxy),
                        source,
                    }
                })?;
            Some(uac_side::UacNet::Tcp(conns))
        } else {
            Some(uac_side::UacNet::Udp(self.uac_socks))
        };
        if let Some(sock) = self.uas_sock {
            let ctx = uas_side::Ctx {
                cfg: cfg.clone(),
                net: match sock {
                    UasSock::Udp(s) => uas_side::UasNet::Udp(s),
                    UasSock::Tcp(l) => uas_side::UasNet::Tcp(l),
                },
                t0,
                cancel: cancel.clone(),
                uac_done: Arc::clone(&uac_done),
                live: Arc::clone(&self.live),
            };
            let spec = cfg.spec.renamed("gen-uas").pinned_nth(1);
            uas_thread = Some(spec.spawn(move || uas_side::run(ctx))?);
        }
        let mut uac_thread = None;
        if let Some(net) = uac_net {
            let ctx = uac_side::Ctx {
                cfg: cfg.clone(),
                net,
                t0,
                cancel: cancel.clone(),
                live: Arc::clone(&self.live),
                #[cfg(test)]
                stall: self
                    .stall
                    .map(|(a, b)| (a.as_nanos() as u64, b.as_nanos() as u64)),
            };
            let spec = cfg.spec.renamed("gen-uac").pinned_nth(0);
            match spec.spawn(move || uac_side::run(ctx)) {
                Ok(t) => uac_thread = Some(t),
                Err(e) => {
                    cancel.cancel();
                    if let Some(t) = uas_thread {
                        let _ = t.join();
                    }
                    return Err(e.into());
                }
            }
        }
        let uac = match uac_thread {
            Some(t) => {
                let r = t.join();
                uac_done.store(true, Ordering::Release);
                Some(r.map_err(|_| Error::Thread("gen-uac panicked".into()))??)
            }
            None => None,
        };
        let uas = match uas_thread {
            Some(t) => Some(
                t.join()
                    .map_err(|_| Error::Thread("gen-uas panicked".into()))??,
            ),
            None => None,
        };
        let wall_s = clock.ticks_to_ns(clock.now() - t0) as f64 / 1e9;
        let (sends, uac) = match uac {
            Some((sends, r)) => (Some(sends), Some(r)),
            None => (None, None),
        };
        let attempted = uac.as_ref().map_or(0, |u| u.attempted);
        let cpu_s: f64 = uac.iter().map(|u| u.thread.cpu_s).sum::<f64>()
            + uas.iter().map(|u| u.thread.cpu_s).sum::<f64>();
        let busy_s: f64 = uac
            .iter()
            .map(|u| &u.thread)
            .chain(uas.iter().map(|u| &u.thread))
            .map(|t| (t.wall_s - t.idle_s).max(0.0))
            .sum();
        let calls = if cfg.role.has_uac() {
            attempted
        } else {
            uas.as_ref().map_or(0, |u| u.answered)
        };
        let mut report = GenReport {
            role: cfg.role,
            cps: cfg.cps,
            arrivals: cfg.arrivals,
            seed: cfg.seed,
            hold_ms: cfg.hold.as_secs_f64() * 1e3,
            transport: match cfg.transport {
                Transport::Udp => "udp",
                Transport::Tcp => "tcp",
            },
            ports: cfg.ports,
            connections: cfg.connections,
            retransmit: cfg.timers.retransmit,
            proxy: cfg.proxy.to_string(),
            uas_addr: uas_addr.to_string(),
            request_uri: cfg.role.has_uac().then(|| cfg.request_uri(cfg.uas_listen)),
            route: cfg.role.has_uac().then(|| cfg.route()).flatten(),
            send_s: sends.map_or(0.0, |x| x.send_s),
            window_s: sends.map_or(0.0, |x| x.window_s),
            achieved_cps: sends.map_or(0.0, |x| x.achieved_cps),
            wall_s,
            cancelled: cancel.is_cancelled(),
            uac,
            uas,
            saturation: Saturation::default(),
            cpu_us_per_call: (calls > 0).then(|| cpu_s * 1e6 / calls as f64),
            busy_us_per_call: (calls > 0).then(|| busy_s * 1e6 / calls as f64),
        };
        report.saturation = saturation(&cfg, &report);
        Ok(report)
    }
}

/// Binds and runs one trial: [`Generator::bind`] then
/// [`Generator::run`].
pub fn run(cfg: &GenConfig, cancel: &Cancel) -> Result<GenReport, Error> {
    Generator::bind(cfg)?.run(cancel)
}

/// The local address the system would send to `dst` from.
pub fn local_ip_towards(dst: SocketAddr) -> std::io::Result<std::net::IpAddr> {
    let any: SocketAddr = if dst.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let s = UdpSocket::bind(any)?;
    s.connect(dst)?;
    Ok(s.local_addr()?.ip())
}

/// Which saturation criteria fired.
fn saturation(cfg: &GenConfig, r: &GenReport) -> Saturation {
    let mut reasons = Vec::new();
    let mut causes = SaturationCauses::NONE;
    if let Some(u) = &r.uac {
        let bound_us = cfg.lag_bound.as_secs_f64() * 1e6;
        if u.send_lag_us.p99 > bound_us {
            causes.insert(SaturationCause::SendLag);
            reasons.push(format!(
                "send lag p99 {:.0} µs > {:.0} µs",
                u.send_lag_us.p99, bound_us
            ));
        }
        let allowed = (cfg.late_tolerance * u.attempted as f64).floor() as u64;
        if u.late_calls > allowed {
            causes.insert(SaturationCause::LateCalls);
            reasons.push(format!(
                "{} of {} calls started more than {} µs late (tolerance {})",
                u.late_calls,
                u.attempted,
                cfg.late_after.as_micros(),
                allowed
            ));
        }
    }
    let sides = [
        r.uac.as_ref().map(|u| (&u.sockets, &u.thread)),
        r.uas.as_ref().map(|u| (&u.sockets, &u.thread)),
    ];
    for (s, t) in sides.into_iter().flatten() {
        let drops = s.drops.unwrap_or(0);
        if drops > 0 || s.send_full > 0 {
            causes.insert(SaturationCause::SocketDrops);
            reasons.push(format!(
                "{}: its sockets dropped {} received and {} sent messages",
                t.name, drops, s.send_full
            ));
        }
        if t.wall_s > 0.0 && t.idle_fraction < cfg.min_idle {
            causes.insert(SaturationCause::NoIdle);
            reasons.push(format!(
                "{} was idle {:.1}% of the time (< {:.1}%)",
                t.name,
                t.idle_fraction * 100.0,
                cfg.min_idle * 100.0
            ));
        }
    }
    Saturation {
        generator_bound: !causes.is_empty(),
        causes,
        reasons,
    }
}
