//! `takt sched`: applies a scheduler setting to a fresh thread (or, with a
//! process id, to every thread of a running process) and reports what the
//! kernel accepted, the clock, the idle states and the thread's scheduler
//! statistics, as text or JSON.
//!
//! This lives here and not in takt-sched: takt-sched is the bottom of the
//! runtimes and depends on nothing of the laboratory, while the report is
//! a presentation (takt-measure's [`Table`] for the process's threads,
//! [`print()`] for a closed stdout); the facts it presents all come from
//! takt-sched's own functions.
//!
//! ```no_run
//! use takt_lab::sched_check::{check, Target};
//! use takt_sched::ThreadSpec;
//!
//! check(&Target::Thread(ThreadSpec::new("takt-check")), false)?;
//! # Ok::<(), takt_lab::OrchestrationError>(())
//! ```

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use takt_measure::output::print;
use takt_measure::table::Table;
use takt_sched::{
    clock, ClockSource, CpuSet, IdleState, KernelSched, ProcessSched, SchedPolicy,
    ThreadSchedStats, ThreadSpec,
};

use crate::OrchestrationError;

/// How long the fresh thread busy-loops while its scheduler statistics
/// are read.
const BUSY: Duration = Duration::from_millis(50);

/// What `takt sched` checks.
#[derive(Clone, Debug)]
pub enum Target {
    /// A fresh thread made by this spec (`--cpus`, `--sched`).
    Thread(ThreadSpec),
    /// Every thread of a running process: `policy` applied to each and read
    /// back, or (`None`) only read.
    Process {
        /// The process.
        pid: i32,
        /// The policy to apply.
        policy: Option<SchedPolicy>,
    },
}

/// Checks `target` and prints the report on stdout (JSON with `json`),
/// warnings on stderr. With a policy applied to a process, a thread that
/// does not report it (other than a clamped slice, a warning) is an error.
pub fn check(target: &Target, json: bool) -> Result<(), OrchestrationError> {
    match target {
        Target::Thread(spec) => {
            let c = ThreadCheck::run(spec)?;
            if json {
                print(&format!("{:#}\n", c.json())).map_err(OrchestrationError::Output)?;
            } else {
                for w in &c.warnings {
                    eprintln!("warning: {w}");
                }
                print(&c.text()).map_err(OrchestrationError::Output)?;
            }
            Ok(())
        }
        Target::Process { pid, policy } => {
            let got = match policy {
                Some(p) => takt_sched::apply_to_process(*pid, *p),
                None => takt_sched::read_process(*pid),
            }
            .map_err(OrchestrationError::Sched)?;
            if json {
                print(&format!("{:#}\n", process_json(&got)))
                    .map_err(OrchestrationError::Output)?;
                return Ok(());
            }
            print(&process_table(&got).render()).map_err(OrchestrationError::Output)?;
            for t in &got.threads {
                for w in &t.warnings {
                    eprintln!("warning: thread {}: {w}", t.tid);
                }
            }
            if got.vanished > 0 {
                eprintln!("warning: {} thread(s) exited while being set", got.vanished);
            }
            match got.applied {
                Some(p) => match mismatched(&got, p) {
                    0 => Ok(()),
                    threads => Err(OrchestrationError::NotApplied {
                        threads,
                        pid: *pid,
                        policy: p,
                    }),
                },
                None => Ok(()),
            }
        }
    }
}

/// What a fresh thread made by a spec got.
#[derive(Debug)]
struct ThreadCheck {
    spec: ThreadSpec,
    warnings: Vec<String>,
    policy: Option<SchedPolicy>,
    cpus: Option<CpuSet>,
    busy: Option<ThreadSchedStats>,
    idle: IdleReport,
}

impl ThreadCheck {
    /// Spawns the thread, busy-loops [`BUSY`] on it and reads it back.
    fn run(spec: &ThreadSpec) -> Result<ThreadCheck, OrchestrationError> {
        let t = spec
            .spawn(|| {
                let before = ThreadSchedStats::current().ok();
                let start = Instant::now();
                while start.elapsed() < BUSY {
                    std::hint::black_box(0u64);
                }
                let after = ThreadSchedStats::current().ok();
                (
                    takt_sched::current_policy().ok(),
                    takt_sched::get_affinity().ok(),
                    before.zip(after).map(|(b, a)| a - b),
                )
            })
            .map_err(OrchestrationError::Sched)?;
        let warnings = t.applied().warnings.iter().map(|w| w.to_string()).collect();
        let (policy, cpus, busy) = t
            .join()
            .map_err(|_| OrchestrationError::Panicked("check"))?;
        Ok(ThreadCheck {
            spec: spec.clone(),
            warnings,
            policy,
            cpus,
            busy,
            idle: IdleReport::read(),
        })
    }

