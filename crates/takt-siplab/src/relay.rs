//! The null relay: the kernel-bound floor of every capacity table.
//!
//! One UDP socket, one thread, a tight `recvmmsg`/`sendmmsg` loop and no
//! SIP processing beyond one header: a datagram that starts with
//! `SIP/2.0 ` is a response, anything else a request. Requests go to the
//! configured UAS address. Responses go to the configured UAC address if
//! one is given, otherwise to the sent-by of their top Via (with RFC 3581's
//! `received`/`rport` if present; IP literals only, no DNS) — the UAC's own
//! Via, since the relay adds none — so a generator spreading its calls
//! over many source ports gets each response back on its port. There is
//! no other parsing, no state and no per-message instrumentation: what is
//! left is the kernel's cost of receiving and sending the datagrams, which
//! any real proxy pays too. The relay's capacity is therefore an upper
//! bound for a proxy on the same CPU and network path.
//!
//! Contract for the load generator: the relay adds no Via, so the UAS must
//! answer to the *source address* of the request (the relay), as SIPp and
//! takt's generator do.
//!
//! A datagram larger than the receive buffer ([`MAX_DATAGRAM`]) is counted
//! as truncated and not forwarded; an empty one is counted and dropped; a
//! response without a usable top Via (when routing by Via) is counted and
//! dropped; a send the kernel refuses is counted and skipped. The counts are returned
//! when the loop ends (they are kept per batch, not per message).

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::Serialize;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use crate::error::{io, Error, Result};

/// Largest datagram forwarded, bytes (SIP over UDP stays far below).
pub const MAX_DATAGRAM: usize = 8_192;
/// Most datagrams per `recvmmsg`/`sendmmsg`.
pub const MAX_BATCH: usize = 256;
/// Default datagrams per `recvmmsg`.
pub const DEFAULT_BATCH: usize = 64;
/// How often a blocked receive wakes to look at the stop flag.
const STOP_POLL: Duration = Duration::from_millis(100);
/// The start of every SIP response.
const RESPONSE_PREFIX: &[u8] = b"SIP/2.0 ";

/// Where the relay listens and forwards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayConfig {
    /// The address clients send to.
    pub listen: SocketAddr,
    /// Requests go here.
    pub uas: SocketAddr,
    /// Responses go here; `None`: to their top Via's sent-by.
    pub uac: Option<SocketAddr>,
    /// Receive buffer, bytes (`None`: the system default).
    pub rcvbuf: Option<usize>,
    /// Datagrams per `recvmmsg` (1..=[`MAX_BATCH`]).
    pub batch: usize,
}

/// What the relay did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RelayCounts {
    /// Requests forwarded to the UAS.
    pub requests: u64,
    /// Responses forwarded to the UAC.
    pub responses: u64,
    /// `recvmmsg` calls that returned datagrams.
    pub batches: u64,
    /// Datagrams larger than [`MAX_DATAGRAM`], dropped.
    pub truncated: u64,
    /// Empty datagrams, dropped.
    pub empty: u64,
    /// Responses without a usable top Via (routing by Via), dropped.
    pub unroutable: u64,
    /// Datagrams the kernel refused to send.
    pub send_errors: u64,
}

/// A bound relay socket.
#[derive(Debug)]
pub struct Relay {
    socket: UdpSocket,
    cfg: RelayConfig,
    uas: SockAddr,
    uac: Option<SockAddr>,
}

impl Relay {
    /// Binds the socket (with `SO_RCVTIMEO` so the loop can see its stop
    /// flag).
    pub fn bind(cfg: RelayConfig) -> Result<Relay> {
        if !(1..=MAX_BATCH).contains(&cfg.batch) {
            return Err(Error::Config(format!(
                "relay batch {} (1..={MAX_BATCH})",
                cfg.batch
            )));
        }
        for (what, a) in [("UAS", Some(cfg.uas)), ("UAC", cfg.uac)] {
            let Some(a) = a else { continue };
            if a.is_ipv4() != cfg.listen.is_ipv4() {
                return Err(Error::Config(format!(
                    "relay {what} address {a} is not of the listen address's family ({})",
                    cfg.listen
                )));
            }
        }
        let s = Socket::new(
            Domain::for_address(cfg.listen),
            Type::DGRAM,
            Some(Protocol::UDP),
        )
        .map_err(io("creating the relay socket"))?;
        if let Some(b) = cfg.rcvbuf {
            s.set_recv_buffer_size(b)
                .map_err(io(format!("setting the relay's receive buffer to {b} B")))?;
        }
        s.bind(&cfg.listen.into())
            .map_err(io(format!("binding the relay to {}", cfg.listen)))?;
        let socket: UdpSocket = s.into();
        socket
            .set_read_timeout(Some(STOP_POLL))
            .map_err(io("setting the relay's receive timeout"))?;
        Ok(Relay {
            uas: cfg.uas.into(),
            uac: cfg.uac.map(SockAddr::from),
            socket,
            cfg,
        })
    }

