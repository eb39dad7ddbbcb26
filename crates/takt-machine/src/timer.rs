//! Timer overhead (report §3.1) and the core clock versus the TSC.
//!
//! - `timer_fenced`: `lfence; rdtsc` … `rdtscp; lfence` back to back — the
//!   bracket every other measurement uses ([`takt_sched::tsc_start`]/[`takt_sched::tsc_end`]).
//! - `timer_rdtsc`: two plain `rdtsc`s (no ordering: a lower bound).
//! - `timer_cpuid`: Paoloni's method, `cpuid; rdtsc` … `rdtscp; cpuid`, as
//!   the report used. In a VM every CPUID exits to the hypervisor, so this
//!   measures a VM exit, not a timer; it is kept as a documented comparison.
//! - `timer_instant`: two `std::time::Instant::now()` (vDSO clock_gettime).
//! - `core_frequency`: a chain of dependent register `add`s (one cycle each
//!   on every x86 core) timed with the TSC gives the core clock, which in a
//!   VM differs from the TSC rate: TSC ticks are not cycles.

use std::time::Duration;

use crate::kinds;
use crate::stats::{collect, collect_turns, ticks_ns, Estimate, Turn};
use crate::Ctx;

/// Pairs per sample for the cheap timers.
const PAIRS: u64 = 1000;
/// Pairs per sample for the CPUID method (each pair is two VM exits).
const CPUID_PAIRS: u64 = 50;
/// Dependent adds per iteration of the frequency loop.
const ADDS_PER_ITER: u64 = 100;

/// Runs `n` iterations of 100 dependent `add`s; returns the sum so the
/// chain is live.
#[cfg(target_arch = "x86_64")]
#[inline(never)]
fn add_chain(n: u64) -> u64 {
    let mut x: u64 = 0;
    let mut i = n.max(1);
    // SAFETY: register-only arithmetic and a counted loop; no memory or
    // stack access, flags clobbered (the default for asm!).
    unsafe {
        core::arch::asm!(
            "2:",
            ".rept 100",
            "add {x}, {one}",
            ".endr",
            "dec {i}",
            "jnz 2b",
            x = inout(reg) x,
            i = inout(reg) i,
            one = in(reg) 1u64,
            options(nomem, nostack),
        );
    }
    std::hint::black_box(i);
    x
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(never)]
fn add_chain(n: u64) -> u64 {
    let mut x = 0u64;
    for _ in 0..n * ADDS_PER_ITER {
        x = std::hint::black_box(x + 1);
    }
    x
}

fn rdtsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: rdtsc has no preconditions on x86_64.
    unsafe {
        core::arch::x86_64::_rdtsc()
    }
    #[cfg(not(target_arch = "x86_64"))]
    takt_sched::monotonic_ns()
}

/// Paoloni's opening read: `cpuid; rdtsc`.
#[inline(always)]
fn cpuid_start() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: cpuid leaf 0 and rdtsc have no preconditions.
    unsafe {
        std::hint::black_box(core::arch::x86_64::__cpuid(0));
        core::arch::x86_64::_rdtsc()
    }
    #[cfg(not(target_arch = "x86_64"))]
    takt_sched::monotonic_ns()
}

/// Paoloni's closing read: `rdtscp; cpuid`.
#[inline(always)]
fn cpuid_end() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: rdtscp writes only `aux`; cpuid leaf 0 has no preconditions.
    unsafe {
        let mut aux = 0;
        let t = core::arch::x86_64::__rdtscp(&mut aux);
        std::hint::black_box(core::arch::x86_64::__cpuid(0));
        t
    }
    #[cfg(not(target_arch = "x86_64"))]
    takt_sched::monotonic_ns()
}

/// Mean ns of one pair over `pairs` pairs, each pair's delta summed.
fn pair_sample(pairs: u64, mut pair: impl FnMut() -> u64) -> f64 {
    let mut sum = 0u64;
    for _ in 0..pairs {
        sum += pair();
    }
    let c = takt_sched::clock();
    c.ticks_to_ns(sum) as f64 / pairs as f64
}

/// One sample of the core clock in MHz: 2e5 dependent adds over their time.
fn core_mhz_sample(iters: u64) -> f64 {
    let t0 = crate::stats::start();
    std::hint::black_box(add_chain(std::hint::black_box(iters)));
    let t1 = takt_sched::tsc_end();
    (iters * ADDS_PER_ITER) as f64 / ticks_ns(t0, t1) * 1000.0
}

/// A quick core-clock measurement (median of 15 samples, pinned) for the
/// estimates of families run without `timer`.
pub(crate) fn quick_core_mhz() -> f64 {
    let _pin = pin_current(0);
    let (s, _) = collect(3, 15, 15, Duration::ZERO, || core_mhz_sample(2_000));
    takt_measure::stats::median(&s)
}

