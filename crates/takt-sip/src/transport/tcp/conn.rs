//! One TCP connection as every thread sees it: its socket, its peer, and
//! its send side.
//!
//! The connection's *owner* (one event-loop thread) reads it and closes
//! it; any thread may send on it ([`Conn::send`]). A send writes straight
//! into the socket (non-blocking); what the kernel does not take is kept
//! in the connection's pending buffer, and the owner writes it out when
//! the socket reports writable. The pending buffer is bounded: a message
//! that would overflow it is refused (counted), so a peer that does not
//! read cannot make the proxy hold unbounded memory or block a thread.
//!
//! ## Send protocol
//! 1. A sender locks the send side. If the connection is closed, it fails.
//! 2. With nothing pending it writes until the kernel takes everything or
//!    answers `EAGAIN`; the remainder becomes the pending buffer.
//! 3. With something pending, or while an outbound connect is in
//!    progress, it only appends (bytes must stay in order).
//! 4. The owner, on every writable event, locks the send side and writes
//!    the pending buffer out.
//!
//! Why no pending byte is stranded: the socket is registered
//! edge-triggered for writability, so an event follows every moment the
//! kernel frees send space after a write met `EAGAIN`. That write happened
//! under the lock, and the owner takes the same lock before it looks at
//! the buffer, so it sees the remainder appended in step 2.
//!
//! An eviction (the `evict` module) closes a connection from another
//! thread: under the send lock it checks that nothing is pending and no
//! connect is in progress, marks the connection closed (every later send
//! fails at step 1) and shuts the socket down; the owner then reads the
//! end of the stream and drops it like any ended connection.

use std::io::{self, Write};
use std::net::{Shutdown, SocketAddr};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::proxy::{ConnId, SendError};
use crate::stats::{bump, TcpCounters};

/// Pending-buffer capacity kept across flushes; a larger one is freed
/// once empty, so idle connections hold no send memory.
const KEEP_PENDING_CAPACITY: usize = 4096;

#[derive(Debug, Default)]
struct SendSide {
    /// Bytes the kernel has not taken yet, in order.
    pending: Vec<u8>,
    /// An outbound connect is in progress: sends only queue (cleared
    /// once, by the owner, when the connect completes).
    connecting: bool,
    /// Set once by whoever closes the connection; never cleared.
    closed: bool,
}

/// A connection (see the module docs).
#[derive(Debug)]
pub(crate) struct Conn {
    pub(crate) id: ConnId,
    pub(crate) peer: SocketAddr,
    /// Whether this proxy opened it (outbound) or accepted it.
    pub(crate) outbound: bool,
    pub(crate) stream: mio::net::TcpStream,
    send: Mutex<SendSide>,
    /// Last traffic either way, ns of the transports' clock. Written by
    /// the owner (reads) and senders (writes), read by the owner's sweep
    /// and the evictor.
    last_active: AtomicU64,
    /// When the first byte of the incomplete inbound message arrived, ns;
    /// [`NO_MESSAGE`] while none is incomplete. Written by the owner only;
    /// read by its sweep and the evictor.
    msg_since: AtomicU64,
    /// Whether bytes wait to be sent or an outbound connect is in
    /// progress: a hint for the evictor's ranking, written under the send
    /// lock whenever that changes (the evictor decides under the lock).
    queued: AtomicBool,
    /// Set once, by whoever takes the connection out of the transport's
    /// table and limits (its owner's close, or an eviction).
    released: AtomicBool,
}

/// [`Conn::msg_since`]'s value while no inbound message is incomplete.
const NO_MESSAGE: u64 = u64::MAX;