    /// The bound address (with the real port when 0 was asked for).
    pub fn local_addr(&self) -> Result<SocketAddr> {
        self.socket
            .local_addr()
            .map_err(io("reading the relay's address"))
    }

    /// Relays until `stop` is set (checked at least every 100 ms).
    pub fn run(&self, stop: &AtomicBool) -> Result<RelayCounts> {
        let n = self.cfg.batch;
        let fd = self.socket.as_raw_fd();
        let mut bufs = vec![0u8; n * MAX_DATAGRAM];
        // SAFETY: iovec is a plain C struct; all-zero bytes are a valid
        // value (a null base, zero length).
        let iov0: libc::iovec = unsafe { std::mem::zeroed() };
        // SAFETY: mmsghdr is a plain C struct; all-zero bytes are a valid
        // value (null pointers, zero lengths and flags).
        let hdr0: libc::mmsghdr = unsafe { std::mem::zeroed() };
        let (mut rx_iov, mut rx) = (vec![iov0; n], vec![hdr0; n]);
        let (mut tx_iov, mut tx) = (vec![iov0; n], vec![hdr0; n]);
        // per-datagram destinations when routing responses by Via
        let mut via_to: Vec<SockAddr> = vec![self.uas.clone(); n];
        let mut c = RelayCounts::default();
        // Acquire pairs with the Release store of whoever stops the relay.
        while !stop.load(Ordering::Acquire) {
            for (i, (h, v)) in rx.iter_mut().zip(rx_iov.iter_mut()).enumerate() {
                v.iov_base = bufs[i * MAX_DATAGRAM..].as_mut_ptr().cast();
                v.iov_len = MAX_DATAGRAM;
                h.msg_hdr.msg_iov = v;
                h.msg_hdr.msg_iovlen = 1;
                h.msg_hdr.msg_flags = 0;
                h.msg_len = 0;
            }
            // SAFETY: `rx` holds `n` headers, each pointing at its own iovec
            // of MAX_DATAGRAM bytes inside `bufs`; all live across the call.
            let got = unsafe {
                libc::recvmmsg(
                    fd,
                    rx.as_mut_ptr(),
                    n as libc::c_uint,
                    libc::MSG_WAITFORONE,
                    std::ptr::null_mut(),
                )
            };
            if got < 0 {
                let e = std::io::Error::last_os_error();
                match e.kind() {
                    std::io::ErrorKind::WouldBlock
                    | std::io::ErrorKind::TimedOut
                    | std::io::ErrorKind::Interrupted => continue,
                    _ => return Err(io("relay recvmmsg")(e)),
                }
            }
            c.batches += 1;
            let mut k = 0;
            for (i, h) in rx.iter().enumerate().take(got as usize) {
                let len = h.msg_len as usize;
                if h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0 {
                    c.truncated += 1;
                    continue;
                }
                if len == 0 {
                    c.empty += 1;
                    continue;
                }
                let data = &bufs[i * MAX_DATAGRAM..i * MAX_DATAGRAM + len];
                let to = if data.starts_with(RESPONSE_PREFIX) {
                    match &self.uac {
                        Some(a) => a,
                        None => match top_via(data) {
                            Some(a) => {
                                via_to[k] = a.into();
                                &via_to[k]
                            }
                            None => {
                                c.unroutable += 1;
                                continue;
                            }
                        },
                    }
                } else {
                    &self.uas
                };
                if data.starts_with(RESPONSE_PREFIX) {
                    c.responses += 1;
                } else {
                    c.requests += 1;
                }
                tx_iov[k].iov_base = data.as_ptr().cast_mut().cast();
                tx_iov[k].iov_len = len;
                let m = &mut tx[k].msg_hdr;
                m.msg_iov = &mut tx_iov[k];
                m.msg_iovlen = 1;
                m.msg_name = to.as_ptr().cast_mut().cast();
                m.msg_namelen = to.len();
                k += 1;
            }
            let mut off = 0;
            while off < k {
                // SAFETY: tx[off..k] are initialised headers pointing at
                // iovecs over `bufs` and at the two SockAddrs, all of which
                // outlive the call; the kernel only reads them.
                let sent = unsafe {
                    libc::sendmmsg(fd, tx[off..].as_mut_ptr(), (k - off) as libc::c_uint, 0)
                };
                if sent < 0 {
                    if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                        continue;
                    }
                    // the first message of the rest was refused: skip it
                    c.send_errors += 1;
                    off += 1;
                } else {
                    off += sent as usize;
                }
            }
        }
        Ok(c)
    }
}

