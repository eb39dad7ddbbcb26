//! `takt sip sweep`: the 1%-drop capacity as a function of the number of
//! worker threads m and of the scheduler profile, for one or more servers
//! — Krishnamurthy & Rouskas' experiment on today's Linux, with the
//! paper's Tables I–III and capacity versus m per profile.
//!
//! # How a sweep runs
//! 1. Machine-wide leftovers of a crashed run are repaired
//!    ([`crate::system`]); the receive queue's bytes per datagram are
//!    calibrated (for the Little's-law K_rcv, [`sampled_load`]).
//! 2. **Cases** are (target, mode, m, profile). Every case gets a server
//!    started fresh with the profile's policy (takt through `--sched`;
//!    then every thread of every process of any server gets it again
//!    through [`takt_sched::apply_to_process`] and is read back) and its
//!    own capacity search ([`crate::search`]). The searches take turns
//!    point by point; only the server being measured runs (the others are
//!    paused); a profile's machine-wide part (`poll`, `rr`'s time slice,
//!    the base slice) is set for its own trials only. Such a part acts
//!    on the generator too, so the null relay is searched under each such
//!    profile and under `default` beside the servers: the generator's
//!    ceiling ([`ceiling_profiles`]), not a server.
//! 3. `enhanced` needs `default`'s measurement: after the first round of
//!    searches, its slice is derived per (target, mode, m) from the
//!    `default` case's workers' run time per voluntary switch at its
//!    capacity (see [`crate::profile`]), and the `enhanced` cases are
//!    searched in a second round.
//! 4. **Table III**: per (target, mode, m), every profile against
//!    `default` at default's first failing rate, in pairs of trials run
//!    back to back, the order swapped every pair ([`paper_tables::compare`]).
//! 5. Every server is stopped, every machine-wide value restored (also on
//!    an error or Ctrl-C: [`SweepPlan::stop`] ends the run after the
//!    current trial with the finished points).
//!
//! The load is whatever `make_load` gives: the local generator, or a
//! fleet of agents on other hosts ([`crate::fleet::AnyLoad`]; then no
//! generator ceiling is searched, [`ServerOptions::fleet`], and each
//! trial's agents are in the rows' detail as `fleet`).

pub(crate) mod fixture;
pub mod paper;
pub mod paper_tables;
mod plots;
mod render;
pub mod sampled_load;
mod suite;

use std::cell::RefCell;
use std::net::IpAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde::Serialize;
use serde_json::{json, Map, Value};
use takt_measure::result::{Better, Document, DocumentBuilder, ResultRow};
use takt_sched::CpuSet;
use takt_sip::proxy::Mode;

use crate::capacity::{rows, Load, PointDetail, TargetTrial};
use crate::cpu_limit::{CpuLimit, DEFAULT_PERIOD_US};
use crate::error::{Error, Result};
use crate::fleet::detail::points_detail;
use crate::fleet::FleetPoint;
use crate::profile::{apply_to_server, EnhancedSlice, Profile, ReadBack, Resolved};
use crate::search::{run_interleaved, Capacity, Search, SearchConfig, SearchResult, Trial};
use crate::system::SystemSettings;
use crate::target::{TargetKind, TargetSetup};

pub use paper_tables::{Comparison, Crossing, PairSide};
pub use plots::write_plots;
pub use render::{capacity_markdown, render};
pub use sampled_load::{PointExtra, SweepLoad};
pub(crate) use suite::write_json;
pub use suite::{
    estimate_secs, gen_config, start_rates, Preset, SweepOptions, SweepOutput, SweepSuite,
    JSON_FILE, MARKDOWN_FILE, PAPER_CALLS,
};

/// Everything a sweep needs besides the load.
#[derive(Debug, Clone)]
pub struct SweepPlan {
    /// Targets, in the order they take turns.
    pub targets: Vec<TargetKind>,
    /// Proxy modes.
    pub modes: Vec<Mode>,
    /// Worker counts m.
    pub workers: Vec<usize>,
    /// Profiles (`enhanced` brings `default` with it).
    pub profiles: Vec<Profile>,
    /// CPUs, receive buffer, listen address for every server (workers,
    /// mode, policy and UAS are set per case).
    pub base: TargetSetup,
    /// The search (its `start_cps` is replaced per target by
    /// [`SweepPlan::start_cps`] where that names one).
    pub search: SearchConfig,
    /// First ramp rate per target name (`takt`, `kamailio`), calls/s.
    pub start_cps: Vec<(String, f64)>,
    /// Table III pairs per profile and (target, mode, m).
    pub pairs: usize,
    /// Which profiles Table III compares with `default`.
    pub compare: CompareWhich,
    /// CPUs of the sweep's own sampler thread (keep it off the server's).
    pub sampler_cpus: Option<CpuSet>,
    /// Set to end the run after the current trial.
    pub stop: Arc<AtomicBool>,
    /// Where the generator's UAS listens and the servers' CPU quota.
    pub servers: ServerOptions,
}

/// How the sweep reaches and limits its servers (default: a UAS on a
/// free port per case, no quota).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerOptions {
    /// Where the generator's UAS listens for every case (a target with a
    /// fixed next hop forwards there; `None`: a free port per case).
    pub uas: Option<std::net::SocketAddr>,
    /// A CPU quota on each server for its whole search, CPUs' worth of
    /// time (not on the generator's ceiling, the null relay).
    pub cpu_limit: Option<f64>,
    /// The servers are loaded by a fleet on other hosts: no generator
    /// shares their CPUs or machine-wide settings, so no generator
    /// ceiling is searched.
    pub fleet: bool,
}

