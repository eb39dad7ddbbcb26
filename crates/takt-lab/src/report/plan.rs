//! The plan of `takt report`: which stages run on this machine, with
//! which command, for how long, and what the plan reduced below the
//! suites' own parameters.
//!
//! Each stage is the suite's own command (`takt machine --json`, `takt bench
//! agents --peers --json`, ...), run by [`runner`](super::runner) as a
//! child process of the same `takt` binary. Both plans answer the
//! scheduler question of the SIP paper (capacity versus worker threads
//! and scheduler profiles, [`Stage::Sweep`]) in a report-sized sweep, measure
//! SIP capacity of every server in both modes and run a short robustness
//! stage. The quick plan stays under 10 minutes on a 2-core machine, the
//! default plan under 45; both are checked by this module's tests against
//! a 2-vCPU host ([`Host`]) set up by `scripts/setup-report.sh`.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use takt_host::peers::Peer;
use takt_machine::{Config as MachineConfig, Family, Mode as MachineMode};
use takt_measure::progress::Progress;
use takt_measure::suite::Suite;
use takt_report::input::Stage;
use takt_siplab::search::Step;
use takt_siplab::sweep::{Preset, SweepOptions};
use takt_siplab::torture::{Scenario, TortureOptions};

use crate::orchestration_error::OrchestrationError;

/// The machine families of the quick plan: `net` and `fs` are left out to
/// keep the stage near 60 s.
const QUICK_MACHINE_FAMILIES: [Family; 9] = [
    Family::Timer,
    Family::Loop,
    Family::Call,
    Family::Syscall,
    Family::Create,
    Family::Ctxsw,
    Family::Latency,
    Family::Bandwidth,
    Family::Pagefault,
];

/// The SME benchmarks of the quick plan.
const QUICK_SME: [&str; 3] = ["compute_ring", "uneven", "sync_cost"];

/// The largest SME thread count of the quick plan: every executor runs at
/// every count up to it, so on a many-core machine the stage would grow
/// with the cores.
const QUICK_SME_THREADS: usize = 4;

/// `takt sip capacity --quick`'s trial window and repetitions per grid
/// point (the default plan's), and the quick plan's: 0.25 s of calls
/// (5,000 calls at 20,000 cps), 2 repetitions.
const CAPACITY_WINDOW: Duration = Duration::from_millis(1_000);
const CAPACITY_REPS: u32 = 3;
const QUICK_CAPACITY_WINDOW: Duration = Duration::from_millis(250);
const QUICK_CAPACITY_REPS: u32 = 2;

/// The scheduler study's worker counts m in the default plan (the quick
/// plan keeps `takt sip sweep --quick`'s 2 and 16).
const SWEEP_WORKERS: &str = "2,4,8,16";

/// The scheduler study's profiles in the default plan: the sweep's own
/// default (`default`, the paper's `server`, its derived `enhanced`)
/// without `batch`; the quick plan keeps `--quick`'s default and
/// enhanced.
const SWEEP_PROFILES: &str = "default,server,enhanced";

/// Seconds of calls per sweep trial in the default plan and the quick
/// one.
const SWEEP_WINDOW: &str = "0.5";
const QUICK_SWEEP_WINDOW: &str = "0.25";

/// The robustness stage's scenarios: overload (2x and 1.5x the capacity,
/// then half of it) and garbage during live calls.
const ROBUSTNESS_SCENARIOS: &str = "overload,garbage";

/// The robustness stage's CPU quota on the server, CPUs: the generator
/// offers twice the capacity of a server held to it on any machine.
const ROBUSTNESS_CPU_LIMIT: &str = "0.5";

/// The stages the plan runs, in plan order: the default of `--only`.
/// Every stage is in the plan (the scheduler study and the robustness
/// stage in report-sized versions of their suites).
pub fn planned_stages() -> Vec<Stage> {
    Stage::ALL.to_vec()
}

/// An `--only` list: stages the plan runs, comma-separated, parsed into
/// plan order (duplicates kept once).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Only(pub Vec<Stage>);

