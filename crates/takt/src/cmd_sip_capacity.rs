//! `takt sip capacity`: the 1%-drop capacity of one or more targets
//! (takt-sip, Kamailio, the null relay, any address) under the native
//! generator or a fleet of agents — takt-siplab's `capacity` suite behind
//! flags.

use std::net::SocketAddr;

use clap::Args;
use takt_sched::{CpuSet, SchedPolicy};
use takt_sip::proxy::{Mode, Transport};
use takt_sip::transport::WorkerModel;
use takt_siplab::capacity::{CapacityOptions, NetKind};
use takt_siplab::search::Step;

use crate::args::{OutputArgs, SchedArgs};
use crate::error::CmdError;
use crate::fleet_args::FleetArgs;

/// `takt sip capacity` flags.
#[derive(Args, Debug)]
pub struct CapacityArgs {
    /// Targets (repeatable): takt, kamailio, opensips, null-relay, or the address
    /// of a running proxy (default: takt, kamailio, null-relay).
    #[arg(long = "target", value_name = "TARGET")]
    targets: Vec<String>,
    /// Proxy modes (comma-separated; default both).
    #[arg(long, value_name = "stateless,stateful", value_delimiter = ',')]
    mode: Vec<Mode>,
    /// takt's worker model.
    #[arg(
        long,
        value_name = "shared|reuseport|batched",
        default_value = "shared"
    )]
    model: WorkerModel,
    /// Worker threads (takt) or children (Kamailio).
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1024))]
    workers: u32,
    /// The generator's CPUs (default: every CPU not given to the server).
    #[arg(long, value_name = "LIST", value_parser = clap::value_parser!(CpuSet))]
    gen_cpus: Option<CpuSet>,
    /// The generator's scheduling policy (default: `fifo:prio=10` where
    /// permitted — root or CAP_SYS_NICE — so that on a busy host it keeps
    /// its send lag; else the system's, and the output says so).
    #[arg(long, value_name = "POLICY", value_parser = clap::value_parser!(SchedPolicy))]
    gen_sched: Option<SchedPolicy>,
    #[command(flatten)]
    sched: SchedArgs,
    /// Drop-rate threshold.
    #[arg(long, value_name = "FRACTION", default_value_t = 0.01)]
    threshold: f64,
    /// Grid step: a fraction of the rate (0.03), or calls/s (200cps).
    #[arg(long, value_name = "STEP", default_value = "0.03")]
    step: Step,
    /// Repetitions per grid point (default 5; 3 with --quick).
    #[arg(long, value_name = "N")]
    reps: Option<usize>,
    /// First rate of the ramp, calls/s.
    #[arg(long, value_name = "CPS", default_value_t = 1000.0)]
    start_cps: f64,
    /// Highest rate tried, calls/s.
    #[arg(long, value_name = "CPS", default_value_t = 200_000.0)]
    max_cps: f64,
    /// Seconds of calls per trial (default 3; 1 with --quick).
    #[arg(long, value_name = "SECS")]
    window: Option<f64>,
    /// Network path: loopback or veth (root).
    #[arg(long, value_name = "loopback|veth", default_value = "loopback")]
    net: NetKind,
    /// UAC source ports (UDP).
    #[arg(long, value_name = "N", default_value_t = 16)]
    ports: usize,
    /// Transport of the load: udp, or tcp (takt and running proxies only;
    /// the null relay and Kamailio's configuration are UDP only).
    #[arg(long, value_name = "udp|tcp", default_value = "udp")]
    transport: Transport,
    /// UAC connections to the server (TCP).
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=1024))]
    connections: u16,
    /// Server CPU per call at a fixed rate, after the search: `CPS` for
    /// every target, `TARGET=CPS` for one (repeatable, comma-separated),
    /// `none` to skip [default: 10000,kamailio=2000,opensips=2000].
    #[arg(long = "at", value_name = "[TARGET=]CPS", value_delimiter = ',')]
    at: Vec<String>,
    /// Workers (takt, spinning off) or children (Kamailio) of the
    /// fixed-rate measurement.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    at_workers: u32,
    /// Skip the capacity search: only the fixed-rate measurement.
    #[arg(long)]
    no_search: bool,
    /// Write an SVG plot of drop rate against offered rate per case into
    /// this directory (`sip_capacity_drop_rate.svg`).
    #[arg(long, value_name = "DIR")]
    plot: Option<std::path::PathBuf>,
    #[command(flatten)]
    server: ServerArgs,
    #[command(flatten)]
    fleet: FleetArgs,
    #[command(flatten)]
    out: OutputArgs,
}

/// The flags of `capacity` and `sweep` for a server the lab did not
/// start, and for a server's CPU quota.
#[derive(Args, Debug)]
pub struct ServerArgs {
    /// Where the generator's UAS listens (default: a free port): the
    /// address a target with a fixed next hop forwards to. The calls'
    /// Request-URI names it; they are sent to the target.
    #[arg(long, value_name = "ADDR")]
    pub uas: Option<SocketAddr>,
    /// Preload Route: <sip:TARGET;lr> into every INVITE, for a proxy that
    /// forwards only requests routed through it.
    #[arg(long)]
    pub route_preload: bool,
    /// Run each server under a CPU quota for its whole search, in CPUs
    /// (e.g. 0.5; cgroup cpu.max, root).
    #[arg(long, value_name = "CPUS")]
    pub cpu_limit: Option<f64>,
}

pub fn run(a: CapacityArgs) -> Result<(), CmdError> {
    let fleet = a.fleet.options()?;
    let suite = CapacityOptions {
        targets: a.targets,
        modes: a.mode,
        model: a.model,
        workers: a.workers as usize,
        cpus: a.sched.cpus,
        sched: a.sched.sched,
        gen_cpus: a.gen_cpus,
        gen_sched: a.gen_sched,
        threshold: a.threshold,
        step: a.step,
        reps: a.reps,
        start_cps: a.start_cps,
        max_cps: a.max_cps,
        window: a.window,
        net: a.net,
        ports: a.ports,
        transport: a.transport,
        connections: usize::from(a.connections),
        at: a.at,
        at_workers: a.at_workers as usize,
        no_search: a.no_search,
        plot: a.plot,
        quick: a.out.quick,
        uas: a.server.uas,
        route_preload: a.server.route_preload,
        cpu_limit: a.server.cpu_limit,
        fleet,
        listen: a.fleet.listen,
    }
    .resolve()?;
    takt_measure::suite::run_command("takt sip capacity", &suite, a.out.json)?;
    Ok(())
}
