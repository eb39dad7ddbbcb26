//! `takt sip sweep` as a [`Suite`]: its flags as [`SweepOptions`], the
//! presets (`--quick`, the default, `--paper`) and the estimate resolved
//! into a [`SweepSuite`], whose [`SweepOutput`] renders the paper's tables
//! and writes the artefacts (`sweep.json`, `capacity_vs_m.md`, the SVG
//! plots) to the output directory. `takt sip tune` runs the same machinery
//! ([`crate::tune`]), so the pieces both need are here: the generator's
//! setting ([`gen_config`]), the first ramp rates ([`start_rates`]), the
//! estimate ([`estimate_secs`]) and the progress ([`SweepBars`]).

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use takt_measure::progress::Progress as Shown;
use takt_measure::result::Document;
use takt_measure::suite::{RunContext, Suite, SuiteOutput};
use takt_sched::{CpuSet, SchedPolicy, ThreadSpec};
use takt_sip::proxy::Mode;
use takt_sip::transport::{WakeOrder, WorkerModel};

use super::{
    capacity_markdown, ceiling_profiles, render, run, write_plots, CompareWhich, Progress,
};
use super::{ServerOptions, SweepOutcome, SweepPlan};
use crate::capacity::{GenLoad, MIN_CALLS};
use crate::error::{io, Error, Result};
use crate::fleet::load::{connect, listen_ip};
use crate::fleet::{detail, AnyLoad, FleetOptions};
use crate::gen::{GenConfig, GenPolicy};
use crate::profile::Profile;
use crate::search::{SearchConfig, Step, DEFAULT_MAX_REBRACKETS};
use crate::search_bars::{generator_flag, SearchBars, TrialLine};
use crate::target::{placement, TargetKind, TargetSetup};

/// Calls per trial in the paper's scale (the paper's 200,000).
pub const PAPER_CALLS: u64 = 200_000;
/// The document's file in the output directory.
pub const JSON_FILE: &str = "sweep.json";
/// The capacity-versus-m table's file in the output directory.
pub const MARKDOWN_FILE: &str = "capacity_vs_m.md";

/// The scale of a sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Preset {
    /// `--quick`: m 2,16; default and enhanced; 2 reps; 3 pairs; 1 s
    /// trials; one re-bracketing (under 5 minutes for takt and Kamailio).
    Quick,
    /// m 2,4,8,16; default, server, enhanced, batch; 5 reps; 5 pairs; 2 s
    /// trials.
    #[default]
    Default,
    /// `--paper`: m 2,4,6,8,16; 200,000 calls per trial; 30 reps and 30
    /// pairs (hours).
    Paper,
}

impl Preset {
    /// `quick` or `paper` from the command line (they exclude each other).
    pub fn of(quick: bool, paper: bool) -> Preset {
        match (quick, paper) {
            (true, _) => Preset::Quick,
            (_, true) => Preset::Paper,
            _ => Preset::Default,
        }
    }

    fn pick<T>(self, quick: T, default: T, paper: T) -> T {
        match self {
            Preset::Quick => quick,
            Preset::Default => default,
            Preset::Paper => paper,
        }
    }
}