pub(crate) fn run(ctx: &mut Ctx) {
    let pin = pin_current(0);
    let budget = ctx.budget(Duration::from_millis(800));

    // The five measurements take turns over the family's budget
    // (`collect_turns`): a slow spell of the host falls on all of them a
    // little rather than on one of them entirely.
    let mut wall = Vec::new();
    let mut sets = collect_turns(
        budget * 5,
        vec![
            Turn::new(3, 15, 400, || core_mhz_sample(2_000)),
            Turn::new(3, 30, 2000, || {
                pair_sample(PAIRS, || {
                    let a = takt_sched::tsc_start();
                    let b = takt_sched::tsc_end();
                    b.wrapping_sub(a)
                })
            }),
            Turn::new(3, 30, 2000, || {
                pair_sample(PAIRS, || {
                    let a = rdtsc();
                    let b = rdtsc();
                    b.wrapping_sub(a)
                })
            }),
            Turn::new(1, 10, 400, || {
                let w0 = takt_sched::tsc_start();
                let v = pair_sample(CPUID_PAIRS, || {
                    let a = cpuid_start();
                    let b = cpuid_end();
                    b.wrapping_sub(a)
                });
                wall.push(ticks_ns(w0, takt_sched::tsc_end()) / CPUID_PAIRS as f64);
                v
            }),
            Turn::new(3, 30, 2000, || {
                pair_sample(PAIRS, || {
                    let a = takt_sched::tsc_start();
                    let i0 = std::time::Instant::now();
                    let i1 = std::time::Instant::now();
                    std::hint::black_box((i0, i1));
                    let b = takt_sched::tsc_end();
                    b.wrapping_sub(a)
                })
            }),
        ],
    )
    .into_iter();
    let mut next = || sets.next().expect("one result per turn");

    // Core frequency first: every cycle estimate below needs it.
    let (samples, cpu) = next();
    let reported = ctx.desc.cpu.reported_mhz;
    ctx.push(
        kinds::CORE_FREQUENCY
            .sampled(
                "a chain of 2e5 dependent register adds (1 cycle each) timed with the fenced TSC",
            )
            .estimate(Estimate::new(
                reported,
                "the `cpu MHz` /proc/cpuinfo reports (in a VM usually the TSC rate)",
            ))
            .extra("tsc_mhz", ctx.desc.tsc_mhz)
            .with_samples(samples, cpu),
    );
    let ghz = ctx.core_ghz();
    let tsc_ghz = (ctx.desc.tsc_mhz / 1000.0).max(1e-3);
    let intel = ctx.desc.cpu.vendor == "GenuineIntel";
    // Documented latencies (Agner Fog's instruction tables): RDTSC ~36
    // cycles on AMD Zen 2/3, ~25 on Intel Skylake; RDTSCP ~64 / ~32.
    let (rdtsc_cyc, rdtscp_cyc) = if intel { (25.0, 32.0) } else { (36.0, 64.0) };
    let vm = ctx.desc.hypervisor.is_some();

    let (s, cpu) = next();
    ctx.push(
        kinds::TIMER_FENCED.sampled("1000 back-to-back `lfence;rdtsc` ... `rdtscp;lfence` pairs per sample, mean delta",
        )
        .estimate(Estimate::new(
            rdtscp_cyc / ghz,
            format!(
                "the pair spans one RDTSCP latency ({rdtscp_cyc} cycles, Agner Fog) at the measured {ghz:.2} GHz core clock"
            ),
        ))
        .extra("ticks_per_ns", tsc_ghz)
        .published(36.5161)
        .with_samples(s, cpu),
    );

    let (s, cpu) = next();
    ctx.push(
        kinds::TIMER_RDTSC
            .sampled("1000 back-to-back plain `rdtsc` pairs per sample (unordered: a lower bound)")
            .estimate(Estimate::new(
                rdtsc_cyc / ghz,
                format!("one RDTSC latency ({rdtsc_cyc} cycles, Agner Fog) at {ghz:.2} GHz"),
            ))
            .with_samples(s, cpu),
    );

    let (s, cpu) = next();
    let wall_ns = takt_measure::stats::median(&wall);
    let why = if vm {
        "each CPUID is a VM exit (~1000 cycles on KVM), but both sit outside the bracket"
    } else {
        "both CPUIDs sit outside the bracket"
    };
    ctx.push(
        kinds::TIMER_CPUID.sampled("Paoloni: `cpuid;rdtsc` ... `rdtscp;cpuid`, 50 pairs per sample (the report's method)",
        )
        .estimate(Estimate::new(
            rdtscp_cyc / ghz,
            format!(
                "{why}: the bracket holds RDTSC..RDTSCP, one RDTSCP latency ({rdtscp_cyc} cycles) at {ghz:.2} GHz"
            ),
        ))
        .extra("wall_ns_per_pair", wall_ns)
        .published(36.5161)
        .with_samples(s, cpu),
    );

    let (s, cpu) = next();
    ctx.push(
        kinds::TIMER_INSTANT.sampled("two `Instant::now()` (vDSO clock_gettime) inside one fenced TSC bracket, 1000 per sample",
        )
        .estimate(Estimate::new(
            2.0 * (rdtscp_cyc + 40.0) / ghz,
            "two vDSO reads, each an RDTSCP plus ~40 cycles of scaling and seqlock",
        ))
        .with_samples(s, cpu),
    );
    drop(pin);
}

/// Pins the calling thread to `cpu` (or the first allowed CPU) until the
/// guard drops, restoring the previous affinity.
pub(crate) fn pin_current(cpu: usize) -> Option<PinGuard> {
    let prev = takt_sched::get_affinity().ok()?;
    let target = if prev.contains(cpu) {
        cpu
    } else {
        prev.iter().next()?
    };
    takt_sched::ThreadSpec::new("machine")
        .with_cpus(takt_sched::CpuSet::single(target))
        .apply_to_current()
        .ok()?;
    Some(PinGuard { prev })
}

/// Restores the affinity [`pin_current`] changed.
#[derive(Debug)]
pub(crate) struct PinGuard {
    prev: takt_sched::CpuSet,
}

impl Drop for PinGuard {
    fn drop(&mut self) {
        let _ = takt_sched::ThreadSpec::new("machine")
            .with_cpus(self.prev.clone())
            .apply_to_current();
    }
}
