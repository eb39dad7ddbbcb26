//! The generator on real sockets: against takt's proxy on loopback (UDP
//! and TCP), under a starved CPU, beside SIPp, and against a server that
//! closes its TCP connections mid-run.

use std::io::Read;
use std::net::{SocketAddr, TcpListener};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use takt_sched::ThreadSpec;
use takt_sip::proxy::build::Local;
use takt_sip::proxy::{Mode, ProxyConfig, Target, Transport};
use takt_sip::transport::{Server, ServerConfig};
use takt_siplab::gen::{Cancel, GenConfig, GenReport, Generator, Role};

/// Real-time priority for the generator and proxy threads when root (as
/// in CI): the host's other work then cannot delay them, so a run that
/// is easy for the generator reads as easy however loaded the host is.
fn rt_spec(name: &str) -> ThreadSpec {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        ThreadSpec::new(name).with_policy("fifo:prio=10".parse().unwrap())
    } else {
        ThreadSpec::new(name)
    }
}

/// The tests of this file take turns: generators running side by side
/// (at real-time priority) would delay each other's planned sends.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn loopback0() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// takt's proxy on an ephemeral loopback port, next hop `uas` (UDP).
fn proxy(mode: Mode, uas: SocketAddr) -> Server {
    proxy_over(Transport::Udp, mode, uas)
}

/// takt's proxy on an ephemeral loopback port, next hop `uas` over
/// `transport` (TCP: listening on TCP too).
fn proxy_over(transport: Transport, mode: Mode, uas: SocketAddr) -> Server {
    let mut p = ProxyConfig::new(
        mode,
        Local {
            host: "127.0.0.1".into(),
            port: 0,
        },
    );
    p.next_hop = Some(Target {
        addr: uas,
        transport,
        conn: None,
    });
    let mut s = ServerConfig::new(loopback0());
    s.tcp = transport == Transport::Tcp;
    s.workers = 1;
    s.spec = rt_spec("sip");
    Server::start(p, s).expect("the proxy starts on loopback")
}

fn config(cps: f64, calls: u64) -> GenConfig {
    let mut c = GenConfig::new(loopback0(), cps);
    c.uas_listen = loopback0();
    c.calls = Some(calls);
    c.ports = 4;
    c.drain = Duration::from_secs(2);
    c.spec = rt_spec("gen");
    c
}

