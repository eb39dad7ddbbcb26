//! TCP (RFC 3261 §18): non-blocking connections on a fixed set of
//! event-loop threads, with limits and deadlines.
//!
//! ## Contract
//! - A [`TcpLimits::workers`] count of event-loop threads (takt-sched
//!   threads named `sip-tcp<i>`, made from the server's
//!   [`ThreadSpec`](takt_sched::ThreadSpec) like the UDP workers) each own
//!   a share of the connections. Each accepts from the one listener, reads
//!   its connections, frames messages with Content-Length (§18.3) and
//!   calls the [`Handler`] **inline, on the loop thread**: a message costs
//!   no hand-off between threads, no futex wake-up.
//! - Responses go back over the connection their request came on
//!   ([`Target::conn`](crate::proxy::Target::conn)); requests to a peer
//!   reuse the open connection to its address, or open one (bounded by the
//!   total limit). The connect never blocks a thread for more than
//!   [`CONNECT_WAIT`]: a refusal within it is
//!   [`SendError::Refused`](crate::proxy::SendError::Refused), which the
//!   proxy answers with §18.1.1's UDP retry; a slower destination gets its
//!   messages queued behind the connect, and a connect that fails later or
//!   takes over [`CONNECT_TIMEOUT`] hands them to [`Handler::bounced`] (the
//!   proxy answers the transaction at once, §16.9) and is counted as
//!   `tcp.connect_failures`. Any thread may send: the
//!   send is a non-blocking write, and what the kernel does not take waits
//!   in a bounded per-connection buffer that the owning loop writes out
//!   (the `conn` module documents the protocol).
//! - A double CRLF between messages is a keep-alive ping and is answered
//!   with a CRLF (RFC 5626 §3.5.1); a single CRLF is skipped.
//! - A stream that cannot be framed (no or bad Content-Length, a header
//!   section or message over [`super::ServerConfig::max_message`]) closes
//!   the connection; a request whose header section arrived is answered
//!   first (400, or 513 Message Too Large), and the parse-error counters
//!   count the rule.
//!
//! ## Limits and deadlines
//!
//! | limit | default | when it fires | counted as |
//! |---|---|---|---|
//! | [`TcpLimits::max_connections`] | 16,384 | an accept or connect beyond it evicts the stalest connection ([`evict`] has the rule), or is closed at once when no connection may be evicted | `tcp.evicted`, `tcp.refused_total_limit` |
//! | [`TcpLimits::max_per_peer`] | 512 | an accept from a peer IP address that has this many open is closed at once (it evicts nobody) | `tcp.refused_peer_limit` |
//! | [`TcpLimits::message_deadline`] | 5 s | a message's first byte arrived this long ago and it is still incomplete (slow loris, half-open request) | `tcp.message_timeouts` |
//! | [`TcpLimits::idle_timeout`] | 120 s | no byte in either direction for this long | `tcp.idle_timeouts` |
//! | [`TcpLimits::max_send_buffer`] | 1 MiB | bytes waiting for a peer that does not read | `tcp.send_overflows` |
//!
//! Every open connection is a file descriptor: the server raises the
//! process's soft `RLIMIT_NOFILE` to what the limits need (the `fdlimit`
//! module) and reports it (`tcp.fd_limit` against `tcp.fd_needed`). The
//! per-peer limit counts by IP address: it bounds what one host can hold,
//! not what a client with many addresses (an IPv6 /64) can. Deadlines are
//! checked by a sweep of each loop's connections every
//! [`TcpLimits::sweep_interval`] (an eighth of the shorter deadline,
//! between 10 ms and 1 s), so a deadline fires up to one sweep late.
//!
//! ## Why mio
//!
//! The loop is [`mio`] on epoll, edge-triggered. A hand-written epoll loop
//! would be about as long as the part of mio it uses (registration,
//! tokens, a waker, non-blocking socket types), and would carry its own
//! `unsafe` for each; mio is small, has no runtime, adds no thread and
//! no allocation per event, and its `Poll::poll` is one `epoll_wait`. What
//! makes the loop fast is takt's own: reading with `recvmsg` for the
//! kernel's receive timestamps, framing in place from the read buffer, and
//! calling the handler inline. An async runtime (tokio) would add a task
//! hand-off or a waker per message, which this transport must not have.
//!
//! ## K_rcv over TCP
//!
//! Every connection has `SO_TIMESTAMPNS` on, and the loop receives with
//! `recvmsg`: Linux then reports, per read, the kernel receive time
//! (CLOCK_REALTIME) of the *last* segment (skb) whose bytes that read
//! copied. A message's K_rcv is `t_in − t_last`, where `t_in` is the
//! CLOCK_REALTIME read right after the `recvmsg` that completed the
//! message (made its last byte available to the framer) and `t_last` is
//! that read's timestamp. Precisely, for a message spread over several
//! segments:
//!
//! - segments that arrived before the completing read's last segment
//!   (the message's first bytes, read earlier or in the same read) do not
//!   count: K_rcv is the wait of the latest segment the read took, a lower
//!   bound of how long the message's first byte waited;
//! - when the completing read also took bytes of later messages, the
//!   timestamp is that of the segment carrying the last of those bytes, so
//!   K_rcv may be shorter than the wait of the segment that carried this
//!   message's final byte;
//! - every message framed from one read (pipelined messages) gets the same
//!   `t_in` and timestamp, so the same K_rcv;
//! - a read the kernel answers without a timestamp (none is reported when
//!   no data was copied) leaves K_rcv unknown for the messages it completes.
//!
//! Over UDP one datagram is one message and one skb, so there the
//! timestamp is exactly the message's arrival.

