//! Cost of the proxy's message path without sockets: a SIPp-style call
//! (INVITE, 100, 180, 200, ACK, BYE, 200; [`takt_sip::ua::synth`]) through
//! `Proxy::handle` with a sink that only counts bytes. Prints ns per
//! message by kind.
//!
//! `cargo run --release -p takt-sip --example path_cost -- [stateless|stateful] [calls] [cold]`
//!
//! With `cold`, a 16 MiB buffer is written between messages (outside the
//! timed region), evicting the caches the way other processes do between
//! two messages of a live proxy at 1,000 cps: the live T_sip's cache misses,
//! reproducible and without sockets.

use takt_sip::proxy::{Inbound, Mode, Proxy, Scratch, Sink};
use takt_sip::ua::synth;

/// One non-inlined entry per message kind, so that a profiler's inclusive
/// cost of `handle_<kind>` divided by the number of calls is the cost of
/// one message of that kind:
/// `valgrind --tool=callgrind --dump-instr=no target/release/examples/path_cost stateful 2000`
/// then `callgrind_annotate --inclusive=yes callgrind.out.* | grep handle_`.
macro_rules! kinds {
    ($($name:literal => $f:ident),* $(,)?) => {
        $(
            #[inline(never)]
            fn $f(p: &Proxy, inb: &Inbound<'_>, s: &mut Scratch, sink: &mut dyn Sink) {
                // distinct bodies: identical functions would be folded into one
                std::hint::black_box($name);
                std::hint::black_box(p.handle(inb, s, sink));
            }
        )*
        fn by_kind(k: &str, p: &Proxy, inb: &Inbound<'_>, s: &mut Scratch, sink: &mut dyn Sink) {
            match k {
                $($name => $f(p, inb, s, sink),)*
                _ => unreachable!("unknown kind {k}"),
            }
        }
    };
}

kinds! {
    "invite" => handle_invite,
    "100" => handle_100,
    "180" => handle_180,
    "200" => handle_200,
    "ack" => handle_ack,
    "bye" => handle_bye,
    "200bye" => handle_200bye,
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = match args.next().as_deref() {
        Some("stateless") => Mode::Stateless,
        _ => Mode::Stateful,
    };
    let calls: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(20_000);
    let cold = args.next().as_deref() == Some("cold");
    let mut evict = if cold {
        vec![0u64; 2 << 20]
    } else {
        Vec::new()
    };
    // every message built first (the responses carry what a proxy added)
    let msgs = synth::sipp_calls(mode, calls);
    // a fresh proxy for the measured pass, each kind through its own
    // `handle_<kind>` (see `kinds!`)
    let per = synth::time_messages(
        mode,
        &msgs,
        || {
            for (j, w) in evict.iter_mut().enumerate().step_by(8) {
                *w = w.wrapping_add(j as u64);
            }
            std::hint::black_box(&evict);
        },
        by_kind,
    );
    for (k, mut v) in per {
        v.sort_unstable();
        println!(
            "{mode:?} {k:>7}: p50 {:>6} ns  p90 {:>6} ns  p99 {:>6} ns",
            v[v.len() / 2],
            v[v.len() * 9 / 10],
            v[v.len() * 99 / 100]
        );
    }
}
