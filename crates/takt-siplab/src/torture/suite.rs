//! `takt sip torture` as a [`Suite`]: its flags as [`TortureOptions`],
//! resolved ([`TortureOptions::resolve`]: the target, `--quick`'s
//! durations and search, the generator) into a [`TortureSuite`] that runs
//! every scenario once per mode into one `sip_torture` document.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use takt_measure::result::{Document, DocumentBuilder};
use takt_measure::suite::{RunContext, Suite};
use takt_sched::{CpuSet, SchedPolicy, ThreadSpec};
use takt_sip::proxy::Mode;
use takt_sip::transport::WorkerModel;

use super::{run, Durations, Progress, Scenario, TorturePlan};
use crate::error::{Error, Result};
use crate::fleet::load::{connect, listen_ip};
use crate::fleet::{detail, FleetOptions};
use crate::gen::{GenConfig, GenPolicy};
use crate::search::SearchConfig;
use crate::target::{placement, TargetKind, TargetSetup};

/// What `takt sip torture` was asked for.
#[derive(Debug, Clone)]
pub struct TortureOptions {
    /// The server: `takt`, `kamailio`, `opensips` or `ip:port`.
    pub target: String,
    /// Proxy modes, each a run of every scenario.
    pub modes: Vec<Mode>,
    /// Scenarios (empty: [`Scenario::DEFAULT`]).
    pub scenarios: Vec<Scenario>,
    /// takt's worker model.
    pub model: WorkerModel,
    /// Worker threads (takt) or processes (Kamailio, OpenSIPS).
    pub workers: usize,
    /// CPUs' worth of time the server may use.
    pub cpu_limit: Option<f64>,
    /// The CFS period of `cpu_limit`, µs.
    pub period_us: u64,
    /// The server's capacity, if known (skips the search).
    pub capacity: Option<f64>,
    /// Where the UAS listens.
    pub uas: SocketAddr,
    /// The server's CPUs (default: the last CPU).
    pub cpus: Option<CpuSet>,
    /// The server's scheduling policy.
    pub sched: Option<SchedPolicy>,
    /// The generator's CPUs.
    pub gen_cpus: Option<CpuSet>,
    /// The generator's policy.
    pub gen_sched: Option<SchedPolicy>,
    /// UAC source ports.
    pub ports: usize,
    /// Further `takt sip proxy` arguments for the takt target.
    pub takt_args: Vec<String>,
    /// Connections the conn-flood scenario holds idle.
    pub flood_connections: usize,
    /// Seconds of the soak (default 1800; 120 with `quick`).
    pub soak_secs: Option<u64>,
    /// The reduced run.
    pub quick: bool,
    /// Load the server with a fleet of agents reached over NATS instead
    /// of the local generator (the capacity search, the sustained check
    /// and every scenario's calls).
    pub fleet: Option<FleetOptions>,
    /// With a fleet: the address the server listens on (default: the one
    /// this host reaches the NATS server from).
    pub listen: Option<IpAddr>,
}

/// A resolved torture run: one plan per mode.
#[derive(Debug, Clone)]
pub struct TortureSuite {
    /// One plan per mode, in order (their stop flags and generator
    /// cancellation are replaced by the run's).
    pub plans: Vec<TorturePlan>,
    /// The generator's policy and what the document must say about it.
    pub gen_policy: GenPolicy,
    /// The fleet that loads the server instead of the local generator.
    pub fleet: Option<FleetOptions>,
}

impl TortureOptions {
    /// The run these options ask for.
    pub fn resolve(self) -> Result<TortureSuite> {
        let kind = match self.target.parse::<TargetKind>() {
            Ok(TargetKind::NullRelay) | Err(_) => {
                return Err(crate::error::unknown(
                    "target",
                    &self.target,
                    "takt, kamailio, opensips, or ip:port",
                ))
            }
            Ok(TargetKind::Takt(mut o)) => {
                o.model = self.model;
                o.extra_args = self.takt_args.clone();
                TargetKind::Takt(o)
            }
            Ok(k) => k,
        };
        if !self.takt_args.is_empty() && !matches!(kind, TargetKind::Takt(_)) {
            return Err(Error::Config("--takt-arg is for the takt target".into()));
        }
        let (server_cpus, gen_cpus) = placement(self.cpus.as_ref(), self.gen_cpus.as_ref());
        let mut setup = TargetSetup::new("127.0.0.1:9".parse().expect("literal"));
        setup.cpus = Some(server_cpus.clone());
        if let Some(ip) = listen_ip(self.fleet.as_ref(), self.listen)? {
            setup.listen_ip = ip;
        }
        setup.workers = self.workers;
        setup.sched = self.sched;
        let gen_policy = GenPolicy::choose(self.gen_sched)?.placed(&server_cpus, &gen_cpus);
        let mut gen = GenConfig::new("127.0.0.1:9".parse().expect("literal"), 1.0);
        gen.spec = gen_policy.apply(ThreadSpec::new("gen").with_cpus(gen_cpus));
        gen.ports = self.ports;
        gen.drain = Duration::from_millis(if self.quick { 500 } else { 2_000 });
        let mut durations = if self.quick {
            Durations::quick()
        } else {
            Durations::full()
        };
        if let Some(s) = self.soak_secs {
            if s == 0 {
                return Err(Error::Config("--soak-secs must be positive".into()));
            }
            durations.soak = Duration::from_secs(s);
        }
        let scenarios = if self.scenarios.is_empty() {
            Scenario::DEFAULT.to_vec()
        } else {
            self.scenarios.clone()
        };
        if self.fleet.is_some() && self.uas.port() != 0 {
            return Err(Error::Config(
                "--fleet: the fleet's UAS agent listens on its own host; --uas is for the local generator".into(),
            ));
        }
        let plans = self
            .modes
            .iter()
            .map(|&mode| {
                let mut setup = setup.clone();
                setup.mode = mode;
                TorturePlan {
                    kind: kind.clone(),
                    setup,
                    cpu_limit: self.cpu_limit,
                    period_us: self.period_us,
                    scenarios: scenarios.clone(),
                    capacity: self.capacity,
                    search: SearchConfig {
                        // --quick: one trial per grid point; the sustained
                        // check below confirms the capacity with a long trial
                        reps: if self.quick { 1 } else { 3 },
                        ..SearchConfig::default()
                    },
                    search_window: Duration::from_secs(1),
                    // the searched capacity checked with trials as long as an
                    // overload level: down to 0.74× of it (one step with --quick)
                    sustain_steps: if self.quick { 1 } else { 6 },
                    gen: gen.clone(),
                    uas_listen: self.uas,
                    durations,
                    flood_connections: self.flood_connections,
                    stop: Default::default(),
                    cancel: Default::default(),
                    fleet: None,
                }
            })
            .collect();
        Ok(TortureSuite {
            plans,
            gen_policy,
            fleet: self.fleet,
        })
    }
}

