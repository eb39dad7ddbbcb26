//! Many TCP connections held open against a SIP server: what they cost
//! it, and whether a new client is still served.
//!
//! [`run`] opens [`FloodConfig::connections`] connections to a server,
//! each from its own loopback source address (127.x.y.z, so per-peer
//! limits apply as they would to that many hosts), optionally sends each
//! the first bytes of a request and nothing more (half-open: the server
//! holds an incomplete message), holds them, and measures:
//!
//! - the server's resident memory (`VmRSS` of `/proc/PID/status`, and
//!   the proportional set size `Pss` of `/proc/PID/smaps_rollup`, each
//!   summed over its processes: for a multi-process server such as
//!   Kamailio the RSS sum counts shared memory once per process, the PSS
//!   sum once) before the connections and while they are held;
//! - the kernel's TCP socket memory (`/proc/net/sockstat`, `TCP: mem`, in
//!   pages: buffered data, none for an idle connection) and the slab
//!   memory of TCP sockets and socket inodes (`/proc/slabinfo`, caches
//!   `TCP` and `sock_inode_cache`: active objects × object size; root)
//!   before and while held. On loopback both ends of every connection
//!   are on this host, so both count the flood's sockets too;
//! - how long a fresh client (its own source address) waits from its
//!   connect to the first response to an OPTIONS with `Max-Forwards: 0`,
//!   which a proxy answers itself (RFC 3261 §16.3 step 3) — a few probes,
//!   while the connections are held;
//! - how many of the held connections the server closed meanwhile (a
//!   connection limit, a message deadline).
//!
//! The flood's own process needs a descriptor per connection: [`run`]
//! raises its open-file limit first and fails with a clear error when the
//! hard limit is too low.

use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde::Serialize;
use takt_sip::wire::stream::{Frame, Framer};

use crate::error::{io as io_err, Error, Result};

/// What to open and how long to hold it.
#[derive(Debug, Clone, PartialEq)]
pub struct FloodConfig {
    /// The server's TCP address.
    pub target: SocketAddr,
    /// The server's processes, whose memory is measured (empty: not
    /// measured).
    pub pids: Vec<i32>,
    /// Connections to open.
    pub connections: usize,
    /// Send each connection the first bytes of a request and stop there.
    pub half_open: bool,
    /// How long to hold the connections before the measurements (the
    /// server settles: accepts, allocates).
    pub settle: Duration,
    /// Fresh-client probes while the connections are held.
    pub probes: usize,
    /// How long a probe may wait for its response.
    pub probe_timeout: Duration,
    /// The second octet of the first source address (127.`base`.0.1, then
    /// onwards); the probes use 127.`base - 1`.0.x.
    pub source_base: u8,
}

impl FloodConfig {
    /// 10,000 idle connections to `target`, settled for 2 s, 5 probes.
    pub fn new(target: SocketAddr) -> FloodConfig {
        FloodConfig {
            target,
            pids: Vec::new(),
            connections: 10_000,
            half_open: false,
            settle: Duration::from_secs(2),
            probes: 5,
            probe_timeout: Duration::from_secs(5),
            source_base: 20,
        }
    }
}

/// What a flood measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FloodReport {
    /// Connections asked for.
    pub connections: usize,
    /// Connections established.
    pub opened: usize,
    /// Connects that failed (refused, reset, out of addresses).
    pub connect_failed: usize,
    /// Whether each was sent an incomplete request.
    pub half_open: bool,
    /// Seconds to open them all.
    pub open_s: f64,
    /// Server RSS before, KiB (summed over its processes).
    pub rss_before_kib: Option<u64>,
    /// Server RSS while held, KiB.
    pub rss_held_kib: Option<u64>,
    /// Server PSS before, KiB (summed over its processes).
    pub pss_before_kib: Option<u64>,
    /// Server PSS while held, KiB.
    pub pss_held_kib: Option<u64>,
    /// (RSS held − before) / connections opened, bytes.
    pub rss_per_connection: Option<f64>,
    /// Kernel TCP socket memory before, bytes (sockstat pages × page size).
    pub kernel_tcp_before: Option<u64>,
    /// Kernel TCP socket memory while held, bytes (both ends on loopback).
    pub kernel_tcp_held: Option<u64>,
    /// Slab memory of TCP sockets and socket inodes before, bytes.
    pub kernel_slab_before: Option<u64>,
    /// The same while held (both ends on loopback).
    pub kernel_slab_held: Option<u64>,
    /// Probes answered.
    pub probes_answered: usize,
    /// Probes asked.
    pub probes: usize,
    /// Each answered probe's connect-to-response time, ms.
    pub probe_ms: Vec<f64>,
    /// Held connections the server had closed by the end.
    pub closed_by_server: usize,
}