/// Which profiles get a Table III comparison, and against which baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareWhich {
    /// Every profile against `server`, the paper's baseline, and against
    /// `default` (the sweep), each baseline present.
    All,
    /// Only the one with the highest capacity per (target, mode, m),
    /// against `default` — the A/B confirmation of `takt sip tune`.
    BestCapacity,
}

impl CompareWhich {
    /// The baseline profiles, in the order their comparisons run.
    fn baselines(self) -> &'static [&'static str] {
        match self {
            CompareWhich::All => &["server", "default"],
            CompareWhich::BestCapacity => &["default"],
        }
    }
}

/// Which case.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseKey {
    /// Target name (`impl`).
    pub target: &'static str,
    /// Proxy mode.
    pub mode: &'static str,
    /// Worker model.
    pub model: &'static str,
    /// Worker threads or processes.
    pub workers: usize,
    /// The profile.
    pub profile: String,
}

impl CaseKey {
    /// The group a case belongs to (everything but the profile).
    fn group(&self) -> (&'static str, &'static str, &'static str, usize) {
        (self.target, self.mode, self.model, self.workers)
    }

    /// A generator-ceiling case: the null relay under a profile's
    /// machine-wide part (see [`ceiling_profiles`]).
    pub fn is_ceiling(&self) -> bool {
        self.target == TargetKind::NullRelay.name()
    }

    /// `takt stateful m=4 enhanced`.
    pub fn label(&self) -> String {
        format!(
            "{} {} m={} {}",
            self.target, self.mode, self.workers, self.profile
        )
    }
}

/// One case's results.
#[derive(Debug, Clone, Serialize)]
pub struct CaseOutcome {
    /// Which case.
    pub key: CaseKey,
    /// How tables name its profile (`enhanced (slice 250us)`).
    pub label: String,
    /// The policy its threads had.
    pub policy: String,
    /// What the kernel reported for its threads after start.
    pub readback: ReadBack,
    /// For `enhanced`: the slice and how it was derived.
    pub enhanced: Option<EnhancedSlice>,
    /// The search.
    pub result: SearchResult,
    /// Server-side detail of the search's trials (index-aligned).
    #[serde(skip)]
    pub points: Vec<PointDetail>,
    /// The sweep's per-trial quantities (index-aligned).
    pub extras: Vec<PointExtra>,
    /// Table I/II columns.
    pub crossing: Crossing,
}

/// One Table III row.
#[derive(Debug, Clone, Serialize)]
pub struct ComparisonOutcome {
    /// The profile's case (its `profile` is the one compared).
    pub key: CaseKey,
    /// The compared profile's label (`… vs server` against `server`).
    pub label: String,
    /// The profile it is compared with: `server` (the paper's baseline)
    /// or `default`; the pairs' first side.
    pub baseline: String,
    /// The comparison.
    pub comparison: Comparison,
    /// The pairs (default, profile).
    pub pairs: Vec<(PairSide, PairSide)>,
    /// Under a fleet, each pair's two trials' agents and void attempts
    /// (index-aligned with `pairs`; in the rows' detail as `fleet`).
    #[serde(skip)]
    pub fleet: Vec<(Option<FleetPoint>, Option<FleetPoint>)>,
}

/// A finished (or interrupted) sweep.
#[derive(Debug, Clone, Serialize)]
pub struct SweepOutcome {
    /// Every case.
    pub cases: Vec<CaseOutcome>,
    /// Table III.
    pub comparisons: Vec<ComparisonOutcome>,
    /// Machine-wide changes, holds and repairs ([`SystemSettings::record`]).
    pub system: Value,
    /// Receive-queue bytes per datagram (the Little's-law calibration).
    pub truesize: f64,
    /// Remarks for the document.
    pub notes: Vec<String>,
    /// The run was stopped early.
    pub interrupted: bool,
}

/// What [`run`] reports as it goes.
#[derive(Debug)]
pub enum Progress<'a> {
    /// Searches start, taking turns point by point: the cases numbered
    /// `first..first + labels.len()` (numbers are stable over the run),
    /// each expecting about `trials_each` trials.
    Searches {
        /// Number of the first case.
        first: usize,
        /// The cases' labels.
        labels: &'a [String],
        /// Trials a fresh search expects (ramp, bisection, grid).
        trials_each: usize,
    },
    /// Table III's pairs start: `trials` trials back to back.
    Pairs {
        /// Trials (two per pair).
        trials: usize,
    },
    /// A case's server is up: `line` says where the generator's UAS
    /// listens, what the calls name and where they go.
    Uas {
        /// The case.
        label: &'a str,
        /// `uas=… request_uri=… target=…`.
        line: &'a str,
    },
    /// A trial finished.
    Trial(TrialProgress<'a>),
}

/// One finished trial (see [`Progress::Trial`]).
#[derive(Debug)]
pub struct TrialProgress<'a> {
    /// The case's number (see [`Progress::Searches`]).
    pub case: usize,
    /// The case.
    pub label: &'a str,
    /// The trial's rate.
    pub rate_cps: f64,
    /// `ramp`, `bisect`, `grid`, `pair`.
    pub phase: &'static str,
    /// Its drop rate.
    pub drop_rate: f64,
    /// It was generator-bound.
    pub generator_bound: bool,
    /// The case's trials done and expected (its search's own estimate;
    /// for `pair`, the pairs' trials).
    pub case_done: usize,
    /// See `case_done`.
    pub case_expected: usize,
    /// Trials of the whole sweep done.
    pub done: usize,
    /// Trials of the whole sweep expected: the searches running, the
    /// `enhanced` round and Table III's pairs still to come (estimates,
    /// refined as the run goes).
    pub expected: usize,
}

