//! The generator over TCP (RFC 3261 §18): the UAC's connections to the
//! proxy and the UAS's listener with the connections the proxy opens to
//! it, under the same [`SideIo`] as UDP.
//!
//! - Messages are framed by Content-Length (takt-sip's
//!   [`Framer`](takt_sip::wire::stream::Framer)); a stream that cannot be
//!   framed is closed and counted.
//! - A connection is a *port* of the UA core: the UAC spreads its calls
//!   over its `--connections` (call `i` on connection `i mod N`, whose
//!   local address is in its Via and Contact), and the UAS answers on the
//!   connection a request came on. A UAS port carries the connection's
//!   generation, so an answer for a connection that closed meanwhile is
//!   never written to a newer one in the same slot.
//! - Sends are non-blocking writes; what the kernel does not take waits
//!   in the connection's buffer (at most [`MAX_BACKLOG`] bytes, beyond
//!   which messages are refused and counted as `send_full`) and is
//!   written on the thread's next turns.
//! - A connection the peer closes (or that fails) is counted in
//!   `closed`; messages for it are counted in `send_errors`, and its calls
//!   end by Timer B/F or stay unfinished at the end of the drain. The
//!   generator never reconnects on its own: a closed connection is a
//!   finding of the run, not something to paper over.
//! - Streams have no datagram drops: [`SocketReport::drops`] is `None`.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Duration;

use takt_sip::ua::Transmit;
use takt_sip::wire::stream::{Frame, Framer};

use super::io::{Received, SideIo};
use super::report::SocketReport;
use super::socket::{Poller, SLOT};

/// Bytes read per `read` call; a message longer than this cannot be
/// framed (the UA's messages are under 1 KiB).
const READ_BUF: usize = 64 << 10;

/// Bytes a connection may hold for a peer that does not read.
pub const MAX_BACKLOG: usize = 4 << 20;

/// The poller key of the listener; connection `slot` is `slot + 1`.
const LISTENER: usize = 0;

/// How long the listener is unwatched after `accept` failed for want of
/// resources (descriptors, memory): it stays readable meanwhile, and a
/// level-triggered wait would return at once — a busy loop, which a
/// real-time generator must never run.
const ACCEPT_PAUSE: Duration = Duration::from_millis(10);

/// Bits of a port that name the slot; the ones above, its generation.
const SLOT_BITS: u32 = 24;
/// Generations wrap within 24 bits, so a port fits 48 bits.
const GEN_MASK: u32 = (1 << 24) - 1;

/// One open connection.
#[derive(Debug)]
struct Conn {
    stream: TcpStream,
    peer: SocketAddr,
    /// Bytes read and not yet framed: `rbuf[..filled]`.
    rbuf: Box<[u8]>,
    filled: usize,
    /// Bytes staged and not yet written: `out[written..]`.
    out: Vec<u8>,
    written: usize,
}

/// A slot of the connection table.
#[derive(Debug)]
struct Slot {
    /// Bumped when the slot is taken.
    gen: u32,
    conn: Option<Conn>,
}

/// TCP connections of one generator thread (see the module docs).
#[derive(Debug)]
pub(crate) struct TcpIo {
    listener: Option<TcpListener>,
    slots: Vec<Slot>,
    free: Vec<usize>,
    poller: Poller,
    framer: Framer,
    /// Slots with bytes staged or waiting.
    dirty: Vec<usize>,
    /// The listener is unwatched until then ([`ACCEPT_PAUSE`]).
    paused: Option<std::time::Instant>,
    counts: SocketReport,
}

/// Connects to `proxy` `n` times (each waits up to `timeout`), with
/// Nagle off: the UAC's connections.
pub(crate) fn connect(
    proxy: SocketAddr,
    n: usize,
    timeout: Duration,
) -> io::Result<Vec<TcpStream>> {
    (0..n)
        .map(|_| {
            let s = TcpStream::connect_timeout(&proxy, timeout)?;
            s.set_nodelay(true)?;
            s.set_nonblocking(true)?;
            Ok(s)
        })
        .collect()
}