impl FloodReport {
    /// The slowest answered probe, ms.
    pub fn probe_max_ms(&self) -> Option<f64> {
        self.probe_ms.iter().copied().reduce(f64::max)
    }
}

/// Source address number `i` under `base`: 127.base.hi.lo with lo in 1..=250.
fn source(base: u8, i: usize) -> Option<Ipv4Addr> {
    let hi = i / 250;
    let second = usize::from(base) + hi / 256;
    (second < 255).then(|| Ipv4Addr::new(127, second as u8, (hi % 256) as u8, (i % 250) as u8 + 1))
}

fn connect_from(ip: Ipv4Addr, to: SocketAddr, timeout: Duration) -> io::Result<TcpStream> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    s.bind(&SocketAddr::new(IpAddr::V4(ip), 0).into())?;
    s.connect_timeout(&to.into(), timeout)?;
    Ok(s.into())
}

/// `VmRSS` of process `pid`, KiB.
pub fn rss_kib(pid: i32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// `Pss` of process `pid` (`/proc/PID/smaps_rollup`), KiB.
pub fn pss_kib(pid: i32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("Pss:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// `read` summed over `pids` (processes that are gone count nothing);
/// `None` when there are no pids or none could be read.
fn summed(pids: &[i32], read: fn(i32) -> Option<u64>) -> Option<u64> {
    let v: Vec<u64> = pids.iter().filter_map(|&p| read(p)).collect();
    (!v.is_empty()).then(|| v.iter().sum())
}

/// The kernel's TCP socket memory (`/proc/net/sockstat`, `TCP: … mem N`),
/// bytes.
pub fn kernel_tcp_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/net/sockstat").ok()?;
    let line = s.lines().find(|l| l.starts_with("TCP:"))?;
    let mut it = line.split_whitespace();
    while let Some(w) = it.next() {
        if w == "mem" {
            let pages: u64 = it.next()?.parse().ok()?;
            // SAFETY: sysconf has no preconditions.
            let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
            return Some(pages * u64::try_from(page).ok()?);
        }
    }
    None
}

/// Slab memory of the kernel's TCP sockets and socket inodes
/// (`/proc/slabinfo`, caches `TCP` and `sock_inode_cache`: active objects
/// × object size), bytes; `None` where slabinfo is not readable (it needs
/// root) or has neither cache.
pub fn kernel_slab_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/slabinfo").ok()?;
    let mut found = false;
    let mut total = 0;
    for l in s.lines() {
        let mut f = l.split_whitespace();
        let Some(name) = f.next() else { continue };
        if name != "TCP" && name != "sock_inode_cache" {
            continue;
        }
        let active: u64 = f.next()?.parse().ok()?;
        let _all = f.next()?;
        let size: u64 = f.next()?.parse().ok()?;
        total += active * size;
        found = true;
    }
    found.then_some(total)
}

/// An OPTIONS the proxy answers itself (Max-Forwards 0), from `from`.
fn probe_request(from: SocketAddr, to: SocketAddr, n: usize, half: bool) -> Vec<u8> {
    let body = format!(
        "OPTIONS sip:{to} SIP/2.0\r\nVia: SIP/2.0/TCP {from};branch=z9hG4bK-flood{n};rport\r\nFrom: <sip:flood@{from}>;tag=f{n}\r\nTo: <sip:{to}>\r\nCall-ID: flood-{n}@{from}\r\nCSeq: 1 OPTIONS\r\nMax-Forwards: 0\r\nContent-Length: 0\r\n\r\n"
    )
    .into_bytes();
    if half {
        body[..body.len() / 2].to_vec()
    } else {
        body
    }
}

/// Connects from `ip`, sends a probe and waits for a whole response;
/// returns the time from before the connect to the response.
fn probe(ip: Ipv4Addr, to: SocketAddr, n: usize, timeout: Duration) -> io::Result<Duration> {
    let t0 = Instant::now();
    let mut s = connect_from(ip, to, timeout)?;
    let req = probe_request(s.local_addr()?, to, n, false);
    s.write_all(&req)?;
    let f = Framer::new(65_535);
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Ok(Frame::Message { .. }) = f.frame(&buf) {
            return Ok(t0.elapsed());
        }
        let left = timeout.saturating_sub(t0.elapsed());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        s.set_read_timeout(Some(left))?;
        let k = s.read(&mut chunk)?;
        if k == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..k]);
    }
}