/// The profiles under which a sweep measures the generator's ceiling (the
/// null relay's capacity, its one thread at the default policy): every
/// profile with a machine-wide part ([`Resolved::is_machine_wide`]) — it
/// acts on the generator's CPUs or threads as much as on the server's —
/// and `default` first as the baseline; none when no profile has one.
pub fn ceiling_profiles(profiles: &[Profile]) -> Result<Vec<Profile>> {
    let mut out = Vec::new();
    for p in profiles.iter().filter(|p| !p.is_derived()) {
        if p.resolve(None)?.is_machine_wide() && !out.contains(p) {
            out.push(*p);
        }
    }
    if !out.is_empty() {
        out.insert(0, Profile::Default);
    }
    Ok(out)
}

fn mode_name(m: Mode) -> &'static str {
    match m {
        Mode::Stateless => "stateless",
        Mode::Stateful => "stateful",
    }
}

/// The wake order a takt target was given (`--wake` among its flags).
pub fn wake_of(k: &TargetKind) -> Option<&str> {
    let TargetKind::Takt(o) = k else { return None };
    let i = o.extra_args.iter().position(|a| a == "--wake")?;
    o.extra_args.get(i + 1).map(String::as_str)
}

/// The model's name, with the wake order where one was set (a sweep
/// axis: each its own series).
fn model_name(k: &TargetKind) -> &'static str {
    match k {
        TargetKind::Takt(o) => match (o.model.name(), wake_of(k)) {
            ("shared", Some("fifo")) => "shared wake=fifo",
            ("shared", Some("lifo")) => "shared wake=lifo",
            (m, _) => m,
        },
        TargetKind::Kamailio | TargetKind::OpenSips => "processes",
        TargetKind::NullRelay => "relay",
        TargetKind::Addr(_) => "unknown",
    }
}

/// A case being searched.
struct Live<L: Load> {
    key: CaseKey,
    resolved: Resolved,
    readback: ReadBack,
    extras: sampled_load::Extras,
    trial: TargetTrial<SweepLoad<L>>,
    /// The server's CPU quota (removed before the server stops).
    limit: Option<CpuLimit>,
    /// Where the load's UAS listens ([`Progress::Uas`]).
    uas_line: String,
}

