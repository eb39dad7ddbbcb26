//! The systems under test: one [`TargetKind`] per kind of SIP server, each
//! started fresh as a [`Target`] from one [`TargetSetup`] (CPU set, worker
//! count, proxy mode, scheduler setting, the UAS it forwards to).
//!
//! | kind | what runs | mode | workers | statistics |
//! |---|---|---|---|---|
//! | `takt` | `takt sip proxy` in its own process | both | worker threads, any model | `/stats` (T_sip, K_rcv by kind, socket drops) and `/proc` |
//! | `null-relay` | `takt sip relay` (see [`crate::relay`]) | none (one row serves both) | one thread | `/proc` |
//! | `kamailio` | Debian's `kamailio` with a written configuration (see [`kamailio`]) | both | `children` | `/proc`, shared memory through `kamcmd` |
//! | `opensips` | OpenSIPS 3.6 as `scripts/peers.sh` builds it, with a written configuration (see [`opensips`]) | both | `udp_workers` | `/proc`, shared memory over its MI datagram socket |
//! | `addr` | nothing: a server already running | as configured there | as configured there | `/proc/net/udp` by port, if local |
//!
//! Every started server runs in a process group of its own, placed on
//! [`TargetSetup::cpus`] from its first instruction; [`Target::stop`] ends
//! it with SIGTERM (SIGKILL to the group after 5 s) and dropping a
//! [`Target`] kills the group, so no error path, panic or Ctrl-C that
//! unwinds leaves a server behind. (A SIGKILL of the lab itself cannot be
//! caught: its servers then outlive it.)
//!
//! A target is ready when its socket is bound by its processes and, where
//! it has one, its control interface answers: takt's statistics endpoint
//! (which also reports the real listen port), Kamailio's `ctl` socket or
//! OpenSIPS's MI datagram socket. A server that does not come up is an
//! error naming it, with the last lines of its stderr.

pub mod kamailio;
mod null_relay;
pub mod opensips;
mod process;
mod takt;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Serialize;
use takt_sched::{CpuSet, SchedPolicy};
use takt_sip::proxy::{Mode, Transport};
use takt_sip::transport::WorkerModel;

use crate::error::{Error, Result};
use crate::server_stats::{self, ServerSample, SocketSelector};
use process::{ServerProcess, TempDir};

/// The default topology of a measurement: the servers' CPUs (default: the
/// last online CPU) and the generator's (default: the other online CPUs,
/// or all of them when the servers have them all). Explicit sets are
/// returned as given.
pub fn placement(server: Option<&CpuSet>, generator: Option<&CpuSet>) -> (CpuSet, CpuSet) {
    let online = CpuSet::online();
    let server = server
        .cloned()
        .unwrap_or_else(|| CpuSet::single(online.iter().last().unwrap_or(0)));
    let generator = generator.cloned().unwrap_or_else(|| {
        let mut rest = CpuSet::empty();
        for c in online.iter().filter(|c| !server.contains(*c)) {
            rest.insert(c);
        }
        if rest.is_empty() {
            online.clone()
        } else {
            rest
        }
    });
    (server, generator)
}

/// A server's shared memory, bytes: Kamailio's (`kamcmd core.shmmem`) or
/// OpenSIPS's (`get_statistics shmem:`). Both servers keep transactions
/// in one shared heap sized at start (`-m`); running it full makes a
/// server drop for a reason that is not its capacity, so the lab reads
/// the peak after every trial.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ShmUsage {
    /// The limit (`-m`).
    pub total: u64,
    /// Free now.
    pub free: u64,
    /// Used now, allocator overhead included.
    pub real_used: u64,
    /// Peak of `real_used` since start.
    pub max_used: u64,
}

impl ShmUsage {
    /// Peak use as a fraction of the limit.
    pub fn peak_fraction(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.max_used as f64 / self.total as f64
        }
    }
}

