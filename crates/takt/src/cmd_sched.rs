//! `takt sched`: apply a scheduler setting to a fresh thread and report what
//! the kernel accepted, the clock, and the thread's scheduler statistics;
//! with `--pid`, apply it to (or, without `--sched`, read it from) every
//! thread of a running process.

use clap::Args;
use takt_sched::{clock, ClockSource, ThreadSchedStats};

use crate::args::SchedArgs;

/// `takt sched` flags.
#[derive(Args, Debug)]
pub struct SchedCmd {
    #[command(flatten)]
    sched: SchedArgs,
    /// Apply `--sched` to every thread of this running process and read
    /// each back (without `--sched`: only read them).
    #[arg(long, value_name = "PID", conflicts_with = "cpus")]
    pid: Option<i32>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(cmd: SchedCmd) -> Result<(), String> {
    if let Some(pid) = cmd.pid {
        return run_pid(pid, cmd.sched.sched, cmd.json);
    }
    let spec = cmd.sched.spec("takt-check");
    let t = spec.spawn(|| {
        let before = ThreadSchedStats::current().ok();
        let start = std::time::Instant::now();
        while start.elapsed() < std::time::Duration::from_millis(50) {
            std::hint::black_box(0u64);
        }
        let after = ThreadSchedStats::current().ok();
        (
            takt_sched::current_policy().ok(),
            takt_sched::get_affinity().ok(),
            before.zip(after).map(|(b, a)| a - b),
        )
    });
    let t = t.map_err(|e| e.to_string())?;
    let applied = t.applied().clone();
    let (policy, cpus, stats) = t.join().map_err(|_| "check thread panicked".to_string())?;
    let idle = IdleReport::read();
    let c = clock();
    let src = match c.source() {
        ClockSource::Tsc => "tsc",
        ClockSource::Monotonic => "monotonic",
    };
    if cmd.json {
        let v = serde_json::json!({
            "spec": spec.to_string(),
            "policy": policy.map(|p| p.to_string()),
            "cpus": cpus.map(|c| c.to_string()),
            "warnings": applied.warnings.iter().map(|w| w.to_string()).collect::<Vec<_>>(),
            "clock": {"source": src, "hz": c.frequency_hz()},
            "idle": {
                "driver": idle.driver.as_ref().map(|d| &d.0),
                "governor": idle.driver.as_ref().map(|d| &d.1),
                "states": idle.states.iter().map(|s| serde_json::json!({
                    "name": s.name,
                    "exit_latency_us": s.exit_latency.as_micros() as u64,
                    "disabled": s.disabled,
                })).collect::<Vec<_>>(),
                "latency_limit_us": idle.limit.as_ref().ok().map(|l| l.map(|d| d.as_micros() as u64)),
            },
            "busy_50ms": stats.map(|s| serde_json::json!({
                "run_ns": s.run.as_nanos() as u64, "wait_ns": s.wait.as_nanos() as u64,
                "voluntary": s.voluntary_switches, "involuntary": s.involuntary_switches,
            })),
        });
        println!("{v:#}");
        return Ok(());
    }
    for w in &applied.warnings {
        eprintln!("warning: {w}");
    }
    println!("spec:     {spec}");
    println!(
        "policy:   {}",
        policy.map_or("unknown".into(), |p| p.to_string())
    );
    println!(
        "cpus:     {}",
        cpus.map_or("unknown".into(), |c| c.to_string())
    );
    println!("clock:    {src} at {:.3} MHz", c.frequency_hz() / 1e6);
    println!("idle:     {}", idle.line());
    if let Some(s) = stats {
        println!(
            "50 ms busy loop: ran {:.1} ms, waited {:.1} ms in runqueue, {} voluntary / {} involuntary switches",
            s.run.as_secs_f64() * 1e3,
            s.wait.as_secs_f64() * 1e3,
            s.voluntary_switches,
            s.involuntary_switches
        );
    }
    Ok(())
}

/// What idle CPUs may do: the cpuidle driver, CPU 0's states and the
/// idle-latency limit held now (by any process).
struct IdleReport {
    driver: Option<(String, String)>,
    states: Vec<takt_sched::IdleState>,
    limit: Result<Option<std::time::Duration>, String>,
}

impl IdleReport {
    fn read() -> IdleReport {
        IdleReport {
            driver: takt_sched::idle_driver(),
            states: takt_sched::idle_states(0).unwrap_or_default(),
            limit: takt_sched::idle_latency_limit().map_err(|e| e.to_string()),
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

/// `takt sched --pid PID [--sched POLICY]`: a table of the process's
/// threads (or JSON), warnings for clamped slices and vanished threads.
fn run_pid(pid: i32, policy: Option<takt_sched::SchedPolicy>, json: bool) -> Result<(), String> {
    let got = match policy {
        Some(p) => takt_sched::apply_to_process(pid, p),
        None => takt_sched::read_process(pid),
    }
    .map_err(|e| e.to_string())?;
    if json {
        println!("{:#}", process_json(&got));
        return Ok(());
    }
    let slice =
        |k: &takt_sched::KernelSched| k.slice.map_or("-".to_string(), takt_sched::format_duration);
    println!(
        "pid {pid}: {} thread(s){}",
        got.threads.len(),
        match got.applied {
            Some(p) => format!(", applied {p}"),
            None => String::new(),
        }
    );
    println!(
        "{:>8}  {:<16}  {:<24} {:>9}  {:<24} {:>9}",
        "tid", "name", "before", "slice", "now", "slice"
    );
    for t in &got.threads {
        println!(
            "{:>8}  {:<16}  {:<24} {:>9}  {:<24} {:>9}",
            t.tid,
            t.name,
            t.before.policy.to_string(),
            slice(&t.before),
            t.after.policy.to_string(),
            slice(&t.after)
        );
        for w in &t.warnings {
            eprintln!("warning: thread {}: {w}", t.tid);
        }
    }
    if got.vanished > 0 {
        eprintln!("warning: {} thread(s) exited while being set", got.vanished);
    }
    if let Some(p) = got.applied {
        // a clamped slice is a warning (printed above); anything else the
        // kernel reports differently is a failure
        let off = got
            .threads
            .iter()
            .filter(|t| t.warnings.is_empty() && !takt_sched::matches(&t.after, p))
            .count();
        if off > 0 {
            return Err(format!(
                "{off} thread(s) of pid {pid} do not report {p} (see the table)"
            ));
        }
    }
    Ok(())
}

/// The JSON form of `takt sched --pid`.
pub(crate) fn process_json(got: &takt_sched::ProcessSched) -> serde_json::Value {
    let k = |k: &takt_sched::KernelSched| {
        serde_json::json!({
            "policy": k.policy.to_string(),
            "slice_ns": k.slice.map(|s| s.as_nanos() as u64),
        })
    };
    serde_json::json!({
        "pid": got.pid,
        "applied": got.applied.map(|p| p.to_string()),
        "all_match": got.applied.map(|p| got.all_match(p)),
        "vanished": got.vanished,
        "threads": got.threads.iter().map(|t| serde_json::json!({
            "tid": t.tid,
            "name": t.name,
            "before": k(&t.before),
            "after": k(&t.after),
            "warnings": t.warnings.iter().map(|w| w.to_string()).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}