fn interrupted<T>(r: std::result::Result<T, Error>) -> Result<Option<T>> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(Error::Interrupted) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Runs the sweep (see the module docs): loads from `make_load(ip)`,
/// progress after every trial.
pub fn run<L: Load>(
    plan: &SweepPlan,
    mut make_load: impl FnMut(IpAddr) -> Result<L>,
    mut progress: impl FnMut(&Progress<'_>),
) -> Result<SweepOutcome> {
    plan.search.validate()?;
    if plan.targets.is_empty() || plan.modes.is_empty() || plan.workers.is_empty() {
        return Err(Error::Config(
            "a sweep needs at least one target, mode and worker count".into(),
        ));
    }
    if plan.workers.contains(&0) {
        return Err(Error::Config("worker counts start at 1".into()));
    }
    let mut profiles: Vec<Profile> = Vec::new();
    if plan.profiles.iter().any(|p| p.is_derived()) && !plan.profiles.contains(&Profile::Default) {
        profiles.push(Profile::Default);
    }
    for p in &plan.profiles {
        if !profiles.contains(p) {
            profiles.push(*p);
        }
    }
    if profiles.is_empty() {
        return Err(Error::Config("a sweep needs at least one profile".into()));
    }
    // resolve the non-derived profiles up front: a bad one fails here
    for p in profiles.iter().filter(|p| !p.is_derived()) {
        p.resolve(None)?;
    }
    let sys = Rc::new(RefCell::new(SystemSettings::new()?));
    let truesize = sampled_load::truesize()?;
    let mut notes = Vec::new();
    for c in sys.borrow().repaired() {
        notes.push(format!(
            "repaired a crashed run's leftover: {} back to {}",
            c.path.display(),
            c.original
        ));
    }
    if profiles.contains(&Profile::Poll) {
        notes.push("profile poll holds an idle-latency limit of 0 during its trials: machine-wide, so the generator's idle CPUs poll too (its ceiling under poll is measured: generator_ceiling)".into());
    }
    let groups: Vec<(TargetKind, Mode, usize)> = plan
        .targets
        .iter()
        .flat_map(|t| {
            plan.modes
                .iter()
                .flat_map(move |&m| plan.workers.iter().map(move |&w| (t.clone(), m, w)))
        })
        .collect();
    let ceilings = if plan.servers.fleet {
        Vec::new()
    } else {
        ceiling_profiles(&profiles)?
    };
    let start = |kind: &TargetKind,
                 mode: Mode,
                 m: usize,
                 profile: Profile,
                 enhanced: Option<EnhancedSlice>,
                 warm: Option<f64>,
                 make_load: &mut dyn FnMut(IpAddr) -> Result<L>|
     -> Result<(Live<L>, Search)> {
        let mut resolved = profile.resolve(enhanced)?;
        if matches!(kind, TargetKind::NullRelay) {
            // a generator ceiling: the profile's machine-wide part only,
            // the relay's one thread as the generator's other threads
            resolved.policy = takt_sched::SchedPolicy::DEFAULT;
        }
        let load = make_load(plan.base.listen_ip)?;
        let mut setup = plan.base.clone();
        setup.workers = m;
        setup.mode = mode;
        setup.sched = Some(resolved.policy);
        setup.uas = load.uas();
        let key = CaseKey {
            target: kind.name(),
            mode: mode_name(mode),
            model: model_name(kind),
            workers: m,
            profile: profile.to_string(),
        };
        let in_case = |e: Error| Error::Case {
            case: key.label(),
            source: Box::new(e),
        };
        let limit = match plan.servers.cpu_limit {
            Some(c) if !matches!(kind, TargetKind::NullRelay) => {
                Some(CpuLimit::new(c, DEFAULT_PERIOD_US).map_err(in_case)?)
            }
            _ => None,
        };
        let target = kind.start(&setup).map_err(in_case)?;
        if let Some(l) = &limit {
            for pid in target.pids() {
                l.add(pid).map_err(in_case)?;
            }
        }
        let uas_line = load.uas_line(target.listen());
        // a server the lab did not start keeps its own scheduling
        let readback = match kind {
            TargetKind::Addr(_) => ReadBack {
                applied: "not applied (a server the lab did not start)".into(),
                processes: 0,
                threads: 0,
                vanished: 0,
                seen: Vec::new(),
                all_match: false,
            },
            _ => apply_to_server(&target.pids(), resolved.policy)?,
        };
        let sl = SweepLoad::new(
            load,
            resolved.clone(),
            sys.clone(),
            truesize,
            plan.sampler_cpus.clone(),
        );
        let extras = sl.extras();
        let trial = TargetTrial::new(target, sl)
            .with_stop(plan.stop.clone())
            .pausing();
        let mut cfg = plan.search.clone();
        if let Some((_, s)) = plan.start_cps.iter().find(|(n, _)| n == kind.name()) {
            cfg.start_cps = s.clamp(cfg.min_cps, cfg.max_cps);
        }
        if let Some(cps) = warm {
            cfg = cfg.warm_started(cps);
        }
        Ok((
            Live {
                key,
                resolved,
                readback,
                extras,
                trial,
                limit,
                uas_line,
            },
            Search::new(cfg)?,
        ))
    };
    let mut lives: Vec<Live<L>> = Vec::new();
    let mut searches: Vec<Search> = Vec::new();
    for (kind, mode, m) in &groups {
        for p in profiles.iter().filter(|p| !p.is_derived()) {
            let (l, s) = start(kind, *mode, *m, *p, None, None, &mut make_load)?;
            lives.push(l);
            searches.push(s);
        }
    }
    for p in &ceilings {
        let (l, s) = start(
            &TargetKind::NullRelay,
            plan.modes[0],
            1,
            *p,
            None,
            None,
            &mut make_load,
        )?;
        lives.push(l);
        searches.push(s);
    }
    // what is still to come after the first round, for the estimates
    let trials_each = Search::new(plan.search.clone())?.progress().1;
    let derived = profiles.iter().filter(|p| p.is_derived()).count();
    let pairs_later = if plan.pairs == 0 {
        0
    } else {
        let per_group = match plan.compare {
            CompareWhich::All => {
                let n = plan
                    .compare
                    .baselines()
                    .iter()
                    .filter(|b| profiles.iter().any(|p| p.to_string() == **b))
                    .count();
                profiles.len().saturating_sub(1) * n
            }
            CompareWhich::BestCapacity => 1,
        };
        groups.len() * per_group * plan.pairs * 2
    };
    let mut stopped = false;
    let mut done_before = 0;
    let mut round = |lives: &mut [Live<L>],
                     searches: &mut [Search],
                     first: usize,
                     done_before: usize,
                     later: usize| {
        let labels: Vec<String> = lives.iter().map(|l| l.key.label()).collect();
        for (l, label) in lives.iter().zip(&labels) {
            progress(&Progress::Uas {
                label,
                line: &l.uas_line,
            });
        }
        let mut prog: Vec<(usize, usize)> = searches.iter().map(Search::progress).collect();
        progress(&Progress::Searches {
            first,
            labels: &labels,
            trials_each: prog.first().map_or(0, |p| p.1),
        });
        let mut trials: Vec<&mut TargetTrial<SweepLoad<L>>> =
            lives.iter_mut().map(|l| &mut l.trial).collect();
        let r = run_interleaved(searches, &mut trials, |i, s| {
            prog[i] = s.progress();
            let res = s.result();
            let Some(last) = res.trials.last() else {
                return;
            };
            progress(&Progress::Trial(TrialProgress {
                case: first + i,
                label: &labels[i],
                rate_cps: last.rate_cps,
                phase: match last.phase {
                    crate::search::Phase::Ramp => "ramp",
                    crate::search::Phase::Bisect => "bisect",
                    crate::search::Phase::Grid => "grid",
                },
                drop_rate: last.outcome.drop_rate(),
                generator_bound: last.outcome.generator_bound,
                case_done: prog[i].0,
                case_expected: prog[i].1,
                done: done_before + prog.iter().map(|p| p.0).sum::<usize>(),
                expected: done_before + prog.iter().map(|p| p.1).sum::<usize>() + later,
            }));
        });
        let done: usize = prog.iter().map(|p| p.0).sum();
        match r {
            Ok(()) => Ok((false, done)),
            Err((_, Error::Interrupted)) => Ok((true, done)),
            Err((i, e)) => Err(Error::Case {
                case: labels[i].clone(),
                source: Box::new(e),
            }),
        }
    };
    let (s1, d1) = round(
        &mut lives,
        &mut searches,
        0,
        done_before,
        groups.len() * derived * trials_each + pairs_later,
    )?;
    stopped |= s1;
    done_before += d1;
    // the enhanced round
    if !stopped && derived > 0 {
        let first = lives.len();
        for (kind, mode, m) in &groups {
            let Some(d) = lives.iter().position(|l| {
                l.key.group() == (kind.name(), mode_name(*mode), model_name(kind), *m)
                    && l.key.profile == "default"
            }) else {
                continue;
            };
            let res = searches[d].result();
            let points = lives[d].trial.points().to_vec();
            let slice = paper_tables::enhanced_rate(&res, plan.search.threshold).and_then(|cps| {
                Some((
                    paper_tables::run_per_switch_us(&res, &points, cps, *m)?,
                    cps,
                ))
            });
            let Some((us, cps)) = slice else {
                notes.push(format!(
                    "{}: no enhanced slice (default's trials had no voluntary switches)",
                    lives[d].key.label()
                ));
                continue;
            };
            let e = EnhancedSlice::from_run_per_switch(us, cps)?;
            // start near default's crossing: the derived profile's
            // capacity is searched from there with a fine ramp
            let warm = res.capacity.map(|c| c.cps()).filter(|&c| c > 0.0);
            for p in profiles.iter().filter(|p| p.is_derived()) {
                let (l, s) = start(kind, *mode, *m, *p, Some(e), warm, &mut make_load)?;
                lives.push(l);
                searches.push(s);
            }
        }
        let (s2, d2) = round(
            &mut lives[first..],
            &mut searches[first..],
            first,
            done_before,
            pairs_later,
        )?;
        stopped |= s2;
        done_before += d2;
    }
    // Table III: each profile against default at default's first failing rate
    let mut comparisons = Vec::new();
    if !stopped && plan.pairs > 0 {
        let mut jobs = Vec::new();
        // the paper's baseline first, then default
        let mut order = Vec::new();
        for b in plan.compare.baselines() {
            order.extend(
                (0..lives.len())
                    .filter(|&d| lives[d].key.profile == *b && !lives[d].key.is_ceiling()),
            );
        }
        for d in order {
            let rate = match searches[d].result().capacity {
                Some(Capacity::Measured {
                    first_failing_cps, ..
                }) => first_failing_cps,
                _ => {
                    notes.push(format!(
                        "{}: no Table III rows against it ({}'s capacity was not measured between two grid rates)",
                        lives[d].key.label(),
                        lives[d].key.profile
                    ));
                    continue;
                }
            };
            let others: Vec<usize> = (0..lives.len())
                .filter(|&j| j != d && lives[j].key.group() == lives[d].key.group())
                .collect();
            let chosen: Vec<usize> = match plan.compare {
                CompareWhich::All => others,
                CompareWhich::BestCapacity => others
                    .into_iter()
                    .filter_map(|j| Some((j, searches[j].result().capacity?.cps())))
                    .max_by(|a, b| a.1.total_cmp(&b.1))
                    .map(|(j, _)| j)
                    .into_iter()
                    .collect(),
            };
            for j in chosen {
                jobs.push((d, j, rate));
            }
        }
        let total = jobs.len() * plan.pairs * 2;
        if total > 0 {
            progress(&Progress::Pairs { trials: total });
        }
        let mut n = 0;
        'jobs: for (d, j, rate) in jobs {
            let mut pairs = Vec::new();
            let mut fleet = Vec::new();
            for i in 0..plan.pairs {
                let order = if i % 2 == 0 { [d, j] } else { [j, d] };
                let mut sides = [None, None];
                let mut agents = [None, None];
                for &c in &order {
                    let label = lives[c].key.label();
                    let Some(o) = interrupted(lives[c].trial.trial(rate))? else {
                        stopped = true;
                        break 'jobs;
                    };
                    n += 1;
                    progress(&Progress::Trial(TrialProgress {
                        case: c,
                        label: &label,
                        rate_cps: rate,
                        phase: "pair",
                        drop_rate: o.drop_rate(),
                        generator_bound: o.generator_bound,
                        case_done: n,
                        case_expected: total,
                        done: done_before + n,
                        expected: done_before + total,
                    }));
                    let e = *lives[c]
                        .extras
                        .borrow()
                        .last()
                        .expect("a run pushed its extra");
                    sides[usize::from(c == j)] = Some(PairSide::of(o.drop_rate(), &e));
                    agents[usize::from(c == j)] =
                        lives[c].trial.points().last().and_then(|p| p.fleet.clone());
                }
                if let [Some(a), Some(b)] = sides {
                    pairs.push((a, b));
                    let [fa, fb] = agents;
                    fleet.push((fa, fb));
                }
            }
            let baseline = lives[d].key.profile.clone();
            let mut label = lives[j].resolved.label();
            if baseline != "default" {
                label = format!("{label} vs {baseline}");
            }
            comparisons.push(ComparisonOutcome {
                key: lives[j].key.clone(),
                label,
                baseline,
                comparison: paper_tables::compare(rate, &pairs),
                pairs,
                fleet,
            });
        }
    }
    let mut cases = Vec::new();
    for (l, s) in lives.into_iter().zip(&searches) {
        let result = s.result();
        let n = result.trials.len();
        let extras: Vec<PointExtra> = l.extras.borrow()[..n.min(l.extras.borrow().len())].to_vec();
        let removed = l.limit.map_or(Ok(()), CpuLimit::remove);
        let (mut points, stop) = l.trial.finish();
        let stop = stop.and(removed);
        points.truncate(n);
        if let Err(e) = stop {
            notes.push(format!("{}: {e}", l.key.label()));
        }
        cases.push(CaseOutcome {
            crossing: paper_tables::crossing(&result, &points, &extras),
            key: l.key,
            label: l.resolved.label(),
            policy: l.resolved.policy.to_string(),
            readback: l.readback,
            enhanced: l.resolved.enhanced,
            result,
            points,
            extras,
        });
    }
    if plan.stop.load(Ordering::Acquire) || stopped {
        notes.push("interrupted: the tables hold the points finished before the stop".into());
    }
    let system = {
        let mut s = sys.borrow_mut();
        s.restore()?;
        s.record()
    };
    Ok(SweepOutcome {
        cases,
        comparisons,
        system,
        truesize,
        notes,
        interrupted: stopped,
    })
}

