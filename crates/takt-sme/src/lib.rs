//! # takt-sme: Synchronous Message Exchange networks
//!
//! SME models clocked hardware in software: a network of **processes**
//! connected by **buses** of typed **signals** runs in lock-step **cycles**.
//! In each cycle every process steps once, reading only the values
//! committed at the end of the previous cycle; then every written value is
//! committed at once. Results therefore never depend on the order in which
//! processes run, which is what lets takt step them on many threads and
//! still produce bit-identical results.
//!
//! ## The model
//! - Networks are built at run time with a [`NetworkBuilder`] and are fixed
//!   once [built](NetworkBuilder::build).
//! - A [`Process`] keeps private state and has a `step`. It reads signals
//!   through [`In`] ports and writes through [`Out`] ports it claims with
//!   [`Ports`] while being added.
//! - A signal may have any `Copy + Send + Sync + Debug` type. It has exactly
//!   one writer (checked when building: [`BuildError::TwoWriters`],
//!   [`BuildError::NoWriter`]) and any number of readers.
//! - Writing a signal twice in a cycle is [`RunError::DoubleWrite`], naming
//!   the process, bus and signal. An unwritten signal follows its
//!   [`Policy`]: back to its default ([`Policy::Reset`], the SME rule), keep
//!   its value ([`Policy::Hold`]) or become undefined ([`Policy::Undefined`]).
//! - Initial values ([`SignalDef::initial`]) apply before cycle 0.
//! - [Debug mode](Network::set_debug) tracks undefined values and reports a
//!   read of one ([`RunError::UndefinedRead`]).
//! - A run stops at a cycle boundary: after the given number of cycles, or
//!   at the end of a cycle in which a process called [`Io::halt`].
//! - Every check stays on in release builds.
//!
//! ## Executors
//! See [`exec`] for the table. In short: [`ExecutorKind::Sequential`] is the
//! reference, [`ExecutorKind::Static`] is the fastest when processes cost
//! the same, [`ExecutorKind::Balanced`] when they differ but are stable,
//! [`ExecutorKind::Stealing`] and [`ExecutorKind::Worklist`] when they vary.
//! [`ExecutorKind::ThesisStatic`] and [`ExecutorKind::ThesisWorklist`] are
//! the C++SME thesis's own partitioning and claiming, kept to reproduce its
//! figures.
//!
//! ## Why it is fast
//! - All processes of one Rust type live in one contiguous array and are
//!   stepped by one monomorphized loop: no indirect call per process.
//! - Signal values live in two flat buffers (last cycle's, this cycle's);
//!   committing a cycle is switching buffers, so one barrier per cycle is
//!   enough, and the per-signal work of the commit is done by the thread
//!   that stepped the writer, in parallel.
//! - Double writes are caught with per-signal generation stamps, which never
//!   need clearing.
//!
//! ## Traces
//! [`Trace`] records every cycle as CSV or VCD (GTKWave); see [`trace`].
//!
//! ## Errors
//! [`Error`] is the crate's one error type. Each operation returns the
//! narrower type whose every variant can happen there — [`BuildError`]
//! from building, [`RunError`] from running, [`UnknownExecutor`] from
//! parsing an [`ExecutorKind`] — and each converts into [`Error`] with `?`.
//! Every variant carries what went wrong as values (names, cycle, thread
//! counts, the kernel's [`takt_sched::SchedError`]), not as text.
//!
//! ## Example
//! ```
//! use takt_sme::{Executor, ExecutorKind, In, Io, NetworkBuilder, Out, Process, SignalDef};
//!
//! struct Incr { input: In<i64>, output: Out<i64> }
//! impl Process for Incr {
//!     fn step(&mut self, io: &mut Io<'_>) {
//!         let v = io.read(self.input);
//!         io.write(&self.output, v + 1);
//!     }
//! }
//!
//! let mut b = NetworkBuilder::new();
//! let n = 100;
//! let sigs: Vec<_> = (0..n)
//!     .map(|i| {
//!         let bus = b.bus(format!("ring{i}")).unwrap();
//!         b.signal(bus, "value", SignalDef::new(0i64)).unwrap()
//!     })
//!     .collect();
//! for i in 0..n {
//!     let (input, output) = (sigs[(i + n - 1) % n], sigs[i]);
//!     b.process(format!("p{i}"), |ports| Incr {
//!         input: ports.input(input),
//!         output: ports.output(output),
//!     })
//!     .unwrap();
//! }
//! let mut net = b.build().unwrap();
//! net.run(&Executor::new(ExecutorKind::Static, 2), 1000).unwrap();
//! assert_eq!(net.value(sigs[0]), 1000);
//! ```
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

/// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod arena;
mod builder;
mod error;
pub mod exec;
mod network;
mod process;
mod signal;
pub mod trace;

pub use builder::{Bus, NetworkBuilder, Ports, ProcessId};
pub use error::{BuildError, Error, RunError, UnknownExecutor};
pub use exec::{Executor, ExecutorKind, RunReport, DEFAULT_REBALANCE_EVERY, MAX_THREADS};
pub use network::Network;
pub use process::{Io, Process};
pub use signal::{In, Initial, Out, Policy, Signal, SignalDef, SignalInfo, VcdKind};
pub use trace::{Trace, TraceBuffer, TraceFormat};