/// `takt sip relay`: places the calling thread by `spec`, binds, says
/// where it relays to `log`, relays until `cancel` is raised, and says
/// what it counted.
pub fn serve(
    cfg: RelayConfig,
    spec: &takt_sched::ThreadSpec,
    cancel: &takt_measure::cancel::Cancel,
    log: &mut dyn FnMut(&str),
) -> Result<RelayCounts> {
    spec.apply_to_current()?;
    let (uas, uac) = (cfg.uas, cfg.uac);
    let relay = Relay::bind(cfg)?;
    let local = relay.local_addr()?;
    log(&format!(
        "takt sip relay: {local} -> requests to {uas}, responses to {}",
        uac.map_or_else(|| "their top Via".to_string(), |u| u.to_string())
    ));
    let c = relay.run(&cancel.flag())?;
    log(&format!(
        "takt sip relay: {} requests, {} responses in {} batches; dropped {} truncated, {} empty, {} without a usable Via; {} send errors",
        c.requests, c.responses, c.batches, c.truncated, c.empty, c.unroutable, c.send_errors
    ));
    Ok(c)
}

/// Where the top Via of a message says its response goes: the sent-by's
/// IP literal and port (5060 if absent), overridden by `received=` and
/// `rport=N` (RFC 3581). `None` if the headers end first, or the top Via
/// names a host that is not an IP literal.
pub fn top_via(msg: &[u8]) -> Option<SocketAddr> {
    let text = std::str::from_utf8(msg).ok()?;
    let headers = text.split("\r\n").skip(1).take_while(|l| !l.is_empty());
    let value = headers.into_iter().find_map(|l| {
        let (name, v) = l.split_once(':')?;
        let name = name.trim();
        (name.eq_ignore_ascii_case("via") || name.eq_ignore_ascii_case("v")).then_some(v)
    })?;
    // the first value of a comma-separated header; `SIP/2.0/UDP sent-by;params`
    let first = value.split(',').next()?.trim();
    let (_proto, rest) = first.split_once(char::is_whitespace)?;
    let mut parts = rest.trim().split(';');
    let sent_by = parts.next()?.trim();
    let (host, port) = if let Some(v6) = sent_by.strip_prefix('[') {
        let (h, after) = v6.split_once(']')?;
        (h, after.strip_prefix(':'))
    } else {
        match sent_by.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (sent_by, None),
        }
    };
    let mut ip: std::net::IpAddr = host.parse().ok()?;
    let mut port: u16 = match port {
        Some(p) => p.trim().parse().ok()?,
        None => 5060,
    };
    for p in parts {
        let (k, v) = p.split_once('=').unwrap_or((p, ""));
        match k.trim().to_ascii_lowercase().as_str() {
            "received" => {
                ip = v
                    .trim()
                    .trim_matches(|c| c == '[' || c == ']')
                    .parse()
                    .ok()?
            }
            "rport" if !v.is_empty() => port = v.trim().parse().ok()?,
            _ => {}
        }
    }
    Some(SocketAddr::new(ip, port))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn requests_go_to_the_uas_and_responses_to_the_uac() {
        let uas = UdpSocket::bind("127.0.0.1:0").unwrap();
        let uac = UdpSocket::bind("127.0.0.1:0").unwrap();
        for s in [&uas, &uac] {
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        }
        let relay = Relay::bind(RelayConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            uas: uas.local_addr().unwrap(),
            uac: Some(uac.local_addr().unwrap()),
            rcvbuf: None,
            batch: DEFAULT_BATCH,
        })
        .unwrap();
        let addr = relay.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let t = std::thread::spawn(move || relay.run(&st));
        let req = b"INVITE sip:b@x SIP/2.0\r\nVia: SIP/2.0/UDP a\r\n\r\n";
        let resp = b"SIP/2.0 180 Ringing\r\nVia: SIP/2.0/UDP a\r\n\r\n";
        uac.send_to(req, addr).unwrap();
        let mut buf = [0u8; 2048];
        let (n, from) = uas.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..n], req);
        assert_eq!(from, addr);
        uas.send_to(resp, addr).unwrap();
        let (n, _) = uac.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..n], resp);
        // an empty datagram and an oversized one are counted, not forwarded
        uac.send_to(b"", addr).unwrap();
        uac.send_to(&vec![b'x'; MAX_DATAGRAM + 10], addr).unwrap();
        uac.send_to(b"BYE sip:b@x SIP/2.0\r\n\r\n", addr).unwrap();
        let (n, _) = uas.recv_from(&mut buf).unwrap();
        assert!(buf[..n].starts_with(b"BYE"));
        stop.store(true, Ordering::Release);
        let c = t.join().unwrap().unwrap();
        assert_eq!(
            (c.requests, c.responses, c.empty, c.truncated),
            (2, 1, 1, 1)
        );
    }

    #[test]
    fn top_via_routes() {
        let r = |via: &str| top_via(format!("SIP/2.0 200 OK\r\n{via}\r\nTo: x\r\n\r\n").as_bytes());
        let a = |s: &str| Some(s.parse::<SocketAddr>().unwrap());
        assert_eq!(
            r("Via: SIP/2.0/UDP 10.0.0.5:5071;branch=z9hG4bK1"),
            a("10.0.0.5:5071")
        );
        assert_eq!(
            r("v: SIP/2.0/UDP 10.0.0.5;branch=z9hG4bK1"),
            a("10.0.0.5:5060")
        );
        assert_eq!(
            r("VIA:SIP/2.0/UDP [::1]:6000;rport=7000;received=::2, SIP/2.0/UDP 1.2.3.4"),
            a("[::2]:7000")
        );
        assert_eq!(r("Via: SIP/2.0/UDP host.example:5060"), None);
        assert_eq!(r("To: y"), None);
        assert_eq!(
            top_via(b"SIP/2.0 200 OK\r\n\r\nVia: SIP/2.0/UDP 1.2.3.4:5\r\n"),
            None
        );
    }

    #[test]
    fn responses_follow_the_top_via() {
        let uas = UdpSocket::bind("127.0.0.1:0").unwrap();
        let uacs: Vec<UdpSocket> = (0..3)
            .map(|_| UdpSocket::bind("127.0.0.1:0").unwrap())
            .collect();
        for s in uacs.iter().chain([&uas]) {
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        }
        let relay = Relay::bind(RelayConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            uas: uas.local_addr().unwrap(),
            uac: None,
            rcvbuf: None,
            batch: 4,
        })
        .unwrap();
        let addr = relay.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let t = std::thread::spawn(move || relay.run(&st));
        let mut buf = [0u8; 2048];
        for u in &uacs {
            let me = u.local_addr().unwrap();
            let resp = format!("SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP {me};branch=z9hG4bKx\r\n\r\n");
            uas.send_to(resp.as_bytes(), addr).unwrap();
            let (n, _) = u.recv_from(&mut buf).unwrap();
            assert_eq!(&buf[..n], resp.as_bytes());
        }
        uas.send_to(b"SIP/2.0 200 OK\r\nTo: x\r\n\r\n", addr)
            .unwrap();
        uas.send_to(
            b"SIP/2.0 180 Ringing\r\nVia: SIP/2.0/UDP 127.0.0.1:1\r\n\r\n",
            addr,
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(100));
        stop.store(true, Ordering::Release);
        let c = t.join().unwrap().unwrap();
        assert_eq!((c.responses, c.unroutable), (4, 1));
    }

    #[test]
    fn refuses_mixed_families_and_bad_batches() {
        let cfg = RelayConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            uas: "[::1]:5060".parse().unwrap(),
            uac: Some("127.0.0.1:5061".parse().unwrap()),
            rcvbuf: None,
            batch: 8,
        };
        assert!(matches!(Relay::bind(cfg.clone()), Err(Error::Config(_))));
        let cfg = RelayConfig {
            uas: "127.0.0.1:5060".parse().unwrap(),
            batch: 0,
            ..cfg
        };
        assert!(matches!(Relay::bind(cfg), Err(Error::Config(_))));
    }
}
