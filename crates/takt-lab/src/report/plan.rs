//! The plan of `takt report`: which stages run on this machine, with
//! which command, for how long, and what the plan reduced below the
//! suites' own parameters.
//!
//! Each stage is the suite's own command (`takt machine --json`, `takt bench
//! agents --peers --json`, ...), run by [`runner`](super::runner) as a
//! child process of the same `takt` binary. The quick plan stays under 5
//! minutes on a 2-core machine, the default plan under 20; both are checked
//! by this module's tests against a 2-vCPU host ([`Host`]).

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use takt_machine::{Config as MachineConfig, Family, Mode as MachineMode};
use takt_measure::progress::Progress;
use takt_report::input::Stage;

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

/// The capacity stage's arguments: the quick search (1 s trials, 3
/// repetitions per grid point) in both plans — its default (3 s trials, 5
/// repetitions, about 15 minutes for the five cases) would take most of
/// the default plan's 20 minutes.
const CAPACITY_ARGS: [&str; 4] = ["sip", "capacity", "--json", "--quick"];

/// The targets, mode and trial window of the quick plan's capacity stage:
/// takt and the null relay stateless (two of the five cases), 0.5 s of
/// calls per trial (10,000 calls at 20,000 cps) — about a minute, so SIP
/// (per-message costs and capacity) stays near two minutes.
const QUICK_CAPACITY: [&str; 8] = [
    "--target",
    "takt",
    "--target",
    "null-relay",
    "--mode",
    "stateless",
    "--window",
    "0.5",
];

/// `takt sip capacity --quick`'s trial window, and the quick plan's.
const CAPACITY_WINDOW: Duration = Duration::from_millis(1_000);
const QUICK_CAPACITY_WINDOW: Duration = Duration::from_millis(500);

/// Whether `takt report` runs `stage` itself; the others
/// ([`Stage::Sweep`], [`Stage::Robustness`]) are long runs of their own
/// whose documents the report shows when it is given them.
pub fn is_planned(stage: Stage) -> bool {
    !matches!(stage, Stage::Sweep | Stage::Robustness)
}

/// The stages the plan runs, in plan order: the default of `--only`.
pub fn planned_stages() -> Vec<Stage> {
    Stage::ALL.into_iter().filter(|s| is_planned(*s)).collect()
}

/// The command that measures a stage the plan does not run.
pub fn own_command(stage: Stage) -> Option<&'static str> {
    match stage {
        Stage::Sweep => Some("takt sip sweep --json"),
        Stage::Robustness => Some("takt sip torture --json"),
        _ => None,
    }
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
}

impl Host {
    /// This machine, measured.
    pub fn this_machine() -> Host {
        Host {
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            sme_step: takt_bench_sme::compute_step(),
        }
    }
}

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
                    // SIPp start-up and the hot reference on top of the calls.
                    estimate: load.expected() + Duration::from_secs(10),
                    unavailable: sipp.is_none().then(|| {
                        "install SIPp (Debian package sip-tester; scripts/setup.sh installs it)"
                            .into()
                    }),
                }
            }
            Stage::Capacity => {
                let mut args = strings(&CAPACITY_ARGS);
                let cases = if opts.quick {
                    args.extend(strings(&QUICK_CAPACITY));
                    reductions.push(
                        "capacity: takt and the null relay, stateless only, 0.5 s trials (takt sip \
                         capacity --quick, all three targets in both modes with 1 s trials, takes about 4 minutes)"
                            .into(),
                    );
                    capacity_cases(&["takt", "null-relay"], false)
                } else {
                    reductions.push(
                        "capacity: the quick search (1 s trials, 3 repetitions per grid point); \
                         takt sip capacity's default (3 s, 5 repetitions) takes about 15 minutes"
                            .into(),
                    );
                    capacity_cases(&["takt", "kamailio", "null-relay"], true)
                };
                let kamailio = !opts.quick && find_tool("kamailio").is_none();
                if kamailio {
                    // the stage runs without it: the document has no Kamailio rows
                    args.extend(strings(&["--target", "takt", "--target", "null-relay"]));
                    reductions.push(
                        "capacity: Kamailio is not installed (Debian package kamailio; \
                         scripts/setup.sh installs it), so only takt and the null relay"
                            .into(),
                    );
                }
                StagePlan {
                    stage,
                    args,
                    estimate: capacity_estimate(
                        if kamailio { 3 } else { cases },
                        if opts.quick {
                            QUICK_CAPACITY_WINDOW
                        } else {
                            CAPACITY_WINDOW
                        },
                    ),
                    unavailable: None,
                }
            }
            Stage::Sweep | Stage::Robustness => continue,
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

/// The capacity cases of `targets` (the null relay is stateless only).
fn capacity_cases(targets: &[&str], both_modes: bool) -> usize {
    targets
        .iter()
        .map(|t| {
            if *t == "null-relay" || !both_modes {
                1
            } else {
                2
            }
        })
        .sum()
}

/// Trials one quick capacity search takes: a ramp from 1,000 cps doubling
/// to a capacity near 20,000 cps (6), a bisection to 3% (5), and a grid of
/// 5 rates × 3 repetitions.
const CAPACITY_TRIALS: u32 = 6 + 5 + 5 * 3;

/// A trial's wall time beyond its window: the generator's 0.5 s drain
/// (`takt sip capacity --quick`), its set-up and the server's sampling
/// (together 1.75 s a trial with 1 s windows on the 2-vCPU development
/// machine: 240 s for the five cases of 26–28 trials).
const CAPACITY_TRIAL_OVERHEAD: Duration = Duration::from_millis(750);

/// The capacity stage's expected duration for `cases` cases of trials
/// with `window` of calls (each case also starts and stops its server).
fn capacity_estimate(cases: usize, window: Duration) -> Duration {
    ((window + CAPACITY_TRIAL_OVERHEAD) * CAPACITY_TRIALS + Duration::from_secs(2)) * cases as u32
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

    /// A 2-vCPU development machine: a compute step measures 32 µs there
    /// in a release build (44 µs in a debug one).
    const DEV: Host = Host {
        cpus: 2,
        sme_step: Duration::from_micros(35),
    };

    const ALL: &str = "machine,agents,sme,sip,capacity,remote";

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
        // the long runs of their own are not the plan's to run
        assert!("sweep".parse::<Only>().is_err());
        assert_eq!(ALL.parse::<Only>().unwrap().0, planned_stages());
    }

    #[test]
    fn the_quick_plan_fits_its_budget() {
        let (stages, reductions) = plan_on(&opts(true, ALL), &DEV);
        assert_eq!(stages.len(), 6);
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
        // `takt report --quick`'s budget is 10 minutes (the same-run peers
        // and, later, the scheduler study cost more than the old 5).
        let per: Vec<_> = stages.iter().map(|s| (s.command(), s.estimate)).collect();
        assert!(total < Duration::from_secs(600), "{total:?} {per:#?}");
        assert!(!reductions.is_empty());
        assert!(!reductions.iter().any(|r| r.starts_with("sme: threads")));
        assert_eq!(
            stages[4].command(),
            "takt sip capacity --json --quick --target takt --target null-relay --mode stateless --window 0.5"
        );
        assert_eq!(stages[5].command(), "takt bench remote --json --quick");
    }

    #[test]
    fn the_default_plan_fits_its_budget() {
        let (stages, _) = plan_on(&opts(false, ALL), &DEV);
        let total: Duration = stages.iter().map(|s| s.estimate).sum();
        assert!(total < Duration::from_secs(20 * 60), "{total:?}");
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
