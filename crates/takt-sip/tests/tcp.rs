//! The TCP transport over real sockets: framing across partial reads and
//! pipelined messages, keep-alives, the connection limits and deadlines
//! with their counters, outbound reuse, bad input, and a new client served
//! behind 1,000 half-open connections.

use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use takt_sched::ThreadSpec;
use takt_sip::proxy::{Disposition, Inbound, MsgKind, Outcome, Scratch, Sink, Target, Transport};
use takt_sip::stats::TcpSnapshot;
use takt_sip::transport::{Handler, Server, ServerConfig, TcpLimits};
use takt_sip::wire::stream::{Frame, Framer};

/// Echoes every message back over the connection it came on; with a
/// `forward` target, sends it there instead.
#[derive(Debug, Default)]
struct Echo {
    forward: Option<SocketAddr>,
    seen: AtomicU64,
    /// Bytes handed back as undeliverable ([`Handler::bounced`]).
    bounced: AtomicU64,
}

impl Handler for Echo {
    fn handle(&self, inb: &Inbound<'_>, _: &mut Scratch, sink: &mut dyn Sink) -> Outcome {
        self.seen.fetch_add(1, Ordering::Relaxed);
        let to = match self.forward {
            Some(addr) => Target {
                addr,
                transport: Transport::Tcp,
                conn: None,
            },
            None => inb.from,
        };
        let disposition = match sink.send(&to, inb.bytes) {
            Ok(()) => Disposition::Forwarded,
            Err(_) => Disposition::SendFailed,
        };
        Outcome {
            kind: MsgKind::Options,
            disposition,
            error: None,
            lock_contended: false,
        }
    }

    fn tick(&self, _: u64, _: &mut dyn Sink) {}

    fn wants_ticks(&self) -> bool {
        false
    }

    fn bounced(
        &self,
        bytes: &[u8],
        _: SocketAddr,
        _: takt_sip::proxy::SendError,
        _: u64,
        _: &mut dyn Sink,
    ) -> bool {
        self.bounced
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        true
    }
}

/// `d` stretched under valgrind (`scripts/valgrind.sh`), where the server
/// runs ~20-50x slower: the timings below are native claims.
fn scaled(d: Duration) -> Duration {
    if std::env::var_os("TAKT_UNDER_VALGRIND").is_some() {
        d * 20
    } else {
        d
    }
}

fn start(limits: TcpLimits, forward: Option<SocketAddr>) -> Server<Echo> {
    let mut sc = ServerConfig::new("127.0.0.1:0".parse().unwrap());
    sc.workers = 1;
    sc.max_message = 4096;
    sc.tcp_limits = limits;
    sc.spec = ThreadSpec::new("tcp-test");
    Server::start_with(sc, move |_, _, _| {
        Ok(Echo {
            forward,
            ..Echo::default()
        })
    })
    .unwrap()
}

fn options(branch: &str, body: &str) -> Vec<u8> {
    format!(
        "OPTIONS sip:b@example.com SIP/2.0\r\nVia: SIP/2.0/TCP 127.0.0.1;branch={branch}\r\nFrom: <sip:a@example.com>;tag=1\r\nTo: <sip:b@example.com>\r\nCall-ID: {branch}\r\nCSeq: 1 OPTIONS\r\nMax-Forwards: 70\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Reads one framed message (leading CRLFs skipped) within 5 s.
fn read_message(s: &mut TcpStream, pending: &mut Vec<u8>) -> Vec<u8> {
    s.set_read_timeout(Some(scaled(Duration::from_secs(5))))
        .unwrap();
    let f = Framer::new(65535);
    let mut chunk = [0u8; 4096];
    loop {
        if let Ok(Frame::Message { skip, len }) = f.frame(pending) {
            let m = pending[skip..skip + len].to_vec();
            pending.drain(..skip + len);
            return m;
        }
        let n = match s.read(&mut chunk) {
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            r => r.expect("message within 5 s"),
        };
        assert!(n > 0, "connection closed");
        pending.extend_from_slice(&chunk[..n]);
    }
}

/// Whether the server closes `s` within `within` (reads until EOF or reset).
fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    let until = Instant::now() + scaled(within);
    let mut b = [0u8; 1024];
    while Instant::now() < until {
        s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return true,
        }
    }
    false
}

