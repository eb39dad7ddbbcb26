//! Transports and worker models (RFC 3261 §18).
//!
//! A [`Server`] binds UDP (IPv4 or IPv6, per the listen address) and TCP
//! on the same port and runs a [`Handler`] (the [`Proxy`], or any other
//! protocol engine: [`Server::start_with`]) on workers, each a takt-sched
//! thread made from the configured [`ThreadSpec`] (CPU set, policy, nice,
//! slice):
//!
//! | model | sockets | I/O | when |
//! |---|---|---|---|
//! | [`WorkerModel::Shared`] | one, shared by all workers | `recvmsg`/`sendto` | the paper's (OpenSIPS's) model: m processes blocking on one socket |
//! | [`WorkerModel::Reuseport`] | one per worker, `SO_REUSEPORT` | `recvmsg`/`sendto` | no contention on the socket; the kernel hashes the 4-tuple, so one client port lands on one worker |
//! | [`WorkerModel::Batched`] | one per worker, `SO_REUSEPORT` | `recvmmsg`/`sendmmsg` | fewer system calls per message under load |
//!
//! Idle `shared` workers are woken in [`WakeOrder`]: by default the one
//! that went idle last (warm), or, as OpenSIPS does, the one idle longest.
//!
//! The transaction table is shared (sharded), so with any model any worker
//! can handle any message of any transaction. TCP connections are served
//! by a fixed set of event-loop threads that call the handler inline, with
//! limits on connections (in total and per peer address), a deadline for
//! each message and an idle lifetime ([`TcpLimits`]; the `tcp` module
//! documents the contract and the defaults). When the handler asks for it ([`Handler::wants_ticks`]:
//! the proxy in stateful mode) a timer thread runs [`Handler::tick`]
//! every [`ServerConfig::tick`].
//!
//! Transport errors reach the handler: a refused TCP connection is
//! [`crate::proxy::SendError::Refused`] from the send, and ICMP errors for
//! sent datagrams are read from each UDP socket's error queue
//! (`IP_RECVERR`) and handed to [`Handler::bounced`] (the `errqueue`
//! module documents the protocol and its limits; the statistics count
//! them as `icmp_errors` and `icmp_errors_matched`).
//!
//! Receive buffers are configurable ([`ServerConfig::rcvbuf`]) and the size
//! the kernel granted is reported in the statistics.

mod errqueue;
mod fdlimit;
mod handler;
mod tcp;
pub(crate) mod udp;
mod wake;
mod worker;

pub use fdlimit::{raise as raise_fd_limit, FdLimit};
pub use handler::{Handler, Held};
pub use tcp::{Tcp, TcpLimits, CONNECT_TIMEOUT, CONNECT_WAIT};
pub use udp::{setsockopt_int, sockaddr_from, sockaddr_to, Batch, RxMeta};
pub use wake::WakeOrder;

use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use takt_sched::{SpinBudget, TaktThread, ThreadSpec};

use crate::proxy::{Mode, Proxy, ProxyConfig};
use crate::stats::{Registry, ServerInfo, Snapshot};
use worker::Worker;

/// How workers receive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkerModel {
    /// All workers block on one socket.
    Shared,
    /// A socket per worker (SO_REUSEPORT).
    Reuseport,
    /// A socket per worker with recvmmsg/sendmmsg.
    Batched,
}

impl WorkerModel {
    /// Its name.
    pub fn name(&self) -> &'static str {
        match self {
            WorkerModel::Shared => "shared",
            WorkerModel::Reuseport => "reuseport",
            WorkerModel::Batched => "batched",
        }
    }
}

impl std::str::FromStr for WorkerModel {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "shared" => Ok(WorkerModel::Shared),
            "reuseport" => Ok(WorkerModel::Reuseport),
            "batched" => Ok(WorkerModel::Batched),
            _ => Err(format!(
                "unknown worker model {s:?} (shared, reuseport, batched)"
            )),
        }
    }
}

/// Server settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// UDP and TCP listen address.
    pub listen: SocketAddr,
    /// Worker model.
    pub model: WorkerModel,
    /// Worker threads.
    pub workers: usize,
    /// Receive buffer per socket, bytes (None: system default).
    pub rcvbuf: Option<usize>,
    /// Serve and use TCP.
    pub tcp: bool,
    /// Datagrams per recvmmsg (batched model).
    pub batch: usize,
    /// Largest message accepted; larger ones are refused and counted.
    pub max_message: usize,
    /// TCP event-loop threads, connection limits and deadlines.
    pub tcp_limits: TcpLimits,
    /// Timer thread period.
    pub tick: Duration,
    /// Thread spec the workers are made from (named `sip-w<i>`).
    pub spec: ThreadSpec,
    /// How long a UDP worker polls its socket without blocking before it
    /// blocks in the receive call (default: not at all). On a VM whose idle
    /// vCPUs halt, a message that finds its worker blocked starts on a
    /// core that was given away; polling keeps it awake between messages
    /// that arrive within the budget, and burns CPU for it.
    pub spin: SpinBudget,
    /// Which idle worker of the `shared` model gets a datagram
    /// ([`WakeOrder`]; default: the one idle shortest). Ignored by the
    /// per-worker-socket models.
    pub wake: WakeOrder,
}