impl Conn {
    pub(crate) fn new(
        id: ConnId,
        peer: SocketAddr,
        outbound: bool,
        stream: mio::net::TcpStream,
        connecting: bool,
        now: u64,
    ) -> Conn {
        Conn {
            id,
            peer,
            outbound,
            stream,
            send: Mutex::new(SendSide {
                connecting,
                ..SendSide::default()
            }),
            last_active: AtomicU64::new(now),
            msg_since: AtomicU64::new(NO_MESSAGE),
            queued: AtomicBool::new(connecting),
            released: AtomicBool::new(false),
        }
    }

    fn side(&self) -> std::sync::MutexGuard<'_, SendSide> {
        self.send.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Notes traffic at `now`.
    pub(crate) fn touch(&self, now: u64) {
        // Relaxed: a timestamp compared against a lifetime of seconds; a
        // stale read only delays the idle close by one sweep.
        self.last_active.fetch_max(now, Ordering::Relaxed);
    }

    /// Last traffic, ns.
    pub(crate) fn last_active(&self) -> u64 {
        // Relaxed: see `touch`.
        self.last_active.load(Ordering::Relaxed)
    }

    /// When the first byte of the incomplete inbound message arrived (ns),
    /// if one is incomplete.
    pub(crate) fn msg_since(&self) -> Option<u64> {
        // Relaxed: written by the owner only; other readers (the evictor)
        // take it as a ranking hint and re-check it before they act.
        let v = self.msg_since.load(Ordering::Relaxed);
        (v != NO_MESSAGE).then_some(v)
    }

    /// Notes the start (`Some(now)`) or the end (`None`) of an incomplete
    /// inbound message (the owner only).
    pub(crate) fn set_msg_since(&self, since: Option<u64>) {
        // Relaxed: see `msg_since`.
        self.msg_since
            .store(since.unwrap_or(NO_MESSAGE), Ordering::Relaxed);
    }

    /// Whether bytes wait to be sent or a connect is in progress (a hint;
    /// see [`Conn::evict`] for the decision).
    pub(crate) fn queued(&self) -> bool {
        // Relaxed: a hint, re-checked under the send lock.
        self.queued.load(Ordering::Relaxed)
    }

    /// Marks the connection released from the transport's accounting;
    /// returns false if it already was (release happens once).
    pub(crate) fn mark_released(&self) -> bool {
        // AcqRel: the one thread that wins does the release; nothing else
        // is published through the flag.
        !self.released.swap(true, Ordering::AcqRel)
    }

    /// Whether the connection was released.
    pub(crate) fn is_released(&self) -> bool {
        // Acquire: pairs with the swap in `mark_released`.
        self.released.load(Ordering::Acquire)
    }

    /// Closes the connection for an eviction if nothing waits to be sent
    /// on it and no connect is in progress; returns whether it did. From
    /// then on every send fails; the socket is shut down with a zero
    /// linger, so the owner sees the end of the stream and its final
    /// close resets the connection (the peer learns at once, and the
    /// kernel keeps no orphaned socket in FIN-WAIT for it).
    pub(crate) fn evict(&self) -> bool {
        let mut s = self.side();
        if s.closed || s.connecting || !s.pending.is_empty() {
            return false;
        }
        s.closed = true;
        let linger = libc::linger {
            l_onoff: 1,
            l_linger: 0,
        };
        // SAFETY: `linger` is a valid `struct linger` for the duration of
        // the call and its size is passed; the fd is the stream's, open
        // while `self` lives.
        unsafe {
            libc::setsockopt(
                self.stream.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                (&linger as *const libc::linger).cast(),
                std::mem::size_of::<libc::linger>() as libc::socklen_t,
            );
        }
        let _ = self.stream.shutdown(Shutdown::Both);
        true
    }