/// Whether the server closed `s` (a read sees the end or a reset).
fn closed(s: &TcpStream) -> bool {
    let mut b = [0u8; 1];
    match s.peek(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != io::ErrorKind::WouldBlock,
    }
}

/// Runs the flood (see the module docs).
pub fn run(cfg: &FloodConfig) -> Result<FloodReport> {
    if cfg.source_base < 2 || source(cfg.source_base, cfg.connections.saturating_sub(1)).is_none() {
        return Err(Error::Config(format!(
            "{} connections do not fit in 127.{}.0.1 onwards",
            cfg.connections, cfg.source_base
        )));
    }
    // the flood, the probes, and the rest of the lab (generator sockets)
    let need = cfg.connections as u64 + 512;
    let fd = takt_sip::transport::raise_fd_limit(need).map_err(io_err("raising RLIMIT_NOFILE"))?;
    if !fd.sufficient() {
        return Err(Error::Config(format!(
            "{} connections need {need} open files; the hard limit allows {}",
            cfg.connections, fd.hard
        )));
    }
    let rss_before_kib = summed(&cfg.pids, rss_kib);
    let pss_before_kib = summed(&cfg.pids, pss_kib);
    let kernel_tcp_before = kernel_tcp_bytes();
    let kernel_slab_before = kernel_slab_bytes();
    let t0 = Instant::now();
    let mut held = Vec::with_capacity(cfg.connections);
    let mut connect_failed = 0;
    for i in 0..cfg.connections {
        let ip = source(cfg.source_base, i).expect("checked above");
        match connect_from(ip, cfg.target, cfg.probe_timeout) {
            Ok(mut s) => {
                if cfg.half_open {
                    let req =
                        probe_request(s.local_addr().unwrap_or(cfg.target), cfg.target, i, true);
                    if s.write_all(&req).is_err() {
                        connect_failed += 1;
                        continue;
                    }
                }
                held.push(s);
            }
            Err(_) => connect_failed += 1,
        }
    }
    let open_s = t0.elapsed().as_secs_f64();
    std::thread::sleep(cfg.settle);
    let rss_held_kib = summed(&cfg.pids, rss_kib);
    let pss_held_kib = summed(&cfg.pids, pss_kib);
    let kernel_tcp_held = kernel_tcp_bytes();
    let kernel_slab_held = kernel_slab_bytes();
    let mut probe_ms = Vec::new();
    for n in 0..cfg.probes {
        let ip = Ipv4Addr::new(127, cfg.source_base - 1, 0, (n % 250) as u8 + 1);
        if let Ok(d) = probe(ip, cfg.target, n, cfg.probe_timeout) {
            probe_ms.push(d.as_secs_f64() * 1e3);
        }
    }
    for s in &held {
        let _ = s.set_nonblocking(true);
    }
    let closed_by_server = held.iter().filter(|s| closed(s)).count();
    let opened = held.len();
    let rss_per_connection = match (rss_before_kib, rss_held_kib) {
        (Some(a), Some(b)) if opened > 0 => Some((b as f64 - a as f64) * 1024.0 / opened as f64),
        _ => None,
    };
    Ok(FloodReport {
        connections: cfg.connections,
        opened,
        connect_failed,
        half_open: cfg.half_open,
        open_s,
        rss_before_kib,
        rss_held_kib,
        pss_before_kib,
        pss_held_kib,
        rss_per_connection,
        kernel_tcp_before,
        kernel_tcp_held,
        kernel_slab_before,
        kernel_slab_held,
        probes_answered: probe_ms.len(),
        probes: cfg.probes,
        probe_ms,
        closed_by_server,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_distinct_loopback_hosts() {
        let a: Vec<Ipv4Addr> = (0..10_000).map(|i| source(20, i).unwrap()).collect();
        let set: std::collections::HashSet<_> = a.iter().collect();
        assert_eq!(set.len(), 10_000);
        assert!(a
            .iter()
            .all(|ip| ip.is_loopback() && ip.octets()[3] != 0 && ip.octets()[3] <= 250));
        assert_eq!(source(20, 0), Some(Ipv4Addr::new(127, 20, 0, 1)));
        assert_eq!(source(20, 250), Some(Ipv4Addr::new(127, 20, 1, 1)));
        assert!(source(254, 250 * 256).is_none());
    }

    #[test]
    fn proc_readers_find_their_numbers() {
        assert!(rss_kib(std::process::id() as i32).unwrap() > 0);
        assert!(kernel_tcp_bytes().is_some());
        // slabinfo is root's
        let readable = std::fs::read_to_string("/proc/slabinfo").is_ok();
        assert_eq!(kernel_slab_bytes().is_some_and(|b| b > 0), readable);
    }

    #[test]
    fn a_flood_against_the_tcp_transport() {
        // an in-process server with a small message deadline: the
        // half-open connections are closed by it, the probes answered
        let mut pc = takt_sip::proxy::ProxyConfig::new(
            takt_sip::proxy::Mode::Stateless,
            takt_sip::proxy::build::Local {
                host: String::new(),
                port: 0,
            },
        );
        pc.record_route = false;
        let mut sc = takt_sip::transport::ServerConfig::new("127.0.0.1:0".parse().unwrap());
        sc.workers = 1;
        sc.tcp_limits.message_deadline = Duration::from_millis(300);
        let srv = takt_sip::transport::Server::start(pc, sc).unwrap();
        let mut cfg = FloodConfig::new(srv.local_addr());
        cfg.pids = vec![std::process::id() as i32];
        cfg.connections = 300;
        cfg.half_open = true;
        // held past the deadline: the server closes every half-open one
        cfg.settle = Duration::from_millis(800);
        cfg.probes = 3;
        cfg.source_base = 40;
        let r = run(&cfg).unwrap();
        assert_eq!((r.opened, r.connect_failed), (300, 0));
        assert_eq!(r.probes_answered, 3, "{r:?}");
        assert!(r.probe_max_ms().unwrap() < 1000.0, "{r:?}");
        assert!(r.rss_held_kib.is_some() && r.kernel_tcp_held.is_some());
        assert!(r.pss_held_kib.is_some_and(|p| p > 0));
        if let (Some(b), Some(h)) = (r.kernel_slab_before, r.kernel_slab_held) {
            // 600 sockets (both ends), ~3 KB each, less what else closed
            assert!(h > b + 300 * 2048, "{r:?}");
        }
        assert_eq!(r.closed_by_server, 300, "{r:?}");
        let t = srv.stop().tcp.unwrap();
        assert_eq!(t.message_timeouts, 300, "{t:?}");
    }
}
