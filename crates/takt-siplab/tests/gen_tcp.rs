//! The generator over TCP: through takt's proxy in both modes, and against
//! a server that closes its connections mid-run.

use std::io::Read;
use std::net::{SocketAddr, TcpListener};
use std::time::{Duration, Instant};

use takt_sip::proxy::build::Local;
use takt_sip::proxy::{Mode, ProxyConfig, Target, Transport};
use takt_sip::transport::{Server, ServerConfig};
use takt_siplab::gen::{Cancel, GenConfig, GenReport, Generator, Role};

/// The tests of this file take turns, so their planned sends do not
/// delay each other.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn loopback0() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// takt's proxy on an ephemeral loopback port, TCP in and out, next hop
/// `uas` over TCP.
fn tcp_proxy(mode: Mode, uas: SocketAddr) -> Server {
    let mut p = ProxyConfig::new(
        mode,
        Local {
            host: "127.0.0.1".into(),
            port: 0,
        },
    );
    p.next_hop = Some(Target {
        addr: uas,
        transport: Transport::Tcp,
        conn: None,
    });
    let mut s = ServerConfig::new(loopback0());
    s.tcp = true;
    s.workers = 1;
    Server::start(p, s).expect("the proxy starts on loopback")
}

fn config(cps: f64, calls: u64) -> GenConfig {
    let mut c = GenConfig::new(loopback0(), cps);
    c.uas_listen = loopback0();
    c.calls = Some(calls);
    c.transport = Transport::Tcp;
    c.connections = 3;
    c.drain = Duration::from_secs(2);
    c
}

fn assert_sent_is_received(r: &GenReport) {
    let (c, s) = (r.uac.as_ref().unwrap(), r.uas.as_ref().unwrap());
    for k in ["invite", "ack", "bye"] {
        assert_eq!(c.sent.get(k), s.received.get(k), "{k}: {r:#?}");
    }
    for k in ["180", "200", "200bye"] {
        assert_eq!(s.sent.get(k), c.received.get(k), "{k}: {r:#?}");
    }
}

#[test]
fn a_tcp_run_through_takts_proxy_completes_every_call_in_both_modes() {
    let _turn = turn();
    const CALLS: u64 = 300;
    for mode in [Mode::Stateless, Mode::Stateful] {
        let cfg = config(300.0, CALLS);
        let mut g = Generator::bind(&cfg).unwrap();
        let server = tcp_proxy(mode, g.uas_addr().unwrap());
        g.set_proxy(server.local_addr()).unwrap();
        let r = g.run(&Cancel::default()).unwrap();
        server.stop();
        let c = r.uac.as_ref().unwrap();
        assert_eq!(r.transport, "tcp");
        assert_eq!(c.attempted, CALLS, "{mode:?}");
        assert_eq!(c.completed, CALLS, "{mode:?}: {r:#?}");
        assert_eq!((c.failed, c.unfinished), (0, 0), "{mode:?}");
        assert_sent_is_received(&r);
        // the UAC retransmits nothing over TCP, even with retransmissions on
        assert!(cfg.timers.retransmit);
        assert!(c.retransmitted.is_empty(), "{mode:?}: {r:#?}");
        if mode == Mode::Stateful {
            assert_eq!(c.received.get("100"), Some(&CALLS));
        }
        // the calls were spread over the connections; nothing closed
        assert_eq!(c.sockets.connections, 3);
        assert_eq!(c.sockets.drops, None, "streams have no datagram drops");
        assert_eq!((c.sockets.closed, c.sockets.send_errors), (0, 0));
        let s = r.uas.as_ref().unwrap();
        assert_eq!(s.answered, CALLS);
        assert!(s.sockets.connections >= 1, "the proxy connected to the UAS");
        assert!(r.achieved_cps > 0.0);
        let summary = r.summary();
        assert!(summary.contains("socket drops n/a (TCP)"), "{summary}");
    }
}

#[test]
fn connections_the_proxy_closes_mid_run_are_counted_and_the_run_ends() {
    let _turn = turn();
    // a "proxy" that takes the connections, reads for 300 ms, and closes
    let listener = TcpListener::bind(loopback0()).unwrap();
    let addr = listener.local_addr().unwrap();
    let closer = std::thread::spawn(move || {
        let mut conns = Vec::new();
        for _ in 0..3 {
            conns.push(listener.accept().unwrap().0);
        }
        let until = Instant::now() + Duration::from_millis(300);
        for c in &conns {
            c.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        }
        let mut buf = [0u8; 4096];
        while Instant::now() < until {
            for mut c in &conns {
                let _ = c.read(&mut buf);
            }
        }
        drop(conns);
    });
    let mut cfg = config(500.0, 500); // about 1 s of calls
    cfg.role = Role::Uac;
    cfg.proxy = addr;
    cfg.drain = Duration::from_millis(500);
    let start = Instant::now();
    let r = takt_siplab::gen::run(&cfg, &Cancel::default()).unwrap();
    closer.join().unwrap();
    assert!(start.elapsed() < Duration::from_secs(5), "no hang");
    let c = r.uac.as_ref().unwrap();
    assert_eq!(c.attempted, 500, "every planned call is placed: {r:#?}");
    assert_eq!(c.sockets.closed, 3, "{r:#?}");
    assert!(c.sockets.send_errors > 0, "calls after the close: {r:#?}");
    assert_eq!(c.completed, 0);
    assert_eq!(c.failed + c.unfinished, 500, "{r:#?}");
    let summary = r.summary();
    assert!(summary.contains("3 closed during the run"), "{summary}");
}

#[test]
fn a_proxy_that_refuses_the_connection_is_an_error_before_the_run() {
    let _turn = turn();
    // a port nothing listens on
    let addr = TcpListener::bind(loopback0())
        .unwrap()
        .local_addr()
        .unwrap();
    let mut cfg = config(100.0, 10);
    cfg.role = Role::Uac;
    cfg.proxy = addr;
    let e = takt_siplab::gen::run(&cfg, &Cancel::default()).unwrap_err();
    assert!(e.to_string().contains("over TCP"), "{e}");
}
