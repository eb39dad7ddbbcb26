//! Procedure call cost (report §3.3) for 0–7 integer arguments.
//!
//! Each sample times 1000 calls of an `extern "C"`, never-inlined function
//! with `k` arguments (the SysV ABI passes six in registers, the seventh on
//! the stack) and, in the same sample, the identical loop doing the
//! callee's work inline; the difference divided by 1000 is the call's
//! cost. The first argument is the previous call's result, so the calls
//! form a dependency chain (with no arguments the result is folded into
//! the chain by the caller).
//!
//! Three things keep the measurement about calls and stable from one
//! process to the next:
//! - every (argument count, call or inline) pair is its own monomorphic
//!   function whose loop body is 8 straight-line calls: no `match` or
//!   indirect branch in the timed loop, loop overhead amortized;
//! - the callees and the inline baseline pass their result through
//!   [`opaque`], an empty `asm!` block the optimizer cannot see through:
//!   without it LLVM proves `p1` the identity and `p0` constant and
//!   deletes the calls (0.0 ns for 0 and 1 arguments);
//! - the arguments besides the first are distinct values, so the callee's
//!   XOR cannot fold (`v ^ v` is 0).

use std::hint::black_box;
use std::time::Duration;

use crate::kinds;
use crate::stats::{ticks_ns, Estimate};
use crate::timer::pin_current;
use crate::Ctx;

/// Calls per bracket.
const INNER: u64 = 1000;
/// Calls per loop iteration (straight-line).
const UNROLL: u64 = 8;

/// `r`, through an empty `asm!` block: costs no instruction, and the
/// compiler knows nothing about the value that comes out.
#[inline(always)]
fn opaque(mut r: u64) -> u64 {
    // SAFETY: the template is a comment; it reads and writes only `r`'s
    // register, touches no memory and no stack.
    unsafe { core::arch::asm!("/* {0} */", inout(reg) r, options(nomem, nostack)) };
    r
}

#[inline(never)]
extern "C" fn p0() -> u64 {
    opaque(0)
}
#[inline(never)]
extern "C" fn p1(a: u64) -> u64 {
    opaque(a)
}
#[inline(never)]
extern "C" fn p2(a: u64, b: u64) -> u64 {
    opaque(a ^ b)
}
#[inline(never)]
extern "C" fn p3(a: u64, b: u64, c: u64) -> u64 {
    opaque(a ^ b ^ c)
}
#[inline(never)]
extern "C" fn p4(a: u64, b: u64, c: u64, d: u64) -> u64 {
    opaque(a ^ b ^ c ^ d)
}
#[inline(never)]
extern "C" fn p5(a: u64, b: u64, c: u64, d: u64, e: u64) -> u64 {
    opaque(a ^ b ^ c ^ d ^ e)
}
#[inline(never)]
extern "C" fn p6(a: u64, b: u64, c: u64, d: u64, e: u64, f: u64) -> u64 {
    opaque(a ^ b ^ c ^ d ^ e ^ f)
}
#[inline(never)]
#[allow(clippy::too_many_arguments)]
extern "C" fn p7(a: u64, b: u64, c: u64, d: u64, e: u64, f: u64, g: u64) -> u64 {
    opaque(a ^ b ^ c ^ d ^ e ^ f ^ g)
}

/// The loop-invariant arguments 2–7: distinct, unknown to the compiler.
type Args = [u64; 6];