/// What `takt sip sweep` was asked for; `None` and empty lists take the
/// preset's values.
#[derive(Debug, Clone, Default)]
pub struct SweepOptions {
    /// Target names: `takt`, `kamailio` or `ip:port` (empty: takt and
    /// kamailio).
    pub targets: Vec<String>,
    /// Proxy modes (empty: stateful).
    pub modes: Vec<Mode>,
    /// takt's worker models (empty: shared).
    pub models: Vec<WorkerModel>,
    /// Worker counts m.
    pub workers: Vec<usize>,
    /// Profiles as the command line writes them (see
    /// [`Profile::parse_list`]).
    pub profiles: Vec<String>,
    /// The servers' CPUs (default: the last CPU).
    pub cpus: Option<CpuSet>,
    /// The generator's CPUs.
    pub gen_cpus: Option<CpuSet>,
    /// The generator's policy (default: real-time where permitted).
    pub gen_sched: Option<SchedPolicy>,
    /// Drop-rate threshold.
    pub threshold: f64,
    /// Grid step: a fraction of the rate, or calls/s.
    pub step: Step,
    /// Repetitions per grid point.
    pub reps: Option<usize>,
    /// Re-bracketings per search.
    pub rebrackets: Option<usize>,
    /// Table III pairs per profile and m.
    pub pairs: Option<usize>,
    /// Seconds of calls per trial.
    pub window: Option<f64>,
    /// First ramp rate of every search (default: per target,
    /// [`start_rates`]).
    pub start_cps: Option<f64>,
    /// Highest rate tried.
    pub max_cps: f64,
    /// UAC source ports.
    pub ports: usize,
    /// The scale.
    pub preset: Preset,
    /// Where the artefacts go (`None`: nowhere).
    pub out: Option<PathBuf>,
    /// takt's wake orders (empty: the proxy's default, no axis): each its
    /// own series, `wake` in params (the `shared` model only).
    pub wakes: Vec<WakeOrder>,
    /// Where the generator's UAS listens (`None`: a free port per case).
    pub uas: Option<SocketAddr>,
    /// Preload `Route: <sip:TARGET;lr>` into the calls.
    pub route_preload: bool,
    /// A CPU quota on each server for its whole search, CPUs' worth.
    pub cpu_limit: Option<f64>,
    /// Load the servers with a fleet of agents reached over NATS instead
    /// of the local generator.
    pub fleet: Option<FleetOptions>,
    /// With a fleet: the address the servers listen on (default: the one
    /// this host reaches the NATS server from).
    pub listen: Option<IpAddr>,
}

/// The first ramp rate per target: takt and the null relay (the
/// generator's ceiling) start high, Kamailio and OpenSIPS lower.
pub fn start_rates() -> Vec<(String, f64)> {
    vec![
        ("takt".into(), 8_000.0),
        ("kamailio".into(), 2_000.0),
        ("opensips".into(), 2_000.0),
        ("null-relay".into(), 8_000.0),
    ]
}

/// The generator's configuration for sweeps and tunes.
pub fn gen_config(
    gen_cpus: &CpuSet,
    policy: &GenPolicy,
    ports: usize,
    drain: Duration,
) -> GenConfig {
    let mut g = GenConfig::new("127.0.0.1:9".parse().expect("literal"), 1.0);
    g.spec = policy.apply(ThreadSpec::new("gen").with_cpus(gen_cpus.clone()));
    g.ports = ports;
    g.drain = drain;
    g
}

/// A sweep trial's wall time beyond its window and the generator's
/// drain: resuming the paused server and sampling it. A quick sweep of
/// takt and OpenSIPS (0.5 s windows, 0.5 s drain) on the 2-vCPU
/// development machine ran its Table III pairs at 1.04 s a trial and its
/// whole plan in 128 s against 228 s estimated with 0.7 s here.
const TRIAL_OVERHEAD_S: f64 = 0.3;

/// Expected seconds of a sweep: `cases` searches, `groups` (target, mode,
/// m) with `profiles` each compared in `pairs` pairs, trials of `trial_s`.
pub fn estimate_secs(
    cases: usize,
    groups: usize,
    profiles: usize,
    reps: usize,
    pairs: usize,
    trial_s: f64,
) -> f64 {
    // ~7 ramp and bisection trials, a 3-point grid, then the pairs
    let per_search = 7.0 + 3.0 * reps as f64;
    let pair_trials = groups * profiles.saturating_sub(1) * pairs * 2;
    (cases as f64 * per_search + pair_trials as f64) * trial_s + cases as f64 * 1.5
}

/// A resolved sweep.
#[derive(Debug, Clone)]
pub struct SweepSuite {
    /// The sweep (its stop flag is replaced by the run's cancellation).
    pub plan: SweepPlan,
    /// The generator's setting for every trial.
    pub gen: GenConfig,
    /// The generator's policy and what the document must say about it.
    pub gen_policy: GenPolicy,
    /// Seconds of calls per trial.
    pub window: Duration,
    /// Fewest calls per trial.
    pub min_calls: u64,
    /// Expected seconds of one trial.
    pub trial_s: f64,
    /// Where the artefacts go.
    pub out: Option<PathBuf>,
    /// The fleet that loads the servers instead of the local generator.
    pub fleet: Option<FleetOptions>,
    pub(crate) estimate_s: f64,
    pub(crate) describe: String,
}

