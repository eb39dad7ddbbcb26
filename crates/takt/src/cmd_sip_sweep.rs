//! `takt sip sweep`: capacity versus worker threads and scheduler profiles
//! (takt-siplab's `sweep::run` behind flags), the paper's tables, SVG plots
//! and the JSON document written to `--out`, the run recorded.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use takt_measure::progress::{fmt_secs, Progress, Stage};
use takt_report::plot::{Chart, Scale, Series};
use takt_sched::{CpuSet, SchedPolicy, ThreadSpec};
use takt_sip::proxy::Mode;
use takt_sip::transport::WorkerModel;
use takt_siplab::capacity::GenLoad;
use takt_siplab::gen::{Cancel, GenConfig, GenPolicy};
use takt_siplab::profile::Profile;
use takt_siplab::search::{SearchConfig, DEFAULT_MAX_REBRACKETS};
use takt_siplab::sweep::{self, paper, SweepOutcome, SweepPlan};
use takt_siplab::target::{TaktOptions, TargetKind, TargetSetup};

use crate::cmd_sip_capacity::{parse_mode, parse_target};

/// Fewest calls in a trial, whatever its rate and window.
const MIN_CALLS: u64 = 100;
/// Calls per trial in `--paper` (the paper's 200,000).
const PAPER_CALLS: u64 = 200_000;

/// `takt sip sweep` flags.
#[derive(Args, Debug)]
pub struct SweepArgs {
    /// Targets (repeatable): takt, kamailio, or the address of a running
    /// proxy (default: takt and kamailio). They take turns point by point.
    #[arg(long = "target", value_name = "TARGET")]
    targets: Vec<String>,
    /// Proxy modes (comma-separated; default stateful).
    #[arg(long, value_name = "stateless,stateful", value_delimiter = ',', value_parser = parse_mode)]
    mode: Vec<Mode>,
    /// takt's worker models (comma-separated; default shared, the paper's).
    #[arg(long, value_name = "shared,reuseport,batched", value_delimiter = ',')]
    model: Vec<WorkerModel>,
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
    #[arg(long, value_name = "LIST", value_parser = crate::args::parse_cpus)]
    cpus: Option<CpuSet>,
    /// The generator's CPUs (default: every CPU not given to the server,
    /// or all of them when the server has them all).
    #[arg(long, value_name = "LIST", value_parser = crate::args::parse_cpus)]
    gen_cpus: Option<CpuSet>,
    /// The generator's scheduling policy (default: `fifo:prio=10` where
    /// permitted — root or CAP_SYS_NICE — so that on a busy host it keeps
    /// its send lag; else the system's, and the output says so).
    #[arg(long, value_name = "POLICY", value_parser = parse_policy)]
    gen_sched: Option<SchedPolicy>,
    /// Drop-rate threshold.
    #[arg(long, value_name = "FRACTION", default_value_t = 0.01)]
    threshold: f64,
    /// Grid step, fraction of the rate.
    #[arg(long, value_name = "FRACTION", default_value_t = 0.03)]
    step: f64,
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
    /// The run records (SQLite); the sweep always records its run.
    #[arg(long, value_name = "PATH", default_value = takt_records::DEFAULT_PATH)]
    db: PathBuf,
}

pub(crate) fn parse_policy(s: &str) -> Result<SchedPolicy, String> {
    s.parse().map_err(|e: takt_sched::SchedError| e.to_string())
}

/// Keys that continue the previous profile in a comma-separated list
/// (`rr:prio=10,timeslice=5ms`, `other:nice=-5,slice=200us`).
const PROFILE_KEYS: [&str; 4] = ["nice", "slice", "prio", "timeslice"];

/// `default,server` and `rr:prio=10,timeslice=5ms,batch` into profiles.
fn parse_profiles(args: &[String]) -> Result<Vec<Profile>, String> {
    let mut items: Vec<String> = Vec::new();
    for a in args {
        for part in a.split(',') {
            let continues = part
                .split_once('=')
                .is_some_and(|(k, _)| PROFILE_KEYS.contains(&k.trim()));
            match items.last_mut() {
                Some(last) if continues => {
                    last.push(',');
                    last.push_str(part);
                }
                _ => items.push(part.to_string()),
            }
        }
    }
    items
        .iter()
        .map(|s| s.parse().map_err(|e: takt_siplab::Error| e.to_string()))
        .collect()
}

