//! A few of `takt bench agents`' takt rows, for a short A/B of two builds
//! without the whole suite: one warm-up run, then `runs` runs of each
//! benchmark named, and per row the median with the smallest and largest
//! run. The rows are the suite's (same functions, same parameters as its
//! full plan for the sizes given).
//!
//! Arguments: `runs bench...`, each bench one of
//! - `states`: process_state_changes, 100,000 messages (send, process ns/msg);
//! - `states_types`: process_state_changes_types, the same with ten types;
//! - `ring_ao:N`: customer_ring on active_obj, N agents, 50 tokens;
//! - `ring_ag:N`: customer_ring on active_group (100 groups), N agents,
//!   100 tokens;
//! - `ring_one:N`: customer_ring on one_thread, N agents, 100 tokens;
//!
//! the rings print ns/msg and registration µs/agent. For example
//! `target/release/examples/agents_seed 9 states ring_ao:100 ring_ag:10000`.

use std::process::ExitCode;

use takt_bench_agents::runs::{
    customer_ring, process_state_changes, process_state_changes_types, RingDispatcher, RunError,
    TaktOpts,
};
use takt_sched::{SpinBudget, ThreadSpec};

/// One run of a benchmark: its two values.
type RunFn = Box<dyn Fn(&TaktOpts) -> Result<(f64, f64), RunError>>;

/// One benchmark of the command line: its label and how to run it once.
struct Bench {
    label: String,
    names: [&'static str; 2],
    run: RunFn,
}

fn parse(arg: &str) -> Option<Bench> {
    let (name, n) = match arg.split_once(':') {
        Some((name, n)) => (name, n.parse::<usize>().ok().filter(|&n| n > 0)?),
        None => (arg, 0),
    };
    let ring = |d: RingDispatcher, tokens: usize| Bench {
        label: format!("customer_ring {} N={n} M={tokens}", d.name()),
        names: ["ns/msg", "registration us/agent"],
        run: Box::new(move |o| {
            customer_ring(o, d, n, tokens)
                .map(|s| (s.value, s.registration_us_per_agent.unwrap_or(f64::NAN)))
        }),
    };
    match (name, n) {
        ("states", 0) => Some(Bench {
            label: "process_state_changes messages=100000".into(),
            names: ["send ns/msg", "process ns/msg"],
            run: Box::new(|o| process_state_changes(o, 100_000)),
        }),
        ("states_types", 0) => Some(Bench {
            label: "process_state_changes_types messages=100000".into(),
            names: ["send ns/msg", "process ns/msg"],
            run: Box::new(|o| process_state_changes_types(o, 100_000)),
        }),
        ("ring_ao", n) if n > 0 => Some(ring(RingDispatcher::ActiveObj, 50)),
        ("ring_ag", n) if n > 0 => Some(ring(RingDispatcher::ActiveGroup { groups: 100 }, 100)),
        ("ring_one", n) if n > 0 => Some(ring(RingDispatcher::OneThread, 100)),
        _ => None,
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runs = args.first().and_then(|r| r.parse::<usize>().ok());
    let benches: Option<Vec<Bench>> = args.iter().skip(1).map(|a| parse(a)).collect();
    let (Some(runs @ 1..), Some(benches)) = (runs, benches) else {
        eprintln!(
            "usage: agents_seed RUNS (states | states_types | ring_ao:N | ring_ag:N | ring_one:N)..."
        );
        return ExitCode::from(2);
    };
    if benches.is_empty() {
        eprintln!("agents_seed: name at least one benchmark");
        return ExitCode::from(2);
    }
    let opts = TaktOpts {
        spin: SpinBudget::default(),
        thread: ThreadSpec::default(),
    };
    for b in &benches {
        let mut vals: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
        for k in 0..=runs {
            match (b.run)(&opts) {
                // Run 0 is the warm-up.
                Ok((x, y)) if k > 0 => {
                    vals[0].push(x);
                    vals[1].push(y);
                }
                Ok(_) => {}
                Err(e) => {
                    eprintln!("agents_seed: {}: {e}", b.label);
                    return ExitCode::FAILURE;
                }
            }
        }
        for (name, v) in b.names.iter().zip(vals.iter_mut()) {
            let m = median(v);
            println!(
                "{}: {name}: median {m:.2} (min {:.2}, max {:.2}, {runs} runs)",
                b.label,
                v[0],
                v[v.len() - 1]
            );
        }
    }
    ExitCode::SUCCESS
}
