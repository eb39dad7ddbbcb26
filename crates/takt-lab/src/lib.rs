//! # takt-lab: the laboratory
//!
//! Benchmark suites over takt's runtimes, the statistics they report and
//! the result documents every measuring `takt` subcommand prints.
//!
//! The result documents, statistics, sampling and the machine block come
//! from `takt-measure` and are re-exported here under their old paths
//! ([`result`], [`stats`], [`sampler`], [`env`](mod@env), [`output`]); the machine
//! characterization suite is its own crate, `takt-machine`.
//!
//! - [`agents`]: `takt bench agents`, the SObjectizer-derived agent benchmarks;
//! - `agents_peers` (feature `peers`, on by default): the agent benchmarks on
//!   actix, kameo, ractor and a crossbeam-channel floor.
//! - [`sme`]: `takt bench sme`, the C++SME thesis benchmarks.
//! - [`sip`]: `takt sip load`, SIPp against the in-process SIP proxy.
//! - [`remote`]: `takt bench remote`, agents over NATS (takt-remote)
//!   beside bare async-nats and raw TCP.
//!
//! Every suite implements takt-measure's [`Suite`](takt_measure::suite::Suite)
//! shape; [`LabError`](error::LabError) is the crate's one error type.
//!
//! ## Example
//!
//! One benchmark of `takt bench sme --quick` from a program: the price of
//! a cycle's synchronization on one and two threads, with its estimate
//! and a quiet run context (no progress output, never cancelled):
//!
//! ```
//! use takt_lab::sampler::Repetitions;
//! use takt_lab::sme::SmeBench;
//! use takt_measure::suite::{RunContext, Suite};
//! use takt_sched::{SpinBudget, ThreadSpec};
//!
//! let bench = SmeBench {
//!     quick: true,
//!     max_threads: 2,
//!     spec: ThreadSpec::new("sme"),
//!     spin: SpinBudget::DEFAULT,
//!     reps: Repetitions { warmup: 0, runs: 2 }, // a look; a measurement takes 5 or more
//!     only: vec!["sync_cost".into()],
//! };
//! println!("expected about {:?}", Suite::estimate(&bench));
//! let doc = Suite::run(&bench, &RunContext::quiet())?;
//! for row in doc.results.iter().filter(|r| r.name == "sync_cost") {
//!     println!("{} threads={}: {:.2} {}", row.params["executor"], row.params["threads"],
//!              row.summary.median, row.unit);
//! }
//! # Ok::<(), takt_lab::error::LabError>(())
//! ```
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

pub mod agents;
#[cfg(feature = "peers")]
pub mod agents_peers;
pub mod error;
mod orchestration_error;
pub mod remote;
pub mod report;
pub mod runs;
pub mod sip;
pub mod sme;

pub use orchestration_error::OrchestrationError;

pub use takt_measure::{env, output, params, result, sampler, stats};

/// The repository README's Rust examples (the tour), compiled and run as
/// doctests so the first page a user reads stays true.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeTour;