/// Expected seconds of a sweep (announced before it starts).
pub(crate) fn estimate(
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

pub fn run(a: SweepArgs) -> Result<(), String> {
    let names = if a.targets.is_empty() {
        vec!["takt".to_string(), "kamailio".to_string()]
    } else {
        a.targets.clone()
    };
    let models = if a.model.is_empty() {
        vec![WorkerModel::Shared]
    } else {
        a.model.clone()
    };
    let mut targets = Vec::new();
    for n in &names {
        let kind = parse_target(n, WorkerModel::Shared)?;
        match kind {
            TargetKind::NullRelay => {
                return Err("the null relay has no worker threads or profiles to sweep".into())
            }
            TargetKind::Takt(_) => {
                for &model in &models {
                    targets.push(TargetKind::Takt(TaktOptions {
                        model,
                        extra_args: Vec::new(),
                    }));
                }
            }
            k => targets.push(k),
        }
    }
    let modes = if a.mode.is_empty() {
        vec![Mode::Stateful]
    } else {
        a.mode.clone()
    };
    let workers: Vec<usize> = if !a.workers.is_empty() {
        a.workers.iter().map(|&w| w as usize).collect()
    } else if a.quick {
        vec![2, 16]
    } else if a.paper {
        vec![2, 4, 6, 8, 16]
    } else {
        vec![2, 4, 8, 16]
    };
    let profiles = if !a.profiles.is_empty() {
        parse_profiles(&a.profiles)?
    } else if a.quick {
        vec![Profile::Default, Profile::Enhanced]
    } else {
        vec![
            Profile::Default,
            Profile::Server,
            Profile::Enhanced,
            Profile::Batch,
        ]
    };
    let (server_cpus, gen_cpus) =
        takt_siplab::target::placement(a.cpus.as_ref(), a.gen_cpus.as_ref());
    let reps = a.reps.unwrap_or(if a.quick {
        2
    } else if a.paper {
        30
    } else {
        5
    });
    let pairs = a.pairs.unwrap_or(if a.quick {
        3
    } else if a.paper {
        30
    } else {
        5
    });
    let window = Duration::from_secs_f64(a.window.unwrap_or(if a.quick { 1.0 } else { 2.0 }));
    let min_calls = if a.paper { PAPER_CALLS } else { MIN_CALLS };
    let mut base = TargetSetup::new("127.0.0.1:9".parse().expect("literal"));
    base.cpus = Some(server_cpus.clone());
    let search = SearchConfig {
        threshold: a.threshold,
        step: a.step,
        reps,
        grid_below: 1,
        grid_above: 1,
        max_rebrackets: a
            .rebrackets
            .unwrap_or(if a.quick { 1 } else { DEFAULT_MAX_REBRACKETS }),
        start_cps: a.start_cps.unwrap_or(1_000.0).min(a.max_cps),
        min_cps: SearchConfig::default().min_cps.min(a.max_cps),
        max_cps: a.max_cps,
        ..SearchConfig::default()
    };
    let (stop, cancel) = stop_on_ctrl_c()?;
    let plan = SweepPlan {
        targets,
        modes,
        workers,
        profiles,
        base,
        search,
        start_cps: match a.start_cps {
            Some(_) => Vec::new(),
            None => start_rates(),
        },
        pairs,
        compare: sweep::CompareWhich::All,
        sampler_cpus: Some(gen_cpus.clone()),
        stop,
    };
    let gen_policy = crate::cmd_sip::gen_policy(a.gen_sched, &server_cpus, &gen_cpus)?;
    let gcfg = gen_config(
        &gen_cpus,
        &gen_policy,
        a.ports,
        Duration::from_millis(if a.quick { 500 } else { 1_000 }),
    );
    let groups = plan.targets.len() * plan.modes.len() * plan.workers.len();
    let n_profiles = plan.profiles.len()
        + usize::from(
            plan.profiles.contains(&Profile::Enhanced)
                && !plan.profiles.contains(&Profile::Default),
        );
    let trial_s = if a.paper {
        // the paper's calls at ~2,000 cps
        PAPER_CALLS as f64 / 2_000.0 + gcfg.drain.as_secs_f64() + 0.5
    } else {
        window.as_secs_f64() + gcfg.drain.as_secs_f64() + 0.7
    };
    let secs = estimate(
        groups * n_profiles,
        groups,
        n_profiles,
        reps,
        pairs,
        trial_s,
    );
    let ceilings = sweep::ceiling_profiles(&plan.profiles)
        .map_err(|e| e.to_string())?
        .len();
    let secs = secs + estimate(ceilings, 0, 0, reps, 0, trial_s);
    eprintln!(
        "takt sip sweep: {groups} (target, mode, m) x {n_profiles} profile(s){}, {} s of calls per trial, {reps} reps per grid point, {pairs} Table III pairs: about {} (on a quiet machine)",
        if ceilings > 0 {
            format!(" and the generator's ceiling under {ceilings} profile(s)")
        } else {
            String::new()
        },
        window.as_secs_f64(),
        if secs > 5_400.0 {
            format!("{:.1} hours", secs / 3_600.0)
        } else {
            format!("{:.0} minutes", (secs / 60.0).ceil())
        }
    );
    if server_cpus.len() > 1 {
        eprintln!(
            "servers on CPUs {server_cpus}, the generator on {gen_cpus}: they share cores, so capacities include the generator's cost"
        );
    }
    let mut bars = SweepBars::new(Progress::auto(), trial_s);
    let outcome = sweep::run(
        &plan,
        |ip| GenLoad::new(gcfg.clone(), ip, window, min_calls, cancel.clone()),
        |p| bars.on(p),
    );
    bars.finish(plan.stop.load(Ordering::Acquire));
    let mut outcome = outcome.map_err(|e| e.to_string())?;
    outcome.notes.extend(gen_policy.notes());
    let mut doc = outcome.document(&plan);
    gen_policy.stamp(&mut doc);
    let value = serde_json::to_value(&doc).map_err(|e| format!("encoding the document: {e}"))?;
    std::fs::create_dir_all(&a.out).map_err(|e| format!("creating {}: {e}", a.out.display()))?;
    let json_path = a.out.join("sweep.json");
    std::fs::write(&json_path, format!("{value:#}\n"))
        .map_err(|e| format!("writing {}: {e}", json_path.display()))?;
    let plots = write_plots(&outcome, &a.out)?;
    let md_path = a.out.join("capacity_vs_m.md");
    std::fs::write(&md_path, sweep::capacity_markdown(&outcome))
        .map_err(|e| format!("writing {}: {e}", md_path.display()))?;
    let id = record(&value, &a.db)?;
    eprintln!(
        "wrote {}, {} and {} plot(s) to {}; recorded as run {id} in {}",
        json_path.display(),
        md_path.display(),
        plots,
        a.out.display(),
        a.db.display()
    );
    if a.json {
        takt_measure::output::emit(&doc, true).map_err(|e| format!("writing the results: {e}"))
    } else {
        takt_measure::output::print(&sweep::render(&outcome))
            .map_err(|e| format!("writing the results: {e}"))
    }
}

/// The first ramp rate per target: takt and the null relay (the
/// generator's ceiling) start high, Kamailio lower.
pub(crate) fn start_rates() -> Vec<(String, f64)> {
    vec![
        ("takt".into(), 8_000.0),
        ("kamailio".into(), 2_000.0),
        ("null-relay".into(), 8_000.0),
    ]
}

/// A sweep's (or tune's) progress on `takt_measure::progress`: a bar per
/// search with its current point, its trials and the whole run's time
/// left (mean trial time so far × trials still expected), and one for
/// Table III's pairs; lines instead of bars when stderr is no terminal.
pub(crate) struct SweepBars {
    shown: Progress,
    trial_s: f64,
    started: Instant,
    searches: HashMap<usize, Stage>,
    pairs: Option<Stage>,
}

impl SweepBars {
    /// Bars on `shown`; a trial is expected to take `trial_s` seconds.
    pub(crate) fn new(shown: Progress, trial_s: f64) -> Self {
        SweepBars {
            shown,
            trial_s,
            started: Instant::now(),
            searches: HashMap::new(),
            pairs: None,
        }
    }

    /// Shows one event of [`sweep::run`].
    pub(crate) fn on(&mut self, p: &sweep::Progress<'_>) {
        match p {
            sweep::Progress::Searches {
                first,
                labels,
                trials_each,
            } => {
                // the searches take turns: each lasts about the whole round
                let est =
                    Duration::from_secs_f64(self.trial_s * (*trials_each * labels.len()) as f64);
                for (i, l) in labels.iter().enumerate() {
                    self.searches.insert(first + i, self.shown.stage(l, est));
                }
            }
            sweep::Progress::Pairs { trials } => {
                for (_, s) in self.searches.drain() {
                    s.finish();
                }
                self.pairs = Some(self.shown.stage(
                    "Table III pairs",
                    Duration::from_secs_f64(self.trial_s * *trials as f64),
                ));
            }
            sweep::Progress::Trial(t) => {
                let per = self.started.elapsed().as_secs_f64() / t.done.max(1) as f64;
                let left = per * t.expected.saturating_sub(t.done) as f64;
                let point = format!(
                    "{:.0} cps {} drop {:.4}{}",
                    t.rate_cps,
                    t.phase,
                    t.drop_rate,
                    if t.generator_bound {
                        " (generator-bound)"
                    } else {
                        ""
                    }
                );
                let tail = format!(
                    "trial {}/{} · run ~{} left",
                    t.case_done,
                    t.case_expected,
                    fmt_secs(left)
                );
                if t.phase == "pair" {
                    if let Some(s) = &self.pairs {
                        s.step(&format!("{} {point} · {tail}", t.label));
                    }
                } else if let Some(s) = self.searches.get(&t.case) {
                    s.step(&format!("{point} · {tail}"));
                    if t.case_done >= t.case_expected {
                        if let Some(s) = self.searches.remove(&t.case) {
                            s.finish();
                        }
                    }
                }
            }
        }
    }

    /// Closes what is still open: `interrupted` or `done`.
    pub(crate) fn finish(self, interrupted: bool) {
        let how = if interrupted { "interrupted" } else { "done" };
        let mut open: Vec<(usize, Stage)> = self.searches.into_iter().collect();
        open.sort_by_key(|(i, _)| *i);
        for (_, s) in open {
            s.finish_with(how);
        }
        if let Some(s) = self.pairs {
            s.finish_with(how);
        }
    }
}

/// A stop flag and a generator cancel that Ctrl-C sets.
pub(crate) fn stop_on_ctrl_c() -> Result<(Arc<AtomicBool>, Cancel), String> {
    let stop = Arc::new(AtomicBool::new(false));
    let cancel = Cancel::default();
    let (s, c) = (stop.clone(), cancel.clone());
    // Release pairs with the Acquire load before each trial.
    ctrlc::set_handler(move || {
        s.store(true, Ordering::Release);
        c.cancel();
    })
    .map_err(|e| format!("installing the Ctrl-C handler: {e}"))?;
    Ok((stop, cancel))
}

/// Stores the document as a run in `db`; returns its ID.
pub(crate) fn record(value: &serde_json::Value, db: &Path) -> Result<i64, String> {
    let meta = takt_records::RunMeta::from_documents(std::slice::from_ref(value))
        .map_err(|e| format!("records: {e}"))?;
    takt_records::record(db, &meta, std::slice::from_ref(value))
        .map_err(|e| format!("records: {e}"))
}

/// The generator's configuration for sweeps and tunes.
pub(crate) fn gen_config(
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

/// The paper's published capacities versus m, dashed.
fn paper_series() -> Vec<Series> {
    [
        ("paper baseline (OpenSIPS, CFS)", 0usize),
        ("paper enhanced", 1),
    ]
    .into_iter()
    .map(|(label, pick)| Series {
        label: label.into(),
        points: paper::ENHANCED_GRANULARITY_US
            .iter()
            .filter_map(|(m, _)| {
                let (b, e) = paper::capacity(*m)?;
                Some((*m as f64, if pick == 0 { b } else { e }))
            })
            .collect(),
        dashed: true,
    })
    .collect()
}

/// Capacity versus m for every server and profile in one chart (see
/// [`write_plots`]).
fn capacity_chart(s: &SweepOutcome) -> Chart<'static> {
    let servers: Vec<_> = s.cases.iter().filter(|c| !c.key.is_ceiling()).collect();
    let mut series: Vec<Series> = Vec::new();
    for c in &servers {
        let label = if servers.iter().any(|o| {
            o.key.target == c.key.target && (o.key.mode, o.key.model) != (c.key.mode, c.key.model)
        }) {
            format!(
                "{} {} {} {}",
                c.key.target, c.key.mode, c.key.model, c.key.profile
            )
        } else {
            format!("{} {}", c.key.target, c.key.profile)
        };
        let Some(cap) = c.result.capacity else {
            continue;
        };
        let point = (c.key.workers as f64, cap.cps());
        match series.iter_mut().find(|se| se.label == label) {
            Some(se) => se.points.push(point),
            None => series.push(Series {
                label,
                points: vec![point],
                dashed: false,
            }),
        }
    }
    let ms: Vec<f64> = servers.iter().map(|c| c.key.workers as f64).collect();
    let (lo, hi) = ms.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), m| {
        (lo.min(*m), hi.max(*m))
    });
    for c in s.cases.iter().filter(|c| c.key.is_ceiling()) {
        if let (Some(cap), true) = (c.result.capacity, lo <= hi) {
            series.push(Series {
                label: format!("generator ceiling, {}", c.key.profile),
                points: vec![(lo, cap.cps()), (hi, cap.cps())],
                dashed: true,
            });
        }
    }
    capacity_vs_m_chart(series)
}

