//! # takt-sched: where every takt thread is born
//!
//! The bottom layer of takt. Every thread that takt's agent runtime, SME
//! executors, SIP proxy and laboratory create is made here, from a
//! [`ThreadSpec`], so CPU placement and OS scheduling policy are set,
//! read back and reported the same way everywhere. The crate README
//! states the contract, the command-line syntax and the errors a refused
//! setting gives.
//!
//! ## Placement and policy
//! - [`CpuSet`]: `0-1`, `1`, `0,2-3` — parsed and printed as on the command line.
//! - [`SchedPolicy`]: `other[:nice=N][,slice=D]`, `batch[:nice=N]`, `idle`,
//!   `fifo:prio=P`, `rr:prio=P`. The slice is EEVDF's per-thread request size,
//!   set with `sched_setattr` (`sched_runtime`), clamped by the kernel to 0.1–100 ms.
//! - [`ThreadSpec`]: name + CPU set + policy; [`ThreadSpec::spawn`] creates a
//!   thread and returns only once the kernel has accepted the spec (a refusal
//!   is a [`SchedError::Refused`] naming the setting and errno; a clamped
//!   value is a [`SchedWarning`] carrying the effective value).
//! - [`apply_to_process`]: the same policy on every thread of a running
//!   process (`takt sched --pid`), each read back ([`read_process`] only
//!   reads).
//!
//! ## Waiting
//! A futex wake across cores costs ~11 µs on the machines takt targets, a
//! spin hand-off ~150 ns. Everything that waits spins for a bounded
//! [`SpinBudget`] and then sleeps on a futex:
//! - [`Parker`]: one consumer waits, anyone wakes it (a token prevents lost wake-ups);
//! - [`SpinBarrier`]: a reusable barrier for `n` threads.
//!
//! A waiter spins only while the [`spin_census`] counts no more awake
//! threads (those that park in a [`Parker`]) than the process has CPUs: with
//! more, a spinner would hold a CPU that a thread with work waits for.
//!
//! ## Idle CPUs
//! An idle vCPU that halts gives its core back to the host, and a message
//! that arrives for it waits for an interrupt through the hypervisor and
//! then finds cold caches. [`IdleLatency::hold`] keeps idle CPUs polling
//! (or out of states slower to leave than a limit) for as long as it is
//! held, through the kernel's CPU latency QoS; [`idle_states`] and
//! [`idle_driver`] report what the CPUs may enter.
//!
//! ## Time and accounting
//! - [`clock()`]: the invariant TSC calibrated against `CLOCK_MONOTONIC`
//!   (falls back to it when the TSC is not invariant); [`tsc_start`]/[`tsc_end`]
//!   bracket timed regions with the right fences.
//! - [`ThreadSchedStats`]: run time, runqueue wait and voluntary/involuntary
//!   switches of a thread; [`process_cpu_time`] for the CPU price of a run.
//!
//! ## Platform
//! Linux on x86_64 is the target. Elsewhere the crate builds, with the clock
//! falling back to a monotonic clock, futexes emulated by a mutex and a
//! condition variable, and placement/policy returning
//! [`SchedError::Unsupported`].
//!
//! ## Example
//!
//! Two threads made from specs — placed on every online CPU, the second
//! under `SCHED_BATCH` — meet at a spin-then-park barrier each round:
//!
//! ```
//! use std::sync::Arc;
//! use takt_sched::{CpuSet, SchedPolicy, SpinBarrier, SpinBudget, ThreadSpec};
//!
//! let barrier = Arc::new(SpinBarrier::new(2, SpinBudget::DEFAULT));
//! let spec = ThreadSpec::new("worker").with_cpus(CpuSet::online());
//! let batch: SchedPolicy = "batch".parse()?;
//! let mut threads = Vec::new();
//! for spec in [spec.clone(), spec.with_policy(batch)] {
//!     let b = Arc::clone(&barrier);
//!     // returns once the kernel has accepted the spec (or with its refusal)
//!     threads.push(spec.spawn(move || {
//!         (0..1_000).filter(|_| b.wait().is_leader).count()
//!     })?);
//! }
//! let leads: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
//! assert_eq!(leads, 1_000); // one leader per round
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Model checking
//! Concurrent code imports its atomics from [`sync`]; built with
//! `RUSTFLAGS="--cfg loom"` those become loom's, and the models in
//! `tests/loom_*.rs` check the parker and the barrier.
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod barrier;
mod census;
mod clock;
mod cpuset;
mod error;
mod futex;
mod idle;
mod parker;
mod policy;
mod process;
mod schedstat;
mod spec;
mod spin;
pub mod sync;
mod sys;

pub use barrier::{BarrierWait, SpinBarrier};
pub use census::{spin_census, SpinCensus};
pub use clock::{clock, monotonic_ns, tsc_end, tsc_is_invariant, tsc_start, Clock, ClockSource};
pub use cpuset::{CpuSet, MAX_CPUS};
pub use error::{Errno, SchedError};
pub use futex::Futex;
pub use idle::{
    idle_driver, idle_latency_limit, idle_states, IdleLatency, IdleState, CPU_LATENCY_DEVICE,
};
pub use parker::Parker;
pub use policy::{
    format_duration, parse_duration, SchedPolicy, NICE_MAX, NICE_MIN, RT_PRIO, SLICE_MAX, SLICE_MIN,
};
pub use process::{
    apply_to_process, matches, process_threads, read_process, KernelSched, ProcessSched,
    ThreadSched, MAX_PASSES,
};
pub use schedstat::{process_cpu_time, thread_cpu_time, ThreadSchedStats};
pub use spec::{current_policy, Applied, SchedWarning, TaktThread, ThreadSpec};
pub use spin::SpinBudget;
pub use sys::{get_affinity, gettid, pin_calling_thread};