mod conn;
mod event_loop;
mod evict;
mod reject;

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr, TcpListener, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use takt_sched::{Clock, TaktThread, ThreadSpec};

use super::handler::Handler;
use super::udp::setsockopt_int;
use super::worker::now_ns;
use crate::proxy::{ConnId, SendError, Target};
use crate::stats::{bump, Registry, TcpCounters};
pub(crate) use conn::Conn;

/// How long a connect may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a sender waits for a connect's answer before it hands the
/// connection to its loop still connecting: long enough for a refusal
/// from this host or its network, short enough that a silent destination
/// never stalls a thread.
pub const CONNECT_WAIT: Duration = Duration::from_millis(10);

/// Starts a non-blocking connect to `addr` and waits up to
/// [`CONNECT_WAIT`] for its answer. Returns the stream ready for a loop,
/// and whether the connect is still in progress.
fn start_connect(addr: SocketAddr) -> Result<(mio::net::TcpStream, bool), SendError> {
    let failed = |e: io::Error| match e.raw_os_error() {
        // a reset in answer to the SYN (§18.1.1's UDP retry)
        Some(libc::ECONNREFUSED) => SendError::Refused,
        _ => SendError::Unreachable,
    };
    let s = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        None,
    )
    .map_err(failed)?;
    s.set_nonblocking(true).map_err(failed)?;
    let connecting = match s.connect(&addr.into()) {
        Ok(()) => false,
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {
            let mut p = libc::pollfd {
                fd: s.as_raw_fd(),
                events: libc::POLLOUT,
                revents: 0,
            };
            // SAFETY: `p` is one valid pollfd for the socket, which is
            // open for the duration of the call.
            let r = unsafe { libc::poll(&mut p, 1, CONNECT_WAIT.as_millis() as libc::c_int) };
            if r > 0 {
                if let Some(e) = s.take_error().map_err(failed)? {
                    return Err(failed(e));
                }
                false
            } else {
                true
            }
        }
        Err(e) => return Err(failed(e)),
    };
    let stream = Tcp::prepare(s.into()).map_err(failed)?;
    Ok((stream, connecting))
}

/// The TCP transport's limits (see the module docs for what each does
/// and counts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpLimits {
    /// Event-loop threads (0: half the UDP workers, at least one).
    pub workers: usize,
    /// Most connections open at once, inbound and outbound.
    pub max_connections: usize,
    /// Most inbound connections from one peer IP address.
    pub max_per_peer: usize,
    /// How long a message may take to arrive once its first byte has.
    pub message_deadline: Duration,
    /// How long a connection may go without traffic either way.
    pub idle_timeout: Duration,
    /// Most bytes a connection holds for a peer that does not read.
    pub max_send_buffer: usize,
}

impl Default for TcpLimits {
    fn default() -> Self {
        TcpLimits {
            workers: 0,
            max_connections: 16_384,
            max_per_peer: 512,
            message_deadline: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(120),
            max_send_buffer: 1 << 20,
        }
    }
}

