//! One takt customer_ring run on one_thread, for instruction and cache-miss
//! counting: `valgrind --tool=cachegrind --cache-sim=yes
//! target/release/examples/agents_ring 50000 100` and the same with twice
//! the tokens; the difference divided by the extra messages (N × tokens)
//! is the cost per message with set-up and tear-down cancelled out.
//!
//! Arguments: `[agents] [tokens]` (default 50000 agents, 100 tokens).

use std::process::ExitCode;

use takt_bench_agents::runs::{customer_ring, RingDispatcher, TaktOpts};
use takt_sched::{SpinBudget, ThreadSpec};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut num = |default: usize| match args.next().map_or(Ok(default), |s| s.parse::<usize>()) {
        Ok(n) if n > 0 => Some(n),
        _ => None,
    };
    let (Some(agents), Some(tokens)) = (num(50_000), num(100)) else {
        eprintln!("usage: agents_ring [agents >= 1] [tokens >= 1]");
        return ExitCode::from(2);
    };
    let opts = TaktOpts {
        spin: SpinBudget::default(),
        thread: ThreadSpec::default(),
    };
    match customer_ring(&opts, RingDispatcher::OneThread, agents, tokens) {
        Ok(s) => {
            println!(
                "{agents} agents, {tokens} tokens: {:.2} ns/msg, registration {:.2} us/agent",
                s.value,
                s.registration_us_per_agent.unwrap_or(f64::NAN)
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("agents_ring: {e}");
            ExitCode::FAILURE
        }
    }
}
