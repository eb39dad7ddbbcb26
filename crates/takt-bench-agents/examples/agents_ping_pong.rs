//! One takt ping_pong run, for instruction counting:
//! `valgrind --tool=callgrind target/release/examples/agents_ping_pong 1000000`
//! and `... 2000000`; the difference divided by 1M is instructions per
//! message with set-up and tear-down cancelled out.
//!
//! Arguments: `[messages] [one_thread|thread_per_agent|two_workers]
//! [balls in flight]` (default 1000000, one_thread, 1).

use std::process::ExitCode;

use takt_bench_agents::placement::Placement;
use takt_bench_agents::runs::{ping_pong, TaktOpts};
use takt_sched::{SpinBudget, ThreadSpec};

/// Bad arguments: the message on stderr, exit status 2.
fn usage(msg: &str) -> ExitCode {
    eprintln!("{msg}");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let n: u64 = match args.next().map_or(Ok(1_000_000), |s| s.parse::<u64>()) {
        Ok(n) if n > 0 => n,
        _ => return usage("usage: agents_ping_pong [messages >= 1] [placement]"),
    };
    let placement = match args.next() {
        None => Placement::OneThread,
        Some(name) => match Placement::ALL.into_iter().find(|p| p.name() == name) {
            Some(p) => p,
            None => {
                return usage(&format!(
                    "agents_ping_pong: unknown placement {name:?}: expected one_thread, thread_per_agent or two_workers"
                ))
            }
        },
    };
    let in_flight: u64 =
        match args.next().map_or(Ok(1), |s| s.parse::<u64>()) {
            Ok(k) if (1..=n).contains(&k) => k,
            _ => return usage(
                "usage: agents_ping_pong [messages] [placement] [balls in flight, 1..=messages]",
            ),
        };
    let opts = TaktOpts {
        spin: SpinBudget::default(),
        thread: ThreadSpec::default(),
    };
    let s = match ping_pong(&opts, n, in_flight, placement) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("agents_ping_pong: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "{n} messages, {in_flight} in flight, {placement}: {:.2} ns/msg, {:.1}% crossed threads, {:.4} wake-ups/msg",
        s.value,
        s.crossed * 100.0,
        s.wakeups_per_msg
    );
    ExitCode::SUCCESS
}