    fn clock_source() -> &'static str {
        match clock().source() {
            ClockSource::Tsc => "tsc",
            ClockSource::Monotonic => "monotonic",
        }
    }

    /// The JSON form.
    fn json(&self) -> Value {
        let idle = &self.idle;
        json!({
            "spec": self.spec.to_string(),
            "policy": self.policy.map(|p| p.to_string()),
            "cpus": self.cpus.as_ref().map(|c| c.to_string()),
            "warnings": self.warnings,
            "clock": {"source": Self::clock_source(), "hz": clock().frequency_hz()},
            "idle": {
                "driver": idle.driver.as_ref().map(|d| &d.0),
                "governor": idle.driver.as_ref().map(|d| &d.1),
                "states": idle.states.iter().map(|s| json!({
                    "name": s.name,
                    "exit_latency_us": s.exit_latency.as_micros() as u64,
                    "disabled": s.disabled,
                })).collect::<Vec<_>>(),
                "latency_limit_us": idle.limit.as_ref().ok().map(|l| l.map(|d| d.as_micros() as u64)),
            },
            "busy_50ms": self.busy.map(|s| json!({
                "run_ns": s.run.as_nanos() as u64, "wait_ns": s.wait.as_nanos() as u64,
                "voluntary": s.voluntary_switches, "involuntary": s.involuntary_switches,
            })),
        })
    }

    /// The text form: one `label: value` line each.
    fn text(&self) -> String {
        let mut out = format!("spec:     {}\n", self.spec);
        out += &format!(
            "policy:   {}\n",
            self.policy.map_or("unknown".into(), |p| p.to_string())
        );
        out += &format!(
            "cpus:     {}\n",
            self.cpus
                .as_ref()
                .map_or("unknown".into(), |c| c.to_string())
        );
        out += &format!(
            "clock:    {} at {:.3} MHz\n",
            Self::clock_source(),
            clock().frequency_hz() / 1e6
        );
        out += &format!("idle:     {}\n", self.idle.line());
        if let Some(s) = self.busy {
            out += &format!(
                "50 ms busy loop: ran {:.1} ms, waited {:.1} ms in runqueue, {} voluntary / {} involuntary switches\n",
                s.run.as_secs_f64() * 1e3,
                s.wait.as_secs_f64() * 1e3,
                s.voluntary_switches,
                s.involuntary_switches
            );
        }
        out
    }
}

/// What idle CPUs may do: the cpuidle driver, CPU 0's states and the
/// idle-latency limit held now (by any process).
#[derive(Debug)]
struct IdleReport {
    driver: Option<(String, String)>,
    states: Vec<IdleState>,
    limit: Result<Option<Duration>, takt_sched::SchedError>,
}

impl IdleReport {
    fn read() -> IdleReport {
        IdleReport {
            driver: takt_sched::idle_driver(),
            states: takt_sched::idle_states(0).unwrap_or_default(),
            limit: takt_sched::idle_latency_limit(),
        }
    }

    /// `haltpoll (governor haltpoll): POLL 0us, haltpoll 1us; limit none`
    fn line(&self) -> String {
        let driver = self
            .driver
            .as_ref()
            .map_or("no cpuidle driver".into(), |(d, g)| {
                format!("{d} (governor {g})")
            });
        let states: Vec<String> = self
            .states
            .iter()
            .map(|s| {
                format!(
                    "{} {}us{}",
                    s.name,
                    s.exit_latency.as_micros(),
                    if s.disabled { " (disabled)" } else { "" }
                )
            })
            .collect();
        let limit = match &self.limit {
            Ok(None) => "none held".into(),
            Ok(Some(d)) => format!("{}us held", d.as_micros()),
            Err(e) => format!("unknown ({e})"),
        };
        format!("{driver}: {}; latency limit {limit}", states.join(", "))
    }
}

/// The threads of a process that do not report `policy` and have no
/// warning (a clamped slice is a warning, printed; anything else the
/// kernel reports differently is a failure).
fn mismatched(got: &ProcessSched, policy: SchedPolicy) -> usize {
    got.threads
        .iter()
        .filter(|t| t.warnings.is_empty() && !takt_sched::matches(&t.after, policy))
        .count()
}

/// The table of `takt sched --pid`: a thread a row, its policy and slice
/// before and now, under a `pid N: K thread(s)` title.
pub fn process_table(got: &ProcessSched) -> Table {
    let slice = |k: &KernelSched| k.slice.map_or("-".to_string(), takt_sched::format_duration);
    let mut t = Table::titled(format!(
        "pid {}: {} thread(s){}",
        got.pid,
        got.threads.len(),
        match got.applied {
            Some(p) => format!(", applied {p}"),
            None => String::new(),
        }
    ))
    .number("tid")
    .text("name")
    .text("before")
    .number("slice")
    .text("now")
    .number("slice");
    for th in &got.threads {
        t.push(vec![
            th.tid.to_string(),
            th.name.clone(),
            th.before.policy.to_string(),
            slice(&th.before),
            th.after.policy.to_string(),
            slice(&th.after),
        ]);
    }
    t
}

/// The JSON form of `takt sched --pid`.
pub fn process_json(got: &ProcessSched) -> Value {
    let k = |k: &KernelSched| {
        json!({
            "policy": k.policy.to_string(),
            "slice_ns": k.slice.map(|s| s.as_nanos() as u64),
        })
    };
    json!({
        "pid": got.pid,
        "applied": got.applied.map(|p| p.to_string()),
        "all_match": got.applied.map(|p| got.all_match(p)),
        "vanished": got.vanished,
        "threads": got.threads.iter().map(|t| json!({
            "tid": t.tid,
            "name": t.name,
            "before": k(&t.before),
            "after": k(&t.after),
            "warnings": t.warnings.iter().map(|w| w.to_string()).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}
