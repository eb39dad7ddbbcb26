//! `takt sched`: apply a scheduler setting to a fresh thread and report what
//! the kernel accepted, the clock, and the thread's scheduler statistics.

use clap::Args;
use takt_sched::{clock, ClockSource, ThreadSchedStats};

use crate::args::SchedArgs;

/// `takt sched` flags.
#[derive(Args, Debug)]
pub struct SchedCmd {
    #[command(flatten)]
    sched: SchedArgs,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(cmd: SchedCmd) -> Result<(), String> {
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
