//! TCP (RFC 3261 §18): a listener, a connection table keyed by id and by
//! peer address, and one reader thread per connection (a takt-sched
//! thread) that frames messages with Content-Length and hands them to the
//! [`Handler`]. Responses go back over the connection the request came on;
//! requests to a peer reuse an open connection or open one. Connections
//! and per-connection buffers are bounded.
//!
//! ## K_rcv over TCP
//!
//! Every connection has `SO_TIMESTAMPNS` on, and the reader receives with
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
//!   `t_in` and timestamp, so the same K_rcv; messages framed later from
//!   bytes already buffered are not re-read and keep the completing
//!   read's K_rcv (their time in the reader's buffer is part of T_sip's
//!   predecessors, not of any K_rcv);
//! - a read the kernel answers without a timestamp (none is reported when
//!   no data was copied) leaves K_rcv unknown for the messages it completes.
//!
//! Over UDP one datagram is one message and one skb, so there the
//! timestamp is exactly the message's arrival.

use std::collections::HashMap;
use std::io::{self, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use takt_sched::{clock, TaktThread, ThreadSpec};

use super::handler::Handler;
use super::udp::{parse_cmsgs, realtime_ns, setsockopt_int, CMSG_SPACE};
use super::worker::{now_ns, NetSink};
use crate::proxy::{ConnId, Inbound, Scratch, SendError, Target, Transport};
use crate::stats::{Sample, WorkerStats};
use crate::wire::stream::{Frame, Framer};

/// How long a connect may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
const READ_TIMEOUT: Duration = Duration::from_millis(200);

#[derive(Debug)]
struct Conn {
    peer: SocketAddr,
    w: Mutex<TcpStream>,
}

/// Starts the reader thread of a connection: made once by [`Tcp::start`]
/// for its handler type, so that the table itself is not generic and each
/// reader calls its handler with static dispatch.
type SpawnReader = Box<
    dyn Fn(Arc<Tcp>, ConnId, SocketAddr, TcpStream) -> io::Result<TaktThread<()>> + Send + Sync,
>;

/// The TCP transport.
pub struct Tcp {
    conns: Mutex<HashMap<ConnId, Arc<Conn>>>,
    by_addr: Mutex<HashMap<SocketAddr, ConnId>>,
    next_id: AtomicU64,
    max_conns: usize,
    max_message: usize,
    spawn_reader: SpawnReader,
    stats: Arc<Mutex<WorkerStats>>,
    udp: UdpSocket,
    spec: ThreadSpec,
    stop: Arc<AtomicBool>,
    readers: Mutex<Vec<TaktThread<()>>>,
    local: SocketAddr,
}

impl Tcp {
    /// Starts accepting on `listener`; every connection's messages go to
    /// `handler`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start<H: Handler>(
        listener: TcpListener,
        handler: Arc<H>,
        stats: Arc<Mutex<WorkerStats>>,
        udp: UdpSocket,
        spec: ThreadSpec,
        stop: Arc<AtomicBool>,
        max_conns: usize,
        max_message: usize,
    ) -> io::Result<(Arc<Tcp>, TaktThread<()>)> {
        let tcp = Arc::new(Tcp {
            conns: Mutex::new(HashMap::new()),
            by_addr: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            max_conns,
            max_message,
            spawn_reader: Box::new(move |tcp: Arc<Tcp>, id, peer, s| {
                let h = handler.clone();
                tcp.spec
                    .renamed(format!("sip-tcp-{id}"))
                    .spawn(move || read_loop(&tcp, &*h, id, peer, s))
                    .map_err(io::Error::other)
            }),
            stats,
            udp,
            spec: spec.clone(),
            stop,
            readers: Mutex::new(Vec::new()),
            local: listener.local_addr()?,
        });
        let t = tcp.clone();
        let acceptor = spec
            .renamed("sip-tcp-accept")
            .spawn(move || {
                for s in listener.incoming() {
                    // Acquire pairs with the Release store in `shutdown`.
                    if t.stop.load(Ordering::Acquire) {
                        break;
                    }
                    if let Ok(s) = s {
                        let _ = t.adopt(s);
                    }
                }
            })
            .map_err(io::Error::other)?;
        Ok((tcp, acceptor))
    }

    fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        m.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a connection and starts its reader.
    fn adopt(self: &Arc<Self>, s: TcpStream) -> io::Result<Arc<Conn>> {
        if Self::lock(&self.conns).len() >= self.max_conns {
            let _ = s.shutdown(Shutdown::Both);
            return Err(io::Error::other("too many TCP connections"));
        }
        let peer = s.peer_addr()?;
        let _ = s.set_nodelay(true);
        // receive timestamps for K_rcv (see the module docs); without them
        // the connection still works, its messages have no K_rcv
        let _ = setsockopt_int(s.as_raw_fd(), libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1);
        s.set_read_timeout(Some(READ_TIMEOUT))?;
        // Relaxed: a unique id is all that is needed.
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::new(Conn {
            peer,
            w: Mutex::new(s.try_clone()?),
        });
        Self::lock(&self.conns).insert(id, conn.clone());
        Self::lock(&self.by_addr).insert(peer, id);
        let th = (self.spawn_reader)(self.clone(), id, peer, s)?;
        let mut r = Self::lock(&self.readers);
        r.retain(|t| !t.is_finished());
        r.push(th);
        Ok(conn)
    }

    fn forget(&self, id: ConnId, peer: SocketAddr) {
        Self::lock(&self.conns).remove(&id);
        let mut a = Self::lock(&self.by_addr);
        if a.get(&peer) == Some(&id) {
            a.remove(&peer);
        }
    }

    /// Sends over the connection named by `to.conn`, or one to `to.addr`,
    /// opening it if needed.
    pub(crate) fn send(self: &Arc<Self>, to: &Target, bytes: &[u8]) -> Result<(), SendError> {
        let existing = {
            let conns = Self::lock(&self.conns);
            to.conn.and_then(|id| conns.get(&id).cloned()).or_else(|| {
                Self::lock(&self.by_addr)
                    .get(&to.addr)
                    .and_then(|id| conns.get(id).cloned())
            })
        };
        let conn = match existing {
            Some(c) => c,
            None => {
                let s = TcpStream::connect_timeout(&to.addr, CONNECT_TIMEOUT).map_err(|e| {
                    match e.kind() {
                        // a reset in answer to the SYN (§18.1.1's UDP retry)
                        io::ErrorKind::ConnectionRefused => SendError::Refused,
                        _ => SendError::Unreachable,
                    }
                })?;
                self.adopt(s).map_err(|_| SendError::Unreachable)?
            }
        };
        let mut w = Self::lock(&conn.w);
        w.write_all(bytes).map_err(|_| SendError::Unreachable)
    }

    /// Open connections.
    pub fn connections(&self) -> usize {
        Self::lock(&self.conns).len()
    }

    /// Stops the acceptor and every reader.
    pub(crate) fn shutdown(&self) {
        // Release pairs with the Acquire loads in the loops.
        self.stop.store(true, Ordering::Release);
        let _ = TcpStream::connect_timeout(&self.local, Duration::from_millis(200));
        for c in Self::lock(&self.conns).values() {
            let _ = Self::lock(&c.w).shutdown(Shutdown::Both);
            let _ = c.peer;
        }
        let readers = std::mem::take(&mut *Self::lock(&self.readers));
        for r in readers {
            let _ = r.join();
        }
    }
}