/// One step of the chain: `$call` with the previous result as the first
/// argument, or the same work inline.
macro_rules! step {
    (0, call, $x:ident, $v:ident) => {
        $x ^= p0()
    };
    (0, inline, $x:ident, $v:ident) => {
        $x ^= opaque(0)
    };
    (1, call, $x:ident, $v:ident) => {
        $x = p1($x)
    };
    (1, inline, $x:ident, $v:ident) => {
        $x = opaque($x)
    };
    (2, call, $x:ident, $v:ident) => {
        $x = p2($x, $v[0])
    };
    (2, inline, $x:ident, $v:ident) => {
        $x = opaque($x ^ $v[0])
    };
    (3, call, $x:ident, $v:ident) => {
        $x = p3($x, $v[0], $v[1])
    };
    (3, inline, $x:ident, $v:ident) => {
        $x = opaque($x ^ $v[0] ^ $v[1])
    };
    (4, call, $x:ident, $v:ident) => {
        $x = p4($x, $v[0], $v[1], $v[2])
    };
    (4, inline, $x:ident, $v:ident) => {
        $x = opaque($x ^ $v[0] ^ $v[1] ^ $v[2])
    };
    (5, call, $x:ident, $v:ident) => {
        $x = p5($x, $v[0], $v[1], $v[2], $v[3])
    };
    (5, inline, $x:ident, $v:ident) => {
        $x = opaque($x ^ $v[0] ^ $v[1] ^ $v[2] ^ $v[3])
    };
    (6, call, $x:ident, $v:ident) => {
        $x = p6($x, $v[0], $v[1], $v[2], $v[3], $v[4])
    };
    (6, inline, $x:ident, $v:ident) => {
        $x = opaque($x ^ $v[0] ^ $v[1] ^ $v[2] ^ $v[3] ^ $v[4])
    };
    (7, call, $x:ident, $v:ident) => {
        $x = p7($x, $v[0], $v[1], $v[2], $v[3], $v[4], $v[5])
    };
    (7, inline, $x:ident, $v:ident) => {
        $x = opaque($x ^ $v[0] ^ $v[1] ^ $v[2] ^ $v[3] ^ $v[4] ^ $v[5])
    };
}

/// A timed function: ns for `INNER` steps of one kind, 8 per iteration.
macro_rules! timed {
    ($name:ident, $k:tt, $how:ident) => {
        #[inline(never)]
        #[allow(unused_variables)]
        fn $name(v: &Args) -> f64 {
            let v = black_box(*v);
            let mut x = black_box(1u64);
            let t0 = crate::stats::start();
            for _ in 0..INNER / UNROLL {
                step!($k, $how, x, v);
                step!($k, $how, x, v);
                step!($k, $how, x, v);
                step!($k, $how, x, v);
                step!($k, $how, x, v);
                step!($k, $how, x, v);
                step!($k, $how, x, v);
                step!($k, $how, x, v);
            }
            let t1 = takt_sched::tsc_end();
            black_box(x);
            ticks_ns(t0, t1)
        }
    };
}

timed!(call0, 0, call);
timed!(inline0, 0, inline);
timed!(call1, 1, call);
timed!(inline1, 1, inline);
timed!(call2, 2, call);
timed!(inline2, 2, inline);
timed!(call3, 3, call);
timed!(inline3, 3, inline);
timed!(call4, 4, call);
timed!(inline4, 4, inline);
timed!(call5, 5, call);
timed!(inline5, 5, inline);
timed!(call6, 6, call);
timed!(inline6, 6, inline);
timed!(call7, 7, call);
timed!(inline7, 7, inline);

/// A timed loop: ns for `INNER` steps.
type Timed = fn(&Args) -> f64;

/// (with the call, inline) for 0..=7 arguments.
const TIMED: [(Timed, Timed); 8] = [
    (call0, inline0),
    (call1, inline1),
    (call2, inline2),
    (call3, inline3),
    (call4, inline4),
    (call5, inline5),
    (call6, inline6),
    (call7, inline7),
];

pub(crate) fn run(ctx: &mut Ctx) {
    let _pin = pin_current(0);
    let ghz = ctx.core_ghz();
    let budget = ctx.budget(Duration::from_millis(800)) * 8;
    // Round-robin over the argument counts, a few samples each per round,
    // until the family's budget is spent: every count is measured across
    // the same stretch of time, so a transient state of the core (another
    // tenant on its SMT sibling, a frequency change) lands on all of them
    // alike instead of on whichever count was running then.
    let args: Args = [7, 9, 11, 13, 17, 19];
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); 8];
    for (s, (with, without)) in samples.iter_mut().zip(TIMED) {
        for _ in 0..5 {
            // Warm-up, discarded.
            std::hint::black_box(with(&args) - without(&args));
        }
        s.reserve(256);
    }
    let cpu0 = takt_sched::process_cpu_time();
    let t0 = std::time::Instant::now();
    while samples[0].len() < 30 || (t0.elapsed() < budget && samples[0].len() < 5000) {
        for (s, (with, without)) in samples.iter_mut().zip(TIMED) {
            for _ in 0..4 {
                let base = without(&args);
                let called = with(&args);
                s.push((called - base) / INNER as f64);
            }
        }
        if crate::interrupted().is_some() {
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
            kinds::PROCEDURE_CALL.sampled("1000 chained calls of an extern \"C\" never-inlined fn (8 per loop iteration) minus the same loop doing the callee's work inline, per call; argument counts measured round-robin",
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
