//! `takt sip torture`: a SIP server (takt-sip, Kamailio, any address)
//! under overload, a UAS killed and restarted, garbage during live calls,
//! and the soak — takt-siplab's `torture` suite behind flags. With
//! `--fleet`, every scenario's calls come from a fleet of agents and what
//! it does to the server stays on this host (uas-restart's outage is the
//! fleet's UAS socket closed and bound again).

use std::net::SocketAddr;

use clap::Args;
use takt_sched::{CpuSet, SchedPolicy};
use takt_sip::proxy::Mode;
use takt_sip::transport::WorkerModel;
use takt_siplab::torture::{cgroup, Scenario, TortureOptions};

use crate::args::{OutputArgs, SchedArgs};
use crate::error::CmdError;
use crate::fleet_args::FleetArgs;

/// `takt sip torture` flags.
#[derive(Args, Debug)]
pub struct TortureArgs {
    /// The server: takt, kamailio, opensips, or the address of a running proxy
    /// (which must forward to --uas).
    #[arg(long, value_name = "TARGET", default_value = "takt")]
    target: String,
    /// Proxy modes (comma-separated; each a run of every scenario).
    #[arg(
        long,
        value_name = "stateless,stateful",
        value_delimiter = ',',
        default_value = "stateful"
    )]
    mode: Vec<Mode>,
    /// Scenarios (comma-separated): overload, uas-restart, garbage, soak,
    /// conn-flood (default: all but soak and conn-flood). With --fleet,
    /// their calls come from the agents.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    scenario: Vec<Scenario>,
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
    /// Limit the server to this many CPUs' worth of time with CFS bandwidth
    /// control (e.g. 0.5; root); its capacity is measured under the limit.
    #[arg(long, value_name = "CPUS")]
    cpu_limit: Option<f64>,
    /// The CFS period of --cpu-limit, µs (1000..=2000).
    #[arg(long, value_name = "US", default_value_t = cgroup::DEFAULT_PERIOD_US)]
    period_us: u64,
    /// The server's capacity, calls/s (skips the capacity search).
    #[arg(long, value_name = "CPS")]
    capacity: Option<f64>,
    /// Where the UAS listens (an address target must forward there).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    uas: SocketAddr,
    /// The generator's CPUs (default: every CPU not given to the server).
    #[arg(long, value_name = "LIST", value_parser = clap::value_parser!(CpuSet))]
    gen_cpus: Option<CpuSet>,
    /// The generator's scheduling policy (default: `fifo:prio=10` where
    /// permitted — root or CAP_SYS_NICE; else the system's, and the output
    /// says so).
    #[arg(long, value_name = "POLICY", value_parser = clap::value_parser!(SchedPolicy))]
    gen_sched: Option<SchedPolicy>,
    /// UAC source ports.
    #[arg(long, value_name = "N", default_value_t = 16)]
    ports: usize,
    /// A further `takt sip proxy` argument for the takt target
    /// (repeatable), e.g. `--takt-arg=--config=overload.toml`.
    #[arg(long = "takt-arg", value_name = "ARG", allow_hyphen_values = true)]
    takt_args: Vec<String>,
    /// TCP connections the conn-flood scenario holds idle, each from its
    /// own 127.x source address.
    #[arg(long, value_name = "N", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=50_000))]
    flood_connections: u64,
    /// Seconds of the soak (default 1800; 120 with --quick).
    #[arg(long, value_name = "SECS")]
    soak_secs: Option<u64>,
    #[command(flatten)]
    sched: SchedArgs,
    #[command(flatten)]
    fleet: FleetArgs,
    #[command(flatten)]
    out: OutputArgs,
    #[command(flatten)]
    record: crate::cmd_runs::RecordArgs,
}

pub fn run(a: TortureArgs) -> Result<(), CmdError> {
    let fleet = a.fleet.options()?;
    let suite = TortureOptions {
        target: a.target,
        modes: a.mode,
        scenarios: a.scenario,
        model: a.model,
        workers: a.workers as usize,
        cpu_limit: a.cpu_limit,
        period_us: a.period_us,
        capacity: a.capacity,
        uas: a.uas,
        cpus: a.sched.cpus,
        sched: a.sched.sched,
        gen_cpus: a.gen_cpus,
        gen_sched: a.gen_sched,
        ports: a.ports,
        takt_args: a.takt_args,
        flood_connections: a.flood_connections as usize,
        soak_secs: a.soak_secs,
        quick: a.out.quick,
        fleet,
        listen: a.fleet.listen,
    }
    .resolve()?;
    let doc = takt_measure::suite::run_command("takt sip torture", &suite, a.out.json)?;
    Ok(a.record.store(&doc)?)
}
