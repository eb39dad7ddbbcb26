//! The `kamailio` target: Debian's `kamailio` package with a configuration
//! the lab writes, started in the foreground in a fresh directory.
//!
//! # The configuration (fair to Kamailio, equal in work to takt-sip)
//! - `children` = the worker count: that many UDP receiver processes
//!   sharing one socket, as takt's `shared` model shares one.
//! - Stateless: `forward()` to the UAS; transaction-stateful: `t_relay()`
//!   (module `tm`). In both modes initial INVITEs are record-routed
//!   (`record_route()`) and in-dialog requests go through `loose_route()`,
//!   as takt-sip does by default; Max-Forwards is checked.
//! - Nothing on the message path but that: no DNS (`dns=no`, `rev_dns=no`,
//!   no DNS cache), no database, no accounting, `debug=0` (errors only, to
//!   stderr), UDP only (`disable_tcp=yes`) unless the scenario asks for
//!   TCP ([`TargetSetup::tcp`]; below).
//! - Memory: `-m 2048 -M 16` (2 GB shared, 16 MB private per process).
//!   Measured here: with the defaults (64 MB / 8 MB) the stateful
//!   configuration failed at a few hundred calls/s — a configuration
//!   artefact. With 512 MB its shared memory filled during the overload
//!   trials of a search near 5,000 cps (completed transactions are kept
//!   for `wait_timer`, 5 s, so an overloaded second holds several
//!   seconds of transactions) and the trials after them ran on a full
//!   heap; 2 GB keeps the peak below the limit. The pages are touched
//!   only as they are used.
//! - Receive buffer: with [`TargetSetup::rcvbuf`] set, `maxbuffer` (the
//!   largest receive buffer Kamailio probes for); otherwise its default.
//! - The `ctl` module on a Unix socket in the run directory, for `kamcmd`.
//!
//! # TCP, for the scenarios that need it
//! With [`TargetSetup::tcp`] set, Kamailio also listens on TCP on the
//! same address and port, with (every setting written out, so the run
//! does not depend on Kamailio's defaults):
//! - `disable_tcp=no` and `listen=tcp:IP:PORT` beside the UDP listener;
//! - `tcp_children` = the worker count: as many TCP reader processes as
//!   UDP ones, as takt's TCP event loops come beside its UDP workers;
//! - `tcp_max_connections` = [`TcpSetup::max_connections`](super::TcpSetup):
//!   Kamailio's default (2,048) would refuse a scenario's held
//!   connections; at the limit Kamailio refuses new ones (it evicts none);
//! - `tcp_connection_lifetime` = [`TcpSetup::idle_timeout`](super::TcpSetup)
//!   in seconds (takt's idle lifetime; 120 s by default in both): a
//!   connection without traffic that long is closed;
//! - `tcp_accept_no_cl=no`: a message on a stream without Content-Length
//!   is refused (RFC 3261 §18.3), as takt refuses it (Kamailio's default,
//!   written out);
//! - `open_files_limit` = the connections + 256: Kamailio raises its
//!   open-file limit to it at start (a descriptor per connection, like
//!   takt's `fd_needed`).
//!
//! Kamailio 5.6 has no deadline for a message to complete once begun and
//! no per-peer limit in its core: a half-open connection there lives
//! until its lifetime; takt's `message_deadline` and `max_per_peer` have
//! no counterpart in this configuration.
//!
//! # Shared memory, watched
//! [`Target::shm`](super::Target::shm) runs `kamcmd core.shmmem` against the ctl socket: `max_used` is
//! the peak since start, `total` the limit. Reading it after every trial
//! shows that a search never ran Kamailio out of shared memory (which
//! would make it drop for a reason that is not its capacity).
//!
//! # Start
//! `kamailio -f CFG -DD -E -m 2048 -M 16 -Y DIR -w DIR`: no daemon, main
//! process in the foreground, log to stderr, runtime files in DIR. The
//! listen port is picked free just before (Kamailio needs a number); a
//! start that loses that race to another process is retried with another
//! port. Ready when the group's socket is bound and `kamcmd core.uptime`
//! answers.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::Command;

