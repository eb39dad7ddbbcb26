//! The `opensips` target: OpenSIPS 3.6, the SIP server of the scheduler
//! paper, as `scripts/peers.sh` builds it (`sbin/opensips` and the modules
//! the lab uses), with a configuration the lab writes, started in the
//! foreground in a fresh directory.
//!
//! # The configuration (the same work as Kamailio's and takt-sip's)
//! - `udp_workers` = the worker count: that many UDP receiver processes
//!   sharing one socket (`socket=udp:IP:PORT`), as takt's `shared` model
//!   shares one.
//! - Stateless: `forward()` to the UAS; transaction-stateful: `t_relay()`
//!   (module `tm`). In both modes initial INVITEs are record-routed
//!   (`record_route()`) and in-dialog requests go through `loose_route()`;
//!   Max-Forwards is checked (`mf_process_maxfwd_header`); an OPTIONS to
//!   the proxy itself is answered 200 by it.
//! - Nothing on the message path but that: no DNS (`dns=no`,
//!   `rev_dns=no`, `dns_try_ipv6=no`, `dns_try_naptr=no`, no DNS
//!   blacklist or failover), no database, no accounting, `log_level=1`
//!   (warnings and errors, as Kamailio's `debug=0`) to stderr
//!   (`stderror_enabled=yes`, `syslog_enabled=no`), UDP only unless the
//!   scenario asks for TCP ([`TargetSetup::tcp`]; below).
//! - Memory: `-m` [`SHM_MB`] `-M` [`PKG_MB`]. tm keeps every transaction
//!   in shared memory until its timers end (`wait_timer`, 5 s, after the
//!   final response; longer for one without an answer), so the heap must
//!   hold several seconds of the highest rate a search offers: measured
//!   here, with 512 MB the stateful configuration ran out near 5,000
//!   calls/s ("out of memory" in its log, calls failed), with 3 GB none
//!   failed up to 8,000. The pages are touched only as they are used.
//! - Receive buffer: with [`TargetSetup::rcvbuf`] set, `maxbuffer` (the
//!   largest receive buffer OpenSIPS probes for); otherwise its default.
//! - `mi_datagram` on a Unix datagram socket in the run directory: the
//!   lab's control interface (below).
//!
//! # TCP, for the scenarios that need it
//! With [`TargetSetup::tcp`] set, OpenSIPS also listens on TCP on the
//! same address and port (`proto_tcp`), every setting written out:
//! - `socket=tcp:IP:PORT` beside the UDP socket, `tcp_workers` = the
//!   worker count;
//! - `tcp_max_connections` = [`TcpSetup::max_connections`](super::TcpSetup)
//!   (at the limit OpenSIPS refuses new connections);
//! - `tcp_connection_lifetime` = [`TcpSetup::idle_timeout`](super::TcpSetup)
//!   in seconds;
//! - `tcp_max_msg_time` = [`TcpSetup::message_deadline`](super::TcpSetup)
//!   in whole seconds (at least 1): a message not complete that long after
//!   its first byte closes the connection — takt's deadline, which
//!   Kamailio 5.6 lacks;
//! - `open_files_limit` = the connections + 256.
//!
//! OpenSIPS has no per-peer connection limit in its core:
//! [`TcpSetup::max_per_peer`](super::TcpSetup) has no counterpart here.
//!
//! # Shared memory, watched
//! [`Target::shm`](super::Target::shm) sends `get_statistics` of
//! `shmem:` over the MI socket (JSON-RPC 2.0 in one datagram each way,
//! from a Unix datagram socket the lab binds in the run directory):
//! `max_used_size` is the peak since start, `total_size` the limit.
//!
//! # Start
//! `opensips -F -f CFG -m 3072 -M 16 -w DIR`: the main process in the
//! foreground (`-F`: no fork to the background, so every process stays in
//! the process group the lab made), runtime files in DIR. OpenSIPS binds
//! its UDP socket with `SO_REUSEPORT`: a second instance on the same
//! address starts without complaint and silently takes part of the
//! traffic. So before the start the port must bind here without
//! `SO_REUSEPORT` (UDP, and TCP when asked: any holder makes that fail;
//! skipped in a network namespace, fresh for the run), and once OpenSIPS
//! is up every UDP socket on that address must be one of its own.
//! [`TargetKind::start`](super::TargetKind::start) picks a free port and
//! retries with another if one is taken meanwhile; [`start_on`] a given
//! port, where another holder is an error.
//!
//! Ready when the group's socket is bound and the MI `ps` command lists
//! the asked number of UDP receivers.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, UdpSocket};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{json, Value};