impl FromStr for Only {
    type Err = OrchestrationError;

    fn from_str(list: &str) -> Result<Only, OrchestrationError> {
        let mut out = Vec::new();
        for part in list.split(',').filter(|p| !p.trim().is_empty()) {
            let name = part.trim();
            let stage = planned_stages()
                .into_iter()
                .find(|s| s.name() == name)
                .ok_or_else(|| OrchestrationError::UnknownStage(name.to_string()))?;
            out.push(stage);
        }
        if out.is_empty() {
            return Err(OrchestrationError::UnknownStage(list.to_string()));
        }
        out.sort();
        out.dedup();
        Ok(Only(out))
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// The quick plan (under 10 minutes on a 2-core machine).
    pub quick: bool,
    /// Stages to run (plan order); the others are "not in --only".
    pub only: Vec<Stage>,
    /// The `takt` binary the stages run.
    pub takt: PathBuf,
    /// Whether that binary has the agents peers compiled in.
    pub peers: bool,
    /// The report directory (machine plots go in a subdirectory).
    pub out: PathBuf,
    /// The command line of the run, for the report.
    pub command: String,
    /// Where the stages' progress goes (bars on a terminal, lines in a
    /// log); each stage's child process's stderr lines are its steps.
    pub progress: Progress,
}

/// One stage as planned.
#[derive(Clone, Debug, PartialEq)]
pub struct StagePlan {
    /// The stage.
    pub stage: Stage,
    /// Arguments after `takt` (`["bench", "sme", "--quick", "--json"]`).
    pub args: Vec<String>,
    /// Expected wall time.
    pub estimate: Duration,
    /// Why it cannot run here (a missing tool), if it cannot.
    pub unavailable: Option<String>,
}

impl StagePlan {
    /// The command as a user would type it.
    pub fn command(&self) -> String {
        let mut s = String::from("takt");
        for a in &self.args {
            s.push(' ');
            s.push_str(a);
        }
        s
    }
}

/// What the plan's estimates depend on about the machine it runs on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Host {
    /// CPUs the suites may use (`available_parallelism`).
    pub cpus: usize,
    /// One SME compute step here (the SME suite's `compute_step`).
    pub sme_step: Duration,
    /// Whether Kamailio is installed (a Debian package).
    pub kamailio: bool,
    /// Whether OpenSIPS is built (by `scripts/peers.sh`, into the peers'
    /// cache).
    pub opensips: bool,
    /// Whether the run may put a server under a CPU quota (root: cgroup
    /// `cpu.max`).
    pub root: bool,
}

impl Host {
    /// This machine, measured.
    pub fn this_machine() -> Host {
        Host {
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            sme_step: takt_bench_sme::compute_step(),
            kamailio: find_tool("kamailio").is_some() || Path::new(KAMAILIO).is_file(),
            opensips: takt_host::peers::locate(Peer::OpenSips).is_ok(),
            // SAFETY: geteuid(2) only reads the process's credentials.
            root: unsafe { libc::geteuid() } == 0,
        }
    }
}

/// Where Debian installs Kamailio (`sbin` is not on every `PATH`).
const KAMAILIO: &str = "/usr/sbin/kamailio";