/// Every kind of row a sweep's document can hold, built by
/// [`SweepOutcome::document`] from a synthetic outcome (Kamailio's
/// profiles compared with default, a takt case with a full search, both
/// crossing columns and an enhanced slice, a generator-ceiling case): the
/// input of the document-shape snapshot test. Starts nothing.
#[doc(hidden)]
pub fn synthetic_rows() -> Vec<ResultRow> {
    let a: std::net::SocketAddr = ([127, 0, 0, 1], 9).into();
    let plan = SweepPlan {
        targets: Vec::new(),
        modes: Vec::new(),
        workers: Vec::new(),
        profiles: Vec::new(),
        base: TargetSetup::new(a),
        search: SearchConfig::default(),
        start_cps: Vec::new(),
        pairs: 2,
        compare: CompareWhich::All,
        sampler_cpus: None,
        stop: Arc::new(AtomicBool::new(false)),
        servers: ServerOptions::default(),
    };
    let mut outcome = fixture::outcome(&[(0.01, 0.005), (0.02, 0.01)], 2_100.0);
    let extra = PointExtra {
        t_sip_us: Some(5.0),
        k_rcv_us: Some(50.0),
        k_rcv_est_us: Some(60.0),
        queue_msgs: 1.0,
        queue_samples: 10,
        arrival_pps: 6_000.0,
        secs: 1.0,
    };
    let extended = |target: &'static str, model: &'static str, profile: &str| {
        let mut c = fixture::case(profile, "other", 2_000.0);
        c.key.target = target;
        c.key.model = model;
        let (result, points) = crate::capacity::synthetic_search(true, target == "takt");
        c.extras = vec![extra; points.len()];
        c.result = result;
        c.points = points;
        c.crossing.above = c.crossing.below.clone();
        c
    };
    let mut takt = extended("takt", "shared", "enhanced");
    takt.enhanced = Some(EnhancedSlice {
        slice: std::time::Duration::from_micros(250),
        measured_us: 250.0,
        at_cps: 2_000.0,
        equals_server: true,
        clamped: false,
    });
    let ceiling = extended(TargetKind::NullRelay.name(), "relay", "default");
    outcome
        .cases
        .push(extended("kamailio", "processes", "server"));
    outcome.cases.push(takt);
    outcome.cases.push(ceiling);
    let mut rows = outcome.document(&plan).results;
    // takt's wake order as an axis, its servers under a CPU quota
    let mut limited = fixture::outcome(&[(0.01, 0.005)], 2_100.0);
    limited.comparisons.clear();
    limited.cases = vec![extended("takt", "shared wake=fifo", "default")];
    let plan = SweepPlan {
        servers: ServerOptions {
            uas: None,
            cpu_limit: Some(0.5),
            fleet: false,
        },
        ..plan
    };
    rows.extend(limited.document(&plan).results);
    rows
}