use super::{
    bound_udp, wait_ready, Control, ServerProcess, ShmUsage, Target, TargetSetup, TempDir,
};
use crate::error::{io, Error, Result};
use crate::server_stats;
use takt_host::peers::{self, Peer};

const NAME: &str = "opensips";
/// Shared memory, MB: tm's transactions for several seconds of the
/// highest rate a search offers (see the module docs).
pub const SHM_MB: u32 = 3072;
/// Private memory per process, MB.
pub const PKG_MB: u32 = 16;
/// Starts retried when the picked port was taken meanwhile.
const PORT_ATTEMPTS: usize = 3;
/// Longest an MI request may take.
const MI_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest MI datagram (mi_datagram's own limit is 65,457 bytes).
const MI_BUFFER: usize = 65_536;
/// The longest path a Unix socket address holds (`sun_path`, with its
/// terminating zero).
const SUN_PATH_MAX: usize = 107;

/// The server, relative to the build.
const BINARY: &str = "sbin/opensips";
/// The modules, relative to the build (the first that holds `tm.so`).
const MODULE_DIRS: [&str; 2] = ["lib64/opensips/modules", "lib/opensips/modules"];

/// The OpenSIPS build: its binary and module directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Build {
    /// `sbin/opensips`.
    pub binary: PathBuf,
    /// The directory of `tm.so` and the other modules.
    pub modules: PathBuf,
}

impl Build {
    /// The build `scripts/peers.sh` made ([`takt_host::peers`]): a missing
    /// one is [`Error::NotBuilt`], whose sentence names the command that
    /// builds it; a build without its binary or modules is an error
    /// naming what is missing, with the same command.
    pub fn locate() -> Result<Build> {
        let dir = peers::locate(Peer::OpenSips)?;
        let binary = dir.join(BINARY);
        let modules = MODULE_DIRS
            .iter()
            .map(|d| dir.join(d))
            .find(|d| d.join("tm.so").is_file());
        let missing = |what: String| Error::Start {
            target: NAME,
            reason: format!(
                "the build at {} has no {what}: run `bash scripts/peers.sh {}`",
                dir.display(),
                Peer::OpenSips.script_arg()
            ),
        };
        match (binary.is_file(), modules) {
            (true, Some(modules)) => Ok(Build { binary, modules }),
            (false, _) => Err(missing(BINARY.to_string())),
            (true, None) => Err(missing(format!(
                "modules (tm.so under {})",
                MODULE_DIRS.join(" or ")
            ))),
        }
    }
}

fn host_port(a: SocketAddr) -> String {
    match a {
        SocketAddr::V4(a) => format!("{}:{}", a.ip(), a.port()),
        SocketAddr::V6(a) => format!("[{}]:{}", a.ip(), a.port()),
    }
}

