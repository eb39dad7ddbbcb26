//! The generator's UDP sockets: batched I/O (`recvmmsg`/`sendmmsg`), the
//! kernel's drop counter (`SO_RXQ_OVFL`), and one epoll instance over all
//! of a thread's sockets that the thread waits on with `ppoll` (nanosecond
//! timeout, unlike `epoll_wait`'s milliseconds).

use std::io;
use std::mem::{size_of, zeroed};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};
use takt_sip::transport::{setsockopt_int, sockaddr_from, sockaddr_to};

/// Largest datagram received whole; longer ones are counted as truncated.
pub(crate) const SLOT: usize = 4096;

/// Room for the drop-counter control message.
const CMSG_SPACE: usize = 64;

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

/// The socket's cumulative drop count from a received message's control
/// data, if the kernel attached it (it does once the socket has dropped).
fn drops_of(msg: &libc::msghdr) -> Option<u32> {
    // SAFETY: the CMSG_* macros walk the control buffer described by `msg`,
    // which the kernel filled in and whose length it set in msg_controllen.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            let h = &*c;
            if h.cmsg_level == libc::SOL_SOCKET && h.cmsg_type == libc::SO_RXQ_OVFL {
                return Some(std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<u32>()));
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    None
}

/// Receive buffers for `recvmmsg` of up to `n` datagrams.
pub(crate) struct RecvBatch {
    n: usize,
    data: Vec<u8>,
    names: Vec<libc::sockaddr_storage>,
    iovs: Vec<libc::iovec>,
    cmsgs: Vec<[u8; CMSG_SPACE]>,
    hdrs: Vec<libc::mmsghdr>,
    /// `(len, source, truncated)` of each datagram of the last receive.
    got: Vec<(usize, SocketAddr, bool)>,
    /// The largest drop count seen on the last receive.
    pub(crate) drops: Option<u32>,
}

impl std::fmt::Debug for RecvBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecvBatch").field("n", &self.n).finish()
    }
}

impl RecvBatch {
    pub(crate) fn new(n: usize) -> RecvBatch {
        let n = n.max(1);
        RecvBatch {
            n,
            data: vec![0; n * SLOT],
            // SAFETY: all-zero is a valid sockaddr_storage.
            names: vec![unsafe { zeroed() }; n],
            iovs: Vec::with_capacity(n),
            cmsgs: vec![[0; CMSG_SPACE]; n],
            hdrs: Vec::with_capacity(n),
            got: Vec::with_capacity(n),
            drops: None,
        }
    }

    /// Capacity in datagrams.
    pub(crate) fn capacity(&self) -> usize {
        self.n
    }

    /// Datagram `i` of the last receive: bytes, source, truncated.
    pub(crate) fn get(&self, i: usize) -> (&[u8], SocketAddr, bool) {
        let (len, src, trunc) = self.got[i];
        (&self.data[i * SLOT..i * SLOT + len.min(SLOT)], src, trunc)
    }

    /// Takes what is queued on `sock`, up to the capacity, without
    /// blocking. `Ok(0)` when nothing is queued.
    pub(crate) fn recv(&mut self, sock: &UdpSocket) -> io::Result<usize> {
        self.iovs.clear();
        self.hdrs.clear();
        self.got.clear();
        self.drops = None;
        let base = self.data.as_mut_ptr();
        for i in 0..self.n {
            self.iovs.push(libc::iovec {
                // SAFETY: i * SLOT is inside `data` (n * SLOT bytes).
                iov_base: unsafe { base.add(i * SLOT) }.cast(),
                iov_len: SLOT,
            });
        }
        for i in 0..self.n {
            // SAFETY: all-zero is a valid mmsghdr; the pointers set below
            // point into self and are rebuilt before every call.
            let mut h: libc::mmsghdr = unsafe { zeroed() };
            h.msg_hdr.msg_name = (&mut self.names[i] as *mut libc::sockaddr_storage).cast();
            h.msg_hdr.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            h.msg_hdr.msg_iov = &mut self.iovs[i];
            h.msg_hdr.msg_iovlen = 1;
            h.msg_hdr.msg_control = self.cmsgs[i].as_mut_ptr().cast();
            h.msg_hdr.msg_controllen = CMSG_SPACE as _;
            self.hdrs.push(h);
        }
        // SAFETY: hdrs describes n valid receive buffers owned by self.
        let r = unsafe {
            libc::recvmmsg(
                sock.as_raw_fd(),
                self.hdrs.as_mut_ptr(),
                self.n as u32,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::WouldBlock {
                Ok(0)
            } else {
                Err(e)
            };
        }
        for i in 0..r as usize {
            let h = &self.hdrs[i];
            if let Some(d) = drops_of(&h.msg_hdr) {
                self.drops = Some(self.drops.map_or(d, |x| x.max(d)));
            }
            let src = sockaddr_from(&self.names[i])
                .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)));
            let trunc = h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
            self.got.push((h.msg_len as usize, src, trunc));
        }
        Ok(self.got.len())
    }
}

// SAFETY: the raw pointers inside iovec/mmsghdr only ever point into this
// struct's own vectors and are rebuilt before each system call.
unsafe impl Send for RecvBatch {}

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

impl Poller {
    /// Watches `socks` for input; event data is the socket's index.
    pub(crate) fn new(socks: &[UdpSocket]) -> io::Result<Poller> {
        // SAFETY: plain system call.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a new descriptor we own.
        let ep = unsafe { OwnedFd::from_raw_fd(fd) };
        for (i, s) in socks.iter().enumerate() {
            let mut ev = libc::epoll_event {
                events: libc::EPOLLIN as u32,
                u64: i as u64,
            };
            // SAFETY: ep and the socket are valid descriptors; ev lives for the call.
            let r = unsafe {
                libc::epoll_ctl(ep.as_raw_fd(), libc::EPOLL_CTL_ADD, s.as_raw_fd(), &mut ev)
            };
            if r < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(Poller {
            ep,
            // SAFETY: all-zero is a valid epoll_event.
            events: vec![unsafe { zeroed() }; socks.len().max(1)],
        })
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
