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
//! | [`WorkerModel::Shared`] | one, shared by all workers | `recvmmsg` until drained (`recvmsg` with `fifo` wake) / `sendto` | the paper's (OpenSIPS's) model: m processes waiting on one socket |
//! | [`WorkerModel::Reuseport`] | one per worker, `SO_REUSEPORT` | `recvmsg`/`sendto` | no contention on the socket; the kernel hashes the 4-tuple, so one client port lands on one worker |
//! | [`WorkerModel::Batched`] | one per worker, `SO_REUSEPORT` | `recvmmsg`/`sendmmsg` | fewer system calls per message under load |
//!
//! Idle `shared` workers are woken in [`WakeOrder`]: by default the one
//! that went idle last (warm), or, as OpenSIPS does, the one idle longest.
//! By default only one idle worker waits on the socket, so a datagram that
//! arrives while a worker is busy wakes nobody (the busy worker takes it
//! next), and a backlog of a whole batch wakes a parked worker to help
//! (the `baton` module).
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
//!
//! ## Overload
//! When a socket's receive buffer overflows the kernel drops whatever
//! arrives next: ACKs, BYEs and responses of calls the proxy has already
//! paid for as readily as new INVITEs. A lost ACK makes the UAS retransmit
//! its 200 for 32 s, and those retransmissions keep the buffer full even
//! once the offered load is back below capacity. So by default
//! ([`ServerConfig::split_invites`]) the `shared` model with
//! [`WakeOrder::Lifo`] binds two sockets in one `SO_REUSEPORT` group and
//! gives the group a classic BPF program that sends datagrams beginning
//! with `INVI` to the second socket and everything else to the first
//! (`udp::split_invites` has the kernel's side of the contract). The
//! workers wait for both on their epoll instance and drain the dialog
//! socket first, taking one datagram from the INVITE socket after at most
//! [`DIALOG_BURST`] dialog datagrams in a row when both have some queued.
//! Under overload the INVITE socket's queue therefore grows, and only it:
//! new INVITEs wait (and are refused by the proxy's shed policy, which
//! reads their queue delay) or overflow the INVITE socket, while dialog
//! messages keep a short queue. Its buffer holds the shed policy's delays
//! at high rates ([`SPLIT_INVITE_RCVBUF`]). The statistics count each
//! socket's drops (`invite_socket_drops` for the INVITE socket). A
//! re-INVITE also starts with `INVI` and is treated as a new INVITE by the
//! kernel (the proxy still handles it as in-dialog).
//!
//! The per-worker-socket models keep their hashed groups (the program's
//! result is an index into one group, which would leave all but two
//! workers without datagrams), and `fifo` workers block in `recvmsg` on one
//! socket: neither splits.

/// Dialog datagrams a worker of the split takes in a row while the INVITE
/// socket has some queued, before it takes one from the INVITE socket (so
/// INVITEs are delayed, never starved, by a steady dialog load).
pub const DIALOG_BURST: u32 = 32;

/// With the split and no [`ServerConfig::rcvbuf`]: the dialog socket's
/// receive buffer asked for, bytes (the kernel doubles it for its
/// bookkeeping: 8 MiB, about 3,600 datagrams of a loopback SIP message's
/// 2,304-byte truesize, 40 ms of dialog traffic at 90,000 messages/s).
pub const SPLIT_DIALOG_RCVBUF: usize = 4 << 20;

/// With the split and no [`ServerConfig::invite_rcvbuf`]: the INVITE
/// socket's receive buffer asked for, bytes (32 MiB as the kernel counts
/// it, about 14,500 INVITEs of 2,304 bytes' truesize: the shed policy's
/// default 200 ms of queue delay at 73,000 INVITEs/s, four times the
/// project VM's half-CPU capacity).
/// The memory is taken only while INVITEs queue.
pub const SPLIT_INVITE_RCVBUF: usize = 16 << 20;

