//! `takt sip capacity`: the 1%-drop capacity of one or more targets
//! (takt-sip, Kamailio, the null relay, any address) under the native
//! generator — takt-siplab's `capacity::run` behind flags.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use takt_measure::progress::{fmt_secs, Progress, Stage};
use takt_measure::result::Document;
use takt_sched::{CpuSet, ThreadSpec};
use takt_sip::proxy::{Mode, Transport};
use takt_sip::transport::WorkerModel;
use takt_siplab::capacity::{
    self, CapacityCase, CapacityPlan, FixedCase, FixedPlan, GenLoad, NetKind,
};
use takt_siplab::gen::{Cancel, GenConfig};
use takt_siplab::search::{SearchConfig, TrialOutcome};
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
    /// The generator's scheduling policy (default: `fifo:prio=10` where
    /// permitted — root or CAP_SYS_NICE — so that on a busy host it keeps
    /// its send lag; else the system's, and the output says so).
    #[arg(long, value_name = "POLICY", value_parser = crate::args::parse_policy)]
    gen_sched: Option<takt_sched::SchedPolicy>,
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
    /// UAC source ports (UDP).
    #[arg(long, value_name = "N", default_value_t = 16)]
    ports: usize,
    /// Transport of the load: udp, or tcp (takt and running proxies only;
    /// the null relay and Kamailio's configuration are UDP only).
    #[arg(long, value_name = "udp|tcp", default_value = "udp", value_parser = crate::cmd_sip::parse_transport)]
    transport: Transport,
    /// UAC connections to the server (TCP).
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=1024))]
    connections: u16,
    /// Server CPU per call at a fixed rate, after the search: `CPS` for
    /// every target, `TARGET=CPS` for one (repeatable, comma-separated),
    /// `none` to skip [default: 10000,kamailio=2000].
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

/// Fixed rates per target name (`None`: skipped), from `--at`.
#[derive(Debug, Default)]
struct AtRates {
    all: Option<f64>,
    per: Vec<(String, f64)>,
    none: bool,
}

impl AtRates {
    fn parse(specs: &[String]) -> Result<AtRates, String> {
        let specs: Vec<&str> = if specs.is_empty() {
            vec!["10000", "kamailio=2000"]
        } else {
            specs.iter().map(String::as_str).collect()
        };
        let mut r = AtRates::default();
        let rate = |v: &str| -> Result<f64, String> {
            match v.parse::<f64>() {
                Ok(c) if c.is_finite() && c > 0.0 => Ok(c),
                _ => Err(format!("--at: {v:?} is not a positive call rate")),
            }
        };
        for s in specs {
            match s.split_once('=') {
                _ if s == "none" => r.none = true,
                Some((t, v)) => r.per.push((t.to_string(), rate(v)?)),
                None => r.all = Some(rate(s)?),
            }
        }
        Ok(r)
    }

    fn rate(&self, target: &str) -> Option<f64> {
        if self.none {
            return None;
        }
        self.per
            .iter()
            .rev()
            .find(|(t, _)| t == target)
            .map(|&(_, c)| c)
            .or(self.all)
    }
}