fn params(plan: &SweepPlan, key: &CaseKey, policy: &str) -> Map<String, Value> {
    let mut p = Map::new();
    p.insert("mode".into(), json!(key.mode));
    p.insert("workers".into(), json!(key.workers));
    match key.model.split_once(" wake=") {
        Some((model, wake)) => {
            p.insert("model".into(), json!(model));
            p.insert("wake".into(), json!(wake));
        }
        None => {
            p.insert("model".into(), json!(key.model));
        }
    }
    p.insert("profile".into(), json!(key.profile));
    if let Some(c) = plan.servers.cpu_limit.filter(|_| !key.is_ceiling()) {
        p.insert("cpu_limit".into(), json!(c));
    }
    p.insert("sched".into(), json!(policy));
    p.insert(
        "cpus".into(),
        json!(plan
            .base
            .cpus
            .as_ref()
            .map_or_else(|| "any".to_string(), |c| c.to_string())),
    );
    p.insert("net".into(), json!("loopback"));
    p.insert("threshold".into(), json!(plan.search.threshold));
    p.insert("reps".into(), json!(plan.search.reps));
    p
}

impl SweepOutcome {
    /// One warning per case whose trials were all generator-bound
    /// ([`SearchResult::generator_bound_warning`]).
    pub fn generator_bound_warnings(&self) -> Vec<String> {
        self.cases
            .iter()
            .filter_map(|c| c.result.generator_bound_warning(&c.key.label()))
            .collect()
    }

    /// The generator's ceilings, one phrase per profile: `poll 31000,
    /// default ≥ 20000 (generator-bound)`; `None` without ceiling cases.
    pub fn ceiling_note(&self) -> Option<String> {
        let parts: Vec<String> = self
            .cases
            .iter()
            .filter(|c| c.key.is_ceiling())
            .map(|c| {
                format!(
                    "{} {}",
                    c.key.profile,
                    c.result
                        .capacity
                        .map_or_else(|| "unfinished".to_string(), |x| x.to_string())
                )
            })
            .collect();
        (!parts.is_empty()).then(|| {
            format!(
                "the generator's ceiling (generator_ceiling rows: the null relay's capacity, calls/s, its one thread at the default policy) under each profile that changes machine-wide state and under default: {}; a server's capacity near its profile's ceiling is the generator's limit, not the server's",
                parts.join(", ")
            )
        })
    }