/// A non-blocking listener on `addr`: the UAS's.
pub(crate) fn listen(addr: SocketAddr) -> io::Result<TcpListener> {
    let l = TcpListener::bind(addr)?;
    l.set_nonblocking(true)?;
    Ok(l)
}

impl TcpIo {
    /// The UAC's side: its open connections, connection `i` being port `i`.
    pub(crate) fn client(streams: Vec<TcpStream>) -> io::Result<TcpIo> {
        let mut io = TcpIo::empty(None)?;
        for s in streams {
            io.adopt(s)?;
        }
        Ok(io)
    }

    /// The UAS's side: connections accepted on `listener`.
    pub(crate) fn server(listener: TcpListener) -> io::Result<TcpIo> {
        let io = TcpIo::empty(Some(listener))?;
        if let Some(l) = &io.listener {
            io.poller.add(l.as_raw_fd(), LISTENER)?;
        }
        Ok(io)
    }

    fn empty(listener: Option<TcpListener>) -> io::Result<TcpIo> {
        Ok(TcpIo {
            listener,
            slots: Vec::new(),
            free: Vec::new(),
            poller: Poller::new::<TcpStream>(&[])?,
            framer: Framer::new(READ_BUF),
            dirty: Vec::new(),
            paused: None,
            counts: SocketReport {
                drops: None,
                ..SocketReport::default()
            },
        })
    }

    /// Takes `stream` into a free slot and watches it.
    fn adopt(&mut self, stream: TcpStream) -> io::Result<()> {
        let peer = stream.peer_addr()?;
        // a new slot starts at generation 0 (so the UAC's connection `i`
        // is port `i`); a reused one moves on
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s].gen = self.slots[s].gen.wrapping_add(1) & GEN_MASK;
                s
            }
            None => {
                self.slots.push(Slot { gen: 0, conn: None });
                self.slots.len() - 1
            }
        };
        self.poller.add(stream.as_raw_fd(), slot + 1)?;
        let s = &mut self.slots[slot];
        s.conn = Some(Conn {
            stream,
            peer,
            rbuf: vec![0; READ_BUF].into_boxed_slice(),
            filled: 0,
            out: Vec::new(),
            written: 0,
        });
        self.counts.connections += 1;
        Ok(())
    }

    /// The port of the connection in `slot` (its generation included).
    fn port(&self, slot: usize) -> usize {
        ((self.slots[slot].gen as usize) << SLOT_BITS) | slot
    }

    /// The connection a port names, if it is still the one.
    fn slot_of(&self, port: usize) -> Option<usize> {
        let slot = port & ((1 << SLOT_BITS) - 1);
        let s = self.slots.get(slot)?;
        (s.conn.is_some() && self.port(slot) == port).then_some(slot)
    }

    /// Closes the connection in `slot` (the peer closed, it failed, or its
    /// stream could not be framed) and counts it.
    fn close(&mut self, slot: usize) {
        if let Some(c) = self.slots[slot].conn.take() {
            self.poller.remove(c.stream.as_raw_fd());
            self.counts.closed += 1;
            self.free.push(slot);
        }
    }

    /// Accepts every pending connection.
    fn accept(&mut self) {
        loop {
            let Some(l) = &self.listener else { return };
            match l.accept() {
                Ok((s, _)) => {
                    let ok = s.set_nodelay(true).and_then(|()| s.set_nonblocking(true));
                    if ok.and_then(|()| self.adopt(s)).is_err() {
                        self.counts.recv_errors += 1;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.counts.recv_errors += 1;
                    // out of descriptors or memory: the connection stays
                    // queued, so stop watching the listener for a while
                    let starved = [libc::EMFILE, libc::ENFILE, libc::ENOBUFS, libc::ENOMEM]
                        .contains(&e.raw_os_error().unwrap_or(0));
                    if starved && self.paused.is_none() {
                        if let Some(l) = &self.listener {
                            self.poller.remove(l.as_raw_fd());
                            self.paused = Some(std::time::Instant::now() + ACCEPT_PAUSE);
                        }
                    }
                    return;
                }
            }
        }
    }

    /// Writes what `slot` has waiting; closes it on an error.
    fn write_out(&mut self, slot: usize) {
        let Some(c) = self.slots[slot].conn.as_mut() else {
            return;
        };
        while c.written < c.out.len() {
            match c.stream.write(&c.out[c.written..]) {
                Ok(0) => break,
                Ok(n) => c.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.counts.send_errors += 1;
                    self.close(slot);
                    return;
                }
            }
        }
        if c.written == c.out.len() {
            c.out.clear();
            c.written = 0;
        }
    }
}

