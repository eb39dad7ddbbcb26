//! `takt sip capacity`: the 1%-drop capacity of one or more targets
//! (takt-sip, Kamailio, the null relay, any address) under the native
//! generator — takt-siplab's `capacity::run` behind flags.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use takt_sched::{CpuSet, ThreadSpec};
use takt_sip::proxy::Mode;
use takt_sip::transport::WorkerModel;
use takt_siplab::capacity::{self, CapacityCase, CapacityPlan, GenLoad, NetKind};
use takt_siplab::gen::{Cancel, GenConfig};
use takt_siplab::search::SearchConfig;
use takt_siplab::target::{TaktOptions, TargetKind, TargetSetup};

use crate::args::{OutputArgs, SchedArgs};

/// Fewest calls in a trial, whatever its rate and window.
const MIN_CALLS: u64 = 100;

/// `takt sip capacity` flags.
#[derive(Args, Debug)]
pub struct CapacityArgs {
    /// Targets (repeatable): takt, kamailio, null-relay, or the address
    /// of a running proxy (default: takt, kamailio, null-relay).
    #[arg(long = "target", value_name = "TARGET")]
    targets: Vec<String>,
    /// Proxy modes (comma-separated; default both).
    #[arg(long, value_name = "stateless,stateful", value_delimiter = ',', value_parser = parse_mode)]
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
    #[arg(long, value_name = "LIST", value_parser = crate::args::parse_cpus)]
    gen_cpus: Option<CpuSet>,
    #[command(flatten)]
    sched: SchedArgs,
    /// Drop-rate threshold.
    #[arg(long, value_name = "FRACTION", default_value_t = 0.01)]
    threshold: f64,
    /// Grid step, fraction of the rate.
    #[arg(long, value_name = "FRACTION", default_value_t = 0.03)]
    step: f64,
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
    #[arg(long, value_name = "loopback|veth", default_value = "loopback", value_parser = parse_net)]
    net: NetKind,
    /// UAC source ports.
    #[arg(long, value_name = "N", default_value_t = 16)]
    ports: usize,
    #[command(flatten)]
    out: OutputArgs,
}

pub(crate) fn parse_mode(s: &str) -> Result<Mode, String> {
    match s {
        "stateless" => Ok(Mode::Stateless),
        "stateful" => Ok(Mode::Stateful),
        _ => Err(format!("unknown mode {s:?} (stateless, stateful)")),
    }
}

fn parse_net(s: &str) -> Result<NetKind, String> {
    match s {
        "loopback" => Ok(NetKind::Loopback),
        "veth" => Ok(NetKind::Veth),
        _ => Err(format!("unknown network {s:?} (loopback, veth)")),
    }
}

pub(crate) fn parse_target(s: &str, model: WorkerModel) -> Result<TargetKind, String> {
    match s {
        "takt" => Ok(TargetKind::Takt(TaktOptions {
            model,
            extra_args: Vec::new(),
        })),
        "kamailio" => Ok(TargetKind::Kamailio),
        "null-relay" => Ok(TargetKind::NullRelay),
        a => a
            .parse::<SocketAddr>()
            .map(TargetKind::Addr)
            .map_err(|_| format!("unknown target {s:?} (takt, kamailio, null-relay, or ip:port)")),
    }
}

pub fn run(a: CapacityArgs) -> Result<(), String> {
    let names = if a.targets.is_empty() {
        vec!["takt".into(), "kamailio".into(), "null-relay".into()]
    } else {
        a.targets.clone()
    };
    let modes = if a.mode.is_empty() {
        vec![Mode::Stateless, Mode::Stateful]
    } else {
        a.mode.clone()
    };
    let mut cases = Vec::new();
    for n in &names {
        let kind = parse_target(n, a.model)?;
        if kind == TargetKind::NullRelay {
            cases.push(CapacityCase {
                kind,
                mode: Mode::Stateless,
            });
            continue;
        }
        for &mode in &modes {
            cases.push(CapacityCase {
                kind: kind.clone(),
                mode,
            });
        }
    }
    let online = CpuSet::online();
    let server_cpus = a
        .sched
        .cpus
        .clone()
        .unwrap_or_else(|| CpuSet::single(online.iter().last().unwrap_or(0)));
    let gen_cpus = a.gen_cpus.clone().unwrap_or_else(|| {
        let mut s = CpuSet::empty();
        for c in online.iter().filter(|c| !server_cpus.contains(*c)) {
            s.insert(c);
        }
        if s.is_empty() {
            online.clone()
        } else {
            s
        }
    });
    let mut base = TargetSetup::new("127.0.0.1:9".parse().expect("literal"));
    base.cpus = Some(server_cpus);
    base.workers = a.workers as usize;
    base.sched = a.sched.sched;
    let search = SearchConfig {
        threshold: a.threshold,
        step: a.step,
        reps: a.reps.unwrap_or(if a.out.quick { 3 } else { 5 }),
        start_cps: a.start_cps,
        max_cps: a.max_cps,
        ..SearchConfig::default()
    };
    let window = Duration::from_secs_f64(a.window.unwrap_or(if a.out.quick { 1.0 } else { 3.0 }));
    let stop = Arc::new(AtomicBool::new(false));
    let cancel = Cancel::default();
    {
        let (stop, cancel) = (stop.clone(), cancel.clone());
        // Release pairs with the Acquire load before each trial.
        ctrlc::set_handler(move || {
            stop.store(true, Ordering::Release);
            cancel.cancel();
        })
        .map_err(|e| format!("installing the Ctrl-C handler: {e}"))?;
    }
    let plan = CapacityPlan {
        cases,
        base,
        search,
        net: a.net,
        stop,
    };
    let mut gcfg = GenConfig::new("127.0.0.1:9".parse().expect("literal"), 1.0);
    gcfg.spec = ThreadSpec::new("gen").with_cpus(gen_cpus);
    gcfg.ports = a.ports;
    // With retransmissions off a call's messages are all in flight within
    // milliseconds of its last planned send; the drain only catches the tail.
    gcfg.drain = Duration::from_millis(if a.out.quick { 500 } else { 2_000 });
    eprintln!(
        "takt sip capacity: {} case(s), {} s of calls per trial, {} reps per grid point",
        plan.cases.len(),
        window.as_secs_f64(),
        plan.search.reps
    );
    let doc = capacity::run(
        &plan,
        |ip| GenLoad::new(gcfg.clone(), ip, window, MIN_CALLS, cancel.clone()),
        |p| {
            eprintln!(
                "[{}/{}] {:<22} {:>8.0} cps {:<6} drop {:.4}{}",
                p.done,
                p.expected,
                p.label,
                p.rate_cps,
                format!("{:?}", p.phase).to_lowercase(),
                p.outcome.drop_rate(),
                match (p.outcome.generator_bound, p.outcome.generator_causes) {
                    (false, _) => String::new(),
                    (true, c) if c.is_empty() => " (generator-bound)".to_string(),
                    (true, c) => format!(" (generator-bound: {c})"),
                }
            )
        },
    )
    .map_err(|e| e.to_string())?;
    takt_measure::output::emit(&doc, a.out.json).map_err(|e| format!("writing the results: {e}"))
}