    /// The result document (suite `sip_sweep`): per case the capacity
    /// search's rows ([`crate::capacity::rows`]: `capacity`,
    /// `cpu_per_call`, `drop_rate` per grid rate, takt's per-kind `t_sip`
    /// and `k_rcv` in ns with `kind` in params) with `profile` in
    /// `params`; per grid rate the mean over all message kinds,
    /// `k_rcv_all_kinds` (µs; `estimate` in params: Little's law for a
    /// server without timestamps) and `t_sip_all_kinds` (µs, servers that
    /// timestamp); Table I/II columns as `crossing` rows (drop rate; every
    /// column in `detail`); the `enhanced_slice` per (target, mode, m);
    /// Table III as `drop_rate_lower` and `k_rcv_lower` (%, samples per
    /// pair); per [`ceiling_profiles`] a `generator_ceiling` row (cps, the
    /// null relay's capacity; its `drop_rate` rows beside it). The paper's
    /// figures ride along as `published` where m matches.
    pub fn document(&self, plan: &SweepPlan) -> Document {
        let mut doc = DocumentBuilder::start("sip_sweep");
        for c in &self.cases {
            let p = params(plan, &c.key, &c.policy);
            if c.key.is_ceiling() {
                for mut row in rows(c.key.target, &p, &c.result, &c.points) {
                    if row.name == "capacity" {
                        row.name = "generator_ceiling".into();
                    }
                    doc.push(row);
                }
                continue;
            }
            for mut row in rows(c.key.target, &p, &c.result, &c.points) {
                if row.name == "capacity" {
                    let published =
                        paper::capacity(c.key.workers).and_then(|(base, enh)| {
                            match c.key.profile.as_str() {
                                "server" => Some(base),
                                "enhanced" => Some(enh),
                                _ => None,
                            }
                        });
                    if let Some(v) = published {
                        row = row.with_published(v);
                    }
                    row.detail.insert("readback".into(), json!(c.readback));
                    if let Some(e) = c.enhanced {
                        row.detail.insert("enhanced".into(), json!(e));
                    }
                }
                doc.push(row);
            }
            // K_rcv and T_sip per grid rate
            for g in &c.result.grid {
                let at: Vec<&PointExtra> = c
                    .result
                    .trials
                    .iter()
                    .zip(&c.extras)
                    .filter(|(t, _)| {
                        t.phase == crate::search::Phase::Grid
                            && !t.rerun
                            && t.rate_cps == g.rate_cps
                    })
                    .map(|(_, e)| e)
                    .collect();
                let measured: Vec<f64> = at.iter().filter_map(|e| e.k_rcv_us).collect();
                let (k, estimate) = if measured.is_empty() {
                    (at.iter().filter_map(|e| e.k_rcv_est_us).collect(), true)
                } else {
                    (measured, false)
                };
                let mut gp = p.clone();
                gp.insert("rate_cps".into(), json!(g.rate_cps));
                if !k.is_empty() {
                    let mut kp = gp.clone();
                    kp.insert("estimate".into(), json!(estimate));
                    doc.push(ResultRow::new(
                        "k_rcv_all_kinds",
                        c.key.target,
                        kp,
                        "us",
                        Better::Lower,
                        k,
                        0.0,
                    ));
                }
                let t: Vec<f64> = at.iter().filter_map(|e| e.t_sip_us).collect();
                if !t.is_empty() {
                    doc.push(ResultRow::new(
                        "t_sip_all_kinds",
                        c.key.target,
                        gp,
                        "us",
                        Better::Lower,
                        t,
                        0.0,
                    ));
                }
            }
            for (side, col) in [("below", &c.crossing.below), ("above", &c.crossing.above)] {
                let Some(col) = col else { continue };
                let mut cp = p.clone();
                cp.insert("side".into(), json!(side));
                cp.insert("rate_cps".into(), json!(col.rate_cps));
                let mut d = Map::new();
                if let Value::Object(m) = json!(col) {
                    d = m;
                }
                doc.push(
                    ResultRow::new(
                        "crossing",
                        c.key.target,
                        cp,
                        "ratio",
                        Better::Lower,
                        vec![col.drop_rate],
                        0.0,
                    )
                    .with_detail(d),
                );
            }
            if let Some(e) = c.enhanced {
                let mut d = Map::new();
                if let Value::Object(m) = json!(e) {
                    d = m;
                }
                let mut r = ResultRow::new(
                    "enhanced_slice",
                    c.key.target,
                    p.clone(),
                    "us",
                    Better::Lower,
                    vec![e.slice.as_micros() as f64],
                    0.0,
                )
                .with_detail(d);
                if let Some((_, us)) = paper::ENHANCED_GRANULARITY_US
                    .iter()
                    .find(|(m, _)| *m == c.key.workers)
                {
                    r = r.with_published(*us as f64);
                }
                doc.push(r);
            }
        }
        for cmp in &self.comparisons {
            let policy = self
                .cases
                .iter()
                .find(|c| c.key == cmp.key)
                .map_or(String::new(), |c| c.policy.clone());
            let mut p = params(plan, &cmp.key, &policy);
            p.insert("against".into(), json!(cmp.baseline));
            p.insert("rate_cps".into(), json!(cmp.comparison.rate_cps));
            // the paper's Table III is enhanced against its baseline,
            // `server`; against `default` only where no server ran
            let server_ran = self
                .comparisons
                .iter()
                .any(|o| o.baseline == "server" && o.key.target == cmp.key.target);
            let published =
                if cmp.key.profile == "enhanced" && (cmp.baseline == "server" || !server_ran) {
                    paper::table_iii(cmp.key.workers)
                } else {
                    None
                };
            let per_pair = |f: &dyn Fn(&PairSide) -> Option<f64>| -> Vec<f64> {
                let base: Vec<f64> = cmp.pairs.iter().filter_map(|p| f(&p.0)).collect();
                let m = base.iter().sum::<f64>() / base.len().max(1) as f64;
                if m == 0.0 {
                    return Vec::new();
                }
                cmp.pairs
                    .iter()
                    .filter_map(|p| Some(100.0 * (f(&p.0)? - f(&p.1)?) / m))
                    .collect()
            };
            for (name, samples, paired, pubv) in [
                (
                    "drop_rate_lower",
                    per_pair(&|s| Some(s.drop_rate)),
                    cmp.comparison.drop,
                    published.map(|p| p.0),
                ),
                (
                    "k_rcv_lower",
                    per_pair(&|s| s.k_rcv_us),
                    cmp.comparison.k_rcv,
                    published.map(|p| p.1),
                ),
            ] {
                if samples.is_empty() {
                    continue;
                }
                let mut kp = p.clone();
                if name == "k_rcv_lower" {
                    kp.insert("estimate".into(), json!(cmp.comparison.k_rcv_estimated));
                }
                let mut d = Map::new();
                d.insert("paired".into(), json!(paired));
                d.insert("pairs".into(), json!(cmp.pairs));
                // two per pair, the baseline's first
                let sides = cmp.fleet.iter().flat_map(|(a, b)| [a.as_ref(), b.as_ref()]);
                if let Some(f) = points_detail(sides) {
                    d.insert("fleet".into(), f);
                }
                let mut r =
                    ResultRow::new(name, cmp.key.target, kp, "%", Better::Higher, samples, 0.0)
                        .with_detail(d);
                if let Some(v) = pubv {
                    r = r.with_published(v);
                }
                doc.push(r);
            }
        }
        doc.note(format!("system settings: {}", self.system));
        doc.note(format!(
            "K_rcv of servers without per-message timestamps (kamailio) is estimated by Little's law from /proc/net/udp rx_queue samples every {} ms, {:.0} bytes per queued datagram (calibrated)",
            sampled_load::SAMPLE_EVERY.as_millis(),
            self.truesize
        ));
        if let Some(c) = plan.base.cpus.as_ref().filter(|_| !plan.servers.fleet) {
            if c.len() > 1 {
                doc.note(format!(
                    "servers run on CPUs {c}, the generator shares them: capacity here includes the generator's cost"
                ));
            }
        }
        if let Some(n) = self.ceiling_note() {
            doc.note(n);
        }
        for w in self.generator_bound_warnings() {
            doc.note(w);
        }
        for n in &self.notes {
            doc.note(n.clone());
        }
        doc.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::LoadOutcome;
    use crate::target::Target;
    use std::net::SocketAddr;

    /// A server at an address whose drop rate jumps above 3,000 calls/s.
    struct Fake;

    impl Load for Fake {
        fn uas(&self) -> SocketAddr {
            "127.0.0.1:9".parse().unwrap()
        }
        fn run(&mut self, _: &Target, rate: f64) -> Result<LoadOutcome> {
            Ok(LoadOutcome {
                achieved_cps: rate,
                sent_to_server: 6_000,
                lost: if rate > 3_000.0 { 600 } else { 0 },
                completed_calls: 1_000,
                ..LoadOutcome::default()
            })
        }
    }

    #[test]
    fn table_iii_compares_each_profile_with_server_and_with_default() {
        let a: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let plan = SweepPlan {
            targets: vec![TargetKind::Addr(a)],
            modes: vec![Mode::Stateful],
            workers: vec![2],
            profiles: vec![Profile::Default, Profile::Server, Profile::Batch],
            base: TargetSetup::new(a),
            search: SearchConfig {
                reps: 1,
                start_cps: 2_000.0,
                grid_below: 1,
                grid_above: 1,
                ..SearchConfig::default()
            },
            start_cps: Vec::new(),
            pairs: 2,
            compare: CompareWhich::All,
            sampler_cpus: None,
            stop: Arc::new(AtomicBool::new(false)),
            servers: ServerOptions::default(),
        };
        let mut uas_lines = Vec::new();
        let o = run(
            &plan,
            |_| Ok(Fake),
            |p| {
                if let Progress::Uas { line, .. } = p {
                    uas_lines.push(line.to_string());
                }
            },
        )
        .unwrap();
        assert_eq!(uas_lines.len(), 3, "{uas_lines:?}");
        assert!(uas_lines[0].starts_with("uas=127.0.0.1:9 request_uri=sip:service@127.0.0.1:9"));
        let got: Vec<(String, String)> = o
            .comparisons
            .iter()
            .map(|c| (c.baseline.clone(), c.key.profile.clone()))
            .collect();
        let pair = |b: &str, p: &str| (b.to_string(), p.to_string());
        assert_eq!(
            got,
            [
                pair("server", "default"),
                pair("server", "batch"),
                pair("default", "server"),
                pair("default", "batch"),
            ]
        );
        assert!(
            o.comparisons[1].label.ends_with(" vs server"),
            "{}",
            o.comparisons[1].label
        );
        let doc = o.document(&plan);
        let against: Vec<&str> = doc
            .results
            .iter()
            .filter(|r| r.name == "drop_rate_lower")
            .map(|r| r.params["against"].as_str().unwrap())
            .collect();
        assert_eq!(
            against.iter().filter(|a| **a == "server").count(),
            2,
            "{against:?}"
        );
        assert_eq!(
            against.iter().filter(|a| **a == "default").count(),
            2,
            "{against:?}"
        );
    }
}
