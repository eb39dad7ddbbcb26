//! `takt sip tune`: the best scheduler setting for one server and worker
//! count within a time budget (takt-siplab's `tune` suite: a sweep over
//! the candidates, then an interleaved A/B against the default).

use std::path::PathBuf;

use crate::error::CmdError;
use clap::Args;
use takt_measure::suite::{run_command, SuiteOutput};
use takt_sched::{CpuSet, SchedPolicy};
use takt_sip::proxy::Mode;
use takt_sip::transport::WorkerModel;
use takt_siplab::tune::{self, TuneOptions};

/// `takt sip tune` flags.
#[derive(Args, Debug)]
pub struct TuneArgs {
    /// The server: takt, kamailio, opensips, or the address of a running proxy.
    #[arg(long, value_name = "TARGET")]
    target: String,
    /// Worker threads (takt) or children (Kamailio).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    workers: u32,
    /// Proxy mode.
    #[arg(long, value_name = "stateless|stateful", default_value = "stateful")]
    mode: Mode,
    /// takt's worker model.
    #[arg(
        long,
        value_name = "shared|reuseport|batched",
        default_value = "shared"
    )]
    model: WorkerModel,
    /// Time budget in minutes: the run stops when it is spent (its
    /// verdict is then "inconclusive").
    #[arg(long, value_name = "MINUTES", default_value_t = 20.0)]
    budget: f64,
    /// Repetitions per grid point.
    #[arg(long, value_name = "N", default_value_t = 3)]
    reps: usize,
    /// A/B pairs (at least 5).
    #[arg(long, value_name = "N", default_value_t = 6, value_parser = clap::value_parser!(u64).range(tune::MIN_PAIRS as u64..))]
    pairs: u64,
    /// Seconds of calls per trial.
    #[arg(long, value_name = "SECS", default_value_t = 1.0)]
    window: f64,
    /// First rate of the ramp (default: 8,000 for takt, 2,000 for Kamailio).
    #[arg(long, value_name = "CPS")]
    start_cps: Option<f64>,
    /// Highest rate tried, calls/s.
    #[arg(long, value_name = "CPS", default_value_t = 200_000.0)]
    max_cps: f64,
    /// The server's CPUs (default: the last CPU).
    #[arg(long, value_name = "LIST", value_parser = clap::value_parser!(CpuSet))]
    cpus: Option<CpuSet>,
    /// The generator's CPUs (default: the others).
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
    /// Print exactly one JSON document on stdout.
    #[arg(long)]
    json: bool,
    /// Directory for the JSON document and the plots.
    #[arg(long, value_name = "DIR", default_value = "takt-tune")]
    out: PathBuf,
    /// The run records (a SQLite file or a postgres:// URL).
    #[arg(long, value_name = "PATH|URL", env = takt_records::ENV_VAR, default_value = takt_records::DEFAULT_PATH)]
    db: PathBuf,
}

pub fn run(a: TuneArgs) -> Result<(), CmdError> {
    let suite = TuneOptions {
        target: a.target,
        workers: a.workers as usize,
        mode: a.mode,
        model: a.model,
        budget_min: a.budget,
        reps: a.reps,
        pairs: a.pairs as usize,
        window: a.window,
        start_cps: a.start_cps,
        max_cps: a.max_cps,
        cpus: a.cpus,
        gen_cpus: a.gen_cpus,
        gen_sched: a.gen_sched,
        ports: a.ports,
        out: Some(a.out.clone()),
    }
    .resolve()?;
    let out = run_command("takt sip tune", &suite, a.json)?;
    let id = takt_lab::runs::record(&a.db, out.document())?;
    let written: Vec<String> = out
        .written
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    eprintln!(
        "wrote {} and {} plot(s); recorded as run {id} in {}",
        written.join(", "),
        out.plots,
        takt_records::Location::from(&a.db)
    );
    Ok(())
}
