//! The SIP laboratory's systems under test, each started as its own
//! process: OPTIONS and INVITE go through it to a test UAS and back, its
//! `/proc` counters are read, and stopping (or dropping) it leaves no
//! process behind. Kamailio comes from scripts/setup.sh; a missing one
//! fails these tests.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use takt_sched::CpuSet;
use takt_sip::proxy::Mode;
use takt_sip::transport::WorkerModel;
use takt_siplab::net::VethNet;
use takt_siplab::server_stats::ServerWindow;
use takt_siplab::target::{TaktOptions, Target, TargetKind, TargetSetup, TcpSetup};

/// A UAS on its own thread: answers every request with 200 OK to the
/// request's source address (as SIPp and takt's generator do), copying
/// the headers a response carries.
struct Uas {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Uas {
    fn start() -> Uas {
        Uas::start_on("127.0.0.1".parse().unwrap())
    }

    fn start_on(ip: IpAddr) -> Uas {
        let s = UdpSocket::bind(SocketAddr::new(ip, 0)).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        let addr = s.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut buf = [0u8; 65536];
            while !st.load(Ordering::Acquire) {
                let Ok((n, from)) = s.recv_from(&mut buf) else {
                    continue;
                };
                let req = String::from_utf8_lossy(&buf[..n]).into_owned();
                if req.starts_with("SIP/2.0") || req.starts_with("ACK ") {
                    continue;
                }
                let mut resp = String::from("SIP/2.0 200 OK\r\n");
                for line in req.lines() {
                    let lower = line.to_ascii_lowercase();
                    if ["via:", "record-route:", "from:", "call-id:", "cseq:"]
                        .iter()
                        .any(|h| lower.starts_with(h))
                    {
                        resp += line;
                        resp += "\r\n";
                    } else if lower.starts_with("to:") {
                        resp += line;
                        resp += ";tag=uas1\r\n";
                    }
                }
                resp += &format!("Contact: <sip:uas@{addr}>\r\nContent-Length: 0\r\n\r\n");
                let _ = s.send_to(resp.as_bytes(), from);
            }
        });
        Uas {
            addr,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Uas {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn request(method: &str, uac: SocketAddr, uas: SocketAddr, n: u32) -> String {
    format!(
        "{method} sip:uas@{uas} SIP/2.0\r\n\
         Via: SIP/2.0/UDP {uac};branch=z9hG4bK-test-{method}-{n}\r\n\
         Max-Forwards: 70\r\n\
         From: <sip:uac@{uac}>;tag=uac{n}\r\n\
         To: <sip:uas@{uas}>\r\n\
         Call-ID: target-test-{method}-{n}@{uac}\r\n\
         CSeq: 1 {method}\r\n\
         Contact: <sip:uac@{uac}>\r\n\
         Content-Length: 0\r\n\r\n"
    )
}

/// Sends `method` through the target and waits for its final response
/// (provisionals such as a stateful proxy's 100 Trying are skipped).
fn through(t: &Target, uac: &UdpSocket, uas: SocketAddr, method: &str, n: u32) {
    let me = uac.local_addr().unwrap();
    uac.send_to(request(method, me, uas, n).as_bytes(), t.listen())
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut buf = [0u8; 65536];
    loop {
        assert!(
            Instant::now() < deadline,
            "{}: no final response to {method}",
            t.name()
        );
        let Ok((len, _)) = uac.recv_from(&mut buf) else {
            continue;
        };
        let r = String::from_utf8_lossy(&buf[..len]);
        if r.starts_with("SIP/2.0 1") {
            continue;
        }
        assert!(r.starts_with("SIP/2.0 200"), "{}: {r}", t.name());
        assert!(
            r.contains(&format!("CSeq: 1 {method}")),
            "{}: {r}",
            t.name()
        );
        assert!(r.contains(&format!("target-test-{method}-{n}")), "{r}");
        // the proxy's own Via is gone: ours is the top one
        let top_via = r
            .lines()
            .find(|l| l.to_ascii_lowercase().starts_with("via:"))
            .unwrap();
        assert!(top_via.contains(&me.to_string()), "{}: {r}", t.name());
        return;
    }
}

fn server_cpu() -> CpuSet {
    let online = CpuSet::online();
    CpuSet::single(online.iter().last().unwrap())
}

fn gone(pids: &[i32]) -> bool {
    pids.iter().all(|p| {
        std::fs::read_to_string(format!("/proc/{p}/stat"))
            .map(|s| {
                s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            })
            .unwrap_or(true)
    })
}

fn exercise(kind: TargetKind, mode: Mode) {
    exercise_on(kind, mode, None)
}

fn exercise_on(kind: TargetKind, mode: Mode, net: Option<&VethNet>) {
    let ip: IpAddr = net.map_or("127.0.0.1".parse().unwrap(), |n| n.root_ip);
    let uas = Uas::start_on(ip);
    let uac = UdpSocket::bind(SocketAddr::new(ip, 0)).unwrap();
    uac.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut setup = TargetSetup::new(uas.addr);
    setup.mode = mode;
    setup.workers = 2;
    setup.cpus = Some(server_cpu());
    setup.sched = Some("batch".parse().unwrap());
    setup.takt_exe = Some(env!("CARGO_BIN_EXE_takt").into());
    if let Some(n) = net {
        setup.listen_ip = n.server_ip;
        setup.netns = Some(n.namespace().to_string());
    }
    let mut t = kind
        .start(&setup)
        .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
    let pids = t.pids();
    assert!(!pids.is_empty(), "{}", t.name());
    if let Some(n) = net {
        assert_eq!(t.listen().ip(), n.server_ip, "{}", t.name());
        // the server's sockets live in the namespace, not here
        let here = takt_siplab::server_stats::udp_sockets(None).unwrap();
        assert!(here.iter().all(|e| e.local != t.listen()), "{}", t.name());
    }
    // every thread of every process on the server's CPU, under its policy
    for (pid, tid) in t.threads() {
        let base = format!("/proc/{pid}/task/{tid}");
        let status = std::fs::read_to_string(format!("{base}/status")).unwrap();
        let cpus = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .unwrap()
            .trim();
        assert_eq!(cpus, server_cpu().to_string(), "{} thread {tid}", t.name());
        let stat = std::fs::read_to_string(format!("{base}/stat")).unwrap();
        let policy: u32 = stat
            .rsplit(')')
            .next()
            .unwrap()
            .split_whitespace()
            .nth(38)
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(
            policy,
            libc::SCHED_BATCH as u32,
            "{} thread {tid}",
            t.name()
        );
    }
    let before = t.sample().unwrap();
    // takt's default (shared, lifo wake) puts new INVITEs on a second
    // socket of the same port (takt-sip's INVITE split)
    let sockets = match &kind {
        TargetKind::Takt(o) if o.model == WorkerModel::Shared => 2,
        _ => 1,
    };
    assert_eq!(
        before.sockets.len(),
        sockets,
        "{}: {:?}",
        t.name(),
        before.sockets
    );
    for n in 0..3 {
        through(&t, &uac, uas.addr, "OPTIONS", n);
        through(&t, &uac, uas.addr, "INVITE", n);
    }
    t.check_alive().unwrap();
    let w = ServerWindow::between(&before, &t.sample().unwrap());
    assert_eq!(w.socket_drops, 0);
    assert!(!w.threads.is_empty());
    if let Some(s) = t.takt_stats() {
        let s = s.unwrap();
        assert!(s["messages"].as_u64().unwrap() >= 12, "{s}");
        assert!(s["kinds"]["invite"]["count"].as_u64().unwrap() >= 3, "{s}");
    }
    if let Some(shm) = t.shm() {
        let shm = shm.unwrap();
        assert_eq!(
            shm.total,
            u64::from(takt_siplab::target::kamailio::SHM_MB) << 20
        );
        assert!(shm.max_used > 0 && shm.peak_fraction() < 0.5, "{shm:?}");
    }
    let name = t.name();
    t.stop().unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(gone(&pids), "{name}: left {pids:?}");
}

#[test]
fn takt_stateless_and_stateful() {
    exercise(TargetKind::Takt(TaktOptions::default()), Mode::Stateless);
    exercise(TargetKind::Takt(TaktOptions::default()), Mode::Stateful);
}

#[test]
fn null_relay() {
    exercise(TargetKind::NullRelay, Mode::Stateless);
}

#[test]
fn kamailio_stateless_and_stateful() {
    exercise(TargetKind::Kamailio, Mode::Stateless);
    exercise(TargetKind::Kamailio, Mode::Stateful);
}

/// With `tcp` set a target also answers over TCP on its listen port: an
/// OPTIONS from a TCP client goes through it to the (UDP) UAS, and the
/// 200 comes back over the client's connection.
fn over_tcp(kind: TargetKind, mode: Mode) {
    use std::io::{Read, Write};
    let uas = Uas::start();
    let mut setup = TargetSetup::new(uas.addr);
    setup.mode = mode;
    setup.workers = 2;
    setup.takt_exe = Some(env!("CARGO_BIN_EXE_takt").into());
    setup.tcp = Some(TcpSetup::for_connections(100, 10));
    let t = kind
        .start(&setup)
        .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
    let mut c = std::net::TcpStream::connect(t.listen())
        .unwrap_or_else(|e| panic!("{}: no TCP listener: {e}", t.name()));
    let me = c.local_addr().unwrap();
    let req = request("OPTIONS", me, uas.addr, 7).replace("SIP/2.0/UDP", "SIP/2.0/TCP");
    c.write_all(req.as_bytes()).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut got = String::new();
    let mut buf = [0u8; 4096];
    while !got.contains("SIP/2.0 200") || !got.ends_with("\r\n\r\n") {
        let n = c
            .read(&mut buf)
            .unwrap_or_else(|e| panic!("{}: no answer over TCP: {e} ({got})", t.name()));
        assert!(n > 0, "{}: closed ({got})", t.name());
        got += &String::from_utf8_lossy(&buf[..n]);
    }
    assert!(got.contains("target-test-OPTIONS-7"), "{}: {got}", t.name());
    if let Some(s) = t.takt_stats() {
        let s = s.unwrap();
        assert_eq!(s["tcp"]["accepted"], 1, "{s}");
    }
    let name = t.name();
    t.stop().unwrap_or_else(|e| panic!("{name}: {e}"));
}

#[test]
fn takt_and_kamailio_over_tcp() {
    over_tcp(TargetKind::Takt(TaktOptions::default()), Mode::Stateless);
    over_tcp(TargetKind::Kamailio, Mode::Stateless);
    over_tcp(TargetKind::Kamailio, Mode::Stateful);
}

#[test]
fn a_dropped_target_leaves_nothing_behind() {
    let uas = Uas::start();
    let mut setup = TargetSetup::new(uas.addr);
    setup.takt_exe = Some(env!("CARGO_BIN_EXE_takt").into());
    for kind in [TargetKind::NullRelay, TargetKind::Kamailio] {
        let t = kind.start(&setup).unwrap();
        let pids = t.pids();
        assert!(!pids.is_empty());
        drop(t);
        assert!(gone(&pids), "{kind:?} left {pids:?}");
    }
}

#[test]
fn a_server_that_cannot_start_is_a_clear_error() {
    let mut setup = TargetSetup::new("127.0.0.1:9".parse().unwrap());
    setup.takt_exe = Some(env!("CARGO_BIN_EXE_takt").into());
    // an address this host does not have: the proxy exits at once
    setup.listen_ip = "192.0.2.1".parse().unwrap();
    let e = TargetKind::Takt(TaktOptions::default())
        .start(&setup)
        .unwrap_err()
        .to_string();
    assert!(e.contains("takt did not start"), "{e}");
    assert!(e.contains("starting the proxy"), "{e}");
}

#[test]
fn targets_behind_a_veth_pair() {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        let e = VethNet::create(&server_cpu()).unwrap_err().to_string();
        assert!(e.contains("needs root"), "{e}");
        return;
    }
    let net = VethNet::create(&server_cpu()).unwrap();
    let ns = net.namespace().to_string();
    let rps = std::process::Command::new("ip")
        .args([
            "netns",
            "exec",
            &ns,
            "sh",
            "-c",
            "cat /sys/class/net/tkss*/queues/rx-0/rps_cpus",
        ])
        .output()
        .unwrap();
    let want = 1u64 << server_cpu().iter().last().unwrap();
    let got = u64::from_str_radix(
        String::from_utf8_lossy(&rps.stdout)
            .trim()
            .replace(',', "")
            .trim_start_matches('0'),
        16,
    );
    assert_eq!(got.ok(), Some(want), "{rps:?}");
    exercise_on(TargetKind::NullRelay, Mode::Stateless, Some(&net));
    exercise_on(
        TargetKind::Takt(TaktOptions::default()),
        Mode::Stateful,
        Some(&net),
    );
    exercise_on(TargetKind::Kamailio, Mode::Stateful, Some(&net));
    drop(net);
    let list = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&list.stdout).contains(&ns),
        "namespace {ns} left behind"
    );
}

fn state(pid: i32) -> char {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit(')').next()?.trim_start().chars().next())
        .unwrap_or('?')
}

#[test]
fn paused_targets_resume_and_stop() {
    let uas = Uas::start();
    let uac = UdpSocket::bind("127.0.0.1:0").unwrap();
    uac.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut setup = TargetSetup::new(uas.addr);
    setup.takt_exe = Some(env!("CARGO_BIN_EXE_takt").into());
    for (kind, mode) in [
        (TargetKind::Kamailio, Mode::Stateful),
        (TargetKind::NullRelay, Mode::Stateless),
    ] {
        setup.mode = mode;
        let mut t = kind.start(&setup).unwrap();
        let pids = t.pids();
        t.pause();
        std::thread::sleep(Duration::from_millis(50));
        assert!(pids.iter().all(|&p| state(p) == 'T'), "{kind:?}");
        t.resume();
        through(&t, &uac, uas.addr, "OPTIONS", 7);
        through(&t, &uac, uas.addr, "INVITE", 7);
        // a paused server is continued, then stopped cleanly
        t.pause();
        t.stop().unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        assert!(gone(&pids), "{kind:?} left {pids:?}");
    }
}
