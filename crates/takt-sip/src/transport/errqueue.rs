//! ICMP errors for sent datagrams (RFC 3261 §18.4, §16.9), read from a
//! UDP socket's error queue.
//!
//! An unconnected UDP socket ignores ICMP errors unless `IP_RECVERR`
//! (`IPV6_RECVERR`) is on. With it on, Linux queues each error with a copy
//! of the start of the failed datagram (what the ICMP message quoted), the
//! address it was sent to and the error (`ECONNREFUSED` for port
//! unreachable, `EHOSTUNREACH`, ...), and reports it once as the socket's
//! pending error: the next receive or send call on the socket fails with
//! it. The transports therefore:
//!
//! 1. turn `IP_RECVERR` on for every UDP socket ([`enable`]);
//! 2. treat a receive call that fails with any error as "read the error
//!    queue" ([`drain`]: `recvmsg(MSG_ERRQUEUE)` until it is empty) and
//!    hand each entry to the [`Handler::bounced`], which matches it to a
//!    branch (for the proxy: [`crate::proxy::Proxy::bounced`]);
//! 3. retry a UDP send once when it fails with an error an ICMP message
//!    can leave pending (`ECONNREFUSED`, `EHOSTUNREACH`, `ENETUNREACH`,
//!    `EHOSTDOWN`): the failure was another datagram's, reported here
//!    and cleared by being reported; the retry is this datagram's own
//!    attempt. The sink notes it, and the worker reads the error queue
//!    after the message;
//! 4. the timer thread reads the error queue of its socket every tick,
//!    so an entry whose pending report a send consumed is read within a
//!    tick.
//!
//! Errors that say "too big" (`EMSGSIZE`, fragmentation needed) are
//! path-MTU news, not a lost next hop: they are counted, not acted on.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

use super::handler::Handler;
use super::udp::{setsockopt_int, sockaddr_from};
use crate::proxy::{SendError, Sink};

/// Bytes of a failed datagram kept: ICMP quotes at most ~1,200 bytes
/// (IPv6's minimum MTU); the branch is in the first few hundred.
pub(crate) const QUOTE: usize = 1536;

/// Turns on the error queue of a UDP socket bound to `local`.
pub(crate) fn enable(s: &UdpSocket, local: SocketAddr) -> io::Result<()> {
    let fd = s.as_raw_fd();
    if local.is_ipv6() {
        setsockopt_int(fd, libc::SOL_IPV6, libc::IPV6_RECVERR, 1)?;
        // v4-mapped peers of a dual-stack socket report through IPv4
        let _ = setsockopt_int(fd, libc::SOL_IP, libc::IP_RECVERR, 1);
        Ok(())
    } else {
        setsockopt_int(fd, libc::SOL_IP, libc::IP_RECVERR, 1)
    }
}

/// One error-queue entry.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounce {
    /// Bytes of the failed datagram copied into the buffer.
    pub(crate) len: usize,
    /// Where it was sent.
    pub(crate) to: SocketAddr,
    /// The error (`ee_errno`).
    pub(crate) errno: i32,
}

impl Bounce {
    /// What the error means for a branch, `None` for "not a lost next hop".
    pub(crate) fn send_error(&self) -> Option<SendError> {
        match self.errno {
            libc::ECONNREFUSED | libc::ENOPROTOOPT => Some(SendError::Refused),
            libc::EHOSTUNREACH | libc::ENETUNREACH | libc::EHOSTDOWN | libc::ENETDOWN => {
                Some(SendError::Unreachable)
            }
            _ => None,
        }
    }
}

/// Whether a UDP send error may be an earlier datagram's ICMP error
/// reported on this send (see the module docs, step 3).
pub(crate) fn maybe_pending(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ECONNREFUSED | libc::EHOSTUNREACH | libc::ENETUNREACH | libc::EHOSTDOWN)
    )
}

/// Reads one error-queue entry without blocking: the failed datagram's
/// start into `buf`. `Ok(None)`: the queue is empty.
pub(crate) fn recv(s: &UdpSocket, buf: &mut [u8]) -> io::Result<Option<Bounce>> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: all-zero is a valid sockaddr_storage.
    let mut name: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    // u64 alignment for the cmsg headers
    let mut cmsg = [0u64; 32];
    // SAFETY: all-zero is a valid msghdr; every pointer set below outlives the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = (&mut name as *mut libc::sockaddr_storage).cast();
    msg.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as _;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cmsg.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&cmsg) as _;
    // SAFETY: msg describes valid buffers for the kernel to fill; the fd
    // is the socket's, open for the duration of the call.
    let n = unsafe {
        libc::recvmsg(
            s.as_raw_fd(),
            &mut msg,
            libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT,
        )
    };
    if n < 0 {
        let e = io::Error::last_os_error();
        return match e.kind() {
            io::ErrorKind::WouldBlock => Ok(None),
            _ => Err(e),
        };
    }
    let mut errno = None;
    // SAFETY: `msg` was filled by the kernel; the CMSG macros walk its
    // control buffer within `msg_controllen`.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            let h = &*c;
            let recverr = (h.cmsg_level == libc::SOL_IP && h.cmsg_type == libc::IP_RECVERR)
                || (h.cmsg_level == libc::SOL_IPV6 && h.cmsg_type == libc::IPV6_RECVERR);
            if recverr {
                let ee = libc::CMSG_DATA(c)
                    .cast::<libc::sock_extended_err>()
                    .read_unaligned();
                errno = Some(ee.ee_errno as i32);
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    let (Some(errno), Some(to)) = (errno, sockaddr_from(&name)) else {
        // not an ICMP report (e.g. a timestamping entry): skip it
        return Ok(Some(Bounce {
            len: 0,
            to: SocketAddr::from(([0, 0, 0, 0], 0)),
            errno: 0,
        }));
    };
    Ok(Some(Bounce {
        len: (n as usize).min(buf.len()),
        to,
        errno,
    }))
}

/// Reads the error queue of `s` until it is empty and hands every entry
/// to `handler` (sends through `sink`). Returns (entries read, entries
/// the handler matched to a branch).
pub(crate) fn drain<H: Handler>(
    handler: &H,
    s: &UdpSocket,
    buf: &mut [u8],
    now: u64,
    sink: &mut dyn Sink,
) -> (u64, u64) {
    let (mut read, mut matched) = (0, 0);
    // bounded: a flood of errors must not keep a worker from its socket
    while read < 1024 {
        let Ok(Some(b)) = recv(s, buf) else { break };
        read += 1;
        if let Some(e) = b.send_error() {
            matched += u64::from(handler.bounced(&buf[..b.len], b.to, e, now, sink));
        }
    }
    (read, matched)
}