/// The configuration file's text.
pub fn config(setup: &TargetSetup, listen: SocketAddr, module_dir: &Path, mi: &Path) -> String {
    let stateful = setup.mode == takt_sip::proxy::Mode::Stateful;
    let uas = host_port(setup.uas);
    let at = host_port(listen);
    let mut c =
        String::from("# written by takt-siplab: a minimal proxy for capacity measurements\n");
    c += &format!(
        "log_level=1\nstderror_enabled=yes\nsyslog_enabled=no\n\
         udp_workers={}\n\
         dns=no\nrev_dns=no\ndns_try_ipv6=no\ndns_try_naptr=no\n\
         disable_dns_blacklist=yes\ndisable_dns_failover=yes\n\
         auto_aliases=no\n\
         socket=udp:{at}\n",
        setup.workers
    );
    if let Some(t) = &setup.tcp {
        c += &format!(
            "socket=tcp:{at}\n\
             tcp_workers={}\n\
             tcp_max_connections={}\n\
             tcp_connection_lifetime={}\n\
             tcp_max_msg_time={}\n\
             open_files_limit={}\n",
            setup.workers,
            t.max_connections,
            t.idle_timeout.as_secs().max(1),
            t.message_deadline.as_secs().max(1),
            t.max_connections + 256
        );
    }
    if let Some(b) = setup.rcvbuf {
        c += &format!("maxbuffer={b}\n");
    }
    c += &format!("mpath=\"{}/\"\n", module_dir.display());
    let mut modules = vec!["proto_udp"];
    if setup.tcp.is_some() {
        modules.push("proto_tcp");
    }
    modules.extend(["sl", "maxfwd", "rr", "sipmsgops"]);
    if stateful {
        modules.push("tm");
    }
    modules.push("mi_datagram");
    for m in modules {
        c += &format!("loadmodule \"{m}.so\"\n");
    }
    c += &format!(
        "modparam(\"mi_datagram\", \"socket_name\", \"{}\")\n",
        mi.display()
    );
    let relay = if stateful {
        "    if (!t_relay()) {\n        sl_reply_error();\n    }\n"
    } else {
        "    forward();\n"
    };
    c += &format!(
        "route {{\n\
         \x20   if (!mf_process_maxfwd_header(70)) {{\n\
         \x20       sl_send_reply(483, \"Too Many Hops\");\n\
         \x20       exit;\n\
         \x20   }}\n\
         \x20   if (is_method(\"OPTIONS\") && $rU == NULL && is_myself($rd)) {{\n\
         \x20       sl_send_reply(200, \"OK\");\n\
         \x20       exit;\n\
         \x20   }}\n\
         \x20   if (has_totag()) {{\n\
         \x20       loose_route();\n\
         \x20   }} else if (is_method(\"INVITE\")) {{\n\
         \x20       record_route();\n\
         \x20   }}\n\
         \x20   $du = \"sip:{uas}\";\n\
         {relay}\
         \x20   exit;\n\
         }}\n"
    );
    c
}

/// Runs `opensips -C` on the configuration `setup` gives (listening on
/// `listen`): `Ok` if OpenSIPS accepts it, else an error quoting what it
/// printed. Starts no server.
pub fn check_config(setup: &TargetSetup, listen: SocketAddr) -> Result<()> {
    let build = Build::locate()?;
    let dir = TempDir::new("takt-siplab-opensips-check")?;
    let cfg = dir.path().join("opensips.cfg");
    let mi = dir.path().join("opensips.sock");
    std::fs::write(&cfg, config(setup, listen, &build.modules, &mi))
        .map_err(io(format!("writing {}", cfg.display())))?;
    let out = Command::new(&build.binary)
        .arg("-C")
        .arg("-f")
        .arg(&cfg)
        .output()
        .map_err(io(format!("running {} -C", build.binary.display())))?;
    if out.status.success() {
        return Ok(());
    }
    let text =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    Err(Error::Config(format!(
        "OpenSIPS rejected the lab's configuration ({}): {}",
        out.status,
        last_lines(&text, 8)
    )))
}

/// The last `n` non-empty lines of `text`, joined with ` | `.
fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

pub(super) fn start(setup: &TargetSetup) -> Result<Target> {
    let build = Build::locate()?;
    let mut last = None;
    for _ in 0..PORT_ATTEMPTS {
        let port = free_port(setup)?;
        match start_once(setup, &build, port) {
            Err(Error::Start { target, reason }) if reason.contains("in use") => {
                last = Some(Error::Start { target, reason });
            }
            r => return r,
        }
    }
    Err(last.expect("at least one attempt"))
}

/// Starts OpenSIPS listening on `port` of [`TargetSetup::listen_ip`]
/// (where [`TargetKind::start`](super::TargetKind::start) picks a free
/// one): an error if another process holds that port.
pub fn start_on(setup: &TargetSetup, port: u16) -> Result<Target> {
    if setup.workers == 0 {
        return Err(Error::Config("a target needs at least one worker".into()));
    }
    start_once(setup, &Build::locate()?, port)
}

/// A port free for UDP (and TCP, when the setup asks for it).
fn free_port(setup: &TargetSetup) -> Result<u16> {
    let udp = UdpSocket::bind(SocketAddr::new(probe_ip(setup), 0))
        .map_err(io("picking a free port for opensips"))?;
    Ok(udp
        .local_addr()
        .map_err(io("picking a free port for opensips"))?
        .port())
}