/// How long a target may take to become ready.
pub const START_TIMEOUT: Duration = Duration::from_secs(15);

/// What every target is started with.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetSetup {
    /// CPUs the server runs on (`None`: anywhere).
    pub cpus: Option<CpuSet>,
    /// Worker threads or processes.
    pub workers: usize,
    /// Stateless or transaction-stateful.
    pub mode: Mode,
    /// OS scheduling policy of the server's threads: inherited from the
    /// spawning thread by every target's processes (takt and the relay also
    /// apply it to each thread they create).
    pub sched: Option<SchedPolicy>,
    /// The address the server forwards requests to.
    pub uas: SocketAddr,
    /// Where the null relay sends responses (`None`: to their top Via, as
    /// real proxies do; they ignore this).
    pub uac: Option<SocketAddr>,
    /// The IP address the server listens on.
    pub listen_ip: IpAddr,
    /// Socket receive buffer, bytes (`None`: each server's default).
    pub rcvbuf: Option<usize>,
    /// The `takt` executable for the `takt` and `null-relay` targets
    /// (`None`: the current executable).
    pub takt_exe: Option<PathBuf>,
    /// A network namespace to start the server in (`ip netns exec`; see
    /// [`crate::net::VethNet`]); `listen_ip` must then be an address of it.
    pub netns: Option<String>,
    /// The transport the load arrives on and is forwarded over: takt
    /// listens on TCP too and forwards to the UAS over it; the null relay
    /// and the lab's Kamailio and OpenSIPS configurations are UDP only
    /// (starting them for TCP is an error).
    pub transport: Transport,
    /// Serve TCP on the listen port too, with these limits (`None`: UDP
    /// only, as the capacity runs measure).
    pub tcp: Option<TcpSetup>,
}

/// A target's TCP listener: the same port as its UDP socket, sized for a
/// scenario. Each target maps it onto its own settings (takt's `--tcp-*`
/// flags, Kamailio's and OpenSIPS's `tcp_*` core parameters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpSetup {
    /// Most connections open at once.
    pub max_connections: usize,
    /// Most inbound connections from one peer IP address (takt; Kamailio
    /// and OpenSIPS have no such core limit).
    pub max_per_peer: usize,
    /// A connection without traffic for this long is closed.
    pub idle_timeout: Duration,
    /// A message must complete within this once its first byte arrived
    /// (takt, and OpenSIPS's `tcp_max_msg_time` in whole seconds;
    /// Kamailio 5.6 has no such deadline).
    pub message_deadline: Duration,
}

impl TcpSetup {
    /// Room for `connections` held connections plus `extra` (probes,
    /// calls), with takt's default per-peer limit and deadlines.
    pub fn for_connections(connections: usize, extra: usize) -> TcpSetup {
        TcpSetup {
            max_connections: connections + extra,
            max_per_peer: 512,
            idle_timeout: Duration::from_secs(120),
            message_deadline: Duration::from_secs(5),
        }
    }
}

impl TargetSetup {
    /// Defaults: anywhere, 4 workers, stateless, loopback, responses routed
    /// by Via.
    pub fn new(uas: SocketAddr) -> TargetSetup {
        TargetSetup {
            cpus: None,
            workers: 4,
            mode: Mode::Stateless,
            sched: None,
            uas,
            uac: None,
            listen_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
            rcvbuf: None,
            takt_exe: None,
            netns: None,
            transport: Transport::Udp,
            tcp: None,
        }
    }

    /// A command running `program`, inside [`TargetSetup::netns`] if set
    /// (`ip netns exec` execs it in the same process).
    fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> std::process::Command {
        match &self.netns {
            Some(ns) => {
                let mut c = std::process::Command::new("ip");
                c.args(["netns", "exec", ns.as_str()]).arg(program);
                c
            }
            None => std::process::Command::new(program),
        }
    }

