//! The generator's UDP sockets: batched I/O (`recvmmsg`/`sendmmsg`), the
//! kernel's drop counter (`SO_RXQ_OVFL`), and one epoll instance over all
//! of a thread's sockets that the thread waits on with `ppoll` (nanosecond
//! timeout, unlike `epoll_wait`'s milliseconds).

use std::io;
use std::mem::zeroed;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};
use takt_sip::transport::{setsockopt_int, sockaddr_to, Batch};

/// Largest datagram received whole; longer ones are counted as truncated.
pub(crate) const SLOT: usize = 4096;

/// A non-blocking UDP socket bound to `addr`, counting its drops, with a
/// receive buffer of `rcvbuf` bytes if given (SO_RCVBUFFORCE when
/// permitted, else SO_RCVBUF, which `net.core.rmem_max` caps).
pub(crate) fn open(addr: SocketAddr, rcvbuf: Option<usize>) -> io::Result<UdpSocket> {
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    if let Some(n) = rcvbuf {
        let n = i32::try_from(n).unwrap_or(i32::MAX);
        if setsockopt_int(s.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, n).is_err() {
            s.set_recv_buffer_size(n as usize)?;
        }
    }
    s.bind(&addr.into())?;
    setsockopt_int(s.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RXQ_OVFL, 1)?;
    s.set_nonblocking(true)?;
    Ok(s.into())
}

/// Receive buffers for `recvmmsg` of up to `n` datagrams: takt-sip's
/// [`Batch`], never blocking, with the socket's drop count of the last
/// receive.
pub(crate) struct RecvBatch {
    batch: Batch,
    /// The largest drop count seen on the last receive.
    pub(crate) drops: Option<u32>,
}

impl std::fmt::Debug for RecvBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecvBatch")
            .field("n", &self.batch.capacity())
            .finish()
    }
}

impl RecvBatch {
    pub(crate) fn new(n: usize) -> RecvBatch {
        RecvBatch {
            batch: Batch::new(n, SLOT),
            drops: None,
        }
    }

    /// Capacity in datagrams.
    pub(crate) fn capacity(&self) -> usize {
        self.batch.capacity()
    }

    /// Datagram `i` of the last receive: bytes, source, truncated.
    pub(crate) fn get(&self, i: usize) -> (&[u8], SocketAddr, bool) {
        let m = self.batch.meta(i);
        (self.batch.datagram(i), m.src, m.truncated)
    }

    /// Takes what is queued on `sock`, up to the capacity, without
    /// blocking. `Ok(0)` when nothing is queued.
    pub(crate) fn recv(&mut self, sock: &UdpSocket) -> io::Result<usize> {
        self.drops = None;
        let n = match self.batch.recv(sock, libc::MSG_DONTWAIT) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(0),
            Err(e) => return Err(e),
        };
        self.drops = (0..n).filter_map(|i| self.batch.meta(i).drops).max();
        Ok(n)
    }
}

/// Datagrams queued for one socket, sent with `sendmmsg` from ranges of
/// a caller's buffer (no copy).
pub(crate) struct SendQueue {
    /// `(destination, start, len)` into the caller's buffer.
    msgs: Vec<(SocketAddr, usize, usize)>,
    names: Vec<libc::sockaddr_storage>,
    iovs: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
}

impl std::fmt::Debug for SendQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SendQueue")
            .field("queued", &self.msgs.len())
            .finish()
    }
}

// SAFETY: the pointers inside iovec/mmsghdr are rebuilt before each call
// and point into the struct's own vectors or the buffer passed to it.
unsafe impl Send for SendQueue {}

/// What a flush could not send.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SendFailures {
    /// The socket's send buffer was full (EAGAIN): the datagram is lost
    /// at the generator.
    pub(crate) full: u64,
    /// Any other error (e.g. ECONNREFUSED after an ICMP port unreachable).
    pub(crate) errors: u64,
}

impl SendQueue {
    pub(crate) fn new() -> SendQueue {
        SendQueue {
            msgs: Vec::with_capacity(64),
            names: Vec::new(),
            iovs: Vec::new(),
            hdrs: Vec::new(),
        }
    }

    /// Queues `data[start..start + len]` (of the buffer later passed to
    /// [`Self::flush`]) for `dst`.
    pub(crate) fn push(&mut self, dst: SocketAddr, start: usize, len: usize) {
        self.msgs.push((dst, start, len));
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.msgs.is_empty()
    }

