//! The built `takt-peer-ractor`: node A and node B in two processes, driven
//! as `takt bench remote` drives them, and through the library.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use takt_peer_ractor::{RactorEcho, RactorPeerError, READY};

const BIN: &str = env!("CARGO_BIN_EXE_takt-peer-ractor");

/// The tests that start node A in this process take turns (one instance
/// per process).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn gone(pid: u32) -> bool {
    // A zombie is gone too: it answers nothing and holds no socket.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s
            .rsplit_once(')')
            .is_some_and(|(_, r)| r.trim_start().starts_with('Z')),
    }
}

fn wait_exit(child: &mut std::process::Child, within: Duration) -> std::process::ExitStatus {
    let t0 = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if t0.elapsed() > within {
            let _ = child.kill();
            panic!("{} did not end within {within:?}", child.id());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `node-a` as the bench uses it: `ready`, round trips of every size the
/// bench sends, calls in flight, a refused command, and an exit (node B
/// reaped) once its stdin closes.
#[test]
fn node_a_answers_the_bench_protocol_and_ends_with_its_stdin() {
    let mut a = Command::new(BIN)
        .arg("node-a")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = a.stdin.take().unwrap();
    let mut out = BufReader::new(a.stdout.take().unwrap()).lines();
    let mut next = || out.next().expect("a line").unwrap();
    let ready = next();
    let b: u32 = ready
        .strip_prefix("ready ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{ready:?}"));
    assert!(!gone(b));
    for size in [0, 64, 1024, 65536] {
        writeln!(stdin, "rtt {size}").unwrap();
        let l = next();
        let ns: u64 = l.strip_prefix("ok ").unwrap().parse().unwrap();
        assert!(ns > 0 && ns < 10_000_000_000, "{size} B: {l}");
    }
    for in_flight in [1, 16, 256] {
        writeln!(stdin, "saturate 64 {in_flight} 50000000").unwrap();
        let l = next();
        let w: Vec<u64> = l
            .strip_prefix("ok ")
            .unwrap()
            .split(' ')
            .map(|w| w.parse().unwrap())
            .collect();
        assert!(w[0] >= in_flight, "{in_flight} in flight: {l}");
        assert!(w[1] >= 50_000_000, "{l}");
    }
    writeln!(stdin, "rtt 99999999999").unwrap();
    assert!(next().starts_with("err BYTES 99999999999 is above the limit"));
    writeln!(stdin, "rtt 1").unwrap();
    assert!(next().starts_with("ok "));
    drop(stdin);
    assert!(wait_exit(&mut a, Duration::from_secs(10)).success());
    assert!(gone(b), "node B {b} outlived node A");
}

/// Through the library: dropping node A kills and reaps node B; a second
/// instance in the same process is refused while the first lives.
#[test]
fn the_library_reaps_node_b_and_allows_one_instance_at_a_time() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let args = ["node-b".to_string()];
    let mut echo = RactorEcho::start(BIN.as_ref(), &args).unwrap();
    let err = RactorEcho::start(BIN.as_ref(), &args).unwrap_err();
    assert!(matches!(err, RactorPeerError::Busy), "{err}");
    echo.round_trip(&[1; 64]).unwrap();
    let pid = echo.node_b_pid();
    drop(echo);
    assert!(gone(pid), "node B {pid} outlived node A");
}

/// Node B ends by itself when its stdin closes (node A died).
#[test]
fn node_b_ends_when_its_stdin_closes() {
    let mut b = Command::new(BIN)
        .args(["node-b", "takt-orphan"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = b.stdin.take();
    let line = BufReader::new(b.stdout.take().unwrap())
        .lines()
        .next()
        .unwrap()
        .unwrap();
    let port: u16 = line.strip_prefix(READY).unwrap().trim().parse().unwrap();
    assert!(port > 0);
    drop(stdin);
    assert!(wait_exit(&mut b, Duration::from_secs(10)).success());
}

/// Bad arguments get the usage and status 2; a node B that never serves is
/// a clear error, not a hang.
#[test]
fn bad_arguments_and_a_node_b_that_exits_are_clear_errors() {
    for args in [
        &[][..],
        &["node-b"][..],
        &["node-c"][..],
        &["node-a", "x"][..],
    ] {
        let o = Command::new(BIN).args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&o.stderr).contains("usage"));
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let err = RactorEcho::start("/bin/true".as_ref(), &[]).unwrap_err();
    assert!(
        matches!(&err, RactorPeerError::Child(m) if m.contains("exited before serving")),
        "{err}"
    );
    let err = RactorEcho::start("/nonexistent/takt-peer-ractor".as_ref(), &[]).unwrap_err();
    assert!(matches!(err, RactorPeerError::Child(_)), "{err}");
}