/// Shortest and longest pause between deadline sweeps.
const SWEEP_MIN: Duration = Duration::from_millis(10);
const SWEEP_MAX: Duration = Duration::from_secs(1);
/// Descriptors besides the connections: sockets, epoll instances, wakers,
/// the statistics endpoint, files.
const FD_SLACK: u64 = 256;

impl TcpLimits {
    /// Event-loop threads for a server with `udp_workers` UDP workers.
    pub fn loop_threads(&self, udp_workers: usize) -> usize {
        if self.workers > 0 {
            self.workers
        } else {
            udp_workers.div_ceil(2).max(1)
        }
    }

    /// How often each loop checks its connections' deadlines: an eighth of
    /// the shorter deadline, between 10 ms and 1 s.
    pub fn sweep_interval(&self) -> Duration {
        (self.message_deadline.min(self.idle_timeout) / 8).clamp(SWEEP_MIN, SWEEP_MAX)
    }

    /// Open files a server with these limits needs.
    pub fn fds_needed(&self) -> u64 {
        self.max_connections as u64 + FD_SLACK
    }
}

/// One loop's mailbox: connections this process opened, for the loop to
/// register, and the waker that makes it look.
#[derive(Debug)]
struct Mailbox {
    waker: mio::Waker,
    adopt: Mutex<Vec<Arc<Conn>>>,
}

/// Why a connection was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    Total,
    Peer,
}

/// The TCP transport: the connection table every thread sends through,
/// and the event loops that own the connections.
pub struct Tcp {
    conns: RwLock<HashMap<ConnId, Arc<Conn>>>,
    /// The connection to reuse for each peer address (the latest one
    /// opened or accepted): a stateless response goes back by address.
    by_addr: Mutex<HashMap<SocketAddr, ConnId>>,
    /// Inbound connections open per peer IP address (entries > 0 only).
    peers: Mutex<HashMap<IpAddr, usize>>,
    /// Picks the connection that makes room when the table is full.
    evictor: Mutex<evict::Evictor>,
    next_id: AtomicU64,
    limits: TcpLimits,
    max_message: usize,
    counters: Arc<TcpCounters>,
    udp: UdpSocket,
    stop: Arc<AtomicBool>,
    loops: Vec<Mailbox>,
    local: SocketAddr,
    clock: &'static Clock,
}