    /// Sends everything queued on `sock` from `data` and empties the queue.
    ///
    /// # Panics
    /// If a queued range is outside `data`.
    pub(crate) fn flush(&mut self, sock: &UdpSocket, data: &[u8], fail: &mut SendFailures) {
        let mut done = 0;
        while done < self.msgs.len() {
            let k = (self.msgs.len() - done).min(1024);
            if self.names.len() < k {
                // SAFETY: all-zero is a valid sockaddr_storage.
                self.names.resize(k, unsafe { zeroed() });
            }
            self.iovs.clear();
            self.hdrs.clear();
            for (j, &(dst, start, len)) in self.msgs[done..done + k].iter().enumerate() {
                let nl = sockaddr_to(&dst, &mut self.names[j]);
                let bytes = &data[start..start + len];
                self.iovs.push(libc::iovec {
                    iov_base: bytes.as_ptr() as *mut libc::c_void,
                    iov_len: len,
                });
                // SAFETY: all-zero is a valid mmsghdr.
                let mut h: libc::mmsghdr = unsafe { zeroed() };
                h.msg_hdr.msg_name = (&mut self.names[j] as *mut libc::sockaddr_storage).cast();
                h.msg_hdr.msg_namelen = nl;
                self.hdrs.push(h);
            }
            for (h, iov) in self.hdrs.iter_mut().zip(self.iovs.iter_mut()) {
                h.msg_hdr.msg_iov = iov;
                h.msg_hdr.msg_iovlen = 1;
            }
            // SAFETY: hdrs describes k datagrams in `data` (only read by
            // the kernel) and their addresses, all alive for the call.
            let r =
                unsafe { libc::sendmmsg(sock.as_raw_fd(), self.hdrs.as_mut_ptr(), k as u32, 0) };
            if r <= 0 {
                // The first datagram failed: count it and go on past it.
                let e = io::Error::last_os_error();
                if r < 0 && e.kind() == io::ErrorKind::WouldBlock {
                    fail.full += 1;
                } else {
                    fail.errors += 1;
                }
                done += 1;
            } else {
                done += (r as usize).min(k);
            }
        }
        self.msgs.clear();
    }
}

/// An epoll instance over a thread's sockets, waited on with `ppoll`.
#[derive(Debug)]
pub(crate) struct Poller {
    ep: OwnedFd,
    events: Vec<libc::epoll_event>,
}

/// Events taken per `epoll_wait` at least.
const EVENTS_MIN: usize = 64;

impl Poller {
    /// Watches `socks` for input; event data is the socket's index.
    pub(crate) fn new<S: AsRawFd>(socks: &[S]) -> io::Result<Poller> {
        // SAFETY: plain system call.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a new descriptor we own.
        let ep = unsafe { OwnedFd::from_raw_fd(fd) };
        let p = Poller {
            ep,
            // SAFETY: all-zero is a valid epoll_event.
            events: vec![unsafe { zeroed() }; socks.len().max(EVENTS_MIN)],
        };
        for (i, s) in socks.iter().enumerate() {
            p.add(s.as_raw_fd(), i)?;
        }
        Ok(p)
    }

    /// Watches `fd` for input (level-triggered), reported as `key`.
    pub(crate) fn add(&self, fd: RawFd, key: usize) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: key as u64,
        };
        // SAFETY: ep and fd are valid descriptors; ev lives for the call.
        let r = unsafe { libc::epoll_ctl(self.ep.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Stops watching `fd` (before it is closed).
    pub(crate) fn remove(&self, fd: RawFd) {
        // SAFETY: ep is valid; a stale fd only makes the call fail, which
        // leaves nothing watched that matters (closing removes it too).
        unsafe {
            libc::epoll_ctl(
                self.ep.as_raw_fd(),
                libc::EPOLL_CTL_DEL,
                fd,
                std::ptr::null_mut(),
            )
        };
    }

    /// Waits up to `timeout` (none: return at once) for any socket to
    /// have input. Returns whether one has.
    pub(crate) fn wait(&self, timeout: Duration) -> bool {
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as _,
        };
        let mut p = libc::pollfd {
            fd: self.ep.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: p and ts live for the call; a null sigmask keeps the mask.
        let r = unsafe { libc::ppoll(&mut p, 1, &ts, std::ptr::null()) };
        r > 0
    }

    /// The indices of the sockets with input now (no waiting).
    pub(crate) fn ready(&mut self, out: &mut Vec<usize>) {
        out.clear();
        // SAFETY: events has room for events.len() entries.
        let n = unsafe {
            libc::epoll_wait(
                self.ep.as_raw_fd(),
                self.events.as_mut_ptr(),
                self.events.len() as i32,
                0,
            )
        };
        for e in &self.events[..n.max(0) as usize] {
            out.push(e.u64 as usize);
        }
    }
}