impl SideIo for TcpIo {
    fn poller(&mut self) -> &mut Poller {
        &mut self.poller
    }

    fn ready(&mut self, out: &mut Vec<usize>) {
        if self.paused.is_some_and(|t| std::time::Instant::now() >= t) {
            self.paused = None;
            if let Some(l) = &self.listener {
                if self.poller.add(l.as_raw_fd(), LISTENER).is_err() {
                    self.counts.recv_errors += 1;
                }
            }
        }
        self.poller.ready(out);
    }

    fn wait(&mut self, timeout: Duration) {
        // a paused listener is watched again at the end of its pause
        let timeout = match self.paused {
            Some(t) => timeout.min(t.saturating_duration_since(std::time::Instant::now())),
            None => timeout,
        };
        self.poller.wait(timeout);
    }

    fn recv<F: FnMut(&[u8], SocketAddr, usize)>(&mut self, key: usize, mut handle: F) -> Received {
        if key == LISTENER {
            self.accept();
            return Received::NONE;
        }
        let slot = key - 1;
        let port = self.port(slot);
        let Some(c) = self.slots.get_mut(slot).and_then(|s| s.conn.as_mut()) else {
            return Received::NONE;
        };
        let room = c.rbuf.len() - c.filled;
        let n = match c.stream.read(&mut c.rbuf[c.filled..]) {
            Ok(0) => {
                self.close(slot); // the peer closed
                return Received::NONE;
            }
            Ok(n) => n,
            Err(e)
                if e.kind() == io::ErrorKind::WouldBlock
                    || e.kind() == io::ErrorKind::Interrupted =>
            {
                return Received::NONE
            }
            Err(_) => {
                self.counts.recv_errors += 1;
                self.close(slot);
                return Received::NONE;
            }
        };
        c.filled += n;
        let mut at = 0;
        let mut messages = 0;
        let mut broken = false;
        while at < c.filled {
            match self.framer.frame(&c.rbuf[at..c.filled]) {
                Ok(Frame::Message { skip, len }) => {
                    let m = &c.rbuf[at + skip..at + skip + len];
                    if m.len() > SLOT {
                        self.counts.truncated += 1; // as UDP would
                    } else {
                        handle(m, c.peer, port);
                    }
                    messages += 1;
                    at += skip + len;
                }
                Ok(Frame::Incomplete) => break,
                Err(_) => {
                    broken = true;
                    break;
                }
            }
        }
        c.rbuf.copy_within(at..c.filled, 0);
        c.filled -= at;
        if broken {
            self.counts.unframed += 1;
            self.close(slot);
            return Received {
                messages,
                more: false,
            };
        }
        Received {
            messages,
            more: n == room,
        }
    }

    fn push(&mut self, t: &Transmit, start: usize, stage: &[u8]) {
        let Some(slot) = self.slot_of(t.port) else {
            self.counts.send_errors += 1; // its connection is gone
            return;
        };
        let Some(c) = self.slots[slot].conn.as_mut() else {
            return;
        };
        if c.out.len() - c.written + t.len > MAX_BACKLOG {
            self.counts.send_full += 1;
            return;
        }
        if c.out.len() == c.written {
            self.dirty.push(slot);
        }
        c.out.extend_from_slice(&stage[start..start + t.len]);
    }

    fn flush(&mut self, _stage: &[u8]) {
        let mut i = 0;
        while i < self.dirty.len() {
            let slot = self.dirty[i];
            self.write_out(slot);
            let waiting = self.slots[slot]
                .conn
                .as_ref()
                .is_some_and(|c| c.written < c.out.len());
            if waiting {
                i += 1;
            } else {
                self.dirty.swap_remove(i);
            }
        }
    }

    fn backlog(&self) -> bool {
        !self.dirty.is_empty()
    }

    fn report(&self) -> SocketReport {
        self.counts
    }
}