/// Where ports are probed: the listen address, or in a namespace (where
/// every port of a fresh one is free) any address here.
fn probe_ip(setup: &TargetSetup) -> IpAddr {
    match setup.netns {
        Some(_) if setup.listen_ip.is_ipv4() => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        Some(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        None => setup.listen_ip,
    }
}

/// `Err` (a start error saying "in use") if another process holds `port`
/// for UDP (or TCP, when the setup asks for it): binding without
/// `SO_REUSEPORT` fails on a port any socket holds, with or without it.
/// In a namespace (not this process's) only the check after the start
/// applies.
fn check_port_free(setup: &TargetSetup, port: u16) -> Result<()> {
    if setup.netns.is_some() {
        return Ok(());
    }
    let at = SocketAddr::new(setup.listen_ip, port);
    let held = |proto: &str, e: std::io::Error| Error::Start {
        target: NAME,
        reason: format!(
            "{proto} port {port} is in use by another process ({e}): \
             an OpenSIPS there would share its traffic (SO_REUSEPORT)"
        ),
    };
    drop(UdpSocket::bind(at).map_err(|e| held("UDP", e))?);
    if setup.tcp.is_some() {
        drop(TcpListener::bind(at).map_err(|e| held("TCP", e))?);
    }
    Ok(())
}

fn start_once(setup: &TargetSetup, build: &Build, port: u16) -> Result<Target> {
    if setup.transport != takt_sip::proxy::Transport::Udp {
        return Err(Error::Config(
            "the opensips target is UDP only: measure TCP against takt or the address of a running proxy".into(),
        ));
    }
    check_port_free(setup, port)?;
    let dir = TempDir::new("takt-siplab-opensips")?;
    let listen = SocketAddr::new(setup.listen_ip, port);
    let mi = Mi::new(dir.path())?;
    let cfg = dir.path().join("opensips.cfg");
    std::fs::write(&cfg, config(setup, listen, &build.modules, &mi.socket))
        .map_err(io(format!("writing {}", cfg.display())))?;
    let mut cmd = setup.command(&build.binary);
    cmd.arg("-F")
        .arg("-f")
        .arg(&cfg)
        .args(["-m", &SHM_MB.to_string(), "-M", &PKG_MB.to_string()])
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
    let workers = setup.workers;
    wait_ready(&mut p, NAME, |p| {
        (bound_udp(p, ip) == Some(listen) && mi.udp_receivers().ok()? >= workers).then_some(())
    })?;
    // SO_REUSEPORT: a socket another process bound since the check would
    // share the traffic without an error anywhere
    let foreign = foreign_sockets(&p, listen);
    if !foreign.is_empty() {
        let e = Error::Start {
            target: NAME,
            reason: format!(
                "UDP {listen} is also in use by another process (socket inodes {foreign:?}): \
                 with SO_REUSEPORT it would take part of the traffic"
            ),
        };
        let _ = p.stop();
        return Err(e);
    }
    Ok(Target {
        name: NAME,
        listen,
        uas: setup.uas,
        stateful: setup.mode == takt_sip::proxy::Mode::Stateful,
        process: Some(p),
        control: Control::OpenSips(mi),
        _dir: Some(dir),
    })
}

/// UDP sockets bound to `listen`'s port (on its address or the wildcard)
/// in the server's network namespace that none of its processes holds.
fn foreign_sockets(p: &ServerProcess, listen: SocketAddr) -> Vec<u64> {
    let pids = p.pids();
    let Some(&leader) = pids.first() else {
        return Vec::new();
    };
    let mut owned = std::collections::HashSet::new();
    for &pid in &pids {
        owned.extend(server_stats::socket_inodes(pid).unwrap_or_default());
    }
    server_stats::udp_sockets(Some(leader))
        .unwrap_or_default()
        .into_iter()
        .filter(|e| {
            e.local.port() == listen.port()
                && (e.local.ip() == listen.ip() || e.local.ip().is_unspecified())
                && !owned.contains(&e.inode)
        })
        .map(|e| e.inode)
        .collect()
}

/// OpenSIPS's management interface over `mi_datagram`: one JSON-RPC 2.0
/// request per datagram, answered to the datagram's source, which is a
/// Unix socket the lab binds for the exchange in the run directory.
#[derive(Debug)]
pub(crate) struct Mi {
    socket: PathBuf,
    dir: PathBuf,
}

/// Numbers the lab's own MI sockets (one per exchange).
static MI_CLIENTS: AtomicU64 = AtomicU64::new(0);

impl Mi {
    /// The interface whose socket will be `dir/opensips.sock`.
    fn new(dir: &Path) -> Result<Mi> {
        let socket = dir.join("opensips.sock");
        // the client's name is longer than the server's by its number
        let longest = dir.join(format!("mi-{}.sock", u64::MAX));
        if longest.as_os_str().len() > SUN_PATH_MAX {
            return Err(Error::Config(format!(
                "the run directory {} is too deep for a Unix socket path ({SUN_PATH_MAX} bytes)",
                dir.display()
            )));
        }
        Ok(Mi {
            socket,
            dir: dir.to_path_buf(),
        })
    }

    /// Sends `method` with `params` and returns the reply's `result`.
    pub(crate) fn call(&self, method: &str, params: Value) -> Result<Value> {
        let bad = |reason: String| Error::Stats {
            target: NAME,
            reason,
        };
        let n = MI_CLIENTS.fetch_add(1, Ordering::Relaxed);
        let me = self.dir.join(format!("mi-{n}.sock"));
        let _ = std::fs::remove_file(&me);
        let s =
            UnixDatagram::bind(&me).map_err(|e| bad(format!("binding {}: {e}", me.display())))?;
        // the socket's file goes when the exchange is over, whatever happened
        struct Unlink<'a>(&'a Path);
        impl Drop for Unlink<'_> {
            fn drop(&mut self) {
                let _ = std::fs::remove_file(self.0);
            }
        }
        let _unlink = Unlink(&me);
        let req = json!({"jsonrpc": "2.0", "method": method, "params": params, "id": n});
        s.set_read_timeout(Some(MI_TIMEOUT))
            .and_then(|()| s.set_write_timeout(Some(MI_TIMEOUT)))
            .and_then(|()| s.send_to(req.to_string().as_bytes(), &self.socket))
            .map_err(|e| bad(format!("MI {method} to {}: {e}", self.socket.display())))?;
        let mut buf = vec![0u8; MI_BUFFER];
        let len = s
            .recv(&mut buf)
            .map_err(|e| bad(format!("MI {method}: no answer: {e}")))?;
        let v: Value = serde_json::from_slice(&buf[..len]).map_err(|e| {
            bad(format!(
                "MI {method}: not JSON ({e}): {}",
                String::from_utf8_lossy(&buf[..len.min(200)])
            ))
        })?;
        if let Some(err) = v.get("error") {
            return Err(bad(format!("MI {method}: {err}")));
        }
        v.get("result")
            .cloned()
            .ok_or_else(|| bad(format!("MI {method}: no result in {v}")))
    }

    /// The processes OpenSIPS lists (`ps`): (pid, type).
    pub(crate) fn processes(&self) -> Result<Vec<(i32, String)>> {
        let r = self.call("ps", json!({}))?;
        let procs = r
            .get("Processes")
            .and_then(Value::as_array)
            .ok_or_else(|| Error::Stats {
                target: NAME,
                reason: format!("MI ps: no process list in {r}"),
            })?;
        Ok(procs
            .iter()
            .filter_map(|p| {
                Some((
                    i32::try_from(p.get("PID")?.as_i64()?).ok()?,
                    p.get("Type")?.as_str()?.to_string(),
                ))
            })
            .collect())
    }

    /// How many UDP receiver processes are up.
    fn udp_receivers(&self) -> Result<usize> {
        Ok(self
            .processes()?
            .iter()
            .filter(|(_, t)| t.starts_with("SIP receiver udp:"))
            .count())
    }

    /// Shared memory now (`get_statistics shmem:`).
    pub(crate) fn shm(&self) -> Result<ShmUsage> {
        let r = self.call("get_statistics", json!({"statistics": ["shmem:"]}))?;
        parse_statistics(&r).ok_or_else(|| Error::Stats {
            target: NAME,
            reason: format!("unexpected get_statistics shmem: answer: {r}"),
        })
    }
}

