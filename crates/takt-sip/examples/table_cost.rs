//! Cost of the stateful proxy's transaction table at a sustained call
//! rate, without sockets: SIPp-style calls ([`takt_sip::ua::synth`])
//! through `Proxy::handle` on a virtual clock at `cps` calls/s, the timer
//! thread's work (`Proxy::tick` and `Proxy::replenish`) run every 10 ms of
//! virtual time on the same thread. Prints, for the calls before the table
//! first holds its bound (262,144 records: growth, new records made) and
//! for those after (full: every new record ends a lingering one), the
//! wall-clock ns per call spent in `handle` and in the timer work.
//!
//! `cargo run --release -p takt-sip --example table_cost -- [calls] [cps]`
//! (default 1,000,000 calls at 20,000 cps: 50 s of virtual time, so the
//! records of the first calls reach their 32-s timers).

use takt_sip::proxy::{Inbound, Mode, Proxy, Scratch, SendError, Sink, Target};
use takt_sip::ua::synth;

/// Counts what the proxy sends.
struct Count(usize);

impl Sink for Count {
    fn send(&mut self, _: &Target, b: &[u8]) -> Result<(), SendError> {
        self.0 += b.len();
        Ok(())
    }
}

/// Calls built at a time.
const SLICE: u64 = 10_000;
/// The timer thread's period.
const TICK_NS: u64 = 10_000_000;

/// ns in `handle` and in the timer work, and the calls they cover.
#[derive(Default)]
struct Phase {
    handle_ns: u64,
    timer_ns: u64,
    calls: u64,
}

impl Phase {
    fn print(&self, name: &str) {
        let per = |ns: u64| ns as f64 / self.calls.max(1) as f64;
        println!(
            "{name:>6}: {:>8} calls  handle {:>7.1} ns/call  timer {:>6.1} ns/call",
            self.calls,
            per(self.handle_ns),
            per(self.timer_ns)
        );
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let calls: u64 = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let cps: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(20_000);
    let mut cfg = synth::proxy_config(Mode::Stateful);
    cfg.max_transactions = 262_144;
    let p = Proxy::new(cfg);
    let clock = takt_sched::clock();
    let mut s = Scratch::new();
    let mut sink = Count(0);
    let (mut growth, mut full) = (Phase::default(), Phase::default());
    let mut next_tick = TICK_NS;
    let mut first = 0;
    while first < calls {
        let n = SLICE.min(calls - first);
        let msgs = synth::sipp_calls_from(Mode::Stateful, first, n);
        for (j, call) in msgs.chunks(7).enumerate() {
            let now = (first + j as u64) * 1_000_000_000 / cps;
            let phase = if p.transactions_hint() < p.transaction_capacity() {
                &mut growth
            } else {
                &mut full
            };
            let t0 = clock.now();
            while next_tick <= now {
                p.tick(next_tick, &mut sink);
                p.replenish();
                next_tick += TICK_NS;
            }
            let t1 = clock.now();
            for m in call {
                let inb = Inbound {
                    bytes: &m.bytes,
                    from: m.from,
                    now,
                    queue_delay_ns: 0,
                };
                std::hint::black_box(p.handle(&inb, &mut s, &mut sink));
            }
            let t2 = clock.now();
            phase.timer_ns += clock.ticks_to_ns(t1.saturating_sub(t0));
            phase.handle_ns += clock.ticks_to_ns(t2.saturating_sub(t1));
            phase.calls += 1;
        }
        first += n;
    }
    std::hint::black_box(sink.0);
    growth.print("growth");
    full.print("full");
    println!(
        "held {} of {}, reclaimed {}",
        p.transactions_hint(),
        p.transaction_capacity(),
        p.transactions_reclaimed_hint()
    );
}