impl SweepOptions {
    /// The sweep these options ask for (see the module docs).
    pub fn resolve(self) -> Result<SweepSuite> {
        let p = self.preset;
        let names = if self.targets.is_empty() {
            vec!["takt".to_string(), "kamailio".to_string()]
        } else {
            self.targets.clone()
        };
        let models = if self.models.is_empty() {
            vec![WorkerModel::Shared]
        } else {
            self.models.clone()
        };
        let mut targets = Vec::new();
        for n in &names {
            match n.parse::<TargetKind>()? {
                TargetKind::NullRelay => {
                    return Err(Error::Config(
                        "the null relay has no worker threads or profiles to sweep".into(),
                    ))
                }
                k @ TargetKind::Takt(_) => {
                    for &model in &models {
                        let k = k.clone().with_model(model);
                        if self.wakes.is_empty() || model != WorkerModel::Shared {
                            targets.push(k);
                            continue;
                        }
                        for w in &self.wakes {
                            let mut k = k.clone();
                            if let TargetKind::Takt(o) = &mut k {
                                o.extra_args = vec!["--wake".into(), w.name().into()];
                            }
                            targets.push(k);
                        }
                    }
                }
                TargetKind::Addr(_) if self.cpu_limit.is_some() => {
                    return Err(Error::Config(format!(
                        "--cpu-limit needs servers the lab starts: {n} is a running one"
                    )))
                }
                k => targets.push(k),
            }
        }
        let takt_shared =
            names.iter().any(|n| n == "takt") && models.contains(&WorkerModel::Shared);
        if !self.wakes.is_empty() && !takt_shared {
            return Err(Error::Config(
                "--wake is an axis of the takt target's shared model: add --target takt".into(),
            ));
        }
        if let Some(c) = self.cpu_limit.filter(|c| !(0.01..=1024.0).contains(c)) {
            return Err(Error::Config(format!(
                "--cpu-limit {c} is not in [0.01, 1024] CPUs"
            )));
        }
        let modes = if self.modes.is_empty() {
            vec![Mode::Stateful]
        } else {
            self.modes.clone()
        };
        let workers = if self.workers.is_empty() {
            p.pick(vec![2, 16], vec![2, 4, 8, 16], vec![2, 4, 6, 8, 16])
        } else {
            self.workers.clone()
        };
        let addr = |k: &TargetKind| matches!(k, TargetKind::Addr(_));
        let profiles = if !self.profiles.is_empty() {
            Profile::parse_list(&self.profiles)?
        } else if targets.iter().all(addr) {
            // a server the lab did not start keeps its own scheduling
            vec![Profile::Default]
        } else if p == Preset::Quick {
            vec![Profile::Default, Profile::Enhanced]
        } else {
            vec![
                Profile::Default,
                Profile::Server,
                Profile::Enhanced,
                Profile::Batch,
            ]
        };
        if targets.iter().any(addr) && profiles != [Profile::Default] {
            return Err(Error::Config(
                "scheduler profiles apply to servers the lab starts: sweep a running server's address with --profile default, apart from the others".into(),
            ));
        }
        let (server_cpus, gen_cpus) = placement(self.cpus.as_ref(), self.gen_cpus.as_ref());
        let reps = self.reps.unwrap_or(p.pick(2, 5, 30));
        let pairs = self.pairs.unwrap_or(p.pick(3, 5, 30));
        let window = Duration::from_secs_f64(self.window.unwrap_or(if p == Preset::Quick {
            1.0
        } else {
            2.0
        }));
        let min_calls = if p == Preset::Paper {
            PAPER_CALLS
        } else {
            MIN_CALLS
        };
        let mut base = TargetSetup::new("127.0.0.1:9".parse().expect("literal"));
        base.cpus = Some(server_cpus.clone());
        if self.fleet.is_some() && p == Preset::Paper {
            return Err(Error::Config(
                "--fleet: --paper's trials are a number of calls each, a fleet's are a window of time: give --window instead".into(),
            ));
        }
        if self.fleet.is_some() && self.uas.is_some() {
            return Err(Error::Config(
                "--fleet: the fleet's UAS agent listens on its own host; --uas is for the local generator".into(),
            ));
        }
        if let Some(ip) = listen_ip(self.fleet.as_ref(), self.listen)? {
            base.listen_ip = ip;
        }
        let (step, step_cps) = self.step.fields();
        let search = SearchConfig {
            threshold: self.threshold,
            step,
            step_cps,
            reps,
            grid_below: 1,
            grid_above: 1,
            max_rebrackets: self.rebrackets.unwrap_or(if p == Preset::Quick {
                1
            } else {
                DEFAULT_MAX_REBRACKETS
            }),
            start_cps: self.start_cps.unwrap_or(1_000.0).min(self.max_cps),
            min_cps: SearchConfig::default().min_cps.min(self.max_cps),
            max_cps: self.max_cps,
            ..SearchConfig::default()
        };
        let plan = SweepPlan {
            targets,
            modes,
            workers,
            profiles,
            base,
            search,
            start_cps: match self.start_cps {
                Some(_) => Vec::new(),
                None => start_rates(),
            },
            pairs,
            compare: CompareWhich::All,
            sampler_cpus: Some(gen_cpus.clone()),
            stop: Default::default(),
            servers: ServerOptions {
                uas: self.uas,
                cpu_limit: self.cpu_limit,
                fleet: self.fleet.is_some(),
            },
        };
        let gen_policy = GenPolicy::choose(self.gen_sched)?.placed(&server_cpus, &gen_cpus);
        let mut gen = gen_config(
            &gen_cpus,
            &gen_policy,
            self.ports,
            Duration::from_millis(if p == Preset::Quick { 500 } else { 1_000 }),
        );
        gen.route_preload = self.route_preload;
        let groups = plan.targets.len() * plan.modes.len() * plan.workers.len();
        let n_profiles = plan.profiles.len()
            + usize::from(
                plan.profiles.contains(&Profile::Enhanced)
                    && !plan.profiles.contains(&Profile::Default),
            );
        let trial_s = if p == Preset::Paper {
            // the paper's calls at ~2,000 cps
            PAPER_CALLS as f64 / 2_000.0 + gen.drain.as_secs_f64() + 0.5
        } else {
            window.as_secs_f64() + gen.drain.as_secs_f64() + TRIAL_OVERHEAD_S
        };
        let ceilings = if plan.servers.fleet {
            0
        } else {
            ceiling_profiles(&plan.profiles)?.len()
        };
        let estimate_s = estimate_secs(
            groups * n_profiles,
            groups,
            n_profiles,
            reps,
            pairs,
            trial_s,
        ) + estimate_secs(ceilings, 0, 0, reps, 0, trial_s)
            // Table III against `server` too, where it runs
            + if plan.profiles.contains(&Profile::Server) {
                estimate_secs(0, groups, n_profiles, reps, pairs, trial_s)
            } else {
                0.0
            };
        let describe = format!(
            "{groups} (target, mode, m) x {n_profiles} profile(s){}, {} s of calls per trial, {reps} reps per grid point, {pairs} Table III pairs",
            if ceilings > 0 {
                format!(" and the generator's ceiling under {ceilings} profile(s)")
            } else {
                String::new()
            },
            window.as_secs_f64(),
        );
        Ok(SweepSuite {
            plan,
            gen,
            gen_policy,
            window,
            min_calls,
            trial_s,
            out: self.out,
            fleet: self.fleet,
            estimate_s,
            describe,
        })
    }
}