/// Both sides through a proxy started between binding and running.
fn through_proxy(mode: Mode, cfg: &GenConfig) -> GenReport {
    let mut g = Generator::bind(cfg).unwrap();
    let server = proxy(mode, g.uas_addr().unwrap());
    g.set_proxy(server.local_addr()).unwrap();
    let r = g.run(&Cancel::default()).unwrap();
    server.stop();
    r
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
fn a_loss_free_run_through_takts_proxy_completes_every_call() {
    let _turn = turn();
    // enough calls that one stall of the host (a few ms) stays under p99
    const CALLS: u64 = 1000;
    for mode in [Mode::Stateless, Mode::Stateful] {
        // Retransmissions off: each message is sent once, so the per-kind
        // counts must match exactly whatever the host's load delays.
        let mut cfg = config(500.0, CALLS);
        cfg.timers.retransmit = false;
        let r = through_proxy(mode, &cfg);
        let c = r.uac.as_ref().unwrap();
        assert_eq!(c.attempted, CALLS, "{mode:?}");
        assert_eq!(c.completed, CALLS, "{mode:?}: {r:#?}");
        assert_eq!((c.failed, c.unfinished), (0, 0), "{mode:?}");
        assert_sent_is_received(&r);
        assert_eq!(c.sent.get("invite"), Some(&CALLS));
        assert!(c.retransmitted.is_empty(), "{mode:?}: {r:#?}");
        let s = r.uas.as_ref().unwrap();
        assert_eq!(s.answered, CALLS);
        assert_eq!(c.invite_to_200_ms.count, CALLS);
        assert_eq!(c.send_lag_us.count, CALLS);
        if mode == Mode::Stateful {
            assert_eq!(c.received.get("100"), Some(&CALLS));
        }
        // The generator-bound flag reads the host as much as the
        // generator: under a load average of ~20 its timing criteria fire
        // on this easy run now and then (the search re-runs such trials
        // for that reason). It is reported, not asserted; the flag's own
        // test (starved.rs) checks that it fires when it must and not on
        // an idle host.
        if r.saturation.generator_bound {
            eprintln!(
                "{mode:?}: flagged generator-bound on an easy run (a loaded host?): {:?}",
                r.saturation
            );
        }
        assert!(r.cpu_us_per_call.unwrap() > 0.0);
    }
}

#[test]
fn constant_arrivals_with_hold_time_complete_too() {
    let _turn = turn();
    let mut cfg = config(200.0, 100);
    cfg.arrivals = takt_siplab::gen::Arrivals::Constant;
    cfg.hold = Duration::from_millis(200);
    let r = through_proxy(Mode::Stateless, &cfg);
    let c = r.uac.as_ref().unwrap();
    assert_eq!(c.completed, 100, "{r:#?}");
    assert_sent_is_received(&r);
    // a constant schedule at 200 cps: 99 gaps of 5 ms
    assert!((r.send_s - 0.495).abs() < 0.05, "{}", r.send_s);
    // and the window the achieved rate is taken over: 100 gaps
    assert!((r.window_s - 0.5).abs() < 0.05, "{}", r.window_s);
    assert!((r.achieved_cps - 200.0).abs() < 20.0, "{}", r.achieved_cps);
}

#[test]
fn a_cancelled_run_stops_promptly_and_reports_what_ran() {
    let _turn = turn();
    let mut cfg = config(100.0, 1_000_000);
    cfg.role = Role::Both;
    let mut g = Generator::bind(&cfg).unwrap();
    let uas = g.uas_addr().unwrap();
    g.set_proxy(uas).unwrap();
    let cancel = Cancel::default();
    let c2 = cancel.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        c2.cancel();
    });
    let start = std::time::Instant::now();
    let r = g.run(&cancel).unwrap();
    t.join().unwrap();
    assert!(start.elapsed() < Duration::from_secs(2));
    assert!(r.cancelled);
    let a = r.uac.unwrap().attempted;
    assert!(a > 0 && a < 200, "{a}");
}

#[test]
fn bad_settings_are_refused_with_a_reason() {
    let _turn = turn();
    let mut c = config(0.0, 10);
    assert!(Generator::bind(&c)
        .unwrap_err()
        .to_string()
        .contains("call rate"));
    c.cps = 10.0;
    c.ports = 0;
    assert!(Generator::bind(&c)
        .unwrap_err()
        .to_string()
        .contains("ports"));
    c.ports = 1;
    c.calls = None;
    assert!(Generator::bind(&c)
        .unwrap_err()
        .to_string()
        .contains("calls"));
}

/// A free loopback port for SIPp (it binds UDP and TCP).
fn free_port() -> u16 {
    for _ in 0..64 {
        let u = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let p = u.local_addr().unwrap().port();
        if std::net::TcpListener::bind(("127.0.0.1", p)).is_ok() {
            return p;
        }
    }
    panic!("no free port");
}

