//! A second host made on this machine: a network namespace joined to the
//! root namespace by a veth pair, with a `takt machine --serve` process
//! running inside (the report's "remote" machine, minus the wire).
//!
//! Setup with iproute2 (`ip netns add`, `ip link add ... type veth peer
//! ... netns`, addresses from 10.213.0.0/16 on a /30 chosen from the pid,
//! links up), the peer started with `ip netns exec`. Everything is
//! registered with [`cleanup`](crate::cleanup) as soon as it exists:
//! the peer process is killed and the namespace deleted (which deletes
//! both veth ends) when the run ends or is interrupted.
//!
//! Needs CAP_NET_ADMIN and CAP_SYS_ADMIN. Without root, an interactive run
//! asks whether to use `sudo` for these commands; a non-interactive run
//! skips the namespace host and says why.

use std::io::{BufRead, IsTerminal, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::cleanup::{register, Guard, Item};

/// The port the namespace peer listens on.
pub(crate) const PEER_PORT: u16 = 7878;

/// A namespace host; dropping it removes the peer and the namespace.
#[derive(Debug)]
pub(crate) struct NsHost {
    /// The peer's address (inside the namespace).
    pub(crate) addr: SocketAddr,
    /// Names, for the report.
    pub(crate) name: String,
    // Fields drop in declaration order: the peer first, then the veth pair
    // (deleted synchronously, rather than when the kernel gets round to
    // destroying the namespace), then the namespace.
    _peer: Guard,
    _link: Guard,
    _ns: Guard,
}

fn run(sudo: bool, args: &[&str]) -> Result<(), String> {
    let (prog, rest): (&str, Vec<&str>) = if sudo {
        ("sudo", [&["-n", "ip"][..], args].concat())
    } else {
        ("ip", args.to_vec())
    };
    let out = Command::new(prog)
        .args(&rest)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run `{prog}`: {e} (install iproute2)"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`{prog} {}` failed: {}",
            rest.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Asks on the terminal; `false` unless the answer starts with `y`.
fn ask(question: &str) -> bool {
    eprint!("{question} [y/N] ");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).is_ok()
        && line.trim_start().to_ascii_lowercase().starts_with('y')
}

/// Creates the namespace host. `peer_command` is `[program, args...]`; the
/// listen address is appended. Errors say what was skipped and why.
pub(crate) fn create(
    peer_command: &[String],
    root: bool,
    interactive: bool,
) -> Result<NsHost, String> {
    let sudo = if root {
        false
    } else if interactive && std::io::stdin().is_terminal() {
        if ask(
            "takt machine: the namespace host needs root (ip netns, veth). Run those `ip` commands with sudo?",
        ) {
            true
        } else {
            return Err("not measured: needs root for ip netns/veth, and sudo was declined".into());
        }
    } else {
        return Err(
            "not measured: needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) for ip netns and veth; run as root or interactively to be asked about sudo".into(),
        );
    };
    let pid = std::process::id();
    let name = format!("takt-m{pid}");
    let host_if = format!("tkm{}a", pid % 100_000);
    let ns_if = format!("tkm{}b", pid % 100_000);
    let subnet = (pid % 16_000) * 4; // a /30 inside 10.213.0.0/16
    let ip = |host: u32| {
        let v = subnet + host;
        format!("10.213.{}.{}", v / 256 % 256, v % 256)
    };
    let (host_ip, peer_ip) = (ip(1), ip(2));
    run(sudo, &["netns", "add", &name])?;
    let ns_guard = register(if sudo {
        Item::Command(vec![
            "sudo".into(),
            "-n".into(),
            "ip".into(),
            "netns".into(),
            "del".into(),
            name.clone(),
        ])
    } else {
        Item::Netns(name.clone())
    });
    run(
        sudo,
        &[
            "link", "add", &host_if, "type", "veth", "peer", "name", &ns_if, "netns", &name,
        ],
    )?;
    let link_guard = register(Item::Command(
        [
            if sudo { &["sudo", "-n"][..] } else { &[][..] },
            &["ip", "link", "del", &host_if][..],
        ]
        .concat()
        .into_iter()
        .map(String::from)
        .collect(),
    ));
    run(
        sudo,
        &["addr", "add", &format!("{host_ip}/30"), "dev", &host_if],
    )?;
    run(sudo, &["link", "set", &host_if, "up"])?;
    run(
        sudo,
        &[
            "-n",
            &name,
            "addr",
            "add",
            &format!("{peer_ip}/30"),
            "dev",
            &ns_if,
        ],
    )?;
    run(sudo, &["-n", &name, "link", "set", &ns_if, "up"])?;
    run(sudo, &["-n", &name, "link", "set", "lo", "up"])?;
    let addr: SocketAddr = format!("{peer_ip}:{PEER_PORT}")
        .parse()
        .map_err(|e| format!("bad peer address: {e}"))?;
    let (prog, args) = peer_command
        .split_first()
        .ok_or("no peer command to run in the namespace")?;
    let mut cmd = if sudo {
        let mut c = Command::new("sudo");
        c.args(["-n", "ip", "netns", "exec", &name, prog]);
        c
    } else {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &name, prog]);
        c
    };
    let child = cmd
        .args(args)
        .arg(addr.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start the namespace peer: {e}"))?;
    let peer_guard = register(Item::Child(child.id() as i32));
    // The child is reaped by the guard; forget the std handle.
    std::mem::forget(child);
    let t0 = Instant::now();
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        if t0.elapsed() > Duration::from_secs(5) {
            return Err(format!(
                "the namespace peer did not answer on {addr} within 5 s"
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(NsHost {
        addr,
        name: format!("{name} ({host_if} {host_ip} <-> {ns_if} {peer_ip})"),
        _peer: peer_guard,
        _link: link_guard,
        _ns: ns_guard,
    })
}