/// Reads the `shmem:` group of a `get_statistics` result
/// (`{"shmem:total_size": N, ...}`).
pub fn parse_statistics(result: &Value) -> Option<ShmUsage> {
    let field = |name: &str| result.get(format!("shmem:{name}"))?.as_u64();
    Some(ShmUsage {
        total: field("total_size")?,
        free: field("free_size")?,
        real_used: field("real_used_size")?,
        max_used: field("max_used_size")?,
    })
}

impl Target {
    /// The processes OpenSIPS itself lists over its MI socket (`ps`), as
    /// (pid, type): its attendant, UDP (and TCP) receivers, timers and MI
    /// process. `None` for other targets.
    pub fn opensips_processes(&self) -> Option<Result<Vec<(i32, String)>>> {
        match &self.control {
            Control::OpenSips(mi) => Some(mi.processes()),
            _ => None,
        }
    }

    /// OpenSIPS's statistics of one group (`core:`, `tm:`, …) over its
    /// MI socket (`get_statistics`), by name without the group
    /// (`rcv_replies`, `drop_replies`, …). `None` for other targets.
    pub fn opensips_statistics(
        &self,
        group: &str,
    ) -> Option<Result<std::collections::BTreeMap<String, u64>>> {
        let Control::OpenSips(mi) = &self.control else {
            return None;
        };
        Some(
            mi.call("get_statistics", json!({"statistics": [group]}))
                .map(|r| {
                    r.as_object()
                        .into_iter()
                        .flatten()
                        .filter_map(|(k, v)| {
                            Some((k.strip_prefix(group)?.to_string(), v.as_u64()?))
                        })
                        .collect()
                }),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use takt_sip::proxy::Mode;

    #[test]
    fn parses_shmem_statistics() {
        let r = json!({
            "shmem:total_size": 3_221_225_472u64,
            "shmem:used_size": 2_000_000,
            "shmem:real_used_size": 2_500_000,
            "shmem:max_used_size": 3_000_000,
            "shmem:free_size": 3_218_725_472u64,
            "shmem:fragments": 10
        });
        let u = parse_statistics(&r).unwrap();
        assert_eq!(u.total, u64::from(SHM_MB) << 20);
        assert_eq!(u.real_used, 2_500_000);
        assert_eq!(u.max_used, 3_000_000);
        assert!((u.peak_fraction() - 3e6 / 3_221_225_472.0).abs() < 1e-12);
        assert!(parse_statistics(&json!({"shmem:total_size": 1})).is_none());
    }

    #[test]
    fn configuration_per_mode() {
        let mut s = TargetSetup::new("127.0.0.1:5070".parse().unwrap());
        s.workers = 3;
        let listen = "127.0.0.1:5060".parse().unwrap();
        let dir = Path::new("/m");
        let mi = Path::new("/run/x/opensips.sock");
        let c = config(&s, listen, dir, mi);
        for line in [
            "udp_workers=3\n",
            "socket=udp:127.0.0.1:5060\n",
            "stderror_enabled=yes\n",
            "syslog_enabled=no\n",
            "dns=no\n",
            "rev_dns=no\n",
            "log_level=1\n",
            "mpath=\"/m/\"\n",
            "loadmodule \"proto_udp.so\"\n",
            "loadmodule \"mi_datagram.so\"\n",
            "modparam(\"mi_datagram\", \"socket_name\", \"/run/x/opensips.sock\")\n",
            "    $du = \"sip:127.0.0.1:5070\";\n",
            "    forward();\n",
            "        record_route();\n",
            "        loose_route();\n",
        ] {
            assert!(c.contains(line), "{line}");
        }
        assert!(!c.contains("t_relay") && !c.contains("\"tm.so\""));
        assert!(!c.contains("tcp") && !c.contains("maxbuffer"));
        s.mode = Mode::Stateful;
        s.rcvbuf = Some(1 << 20);
        let c = config(&s, listen, dir, mi);
        assert!(c.contains("if (!t_relay()) {") && c.contains("loadmodule \"tm.so\""));
        assert!(c.contains("        record_route();\n") && !c.contains("forward();"));
        assert!(c.contains("maxbuffer=1048576\n"));
        s.tcp = Some(crate::target::TcpSetup::for_connections(10_000, 1_000));
        let c = config(&s, listen, dir, mi);
        for line in [
            "socket=udp:127.0.0.1:5060\n",
            "socket=tcp:127.0.0.1:5060\n",
            "loadmodule \"proto_tcp.so\"\n",
            "tcp_workers=3\n",
            "tcp_max_connections=11000\n",
            "tcp_connection_lifetime=120\n",
            "tcp_max_msg_time=5\n",
            "open_files_limit=11256\n",
        ] {
            assert!(c.contains(line), "{line}");
        }
        // IPv6 addresses are bracketed
        let v6: SocketAddr = "[::1]:5060".parse().unwrap();
        s.uas = "[::1]:5070".parse().unwrap();
        let c = config(&s, v6, dir, mi);
        assert!(c.contains("socket=udp:[::1]:5060\n") && c.contains("\"sip:[::1]:5070\""));
    }

    #[test]
    fn last_lines_keep_the_end() {
        assert_eq!(last_lines("a\n\nb\nc\n", 2), "b | c");
        assert_eq!(last_lines("", 3), "");
    }
}
