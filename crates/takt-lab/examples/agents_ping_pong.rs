//! One takt ping_pong run, for instruction counting:
//! `valgrind --tool=callgrind target/release/examples/agents_ping_pong 1000000`
//! and `... 2000000`; the difference divided by 1M is instructions per
//! message with set-up and tear-down cancelled out.
//!
//! Arguments: `[messages] [cross]` (default 1000000, one thread).

use takt_lab::agents::runs::{ping_pong, TaktOpts};
use takt_sched::{SpinBudget, ThreadSpec};

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = match args.next().map_or(Ok(1_000_000), |s| s.parse::<u64>()) {
        Ok(n) if n > 0 => n,
        _ => {
            eprintln!("usage: agents_ping_pong [messages >= 1] [cross]");
            std::process::exit(2);
        }
    };
    let cross = args.next().is_some_and(|s| s == "cross");
    let opts = TaktOpts {
        spin: SpinBudget::default(),
        thread: ThreadSpec::default(),
    };
    let s = match ping_pong(&opts, n, cross) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("agents_ping_pong: {e}");
            std::process::exit(1);
        }
    };
    println!("{n} messages: {:.2} ns/msg", s.value);
}