    fn takt_exe(&self) -> Result<PathBuf> {
        match &self.takt_exe {
            Some(p) => Ok(p.clone()),
            None => {
                std::env::current_exe().map_err(crate::error::io("finding the takt executable"))
            }
        }
    }
}

/// takt-specific options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaktOptions {
    /// Worker model.
    pub model: WorkerModel,
    /// Further `takt sip proxy` flags (e.g. `--spin 200us`).
    pub extra_args: Vec<String>,
}

impl Default for TaktOptions {
    fn default() -> Self {
        TaktOptions {
            model: WorkerModel::Shared,
            extra_args: Vec::new(),
        }
    }
}

/// `takt` (the `shared` worker model, see [`TargetKind::with_model`]),
/// `kamailio`, `opensips`, `null-relay`, or the `ip:port` of a running
/// proxy.
impl std::str::FromStr for TargetKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<TargetKind> {
        match s {
            "takt" => Ok(TargetKind::Takt(TaktOptions {
                model: WorkerModel::Shared,
                extra_args: Vec::new(),
            })),
            "kamailio" => Ok(TargetKind::Kamailio),
            "opensips" => Ok(TargetKind::OpenSips),
            "null-relay" => Ok(TargetKind::NullRelay),
            a => a.parse::<SocketAddr>().map(TargetKind::Addr).map_err(|_| {
                crate::error::unknown(
                    "target",
                    s,
                    "takt, kamailio, opensips, null-relay, or ip:port",
                )
            }),
        }
    }
}

/// A kind of system under test.
#[derive(Debug, Clone, PartialEq)]
pub enum TargetKind {
    /// takt-sip as its own process.
    Takt(TaktOptions),
    /// The null relay as its own process.
    NullRelay,
    /// Kamailio with a configuration the lab writes.
    Kamailio,
    /// OpenSIPS (the paper's server) with a configuration the lab writes.
    OpenSips,
    /// A SIP proxy already running at this address.
    Addr(SocketAddr),
}

impl TargetKind {
    /// Its name in tables and result rows (`impl`).
    pub fn name(&self) -> &'static str {
        match self {
            TargetKind::Takt(_) => "takt",
            TargetKind::NullRelay => "null-relay",
            TargetKind::Kamailio => "kamailio",
            TargetKind::OpenSips => "opensips",
            TargetKind::Addr(_) => "addr",
        }
    }

    /// The same kind with takt's worker model set to `model` (other
    /// kinds are returned as they are).
    pub fn with_model(self, model: WorkerModel) -> TargetKind {
        match self {
            TargetKind::Takt(o) => TargetKind::Takt(TaktOptions { model, ..o }),
            k => k,
        }
    }

    /// Starts a fresh server (or, for `Addr`, checks nothing and wraps the
    /// address) and waits until it is ready.
    pub fn start(&self, setup: &TargetSetup) -> Result<Target> {
        if setup.workers == 0 {
            return Err(Error::Config("a target needs at least one worker".into()));
        }
        if setup.transport == Transport::Tcp
            && matches!(
                self,
                TargetKind::NullRelay | TargetKind::Kamailio | TargetKind::OpenSips
            )
        {
            return Err(Error::Config(format!(
                "the {} target is UDP only: measure TCP against takt or the address of a running proxy",
                self.name()
            )));
        }
        match self {
            TargetKind::Takt(o) => takt::start(setup, o),
            TargetKind::NullRelay => null_relay::start(setup),
            TargetKind::Kamailio => kamailio::start(setup),
            TargetKind::OpenSips => opensips::start(setup),
            TargetKind::Addr(a) => Ok(Target {
                name: "addr",
                listen: *a,
                uas: setup.uas,
                stateful: setup.mode == Mode::Stateful,
                process: None,
                control: Control::None,
                _dir: None,
            }),
        }
    }
}