/// A sweep's (or tune's) progress: [`SearchBars`] fed by [`run`]'s events.
#[derive(Debug)]
pub(crate) struct SweepBars(SearchBars);

impl SweepBars {
    /// Bars on `shown`; a trial is expected to take `trial_s` seconds.
    pub(crate) fn new(shown: Shown, trial_s: f64) -> Self {
        SweepBars(SearchBars::new(shown, trial_s))
    }

    /// Shows one event of [`run`].
    pub(crate) fn on(&mut self, p: &Progress<'_>) {
        match p {
            Progress::Searches {
                first,
                labels,
                trials_each,
            } => {
                // the searches take turns: each lasts about the whole round
                for (i, l) in labels.iter().enumerate() {
                    self.0.open(first + i, l, trials_each * labels.len());
                }
            }
            Progress::Pairs { trials } => self.0.open_pairs(*trials),
            Progress::Uas { label, line } => self.0.println(&format!("{line} case=\"{label}\"")),
            Progress::Trial(t) => {
                let flag = generator_flag(t.generator_bound, "");
                let line = TrialLine {
                    rate_cps: t.rate_cps,
                    phase: t.phase,
                    drop_rate: t.drop_rate,
                    flag: &flag,
                    case_done: t.case_done,
                    case_expected: t.case_expected,
                    done: t.done,
                    expected: t.expected,
                };
                if t.phase == "pair" {
                    self.0.pair_trial(t.label, &line);
                } else {
                    self.0.search_trial(t.case, &line);
                }
            }
        }
    }