fn tcp(srv: &Server<Echo>) -> TcpSnapshot {
    srv.snapshot().tcp.expect("tcp on")
}

/// Waits until `f` holds for the server's TCP counters.
fn until(srv: &Server<Echo>, what: &str, f: impl Fn(&TcpSnapshot) -> bool) -> TcpSnapshot {
    let end = Instant::now() + scaled(Duration::from_secs(5));
    loop {
        let t = tcp(srv);
        if f(&t) {
            return t;
        }
        assert!(Instant::now() < end, "{what}: {t:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A connection from source address `ip` (any 127.x.y.z is local).
fn connect_from(ip: Ipv4Addr, to: SocketAddr) -> std::io::Result<TcpStream> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    s.bind(&SocketAddr::new(IpAddr::V4(ip), 0).into())?;
    s.connect(&to.into())?;
    Ok(s.into())
}

#[test]
fn messages_are_framed_across_partial_reads_and_pipelines() {
    let srv = start(TcpLimits::default(), None);
    let mut c = TcpStream::connect(srv.local_addr()).unwrap();
    c.set_nodelay(true).unwrap();
    let mut pending = Vec::new();
    // one message a few bytes at a time: every read is partial
    let one = options("z9hG4bK-slow", "body");
    for piece in one.chunks(7) {
        c.write_all(piece).unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(read_message(&mut c, &mut pending), one);
    // three pipelined in one write, the third split with the next write
    let mut three = Vec::new();
    for b in ["z9hG4bK-a", "z9hG4bK-b", "z9hG4bK-c"] {
        three.extend(options(b, "xy"));
    }
    let cut = three.len() - 10;
    c.write_all(&three[..cut]).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    c.write_all(&three[cut..]).unwrap();
    for b in ["z9hG4bK-a", "z9hG4bK-b", "z9hG4bK-c"] {
        assert_eq!(read_message(&mut c, &mut pending), options(b, "xy"));
    }
    // a keep-alive ping (double CRLF) gets a CRLF pong; a lone CRLF is skipped
    c.write_all(b"\r\n\r\n").unwrap();
    let mut pong = [0u8; 2];
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c.read_exact(&mut pong).unwrap();
    assert_eq!(&pong, b"\r\n");
    let mut after = b"\r\n".to_vec();
    after.extend(options("z9hG4bK-d", ""));
    c.write_all(&after).unwrap();
    assert_eq!(read_message(&mut c, &mut pending), options("z9hG4bK-d", ""));
    let snap = srv.stop();
    assert_eq!(snap.kinds["options"].count, 5);
    assert_eq!(
        snap.kinds["options"].k_rcv.count, 5,
        "every message has a K_rcv"
    );
    let t = snap.tcp.unwrap();
    assert_eq!((t.accepted, t.message_timeouts, t.unframeable), (1, 0, 0));
}

#[test]
fn connection_limits_refuse_and_count() {
    let limits = TcpLimits {
        max_connections: 4,
        max_per_peer: 2,
        ..TcpLimits::default()
    };
    let srv = start(limits, None);
    let at = srv.local_addr();
    let mut a1 = connect_from(Ipv4Addr::new(127, 0, 3, 1), at).unwrap();
    let a2 = connect_from(Ipv4Addr::new(127, 0, 3, 1), at).unwrap();
    until(&srv, "two accepted", |t| t.accepted == 2);
    // a third from the same address is over its peer's limit
    let mut a3 = connect_from(Ipv4Addr::new(127, 0, 3, 1), at).unwrap();
    assert!(closed_within(&mut a3, Duration::from_secs(2)));
    until(&srv, "per-peer refusal", |t| t.refused_peer_limit == 1);
    // other addresses fill the total
    let b1 = connect_from(Ipv4Addr::new(127, 0, 3, 2), at).unwrap();
    let mut b2 = connect_from(Ipv4Addr::new(127, 0, 3, 3), at).unwrap();
    until(&srv, "four open", |t| t.open == 4);
    // the table is full: a peer at its own limit is still refused, and
    // evicts nobody
    let mut a4 = connect_from(Ipv4Addr::new(127, 0, 3, 1), at).unwrap();
    assert!(closed_within(&mut a4, Duration::from_secs(2)));
    until(&srv, "per-peer refusal at the total", |t| {
        t.refused_peer_limit == 2
    });
    // a new peer evicts the connection idle longest (a1)
    let mut b3 = connect_from(Ipv4Addr::new(127, 0, 3, 4), at).unwrap();
    let mut pending = Vec::new();
    b3.write_all(&options("z9hG4bK-new", "")).unwrap();
    assert_eq!(
        read_message(&mut b3, &mut pending),
        options("z9hG4bK-new", "")
    );
    assert!(closed_within(&mut a1, Duration::from_secs(2)));
    let t = until(&srv, "eviction", |t| t.evicted == 1);
    assert_eq!((t.open, t.peak, t.refused_total_limit), (4, 4, 0), "{t:?}");
    // the others still work
    let mut pending = Vec::new();
    b2.write_all(&options("z9hG4bK-ok", "")).unwrap();
    assert_eq!(
        read_message(&mut b2, &mut pending),
        options("z9hG4bK-ok", "")
    );
    // a closed connection frees its slot; the evicted one was counted closed
    drop((a2, b1));
    until(&srv, "slots freed", |t| t.open == 2 && t.closed == 3);
    let _c = connect_from(Ipv4Addr::new(127, 0, 3, 1), at).unwrap();
    until(&srv, "admitted again", |t| t.open == 3);
    let snap = srv.stop();
    let tcp = snap.tcp.unwrap();
    assert_eq!((tcp.refused_peer_limit, tcp.evicted), (2, 1));
    let prom = snap.prometheus();
    assert!(prom.contains("takt_sip_tcp_refused_peer_limit_total 2"));
    assert!(prom.contains("takt_sip_tcp_evicted_total 1"));
}

/// Feeds `s` requests, never reading, until the server holds a response
/// for it that the kernel would not take (a send buffer overflowed), and
/// still does after a pause: the kernel's buffers and the peer's window
/// grow for a while after the first overflow, and a queue they drain
/// would leave the connection evictable (the first overflow comes while
/// the kernel's send buffer is still small).
fn clog(srv: &Server<Echo>, s: &mut TcpStream, tag: &str) {
    let body = "x".repeat(3800);
    let mut sent = 0;
    let mut overflowed_before = false;
    for _ in 0..250 {
        let before = tcp(srv).send_overflows;
        let seen = srv.handler().seen.load(Ordering::Relaxed);
        for _ in 0..16 {
            s.write_all(&options(&format!("z9hG4bK-{tag}{sent}"), &body))
                .unwrap();
            sent += 1;
        }
        // every request of the batch handled (its echo sent or refused)
        let end = Instant::now() + scaled(Duration::from_secs(5));
        while srv.handler().seen.load(Ordering::Relaxed) < seen + 16 {
            assert!(Instant::now() < end, "{tag}: batch not handled within 5 s");
            std::thread::sleep(Duration::from_millis(1));
        }
        let overflowed = tcp(srv).send_overflows > before;
        if overflowed && overflowed_before {
            return;
        }
        if overflowed {
            std::thread::sleep(scaled(Duration::from_millis(100)));
        }
        overflowed_before = overflowed;
    }
    panic!(
        "{tag}: no lasting send overflow after {sent} requests: {:?}",
        tcp(srv)
    );
}

/// A connection from `ip` whose receive buffer is 4 KiB: its window stays
/// small, so responses it does not read stay queued at the server.
fn connect_small(ip: Ipv4Addr, to: SocketAddr) -> TcpStream {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    s.set_recv_buffer_size(4096).unwrap();
    s.bind(&SocketAddr::new(IpAddr::V4(ip), 0).into()).unwrap();
    s.connect(&to.into()).unwrap();
    s.into()
}

/// A connection from `ip` with a small receive buffer, clogged ([`clog`]).
fn clogged(srv: &Server<Echo>, ip: Ipv4Addr, tag: &str) -> TcpStream {
    let mut s = connect_small(ip, srv.local_addr());
    clog(srv, &mut s, tag);
    s
}

#[test]
fn a_full_table_evicts_half_open_then_longest_idle_never_queued() {
    let limits = TcpLimits {
        max_connections: 3,
        max_send_buffer: 32 * 1024,
        // the clogged connections must outlive the test, also under
        // valgrind (minutes): no idle lifetime ends them
        idle_timeout: Duration::from_secs(3600),
        ..TcpLimits::default()
    };
    let srv = start(limits, None);
    let at = srv.local_addr();
    let ip = |d| Ipv4Addr::new(127, 0, 6, d);
    // the oldest connection has a response queued: it is never a victim
    let mut queued = clogged(&srv, ip(1), "q");
    let mut idle = connect_from(ip(2), at).unwrap();
    let mut half = connect_from(ip(3), at).unwrap();
    half.write_all(&options("z9hG4bK-half", "")[..50]).unwrap();
    until(&srv, "three open", |t| t.open == 3);
    // past the grace in which a message counts as still arriving
    std::thread::sleep(Duration::from_millis(250));
    // a new client's complete request is answered; the half-open goes
    let mut n1 = connect_from(ip(4), at).unwrap();
    n1.write_all(&options("z9hG4bK-n1", "")).unwrap();
    let mut pending = Vec::new();
    assert_eq!(
        read_message(&mut n1, &mut pending),
        options("z9hG4bK-n1", "")
    );
    assert!(closed_within(&mut half, Duration::from_secs(2)));
    until(&srv, "half-open evicted", |t| t.evicted == 1);
    // the next: the idle one, older than n1 (the queued one is older still)
    let mut n2 = connect_from(ip(5), at).unwrap();
    n2.write_all(&options("z9hG4bK-n2", "")).unwrap();
    let mut pending = Vec::new();
    assert_eq!(
        read_message(&mut n2, &mut pending),
        options("z9hG4bK-n2", "")
    );
    assert!(closed_within(&mut idle, Duration::from_secs(2)));
    let t = until(&srv, "idle evicted", |t| t.evicted == 2);
    assert_eq!((t.message_timeouts, t.idle_timeouts, t.open), (0, 0, 3));
    // every connection has a response queued: a newcomer is refused
    clog(&srv, &mut n1, "n1");
    clog(&srv, &mut n2, "n2");
    let mut n3 = connect_from(ip(7), at).unwrap();
    assert!(
        closed_within(&mut n3, Duration::from_secs(2)),
        "{:?}",
        tcp(&srv)
    );
    let t = until(&srv, "refused", |t| t.refused_total_limit == 1);
    assert_eq!(t.evicted, 2, "{t:?}");
    // the queued connection kept every response: read them all, then it
    // answers a new request
    queued.write_all(&options("z9hG4bK-last", "")).unwrap();
    let mut pending = Vec::new();
    let last = options("z9hG4bK-last", "");
    let mut echoes = 0;
    while read_message(&mut queued, &mut pending) != last {
        echoes += 1;
    }
    assert!(echoes > 16, "{echoes}");
    let t = srv.stop().tcp.unwrap();
    assert_eq!((t.evicted, t.refused_total_limit), (2, 1), "{t:?}");
}

#[test]
fn message_deadline_and_idle_lifetime_close_and_count() {
    let limits = TcpLimits {
        message_deadline: scaled(Duration::from_millis(200)),
        idle_timeout: scaled(Duration::from_millis(600)),
        ..TcpLimits::default()
    };
    let srv = start(limits, None);
    // slow loris: half a request, then silence
    let mut loris = TcpStream::connect(srv.local_addr()).unwrap();
    loris.write_all(&options("z9hG4bK-l", "")[..40]).unwrap();
    let t0 = Instant::now();
    // idle: connected, never a byte; and one that only pings
    let mut idle = TcpStream::connect(srv.local_addr()).unwrap();
    let mut pinger = TcpStream::connect(srv.local_addr()).unwrap();
    assert!(closed_within(&mut loris, Duration::from_secs(2)));
    let waited = t0.elapsed();
    assert!(
        waited >= scaled(Duration::from_millis(190)),
        "closed after {waited:?}"
    );
    until(&srv, "message deadline", |t| t.message_timeouts == 1);
    // a keep-alive is traffic, and not a message that must complete
    let mut pong = [0u8; 2];
    pinger
        .set_read_timeout(Some(scaled(Duration::from_secs(2))))
        .unwrap();
    for _ in 0..4 {
        pinger.write_all(b"\r\n\r\n").unwrap();
        pinger.read_exact(&mut pong).unwrap();
        std::thread::sleep(scaled(Duration::from_millis(250)));
    }
    assert!(closed_within(&mut idle, Duration::from_secs(2)));
    let t = until(&srv, "idle lifetime", |t| t.idle_timeouts >= 1);
    assert_eq!(t.message_timeouts, 1);
    // the pinger outlived the idle one: traffic every 250 ms < 600 ms
    pinger.write_all(&options("z9hG4bK-p", "")).unwrap();
    let mut pending = Vec::new();
    assert_eq!(
        read_message(&mut pinger, &mut pending),
        options("z9hG4bK-p", "")
    );
    assert!(closed_within(&mut pinger, Duration::from_secs(3)));
    let snap = srv.stop();
    let t = snap.tcp.unwrap();
    assert_eq!((t.message_timeouts, t.idle_timeouts), (1, 2));
}

#[test]
fn bad_input_gets_an_answer_and_a_counter() {
    let srv = start(TcpLimits::default(), None);
    let at = srv.local_addr();
    // Content-Length over the size limit (4096): 513, then the close
    let mut big = TcpStream::connect(at).unwrap();
    let req = String::from_utf8(options("z9hG4bK-big", ""))
        .unwrap()
        .replace("Content-Length: 0", "Content-Length: 100000");
    big.write_all(req.as_bytes()).unwrap();
    let mut pending = Vec::new();
    let ans = read_message(&mut big, &mut pending);
    assert!(
        ans.starts_with(b"SIP/2.0 513 "),
        "{}",
        String::from_utf8_lossy(&ans)
    );
    assert!(closed_within(&mut big, Duration::from_secs(2)));
    // no Content-Length on a stream: 400
    let mut nocl = TcpStream::connect(at).unwrap();
    let req = String::from_utf8(options("z9hG4bK-nocl", ""))
        .unwrap()
        .replace("Content-Length: 0\r\n", "");
    nocl.write_all(req.as_bytes()).unwrap();
    let mut pending = Vec::new();
    let ans = read_message(&mut nocl, &mut pending);
    assert!(
        ans.starts_with(b"SIP/2.0 400 "),
        "{}",
        String::from_utf8_lossy(&ans)
    );
    assert!(String::from_utf8_lossy(&ans).contains("Call-ID: z9hG4bK-nocl\r\n"));
    assert!(closed_within(&mut nocl, Duration::from_secs(2)));
    // garbage without an end of headers, past the size limit: closed
    let mut junk = TcpStream::connect(at).unwrap();
    let _ = junk.write_all(&[0xAB; 5000]);
    assert!(closed_within(&mut junk, Duration::from_secs(2)));
    // binary garbage with a blank line: no Content-Length, nothing to answer
    let mut bin = TcpStream::connect(at).unwrap();
    bin.write_all(b"\x00\x01\x02\xff\r\n\r\n").unwrap();
    assert!(closed_within(&mut bin, Duration::from_secs(2)));
    let t = until(&srv, "unframeable", |t| t.unframeable == 4);
    assert_eq!(t.open, 0);
    // the server still serves
    let mut ok = TcpStream::connect(at).unwrap();
    ok.write_all(&options("z9hG4bK-fine", "")).unwrap();
    let mut pending = Vec::new();
    assert_eq!(
        read_message(&mut ok, &mut pending),
        options("z9hG4bK-fine", "")
    );
    let snap = srv.stop();
    assert_eq!(snap.parse_errors.get("too_large"), Some(&1));
    assert_eq!(snap.parse_errors.get("stream_content_length"), Some(&2));
    assert_eq!(snap.parse_errors.get("stream_headers_too_large"), Some(&1));
    assert_eq!(snap.replied.get("513"), Some(&1));
    assert_eq!(snap.replied.get("400"), Some(&1));
}

#[test]
fn outbound_connections_are_reused() {
    let next = TcpListener::bind("127.0.0.1:0").unwrap();
    let srv = start(TcpLimits::default(), Some(next.local_addr().unwrap()));
    // three messages over UDP, each forwarded over TCP to `next`
    let c = UdpSocket::bind("127.0.0.1:0").unwrap();
    for b in ["z9hG4bK-1", "z9hG4bK-2", "z9hG4bK-3"] {
        c.send_to(&options(b, ""), srv.local_addr()).unwrap();
    }
    let (mut conn, _) = next.accept().unwrap();
    let mut pending = Vec::new();
    for b in ["z9hG4bK-1", "z9hG4bK-2", "z9hG4bK-3"] {
        assert_eq!(read_message(&mut conn, &mut pending), options(b, ""));
    }
    // and over TCP from a client: still the one outbound connection
    let mut client = TcpStream::connect(srv.local_addr()).unwrap();
    client.write_all(&options("z9hG4bK-4", "")).unwrap();
    assert_eq!(
        read_message(&mut conn, &mut pending),
        options("z9hG4bK-4", "")
    );
    next.set_nonblocking(true).unwrap();
    assert!(next.accept().is_err(), "no second connection");
    let t = tcp(&srv);
    assert_eq!((t.connected, t.accepted, t.open), (1, 1, 2));
    // once the peer closes it, the next message opens a new one
    drop(conn);
    until(&srv, "outbound closed", |t| t.closed == 1);
    next.set_nonblocking(false).unwrap();
    c.send_to(&options("z9hG4bK-5", ""), srv.local_addr())
        .unwrap();
    let (mut conn, _) = next.accept().unwrap();
    let mut pending = Vec::new();
    assert_eq!(
        read_message(&mut conn, &mut pending),
        options("z9hG4bK-5", "")
    );
    assert_eq!(srv.stop().tcp.unwrap().connected, 2);
}

#[test]
fn a_new_client_is_served_within_a_second_behind_1000_half_open_connections() {
    let fd = takt_sip::transport::raise_fd_limit(4096).unwrap();
    assert!(fd.sufficient(), "this test needs 4096 open files: {fd:?}");
    let srv = start(
        TcpLimits {
            message_deadline: scaled(Duration::from_secs(5)),
            ..TcpLimits::default()
        },
        None,
    );
    let at = srv.local_addr();
    let half = &options("z9hG4bK-half", "")[..60];
    let mut held = Vec::with_capacity(1000);
    for i in 0..1000u32 {
        // distinct source addresses, as from 1,000 hosts
        let ip = Ipv4Addr::new(127, 1, (i / 250) as u8, (i % 250) as u8 + 1);
        let mut s = connect_from(ip, at).unwrap();
        s.write_all(half).unwrap();
        held.push(s);
    }
    until(&srv, "1000 held", |t| t.open == 1000);
    let t0 = Instant::now();
    let mut c = TcpStream::connect(at).unwrap();
    c.write_all(&options("z9hG4bK-new", "")).unwrap();
    let mut pending = Vec::new();
    assert_eq!(
        read_message(&mut c, &mut pending),
        options("z9hG4bK-new", "")
    );
    let took = t0.elapsed();
    assert!(
        took < scaled(Duration::from_secs(1)),
        "served after {took:?}"
    );
    let t = tcp(&srv);
    assert_eq!((t.refused_total_limit, t.refused_peer_limit), (0, 0));
    drop(held);
    until(&srv, "all closed", |t| t.open == 1);
}

#[test]
fn a_table_full_of_attackers_does_not_lock_out_new_clients() {
    let srv = start(
        TcpLimits {
            max_connections: 300,
            // only eviction closes the attackers here, also under
            // valgrind (minutes): no deadline or idle lifetime fires
            message_deadline: Duration::from_secs(3600),
            idle_timeout: Duration::from_secs(3600),
            ..TcpLimits::default()
        },
        None,
    );
    let at = srv.local_addr();
    let half = &options("z9hG4bK-half", "")[..60];
    // 150 idle and 150 half-open attacker connections, one per address
    let mut held = Vec::with_capacity(300);
    for i in 0..300u32 {
        let ip = Ipv4Addr::new(127, 2, (i / 250) as u8, (i % 250) as u8 + 1);
        let mut s = connect_from(ip, at).unwrap();
        if i % 2 == 1 {
            s.write_all(half).unwrap();
        }
        held.push(s);
    }
    until(&srv, "300 held", |t| t.open == 300);
    std::thread::sleep(Duration::from_millis(250));
    let mut clients = Vec::new();
    for n in 0..60u8 {
        let mut c = connect_from(Ipv4Addr::new(127, 3, 0, n + 1), at).unwrap();
        let req = options(&format!("z9hG4bK-c{n}"), "");
        c.write_all(&req).unwrap();
        let mut pending = Vec::new();
        assert_eq!(read_message(&mut c, &mut pending), req);
        clients.push(c);
    }
    let t = until(&srv, "evictions", |t| t.evicted == 60);
    assert_eq!((t.refused_total_limit, t.open), (0, 300), "{t:?}");
    // the victims were the half-open connections, oldest message first
    for (i, s) in held.iter_mut().enumerate() {
        let victim = i % 2 == 1 && i < 120;
        s.set_nonblocking(true).unwrap();
        let mut b = [0u8; 16];
        let closed = match s.read(&mut b) {
            Ok(n) => n == 0,
            Err(e) => e.kind() != ErrorKind::WouldBlock,
        };
        assert_eq!(closed, victim, "connection {i}");
    }
}

#[test]
fn a_silent_next_hop_never_blocks_a_sender() {
    // a listener whose accept queue is full drops further SYNs: a connect
    // to it neither succeeds nor fails until it times out
    let silent = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    silent
        .bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into())
        .unwrap();
    silent.listen(0).unwrap();
    let at: SocketAddr = silent.local_addr().unwrap().as_socket().unwrap();
    let mut fillers = Vec::new();
    for _ in 0..3 {
        let f = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        let _ = f.connect_timeout(&at.into(), Duration::from_millis(200));
        fillers.push(f);
    }
    let srv = start(TcpLimits::default(), Some(at));
    let c = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (a, b) = (options("z9hG4bK-s1", ""), options("z9hG4bK-s2", ""));
    c.send_to(&a, srv.local_addr()).unwrap();
    c.send_to(&b, srv.local_addr()).unwrap();
    // both queued behind the one connect; after CONNECT_TIMEOUT both go
    // back to the handler
    let end = Instant::now() + scaled(Duration::from_secs(6));
    while srv.handler().bounced.load(Ordering::Relaxed) < (a.len() + b.len()) as u64 {
        assert!(Instant::now() < end, "{:?}", tcp(&srv));
        std::thread::sleep(Duration::from_millis(20));
    }
    let snap = srv.stop();
    let t = snap.tcp.unwrap();
    assert_eq!(
        (t.connected, t.connect_failures, t.open),
        (1, 1, 0),
        "{t:?}"
    );
    // the sends waited for CONNECT_WAIT at most, never for the timeout
    let k_snd = snap.kinds["options"].k_snd;
    assert!(
        k_snd.max < scaled(Duration::from_millis(200)).as_nanos() as u64,
        "{k_snd:?}"
    );
    assert_eq!(snap.kinds["options"].outcomes.get("forwarded"), Some(&2));
}