/// How the lab talks to a running target besides SIP.
#[derive(Debug)]
enum Control {
    None,
    /// takt's statistics endpoint on a Unix socket.
    TaktStats(PathBuf),
    /// Kamailio's ctl socket (binrpc, spoken by `kamcmd`).
    Kamailio {
        kamcmd: PathBuf,
        ctl: PathBuf,
    },
    /// OpenSIPS's MI datagram socket (JSON-RPC), and the directory the
    /// lab's own end of each exchange is bound in.
    OpenSips(opensips::Mi),
}

/// A running system under test (see the module docs).
#[derive(Debug)]
pub struct Target {
    name: &'static str,
    listen: SocketAddr,
    uas: SocketAddr,
    /// Transaction-stateful ([`Target::stateful`]).
    stateful: bool,
    process: Option<ServerProcess>,
    control: Control,
    // declared last: removed after the process is gone
    _dir: Option<TempDir>,
}

/// What a target reports about itself at one moment.
#[derive(Debug, Clone, Serialize)]
pub struct TargetReport {
    /// The target's name.
    pub target: &'static str,
    /// Where clients send.
    pub listen: SocketAddr,
    /// Where it forwards requests.
    pub uas: SocketAddr,
    /// Its live processes.
    pub pids: Vec<i32>,
    /// Their threads.
    pub threads: usize,
}

impl Target {
    /// The target's name (`impl` in result rows).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The address clients send to.
    pub fn listen(&self) -> SocketAddr {
        self.listen
    }

    /// The address it forwards requests to.
    pub fn uas(&self) -> SocketAddr {
        self.uas
    }

    /// Whether it runs transaction-stateful (the mode it was set up in;
    /// the null relay never does): such a server absorbs a provisional
    /// response that reaches it after the final one (RFC 3261 §16.7), so
    /// the lab does not count that as lost ([`crate::gen::account`]).
    pub fn stateful(&self) -> bool {
        self.stateful
    }

    /// Its live processes (empty for `addr`).
    pub fn pids(&self) -> Vec<i32> {
        self.process.as_ref().map(|p| p.pids()).unwrap_or_default()
    }

    /// Every thread of every process, as (pid, tid): for per-thread
    /// scheduler settings and counters.
    pub fn threads(&self) -> Vec<(i32, i32)> {
        let mut v = Vec::new();
        for pid in self.pids() {
            let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
                continue;
            };
            v.extend(
                dir.flatten()
                    .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
                    .map(|tid| (pid, tid)),
            );
        }
        v.sort_unstable();
        v
    }

    /// Which UDP sockets are the server's: its listen port, and (when the
    /// lab started it) only sockets its processes hold.
    pub fn sockets(&self) -> SocketSelector {
        SocketSelector {
            ports: vec![self.listen.port()],
            owned_only: self.process.is_some(),
        }
    }

    /// `Err` if the server's process has exited.
    pub fn check_alive(&mut self) -> Result<()> {
        match &mut self.process {
            Some(p) => p.check_alive(),
            None => Ok(()),
        }
    }

    /// The server's `/proc` counters now (see [`crate::server_stats`]);
    /// take one before and one after a window and subtract with
    /// [`server_stats::ServerWindow::between`].
    pub fn sample(&self) -> Result<ServerSample> {
        server_stats::sample(&self.pids(), &self.sockets()).map_err(crate::error::io(format!(
            "reading {}'s counters",
            self.name
        )))
    }

    /// A short description.
    pub fn report(&self) -> TargetReport {
        TargetReport {
            target: self.name,
            listen: self.listen,
            uas: self.uas,
            pids: self.pids(),
            threads: self.threads().len(),
        }
    }

    /// takt's `/stats` JSON snapshot (T_sip and K_rcv by kind, socket
    /// drops, …; see takt-sip's `stats` module); `None` for other targets.
    pub fn takt_stats(&self) -> Option<Result<serde_json::Value>> {
        match &self.control {
            Control::TaktStats(path) => Some(takt::fetch_stats(path)),
            _ => None,
        }
    }

    /// takt's counters alone (`/counters`: `/stats` without the per-kind
    /// distributions, which the server would merge from every worker's
    /// histograms to answer): for sampling a server under load many times
    /// a second. `None` for other targets.
    pub fn takt_counters(&self) -> Option<Result<serde_json::Value>> {
        match &self.control {
            Control::TaktStats(path) => Some(takt::fetch(path, takt::StatsPath::Counters)),
            _ => None,
        }
    }

    /// Kamailio's or OpenSIPS's shared memory use now (its `max_used` is
    /// the peak since start); `None` for other targets.
    pub fn shm(&self) -> Option<Result<ShmUsage>> {
        match &self.control {
            Control::Kamailio { kamcmd, ctl } => Some(kamailio::shm(kamcmd, ctl)),
            Control::OpenSips(mi) => Some(mi.shm()),
            _ => None,
        }
    }

    /// Pauses every process of the server (`SIGSTOP` to its group), so
    /// that a target whose turn it is not uses no CPU at all (timers,
    /// spinning workers); [`Target::resume`] continues it. No effect on
    /// `addr`. Stopping or dropping a paused target works as usual.
    pub fn pause(&mut self) {
        if let Some(p) = &mut self.process {
            p.set_paused(true);
        }
    }

    /// Continues a paused server (`SIGCONT`) and gives it 200 ms to catch
    /// up before returning.
    pub fn resume(&mut self) {
        if let Some(p) = &mut self.process {
            p.set_paused(false);
        }
    }

    /// Stops the server (SIGTERM, then SIGKILL to its group after 5 s) and
    /// waits until none of its processes is left. `Err` if it had exited
    /// before, failed on SIGTERM, or had to be killed.
    pub fn stop(mut self) -> Result<()> {
        match &mut self.process {
            Some(p) => p.stop(),
            None => Ok(()),
        }
    }
}