    /// Closes what is still open.
    pub(crate) fn finish(self, interrupted: bool) {
        self.0.finish(interrupted);
    }
}

impl SweepSuite {
    /// Runs the sweep with `ctx`'s progress and cancellation; the
    /// outcome carries the generator's notes (tune's suite shares it).
    pub(crate) fn run_outcome(&self, ctx: &RunContext) -> Result<SweepOutcome> {
        let plan = SweepPlan {
            stop: ctx.cancel().flag(),
            ..self.plan.clone()
        };
        // the fleet first: an unreachable one fails before any server starts
        let fleet = match &self.fleet {
            Some(f) => Some(connect(f, ctx.cancel().clone(), |l| {
                ctx.progress().println(l)
            })?),
            None => None,
        };
        let mut bars = SweepBars::new(ctx.progress().clone(), self.trial_s);
        let outcome = run(
            &plan,
            |ip| {
                let (gen, cancel) = (&self.gen, ctx.cancel().clone());
                AnyLoad::new(
                    fleet.as_ref(),
                    gen,
                    self.window,
                    cancel.clone(),
                    || match plan.servers.uas {
                        Some(uas) => GenLoad::listening(
                            gen.clone(),
                            uas,
                            self.window,
                            self.min_calls,
                            cancel,
                        ),
                        None => GenLoad::new(gen.clone(), ip, self.window, self.min_calls, cancel),
                    },
                )
            },
            |p| bars.on(p),
        );
        bars.finish(ctx.is_cancelled());
        let mut outcome = outcome?;
        match &fleet {
            Some(f) => outcome
                .notes
                .extend(detail::notes(&f.lock().unwrap_or_else(|e| e.into_inner()))),
            None => outcome.notes.extend(self.gen_policy.notes()),
        }
        Ok(outcome)
    }

    /// The note on stderr when the servers' CPUs are shared with the
    /// generator.
    pub(crate) fn sharing_note(&self) -> Option<String> {
        if self.fleet.is_some() {
            return None;
        }
        let server = self.plan.base.cpus.as_ref()?;
        let gen = self.plan.sampler_cpus.as_ref()?;
        (server.len() > 1).then(|| {
            format!(
                "servers on CPUs {server}, the generator on {gen}: they share cores, so capacities include the generator's cost"
            )
        })
    }
}

/// A finished (or interrupted) sweep: the outcome, its document, and
/// where its artefacts were written.
#[derive(Debug, Clone)]
pub struct SweepOutput {
    /// What the sweep found.
    pub outcome: SweepOutcome,
    /// The result document (suite `sip_sweep`).
    pub doc: Document,
    /// Files written to the output directory (the document, the
    /// Markdown table).
    pub written: Vec<PathBuf>,
    /// SVG plots written beside them.
    pub plots: usize,
}

impl Serialize for SweepOutput {
    /// The result document.
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.doc.serialize(s)
    }
}

impl SuiteOutput for SweepOutput {
    fn document(&self) -> &Document {
        &self.doc
    }
    fn render(&self) -> String {
        render(&self.outcome)
    }
}

/// Writes `doc` as pretty JSON to `path`.
pub(crate) fn write_json(doc: &Document, path: &Path) -> Result<()> {
    let value = serde_json::to_value(doc).map_err(|source| Error::Encode {
        what: "the document".into(),
        source,
    })?;
    std::fs::write(path, format!("{value:#}\n")).map_err(io(format!("writing {}", path.display())))
}

impl SweepOutput {
    /// Writes `sweep.json`, the SVG plots ([`write_plots`]) and
    /// `capacity_vs_m.md` into `dir` (made if missing); returns the
    /// document's and the table's paths and the number of plots.
    pub fn write_artefacts(&self, dir: &Path) -> Result<(Vec<PathBuf>, usize)> {
        std::fs::create_dir_all(dir).map_err(io(format!("creating {}", dir.display())))?;
        let json = dir.join(JSON_FILE);
        write_json(&self.doc, &json)?;
        let plots = write_plots(&self.outcome, dir)?;
        let md = dir.join(MARKDOWN_FILE);
        std::fs::write(&md, capacity_markdown(&self.outcome))
            .map_err(io(format!("writing {}", md.display())))?;
        Ok((vec![json, md], plots))
    }
}