    /// Sends `bytes` whole, or not at all (steps 1–3 of the protocol).
    /// `max_pending` bounds the bytes left waiting for the kernel.
    pub(crate) fn send(
        &self,
        bytes: &[u8],
        max_pending: usize,
        counters: &TcpCounters,
        now: u64,
    ) -> Result<(), SendError> {
        let mut s = self.side();
        if s.closed {
            return Err(SendError::Unreachable);
        }
        if s.connecting || !s.pending.is_empty() {
            if s.pending.len() + bytes.len() > max_pending {
                bump(&counters.send_overflows);
                return Err(SendError::Unreachable);
            }
            s.pending.extend_from_slice(bytes);
            self.set_queued(true);
            return Ok(());
        }
        let mut done = 0;
        while done < bytes.len() {
            match (&self.stream).write(&bytes[done..]) {
                Ok(0) => return Err(self.fail(&mut s)),
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Err(self.fail(&mut s)),
            }
        }
        self.touch(now);
        let rest = &bytes[done..];
        if rest.is_empty() {
            return Ok(());
        }
        if rest.len() > max_pending {
            bump(&counters.send_overflows);
            if done > 0 {
                // part of the message is on the wire: the stream cannot
                // be framed by the peer any more
                return Err(self.fail(&mut s));
            }
            return Err(SendError::Unreachable);
        }
        s.pending.extend_from_slice(rest);
        self.set_queued(true);
        Ok(())
    }

    /// Updates the [`Conn::queued`] hint (under the send lock).
    fn set_queued(&self, queued: bool) {
        // Relaxed: a hint (see `queued`); written under the send lock.
        self.queued.store(queued, Ordering::Relaxed);
    }

    /// How the outbound connect in progress ended: `None` while it is
    /// still in progress, `Some(Ok)` once connected (and for a connection
    /// that never was connecting), `Some(Err)` when it failed.
    pub(crate) fn connect_result(&self) -> Option<Result<(), SendError>> {
        let mut s = self.side();
        if !s.connecting {
            return Some(Ok(()));
        }
        let failed = |e: &io::Error| match e.raw_os_error() {
            Some(libc::ECONNREFUSED) => SendError::Refused,
            _ => SendError::Unreachable,
        };
        match self.stream.take_error() {
            Ok(Some(e)) | Err(e) => return Some(Err(failed(&e))),
            Ok(None) => {}
        }
        match self.stream.peer_addr() {
            Ok(_) => {
                s.connecting = false;
                self.set_queued(!s.pending.is_empty());
                Some(Ok(()))
            }
            Err(e) if e.kind() == io::ErrorKind::NotConnected => None,
            Err(e) => Some(Err(failed(&e))),
        }
    }

    /// Takes the bytes still waiting to be sent (a failed connect's
    /// messages, for the handler).
    pub(crate) fn take_pending(&self) -> Vec<u8> {
        let mut s = self.side();
        self.set_queued(s.connecting);
        std::mem::take(&mut s.pending)
    }

    /// Writes the pending buffer out (step 4). Returns false when the
    /// connection failed and must be closed.
    pub(crate) fn flush(&self) -> bool {
        let mut s = self.side();
        if s.closed {
            return false;
        }
        if s.connecting {
            return true;
        }
        let mut done = 0;
        let ok = loop {
            if done == s.pending.len() {
                break true;
            }
            match (&self.stream).write(&s.pending[done..]) {
                Ok(0) => break false,
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break false,
            }
        };
        s.pending.drain(..done);
        if s.pending.is_empty() {
            self.set_queued(false);
            if s.pending.capacity() > KEEP_PENDING_CAPACITY {
                s.pending = Vec::new();
            }
        }
        ok
    }

    /// Marks the connection failed after a send error: no more sends; the
    /// shutdown makes the owner see the end of the stream and close it.
    fn fail(&self, s: &mut SendSide) -> SendError {
        s.closed = true;
        let _ = self.stream.shutdown(Shutdown::Both);
        SendError::Unreachable
    }

    /// Marks the connection closed (the owner, before it drops it).
    pub(crate) fn close(&self) {
        let mut s = self.side();
        s.closed = true;
        s.pending = Vec::new();
        self.set_queued(false);
        let _ = self.stream.shutdown(Shutdown::Both);
    }
}
