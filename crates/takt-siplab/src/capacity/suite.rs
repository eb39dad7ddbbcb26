//! `takt sip capacity` as a [`Suite`]: its flags as [`CapacityOptions`],
//! resolved ([`CapacityOptions::resolve`]: defaults, `--quick`, the
//! target names, `--at`) into a [`CapacitySuite`] that searches every
//! case, then measures the CPU per call at fixed rates, and writes the
//! drop-rate plot where asked.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use takt_measure::result::Document;
use takt_measure::suite::{RunContext, Suite};
use takt_sched::{CpuSet, SchedPolicy, ThreadSpec};
use takt_sip::proxy::{Mode, Transport};
use takt_sip::transport::WorkerModel;

use super::{plot, run, run_fixed, CapacityCase, CapacityPlan, FixedCase, FixedPlan, GenLoad};
use super::{NetKind, Progress as SearchProgress};
use crate::error::{io, Error, Result};
use crate::fleet::load::{connect, listen_ip};
use crate::fleet::{detail, AnyLoad, FleetOptions, SharedFleet};
use crate::gen::{GenConfig, GenPolicy};
use crate::search::{Search, SearchConfig, Step};
use crate::search_bars::{generator_flag, SearchBars, TrialLine};
use crate::target::{placement, TargetKind, TargetSetup};

/// Fewest calls in a trial, whatever its rate and window.
pub const MIN_CALLS: u64 = 100;

/// The plot `--plot DIR` writes.
pub const PLOT_FILE: &str = "sip_capacity_drop_rate.svg";

/// What `takt sip capacity` was asked for.
#[derive(Debug, Clone)]
pub struct CapacityOptions {
    /// Target names: `takt`, `kamailio`, `null-relay`, or `ip:port`
    /// (empty: takt, kamailio, null-relay).
    pub targets: Vec<String>,
    /// Proxy modes (empty: both).
    pub modes: Vec<Mode>,
    /// takt's worker model.
    pub model: WorkerModel,
    /// Worker threads (takt) or children (Kamailio).
    pub workers: usize,
    /// The servers' CPUs (default: the last CPU).
    pub cpus: Option<CpuSet>,
    /// The servers' scheduling policy.
    pub sched: Option<SchedPolicy>,
    /// The generator's CPUs (default: the others).
    pub gen_cpus: Option<CpuSet>,
    /// The generator's policy (default: real-time where permitted).
    pub gen_sched: Option<SchedPolicy>,
    /// Drop-rate threshold.
    pub threshold: f64,
    /// Grid step: a fraction of the rate, or calls/s.
    pub step: Step,
    /// Repetitions per grid point (default 5; 3 with `quick`).
    pub reps: Option<usize>,
    /// First rate of the ramp.
    pub start_cps: f64,
    /// Highest rate tried.
    pub max_cps: f64,
    /// Seconds of calls per trial (default 3; 1 with `quick`).
    pub window: Option<f64>,
    /// Loopback or veth.
    pub net: NetKind,
    /// UAC source ports (UDP).
    pub ports: usize,
    /// Transport of the load.
    pub transport: Transport,
    /// UAC connections (TCP).
    pub connections: usize,
    /// `--at` specs: `CPS`, `TARGET=CPS`, `none` (empty:
    /// `10000,kamailio=2000,opensips=2000`).
    pub at: Vec<String>,
    /// Workers of the fixed-rate measurement.
    pub at_workers: usize,
    /// Only the fixed-rate measurement.
    pub no_search: bool,
    /// Directory of the drop-rate plot.
    pub plot: Option<PathBuf>,
    /// The reduced run.
    pub quick: bool,
    /// Where the generator's UAS listens (`None`: a free port; give the
    /// address a target forwards to when it forwards to a fixed one).
    pub uas: Option<SocketAddr>,
    /// Preload `Route: <sip:TARGET;lr>` into the calls.
    pub route_preload: bool,
    /// A CPU quota on each server for its whole search, CPUs' worth.
    pub cpu_limit: Option<f64>,
    /// Load the server with a fleet of agents reached over NATS instead
    /// of the local generator.
    pub fleet: Option<FleetOptions>,
    /// With a fleet: the address the servers listen on (default: the one
    /// this host reaches the NATS server from, which the agents reach).
    pub listen: Option<IpAddr>,
}