/// The first connection id; tokens below it name the listener and waker.
const FIRST_ID: ConnId = 16;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Tcp {
    /// Starts the event loops on `listener`; every connection's messages
    /// go to `handler`, and their statistics to workers `sip-tcp<i>` of
    /// `registry`. Returns the transport and its threads.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start<H: Handler>(
        listener: TcpListener,
        handler: Arc<H>,
        registry: &Registry,
        udp: UdpSocket,
        spec: &ThreadSpec,
        stop: Arc<AtomicBool>,
        limits: TcpLimits,
        threads: usize,
        max_message: usize,
    ) -> io::Result<(Arc<Tcp>, Vec<TaktThread<()>>)> {
        listener.set_nonblocking(true)?;
        let listener = Arc::new(listener);
        let counters = Arc::new(TcpCounters::default());
        let fd = super::fdlimit::raise(limits.fds_needed())?;
        // Relaxed: static facts, published before any reader exists.
        counters.fd_soft.store(fd.soft, Ordering::Relaxed);
        counters.fd_needed.store(fd.needed, Ordering::Relaxed);
        registry.set_tcp(counters.clone());
        let mut polls = Vec::new();
        let mut loops = Vec::new();
        for _ in 0..threads.max(1) {
            let poll = mio::Poll::new()?;
            loops.push(Mailbox {
                waker: mio::Waker::new(poll.registry(), event_loop::WAKER)?,
                adopt: Mutex::new(Vec::new()),
            });
            polls.push(poll);
        }
        let tcp = Arc::new(Tcp {
            conns: RwLock::new(HashMap::new()),
            by_addr: Mutex::new(HashMap::new()),
            peers: Mutex::new(HashMap::new()),
            evictor: Mutex::new(evict::Evictor::new(
                limits.max_connections,
                limits.message_deadline,
            )),
            next_id: AtomicU64::new(FIRST_ID),
            limits,
            max_message,
            counters,
            udp,
            stop,
            loops,
            local: listener.local_addr()?,
            clock: takt_sched::clock(),
        });
        let mut out = Vec::new();
        for (i, poll) in polls.into_iter().enumerate() {
            let l = event_loop::EventLoop::new(
                i,
                poll,
                listener.clone(),
                tcp.clone(),
                handler.clone(),
                registry.add_worker(format!("sip-tcp{i}")),
            )?;
            out.push(
                spec.renamed(format!("sip-tcp{i}"))
                    .spawn(move || l.run())
                    .map_err(io::Error::other)?,
            );
        }
        Ok((tcp, out))
    }

    /// The limits in force.
    pub fn limits(&self) -> &TcpLimits {
        &self.limits
    }

    /// Open connections.
    pub fn connections(&self) -> usize {
        self.conns.read().unwrap_or_else(|p| p.into_inner()).len()
    }

    fn stopped(&self) -> bool {
        // Acquire pairs with the Release store in `Server::shutdown`.
        self.stop.load(Ordering::Acquire)
    }

    /// Counts a connection in, or refuses it (counted) when a limit is
    /// reached: `inbound` connections first against their peer's limit
    /// (which refuses), then every connection against the total, which
    /// evicts a connection to make room when one may be evicted (the
    /// `evict` module) and refuses otherwise.
    fn admit(&self, peer: SocketAddr, inbound: bool, now: u64) -> Result<(), Refusal> {
        let c = &self.counters;
        if inbound {
            let mut p = lock(&self.peers);
            let n = p.entry(peer.ip()).or_insert(0);
            if *n >= self.limits.max_per_peer {
                if *n == 0 {
                    p.remove(&peer.ip());
                }
                drop(p);
                bump(&c.refused_peer);
                return Err(Refusal::Peer);
            }
            *n += 1;
        }
        // Relaxed: the read-modify-writes on `open` are totally ordered
        // among themselves, which is all the limit needs.
        let was = c.open.fetch_add(1, Ordering::Relaxed);
        if was >= self.limits.max_connections as u64 {
            c.open.fetch_sub(1, Ordering::Relaxed);
            if !self.make_room(now) {
                if inbound {
                    self.unpeer(peer.ip());
                }
                bump(&c.refused_total);
                return Err(Refusal::Total);
            }
        }
        // Relaxed: a statistic.
        c.peak
            .fetch_max(c.open.load(Ordering::Relaxed), Ordering::Relaxed);
        Ok(())
    }

    /// Takes a slot for a new connection in a full table: one freed
    /// meanwhile, or an evicted connection's. Returns false when every
    /// slot is taken by a connection that may not be evicted.
    fn make_room(&self, now: u64) -> bool {
        let c = &self.counters;
        let max = self.limits.max_connections as u64;
        let mut ev = lock(&self.evictor);
        loop {
            // Relaxed: see `admit`.
            if c.open
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                    (n < max).then_some(n + 1)
                })
                .is_ok()
            {
                return true;
            }
            let Some(v) = ev.victim(&self.conns, now) else {
                return false;
            };
            // the slot passes to the new connection: `open` stays; when
            // the victim's owner released it first (it closed at the same
            // moment), its slot was freed instead: look again
            if self.unlist(&v) {
                bump(&c.closed);
                bump(&c.evicted);
                return true;
            }
        }
    }

    /// Undoes an inbound connection's count against its peer's limit.
    fn unpeer(&self, ip: IpAddr) {
        let mut p = lock(&self.peers);
        if let Some(n) = p.get_mut(&ip) {
            *n -= 1;
            if *n == 0 {
                p.remove(&ip);
            }
        }
    }

    /// Undoes [`Tcp::admit`] and forgets the connection (its owner closes
    /// it), unless an eviction did already.
    fn release(&self, conn: &Conn) {
        if self.unlist(conn) {
            // Relaxed: see `admit`.
            self.counters.open.fetch_sub(1, Ordering::Relaxed);
            bump(&self.counters.closed);
        }
    }

    /// Takes the connection out of the table and its peer's count (not
    /// out of `open`): the first caller for a connection does it and gets
    /// true.
    fn unlist(&self, conn: &Conn) -> bool {
        if !conn.mark_released() {
            return false;
        }
        self.conns
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&conn.id);
        {
            let mut a = lock(&self.by_addr);
            if a.get(&conn.peer) == Some(&conn.id) {
                a.remove(&conn.peer);
            }
        }
        if !conn.outbound {
            self.unpeer(conn.peer.ip());
        }
        true
    }

    /// Makes a connected socket ready for a loop: non-blocking, no Nagle,
    /// receive timestamps on.
    fn prepare(s: std::net::TcpStream) -> io::Result<mio::net::TcpStream> {
        s.set_nonblocking(true)?;
        let _ = s.set_nodelay(true);
        // receive timestamps for K_rcv (see the module docs); without them
        // the connection still works, its messages have no K_rcv
        let _ = setsockopt_int(s.as_raw_fd(), libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1);
        Ok(mio::net::TcpStream::from_std(s))
    }

    fn new_id(&self) -> ConnId {
        // Relaxed: a unique id is all that is needed.
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Registers an admitted connection in the table.
    fn insert(&self, c: &Arc<Conn>) {
        self.conns
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(c.id, c.clone());
        lock(&self.by_addr).insert(c.peer, c.id);
    }

    /// Opens a connection to `addr` and hands it to a loop. The connect
    /// is non-blocking: an answer within [`CONNECT_WAIT`] (a refusal from
    /// this host or a near one) is the send's result, as
    /// [`SendError::Refused`] for §18.1.1's UDP retry; otherwise the
    /// connection is handed over still connecting, sends queue behind the
    /// connect, and the loop finishes it (or fails it after
    /// [`CONNECT_TIMEOUT`], handing the queued messages to
    /// [`Handler::bounced`]). No thread waits longer than `CONNECT_WAIT`.
    fn connect(&self, addr: SocketAddr) -> Result<Arc<Conn>, SendError> {
        self.admit(addr, false, now_ns(self.clock))
            .map_err(|_| SendError::Unreachable)?;
        let (stream, connecting) = match start_connect(addr) {
            Ok(c) => c,
            Err(e) => {
                // Relaxed: see `admit`.
                self.counters.open.fetch_sub(1, Ordering::Relaxed);
                return Err(e);
            }
        };
        let id = self.new_id();
        let owner = (id as usize) % self.loops.len();
        let c = Arc::new(Conn::new(
            id,
            addr,
            true,
            stream,
            connecting,
            now_ns(self.clock),
        ));
        self.insert(&c);
        bump(&self.counters.connected);
        let mb = &self.loops[owner];
        lock(&mb.adopt).push(c.clone());
        // a failed wake leaves the connection to the loop's next sweep
        let _ = mb.waker.wake();
        Ok(c)
    }

    /// The open connection for `to`: the one named by `to.conn`, else the
    /// one to `to.addr`.
    fn find(&self, to: &Target) -> Option<Arc<Conn>> {
        let conns = self.conns.read().unwrap_or_else(|p| p.into_inner());
        to.conn.and_then(|id| conns.get(&id).cloned()).or_else(|| {
            let id = *lock(&self.by_addr).get(&to.addr)?;
            conns.get(&id).cloned()
        })
    }

    /// Sends over the connection named by `to.conn` (`current`, when it
    /// is that one: the connection the loop is reading), or one to
    /// `to.addr`, opening it if needed.
    pub(crate) fn send(
        &self,
        current: Option<&Arc<Conn>>,
        to: &Target,
        bytes: &[u8],
    ) -> Result<(), SendError> {
        let now = now_ns(self.clock);
        if let Some(c) = current.filter(|c| to.conn == Some(c.id)) {
            return c.send(bytes, self.limits.max_send_buffer, &self.counters, now);
        }
        let c = match self.find(to) {
            Some(c) => c,
            None => self.connect(to.addr)?,
        };
        c.send(bytes, self.limits.max_send_buffer, &self.counters, now)
    }

    /// Wakes every loop so that it sees the stop flag (set by the caller)
    /// and closes its connections.
    pub(crate) fn shutdown(&self) {
        for mb in &self.loops {
            let _ = mb.waker.wake();
        }
    }
}

/// Binds a TCP listener next to a UDP socket (same address and port).
pub(crate) fn listen(addr: SocketAddr) -> io::Result<TcpListener> {
    let s = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        None,
    )?;
    s.set_reuse_address(true)?;
    s.bind(&addr.into())?;
    s.listen(LISTEN_BACKLOG)?;
    Ok(s.into())
}

/// The listen queue asked for (the kernel caps it at `net.core.somaxconn`).
const LISTEN_BACKLOG: i32 = 4096;

impl std::fmt::Debug for Tcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tcp")
            .field("local", &self.local)
            .field("connections", &self.connections())
            .field("limits", &self.limits)
            .field("max_message", &self.max_message)
            .finish_non_exhaustive()
    }
}
