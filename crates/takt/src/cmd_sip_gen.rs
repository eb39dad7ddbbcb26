//! `takt sip gen`: the native SIP load generator against any proxy
//! (takt-siplab's `gen` suite behind flags), with a status line per
//! second on stderr, a summary at the end, and `--json` for one result
//! document.

use std::net::SocketAddr;
use std::time::Duration;

use clap::error::ErrorKind;
use clap::{Args, CommandFactory};
use takt_measure::suite::run_command;
use takt_sip::proxy::Transport;
use takt_siplab::gen::{Arrivals, GenOptions, Role};
use takt_siplab::Error;

use crate::args::SchedArgs;
use crate::error::CmdError;

/// `takt sip gen` flags.
#[derive(Args, Debug)]
pub struct GenArgs {
    /// Where the UAC sends its calls (the proxy under test), e.g.
    /// 127.0.0.1:5060; required for roles uac and both.
    #[arg(long, value_name = "ADDR")]
    proxy: Option<SocketAddr>,
    /// Mean offered call rate, calls per second.
    #[arg(long, value_name = "CPS", default_value_t = 1000.0, value_parser = parse_cps)]
    cps: f64,
    /// Calls to place (default 10000 unless --duration is given).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    calls: Option<u64>,
    /// How long to place calls, e.g. 30s (role uas: how long to answer).
    #[arg(long, value_name = "DURATION", value_parser = parse_dur)]
    duration: Option<Duration>,
    /// Arrival process: exponential inter-arrival times (poisson) or equal
    /// ones (constant).
    #[arg(long, value_name = "poisson|constant", default_value = "poisson")]
    arrivals: Arrivals,
    /// Seed of the Poisson schedule (the same seed, the same schedule).
    #[arg(long, value_name = "N", default_value_t = 1)]
    seed: u64,
    /// Time between the ACK and the BYE, e.g. 0, 500ms, 2s.
    #[arg(long, value_name = "DURATION", default_value = "0", value_parser = parse_dur)]
    hold: Duration,
    /// UAC sockets (source ports) the calls are spread over (UDP).
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=4096))]
    ports: u16,
    /// Transport of both sides: udp, or tcp (the UAC connects to the
    /// proxy, the UAS listens; URIs carry ;transport=tcp).
    #[arg(long, value_name = "udp|tcp", default_value = "udp")]
    transport: Transport,
    /// TCP connections from the UAC to the proxy the calls are spread
    /// over (TCP).
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=1024))]
    connections: u16,
    /// Which sides run here: uac, uas or both (the proxy's next hop must
    /// then be --uas-listen); or agent: join the fleet at --fleet and run
    /// the trials a coordinator (`takt sip capacity --fleet`) sends.
    #[arg(long, value_name = "uac|uas|both|agent", default_value = "both")]
    role: RoleArg,
    /// With --role agent: the NATS server of the fleet, e.g.
    /// nats://10.0.0.1:4222.
    #[arg(long, value_name = "URL")]
    fleet: Option<String>,
    /// With --role agent: a takt-remote configuration file (node name,
    /// credentials, TLS); its url is replaced by --fleet.
    #[arg(long, value_name = "FILE")]
    fleet_config: Option<std::path::PathBuf>,
    /// With --role agent: the sides it may play (default both).
    #[arg(long, value_name = "uac|uas|both", default_value = "both")]
    agent_sides: Role,
    /// With --role agent: the address its sockets bind (default: the one
    /// that reaches the NATS server).
    #[arg(long, value_name = "IP")]
    address: Option<std::net::IpAddr>,
    /// Where the UAS listens (role uac: where the UAS elsewhere listens).
    /// The calls' Request-URI is sip:service@ADDR; the requests go to
    /// --proxy, which routes it or forwards to its own next hop.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:5070")]
    uas_listen: SocketAddr,
    /// Preload Route: <sip:PROXY;lr> into every INVITE, for a proxy that
    /// forwards only requests routed through it.
    #[arg(long)]
    route_preload: bool,
    /// Turn RFC 3261 retransmissions off (timeouts still apply).
    #[arg(long)]
    no_retrans: bool,
    /// Bounded wait after the last planned call for calls in progress.
    #[arg(long, value_name = "DURATION", default_value = "3s", value_parser = parse_dur)]
    drain: Duration,
    /// Generator-bound when the send lag's p99 exceeds this.
    #[arg(long, value_name = "DURATION", default_value = "1ms", value_parser = parse_dur)]
    lag_bound: Duration,
    /// Receive buffer per generator socket, bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 4 << 20)]
    rcvbuf: usize,
    #[command(flatten)]
    sched: SchedArgs,
    /// The CPUs of the server under test: without --cpus, the generator
    /// runs on the other online CPUs.
    #[arg(long, value_name = "LIST", value_parser = clap::value_parser!(takt_sched::CpuSet))]
    server_cpus: Option<takt_sched::CpuSet>,
    /// Print exactly one JSON document on stdout instead of the summary.
    #[arg(long)]
    json: bool,
}