/// Polls `ready` every 20 ms until it gives `Some`, the server exits, or
/// [`START_TIMEOUT`] passes.
fn wait_ready<T>(
    p: &mut ServerProcess,
    target: &'static str,
    mut ready: impl FnMut(&ServerProcess) -> Option<T>,
) -> Result<T> {
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        p.check_started()?;
        if let Some(t) = ready(p) {
            return Ok(t);
        }
        if Instant::now() >= deadline {
            let tail = p.stderr_tail();
            return Err(Error::Start {
                target,
                reason: if tail.is_empty() {
                    format!("not ready within {} s", START_TIMEOUT.as_secs())
                } else {
                    format!(
                        "not ready within {} s; stderr: {tail}",
                        START_TIMEOUT.as_secs()
                    )
                },
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The first UDP socket the processes of `p` hold, bound to `ip` (any
/// port), as seen in their network namespace.
fn bound_udp(p: &ServerProcess, ip: IpAddr) -> Option<SocketAddr> {
    let pids = p.pids();
    let leader = *pids.first()?;
    let mut owned = std::collections::HashSet::new();
    for &pid in &pids {
        owned.extend(server_stats::socket_inodes(pid).ok()?);
    }
    server_stats::udp_sockets(Some(leader))
        .ok()?
        .into_iter()
        .find(|e| owned.contains(&e.inode) && e.local.ip() == ip)
        .map(|e| e.local)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp_only_targets_refuse_tcp_with_a_reason() {
        let mut setup = TargetSetup::new("127.0.0.1:9".parse().unwrap());
        setup.transport = Transport::Tcp;
        for kind in [
            TargetKind::NullRelay,
            TargetKind::Kamailio,
            TargetKind::OpenSips,
        ] {
            let e = kind.start(&setup).unwrap_err().to_string();
            assert!(e.contains("UDP only") && e.contains(kind.name()), "{e}");
        }
        // an address serves whatever it serves
        let addr = TargetKind::Addr("127.0.0.1:5060".parse().unwrap());
        assert!(addr.start(&setup).is_ok());
    }
}