/// Fixed rates per target name, from `--at`.
#[derive(Debug, Default)]
struct AtRates {
    all: Option<f64>,
    per: Vec<(String, f64)>,
    none: bool,
}

impl AtRates {
    fn parse(specs: &[String]) -> Result<AtRates> {
        let specs: Vec<&str> = if specs.is_empty() {
            vec!["10000", "kamailio=2000", "opensips=2000"]
        } else {
            specs.iter().map(String::as_str).collect()
        };
        let mut r = AtRates::default();
        let rate = |v: &str| -> Result<f64> {
            match v.parse::<f64>() {
                Ok(c) if c.is_finite() && c > 0.0 => Ok(c),
                _ => Err(Error::Config(format!(
                    "--at: {v:?} is not a positive call rate"
                ))),
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

/// A resolved `takt sip capacity` run.
#[derive(Debug, Clone)]
pub struct CapacitySuite {
    /// The searches (`None`: `--no-search`).
    pub search: Option<CapacityPlan>,
    /// The fixed-rate measurement (`None`: `--at none`).
    pub fixed: Option<FixedPlan>,
    /// The generator's setting for every trial.
    pub gen: GenConfig,
    /// The generator's policy and what the document must say about it.
    pub gen_policy: GenPolicy,
    /// Seconds of calls per trial.
    pub window: Duration,
    /// Drop-rate threshold (the plot's line).
    pub threshold: f64,
    /// Where the drop-rate plot goes.
    pub plot: Option<PathBuf>,
    /// Where the generator's UAS listens (`None`: a free port per case).
    pub uas: Option<SocketAddr>,
    /// The fleet that loads the servers instead of the local generator.
    pub fleet: Option<FleetOptions>,
}

impl CapacityOptions {
    /// The run these options ask for (see the module docs).
    pub fn resolve(self) -> Result<CapacitySuite> {
        let names = if self.targets.is_empty() {
            vec!["takt".into(), "kamailio".into(), "null-relay".into()]
        } else {
            self.targets.clone()
        };
        let modes = if self.modes.is_empty() {
            vec![Mode::Stateless, Mode::Stateful]
        } else {
            self.modes.clone()
        };
        let kinds = names
            .iter()
            .map(|n| Ok((n.clone(), n.parse::<TargetKind>()?.with_model(self.model))))
            .collect::<Result<Vec<_>>>()?;
        let at = AtRates::parse(&self.at)?;
        if let Some(c) = self.cpu_limit.filter(|c| !(0.01..=1024.0).contains(c)) {
            return Err(Error::Config(format!(
                "--cpu-limit {c} is not in [0.01, 1024] CPUs"
            )));
        }
        if self.cpu_limit.is_some() {
            if let Some((n, _)) = kinds.iter().find(|(_, k)| matches!(k, TargetKind::Addr(_))) {
                return Err(Error::Config(format!(
                    "--cpu-limit needs servers the lab starts: {n} is a running one"
                )));
            }
        }
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
        if self.no_search && fixed.is_empty() {
            return Err(Error::Config(
                "--no-search leaves nothing to run: give --at".into(),
            ));
        }
        let (server_cpus, gen_cpus) = placement(self.cpus.as_ref(), self.gen_cpus.as_ref());
        let mut base = TargetSetup::new("127.0.0.1:9".parse().expect("literal"));
        if self.fleet.is_some() {
            if self.net != NetKind::Loopback {
                return Err(Error::Config(
                    "--fleet loads the servers from other hosts: --net veth is for the local generator".into(),
                ));
            }
            if self.uas.is_some() {
                return Err(Error::Config(
                    "--fleet: the fleet's UAS agent listens on its own host; --uas is for the local generator".into(),
                ));
            }
        }
        if let Some(ip) = listen_ip(self.fleet.as_ref(), self.listen)? {
            base.listen_ip = ip;
        }
        base.cpus = Some(server_cpus.clone());
        base.workers = self.workers;
        base.sched = self.sched;
        base.transport = self.transport;
        let reps = self.reps.unwrap_or(if self.quick { 3 } else { 5 });
        let (step, step_cps) = self.step.fields();
        let search = SearchConfig {
            threshold: self.threshold,
            step,
            step_cps,
            reps,
            start_cps: self.start_cps,
            max_cps: self.max_cps,
            ..SearchConfig::default()
        };
        let window =
            Duration::from_secs_f64(self.window.unwrap_or(if self.quick { 1.0 } else { 3.0 }));
        let gen_policy = GenPolicy::choose(self.gen_sched)?.placed(&server_cpus, &gen_cpus);
        let mut gen = GenConfig::new("127.0.0.1:9".parse().expect("literal"), 1.0);
        gen.spec = gen_policy.apply(ThreadSpec::new("gen").with_cpus(gen_cpus));
        gen.ports = self.ports;
        gen.transport = self.transport;
        gen.connections = self.connections;
        gen.route_preload = self.route_preload;
        // With retransmissions off a call's messages are all in flight within
        // milliseconds of its last planned send; the drain only catches the tail.
        gen.drain = Duration::from_millis(if self.quick { 500 } else { 2_000 });
        let stop: Arc<AtomicBool> = Default::default();
        let search_plan = (!self.no_search).then(|| CapacityPlan {
            cases: cases.into_iter().map(|(_, c)| c).collect(),
            base: base.clone(),
            search,
            net: self.net,
            stop: Arc::clone(&stop),
            cpu_limit: self.cpu_limit,
        });
        let fixed_plan = (!fixed.is_empty()).then(|| {
            let mut fbase = base;
            fbase.workers = self.at_workers;
            FixedPlan {
                cases: fixed,
                base: fbase,
                reps,
                net: self.net,
                stop,
                cpu_limit: self.cpu_limit,
            }
        });
        Ok(CapacitySuite {
            search: search_plan,
            fixed: fixed_plan,
            gen,
            gen_policy,
            window,
            threshold: self.threshold,
            plot: self.plot,
            uas: self.uas,
            fleet: self.fleet,
        })
    }
}

impl CapacitySuite {
    /// A trial's wall time: resume, the window, the drain, start-up.
    fn trial_s(&self) -> f64 {
        self.window.as_secs_f64() + self.gen.drain.as_secs_f64() + 0.4
    }

    /// Trials a fresh search expects (ramp, bisection, grid).
    fn search_trials(&self) -> usize {
        self.search
            .as_ref()
            .and_then(|p| Search::new(p.search.clone()).ok())
            .map_or(0, |s| s.progress().1)
    }

    fn load(&self, ctx: &RunContext, ip: IpAddr, fleet: Option<&SharedFleet>) -> Result<AnyLoad> {
        let (gen, cancel) = (self.gen.clone(), ctx.cancel().clone());
        AnyLoad::new(fleet, &gen, self.window, cancel.clone(), || {
            match self.uas {
                Some(uas) => GenLoad::listening(gen.clone(), uas, self.window, MIN_CALLS, cancel),
                None => GenLoad::new(gen.clone(), ip, self.window, MIN_CALLS, cancel),
            }
        })
    }

    /// The searches, one progress stage per case.
    fn searches(
        &self,
        plan: &CapacityPlan,
        ctx: &RunContext,
        fleet: Option<&SharedFleet>,
    ) -> Result<Document> {
        let first = Search::new(plan.search.clone())?.progress().1;
        let mut bars = SearchBars::new(ctx.progress().clone(), self.trial_s());
        for (i, c) in plan.cases.iter().enumerate() {
            // the cases take turns: each lasts about the whole run
            bars.open(i, &c.label(), first * plan.cases.len());
        }
        let doc = run(
            plan,
            |ip| self.load(ctx, ip, fleet),
            |line| ctx.progress().println(line),
            |p: &SearchProgress<'_>| {
                let phase = format!("{:?}", p.phase).to_lowercase();
                let flag = generator_flag(
                    p.outcome.generator_bound,
                    &p.outcome.generator_causes.to_string(),
                );
                bars.search_trial(
                    p.case,
                    &TrialLine {
                        rate_cps: p.rate_cps,
                        phase: &phase,
                        drop_rate: p.outcome.drop_rate(),
                        flag: &flag,
                        case_done: p.case_done,
                        case_expected: p.case_expected,
                        done: p.done,
                        expected: p.expected,
                    },
                );
            },
        );
        bars.finish(ctx.is_cancelled());
        doc
    }

    /// The fixed-rate measurement, one progress stage.
    fn fixed_rates(
        &self,
        plan: &FixedPlan,
        ctx: &RunContext,
        fleet: Option<&SharedFleet>,
    ) -> Result<Document> {
        let stage = ctx.stage(
            "cpu per call",
            Duration::from_secs_f64(self.trial_s() * (plan.reps * plan.cases.len()) as f64),
        );
        let doc = run_fixed(
            plan,
            |ip| self.load(ctx, ip, fleet),
            |line| ctx.progress().println(line),
            |p| {
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
                    generator_flag(
                        p.outcome.generator_bound,
                        &p.outcome.generator_causes.to_string()
                    )
                ))
            },
        )?;
        stage.finish();
        Ok(doc)
    }
}

/// Cases whose search finished (a `capacity` row).
fn cases_done(doc: &Document) -> usize {
    doc.results.iter().filter(|r| r.name == "capacity").count()
}

impl Suite for CapacitySuite {
    type Output = Document;
    type Error = Error;

