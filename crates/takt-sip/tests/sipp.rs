//! End to end with real SIPp: `sipp -sn uac` → takt proxy → `sipp -sn uas`
//! on 127.0.0.1, in both modes, every worker model, and over TCP. Every
//! call must succeed.
//!
//! Needs `sipp` (Debian package `sip-tester`, installed by
//! scripts/setup.sh). When it is missing the tests fail if `CI` is set and
//! are skipped with a message otherwise.

use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use takt_sched::ThreadSpec;
use takt_sip::proxy::build::Local;
use takt_sip::proxy::{Mode, ProxyConfig, Target, Transport};
use takt_sip::transport::{Server, ServerConfig, WorkerModel};

const CALLS: u32 = 30;
const RATE: u32 = 30;
const DEADLINE: Duration = Duration::from_secs(60);

fn sipp() -> Option<String> {
    let found = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("sipp"))
            .find(|f| f.is_file())
            .map(|f| f.display().to_string())
    });
    if found.is_none() {
        if std::env::var_os("CI").is_some() {
            panic!(
                "sipp is not installed (Debian package sip-tester); scripts/setup.sh installs it"
            );
        }
        eprintln!("skipping: sipp is not installed (apt-get install sip-tester)");
    }
    found
}

/// A port free for both UDP and TCP right now.
fn free_port() -> u16 {
    loop {
        let u = UdpSocket::bind("127.0.0.1:0").unwrap();
        let p = u.local_addr().unwrap().port();
        if TcpListener::bind(("127.0.0.1", p)).is_ok() {
            return p;
        }
    }
}

/// Kills the child on every path out of the test.
struct Kid(Child);

impl Drop for Kid {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait(k: &mut Kid, deadline: Instant) -> Option<i32> {
    loop {
        if let Ok(Some(st)) = k.0.try_wait() {
            return st.code();
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn run(mode: Mode, model: WorkerModel, transport: Transport) {
    if std::env::var_os("TAKT_UNDER_VALGRIND").is_some() {
        // these ran natively in the test step; under memcheck the proxy is
        // too slow for SIPp's timers and the sockets' unsafe code is covered
        // by the transport tests
        eprintln!("skipping under valgrind");
        return;
    }
    let Some(sipp) = sipp() else {
        return;
    };
    let uas_port = free_port();
    let uac_port = free_port();
    let t_flag: &[&str] = match transport {
        Transport::Udp => &["-t", "u1"],
        Transport::Tcp => &["-t", "t1"],
    };
    let mut pc = ProxyConfig::new(
        mode,
        Local {
            host: "127.0.0.1".into(),
            port: 0,
        },
    );
    pc.next_hop = Some(Target {
        addr: SocketAddr::from(([127, 0, 0, 1], uas_port)),
        transport,
        conn: None,
    });
    let mut sc = ServerConfig::new("127.0.0.1:0".parse().unwrap());
    sc.model = model;
    sc.workers = 2;
    sc.spec = ThreadSpec::new("sipp-test");
    let server = Server::start(pc, sc).expect("proxy starts");
    let proxy = server.local_addr();

    let uas = Kid(Command::new(&sipp)
        .args([
            "-sn",
            "uas",
            "-i",
            "127.0.0.1",
            "-p",
            &uas_port.to_string(),
            "-nostdin",
        ])
        .args(t_flag)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("sipp uas starts"));
    std::thread::sleep(Duration::from_millis(300));
    let mut uac = Kid(Command::new(&sipp)
        .args(["-sn", "uac", "-i", "127.0.0.1", "-p", &uac_port.to_string()])
        .arg(proxy.to_string())
        .args([
            "-r",
            &RATE.to_string(),
            "-m",
            &CALLS.to_string(),
            "-nostdin",
        ])
        .args(["-timeout", "40s", "-timeout_error"])
        .args(t_flag)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("sipp uac starts"));
    let code = wait(&mut uac, Instant::now() + DEADLINE);
    let snap = server.stop();
    drop(uas);
    let table = snap.json();
    assert_eq!(
        code,
        Some(0),
        "sipp uac: not every call succeeded ({mode:?} {model:?} {transport:?})\n{table}"
    );
    let invites = &snap.kinds["invite"];
    assert!(invites.outcomes["forwarded"] >= u64::from(CALLS), "{table}");
    let byes = &snap.kinds["bye"];
    assert!(byes.outcomes["forwarded"] >= u64::from(CALLS), "{table}");
    assert!(invites.t_sip.count >= u64::from(CALLS));
    if transport == Transport::Udp {
        assert!(
            invites.k_rcv.count >= u64::from(CALLS),
            "kernel timestamps recorded\n{table}"
        );
    }
    if mode == Mode::Stateful {
        // the transactions of the calls are still held (timers J/L run 32 s)
        assert!(snap.transactions > 0, "{table}");
    }
}

#[test]
fn stateless_shared() {
    run(Mode::Stateless, WorkerModel::Shared, Transport::Udp);
}

#[test]
fn stateless_reuseport() {
    run(Mode::Stateless, WorkerModel::Reuseport, Transport::Udp);
}

#[test]
fn stateless_batched() {
    run(Mode::Stateless, WorkerModel::Batched, Transport::Udp);
}

#[test]
fn stateful_shared() {
    run(Mode::Stateful, WorkerModel::Shared, Transport::Udp);
}

#[test]
fn stateful_reuseport() {
    run(Mode::Stateful, WorkerModel::Reuseport, Transport::Udp);
}

#[test]
fn stateful_batched() {
    run(Mode::Stateful, WorkerModel::Batched, Transport::Udp);
}

#[test]
fn stateful_tcp() {
    run(Mode::Stateful, WorkerModel::Shared, Transport::Tcp);
}

#[test]
fn stateless_tcp() {
    run(Mode::Stateless, WorkerModel::Reuseport, Transport::Tcp);
}
