//! The `null-relay` target: `takt sip relay` (see [`crate::relay`]) in its
//! own process, bound to port 0; ready once its socket shows in its
//! network namespace's UDP table.

use std::net::SocketAddr;

use super::{bound_udp, wait_ready, Control, ServerProcess, Target, TargetSetup, TempDir};
use crate::error::Result;

const NAME: &str = "null-relay";

pub(super) fn start(setup: &TargetSetup) -> Result<Target> {
    let dir = TempDir::new("takt-siplab-relay")?;
    let mut cmd = setup.command(setup.takt_exe()?);
    cmd.args(["sip", "relay", "--listen"])
        .arg(SocketAddr::new(setup.listen_ip, 0).to_string())
        .arg("--uas")
        .arg(setup.uas.to_string());
    if let Some(u) = setup.uac {
        cmd.arg("--uac").arg(u.to_string());
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
    let mut p = ServerProcess::spawn(
        cmd,
        setup.cpus.as_ref(),
        setup.sched,
        NAME,
        dir.path().join("stderr.log"),
    )?;
    let ip = setup.listen_ip;
    let listen = wait_ready(&mut p, NAME, |p| bound_udp(p, ip))?;
    Ok(Target {
        name: NAME,
        listen,
        uas: setup.uas,
        stateful: false,
        process: Some(p),
        control: Control::None,
        _dir: Some(dir),
    })
}