use super::{
    bound_udp, wait_ready, Control, ServerProcess, ShmUsage, Target, TargetSetup, TempDir,
};
use crate::error::{io, Error, Result};

const NAME: &str = "kamailio";
const HINT: &str = "Debian package kamailio; scripts/setup.sh installs it";
/// Shared memory, MB.
pub const SHM_MB: u32 = 2048;
/// Private memory per process, MB.
pub const PKG_MB: u32 = 16;
/// Where Debian installs the modules.
const MODULE_DIRS: [&str; 2] = [
    "/usr/lib/x86_64-linux-gnu/kamailio/modules",
    "/usr/lib/kamailio/modules",
];
/// Starts retried when the picked port was taken meanwhile.
const PORT_ATTEMPTS: usize = 3;

/// Finds a program on `PATH` or in the sbin directories (which a non-root
/// `PATH` often lacks).
pub fn find_tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/local/sbin", "/sbin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The configuration file's text.
pub fn config(setup: &TargetSetup, listen: SocketAddr, module_dir: &Path, ctl: &Path) -> String {
    let stateful = setup.mode == takt_sip::proxy::Mode::Stateful;
    let uas = match setup.uas {
        SocketAddr::V4(a) => format!("{}:{}", a.ip(), a.port()),
        SocketAddr::V6(a) => format!("[{}]:{}", a.ip(), a.port()),
    };
    let at = match listen {
        SocketAddr::V4(a) => format!("{}:{}", a.ip(), a.port()),
        SocketAddr::V6(a) => format!("[{}]:{}", a.ip(), a.port()),
    };
    let mut c = String::from("#!KAMAILIO\n");
    c += "# written by takt-siplab: a minimal proxy for capacity measurements\n";
    c += &format!(
        "debug=0\nlog_stderror=yes\nmemdbg=5\nmemlog=5\n\
         children={}\n\
         dns=no\nrev_dns=no\nuse_dns_cache=no\ndns_try_ipv6=no\n\
         auto_aliases=no\n\
         listen=udp:{at}\n",
        setup.workers
    );
    match &setup.tcp {
        None => c += "disable_tcp=yes\n",
        Some(t) => {
            c += &format!(
                "disable_tcp=no\nlisten=tcp:{at}\n\
                 tcp_children={}\n\
                 tcp_max_connections={}\n\
                 tcp_connection_lifetime={}\n\
                 tcp_accept_no_cl=no\n\
                 open_files_limit={}\n",
                setup.workers,
                t.max_connections,
                t.idle_timeout.as_secs().max(1),
                t.max_connections + 256
            );
        }
    }
    if let Some(b) = setup.rcvbuf {
        c += &format!("maxbuffer={b}\n");
    }
    c += &format!("mpath=\"{}/\"\n", module_dir.display());
    let mut modules = vec!["kex", "corex", "pv"];
    if stateful {
        modules.push("tm");
    }
    modules.extend(["siputils", "sl", "maxfwd", "rr", "ctl"]);
    for m in modules {
        c += &format!("loadmodule \"{m}.so\"\n");
    }
    c += &format!(
        "modparam(\"ctl\", \"binrpc\", \"unix:{}\")\n",
        ctl.display()
    );
    let relay = if stateful {
        "    if (!t_relay()) {\n        sl_reply_error();\n    }\n"
    } else {
        "    forward();\n"
    };
    c += &format!(
        "request_route {{\n\
         \x20   if (!mf_process_maxfwd_header(\"70\")) {{\n\
         \x20       sl_send_reply(\"483\", \"Too Many Hops\");\n\
         \x20       exit;\n\
         \x20   }}\n\
         \x20   if (method == \"OPTIONS\" && uri == myself && $rU == $null) {{\n\
         \x20       sl_send_reply(\"200\", \"OK\");\n\
         \x20       exit;\n\
         \x20   }}\n\
         \x20   if (has_totag()) {{\n\
         \x20       loose_route();\n\
         \x20   }} else if (method == \"INVITE\") {{\n\
         \x20       record_route();\n\
         \x20   }}\n\
         \x20   $du = \"sip:{uas}\";\n\
         {relay}\
         \x20   exit;\n\
         }}\n"
    );
    c
}