impl ServerConfig {
    /// Defaults for `listen`.
    pub fn new(listen: SocketAddr) -> ServerConfig {
        ServerConfig {
            listen,
            model: WorkerModel::Shared,
            workers: 2,
            rcvbuf: None,
            tcp: true,
            batch: 32,
            max_message: 65_535,
            tcp_limits: TcpLimits::default(),
            tick: Duration::from_millis(10),
            spec: ThreadSpec::new("sip"),
            spin: SpinBudget::NONE,
            wake: WakeOrder::Lifo,
        }
    }
}

/// A running server: the transports running a [`Handler`] (by default
/// the [`Proxy`]).
#[derive(Debug)]
pub struct Server<H: Handler = Proxy> {
    handler: Arc<H>,
    registry: Arc<Registry>,
    stop: Arc<AtomicBool>,
    threads: Vec<TaktThread<()>>,
    tcp: Option<Arc<Tcp>>,
    /// The `shared` model's epoll instance ([`WakeOrder::Lifo`]).
    wait: Option<Arc<wake::SharedWait>>,
    local: SocketAddr,
}

fn host_of(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v) => v.to_string(),
        IpAddr::V6(v) => format!("[{v}]"),
    }
}

/// The sockets a server runs on, bound before its handler is made.
struct Bound {
    /// One UDP socket per worker (per-worker-socket models) or one.
    socks: Vec<UdpSocket>,
    /// Receive buffer the kernel granted.
    rcvbuf: usize,
    listener: Option<std::net::TcpListener>,
    local: SocketAddr,
}

fn bind(scfg: &ServerConfig) -> io::Result<Bound> {
    let reuse = scfg.model != WorkerModel::Shared;
    let mut attempt = 0;
    let (first, eff, listener) = loop {
        let (s, eff) = udp::open(scfg.listen, reuse, scfg.rcvbuf)?;
        if !scfg.tcp {
            break (s, eff, None);
        }
        match tcp::listen(s.local_addr()?) {
            Ok(l) => break (s, eff, Some(l)),
            // port 0: the UDP port's TCP twin was taken; try another port
            Err(_) if scfg.listen.port() == 0 && attempt < 20 => attempt += 1,
            Err(e) => return Err(e),
        }
    };
    let local = first.local_addr()?;
    let mut socks = vec![first];
    if reuse {
        for _ in 1..scfg.workers.max(1) {
            socks.push(udp::open(local, true, scfg.rcvbuf)?.0);
        }
    }
    Ok(Bound {
        socks,
        rcvbuf: eff,
        listener,
        local,
    })
}

impl Server<Proxy> {
    /// Binds and starts the proxy. `pcfg.local` with port 0 or an empty
    /// host is filled in from the bound address.
    pub fn start(mut pcfg: ProxyConfig, scfg: ServerConfig) -> io::Result<Server> {
        if pcfg.shards == 0 {
            pcfg.shards = ProxyConfig::auto_shards(scfg.workers);
        }
        let sc = scfg.clone();
        Server::start_with(scfg, move |local, registry, eff| {
            if pcfg.local.port == 0 {
                pcfg.local.port = local.port();
            }
            if pcfg.local.host.is_empty() {
                let ip = if local.ip().is_unspecified() {
                    // the address the route to the next hop would use
                    pcfg.next_hop
                        .and_then(|nh| {
                            let u = UdpSocket::bind(SocketAddr::new(local.ip(), 0)).ok()?;
                            u.connect(nh.addr).ok()?;
                            u.local_addr().ok().map(|a| a.ip())
                        })
                        .unwrap_or(if local.is_ipv4() {
                            IpAddr::from([127, 0, 0, 1])
                        } else {
                            IpAddr::from([0u16, 0, 0, 0, 0, 0, 0, 1])
                        })
                } else {
                    local.ip()
                };
                pcfg.local.host = host_of(ip);
            }
            pcfg.tcp = sc.tcp;
            let reuse = sc.model != WorkerModel::Shared;
            registry.set_info(ServerInfo {
                mode: match pcfg.mode {
                    Mode::Stateless => "stateless".into(),
                    Mode::Stateful => "stateful".into(),
                },
                model: sc.model.name().into(),
                wake: (!reuse).then(|| sc.wake.name().into()),
                workers: sc.workers.max(1),
                listen: local.to_string(),
                rcvbuf_requested: sc.rcvbuf.unwrap_or(0),
                rcvbuf_effective: eff,
                next_hop: pcfg
                    .next_hop
                    .map(|t| {
                        let proto = if t.transport == crate::proxy::Transport::Tcp {
                            "tcp"
                        } else {
                            "udp"
                        };
                        format!("{proto}:{}", t.addr)
                    })
                    .unwrap_or_else(|| "request-uri".into()),
                tcp: sc.tcp,
            });
            Ok(Proxy::new(pcfg))
        })
    }