/// Kills the child on every path.
struct Kill(std::process::Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `sipp -sn uac` for `calls` calls at `cps` against `proxy`;
/// returns its successful and failed calls (its exit status tells: 0 when
/// every call succeeded).
fn sipp_uac(proxy: SocketAddr, cps: u32, calls: u64) -> (u64, u64) {
    let dir = tempdir();
    let stat = dir.join("uac.csv");
    let out = Command::new("sipp")
        .current_dir(&dir)
        .args([
            "-sn",
            "uac",
            "-i",
            "127.0.0.1",
            "-p",
            &free_port().to_string(),
        ])
        .arg(proxy.to_string())
        .args(["-t", "u1", "-r", &cps.to_string(), "-m", &calls.to_string()])
        .args(["-nostdin", "-trace_stat", "-stf"])
        .arg(&stat)
        .args(["-timeout", "60s", "-timeout_error"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("sipp runs (scripts/setup.sh installs sip-tester)");
    let text = std::fs::read_to_string(&stat).unwrap_or_else(|e| {
        panic!(
            "sipp wrote no statistics ({e}); status {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let _ = std::fs::remove_dir_all(&dir);
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header: Vec<&str> = lines.next().unwrap().split(';').collect();
    let last: Vec<&str> = lines.next_back().unwrap().split(';').collect();
    let col = |name: &str| -> u64 {
        let i = header.iter().position(|h| h.trim() == name).unwrap();
        last[i].trim().parse().unwrap()
    };
    (col("SuccessfulCall(C)"), col("FailedCall(C)"))
}

fn tempdir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!(
        "takt-siplab-{}-{}",
        std::process::id(),
        free_port()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn native_generator_and_sipp_agree_on_calls_completed_through_the_same_proxy() {
    let _turn = turn();
    const CALLS: u64 = 200;
    // SIPp's UAS behind the proxy
    let uas_port = free_port();
    let dir = tempdir();
    let _uas = Kill(
        Command::new("sipp")
            .current_dir(&dir)
            .args(["-sn", "uas", "-i", "127.0.0.1", "-p", &uas_port.to_string()])
            .args(["-t", "u1", "-nostdin"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("sipp runs (scripts/setup.sh installs sip-tester)"),
    );
    std::thread::sleep(Duration::from_millis(300));
    let server = proxy(Mode::Stateful, SocketAddr::from(([127, 0, 0, 1], uas_port)));
    // SIPp's UAC through it
    let (ok, failed) = sipp_uac(server.local_addr(), 200, CALLS);
    assert_eq!((ok, failed), (CALLS, 0), "sipp");
    // the native UAC through the same proxy to the same SIPp UAS
    let mut cfg = config(200.0, CALLS);
    cfg.role = Role::Uac;
    cfg.proxy = server.local_addr();
    let r = takt_siplab::gen::run(&cfg, &Cancel::default()).unwrap();
    let c = r.uac.as_ref().unwrap();
    assert_eq!((c.completed, c.failed), (ok, failed), "{r:#?}");

    // and SIPp's UAC against the native UAS
    let mut cfg = config(200.0, 1);
    cfg.role = Role::Uas;
    cfg.calls = None;
    cfg.duration = Some(Duration::from_secs(60));
    let g = Generator::bind(&cfg).unwrap();
    let server2 = proxy(Mode::Stateless, g.uas_addr().unwrap());
    let cancel = Cancel::default();
    let c2 = cancel.clone();
    let uas = std::thread::spawn(move || g.run(&c2));
    let (ok2, failed2) = sipp_uac(server2.local_addr(), 200, CALLS);
    cancel.cancel();
    let r = uas.join().unwrap().unwrap();
    assert_eq!(
        (ok2, failed2),
        (CALLS, 0),
        "sipp against the native UAS: {r:#?}"
    );
    assert_eq!(r.uas.as_ref().unwrap().answered, CALLS);
    server.stop();
    server2.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_generator_avoids_the_servers_cpus() {
    let mut c = config(10.0, 1);
    let online = takt_sched::CpuSet::online();
    assert!(c
        .avoid_cpus(&online)
        .unwrap_err()
        .to_string()
        .contains("no online CPU"));
    let first = online.iter().next().unwrap();
    let mut c = config(10.0, 1);
    if online.len() > 1 {
        c.avoid_cpus(&takt_sched::CpuSet::single(first)).unwrap();
        let cpus = c.spec.cpus().unwrap();
        assert!(!cpus.contains(first));
        assert_eq!(cpus.len(), online.len() - 1);
    }
}

/// Over TCP: 3 connections from the UAC.
fn tcp_config(cps: f64, calls: u64) -> GenConfig {
    let mut c = config(cps, calls);
    c.transport = Transport::Tcp;
    c.connections = 3;
    c
}

#[test]
fn a_tcp_run_through_takts_proxy_completes_every_call_in_both_modes() {
    let _turn = turn();
    const CALLS: u64 = 300;
    for mode in [Mode::Stateless, Mode::Stateful] {
        let cfg = tcp_config(300.0, CALLS);
        let mut g = Generator::bind(&cfg).unwrap();
        let server = proxy_over(Transport::Tcp, mode, g.uas_addr().unwrap());
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

/// A stateful TCP capacity search could lose every call of its later
/// trials: each completed call leaves its INVITE's record in the table for
/// 32 s (RFC 6026's Accepted state), so a few trials at tens of thousands
/// of calls/s filled the table, and every new INVITE was shed with 503
/// until the records' timers ran out. A burst of three tables' worth of
/// calls must leave the proxy serving every call of the next run: the
/// lingering records give their room up to new ones.
#[test]
fn a_burst_that_fills_the_transaction_table_leaves_the_next_run_served() {
    let _turn = turn();
    const TABLE: usize = 1024;
    // 1.5 s of calls, well inside their records' 32 s; not faster: on a
    // loaded machine this debug build's one worker falls behind a faster
    // burst, and the calls in flight (records that do not linger) pass
    // the table's high water in a shard, a rule of its own
    let mut g = Generator::bind(&tcp_config(2000.0, 3 * TABLE as u64)).unwrap();
    let uas = g.uas_addr().unwrap();
    let mut p = ProxyConfig::new(
        Mode::Stateful,
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
    p.max_transactions = TABLE;
    // only the table may refuse here: a loaded machine delays this debug
    // build's one worker by tens of ms in the burst, and the queue-delay
    // rule (a different rule, tested in takt-sip) would shed on that
    p.shed.queue_delay_ramp_ns = u64::MAX / 4;
    p.shed.queue_delay_ns = u64::MAX / 4;
    p.shed.drop_delay_ns = u64::MAX / 4;
    let mut s = ServerConfig::new(loopback0());
    s.tcp = true;
    s.workers = 1;
    s.spec = rt_spec("sip");
    let server = Server::start(p, s).expect("the proxy starts on loopback");
    g.set_proxy(server.local_addr()).unwrap();
    // `run` consumes the generator: its UAS's address is free again
    let burst = g.run(&Cancel::default()).unwrap();
    let after_burst = server.snapshot();
    // every record of the burst is still within its 32 s
    assert!(
        after_burst.transactions_reclaimed > 0,
        "the burst outgrew the table: {after_burst:#?}"
    );
    assert!(after_burst.transactions <= after_burst.transaction_capacity);
    let b = burst.uac.as_ref().unwrap();
    assert_eq!(b.attempted, 3 * TABLE as u64);
    assert_eq!(b.failures.get("503"), None, "{burst:#?}\n{after_burst:#?}");

    // the next run, the UAS on the same address (where the proxy sends)
    let mut cfg = tcp_config(200.0, 200);
    cfg.uas_listen = uas;
    let mut g = Generator::bind(&cfg).unwrap();
    g.set_proxy(server.local_addr()).unwrap();
    let r = g.run(&Cancel::default()).unwrap();
    let snap = server.stop();
    let c = r.uac.as_ref().unwrap();
    assert_eq!(c.completed, 200, "{r:#?}\n{snap:#?}");
    assert_eq!((c.failed, c.unfinished), (0, 0), "{r:#?}");
    assert_sent_is_received(&r);
    // the table was still full of the burst's records: the run's took
    // their room
    assert!(
        snap.transactions_reclaimed > after_burst.transactions_reclaimed,
        "{} then {}",
        after_burst.transactions_reclaimed,
        snap.transactions_reclaimed
    );
    assert!(snap.transactions_lingering <= snap.transactions);
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
    let mut cfg = tcp_config(500.0, 500); // about 1 s of calls
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
    let mut cfg = tcp_config(100.0, 10);
    cfg.role = Role::Uac;
    cfg.proxy = addr;
    let e = takt_siplab::gen::run(&cfg, &Cancel::default()).unwrap_err();
    assert!(e.to_string().contains("over TCP"), "{e}");
}

/// Under a real-time policy (the commands' default where permitted) no
/// loop of the generator spins: the UAC sleeps in `ppoll` up to each
/// planned send, and an idle UAS blocks — so real-time throttling
/// (`sched_rt_runtime_us`) never stops them. At the default policy the
/// UAC does spin the last stretch, which shows the check can fail.
#[test]
fn under_a_realtime_policy_no_generator_loop_spins() {
    let _turn = turn();
    let g = takt_siplab::gen::GenPolicy::choose(None).unwrap();
    if !g.is_realtime() {
        // unprivileged: no real-time generator to check (CI runs as root)
        assert!(g.warning().is_some());
        return;
    }
    let mut cfg = config(2_000.0, 2_000);
    cfg.spec = g.apply(ThreadSpec::new("gen"));
    let r = through_proxy(Mode::Stateless, &cfg);
    let uac = &r.uac.as_ref().unwrap().thread;
    assert_eq!(uac.policy, "fifo:prio=10", "{uac:?}");
    assert_eq!(uac.spin_s, 0.0, "{uac:?}");
    assert_eq!(r.uas.as_ref().unwrap().thread.policy, "fifo:prio=10");
    // the same run at the default policy spins towards each send
    cfg.spec = ThreadSpec::new("gen").with_policy(takt_sched::SchedPolicy::DEFAULT);
    let r = through_proxy(Mode::Stateless, &cfg);
    let uac = &r.uac.as_ref().unwrap().thread;
    assert_eq!(uac.policy, "other");
    assert!(uac.spin_s > 0.0, "{uac:?}");
    // a real-time UAS with nothing to answer blocks: a second of it costs
    // milliseconds of CPU, not the second a busy loop would
    let mut uas = config(1.0, 1);
    uas.role = Role::Uas;
    uas.calls = None;
    uas.duration = Some(Duration::from_secs(1));
    uas.spec = g.apply(ThreadSpec::new("gen"));
    let r = takt_siplab::gen::run(&uas, &Cancel::default()).unwrap();
    let t = &r.uas.as_ref().unwrap().thread;
    assert_eq!(t.policy, "fifo:prio=10");
    assert!(t.wall_s >= 0.9 && t.cpu_s < 0.05, "{t:?}");
}

/// A drain set to end on quiet ends once nothing has arrived for that
/// long (here: never, the proxy is a black hole), not at its bound; the
/// calls are then unfinished, as after a full drain.
#[test]
fn a_quiet_drain_ends_early_and_leaves_the_silent_calls_unfinished() {
    let _turn = turn();
    // a "proxy" that takes every datagram and answers none
    let hole = std::net::UdpSocket::bind(loopback0()).unwrap();
    let run = |quiet: Option<Duration>| {
        let mut c = config(2_000.0, 200);
        c.proxy = hole.local_addr().unwrap();
        c.role = Role::Uac;
        c.timers.retransmit = false;
        c.drain = Duration::from_millis(1_500);
        c.drain_quiet = quiet;
        let r = takt_siplab::gen::run(&c, &Cancel::default()).unwrap();
        let u = r.uac.unwrap();
        assert_eq!((u.attempted, u.unfinished), (200, 200));
        r.wall_s
    };
    let quiet = run(Some(Duration::from_millis(100)));
    let full = run(None);
    // 0.1 s of calls, then 0.1 s of quiet (not the 1.5 s bound)
    assert!(quiet < 0.7, "{quiet}");
    assert!(full >= 1.5, "{full}");
    // it is refused where silence is normal
    let mut c = config(2_000.0, 200);
    c.drain_quiet = Some(Duration::from_millis(100));
    assert!(c.validate().is_err(), "retransmissions on");
}
