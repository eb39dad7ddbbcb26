//! `takt sip sweep`: capacity versus worker threads and scheduler profiles
//! (takt-siplab's `sweep` suite behind flags; the local generator or a
//! fleet of agents): the paper's tables, and in
//! `--out` the JSON document, the SVG plots and the Markdown table; the
//! run recorded.

use std::path::PathBuf;

use crate::error::CmdError;
use clap::Args;
use takt_measure::suite::{run_command, SuiteOutput};
use takt_sched::{CpuSet, SchedPolicy};
use takt_sip::proxy::Mode;
use takt_sip::transport::{WakeOrder, WorkerModel};
use takt_siplab::search::Step;
use takt_siplab::sweep::{Preset, SweepOptions};

use crate::cmd_sip_capacity::ServerArgs;
use crate::fleet_args::FleetArgs;

/// `takt sip sweep` flags.
#[derive(Args, Debug)]
pub struct SweepArgs {
    /// Targets (repeatable): takt, kamailio, opensips, or the address of a running
    /// proxy (default: takt and kamailio). They take turns point by point.
    #[arg(long = "target", value_name = "TARGET")]
    targets: Vec<String>,
    /// Proxy modes (comma-separated; default stateful).
    #[arg(long, value_name = "stateless,stateful", value_delimiter = ',')]
    mode: Vec<Mode>,
    /// takt's worker models (comma-separated; default shared, the paper's).
    #[arg(long, value_name = "shared,reuseport,batched", value_delimiter = ',')]
    model: Vec<WorkerModel>,
    /// takt's wake orders as an axis, each its own series (shared model;
    /// fifo is OpenSIPS's order; default: the proxy's, lifo).
    #[arg(long, value_name = "lifo,fifo", value_delimiter = ',')]
    wake: Vec<WakeOrder>,
    /// Worker counts m (default 2,4,8,16; --quick 2,16; --paper 2,4,6,8,16).
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=1024))]
    workers: Vec<u32>,
    /// Scheduler profiles: default, server, enhanced, batch, rr[:prio=P,timeslice=T],
    /// fifo[:prio=P], poll, base-slice=D, or any --sched policy
    /// (default default,server,enhanced,batch; --quick default,enhanced).
    /// Repeatable and comma-separated.
    #[arg(long = "profile", value_name = "LIST")]
    profiles: Vec<String>,
    /// The servers' CPUs (default: the last CPU). `0-1` runs the server on
    /// both cores with the generator sharing them (the output says so).
    #[arg(long, value_name = "LIST", value_parser = clap::value_parser!(CpuSet))]
    cpus: Option<CpuSet>,
    /// The generator's CPUs (default: every CPU not given to the server,
    /// or all of them when the server has them all).
    #[arg(long, value_name = "LIST", value_parser = clap::value_parser!(CpuSet))]
    gen_cpus: Option<CpuSet>,
    /// The generator's scheduling policy (default: `fifo:prio=10` where
    /// permitted — root or CAP_SYS_NICE — so that on a busy host it keeps
    /// its send lag; else the system's, and the output says so).
    #[arg(long, value_name = "POLICY", value_parser = clap::value_parser!(SchedPolicy))]
    gen_sched: Option<SchedPolicy>,
    /// Drop-rate threshold.
    #[arg(long, value_name = "FRACTION", default_value_t = 0.01)]
    threshold: f64,
    /// Grid step: a fraction of the rate (0.03), or calls/s (200cps, the
    /// paper's).
    #[arg(long, value_name = "STEP", default_value = "0.03")]
    step: Step,
    /// Repetitions per grid point (default 5; --quick 2; --paper 30).
    #[arg(long, value_name = "N")]
    reps: Option<usize>,
    /// Times a search re-brackets when its grid misses the crossing
    /// before it decides on what it has (default 3; --quick 1).
    #[arg(long, value_name = "N")]
    rebrackets: Option<usize>,
    /// Table III pairs per profile and m (default 5; --quick 3; --paper 30).
    #[arg(long, value_name = "N")]
    pairs: Option<usize>,
    /// Seconds of calls per trial (default 2; --quick 1; --paper 200,000 calls).
    #[arg(long, value_name = "SECS")]
    window: Option<f64>,
    /// First rate of every search's ramp, calls/s (default: 8,000 for
    /// takt, 2,000 for Kamailio, 1,000 otherwise).
    #[arg(long, value_name = "CPS")]
    start_cps: Option<f64>,
    /// Highest rate tried, calls/s.
    #[arg(long, value_name = "CPS", default_value_t = 200_000.0)]
    max_cps: f64,
    /// UAC source ports.
    #[arg(long, value_name = "N", default_value_t = 16)]
    ports: usize,
    /// The paper's scale: m 2,4,6,8,16, 200,000 calls per point, 30
    /// repetitions (hours; announced first).
    #[arg(long, conflicts_with = "quick")]
    paper: bool,
    /// The reduced sweep (under 5 minutes for takt and Kamailio).
    #[arg(long)]
    quick: bool,
    /// Print exactly one JSON document on stdout instead of the tables.
    #[arg(long)]
    json: bool,
    /// Directory for the JSON document, the SVG plots and the markdown
    /// table (`--plot` is the same flag, as in `takt sip capacity`).
    #[arg(
        long,
        visible_alias = "plot",
        value_name = "DIR",
        default_value = "takt-sweep"
    )]
    out: PathBuf,
    #[command(flatten)]
    server: ServerArgs,
    #[command(flatten)]
    fleet: FleetArgs,
    /// The run records (a SQLite file or a postgres:// URL); the sweep always records its run.
    #[arg(long, value_name = "PATH|URL", env = takt_records::ENV_VAR, default_value = takt_records::DEFAULT_PATH)]
    db: PathBuf,
}

pub fn run(a: SweepArgs) -> Result<(), CmdError> {
    let fleet = a.fleet.options()?;
    let suite = SweepOptions {
        targets: a.targets,
        modes: a.mode,
        models: a.model,
        workers: a.workers.iter().map(|&w| w as usize).collect(),
        profiles: a.profiles,
        cpus: a.cpus,
        gen_cpus: a.gen_cpus,
        gen_sched: a.gen_sched,
        threshold: a.threshold,
        step: a.step,
        reps: a.reps,
        rebrackets: a.rebrackets,
        pairs: a.pairs,
        window: a.window,
        start_cps: a.start_cps,
        max_cps: a.max_cps,
        ports: a.ports,
        preset: Preset::of(a.quick, a.paper),
        out: Some(a.out.clone()),
        wakes: a.wake,
        uas: a.server.uas,
        route_preload: a.server.route_preload,
        cpu_limit: a.server.cpu_limit,
        fleet,
        listen: a.fleet.listen,
    }
    .resolve()?;
    let out = run_command("takt sip sweep", &suite, a.json)?;
    let id = takt_lab::runs::record(&a.db, out.document())?;
    let written: Vec<String> = out
        .written
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    eprintln!(
        "wrote {} and {} plot(s) to {}; recorded as run {id} in {}",
        written.join(", "),
        out.plots,
        a.out.display(),
        takt_records::Location::from(&a.db)
    );
    Ok(())
}
