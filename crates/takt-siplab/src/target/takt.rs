//! The `takt` target: `takt sip proxy` in its own process, UDP only unless
//! [`TargetSetup::transport`] is TCP (TCP in and out) or
//! [`TargetSetup::tcp`] asks for TCP on the same port (then the `--tcp-*`
//! flags carry its limits), its
//! statistics endpoint on a Unix socket in the target's directory. The
//! endpoint's `/stats` answer is both the readiness signal and the source
//! of the real listen address (the proxy binds port 0).

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use super::{wait_ready, Control, ServerProcess, TaktOptions, Target, TargetSetup, TempDir};
use takt_sip::proxy::Transport;

use crate::error::{Error, Result};

const NAME: &str = "takt";
/// Longest a `/stats` request may take.
const STATS_TIMEOUT: Duration = Duration::from_secs(5);

pub(super) fn start(setup: &TargetSetup, o: &TaktOptions) -> Result<Target> {
    let dir = TempDir::new("takt-siplab-takt")?;
    let sock = dir.path().join("stats.sock");
    let mut cmd = setup.command(setup.takt_exe()?);
    cmd.args(["sip", "proxy", "--listen"])
        .arg(SocketAddr::new(setup.listen_ip, 0).to_string())
        .arg("--next-hop")
        .arg(setup.uas.to_string())
        .arg("--next-hop-transport")
        .arg(match setup.transport {
            Transport::Udp => "udp",
            Transport::Tcp => "tcp",
        })
        .arg("--mode")
        .arg(match setup.mode {
            takt_sip::proxy::Mode::Stateless => "stateless",
            takt_sip::proxy::Mode::Stateful => "stateful",
        })
        .arg("--model")
        .arg(o.model.name())
        .arg("--workers")
        .arg(setup.workers.to_string())
        .args(["--interval", "0", "--stats"])
        .arg(format!("unix:{}", sock.display()));
    match &setup.tcp {
        None if setup.transport == Transport::Udp => {
            cmd.arg("--no-tcp");
        }
        None => {}
        Some(t) => {
            cmd.arg("--tcp-max-connections")
                .arg(t.max_connections.to_string())
                .arg("--tcp-max-per-peer")
                .arg(t.max_per_peer.to_string())
                .arg("--tcp-idle-timeout")
                .arg(format!("{}ms", t.idle_timeout.as_millis()))
                .arg("--tcp-message-deadline")
                .arg(format!("{}ms", t.message_deadline.as_millis()));
        }
    }
    if let Some(c) = &setup.cpus {
        cmd.arg("--cpus").arg(c.to_string());
    }
    if let Some(p) = &setup.sched {
        cmd.arg("--sched").arg(p.to_string());
    }
    if let Some(b) = setup.rcvbuf {
        cmd.arg("--rcvbuf").arg(b.to_string());
    }
    cmd.args(&o.extra_args);
    let mut p = ServerProcess::spawn(
        cmd,
        setup.cpus.as_ref(),
        setup.sched,
        NAME,
        dir.path().join("stderr.log"),
    )?;
    let listen = wait_ready(&mut p, NAME, |_| {
        let v = fetch_stats(&sock).ok()?;
        v.pointer("/server/listen")?.as_str()?.parse().ok()
    })?;
    Ok(Target {
        name: NAME,
        listen,
        uas: setup.uas,
        stateful: setup.mode == takt_sip::proxy::Mode::Stateful,
        process: Some(p),
        control: Control::TaktStats(sock),
        _dir: Some(dir),
    })
}

/// What to fetch from takt's statistics endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StatsPath {
    /// `/stats`: everything, the per-kind distributions included (the
    /// server merges every worker's histograms to answer).
    Full,
    /// `/counters`: the counts alone, cheap to poll under load.
    Counters,
}

impl StatsPath {
    fn path(self) -> &'static str {
        match self {
            StatsPath::Full => "/stats",
            StatsPath::Counters => "/counters",
        }
    }
}

/// `GET /stats` over the endpoint's Unix socket, parsed.
pub(super) fn fetch_stats(sock: &Path) -> Result<serde_json::Value> {
    fetch(sock, StatsPath::Full)
}

/// `GET` `what` over the endpoint's Unix socket, parsed.
pub(super) fn fetch(sock: &Path, what: StatsPath) -> Result<serde_json::Value> {
    let path = what.path();
    let bad = |reason: String| Error::Stats {
        target: NAME,
        reason,
    };
    let mut s = UnixStream::connect(sock)
        .map_err(|e| bad(format!("connecting to {}: {e}", sock.display())))?;
    s.set_read_timeout(Some(STATS_TIMEOUT))
        .and_then(|()| s.set_write_timeout(Some(STATS_TIMEOUT)))
        .and_then(|()| s.write_all(format!("GET {path} HTTP/1.0\r\n\r\n").as_bytes()))
        .map_err(|e| bad(format!("requesting {path}: {e}")))?;
    let mut body = Vec::new();
    s.read_to_end(&mut body)
        .map_err(|e| bad(format!("reading {path}: {e}")))?;
    let text = String::from_utf8_lossy(&body);
    let (head, json) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| bad("no end of headers in the answer".into()))?;
    if !head.starts_with("HTTP/1.0 200") {
        return Err(bad(format!(
            "answered {:?}",
            head.lines().next().unwrap_or("")
        )));
    }
    serde_json::from_str(json).map_err(|e| bad(format!("not JSON: {e}")))
}