    /// The proxy.
    pub fn proxy(&self) -> &Arc<Proxy> {
        &self.handler
    }
}

impl<H: Handler> Server<H> {
    /// Binds the sockets `scfg` asks for, makes the handler with `make`
    /// (given the bound address, the statistics registry, where it may set
    /// its [`ServerInfo`], and the receive buffer the kernel granted) and
    /// starts the workers, the TCP event loops (after raising the
    /// open-file limit to what [`TcpLimits`] need, see
    /// [`Snapshot::tcp`](crate::stats::Snapshot::tcp)) and, when the
    /// handler wants ticks, the timer thread.
    pub fn start_with(
        scfg: ServerConfig,
        make: impl FnOnce(SocketAddr, &Registry, usize) -> io::Result<H>,
    ) -> io::Result<Server<H>> {
        let clock = takt_sched::clock();
        let reuse = scfg.model != WorkerModel::Shared;
        let Bound {
            socks,
            rcvbuf,
            listener,
            local,
        } = bind(&scfg)?;
        let registry = Arc::new(Registry::new());
        let handler = Arc::new(make(local, &registry, rcvbuf)?);
        let ticks = handler.wants_ticks();
        registry.set_transactions(handler.held());
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        let tcp = match listener {
            Some(l) => {
                let (t, loops) = Tcp::start(
                    l,
                    handler.clone(),
                    &registry,
                    socks[0].try_clone()?,
                    &scfg.spec,
                    stop.clone(),
                    scfg.tcp_limits,
                    scfg.tcp_limits.loop_threads(scfg.workers.max(1)),
                    scfg.max_message,
                )?;
                threads.extend(loops);
                Some(t)
            }
            None => None,
        };
        let n = scfg.workers.max(1);
        let busy = Arc::new(worker::Busy::new(n));
        let mut owned = socks.into_iter();
        let shared = if reuse { None } else { owned.next() };
        let wait = match (&shared, scfg.wake) {
            (Some(s), WakeOrder::Lifo) => Some(Arc::new(wake::SharedWait::new(s)?)),
            _ => None,
        };
        for i in 0..n {
            let sock = match &shared {
                Some(s) => s.try_clone()?,
                None => owned
                    .next()
                    .ok_or_else(|| io::Error::other("missing socket"))?,
            };
            let timer_sock = (i == 0).then(|| sock.try_clone()).transpose()?;
            let stats = registry.add_worker(format!("sip-w{i}"));
            stats
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .set_socket(if reuse { i } else { 0 });
            let timer_stats = (i == 0).then(|| stats.clone());
            let w = Worker {
                handler: handler.clone(),
                sock,
                tcp: tcp.clone(),
                stats,
                stop: stop.clone(),
                max_message: scfg.max_message,
                clock,
                spin: scfg.spin,
                wait: wait.clone(),
                busy: busy.clone(),
                index: i,
            };
            let model = scfg.model;
            let batch = scfg.batch;
            let t = scfg
                .spec
                .renamed(format!("sip-w{i}"))
                .spawn(move || match model {
                    WorkerModel::Batched => w.run_batched(batch),
                    _ => w.run_single(),
                })
                .map_err(io::Error::other)?;
            threads.push(t);
            if let (Some(ts), Some(es), true) = (timer_sock, timer_stats, ticks) {
                let (p, tc, r, st, tick) = (
                    handler.clone(),
                    tcp.clone(),
                    registry.clone(),
                    stop.clone(),
                    scfg.tick,
                );
                threads.push(
                    scfg.spec
                        .renamed("sip-timer")
                        .spawn(move || worker::run_timer(p, ts, tc, r, es, st, tick, clock))
                        .map_err(io::Error::other)?,
                );
            }
        }
        Ok(Server {
            handler,
            registry,
            stop,
            threads,
            tcp,
            wait,
            local,
        })
    }

    /// The bound address (UDP and TCP).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The statistics registry (for an endpoint).
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The handler.
    pub fn handler(&self) -> &Arc<H> {
        &self.handler
    }

    /// Statistics now.
    pub fn snapshot(&self) -> Snapshot {
        self.registry.snapshot()
    }

    /// Stops every thread and returns the final statistics.
    pub fn stop(mut self) -> Snapshot {
        self.shutdown();
        self.registry.snapshot()
    }

    fn shutdown(&mut self) {
        // Release pairs with the Acquire loads in the worker loops.
        self.stop.store(true, Ordering::Release);
        if let Some(w) = &self.wait {
            w.wake_all();
        }
        if let Some(t) = &self.tcp {
            t.shutdown();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl<H: Handler> Drop for Server<H> {
    fn drop(&mut self) {
        self.shutdown();
    }
}
