//! UDP sockets with kernel receive timestamps (`SO_TIMESTAMPNS`) and drop
//! counters (`SO_RXQ_OVFL`), single (`recvmsg`) and batched
//! (`recvmmsg`/`sendmmsg`) I/O.

use std::io;
use std::mem::{size_of, zeroed};
use std::net::{SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};

/// Room for the control messages we ask for (timestamp + drop counter).
pub(crate) const CMSG_SPACE: usize = 128;

/// How long a blocked receive waits before the worker re-checks for shutdown.
pub(crate) const RECV_TIMEOUT: Duration = Duration::from_millis(100);

/// Sets an `int` socket option (`setsockopt(fd, level, name, &v)`).
pub fn setsockopt_int(fd: i32, level: i32, name: i32, v: i32) -> io::Result<()> {
    // SAFETY: `v` lives for the call and its size is passed; fd is a valid socket.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&v as *const i32).cast(),
            size_of::<i32>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Opens a UDP socket bound to `addr` with timestamps and drop counting on.
/// `rcvbuf` asks for a receive buffer size (SO_RCVBUFFORCE when permitted,
/// else SO_RCVBUF, which `rmem_max` caps). Returns the socket and the
/// buffer size the kernel reports.
pub(crate) fn open(
    addr: SocketAddr,
    reuseport: bool,
    rcvbuf: Option<usize>,
) -> io::Result<(UdpSocket, usize)> {
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    if reuseport {
        s.set_reuse_port(true)?;
    }
    if let Some(n) = rcvbuf {
        let n = i32::try_from(n).unwrap_or(i32::MAX);
        if setsockopt_int(s.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, n).is_err() {
            s.set_recv_buffer_size(n as usize)?;
        }
    }
    s.bind(&addr.into())?;
    setsockopt_int(s.as_raw_fd(), libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)?;
    setsockopt_int(s.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RXQ_OVFL, 1)?;
    s.set_read_timeout(Some(RECV_TIMEOUT))?;
    let eff = s.recv_buffer_size()?;
    let s: UdpSocket = s.into();
    super::errqueue::enable(&s, addr)?;
    Ok((s, eff))
}

/// The index, in bind order, of the split group's socket that receives
/// everything but new INVITEs ([`split_invites`]).
pub(crate) const DIALOG_SOCKET: u32 = 0;
/// The index, in bind order, of the split group's socket that receives
/// datagrams starting with `INVI` ([`split_invites`]).
pub(crate) const INVITE_SOCKET: u32 = 1;

/// The classic BPF program of [`split_invites`]: the first four bytes of
/// the UDP payload (a 32-bit absolute load, big-endian) equal to `INVI`
/// select [`INVITE_SOCKET`], anything else [`DIALOG_SOCKET`]. A payload
/// shorter than four bytes makes the load fail, which ends the program
/// with 0: the dialog socket.
static SPLIT_PROGRAM: [libc::sock_filter; 4] = [
    // A = payload[0..4]
    libc::sock_filter {
        code: (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16,
        jt: 0,
        jf: 0,
        k: 0,
    },
    // A == "INVI" ? next : skip one
    libc::sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
        jt: 0,
        jf: 1,
        k: u32::from_be_bytes(*b"INVI"),
    },
    libc::sock_filter {
        code: (libc::BPF_RET | libc::BPF_K) as u16,
        jt: 0,
        jf: 0,
        k: INVITE_SOCKET,
    },
    libc::sock_filter {
        code: (libc::BPF_RET | libc::BPF_K) as u16,
        jt: 0,
        jf: 0,
        k: DIALOG_SOCKET,
    },
];

/// Makes the kernel sort the datagrams of `sock`'s `SO_REUSEPORT` group
/// by their first bytes: requests whose method starts with `INVI` (new
/// INVITEs, and the rare re-INVITE) go to the group's socket
/// [`INVITE_SOCKET`], everything else (ACK, BYE, CANCEL, responses, other
/// requests) to [`DIALOG_SOCKET`] (`SO_ATTACH_REUSEPORT_CBPF`).
///
/// The kernel (`reuseport_select_sock` → `run_bpf_filter` in
/// net/core/sock_reuseport.c) runs the program on the datagram with the
/// UDP header pulled, so offset 0 is the payload, and uses its result as
/// an index into the group's sockets, which are in the order they were
/// bound (`reuseport_add_sock` appends; a socket that closes is replaced
/// by the last one, so the group must keep exactly its two sockets). A
/// result out of range falls back to the 4-tuple hash. The group must be
/// the dialog socket bound first and the INVITE socket second, and
/// nothing else.
pub(crate) fn split_invites(sock: &UdpSocket) -> io::Result<()> {
    // The kernel is handed all of the option's bytes, so the struct has
    // no padding: `libc::sock_fprog` with the gap after `len` spelled out
    // as a zeroed field (a padding byte stays undefined whatever the
    // initialisation, which memcheck reports at the system call).
    #[repr(C)]
    struct Fprog {
        len: u16,
        gap: [u8; GAP],
        filter: *const libc::sock_filter,
    }
    const GAP: usize = std::mem::align_of::<*const libc::sock_filter>() - 2;
    const _: () = assert!(size_of::<Fprog>() == size_of::<libc::sock_fprog>());
    let prog = Fprog {
        len: SPLIT_PROGRAM.len() as u16,
        gap: [0; GAP],
        filter: SPLIT_PROGRAM.as_ptr(),
    };
    // SAFETY: `prog` has sock_fprog's layout (`len` at 0, `filter` at the
    // pointer's alignment, the same size: asserted above) and points at
    // SPLIT_PROGRAM's four instructions, a static that outlives the call;
    // the kernel copies the program and only reads through the pointer.
    // fd is a valid socket.
    let r = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ATTACH_REUSEPORT_CBPF,
            (&prog as *const Fprog).cast(),
            size_of::<Fprog>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether `a` or `b` (when given) has a datagram queued (or an error to
/// report), without waiting: one `poll` with a zero timeout.
pub(crate) fn poll_readable(a: &UdpSocket, b: Option<&UdpSocket>) -> bool {
    let mut fds = [Some(a), b].map(|s| libc::pollfd {
        // a negative descriptor is skipped
        fd: s.map_or(-1, |s| s.as_raw_fd()),
        events: libc::POLLIN,
        revents: 0,
    });
    // SAFETY: `fds` is a valid array of two pollfd for the call.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, 0) };
    n > 0
}

/// CLOCK_REALTIME in nanoseconds (the clock of SO_TIMESTAMPNS).
pub(crate) fn realtime_ns() -> u64 {
    let mut ts: libc::timespec = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer for the call.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// What came with a datagram.
#[derive(Debug, Clone, Copy)]
pub struct RxMeta {
    /// Its length, bytes (as sent: more than the slot when truncated).
    pub len: usize,
    /// Its source.
    pub src: SocketAddr,
    /// Kernel receive time, CLOCK_REALTIME ns (`SO_TIMESTAMPNS` on).
    pub t_arr_ns: Option<u64>,
    /// The socket's cumulative drop count (`SO_RXQ_OVFL` on, once the
    /// socket has dropped).
    pub drops: Option<u32>,
    /// The datagram did not fit the buffer.
    pub truncated: bool,
}

/// The address in `ss` (as a receive call filled it in); `None` for a
/// family other than IPv4 and IPv6.
pub fn sockaddr_from(ss: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match i32::from(ss.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let a: &libc::sockaddr_in = unsafe { &*(ss as *const libc::sockaddr_storage).cast() };
            Some(SocketAddr::V4(SocketAddrV4::new(
                u32::from_be(a.sin_addr.s_addr).into(),
                u16::from_be(a.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let a: &libc::sockaddr_in6 = unsafe { &*(ss as *const libc::sockaddr_storage).cast() };
            Some(SocketAddr::V6(SocketAddrV6::new(
                a.sin6_addr.s6_addr.into(),
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// Writes `addr` into `ss`; returns the length to pass to the kernel.
pub fn sockaddr_to(addr: &SocketAddr, ss: &mut libc::sockaddr_storage) -> libc::socklen_t {
    let s2: socket2::SockAddr = (*addr).into();
    let len = s2.len();
    // SAFETY: SockAddr holds `len` valid bytes of a sockaddr, and
    // sockaddr_storage is large enough for any of them.
    unsafe {
        std::ptr::copy_nonoverlapping(
            s2.as_ptr().cast::<u8>(),
            (ss as *mut libc::sockaddr_storage).cast::<u8>(),
            len as usize,
        );
    }
    len
}

/// Reads the control messages of `msg`.
pub(crate) fn parse_cmsgs(msg: &libc::msghdr) -> (Option<u64>, Option<u32>) {
    let mut ts = None;
    let mut drops = None;
    // SAFETY: the CMSG_* macros walk the control buffer described by `msg`,
    // which the kernel filled in and whose length it set in msg_controllen.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            let h = &*c;
            if h.cmsg_level == libc::SOL_SOCKET && h.cmsg_type == libc::SCM_TIMESTAMPNS {
                let t: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                ts = Some(t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64);
            } else if h.cmsg_level == libc::SOL_SOCKET && h.cmsg_type == libc::SO_RXQ_OVFL {
                drops = Some(std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<u32>()));
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    (ts, drops)
}

/// Receives one datagram: blocking up to [`RECV_TIMEOUT`], or returning
/// `WouldBlock` at once when `flags` has `MSG_DONTWAIT`.
pub(crate) fn recv_one(
    sock: &UdpSocket,
    buf: &mut [u8],
    cmsg: &mut [u8; CMSG_SPACE],
    flags: libc::c_int,
) -> io::Result<RxMeta> {
    // SAFETY: all-zero is a valid sockaddr_storage and msghdr.
    let mut ss: libc::sockaddr_storage = unsafe { zeroed() };
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: all-zero is a valid msghdr; every pointer set below outlives the call.
    let mut msg: libc::msghdr = unsafe { zeroed() };
    msg.msg_name = (&mut ss as *mut libc::sockaddr_storage).cast();
    msg.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cmsg.as_mut_ptr().cast();
    msg.msg_controllen = CMSG_SPACE as _;
    // SAFETY: msg describes valid buffers for the kernel to fill.
    let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, flags) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let (t_arr_ns, drops) = parse_cmsgs(&msg);
    Ok(RxMeta {
        len: n as usize,
        src: sockaddr_from(&ss).ok_or_else(|| io::Error::other("unknown address family"))?,
        t_arr_ns,
        drops,
        truncated: msg.msg_flags & libc::MSG_TRUNC != 0,
    })
}

/// Buffers for `recvmmsg`/`sendmmsg` of up to `n` datagrams of `slot`
/// bytes, reused from call to call (no allocation per message): the
/// batched workers' receive and send path, and the laboratory's load
/// generator's.
pub struct Batch {
    pub(crate) n: usize,
    slot: usize,
    data: Vec<u8>,
    /// The slot of each entry of `meta` (a datagram from an address family
    /// other than IPv4/IPv6 is skipped, so entries and slots can differ).
    slots: Vec<usize>,
    names: Vec<libc::sockaddr_storage>,
    iovs: Vec<libc::iovec>,
    cmsgs: Vec<[u8; CMSG_SPACE]>,
    hdrs: Vec<libc::mmsghdr>,
    /// Receive results.
    pub(crate) meta: Vec<RxMeta>,
    // send side: datagrams copied into `out_data` (`in_scratch` false) or
    // ranges of the caller's buffer passed to `flush` (true)
    out_data: Vec<u8>,
    out: Vec<(SocketAddr, bool, usize, usize)>,
    /// `iovs` and `hdrs` describe the receive slots (`build_rx`); a
    /// `flush` reuses them for its sends and clears this.
    rx_ready: bool,
}

impl std::fmt::Debug for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batch")
            .field("n", &self.n)
            .field("slot", &self.slot)
            .finish()
    }
}

// SAFETY: the raw pointers inside iovec/mmsghdr only ever point into the
// heap buffers of this struct's own vectors (which stay put when the struct
// moves to another thread), and are rebuilt whenever those could have moved
// (`rx_ready`) or, for sends, before each system call.
unsafe impl Send for Batch {}

impl Batch {
    /// Room for `n` datagrams (at least 1) of `slot` bytes each; a longer
    /// datagram is received truncated and marked so.
    pub fn new(n: usize, slot: usize) -> Batch {
        let n = n.max(1);
        Batch {
            n,
            slot,
            data: vec![0; n * slot],
            slots: Vec::with_capacity(n),
            // SAFETY: all-zero is a valid sockaddr_storage / mmsghdr.
            names: vec![unsafe { zeroed() }; n],
            iovs: Vec::with_capacity(n),
            cmsgs: vec![[0; CMSG_SPACE]; n],
            hdrs: Vec::with_capacity(n),
            meta: Vec::with_capacity(n),
            out_data: Vec::with_capacity(n * 1024),
            out: Vec::with_capacity(n * 2),
            rx_ready: false,
        }
    }

    /// Capacity in datagrams.
    pub fn capacity(&self) -> usize {
        self.n
    }

    /// The bytes of received datagram `i` (`i` < what the last
    /// [`Batch::recv`] returned; at most `slot` bytes).
    pub fn datagram(&self, i: usize) -> &[u8] {
        let (m, at) = (&self.meta[i], self.slots[i] * self.slot);
        &self.data[at..at + m.len.min(self.slot)]
    }

    /// What came with received datagram `i`.
    pub fn meta(&self, i: usize) -> &RxMeta {
        &self.meta[i]
    }

    /// Receives up to `n` datagrams: blocks for the first (up to the
    /// socket's read timeout; not at all when `flags` has `MSG_DONTWAIT`,
    /// which returns `WouldBlock` when nothing is queued), then takes what
    /// is queued (MSG_WAITFORONE). Returns how many were received.
    pub fn recv(&mut self, sock: &UdpSocket, flags: libc::c_int) -> io::Result<usize> {
        self.recv_up_to(sock, self.n, flags)
    }

    /// [`Batch::recv`] of at most `max` datagrams (at least one, at most
    /// the capacity). With `MSG_DONTWAIT`, fewer than `max` means the
    /// socket's queue was found empty (or an error came up behind the
    /// datagrams received, which the next call reports).
    pub(crate) fn recv_up_to(
        &mut self,
        sock: &UdpSocket,
        max: usize,
        flags: libc::c_int,
    ) -> io::Result<usize> {
        let max = max.clamp(1, self.n);
        self.meta.clear();
        self.slots.clear();
        if !self.rx_ready {
            self.build_rx();
        }
        for h in &mut self.hdrs[..max] {
            // what the kernel wrote back last time
            h.msg_hdr.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            h.msg_hdr.msg_controllen = CMSG_SPACE as _;
            h.msg_hdr.msg_flags = 0;
        }
        // SAFETY: the first `max` entries of hdrs describe valid receive
        // buffers owned by self (`build_rx`; `flush` clears `rx_ready`
        // when it reuses the vectors).
        let r = unsafe {
            libc::recvmmsg(
                sock.as_raw_fd(),
                self.hdrs.as_mut_ptr(),
                max as u32,
                libc::MSG_WAITFORONE | flags,
                std::ptr::null_mut(),
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        for i in 0..r as usize {
            let h = &self.hdrs[i];
            let (t_arr_ns, drops) = parse_cmsgs(&h.msg_hdr);
            let Some(src) = sockaddr_from(&self.names[i]) else {
                continue;
            };
            self.slots.push(i);
            self.meta.push(RxMeta {
                len: h.msg_len as usize,
                src,
                t_arr_ns,
                drops,
                truncated: h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0,
            });
        }
        Ok(self.meta.len())
    }

    /// Points the `n` receive headers at their slots, names and control
    /// buffers: once, not per call (the vectors' heap buffers do not move
    /// when the `Batch` does, and no push reallocates them: they were
    /// made with room for `n`).
    fn build_rx(&mut self) {
        self.iovs.clear();
        self.hdrs.clear();
        let base = self.data.as_mut_ptr();
        for i in 0..self.n {
            self.iovs.push(libc::iovec {
                // SAFETY: i * slot is inside `data` (n * slot bytes).
                iov_base: unsafe { base.add(i * self.slot) }.cast(),
                iov_len: self.slot,
            });
        }
        for i in 0..self.n {
            // SAFETY: all-zero is a valid mmsghdr; pointers set below point into self.
            let mut h: libc::mmsghdr = unsafe { zeroed() };
            h.msg_hdr.msg_name = (&mut self.names[i] as *mut libc::sockaddr_storage).cast();
            h.msg_hdr.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            h.msg_hdr.msg_iov = &mut self.iovs[i];
            h.msg_hdr.msg_iovlen = 1;
            h.msg_hdr.msg_control = self.cmsgs[i].as_mut_ptr().cast();
            h.msg_hdr.msg_controllen = CMSG_SPACE as _;
            self.hdrs.push(h);
        }
        self.rx_ready = true;
    }

    /// Queues a datagram for [`Batch::flush`].
    pub(crate) fn queue(&mut self, to: SocketAddr, bytes: &[u8]) {
        let s = self.out_data.len();
        self.out_data.extend_from_slice(bytes);
        self.out.push((to, false, s, self.out_data.len()));
    }

    /// Queues `scratch[range]` for [`Batch::flush`], without a copy: the
    /// caller passes the same `scratch`, unchanged in that range, to
    /// `flush`.
    pub(crate) fn queue_range(&mut self, to: SocketAddr, range: std::ops::Range<usize>) {
        self.out.push((to, true, range.start, range.end));
    }

    /// Datagrams queued.
    pub(crate) fn queued(&self) -> usize {
        self.out.len()
    }

    /// Sends everything queued with `sendmmsg` (several calls if the kernel
    /// takes fewer); returns datagrams the kernel refused, and whether a
    /// call failed with an earlier datagram's ICMP error (retried once; the
    /// socket's error queue then has entries, see `errqueue`).
    pub(crate) fn flush(&mut self, sock: &UdpSocket, scratch: &[u8]) -> (usize, bool) {
        let mut failed = 0;
        let mut done = 0;
        let mut pending = false;
        let mut retried = false;
        self.rx_ready = false;
        while done < self.out.len() {
            let k = (self.out.len() - done).min(self.n.max(64));
            if self.names.len() < k {
                // SAFETY: all-zero is a valid sockaddr_storage. Grows once:
                // a send batch reuses its address buffers from then on.
                self.names.resize(k, unsafe { zeroed() });
            }
            self.iovs.clear();
            self.hdrs.clear();
            for (j, ss) in self.names[..k].iter_mut().enumerate() {
                let (to, in_scratch, s, e) = self.out[done + j];
                let bytes = if in_scratch {
                    &scratch[s..e]
                } else {
                    &self.out_data[s..e]
                };
                self.iovs.push(libc::iovec {
                    // sendmmsg only reads through it
                    iov_base: bytes.as_ptr().cast_mut().cast(),
                    iov_len: bytes.len(),
                });
                let len = sockaddr_to(&to, ss);
                // SAFETY: all-zero is a valid mmsghdr.
                let mut h: libc::mmsghdr = unsafe { zeroed() };
                h.msg_hdr.msg_name = (ss as *mut libc::sockaddr_storage).cast();
                h.msg_hdr.msg_namelen = len;
                h.msg_hdr.msg_iovlen = 1;
                self.hdrs.push(h);
            }
            for (h, iov) in self.hdrs.iter_mut().zip(self.iovs.iter_mut()) {
                h.msg_hdr.msg_iov = iov;
            }
            // SAFETY: hdrs describes k datagrams in out_data or `scratch`
            // (both borrowed for this call) with valid addresses.
            let r =
                unsafe { libc::sendmmsg(sock.as_raw_fd(), self.hdrs.as_mut_ptr(), k as u32, 0) };
            if r <= 0 {
                if r < 0 && !retried && super::errqueue::maybe_pending(&io::Error::last_os_error())
                {
                    // reported for another datagram: this one was not sent
                    pending = true;
                    retried = true;
                    continue;
                }
                // skip the datagram the kernel refuses and go on
                failed += 1;
                done += 1;
            } else {
                done += r as usize;
            }
            retried = false;
        }
        self.out.clear();
        self.out_data.clear();
        (failed, pending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel sorts by the first four bytes: INVITEs to the socket
    /// bound second, everything else (other requests, responses, a
    /// datagram too short to load) to the one bound first.
    #[test]
    fn split_group_sends_invites_to_their_socket() {
        let (dialog, _) = open("127.0.0.1:0".parse().unwrap(), true, None).unwrap();
        let at = dialog.local_addr().unwrap();
        let (invites, _) = open(at, true, None).unwrap();
        split_invites(&dialog).unwrap();
        // several source ports: without the program the hash would spread them
        let senders: Vec<UdpSocket> = (0..8)
            .map(|_| UdpSocket::bind("127.0.0.1:0").unwrap())
            .collect();
        let cases: [(&[u8], bool); 7] = [
            (b"INVITE sip:b@x SIP/2.0\r\n\r\n", true),
            (b"ACK sip:b@x SIP/2.0\r\n\r\n", false),
            (b"BYE sip:b@x SIP/2.0\r\n\r\n", false),
            (b"CANCEL sip:b@x SIP/2.0\r\n\r\n", false),
            (b"SIP/2.0 200 OK\r\n\r\n", false),
            (b"INV", false),
            (b"\r\n\r\n", false),
        ];
        let mut buf = [0u8; 128];
        let mut c = [0u8; CMSG_SPACE];
        for tx in &senders {
            for (bytes, invite) in cases {
                tx.send_to(bytes, at).unwrap();
                let (want, other) = if invite {
                    (&invites, &dialog)
                } else {
                    (&dialog, &invites)
                };
                let m = recv_one(want, &mut buf, &mut c, 0).unwrap();
                assert_eq!(&buf[..m.len], bytes);
                let e = recv_one(other, &mut buf, &mut c, libc::MSG_DONTWAIT).unwrap_err();
                assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
            }
        }
        assert!(!poll_readable(&dialog, Some(&invites)));
        tx_then_poll(&senders[0], at, &dialog, &invites);
    }

    fn tx_then_poll(tx: &UdpSocket, at: SocketAddr, a: &UdpSocket, b: &UdpSocket) {
        tx.send_to(b"INVITE", at).unwrap();
        // loopback delivery is synchronous with the send
        assert!(poll_readable(a, Some(b)));
    }

    #[test]
    fn timestamps_and_batches_over_loopback() {
        let (rx, eff) = open("127.0.0.1:0".parse().unwrap(), false, Some(1 << 20)).unwrap();
        assert!(eff > 0);
        let to = rx.local_addr().unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.send_to(b"hello", to).unwrap();
        let mut buf = [0u8; 64];
        let mut c = [0u8; CMSG_SPACE];
        let m = recv_one(&rx, &mut buf, &mut c, 0).unwrap();
        assert_eq!(&buf[..m.len], b"hello");
        assert_eq!(m.src, tx.local_addr().unwrap());
        let t = m.t_arr_ns.expect("kernel timestamp");
        assert!(realtime_ns() >= t);
        // the kernel only attaches SO_RXQ_OVFL once the socket has dropped something
        assert!(matches!(m.drops, None | Some(0)));
        // batched: send 5 with sendmmsg, receive them with recvmmsg
        let mut b = Batch::new(8, 2048);
        for i in 0..5u8 {
            b.queue(to, &[b'x', i]);
        }
        // and two straight from a caller's buffer, between them
        let scratch = b"..yz..";
        b.queue_range(to, 2..3);
        b.queue(to, b"w");
        b.queue_range(to, 3..4);
        assert_eq!(b.queued(), 8);
        assert_eq!(b.flush(&tx, scratch), (0, false));
        let mut got = Vec::new();
        let mut r = Batch::new(8, 2048);
        while got.len() < 8 {
            let n = r.recv(&rx, 0).unwrap();
            got.extend((0..n).map(|i| r.datagram(i).to_vec()));
        }
        assert_eq!(got[0], b"x\x00");
        assert_eq!(&got[5..], [&b"y"[..], b"w", b"z"]);
        // truncation is reported
        tx.send_to(&[7u8; 100], to).unwrap();
        let m = recv_one(&rx, &mut buf, &mut c, 0).unwrap();
        assert!(m.truncated);
    }
}