/// A connection's reader: frames messages and hands each to `handler`,
/// timed like a UDP worker's (see the module docs for K_rcv).
fn read_loop<H: Handler>(tcp: &Arc<Tcp>, handler: &H, id: ConnId, peer: SocketAddr, s: TcpStream) {
    let framer = Framer::new(tcp.max_message);
    let mut buf: Vec<u8> = Vec::with_capacity(16 * 1024);
    let mut chunk = vec![0u8; 16 * 1024];
    let mut scratch = Scratch::new();
    let mut cmsg = [0u8; CMSG_SPACE];
    let c = clock();
    let from = Target {
        addr: peer,
        transport: Transport::Tcp,
        conn: Some(id),
    };
    'conn: loop {
        // Acquire pairs with the Release store in `shutdown`.
        if tcp.stop.load(Ordering::Acquire) {
            break;
        }
        let k_rcv = match recv_stream(&s, &mut chunk, &mut cmsg) {
            Ok((0, _)) => break,
            Ok((n, t_arr)) => {
                let t_in = realtime_ns();
                buf.extend_from_slice(&chunk[..n]);
                t_arr.map(|a| t_in.saturating_sub(a))
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                continue
            }
            Err(_) => break,
        };
        loop {
            match framer.frame(&buf) {
                Ok(Frame::Incomplete) => break,
                Ok(Frame::Message { skip, len }) => {
                    let t0 = c.now();
                    let mut sink = NetSink::new(&tcp.udp, None, Some(tcp), c);
                    let o = handler.handle(
                        &Inbound {
                            bytes: &buf[skip..skip + len],
                            from,
                            now: c.ticks_to_ns(t0),
                            queue_delay_ns: k_rcv.unwrap_or(0),
                        },
                        &mut scratch,
                        &mut sink,
                    );
                    let total = c.ticks_to_ns(c.now().saturating_sub(t0));
                    let snd = c.ticks_to_ns(sink.send_ticks);
                    let sample = Sample {
                        k_rcv_ns: k_rcv,
                        t_sip_ns: total.saturating_sub(snd),
                        k_snd_ns: snd,
                        // not tracked for the TCP thread
                        overlapped: false,
                    };
                    Tcp::lock(&tcp.stats).record(&sample, &o);
                    buf.drain(..skip + len);
                }
                Err(_) => {
                    // unframeable (no/bad Content-Length, too large): the stream is lost
                    Tcp::lock(&tcp.stats).record_oversized();
                    break 'conn;
                }
            }
        }
    }
    let _ = s.shutdown(Shutdown::Both);
    tcp.forget(id, peer);
}

/// Reads from a stream socket with `recvmsg`; returns the bytes read and
/// the kernel receive time (CLOCK_REALTIME ns) of the last segment the
/// read copied from, when the kernel reported one.
fn recv_stream(
    s: &TcpStream,
    buf: &mut [u8],
    cmsg: &mut [u8; CMSG_SPACE],
) -> io::Result<(usize, Option<u64>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: all-zero is a valid msghdr; every pointer set below outlives the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cmsg.as_mut_ptr().cast();
    msg.msg_controllen = CMSG_SPACE as _;
    // SAFETY: msg describes valid buffers for the kernel to fill; the fd
    // is the stream's, open for the duration of the call.
    let n = unsafe { libc::recvmsg(s.as_raw_fd(), &mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let (t_arr, _) = parse_cmsgs(&msg);
    Ok((n as usize, t_arr))
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
    s.listen(1024)?;
    Ok(s.into())
}

impl std::fmt::Debug for Tcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tcp")
            .field("local", &self.local)
            .field("connections", &self.connections())
            .field("max_conns", &self.max_conns)
            .field("max_message", &self.max_message)
            .finish_non_exhaustive()
    }
}

#[allow(dead_code)]
fn _assert_send_sync() {
    fn f<T: Send + Sync>() {}
    f::<Tcp>();
    let _ = now_ns;
}