pub(super) fn start(setup: &TargetSetup) -> Result<Target> {
    let bin = find_tool("kamailio").ok_or(Error::Missing {
        tool: "kamailio",
        hint: HINT,
    })?;
    let kamcmd = find_tool("kamcmd").ok_or(Error::Missing {
        tool: "kamcmd",
        hint: HINT,
    })?;
    let module_dir = MODULE_DIRS
        .iter()
        .map(PathBuf::from)
        .find(|d| d.join("tm.so").is_file())
        .ok_or(Error::Missing {
            tool: "kamailio's modules",
            hint: HINT,
        })?;
    let mut last = None;
    for _ in 0..PORT_ATTEMPTS {
        match start_once(setup, &bin, &kamcmd, &module_dir) {
            Err(Error::Start { target, reason }) if reason.contains("in use") => {
                last = Some(Error::Start { target, reason });
            }
            r => return r,
        }
    }
    Err(last.expect("at least one attempt"))
}

fn start_once(setup: &TargetSetup, bin: &Path, kamcmd: &Path, module_dir: &Path) -> Result<Target> {
    let dir = TempDir::new("takt-siplab-kamailio")?;
    // in a fresh namespace every port is free: any free one here will do
    let probe_ip = match setup.netns {
        Some(_) if setup.listen_ip.is_ipv4() => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        Some(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        None => setup.listen_ip,
    };
    let port = UdpSocket::bind(SocketAddr::new(probe_ip, 0))
        .and_then(|s| s.local_addr())
        .map_err(io("picking a free port for kamailio"))?
        .port();
    let listen = SocketAddr::new(setup.listen_ip, port);
    let ctl = dir.path().join("ctl.sock");
    let cfg = dir.path().join("kamailio.cfg");
    std::fs::write(&cfg, config(setup, listen, module_dir, &ctl))
        .map_err(io(format!("writing {}", cfg.display())))?;
    let mut cmd = setup.command(bin);
    cmd.arg("-f")
        .arg(&cfg)
        .args([
            "-DD",
            "-E",
            "-m",
            &SHM_MB.to_string(),
            "-M",
            &PKG_MB.to_string(),
        ])
        .arg("-Y")
        .arg(dir.path())
        .arg("-w")
        .arg(dir.path());
    let mut p = ServerProcess::spawn(
        cmd,
        setup.cpus.as_ref(),
        setup.sched,
        NAME,
        dir.path().join("stderr.log"),
    )?;
    let ip = setup.listen_ip;
    wait_ready(&mut p, NAME, |p| {
        (bound_udp(p, ip) == Some(listen) && kamcmd_run(kamcmd, &ctl, "core.uptime").is_ok())
            .then_some(())
    })?;
    Ok(Target {
        name: NAME,
        listen,
        uas: setup.uas,
        stateful: setup.mode == takt_sip::proxy::Mode::Stateful,
        process: Some(p),
        control: Control::Kamailio {
            kamcmd: kamcmd.to_path_buf(),
            ctl,
        },
        _dir: Some(dir),
    })
}

fn kamcmd_run(kamcmd: &Path, ctl: &Path, cmd: &str) -> Result<String> {
    let out = Command::new(kamcmd)
        .arg("-s")
        .arg(format!("unix:{}", ctl.display()))
        .arg(cmd)
        .output()
        .map_err(io("running kamcmd"))?;
    if !out.status.success() {
        return Err(Error::Stats {
            target: NAME,
            reason: format!(
                "kamcmd {cmd}: {} {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Parses `kamcmd core.shmmem` output (`{ total: N ... }`). Kamailio
/// 5.6 prints the fields as 32-bit signed integers, so a value of 2 GiB
/// or more arrives negative: such a value is read back as the unsigned
/// 32-bit number it wrapped from (exact below 4 GiB).
pub fn parse_shmmem(text: &str) -> Option<ShmUsage> {
    let field = |name: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.trim().split_once(':')?;
            if k.trim() != name {
                return None;
            }
            let v: i64 = v.trim().parse().ok()?;
            match v {
                0.. => Some(v as u64),
                -0x8000_0000..=-1 => Some((v + (1 << 32)) as u64),
                _ => None,
            }
        })
    };
    Some(ShmUsage {
        total: field("total")?,
        free: field("free")?,
        real_used: field("real_used")?,
        max_used: field("max_used")?,
    })
}

pub(super) fn shm(kamcmd: &Path, ctl: &Path) -> Result<ShmUsage> {
    let out = kamcmd_run(kamcmd, ctl, "core.shmmem")?;
    parse_shmmem(&out).ok_or_else(|| Error::Stats {
        target: NAME,
        reason: format!("unexpected core.shmmem output: {}", out.trim()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use takt_sip::proxy::Mode;

    #[test]
    fn parses_shmmem() {
        let s = "{\n\ttotal: 536870912\n\tfree: 534189728\n\tused: 2441040\n\treal_used: 2681184\n\tmax_used: 2681184\n\tfragments: 1\n}\n";
        let u = parse_shmmem(s).unwrap();
        assert_eq!(u.total, 536_870_912);
        assert_eq!(u.max_used, 2_681_184);
        assert!((u.peak_fraction() - 2_681_184.0 / 536_870_912.0).abs() < 1e-12);
        assert!(parse_shmmem("error: 500").is_none());
        // -m 2048: total wraps to i32::MIN in Kamailio's output
        let s = "{\n\ttotal: -2147483648\n\tfree: 2027051736\n\tused: 116341272\n\treal_used: 120431912\n\tmax_used: 120431912\n}\n";
        let u = parse_shmmem(s).unwrap();
        assert_eq!(u.total, 2048 << 20);
        assert_eq!(u.free, 2_027_051_736);
    }

    #[test]
    fn configuration_per_mode() {
        let mut s = TargetSetup::new("127.0.0.1:5070".parse().unwrap());
        s.workers = 3;
        let listen = "127.0.0.1:5060".parse().unwrap();
        let dir = Path::new("/m");
        let ctl = Path::new("/run/x/ctl.sock");
        let c = config(&s, listen, dir, ctl);
        assert!(c.contains("children=3\n"));
        assert!(c.contains("listen=udp:127.0.0.1:5060\n"));
        assert!(c.contains("disable_tcp=yes\n") && !c.contains("listen=tcp"));
        assert!(c.contains("$du = \"sip:127.0.0.1:5070\";"));
        assert!(
            c.contains("    forward();\n") && !c.contains("t_relay") && !c.contains("\"tm.so\"")
        );
        assert!(c.contains("record_route();") && c.contains("dns=no\n"));
        assert!(!c.contains("maxbuffer"));
        s.mode = Mode::Stateful;
        s.rcvbuf = Some(1 << 20);
        let c = config(&s, listen, dir, ctl);
        assert!(c.contains("t_relay()") && c.contains("loadmodule \"tm.so\""));
        assert!(c.contains("maxbuffer=1048576\n"));
        assert!(c.contains("unix:/run/x/ctl.sock"));
        s.tcp = Some(crate::target::TcpSetup::for_connections(10_000, 1_000));
        let c = config(&s, listen, dir, ctl);
        for line in [
            "disable_tcp=no\n",
            "listen=udp:127.0.0.1:5060\n",
            "listen=tcp:127.0.0.1:5060\n",
            "tcp_children=3\n",
            "tcp_max_connections=11000\n",
            "tcp_connection_lifetime=120\n",
            "tcp_accept_no_cl=no\n",
            "open_files_limit=11256\n",
        ] {
            assert!(c.contains(line), "{line}");
        }
        assert!(!c.contains("disable_tcp=yes"));
    }
}
