//! # takt-lab: the laboratory
//!
//! Benchmark suites over takt's runtimes, the statistics they report and
//! the result documents every measuring `takt` subcommand prints.
//!
//! - [`result`]: [`Document`](result::Document) and [`ResultRow`](result::ResultRow),
//!   the JSON shape of `shared/CONVENTIONS.md`;
//! - [`stats`]: median, spread, Student-t confidence intervals;
//! - [`sampler`]: warm-up, repetitions and the CPU price of each run;
//! - [`env`]: the machine block (CPU, kernel, commit, steal time, load);
//! - [`output`]: the human table and `--json` output;
//! - [`machine`]: `takt machine`, the machine characterization suite (the
//!   CSE 221 measurements: timers, calls, syscalls, processes, context
//!   switches, memory, page faults, network, file system).
//! - `agents_peers` (feature `peers`, on by default): the agent benchmarks on
//!   actix, kameo, ractor and a crossbeam-channel floor.
//! - [`sme`]: `takt bench sme`, the C++SME thesis benchmarks.
//! - [`sip`]: `takt sip load`, SIPp against the in-process SIP proxy.
//! - [`remote`]: `takt bench remote`, agents over NATS (takt-remote)
//!   beside bare async-nats and raw TCP.
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

pub mod agents;
#[cfg(feature = "peers")]
pub mod agents_peers;
pub mod env;
pub mod machine;
pub mod output;
pub mod remote;
pub mod result;
pub mod sampler;
pub mod sip;
pub mod sme;
pub mod stats;