/// The capacity-versus-m chart of `series`, with the paper's series beside
/// them, every series in order of m.
fn capacity_vs_m_chart(mut series: Vec<Series>) -> Chart<'static> {
    series.extend(paper_series());
    for se in &mut series {
        se.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    Chart {
        x_desc: "worker threads m",
        y_desc: "1%-drop capacity (calls/s)",
        x_scale: Scale::Linear,
        y_scale: Scale::Linear,
        x_bytes: false,
        x_names: Vec::new(),
        series,
    }
}

fn file_name(parts: &[&str]) -> String {
    let s: Vec<String> = parts
        .iter()
        .map(|p| {
            p.chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                .collect()
        })
        .collect();
    format!("{}.svg", s.join("-"))
}

fn save(dir: &Path, name: String, chart: &Chart<'_>) -> Result<usize, String> {
    let Some(svg) = chart.to_svg() else {
        return Ok(0);
    };
    let path = dir.join(name);
    std::fs::write(&path, svg).map_err(|e| format!("writing {}: {e}", path.display()))?;
    Ok(1)
}

/// `capacity_vs_m.svg`: capacity versus m, one curve per (target,
/// profile) of every server, the paper's published capacities dashed and
/// each generator ceiling as a dashed level; then per (target, mode,
/// model) the same with its profiles only, and per profile drop rate,
/// K_rcv and T_sip versus cps over every counted trial, one curve per m
/// (for a ceiling, the null relay, the drop rate only). Returns how many
/// files were written.
pub(crate) fn write_plots(s: &SweepOutcome, dir: &Path) -> Result<usize, String> {
    let mut n = save(dir, "capacity_vs_m.svg".into(), &capacity_chart(s))?;
    let mut groups: Vec<(&str, &str, &str)> = Vec::new();
    for c in &s.cases {
        let g = (c.key.target, c.key.mode, c.key.model);
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    for g in groups {
        let cases: Vec<_> = s
            .cases
            .iter()
            .filter(|c| (c.key.target, c.key.mode, c.key.model) == g)
            .collect();
        let mut profiles: Vec<&str> = Vec::new();
        for c in &cases {
            if !profiles.contains(&c.key.profile.as_str()) {
                profiles.push(&c.key.profile);
            }
        }
        let series: Vec<Series> = profiles
            .iter()
            .map(|p| Series {
                label: format!("{} {p}", g.0),
                points: cases
                    .iter()
                    .filter(|c| c.key.profile == *p)
                    .filter_map(|c| Some((c.key.workers as f64, c.result.capacity?.cps())))
                    .collect(),
                dashed: false,
            })
            .collect();
        let ceiling = cases.iter().any(|c| c.key.is_ceiling());
        n += if ceiling {
            0
        } else {
            save(
                dir,
                file_name(&["capacity-vs-m", g.0, g.1, g.2]),
                &capacity_vs_m_chart(series),
            )?
        };
        for p in &profiles {
            let of_p: Vec<_> = cases.iter().filter(|c| c.key.profile == *p).collect();
            let per_m = |f: &dyn Fn(&takt_siplab::sweep::CaseOutcome) -> Vec<(f64, f64)>| {
                of_p.iter()
                    .map(|c| Series {
                        label: format!("m = {}", c.key.workers),
                        points: f(c),
                        dashed: false,
                    })
                    .collect::<Vec<_>>()
            };
            // per trial (all phases): the curves over the whole range
            let trials =
                |c: &takt_siplab::sweep::CaseOutcome,
                 f: &dyn Fn(&takt_siplab::sweep::PointExtra) -> Option<f64>| {
                    let mut v: Vec<(f64, f64)> = c
                        .result
                        .trials
                        .iter()
                        .zip(&c.extras)
                        .filter(|(t, _)| !t.rerun)
                        .filter_map(|(t, e)| Some((t.rate_cps, f(e)?)))
                        .collect();
                    v.sort_by(|a, b| a.0.total_cmp(&b.0));
                    v
                };
            let drop = per_m(&|c| {
                let mut v: Vec<(f64, f64)> = c
                    .result
                    .trials
                    .iter()
                    .filter(|t| !t.rerun && t.outcome.sent > 0)
                    .map(|t| (t.rate_cps, t.outcome.drop_rate()))
                    .collect();
                v.sort_by(|a, b| a.0.total_cmp(&b.0));
                v
            });
            let k = per_m(&|c| trials(c, &|e| e.k_rcv_us.or(e.k_rcv_est_us)));
            let t = per_m(&|c| trials(c, &|e| e.t_sip_us));
            let est = g.0 != "takt";
            for (what, y, series, scale) in [
                ("drop", "drop rate (lost / sent)", drop, Scale::Linear),
                (
                    "k_rcv",
                    if est {
                        "K_rcv (µs, Little's-law estimate)"
                    } else {
                        "K_rcv (µs)"
                    },
                    k,
                    Scale::Log,
                ),
                ("t_sip", "T_sip (µs)", t, Scale::Linear),
            ] {
                if ceiling && what != "drop" {
                    continue;
                }
                n += save(
                    dir,
                    file_name(&[what, g.0, g.1, g.2, p]),
                    &Chart {
                        x_desc: "offered load (calls/s)",
                        y_desc: y,
                        x_scale: Scale::Linear,
                        y_scale: scale,
                        x_bytes: false,
                        x_names: Vec::new(),
                        series,
                    },
                )?;
            }
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_grow_with_the_axes() {
        let quick = estimate(8, 4, 2, 2, 3, 2.2);
        assert!(quick > 120.0 && quick < 400.0, "{quick}");
        let full = estimate(32, 8, 4, 5, 5, 3.7);
        assert!(full > 4.0 * quick, "{full}");
    }

    #[test]
    fn profile_lists_keep_their_parameters() {
        let p = parse_profiles(&[
            "default,rr:prio=10,timeslice=5ms,other:nice=-5,slice=200us".into(),
            "base-slice=3ms".into(),
        ])
        .unwrap();
        let s: Vec<String> = p.iter().map(|p| p.to_string()).collect();
        assert_eq!(
            s,
            [
                "default",
                "rr:prio=10,timeslice=5ms",
                "other:nice=-5,slice=200us",
                "base-slice=3ms"
            ]
        );
        let e = parse_profiles(&["default,fast".into()]).unwrap_err();
        assert!(e.contains("fast"), "{e}");
    }

    #[test]
    fn plot_file_names_are_plain() {
        assert_eq!(
            file_name(&["drop", "takt", "stateful", "shared", "other:slice=1ms"]),
            "drop-takt-stateful-shared-other-slice-1ms.svg"
        );
    }
}
