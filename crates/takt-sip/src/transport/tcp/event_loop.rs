//! One event-loop thread: accepts, reads, frames, calls the handler
//! inline, writes out pending sends, and closes the connections whose
//! deadlines passed.
//!
//! The loop owns its connections' read state ([`Local`]: the bytes of an
//! incomplete message, when its first byte came); only it reads and
//! closes them. Each `epoll_wait` returns a batch of ready connections;
//! a connection is read until the kernel has nothing more (edge-triggered)
//! or its per-turn budget is spent, in which case it is read again after
//! the other ready connections had their turn, so one busy peer cannot
//! starve the rest.

use std::collections::HashMap;
use std::io;
use std::net::TcpListener;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};

use super::conn::Conn;
use super::{lock, reject, Tcp};
use crate::proxy::{Inbound, Scratch, Target, Transport};
use crate::stats::{bump, Sample, WorkerStats};
use crate::transport::handler::Handler;
use crate::transport::udp::{parse_cmsgs, realtime_ns, CMSG_SPACE};
use crate::transport::worker::{now_ns, NetSink};
use crate::wire::stream::{Frame, FrameError, Framer};

/// The listener's token.
const LISTENER: Token = Token(0);
/// The mailbox waker's token.
pub(super) const WAKER: Token = Token(1);
/// Bytes per read.
const READ_CHUNK: usize = 64 * 1024;
/// Reads per connection per turn (see the module docs).
const READS_PER_TURN: usize = 8;
/// Events per `epoll_wait`.
const EVENTS: usize = 1024;
/// Read-buffer capacity kept once a connection's buffer empties; larger
/// ones are freed, so idle connections hold no read memory.
const KEEP_READ_CAPACITY: usize = 4096;
/// An RFC 5626 keep-alive ping, and its answer.
const PING: &[u8] = b"\r\n\r\n";
const PONG: &[u8] = b"\r\n";

/// A connection's read state, owned by its loop.
#[derive(Debug)]
struct Local {
    conn: Arc<Conn>,
    /// Bytes received and not yet framed (a message's beginning); when
    /// its first byte arrived is [`Conn::msg_since`].
    buf: Vec<u8>,
    /// When an outbound connect still in progress must have completed (ns).
    connect_by: Option<u64>,
    /// The length `buf` must reach before a message can be framed from
    /// it (its header section is complete: [`Framer::needed`]); 0 while
    /// the header section is incomplete. With it, and with a header
    /// section that can only end at a LF, a peer sending a byte at a time
    /// costs work linear in its bytes, not quadratic.
    need: usize,
}

/// Why a loop closes a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Close {
    /// The peer closed, or the socket failed.
    Ended,
    /// The stream cannot be framed.
    Unframeable,
    /// A message missed [`super::TcpLimits::message_deadline`].
    MessageDeadline,
    /// [`super::TcpLimits::idle_timeout`] passed without traffic.
    Idle,
}

/// What became of a connection's turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Turn {
    /// Everything available was read.
    Drained,
    /// The budget was spent with bytes left: read it again.
    More,
    /// Close it.
    Close(Close),
}

/// The per-loop buffers a turn works in.
struct Bufs {
    chunk: Vec<u8>,
    cmsg: [u8; CMSG_SPACE],
    scratch: Scratch,
    answer: Vec<u8>,
}

/// An event loop (see the module docs).
pub(super) struct EventLoop<H> {
    index: usize,
    poll: Poll,
    listener: Arc<TcpListener>,
    tcp: Arc<Tcp>,
    handler: Arc<H>,
    stats: Arc<Mutex<WorkerStats>>,
    framer: Framer,
}

impl<H: Handler> EventLoop<H> {
    pub(super) fn new(
        index: usize,
        poll: Poll,
        listener: Arc<TcpListener>,
        tcp: Arc<Tcp>,
        handler: Arc<H>,
        stats: Arc<Mutex<WorkerStats>>,
    ) -> io::Result<Self> {
        // every loop waits on the one listener; whichever wakes first
        // accepts (a new connection may wake several: each accepts until
        // the queue is empty, so none is left behind)
        poll.registry().register(
            &mut SourceFd(&listener.as_raw_fd()),
            LISTENER,
            Interest::READABLE,
        )?;
        let framer = Framer::new(tcp.max_message);
        Ok(EventLoop {
            index,
            poll,
            listener,
            tcp,
            handler,
            stats,
            framer,
        })
    }

