//! `takt sip torture`: a SIP server (takt-sip, Kamailio, any address)
//! under overload, a UAS killed and restarted, garbage during live calls,
//! and the soak — takt-siplab's `torture::run` behind flags.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use takt_measure::result::DocumentBuilder;
use takt_sched::{CpuSet, ThreadSpec};
use takt_sip::proxy::Mode;
use takt_sip::transport::WorkerModel;
use takt_siplab::gen::{Cancel, GenConfig};
use takt_siplab::search::SearchConfig;
use takt_siplab::target::{TaktOptions, TargetKind, TargetSetup};
use takt_siplab::torture::{self, cgroup, Durations, Progress, Scenario, TorturePlan};

use crate::args::{OutputArgs, SchedArgs};

/// `takt sip torture` flags.
#[derive(Args, Debug)]
pub struct TortureArgs {
    /// The server: takt, kamailio, or the address of a running proxy
    /// (which must forward to --uas).
    #[arg(long, value_name = "TARGET", default_value = "takt")]
    target: String,
    /// Proxy modes (comma-separated; each a run of every scenario).
    #[arg(long, value_name = "stateless,stateful", value_delimiter = ',', value_parser = parse_mode, default_value = "stateful")]
    mode: Vec<Mode>,
    /// Scenarios (comma-separated): overload, uas-restart, garbage, soak,
    /// conn-flood (default: all but soak and conn-flood).
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
    #[arg(long, value_name = "LIST", value_parser = crate::args::parse_cpus)]
    gen_cpus: Option<CpuSet>,
    /// The generator's scheduling policy (default: `fifo:prio=10` where
    /// permitted — root or CAP_SYS_NICE; else the system's, and the output
    /// says so).
    #[arg(long, value_name = "POLICY", value_parser = crate::args::parse_policy)]
    gen_sched: Option<takt_sched::SchedPolicy>,
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
    out: OutputArgs,
    #[command(flatten)]
    record: crate::cmd_runs::RecordArgs,
}

fn parse_mode(s: &str) -> Result<Mode, String> {
    match s {
        "stateless" => Ok(Mode::Stateless),
        "stateful" => Ok(Mode::Stateful),
        _ => Err(format!("unknown mode {s:?} (stateless, stateful)")),
    }
}

fn parse_target(s: &str, model: WorkerModel, args: &[String]) -> Result<TargetKind, String> {
    if s != "takt" && !args.is_empty() {
        return Err("--takt-arg is for the takt target".into());
    }
    match s {
        "takt" => Ok(TargetKind::Takt(TaktOptions {
            model,
            extra_args: args.to_vec(),
        })),
        "kamailio" => Ok(TargetKind::Kamailio),
        a => a
            .parse::<SocketAddr>()
            .map(TargetKind::Addr)
            .map_err(|_| format!("unknown target {s:?} (takt, kamailio, or ip:port)")),
    }
}

pub fn run(a: TortureArgs) -> Result<(), String> {
    let kind = parse_target(&a.target, a.model, &a.takt_args)?;
    let (server_cpus, gen_cpus) =
        takt_siplab::target::placement(a.sched.cpus.as_ref(), a.gen_cpus.as_ref());
    let mut setup = TargetSetup::new("127.0.0.1:9".parse().expect("literal"));
    setup.cpus = Some(server_cpus.clone());
    setup.workers = a.workers as usize;
    setup.sched = a.sched.sched;
    let gen_policy = crate::cmd_sip::gen_policy(a.gen_sched, &server_cpus, &gen_cpus)?;
    let mut gen = GenConfig::new("127.0.0.1:9".parse().expect("literal"), 1.0);
    gen.spec = gen_policy.apply(ThreadSpec::new("gen").with_cpus(gen_cpus));
    gen.ports = a.ports;
    gen.drain = Duration::from_millis(if a.out.quick { 500 } else { 2_000 });
    let mut durations = if a.out.quick {
        Durations::quick()
    } else {
        Durations::full()
    };
    if let Some(s) = a.soak_secs {
        if s == 0 {
            return Err("--soak-secs must be positive".into());
        }
        durations.soak = Duration::from_secs(s);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let cancel = Cancel::default();
    {
        let (stop, cancel) = (stop.clone(), cancel.clone());
        // Release pairs with the Acquire load between scenarios.
        ctrlc::set_handler(move || {
            stop.store(true, Ordering::Release);
            cancel.cancel();
        })
        .map_err(|e| format!("installing the Ctrl-C handler: {e}"))?;
    }
    let scenarios = if a.scenario.is_empty() {
        Scenario::DEFAULT.to_vec()
    } else {
        a.scenario.clone()
    };
    let mut doc = DocumentBuilder::start("sip_torture");
    for &mode in &a.mode {
        if stop.load(Ordering::Acquire) {
            break;
        }
        let mut setup = setup.clone();
        setup.mode = mode;
        let plan = TorturePlan {
            kind: kind.clone(),
            setup,
            cpu_limit: a.cpu_limit,
            period_us: a.period_us,
            scenarios: scenarios.clone(),
            capacity: a.capacity,
            search: SearchConfig {
                reps: if a.out.quick { 2 } else { 3 },
                ..SearchConfig::default()
            },
            search_window: Duration::from_secs(1),
            gen: gen.clone(),
            uas_listen: a.uas,
            durations,
            flood_connections: a.flood_connections as usize,
            stop: stop.clone(),
            cancel: cancel.clone(),
        };
        let label = format!("{} {mode:?}", kind.name()).to_lowercase();
        let part = torture::run(&plan, |p| match p {
            Progress::Step(s) => eprintln!("takt sip torture: {label}: {s}"),
            Progress::Trial {
                rate_cps,
                drop_rate,
                generator_causes,
            } => {
                let flag = if generator_causes.is_empty() {
                    String::new()
                } else {
                    format!(" (generator-bound: {generator_causes})")
                };
                eprintln!(
                    "takt sip torture: {label}: capacity trial {rate_cps:>8.0} cps drop {drop_rate:.4}{flag}"
                )
            }
        })
        .map_err(|e| format!("{label}: {e}"))?;
        for r in part.results {
            doc.push(r);
        }
        for n in part.notes {
            doc.note(format!("{label}: {n}"));
        }
    }
    let mut doc = doc.finish();
    gen_policy.stamp(&mut doc);
    takt_measure::output::emit(&doc, a.out.json)
        .map_err(|e| format!("writing the results: {e}"))?;
    a.record.store(&doc)
}
