//! # takt-lab: the laboratory's orchestration
//!
//! The library above the benchmark suites: what the `takt` binary calls to
//! plan, run and record the laboratory's work. The suites themselves are
//! crates of their own, each a [`Suite`](takt_measure::suite::Suite):
//!
//! - `takt-bench-agents`: `takt bench agents [--peers]`;
//! - `takt-bench-sme`: `takt bench sme`;
//! - `takt-bench-remote`: `takt bench remote`;
//! - `takt-machine`: `takt machine`;
//! - `takt-siplab`: `takt sip load`, `gen`, `capacity`, `sweep`, `tune`
//!   and `torture`.
//!
//! Its own entry points: [`report`] runs `takt report` (the plan, its
//! stages, the records of a run); [`runs`] is `takt runs` (stored runs
//! listed, shown, compared); [`sched_check`] is `takt sched`'s report, what
//! the kernel accepted for a fresh thread or every thread of a process, as
//! text, a table or JSON.
//!
//! The result documents, statistics, sampling and the machine block come
//! from `takt-measure` and are re-exported here under their old paths
//! ([`result`], [`stats`], [`sampler`], [`env`](mod@env), [`output`]).
//! [`OrchestrationError`] is the crate's one error type.
//!
//! The repository README's Rust examples (the tour) run as this crate's
//! doctests (`cargo test -p takt-lab --doc`), and its two longer examples
//! are this crate's `examples/tour_proxy.rs` and `examples/tour_capacity.rs`:
//! the tour spans takt-agents, takt-sme, takt-sip and takt-siplab, which
//! only the laboratory's top crate sees together.
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

mod orchestration_error;
pub mod report;
pub mod runs;
pub mod sched_check;

pub use orchestration_error::OrchestrationError;

pub use takt_measure::{env, output, params, result, sampler, stats};

/// The repository README's Rust examples (the tour), compiled and run as
/// doctests so the first page a user reads stays true.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeTour;