    /// Runs until the transport's stop flag is set, then closes every
    /// connection it owns.
    pub(super) fn run(mut self) {
        let c = self.tcp.clock;
        let mut events = Events::with_capacity(EVENTS);
        let mut conns: HashMap<Token, Local> = HashMap::new();
        let mut bufs = Bufs {
            chunk: vec![0; READ_CHUNK],
            cmsg: [0; CMSG_SPACE],
            scratch: Scratch::new(),
            answer: Vec::new(),
        };
        let mut again: Vec<Token> = Vec::new();
        let mut next_again: Vec<Token> = Vec::new();
        let sweep = self.tcp.limits.sweep_interval();
        let sweep_ns = sweep.as_nanos() as u64;
        let mut next_sweep = now_ns(c) + sweep_ns;
        let mut accept_failed = false;
        while !self.tcp.stopped() {
            let now = now_ns(c);
            let timeout = if again.is_empty() {
                Duration::from_nanos(next_sweep.saturating_sub(now))
            } else {
                Duration::ZERO
            };
            if let Err(e) = self.poll.poll(&mut events, Some(timeout)) {
                if e.kind() != io::ErrorKind::Interrupted {
                    // epoll_wait fails only on a bad descriptor or buffer,
                    // which this loop never passes; never spin on it
                    std::thread::sleep(POLL_ERROR_PAUSE);
                }
                continue;
            }
            if self.tcp.stopped() {
                break;
            }
            let now = now_ns(c);
            for ev in events.iter() {
                match ev.token() {
                    LISTENER => accept_failed = self.accept(&mut conns, now),
                    WAKER => self.adopt(&mut conns),
                    t => {
                        let Some(l) = conns.get_mut(&t) else { continue };
                        if l.connect_by.is_some() {
                            match l.conn.connect_result() {
                                None => continue,
                                Some(Ok(())) => l.connect_by = None,
                                Some(Err(e)) => {
                                    self.connect_failed(&mut conns, t, e, now);
                                    continue;
                                }
                            }
                        }
                        if ev.is_writable() && !l.conn.flush() {
                            self.close(&mut conns, t, Close::Ended);
                            continue;
                        }
                        if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                            self.turn(&mut conns, t, &mut bufs, now, &mut next_again);
                        }
                    }
                }
            }
            for t in again.drain(..) {
                self.turn(&mut conns, t, &mut bufs, now, &mut next_again);
            }
            std::mem::swap(&mut again, &mut next_again);
            if now >= next_sweep {
                next_sweep = now + sweep_ns;
                self.sweep(&mut conns, now, &again);
                // connections handed over while a wake-up failed
                self.adopt(&mut conns);
                if accept_failed {
                    accept_failed = self.accept(&mut conns, now);
                }
            }
        }
        for t in conns.keys().copied().collect::<Vec<_>>() {
            self.close(&mut conns, t, Close::Ended);
        }
    }

    /// Accepts until the queue is empty. Returns whether accepting failed
    /// with connections possibly left queued (retried at the next sweep).
    fn accept(&mut self, conns: &mut HashMap<Token, Local>, now: u64) -> bool {
        let tcp = self.tcp.clone();
        loop {
            let (s, peer) = match self.listener.accept() {
                Ok(a) => a,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
                    ) =>
                {
                    continue
                }
                Err(_) => {
                    // out of descriptors or memory: the connection stays
                    // queued; try again at the next sweep
                    bump(&tcp.counters.accept_errors);
                    return true;
                }
            };
            if tcp.admit(peer, true, now).is_err() {
                // counted by `admit`; dropping the socket closes it
                continue;
            }
            let stream = match Tcp::prepare(s) {
                Ok(s) => s,
                Err(_) => {
                    // Relaxed: see `Tcp::admit`.
                    tcp.counters.open.fetch_sub(1, Ordering::Relaxed);
                    tcp.unpeer(peer.ip());
                    bump(&tcp.counters.accept_errors);
                    continue;
                }
            };
            let conn = Arc::new(Conn::new(tcp.new_id(), peer, false, stream, false, now));
            tcp.insert(&conn);
            bump(&tcp.counters.accepted);
            self.register(conns, conn);
        }
    }

    /// Starts watching a connection (readable and writable, edge-triggered).
    fn register(&mut self, conns: &mut HashMap<Token, Local>, conn: Arc<Conn>) {
        let t = Token(conn.id as usize);
        let now = now_ns(self.tcp.clock);
        // an outbound connect may have ended since the sender handed it over
        let state = conn.connect_result();
        let r = self.poll.registry().register(
            &mut SourceFd(&conn.stream.as_raw_fd()),
            t,
            Interest::READABLE | Interest::WRITABLE,
        );
        conns.insert(
            t,
            Local {
                conn,
                buf: Vec::new(),
                need: 0,
                connect_by: state
                    .is_none()
                    .then(|| now + super::CONNECT_TIMEOUT.as_nanos() as u64),
            },
        );
        if let Some(Err(e)) = state {
            self.connect_failed(conns, t, e, now);
        } else if r.is_err() {
            self.close(conns, t, Close::Ended);
        }
    }

    /// Registers the connections senders opened for this loop.
    fn adopt(&mut self, conns: &mut HashMap<Token, Local>) {
        let new = std::mem::take(&mut *lock(&self.tcp.loops[self.index].adopt));
        for c in new {
            self.register(conns, c);
        }
    }

    /// Closes a connection for `why` (counted).
    fn close(&mut self, conns: &mut HashMap<Token, Local>, t: Token, why: Close) {
        let Some(l) = conns.remove(&t) else { return };
        let c = &self.tcp.counters;
        match why {
            Close::Ended => {}
            Close::Unframeable => bump(&c.unframeable),
            Close::MessageDeadline => bump(&c.message_timeouts),
            Close::Idle => bump(&c.idle_timeouts),
        }
        let _ = self
            .poll
            .registry()
            .deregister(&mut SourceFd(&l.conn.stream.as_raw_fd()));
        l.conn.close();
        self.tcp.release(&l.conn);
    }

    /// An outbound connect failed (`error`) or timed out: closes the
    /// connection and hands the messages queued behind the connect to the
    /// handler as undeliverable ([`Handler::bounced`]).
    fn connect_failed(
        &mut self,
        conns: &mut HashMap<Token, Local>,
        t: Token,
        error: crate::proxy::SendError,
        now: u64,
    ) {
        let Some(conn) = conns.get(&t).map(|l| l.conn.clone()) else {
            return;
        };
        bump(&self.tcp.counters.connect_failures);
        let queued = conn.take_pending();
        self.close(conns, t, Close::Ended);
        if !queued.is_empty() {
            let tcp = &*self.tcp;
            let mut sink = NetSink::new(&tcp.udp, None, Some(&self.tcp), tcp.clock);
            self.handler
                .bounced(&queued, conn.peer, error, now, &mut sink);
        }
    }

    /// Closes the connections whose message deadline or idle lifetime
    /// passed. A connection in `busy` (bytes left unread after its turn)
    /// is not closed for its message deadline: its message is arriving as
    /// fast as this loop reads it (a slow loris never has bytes left).
    fn sweep(&mut self, conns: &mut HashMap<Token, Local>, now: u64, busy: &[Token]) {
        let busy: std::collections::HashSet<Token> = busy.iter().copied().collect();
        let lim = &self.tcp.limits;
        let deadline = lim.message_deadline.as_nanos() as u64;
        let idle = lim.idle_timeout.as_nanos() as u64;
        let late: Vec<Token> = conns
            .iter()
            .filter(|(_, l)| l.connect_by.is_some_and(|by| now >= by))
            .map(|(t, _)| *t)
            .collect();
        for t in late {
            match conns.get(&t).and_then(|l| l.conn.connect_result()) {
                Some(Ok(())) => {
                    if let Some(l) = conns.get_mut(&t) {
                        l.connect_by = None;
                        if !l.conn.flush() {
                            self.close(conns, t, Close::Ended);
                        }
                    }
                }
                Some(Err(e)) => self.connect_failed(conns, t, e, now),
                None => self.connect_failed(conns, t, crate::proxy::SendError::Unreachable, now),
            }
        }
        let expired: Vec<(Token, Close)> = conns
            .iter()
            .filter(|(_, l)| l.connect_by.is_none())
            .filter_map(|(t, l)| {
                if l.conn
                    .msg_since()
                    .is_some_and(|s| now.saturating_sub(s) >= deadline)
                    && !busy.contains(t)
                {
                    Some((*t, Close::MessageDeadline))
                } else if now.saturating_sub(l.conn.last_active()) >= idle {
                    Some((*t, Close::Idle))
                } else {
                    None
                }
            })
            .collect();
        for (t, why) in expired {
            self.close(conns, t, why);
        }
    }

    /// Reads a ready connection (see [`Turn`]) and closes it if it ended.
    fn turn(
        &mut self,
        conns: &mut HashMap<Token, Local>,
        t: Token,
        bufs: &mut Bufs,
        now: u64,
        again: &mut Vec<Token>,
    ) {
        let Some(l) = conns.get_mut(&t) else { return };
        match self.read(l, bufs, now) {
            Turn::Drained => {}
            Turn::More => again.push(t),
            Turn::Close(why) => self.close(conns, t, why),
        }
    }

    fn read(&self, l: &mut Local, bufs: &mut Bufs, now: u64) -> Turn {
        for _ in 0..READS_PER_TURN {
            match recv_stream(&l.conn.stream, &mut bufs.chunk, &mut bufs.cmsg) {
                Ok((0, _)) => return Turn::Close(Close::Ended),
                Ok((n, t_arr)) => {
                    let t_in = realtime_ns();
                    let k_rcv = t_arr.map(|a| t_in.saturating_sub(a));
                    l.conn.touch(now);
                    if let Err(why) = self.deliver(l, n, k_rcv, bufs, now) {
                        return Turn::Close(why);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Turn::Drained,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Turn::Close(Close::Ended),
            }
        }
        Turn::More
    }

    /// Frames and handles the `n` bytes just read into `bufs.chunk`,
    /// behind whatever `l.buf` held; keeps the incomplete rest.
    fn deliver(
        &self,
        l: &mut Local,
        n: usize,
        k_rcv: Option<u64>,
        bufs: &mut Bufs,
        now: u64,
    ) -> Result<(), Close> {
        let Bufs {
            chunk,
            scratch,
            answer,
            ..
        } = bufs;
        let framed = if l.buf.is_empty() {
            // framed straight from the read buffer: no copy
            let (used, any) = self.frame_all(&l.conn, &chunk[..n], k_rcv, scratch, answer)?;
            l.buf.extend_from_slice(&chunk[used..n]);
            any
        } else {
            l.buf.extend_from_slice(&chunk[..n]);
            let waiting = if l.need > 0 {
                l.buf.len() < l.need
            } else {
                // the header section cannot have ended without a LF
                !chunk[..n].contains(&b'\n')
            };
            if waiting && l.buf.len() <= self.tcp.max_message {
                return Ok(());
            }
            let buf = std::mem::take(&mut l.buf);
            let r = self.frame_all(&l.conn, &buf, k_rcv, scratch, answer);
            l.buf = buf;
            let (used, any) = r?;
            l.buf.drain(..used);
            any
        };
        l.need = self.framer.needed(&l.buf).unwrap_or(0);
        if l.buf.is_empty() || PING.starts_with(&l.buf) {
            // nothing, or the beginning of a keep-alive: no message pending
            l.conn.set_msg_since(None);
            if l.buf.capacity() > KEEP_READ_CAPACITY {
                l.buf = Vec::new();
            }
        } else if framed || l.conn.msg_since().is_none() {
            // a new message began in this read
            l.conn.set_msg_since(Some(now));
        }
        Ok(())
    }

    /// Handles every whole message at the front of `data`; returns the
    /// bytes consumed and whether a message was among them.
    fn frame_all(
        &self,
        conn: &Arc<Conn>,
        data: &[u8],
        k_rcv: Option<u64>,
        scratch: &mut Scratch,
        answer: &mut Vec<u8>,
    ) -> Result<(usize, bool), Close> {
        let mut at = 0;
        let mut any = false;
        loop {
            let rest = &data[at..];
            if rest.starts_with(PING) {
                let _ = self.tcp.send(
                    Some(conn),
                    &Target {
                        addr: conn.peer,
                        transport: Transport::Tcp,
                        conn: Some(conn.id),
                    },
                    PONG,
                );
                at += PING.len();
                continue;
            }
            if PING.starts_with(rest) {
                // empty, or maybe a ping's beginning
                return Ok((at, any));
            }
            if rest.starts_with(PONG) {
                at += PONG.len();
                continue;
            }
            match self.framer.frame(rest) {
                Ok(Frame::Incomplete) => return Ok((at, any)),
                Ok(Frame::Message { skip, len }) => {
                    self.handle(conn, &rest[skip..skip + len], k_rcv, scratch);
                    at += skip + len;
                    any = true;
                }
                Err(e) => {
                    self.unframeable(conn, rest, e, answer);
                    return Err(Close::Unframeable);
                }
            }
        }
    }

    /// Hands one message to the handler, timed like a UDP worker's (see
    /// the module docs for K_rcv).
    fn handle(&self, conn: &Arc<Conn>, bytes: &[u8], k_rcv: Option<u64>, scratch: &mut Scratch) {
        let tcp = &*self.tcp;
        let c = tcp.clock;
        let t0 = c.now();
        let mut sink = NetSink::new(&tcp.udp, None, Some(&self.tcp), c).on_conn(conn);
        let o = self.handler.handle(
            &Inbound {
                bytes,
                from: Target {
                    addr: conn.peer,
                    transport: Transport::Tcp,
                    conn: Some(conn.id),
                },
                now: c.ticks_to_ns(t0),
                queue_delay_ns: k_rcv.unwrap_or(0),
            },
            scratch,
            &mut sink,
        );
        let total = c.ticks_to_ns(c.now().saturating_sub(t0));
        let snd = c.ticks_to_ns(sink.send_ticks);
        let sample = Sample {
            k_rcv_ns: k_rcv,
            t_sip_ns: total.saturating_sub(snd),
            k_snd_ns: snd,
            // not tracked for the TCP loops
            overlapped: false,
        };
        lock(&self.stats).record(&sample, &o);
    }

    /// Answers a request whose stream cannot be framed (see the `reject`
    /// module) and counts the rule.
    fn unframeable(&self, conn: &Arc<Conn>, rest: &[u8], e: FrameError, answer: &mut Vec<u8>) {
        let (rule, code, reason) = match e {
            FrameError::HeadersTooLarge(_) => ("stream_headers_too_large", 0, ""),
            FrameError::ContentLength => (
                "stream_content_length",
                400,
                "Missing or Bad Content-Length",
            ),
            FrameError::TooLarge(_) => ("too_large", 513, "Message Too Large"),
        };
        lock(&self.stats).record_unframeable(rule);
        answer.clear();
        if code != 0 && reject::answer(answer, rest, code, reason) {
            let to = Target {
                addr: conn.peer,
                transport: Transport::Tcp,
                conn: Some(conn.id),
            };
            if self.tcp.send(Some(conn), &to, answer).is_ok() {
                lock(&self.stats).record_reply(code);
            }
            // the answer is on its way before the close: `close` shuts the
            // socket down for writing after the bytes already queued
            let _ = conn.flush();
        }
    }
}

/// Pause after a failed `epoll_wait` other than an interruption.
const POLL_ERROR_PAUSE: Duration = Duration::from_millis(1);

/// Reads from a stream socket with `recvmsg`; returns the bytes read and
/// the kernel receive time (CLOCK_REALTIME ns) of the last segment the
/// read copied from, when the kernel reported one.
fn recv_stream(
    s: &mio::net::TcpStream,
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
    // is the stream's, open for the duration of the call (the caller
    // holds the connection).
    let n = unsafe { libc::recvmsg(s.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let (t_arr, _) = parse_cmsgs(&msg);
    Ok((n as usize, t_arr))
}
