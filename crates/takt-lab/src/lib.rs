//! # takt-lab: the laboratory
//!
//! Benchmark suites over takt's runtimes, the statistics they report and
//! the result documents every measuring `takt` subcommand prints.
//!
//! The result documents, statistics, sampling and the machine block come
//! from `takt-measure` and are re-exported here under their old paths
//! ([`result`], [`stats`], [`sampler`], [`env`], [`output`]); the machine
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
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

pub mod agents;
#[cfg(feature = "peers")]
pub mod agents_peers;
pub mod error;
pub mod remote;
pub mod sip;
pub mod sme;

pub use takt_measure::{env, output, params, result, sampler, stats};