/// Finds `tool` on `PATH`.
pub fn find_tool(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// The plan for this machine: every stage of `opts.only` with its command
/// and estimate, and the lines saying what the plan reduced below the
/// suites' own parameters.
pub fn plan(opts: &Options) -> (Vec<StagePlan>, Vec<String>) {
    plan_on(opts, &Host::this_machine())
}

/// [`plan`] for `host`.
pub fn plan_on(opts: &Options, host: &Host) -> (Vec<StagePlan>, Vec<String>) {
    let mut stages = Vec::new();
    let mut reductions = Vec::new();
    for &stage in &opts.only {
        let p = match stage {
            Stage::Machine => {
                let plots = opts.out.join("machine-plots");
                let plots = plots.to_string_lossy().into_owned();
                // Both plans run the machine suite's quick mode: its
                // default (about 7 minutes) would take a third of the
                // default plan's 20.
                let only = opts.quick.then(|| QUICK_MACHINE_FAMILIES.to_vec());
                let mut cfg = MachineConfig::new(MachineMode::Quick);
                cfg.only = only.clone();
                let mut args = strings(&["machine", "--json", "--quick"]);
                if let Some(only) = only {
                    args.push("--only".into());
                    args.push(only.iter().map(|f| f.name()).collect::<Vec<_>>().join(","));
                    reductions.push(
                        "machine: takt machine --quick without the net and fs families (their ~25 s would \
                         push the stage past 60 s on a 2-core machine)"
                            .into(),
                    );
                } else {
                    reductions.push(
                        "machine: takt machine --quick, every family; the default sizes and repetitions \
                         (takt machine, about 7 minutes) are left to a run of their own"
                            .into(),
                    );
                }
                args.push("--out".into());
                args.push(plots);
                StagePlan {
                    stage,
                    args,
                    estimate: cfg.expected_duration(),
                    unavailable: None,
                }
            }
            Stage::Agents => {
                let runs = if opts.quick { 5 } else { 10 };
                let mut args = strings(&["bench", "agents", "--quick", "--json"]);
                if opts.peers {
                    args.push("--peers".into());
                }
                args.push("--runs".into());
                args.push(runs.to_string());
                if !opts.quick {
                    reductions.push(
                        "agents: the quick sizes with 10 runs per row; the full suite with peers \
                         (takt bench agents --peers, about 15 min) is left to a run of its own"
                            .into(),
                    );
                }
                let est = takt_bench_agents::expected_duration(&takt_bench_agents::Options {
                    quick: true,
                    peers: opts.peers,
                    spin: takt_sched::SpinBudget::NONE,
                    thread: takt_sched::ThreadSpec::new("estimate"),
                    runs,
                    idle_latency: None,
                });
                StagePlan {
                    stage,
                    args,
                    estimate: est.mul_f64(runs as f64 / 5.0),
                    unavailable: None,
                }
            }
            Stage::Sme => {
                let runs = if opts.quick { 5 } else { 10 };
                // Quick: the benchmarks the scaling model and the thesis
                // comparison need most; sync_ring and weak_scaling take
                // more than half of the suite's --quick time.
                let only: Vec<String> = if opts.quick {
                    QUICK_SME.iter().map(|s| s.to_string()).collect()
                } else {
                    Vec::new()
                };
                let max_threads = if opts.quick {
                    host.cpus.min(QUICK_SME_THREADS)
                } else {
                    host.cpus
                };
                let bench = takt_bench_sme::SmeBench {
                    quick: true,
                    max_threads,
                    spec: takt_sched::ThreadSpec::new("estimate"),
                    spin: takt_sched::SpinBudget::NONE,
                    reps: takt_measure::sampler::Repetitions { warmup: 1, runs },
                    only: only.clone(),
                    peers: false,
                };
                let mut args = strings(&[
                    "bench",
                    "sme",
                    "--quick",
                    "--json",
                    "--runs",
                    &runs.to_string(),
                ]);
                for o in &only {
                    args.push("--only".into());
                    args.push(o.clone());
                }
                if max_threads < host.cpus {
                    args.push("--threads".into());
                    args.push(max_threads.to_string());
                    reductions.push(format!(
                        "sme: threads 1..={max_threads} of the {} CPUs (every executor runs at every \
                         thread count, so the stage would grow with the cores)",
                        host.cpus
                    ));
                }
                reductions.push(if opts.quick {
                    "sme: takt bench sme --quick with compute_ring, uneven and sync_cost only (sync_ring and \
                     weak_scaling are left out to keep the stage near 60 s)"
                        .into()
                } else {
                    "sme: the quick cycle counts with 10 runs per configuration; the thesis's full \
                     parameters (takt bench sme, over an hour) are left to a run of their own"
                        .into()
                });
                StagePlan {
                    stage,
                    args,
                    estimate: bench.estimate_with_step(host.sme_step),
                    unavailable: None,
                }
            }
            Stage::Sip => {
                let sipp = find_tool("sipp");
                let mut load = takt_siplab::load::LoadPlan::new(sipp.clone().unwrap_or_default());
                let mut args = strings(&["sip", "load", "--json"]);
                if opts.quick {
                    load = load.quick();
                    args.push("--quick".into());
                }
                StagePlan {
                    stage,
                    args,
                    // SIPp's start-up and the hot reference are within it:
                    // the quick stage took 41 s (expected 53 s) on the
                    // 2-vCPU development machine under load.
                    estimate: load.expected(),
                    unavailable: sipp.is_none().then(|| {
                        "install SIPp (Debian package sip-tester; scripts/setup.sh installs it)"
                            .into()
                    }),
                }
            }
            Stage::Capacity => capacity_stage(opts, host, &mut reductions),
            Stage::Sweep => sweep_stage(opts, host, &mut reductions),
            Stage::Robustness => robustness_stage(opts, host, &mut reductions),
            Stage::Remote => {
                let remote = takt_bench_remote::Options {
                    quick: opts.quick,
                    runs: 5,
                    url: None,
                    thread: takt_sched::ThreadSpec::new("estimate"),
                    spin: takt_sched::SpinBudget::DEFAULT,
                    paced_holds: Vec::new(),
                    one_way: false,
                    responder: None,
                    ractor_peer: None,
                    only: None,
                    in_flight: Vec::new(),
                };
                let mut args = strings(&["bench", "remote", "--json"]);
                if opts.quick {
                    args.push("--quick".into());
                }
                StagePlan {
                    stage,
                    args,
                    estimate: takt_bench_remote::expected_duration(&remote),
                    unavailable: find_tool("nats-server").is_none().then(|| {
                        "install nats-server (Debian package nats-server; scripts/setup.sh installs it)"
                            .into()
                    }),
                }
            }
        };
        stages.push(p);
    }
    (stages, reductions)
}

/// The SIP servers beside takt that the stage `stage` runs on this
/// machine, from `wanted` (`kamailio`, `opensips`); each missing one is
/// left out with a reduction line saying why.
fn servers(
    host: &Host,
    stage: &str,
    wanted: &[&'static str],
    reductions: &mut Vec<String>,
) -> Vec<&'static str> {
    let mut out = Vec::new();
    for &w in wanted {
        match w {
            "kamailio" if !host.kamailio => reductions.push(format!(
                "{stage}: Kamailio is not installed (Debian package kamailio; scripts/setup.sh \
                 installs it), so the stage runs without it"
            )),
            "opensips" if !host.opensips => reductions.push(format!(
                "{stage}: OpenSIPS is not built (`bash scripts/peers.sh opensips` builds it into \
                 target/peers; scripts/setup.sh runs it), so the stage runs without it"
            )),
            _ => out.push(w),
        }
    }
    out
}

/// `--target T` for each target.
fn target_args(targets: &[&str]) -> Vec<String> {
    targets
        .iter()
        .flat_map(|t| ["--target".to_string(), t.to_string()])
        .collect()
}

/// The capacity stage: every target in both modes (the null relay, the
/// generator's ceiling, stateless only), with `takt sip capacity
/// --quick`'s search; the quick plan's trials are half as long.
fn capacity_stage(opts: &Options, host: &Host, reductions: &mut Vec<String>) -> StagePlan {
    let mut targets = vec!["takt"];
    targets.extend(servers(
        host,
        "capacity",
        &["kamailio", "opensips"],
        reductions,
    ));
    targets.push("null-relay");
    let mut args = strings(&["sip", "capacity", "--json", "--quick"]);
    args.extend(target_args(&targets));
    let (window, reps) = if opts.quick {
        args.extend(strings(&["--window", "0.25", "--reps", "2"]));
        reductions.push(
            "capacity: the quick search with 0.25 s trials and 2 repetitions per grid point; takt \
             sip capacity's default (3 s trials, 5 repetitions) takes about 20 minutes"
                .into(),
        );
        (QUICK_CAPACITY_WINDOW, QUICK_CAPACITY_REPS)
    } else {
        reductions.push(
            "capacity: the quick search (1 s trials, 3 repetitions per grid point); takt sip \
             capacity's default (3 s trials, 5 repetitions) takes about 20 minutes"
                .into(),
        );
        (CAPACITY_WINDOW, CAPACITY_REPS)
    };
    // both modes, but the null relay has none
    let cases = 2 * (targets.len() - 1) + 1;
    StagePlan {
        stage: Stage::Capacity,
        args,
        estimate: capacity_estimate(cases, window, reps),
        unavailable: None,
    }
}

/// The scheduler study: `takt sip sweep` with the quick search (1
/// re-bracketing, 2 repetitions per grid point, 3 Table III pairs) and
/// 0.5 s trials. Default plan: m 2, 4, 8, 16 and the profiles default,
/// server, enhanced for takt, Kamailio and OpenSIPS; quick plan: m 2 and
/// 16, default and enhanced, for takt and one real server (OpenSIPS, the
/// paper's, where it is built).
fn sweep_stage(opts: &Options, host: &Host, reductions: &mut Vec<String>) -> StagePlan {
    let mut targets = vec!["takt"];
    let plots = opts.out.join("sweep").to_string_lossy().into_owned();
    let mut args = strings(&["sip", "sweep", "--json", "--quick"]);
    let (workers, profiles): (Vec<usize>, Vec<String>) = if opts.quick {
        let real = servers(host, "sweep", &["opensips"], &mut Vec::new());
        let real = if real.is_empty() {
            servers(host, "sweep", &["kamailio"], &mut Vec::new())
        } else {
            real
        };
        if real.is_empty() {
            reductions.push(
                "sweep: neither OpenSIPS nor Kamailio is here (scripts/setup.sh installs both), so \
                 takt alone"
                    .into(),
            );
        }
        targets.extend(real);
        reductions.push(format!(
            "sweep: m 2 and 16, profiles default and enhanced, stateful, {} beside takt, 0.25 s \
             trials (takt sip sweep: m 2, 4, 8, 16, four profiles, takt and Kamailio, 2 s trials, \
             5 repetitions and pairs: about an hour)",
            targets.get(1).copied().unwrap_or("no server")
        ));
        (vec![2, 16], vec!["default".into(), "enhanced".into()])
    } else {
        targets.extend(servers(
            host,
            "sweep",
            &["kamailio", "opensips"],
            reductions,
        ));
        args.extend(strings(&[
            "--workers",
            SWEEP_WORKERS,
            "--profile",
            SWEEP_PROFILES,
        ]));
        reductions.push(
            "sweep: m 2, 4, 8, 16, profiles default, server and enhanced, stateful, with the quick \
             search (2 repetitions per grid point, 3 Table III pairs) and 0.5 s trials (takt sip \
             sweep's default: 2 s trials, 5 repetitions and pairs, batch too: about an hour)"
                .into(),
        );
        (
            vec![2, 4, 8, 16],
            SWEEP_PROFILES.split(',').map(String::from).collect(),
        )
    };
    let window = if opts.quick {
        QUICK_SWEEP_WINDOW
    } else {
        SWEEP_WINDOW
    };
    args.extend(target_args(&targets));
    args.extend(strings(&["--window", window, "--out", &plots]));
    let sweep = SweepOptions {
        targets: targets.iter().map(|t| t.to_string()).collect(),
        workers,
        profiles,
        threshold: 0.01,
        step: Step::Fraction(0.03),
        window: window.parse().ok(),
        max_cps: 200_000.0,
        ports: 16,
        preset: Preset::Quick,
        ..SweepOptions::default()
    };
    let (estimate, unavailable) = match sweep.resolve() {
        Ok(s) => (s.estimate(), None),
        Err(e) => (
            Duration::ZERO,
            Some(format!("the sweep's plan is refused: {e}")),
        ),
    };
    StagePlan {
        stage: Stage::Sweep,
        args,
        estimate,
        unavailable,
    }
}

/// The robustness stage: takt under overload (2x and 1.5x its capacity,
/// then half of it) and garbage during live calls, held to half a CPU
/// so that the generator can offer twice its capacity, with `takt sip
/// torture --quick`'s durations; stateful in the quick plan, both modes
/// in the default one.
fn robustness_stage(opts: &Options, host: &Host, reductions: &mut Vec<String>) -> StagePlan {
    let modes = if opts.quick {
        "stateful"
    } else {
        "stateless,stateful"
    };
    let args = strings(&[
        "sip",
        "torture",
        "--json",
        "--quick",
        "--target",
        "takt",
        "--mode",
        modes,
        "--scenario",
        ROBUSTNESS_SCENARIOS,
        "--cpu-limit",
        ROBUSTNESS_CPU_LIMIT,
    ]);
    reductions.push(format!(
        "robustness: takt {}, overload and garbage with takt sip torture --quick's durations (6 s \
         per overload level); the full scenarios (60 s levels, the UAS restart, the 30 minute \
         soak) are left to a run of their own",
        if opts.quick {
            "stateful"
        } else {
            "in both modes"
        }
    ));
    let torture = TortureOptions {
        target: "takt".into(),
        modes: modes.split(',').filter_map(|m| m.parse().ok()).collect(),
        scenarios: ROBUSTNESS_SCENARIOS
            .split(',')
            .filter_map(|s| s.parse::<Scenario>().ok())
            .collect(),
        model: takt_sip::transport::WorkerModel::Shared,
        workers: 4,
        cpu_limit: ROBUSTNESS_CPU_LIMIT.parse().ok(),
        period_us: takt_siplab::torture::cgroup::DEFAULT_PERIOD_US,
        capacity: None,
        uas: ([127, 0, 0, 1], 0).into(),
        cpus: None,
        sched: None,
        gen_cpus: None,
        gen_sched: None,
        ports: 16,
        takt_args: Vec::new(),
        flood_connections: 10_000,
        soak_secs: None,
        quick: true,
        fleet: None,
        listen: None,
    };
    let (estimate, refused) = match torture.resolve() {
        Ok(s) => (s.estimate(), None),
        Err(e) => (
            Duration::ZERO,
            Some(format!("the torture run is refused: {e}")),
        ),
    };
    StagePlan {
        stage: Stage::Robustness,
        args,
        estimate,
        unavailable: refused.or_else(|| {
            (!host.root).then(|| {
                "the CPU quota of the overload scenario needs root (cgroup cpu.max); run as root"
                    .into()
            })
        }),
    }
}

/// Trials one capacity search takes with `reps` repetitions per grid
/// point: a ramp from 1,000 cps doubling to a capacity near 20,000 cps
/// (6), a bisection to 3% (5), and a grid of 5 rates.
fn capacity_trials(reps: u32) -> u32 {
    6 + 5 + 5 * reps
}

/// A trial's wall time beyond its window: the generator's 0.5 s drain
/// (`takt sip capacity --quick`), its set-up and the server's sampling.
/// The quick plan's seven cases with 0.5 s windows and 3 repetitions,
/// the fixed-rate CPU per call included, took 187 s on the 2-vCPU
/// development machine under load (this model: 196 s).
const CAPACITY_TRIAL_OVERHEAD: Duration = Duration::from_millis(500);

/// The capacity stage's expected duration for `cases` cases of trials
/// with `window` of calls and `reps` repetitions per grid point (each
/// case also starts and stops its server).
fn capacity_estimate(cases: usize, window: Duration, reps: u32) -> Duration {
    ((window + CAPACITY_TRIAL_OVERHEAD) * capacity_trials(reps) + Duration::from_secs(2))
        * cases as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(quick: bool, only: &str) -> Options {
        Options {
            quick,
            only: only.parse::<Only>().unwrap().0,
            takt: PathBuf::from("/nonexistent/takt"),
            peers: true,
            out: PathBuf::from("takt-report"),
            command: "takt report".into(),
            progress: Progress::hidden(),
        }
    }

    /// A 2-vCPU development machine set up by scripts/setup.sh: a compute
    /// step measures 32 µs there in a release build (44 µs in a debug
    /// one); Kamailio installed, OpenSIPS built, run as root.
    const DEV: Host = Host {
        cpus: 2,
        sme_step: Duration::from_micros(35),
        kamailio: true,
        opensips: true,
        root: true,
    };

    const ALL: &str = "machine,agents,sme,sip,capacity,sweep,robustness,remote";

    fn stage(stages: &[StagePlan], s: Stage) -> &StagePlan {
        stages.iter().find(|p| p.stage == s).unwrap()
    }

    fn per_stage(stages: &[StagePlan]) -> String {
        stages
            .iter()
            .map(|s| format!("{:>5.0} s  {}\n", s.estimate.as_secs_f64(), s.command()))
            .collect()
    }

    #[test]
    fn only_lists_parse_in_plan_order() {
        assert_eq!(
            "sip,machine,sip".parse::<Only>().unwrap().0,
            vec![Stage::Machine, Stage::Sip]
        );
        assert!(matches!(
            "machine,gpu".parse::<Only>(),
            Err(OrchestrationError::UnknownStage(s)) if s == "gpu"
        ));
        assert!(",".parse::<Only>().is_err());
        assert_eq!(ALL.parse::<Only>().unwrap().0, planned_stages());
        assert_eq!(planned_stages(), Stage::ALL);
    }

    #[test]
    fn only_accepts_the_scheduler_study_and_robustness() {
        assert_eq!(
            "robustness,sweep".parse::<Only>().unwrap().0,
            vec![Stage::Sweep, Stage::Robustness]
        );
        let (stages, _) = plan_on(&opts(true, "sweep,robustness"), &DEV);
        assert_eq!(stages.len(), 2);
        assert!(stages.iter().all(|s| s.unavailable.is_none()), "{stages:?}");
    }

    #[test]
    fn the_quick_plan_fits_its_budget() {
        let (stages, reductions) = plan_on(&opts(true, ALL), &DEV);
        assert_eq!(stages.len(), 8);
        let m = &stages[0];
        assert!(
            m.command()
                .starts_with("takt machine --json --quick --only timer,"),
            "{}",
            m.command()
        );
        assert!(m.estimate <= Duration::from_secs(75), "{:?}", m.estimate);
        assert!(stages[1].args.contains(&"--peers".to_string()));
        assert_eq!(
            stages[2].command(),
            "takt bench sme --quick --json --runs 5 --only compute_ring --only uneven --only sync_cost"
        );
        let total: Duration = stages.iter().map(|s| s.estimate).sum();
        // `takt report --quick`'s budget is 10 minutes on this host.
        assert!(
            total < Duration::from_secs(600),
            "{total:?}\n{}",
            per_stage(&stages)
        );
        assert!(!reductions.is_empty());
        assert!(!reductions.iter().any(|r| r.starts_with("sme: threads")));
        // every target in both modes, with short trials
        assert_eq!(
            stage(&stages, Stage::Capacity).command(),
            "takt sip capacity --json --quick --target takt --target kamailio --target opensips \
             --target null-relay --window 0.25 --reps 2"
        );
        // the scheduler study, small: two m, two profiles, one real server
        assert_eq!(
            stage(&stages, Stage::Sweep).command(),
            "takt sip sweep --json --quick --target takt --target opensips --window 0.25 \
             --out takt-report/sweep"
        );
        assert_eq!(
            stage(&stages, Stage::Robustness).command(),
            "takt sip torture --json --quick --target takt --mode stateful \
             --scenario overload,garbage --cpu-limit 0.5"
        );
        assert_eq!(
            stage(&stages, Stage::Remote).command(),
            "takt bench remote --json --quick"
        );
        assert!(stages.iter().all(|s| s.unavailable.is_none()), "{stages:?}");
        assert!(
            stages.iter().all(|s| s.estimate > Duration::ZERO),
            "{stages:?}"
        );
    }

    #[test]
    fn the_default_plan_fits_its_budget() {
        let (stages, _) = plan_on(&opts(false, ALL), &DEV);
        assert_eq!(stages.len(), 8);
        let total: Duration = stages.iter().map(|s| s.estimate).sum();
        assert!(
            total < Duration::from_secs(45 * 60),
            "{total:?}\n{}",
            per_stage(&stages)
        );
        assert_eq!(
            stage(&stages, Stage::Capacity).command(),
            "takt sip capacity --json --quick --target takt --target kamailio --target opensips \
             --target null-relay"
        );
        assert_eq!(
            stage(&stages, Stage::Sweep).command(),
            "takt sip sweep --json --quick --workers 2,4,8,16 --profile default,server,enhanced \
             --target takt --target kamailio --target opensips --window 0.5 --out takt-report/sweep"
        );
        assert_eq!(
            stage(&stages, Stage::Robustness).command(),
            "takt sip torture --json --quick --target takt --mode stateless,stateful \
             --scenario overload,garbage --cpu-limit 0.5"
        );
        assert!(stages.iter().all(|s| s.unavailable.is_none()), "{stages:?}");
        // the study is the larger part of the plan's time
        let sweep = stage(&stages, Stage::Sweep).estimate;
        assert!(sweep > Duration::from_secs(10 * 60), "{sweep:?}");
    }

    #[test]
    fn a_missing_server_is_left_out_with_a_reduction() {
        let bare = Host {
            kamailio: false,
            opensips: false,
            ..DEV
        };
        let (stages, reductions) = plan_on(&opts(false, "capacity,sweep"), &bare);
        assert_eq!(
            stages[0].command(),
            "takt sip capacity --json --quick --target takt --target null-relay"
        );
        assert!(
            stages[1].command().contains("--target takt --window"),
            "{}",
            stages[1].command()
        );
        for (stage, server) in [
            ("capacity", "Kamailio"),
            ("capacity", "OpenSIPS"),
            ("sweep", "Kamailio"),
            ("sweep", "OpenSIPS"),
        ] {
            assert!(
                reductions
                    .iter()
                    .any(|r| r.starts_with(&format!("{stage}: {server} is not"))),
                "{stage} {server}: {reductions:#?}"
            );
        }
        // fewer cases, less time
        let (full, _) = plan_on(&opts(false, "capacity,sweep"), &DEV);
        assert!(stages[0].estimate < full[0].estimate);
        assert!(stages[1].estimate < full[1].estimate);
        // the quick study falls back to Kamailio without OpenSIPS
        let kam = Host {
            opensips: false,
            ..DEV
        };
        let (stages, _) = plan_on(&opts(true, "sweep"), &kam);
        assert!(
            stages[0]
                .command()
                .contains("--target takt --target kamailio --window"),
            "{}",
            stages[0].command()
        );
    }

    #[test]
    fn robustness_needs_root_for_its_cpu_quota() {
        let user = Host { root: false, ..DEV };
        let (stages, _) = plan_on(&opts(true, "robustness"), &user);
        let why = stages[0].unavailable.as_deref().unwrap_or_default();
        assert!(why.contains("root"), "{why}");
    }

    #[test]
    fn the_quick_plan_does_not_grow_with_the_cores() {
        let many = Host { cpus: 64, ..DEV };
        let (stages, reductions) = plan_on(&opts(true, ALL), &many);
        let (two, _) = plan_on(&opts(true, ALL), &DEV);
        let sme = |s: &[StagePlan]| s[2].estimate;
        assert!(
            sme(&stages) < sme(&two) * 3,
            "{:?} vs {:?}",
            sme(&stages),
            sme(&two)
        );
        assert!(
            stages[2].command().ends_with("--threads 4"),
            "{}",
            stages[2].command()
        );
        assert!(reductions
            .iter()
            .any(|r| r.starts_with("sme: threads 1..=4 of the 64 CPUs")));
    }
}