/// Rough seconds of one plan: the capacity search when the capacity is
/// not given, then each scenario's runs.
fn plan_secs(p: &TorturePlan) -> f64 {
    let d = &p.durations;
    let needs_capacity = p.scenarios.iter().any(|s| s.needs_capacity());
    let search = if needs_capacity && p.capacity.is_none() {
        // ~7 ramp and bisection trials and a 5-point grid, then the
        // sustained check's overload-long trials
        (7 + 5 * p.search.reps) as f64 * (p.search_window.as_secs_f64() + 1.5)
            + p.sustain_steps as f64 * d.overload.as_secs_f64()
    } else {
        0.0
    };
    let scenarios: f64 = p
        .scenarios
        .iter()
        .map(|s| match s {
            Scenario::Overload => 2.0 * (d.overload + d.recovery).as_secs_f64(),
            Scenario::UasRestart | Scenario::Garbage => d.fault_run.as_secs_f64(),
            Scenario::Soak => d.soak.as_secs_f64(),
            Scenario::ConnFlood => d.fault_run.as_secs_f64() + 30.0,
        })
        // a fresh server per scenario
        .map(|s| s + 2.0)
        .sum();
    search + scenarios
}

impl Suite for TortureSuite {
    type Output = Document;
    type Error = Error;

    fn name(&self) -> &str {
        "sip torture"
    }

    fn estimate(&self) -> Duration {
        Duration::from_secs_f64(self.plans.iter().map(plan_secs).sum())
    }

    fn describe(&self) -> String {
        let Some(p) = self.plans.first() else {
            return String::new();
        };
        let names: Vec<&str> = p.scenarios.iter().map(|s| s.name()).collect();
        format!(
            "{} in {} mode(s): {}",
            p.kind.name(),
            self.plans.len(),
            names.join(", ")
        )
    }

    /// Runs every plan in turn; an interruption keeps the finished
    /// scenarios' rows.
    fn run(&self, ctx: &RunContext) -> Result<Document> {
        // the fleet first: an unreachable one fails before any server starts
        let fleet = match &self.fleet {
            Some(f) => Some(connect(f, ctx.cancel().clone(), |l| {
                ctx.progress().println(l)
            })?),
            None => {
                for n in self.gen_policy.notes() {
                    ctx.progress().println(&n);
                }
                None
            }
        };
        let mut doc = DocumentBuilder::start("sip_torture");
        for plan in &self.plans {
            if ctx.is_cancelled() {
                break;
            }
            let plan = TorturePlan {
                stop: ctx.cancel().flag(),
                cancel: ctx.cancel().clone(),
                fleet: fleet.clone(),
                ..plan.clone()
            };
            let label = format!("{} {:?}", plan.kind.name(), plan.setup.mode).to_lowercase();
            let say = |line: String| {
                ctx.progress()
                    .println(&format!("takt sip torture: {label}: {line}"))
            };
            let part = run(&plan, |p| match p {
                Progress::Step(s) => say(s.to_string()),
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
                    say(format!(
                        "capacity trial {rate_cps:>8.0} cps drop {drop_rate:.4}{flag}"
                    ))
                }
            })
            .map_err(|e| Error::Case {
                case: label.clone(),
                source: Box::new(e),
            })?;
            for r in part.results {
                doc.push(r);
            }
            for n in part.notes {
                doc.note(format!("{label}: {n}"));
            }
        }
        if let Some(f) = &fleet {
            for n in detail::notes(&f.lock().unwrap_or_else(|e| e.into_inner())) {
                doc.note(n);
            }
        }
        let mut doc = doc.finish();
        if fleet.is_none() {
            self.gen_policy.stamp(&mut doc);
        }
        Ok(doc)
    }
}
