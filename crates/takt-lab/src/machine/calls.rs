//! Procedure call cost (report §3.3) for 0–7 integer arguments.
//!
//! Each sample times 1000 calls of an `extern "C"`, never-inlined function
//! with `k` arguments (the SysV ABI passes six in registers, the seventh on
//! the stack) and, in the same sample, 1000 iterations of the identical loop
//! that only materializes the arguments; the difference divided by 1000 is
//! the call's cost. The first argument is the previous call's result, so
//! the calls form a dependency chain and their latency shows (with no
//! arguments the call is independent and only its throughput cost shows).

use std::hint::black_box;
use std::time::Duration;

use super::stats::{ticks_ns, Estimate, Sampled};
use super::timer::pin_current;
use super::Ctx;
use crate::result::Better;

/// Calls per bracket.
const INNER: u64 = 1000;

#[inline(never)]
extern "C" fn p0() -> u64 {
    0
}
#[inline(never)]
extern "C" fn p1(a: u64) -> u64 {
    a
}
#[inline(never)]
extern "C" fn p2(a: u64, b: u64) -> u64 {
    a ^ b
}
#[inline(never)]
extern "C" fn p3(a: u64, b: u64, c: u64) -> u64 {
    a ^ b ^ c
}
#[inline(never)]
extern "C" fn p4(a: u64, b: u64, c: u64, d: u64) -> u64 {
    a ^ b ^ c ^ d
}
#[inline(never)]
extern "C" fn p5(a: u64, b: u64, c: u64, d: u64, e: u64) -> u64 {
    a ^ b ^ c ^ d ^ e
}
#[inline(never)]
extern "C" fn p6(a: u64, b: u64, c: u64, d: u64, e: u64, f: u64) -> u64 {
    a ^ b ^ c ^ d ^ e ^ f
}
#[inline(never)]
#[allow(clippy::too_many_arguments)]
extern "C" fn p7(a: u64, b: u64, c: u64, d: u64, e: u64, f: u64, g: u64) -> u64 {
    a ^ b ^ c ^ d ^ e ^ f ^ g
}

/// Ticks→ns of `INNER` calls with `k` arguments (`call = true`) or of the
/// same loop without the call.
#[inline(never)]
fn timed(k: usize, call: bool) -> f64 {
    let v = black_box(7u64);
    let mut x = black_box(1u64);
    let t0 = super::stats::start();
    for _ in 0..INNER {
        // The first argument carries the previous result: the calls form a
        // dependency chain, so their latency is measured, not hidden by
        // out-of-order overlap.
        let (a, b, c, d, e, f, g) = (
            x,
            black_box(v),
            black_box(v),
            black_box(v),
            black_box(v),
            black_box(v),
            black_box(v),
        );
        let r = if !call {
            // Use exactly the arguments the call would take.
            match k {
                0 => 0,
                1 => a,
                2 => a ^ b,
                3 => a ^ b ^ c,
                4 => a ^ b ^ c ^ d,
                5 => a ^ b ^ c ^ d ^ e,
                6 => a ^ b ^ c ^ d ^ e ^ f,
                _ => a ^ b ^ c ^ d ^ e ^ f ^ g,
            }
        } else {
            match k {
                0 => p0(),
                1 => p1(a),
                2 => p2(a, b),
                3 => p3(a, b, c),
                4 => p4(a, b, c, d),
                5 => p5(a, b, c, d, e),
                6 => p6(a, b, c, d, e, f),
                _ => p7(a, b, c, d, e, f, g),
            }
        };
        x = black_box(r);
    }
    let t1 = takt_sched::tsc_end();
    ticks_ns(t0, t1)
}

pub(crate) fn run(ctx: &mut Ctx) {
    let _pin = pin_current(0);
    let ghz = ctx.core_ghz();
    let budget = ctx.budget(Duration::from_millis(800)) * 8;
    // Round-robin over the argument counts, a few samples each per round,
    // until the family's budget is spent: every count is measured across
    // the same stretch of time, so a transient state of the core (another
    // tenant on its SMT sibling, a frequency change) lands on all of them
    // alike instead of on whichever count was running then.
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); 8];
    for (k, s) in samples.iter_mut().enumerate() {
        for _ in 0..5 {
            // Warm-up, discarded.
            std::hint::black_box(timed(k, false) - timed(k, true));
        }
        s.reserve(256);
    }
    let cpu0 = takt_sched::process_cpu_time();
    let t0 = std::time::Instant::now();
    while samples[0].len() < 30 || (t0.elapsed() < budget && samples[0].len() < 5000) {
        for (k, s) in samples.iter_mut().enumerate() {
            for _ in 0..4 {
                let base = timed(k, false);
                let with = timed(k, true);
                s.push((with - base) / INNER as f64);
            }
        }
        if super::cleanup::interrupted().is_some() {
            break;
        }
    }
    let n_all: usize = samples.iter().map(Vec::len).sum();
    let cpu = takt_sched::process_cpu_time()
        .saturating_sub(cpu0)
        .as_secs_f64()
        / n_all.max(1) as f64;
    for (k, samples) in samples.into_iter().enumerate() {
        // call + ret: a predicted call and return cost ~2 cycles of
        // front-end redirect each; arguments in registers are free moves
        // (the caller had them anyway); the 7th goes through the stack
        // (store + load ~4 cycles, plus the stack adjustment).
        let cycles = 4.0 + if k >= 7 { 5.0 } else { 0.0 };
        ctx.push(
            Sampled::new(
                "procedure_call",
                "ns",
                Better::Lower,
                "1000 calls of an extern \"C\" never-inlined fn minus the same loop without the call, per call; argument counts measured round-robin",
            )
            .param("args", k)
            .estimate(Estimate::new(
                cycles / ghz,
                format!(
                    "call + ret ~4 cycles (two predicted redirects); register args free; a 7th arg goes via the stack (+5 cycles); at {ghz:.2} GHz"
                ),
            ))
            .with_samples(samples, cpu),
        );
    }
}