#[doc(hidden)]
pub mod baton;
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
    type Err = crate::name::UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "shared" => Ok(WorkerModel::Shared),
            "reuseport" => Ok(WorkerModel::Reuseport),
            "batched" => Ok(WorkerModel::Batched),
            _ => Err(crate::name::UnknownName::new(
                "worker model",
                s,
                "shared, reuseport, batched",
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
    /// Datagrams per recvmmsg (`batched`, and `shared` with
    /// [`WakeOrder::Lifo`], where taking this many without finding the
    /// socket drained also wakes a parked worker to help).
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
    /// Let the kernel put new INVITEs on a socket of their own (see
    /// [Overload](self#overload)); default on. Applies to the `shared`
    /// model with [`WakeOrder::Lifo`] only ([`ServerConfig::splits`]).
    pub split_invites: bool,
    /// With the split, the INVITE socket's receive buffer, bytes (None:
    /// [`SPLIT_INVITE_RCVBUF`]); the dialog socket's is `rcvbuf` (None:
    /// [`SPLIT_DIALOG_RCVBUF`]).
    pub invite_rcvbuf: Option<usize>,
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
            split_invites: true,
            invite_rcvbuf: None,
        }
    }

    /// Whether the server splits new INVITEs from the rest: asked for, and
    /// the `shared` model with [`WakeOrder::Lifo`] (its workers wait on
    /// one epoll instance, which can hold both sockets).
    pub fn splits(&self) -> bool {
        self.split_invites && self.model == WorkerModel::Shared && self.wake == WakeOrder::Lifo
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
    /// One UDP socket per worker (per-worker-socket models) or one (the
    /// dialog socket, with the split).
    socks: Vec<UdpSocket>,
    /// With the split: the INVITE socket.
    invites: Option<UdpSocket>,
    /// Receive buffer the kernel granted.
    rcvbuf: usize,
    /// The INVITE socket's (0: no split).
    invite_rcvbuf: usize,
    listener: Option<std::net::TcpListener>,
    local: SocketAddr,
}

fn bind(scfg: &ServerConfig) -> io::Result<Bound> {
    let split = scfg.splits();
    let reuse = scfg.model != WorkerModel::Shared || split;
    let rcvbuf = match (split, scfg.rcvbuf) {
        (true, None) => Some(SPLIT_DIALOG_RCVBUF),
        (_, r) => r,
    };
    let mut attempt = 0;
    let (first, eff, listener) = loop {
        let (s, eff) = udp::open(scfg.listen, reuse, rcvbuf)?;
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
    let mut invites = None;
    let mut invite_rcvbuf = 0;
    if split {
        // second in the group: udp::INVITE_SOCKET
        let (s, eff) = udp::open(
            local,
            true,
            Some(scfg.invite_rcvbuf.unwrap_or(SPLIT_INVITE_RCVBUF)),
        )?;
        udp::split_invites(&socks[0])?;
        invites = Some(s);
        invite_rcvbuf = eff;
    } else if reuse {
        for _ in 1..scfg.workers.max(1) {
            socks.push(udp::open(local, true, rcvbuf)?.0);
        }
    }
    Ok(Bound {
        socks,
        invites,
        rcvbuf: eff,
        invite_rcvbuf,
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
                rcvbuf_requested: sc.rcvbuf.unwrap_or(if sc.splits() {
                    SPLIT_DIALOG_RCVBUF
                } else {
                    0
                }),
                rcvbuf_effective: eff,
                invite_split: false,
                invite_rcvbuf_effective: 0,
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
            invites,
            rcvbuf,
            invite_rcvbuf,
            listener,
            local,
        } = bind(&scfg)?;
        let registry = Arc::new(Registry::new());
        let handler = Arc::new(make(local, &registry, rcvbuf)?);
        if invites.is_some() {
            registry.set_split(invite_rcvbuf);
        }
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
            (Some(s), WakeOrder::Lifo) => {
                Some(Arc::new(wake::SharedWait::new(s, invites.as_ref(), n)?))
            }
            _ => None,
        };
        for i in 0..n {
            let sock = match &shared {
                Some(s) => s.try_clone()?,
                None => owned
                    .next()
                    .ok_or_else(|| io::Error::other("missing socket"))?,
            };
            let invites = invites.as_ref().map(UdpSocket::try_clone).transpose()?;
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
                invites,
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
                    _ if w.wait.is_some() => w.run_shared(batch),
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