    fn name(&self) -> &str {
        "sip capacity"
    }

    fn estimate(&self) -> Duration {
        let searches = self.search.as_ref().map_or(0, |p| p.cases.len()) * self.search_trials();
        let fixed = self.fixed.as_ref().map_or(0, |p| p.reps * p.cases.len());
        Duration::from_secs_f64(self.trial_s() * (searches + fixed) as f64)
    }

    fn describe(&self) -> String {
        match (&self.search, &self.fixed) {
            (Some(s), _) => format!(
                "{} case(s), {} reps per grid point",
                s.cases.len(),
                s.search.reps
            ),
            (None, Some(f)) => format!("{} case(s) at fixed rates", f.cases.len()),
            (None, None) => String::new(),
        }
    }

    /// Runs the searches, then the fixed-rate measurement, with the
    /// plans' stop flags and the generator's cancellation raised by
    /// `ctx`; an interrupted run returns what finished.
    fn run(&self, ctx: &RunContext) -> Result<Document> {
        for n in self.gen_policy.notes() {
            ctx.progress().println(&n);
        }
        let stop = ctx.cancel().flag();
        let fleet = match &self.fleet {
            Some(f) => Some(connect(f, ctx.cancel().clone(), |l| {
                ctx.progress().println(l)
            })?),
            None => None,
        };
        let mut doc: Option<Document> = None;
        if let Some(plan) = &self.search {
            let plan = CapacityPlan {
                stop: stop.clone(),
                ..plan.clone()
            };
            doc = Some(self.searches(&plan, ctx, fleet.as_ref())?);
        }
        if let Some(plan) = self.fixed.as_ref().filter(|_| !ctx.is_cancelled()) {
            let plan = FixedPlan {
                stop,
                ..plan.clone()
            };
            let f = self.fixed_rates(&plan, ctx, fleet.as_ref())?;
            doc = Some(match doc {
                Some(mut d) => {
                    d.results.extend(f.results);
                    d.notes.extend(f.notes);
                    d
                }
                None => f,
            });
        }
        let mut doc = doc.ok_or_else(|| Error::Config("nothing was measured".into()))?;
        if let Some(f) = &fleet {
            let f = f.lock().unwrap_or_else(|e| e.into_inner());
            doc.notes.extend(detail::notes(&f));
        } else {
            self.gen_policy.stamp(&mut doc);
        }
        if let Some(dir) = &self.plot {
            std::fs::create_dir_all(dir).map_err(io(format!("creating {}", dir.display())))?;
            let path = dir.join(PLOT_FILE);
            match plot::drop_rate_svg(&doc, self.threshold, &path) {
                Ok(()) => ctx.progress().println(&format!("plot: {}", path.display())),
                // an interrupted run may have no finished search to draw
                Err(e) if cases_done(&doc) == 0 => ctx.progress().println(&format!("no plot: {e}")),
                Err(e) => return Err(e),
            }
        }
        Ok(doc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_rates_per_target() {
        let d = AtRates::parse(&[]).unwrap();
        assert_eq!(d.rate("takt"), Some(10_000.0));
        assert_eq!(d.rate("kamailio"), Some(2_000.0));
        assert_eq!(d.rate("opensips"), Some(2_000.0));
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