fn parse_cps(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 10_000_000.0 => Ok(v),
        _ => Err(format!("{s:?} is not a call rate in (0, 10000000]")),
    }
}

fn parse_dur(s: &str) -> Result<Duration, String> {
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    takt_sched::parse_duration(s)
        .ok_or_else(|| format!("{s:?} is not a duration (e.g. 0, 500ms, 2s)"))
}

/// A usage error with clap's usage line (status 2), as for any bad flag.
fn usage_error(msg: String) -> CmdError {
    CmdError::Usage(crate::cli::Cli::command().error(ErrorKind::ArgumentConflict, msg))
}

/// `--role`: a side of the call flow, or a fleet agent.
#[derive(Clone, Copy, Debug)]
enum RoleArg {
    Side(Role),
    Agent,
}

impl std::str::FromStr for RoleArg {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "agent" => Ok(RoleArg::Agent),
            _ => s.parse().map(RoleArg::Side),
        }
    }
}

/// `--role agent`: serves the fleet until a signal.
fn run_agent(a: GenArgs) -> Result<(), CmdError> {
    let Some(url) = a.fleet.as_deref() else {
        return Err(usage_error(
            "--role agent needs --fleet nats://HOST:PORT".into(),
        ));
    };
    let spec = takt_sched::ThreadSpec::new("gen");
    let spec = match a.sched.cpus {
        Some(c) => spec.with_cpus(c),
        None => spec,
    };
    let spec = match a.sched.sched {
        Some(p) => spec.with_policy(p),
        None => spec,
    };
    takt_siplab::fleet::run_agent(takt_siplab::fleet::AgentOptions {
        remote: takt_siplab::fleet::remote_config(url, a.fleet_config.as_deref())?,
        uac: a.agent_sides.has_uac(),
        uas: a.agent_sides.has_uas(),
        address: a.address,
        spec,
    })?;
    Ok(())
}

/// Runs `takt sip gen`.
pub fn run(a: GenArgs) -> Result<(), CmdError> {
    let role = match a.role {
        RoleArg::Agent => return run_agent(a),
        RoleArg::Side(r) => r,
    };
    if a.fleet.is_some() {
        return Err(usage_error("--fleet is for --role agent".into()));
    }
    let suite = match (GenOptions {
        proxy: a.proxy,
        cps: a.cps,
        calls: a.calls,
        duration: a.duration,
        arrivals: a.arrivals,
        seed: a.seed,
        hold: a.hold,
        ports: usize::from(a.ports),
        transport: a.transport,
        connections: usize::from(a.connections),
        role,
        uas_listen: a.uas_listen,
        route_preload: a.route_preload,
        no_retrans: a.no_retrans,
        drain: a.drain,
        lag_bound: a.lag_bound,
        rcvbuf: a.rcvbuf,
        cpus: a.sched.cpus,
        sched: a.sched.sched,
        server_cpus: a.server_cpus,
    })
    .resolve()
    {
        Ok(s) => s,
        Err(e @ Error::Usage(_)) => return Err(usage_error(e.to_string())),
        Err(e) => return Err(e.into()),
    };
    run_command("takt sip gen", &suite, a.json)?;
    Ok(())
}