impl Suite for SweepSuite {
    type Output = SweepOutput;
    type Error = Error;

    fn name(&self) -> &str {
        "sip sweep"
    }

    fn estimate(&self) -> Duration {
        Duration::from_secs_f64(self.estimate_s)
    }

    fn describe(&self) -> String {
        self.describe.clone()
    }

    /// Runs the sweep; an interrupted one returns its finished points.
    /// With an output directory, writes the artefacts there.
    fn run(&self, ctx: &RunContext) -> Result<SweepOutput> {
        if let Some(n) = self.sharing_note() {
            ctx.progress().println(&n);
        }
        let outcome = self.run_outcome(ctx)?;
        let mut doc = outcome.document(&self.plan);
        if self.fleet.is_none() {
            self.gen_policy.stamp(&mut doc);
        }
        let mut out = SweepOutput {
            outcome,
            doc,
            written: Vec::new(),
            plots: 0,
        };
        if let Some(dir) = &self.out {
            (out.written, out.plots) = out.write_artefacts(dir)?;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_grow_with_the_axes() {
        let quick = estimate_secs(8, 4, 2, 2, 3, 2.2);
        assert!(quick > 120.0 && quick < 400.0, "{quick}");
        let full = estimate_secs(32, 8, 4, 5, 5, 3.7);
        assert!(full > 4.0 * quick, "{full}");
    }

    fn options(targets: &[&str]) -> SweepOptions {
        SweepOptions {
            targets: targets.iter().map(|t| t.to_string()).collect(),
            threshold: 0.01,
            max_cps: 10_000.0,
            ports: 4,
            preset: Preset::Quick,
            ..SweepOptions::default()
        }
    }

    #[test]
    fn the_wake_order_is_an_axis_of_takt_with_wake_in_params() {
        let mut o = options(&["takt", "kamailio"]);
        o.wakes = vec![WakeOrder::Lifo, WakeOrder::Fifo];
        let s = o.resolve().unwrap();
        let models: Vec<&str> = s
            .plan
            .targets
            .iter()
            .map(super::super::model_name)
            .collect();
        assert_eq!(
            models,
            ["shared wake=lifo", "shared wake=fifo", "processes"],
            "{:?}",
            s.plan.targets
        );
        assert_eq!(super::super::wake_of(&s.plan.targets[1]), Some("fifo"));
        // no takt target: nothing to put on the axis
        let mut o = options(&["kamailio"]);
        o.wakes = vec![WakeOrder::Fifo];
        let e = o.resolve().unwrap_err().to_string();
        assert!(e.contains("--wake") && e.contains("takt"), "{e}");
    }

    #[test]
    fn servers_options_reach_the_plan_and_bad_ones_are_refused() {
        let mut o = options(&["takt"]);
        o.uas = Some("127.0.0.1:5070".parse().unwrap());
        o.cpu_limit = Some(0.5);
        o.route_preload = true;
        o.step = "200cps".parse().unwrap();
        let s = o.resolve().unwrap();
        assert_eq!(s.plan.servers.uas, o_uas());
        assert_eq!(s.plan.servers.cpu_limit, Some(0.5));
        assert!(s.gen.route_preload);
        assert_eq!(s.plan.search.step_cps, Some(200.0));
        // a quota needs a server the lab starts; and a sane size
        let mut o = options(&["127.0.0.1:5060"]);
        assert_eq!(
            o.clone().resolve().unwrap().plan.profiles,
            [Profile::Default]
        );
        o.profiles = vec!["server".into()];
        let e = o.clone().resolve().unwrap_err().to_string();
        assert!(e.contains("--profile default"), "{e}");
        o.profiles.clear();
        o.cpu_limit = Some(0.5);
        let e = o.resolve().unwrap_err().to_string();
        assert!(
            e.contains("--cpu-limit") && e.contains("127.0.0.1:5060"),
            "{e}"
        );
        let mut o = options(&["takt"]);
        o.cpu_limit = Some(0.0);
        assert!(o
            .resolve()
            .unwrap_err()
            .to_string()
            .contains("--cpu-limit 0"));
    }

    fn o_uas() -> Option<SocketAddr> {
        Some("127.0.0.1:5070".parse().unwrap())
    }
}