/// The search's case list: each target in each mode (the null relay once).
fn cases_of(kinds: &[(String, TargetKind)], modes: &[Mode]) -> Vec<(String, CapacityCase)> {
    let mut cases = Vec::new();
    for (n, kind) in kinds {
        let ms = if *kind == TargetKind::NullRelay {
            &[Mode::Stateless][..]
        } else {
            modes
        };
        for &mode in ms {
            cases.push((
                n.clone(),
                CapacityCase {
                    kind: kind.clone(),
                    mode,
                },
            ));
        }
    }
    cases
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
    let kinds = names
        .iter()
        .map(|n| Ok((n.clone(), parse_target(n, a.model)?)))
        .collect::<Result<Vec<_>, String>>()?;
    let at = AtRates::parse(&a.at)?;
    let cases = cases_of(&kinds, &modes);
    let fixed: Vec<FixedCase> = cases
        .iter()
        .filter(|(_, c)| !matches!(c.kind, TargetKind::Addr(_)))
        .filter_map(|(n, c)| {
            let mut case = c.clone();
            if let TargetKind::Takt(o) = &mut case.kind {
                o.extra_args = vec!["--spin".into(), "0".into()];
            }
            Some(FixedCase {
                case,
                rate_cps: at.rate(n)?,
            })
        })
        .collect();
    if a.no_search && fixed.is_empty() {
        return Err("--no-search leaves nothing to run: give --at".into());
    }
    let cases: Vec<CapacityCase> = if a.no_search {
        Vec::new()
    } else {
        cases.into_iter().map(|(_, c)| c).collect()
    };
    let (server_cpus, gen_cpus) =
        takt_siplab::target::placement(a.sched.cpus.as_ref(), a.gen_cpus.as_ref());
    let mut base = TargetSetup::new("127.0.0.1:9".parse().expect("literal"));
    base.cpus = Some(server_cpus.clone());
    base.workers = a.workers as usize;
    base.sched = a.sched.sched;
    base.transport = a.transport;
    let reps = a.reps.unwrap_or(if a.out.quick { 3 } else { 5 });
    let search = SearchConfig {
        threshold: a.threshold,
        step: a.step,
        reps,
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
    let gen_policy = crate::cmd_sip::gen_policy(a.gen_sched, &server_cpus, &gen_cpus)?;
    let mut gcfg = GenConfig::new("127.0.0.1:9".parse().expect("literal"), 1.0);
    gcfg.spec = gen_policy.apply(ThreadSpec::new("gen").with_cpus(gen_cpus));
    gcfg.ports = a.ports;
    gcfg.transport = a.transport;
    gcfg.connections = usize::from(a.connections);
    // With retransmissions off a call's messages are all in flight within
    // milliseconds of its last planned send; the drain only catches the tail.
    gcfg.drain = Duration::from_millis(if a.out.quick { 500 } else { 2_000 });
    // a trial's wall time: resume, the window, the drain, start-up
    let trial_s = window.as_secs_f64() + gcfg.drain.as_secs_f64() + 0.4;
    let make_load = |ip| GenLoad::new(gcfg.clone(), ip, window, MIN_CALLS, cancel.clone());
    let shown = Progress::auto();
    let mut doc: Option<Document> = None;
    if !cases.is_empty() {
        let plan = CapacityPlan {
            cases,
            base: base.clone(),
            search,
            net: a.net,
            stop: stop.clone(),
        };
        doc = Some(search_with_progress(&plan, make_load, &shown, trial_s)?);
    }
    if !fixed.is_empty() && !stop.load(Ordering::Acquire) {
        let mut fbase = base;
        fbase.workers = a.at_workers as usize;
        let plan = FixedPlan {
            cases: fixed,
            base: fbase,
            reps,
            net: a.net,
            stop,
        };
        let stage = shown.stage(
            "cpu per call",
            Duration::from_secs_f64(trial_s * (plan.reps * plan.cases.len()) as f64),
        );
        let f = capacity::run_fixed(&plan, make_load, |p| {
            stage.step(&format!(
                "[{}/{}] {} at {:.0} cps: {}{}",
                p.done,
                p.expected,
                p.label,
                p.rate_cps,
                p.cpu_per_call_us.map_or_else(
                    || "no call completed".to_string(),
                    |c| format!("{c:.1} µs/call")
                ),
                flag(p.outcome)
            ))
        })
        .map_err(|e| e.to_string())?;
        stage.finish();
        doc = Some(match doc {
            Some(mut d) => {
                d.results.extend(f.results);
                d.notes.extend(f.notes);
                d
            }
            None => f,
        });
    }
    let mut doc = doc.ok_or("nothing was measured")?;
    gen_policy.stamp(&mut doc);
    if let Some(dir) = &a.plot {
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let path = dir.join("sip_capacity_drop_rate.svg");
        match capacity::plot::drop_rate_svg(&doc, a.threshold, &path) {
            Ok(()) => eprintln!("plot: {}", path.display()),
            // an interrupted run may have no finished search to draw
            Err(e) if cases_done(&doc) == 0 => eprintln!("no plot: {e}"),
            Err(e) => return Err(e.to_string()),
        }
    }
    takt_measure::output::emit(&doc, a.out.json).map_err(|e| format!("writing the results: {e}"))
}

/// Cases whose search finished (a `capacity` row).
fn cases_done(doc: &Document) -> usize {
    doc.results.iter().filter(|r| r.name == "capacity").count()
}

/// ` (generator-bound: causes)` for a flagged trial, else nothing.
fn flag(o: &TrialOutcome) -> String {
    match (o.generator_bound, o.generator_causes) {
        (false, _) => String::new(),
        (true, c) if c.is_empty() => " (generator-bound)".to_string(),
        (true, c) => format!(" (generator-bound: {c})"),
    }
}

/// The searches of `plan`, one progress bar per case: its current point,
/// its trials, and the time the whole run has left (mean trial time so
/// far × trials expected).
fn search_with_progress(
    plan: &CapacityPlan,
    make_load: impl FnMut(std::net::IpAddr) -> takt_siplab::Result<GenLoad>,
    shown: &Progress,
    trial_s: f64,
) -> Result<Document, String> {
    eprintln!(
        "takt sip capacity: {} case(s), {} reps per grid point",
        plan.cases.len(),
        plan.search.reps
    );
    let started = Instant::now();
    // a fresh search expects about this many trials (ramp, bisection, grid)
    let first = takt_siplab::search::Search::new(plan.search.clone())
        .map_err(|e| e.to_string())?
        .progress()
        .1;
    let mut stages: Vec<Option<Stage>> = plan
        .cases
        .iter()
        .map(|c| {
            Some(shown.stage(
                c.label(),
                Duration::from_secs_f64(trial_s * (first * plan.cases.len()) as f64),
            ))
        })
        .collect();
    let doc = capacity::run(plan, make_load, |p| {
        let per = started.elapsed().as_secs_f64() / p.done.max(1) as f64;
        let left = per * p.expected.saturating_sub(p.done) as f64;
        let msg = format!(
            "{:.0} cps {} drop {:.4}{} · trial {}/{} · run ~{} left",
            p.rate_cps,
            format!("{:?}", p.phase).to_lowercase(),
            p.outcome.drop_rate(),
            flag(p.outcome),
            p.case_done,
            p.case_expected,
            fmt_secs(left)
        );
        if let Some(stage) = stages.get_mut(p.case) {
            if let Some(s) = stage.as_ref() {
                s.step(&msg);
            }
            if p.case_done >= p.case_expected {
                if let Some(s) = stage.take() {
                    s.finish();
                }
            }
        }
    })
    .map_err(|e| e.to_string());
    let interrupted = plan.stop.load(Ordering::Acquire);
    for s in stages.into_iter().flatten() {
        s.finish_with(if interrupted { "interrupted" } else { "done" });
    }
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_rates_per_target() {
        let d = AtRates::parse(&[]).unwrap();
        assert_eq!(d.rate("takt"), Some(10_000.0));
        assert_eq!(d.rate("kamailio"), Some(2_000.0));
        let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let r = AtRates::parse(&s(&["takt=5000"])).unwrap();
        assert_eq!(
            (r.rate("takt"), r.rate("null-relay")),
            (Some(5_000.0), None)
        );
        assert_eq!(AtRates::parse(&s(&["none"])).unwrap().rate("takt"), None);
        for bad in ["0", "takt=x", "-3", "inf"] {
            assert!(AtRates::parse(&s(&[bad])).is_err(), "{bad}");
        }
    }
}
