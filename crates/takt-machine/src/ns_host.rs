//! A second host made on this machine: a `takt machine --serve` process
//! in a network namespace joined to the root namespace by a veth pair
//! (the report's "remote" machine, minus the wire).
//!
//! The namespace and pair are takt-host's ([`takt_host::netns::Veth`]):
//! `takt-mPID`, devices `tkmNa`/`tkmNb`, a /30 in 10.213.0.0/16 chosen
//! from the pid. The peer process is registered with the cleanup registry
//! as soon as it runs: it is killed, and the pair and the namespace
//! deleted, when the run ends or is interrupted.
//!
//! Needs CAP_NET_ADMIN and CAP_SYS_ADMIN. Without root, an interactive run
//! asks whether to use `sudo` for these commands; a non-interactive run
//! skips the namespace host and says why.

use std::io::{BufRead, IsTerminal, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::process::Stdio;
use std::time::{Duration, Instant};

use takt_host::cleanup::{register, Guard, Item};
use takt_host::netns::{Veth, VethSpec};
use takt_host::HostError;

/// The port the namespace peer listens on.
pub(crate) const PEER_PORT: u16 = 7878;
/// How long the peer may take to answer.
const PEER_START: Duration = Duration::from_secs(5);

/// Why there is no namespace host (the row's skip reason).
#[derive(Debug, thiserror::Error)]
pub(crate) enum NsHostError {
    /// Not root, and sudo declined.
    #[error("not measured: needs root for ip netns/veth, and sudo was declined")]
    SudoDeclined,
    /// Not root, and nobody to ask.
    #[error("not measured: needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) for ip netns and veth; run as root or interactively to be asked about sudo")]
    NotRoot,
    /// The namespace or the pair could not be made.
    #[error(transparent)]
    Host(#[from] HostError),
    /// No program to run inside.
    #[error("no peer command to run in the namespace")]
    NoPeerCommand,
    /// The peer did not start.
    #[error("cannot start the namespace peer: {0}")]
    PeerStart(std::io::Error),
    /// The peer did not answer.
    #[error("the namespace peer did not answer on {addr} within {} s", PEER_START.as_secs())]
    PeerSilent {
        /// Where it should listen.
        addr: SocketAddr,
    },
}

/// A namespace host; dropping it removes the peer, the pair and the
/// namespace.
#[derive(Debug)]
pub(crate) struct NsHost {
    /// The peer's address (inside the namespace).
    pub(crate) addr: SocketAddr,
    /// Names, for the report.
    pub(crate) name: String,
    // Fields drop in declaration order: the peer first, then the namespace.
    _peer: Guard,
    _veth: Veth,
}

/// Asks on the terminal; `false` unless the answer starts with `y`.
fn ask(question: &str) -> bool {
    eprint!("{question} [y/N] ");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).is_ok()
        && line.trim_start().to_ascii_lowercase().starts_with('y')
}

/// This process's names and addresses.
fn spec(sudo: bool) -> VethSpec {
    let pid = std::process::id();
    let subnet = (pid % 16_000) * 4; // a /30 inside 10.213.0.0/16
    let ip = |host: u32| {
        let v = subnet + host;
        Ipv4Addr::new(10, 213, (v / 256 % 256) as u8, (v % 256) as u8)
    };
    VethSpec {
        namespace: format!("takt-m{pid}"),
        root_dev: format!("tkm{}a", pid % 100_000),
        ns_dev: format!("tkm{}b", pid % 100_000),
        root_ip: ip(1),
        ns_ip: ip(2),
        sudo,
    }
}

/// Creates the namespace host. `peer_command` is `[program, args...]`; the
/// listen address is appended. Errors say what was skipped and why.
pub(crate) fn create(
    peer_command: &[String],
    root: bool,
    interactive: bool,
) -> Result<NsHost, NsHostError> {
    let sudo = if root {
        false
    } else if interactive && std::io::stdin().is_terminal() {
        if ask(
            "takt machine: the namespace host needs root (ip netns, veth). Run those `ip` commands with sudo?",
        ) {
            true
        } else {
            return Err(NsHostError::SudoDeclined);
        }
    } else {
        return Err(NsHostError::NotRoot);
    };
    let veth = Veth::create(spec(sudo))?;
    let s = veth.spec().clone();
    let addr = SocketAddr::from((s.ns_ip, PEER_PORT));
    let (prog, args) = peer_command
        .split_first()
        .ok_or(NsHostError::NoPeerCommand)?;
    let child = veth
        .exec(prog)
        .args(args)
        .arg(addr.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(NsHostError::PeerStart)?;
    let peer_guard = register(Item::Child(child.id() as i32));
    // The child is reaped by the guard; forget the std handle.
    std::mem::forget(child);
    let t0 = Instant::now();
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        if t0.elapsed() > PEER_START {
            return Err(NsHostError::PeerSilent { addr });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(NsHost {
        addr,
        name: format!(
            "{} ({} {} <-> {} {})",
            s.namespace, s.root_dev, s.root_ip, s.ns_dev, s.ns_ip
        ),
        _peer: peer_guard,
        _veth: veth,
    })
}
